"""No answer before its question.

A page's exercise is worth nothing if the page has already printed its answer. For every page
with an exercise, this test runs the page's code (as the book does), renders its text the way
the reader sees it (each ``{glue:}`` replaced by its glued text, each Markdown table a cell
prints put in place), and fails when an exercise's expected answer, as the page formats it,
appears in the text above the exercise. For every problem notebook, it fails when the figure
its check expects, written as the course writes numbers, appears anywhere in the lesson page
the notebook belongs to.

An exercise's expected answer is the glued text its solution quotes from a cell inside the
solution itself (what the reader is shown on opening the dropdown).
"""
from __future__ import annotations

import ast
import math
import re
import sys
from pathlib import Path

import jupytext
import pytest

import servingmath as sm
from servingmath import units

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from make_exercises import checks_in  # noqa: E402

# Pages whose exercises and problems this test holds to the rule.
CHECKED_PAGES = [
    "chapters/lesson-1/part-1-prompt-and-reply.md",
    "chapters/lesson-1/part-2-same-weights-different-work.md",
    "chapters/lesson-1/part-3-time-on-the-clock.md",
    "chapters/lesson-1/part-4-batching.md",
    "chapters/plates/xxiii-1-prefill-and-decode.md",
    "chapters/lab/measure-your-machine.md",
    "chapters/lesson-2/part-1-what-the-cache-holds.md",
    "chapters/lesson-2/part-2-its-size.md",
    "chapters/lesson-2/part-3-how-many-users-fit.md",
    "chapters/lesson-2/part-4-decode-and-price.md",
    "chapters/plates/xxiii-2-the-kv-cache.md",
]
# Each problem notebook, and the page it belongs to.
PROBLEM_PAGES = {
    "solutions/lesson-1-part-1.md": "chapters/lesson-1/part-1-prompt-and-reply.md",
    "solutions/lesson-1-part-2.md": "chapters/lesson-1/part-2-same-weights-different-work.md",
    "solutions/lesson-1-part-3.md": "chapters/lesson-1/part-3-time-on-the-clock.md",
    "solutions/lesson-1-part-4.md": "chapters/lesson-1/part-4-batching.md",
    "solutions/plate-xxiii-1.md": "chapters/plates/xxiii-1-prefill-and-decode.md",
    "solutions/lesson-2-part-1.md": "chapters/lesson-2/part-1-what-the-cache-holds.md",
    "solutions/lesson-2-part-2.md": "chapters/lesson-2/part-2-its-size.md",
    "solutions/lesson-2-part-3.md": "chapters/lesson-2/part-3-how-many-users-fit.md",
    "solutions/lesson-2-part-4.md": "chapters/lesson-2/part-4-decode-and-price.md",
    "solutions/plate-xxiii-2.md": "chapters/plates/xxiii-2-the-kv-cache.md",
}

GLUE_CALL = re.compile(r"""glue\(\s*f?["']([^"']+)["']""")
GLUE_REF = re.compile(r"\{glue:(?:text)?\}`([^`]+)`")


