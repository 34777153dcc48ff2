"""scripts/grade.py on a term's messy folder: fair marks, clear notes, files an LMS imports.

The folder is made here, from the solutions and the releases, so no big notebook is committed:
a perfect submission, a blank one, a partly answered one, one whose answer cell raises, one with
a scratch cell that raises after a right answer, one that is not JSON, one that never ends, two
that cheat (reading the solutions, patching the check), two copies from one student, late ones,
and a student on the roster who handed in nothing.
"""
import csv
import datetime as dt
import os
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import grade  # noqa: E402  (a script, not a package)

PART_1 = "lesson-1-part-1"
LABELS = ["1.1", "1.2", "1.3", "1.4", "1.5", "1.6"]
DEADLINE = dt.datetime(2026, 12, 11, 17, 0, tzinfo=dt.timezone.utc)
SANDBOXED = grade.mount_namespace_prefix() is not None


@pytest.fixture(scope="module")
def problems():
    """Every solution notebook run once: the reference the grader marks against."""
    return grade.reference(grade.notebook_names(), jobs=2)


def test_every_check_in_every_solution_is_right(problems):
    assert list(problems) == ["lesson-1-part-1", "lesson-1-part-2", "lesson-1-part-3", "lesson-1-part-4",
                              "lesson-2-part-1", "lesson-2-part-2", "lesson-2-part-3", "lesson-2-part-4",
                              "lesson-3-part-1", "lesson-3-part-2", "lesson-3-part-3", "lesson-3-part-4",
                              "plate-xxiii-1", "plate-xxiii-2", "plate-xxiii-4"]
    assert [len(records) for records in problems.values()] == [6, 7, 6, 7, 5, 6, 6, 6, 6, 5, 5, 5, 7, 5, 5]
    for records in problems.values():
        assert {record["status"] for record in records.values()} == {"right"}


@pytest.mark.parametrize("folder, status", [("exercises", "unanswered"), ("exercises/graded", "unanswered")])
def test_blank_releases_run_to_the_end_and_every_check_says_not_answered_yet(problems, folder, status):
    runs = grade.run_many([ROOT / folder / f"{name}.md" for name in problems], time_limit=60, jobs=2)
    for name, ran in zip(problems, runs):
        assert ran.problems == []
        assert list(ran.records) == list(problems[name])
        assert {record["status"] for record in ran.records.values()} == {status}


# -- the messy folder ----------------------------------------------------------------
def solution():
    return jupytext.read(ROOT / "solutions" / f"{PART_1}.md")


def graded_release():
    return jupytext.read(ROOT / "exercises" / "graded" / f"{PART_1}.md")


def answer_cell(notebook, label):
    """The index of the answer cell of problem ``label``: the code cell just before its check."""
    check = next(i for i, cell in enumerate(notebook.cells) if f'label="{label}"' in cell.source
                 or f"label='{label}'" in cell.source)
    return check - 1


def answered(notebook, answers):
    for label, source in answers.items():
        notebook.cells[answer_cell(notebook, label)].source = source
    return notebook


def partial():
    """The graded release: 1.1 right, 1.2 wrong, 1.4 close (20.4 for 20), the rest blank."""
    return answered(graded_release(), {"1.1": "answer = 1 + (1000 - 1)", "1.2": "answer = 1000",
                                       "1.4": "answer = 20.4"})


def raising():
    """1.3's answer cell raises before it sets `answer`: 1.3 is not answered, 1.2's answer is not taken for it."""
    return answered(solution(), {"1.3": "answer = 1 / 0"})


def scratch_after_right():
    """A scratch cell that raises sits between 1.2's right answer and its check."""
    notebook = solution()
    notebook.cells.insert(answer_cell(notebook, "1.2") + 1, nbformat.v4.new_code_cell("print(undefined_name)"))
    return notebook


def endless():
    """A loop that never ends after 1.2's check."""
    notebook = solution()
    notebook.cells.insert(answer_cell(notebook, "1.3"), nbformat.v4.new_code_cell("while True:\n    pass"))
    return notebook


