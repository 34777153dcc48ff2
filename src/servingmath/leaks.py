"""The figures a page prints, and whether one of them, or two a step apart, give a problem's answer away.

``figures(text)`` reads each figure of a page's visible text with its unit; ``Printed(pages)`` holds the figures
of some pages and says, for an answer in the units a check names and within its tolerance, which of them give it
away (``direct``: the figure itself, converted, or rounded; ``one_step``: a ratio, sum or difference of two
figures one step from it). ``variants`` draws no student a problem whose answer the lesson's pages give away;
``tests/test_answer_leak.py`` holds every problem, practice and graded, to the same rule.
"""
from __future__ import annotations

import functools
import math
import re
from functools import lru_cache

import numpy as np

# A unit after a figure: its kind and its size in the kind's base unit.
UNITS = [
    (r"µs|microseconds?", "time", 1e-6), (r"ms|milliseconds?", "time", 1e-3), (r"s|seconds?|sec", "time", 1.0),
    (r"minutes?", "time", 60.0), (r"hours?", "time", 3600.0),
    (r"TB/s|TB a second", "bandwidth", 1e12), (r"GB/s|GB a second", "bandwidth", 1e9),
    (r"TiB", "bytes", 2.0**40), (r"GiB", "bytes", 2.0**30), (r"MiB", "bytes", 2.0**20), (r"KiB", "bytes", 2.0**10),
    (r"TB", "bytes", 1e12), (r"GB", "bytes", 1e9), (r"MB", "bytes", 1e6), (r"kB|KB", "bytes", 1e3),
    (r"bytes?", "bytes", 1.0),
    (r"%|per ?cent", "share", 0.01),
    (r"tokens?/s|tokens? a second|tokens? per second", "token rate", 1.0),
    (r"req(?:uests?)?/s|requests? a second|requests? per second", "request rate", 1.0),
    (r"T ?FLOP/s|trillion (?:dense )?(?:16-bit )?FLOPs? a second", "flop rate", 1e12),
    (r"FLOPs?/byte|FLOPs? (?:a|per) byte|FLOP a byte", "intensity", 1.0),
    (r"T ?FLOPs?|trillion FLOPs?", "flops", 1e12), (r"FLOPs?", "flops", 1.0),
    (r"trillion", "count", 1e12), (r"billion", "count", 1e9), (r"million", "count", 1e6),
    (r"users?", "users", 1.0), (r"tokens?", "tokens", 1.0), (r"blocks?", "blocks", 1.0), (r"steps?", "steps", 1.0),
    (r"passes", "passes", 1.0), (r"GPUs?|H100s?", "gpus", 1.0), (r"times|×", "ratio", 1.0),
    (r"bits?", "bits", 1.0), (r"layers?", "layers", 1.0), (r"heads?", "heads", 1.0),
]
UNIT = re.compile(r"\s?(" + "|".join(f"(?P<u{index}>{pattern})" for index, (pattern, _, _) in enumerate(UNITS))
                  + r")(?![\w/])")
NUMBER = re.compile(r"(?<![\w.,/^`])(?<!\d-)(\$)?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\d,]\d|\.\d|[\w]|-\d)")
# A number that names a thing rather than measures it: "Step 4", "Part 2", "Problem 2.1", a list's "13. ".
LABEL = re.compile(r"(?:Step|Part|Problem|Example|[Ll]esson|[Qq]uestion|Plate|XXIII\.|Table|Figure|Chapter|Q)\s?$")
LIST_ITEM = re.compile(r"\.\s")
COMPOUND = re.compile(r"-([A-Za-z]+)")


@lru_cache(maxsize=None)
def _unit(text: str) -> tuple[str, float] | None:
    match = UNIT.fullmatch(" " + text)
    if not match:
        return None
    return UNITS[int(next(name for name, value in match.groupdict().items() if value)[1:])][1:]


