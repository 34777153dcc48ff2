"""Each student's own numbers: every template over a thousand students, the graded notebook showing them.

The grader's expected answers (scripts/variant_answers.py) are computed with the package from the
numbers ``servingmath.variants`` draws; a draw must be a case that can happen (within the model's
window, weights and caches fitting the GPU the question runs them on).
"""
import math
import sys
from collections import Counter
from pathlib import Path

import jupytext
import pytest

from servingmath import variants
from servingmath.hardware import CATALOG

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import grade  # noqa: E402
import variant_answers  # noqa: E402

STUDENTS = [f"S{number:04d}" for number in range(1000)]
PROBLEMS = [(name, label) for name, template in variants.TEMPLATES.items() for label in template.statements]


def test_every_template_has_an_answer_and_every_answer_a_template():
    assert {name: set(template.statements) for name, template in variants.TEMPLATES.items()} == {
        name: set(answers) for name, answers in variant_answers.ANSWERS.items()}


@pytest.mark.parametrize("name", sorted(variants.TEMPLATES))
def test_a_thousand_students_each_get_a_case_that_can_happen(name):
    for student in STUDENTS:
        drawn = variants.numbers(name, student)
        assert variants.sense(name, drawn) == [], (student, drawn)
        for label in variants.TEMPLATES[name].statements:
            text = variants.statement(name, label, student)
            assert "{" not in text and "}" not in text
            value = variant_answers.expected(name, label, student)
            if isinstance(value, str):
                assert value in ("memory", "compute") or value in CATALOG, (label, value)
            else:
                assert math.isfinite(value) and value > 0, (student, label, value)


@pytest.mark.parametrize("name, label", PROBLEMS)
def test_classmates_rarely_share_an_answer(name, label):
    answers = Counter(variant_answers.expected(name, label, student) for student in STUDENTS)
    if isinstance(next(iter(answers)), str):
        # A word to choose: each choice comes up, none for nearly everyone.
        assert len(answers) >= 2 and max(answers.values()) < 0.9 * len(STUDENTS), answers
    else:
        assert len(answers) >= 2 and max(answers.values()) <= 0.5 * len(STUDENTS), answers.most_common(3)


def test_a_draw_past_the_window_or_the_memory_is_called_out():
    drawn = variants.numbers("lesson-1-part-1", "S1")
    assert variants.sense("lesson-1-part-1", {**drawn, "prompt": 8000, "reply": 500}) == [
        "prompt + reply = 8,500 tokens is past Llama 3 8B's window of 8,192"]
    drawn = variants.numbers("lesson-1-part-3", "S1")
    assert "does not fit" in variants.sense("lesson-1-part-3", {**drawn, "big_gpu": "l4"})[0]


def test_the_seed_is_the_notebook_and_the_id_and_nothing_else():
    assert variants.numbers("lesson-1-part-1", " s1 ") == variants.numbers("lesson-1-part-1", "S1")
    assert variants.numbers("lesson-1-part-1", "S1") != variants.numbers("lesson-1-part-1", "S2")
    assert variants.seed("lesson-1-part-1", "S1") != variants.seed("lesson-1-part-2", "S1")
    with pytest.raises(ValueError, match="student_id is empty"):
        variants.numbers("lesson-1-part-1", "  ")
    with pytest.raises(TypeError, match="student_id must be your student ID as text"):
        variants.student_key(None)


def test_the_practice_release_and_the_solutions_keep_their_fixed_numbers():
    for folder in ("exercises", "solutions"):
        text = (ROOT / folder / "lesson-1-part-1.md").read_text(encoding="utf-8")
        assert "500-token prompt" in text and "sheet(" not in text and "mine.show" not in text
    graded = (ROOT / "exercises" / "graded" / "lesson-1-part-1.md").read_text(encoding="utf-8")
    assert "500-token prompt" not in graded and graded.count("mine.show(") == 6


def test_the_graded_notebook_shows_the_students_own_numbers_and_whose_they_are(tmp_path):
    notebook = jupytext.read(ROOT / "exercises" / "graded" / "lesson-1-part-1.md")
    setup = next(cell for cell in notebook.cells if 'STUDENT_ID = ""' in cell.source)
    setup.source = setup.source.replace('STUDENT_ID = ""', 'STUDENT_ID = "S1001"')
    jupytext.write(notebook, tmp_path / "mine.ipynb")
    ran = grade.run_notebook(tmp_path / "mine.ipynb", 60)
    assert ran.problems == [] and ran.shown_ids == ["s1001"]
    blank = grade.run_notebook(ROOT / "exercises" / "graded" / "lesson-1-part-1.md", 60)
    assert blank.problems == [] and blank.shown_ids == []
    shown = variants.Sheet("lesson-1-part-1", "S1001").text("1.1")
    drawn = variants.numbers("lesson-1-part-1", "S1001")
    assert shown.startswith("*Student S1001's numbers:* Someone sends a ") and f"{drawn['prompt']:,}-token" in shown
    assert variants.Sheet("lesson-1-part-1", "").text("1.1").startswith("**Your numbers are not shown yet:** "
                                                                        "student_id is empty")
