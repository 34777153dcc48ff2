"""Charts a reader moves on the website, with no kernel behind the page.

How a chart works
-----------------
A chart has a few **controls** (a slider, a menu, a row of buttons), each with a short,
fixed list of options. When the book is built, the package computes, for every
combination of options, the chart's **readouts** (label -> the text shown) and the SVG of
each of its **layers**, and formats every value with ``servingmath.units``. The page's
``_static/webcharts.js`` only looks the chosen combination up and swaps the text in: no
formula of the course is written in JavaScript. A slider offers fewer, coarser steps
than the ipywidgets explorer; a chart's data must stay under ``MAX_DATA_BYTES``.

Making one
----------
Describe the controls, a ``readouts`` function that takes every control's value as a
keyword argument, and layers, each drawn by a function that takes only the controls it
depends on (so a curve that moves with the GPU is stored once per GPU, not once per
setting). The SVG is ``WIDTH`` user units wide; ``Panel`` places values on axes::

    from servingmath import webcharts as wc

    @wc.builder
    def speed_chart(default_gpu="h100-sxm"):
        panel = wc.Panel.make((1, 1000), (0.001, 1), top=wc.TOP, height=200,
                              x_log=True, y_log=True, x_label="tokens", y_label="seconds")
        def curve(gpu):                       # depends on the GPU alone
            return panel.line(xs, times(gpu), wc.PREFILL)
        def marker(gpu, tokens):              # depends on both controls
            return panel.marker(tokens, time(gpu, tokens), wc.PREFILL)
        return wc.live_chart(
            "speed", "Time of a pass", [
                wc.menu("gpu", "GPU", gpu_options, default=default_gpu),
                wc.slider("tokens", "tokens in the pass", [1, 10, 100, 1000], default=100,
                          text=lambda n: f"{units.number(n)} tokens")],
            readouts=lambda gpu, tokens: {"time of the pass": units.ms(time(gpu, tokens))},
            layers=[wc.Layer(("gpu",), curve), wc.Layer(("gpu", "tokens"), marker)],
            background=panel.axes(), height=panel.bottom + wc.BOTTOM)

``@builder`` records the call (its keyword arguments must be JSON: a GPU or model by its
catalog key), so the browser test can rebuild the chart and compare what the page shows
with the package at random settings. The result is a ``Chart``: a ``str`` of HTML that a
notebook shows as a still figure at its default setting (the live view there is the
ipywidgets explorer); ``chart.readouts_at(gpu="h200", tokens=10)`` computes a setting
anew.

    webcharts.batching_chart()    # as a cell's last value, tagged remove-input
"""
from __future__ import annotations

import contextvars
import functools
import hashlib
import html
import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np

from . import _check, units
from .hardware import CATALOG
from .models import LLAMA_3_8B, MODELS
from .plots import COMPUTE, DECODE, MEMORY, NEUTRAL, PREFILL
from .roofline import LESSON, PLATE, attainable_flops, ridge_point
from .serving import (batching, compute_bound_batch, decode_step, request, request_passes, step,
                      time_per_token_curve)
from .svgcharts import Scale, decades, round_steps  # one way to place values on an axis, for both kinds of chart

__all__ = ["Chart", "Control", "Layer", "Panel", "Scale", "builder", "buttons", "live_chart", "menu", "slider",
           "slider_steps", "passes_chart", "roofline_chart", "request_chart", "batching_chart", "workshop_chart",
           "CHART_BUILDERS", "MAX_DATA_BYTES", "WIDTH", "LEFT", "RIGHT", "TOP", "BOTTOM",
           "PREFILL", "DECODE", "COMPUTE", "MEMORY", "NEUTRAL"]

# The SVG's width in user units. Narrow, with large type, so a phone 400 px wide still
# shows the axis text at a readable size (the SVG scales to the page's width).
WIDTH = 480
LEFT, RIGHT, TOP, BOTTOM = 84, 16, 14, 52
TICK_SIZE, LABEL_SIZE = 15, 16
# Grid lines in the text colour, faint, so they suit a light page and a dark one.
GRID = 'stroke="currentColor" stroke-opacity="0.18"'
# The most a chart's looked-up data may weigh on its page.
MAX_DATA_BYTES = 400_000


# --- controls ------------------------------------------------------------------------
@dataclass(frozen=True)
class Control:
    """One control of a chart: its name (the keyword the chart's functions take), the label
    the reader sees, its options (the values passed on) and how each reads on the page.

    ``kind`` is ``"slider"`` (an ordered range), ``"menu"`` (a drop-down) or ``"buttons"``
    (a row of radio buttons); ``default`` is the index of the option shown first.
    """

    name: str
    label: str
    options: tuple
    texts: tuple[str, ...]
    default: int
    kind: str

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"name must be a Python identifier, got {self.name!r}")
        if self.kind not in ("slider", "menu", "buttons"):
            raise ValueError(f"kind must be 'slider', 'menu' or 'buttons', got {self.kind!r}")
        if len(self.options) < 2:
            raise ValueError(f"options of {self.name} must hold at least two choices, got {self.options!r}")
        if len(self.texts) != len(self.options) or len(set(self.texts)) != len(self.texts):
            raise ValueError(f"texts of {self.name} must name each option once, got {self.texts!r}")
        if not 0 <= self.default < len(self.options):
            raise ValueError(f"default of {self.name} must be an option's index, got {self.default!r}")

    def index(self, value) -> int:
        """The index of the option ``value`` (a value or its text)."""
        for k, (option, text) in enumerate(zip(self.options, self.texts)):
            if value == text or (not isinstance(value, str) and _same(option, value)) or \
                    (isinstance(value, str) and value == option):
                return k
        raise ValueError(f"{self.name} must be one of {list(self.texts)}, got {value!r}")


def _same(option, value):
    try:
        return bool(option == value)
    except (TypeError, ValueError):
        return False


def _pick(values, default):
    values = list(values)
    for k, value in enumerate(values):
        if _same(value, default):
            return k
    raise ValueError(f"default must be one of the options {values}, got {default!r}")


def slider(name: str, label: str, values: Sequence, default, text: Callable = str) -> Control:
    """A slider over ``values`` in order; ``text(value)`` is how a step reads (``"1,024 tokens"``)."""
    values = tuple(v.item() if isinstance(v, np.generic) else v for v in values)
    return Control(name, label, values, tuple(text(v) for v in values), _pick(values, default), "slider")


def menu(name: str, label: str, choices: Mapping, default) -> Control:
    """A drop-down: ``choices`` maps each value to its text (``{"h100-sxm": "NVIDIA H100 SXM"}``)."""
    return Control(name, label, tuple(choices), tuple(choices.values()), _pick(choices, default), "menu")


def buttons(name: str, label: str, choices: Mapping, default) -> Control:
    """A row of radio buttons, for two to four choices: ``choices`` maps each value to its text."""
    return Control(name, label, tuple(choices), tuple(choices.values()), _pick(choices, default), "buttons")


@dataclass(frozen=True)
class Layer:
    """Part of the SVG that changes with ``depends`` (control names): ``draw(**those values)``
    returns its SVG markup. It is stored once per combination of those controls only."""

    depends: tuple[str, ...]
    draw: Callable[..., str]


# --- the chart -----------------------------------------------------------------------
class Chart(str):
    """A chart's HTML. A notebook shows it as HTML; tests read and recompute its settings.

    ``controls`` are its ``Control``s; ``labels`` its readouts' labels; ``call`` how
    ``@builder`` made it (``{"function": "module:name", "kwargs": {...}}``), or None;
    ``data_bytes`` the size of the data the page looks values up in.
    """

    controls: tuple[Control, ...]
    labels: tuple[str, ...]
    call: dict | None
    data_bytes: int

    def __new__(cls, text, *, controls, labels, readouts, layers, call, data_bytes):
        chart = super().__new__(cls, text)
        chart.controls, chart.labels, chart.call, chart.data_bytes = tuple(controls), tuple(labels), call, data_bytes
        chart._readouts, chart._layers = readouts, tuple(layers)
        return chart

    def _repr_html_(self):
        return str(self)

    @property
    def site_controls(self):
        return self.controls

    def __repr__(self):
        settings = math.prod(len(c.options) for c in self.controls)
        return f"<chart: {', '.join(c.label for c in self.controls)}; {settings} settings>"

    @property
    def default(self) -> dict:
        """The setting shown first: control name -> value."""
        return {c.name: c.options[c.default] for c in self.controls}

    def _setting(self, values: Mapping) -> dict:
        unknown = sorted(set(values) - {c.name for c in self.controls})
        if unknown:
            raise ValueError(f"settings must name the chart's controls {[c.name for c in self.controls]}, "
                             f"got {unknown}")
        setting = self.default
        for control in self.controls:
            if control.name in values:
                setting[control.name] = control.options[control.index(values[control.name])]
        return setting

    def readouts_at(self, **values) -> dict[str, str]:
        """The readouts at a setting (values or their texts; others at their defaults), computed anew."""
        return dict(self._readouts(**self._setting(values)))

    def layers_at(self, **values) -> list[str]:
        """Each layer's SVG at a setting, drawn anew."""
        setting = self._setting(values)
        return [layer.draw(**{name: setting[name] for name in layer.depends}) for layer in self._layers]

    def settings(self):
        """Every setting the chart holds, as dicts of control name -> value."""
        for combination in itertools.product(*(c.options for c in self.controls)):
            yield dict(zip((c.name for c in self.controls), combination))


