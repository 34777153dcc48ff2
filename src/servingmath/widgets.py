"""Interactive explorers: ipywidgets controls over the package, with no arithmetic of their own.

An ``Explorer`` ties named controls to callables from the package: ``compute(**controls)``
returns a result, ``describe(result)`` the readouts as a dict of label -> shown text,
``sketch(result)`` the live figure as SVG (``servingmath.svgcharts``) and ``draw(result,
ax)`` the same figure in matplotlib (``servingmath.plots``), for the page's static image.
Moving a control recomputes, then rewrites the readouts and the live figure. Tests drive
an explorer headless with ``explorer.set(name=value)`` and read ``explorer.readouts``,
``explorer.svg`` and ``explorer.draws``.

Why SVG for the live figure: a slider feels live when the new figure is on screen within
about 50 ms of the move. Rendering a matplotlib figure to pixels and encoding them takes
25 to 90 ms for these charts before the image even leaves the kernel; writing the chart
as SVG text takes a millisecond or two, and the browser draws it. SVG also needs nothing
but ipywidgets' own ``HTML`` widget, the same in ipywidgets 7 (Colab) and 8 (JupyterLab 4).
"""
from __future__ import annotations

import functools
import html
import io
from dataclasses import replace
from types import SimpleNamespace
from typing import Callable, Mapping

import ipywidgets as widgets
import numpy as np
from IPython.display import display
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from . import cache, memory, plots, serving, svgcharts, units
from .hardware import CATALOG
from .hardware import gpu as find_gpu
from .models import LLAMA_3_8B, MODELS
from .models import model as find_model
from .quiz import LETTERS, Question
from .roofline import LESSON, PLATE, ridge_point
from .serving import request_passes, step, time_per_token_curve


class Explorer:
    """Controls -> readouts and a figure."""

    def __init__(self, controls: Mapping[str, widgets.ValueWidget], compute: Callable, describe: Callable,
                 draw: Callable, title: str = "", sketch: Callable | None = None, name: str = ""):
        self.controls = dict(controls)
        self.name = name  # which explorer this is, on the page (a class of its box), for tests that find it
        self._compute, self._describe, self._draw = compute, describe, draw
        self._sketch = sketch
        self.title = title
        self.readout = widgets.HTML()
        # The live figure: SVG text in an HTML widget (see the module's note on speed).
        self.view = widgets.HTML(layout=widgets.Layout(width="100%", max_width=f"{svgcharts.WIDTH}px"))
        self.view.add_class("servingmath-figure")
        self._figure = None
        self._drawn = None  # the result the matplotlib figure shows
        self.draws = 0
        self.result = None
        self.svg = svgcharts.SVG("")
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
        """Recompute, show the readouts, then redraw the figure."""
        self.update_readouts()
        self.redraw()

    def update_readouts(self):
        self.result = self._compute(**self.values())
        self.readouts = dict(self._describe(self.result))
        rows = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(label)}</th>"
                       f"<td>{html.escape(str(text))}</td></tr>" for label, text in self.readouts.items())
        self.readout.value = f"<table class='servingmath-readouts'>{rows}</table>"

    def sketch(self, result=None) -> svgcharts.SVG:
        """The live figure for ``result`` (the current one by default), as SVG."""
        result = self.result if result is None else result
        if self._sketch is not None:
            return svgcharts.SVG(self._sketch(result))
        # An explorer without an SVG drawing shows its matplotlib figure, written as SVG (slower).
        text = io.StringIO()
        self._draw_figure(result).savefig(text, format="svg")
        return svgcharts.SVG(text.getvalue())

    def redraw(self):
        self.svg = self.sketch()
        self.view.value = self.svg
        self.draws += 1

    def _draw_figure(self, result):
        if self._figure is None:
            # A figure outside pyplot: the explorer owns it, and it is freed with the explorer.
            self._figure = Figure(figsize=(7.0, 3.6), layout="constrained")
            FigureCanvasAgg(self._figure)
            self._figure.add_subplot()
        if self._drawn is not result:
            self._draw(result, self._figure.axes[0])
            self._drawn = result
        return self._figure

    @property
    def figure(self) -> Figure:
        """The figure at the current setting in matplotlib, for a page's static image (drawn when asked for)."""
        return self._draw_figure(self.result)

    @property
    def ax(self):
        return self.figure.axes[0]

    def widget(self) -> widgets.Widget:
        header = [widgets.HTML(f"<b>{html.escape(self.title)}</b>")] if self.title else []
        box = widgets.VBox([*header, widgets.VBox(list(self.controls.values())), self.readout, self.view])
        box.add_class("servingmath-explorer")
        if self.name:
            box.add_class(f"servingmath-explorer-{self.name}")
        return box

    def _ipython_display_(self):
        display(self.widget())


