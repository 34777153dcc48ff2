"""The explorers' live figures, written as SVG text.

An explorer redraws its figure every time a control moves. Rendering a matplotlib figure
to pixels, encoding them and sending the image to the browser takes tens of
milliseconds for these log-scaled charts, too slow for a slider to feel live. Here each
chart is written directly as a few kilobytes of SVG from values the package has already
computed: a millisecond or two of string formatting, and the browser draws it. Each
function draws the same chart as its namesake in ``servingmath.plots`` (same colours,
marks and labels), so the live figure and the static one read alike. Like ``plots``,
nothing here does arithmetic beyond placing values on axes.

Text is drawn in ``currentColor``, so the charts suit a light theme and a dark one.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import numpy as np

from . import units
from .hardware import T
from .plots import (COMPUTE, DECODE, DECODE_SHOWN_FIRST, DECODE_SHOWN_LAST, ELIDED_SLOTS, INTENSITY_RANGE, MEMORY,
                    NEUTRAL, PREFILL, PREFILL_SLOTS, _counted, _decode_slots)
from .roofline import attainable_flops, ridge_point
from .serving import TOKENS_PER_DECODE_PASS

WIDTH = 700
FONT = 12


class SVG(str):
    """SVG text that notebooks show as an image (and the website as a figure)."""

    def _repr_svg_(self):
        return str(self)


def _f(value) -> str:
    return f"{float(value):.1f}"


@dataclass(frozen=True)
class Scale:
    """Data values -> pixels along one axis, linear or logarithmic."""

    low: float
    high: float
    start: float
    end: float
    log: bool = False

    def __call__(self, values):
        values = np.asarray(values, dtype=float)
        low, high = self.low, self.high
        if self.log:
            values, low, high = np.log10(values), math.log10(low), math.log10(high)
        return self.start + (values - low) / (high - low) * (self.end - self.start)


def decades(low, high):
    """Powers of ten from ``low`` to ``high``."""
    return [10.0 ** k for k in range(math.ceil(math.log10(low) - 1e-9), math.floor(math.log10(high) + 1e-9) + 1)]


def round_steps(low, high, count=5):
    """Round values (1, 2 or 5 × a power of ten apart) from ``low`` to ``high``, about ``count`` of them."""
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(power * m for m in (1, 2, 5, 10) if power * m >= raw)
    return [step * k for k in range(math.ceil(low / step), math.floor(high / step) + 1)]


@dataclass
class Canvas:
    """One chart: a plotting area with two scales, and the SVG elements drawn so far."""

    height: int
    x: Scale
    y: Scale
    parts: list = field(default_factory=list)
    label: str = ""

    @classmethod
    def new(cls, height, x_range, y_range, x_log=False, y_log=False, left=70, right=20, top=28, bottom=44,
            label=""):
        x = Scale(*x_range, left, WIDTH - right, x_log)
        y = Scale(*y_range, height - bottom, top, y_log)
        return cls(height, x, y, [], label)

    # the plotting area's edges, in pixels
    @property
    def left(self):
        return self.x.start

    @property
    def right(self):
        return self.x.end

    @property
    def top(self):
        return self.y.end

    @property
    def bottom(self):
        return self.y.start

    def add(self, element: str):
        self.parts.append(element)

    def text(self, px, py, text, colour="currentColor", anchor="start", size=FONT, weight="normal", rotate=False,
             baseline="auto"):
        """Text at pixel ``(px, py)``; lines split on newlines, the first at ``py``."""
        lines = str(text).split("\n")
        turn = f' transform="rotate(-90 {_f(px)} {_f(py)})"' if rotate else ""
        bold = ' font-weight="bold"' if weight != "normal" else ""
        shift = {"middle": -(len(lines) - 1) / 2, "hanging": 0.0, "auto": 0.0, "bottom": -(len(lines) - 1)}[baseline]
        spans = "".join(f'<tspan x="{_f(px)}" dy="{(shift if i == 0 else 1) * 1.2:.2f}em">{html.escape(line)}</tspan>'
                        for i, line in enumerate(lines))
        dominant = {"middle": "central", "hanging": "hanging", "auto": "auto", "bottom": "auto"}[baseline]
        self.add(f'<text x="{_f(px)}" y="{_f(py)}" fill="{colour}" font-size="{size}" text-anchor="{anchor}" '
                 f'dominant-baseline="{dominant}"{bold}{turn}>{spans}</text>')

    def at(self, x, y):
        return float(self.x(x)), float(self.y(y))

    def rect(self, x0, x1, y0, y1, colour, opacity=1.0, gid=""):
        (px0, py0), (px1, py1) = self.at(x0, y0), self.at(x1, y1)
        ident = f' data-gid="{gid}"' if gid else ""
        self.add(f'<rect x="{_f(min(px0, px1))}" y="{_f(min(py0, py1))}" width="{_f(abs(px1 - px0))}" '
                 f'height="{_f(abs(py1 - py0))}" fill="{colour}" fill-opacity="{opacity}"{ident}/>')

    def span(self, x0, x1, colour, opacity=0.08):
        """A band across the whole height between two x values."""
        px0, px1 = float(self.x(x0)), float(self.x(x1))
        px0, px1 = max(self.left, min(px0, px1)), min(self.right, max(px0, px1))
        if px1 > px0:
            self.add(f'<rect x="{_f(px0)}" y="{_f(self.top)}" width="{_f(px1 - px0)}" '
                     f'height="{_f(self.bottom - self.top)}" fill="{colour}" fill-opacity="{opacity}"/>')

    def line(self, xs, ys, colour, width=2.0, dash="", gid="", scale_y=None):
        px = self.x(xs)
        py = (scale_y or self.y)(ys)
        points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(px, py))
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        ident = f' data-gid="{gid}"' if gid else ""
        self.add(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="{width}"{dashes}{ident}/>')

    def vline(self, x, colour, dash="", width=1.0, gid=""):
        px = float(self.x(x))
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        ident = f' data-gid="{gid}"' if gid else ""
        self.add(f'<line x1="{_f(px)}" x2="{_f(px)}" y1="{_f(self.top)}" y2="{_f(self.bottom)}" stroke="{colour}" '
                 f'stroke-width="{width}"{dashes}{ident}/>')

    def dot(self, x, y, colour, radius=5.0, square=False, gid="", scale_y=None):
        px, py = float(self.x(x)), float((scale_y or self.y)(y))
        ident = f' data-gid="{gid}"' if gid else ""
        if square:
            self.add(f'<rect x="{_f(px - radius)}" y="{_f(py - radius)}" width="{_f(2 * radius)}" '
                     f'height="{_f(2 * radius)}" fill="{colour}"{ident}/>')
        else:
            self.add(f'<circle cx="{_f(px)}" cy="{_f(py)}" r="{radius}" fill="{colour}"{ident}/>')

    def arrow(self, px0, py0, px1, py1, colour):
        """A line from the text at ``(px0, py0)`` to the point ``(px1, py1)``, with a head there."""
        angle = math.atan2(py1 - py0, px1 - px0)
        head = [(px1 - 8 * math.cos(angle + turn), py1 - 8 * math.sin(angle + turn)) for turn in (0.4, -0.4)]
        self.add(f'<line x1="{_f(px0)}" y1="{_f(py0)}" x2="{_f(px1)}" y2="{_f(py1)}" stroke="{colour}"/>'
                 f'<polyline points="{_f(head[0][0])},{_f(head[0][1])} {_f(px1)},{_f(py1)} '
                 f'{_f(head[1][0])},{_f(head[1][1])}" fill="none" stroke="{colour}"/>')

    def x_axis(self, ticks, label):
        for value, text in ticks:
            px = float(self.x(value))
            self.add(f'<line x1="{_f(px)}" x2="{_f(px)}" y1="{_f(self.bottom)}" y2="{_f(self.bottom + 4)}" '
                     f'stroke="currentColor"/>')
            self.text(px, self.bottom + 7, text, anchor="middle", size=11, baseline="hanging")
        self.text((self.left + self.right) / 2, self.height - 6, label, anchor="middle")

    def y_axis(self, ticks, label, scale=None, side="left"):
        scale = scale or self.y
        edge, sign, anchor = (self.left, -1, "end") if side == "left" else (self.right, 1, "start")
        for value, text in ticks:
            py = float(scale(value))
            self.add(f'<line x1="{_f(edge)}" x2="{_f(edge + 4 * sign)}" y1="{_f(py)}" y2="{_f(py)}" '
                     f'stroke="currentColor"/>')
            self.text(edge + 7 * sign, py, text, anchor=anchor, size=11, baseline="middle")
        px = 14 if side == "left" else WIDTH - 8
        self.text(px, (self.top + self.bottom) / 2, label, anchor="middle", rotate=True)

    def frame(self, sides=("left", "right", "top", "bottom")):
        ends = {"left": (self.left, self.top, self.left, self.bottom),
                "right": (self.right, self.top, self.right, self.bottom),
                "top": (self.left, self.top, self.right, self.top),
                "bottom": (self.left, self.bottom, self.right, self.bottom)}
        for side in sides:
            x1, y1, x2, y2 = ends[side]
            self.add(f'<line x1="{_f(x1)}" y1="{_f(y1)}" x2="{_f(x2)}" y2="{_f(y2)}" stroke="currentColor" '
                     f'stroke-opacity="0.6"/>')

    def title(self, text, anchor="start"):
        px = {"start": self.left, "middle": (self.left + self.right) / 2}[anchor]
        self.text(px, self.top - 8, text, anchor=anchor, size=FONT)

    def legend(self, entries, px, py, anchor="start"):
        """Entries of (colour, style, text) stacked from ``(px, py)``; style "line", "dashed", "dotted" or "dot"."""
        for row, (colour, style, text) in enumerate(entries):
            y = py + row * 16
            if style == "dot":
                self.add(f'<circle cx="{_f(px + 10)}" cy="{_f(y)}" r="4" fill="{colour}"/>')
            elif style == "bar":
                self.add(f'<rect x="{_f(px)}" y="{_f(y - 5)}" width="20" height="10" fill="{colour}"/>')
            else:
                dash = {"line": "", "dashed": ' stroke-dasharray="6 4"', "dotted": ' stroke-dasharray="2 3"'}[style]
                self.add(f'<line x1="{_f(px)}" x2="{_f(px + 20)}" y1="{_f(y)}" y2="{_f(y)}" stroke="{colour}" '
                         f'stroke-width="2"{dash}/>')
            self.text(px + 26, y, text, size=11, baseline="middle")

    def svg(self) -> SVG:
        return SVG(f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {self.height}" width="100%" '
                   f'style="max-width:{WIDTH}px" role="img" aria-label="{html.escape(self.label)}" '
                   f'font-family="DejaVu Sans, Arial, sans-serif" fill="currentColor">'
                   + "".join(self.parts) + "</svg>")


def spread(length, count=300):
    """Indices of about ``count`` points spread evenly on a log scale over an array of ``length``.

    A sweep thousands of points long drawn on a log axis needs only a point or so a pixel;
    every point would make the SVG a hundred times longer for the same picture.
    """
    return np.unique(np.geomspace(1, length, count).astype(int) - 1)


def _number(value) -> str:
    return units.number(value)


# --- Lesson 1, part 1: the passes of a request ---------------------------------------
def request_timeline(counted) -> SVG:
    """``plots.request_timeline`` as SVG: one wide prefill pass, then one thin decode pass per reply token."""
    decode_passes = int(counted.decode_passes)
    slots, elided = _decode_slots(decode_passes)
    decode_left = PREFILL_SLOTS + 0.5
    lefts = [decode_left + slot for _, slot in slots]
    right = max(lefts[-1] + 1 if lefts else PREFILL_SLOTS,
                decode_left + DECODE_SHOWN_FIRST + ELIDED_SLOTS + DECODE_SHOWN_LAST) + 0.5
    chart = Canvas.new(200, (-0.5, right), (-0.1, 1.6), left=20, right=20, top=10,
                       label="A request's passes in order")
    chart.rect(0, PREFILL_SLOTS, 0, 1, PREFILL, gid="prefill")
    px, py = chart.at(PREFILL_SLOTS / 2, 0.5)
    chart.text(px, py, f"{_number(counted.prefill_tokens)}\ntokens", colour="white", anchor="middle", size=11,
               weight="bold", baseline="middle")
    for left in lefts:
        chart.rect(left, left + 0.8, 0, 1, DECODE, gid="decode")
    ticks = [(PREFILL_SLOTS / 2, "1")]
    for index, ((k, _), left) in enumerate(zip(slots, lefts)):
        if index in (0, len(slots) - 1) or (elided and index == DECODE_SHOWN_FIRST):
            ticks.append((left + 0.4, _number(k + 1)))
    if elided:
        middle = decode_left + DECODE_SHOWN_FIRST + ELIDED_SLOTS / 2 - 0.1
        chart.text(*chart.at(middle, 0.5), "⋯", colour=DECODE, anchor="middle", size=18, baseline="middle")
        chart.text(*chart.at(middle, 0.2), f"{_number(decode_passes - len(slots))} more", colour=DECODE,
                   anchor="middle", size=10, baseline="middle")
    chart.text(*chart.at(0, 1.1), "prefill: 1 pass", colour=PREFILL, size=11)
    if decode_passes:
        chart.text(*chart.at(decode_left, 1.1),
                   f"decode: {_counted(decode_passes, 'pass', 'passes')}, "
                   f"{_counted(TOKENS_PER_DECODE_PASS, 'token', 'tokens')} each", colour=DECODE, size=11)
    chart.frame(("bottom",))
    chart.x_axis(ticks, "forward passes, in order (widths not to scale)")
    return chart.svg()


# --- Lesson 1, part 2: arithmetic intensity on the roofline ---------------------------
def _tick_number(value) -> str:
    return _number(value) if value >= 1 else f"{value:g}"


def roofline_chart(gpu, passes) -> SVG:
    """``plots.roofline_chart`` as SVG: attainable FLOP/s against FLOP per byte, log-log, ridge marked."""
    ridge = ridge_point(gpu.peak_flops, gpu.memory_bandwidth)
    intensities = np.geomspace(*INTENSITY_RANGE, 60)
    roof = attainable_flops(intensities, gpu.peak_flops, gpu.memory_bandwidth) / T
    chart = Canvas.new(360, INTENSITY_RANGE, (roof[0], roof[-1] * 3), x_log=True, y_log=True, left=64,
                       label=f"{gpu.name} roofline")
    chart.span(INTENSITY_RANGE[0], ridge, MEMORY)
    chart.span(ridge, INTENSITY_RANGE[1], COMPUTE)
    chart.line(intensities, roof, NEUTRAL, width=2, gid="roof")
    chart.vline(ridge, NEUTRAL, dash="5 4", gid="ridge")
    chart.text(float(chart.x(ridge)) + 12, chart.bottom - 8, f"ridge: {_number(ridge)} FLOP/byte",
               colour=NEUTRAL, size=10, rotate=True)
    chart.text(chart.left + 8, chart.top + 6, "memory-bound", colour=MEMORY, baseline="hanging")
    chart.text(chart.right - 8, chart.top + 6, "compute-bound", colour=COMPUTE, anchor="end", baseline="hanging")
    for label, step in passes.items():
        intensity = step.cost.intensity
        height = attainable_flops(intensity, gpu.peak_flops, gpu.memory_bandwidth) / T
        colour = COMPUTE if step.bound == "compute" else MEMORY
        chart.dot(intensity, height, colour, radius=6, gid="pass")
        px, py = chart.at(intensity, height)
        text = f"{label}\n{_number(intensity)} FLOP/byte, {step.bound}-bound"
        if step.bound == "memory":
            chart.text(px + 12, py + 6, text, colour=colour, baseline="hanging")
        else:
            near_right_edge = (px - chart.left) / (chart.right - chart.left) > 0.75
            chart.text(px + (6 if near_right_edge else -6), py + 14, text, colour=colour, baseline="hanging",
                       anchor="end" if near_right_edge else "start")
    chart.frame()
    chart.x_axis([(v, _tick_number(v)) for v in decades(*INTENSITY_RANGE)],
                 "arithmetic intensity (FLOP per byte read)")
    chart.y_axis([(v, _tick_number(v)) for v in decades(roof[0], roof[-1] * 3)], "attainable TFLOP/s")
    chart.title(f"{gpu.name}: {units.tflops(gpu.peak_flops)} dense 16-bit, {units.tb_per_s(gpu.memory_bandwidth)}")
    return chart.svg()


# --- Lesson 1, part 3: where a request's time goes ------------------------------------
def request_time_split(request) -> SVG:
    """``plots.request_time_split`` as SVG: one bar, the prefill then the decode steps, each labelled."""
    total = float(request.total_time)
    chart = Canvas.new(330, (0, total * 1.08), (-1.2, 1.4), left=20, top=30,
                       label="Where a request's time goes")
    chart.rect(0, request.ttft, -0.25, 0.25, PREFILL, gid="prefill")
    chart.rect(request.ttft, total, -0.25, 0.25, DECODE, gid="decode")
    first, last = float(chart.x(request.ttft)), float(chart.x(total))
    # Two labels closer than their width stand apart, each on its own side of its arrow.
    apart = last - first < 90
    for x, text, colour, anchor in ((request.ttft, f"first token\n{units.ms(request.ttft, 0)}", PREFILL,
                                     "end" if apart else "middle"),
                                    (total, f"last token\n{units.seconds(request.total_time)}", DECODE,
                                     "start" if apart else "middle")):
        px, py = chart.at(x, 0.25)
        chart.arrow(px, py - 26, px, py, colour)
        chart.text(px + {"end": -4, "start": 4, "middle": 0}[anchor], py - 30, text, anchor=anchor, size=11,
                   baseline="bottom")
    chart.legend([(PREFILL, "bar", f"prefill, 1 pass: {units.ms(request.ttft, 0)}"),
                  (DECODE, "bar", f"decode, {_number(request.decode_steps)} steps of {units.ms(request.tpot)}: "
                                  f"{units.seconds(request.decode_time)}")],
                 (chart.left + chart.right) / 2 - 150, chart.bottom - 40)
    chart.frame(("bottom",))
    steps = round_steps(0, total * 1.08)
    chart.x_axis([(s, f"{s:g}") for s in steps], "seconds since the request started")
    chart.title(f"Where the time goes: {units.percent(request.decode_share)} of it decode", anchor="middle")
    return chart.svg()


# --- Lesson 1, part 4: batching and the cost of a million tokens ----------------------
def batching_sweep(sweep, chosen, compute_bound_batch=None) -> SVG:
    """``plots.batching_sweep`` as SVG: cost per million tokens (left, log) and each user's speed (right)."""
    batch = np.asarray(sweep.batch, dtype=float)
    cost = np.asarray(sweep.cost_per_million_tokens, dtype=float)
    speed = np.broadcast_to(np.asarray(sweep.tokens_per_second_per_user, dtype=float), batch.shape)
    low, high = cost.min() / 1.5, cost.max() * 1.5
    chart = Canvas.new(360, (batch[0], batch[-1]), (low, high), x_log=True, y_log=True, left=70, right=70, top=14,
                       label="Cost per million tokens against users per pass")
    speed_ticks = round_steps(0, speed.max() * 1.05)
    speed_scale = Scale(0, max(speed_ticks[-1], speed.max() * 1.05), chart.bottom, chart.top)
    if compute_bound_batch is not None:
        chart.span(compute_bound_batch, batch[-1], COMPUTE)
    shown = spread(len(batch))
    chart.line(batch[shown], cost[shown], DECODE, gid="cost")
    chart.line(batch[shown], speed[shown], PREFILL, dash="6 4", gid="speed", scale_y=speed_scale)
    chart.vline(chosen.batch, NEUTRAL)
    chart.dot(chosen.batch, chosen.cost_per_million_tokens, DECODE, radius=5, gid="chosen-batch")
    entries = [(DECODE, "line", "cost per million tokens (left)"),
               (DECODE, "dot", f"{_number(chosen.batch)} users: {units.dollars(chosen.cost_per_million_tokens, 3)} "
                               f"per million")]
    if compute_bound_batch is not None:
        chart.vline(compute_bound_batch, COMPUTE, dash="2 3", width=2, gid="compute-bound-batch")
        entries.append((COMPUTE, "dotted", f"arithmetic becomes the limit: {_number(compute_bound_batch)} users"))
    entries.append((PREFILL, "dashed", "each user's tokens a second (right)"))
    chart.legend(entries, chart.left + 10, chart.bottom - 16 * len(entries))
    chart.frame()
    chart.x_axis([(v, _number(v)) for v in decades(batch[0], batch[-1])], "users per pass (batch size)")
    chart.y_axis([(v, units.dollars(v, max(0, -math.floor(math.log10(v))))) for v in decades(low, high)],
                 "$ per million tokens")
    chart.y_axis([(v, _number(v)) for v in speed_ticks], "tokens a second, each user", scale=speed_scale,
                 side="right")
    return chart.svg()