_CALL: contextvars.ContextVar = contextvars.ContextVar("webchart_call", default=None)
# Every chart made with @builder, by name, so a test can rebuild a page's charts.
from .charts.explorer import BUILDERS as CHART_BUILDERS  # noqa: E402  (one registry while charts move over)


def builder(function):
    """Mark a function that returns ``live_chart(...)``: it takes keyword arguments that are
    JSON (catalog keys, numbers), and the chart records the call on the page."""
    @functools.wraps(function)
    def build(*args, **kwargs):
        if args:
            raise TypeError(f"{function.__name__} takes keyword arguments only, got {args!r}")
        try:
            json.dumps(kwargs)
        except TypeError:
            raise TypeError(f"{function.__name__}'s arguments must be JSON (a model or GPU by its catalog key), "
                            f"got {kwargs!r}") from None
        token = _CALL.set({"function": f"{function.__module__}:{function.__name__}", "kwargs": kwargs})
        try:
            return function(**kwargs)
        finally:
            _CALL.reset(token)

    CHART_BUILDERS[f"{function.__module__}:{function.__name__}"] = build
    return build


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")


def live_chart(kind: str, title: str, controls: Sequence[Control], readouts: Callable[..., Mapping[str, str]],
               layers: Sequence[Layer] = (), background: Sequence[str] = (), height: int = 300,
               note: str = "") -> Chart:
    """Compute every setting of a chart and assemble its HTML fragment.

    ``kind`` names the chart on the page (``data-chart``); ``background`` is SVG markup
    that never changes (axes, grid), drawn under the layers; ``height`` the SVG's height
    in user units; ``note`` a line under the readouts (the assumptions, say).
    """
    controls = tuple(controls)
    _check.instance("kind", kind, str)
    names = [c.name for c in controls]
    if not controls or len(set(names)) != len(names):
        raise ValueError(f"controls must be at least one, each named once, got {names}")
    for layer in layers:
        if not set(layer.depends) <= set(names):
            raise ValueError(f"a layer depends on {layer.depends}, which are not all among the controls {names}")
    counts = [len(c.options) for c in controls]
    strides = [math.prod(counts[k + 1:]) for k in range(len(controls))]

    strings: list[str] = []
    where: dict[str, int] = {}

    def intern(text) -> int:
        text = str(text)
        if text not in where:
            where[text] = len(strings)
            strings.append(text)
        return where[text]

    labels, table = None, []
    for setting in itertools.product(*(c.options for c in controls)):
        shown = dict(readouts(**dict(zip(names, setting))))
        if labels is None:
            labels = tuple(shown)
        elif tuple(shown) != labels:
            raise ValueError(f"readouts must give the same labels at every setting, got {tuple(shown)} "
                             f"after {labels}")
        table.extend(intern(text) for text in shown.values())

    stored_layers, defaults = [], []
    for layer in layers:
        dims = [names.index(name) for name in layer.depends]
        parts = [intern(layer.draw(**{controls[d].name: value for d, value in zip(dims, combination)}))
                 for combination in itertools.product(*(controls[d].options for d in dims))]
        layer_strides = [0] * len(controls)
        for position, d in enumerate(dims):
            layer_strides[d] = math.prod(counts[e] for e in dims[position + 1:])
        stored_layers.append({"strides": layer_strides, "parts": parts})
        defaults.append(strings[parts[sum(layer_strides[d] * controls[d].default for d in range(len(controls)))]])

    data = _json({"strides": strides, "texts": [list(c.texts) for c in controls], "strings": strings,
                  "readouts": table, "size": len(labels), "layers": stored_layers})
    data_bytes = len(data.encode())
    if data_bytes > MAX_DATA_BYTES:
        raise ValueError(f"chart {kind!r} needs {data_bytes:,} bytes of data, over {MAX_DATA_BYTES:,}: "
                         f"give its controls fewer options")
    call = _CALL.get()
    ident = f"webchart-{kind}-{hashlib.sha1(data.encode()).hexdigest()[:8]}"
    default_index = sum(s * c.default for s, c in zip(strides, controls))
    shown = [strings[table[default_index * len(labels) + r]] for r in range(len(labels))]

    # Sized in the tag too, so a notebook without the site's style sheet shows it at a readable size.
    svg = (f'<svg viewBox="0 0 {WIDTH} {int(height)}" width="100%" style="max-width: {WIDTH + 20}px; overflow: visible" role="img" '
           f'aria-labelledby="{ident}-title" '
           f'aria-describedby="{ident}-readouts" font-family="sans-serif" fill="currentColor" '
           f'xmlns="http://www.w3.org/2000/svg">' + "".join(background)
           + "".join(f'<g class="webchart-layer">{part}</g>' for part in defaults) + "</svg>")
    rows = "".join(f"<dt>{html.escape(label)}</dt><dd data-readout>{html.escape(text)}</dd>"
                   for label, text in zip(labels, shown))
    fragment = (
        f'<figure class="webchart" data-chart="{html.escape(kind)}" id="{ident}"'
        + (f" data-call='{html.escape(_json(call), quote=True)}'" if call else "") + ">"
        f'<figcaption class="webchart-title" id="{ident}-title">{html.escape(title)}</figcaption>'
        + svg
        + f'<div class="webchart-controls">{"".join(_control_html(ident, k, c) for k, c in enumerate(controls))}</div>'
        f'<dl class="webchart-readouts" id="{ident}-readouts" aria-live="polite">{rows}</dl>'
        + (f'<p class="webchart-note">{html.escape(note)}</p>' if note else "")
        + '<p class="webchart-nojs">The controls move on the course website; in a notebook, the live '
        'explorer below does the same.</p>'
        f'<script type="application/json" class="webchart-data">{data}</script>'
        "</figure>")
    return Chart(fragment, controls=controls, labels=labels, readouts=readouts, layers=layers, call=call,
                 data_bytes=data_bytes)


def _control_html(ident: str, k: int, control: Control) -> str:
    """One control, disabled until the page's script wires it (a notebook shows it still)."""
    cid = f"{ident}-{control.name}"
    label, default_text = html.escape(control.label), html.escape(control.texts[control.default])
    if control.kind == "slider":
        return (f'<div class="webchart-control" data-control="{k}" data-kind="slider">'
                f'<label for="{cid}">{label}</label>'
                f'<input type="range" id="{cid}" min="0" max="{len(control.options) - 1}" step="1" '
                f'value="{control.default}" aria-valuetext="{default_text}" disabled>'
                f'<output for="{cid}" class="webchart-value">{default_text}</output></div>')
    if control.kind == "menu":
        options = "".join(f'<option value="{i}"{" selected" if i == control.default else ""}>'
                          f'{html.escape(text)}</option>' for i, text in enumerate(control.texts))
        return (f'<div class="webchart-control" data-control="{k}" data-kind="menu">'
                f'<label for="{cid}">{label}</label><select id="{cid}" disabled>{options}</select></div>')
    choices = "".join(f'<label><input type="radio" name="{cid}" value="{i}"{" checked" if i == control.default else ""}'
                      f' disabled> {html.escape(text)}</label>' for i, text in enumerate(control.texts))
    return (f'<fieldset class="webchart-control" data-control="{k}" data-kind="buttons">'
            f'<legend>{label}</legend>{choices}</fieldset>')