# --- Lesson 1, part 1: the passes of a request ---------------------------------------


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
                                           readout_format=",d", continuous_update=False,
                                           style={"description_width": "initial"}),
        "reply_tokens": widgets.IntSlider(value=reply_tokens, min=1, max=4_000, description="reply tokens",
                                          readout_format=",d", continuous_update=False,
                                          style={"description_width": "initial"}),
    }
    return Explorer(controls, compute=request_passes, describe=_describe_passes,
                    draw=lambda counted, ax: plots.request_timeline(counted, ax=ax),
                    name="passes", sketch=svgcharts.request_timeline, title="One request, counted in passes")


# --- Lesson 1, part 2: arithmetic intensity on the roofline ---------------------------


def _one_pass(tokens, gpu, weight_bits):
    """Llama 3 8B's pass as the controls describe it, counted as the lesson counts (weights only)."""
    tokens = min(round(tokens), LLAMA_3_8B.context_window)  # a log slider lands between whole numbers; the window caps it
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
    return plots.roofline_chart(result["gpu"], _intensity_passes(result), ax=ax)


def _intensity_passes(result):
    tokens = result["tokens"]
    return {f"{units.number(tokens)} {'token' if tokens == 1 else 'tokens'} in the pass": result["step"]}


def _sketch_intensity(result):
    return svgcharts.roofline_chart(result["gpu"], _intensity_passes(result))


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
                    name="intensity", sketch=_sketch_intensity, title="Llama 3 8B: FLOP per byte against the ridge")


# --- Lesson 1, part 3: where a request's time goes ------------------------------------

_WIDE = {"description_width": "10em"}


def request_explorer(model="llama-3-8b", gpu="h100-sxm", weight_bits=16, prompt_tokens=3000, reply_tokens=250):
    """Part 3: a model, a GPU and a request's lengths -> TTFT, TPOT and where the time goes."""

    controls = {
        "model": widgets.Dropdown(options=[(entry.name, key) for key, entry in MODELS.items()], value=model,
                                  description="model", style=_WIDE),
        "gpu": widgets.Dropdown(options=[(entry.name, key) for key, entry in CATALOG.items()], value=gpu,
                                description="GPU", style=_WIDE),
        "weight_bits": widgets.ToggleButtons(options=[16, 8, 4], value=weight_bits, description="bits a weight",
                                             style=_WIDE),
        "prompt_tokens": widgets.IntSlider(value=prompt_tokens, min=1, max=6000, description="prompt tokens",
                                           readout_format=",d", style=_WIDE),
        "reply_tokens": widgets.IntSlider(value=reply_tokens, min=1, max=2000, description="reply tokens",
                                          readout_format=",d", style=_WIDE),
    }

    def compute(model, gpu, weight_bits, prompt_tokens, reply_tokens):
        chosen_gpu, chosen_model = CATALOG[gpu], MODELS[model]
        reply_tokens = min(reply_tokens, chosen_model.context_window - 1)  # the window caps prompt and reply
        prompt_tokens = min(prompt_tokens, chosen_model.context_window - reply_tokens)
        return chosen_gpu, serving.request(chosen_model, chosen_gpu, prompt_tokens, reply_tokens, weight_bits)

    def describe(result):
        chosen_gpu, timed = result
        return {
            "time to first token (TTFT)": f"{units.ms(timed.ttft, 0)}, {timed.prefill.bound}-bound",
            "time per output token (TPOT)": f"{units.ms(timed.tpot)}, {timed.decode.bound}-bound",
            "tokens a second": units.number(timed.tokens_per_second),
            "whole reply": units.seconds(timed.total_time),
            "share spent in decode": units.percent(timed.decode_share),
            "weights read each pass": f"{units.gb(timed.decode.cost.weight_bytes)} "
                                      f"(the GPU holds {chosen_gpu.listed_memory})",
            "memory": timed.fit.summary,
        }

    return Explorer(controls, compute, describe, lambda result, ax: plots.request_time_split(result[1], ax),
                    name="request", sketch=lambda result: svgcharts.request_time_split(result[1]),
                    title="Where a request's time goes")


