"""No problem can be answered by reading the pages: every practice problem and 1,000 students' graded ones.

For each problem of each problem notebook (``solutions/``), practice and graded, the expected answer is
compared with every figure a reader sees on the pages of the same lesson and its plate (its parts, its
wrap-up and index, the plate, the course's front page: prose with every glued value in place, printed
output, tables, the quiz, each chart's readouts at its first setting) and with the figures of the same
notebook above the problem. A figure gives an answer away when a student who typed it would be marked
right (the check's tolerance, in the problem's units or converted, as ms for s), when it is the answer
rounded to 2 or 3 significant figures, or when the answer is one division, product, sum or difference
away from two figures of one page in the same units.

A page's visible text is computed here, not read from the built site: each page's code runs as the
book runs it (glue calls captured, printed and displayed output kept, cells tagged ``remove-output``
or ``remove-cell`` dropped, solution and quiz dropdowns left folded), and is kept on disk under
``SERVINGMATH_RESULTS`` (as the package keeps its simulations), filed under a digest of the page and
the package, so a run after the first reads it back.

Graded answers depend on a few of a student's drawn numbers: each problem's answer is computed once for
each distinct set of the numbers it reads (found by recording which ones it reads), not once a student.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import io
import json
import math
import os
import re
import sys
from functools import lru_cache
from pathlib import Path

import jupytext
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import variant_answers  # noqa: E402
from make_exercises import checks_in  # noqa: E402

from servingmath import variants  # noqa: E402
from servingmath._kept import package_digest  # noqa: E402

STUDENTS = [f"S{number:05d}" for number in range(1000)]
FRONT_PAGE = "index.md"
LESSON_PAGES = {
    "lesson-1": sorted((ROOT / "chapters/lesson-1").glob("*.md")) + [ROOT / "chapters/plates/xxiii-1-prefill-and-decode.md"],
    "lesson-2": sorted((ROOT / "chapters/lesson-2").glob("*.md")) + [ROOT / "chapters/plates/xxiii-2-the-kv-cache.md"],
    "lesson-3": sorted((ROOT / "chapters/lesson-3").glob("*.md"))
    + [ROOT / "chapters/plates/xxiii-4-continuous-batching.md"],
}
PLATE_LESSON = {"plate-xxiii-1": "lesson-1", "plate-xxiii-2": "lesson-2", "plate-xxiii-4": "lesson-3"}
NOTEBOOKS = sorted(path.stem for path in (ROOT / "solutions").glob("*.md"))


def lesson_of(notebook: str) -> str:
    return PLATE_LESSON.get(notebook) or notebook.rsplit("-part-", 1)[0]


# -- what a reader sees --------------------------------------------------------------------------------
GLUE_INLINE = re.compile(r"\{glue(?::text|:md|:)?\}`([^`]+)`")
GLUE_BLOCK = re.compile(r"^```\{glue(?::md|:figure)?\}\s*(\S+)[^\n]*\n(?::[^\n]*\n)*```", flags=re.M)
ROLE = re.compile(r"\{(?:term|doc|ref|numref|eq|math|abbr)\}`([^`<]*?)(?:\s*<[^`]*>)?`")
CITE = re.compile(r"\{cite(?::[a-z]+)?\}`[^`]*`")
FOLDED = [re.compile(r"```\{solution-start\}.*?```\{solution-end\}\s*```", flags=re.S),
          re.compile(r"^(:{3,})\{dropdown\}.*?^\1\s*$", flags=re.S | re.M),
          re.compile(r"^```\{dropdown\}.*?^```\s*$", flags=re.S | re.M),
          re.compile(r"^```\{admonition\}[^\n]*\n:class: dropdown.*?^```\s*$", flags=re.S | re.M)]
LINK_TARGET = re.compile(r"\]\([^)]*\)|<https?://[^>]*>|https?://\S+")


def _text_of(value) -> str:
    """What a cell's value shows as text: Markdown, HTML without tags, a chart's readouts, a number."""
    if value is None:
        return ""
    readouts = getattr(value, "readouts_at", None)
    if readouts is not None and hasattr(value, "default"):
        return "\n".join(f"{name}: {text}" for name, text in readouts(**value.default).items())
    for method in ("_repr_markdown_", "_repr_html_"):
        shown = getattr(value, method, None)
        if shown is not None:
            try:
                text = shown()
            except Exception:  # noqa: BLE001 - a value that cannot show itself shows nothing
                continue
            if isinstance(text, tuple):
                text = text[0]
            if isinstance(text, str):
                return re.sub(r"<[^>]+>", " ", text) if method == "_repr_html_" else text
    data = getattr(value, "data", None)
    if isinstance(data, str):
        return data
    if isinstance(value, (int, float, str, tuple, list, np.number)):
        return str(value)
    return ""


def _cell_tags(cell) -> set:
    return set(cell.metadata.get("tags", []))


def _run_cell(source: str, namespace: dict, shown: list):
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    tree = ast.parse("\n".join(lines))
    last = tree.body[-1] if tree.body else None
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        if isinstance(last, ast.Expr):
            exec(compile(ast.Module(tree.body[:-1], []), "<cell>", "exec"), namespace)
            value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)
        else:
            exec(compile(tree, "<cell>", "exec"), namespace)
            value = None
    return printed.getvalue() + "\n".join(shown) + "\n" + _text_of(value)


def _render(path: Path) -> dict:
    """The page as read: its blocks of prose and output in order, glue in place, folded parts left out."""
    import IPython.display
    import myst_nb

    glued, blocks, shown = {}, [], []

    def glue(name, value, display=True):
        glued[name] = _text_of(value)
        if display:
            shown.append(glued[name])

    def display(*values, **_):
        shown.extend(_text_of(value) for value in values)

    saved = myst_nb.glue, IPython.display.display
    myst_nb.glue, IPython.display.display = glue, display
    namespace = {"__name__": "__page__"}
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        for cell in jupytext.read(path).cells:
            if cell.cell_type == "markdown":
                blocks.append(["md", cell.source])
                continue
            shown.clear()
            output = _run_cell(cell.source, namespace, shown)
            tags = _cell_tags(cell)
            if not tags & {"remove-cell", "remove-input"}:
                blocks.append(["code", cell.source])
            if not tags & {"remove-cell", "remove-output"}:
                blocks.append(["out", output])
    finally:
        myst_nb.glue, IPython.display.display = saved
        os.chdir(cwd)
    text = "\n".join(text for kind, text in blocks if kind != "code")
    # Folded parts hold their glue too: fill in glue first, then fold what the reader must click to open.
    for _ in range(2):
        text = GLUE_BLOCK.sub(lambda match: glued.get(match.group(1), ""), text)
        text = GLUE_INLINE.sub(lambda match: glued.get(match.group(1), match.group(0)), text)
    return {"text": visible(text), "code": "\n".join(text for kind, text in blocks if kind == "code")}


def visible(text: str) -> str:
    """Markdown as the reader sees it: no folded dropdowns, roles as their words, no link targets or citations."""
    for folded in FOLDED:
        text = folded.sub("\n", text)
    text = ROLE.sub(lambda match: match.group(1), text)
    text = CITE.sub("", text)
    text = LINK_TARGET.sub("]", text)
    return re.sub(r"^:[a-z-]+:.*$", "", text, flags=re.M)   # a directive's options


def _kept_folder() -> Path | None:
    folder = os.environ.get("SERVINGMATH_RESULTS")
    return Path(folder) / "pages" if folder and os.path.isabs(folder) else None


@lru_cache(maxsize=None)
def page_text(path: Path) -> str:
    """A page's visible text, read back from disk when this page and the package have run before."""
    digest = hashlib.sha256(path.read_bytes() + package_digest().encode()).hexdigest()[:20]
    folder = _kept_folder()
    kept = folder / f"{path.stem}-{digest}.json" if folder else None
    if kept is not None and kept.is_file():
        return json.loads(kept.read_text(encoding="utf-8"))["text"]
    text = _render(path)["text"]
    if kept is not None:
        kept.parent.mkdir(parents=True, exist_ok=True)
        for old in kept.parent.glob(f"{path.stem}-*.json"):
            old.unlink(missing_ok=True)
        temporary = kept.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"page": str(path.relative_to(ROOT)), "text": text}), encoding="utf-8")
        temporary.replace(kept)
    return text


