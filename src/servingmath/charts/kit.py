"""The drawing kit: every figure of the course is SVG text written with these pieces.

One palette (each colour a light and a dark shade), one type scale, one width: a chart is
``WIDTH`` user units wide and scales to its column, so at 400 px its text still reads at
about 12 px. Text is drawn in ``currentColor``; a coloured mark carries its light shade as
an attribute (what a viewer without style sheets shows) and a class that ``STYLE`` turns to
the dark shade on a dark page (the website's, JupyterLab's, VS Code's). Nothing here knows
what is drawn: values come placed on ``Scale``s, labels come formatted.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import numpy as np

WIDTH = 480
LEFT, RIGHT, TOP, BOTTOM = 84, 16, 14, 52
TICK, LABEL = 16, 17                 # the type scale: ticks and notes, axis names and titles
# Each colour by its role: (light page, dark page); both shades read as text on their page (contrast >= 4.5).
PALETTE = {"prefill": ("#1f63a6", "#79b8ff"), "decode": ("#c0302a", "#ff8a80"), "compute": ("#2b7a2f", "#6fdc75"),
           "memory": ("#a85400", "#f5a54a"), "neutral": ("#62666b", "#a8adb3"), "extra": ("#7a3fb0", "#c9a2ff"), "teal": ("#00727a", "#4dd0c8")}
PREFILL, DECODE, COMPUTE, MEMORY, NEUTRAL, EXTRA, TEAL = PALETTE
SERIES = (PREFILL, DECODE, COMPUTE, MEMORY, EXTRA, NEUTRAL)   # lines in a legend, in order
# The website's light and dark pages, (background, text), that every figure is read against (JupyterLab's are near).
PAGES = {"light": ("#ffffff", "#222832"), "dark": ("#14181e", "#ced6dd")}
_DARK = ('html[data-theme="dark"]', 'body[data-jp-theme-light="false"]', "body.vscode-dark")
STYLE = "".join(f"{page} .sm-f-{name}{{fill:{dark}}}{page} .sm-s-{name}{{stroke:{dark}}}"
                for name, (_, dark) in PALETTE.items() for page in _DARK) + \
    "".join(f"{page} .sm-ring{{stroke:#121212}}{page} .sm-card,{page} .sm-on{{fill:#121212}}" for page in _DARK) + \
    ".sm-dot{outline:none}.sm-dot:hover .sm-ring,.sm-dot:focus .sm-ring{stroke:currentColor;stroke-width:2.5}"


class SVG(str):
    """A figure's SVG text: inline HTML where a page can take it (it follows the page's colours), an image elsewhere."""

    def _repr_svg_(self):
        return str(self)

    _repr_html_ = _repr_svg_


def _paint(colour, how="fill"):
    """The attribute and class that give a mark ``colour`` (a palette name) as fill or stroke."""
    if colour in (None, "white"):   # the text's colour; or words on a coloured mark: white, or the dark page's colour
        return f'{how}="currentColor"' if colour is None else 'fill="#fff" class="sm-on"'
    return f'{how}="{PALETTE[colour][0]}" class="sm-{how[0]}-{colour}"'


def _f(value) -> str:
    return f"{float(value):.1f}"


@dataclass(frozen=True)
class Scale:
    """Data values -> user units along one axis, linear or logarithmic."""

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
    """The powers of ten from ``low`` to ``high``."""
    return [10.0 ** k for k in range(math.ceil(math.log10(low) - 1e-9), math.floor(math.log10(high) + 1e-9) + 1)]


def around(low, high):
    """The decades just outside ``low`` and ``high``: a log axis's ends."""
    return 10 ** math.floor(math.log10(low)), 10 ** math.ceil(math.log10(high))


def round_steps(low, high, count=5):
    """Round values (1, 2 or 5 × a power of ten apart) from ``low`` to ``high``, about ``count`` of them."""
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(power * m for m in (1, 2, 5, 10) if power * m >= raw)
    return [step * k for k in range(math.ceil(low / step), math.floor(high / step) + 1)]