class RenderedPage:
    """A page's markdown in the order it is read, each glue and printed table in place."""

    def __init__(self, path: Path):
        self.cells = jupytext.read(path).cells
        self.glued: dict[str, str] = {}
        self.blocks: list[tuple[str, str]] = []  # (kind, text): "md" or "out" or "code"
        namespace = {"__name__": "__page__"}

        def glue(name, value, display=True):
            self.glued[name] = _text(value)

        import myst_nb

        original = myst_nb.glue
        myst_nb.glue = glue
        try:
            for cell in self.cells:
                if cell.cell_type == "markdown":
                    self.blocks.append(("md", cell.source))
                    continue
                self.blocks.append(("code", cell.source))
                printed = _run(cell.source, namespace)
                if printed is not None and type(printed).__name__ == "Markdown":
                    self.blocks.append(("out", printed.data))
        finally:
            myst_nb.glue = original

    def shown(self, text: str) -> str:
        return GLUE_REF.sub(lambda m: self.glued.get(m.group(1), m.group(0)), text)

    def exercises(self):
        """(label, text above the exercise as read, expected answers) for each exercise."""
        found = []
        read = []
        in_solution, answers, glued_inside, label = False, set(), set(), None
        for kind, text in self.blocks:
            if kind == "code":
                if in_solution:
                    glued_inside |= set(GLUE_CALL.findall(text))
                continue
            source = text
            while source:
                if not in_solution:
                    start = source.find("```{exercise-start}")
                    if start < 0:
                        read.append(self.shown(source) if kind == "md" else source)
                        break
                    read.append(self.shown(source[:start]))
                    label_match = re.search(r":label:\s*(\S+)", source[start:])
                    label = label_match.group(1) if label_match else f"exercise {len(found) + 1}"
                    above = "\n".join(read)
                    end = source.find("```{solution-start}", start)
                    if end < 0:
                        found.append([label, above, set()])
                        in_solution = True
                        source = ""
                        continue
                    found.append([label, above, set()])
                    in_solution = True
                    source = source[end:]
                else:
                    finish = source.find("```{solution-end}")
                    if finish < 0:
                        answers |= set(GLUE_REF.findall(source))
                        source = ""
                        continue
                    answers |= set(GLUE_REF.findall(source[:finish]))
                    found[-1][2] = answers & glued_inside  # quoted by the solution, worked out inside it
                    in_solution, answers, glued_inside = False, set(), set()
                    source = source[finish:]
                    source = source[source.find("\n") + 1:] if "\n" in source else ""
        # An answer is glued inside the solution and quoted by it.
        result = []
        for label, above, quoted in found:
            result.append((label, above, {self.glued[key] for key in quoted if key in self.glued}))
        return result

    def whole_text(self) -> str:
        return "\n".join(self.shown(text) if kind == "md" else text for kind, text in self.blocks if kind != "code")


def _text(value) -> str:
    if isinstance(value, str):
        return str(value)
    data = getattr(value, "data", None)
    return str(data) if data is not None else str(value)


def _run(source: str, namespace: dict):
    """Run one cell; return the value of its last line when that line is an expression."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    tree = ast.parse("\n".join(lines))
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr):
        exec(compile(ast.Module(tree.body[:-1], []), "<cell>", "exec"), namespace)
        return eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)
    exec(compile(tree, "<cell>", "exec"), namespace)
    return None


_PAGES: dict[str, RenderedPage] = {}


def rendered(page: str) -> RenderedPage:
    if page not in _PAGES:
        _PAGES[page] = RenderedPage(ROOT / page)
    return _PAGES[page]


def appears(answer: str, text: str) -> bool:
    """``answer`` in ``text`` as a whole figure: not inside a longer number."""
    answer = answer.strip()
    if not answer:
        return False
    pattern = r"(?<![\d.,])" + re.escape(answer) + r"(?![\d]|[.,]\d)"
    return re.search(pattern, text) is not None


def course_forms(value, unit="") -> set[str]:
    """A figure written as the course's pages write a figure in those units, at the precisions they use."""
    value = float(value)
    if not math.isfinite(value) or value == 0:
        return set()
    written = {
        "GB": lambda v: {units.gb(v * 1e9), units.gb(v * 1e9, 1), units.gb(v * 1e9, 0)},
        "ms": lambda v: {units.ms(v / 1e3), units.ms(v / 1e3, 1)},
        "dollars per million tokens": lambda v: {units.dollars(v, 3), units.dollars(v, 2)},
        "FLOPs": lambda v: {units.trillions(v, 2), units.billions(v, 1)},
        "of the bytes": lambda v: {units.percent(v), units.percent(v, 1)},
    }
    if unit in written:
        return written[unit](value)
    forms = set()
    if value == round(value) and abs(value) >= 10:
        forms.add(units.number(value))
    else:
        for figures in (2, 3):
            forms.add(units.number(units.round_to(value, figures), _decimals(value, figures)))
    return {form for form in forms if len(form.replace(",", "").replace(".", "").lstrip("0")) >= 2}


def _decimals(value, figures):
    return max(0, figures - 1 - math.floor(math.log10(abs(value))))


def problem_answers(notebook: str):
    """(label, expected figure, units) for each check of a problem notebook whose figure is a number."""
    return [(label, expected, keywords.get("units", "")) for label, expected, keywords in checks_in(ROOT / notebook)
            if isinstance(expected, (int, float)) and not isinstance(expected, bool)]