# --- Lesson 1, part 4: batching and the cost of a million tokens ----------------------

# Users per pass the slider offers: roughly evenly spaced on a log scale, 1 to 4,096.
USERS_PER_PASS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048,
                  3072, 4096)


@functools.lru_cache(maxsize=32)
def _batching_sweep(model, gpu, price_per_hour):
    """Every batch the slider offers, and where a step turns compute-bound: the same while only the batch moves."""
    served, chosen_gpu = MODELS[model], CATALOG[gpu]
    return (serving.batching(served, chosen_gpu, range(1, USERS_PER_PASS[-1] + 1), price_per_hour=price_per_hour),
            serving.compute_bound_batch(served, chosen_gpu))


def batching_explorer(batch=32, price_per_hour=3.0, gpu="h100-sxm", model="llama-3-8b"):
    """Part 4: users per pass and the price of an hour -> tokens an hour and the cost of a million.

    Choosing a GPU sets the price to that GPU's rental price in the catalog (where it has one);
    the slider then sets what you would pay.
    """
    controls = {
        "batch": widgets.SelectionSlider(options=USERS_PER_PASS, value=batch, description="users per pass",
                                         style=_WIDE),
        "price_per_hour": widgets.FloatSlider(value=price_per_hour, min=0.25, max=10.0, step=0.05,
                                              readout_format=".2f", description="$ an hour", style=_WIDE),
        "gpu": widgets.Dropdown(options=[(entry.name, key) for key, entry in CATALOG.items()], value=gpu,
                                description="GPU", style=_WIDE),
    }
    served = MODELS[model]

    def compute(batch, price_per_hour, gpu):
        chosen_gpu = CATALOG[gpu]
        sweep, compute_bound_batch = _batching_sweep(model, gpu, price_per_hour)
        return SimpleNamespace(chosen=serving.batching(served, chosen_gpu, batch, price_per_hour=price_per_hour),
                               sweep=sweep, compute_bound_batch=compute_bound_batch)

    def describe(result):
        chosen, turn = result.chosen, result.compute_bound_batch
        return {
            "tokens an hour": units.millions(chosen.tokens_per_hour, 2),
            "cost per million tokens": units.dollars(chosen.cost_per_million_tokens, 3),
            "each user's tokens a second": units.number(chosen.tokens_per_second_per_user),
            "one decode step": f"{units.ms(chosen.step_time)}, {chosen.decode.bound}-bound",
            "arithmetic becomes the limit at": "never" if turn is None else f"{units.number(turn)} users per pass",
            "memory": chosen.fit.summary,
        }

    def draw(result, ax):
        return plots.batching_sweep(result.sweep, result.chosen, result.compute_bound_batch, ax)

    def sketch(result):
        return svgcharts.batching_sweep(result.sweep, result.chosen, result.compute_bound_batch)

    explorer = Explorer(controls, compute, describe, draw, name="batching", sketch=sketch,
                        title=f"Batching {served.name}: what a million tokens cost")

    def follow_the_gpu_price(change):
        price = CATALOG[change["new"]].price_per_hour
        if price is not None:
            controls["price_per_hour"].value = price

    controls["gpu"].observe(follow_the_gpu_price, names="value")
    return explorer


