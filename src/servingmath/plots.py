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
