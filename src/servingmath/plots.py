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


# --- Lesson 1, part 2: arithmetic intensity on the roofline ---------------------------


# --- Lesson 1, part 3: where a request's time goes ------------------------------------


# --- Lesson 1, part 4: batching and the cost of a million tokens ----------------------


# --- Plate XXIII.1: time per token against tokens per pass ----------------------------
def _milliseconds_axis(axis):
    """Label a log axis held in seconds as milliseconds ("0.01 ms", "1 ms")."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda seconds, _: f"{seconds * 1e3:g} ms"))


def time_per_token_chart(curve, decode, marks=(), ideal=None, ax=None):
    """The plate's workshop: time per token of one pass against the tokens it carries, log-log.

    ``curve`` and ``ideal`` come from ``serving.time_per_token_curve``; ``decode`` is a
    decode ``Step`` drawn at one token; ``marks`` are prefill ``Step``s to label. The
    shading shows which limit sets ``curve``'s time; the dotted line is the GPU's ridge
    point (a pass's FLOP per byte is about its tokens).
    """
    from . import units

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