# --- steps ---------------------------------------------------------------------------
def slider_steps(low: int, high: int, per_doubling: int, default: int, extra: Sequence[int] = ()) -> np.ndarray:
    """Whole numbers from ``low`` to ``high``, evenly spaced on a log scale.

    ``per_doubling`` steps each time the value doubles, so every ``low`` × 2ᵏ is a step
    (1,024 tokens, 32 users); ``high``, ``default`` and any ``extra`` values are steps too.
    """
    low = int(_check.count("low", low, minimum=1))
    high = int(_check.count("high", high, minimum=low + 1))
    per_doubling = int(_check.count("per_doubling", per_doubling, minimum=1))
    default = int(_check.count("default", default, minimum=low))
    if default > high:
        raise ValueError(f"default must be at most high ({high}), got {default!r}")
    extra = [int(_check.count("extra", value, minimum=low)) for value in extra]
    if any(value > high for value in extra):
        raise ValueError(f"extra must be at most high ({high}), got {extra!r}")
    exponents = np.arange(per_doubling * math.log2(high / low) + 1) / per_doubling
    steps = np.round(low * 2.0 ** exponents).astype(int)
    return np.unique(np.concatenate([steps[steps <= high], [high, default], np.asarray(extra, dtype=int)]))


def _figures(value, figures):
    """Digits after the point that show ``value`` to ``figures`` significant figures."""
    return max(0, figures - 1 - math.floor(math.log10(abs(value)))) if value else 0


def _ms(seconds, figures=3):
    return units.ms(seconds, _figures(seconds * 1e3, figures))


def _time(seconds, figures=3):
    """Milliseconds below a second, seconds above, to ``figures`` significant figures."""
    return _ms(seconds, figures) if seconds < 1 else units.seconds(seconds, _figures(seconds, figures))


def _counted(count, one, many):
    return f"{units.number(count)} {one if count == 1 else many}"


# --- drawing -------------------------------------------------------------------------
def log_ticks(low, high):
    """The powers of ten from ``low`` to ``high``."""
    return decades(low, high)


def linear_ticks(high, count=4):
    """0 and round steps (1, 2 or 5 × a power of ten) up to ``high``."""
    return round_steps(0, high, count)


def _points(xs, ys):
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys))


def _text(x, y, text, colour=None, anchor="start", size=TICK_SIZE, extra=""):
    fill = f' fill="{colour}"' if colour else ""
    return (f'<text x="{float(x):.1f}" y="{float(y):.1f}"{fill} font-size="{size}" text-anchor="{anchor}"{extra}>'
            f'{html.escape(text)}</text>')