# -- figures -----------------------------------------------------------------------------------------
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
            hit |= (loose | (self.kinds == (kind or ""))) & (self.significant >= 3) \
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


@lru_cache(maxsize=None)
def lesson_printed(lesson: str) -> Printed:
    pages = LESSON_PAGES[lesson] + [ROOT / FRONT_PAGE]
    return Printed({str(page.relative_to(ROOT)): page_text(page) for page in pages})


# -- the problem notebooks ------------------------------------------------------------------------------
PROBLEM_HEADING = re.compile(r"^## Problem (\S+) ·", flags=re.M)


@lru_cache(maxsize=None)
def notebook_parts(notebook: str) -> list[tuple[str | None, str]]:
    """The practice notebook as read, in order: (the problem a piece of text belongs to, or None, the text).
    Solution blocks are empty there and check cells print nothing until answered; set-up cells' output shows."""
    namespace = {"__name__": "__notebook__"}
    parts, label = [], None
    for cell in jupytext.read(ROOT / "solutions" / f"{notebook}.md").cells:
        if cell.cell_type == "markdown":
            for piece in re.split(r"(?=^## Problem \S+ ·)", cell.source, flags=re.M):
                heading = PROBLEM_HEADING.match(piece)
                label = heading.group(1) if heading else label
                parts.append((label, visible(piece)))
            continue
        if "BEGIN SOLUTION" in cell.source or "check(answer" in cell.source:
            continue
        parts.append((label, _run_cell(cell.source, namespace, [])))
    return parts