# Advance widths in ems, rounded up, of DejaVu Sans (Linux's sans-serif, wider than Arial or Helvetica): 0.64 if unlisted.
_EMS = {c: em for em, chars in ((0.3, "ijlIJ'"), (0.34, " ,.’·:;/|\\"), (0.4, "f-()[]tr!⁰¹²³⁴⁵⁶⁷⁸⁹"), (0.55, '"*_`–°szc?'),
                                (0.62, "LFkvxyTPYoaeé"), (0.75, "KVXZBRCAUNH"), (0.82, "◇DGOQ&w"), (0.84, "#+<=>^~×÷≈≤≥→←"),
                                (1.0, "M★%mW@⋯—…")) for c in chars}


def text_width(text, size=TICK, bold=False):
    """How wide ``text`` is drawn in sans-serif at ``size``, ``bold`` or not (as wide as DejaVu Sans draws it)."""
    return size * sum(_EMS.get(c, 0.64) for c in str(text)) * (1.15 if bold else 1)


def text(x, y, words, colour=None, anchor="start", size=TICK, bold=False, turn=False, backed=False) -> str:
    """Words at (x, y) in user units; ``turn`` reads them upwards, ``backed`` sets them on a card (clear of any
    line drawn before them)."""
    extra = (' font-weight="bold"' if bold else "") + (f' transform="rotate(-90 {_f(x)} {_f(y)})"' if turn else "")
    width = text_width(words, size, bold)
    behind = card(x - {"end": width, "middle": width / 2}.get(anchor, 0) - 2, y - 0.8 * size, width + 4, size + 2)
    return ((behind if backed else "") + f'<text x="{_f(x)}" y="{_f(y)}" {_paint(colour)} font-size="{size}" '
            f'text-anchor="{anchor}"{extra}>{html.escape(str(words))}</text>')


def wrapped(x, y, words, colour=None, size=TICK, leading=18) -> tuple[str, int]:
    """Words from (x, y) broken into lines that end inside the figure; the markup and how many lines."""
    lines = [""]
    for word in str(words).split():
        joined = f"{lines[-1]} {word}".strip()
        if lines[-1] and x + text_width(joined, size) > WIDTH - RIGHT:
            lines.append(word)
        else:
            lines[-1] = joined
    return "".join(text(x, y + leading * k, line, colour, size=size) for k, line in enumerate(lines)), len(lines)


def legend(y, rows, swatch=False) -> tuple[str, float]:
    """Rows of (colour, words) from ``y`` down, each wrapped inside the figure and led by a square of its colour
    if ``swatch``; the markup and where the next thing can go."""
    parts = []
    for colour, words in rows:
        markup, lines = wrapped(LEFT + 20 if swatch else LEFT, y, words, colour)
        parts.append((rect(LEFT, y - 11, 12, 12, colour) if swatch else "") + markup)
        y += 18 * lines
    return "".join(parts), y


def clip(start, end, box):
    """The part of the stretch from ``start`` to ``end`` (points) inside ``box`` (x0, y0, x1, y1), or None."""
    low, high = 0.0, 1.0
    for origin, step, least, most in ((start[0], end[0] - start[0], box[0], box[2]),
                                      (start[1], end[1] - start[1], box[1], box[3])):
        if step == 0:
            if not least <= origin <= most:
                return None
        else:
            a, b = sorted(((least - origin) / step, (most - origin) / step))
            low, high = max(low, a), min(high, b)
    return None if low > high else tuple(start if t == 0 else end if t == 1 else
                                         (start[0] + (end[0] - start[0]) * t, start[1] + (end[1] - start[1]) * t)
                                         for t in (low, high))


def card(x, y, width, height) -> str:
    """A rectangle in the page's own colour, light or dark: what is drawn under it is hidden, what is drawn
    on it reads clear of every line."""
    return f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(width)}" height="{_f(height)}" fill="#fff" class="sm-card"/>'


