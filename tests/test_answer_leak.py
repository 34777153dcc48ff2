"""No problem can be answered by reading the pages: every practice problem and 1,000 students' graded ones.

For each problem of each problem notebook (``solutions/``), practice and graded, the expected answer is
compared with every figure a reader sees on the pages of the same lesson and its plate (its parts, its
wrap-up and index, the plate, the course's front page: prose with every glued value in place, printed
output, tables, the quiz, each chart's readouts at its first setting; a problem set at an explorer's other stops is
caught at the end) and with the figures of the same
notebook above the problem. A figure gives an answer away when a student who typed it would be marked
right (the check's tolerance, in the problem's units or converted, as ms for s), when it is the answer
rounded to 2 or 3 significant figures, or when the answer is one division, product, sum or difference
away from two figures of one page in the same units.

A page's visible text is computed, not read from the built site: each page's code runs as the book runs
it (glue calls captured, printed and displayed output kept, cells tagged ``remove-output`` or ``remove-cell``
dropped, solution and quiz dropdowns left folded). ``make exercises`` runs every page and writes its text into
``leaks.yaml`` beside a digest of its sources (the page, the script, the package, the pinned versions and the
Python), and these tests read it there: a page whose sources changed since is run anew, and
``test_the_package_reads_the_pages_as_they_are_now`` fails until ``make exercises`` writes the file again. The
book lane checks every figure the file holds against the page the book built.

Graded answers depend on a few of a student's drawn numbers: each problem's answer is computed once for
each distinct set of the numbers it reads (found by recording which ones it reads), not once a student.
"""
from __future__ import annotations

import math
import re
import sys
from functools import lru_cache
from pathlib import Path

import jupytext
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from servingmath import answers, variants  # noqa: E402

from pages_seen import (  # noqa: E402
    FRONT_PAGE, LESSON_PAGES, _above, lesson_of, notebook_parts, page_text, practice_checks, visible)

NOTEBOOKS = sorted(path.stem for path in (ROOT / "solutions").glob("*.md"))
# The class tests/test_variants.py and test_coursegrader_marking.py draw too: each is drawn once (conftest.py).
STUDENTS = [f"S{number:04d}" for number in range(1000)]


# -- figures: the package's reading of a page (servingmath.leaks) --------------------------------------
from servingmath.leaks import NUMBER, UNIT, Printed, answer_unit, figures  # noqa: E402


@lru_cache(maxsize=None)
def lesson_printed(lesson: str) -> Printed:
    pages = LESSON_PAGES[lesson] + [ROOT / FRONT_PAGE]
    return Printed({str(page.relative_to(ROOT)): page_text(page) for page in pages})


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


# -- graded answers, once for each distinct set of the numbers a problem reads (servingmath.answers) -------
@lru_cache(maxsize=None)
def student_numbers(notebook: str, student: str) -> dict:
    return variants.numbers(notebook, student)


def graded_answer(notebook: str, label: str, numbers: dict):
    return answers.answer(notebook, label, numbers)


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


def test_lesson_4_part_3_asks_a_cut_of_eight_gpus_for_its_tail_not_its_name():
    """Lesson 4 Part 3 says which cut wins at a light load and at a heavy one: Problem 3.3 asks each student for a
    p99 in milliseconds, which only a run gives, never which cut wins."""
    practice, _, unit = check_of("lesson-4-part-3", "3.3")
    found = graded_answers("lesson-4-part-3", "3.3")
    assert unit == "ms" and not isinstance(practice, str)
    assert all(isinstance(answer, float) and answer > 0 for answer in found)


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
              "LESSON_3_QUESTIONS": "chapters/lesson-3/wrap-up.md", "LESSON_4_QUESTIONS": "chapters/lesson-4/wrap-up.md"}


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


def test_the_package_reads_the_pages_as_they_are_now():
    """``servingmath.variants`` keeps draws off what ``data/leaks.yaml`` holds: the pages as seen today, each
    problem's check (``python scripts/pages_seen.py``, run by ``make exercises``, writes it)."""
    import pages_seen

    assert pages_seen.DATA.read_text(encoding="utf-8") == pages_seen.text(stored=True), (
        "src/servingmath/data/leaks.yaml is out of date (a page, the package, the pinned versions or a check changed "
        "since it was written): run make exercises")