# --- Lesson 1, wrap-up: the quiz --------------------------------------------------------
class Quiz:
    """Multiple-choice questions (``servingmath.quiz.Question``) that answer every click.

    Each option has a lettered button; choosing one shows that option's feedback under
    the question and colours the button green or red. Tests call ``choose`` directly,
    or ``buttons[q][o].click()`` as a reader would.
    """

    def __init__(self, questions):
        # Imported here, inside this chapter's section, so the module's shared header stays untouched.

        self.questions = tuple(questions)
        if not self.questions:
            raise ValueError(f"questions must hold at least one Question, got {questions!r}")
        for number, question in enumerate(self.questions):
            if not isinstance(question, Question):
                raise TypeError(f"questions[{number}] must be a Question, got {question!r}")
        self.choices: dict[int, int] = {}
        self.buttons = [[widgets.Button(description=LETTERS[option], layout=widgets.Layout(width="3em"))
                         for option in range(len(question.options))] for question in self.questions]
        self.feedback = [widgets.HTML() for _ in self.questions]
        for question_index, row in enumerate(self.buttons):
            for option_index, button in enumerate(row):
                button.on_click(lambda _button, q=question_index, o=option_index: self.choose(q, o))

    def choose(self, question_index, option_index):
        """Pick an option, show its feedback, and return it (a ``servingmath.quiz.Feedback``)."""
        if isinstance(question_index, bool) or not isinstance(question_index, int) \
                or not 0 <= question_index < len(self.questions):
            raise ValueError(f"question_index must be from 0 to {len(self.questions) - 1}, got {question_index!r}")
        feedback = self.questions[question_index].answer(option_index)
        self.choices[question_index] = int(option_index)
        for index, button in enumerate(self.buttons[question_index]):
            chosen = index == option_index
            button.button_style = ("success" if feedback.correct else "danger") if chosen else ""
        colour = "#2ca02c" if feedback.correct else "#d62728"
        self.feedback[question_index].value = (
            f"<p style='border-left:4px solid {colour};padding-left:0.6em'>{html.escape(feedback.message)}</p>")
        return feedback

    @property
    def score(self) -> int:
        """How many questions are answered right at the moment."""
        return sum(self.questions[q].answer(o).correct for q, o in self.choices.items())

    def widget(self) -> widgets.Widget:
        blocks = []
        for number, (question, row, feedback) in enumerate(zip(self.questions, self.buttons, self.feedback), 1):
            options = [widgets.HBox([button, widgets.HTML(html.escape(text))])
                       for button, text in zip(row, question.options)]
            blocks.append(widgets.VBox([widgets.HTML(f"<b>{number}. {html.escape(question.prompt)}</b>"),
                                        *options, feedback]))
        return widgets.VBox(blocks)

    def _ipython_display_(self):

        display(self.widget())


# --- Plate XXIII.1: the workshop --------------------------------------------------------


# Powers of two from a single token (a decode step) to a 16,384-token prompt.
WORKSHOP_STOPS = tuple(2 ** power for power in range(15))
# Overheads from none to 1 ms a pass, in steps of 0.05 ms (held in seconds).
WORKSHOP_OVERHEADS = tuple(step / 20_000 for step in range(21))
LIMITS = {"compute": "arithmetic (compute-bound)", "memory": "memory (memory-bound)"}


def _workshop(tokens, compute_efficiency, bandwidth_efficiency, overhead, model, gpu, cached_tokens):
    assumptions = replace(
        PLATE, compute_efficiency=compute_efficiency, bandwidth_efficiency=bandwidth_efficiency, overhead=overhead,
        label=f"plate: {units.percent(compute_efficiency)} compute, {units.percent(bandwidth_efficiency)} "
              f"bandwidth, {units.ms(overhead)} a pass")
    curve = _curve(model, gpu, assumptions)
    window = find_model(model).context_window  # passes and caches stay inside the model's window
    tokens, cached_tokens = min(tokens, window), min(cached_tokens, window - 1)
    decode = curve.decode_at(cached_tokens)
    # One token in the pass is a decode step over the cache; more is a prefill of the prompt.
    chosen = decode if tokens == 1 else curve.prefill_at(tokens)
    return SimpleNamespace(tokens=tokens, cached_tokens=cached_tokens, curve=curve, decode=decode, chosen=chosen,
                           ideal=_curve(model, gpu, LESSON))


@functools.lru_cache(maxsize=64)
def _curve(model, gpu, assumptions):
    """The workshop's curve, kept while only the tokens in the pass or the cache move."""
    return time_per_token_curve(find_model(model), find_gpu(gpu), assumptions=assumptions)


def _describe_workshop(result):
    if result.tokens == 1:
        what = f"decode step: 1 new token over {units.number(result.cached_tokens)} cached"
    else:
        what = f"prefill of {units.number(result.tokens)} prompt tokens"
    switch = result.curve.arithmetic_from
    return {
        "pass": what,
        "time of the pass": units.ms_significant(result.chosen.time),
        "time per token": units.ms_significant(result.chosen.time_per_token),
        "FLOP per byte": units.number(result.chosen.cost.intensity),
        "limit": LIMITS[result.chosen.bound],
        "arithmetic sets the time from": "never" if switch is None else f"{units.number(switch)} tokens",
    }


def _draw_workshop(result, ax):
    marks = () if result.chosen is result.decode else (result.chosen,)
    plots.time_per_token_chart(result.curve, result.decode, marks, ideal=result.ideal, ax=ax)


