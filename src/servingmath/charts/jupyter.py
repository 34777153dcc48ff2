"""An explorer live in Jupyter: ipywidgets controls generated from its declaration, its drawing redrawn.

A slider with ``fine`` steps is an ``IntSlider`` (a ``range``) or a ``SelectionSlider``; a menu a
``Dropdown``; buttons ``ToggleButtons``. A move sends the page one message: the readouts and the figure as
SVG text, together in one ``HTML`` widget (a millisecond or two, where a matplotlib render takes tens), the
same in ipywidgets 7 (Colab) and 8. No control sets another, so a move redraws once; a slow one says "computing…".
"""
from __future__ import annotations

import html
import time

import ipywidgets as widgets
from IPython.display import display

from . import kit

_STYLE = {"description_width": "12em"}
BUSY = "servingmath-busy"   # the notice over the last readouts and figure, dimmed, while a setting is first computed
SLOW = 0.05                 # seconds: an explorer one of whose first computations took longer shows that notice


def _widget(control):
    texts = control.text or dict(zip(control.options, control.texts)).get
    value = control.options[control.default]
    common = {"description": control.label, "style": _STYLE, "value": value}
    if control.kind == "menu":
        return widgets.Dropdown(options=list(zip(control.texts, control.options)), **common)
    if control.kind == "buttons":
        return widgets.ToggleButtons(options=list(zip(control.texts, control.options)), **common)
    layout = widgets.Layout(width="36em", max_width="100%")
    if isinstance(control.fine, range):
        return widgets.IntSlider(min=control.fine.start, max=control.fine.stop - 1, step=control.fine.step,
                                 readout_format=",d", continuous_update=False, layout=layout, **common)
    values = control.options if control.fine is None else control.fine
    return widgets.SelectionSlider(options=[(texts(v), v) for v in values], continuous_update=False, layout=layout,
                                   **common)


class Live:
    """Controls -> readouts and figure, for one ``Explorer``."""

    def __init__(self, explorer):
        self.explorer, self.name = explorer, explorer.name
        self.controls = {c.name: _widget(c) for c in explorer.controls}
        self.view = widgets.HTML(layout=widgets.Layout(width="100%"))
        self.view.add_class("servingmath-figure")
        # Slow where declared (a first setting may come quick from a cache), or once a move computes past SLOW.
        self.draws, self.svg, self.readouts, self._holding, self._slow = 0, "", {}, False, explorer.slow
        for control in self.controls.values():
            control.observe(self._changed, names="value")
        self.update()

    def values(self) -> dict:
        return {name: control.value for name, control in self.controls.items()}

    def set(self, **values):
        """Set several controls, then redraw once."""
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

    def _changed(self, _change):
        if not self._holding:
            self.update()

    def update(self):
        setting, started = self.values(), time.perf_counter()
        first = not self.explorer.known(**setting)
        if first and self._slow:   # a first time, where it takes a while: "computing…" over the last view, dimmed
            self.view.value = f"<p class='{BUSY}'>computing…</p>{self.view.value}"
        self.readouts = self.explorer.readouts_at(**setting)
        rows = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(label)}</th>"
                       f"<td>{html.escape(text)}</td></tr>" for label, text in self.readouts.items())
        # The dark shades' style sheet sits once in the box: one on every move would restyle the whole page.
        self.svg = self.explorer.svg_at(style=False, **setting)
        self.view.value = f"<table class='servingmath-readouts'>{rows}</table>{self.svg}"
        took_long = first and self.draws > 0 and time.perf_counter() - started > SLOW   # not the build's draw
        self.draws, self._slow = self.draws + 1, self._slow or took_long

    def widget(self) -> widgets.Widget:
        note = [widgets.HTML(f"<small>{html.escape(self.explorer.note)}</small>")] if self.explorer.note else []
        box = widgets.VBox([widgets.HTML(f"<b>{html.escape(self.explorer.title)}</b><style>{kit.STYLE}"
                                         f".{BUSY} ~ *{{opacity:.4}}</style>"),
                            widgets.VBox(list(self.controls.values())), self.view, *note])
        box.add_class("servingmath-explorer")
        box.add_class(f"servingmath-explorer-{self.name}")
        return box

    def _ipython_display_(self):
        display(self.widget())
