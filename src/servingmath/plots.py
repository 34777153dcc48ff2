"""Matplotlib figures for the chapters.

Each function draws values the package has already computed; none does arithmetic of
its own beyond placing them on axes. Every function takes an optional ``ax`` so a
widget can redraw into the same figure, and returns the figure.
"""
from __future__ import annotations

import io

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter
import numpy as np

from . import units
from .hardware import T
from .roofline import attainable_flops, ridge_point
from .serving import TOKENS_PER_DECODE_PASS

# One palette for the whole course, so prefill and decode look the same on every page.
PREFILL = "#1f77b4"
DECODE = "#d62728"
COMPUTE = "#2ca02c"
MEMORY = "#ff7f0e"
NEUTRAL = "#7f7f7f"


def figure_png(figure: Figure) -> bytes:
    """The figure as PNG bytes, cropped to what is drawn, as a notebook shows it."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight", facecolor="white")
    return buffer.getvalue()


def show_figures_as_images(shell=None):
    """Tell IPython to show every matplotlib figure as a PNG, in any front end, whatever ran before.

    The inline backend does this only once pyplot has loaded it, so a figure made outside
    pyplot (as the explorers make theirs) on a fresh kernel would show as its text,
    ``<Figure size 700x360 with 1 Axes>``. Importing this module registers the PNG
    formatter; outside IPython it does nothing.
    """
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:  # pragma: no cover - IPython comes with ipywidgets
            return
        shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["image/png"].for_type(Figure, figure_png)


show_figures_as_images()


def new_axes(ax=None, size=(7.0, 3.6)):
    """The axes to draw on: ``ax`` cleared, or a fresh figure's."""
    if ax is None:
        figure, ax = plt.subplots(figsize=size, layout="constrained")
    else:
        figure = ax.figure
        ax.clear()
    return figure, ax


# --- Lesson 1, part 1: the passes of a request ---------------------------------------

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


def request_time_split(request, ax=None):
    """One request's time as a bar: the prefill, then the decode steps, each labelled.

    ``request`` is a ``servingmath.serving.Request``.
    """

    figure, ax = new_axes(ax)
    ax.barh([0], [request.ttft], height=0.5, color=PREFILL, gid="prefill",
            label=f"prefill, 1 pass: {units.ms(request.ttft, 0)}")
    ax.barh([0], [request.decode_time], left=[request.ttft], height=0.5, color=DECODE, gid="decode",
            label=f"decode, {units.number(request.decode_steps)} steps of {units.ms(request.tpot)}: "
                  f"{units.seconds(request.decode_time)}")
    ax.annotate(f"first token\n{units.ms(request.ttft, 0)}", xy=(request.ttft, 0.25), xytext=(0, 28),
                textcoords="offset points", ha="center", arrowprops={"arrowstyle": "->", "color": PREFILL})
    ax.annotate(f"last token\n{units.seconds(request.total_time)}", xy=(request.total_time, 0.25),
                xytext=(0, 28), textcoords="offset points", ha="center",
                arrowprops={"arrowstyle": "->", "color": DECODE})
    ax.set_ylim(-1.2, 1.4)
    ax.set_yticks([])
    ax.set_xlim(0, request.total_time * 1.08)
    ax.set_xlabel("seconds since the request started")
    ax.set_title(f"Where the time goes: {units.percent(request.decode_share)} of it decode")
    ax.legend(loc="lower center", ncol=1, frameon=False)
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    return figure


# --- Lesson 1, part 4: batching and the cost of a million tokens ----------------------


def _fresh_twin(ax):
    """A right-hand axis over ``ax``'s x axis: the one an earlier drawing made, cleared, or a new one.

    Reusing it keeps its place on the figure when an explorer has frozen the layout.
    """
    for other in ax.figure.axes:
        if other is not ax and other.get_shared_x_axes().joined(ax, other):
            other.clear()
            other.yaxis.tick_right()
            other.yaxis.set_label_position("right")
            return other
    return ax.twinx()