def _sketch_workshop(result):
    marks = () if result.chosen is result.decode else (result.chosen,)
    return svgcharts.time_per_token_chart(result.curve, result.decode, marks, ideal=result.ideal)


def workshop_explorer(tokens=1024, cached_tokens=1000, model="llama-3-8b", gpu="h100-sxm") -> Explorer:
    """Plate XXIII.1: time per token of one pass as its tokens grow, under the plate's assumptions."""
    if tokens not in WORKSHOP_STOPS:
        raise ValueError(f"tokens must be one of {WORKSHOP_STOPS}, got {tokens!r}")
    style = {"description_width": "13em"}
    layout = widgets.Layout(width="34em")
    controls = {
        "tokens": widgets.SelectionSlider(
            options=[(units.number(stop), stop) for stop in WORKSHOP_STOPS], value=tokens,
            description="tokens in the pass", style=style, layout=layout),
        "compute_efficiency": widgets.FloatSlider(
            value=PLATE.compute_efficiency, min=0.05, max=1.0, step=0.05, readout_format=".0%",
            description="compute efficiency", style=style, layout=layout),
        "bandwidth_efficiency": widgets.FloatSlider(
            value=PLATE.bandwidth_efficiency, min=0.05, max=1.0, step=0.05, readout_format=".0%",
            description="bandwidth efficiency", style=style, layout=layout),
        "overhead": widgets.SelectionSlider(
            options=[(units.ms(seconds), seconds) for seconds in WORKSHOP_OVERHEADS], value=PLATE.overhead,
            description="overhead a pass", style=style, layout=layout),
        "model": widgets.Dropdown(options=[(entry.name, key) for key, entry in MODELS.items()], value=model,
                                  description="model", style=style, layout=layout),
        "gpu": widgets.Dropdown(options=[(entry.name, key) for key, entry in CATALOG.items()], value=gpu,
                                description="GPU", style=style, layout=layout),
        "cached_tokens": widgets.IntSlider(value=cached_tokens, readout_format=",d", min=0, max=16_000, step=250,
                                           description="decode: tokens cached", style=style, layout=layout),
    }
    return Explorer(controls, _workshop, _describe_workshop, _draw_workshop, name="workshop",
                    sketch=_sketch_workshop,
                    title="Time per token of one forward pass")


# --- Lesson 2: each user's KV cache -------------------------------------------------------
def _models_dropdown(value, style=_WIDE):
    return widgets.Dropdown(options=[(entry.name, key) for key, entry in MODELS.items()], value=value,
                            description="model", style=style)


def _gpus_dropdown(value, style=_WIDE):
    return widgets.Dropdown(options=[(entry.name, key) for key, entry in CATALOG.items()], value=value,
                            description="GPU", style=style)


def _tokens_slider(value, description, low=0, high=32_768, step=256):
    return widgets.IntSlider(value=value, min=low, max=high, step=step, description=description, style=_WIDE,
                             continuous_update=False, layout=widgets.Layout(width="36em"))


def cache_saving_explorer(context_tokens=3000, model="llama-3-8b", gpu="h100-sxm") -> Explorer:
    """Lesson 2, part 1: one decode step's FLOPs and time, with the KV cache and without it."""
    # From one slider step up: the chart's token axis is logarithmic, and with nothing cached there is nothing to save.
    controls = {"context_tokens": _tokens_slider(context_tokens, "tokens already in", low=256),
                "model": _models_dropdown(model), "gpu": _gpus_dropdown(gpu)}

    def compute(context_tokens, model, gpu):
        chosen_model, chosen_gpu = MODELS[model], CATALOG[gpu]
        swept, longest = _within(chosen_model)
        context_tokens = min(context_tokens, longest)
        return SimpleNamespace(
            gpu=chosen_gpu,
            saving=cache.decode_with_and_without_cache(chosen_model, context_tokens),
            times=cache.time_with_and_without_cache(chosen_model, chosen_gpu, context_tokens),
            sweep=cache.decode_with_and_without_cache(chosen_model, swept))

    def describe(result):
        saving, times = result.saving, result.times
        return {
            "FLOPs without the cache": units.trillions(saving.without_cache.flops, 2),
            "FLOPs with the cache": units.billions(saving.with_cache.flops, 1),
            "times fewer with the cache": units.number(saving.flops_saved),
            "the step without the cache": f"{units.ms(times.without_cache.time)}, "
                                          f"{'compute' if times.without_cache.compute_bound else 'memory'}-bound",
            "the step with the cache": f"{units.ms(times.with_cache.time)}, "
                                       f"{'compute' if times.with_cache.compute_bound else 'memory'}-bound",
        }

    def draw(result, ax):
        sweep = result.sweep
        return plots.cache_saving_chart(sweep.context_tokens, sweep.with_cache.flops, sweep.without_cache.flops,
                                        result.saving, result.times, result.gpu.name, ax)

    def sketch(result):
        sweep = result.sweep
        return svgcharts.cache_saving_chart(sweep.context_tokens, sweep.with_cache.flops, sweep.without_cache.flops,
                                            result.saving, result.times, result.gpu.name)

    return Explorer(controls, compute, describe, draw, name="cache_saving", sketch=sketch,
                    title="One decode step, with the KV cache and without it")