def figures(text: str) -> list[tuple]:
    """Each figure printed in ``text``: (value as printed, its unit's kind or None, the unit's size, half a unit
    of its last printed digit, its significant digits, where it stands, its context)."""
    found = []
    for match in NUMBER.finditer(text):
        digits, decimals = match.group(2).replace(",", ""), (match.group(3) or "")
        value = float(digits + decimals)
        line_start = text.rfind("\n", 0, match.start()) + 1
        if LABEL.search(text, max(0, match.start() - 12), match.start()) or (
                not text[line_start:match.start()].strip(" |") and LIST_ITEM.match(text, match.end())):
            continue
        kind, size = ("money", 1.0) if match.group(1) else (None, 1.0)
        after = UNIT.match(text, match.end())
        compound = COMPOUND.match(text, match.end())
        if kind is None and after:
            kind, size = _unit(after.group(1))
        elif kind is None and compound:    # "a 300-token reply", "a 64-core GPU"
            kind, size = _unit(compound.group(1)) or (f"{compound.group(1)}", 1.0)
        significant = len((digits + decimals[1:]).lstrip("0"))
        half = 0.5 * 10.0 ** -(len(decimals) - 1 if decimals else 0)
        context = text[max(0, match.start() - 40): match.end() + 25].replace("\n", " ")
        found.append((value, kind, size, half, significant, match.start(), context))
    return found


# The units a check names, as a kind and a size (the check's own ``units=``).
@lru_cache(maxsize=None)
def answer_unit(units: str) -> tuple[str | None, float]:
    units = units.strip()
    if units.startswith(("dollar", "$")):
        return "money", 1.0
    if "per cent" in units or units.startswith("%"):
        return "share", 0.01
    if units.startswith(("times", "×")):
        return "ratio", 1.0
    match = UNIT.search(" " + units)
    return _unit(match.group(1)) if match else (None, 1.0)


def _rounded(value: float, figures_: int) -> float:
    if value == 0:
        return 0.0
    return round(value, figures_ - 1 - math.floor(math.log10(abs(value))))


def _precise_digits(value: float) -> int:
    """Significant digits of a printed figure, a whole number's trailing zeros not counted (800 has one)."""
    text = f"{value:.10g}"
    text = text.rstrip("0").rstrip(".") if "." not in text else text.replace(".", "").rstrip("0")
    return len(text.lstrip("0"))


# Two figures count as one step from an answer only within this many characters of each other: one
# paragraph, one table, one output.
NEARBY = 800


