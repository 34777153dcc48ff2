"""Matplotlib figures for the chapters.

Each function draws values the package has already computed; none does arithmetic of
its own beyond placing them on axes. Every function takes an optional ``ax`` so a
widget can redraw into the same figure, and returns the figure.
"""
from __future__ import annotations

import matplotlib.pyplot as plt

# One palette for the whole course, so prefill and decode look the same on every page.
PREFILL = "#1f77b4"
DECODE = "#d62728"
COMPUTE = "#2ca02c"
MEMORY = "#ff7f0e"
NEUTRAL = "#7f7f7f"


def new_axes(ax=None, size=(7.0, 3.6)):
    """The axes to draw on: ``ax`` cleared, or a fresh figure's."""
    if ax is None:
        figure, ax = plt.subplots(figsize=size, layout="constrained")
    else:
        figure = ax.figure
        ax.clear()
    return figure, ax


# --- Lesson 1, part 1: the passes of a request ---------------------------------------
from . import units  # noqa: E402  (each section keeps its imports with it)
from .serving import TOKENS_PER_DECODE_PASS  # noqa: E402

# Widths are slots on the page, not to scale: a prefill pass would otherwise be
# thousands of times wider than a decode pass, and a long reply a grey smear.
PREFILL_SLOTS = 6
DECODE_SHOWN_FIRST = 14
DECODE_SHOWN_LAST = 3
ELIDED_SLOTS = 3


def _decode_slots(decode_passes):
    """(decode pass number, slot) for the decode passes drawn, and whether the middle is elided."""
    if decode_passes <= DECODE_SHOWN_FIRST + DECODE_SHOWN_LAST + 1:
        return [(k, k - 1) for k in range(1, decode_passes + 1)], False
    first = [(k, k - 1) for k in range(1, DECODE_SHOWN_FIRST + 1)]
    last_start = decode_passes - DECODE_SHOWN_LAST + 1
    last = [(k, DECODE_SHOWN_FIRST + ELIDED_SLOTS + (k - last_start)) for k in range(last_start, decode_passes + 1)]
    return first + last, True


def _counted(count, one, many):
    """``1 pass``, ``299 passes``."""
    return f"{units.number(count)} {one if count == 1 else many}"


def request_timeline(counted, ax=None):
    """A request's passes in order: one wide prefill pass, then one thin decode pass per later reply token.

    ``counted`` is a ``serving.RequestPasses``. A long reply shows its first and last
    decode passes with the middle elided; the labels give the exact counts. The two
    bar containers are labelled ``"prefill"`` and ``"decode"``.
    """
    figure, ax = new_axes(ax, size=(7.0, 2.2))
    decode_passes = int(counted.decode_passes)
    slots, elided = _decode_slots(decode_passes)
    decode_left = PREFILL_SLOTS + 0.5

    ax.barh(0, PREFILL_SLOTS, left=0, height=1, align="edge", color=PREFILL, label="prefill")
    ax.text(PREFILL_SLOTS / 2, 0.5, f"{units.number(counted.prefill_tokens)}\ntokens", ha="center", va="center",
            color="white", fontsize=9, fontweight="bold")
    lefts = [decode_left + slot for _, slot in slots]
    ax.barh([0] * len(slots), [0.8] * len(slots), left=lefts, height=1, align="edge", color=DECODE, label="decode")

    # Ticks name the request's pass numbers: prefill is pass 1, decode pass k is pass k + 1.
    ticks, tick_labels = [PREFILL_SLOTS / 2], ["1"]
    for index, ((k, _), left) in enumerate(zip(slots, lefts)):
        if index in (0, len(slots) - 1) or (elided and index == DECODE_SHOWN_FIRST):
            ticks.append(left + 0.4)
            tick_labels.append(units.number(k + 1))
    if elided:
        middle = decode_left + DECODE_SHOWN_FIRST + ELIDED_SLOTS / 2 - 0.1  # centre of the gap between bars
        hidden = decode_passes - len(slots)
        ax.text(middle, 0.5, "⋯", ha="center", va="center", fontsize=14, color=DECODE)
        ax.text(middle, 0.2, f"{units.number(hidden)} more", ha="center", va="center", fontsize=8, color=DECODE)

    ax.text(0, 1.1, "prefill: 1 pass", color=PREFILL, fontsize=9, va="bottom")
    if decode_passes:
        label = (f"decode: {_counted(decode_passes, 'pass', 'passes')}, "
                 f"{_counted(TOKENS_PER_DECODE_PASS, 'token', 'tokens')} each")
        ax.text(decode_left, 1.1, label, color=DECODE, fontsize=9, va="bottom")
    right = lefts[-1] + 1 if lefts else PREFILL_SLOTS
    ax.set_xticks(ticks, tick_labels)
    ax.set_xlim(-0.5, max(right, decode_left + DECODE_SHOWN_FIRST + ELIDED_SLOTS + DECODE_SHOWN_LAST) + 0.5)
    ax.set_ylim(-0.1, 1.6)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel("forward passes, in order (widths not to scale)")
    return figure