# --- Plate XXIII.1: time per token against tokens per pass ----------------------------
def _ms_tick(seconds) -> str:
    return f"{seconds * 1e3:g} ms"


def time_per_token_chart(curve, decode, marks=(), ideal=None) -> SVG:
    """``plots.time_per_token_chart`` as SVG: the plate's workshop, time per token against tokens, log-log."""
    first, last = float(curve.tokens.min()), float(curve.tokens.max())
    left, right = first / 1.5, last * 1.5
    lowest = curve.time_per_token.min() if ideal is None else min(curve.time_per_token.min(),
                                                                   ideal.time_per_token.min())
    y_range = (lowest / 4, max(curve.time_per_token.max(), decode.time_per_token) * 4)
    chart = Canvas.new(360, (left, right), y_range, x_log=True, y_log=True, left=72, top=28,
                       label=f"{curve.model.name} on {curve.gpu.name}: time per token")
    switch = curve.arithmetic_from
    memory_end = right if switch is None else switch
    chart.span(left, memory_end, MEMORY, 0.10)
    chart.text(float(chart.x(memory_end)) - 8, chart.top + 6, "memory sets the time", colour=MEMORY,
               anchor="end", baseline="hanging", size=11)
    if switch is not None:
        chart.span(switch, right, COMPUTE, 0.10)
        chart.text(chart.right - 6, chart.top + 6, "arithmetic sets the time", colour=COMPUTE, anchor="end",
                   baseline="hanging", size=11)
    chart.vline(curve.ridge, NEUTRAL, dash="2 3", width=1.2)
    chart.text(float(chart.x(curve.ridge)) + 12, chart.bottom - 0.45 * (chart.bottom - chart.top),
               f"ridge: {_number(curve.ridge)} FLOP/byte", colour=NEUTRAL, size=10, rotate=True)
    entries = []
    if ideal is not None:
        shown = spread(len(ideal.tokens))
        chart.line(ideal.tokens[shown], ideal.time_per_token[shown], NEUTRAL, width=1.4, dash="6 4", gid="ideal")
        entries.append((NEUTRAL, "dashed", ideal.assumptions.label))
    shown = spread(len(curve.tokens))
    chart.line(curve.tokens[shown], curve.time_per_token[shown], PREFILL, width=2.2, gid="curve")
    entries.append((PREFILL, "line", curve.assumptions.label))
    chart.dot(decode.cost.tokens, decode.time_per_token, DECODE, radius=5, gid="decode")
    px, py = chart.at(decode.cost.tokens, decode.time_per_token)
    chart.text(px + 12, py - 4, f"decode step:\n{units.ms_significant(decode.time_per_token)} a token",
               colour=DECODE, size=11, baseline="bottom")
    for step in marks:
        chart.dot(step.cost.tokens, step.time_per_token, PREFILL, radius=4.5, square=True, gid="prefill")
        px, py = chart.at(step.cost.tokens, step.time_per_token)
        # Centred over the mark, unless that would run past an edge of the chart.
        anchor, shift = (("end", 8) if px > chart.right - 90 else ("start", -8) if px < chart.left + 90
                         else ("middle", 0))
        chart.text(px + shift, py - 14, f"{_number(step.cost.tokens)}-token prefill:\n"
                                        f"{units.ms_significant(step.time_per_token)} a token",
                   colour=PREFILL, anchor=anchor, size=11, baseline="bottom")
    chart.legend(entries, chart.left + 10, chart.bottom - 16 * len(entries))
    chart.frame()
    ticks = [t for t in (1, 4, 16, 64, 256, 1024, 4096, 16384) if first <= t <= last]
    chart.x_axis([(t, _number(t)) for t in ticks], "tokens in the pass")
    chart.y_axis([(v, _ms_tick(v)) for v in decades(*y_range)], "time per token")
    chart.title(f"{curve.model.name} on {curve.gpu.name}", anchor="middle")
    return chart.svg()


