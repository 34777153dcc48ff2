"""scripts/grade.py: solutions score full marks, blank exercises zero, a crash keeps what it reached."""
import csv
import shutil
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import grade  # noqa: E402  (a script, not a package)

PART_1 = "lesson-1-part-1"


@pytest.fixture(scope="module")
def problems():
    """Every solution notebook run once: the reference the grader scores against."""
    return grade.reference(grade.notebook_names(), jobs=2)


def test_every_check_in_every_solution_is_right(problems):
    assert list(problems) == ["lesson-1-part-1", "lesson-1-part-2", "lesson-1-part-3", "lesson-1-part-4",
                              "lesson-2-part-1", "lesson-2-part-2", "lesson-2-part-3", "lesson-2-part-4",
                              "plate-xxiii-1", "plate-xxiii-2"]
    assert [len(records) for records in problems.values()] == [6, 7, 6, 7, 5, 6, 6, 6, 7, 5]
    for records in problems.values():
        assert {record["status"] for record in records.values()} == {"right"}


def test_blank_exercises_run_to_the_end_and_every_check_says_not_answered_yet(problems):
    runs = grade.run_many([ROOT / "exercises" / f"{name}.md" for name in problems], timeout=60, jobs=2)
    for name, ran in zip(problems, runs):
        assert ran.problems == []
        assert list(ran.records) == list(problems[name])
        assert {record["status"] for record in ran.records.values()} == {"unanswered"}


def cell_index(notebook, text):
    return next(i for i, cell in enumerate(notebook.cells) if text in cell.source)


def broken_submission():
    """Part 1 worked, but: 1.2 holds 1.3's answer and 1.3's own cell raises (so `answer` still holds the
    right figure for 1.3, left over), 1.4 is wrong with its check edited to agree, the kernel dies before 1.6."""
    notebook = jupytext.read(ROOT / "solutions" / f"{PART_1}.md")
    check_12 = cell_index(notebook, 'label="1.2"')
    check_13 = cell_index(notebook, 'label="1.3"')
    notebook.cells[check_12 - 1].source = notebook.cells[check_13 - 1].source
    notebook.cells[check_13 - 1].source = "answer = 1 / 0"
    check_14 = cell_index(notebook, 'label="1.4"')
    notebook.cells[check_14 - 1].source = "answer = 21"
    notebook.cells[check_14].source = 'check(answer, 21, label="1.4")'
    check_15 = cell_index(notebook, 'label="1.5"')
    notebook.cells.insert(check_15 + 1, nbformat.v4.new_code_cell("import os\nos._exit(1)"))
    return notebook


def slow_submission():
    """Part 1 worked, with a cell after 1.2 that never ends."""
    notebook = jupytext.read(ROOT / "solutions" / f"{PART_1}.md")
    check_12 = cell_index(notebook, 'label="1.2"')
    notebook.cells.insert(check_12 + 1, nbformat.v4.new_code_cell("import time\ntime.sleep(600)"))
    return notebook


def test_grading_a_folder_of_submissions(problems, tmp_path):
    submissions = tmp_path / "submissions"
    (submissions / "ada").mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / f"{PART_1}.md", submissions / "ada" / f"{PART_1}.md")
    jupytext.write(jupytext.read(ROOT / "exercises" / f"{PART_1}.md"), submissions / "bo_Lesson_1_Part_1.ipynb")
    (submissions / "cy" / "week 1").mkdir(parents=True)
    jupytext.write(broken_submission(), submissions / "cy" / "week 1" / "Copy of Lesson 1 part 1.ipynb")
    jupytext.write(slow_submission(), submissions / "dee-lesson-1-part-1.ipynb")
    (submissions / "notes.txt").write_text("not a notebook")
    jupytext.write(jupytext.read(ROOT / "exercises" / f"{PART_1}.md"), submissions / "untitled.ipynb")

    # Part 2 is in the reference too, and nobody handed it in.
    reference = {PART_1: problems[PART_1], "lesson-1-part-2": problems["lesson-1-part-2"]}
    rows, skipped = grade.grade(submissions, reference, timeout=5, jobs=2)
    assert skipped == [submissions / "untitled.ipynb"]
    out = tmp_path / "grades.csv"
    grade.write_csv(rows, reference, out)
    table = {row["student"]: row for row in csv.DictReader(out.open(encoding="utf-8"))}
    labels = [f"{PART_1} {label}" for label in ("1.1", "1.2", "1.3", "1.4", "1.5", "1.6")]

    assert list(table) == ["ada", "bo", "cy", "dee"]
    assert [table["ada"][label] for label in labels] == ["1"] * 6
    missing = "lesson-1-part-2: not submitted"
    assert [table["ada"][f"lesson-1-part-2 2.{n}"] for n in range(1, 8)] == ["0"] * 7
    assert (table["ada"]["score"], table["ada"]["out of"], table["ada"]["notes"]) == ("6", "13", missing)
    assert [table["bo"][label] for label in labels] == ["0"] * 6 and table["bo"]["score"] == "0"
    assert table["bo"]["notes"] == missing
    # 1.3's left-over answer would be right, but its own cell raised: not answered.
    assert [table["cy"][label] for label in labels] == ["1", "0", "0", "0", "1", "0"]
    assert table["cy"]["notes"] == (f"{PART_1}: stopped: the kernel died; {PART_1}: code cell 6 raised "
                                    f"ZeroDivisionError; {PART_1}: the answer to '1.3' raised before it was set; "
                                    f"{PART_1}: check cell edited for 1.4; graded against the reference; {missing}")
    assert [table["dee"][label] for label in labels] == ["1", "1", "0", "0", "0", "0"]
    assert table["dee"]["notes"] == f"{PART_1}: stopped: a cell ran past 5 s; {missing}"
    assert grade.summary(rows, reference) == "grade: 4 students, 4 notebooks, mean score 2.50 of 13 (19%)"


@pytest.mark.parametrize("path, who", [
    ("alice/lesson-1-part-1.ipynb", ("alice", PART_1)),
    ("alice/any/depth/Lesson_1_Part_2 (1).ipynb", ("alice", "lesson-1-part-2")),
    ("bob-lesson-1-part-3.ipynb", ("bob", "lesson-1-part-3")),
    ("Bob Smith - Plate XXIII.1.md", ("bob-smith", "plate-xxiii-1")),
    ("Copy of lesson-1-part-4 - carol.ipynb", ("carol", "lesson-1-part-4")),
    ("lesson-1-part-4.ipynb", None),
    ("lesson-1-part-12.ipynb", None),
    ("dave-homework.ipynb", None),
])
def test_which_student_and_notebook_a_file_is(path, who):
    names = ["lesson-1-part-1", "lesson-1-part-2", "lesson-1-part-3", "lesson-1-part-4", "plate-xxiii-1"]
    assert grade.identify(Path("/s") / path, Path("/s"), names) == who


def test_the_command_refuses_a_missing_folder_or_an_unknown_notebook(tmp_path, capsys):
    assert grade.main([str(tmp_path / "nowhere")]) == 2
    assert grade.main([str(tmp_path), "--notebooks", "lesson-9"]) == 2
    assert "notebooks must be among" in capsys.readouterr().err
