"""Charts a reader can move on the website, with no kernel behind the page.

Each builder computes every step of its slider with the package, formats every value
with ``servingmath.units``, and returns a ``Chart``: an HTML fragment holding an inline
SVG, a range input and the precomputed steps as JSON. The site's
``_static/webcharts.js`` only looks a step up and moves the marker, so no formula is
written twice. In a notebook the fragment shows as a still figure at its default step
(the live explorer is the ipywidgets one).

    from IPython.display import HTML
    HTML(webcharts.batching_chart())    # or leave the chart as a cell's last value
"""
from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from . import _check, units
from .hardware import GPU, H100_SXM
from .models import LLAMA_3_8B, Model
from .plots import COMPUTE, DECODE, MEMORY, NEUTRAL, PREFILL
from .roofline import LESSON, PLATE, Assumptions
from .serving import batching, compute_bound_batch, decode_step, prefill, request, time_per_token_curve

WIDTH = 640
LEFT, RIGHT, TOP, BOTTOM = 78, 20, 14, 40
# Grid lines in the text colour, faint, so they suit a light page and a dark one.
GRID = 'stroke="currentColor" stroke-opacity="0.18"'


class Chart(str):
    """A chart's HTML. A notebook shows it as HTML; tests read its steps.

    ``values`` are the slider's steps as the reader sees them ("32 users"),
    ``readouts`` one dict (label -> shown text) per step, ``default`` the step shown first.
    """

    values: list[str]
    readouts: list[dict[str, str]]
    default: int

    def __new__(cls, text: str, values, readouts, default):
        chart = super().__new__(cls, text)
        chart.values, chart.readouts, chart.default = list(values), list(readouts), default
        return chart

    def _repr_html_(self):
        return str(self)

    def __repr__(self):
        return f"<chart: {len(self.values)} steps, showing {self.values[self.default]}>"

    def step(self, value: str) -> dict[str, str]:
        """The readouts at the step whose value reads ``value`` (``"32 users"``)."""
        if value not in self.values:
            raise ValueError(f"value must be one of the chart's steps, got {value!r}")
        return self.readouts[self.values.index(value)]


# --- steps --------------------------------------------------------------------------
def slider_steps(low: int, high: int, per_doubling: int, default: int) -> np.ndarray:
    """Whole numbers from ``low`` to ``high``, evenly spaced on a log scale.

    ``per_doubling`` steps each time the value doubles, so every ``low`` × 2ᵏ is a step
    (1,024 tokens, 32 users); ``high`` and ``default`` are steps too.
    """
    low = int(_check.count("low", low, minimum=1))
    high = int(_check.count("high", high, minimum=low + 1))
    per_doubling = int(_check.count("per_doubling", per_doubling, minimum=1))
    default = int(_check.count("default", default, minimum=low))
    if default > high:
        raise ValueError(f"default must be at most high ({high}), got {default!r}")
    exponents = np.arange(per_doubling * math.log2(high / low) + 1) / per_doubling
    steps = np.round(low * 2.0 ** exponents).astype(int)
    return np.unique(np.concatenate([steps[steps <= high], [high, default]]))


def _figures(value, figures):
    """Digits after the point that show ``value`` to ``figures`` significant figures."""
    return max(0, figures - 1 - math.floor(math.log10(abs(value)))) if value else 0


def _ms(seconds, figures=3):
    return units.ms(seconds, _figures(seconds * 1e3, figures))


def _along(value, steps):
    """A result that may not vary with the slider (TPOT with the prompt), as one value per step."""
    return np.broadcast_to(np.asarray(value, dtype=float), np.shape(steps))


def _counted(count, one, many):
    return f"{units.number(count)} {one if count == 1 else many}"


# --- drawing ------------------------------------------------------------------------
@dataclass(frozen=True)
class _Scale:
    """Data values -> pixels along one axis, linear or logarithmic."""

    low: float
    high: float
    start: float
    end: float
    log: bool

    def __call__(self, values):
        values = np.asarray(values, dtype=float)
        ends = np.array([self.low, self.high])
        if self.log:
            values, ends = np.log10(values), np.log10(ends)
        return self.start + (values - ends[0]) / (ends[1] - ends[0]) * (self.end - self.start)