# --- Lesson 1, part 2: arithmetic intensity on the roofline ---------------------------
import numpy as np  # noqa: E402

from .hardware import T  # noqa: E402
from .roofline import attainable_flops, ridge_point  # noqa: E402

# From one token in 16-bit weights (about 1 FLOP a byte) to 100,000 tokens in 4-bit (400,000).
INTENSITY_RANGE = (0.3, 2e6)


def roofline_chart(gpu, passes, ax=None):
    """Attainable FLOP/s against FLOP per byte on ``gpu``, log-log, with its ridge marked.

    ``passes`` maps a label to a ``serving.Step`` computed on the same GPU; each is a
    point on the roof, coloured and labelled by what limits it. The roof line has gid
    ``"roof"``, the ridge line ``"ridge"``, each point ``"pass"``.
    """
    figure, ax = new_axes(ax)
    ridge = ridge_point(gpu.peak_flops, gpu.memory_bandwidth)
    intensities = np.geomspace(*INTENSITY_RANGE, 400)
    roof = attainable_flops(intensities, gpu.peak_flops, gpu.memory_bandwidth)
    ax.axvspan(INTENSITY_RANGE[0], ridge, color=MEMORY, alpha=0.08, lw=0)
    ax.axvspan(ridge, INTENSITY_RANGE[1], color=COMPUTE, alpha=0.08, lw=0)
    ax.plot(intensities, roof / T, color=NEUTRAL, lw=2, gid="roof")
    ax.axvline(ridge, color=NEUTRAL, ls="--", lw=1, gid="ridge")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*INTENSITY_RANGE)
    ax.set_ylim(roof[0] / T, roof[-1] / T * 3)  # headroom above the flat roof for the labels
    ax.annotate(f"ridge: {units.number(ridge)} FLOP/byte", (ridge, 0.03), xycoords=("data", "axes fraction"),
                xytext=(3, 0), textcoords="offset points", rotation=90, va="bottom", ha="left", fontsize=8,
                color=NEUTRAL)
    ax.text(0.02, 0.96, "memory-bound", transform=ax.transAxes, color=MEMORY, fontsize=9, va="top")
    ax.text(0.98, 0.96, "compute-bound", transform=ax.transAxes, color=COMPUTE, fontsize=9, va="top", ha="right")
    to_axes = ax.transData + ax.transAxes.inverted()
    for label, step in passes.items():
        intensity = step.cost.intensity
        height = attainable_flops(intensity, gpu.peak_flops, gpu.memory_bandwidth) / T
        colour = COMPUTE if step.bound == "compute" else MEMORY
        ax.plot([intensity], [height], "o", color=colour, markersize=9, zorder=3, gid="pass")
        text = f"{label}\n{units.number(intensity)} FLOP/byte, {step.bound}-bound"
        if step.bound == "memory":
            # To the right of a point on the slope, the text sits under the rising roof.
            ax.annotate(text, (intensity, height), xytext=(10, -4), textcoords="offset points", fontsize=9,
                        color=colour, ha="left", va="top")
        else:
            # Under a point on the flat roof, running right, away from the ridge line, unless
            # that would run off the chart's right edge.
            near_right_edge = to_axes.transform((intensity, height))[0] > 0.75
            ax.annotate(text, (intensity, height), xytext=(4 if near_right_edge else -4, -12),
                        textcoords="offset points", fontsize=9, color=colour,
                        ha="right" if near_right_edge else "left", va="top")
    ax.set_xlabel("arithmetic intensity (FLOP per byte read)")
    ax.set_ylabel("attainable TFLOP/s")
    ax.set_title(f"{gpu.name}: {units.tflops(gpu.peak_flops)} dense 16-bit, {units.tb_per_s(gpu.memory_bandwidth)}",
                 loc="left", fontsize=10)
    return figure


# --- Lesson 1, part 3: where a request's time goes ------------------------------------


# --- Lesson 1, part 4: batching and the cost of a million tokens ----------------------


# --- Plate XXIII.1: time per token against tokens per pass ----------------------------


# --- Lab: measured against predicted ---------------------------------------------------