# Every length of conversation the lesson-2 explorers draw their curves over: 1 to 32,768 tokens.
CACHE_SWEEP_TOKENS = np.unique(np.round(np.logspace(0, 15, 301, base=2)).astype(int))


def _within(*shown):
    """The sweep's lengths and the longest context every model in ``shown`` reads (a cache and the
    token a step adds): the curves stop at the shortest window."""
    longest = min(m.context_window for m in shown) - 1
    return CACHE_SWEEP_TOKENS[CACHE_SWEEP_TOKENS <= longest], longest


def cache_size_explorer(context_tokens=8000, model="llama-3-8b", kv_bits=16) -> Explorer:
    """Lesson 2, part 2: one conversation's KV cache against the model's weights."""
    controls = {"context_tokens": _tokens_slider(context_tokens, "tokens in the conversation", low=256),
                "model": _models_dropdown(model),
                "kv_bits": widgets.ToggleButtons(options=[16, 8, 4], value=kv_bits, description="bits a value",
                                                 style=_WIDE)}

    def compute(context_tokens, model, kv_bits):
        chosen = MODELS[model]
        swept, longest = _within(chosen)
        context_tokens = min(context_tokens, longest)
        return SimpleNamespace(model=chosen, context_tokens=context_tokens, kv_bits=kv_bits, swept=swept,
                               per_token=memory.kv_cache_bytes(chosen, 1, kv_bits=kv_bits),
                               conversation=memory.kv_cache_bytes(chosen, context_tokens, kv_bits=kv_bits),
                               sweep=memory.kv_cache_bytes(chosen, swept, kv_bits=kv_bits),
                               weights=memory.weight_bytes(chosen.parameters))

    def describe(result):
        return {
            "cache a token": f"{units.number(result.per_token)} bytes ({units.kib(result.per_token, 1)})",
            "cache of the conversation": units.gb(result.conversation),
            "weights (16 bits)": units.gb(result.weights),
            "the cache, as a share of the weights": units.percent(result.conversation / result.weights, 1),
        }

    def lines(result):
        return {f"{result.model.name}, {result.kv_bits}-bit cache": result.sweep}

    def draw(result, ax):
        return plots.cache_size_chart(result.swept, lines(result), result.weights, result.context_tokens, ax)

    def sketch(result):
        return svgcharts.cache_size_chart(result.swept, lines(result), result.weights, result.context_tokens)

    return Explorer(controls, compute, describe, draw, name="cache_size", sketch=sketch,
                    title="The KV cache of one conversation")