# --- Lesson 2: each user's KV cache ------------------------------------------------------
LINE_COLOURS = (PREFILL, DECODE, COMPUTE, MEMORY, "#9467bd", "#8c564b")


def _log_lines_chart(xs, lines, label, x_label, y_label, y_format, chosen_x, dashed=(), extra=(), dots=(),
                     floor=None, caption=""):
    """Lines (label -> values over ``xs``) on log-log axes, a grey line at ``chosen_x``, a legend.

    ``extra`` are more (label, values, colour, dash) lines left out of the legend's colour order;
    ``dots`` (x, y, colour) points; values at or below ``floor`` are left out (a line that ends).
    """
    xs = np.asarray(xs, dtype=float)
    series = [(name, np.asarray(ys, dtype=float)) for name, ys in lines.items()]
    every = np.concatenate([ys[np.isfinite(ys) & (ys > (floor or 0))] for _, ys in series]
                           + [np.asarray(v, dtype=float)[np.isfinite(v)] for _, v, _, _ in extra])
    # Nothing to draw (no user fits beside the weights, say): an empty frame with a note.
    low, high = (every.min() / 2, every.max() * 2) if every.size else (0.5, 10.0)
    chart = Canvas.new(360, (xs[0], xs[-1]), (low, high), x_log=True, y_log=True, left=76, top=30 if caption else 14,
                       label=label)
    if caption:
        chart.title(caption)
    shown = spread(len(xs))
    entries = []
    for (name, ys), colour in zip(series, LINE_COLOURS):
        keep = shown[np.isfinite(ys[shown]) & (ys[shown] > (floor or 0))]
        if keep.size:
            chart.line(xs[keep], ys[keep], colour, dash="6 4" if name in dashed else "", gid=name)
        entries.append((colour, "dashed" if name in dashed else "line", name))
    for name, ys, colour, dash in extra:
        ys = np.asarray(ys, dtype=float)
        chart.line(xs[shown], ys[shown], colour, width=1.2, dash=dash, gid=name)
    chart.vline(chosen_x, NEUTRAL)
    for x, y, colour in dots:
        if y > (floor or 0):
            chart.dot(x, y, colour)
    chart.legend(entries, chart.left + 10, chart.top + 12)
    if not every.size:
        chart.text((chart.left + chart.right) / 2, (chart.top + chart.bottom) / 2, "nothing fits beside the weights",
                   anchor="middle", baseline="middle")
    chart.frame()
    chart.x_axis([(v, _number(v)) for v in decades(xs[0], xs[-1])], x_label)
    chart.y_axis([(v, y_format(v)) for v in decades(low, high)], y_label)
    return chart.svg()


