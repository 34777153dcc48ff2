"""Interactive explorers: ipywidgets controls over the package, with no arithmetic of their own.

An ``Explorer`` ties named controls to three callables from the package:
``compute(**controls)`` returns a result, ``describe(result)`` the readouts as a dict
of label -> shown text, and ``draw(result, ax)`` the figure. Moving a control recomputes
and redraws. Tests drive an explorer headless with ``explorer.set(name=value)`` and read
``explorer.readouts`` and ``explorer.draws``.
"""
from __future__ import annotations

import html
from typing import Callable, Mapping

import ipywidgets as widgets
import matplotlib.pyplot as plt


class Explorer:
    """Controls -> readouts and a figure."""

    def __init__(self, controls: Mapping[str, widgets.ValueWidget], compute: Callable, describe: Callable,
                 draw: Callable, title: str = ""):
        self.controls = dict(controls)
        self._compute, self._describe, self._draw = compute, describe, draw
        self.title = title
        self.readout = widgets.HTML()
        self.output = widgets.Output()
        with plt.ioff():
            self.figure, self.ax = plt.subplots(figsize=(7.0, 3.6), layout="constrained")
        self.draws = 0
        self.result = None
        self.readouts: dict[str, str] = {}
        for control in self.controls.values():
            control.observe(self._changed, names="value")
        self.update()

    def values(self) -> dict:
        return {name: control.value for name, control in self.controls.items()}

    def set(self, **values):
        """Set several controls, then update once (as a reader moving them would, but batched)."""
        unknown = sorted(set(values) - set(self.controls))
        if unknown:
            raise ValueError(f"controls must be among {sorted(self.controls)}, got {unknown}")
        self._holding = True
        try:
            for name, value in values.items():
                self.controls[name].value = value
        finally:
            self._holding = False
        self.update()
        return self

    _holding = False

    def _changed(self, _change):
        if not self._holding:
            self.update()

    def update(self):
        self.result = self._compute(**self.values())
        self.readouts = dict(self._describe(self.result))
        rows = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(label)}</th>"
                       f"<td>{html.escape(str(text))}</td></tr>" for label, text in self.readouts.items())
        self.readout.value = f"<table>{rows}</table>"
        self._draw(self.result, self.ax)
        self.figure.canvas.draw_idle()
        self.draws += 1
        self.output.clear_output(wait=True)
        with self.output:
            from IPython.display import display

            display(self.figure)

    def widget(self) -> widgets.Widget:
        header = [widgets.HTML(f"<b>{html.escape(self.title)}</b>")] if self.title else []
        return widgets.VBox([*header, widgets.VBox(list(self.controls.values())), self.readout, self.output])

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget())


# --- Lesson 1, part 1: the passes of a request ---------------------------------------


# --- Lesson 1, part 2: arithmetic intensity on the roofline ---------------------------


# --- Lesson 1, part 3: where a request's time goes ------------------------------------


# --- Lesson 1, part 4: batching and the cost of a million tokens ----------------------


# --- Lesson 1, wrap-up: the quiz --------------------------------------------------------


# --- Plate XXIII.1: the workshop --------------------------------------------------------


# --- Lab: measured against predicted ---------------------------------------------------