def _log_ticks(low, high):
    return [10.0 ** k for k in range(math.ceil(math.log10(low)), math.floor(math.log10(high)) + 1)]


def _linear_ticks(high, count=5):
    """0 and round steps (1, 2 or 5 × a power of ten) up to ``high``."""
    raw = high / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(power * m for m in (1, 2, 5, 10) if power * m >= raw)
    return [step * k for k in range(int(high // step) + 1)]


def _points(xs, ys):
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys))


@dataclass
class _Panel:
    """One plotting area of the SVG: its two scales and what is drawn in it."""

    x: _Scale
    y: _Scale
    x_ticks: list
    y_ticks: list
    x_label: str
    y_label: str
    show_x_ticks: bool = True

    def axes(self) -> list[str]:
        left, right = self.x.start, self.x.end
        bottom, top = self.y.start, self.y.end
        parts = []
        for value, label in self.y_ticks:
            y = float(self.y(value))
            parts.append(f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" {GRID}/>')
            parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">'
                         f'{html.escape(label)}</text>')
        for value, label in self.x_ticks:
            x = float(self.x(value))
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{bottom}" {GRID}/>')
            if self.show_x_ticks:
                parts.append(f'<text x="{x:.1f}" y="{bottom + 15}" text-anchor="middle" font-size="11">'
                             f'{html.escape(label)}</text>')
        parts.append(f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" '
                     f'fill="none" stroke="{NEUTRAL}"/>')
        if self.show_x_ticks:
            parts.append(f'<text x="{(left + right) / 2:.1f}" y="{bottom + 32}" text-anchor="middle" '
                         f'font-size="12">{html.escape(self.x_label)}</text>')
        middle = (top + bottom) / 2
        parts.append(f'<text x="14" y="{middle:.1f}" text-anchor="middle" font-size="12" '
                     f'transform="rotate(-90 14 {middle:.1f})">{html.escape(self.y_label)}</text>')
        return parts

    def line(self, xs, ys, colour, dashed=False) -> str:
        dash = ' stroke-dasharray="5 4"' if dashed else ""
        return (f'<polyline points="{_points(self.x(xs), self.y(ys))}" fill="none" stroke="{colour}" '
                f'stroke-width="2"{dash}/>')

    def band(self, xs, lower, upper, colour) -> str:
        """The area between two curves, for a stacked total."""
        outline = _points(self.x(xs), self.y(upper)) + " " + _points(self.x(xs[::-1]), self.y(lower[::-1]))
        return f'<polygon points="{outline}" fill="{colour}" fill-opacity="0.35" stroke="{colour}"/>'

    def label(self, x, y, text, colour, anchor="start") -> str:
        return (f'<text x="{float(self.x(x)):.1f}" y="{float(self.y(y)):.1f}" fill="{colour}" font-size="11" '
                f'text-anchor="{anchor}">{html.escape(text)}</text>')

    def boundary(self, x, text, low=False) -> list[str]:
        """A dashed vertical line where the limit changes, named at its top (or foot, ``low``)."""
        px = float(self.x(x))
        # The name sits on the side of the line with more room.
        anchor, dx = ("end", -4) if px > (self.x.start + self.x.end) / 2 else ("start", 4)
        y = self.y.start - 6 if low else self.y.end + 12
        return [f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{self.y.end}" y2="{self.y.start}" stroke="{COMPUTE}" '
                f'stroke-dasharray="3 3"/>',
                f'<text x="{px + dx:.1f}" y="{y}" fill="{COMPUTE}" font-size="11" text-anchor="{anchor}">'
                f'{html.escape(text)}</text>']


def _panel(x_range, y_range, top, height, x_log, y_log, x_label, y_label, show_x=True) -> _Panel:
    x = _Scale(*x_range, LEFT, WIDTH - RIGHT, x_log)
    y = _Scale(*y_range, top + height, top, y_log)
    return _Panel(x, y, [], [], x_label, y_label, show_x)


@dataclass(frozen=True)
class _Series:
    """A marker that follows the slider along one curve of one panel."""

    panel: _Panel
    ys: np.ndarray
    colour: str


def _chart(title: str, description: str, control: str, xs, values: Sequence[str],
           readouts: Sequence[dict[str, str]], default: int, panels: Sequence[_Panel], drawing: list[str],
           markers: Sequence[_Series], kind: str) -> Chart:
    """Assemble the fragment: SVG, range input, readouts, and the steps as JSON."""
    height = int(max(p.y.start for p in panels) + BOTTOM)
    cursor_x = np.round(panels[0].x(xs), 1)
    marks = [[[float(cursor_x[i]), round(float(m.panel.y(m.ys[i])), 1)] for m in markers] for i in range(len(xs))]
    top, bottom = min(p.y.end for p in panels), max(p.y.start for p in panels)
    svg = [f'<svg viewBox="0 0 {WIDTH} {height}" width="100%" role="img" aria-label="{html.escape(title)}" '
           f'font-family="sans-serif" fill="currentColor" xmlns="http://www.w3.org/2000/svg">',
           *[part for p in panels for part in p.axes()], *drawing,
           f'<line class="webchart-cursor" x1="{cursor_x[default]}" x2="{cursor_x[default]}" y1="{top}" '
           f'y2="{bottom}" stroke="{NEUTRAL}" stroke-width="1"/>',
           *[f'<circle class="webchart-marker" cx="{marks[default][k][0]}" cy="{marks[default][k][1]}" r="5" '
             f'fill="{m.colour}" stroke="white" stroke-width="1.5"/>' for k, m in enumerate(markers)],
           "</svg>"]
    rows = "".join(f"<dt>{html.escape(label)}</dt><dd data-readout>{html.escape(text)}</dd>"
                   for label, text in readouts[default].items())
    steps = {"values": list(values), "cursor": cursor_x.tolist(), "marks": marks,
             "readouts": [list(r.values()) for r in readouts]}
    data = json.dumps(steps, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    fragment = (
        f'<figure class="webchart" data-chart="{kind}">'
        f'<figcaption class="webchart-title">{html.escape(title)}</figcaption>'
        + "".join(svg)
        + f'<div class="webchart-control"><label>{html.escape(control)} '
        f'<input type="range" min="0" max="{len(values) - 1}" step="1" value="{default}" '
        f'aria-valuetext="{html.escape(values[default])}" disabled></label> '
        f'<output class="webchart-value">{html.escape(values[default])}</output></div>'
        f'<dl class="webchart-readouts" aria-live="polite">{rows}</dl>'
        f'<p class="webchart-note">{html.escape(description)}</p>'
        f'<p class="webchart-nojs">The slider moves on the course website; in a notebook, use the live '
        f'explorer instead.</p>'
        f'<script type="application/json" class="webchart-steps">{data}</script>'
        f"</figure>")
    return Chart(fragment, values, readouts, default)


# --- Plate XXIII.1: the workshop ----------------------------------------------------
def workshop_chart(model: Model = LLAMA_3_8B, gpu: GPU = H100_SXM, assumptions: Assumptions = PLATE,
                   max_tokens: int = 16_384, default_tokens: int = 1024, decode_cache: int = 1000) -> Chart:
    """Time per token of one pass against the tokens it carries (log axes), slider over tokens.

    Readouts: the pass's time, its time per token, its FLOP per byte and which limit
    sets it. A dashed line marks a decode step over a ``decode_cache``-token cache.
    """
    _check.instance("model", model, Model)
    tokens = slider_steps(1, max_tokens, 8, default_tokens)
    passes = prefill(model, gpu, tokens, assumptions=assumptions)
    per_token = np.asarray(passes.time_per_token)
    decode = decode_step(model, gpu, cached_tokens=decode_cache, assumptions=assumptions)
    bounds = np.asarray(passes.bound)

    y_low = 10 ** math.floor(math.log10(per_token.min()))
    y_high = 10 ** math.ceil(math.log10(max(per_token.max(), decode.time)))
    panel = _panel((1, max_tokens), (y_low, y_high), TOP, 260, True, True,
                   "tokens in the pass", "time per token")
    panel.x_ticks = [(t, units.number(t)) for t in _log_ticks(1, max_tokens)]
    panel.y_ticks = [(t, _ms(t, 1)) for t in _log_ticks(y_low, y_high)]
    drawing = [panel.line(tokens, per_token, PREFILL),
               panel.line(np.array([1, max_tokens]), np.array([decode.time] * 2), DECODE, dashed=True),
               panel.label(max_tokens, decode.time * 1.25,
                           f"decode over a {units.number(decode_cache)}-token cache: {_ms(decode.time)} a token",
                           DECODE, anchor="end")]
    # The exact crossing, over every whole token count, not just the slider's stops.
    first = time_per_token_curve(model, gpu, range(1, max_tokens + 1), assumptions).arithmetic_from
    if first is not None:
        drawing += panel.boundary(first, f"compute-bound from {_counted(first, 'token', 'tokens')}", low=True)

    values = [_counted(t, "token", "tokens") for t in tokens]
    readouts = [{"time of the pass": _ms(passes.time[i]),
                 "time per token": _ms(per_token[i]),
                 "FLOP per byte": units.number(passes.cost.intensity[i]),
                 "what limits it": f"{bounds[i]}-bound"} for i in range(len(tokens))]
    return _chart(f"One pass of {model.name} on {gpu.name}: time per token", assumptions.label or "",
                  "Tokens in the pass", tokens, values, readouts, int(np.flatnonzero(tokens == default_tokens)[0]),
                  [panel], drawing, [_Series(panel, per_token, PREFILL)], "workshop")


# --- Lesson 1, part 3: where a request's time goes -----------------------------------
def request_chart(model: Model = LLAMA_3_8B, gpu: GPU = H100_SXM, reply_tokens: int = 250,
                  max_prompt: int = 20_000, default_prompt: int = 3000,
                  assumptions: Assumptions = LESSON) -> Chart:
    """A request's time split into prefill and decode, against the prompt's length.

    Readouts: TTFT, TPOT, tokens a second, the whole reply's time and decode's share.
    """
    _check.instance("model", model, Model)
    prompts = slider_steps(1, max_prompt, 8, default_prompt)
    timed = request(model, gpu, prompts, reply_tokens, assumptions=assumptions)
    ttft, tpot, rate, total, decode_share = (_along(value, prompts) for value in (
        timed.ttft, timed.tpot, timed.tokens_per_second, timed.total_time, timed.decode_share))

    y_ticks = _linear_ticks(total.max() * 1.05)
    panel = _panel((1, max_prompt), (0, y_ticks[-1] * 1.25), TOP, 260, True, False,
                   "tokens in the prompt", "time of the request")
    panel.x_ticks = [(t, units.number(t)) for t in _log_ticks(1, max_prompt)]
    panel.y_ticks = [(t, units.seconds(t, 1)) for t in y_ticks]
    drawing = [panel.band(prompts, np.zeros_like(ttft), ttft, PREFILL),
               panel.band(prompts, ttft, total, DECODE),
               panel.label(1.5, total[0] * 0.5, f"decode: {units.number(reply_tokens - 1)} steps", DECODE),
               panel.label(max_prompt * 0.9, ttft[-1] * 0.5, "prefill", PREFILL, anchor="end")]

    values = [_counted(p, "token", "tokens") for p in prompts]
    # TTFT to two figures and TPOT to three, as the lesson prints them (49 ms, 4.79 ms).
    readouts = [{"time to first token (TTFT)": _ms(ttft[i], 2),
                 "time per output token (TPOT)": _ms(tpot[i]),
                 "tokens a second": units.number(rate[i]),
                 "whole reply": units.seconds(total[i], _figures(total[i], 3)),
                 "share spent in decode": units.percent(decode_share[i])}
                for i in range(len(prompts))]
    return _chart(f"A {units.number(reply_tokens)}-token reply from {model.name} on {gpu.name}",
                  assumptions.label or "", "Tokens in the prompt", prompts, values, readouts,
                  int(np.flatnonzero(prompts == default_prompt)[0]), [panel], drawing,
                  [_Series(panel, ttft, PREFILL), _Series(panel, total, DECODE)], "request")


# --- Lesson 1, part 4: batching and the cost of a million tokens ----------------------
def batching_chart(model: Model = LLAMA_3_8B, gpu: GPU = H100_SXM, price_per_hour: float | None = None,
                   max_users: int = 1024, default_users: int = 32, assumptions: Assumptions = LESSON) -> Chart:
    """Cost of a million tokens and each user's tokens a second, against users per pass.

    Readouts: tokens an hour, cost per million tokens at ``price_per_hour``, each
    user's tokens a second and which limit sets the pass. Past the compute-bound
    point every extra user slows every step, and each user's rate falls.
    """
    _check.instance("model", model, Model)
    users = slider_steps(1, max_users, 6, default_users)
    shared = batching(model, gpu, users, price_per_hour=price_per_hour, assumptions=assumptions)
    price_per_hour = shared.price_per_hour  # the GPU's own rental price unless one was given
    per_hour, cost, each_rate = (_along(value, users) for value in (
        shared.tokens_per_hour, shared.cost_per_million_tokens, shared.tokens_per_second_per_user))
    bounds = np.broadcast_to(shared.decode.bound, users.shape)
    first_compute_bound = compute_bound_batch(model, gpu, assumptions=assumptions)

    cost_low = 10 ** math.floor(math.log10(cost.min()))
    cost_high = 10 ** math.ceil(math.log10(cost.max()))
    cost_panel = _panel((1, max_users), (cost_low, cost_high), TOP, 150, True, True,
                        "users per pass", "$ per million tokens", show_x=False)
    rate_ticks = _linear_ticks(each_rate.max() * 1.1)
    rate_panel = _panel((1, max_users), (0, rate_ticks[-1] * 1.15), TOP + 170, 130, True, False,
                        "users per pass", "each user's tokens/s")
    x_ticks = [(u, units.number(u)) for u in _log_ticks(1, max_users)]
    cost_panel.x_ticks = rate_panel.x_ticks = x_ticks
    cost_panel.y_ticks = [(c, units.dollars(c, _figures(c, 1))) for c in _log_ticks(cost_low, cost_high)]
    rate_panel.y_ticks = [(r, units.number(r)) for r in rate_ticks]
    drawing = [cost_panel.line(users, cost, PREFILL), rate_panel.line(users, each_rate, MEMORY)]
    if first_compute_bound is not None and first_compute_bound <= max_users:
        first = first_compute_bound
        # Named at the top of the cost panel and the foot of the rate panel, clear of both curves.
        for panel, low in ((cost_panel, False), (rate_panel, True)):
            drawing += panel.boundary(first, f"compute-bound from {_counted(first, 'user', 'users')}", low)

    values = [_counted(u, "user", "users") for u in users]
    # Tokens an hour to two figures, as the lesson says them (750,000); dollars to at least a tenth of a cent.
    readouts = [{"tokens an hour": units.number(units.round_to(per_hour[i], 2)),
                 f"cost per million tokens at {units.dollars(price_per_hour)} an hour":
                     units.dollars(cost[i], max(3, _figures(cost[i], 3))),
                 "each user's tokens a second": units.number(each_rate[i]),
                 "what limits the pass": f"{bounds[i]}-bound"} for i in range(len(users))]
    return _chart(f"Decode for many users at once: {model.name} on {gpu.name}", assumptions.label or "",
                  "Users per pass", users, values, readouts, int(np.flatnonzero(users == default_users)[0]),
                  [cost_panel, rate_panel], drawing,
                  [_Series(cost_panel, cost, PREFILL), _Series(rate_panel, each_rate, MEMORY)], "batching")


# --- Lesson 2: each user's KV cache -------------------------------------------------------
def _log_panel(xs_range, ys_range, x_label, y_label, y_format, x_format=units.number, top=TOP, height=260):
    """A log-log panel whose ticks are the powers of ten inside its ranges."""
    low = 10 ** math.floor(math.log10(ys_range[0]))
    high = 10 ** math.ceil(math.log10(ys_range[1]))
    panel = _panel(xs_range, (low, high), top, height, True, True, x_label, y_label)
    panel.x_ticks = [(t, x_format(t)) for t in _log_ticks(*xs_range)]
    panel.y_ticks = [(t, y_format(t)) for t in _log_ticks(low, high)]
    return panel


def _index_of(steps, value):
    return int(np.flatnonzero(steps == value)[0])


def cache_saving_chart(model: Model = LLAMA_3_8B, gpu: GPU = H100_SXM, max_tokens: int = 32_768,
                       default_tokens: int = 3000) -> Chart:
    """Lesson 2, part 1: a decode step's FLOPs with the cache and without it, slider over the
    tokens already in the sequence. Readouts: both FLOP counts, their ratio, both times."""
    from .cache import CACHE_READ, decode_with_and_without_cache, time_with_and_without_cache

    _check.instance("model", model, Model)
    contexts = slider_steps(1, max_tokens, 6, default_tokens)
    saving = decode_with_and_without_cache(model, contexts)
    timed = time_with_and_without_cache(model, gpu, contexts)
    with_flops, without_flops = np.asarray(saving.with_cache.flops), np.asarray(saving.without_cache.flops)
    panel = _log_panel((1, max_tokens), (with_flops.min(), without_flops.max()), "tokens already in the sequence",
                       "FLOPs of the next step", lambda f: f"{f:.0e}".replace("e+", "e"))
    drawing = [panel.line(contexts, without_flops, DECODE), panel.line(contexts, with_flops, PREFILL),
               panel.label(1.5, without_flops[0] * 3, "without the cache", DECODE),
               panel.label(max_tokens * 0.9, with_flops[-1] * 2.2, "with the cache", PREFILL, anchor="end")]

    def bound(timing, i):
        return "compute" if np.asarray(timing.compute_bound)[i] else "memory"

    values = [_counted(c, "token", "tokens") for c in contexts]
    readouts = [{"FLOPs without the cache": units.trillions(without_flops[i], 2),
                 "FLOPs with the cache": units.billions(with_flops[i], 1),
                 "times fewer with the cache": units.number(without_flops[i] / with_flops[i]),
                 "the step without the cache": f"{_ms(np.asarray(timed.without_cache.time)[i])}, "
                                               f"{bound(timed.without_cache, i)}-bound",
                 "the step with the cache": f"{_ms(np.asarray(timed.with_cache.time)[i])}, "
                                            f"{bound(timed.with_cache, i)}-bound"} for i in range(len(contexts))]
    return _chart(f"The next decode step of {model.name}, with the KV cache and without it", CACHE_READ.label,
                  "Tokens already in the sequence", contexts, values, readouts, _index_of(contexts, default_tokens),
                  [panel], drawing, [_Series(panel, without_flops, DECODE), _Series(panel, with_flops, PREFILL)],
                  "cache-saving")


def cache_size_chart(model: Model = LLAMA_3_8B, max_tokens: int = 131_072, default_tokens: int = 8000,
                     kv_bits=16) -> Chart:
    """Lesson 2, part 2: one conversation's cache against its length, for ``model``'s shape with
    full multi-head, its own grouped-query and multi-query attention; the weights as a line."""
    from dataclasses import replace

    from .memory import kv_cache_bytes, weight_bytes

    _check.instance("model", model, Model)
    contexts = slider_steps(256, max_tokens, 4, default_tokens)
    shapes = {"multi-head": replace(model, kv_heads=model.heads), "grouped-query, as published": model,
              "multi-query": replace(model, kv_heads=1)}
    caches = {name: np.asarray(kv_cache_bytes(shape, contexts, kv_bits=kv_bits)) for name, shape in shapes.items()}
    weights = weight_bytes(model.parameters)
    panel = _log_panel((256, max_tokens), (min(c.min() for c in caches.values()), max(c.max() for c in caches.values())),
                       "tokens in the conversation", "KV cache", lambda b: units.gb(b, _figures(b / 1e9, 1)))
    colours = (DECODE, PREFILL, COMPUTE)
    drawing = [panel.line(contexts, ys, colour) for ys, colour in zip(caches.values(), colours)]
    drawing += [panel.line(np.array([256, max_tokens]), np.array([weights] * 2), NEUTRAL, dashed=True),
                panel.label(300, weights * 1.3, f"the weights, {units.gb(weights)}", NEUTRAL)]
    values = [_counted(c, "token", "tokens") for c in contexts]
    readouts = [{**{f"{name}, {_counted(shapes[name].kv_heads, 'KV head', 'KV heads')}": units.gb(caches[name][i])
                    for name in shapes},
                 "grouped-query, as a share of the weights":
                     units.percent(caches["grouped-query, as published"][i] / weights, 1)}
                for i in range(len(contexts))]
    return _chart(f"The KV cache of one conversation with {model.name}'s shape, {kv_bits}-bit values",
                  "the same layers and head dim; only the key-value heads differ", "Tokens in the conversation",
                  contexts, values, readouts, _index_of(contexts, default_tokens), [panel], drawing,
                  [_Series(panel, ys, colour) for ys, colour in zip(caches.values(), colours)], "cache-size")


def users_that_fit_chart(model: Model = LLAMA_3_8B, gpu: GPU = H100_SXM, max_tokens: int = 131_072,
                         default_tokens: int = 8000) -> Chart:
    """Lesson 2, part 3: the most users whose caches fit beside the weights, 16-bit and 8-bit
    caches, slider over the tokens each user holds."""
    from .memory import RESERVE, fit, max_batch

    _check.instance("model", model, Model)
    contexts = slider_steps(256, max_tokens, 4, default_tokens)
    users = {bits: np.asarray(max_batch(model, gpu, contexts, kv_bits=bits)) for bits in (16, 8)}
    budget = fit(model, gpu)
    panel = _log_panel((256, max_tokens), (max(users[16].min(), 1), users[8].max()), "tokens each user holds",
                       "users that fit", units.number)
    colours = {16: PREFILL, 8: COMPUTE}
    drawing = [panel.line(contexts, np.maximum(users[bits], 1), colours[bits]) for bits in users]
    drawing += [panel.label(300, users[8][0] * 1.4, "8-bit cache", COMPUTE),
                panel.label(300, users[16][0] * 0.55, "16-bit cache", PREFILL)]
    values = [_counted(c, "token", "tokens") for c in contexts]
    readouts = [{"cache a user (16-bit)": units.gb(contexts[i] * model.kv_bytes_per_token(16)),
                 "users that fit, 16-bit cache": units.number(users[16][i]),
                 "users that fit, 8-bit cache": units.number(users[8][i])} for i in range(len(contexts))]
    note = (f"{units.gb(gpu.memory_bytes, 0)}, {units.percent(RESERVE)} held back; weights "
            f"{units.gb(budget.weight_bytes)} in 16 bits")
    return _chart(f"Users of {model.name} on one {gpu.name}", note, "Tokens each user holds", contexts, values,
                  readouts, _index_of(contexts, default_tokens), [panel], drawing,
                  [_Series(panel, np.maximum(users[bits], 1), colours[bits]) for bits in users], "users-fit")


def cached_batching_chart(model: Model = LLAMA_3_8B, gpu: GPU = H100_SXM, contexts=(1000, 3000, 8000),
                          max_users: int = 1024, default_users: int = 32, price_per_hour=None) -> Chart:
    """Lesson 2, part 4: the cost of a million tokens against users per pass, every user's
    cache read each step, one line per length of conversation (each ending where memory is
    full), lesson 1's weights-only line dashed."""
    from .cache import CACHE_READ, cache_matches_weights_batch, cached_decode
    from .memory import max_batch

    _check.instance("model", model, Model)
    users = slider_steps(1, max_users, 6, default_users)
    served = {tokens: cached_decode(model, gpu, users, tokens, price_per_hour) for tokens in contexts}
    walls = {tokens: max_batch(model, gpu, tokens) for tokens in contexts}
    lesson_1 = batching(model, gpu, users, price_per_hour=price_per_hour)
    costs = {tokens: np.asarray(point.cost_per_million_tokens) for tokens, point in served.items()}
    weights_only = np.asarray(lesson_1.cost_per_million_tokens)
    panel = _log_panel((1, max_users), (weights_only.min(), max(c.max() for c in costs.values())),
                       "users per pass", "$ per million tokens", lambda c: units.dollars(c, _figures(c, 1)))
    colours = (PREFILL, DECODE, COMPUTE, MEMORY)
    drawing = [panel.line(users, weights_only, NEUTRAL, dashed=True),
               panel.label(1.5, weights_only[0] * 0.45, "weights only (lesson 1)", NEUTRAL)]
    for (tokens, dollars), colour in zip(costs.items(), colours):
        inside = users <= walls[tokens]
        drawing.append(panel.line(users[inside], dollars[inside], colour))
        if inside.any() and not inside.all():
            end = np.flatnonzero(inside)[-1]
            drawing.append(panel.label(users[end] * 1.1, dollars[end], f"{units.number(tokens)}: full",
                                       colour))
    drawing.append(panel.label(max_users * 0.9, costs[contexts[-1]][0] * 1.6,
                               "  ".join(f"{units.number(t)} tokens" for t in contexts), NEUTRAL, anchor="end"))
    values = [_counted(u, "user", "users") for u in users]

    def shown(tokens, i):
        if users[i] > walls[tokens]:
            return f"does not fit (at most {units.number(walls[tokens])} users)"
        return (f"{units.dollars(costs[tokens][i], 3)}, "
                f"{units.number(np.asarray(served[tokens].tokens_per_second_per_user)[i])} tokens/s each")

    readouts = [{**{f"{units.number(tokens)} tokens each": shown(tokens, i) for tokens in contexts},
                 "weights only (lesson 1)": units.dollars(weights_only[i], 3),
                 "caches weigh as much as the weights at": ", ".join(
                     f"{units.number(cache_matches_weights_batch(model, t))} users ({units.number(t)})"
                     for t in contexts)}
                for i in range(len(users))]
    price = units.dollars(served[contexts[0]].price_per_hour)
    return _chart(f"Decode with every user's cache: {model.name} on {gpu.name} at {price} an hour",
                  CACHE_READ.label, "Users per pass", users, values, readouts, _index_of(users, default_users),
                  [panel], drawing,
                  [_Series(panel, np.asarray(cached_decode(model, gpu, np.clip(users, 1, max(walls[t], 1)), t,
                                                           price_per_hour).cost_per_million_tokens), c)
                   for t, c in zip(contexts, colours)],
                  "cached-batching")


# --- Plate XXIII.2: users that fit against the length of their conversations -------------
def kv_workshop_chart(gpu: GPU = H100_SXM, models=None, max_tokens: int = 32_768, default_tokens: int = 8000) -> Chart:
    """The most users whose caches fit beside each model's weights on ``gpu`` (solid), and the
    batch whose caches weigh as much as the weights (dashed), slider over the tokens each holds."""
    from .cache import WORKSHOP_MODELS, cache_matches_weights_batch
    from .memory import RESERVE, max_batch
    from .models import MODELS

    chosen = [MODELS[key] for key in (models or WORKSHOP_MODELS)]
    contexts = slider_steps(1, max_tokens, 4, default_tokens)
    users = {m.name: np.maximum(np.asarray(max_batch(m, gpu, contexts)), 1) for m in chosen}
    crossings = {m.name: np.asarray(cache_matches_weights_batch(m, contexts)) for m in chosen}
    low = min(min(u.min() for u in users.values()), min(c.min() for c in crossings.values()))
    high = max(max(u.max() for u in users.values()), max(c.max() for c in crossings.values()))
    panel = _log_panel((1, max_tokens), (max(low, 0.1), high), "tokens each user holds", "users",
                       lambda u: units.number(u) if u >= 1 else f"{u:g}")
    colours = (PREFILL, DECODE, COMPUTE, MEMORY)
    drawing = []
    for (name, counts), colour in zip(users.items(), colours):
        drawing += [panel.line(contexts, counts, colour), panel.line(contexts, crossings[name], colour, dashed=True),
                    panel.label(1.4, counts[0] * 1.5, name, colour)]
    values = [_counted(c, "token", "tokens") for c in contexts]
    readouts = [{f"{name}: users that fit": f"{units.number(users[name][i])}; caches = weights at "
                                            f"{units.number(crossings[name][i])} users"
                 for name in users} for i in range(len(contexts))]
    note = (f"solid: users that fit; dashed: caches weigh as much as the weights. {gpu.listed_memory}, "
            f"{units.percent(RESERVE)} held back, 16-bit weights and cache")
    return _chart(f"Users whose caches fit on one {gpu.name}", note, "Tokens each user holds", contexts, values,
                  readouts, _index_of(contexts, default_tokens), [panel], drawing,
                  [_Series(panel, counts, colour) for counts, colour in zip(users.values(), colours)], "kv-workshop")