def cache_saving_chart(contexts, with_cache, without_cache, chosen, times=None, gpu_name="") -> SVG:
    """``plots.cache_saving_chart`` as SVG; ``times`` (a ``cache.CacheSavingTimes``) labels each line
    with its step's time on ``gpu_name``."""
    without_label, with_label = "without the cache: the whole sequence again", "with the cache: one new token"
    if times is not None:
        without_label += f", {units.ms(times.without_cache.time)} on {gpu_name}"
        with_label += f", {units.ms(times.with_cache.time)}"
    return _log_lines_chart(
        contexts, {without_label: without_cache, with_label: with_cache},
        "FLOPs of the next decode step, with the cache and without it", "tokens already in the sequence",
        "FLOPs of the next decode step", lambda f: f"1e{math.log10(f):.0f}", chosen.context_tokens,
        dots=[(chosen.context_tokens, chosen.without_cache.flops, PREFILL),
              (chosen.context_tokens, chosen.with_cache.flops, DECODE)])


def cache_size_chart(contexts, caches, weight_bytes, chosen_context) -> SVG:
    """``plots.cache_size_chart`` as SVG."""
    return _log_lines_chart(
        contexts, caches, "One conversation's KV cache against its length", "tokens in the conversation",
        "bytes of KV cache", lambda b: units.gb(b, max(0, -math.floor(math.log10(b / 1e9)))), chosen_context,
        extra=[(f"the weights: {units.gb(weight_bytes)}", np.full(len(contexts), weight_bytes), NEUTRAL, "2 3")])