@pytest.mark.parametrize("page", CHECKED_PAGES)
def test_no_exercise_answer_appears_above_its_exercise(page):
    exercises = rendered(page).exercises()
    for label, above, answers in exercises:
        for answer in answers:
            assert not appears(answer, above), f"{page}, {label}: its answer {answer!r} is printed above it"


@pytest.mark.parametrize("notebook", sorted(PROBLEM_PAGES))
def test_no_problem_answer_appears_in_its_lesson_page(notebook):
    page = rendered(PROBLEM_PAGES[notebook]).whole_text()
    shown = [f"problem {label}: {form!r}" for label, expected, unit in problem_answers(notebook)
             for form in course_forms(expected, unit) if appears(form, page)]
    assert not shown, f"{notebook}: printed in {PROBLEM_PAGES[notebook]}: {shown}"


def test_the_checked_pages_have_exercises_and_their_answers_are_found():
    """The test sees what it checks: every checked page with an exercise yields its answers."""
    part_3 = rendered("chapters/lesson-2/part-3-how-many-users-fit.md").exercises()
    assert [label for label, _, _ in part_3] == ["lesson2-part3-your-turn"]
    assert part_3[0][2] == {units.number(sm.max_batch(sm.LLAMA_3_8B, sm.H100_SXM, 8000, kv_bits=8))}
    assert all(answers for _, _, answers in part_3)


@pytest.mark.parametrize("page", CHECKED_PAGES)
def test_every_exercise_of_a_checked_page_has_an_answer_to_look_for(page):
    """An exercise whose solution glues no answer would pass the check above without being checked."""
    exercises = rendered(page).exercises()
    assert exercises or "xxiii-2" in page, page   # plate XXIII.2 sets none
    for label, _, answers in exercises:
        assert answers, f"{page}, {label}: its solution quotes no answer glued inside it"


def test_the_check_itself_finds_an_answer_printed_above():
    assert appears("125", "fit: 125 users") and not appears("125", "1,250 users") and not appears("12", "12.5")
    assert course_forms(2.1474836) == {"2.1", "2.15"} and course_forms(125) == {"125"}


def _printed_tables(notebook: str) -> str:
    """The tables a problem notebook prints from its set-up cells (a catalog, say), run without its problems."""
    namespace = {"__name__": "__notebook__"}
    printed = []
    for cell in jupytext.read(ROOT / notebook).cells:
        if cell.cell_type != "code" or "BEGIN SOLUTION" in cell.source or "check(" in cell.source:
            continue
        shown = _run(cell.source, namespace)
        if shown is not None and type(shown).__name__ == "Markdown":
            # Its rows' figures: not the notes under it, nor a name in the first column ("MI300X").
            printed += [line.split("|", 2)[-1] for line in shown.data.splitlines() if line.startswith("|")]
    return "\n".join(printed)


# A figure a table holds for another reason: the H200's listed 141 GB of memory, not Llama 3 70B's 141.1 GB.
COINCIDENCES = {("solutions/lesson-1-part-2.md", "2.3", "141 GB")}


@pytest.mark.parametrize("notebook", sorted(PROBLEM_PAGES))
def test_no_problem_answer_appears_in_a_table_its_notebook_prints(notebook):
    """A catalog printed above the problems must not hold an answer (a ridge the reader is asked for)."""
    tables = _printed_tables(notebook)
    shown = [f"problem {label}: {form!r}" for label, expected, unit in problem_answers(notebook)
             for form in course_forms(expected, unit)
             if appears(form, tables) and (notebook, label, form) not in COINCIDENCES]
    assert not shown, f"{notebook}: printed in its own tables: {shown}"


def test_the_full_catalog_would_give_the_a100_ridge_away():
    """The check above sees the ridge column: Problem 2.4's answer is in the catalog printed in full."""
    a100 = sm.CATALOG["a100-80gb"]
    ridge = sm.ridge_point(a100.peak_flops, a100.memory_bandwidth)
    assert any(appears(form, sm.hardware.catalog_markdown()) for form in course_forms(ridge))
    assert not any(appears(form, sm.hardware.catalog_markdown(ridge=False)) for form in course_forms(ridge))
    with pytest.raises(TypeError, match="ridge"):
        sm.hardware.catalog_markdown(ridge="no")
