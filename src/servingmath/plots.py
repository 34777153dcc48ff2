"""The lab's figures, in matplotlib: what this machine measured beside what the roofline predicts.

Every other figure of the course is drawn by ``servingmath.charts``. The lab's stays here
because its page runs in the reader's kernel on their own measurements, at full
resolution with a legend of seven entries, and is seen only in a notebook or on the
website as a still image; nothing moves it. The colours are the kit's palette.
"""
from __future__ import annotations

import io

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from .charts.kit import PALETTE

PREFILL, DECODE, COMPUTE, NEUTRAL = (PALETTE[name][0] for name in ("prefill", "decode", "compute", "neutral"))


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