def batching_sweep(sweep, chosen, compute_bound_batch=None, ax=None):
    """Cost per million tokens and each user's speed against users per pass.

    ``sweep`` and ``chosen`` are ``servingmath.serving.Batching`` results, the first
    over an array of batch sizes; ``compute_bound_batch`` is where a decode step turns
    compute-bound (None if it never does).
    """

    figure, ax = new_axes(ax)
    speed_axis = _fresh_twin(ax)
    ax.loglog(sweep.batch, sweep.cost_per_million_tokens, color=DECODE, lw=2, gid="cost",
              label="cost per million tokens (left)")
    speed_axis.semilogx(sweep.batch, sweep.tokens_per_second_per_user, color=PREFILL, lw=2, ls="--", gid="speed",
                        label="each user's tokens a second (right)")
    ax.plot([chosen.batch], [chosen.cost_per_million_tokens], "o", color=DECODE, ms=8, gid="chosen-batch",
            label=f"{units.number(chosen.batch)} users: {units.dollars(chosen.cost_per_million_tokens, 3)} "
                  f"per million")
    ax.axvline(chosen.batch, color=NEUTRAL, lw=1)
    if compute_bound_batch is not None:
        ax.axvline(compute_bound_batch, color=COMPUTE, ls=":", lw=2, gid="compute-bound-batch",
                   label=f"arithmetic becomes the limit: {units.number(compute_bound_batch)} users")
        ax.axvspan(compute_bound_batch, sweep.batch[-1], color=COMPUTE, alpha=0.08, lw=0)
    ax.set_xlim(sweep.batch[0], sweep.batch[-1])
    ax.set_xlabel("users per pass (batch size)")
    ax.set_ylabel("$ per million tokens")
    speed_axis.set_ylabel("tokens a second, each user")
    speed_axis.set_ylim(0, None)
    handles = ax.get_legend_handles_labels()
    speed_handles = speed_axis.get_legend_handles_labels()
    ax.legend(handles[0] + speed_handles[0], handles[1] + speed_handles[1], loc="lower left", fontsize="small")
    return figure


# --- Plate XXIII.1: time per token against tokens per pass ----------------------------
def _milliseconds_axis(axis):
    """Label a log axis held in seconds as milliseconds ("0.01 ms", "1 ms")."""

    axis.set_major_formatter(FuncFormatter(lambda seconds, _: f"{seconds * 1e3:g} ms"))


def time_per_token_chart(curve, decode, marks=(), ideal=None, ax=None):
    """The plate's workshop: time per token of one pass against the tokens it carries, log-log.

    ``curve`` and ``ideal`` come from ``serving.time_per_token_curve``; ``decode`` is a
    decode ``Step`` drawn at one token; ``marks`` are prefill ``Step``s to label. The
    shading shows which limit sets ``curve``'s time; the dotted line is the GPU's ridge
    point (a pass's FLOP per byte is about its tokens).
    """

    figure, ax = new_axes(ax)
    first, last = curve.tokens.min(), curve.tokens.max()
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    # A margin each side, so the decode point at one token is not cut in half by the edge.
    left, right = first / 1.5, last * 1.5
    lowest = curve.time_per_token.min() if ideal is None else min(curve.time_per_token.min(),
                                                                   ideal.time_per_token.min())
    ax.set_xlim(left, right)
    ax.set_ylim(lowest / 4, max(curve.time_per_token.max(), decode.time_per_token) * 4)
    switch = curve.arithmetic_from
    memory_end = right if switch is None else switch
    ax.axvspan(left, memory_end, color=MEMORY, alpha=0.10, lw=0)
    ax.text(memory_end / 1.15, 0.97, "memory sets the time", transform=ax.get_xaxis_transform(), va="top",
            ha="right", color=MEMORY, fontsize=9)
    if switch is not None:
        ax.axvspan(switch, right, color=COMPUTE, alpha=0.10, lw=0)
        ax.text(0.98, 0.97, "arithmetic sets the time", transform=ax.transAxes, va="top", ha="right",
                color=COMPUTE, fontsize=9)
    ax.axvline(curve.ridge, color=NEUTRAL, ls=":", lw=1.2)
    ax.text(curve.ridge * 1.1, 0.45, f"ridge: {units.number(curve.ridge)} FLOP/byte",
            transform=ax.get_xaxis_transform(), color=NEUTRAL, fontsize=8, rotation=90, va="bottom")
    if ideal is not None:
        ax.plot(ideal.tokens, ideal.time_per_token, color=NEUTRAL, ls="--", lw=1.4, label=ideal.assumptions.label)
    ax.plot(curve.tokens, curve.time_per_token, color=PREFILL, lw=2.2, label=curve.assumptions.label)
    ax.plot([decode.cost.tokens], [decode.time_per_token], "o", color=DECODE, ms=8, zorder=5)
    ax.annotate(f"decode step:\n{units.ms_significant(decode.time_per_token)} a token",
                (decode.cost.tokens, decode.time_per_token), xytext=(12, 2), textcoords="offset points",
                va="bottom", color=DECODE, fontsize=9)
    for step in marks:
        ax.plot([step.cost.tokens], [step.time_per_token], "s", color=PREFILL, ms=7, zorder=5)
        ax.annotate(f"{units.number(step.cost.tokens)}-token prefill:\n"
                    f"{units.ms_significant(step.time_per_token)} a token",
                    (step.cost.tokens, step.time_per_token), xytext=(0, 16), textcoords="offset points",
                    ha="center", va="bottom", color=PREFILL, fontsize=9)
    ticks = [tokens for tokens in (1, 4, 16, 64, 256, 1024, 4096, 16384) if first <= tokens <= last]
    ax.set_xticks(ticks, [units.number(tokens) for tokens in ticks])
    _milliseconds_axis(ax.yaxis)
    ax.set_xlabel("tokens in the pass")
    ax.set_ylabel("time per token")
    ax.set_title(f"{curve.model.name} on {curve.gpu.name}", fontsize=10)
    ax.legend(loc="lower left", fontsize=8, frameon=False)
    return figure