def _above(notebook: str, label: str) -> list[str]:
    text = []
    for part_label, piece in notebook_parts(notebook):
        if part_label == label:
            break
        text.append(piece)
    return text


@lru_cache(maxsize=None)
def above_printed(notebook: str, label: str) -> Printed:
    """The figures of the notebook above ``label`` outside its templated statements (the same for every student)."""
    text = "\n".join(_above(notebook, label))
    if notebook in variants.TEMPLATES:
        practice = variants.practice(notebook)
        for other in variants.TEMPLATES[notebook].statements:
            text = text.replace(variants.fill(notebook, other, practice), "\n")
    return Printed({"the notebook": text})


def statements_above(notebook: str, label: str, numbers: dict) -> str:
    """The statements of the problems above ``label``, with these numbers."""
    statements = variants.TEMPLATES[notebook].statements
    shown = {part_label for part_label, _ in notebook_parts(notebook)[:len(_above(notebook, label))]}
    placed = {key: variants._placed(value) for key, value in numbers.items()}
    return "\n".join(statements[other].format_map(placed) for other in statements if other in shown and other != label)


@lru_cache(maxsize=None)
def practice_checks(notebook: str) -> list[tuple[str, object, float, str]]:
    """(label, expected answer, tolerance, units) for every check of the practice notebook."""
    return [(label, expected, float(keywords.get("rel", 0.02)), keywords.get("units", ""))
            for label, expected, keywords in checks_in(ROOT / "solutions" / f"{notebook}.md")]


@lru_cache(maxsize=None)
def on_pages(lesson: str, answer: float, rel: float, unit: str) -> tuple[str, ...]:
    pages = lesson_printed(lesson)
    return tuple(pages.direct(answer, rel, unit) + pages.one_step(answer, rel, unit))


def leaks(notebook: str, label: str, answer, rel: float, unit: str, statements: str | None = None) -> list[str]:
    """Where ``answer`` is given away: the lesson's pages (alone or one step away), or the notebook above
    (its fixed text, and the statements above with the student's numbers where ``statements`` is given)."""
    if isinstance(answer, str) or isinstance(answer, bool):
        return []
    found = list(on_pages(lesson_of(notebook), float(answer), rel, unit))
    notebook_above = [above_printed(notebook, label)]
    if statements is not None:
        notebook_above.append(Printed({"the statements above": statements}))
    elif notebook in variants.TEMPLATES:
        notebook_above.append(Printed({"the statements above": statements_above(
            notebook, label, variants.practice(notebook))}))
    found += [f"above it: {hit}" for printed in notebook_above for hit in printed.direct(answer, rel, unit)]
    return found


# -- graded answers, once for each distinct set of the numbers a problem reads ------------------------
class _Reading(dict):
    def __init__(self, numbers, read):
        super().__init__(numbers)
        self.read = read

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)


_READS: dict = {}
_ANSWERS: dict = {}


@lru_cache(maxsize=None)
def student_numbers(notebook: str, student: str) -> dict:
    return variants.numbers(notebook, student)