def rect(x, y, width, height, colour, opacity=1.0) -> str:
    shade = f' fill-opacity="{opacity}"' if opacity != 1 else ""
    return (f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(max(width, 0))}" height="{_f(max(height, 0))}" '
            f'{_paint(colour)}{shade}/>')


def figure(body, height, title="", ident="", described="", style=True) -> SVG:
    """A whole SVG: ``body`` (markup) on a ``WIDTH``-wide canvas, named by ``title`` or the element ``ident``;
    ``style=False`` leaves out the dark shades' style sheet (where the page holds it once)."""
    name = f'aria-labelledby="{ident}-title"' if ident else f'aria-label="{html.escape(title)}"'
    about = f' aria-describedby="{described}"' if described else ""
    return SVG(f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {int(height)}" width="100%" '
            f'style="max-width: {WIDTH + 20}px; overflow: visible" class="sm-figure" role="img" {name}{about} '
            f'font-family="sans-serif" fill="currentColor">' + (f"<style>{STYLE}</style>" if style else "")
               + f"{body}</svg>")


@dataclass
class Panel:
    """One plotting area: two scales, their ticks ((value, text) pairs) and names. Each method returns markup."""

    x: Scale
    y: Scale
    x_label: str = ""
    y_label: str = ""
    x_ticks: list = field(default_factory=list)
    y_ticks: list = field(default_factory=list)
    show_x: bool = True

    @classmethod
    def make(cls, x_range, y_range, top=TOP + 6, height=250, x_log=False, y_log=False, x_label="", y_label="",
             show_x=True, left=LEFT) -> "Panel":
        """A panel the chart's width across, ``height`` tall from ``top``."""
        return cls(Scale(*x_range, left, WIDTH - RIGHT, x_log), Scale(*y_range, top + height, top, y_log),
                   x_label, y_label, show_x=show_x)

    @property
    def bottom(self):
        """Where the next thing can go below the panel and its axis text."""
        return self.y.start + (BOTTOM if self.show_x and self.x_label else 30 if self.show_x else 8)

    def axes(self) -> str:
        left, right, low, top = self.x.start, self.x.end, self.y.start, self.y.end
        parts = []
        for value, label in self.y_ticks:
            y = float(self.y(value))
            parts.append(f'<line x1="{left}" x2="{right}" y1="{_f(y)}" y2="{_f(y)}" stroke="currentColor" '
                         f'stroke-opacity="0.18"/>' + text(left - 5, y + 4.5, label, anchor="end"))
        for value, label in self.x_ticks:
            x, half = float(self.x(value)), text_width(label) / 2   # a number under its line, inside the figure
            parts.append(f'<line x1="{_f(x)}" x2="{_f(x)}" y1="{top}" y2="{low}" stroke="currentColor" '
                         f'stroke-opacity="0.18"/>' + (text(min(max(x, half), WIDTH - half), low + 20, label,
                                                            anchor="middle") if self.show_x else ""))
        parts.append(f'<rect x="{left}" y="{top}" width="{right - left}" height="{low - top}" fill="none" '
                     f'{_paint(NEUTRAL, "stroke")}/>')
        if self.show_x and self.x_label:
            parts.append(text((left + right) / 2, low + 40, self.x_label, anchor="middle", size=LABEL))
        if self.y_label:
            parts.append(text(16, (top + low) / 2, self.y_label, anchor="middle", size=LABEL, turn=True))
        return "".join(parts)

    def line(self, xs, ys, colour, dashed=False, width=2.5) -> str:
        """The line through (xs, ys), cut where it leaves the panel (it never runs through the axes' words)."""
        box, pieces = (self.x.start, self.y.end, self.x.end, self.y.start), []
        corners = [tuple(map(float, corner)) for corner in zip(self.x(xs), self.y(ys))]
        for start, end in filter(None, (clip(a, b, box) for a, b in zip(corners, corners[1:]))):
            if pieces and pieces[-1][-1] == start:
                pieces[-1].append(end)
            else:
                pieces.append([start, end])
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        return "".join(f'<polyline points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in piece)}" fill="none" '
                       f'{_paint(colour, "stroke")} stroke-width="{width}"{dash}/>' for piece in pieces)

    def marker(self, x, y, colour, radius=6) -> str:
        """A dot at (x, y), ringed in the page's colour."""
        return (f'<circle cx="{_f(self.x(x))}" cy="{_f(self.y(y))}" r="{radius}" fill="{PALETTE[colour][0]}" '
                f'stroke="#fff" stroke-width="2" class="webchart-marker sm-f-{colour} sm-ring"/>')

    def dot(self, x, y, colour, note, kind="", tab_stop=True) -> str:
        """A point (11 px in a 24 px target) to hover, focus or tap, ringed while its ``note`` is shown;
        ``tab_stop=False`` keeps it out of the Tab order (a tap still focuses it) where a table lists the rows."""
        words, cx, cy = html.escape(note, quote=True), _f(self.x(x)), _f(self.y(y))
        return (f'<g class="sm-dot {kind}" tabindex="{0 if tab_stop else -1}" role="img" aria-label="{words}" data-note='
                f'"{words}"><title>{words}</title><circle cx="{cx}" cy="{cy}" r="12" fill="transparent"/><circle cx="{cx}" '
                f'cy="{cy}" r="5.5" fill="{PALETTE[colour][0]}" stroke="#fff" stroke-width="1" class="sm-f-{colour} sm-ring"/></g>')

    def symbol(self, x, y, marker, filled, note) -> str:
        """A star (``"*"``) or a diamond (``"D"``), filled in the text's colour or open, with its ``note``."""
        px, py, words = float(self.x(x)), float(self.y(y)), html.escape(note, quote=True)
        if marker == "*":
            corners = [(px + r * math.sin(k * math.pi / 5), py - r * math.cos(k * math.pi / 5))
                       for k, r in zip(range(10), [11, 4.5] * 5)]
        else:
            corners = [(px, py - 9), (px + 9, py), (px, py + 9), (px - 9, py)]
        fill = 'fill="currentColor"' if filled else 'fill="none"'
        return (f'<polygon points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in corners)}" {fill} stroke="currentColor" '
                f'stroke-width="1.5" tabindex="0" role="img" aria-label="{words}" data-note="{words}"><title>{words}'
                f'</title></polygon>')

    def area(self, xs, ys, colour, opacity=0.12) -> str:
        """The polygon through (xs, ys), shaded."""
        points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(self.x(xs), self.y(ys)))
        return f'<polygon points="{points}" {_paint(colour)} fill-opacity="{opacity}"/>'

    def label(self, x, y, words, colour=None, anchor="start", size=TICK, backed=False) -> str:
        """Words at data coordinates (x, y), on a card if ``backed``."""
        return text(self.x(x), self.y(y), words, colour, anchor, size, backed=backed)

    def shade(self, x0, x1, colour, opacity=0.08) -> str:
        """A band the panel's height between two x values."""
        a, b = sorted((float(self.x(x0)), float(self.x(x1))))
        a, b = max(a, self.x.start), min(b, self.x.end)
        return rect(a, self.y.end, b - a, self.y.start - self.y.end, colour, opacity) if b > a else ""

    def vertical(self, x, words="", colour=COMPUTE, low=False) -> str:
        """A dashed line up the panel at ``x``, named at its top (or foot, ``low``) on the side where it fits, else
        across it on a card."""
        px = float(self.x(x))
        width = text_width(words)
        anchor, tx = (("start", px + 5) if px + 5 + width <= self.x.end else
                      ("end", px - 5) if px - 5 - width >= self.x.start else ("end", self.x.end - 4))
        line = (f'<line x1="{_f(px)}" x2="{_f(px)}" y1="{self.y.end}" y2="{self.y.start}" {_paint(colour, "stroke")} '
                f'stroke-width="1.5" stroke-dasharray="4 3"/>')
        return line + (text(tx, self.y.start - 7 if low else self.y.end + 16, words, colour, anchor,
                            backed=tx == self.x.end - 4) if words else "")