def users_that_fit_explorer(context_tokens=8000, model="llama-3-8b", gpu="h100-sxm", weight_bits=16,
                            kv_bits=16) -> Explorer:
    """Lesson 2, part 3: how many users' caches fit beside the weights on one GPU."""
    controls = {"context_tokens": _tokens_slider(context_tokens, "tokens each user holds", low=256),
                "model": _models_dropdown(model), "gpu": _gpus_dropdown(gpu),
                "weight_bits": widgets.ToggleButtons(options=[16, 8, 4], value=weight_bits,
                                                     description="bits a weight", style=_WIDE),
                "kv_bits": widgets.ToggleButtons(options=[16, 8, 4], value=kv_bits, description="bits a cached value",
                                                 style=_WIDE)}

    def compute(context_tokens, model, gpu, weight_bits, kv_bits):
        chosen_model, chosen_gpu = MODELS[model], CATALOG[gpu]
        swept, longest = _within(chosen_model)
        context_tokens = min(context_tokens, longest)
        users = memory.max_batch(chosen_model, chosen_gpu, context_tokens, weight_bits, kv_bits)
        sweep = {f"{bits}-bit cache": memory.max_batch(chosen_model, chosen_gpu, swept, weight_bits, bits)
                 for bits in sorted({16, 8, kv_bits}, reverse=True)}
        return SimpleNamespace(context_tokens=context_tokens, users=users, sweep=sweep, swept=swept,
                               budget=memory.fit(chosen_model, chosen_gpu, context_tokens, max(users, 1),
                                                 weight_bits, kv_bits))

    def describe(result):
        budget = result.budget
        return {
            "usable memory": f"{units.gb(budget.usable_bytes)} ({units.percent(budget.reserve)} held back)",
            "weights": units.gb(budget.weight_bytes),
            "cache a user": units.gb(budget.cache_bytes / max(result.users, 1)),
            "users that fit": units.number(result.users),
        }

    def caption(result):
        budget = result.budget
        room = budget.usable_bytes - budget.weight_bytes
        left = f"{units.gb(room)} left for caches" if room > 0 else "the weights alone do not fit"
        return f"{budget.model.name}, {units.gb(budget.weight_bytes)} of weights, on {budget.gpu.name}: {left}"

    def draw(result, ax):
        return plots.users_that_fit_chart(result.swept, result.sweep, result.context_tokens,
                                          caption=caption(result), ax=ax)

    def sketch(result):
        return svgcharts.users_that_fit_chart(result.swept, result.sweep, result.context_tokens,
                                              caption=caption(result))

    return Explorer(controls, compute, describe, draw, name="users_that_fit", sketch=sketch,
                    title="Users whose caches fit on one GPU")


# Users per pass the lesson-2 batching explorer sweeps: 1 to 4,096.
CACHED_USERS = np.arange(1, 4097)
# The lengths of conversation its figure compares.
CACHED_CONTEXTS = (1000, 3000, 8000, 32000)


def cached_batching_explorer(batch=32, context_tokens=3000, gpu="h100-sxm", price_per_hour=3.0,
                             kv_bits=16, model="llama-3-8b") -> Explorer:
    """Lesson 2, part 4: time and price of decode when every step reads every user's cache."""
    controls = {"batch": widgets.SelectionSlider(options=USERS_PER_PASS, value=batch, description="users per pass",
                                                 style=_WIDE),
                "context_tokens": _tokens_slider(context_tokens, "tokens each user holds", low=256),
                "gpu": _gpus_dropdown(gpu),
                "price_per_hour": widgets.FloatSlider(value=price_per_hour, min=0.25, max=10.0, step=0.05,
                                                      readout_format=".2f", description="$ an hour", style=_WIDE),
                "kv_bits": widgets.ToggleButtons(options=[16, 8], value=kv_bits, description="bits a cached value",
                                                 style=_WIDE)}
    served = MODELS[model]

    def compute(batch, context_tokens, gpu, price_per_hour, kv_bits):
        chosen_gpu = CATALOG[gpu]
        longest = served.context_window - 1  # the cache a step reads, inside the window
        context_tokens = min(context_tokens, longest)
        lengths = sorted({tokens for tokens in CACHED_CONTEXTS if tokens <= longest} | {context_tokens})
        costs = {f"{units.number(tokens)} tokens each": cache.cached_decode(
            served, chosen_gpu, CACHED_USERS, tokens, price_per_hour, kv_bits=kv_bits).cost_per_million_tokens
            for tokens in lengths}
        walls = {f"{units.number(tokens)} tokens each": memory.max_batch(served, chosen_gpu, tokens, kv_bits=kv_bits)
                 for tokens in lengths}
        costs["weights only (lesson 1)"] = serving.batching(served, chosen_gpu, CACHED_USERS,
                                                            price_per_hour=price_per_hour).cost_per_million_tokens
        return SimpleNamespace(
            chosen=cache.cached_decode(served, chosen_gpu, batch, context_tokens, price_per_hour, kv_bits=kv_bits),
            weights_only=serving.batching(served, chosen_gpu, batch, price_per_hour=price_per_hour),
            fits=memory.max_batch(served, chosen_gpu, context_tokens, kv_bits=kv_bits),
            crossing=cache.cache_matches_weights_batch(served, context_tokens, kv_bits=kv_bits),
            costs=costs, walls=walls)

    def describe(result):
        chosen = result.chosen
        return {
            "one decode step": f"{units.ms(chosen.step_time)}, {chosen.decode.bound}-bound",
            "each user's tokens a second": units.number(chosen.tokens_per_second_per_user),
            "cost per million tokens": units.dollars(chosen.cost_per_million_tokens, 3),
            "without the caches (lesson 1)": units.dollars(result.weights_only.cost_per_million_tokens, 3),
            "caches weigh as much as the weights at": f"{units.number(result.crossing)} users",
            "users that fit at this length": units.number(result.fits)
            + ("" if chosen.batch <= result.fits else ": this batch does not fit"),
        }

    def draw(result, ax):
        return plots.cached_batching_chart(CACHED_USERS, result.costs, result.walls, result.chosen.batch, ax)

    def sketch(result):
        return svgcharts.cached_batching_chart(CACHED_USERS, result.costs, result.walls, result.chosen.batch)

    return Explorer(controls, compute, describe, draw, name="cached_batching", sketch=sketch,
                    title=f"Batching {served.name} with every user's cache read")