STEAL = '''import pathlib, re, sys
import servingmath
places = [pathlib.Path({root!r})] + [pathlib.Path(entry).parent for entry in sys.path if entry]
places.append(pathlib.Path(servingmath.__file__).parents[2])
stolen = {{}}
for place in places:
    try:
        text = (place / "solutions" / "lesson-1-part-1.md").read_text()
    except OSError:
        continue
    for number, block in enumerate(re.findall(r"### BEGIN SOLUTION\\n(.*?)### END SOLUTION", text, re.S), 1):
        scope = {{}}
        exec(block, scope)
        stolen[number] = scope["answer"]
    break
'''


def reading_the_solutions():
    """Each answer taken from solutions/lesson-1-part-1.md, wherever the kernel can find it."""
    notebook = graded_release()
    notebook.cells.insert(answer_cell(notebook, "1.1"), nbformat.v4.new_code_cell(STEAL.format(root=str(ROOT))))
    return answered(notebook, {label: f"answer = stolen.get({number})" for number, label in enumerate(LABELS, 1)})


def patching_the_check():
    """Every answer wrong, a check that calls the expected figure the answer, and 1.4's check rewritten."""
    notebook = solution()
    notebook.cells.insert(answer_cell(notebook, "1.1"), nbformat.v4.new_code_cell(
        "import servingmath.checks\n_real = check\n"
        "def check(answer, expected, **options):\n    return _real(expected, expected, **options)\n"
        "servingmath.checks.check = check"))
    notebook = answered(notebook, {label: "answer = 1" for label in LABELS})
    notebook.cells[answer_cell(notebook, "1.4") + 1].source = 'check(answer, 1, label="1.4")'
    return notebook


def write(notebook, path: Path, when: dt.datetime | None = None):
    path.parent.mkdir(parents=True, exist_ok=True)
    jupytext.write(notebook, path)
    moment = (when or DEADLINE - dt.timedelta(days=1)).timestamp()
    os.utime(path, (moment, moment))


ROSTER = [  # Canvas's gradebook export: name, ID, SIS User ID, SIS Login ID, Section
    ("Lovelace, Ada", "1001", "S1", "ada", "A"), ("Blank, Bo", "1002", "S2", "bo", "A"),
    ("Part, Cy", "1003", "S3", "cy", "A"), ("Raise, Di", "1004", "S4", "di", "A"),
    ("Scratch, Ed", "1005", "S5", "ed", "B"), ("Json, Flo", "1006", "S6", "flo", "B"),
    ("Loop, Gus", "1007", "S7", "gus", "B"), ("Read, Hal", "1008", "S8", "hal", "B"),
    ("Patch, Ivy", "1009", "S9", "ivy", "C"), ("Twice, Jo", "1010", "S10", "jo", "C"),
    ("Late, Kim", "1011", "S11", "kim", "C"), ("Absent, Lee", "1012", "S12", "lee", "C"),
]


def messy_folder(root: Path) -> Path:
    folder = root / "submissions"
    write(solution(), folder / f"lovelaceada_1001_90001_{PART_1}.ipynb")                       # Canvas naming
    write(graded_release(), folder / "bo" / "Lesson 1 Part 1.ipynb")                            # a folder each
    write(partial(), folder / "Cy Part_2003_assignsubmission_file_" / "Copy of Lesson_1_Part_1.ipynb")  # Moodle
    write(raising(), folder / f"di-{PART_1}.ipynb")
    write(scratch_after_right(), folder / f"Ed Scratch - {PART_1}.ipynb")
    (folder / "flo").mkdir()
    (folder / "flo" / f"{PART_1}.ipynb").write_text("Traceback: my notebook did not save\n")
    write(endless(), folder / "gus" / f"{PART_1}.ipynb")
    write(reading_the_solutions(), folder / "hal" / f"{PART_1}.ipynb")
    write(patching_the_check(), folder / "ivy" / f"{PART_1}.ipynb")
    write(answered(solution(), {"1.1": "answer = 999"}), folder / f"jo-{PART_1}.ipynb",
          DEADLINE - dt.timedelta(days=2))                                                     # the older copy
    write(solution(), folder / f"jo-{PART_1} (1).ipynb", DEADLINE - dt.timedelta(hours=1))      # the newer copy
    write(solution(), folder / f"latekim_LATE_1011_90011_{PART_1}.ipynb")                     # Canvas: late
    (folder / "notes.txt").write_text("not a notebook")
    (folder / "ada" / ".ipynb_checkpoints").mkdir(parents=True)
    write(graded_release(), folder / "ada" / ".ipynb_checkpoints" / f"{PART_1}-checkpoint.ipynb")
    write(graded_release(), folder / "dave-homework.ipynb")
    return folder