# --- Lab: measured against predicted ---------------------------------------------------


def lab_panel(prediction, measured=None, title="", ax=None):
    """Time per token against tokens per pass, both axes logarithmic, from ``servingmath.lab`` curves.

    The prediction is a line with its decode step as an open diamond at one token and a
    dotted line where it turns compute-bound; measured passes are dots, their decode step
    a filled diamond, and a dashed line marks where their gains stop.
    """
    figure, ax = new_axes(ax)
    ax.plot(prediction.tokens, prediction.time_per_token * 1e3, color=PREFILL, label=prediction.label)
    ax.plot([1], [prediction.decode_time * 1e3], "D", markerfacecolor="none", markeredgecolor=DECODE,
            label=f"predicted decode step, {prediction.cached_tokens:,} cached tokens")
    if prediction.knee is not None:
        ax.axvline(prediction.knee, color=COMPUTE, linestyle=":",
                   label=f"{prediction.knee_label}: {prediction.knee:,.0f}")
    if measured is not None:
        ax.plot(measured.tokens, measured.time_per_token * 1e3, "o", color=PREFILL, markeredgecolor="black",
                markeredgewidth=0.5, label=measured.label)
        ax.plot([1], [measured.decode_time * 1e3], "D", color=DECODE,
                label=f"measured decode step, {measured.cached_tokens:,} cached tokens")
        ax.axvline(measured.knee, color=NEUTRAL, linestyle="--", label=f"{measured.knee_label}: {measured.knee:,.0f}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda value, _: f"{value:,.0f}"))
    # Plain numbers, not powers of ten: the decades, and the 2s and 5s between them.
    ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda value, _: f"{value:g}"))
    ax.yaxis.set_minor_formatter(plt.FuncFormatter(lambda value, _: f"{value:g}" if f"{value:.0e}"[0] in "25" else ""))
    ax.set_xlabel("tokens per pass")
    ax.set_ylabel("ms per token")
    ax.set_title(title, fontsize="medium")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize="x-small", loc="upper right")
    return figure


def lab_beside_plate(plate, prediction, measured, plate_title, lab_title):
    """The plate's chart (a prediction for an H100) on the left; this machine, measured and predicted, on the right."""
    figure, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.0), layout="constrained")
    lab_panel(plate, title=plate_title, ax=left)
    lab_panel(prediction, measured, title=lab_title, ax=right)
    return figure


# --- Lesson 2: each user's KV cache ----------------------------------------------------
LINE_COLOURS = (PREFILL, DECODE, COMPUTE, MEMORY, "#9467bd", "#8c564b")


def _log_lines(ax, xs, lines, dashed=()):
    """One line per entry of ``lines`` (label -> values over ``xs``), in the course's colours."""
    for (label, ys), colour in zip(lines.items(), LINE_COLOURS):
        ax.loglog(xs, ys, color=colour, lw=2, ls="--" if label in dashed else "-", label=label, gid=label)