def graded_answer(notebook: str, label: str, numbers: dict):
    """``variant_answers``' answer for these numbers, computed once for each distinct set of those it reads."""
    read = _READS.setdefault((notebook, label), set())
    key = (notebook, label, tuple(sorted((name, repr(numbers[name])) for name in read)))
    if key not in _ANSWERS or not read:
        reading = _Reading(numbers, read)
        value = variant_answers.ANSWERS[notebook][label](reading)
        value = value if isinstance(value, str) else float(value)
        _ANSWERS[(notebook, label, tuple(sorted((name, repr(numbers[name])) for name in read)))] = value
        return value
    return _ANSWERS[key]


@lru_cache(maxsize=None)
def graded_answers(notebook: str, label: str) -> list:
    return [graded_answer(notebook, label, student_numbers(notebook, student)) for student in STUDENTS]


def templated() -> list[tuple[str, str]]:
    return [(notebook, label) for notebook in NOTEBOOKS if notebook in variants.TEMPLATES
            for label in variants.TEMPLATES[notebook].statements]


def check_of(notebook: str, label: str) -> tuple[object, float, str]:
    for found, expected, rel, unit in practice_checks(notebook):
        if found == label:
            return expected, rel, unit
    raise KeyError(f"{notebook} has no check labelled {label!r}")


# -- the tests ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_no_practice_answer_can_be_read_off_the_pages(notebook):
    found = []
    for label, expected, rel, unit in practice_checks(notebook):
        found += [f"Problem {label} ({expected!r} {unit}): {where}" for where in leaks(notebook, label, expected, rel, unit)]
    assert not found, f"{notebook}: {len(found)} answers given away:\n" + "\n".join(found)


@pytest.mark.parametrize("notebook", sorted(variants.TEMPLATES))
def test_no_graded_answer_can_be_read_off_the_pages(notebook):
    """Each of 1,000 students' answers, against the pages and the student's own notebook above the problem."""
    found = []
    for label in variants.TEMPLATES[notebook].statements:
        _, rel, unit = check_of(notebook, label)
        seen = {}
        for student, answer in zip(STUDENTS, graded_answers(notebook, label)):
            text = statements_above(notebook, label, student_numbers(notebook, student))
            key = (answer, text)
            if key in seen:
                continue
            seen[key] = leaks(notebook, label, answer, rel, unit, text)
            found += [f"Problem {label}, student {student} ({answer!r} {unit}): {where}" for where in seen[key]]
    assert not found, f"{notebook}: {len(found)} graded answers given away:\n" + "\n".join(found[:40])


def _shared_pairs(values: list, rel: float) -> float:
    """The share of pairs of students whose answers one check would mark right for the other."""
    count = len(values)
    if isinstance(values[0], str):
        _, counts = np.unique(values, return_counts=True)
        return float((counts * (counts - 1)).sum() / (count * (count - 1)))
    ordered = np.sort(np.asarray(values, dtype=float))
    tolerance = max(rel, 1e-9) * np.abs(ordered)
    upper = np.searchsorted(ordered, ordered + tolerance, side="right")
    lower = np.searchsorted(ordered, ordered - tolerance, side="left")
    return float(((upper - lower - 1).sum()) / (count * (count - 1)))


# Answers that are one of a few words (which bound sets the pace; the cheapest GPU): two students share one
# as often as the words are few. Every numeric answer is held to the rule.
WORD_ANSWERS = {("lesson-1-part-2", "2.2"), ("lesson-1-part-2", "2.7"), ("lesson-1-part-3", "3.6")}


@pytest.mark.parametrize("notebook, label", templated())
def test_every_graded_variant_changes_the_answer(notebook, label):
    practice, rel, _ = check_of(notebook, label)
    answers = graded_answers(notebook, label)
    if (notebook, label) in WORD_ANSWERS:
        assert isinstance(practice, str) and len(set(answers)) >= 2, (notebook, label, set(answers))
        return
    tolerance = max(rel, 1e-9)
    same = [student for student, answer in zip(STUDENTS, answers)
            if abs(answer - float(practice)) <= tolerance * abs(float(practice))]
    assert not same, (f"{notebook} Problem {label}: {len(same)} of {len(STUDENTS)} students' answers equal the "
                      f"practice answer {practice!r} (within the check's tolerance), such as {same[:5]}")
    shared = _shared_pairs(answers, rel)
    assert shared <= 0.05, (f"{notebook} Problem {label}: two students share an answer in {shared:.1%} of pairs "
                            f"({len(set(answers))} distinct answers)")