def test_a_page_is_read_from_leaks_yaml_only_while_its_sources_are_those_it_was_written_from(monkeypatch):
    """The front page's text as written matches its digest and what running the page gives; under other sources
    the digest differs, and the page is run again."""
    import pages_seen

    page = ROOT / FRONT_PAGE
    digest, written = pages_seen._written()[FRONT_PAGE]
    assert digest == pages_seen.source_digest(page)
    monkeypatch.setenv("SERVINGMATH_RESULTS", "")
    assert pages_seen.page_text.__wrapped__(page, stored=False) == written
    monkeypatch.setattr(pages_seen, "_sources", lambda: b"another package")
    assert pages_seen.source_digest(page) != digest
    monkeypatch.setattr(pages_seen, "_render", lambda path: {"text": "run again"})
    assert pages_seen.page_text.__wrapped__(page) == "run again"


def test_a_draw_that_gives_an_answer_away_is_drawn_again():
    """The practice's own numbers give every numeric answer away (they are the practice's answers); a student's
    draw gives none away, or the fewest of all its draws."""
    for notebook in variants.TEMPLATES:
        practice = variants.practice(notebook)
        numeric = [label for label in variants.TEMPLATES[notebook].statements
                   if not isinstance(answers.answer(notebook, label, practice), str)]
        assert [found.split(":")[0] for found in variants.given_away(notebook, practice)] == numeric, notebook


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


# -- the explorers' stops ---------------------------------------------------------------------------------
# The page's reading above holds each explorer at its first setting; a reader moves it. A problem whose numbers all
# sit at (within 3 % of) a website stop of an explorer that reads out its answer there is given away: each row names
# the problem, the explorer (by the function a page calls) and, for each number of the problem, the control it sets
# (or the explorer's only value, where it has no control for it). A control the website does not show stays at its
# default: lesson 1's explorers time Llama 3 8B alone.
EXPLORED = [
    ("lesson-1-part-2", "2.5", "lesson_1.roofline", {"low_prompt": "tokens", "low_bits": "weight_bits"}),
    ("lesson-1-part-3", "3.1", "lesson_1.request", {"bits": "weight_bits"}),
    ("lesson-1-part-3", "3.2", "lesson_1.request", {"prompt": "prompt_tokens"}),
    ("lesson-1-part-3", "3.3", "lesson_1.request", {"speed_model": "model"}),
    ("lesson-1-part-3", "3.5", "lesson_1.request", {"request_prompt": "prompt_tokens", "request_reply": "reply_tokens"}),
    ("lesson-1-part-4", "4.1", "lesson_1.batching", {"users": "users"}),
    ("lesson-1-part-4", "4.3", "lesson_1.batching", {"gpu_users": "users"}),
    ("plate-xxiii-1", "7", "plates.workshop", {"ridge_bits": (16,)}),
    ("lesson-2-part-3", "3.1", "lesson_2.users_that_fit", {"bits_context": "tokens"}),
    ("lesson-2-part-3", "3.2", "lesson_2.users_that_fit", {"room_model": "model"}),
    ("lesson-2-part-3", "3.3", "lesson_2.users_that_fit", {"context": "tokens"}),
    ("lesson-2-part-3", "3.4", "lesson_2.users_that_fit", {"window_model": "model"}),
    ("lesson-2-part-3", "3.6", "lesson_2.users_that_fit", {"big_context": "tokens"}),
    ("lesson-2-part-4", "4.1", "lesson_2.cached_batching", {"users": "users", "context": "tokens"}),
    ("lesson-2-part-4", "4.2", "lesson_2.cached_batching", {"step_users": "users", "step_context": "tokens"}),
    ("lesson-2-part-4", "4.3", "lesson_2.cached_batching", {"many": "users", "many_context": "tokens"}),
    ("lesson-2-part-4", "4.4", "lesson_2.cached_batching", {"match_context": "tokens"}),
]