def cache_saving_chart(contexts, with_cache, without_cache, chosen, times=None, gpu_name="", ax=None):
    """Part 1: FLOPs of one decode step against the tokens already in the sequence, with the cache
    and without it. ``with_cache`` and ``without_cache`` are FLOP arrays over ``contexts``;
    ``chosen`` a ``cache.CacheSaving`` marked on both lines; ``times`` (a ``cache.CacheSavingTimes``)
    labels each line with its step's time on ``gpu_name``."""
    figure, ax = new_axes(ax)
    without_label, with_label = "without the cache: the whole sequence again", "with the cache: one new token"
    if times is not None:
        without_label += f", {units.ms(times.without_cache.time)} on {gpu_name}"
        with_label += f", {units.ms(times.with_cache.time)}"
    _log_lines(ax, contexts, {without_label: without_cache, with_label: with_cache})
    ax.plot([chosen.context_tokens] * 2, [chosen.without_cache.flops, chosen.with_cache.flops], "o",
            color=NEUTRAL, ms=7, gid="chosen-context")
    ax.axvline(chosen.context_tokens, color=NEUTRAL, lw=1)
    ax.set_xlabel("tokens already in the sequence")
    ax.set_ylabel("FLOPs of the next decode step")
    ax.legend(loc="upper left", fontsize="small")
    return figure


def cache_size_chart(contexts, caches, weight_bytes, chosen_context, ax=None):
    """Part 2: one conversation's cache against its length, one line per model or attention
    design (``caches``: label -> bytes over ``contexts``), the weights as a dotted line."""
    figure, ax = new_axes(ax)
    _log_lines(ax, contexts, caches)
    ax.axhline(weight_bytes, color=NEUTRAL, ls=":", lw=2, gid="weights",
               label=f"the weights: {units.gb(weight_bytes)}")
    ax.axvline(chosen_context, color=NEUTRAL, lw=1)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value / 1e9:g} GB"))
    ax.set_xlabel("tokens in the conversation")
    ax.set_ylabel("bytes of KV cache")
    ax.legend(loc="upper left", fontsize="small")
    return figure


def users_that_fit_chart(contexts, users, chosen_context, crossings=None, caption="", ax=None):
    """Part 3 and plate XXIII.2: the most users one GPU holds against the tokens each holds.

    ``users`` maps a label to whole numbers of users over ``contexts``; ``crossings`` (same
    labels, optional) to the batch at which the caches weigh as much as the weights,
    drawn dashed: above it the caches outweigh the weights.
    """
    figure, ax = new_axes(ax)
    for (label, counts), colour in zip(users.items(), LINE_COLOURS):
        shown = np.where(np.asarray(counts) > 0, counts, np.nan)
        ax.loglog(contexts, shown, color=colour, lw=2, label=label, gid=label)
        if crossings is not None and label in crossings:
            ax.loglog(contexts, crossings[label], color=colour, lw=1.2, ls="--", gid=f"{label}: crossing")
    if crossings:
        ax.plot([], [], color=NEUTRAL, lw=1.2, ls="--", label="dashed: caches weigh as much as the weights")
    ax.axvline(chosen_context, color=NEUTRAL, lw=1)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}" if value >= 1 else f"{value:g}"))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
    ax.set_xlabel("tokens each user holds")
    ax.set_ylabel("users that fit")
    ax.set_title(caption, fontsize="medium", loc="left")
    ax.legend(loc="lower left", fontsize="small")
    return figure


def cached_batching_chart(users, costs, walls, chosen_users, ax=None):
    """Part 4: cost per million tokens against users per pass, one line per length of
    conversation (``costs``: label -> dollars over ``users``), each stopping at its memory
    wall (``walls``: label -> the most users that fit), lesson 1's weights-only line dashed."""
    figure, ax = new_axes(ax)
    shown = {}
    for label, dollars in costs.items():
        wall = walls.get(label)
        shown[label] = np.where(np.asarray(users) <= wall, dollars, np.nan) if wall is not None else dollars
    _log_lines(ax, users, shown, dashed=[label for label in costs if label not in walls])
    for (label, wall), colour in zip(walls.items(), LINE_COLOURS):
        if 0 < wall <= users[-1]:
            ax.plot([wall], [np.asarray(costs[label])[np.searchsorted(users, wall)]], "|", color=colour, ms=16,
                    mew=2, gid=f"{label}: memory wall")
    ax.axvline(chosen_users, color=NEUTRAL, lw=1)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
    ax.set_xlabel("users per pass (the bar: memory is full)")
    ax.set_ylabel("$ per million tokens")
    ax.legend(loc="lower left", fontsize="small")
    return figure