def _quiz_figures(text: str) -> list[tuple[float, str]]:
    return [(value, UNIT.match(text, match.end()).group(1) if UNIT.match(text, match.end()) else "")
            for match in NUMBER.finditer(text)
            for value in [float((match.group(2) + (match.group(3) or "")).replace(",", ""))]]


QUIZ_PAGES = {"LESSON_1_QUESTIONS": "chapters/lesson-1/wrap-up.md", "LESSON_2_QUESTIONS": "chapters/lesson-2/wrap-up.md",
              "LESSON_3_QUESTIONS": "chapters/lesson-3/wrap-up.md"}


@pytest.mark.parametrize("questions", sorted(QUIZ_PAGES))
def test_no_quiz_answer_is_printed_above_its_quiz(questions):
    """The figures a quiz's right answer quotes, in the units its question speaks of (not the figures it gives),
    are not on its page above it."""
    from servingmath import quiz

    text = page_text(ROOT / QUIZ_PAGES[questions])
    asked = getattr(quiz, questions)
    start = text.find(asked[0].prompt.split("{")[0][:60])
    assert start > 0, f"the quiz {questions} is not found on {QUIZ_PAGES[questions]}"
    printed = Printed({QUIZ_PAGES[questions]: text[:start]})
    found = []
    for number, question in enumerate(asked, start=1):
        given = {value for value, _ in _quiz_figures(question.prompt)}
        kinds = {answer_unit(unit)[0] for _, unit in _quiz_figures(question.prompt) if unit} - {None}
        for value, unit in _quiz_figures(question.answer(question.correct).message):
            # The right answer's figure: one of the kind the question asks about, not one it gives.
            if value not in given and value != 0 and answer_unit(unit)[0] in kinds:
                found += [f"question {number} ({value:g} {unit}): {where}"
                          for where in printed.direct(value, 0.02, unit) + printed.one_step(value, 0.02, unit)]
    assert not found, f"{questions}: answers printed above the quiz:\n" + "\n".join(found)


# -- the test sees what it must -------------------------------------------------------------------------
def test_figures_are_read_with_their_units():
    assert [(value, kind) for value, kind, *_ in figures("at 60, 1.02 s; $0.047 a million; 3,180 tokens/s")] == \
        [(60.0, None), (1.02, "time"), (0.047, "money"), (3180.0, "token rate")]
    assert [value for value, *_ in figures("S1001 h100-sxm 10⁹ 12.5x 2.039")] == [2.039]


def test_a_printed_answer_is_found_in_every_form_the_check_takes():
    printed = Printed({"page": "p99 1.02 s at 60 req/s; 14.2 ms against 27.4 ms; 12 users; 52.6 requests a second"})
    assert printed.direct(1.0213, 0.02, "seconds") and printed.direct(1020.0, 0.02, "ms")
    assert printed.direct(52.61, 0.02, "requests a second") and not printed.direct(53.9, 0.02, "requests a second")
    assert printed.direct(12.04, 0.0, "users") and not printed.direct(13, 0.0, "users")
    assert printed.direct(52.58, 0.0, "") and not printed.direct(11.97, 0.0, "")   # bare: 3 figures at least
    assert printed.one_step(27.4 / 14.2, 0.02, "times") and printed.direct(1 / 0.0142, 0.02, "tokens a second")
    assert Printed({"page": "the ridge: 153"}).direct(154, 0.0, "users")      # a count rounded up
    assert printed.one_step(27.4 - 14.2, 0.02, "ms") and not printed.one_step(27.4 - 14.2, 0.02, "tokens")
    assert not printed.one_step(27.4 - 14.2 + 0.2, 0.02, "ms")     # past the figures' rounding


def test_a_page_shows_its_glue_its_output_and_not_its_folded_answers():
    text = page_text(ROOT / "chapters/lesson-2/wrap-up.md")
    assert "{glue" not in text and "62 users fit" in text            # the script's output
    assert "Answer to question 3" not in text                          # the quiz's dropdowns stay folded
    front = page_text(ROOT / FRONT_PAGE)
    assert "ridge" in front


def test_shared_pairs_counts_pairs_within_the_tolerance():
    assert _shared_pairs([1.0, 1.0, 2.0, 3.0], 0.0) == pytest.approx(2 / 12)
    assert _shared_pairs(["a", "a", "b"], 0.0) == pytest.approx(2 / 6)
    assert _shared_pairs([100.0, 101.0, 200.0], 0.02) == pytest.approx(2 / 6)