@lru_cache(maxsize=None)
def _explorer_stops(explorer: str, control: str) -> tuple:
    from servingmath import explorers

    module, name = explorer.split(".")
    found = next(c for c in getattr(getattr(explorers, module), name)().controls if c.name == control)
    return found.options if found.site else (found.options[found.default],)


def _at_a_stop(value, stops) -> bool:
    if isinstance(value, str):
        return value in stops
    return any(not isinstance(stop, str) and abs(value - stop) <= 0.03 * stop for stop in stops)


@pytest.mark.parametrize("notebook, label, explorer, controls", EXPLORED, ids=[f"{n}-{l}" for n, l, *_ in EXPLORED])
def test_no_problem_is_asked_at_a_stop_of_an_explorer_that_answers_it(notebook, label, explorer, controls):
    stops = {name: control if isinstance(control, tuple) else _explorer_stops(explorer, control)
             for name, control in controls.items()}
    asked = [("practice", variants.practice(notebook))] + [(s, student_numbers(notebook, s)) for s in STUDENTS]
    found = [who for who, numbers in asked if all(_at_a_stop(numbers[name], stops[name]) for name in stops)]
    assert not found, f"{notebook} Problem {label} is asked at a stop of {explorer} for {found[:5]} ({len(found)})"


@lru_cache(maxsize=None)
def _workshop_crossings(gpu: str) -> tuple:
    """(assumptions, the prompt from which plate XXIII.1's explorer reads a 16-bit prefill on ``gpu`` as
    compute-bound) under each of the website's assumptions (none where the website does not offer the GPU)."""
    from servingmath import explorers

    made = explorers.plates.workshop()
    menu = next(control for control in made.controls if control.name == "gpu")
    if gpu not in menu.options:
        return ()
    return tuple((assumptions, int(made.readouts_at(gpu=gpu, assumptions=assumptions)["arithmetic sets the time from"]
                                   .split()[0]))
                 for assumptions in next(c for c in made.controls if c.name == "assumptions").options)


def test_the_ridge_under_narrow_weights_is_not_one_scaling_of_the_plates_crossing():
    """Plate XXIII.1's explorer reads out where a 16-bit prefill turns compute-bound on each GPU it offers, under the
    plate's efficiencies and the lesson's. Weights in b bits scale the bytes a token's pass reads by b/16, and other
    efficiencies move the ridge by the ratio of their ratios, so Problem 7's answer is about a readout scaled by both:
    no single scaling (halved, quartered, by b/16 or by the efficiencies' ratio) may give it to a token."""
    import servingmath as sm
    from servingmath import explorers

    reached = variants.RIDGE_REACHED[0] / variants.RIDGE_REACHED[1]
    ratios = {"plate": sm.PLATE.compute_efficiency / sm.PLATE.bandwidth_efficiency,
              "lesson": sm.LESSON.compute_efficiency / sm.LESSON.bandwidth_efficiency}
    assert set(ratios) == set(next(c for c in explorers.plates.workshop().controls if c.name == "assumptions").options)
    asked = [("practice", variants.practice("plate-xxiii-1"))] + \
        [(student, student_numbers("plate-xxiii-1", student)) for student in STUDENTS]
    found = []
    for who, numbers in asked:
        answer = graded_answer("plate-xxiii-1", "7", numbers)
        for assumptions, crossing in _workshop_crossings(numbers["ridge_gpu"]):
            scalings = {"1": 1, "1/2": 1 / 2, "1/4": 1 / 4, "b/16": numbers["ridge_bits"] / 16,
                        "the efficiencies' ratio": reached / ratios[assumptions]}
            found += [f"{who}: {answer} tokens on the {numbers['ridge_gpu']} in {numbers['ridge_bits']} bits, "
                      f"{crossing} ({assumptions}) x {name}" for name, factor in scalings.items()
                      if abs(answer - crossing * factor) <= 1]
    assert not found, f"{len(found)} answers one step from the plate's readout:\n" + "\n".join(found[:10])
