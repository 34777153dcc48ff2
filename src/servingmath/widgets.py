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
from . import plots, units  # noqa: E402  (each section keeps its imports with it)
from .serving import request_passes  # noqa: E402


def _describe_passes(counted):
    return {
        "passes": units.number(counted.passes),
        "tokens in the prefill pass": units.number(counted.prefill_tokens),
        "decode passes": units.number(counted.decode_passes),
        "share of passes that are decode": units.percent(counted.decode_share_of_passes, 1),
    }


def passes_explorer(prompt_tokens=2000, reply_tokens=300) -> Explorer:
    """Prompt and reply lengths -> the request's passes, drawn as a timeline (defaults: Example 1.1)."""
    controls = {
        "prompt_tokens": widgets.IntSlider(value=prompt_tokens, min=1, max=20_000, description="prompt tokens",
                                           continuous_update=False, style={"description_width": "initial"}),
        "reply_tokens": widgets.IntSlider(value=reply_tokens, min=1, max=4_000, description="reply tokens",
                                          continuous_update=False, style={"description_width": "initial"}),
    }
    return Explorer(controls, compute=request_passes, describe=_describe_passes,
                    draw=lambda counted, ax: plots.request_timeline(counted, ax=ax),
                    title="One request, counted in passes")


# --- Lesson 1, part 2: arithmetic intensity on the roofline ---------------------------
from .hardware import CATALOG  # noqa: E402
from .models import LLAMA_3_8B  # noqa: E402
from .roofline import LESSON, ridge_point  # noqa: E402
from .serving import step  # noqa: E402


def _one_pass(tokens, gpu, weight_bits):
    """Llama 3 8B's pass as the controls describe it, counted as the lesson counts (weights only)."""
    tokens = round(tokens)  # a log slider lands between whole numbers
    chosen = CATALOG[gpu]
    return {"tokens": tokens, "gpu": chosen,
            "step": step(LLAMA_3_8B, chosen, tokens, weight_bits=weight_bits, assumptions=LESSON)}


def _describe_intensity(result):
    gpu = result["gpu"]
    return {
        "tokens in the pass": units.number(result["tokens"]),
        "FLOP per byte": units.number(result["step"].cost.intensity),
        "ridge of the GPU": units.number(ridge_point(gpu.peak_flops, gpu.memory_bandwidth)),
        "the pass is": f"{result['step'].bound}-bound",
    }


def _draw_intensity(result, ax):
    label = f"{units.number(result['tokens'])} tokens in the pass"
    return plots.roofline_chart(result["gpu"], {label: result["step"]}, ax=ax)


def intensity_explorer(tokens=3000, gpu="h100-sxm", weight_bits=16) -> Explorer:
    """Tokens in a pass, GPU and weight bits -> FLOP per byte against the GPU's ridge (defaults: Example 2.1)."""
    controls = {
        "tokens": widgets.FloatLogSlider(value=tokens, base=10, min=0, max=5, step=0.01,
                                         description="tokens in the pass", readout_format=",.0f",
                                         continuous_update=False, style={"description_width": "initial"}),
        "gpu": widgets.Dropdown(options=[(entry.name, key) for key, entry in CATALOG.items()], value=gpu,
                                description="GPU", style={"description_width": "initial"}),
        "weight_bits": widgets.ToggleButtons(options=[4, 8, 16], value=weight_bits, description="weight bits",
                                             style={"description_width": "initial", "button_width": "4em"}),
    }
    return Explorer(controls, compute=_one_pass, describe=_describe_intensity, draw=_draw_intensity,
                    title="Llama 3 8B: FLOP per byte against the ridge")


# --- Lesson 1, part 3: where a request's time goes ------------------------------------


# --- Lesson 1, part 4: batching and the cost of a million tokens ----------------------


# --- Lesson 1, wrap-up: the quiz --------------------------------------------------------


# --- Plate XXIII.1: the workshop --------------------------------------------------------


# --- Lab: measured against predicted ---------------------------------------------------