def users_that_fit_chart(contexts, users, chosen_context, crossings=None, caption="") -> SVG:
    """``plots.users_that_fit_chart`` as SVG: solid, the users that fit; dashed, the batch whose
    caches weigh as much as the weights; ``caption`` names the GPU and its memory above."""
    extra = [(f"{name}: crossing", crossings[name], colour, "6 4")
             for name, colour in zip(users, LINE_COLOURS) if crossings and name in crossings]
    return _log_lines_chart(contexts, users, "Users whose caches fit on one GPU", "tokens each user holds",
                            "users that fit" + ("; dashed: caches = weights" if crossings else ""),
                            lambda u: _number(u) if u >= 1 else f"{u:g}", chosen_context, extra=extra, floor=0.5,
                            caption=caption)


def cached_batching_chart(users, costs, walls, chosen_users) -> SVG:
    """``plots.cached_batching_chart`` as SVG: each length's line ends where memory is full."""
    users = np.asarray(users)
    shown = {label: np.where(users <= walls[label], dollars, np.nan) if label in walls else dollars
             for label, dollars in costs.items()}
    return _log_lines_chart(users, shown, "Cost per million tokens, every user's cache read",
                            "users per pass (a line ends where memory is full)", "$ per million tokens",
                            lambda v: units.dollars(v, max(0, -math.floor(math.log10(v)))), chosen_users,
                            dashed=[label for label in costs if label not in walls])