@dataclass
class Panel:
    """One plotting area of a chart's SVG: two scales, tick marks, and what is drawn in it.

    Every method returns SVG markup: ``axes()`` for the background, the others for layers.
    """

    x: Scale
    y: Scale
    x_label: str = ""
    y_label: str = ""
    x_ticks: list = field(default_factory=list)   # (value, text)
    y_ticks: list = field(default_factory=list)
    show_x_ticks: bool = True

    @classmethod
    def make(cls, x_range, y_range, top, height, x_log=False, y_log=False, x_label="", y_label="",
             show_x=True) -> "Panel":
        """A panel the chart's width across, ``height`` tall from ``top``."""
        return cls(Scale(*x_range, LEFT, WIDTH - RIGHT, x_log), Scale(*y_range, top + height, top, y_log),
                   x_label, y_label, show_x_ticks=show_x)

    @property
    def bottom(self):
        return self.y.start

    def axes(self) -> list[str]:
        left, right, bottom, top = self.x.start, self.x.end, self.y.start, self.y.end
        parts = []
        for value, label in self.y_ticks:
            y = float(self.y(value))
            parts.append(f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" {GRID}/>')
            parts.append(_text(left - 5, y + 4.5, label, anchor="end"))
        for value, label in self.x_ticks:
            x = float(self.x(value))
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{bottom}" {GRID}/>')
            if self.show_x_ticks:
                parts.append(_text(x, bottom + 18, label, anchor="middle"))
        parts.append(f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" '
                     f'fill="none" stroke="{NEUTRAL}"/>')
        if self.show_x_ticks and self.x_label:
            parts.append(_text((left + right) / 2, bottom + 40, self.x_label, anchor="middle", size=LABEL_SIZE))
        if self.y_label:
            middle = (top + bottom) / 2
            parts.append(_text(16, middle, self.y_label, anchor="middle", size=LABEL_SIZE,
                               extra=f' transform="rotate(-90 16 {middle:.1f})"'))
        return parts

    def line(self, xs, ys, colour, dashed=False, width=2.5) -> str:
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        return (f'<polyline points="{_points(self.x(xs), self.y(ys))}" fill="none" stroke="{colour}" '
                f'stroke-width="{width}"{dash}/>')

    def band(self, xs, lower, upper, colour) -> str:
        """The area between two curves."""
        xs, lower, upper = np.asarray(xs), np.asarray(lower), np.asarray(upper)
        outline = _points(self.x(xs), self.y(upper)) + " " + _points(self.x(xs[::-1]), self.y(lower[::-1]))
        return f'<polygon points="{outline}" fill="{colour}" fill-opacity="0.35" stroke="{colour}"/>'

    def marker(self, x, y, colour, radius=6) -> str:
        """A dot at (x, y), ringed in the page's background colour."""
        return (f'<circle class="webchart-marker" cx="{float(self.x(x)):.1f}" cy="{float(self.y(y)):.1f}" '
                f'r="{radius}" fill="{colour}"/>')

    def label(self, x, y, text, colour=None, anchor="start", size=TICK_SIZE) -> str:
        """Text at data coordinates (x, y)."""
        return _text(self.x(x), self.y(y), text, colour, anchor, size)

    def vertical(self, x, text, colour=COMPUTE, low=False) -> list[str]:
        """A dashed vertical line at ``x``, named at its top (or foot, ``low``) on a side where the name fits."""
        px = float(self.x(x))
        width = _text_width(text)
        if px + 5 + width <= self.x.end:
            anchor, tx = "start", px + 5
        elif px - 5 - width >= self.x.start:
            anchor, tx = "end", px - 5
        else:
            anchor, tx = "end", self.x.end - 4
        y = self.y.start - 7 if low else self.y.end + 16
        parts = [f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{self.y.end}" y2="{self.y.start}" stroke="{colour}" '
                 f'stroke-width="1.5" stroke-dasharray="4 3"/>']
        return parts + ([_text(tx, y, text, colour, anchor)] if text else [])


def _text_width(text, size=TICK_SIZE):
    """About how wide ``text`` is drawn, in SVG units (sans-serif averages a little over half its size)."""
    return 0.56 * size * len(text)


def _model(key):
    if key not in MODELS:
        raise ValueError(f"model must be a catalog key among {sorted(MODELS)}, got {key!r}")
    return MODELS[key]


def _gpu(key):
    if key not in CATALOG:
        raise ValueError(f"gpu must be a catalog key among {sorted(CATALOG)}, got {key!r}")
    return CATALOG[key]


def _gpu_menu(default, priced=False):
    choices = {key: (f"{g.name}, {units.dollars(g.price_per_hour)} an hour" if priced else g.name)
               for key, g in CATALOG.items() if g.price_per_hour is not None or not priced}
    _gpu(default)
    return menu("gpu", "GPU", choices, default)


def _weight_bits(default):
    return buttons("weight_bits", "bits a weight", {16: "16", 8: "8", 4: "4"}, default)


# --- Lesson 1, part 1: a request counted in passes -----------------------------------
# Slots on the line, not to scale: a prefill pass would otherwise be thousands of times wider than a decode pass.
_FIRST_SHOWN, _LAST_SHOWN = 12, 3


@builder
def passes_chart(default_prompt: int = 2000, default_reply: int = 300) -> Chart:
    """A request's forward passes in order, for any prompt and reply lengths.

    Controls: tokens in the prompt, tokens in the reply. Readouts: the passes, the tokens
    the prefill pass carries, the decode passes, and the share of the tokens handled in
    prefill. The picture is a timeline: one wide prefill pass, then one thin pass per
    later reply token (the long middle of a long reply elided).
    """
    prompts = slider_steps(1, 20_000, 2, default_prompt, extra=(20, 200, 500, 2000, 3000))
    replies = slider_steps(1, 4000, 2, default_reply, extra=(20, 100, 250, 300, 1000, 2000))
    slot, gap = 22.0, 4.0
    prefill_width = slot * 5
    top, bar = 46.0, 46.0
    left = 14.0
    first_decode = left + prefill_width + gap * 2

    def prefill_part(prompt_tokens):
        return (f'<rect x="{left}" y="{top}" width="{prefill_width}" height="{bar}" fill="{PREFILL}"/>'
                + _text(left + prefill_width / 2, top + bar / 2 - 2, units.number(prompt_tokens), "#fff", "middle",
                        LABEL_SIZE, ' font-weight="bold"')
                + _text(left + prefill_width / 2, top + bar / 2 + 14, "tokens" if prompt_tokens != 1 else "token",
                        "#fff", "middle")
                + _text(left, top - 10, "prefill: 1 pass", PREFILL, size=LABEL_SIZE))

    def decode_part(reply_tokens):
        decode_passes = reply_tokens - 1
        parts = [_text(WIDTH / 2, top + bar + 52, "forward passes, in order (widths not to scale)", None, "middle",
                       LABEL_SIZE),
                 _text(left + prefill_width / 2, top + bar + 18, "1", None, "middle")]
        if not decode_passes:
            parts.append(_text(first_decode, top - 10, "decode: no passes", DECODE, size=LABEL_SIZE))
            return "".join(parts)
        elided = decode_passes > _FIRST_SHOWN + _LAST_SHOWN + 1
        shown = list(range(1, decode_passes + 1)) if not elided else \
            list(range(1, _FIRST_SHOWN + 1)) + list(range(decode_passes - _LAST_SHOWN + 1, decode_passes + 1))
        pitch = (WIDTH - RIGHT - first_decode) / (_FIRST_SHOWN + _LAST_SHOWN + 2)
        xs = []
        for position, k in enumerate(shown):
            x = first_decode + (position + (2 if elided and position >= _FIRST_SHOWN else 0)) * pitch
            xs.append(x)
            parts.append(f'<rect x="{x:.1f}" y="{top}" width="{pitch * 0.7:.1f}" height="{bar}" fill="{DECODE}"/>')
        if elided:
            middle = first_decode + (_FIRST_SHOWN + 1) * pitch - pitch * 0.15
            parts.append(_text(middle, top + bar / 2 + 2, "⋯", DECODE, "middle", 18))
            parts.append(_text(middle, top + bar + 18, f"{units.number(decode_passes - len(shown))} more", DECODE,
                               "middle"))
        # Ticks name the request's pass numbers: prefill is pass 1, decode pass k is pass k + 1.
        for position in {0, len(shown) - 1}:
            if position == len(shown) - 1 and elided:
                anchor = "end"
                x = xs[position] + pitch * 0.7
            else:
                anchor, x = "middle", xs[position] + pitch * 0.35
            parts.append(_text(x, top + bar + 18, units.number(shown[position] + 1), None, anchor))
        parts.append(_text(first_decode, top - 10, f"decode: {_counted(decode_passes, 'pass', 'passes')}, "
                           f"1 token each", DECODE, size=LABEL_SIZE))
        return "".join(parts)

    def readouts(prompt_tokens, reply_tokens):
        counted = request_passes(prompt_tokens, reply_tokens)
        return {"forward passes": units.number(counted.passes),
                "tokens in the prefill pass": units.number(counted.prefill_tokens),
                "decode passes, one token each": units.number(counted.decode_passes),
                "share of the tokens that go through in prefill": units.percent(counted.prefill_share_of_tokens, 1)}

    controls = [slider("prompt_tokens", "tokens in the prompt", prompts, default_prompt,
                       lambda n: _counted(n, "token", "tokens")),
                slider("reply_tokens", "tokens in the reply", replies, default_reply,
                       lambda n: _counted(n, "token", "tokens"))]
    return live_chart("passes", "One request, counted in forward passes", controls, readouts,
                      [Layer(("prompt_tokens",), prefill_part), Layer(("reply_tokens",), decode_part)],
                      height=int(top + bar + 66))


# --- Lesson 1, part 2: a pass on the roofline ----------------------------------------
@builder
def roofline_chart(default_tokens: int = 3000, default_gpu: str = "h100-sxm", default_bits: int = 16,
                   model: str = "llama-3-8b") -> Chart:
    """Attainable FLOP/s against FLOP per byte (log-log), with the chosen GPU's roof and ridge.

    Controls: tokens in the pass, the GPU, bits a weight. The point is one pass of the
    model, counted as the lesson counts (weights only, every limit reached exactly).
    """
    served = _model(model)
    tokens = slider_steps(1, served.context_window, 3, default_tokens, extra=(200, 3000))  # up to its window
    intensities = np.geomspace(0.3, 1e6, 60)
    peaks = [g.peak_flops for g in CATALOG.values()]
    lowest = min(attainable_flops(0.3, g.peak_flops, g.memory_bandwidth) for g in CATALOG.values())
    y_low, y_high = 10 ** math.floor(math.log10(lowest / 1e12)), 10 ** math.ceil(math.log10(max(peaks) / 1e12 * 2))
    panel = Panel.make((0.3, 1e6), (y_low, y_high), TOP + 6, 250, True, True,
                       "FLOP per byte read (arithmetic intensity)", "attainable TFLOP/s")
    panel.x_ticks = [(1, "1"), (100, "100"), (1e4, "10,000"), (1e6, "10⁶")]
    panel.y_ticks = [(t, units.number(t) if t >= 1 else f"{t:g}") for t in log_ticks(y_low, y_high)]

    @functools.lru_cache(maxsize=None)
    def one_pass(tokens, gpu, weight_bits):
        return step(served, _gpu(gpu), tokens, weight_bits=weight_bits, assumptions=LESSON)

    def roof(gpu):
        chosen = _gpu(gpu)
        ridge = ridge_point(chosen.peak_flops, chosen.memory_bandwidth)
        heights = attainable_flops(intensities, chosen.peak_flops, chosen.memory_bandwidth) / 1e12
        px = float(panel.x(ridge))
        return (f'<rect x="{panel.x.start}" y="{panel.y.end}" width="{px - panel.x.start:.1f}" '
                f'height="{panel.y.start - panel.y.end}" fill="{MEMORY}" fill-opacity="0.08"/>'
                f'<rect x="{px:.1f}" y="{panel.y.end}" width="{panel.x.end - px:.1f}" '
                f'height="{panel.y.start - panel.y.end}" fill="{COMPUTE}" fill-opacity="0.08"/>'
                + panel.line(intensities, heights, NEUTRAL)
                + "".join(panel.vertical(ridge, f"ridge: {units.number(ridge)} FLOP/byte", NEUTRAL, low=True))
                + _text(panel.x.start + 5, panel.y.end + 16, "memory-bound", MEMORY)
                + _text(panel.x.end - 5, panel.y.end + 16, "compute-bound", COMPUTE, "end"))

    def point(tokens, gpu, weight_bits):
        chosen = _gpu(gpu)
        taken = one_pass(tokens, gpu, weight_bits)
        intensity = float(taken.cost.intensity)
        height = float(attainable_flops(intensity, chosen.peak_flops, chosen.memory_bandwidth)) / 1e12
        return panel.marker(intensity, height, COMPUTE if taken.bound == "compute" else MEMORY, 7)

    def readouts(tokens, gpu, weight_bits):
        chosen = _gpu(gpu)
        taken = one_pass(tokens, gpu, weight_bits)
        reached = attainable_flops(taken.cost.intensity, chosen.peak_flops, chosen.memory_bandwidth)
        return {"FLOP per byte": units.number(taken.cost.intensity),
                "ridge of the GPU": f"{units.number(ridge_point(chosen.peak_flops, chosen.memory_bandwidth))} "
                                    f"FLOP per byte",
                "the pass is": f"{taken.bound}-bound",
                "FLOP/s it can reach": f"{units.tflops(reached)} of {units.tflops(chosen.peak_flops)}"}

    controls = [slider("tokens", "tokens in the pass", tokens, default_tokens, lambda n: _counted(n, "token", "tokens")),
                _gpu_menu(default_gpu), _weight_bits(default_bits)]
    return live_chart("roofline", f"One pass of {served.name} on the roofline", controls, readouts,
                      [Layer(("gpu",), roof), Layer(("tokens", "gpu", "weight_bits"), point)],
                      background=panel.axes(), height=int(panel.bottom + BOTTOM),
                      note="The arithmetic runs in 16 bits whatever the weights are stored in, so the ridge "
                           "stays put while fewer bits raise a pass's FLOP per byte.")


# --- Lesson 1, part 3: where a request's time goes -----------------------------------
@builder
def request_chart(default_gpu: str = "h100-sxm", default_bits: int = 16, default_prompt: int = 3000,
                  default_reply: int = 250, model: str = "llama-3-8b") -> Chart:
    """A request's time split into its prefill pass and its decode steps.

    Controls: the GPU, bits a weight, tokens in the prompt and in the reply. Readouts:
    TTFT, TPOT, tokens a second, the whole reply's time, decode's share, and the weights
    each pass reads against the GPU's memory. The bar is the whole reply, 100 % wide.
    """
    served = _model(model)
    replies = sorted({1, 20, 100, 250, 300, 500, 1000, 2000, default_reply})
    # Prompts whose longest reply still ends inside the model's window.
    prompts = sorted(p for p in {1, 20, 100, 200, 500, 1000, 2000, 3000, 6000, 10_000, 20_000, default_prompt}
                     if p + max(replies) <= served.context_window)
    timed = functools.lru_cache(maxsize=None)(
        lambda gpu, bits, prompt, reply: request(served, _gpu(gpu), prompt, reply, weight_bits=bits))
    panel = Panel.make((0, 1), (0, 1), 40, 56, x_label="share of the whole reply's time")
    panel.x_ticks = [(t, units.percent(t)) for t in (0, 0.25, 0.5, 0.75, 1)]

    def split(share):
        x0, x1 = panel.x.start, panel.x.end
        middle = x0 + (x1 - x0) * share
        y, h = panel.y.end, panel.y.start - panel.y.end
        parts = [f'<rect x="{x0}" y="{y}" width="{middle - x0:.1f}" height="{h}" fill="{PREFILL}"/>',
                 f'<rect x="{middle:.1f}" y="{y}" width="{x1 - middle:.1f}" height="{h}" fill="{DECODE}" '
                 f'fill-opacity="0.85"/>']
        if share < 0.5:
            parts.append(_text(x0, y - 8, "prefill", PREFILL, size=LABEL_SIZE))
            parts.append(_text(x1, y - 8, "decode", DECODE, "end", LABEL_SIZE))
        else:
            parts.append(_text(x0, y - 8, "prefill", PREFILL, size=LABEL_SIZE))
            parts.append(_text(x1, y - 8, "decode", DECODE, "end", LABEL_SIZE))
        return "".join(parts)

    def bar(gpu, weight_bits, prompt_tokens, reply_tokens):
        # Whole pixels, so the same split is stored once however many settings give it.
        result = timed(gpu, weight_bits, prompt_tokens, reply_tokens)
        share = round(float(result.ttft / result.total_time) * (panel.x.end - panel.x.start)) / \
            (panel.x.end - panel.x.start)
        return split(share)

    def readouts(gpu, weight_bits, prompt_tokens, reply_tokens):
        chosen = _gpu(gpu)
        result = timed(gpu, weight_bits, prompt_tokens, reply_tokens)
        weights = result.decode.cost.weight_bytes
        # Weights and the reply's whole cache against the memory left after the reserve.
        fits = "fits in" if result.fits else "does not fit in"
        return {"time to first token (TTFT)": f"{_ms(result.ttft, 2)}, {result.prefill.bound}-bound",
                "time per output token (TPOT)": f"{_ms(result.tpot)}, {result.decode.bound}-bound",
                "tokens a second": units.number(result.tokens_per_second),
                "whole reply": _time(result.total_time),
                "share spent in decode": units.percent(result.decode_share),
                "weights read each pass": f"{units.gb(weights)}; {fits} the GPU's {chosen.listed_memory}"}

    controls = [_gpu_menu(default_gpu), _weight_bits(default_bits),
                slider("prompt_tokens", "tokens in the prompt", prompts, default_prompt,
                       lambda n: _counted(n, "token", "tokens")),
                slider("reply_tokens", "tokens in the reply", replies, default_reply,
                       lambda n: _counted(n, "token", "tokens"))]
    return live_chart("request", f"Where a request's time goes: {served.name}", controls, readouts,
                      [Layer(("gpu", "weight_bits", "prompt_tokens", "reply_tokens"), bar)],
                      background=panel.axes(), height=int(panel.bottom + BOTTOM),
                      note=LESSON.label)


# --- Lesson 1, part 4: batching and the cost of a million tokens ---------------------
@builder
def batching_chart(default_users: int = 32, default_gpu: str = "h100-sxm", model: str = "llama-3-8b") -> Chart:
    """Cost of a million tokens and each user's tokens a second, against users per pass.

    Controls: users per pass, and the GPU at its rental price from the catalog.
    Readouts: tokens an hour, cost per million tokens, each user's tokens a second and
    which limit sets the pass. Past the compute-bound point every extra user slows every
    step, and each user's rate falls.
    """
    served = _model(model)
    steps = slider_steps(1, 1024, 3, default_users, extra=(8, 32))
    priced = [key for key, g in CATALOG.items() if g.price_per_hour is not None]
    shared = {key: batching(served, CATALOG[key], steps) for key in priced}
    turns = {key: compute_bound_batch(served, CATALOG[key]) for key in priced}
    costs = np.concatenate([np.atleast_1d(s.cost_per_million_tokens) for s in shared.values()])
    rates = np.concatenate([np.atleast_1d(s.tokens_per_second_per_user) for s in shared.values()])
    cost_low, cost_high = 10 ** math.floor(math.log10(costs.min())), 10 ** math.ceil(math.log10(costs.max()))
    cost_panel = Panel.make((1, 1024), (cost_low, cost_high), TOP + 8, 160, True, True, "users per pass",
                            "$ a million tokens", show_x=False)
    rate_ticks = linear_ticks(rates.max() * 1.05)
    rate_panel = Panel.make((1, 1024), (0, rate_ticks[-1] * 1.1), TOP + 186, 130, True, False,
                            "users per pass", "user's tokens/s")
    x_ticks = [(u, units.number(u)) for u in (1, 4, 16, 64, 256, 1024)]
    cost_panel.x_ticks = rate_panel.x_ticks = x_ticks
    cost_panel.y_ticks = [(c, units.dollars(c, _figures(c, 1))) for c in log_ticks(cost_low, cost_high)]
    rate_panel.y_ticks = [(r, units.number(r)) for r in rate_ticks]
    position = {key: {int(u): i for i, u in enumerate(steps)} for key in priced}

    def curves(gpu):
        sweep = shared[gpu]
        parts = [cost_panel.line(steps, sweep.cost_per_million_tokens, DECODE),
                 rate_panel.line(steps, np.broadcast_to(sweep.tokens_per_second_per_user, steps.shape), PREFILL,
                                 dashed=True)]
        if turns[gpu] is not None and turns[gpu] <= 1024:
            parts += cost_panel.vertical(turns[gpu], f"compute-bound from {_counted(turns[gpu], 'user', 'users')}")
            parts += rate_panel.vertical(turns[gpu], "", low=True)
        return "".join(parts)

    def markers(users, gpu):
        sweep, i = shared[gpu], position[gpu][int(users)]
        return (f'<line x1="{float(cost_panel.x(users)):.1f}" x2="{float(cost_panel.x(users)):.1f}" '
                f'y1="{cost_panel.y.end}" y2="{rate_panel.y.start}" stroke="{NEUTRAL}" stroke-width="1"/>'
                + cost_panel.marker(users, sweep.cost_per_million_tokens[i], DECODE)
                + rate_panel.marker(users, np.broadcast_to(sweep.tokens_per_second_per_user, steps.shape)[i],
                                    PREFILL))

    def readouts(users, gpu):
        chosen = batching(served, _gpu(gpu), users)
        # Tokens an hour to two figures, as the lesson says them (750,000); dollars to at least a tenth of a cent.
        return {"tokens an hour": units.millions(chosen.tokens_per_hour, 2),
                "cost per million tokens": units.dollars(chosen.cost_per_million_tokens,
                                                         max(3, _figures(chosen.cost_per_million_tokens, 3))),
                "each user's tokens a second": units.number(chosen.tokens_per_second_per_user),
                "what limits the pass": f"{chosen.decode.bound}-bound",
                "the GPU's price": f"{units.dollars(chosen.price_per_hour)} an hour"}

    controls = [slider("users", "users per pass", steps, default_users, lambda n: _counted(n, "user", "users")),
                _gpu_menu(default_gpu, priced=True)]
    return live_chart("batching", f"Decode for many users at once: {served.name}", controls, readouts,
                      [Layer(("gpu",), curves), Layer(("users", "gpu"), markers)],
                      background=cost_panel.axes() + rate_panel.axes(), height=int(rate_panel.bottom + BOTTOM),
                      note="Red: the cost of a million tokens. Blue dashes: each user's tokens a second. "
                           + LESSON.label)


# --- Plate XXIII.1: the workshop -----------------------------------------------------
@builder
def workshop_chart(default_tokens: int = 1024, default_gpu: str = "h100-sxm", default_assumptions: str = "plate",
                   model: str = "llama-3-8b", decode_cache: int = 1000) -> Chart:
    """Time per token of one pass against the tokens it carries (log axes).

    Controls: tokens in the pass, the GPU, and the lesson's ideal against the plate's
    assumptions. Both curves are drawn (the chosen one solid); a dashed line marks a
    decode step over a ``decode_cache``-token cache. Readouts: the pass's time, its time
    per token, its FLOP per byte and which limit sets it.
    """
    served = _model(model)
    worlds = {"plate": PLATE, "lesson": LESSON}
    if default_assumptions not in worlds:
        raise ValueError(f"default_assumptions must be 'plate' or 'lesson', got {default_assumptions!r}")
    max_tokens = min(16_384, served.context_window)
    tokens = slider_steps(1, max_tokens, 3, default_tokens)
    line_tokens = np.unique(np.round(np.geomspace(1, max_tokens, 48)).astype(int))
    curves = {(g, w): time_per_token_curve(served, CATALOG[g], tokens, worlds[w]) for g in CATALOG for w in worlds}
    lines = {(g, w): np.asarray(time_per_token_curve(served, CATALOG[g], line_tokens, worlds[w]).time_per_token)
             for g in CATALOG for w in worlds}
    # Where arithmetic takes over, over every whole token count, not only the slider's steps.
    crossings = {(g, w): time_per_token_curve(served, CATALOG[g], range(1, max_tokens + 1), worlds[w]).arithmetic_from
                 for g in CATALOG for w in worlds}
    decodes = {(g, w): decode_step(served, CATALOG[g], cached_tokens=decode_cache, assumptions=worlds[w])
               for g in CATALOG for w in worlds}
    everything = np.concatenate([*lines.values(), [d.time_per_token for d in decodes.values()]])
    y_low = 10 ** math.floor(math.log10(everything.min()))
    y_high = 10 ** math.ceil(math.log10(everything.max() * 3))
    panel = Panel.make((1, max_tokens), (y_low, y_high), TOP + 6, 260, True, True, "tokens in the pass",
                       "time per token")
    panel.x_ticks = [(t, units.number(t)) for t in (1, 16, 256, 4096)]
    panel.y_ticks = [(t, _ms(t, 1)) for t in log_ticks(y_low, y_high)][::2]
    index = {int(t): i for i, t in enumerate(tokens)}

    def world(gpu, assumptions):
        other = "lesson" if assumptions == "plate" else "plate"
        decode = decodes[(gpu, assumptions)]
        parts = [panel.line(line_tokens, lines[(gpu, other)], NEUTRAL, dashed=True, width=1.5),
                 panel.line(line_tokens, lines[(gpu, assumptions)], PREFILL),
                 panel.line(np.array([1, max_tokens]), np.array([decode.time_per_token] * 2), DECODE, dashed=True,
                            width=1.5),
                 _text(panel.x.end - 4, float(panel.y(decode.time_per_token)) - 7,
                       f"decode, {units.number(decode_cache)} cached: {_ms(decode.time_per_token)} a token",
                       DECODE, "end")]
        first = crossings[(gpu, assumptions)]
        # Shaded where memory sets the time, then where arithmetic does, under the lines.
        switch = float(panel.x(first)) if first is not None else panel.x.end
        top, height = panel.y.end, panel.y.start - panel.y.end
        bands = [f'<rect x="{panel.x.start}" y="{top}" width="{switch - panel.x.start:.1f}" height="{height}" '
                 f'fill="{MEMORY}" fill-opacity="0.10"/>',
                 f'<rect x="{switch:.1f}" y="{top}" width="{panel.x.end - switch:.1f}" height="{height}" '
                 f'fill="{COMPUTE}" fill-opacity="0.10"/>']
        if first is not None:
            parts += panel.vertical(first, f"compute-bound from {_counted(first, 'token', 'tokens')}", low=True)
        return "".join(bands + parts)

    def marker(tokens, gpu, assumptions):
        curve = curves[(gpu, assumptions)]
        return panel.marker(tokens, curve.time_per_token[index[int(tokens)]], PREFILL)

    def readouts(tokens, gpu, assumptions):
        taken = time_per_token_curve(served, _gpu(gpu), [tokens], worlds[assumptions]).passes
        return {"time of the pass": _ms(float(taken.time[0])),
                "time per token": _ms(float(taken.time_per_token[0])),
                "FLOP per byte": units.number(float(taken.cost.intensity[0])),
                "what limits it": f"{taken.bound[0]}-bound"}

    controls = [slider("tokens", "tokens in the pass", tokens, default_tokens, lambda n: _counted(n, "token", "tokens")),
                _gpu_menu(default_gpu),
                buttons("assumptions", "assumptions", {"plate": "the plate's: " + PLATE.label.removeprefix("plate: "),
                                                       "lesson": "the lesson's ideal: "
                                                                 + LESSON.label.removeprefix("lesson: ")},
                        default_assumptions)]
    return live_chart("workshop", f"One pass of {served.name}: time per token", controls, readouts,
                      [Layer(("gpu", "assumptions"), world), Layer(("tokens", "gpu", "assumptions"), marker)],
                      background=panel.axes(), height=int(panel.bottom + BOTTOM),
                      note="Solid: the chosen assumptions. Grey dashes: the other ones. Red dashes: one decode step. "
                           "Orange: memory sets the time; green: arithmetic does.")


# --- Lesson 2: each user's KV cache --------------------------------------------------------
SUPERSCRIPTS = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _cached_bits(default):
    return buttons("kv_bits", "bits a cached value", {16: "16", 8: "8"}, default)


def _log_axes(panel, x_ticks, y_format):
    """Tick a log-log panel: ``x_ticks`` as given, y at the powers of ten inside its range."""
    panel.x_ticks = [(t, units.number(t)) for t in x_ticks]
    panel.y_ticks = [(t, y_format(t)) for t in log_ticks(panel.y.low, panel.y.high)]
    return panel


def _decades(low, high):
    """The powers of ten just outside ``low`` and ``high``."""
    return 10 ** math.floor(math.log10(low)), 10 ** math.ceil(math.log10(high))


@builder
def cache_saving_chart(default_tokens: int = 3000, default_gpu: str = "h100-sxm", model: str = "llama-3-8b") -> Chart:
    """Lesson 2, part 1: the next decode step's FLOPs with the KV cache and without it.

    Controls: the tokens already in the sequence, and the GPU the two steps are timed on.
    Readouts: both FLOP counts, their ratio, and both steps' times and limits.
    """
    from .cache import CACHE_READ, decode_with_and_without_cache, time_with_and_without_cache

    served = _model(model)
    longest = min(32_768, served.context_window - 1)  # the cache a step reads, inside the model's window
    tokens = slider_steps(1, longest, 2, default_tokens, extra=(1000,))
    line_tokens = np.unique(np.round(np.geomspace(1, longest, 60)).astype(int))
    lines = decode_with_and_without_cache(served, line_tokens)
    steps = decode_with_and_without_cache(served, tokens)
    with_flops, without_flops = np.asarray(steps.with_cache.flops), np.asarray(steps.without_cache.flops)
    panel = Panel.make((1, longest), _decades(with_flops.min(), without_flops.max()), TOP + 6, 250, True, True,
                       "tokens already in the sequence", "FLOPs of the next step")
    _log_axes(panel, (1, 32, 1024), lambda f: "10" + f"{math.log10(f):.0f}".translate(SUPERSCRIPTS))
    panel.y_ticks = panel.y_ticks[::2]
    background = panel.axes() + [
        panel.line(line_tokens, lines.without_cache.flops, PREFILL), panel.line(line_tokens, lines.with_cache.flops,
                                                                               DECODE),
        panel.label(1.5, float(np.asarray(lines.without_cache.flops)[0]) * 6, "without the cache", PREFILL),
        panel.label(longest * 0.6, float(np.asarray(lines.with_cache.flops)[-1]) * 3, "with the cache", DECODE, "end")]
    index = {int(t): i for i, t in enumerate(tokens)}

    def markers(tokens):
        i = index[int(tokens)]
        return panel.marker(tokens, without_flops[i], PREFILL) + panel.marker(tokens, with_flops[i], DECODE)

    def readouts(tokens, gpu):
        saving = decode_with_and_without_cache(served, tokens)
        timed = time_with_and_without_cache(served, _gpu(gpu), tokens)

        def bound(timing):
            return "compute-bound" if timing.compute_bound else "memory-bound"

        return {"FLOPs without the cache": units.trillions(saving.without_cache.flops, 2),
                "FLOPs with the cache": units.billions(saving.with_cache.flops, 1),
                "times fewer with the cache": units.number(saving.flops_saved),
                "the step without the cache": f"{_ms(timed.without_cache.time)}, {bound(timed.without_cache)}",
                "the step with the cache": f"{_ms(timed.with_cache.time)}, {bound(timed.with_cache)}"}

    controls = [slider("tokens", "tokens already in the sequence", tokens, default_tokens,
                       lambda n: _counted(n, "token", "tokens")), _gpu_menu(default_gpu)]
    return live_chart("cache-saving", f"The next decode step of {served.name}, with the KV cache and without it",
                      controls, readouts, [Layer(("tokens",), markers)], background=background,
                      height=int(panel.bottom + BOTTOM), note=CACHE_READ.label)


@builder
def cache_size_chart(default_tokens: int = 8000, default_bits: int = 16, model: str = "llama-3-8b") -> Chart:
    """Lesson 2, part 2: one conversation's KV cache against its length, for ``model``'s shape with
    full multi-head, its own grouped-query and multi-query attention; the weights as a line.

    Controls: the tokens in the conversation, the bits of a cached value.
    """
    from dataclasses import replace

    from .memory import kv_cache_bytes, weight_bytes

    served = _model(model)
    shapes = {"multi-head": replace(served, kv_heads=served.heads), "grouped-query, as published": served,
              "multi-query": replace(served, kv_heads=1)}
    colours = dict(zip(shapes, (DECODE, PREFILL, COMPUTE)))
    longest = min(131_072, served.context_window)  # a conversation inside the model's window
    tokens = slider_steps(256, longest, 2, default_tokens, extra=(8000,))
    weights = weight_bytes(served.parameters)
    low = float(kv_cache_bytes(shapes["multi-query"], 256, kv_bits=8))
    high = float(kv_cache_bytes(shapes["multi-head"], longest))
    panel = Panel.make((256, longest), _decades(low, high), TOP + 6, 250, True, True, "tokens in the conversation",
                       "KV cache")
    _log_axes(panel, tuple(t for t in (256, 4096, 65_536) if t <= longest), lambda b: units.gb(b, _figures(b / 1e9, 1)))
    panel.y_ticks = panel.y_ticks[1::2]
    background = panel.axes() + [
        panel.line(np.array([256, longest]), np.array([weights] * 2), NEUTRAL, dashed=True, width=1.5),
        panel.label(300, weights * 1.5, f"the weights, {units.gb(weights)}", NEUTRAL)]

    def lines(kv_bits):
        parts = [panel.line(tokens, kv_cache_bytes(shape, tokens, kv_bits=kv_bits), colours[name])
                 for name, shape in shapes.items()]
        # Named in the empty corner above the lines' left ends and under the weights, one under another.
        parts += [panel.label(300, weights / (4 * 2.5 ** k), name.split(",")[0], colours[name])
                  for k, name in enumerate(shapes)]
        return "".join(parts)

    def markers(tokens, kv_bits):
        return "".join(panel.marker(tokens, kv_cache_bytes(shape, tokens, kv_bits=kv_bits), colours[name])
                       for name, shape in shapes.items())

    def readouts(tokens, kv_bits):
        shown = {f"{name}, {_counted(shape.kv_heads, 'KV head', 'KV heads')}":
                 units.gb(kv_cache_bytes(shape, tokens, kv_bits=kv_bits)) for name, shape in shapes.items()}
        shown["grouped-query, as a share of the weights"] = units.percent(
            kv_cache_bytes(served, tokens, kv_bits=kv_bits) / weights, 1)
        return shown

    controls = [slider("tokens", "tokens in the conversation", tokens, default_tokens,
                       lambda n: _counted(n, "token", "tokens")), _cached_bits(default_bits)]
    return live_chart("cache-size", f"The KV cache of one conversation with {served.name}'s shape", controls,
                      readouts, [Layer(("kv_bits",), lines), Layer(("tokens", "kv_bits"), markers)],
                      background=background, height=int(panel.bottom + BOTTOM),
                      note="The same layers and head dim; only the key-value heads differ. 16-bit weights.")


@builder
def users_that_fit_chart(default_tokens: int = 8000, default_gpu: str = "h100-sxm", default_bits: int = 16,
                         model: str = "llama-3-8b") -> Chart:
    """Lesson 2, part 3: the most users whose caches fit beside the weights on one GPU.

    Controls: the tokens each user holds, the GPU, the bits of a cached value.
    """
    from .memory import RESERVE, fit, kv_cache_bytes, max_batch

    served = _model(model)
    longest = min(131_072, served.context_window)  # a conversation inside the model's window
    tokens = slider_steps(256, longest, 2, default_tokens, extra=[t for t in (1000, 8000, 32_000) if t <= longest])
    usable = [key for key, g in CATALOG.items() if max_batch(served, g, 256) > 0]
    counts = {(g, bits): np.asarray(max_batch(served, CATALOG[g], tokens, kv_bits=bits)) for g in usable
              for bits in (16, 8)}
    high = max(c.max() for c in counts.values())
    panel = Panel.make((256, longest), _decades(0.5, high), TOP + 6, 250, True, True, "tokens each user holds",
                       "users that fit")
    _log_axes(panel, tuple(t for t in (256, 4096, 65_536) if t <= longest),
              lambda u: units.number(u) if u >= 1 else f"{u:g}")
    index = {int(t): i for i, t in enumerate(tokens)}
    colours = {16: PREFILL, 8: COMPUTE}

    def lines(gpu):
        parts = []
        for bits, colour in colours.items():
            shown = np.maximum(counts[(gpu, bits)], 0.5)
            parts.append(panel.line(tokens, shown, colour, width=2.5 if bits == 16 else 1.8))
        # The 8-bit line named above its left end, the 16-bit one under its right end: clear of both lines.
        parts += [panel.label(300, float(max(counts[(gpu, 8)][0], 1)) * 2.5, "8-bit cache", COMPUTE),
                  panel.label(longest * 0.92, float(max(counts[(gpu, 16)][-1], 1)) * 0.3, "16-bit cache", PREFILL,
                              "end")]
        return "".join(parts)

    def marker(tokens, gpu, kv_bits):
        return panel.marker(tokens, max(float(counts[(gpu, kv_bits)][index[int(tokens)]]), 0.5), colours[kv_bits])

    def readouts(tokens, gpu, kv_bits):
        chosen = _gpu(gpu)
        budget = fit(served, chosen)
        return {"room for caches": units.gb(budget.usable_bytes - budget.weight_bytes),
                "cache a user": units.gb(kv_cache_bytes(served, tokens, kv_bits=kv_bits)),
                "users that fit": units.number(max_batch(served, chosen, tokens, kv_bits=kv_bits))}

    controls = [slider("tokens", "tokens each user holds", tokens, default_tokens,
                       lambda n: _counted(n, "token", "tokens")),
                menu("gpu", "GPU", {key: CATALOG[key].name for key in usable}, default_gpu),
                _cached_bits(default_bits)]
    return live_chart("users-fit", f"Users of {served.name} whose caches fit on one GPU", controls, readouts,
                      [Layer(("gpu",), lines), Layer(("tokens", "gpu", "kv_bits"), marker)],
                      background=panel.axes(), height=int(panel.bottom + BOTTOM),
                      note=f"{units.percent(RESERVE)} of the memory held back; 16-bit weights.")


@builder
def cached_batching_chart(default_users: int = 32, default_tokens: int = 3000, default_bits: int = 16,
                          default_gpu: str = "h100-sxm", model: str = "llama-3-8b") -> Chart:
    """Lesson 2, part 4: the cost of a million tokens against users per pass, with every user's
    cache read each step, ending where memory is full; lesson 1's weights-only line dashed.

    Controls: users per pass, the tokens each holds, the bits of a cached value, the GPU.
    """
    from .cache import CACHE_READ, cache_matches_weights_batch, cached_decode
    from .memory import max_batch

    served = _model(model)
    users = slider_steps(1, 1024, 2, default_users, extra=(8, 32, 41))
    lengths = tuple(t for t in (1000, 3000, 8000, 32_000) if t < served.context_window)  # a step inside the window
    priced = [key for key, g in CATALOG.items() if g.price_per_hour is not None and max_batch(served, g, 1000) > 0]
    costs = {(g, t, b): np.asarray(cached_decode(served, CATALOG[g], users, t, kv_bits=b).cost_per_million_tokens)
             for g in priced for t in lengths for b in (16, 8)}
    weights_only = {g: np.asarray(batching(served, CATALOG[g], users).cost_per_million_tokens) for g in priced}
    walls = {(g, t, b): max_batch(served, CATALOG[g], t, kv_bits=b) for g in priced for t in lengths for b in (16, 8)}
    everything = np.concatenate([*costs.values(), *weights_only.values()])
    panel = Panel.make((1, 1024), _decades(everything.min(), everything.max()), TOP + 6, 250, True, True,
                       "users per pass", "$ a million tokens")
    _log_axes(panel, (1, 8, 64, 512), lambda c: units.dollars(c, _figures(c, 1)))
    index = {int(u): i for i, u in enumerate(users)}

    def lines(tokens, kv_bits, gpu):
        dollars, wall = costs[(gpu, tokens, kv_bits)], walls[(gpu, tokens, kv_bits)]
        inside = users <= wall
        parts = [panel.line(users, weights_only[gpu], NEUTRAL, dashed=True, width=1.5),
                 panel.label(1.3, float(weights_only[gpu][0]) * 0.03, "weights only (lesson 1)", NEUTRAL)]
        if wall >= 1:
            # The line runs on to the last batch that fits, between the slider's stops.
            last = min(wall, int(users[-1]))
            at_wall = float(cached_decode(served, CATALOG[gpu], last, tokens, kv_bits=kv_bits).cost_per_million_tokens)
            parts.append(panel.line(np.append(users[inside], last), np.append(dollars[inside], at_wall), DECODE))
        if not inside.all():
            parts += panel.vertical(max(wall, 1), f"memory full: {_counted(wall, 'user', 'users')}", MEMORY, low=True)
        return "".join(parts)

    def marker(users, tokens, kv_bits, gpu):
        return panel.marker(users, costs[(gpu, tokens, kv_bits)][index[int(users)]], DECODE)

    def readouts(users, tokens, kv_bits, gpu):
        chosen = _gpu(gpu)
        served_now = cached_decode(served, chosen, users, tokens, kv_bits=kv_bits)
        wall = max_batch(served, chosen, tokens, kv_bits=kv_bits)
        return {"one decode step": f"{_ms(served_now.step_time)}, {served_now.decode.bound}-bound",
                "each user's tokens a second": units.number(served_now.tokens_per_second_per_user),
                "cost per million tokens": units.dollars(served_now.cost_per_million_tokens, 3),
                "without the caches (lesson 1)": units.dollars(
                    batching(served, chosen, users).cost_per_million_tokens, 3),
                "caches weigh as much as the weights at":
                    _counted(round(cache_matches_weights_batch(served, tokens, kv_bits=kv_bits)), "user", "users"),
                "users that fit": units.number(wall) + ("" if users <= wall else ": this batch does not fit")}

    controls = [slider("users", "users per pass", users, default_users, lambda n: _counted(n, "user", "users")),
                slider("tokens", "tokens each user holds", lengths, default_tokens,
                       lambda n: _counted(n, "token", "tokens")),
                _cached_bits(default_bits), _gpu_menu(default_gpu, priced=True)]
    return live_chart("cached-batching", f"Decode with every user's cache read: {served.name}", controls, readouts,
                      [Layer(("tokens", "kv_bits", "gpu"), lines), Layer(("users", "tokens", "kv_bits", "gpu"), marker)],
                      background=panel.axes(), height=int(panel.bottom + BOTTOM), note=CACHE_READ.label)


# --- Plate XXIII.2: users that fit against the length of their conversations -------------
@builder
def kv_workshop_chart(default_tokens: int = 4000, default_gpu: str = "h100-sxm", default_bits: int = 16) -> Chart:
    """The most users whose caches fit beside each of the plate's models' weights (solid), and the
    batch whose caches weigh as much as the weights (dashed), against the tokens each user holds.

    Controls: the tokens each user holds, the GPU, the bits of a cached value.
    """
    from .cache import WORKSHOP_MODELS, cache_matches_weights_batch
    from .memory import RESERVE, max_batch

    chosen = [MODELS[key] for key in WORKSHOP_MODELS]
    colours = dict(zip((m.name for m in chosen), (PREFILL, DECODE, COMPUTE)))
    longest = min([32_768] + [m.context_window for m in chosen])  # inside every model's window
    tokens = slider_steps(256, longest, 2, default_tokens, extra=[t for t in (1000, 8000, 32_000) if t <= longest])
    gpus = [key for key, g in CATALOG.items() if all(max_batch(m, g, 256) > 0 for m in chosen)]
    users = {(g, m.name, b): np.asarray(max_batch(m, CATALOG[g], tokens, kv_bits=b))
             for g in gpus for m in chosen for b in (16, 8)}
    crossings = {(m.name, b): np.asarray(cache_matches_weights_batch(m, tokens, kv_bits=b))
                 for m in chosen for b in (16, 8)}
    low = min(min(c.min() for c in crossings.values()), 1)
    high = max(max(u.max() for u in users.values()), max(c.max() for c in crossings.values()))
    panel = Panel.make((256, longest), _decades(low, high), TOP + 6, 260, True, True, "tokens each user holds",
                       "users")
    _log_axes(panel, tuple(t for t in (256, 1024, 4096, 16_384) if t <= longest),
              lambda u: units.number(u) if u >= 1 else f"{u:g}")
    index = {int(t): i for i, t in enumerate(tokens)}

    def lines(gpu, kv_bits):
        parts = []
        for m in chosen:
            counts = np.maximum(users[(gpu, m.name, kv_bits)], 0.5)
            parts += [panel.line(tokens, counts, colours[m.name]),
                      panel.line(tokens, crossings[(m.name, kv_bits)], colours[m.name], dashed=True, width=1.5),
                      # Named in the empty corner under the lines, one under another.
                      panel.label(290, panel.y.low * 5.5 / 2.2 ** chosen.index(m), m.name, colours[m.name])]
        return "".join(parts)

    def markers(tokens, gpu, kv_bits):
        i = index[int(tokens)]
        return "".join(panel.marker(tokens, max(float(users[(gpu, m.name, kv_bits)][i]), 0.5), colours[m.name])
                       for m in chosen)

    def readouts(tokens, gpu, kv_bits):
        shown = {}
        for m in chosen:
            fits = max_batch(m, _gpu(gpu), tokens, kv_bits=kv_bits)
            crossing = cache_matches_weights_batch(m, tokens, kv_bits=kv_bits)
            shown[f"{m.name}: users that fit"] = (f"{units.number(fits)}; caches outweigh the weights from "
                                                  f"{_counted(math.floor(crossing) + 1, 'user', 'users')}")
        return shown

    controls = [slider("tokens", "tokens each user holds", tokens, default_tokens,
                       lambda n: _counted(n, "token", "tokens")),
                menu("gpu", "GPU", {key: CATALOG[key].name for key in gpus}, default_gpu), _cached_bits(default_bits)]
    return live_chart("kv-workshop", "Users whose caches fit on one GPU, three designs of attention", controls,
                      readouts, [Layer(("gpu", "kv_bits"), lines), Layer(("tokens", "gpu", "kv_bits"), markers)],
                      background=panel.axes(), height=int(panel.bottom + BOTTOM),
                      note=f"Solid: users that fit; dashed: their caches weigh as much as the weights. "
                           f"{units.percent(RESERVE)} of the memory held back; 16-bit weights.")
