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