# --- Plate XXIII.2: users that fit against the length of their conversations --------------
# Reserves from none to a fifth of the memory, in steps of 1 %.
WORKSHOP_RESERVES = tuple(step / 100 for step in range(21))


def kv_workshop_explorer(context_tokens=4000, gpu="h100-sxm", weight_bits=16, kv_bits=16,
                         reserve=memory.RESERVE, models=cache.WORKSHOP_MODELS) -> Explorer:
    """Plate XXIII.2: the most users whose caches fit beside each model's weights on one GPU."""
    style = {"description_width": "13em"}
    layout = widgets.Layout(width="36em")
    controls = {
        "context_tokens": widgets.IntSlider(value=context_tokens, min=256, max=32_768, step=256,
                                            description="tokens each user holds", style=style, layout=layout,
                                            continuous_update=False),
        "gpu": widgets.Dropdown(options=[(entry.name, key) for key, entry in CATALOG.items()], value=gpu,
                                description="GPU", style=style, layout=layout),
        "weight_bits": widgets.ToggleButtons(options=[16, 8, 4], value=weight_bits, description="bits a weight",
                                             style=style),
        "kv_bits": widgets.ToggleButtons(options=[16, 8, 4], value=kv_bits, description="bits a cached value",
                                         style=style),
        "reserve": widgets.SelectionSlider(options=[(units.percent(r), r) for r in WORKSHOP_RESERVES], value=reserve,
                                           description="memory held back", style=style, layout=layout),
    }
    chosen_models = [MODELS[key] for key in models]

    def compute(context_tokens, gpu, weight_bits, kv_bits, reserve):
        chosen_gpu = CATALOG[gpu]
        swept, longest = _within(*chosen_models)
        context_tokens = min(context_tokens, longest)
        return SimpleNamespace(
            context_tokens=context_tokens, gpu=chosen_gpu, models=chosen_models, reserve=reserve, swept=swept,
            users={m.name: memory.max_batch(m, chosen_gpu, context_tokens, weight_bits, kv_bits, reserve)
                   for m in chosen_models},
            crossing={m.name: cache.cache_matches_weights_batch(m, context_tokens, weight_bits, kv_bits)
                      for m in chosen_models},
            sweep={m.name: memory.max_batch(m, chosen_gpu, swept, weight_bits, kv_bits, reserve)
                   for m in chosen_models},
            crossings={m.name: cache.cache_matches_weights_batch(m, swept, weight_bits, kv_bits)
                       for m in chosen_models})

    def describe(result):
        shown = {}
        for m in result.models:
            users, crossing = result.users[m.name], result.crossing[m.name]
            verdict = "caches outweigh the weights" if users > crossing else "weights outweigh the caches"
            shown[f"{m.name}: users that fit"] = f"{units.number(users)} ({verdict} when full)"
        return shown

    def caption(result):
        return f"{result.gpu.name}, {units.percent(result.reserve)} of its memory held back"

    def draw(result, ax):
        return plots.users_that_fit_chart(result.swept, result.sweep, result.context_tokens,
                                          result.crossings, caption(result), ax)

    def sketch(result):
        return svgcharts.users_that_fit_chart(result.swept, result.sweep, result.context_tokens,
                                              result.crossings, caption(result))

    return Explorer(controls, compute, describe, draw, name="kv_workshop", sketch=sketch,
                    title="Users whose caches fit on one GPU, three models")