@pytest.fixture(scope="module")
def graded(problems, tmp_path_factory):
    """The messy folder graded through the command, as `make grade` runs it."""
    root = tmp_path_factory.mktemp("term")
    folder = messy_folder(root)
    with (root / "roster.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section"])
        writer.writerow(["    Points Possible", "", "", "", ""])
        writer.writerows(ROSTER)
    # Moodle's grading worksheet gives Cy's time: an hour and a half after the deadline.
    (root / "times.csv").write_text('Identifier,Full name,Email address,Status,"Last modified (submission)"\n'
                                    'Participant 2003,Cy Part,cy@example.edu,Submitted for grading,'
                                    '"Friday, 11 December 2026, 6:30 PM"\n', encoding="utf-8")
    (root / "rubric.yml").write_text(
        "assignment: Lesson 1 problems (4242)\n"
        f"deadline: {DEADLINE.isoformat()}\ngrace_minutes: 15\nlate_penalty: 0.1\nclose_credit: 0.5\n"
        "time_limit: 8\nnotebooks:\n  lesson-1-part-1: {'1.1': 0.5}\n", encoding="utf-8")
    out = root / "out" / "not yet made"
    code = grade.main([str(folder), "--rubric", str(root / "rubric.yml"), "--roster", str(root / "roster.csv"),
                       "--times", str(root / "times.csv"), "--out", str(out), "--jobs", "2"])
    assert code == 0
    table = {row["student"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    return {"out": out, "table": table, "folder": folder}


def marks(row):
    return [row[f"{PART_1} {label}"] for label in LABELS]


def test_every_student_on_the_roster_has_a_row_in_roster_order_of_keys(graded):
    assert sorted(graded["table"]) == sorted(login for *_, login, _ in ROSTER)


@pytest.mark.parametrize("student, expected, score", [
    ("ada", ["0.5", "1", "1", "1", "1", "1"], "5.5"),
    ("bo", ["0"] * 6, "0"),
    ("cy", ["0.45", "0", "0", "0.45", "0", "0"], "0.9"),    # late (Moodle's time): a tenth off; 1.4 close
    ("di", ["0.5", "1", "0", "1", "1", "1"], "4.5"),
    ("ed", ["0.5", "1", "1", "1", "1", "1"], "5.5"),
    ("flo", ["0"] * 6, "0"),
    ("gus", ["0.5", "1", "0", "0", "0", "0"], "1.5"),
    ("hal", ["0"] * 6, "0"),
    ("ivy", ["0"] * 6, "0"),
    ("jo", ["0.5", "1", "1", "1", "1", "1"], "5.5"),
    ("kim", ["0.45", "0.9", "0.9", "0.9", "0.9", "0.9"], "4.95"),  # late (Canvas's LATE)
    ("lee", ["0"] * 6, "0"),
])
def test_the_marks_are_fair(graded, student, expected, score):
    if student == "hal" and not SANDBOXED:
        pytest.skip("only the mount namespace keeps solutions/ from a kernel that knows where it is")
    row = graded["table"][student]
    assert (marks(row), row["score"], row["out of"]) == (expected, score, "5.5")


def test_the_notes_say_what_happened(graded):
    notes = {student: row["notes"] for student, row in graded["table"].items()}
    assert notes["ada"] == "" and notes["ed"] == f"{PART_1}: code cell 5 raised NameError"
    assert notes["di"] == f"{PART_1}: code cell 6 raised ZeroDivisionError"
    assert notes["cy"] == f"{PART_1}: late (1 h 30 min after the deadline, by the LMS's times)"
    assert notes["kim"] == f"{PART_1}: late (Canvas marked it LATE)"
    assert notes["flo"].startswith(f"{PART_1}: the file is not JSON (line 1, column 1")
    assert notes["gus"] == f"{PART_1}: stopped: the notebook ran past its 8 s"
    assert notes["ivy"] == (f"{PART_1}: check cell changed for 1.4; the grader recorded the answer itself and "
                            "marked it against the solutions")
    assert notes["lee"] == f"{PART_1}: nothing handed in"
    assert graded["table"]["cy"]["late"] == graded["table"]["kim"]["late"] == PART_1
    assert graded["table"]["ada"]["late"] == ""


def test_the_report_names_every_file_not_graded_as_handed_in(graded):
    report = (graded["out"] / "report.txt").read_text(encoding="utf-8")
    folder = graded["folder"]
    assert f"- {folder / 'notes.txt'}: is a .txt, not a notebook (.ipynb or .md)" in report
    assert f"- {folder / 'dave-homework.ipynb'}: its name matches none of the notebooks graded" in report
    assert (f"- {folder / f'jo-{PART_1}.ipynb'}: a second copy of {PART_1} from jo; graded the later "
            f"jo-{PART_1} (1).ipynb instead") in report
    assert f"- {folder / 'flo' / f'{PART_1}.ipynb'}: is not JSON" in report
    assert f"- {folder / 'ada' / '.ipynb_checkpoints' / f'{PART_1}-checkpoint.ipynb'}: is a hidden or system" in report
    assert report.count("\n- ") == 5
    assert ("each kernel in its own mount namespace" if SANDBOXED else "scratch folder and cleaned environment only"
            ) in report


def test_canvas_and_moodle_files_import(graded):
    canvas = list(csv.reader((graded["out"] / "canvas.csv").open(encoding="utf-8")))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lesson 1 problems (4242)"]
    assert canvas[1] == ["Points Possible", "", "", "", "", "5.5"]
    assert ["Lovelace, Ada", "1001", "S1", "ada", "A", "5.5"] in canvas
    assert ["Late, Kim", "1011", "S11", "kim", "C", "4.95"] in canvas and len(canvas) == 2 + len(ROSTER)
    moodle = list(csv.DictReader((graded["out"] / "moodle.csv").open(encoding="utf-8")))
    lee = next(row for row in moodle if row["Full name"] == "Lee Absent")
    assert (lee["Lesson 1 problems (4242)"], lee["Feedback"]) == ("0", "0 of 5.5; see the notes in your feedback file")


def test_each_student_gets_a_feedback_file(graded):
    feedback = graded["out"] / "feedback"
    assert sorted(path.stem for path in feedback.glob("*.txt")) == sorted(login for *_, login, _ in ROSTER)
    cy = (feedback / "cy.txt").read_text(encoding="utf-8")
    assert cy.startswith("Lesson 1 problems (4242): feedback for Cy Part\nScore: 0.9 of 5.5 (16%)\n")
    assert "graded Cy Part_2003_assignsubmission_file_/Copy of Lesson_1_Part_1.ipynb (late)" in cy
    assert "    1.2  0 of 1  ⚠ A usual slip: 1,000 decode steps is one away from the answer" in cy
    assert "    1.4  0.45 of 1  ≈ Close: 20.4 times as many is a little high" in cy
    assert "    1.3  0 of 1  … Not answered yet" in cy
    assert "1.1  0.5 of 0.5  ✓ Right: 1,000 passes." in (feedback / "ada.txt").read_text(encoding="utf-8")
    assert "not handed in" in (feedback / "lee.txt").read_text(encoding="utf-8")
    assert "    1.3  0 of 1  not reached: the notebook was stopped before this problem" in (
        feedback / "gus.txt").read_text(encoding="utf-8")


@pytest.mark.skipif(not SANDBOXED, reason="needs unshare (Linux mount namespaces)")
def test_the_sandbox_is_what_stops_the_student_reading_the_solutions(problems, tmp_path, graded):
    # Run bare (no sandbox, no recording cells), the same notebook does find the solutions and all six are right.
    write(reading_the_solutions(), tmp_path / "hal.ipynb")
    bare = grade.run_notebook(tmp_path / "hal.ipynb", 20)
    assert [bare.records[label]["answer"] for label in LABELS] == [
        problems[PART_1][label]["expected"] for label in LABELS]
    assert graded["table"]["hal"]["score"] == "0"


def test_the_time_limit_is_for_the_whole_notebook_not_each_cell(tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("import time\ntime.sleep(0.8)") for _ in range(6)]
    nbformat.write(notebook, tmp_path / "slow.ipynb")
    ran = grade.run_notebook(tmp_path / "slow.ipynb", time_limit=2)
    # Each cell is well under 2 s, so a limit per cell would let all six finish.
    assert ran.problems == ["stopped: the notebook ran past its 2 s"] and 1 <= ran.cells_run <= 3


@pytest.mark.parametrize("content, reason", [
    ("", "is empty"), ("{}", "is JSON but not a notebook: it has no list of cells"),
    ("not json", "is not JSON (line 1, column 1"), ('{"cells": [], "metadata": {}}', "holds no code cells"),
])
def test_a_bad_file_gets_a_reason_not_an_exception(tmp_path, content, reason):
    (tmp_path / "x.ipynb").write_text(content)
    ran = grade.run_notebook(tmp_path / "x.ipynb", 5)
    assert reason in ran.unreadable and not ran.records


@pytest.mark.parametrize("path, who", [
    ("alice/lesson-1-part-1.ipynb", ("alice", PART_1)),
    ("alice/any/depth/Lesson_1_Part_2 (1).ipynb", ("alice", "lesson-1-part-2")),
    ("bob-lesson-1-part-3.ipynb", ("bob", "lesson-1-part-3")),
    ("Bob Smith - Plate XXIII.1.md", ("bob-smith", "plate-xxiii-1")),
    ("Copy of lesson-1-part-4 - carol.ipynb", ("carol", "lesson-1-part-4")),
    ("smithjohn_LATE_123_456_lesson-1-part-1-1.ipynb", ("smithjohn", PART_1)),
    ("John Smith_77_assignsubmission_file_/Lesson 1 part 2.ipynb", ("john-smith", "lesson-1-part-2")),
    ("lesson-1-part-4.ipynb", None),
    ("lesson-1-part-4 (2).ipynb", None),
    ("lesson-1-part-12.ipynb", None),
    ("dave-homework.ipynb", None),
])
def test_which_student_and_notebook_a_file_is(path, who):
    names = ["lesson-1-part-1", "lesson-1-part-2", "lesson-1-part-3", "lesson-1-part-4", "plate-xxiii-1"]
    assert grade.identify(Path("/s") / path, Path("/s"), names) == who


def test_the_command_refuses_a_bad_folder_notebook_or_rubric(tmp_path, capsys):
    assert grade.main([str(tmp_path / "nowhere")]) == 2
    assert grade.main([str(tmp_path), "--notebooks", "lesson-9"]) == 2
    assert "notebooks must be among" in capsys.readouterr().err
    (tmp_path / "rubric.yml").write_text("close_credit: 2\n")
    assert grade.main([str(tmp_path), "--rubric", str(tmp_path / "rubric.yml")]) == 2
    assert "close_credit must be a number from 0 to 1, got 2" in capsys.readouterr().err
    (tmp_path / "rubric.yml").write_text("notebooks: {lesson-9: {}}\n")
    assert grade.main([str(tmp_path), "--rubric", str(tmp_path / "rubric.yml")]) == 2
    assert "notebook 'lesson-9' is not among the solutions" in capsys.readouterr().err