class Printed:
    """The figures of some text, arranged for quick look-ups: alone, and two by two within a page.

    A figure printed in the answer's kind of unit (or converted: 1.02 s for 1,020 ms) gives the answer away
    when the check would mark it right, or when it is the answer rounded to 2 or 3 significant figures. A
    figure without a unit (a table's column, "61 if reserved") gives it away when it is the answer rounded at
    the figure's own precision with three significant digits or more, or the answer itself with two or more
    (a bare "8" or "12" is everywhere: a step's number, a source's).

    Two figures are one step from the answer when both have three significant digits or more (a whole
    number's trailing zeros not counted), stand within ``NEARBY`` characters of each other on one page, are
    in the same units, and combine to the answer within the check's tolerance and their own rounding."""

    def __init__(self, sources: dict[str, str]):
        self.items = []      # (value, kind, size, half unit, significant digits, position, where, context)
        for where, text in sources.items():
            self.items += [(*figure[:6], where, figure[6]) for figure in figures(text)]
        column = lambda index: np.array([item[index] for item in self.items], dtype=float)  # noqa: E731
        self.values, self.sizes, self.halves, self.significant = column(0), column(2), column(3), column(4)
        self.positions = column(5)
        self.base = self.values * self.sizes
        self.kinds = np.array([item[1] or "" for item in self.items], dtype=object)

    def _show(self, index) -> str:
        return f"{self.items[index][6]}: «{self.items[index][7]}»"

    def direct(self, answer: float, rel: float, unit: str) -> list[str]:
        """Printed figures that give the answer away (see the class), a count rounded either way from one, and a rate
        one over a printed time."""
        if not len(self.items) or answer == 0:
            return []
        tolerance = max(rel, 1e-9)
        kind, size = answer_unit(unit)
        hit = np.zeros(len(self.items), dtype=bool)
        if kind is not None:
            same = self.kinds == kind
            base = answer * size
            hit |= same & (np.abs(self.base - base) <= tolerance * abs(base))
            for figures_ in (2, 3):
                rounded = _rounded(base, figures_)
                hit |= same & (np.abs(self.base - rounded) <= 1e-6 * abs(rounded))
        loose = (self.kinds == "") if kind is not None else np.ones(len(self.items), dtype=bool)
        rounding = np.abs(self.values - answer) <= self.halves * (1 + 1e-9)
        exact = np.abs(self.values - answer) <= tolerance * abs(answer)
        equal = np.abs(self.values - answer) <= 1e-9 * abs(answer)
        hit |= loose & (((self.significant >= 3) & rounding) | ((self.significant >= 2) & equal))
        if rel == 0 and float(answer).is_integer():   # a count: a printed figure's value rounded up or down
            hit |= (loose | (self.kinds == (kind or ""))) & (self.significant >= 3) & (self.values >= 100) \
                & (np.abs(self.values - answer) < self.halves + 1)
        if kind in (None, "token rate", "request rate"):   # a rate: one over a printed time
            times = self.kinds == "time"
            with np.errstate(divide="ignore"):
                hit |= times & (self.significant >= 3) & (np.abs(1 / self.base - answer * size)
                                                         <= np.minimum(tolerance, 1.5 * self.halves / self.values)
                                                         * abs(answer * size))
        return [self._show(i) for i in np.flatnonzero(hit)]

    def one_step(self, answer: float, rel: float, unit: str) -> list[str]:
        """Two figures of one page, in the same units, near each other, with three significant digits or more,
        whose ratio, sum or difference is the answer within the check's tolerance and the figures' rounding."""
        if answer == 0:
            return []
        kind, size = answer_unit(unit)
        tolerance = max(rel, 1e-9)
        found = []
        for (sign, result_kind), (values, errors, small, first, second) in self.pairs.items():
            if (sign == "÷" and kind not in (None, "ratio")) or (sign != "÷" and kind != result_kind):
                continue
            target = answer if sign == "÷" else answer * size
            low, high = sorted((target * (1 - tolerance), target * (1 + tolerance)))
            for index in range(np.searchsorted(values, low, "left"), np.searchsorted(values, high, "right")):
                error = errors[index] * (abs(target) if sign == "÷" else 1)
                if abs(values[index] - target) <= min(tolerance * abs(target), error) and (
                        sign == "÷" or small[index] >= 0.05 * abs(target)):
                    a, b = self.items[first[index]], self.items[second[index]]
                    found.append(f"{a[6]}: {a[0]:g} {sign} {b[0]:g} «{a[7]}» «{b[7]}»")
        return found

    @functools.cached_property
    def pairs(self) -> dict:
        """Every ratio, sum and difference of two figures one step apart (see the class), sorted, with the error
        their rounding allows (relative for a ratio, absolute for a sum), the smaller operand, and the two."""
        groups: dict = {}
        for index, item in enumerate(self.items):
            if item[1] not in (None, "count", "ratio") and _precise_digits(item[0]) >= 3 and item[0] != 0:
                groups.setdefault((item[6], item[1]), []).append(index)
        built: dict = {}
        for (where, kind), indices in groups.items():
            indices = np.array(indices)
            base, halves = self.base[indices], self.halves[indices] * self.sizes[indices]
            left, right = base[:, None], base[None, :]
            near = (np.abs(self.positions[indices][:, None] - self.positions[indices][None, :]) <= NEARBY) \
                & (left != right)
            a, b = np.nonzero(near)
            relative = halves / np.abs(base)
            small = np.minimum(np.abs(base[a]), np.abs(base[b]))
            absolute = 1.5 * (halves[a] + halves[b])
            for sign, values, errors in (("÷", base[a] / base[b], 1.5 * (relative[a] + relative[b])),
                                         ("+", base[a] + base[b], absolute), ("−", base[a] - base[b], absolute)):
                built.setdefault((sign, kind), []).append((values, errors, small, indices[a], indices[b]))
        pairs = {}
        for key, parts in built.items():
            values, errors, small, first, second = (np.concatenate(column) for column in zip(*parts))
            order = np.argsort(values)
            pairs[key] = (values[order], errors[order], small[order], first[order], second[order])
        return pairs


