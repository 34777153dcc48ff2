"""The grader (coursegrader, as `make grade` runs it) on a term's messy folder: fair marks, clear notes, files an LMS imports.

The folder is made here, from the solutions and the releases, so no big notebook is committed:
a perfect submission, a blank one, a partly answered one, one whose answer cell raises, one with
a scratch cell that raises after a right answer, one that is not JSON, one that never ends, two
that cheat (reading the solutions, patching the check), two copies from one student, late ones,
and a student on the roster who handed in nothing.
"""
import csv
import datetime as dt
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import jupytext
import nbformat
import pytest

import servingmath as sm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import make_exercises  # noqa: E402
import nbgate  # noqa: E402
from coursegrader import (cgroups, cli, exports, feedback, marking, roster, rubric, running, sandbox,  # noqa: E402
                          submissions)
from coursegrader import answers as variant_answers  # noqa: E402
from coursegrader.key import ENV, graded_id  # noqa: E402
from servingmath.checks import _show, check  # noqa: E402  (how feedback prints a number; the check)

PART_1 = "lesson-1-part-1"
KEY = b"a key for the tests alone, 32 characters or more, not secret"
os.environ[ENV] = KEY.decode()      # the instructor's key, as `make grade` reads it
LABELS = ["1.1", "1.2", "1.3", "1.4", "1.5", "1.6"]
DEADLINE = dt.datetime(2026, 12, 11, 17, 0, tzinfo=dt.timezone.utc)
SANDBOX_PROBLEM = sandbox.sandbox_problem()
SANDBOXED = not SANDBOX_PROBLEM
needs_sandbox = pytest.mark.skipif(not SANDBOXED, reason=f"no sandbox here: {SANDBOX_PROBLEM}")


@pytest.fixture(scope="module")
def problems():
    """Every solution notebook run once: the reference the grader marks against."""
    return marking.reference(marking.notebook_names(), jobs=2)


def test_every_check_in_every_solution_is_right(problems):
    assert list(problems) == ["lesson-1-part-1", "lesson-1-part-2", "lesson-1-part-3", "lesson-1-part-4",
                              "lesson-2-part-1", "lesson-2-part-2", "lesson-2-part-3", "lesson-2-part-4",
                              "lesson-3-part-1", "lesson-3-part-2", "lesson-3-part-3", "lesson-3-part-4",
                              "lesson-4-part-1", "lesson-4-part-2", "lesson-4-part-3", "lesson-4-part-4",
                              "plate-xxiii-1", "plate-xxiii-2", "plate-xxiii-4"]
    assert [len(records) for records in problems.values()] == [6, 7, 6, 7, 5, 6, 6, 6, 6, 5, 5, 5, 5, 5, 5, 5, 7, 5, 5]
    for records in problems.values():
        assert {record["status"] for record in records.values()} == {"right"}


@pytest.mark.parametrize("folder, status", [("exercises", "unanswered"), ("exercises/graded", "unanswered")])
def test_blank_releases_run_to_the_end_and_every_check_says_not_answered_yet(problems, folder, status):
    """Every exercise notebook as a student opens it: each cell runs with no error, no stderr and no figure
    shown as text (the JupyterLab test opens only two of them, and relies on these runs for the rest)."""
    runs = running.run_many([ROOT / folder / f"{name}.md" for name in problems], time_limit=60, jobs=2)
    for name, ran in zip(problems, runs):
        assert ran.problems == []
        assert nbgate.problems_in(ran.executed) == [], f"{folder}/{name}"
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


def right(student_id, label):
    """The answer to ``student_id``'s graded variant of problem ``label`` (their ID with its code)."""
    return variant_answers.expected(PART_1, label, graded_id(KEY, student_id))


def worked(student_id, answers=None):
    """The graded release with ``student_id`` entered and each of that student's own answers right,
    but those in ``answers`` (label: the answer cell's source)."""
    notebook = graded_release()
    setup = next(cell for cell in notebook.cells if 'STUDENT_ID = ""' in cell.source)
    setup.source = setup.source.replace('STUDENT_ID = ""', f"STUDENT_ID = {graded_id(KEY, student_id)!r}")
    own = {label: f"answer = {right(student_id, label)!r}" for label in LABELS}
    return answered(notebook, {**own, **(answers or {})})


def partial():
    """Cy's variant: 1.1 right, 1.2 one too many, 1.4 close (5 % high), the rest blank."""
    return answered(worked("S3", {label: "answer = None  # your answer here" for label in LABELS}), {
        "1.1": f"answer = {right('S3', '1.1')!r}", "1.2": f"answer = {right('S3', '1.2') + 1!r}",
        "1.4": f"answer = {right('S3', '1.4') * 1.05!r}"})


def raising():
    """1.3's answer cell raises before it sets `answer`: 1.3 is not answered, 1.2's answer is not taken for it."""
    return worked("S4", {"1.3": "answer = 1 / 0"})


def scratch_after_right():
    """A scratch cell that raises sits between 1.2's right answer and its check."""
    notebook = worked("S5")
    notebook.cells.insert(answer_cell(notebook, "1.2") + 1, nbformat.v4.new_code_cell("print(undefined_name)"))
    return notebook


def endless():
    """A loop that never ends after 1.2's check (asleep: the limit is wall-clock time, and the test's processor is
    left to the other tests)."""
    notebook = worked("S7")
    notebook.cells.insert(answer_cell(notebook, "1.3"),
                          nbformat.v4.new_code_cell("import time\nwhile True:\n    time.sleep(1)"))
    return notebook


STEAL = '''import pathlib, re, sys
import servingmath
places = [pathlib.Path({root!r})] + [pathlib.Path(entry).parent for entry in sys.path if entry]
# The grader's own folder, through /proc: what a kernel run as root reaches without a PID namespace.
places += sorted(pathlib.Path("/proc").glob("[0-9]*/cwd"))
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
    notebook = worked("S9")
    notebook.cells.insert(answer_cell(notebook, "1.1"), nbformat.v4.new_code_cell(
        "import servingmath.checks\n_real = servingmath.checks.check\n"
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
    ("Copy, Mo", "1013", "S13", "mo", "C"),
]
TEST_STUDENT = ("Student, Test", "1099", "", "", "A")   # Canvas's Student View: not a student


def messy_folder(root: Path) -> Path:
    folder = root / "submissions"
    # Canvas naming, no LATE: on time, though the file's date (as an unzip leaves it) is after the deadline.
    write(worked("S1"), folder / f"lovelaceada_1001_90001_{PART_1}.ipynb", DEADLINE + dt.timedelta(days=3))
    write(graded_release(), folder / "bo" / "Lesson 1 Part 1.ipynb")                            # a folder each
    write(partial(), folder / "Cy Part_2003_assignsubmission_file_" / "Copy of Lesson_1_Part_1.ipynb")  # Moodle
    write(raising(), folder / f"di-{PART_1}.ipynb")
    write(scratch_after_right(), folder / f"Ed Scratch - {PART_1}.ipynb")
    (folder / "flo").mkdir()
    (folder / "flo" / f"{PART_1}.ipynb").write_text("Traceback: my notebook did not save\n")
    write(endless(), folder / "gus" / f"{PART_1}.ipynb")
    write(reading_the_solutions(), folder / "hal" / f"{PART_1}.ipynb")
    write(patching_the_check(), folder / "ivy" / f"{PART_1}.ipynb")
    write(worked("S10", {"1.1": "answer = 999"}), folder / f"jo-{PART_1}.ipynb",
          DEADLINE - dt.timedelta(days=2))                                                     # the older copy
    write(worked("S10"), folder / f"jo-{PART_1} (1).ipynb", DEADLINE - dt.timedelta(hours=1))   # the newer copy
    write(worked("S11"), folder / f"latekim_LATE_1011_90011_{PART_1}.ipynb")                  # Canvas: late
    write(worked("S1"), folder / "mo" / f"{PART_1}.ipynb")      # Ada's ID entered, Ada's answers copied
    (folder / "notes.txt").write_text("not a notebook")
    (folder / "ada" / ".ipynb_checkpoints").mkdir(parents=True)
    write(graded_release(), folder / "ada" / ".ipynb_checkpoints" / f"{PART_1}-checkpoint.ipynb")
    write(graded_release(), folder / "dave-homework.ipynb")
    write(worked("S1"), folder / f"studenttest_1099_90099_{PART_1}.ipynb")   # Canvas's Student View tried it
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
        writer.writerows(ROSTER + [TEST_STUDENT])
    # Moodle's grading worksheet gives Cy's time in the teacher's zone (the rubric's timezone, New York):
    # 6:30 PM there is 23:30 UTC, six and a half hours after the deadline.
    (root / "times.csv").write_text('Identifier,Full name,Email address,Status,"Last modified (submission)"\n'
                                    'Participant 2003,Cy Part,cy@example.edu,Submitted for grading,'
                                    '"Friday, 11 December 2026, 6:30 PM"\n', encoding="utf-8")
    (root / "rubric.yml").write_text(
        "assignment: Lesson 1 problems (4242)\n"
        f"deadline: {DEADLINE.isoformat()}\ntimezone: America/New_York\ngrace_minutes: 15\nlate_penalty: 0.1\n"
        "close_credit: 0.5\n"
        "time_limit: 20\n"   # room for a notebook on a loaded machine (conftest.WAITING)
        "notebooks:\n  lesson-1-part-1: {'1.1': 0.5}\n", encoding="utf-8")
    out = root / "out" / "not yet made"
    code = cli.main([str(folder), "--rubric", str(root / "rubric.yml"), "--roster", str(root / "roster.csv"),
                       "--times", str(root / "times.csv"), "--out", str(out), "--jobs", "2",
                       *([] if SANDBOXED else ["--unsafe"])])
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
    ("mo", ["0"] * 6, "0"),     # another's variant, marked against Mo's own numbers
])
def test_the_marks_are_fair(graded, student, expected, score):
    if student == "hal" and not SANDBOXED:
        pytest.skip("only the sandbox keeps solutions/ from a kernel that knows where it is")
    row = graded["table"][student]
    assert (marks(row), row["score"], row["out of"]) == (expected, score, "5.5")


def test_the_notes_say_what_happened(graded):
    notes = {student: row["notes"] for student, row in graded["table"].items()}
    assert notes["ada"] == "" and notes["ed"] == (f"{PART_1}: 1 code cell raised an error (NameError in cell 7); "
                                                  "the answers recorded around it were marked as given")
    assert notes["di"] == (f"{PART_1}: 1 code cell raised an error (ZeroDivisionError in cell 9); the answers "
                           "recorded around it were marked as given")
    assert notes["bo"].endswith(f"{PART_1}: handed in blank, no problem answered: was it the file meant?")
    assert notes["cy"] == f"{PART_1}: late (6 h 30 min after the deadline, by the LMS's times)"
    assert notes["kim"] == f"{PART_1}: late (Canvas marked it LATE)"
    assert notes["flo"].startswith(f"{PART_1}: the file is not JSON (line 1, column 1")
    assert notes["gus"] == f"{PART_1}: stopped: the notebook ran past its 20 s"
    assert notes["ivy"] == (f"{PART_1}: check cell changed for 1.4; the grader recorded the answer itself and "
                            "marked it against the solutions")
    assert notes["lee"] == f"{PART_1}: nothing handed in"
    assert notes["mo"] == (f"{PART_1}: the notebook shows the numbers of ID {graded_id(KEY, 's1').lower()}, none of "
                           "this student's IDs on the roster (SIS User ID S13, SIS Login ID mo); marked against the "
                           f"numbers of their SIS User ID ({graded_id(KEY, 'S13').lower()})")
    assert graded["table"]["cy"]["late"] == graded["table"]["kim"]["late"] == PART_1
    assert graded["table"]["ada"]["late"] == ""


def test_the_report_names_every_file_not_graded_as_handed_in(graded):
    report = (graded["out"] / "report.txt").read_text(encoding="utf-8")
    folder = graded["folder"]
    assert f"- {folder / 'notes.txt'}: is a .txt, not a notebook (.ipynb or .md)" in report
    # A graded release renamed: its metadata says which notebook, but a name at the top level says nobody.
    assert f"- {folder / 'dave-homework.ipynb'}: its metadata says which notebook it is but its name not whose" in report
    assert (f"- {folder / f'jo-{PART_1}.ipynb'}: a second copy of {PART_1} from jo; graded the later "
            f"jo-{PART_1} (1).ipynb instead") in report
    assert f"- {folder / 'flo' / f'{PART_1}.ipynb'}: is not JSON" in report
    assert f"- {folder / 'ada' / '.ipynb_checkpoints' / f'{PART_1}-checkpoint.ipynb'}: is a hidden or system" in report
    assert (f"- {folder / f'studenttest_1099_90099_{PART_1}.ipynb'}: names a student (studenttest) who is Canvas's "
            "Test Student (Student View), left out as no student") in report
    # And the blank notebooks: Bo's, and in the sandbox Hal's, who found nothing to steal (run --unsafe, he does).
    blank = ["bo", "hal"] if SANDBOXED else ["bo"]
    assert report.count("\n- ") == 6 + len(blank)
    assert "Handed in blank (no problem answered), graded 0:\n" + "".join(
        f"- {who}: lesson-1-part-1\n" for who in blank) in report
    assert ("bubblewrap: each kernel in its own PID, mount, network and IPC namespaces" if SANDBOXED else
            "sandbox: NONE (--unsafe") in report
    # Whether a cgroup held each notebook's processes together is said once, for the whole run.
    together = exports.TOGETHER + (": NOT bounded, no cgroup" if cgroups.problem() else ": each notebook in a cgroup")
    assert report.count(exports.TOGETHER) == (1 if SANDBOXED else 0) and (together in report or not SANDBOXED)


def test_canvas_and_moodle_files_import(graded):
    canvas = list(csv.reader((graded["out"] / "canvas.csv").open(encoding="utf-8")))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lesson 1 problems (4242)"]
    assert canvas[1] == ["Points Possible", "", "", "", "", "5.5"]
    assert ["Lovelace, Ada", "1001", "S1", "ada", "A", "5.5"] in canvas
    assert ["Late, Kim", "1011", "S11", "kim", "C", "4.95"] in canvas and len(canvas) == 2 + len(ROSTER)
    moodle = list(csv.DictReader((graded["out"] / "moodle.csv").open(encoding="utf-8")))
    lee = next(row for row in moodle if row["Full name"] == "Lee Absent")
    assert (lee["Lesson 1 problems (4242)"], lee["Feedback"]) == ("0", "0 of 5.5; see the notes in your feedback file")
    # From a Canvas roster, Moodle's file still names each student by an ID Moodle can match: the SIS ID.
    assert lee["ID number"] == "S12" and len(moodle) == len(ROSTER)
    assert not any("Test" in row[0] for row in canvas)


def test_each_student_gets_a_feedback_file(graded):
    feedback = graded["out"] / "feedback"
    assert sorted(path.stem for path in feedback.glob("*.txt")) == sorted(login for *_, login, _ in ROSTER)
    cy = (feedback / "cy.txt").read_text(encoding="utf-8")
    assert cy.startswith("Lesson 1 problems (4242): feedback for Cy Part\nScore: 0.9 of 5.5 (16%)\n")
    assert "graded Cy Part_2003_assignsubmission_file_/Copy of Lesson_1_Part_1.ipynb (late)" in cy
    slip = _show(right("S3", "1.2") + 1, "decode steps")
    assert f"    1.2  0 of 1  ✗ {slip} is not right: it looks like a count off by one (look again" in cy
    close = _show(right("S3", "1.4") * 1.05, "times as many")
    assert f"    1.4  0.45 of 1  ≈ close: {close} is near the answer but outside its tolerance" in cy
    assert "    1.3  0 of 1  … no answer: `answer` was still None when this problem's cell ran" in cy
    assert ("Late: lesson-1-part-1 was handed in 6 h 30 min after the deadline, by the LMS's times. The rubric "
            "takes 10% off a late notebook's points") in cy
    assert "- lesson-1-part-1: late" not in cy   # told once, in the Late paragraph
    kim = (feedback / "kim.txt").read_text(encoding="utf-8")
    assert ("\nLate: lesson-1-part-1 (Canvas marked it LATE). The rubric takes 10% off a late notebook's points: "
            "each mark of a notebook marked (late) above is 90% of what the answer earned.\n") in kim
    ada = (feedback / "ada.txt").read_text(encoding="utf-8")
    assert f"\n  Your numbers are those of your SIS User ID on the roster ({graded_id(KEY, 'S1')})\n" in ada
    assert f"1.1  0.5 of 0.5  ✓ right: {_show(right('S1', '1.1'), 'passes')}\n" in ada
    # Nothing a student is told holds an expected figure, nor the words of a check cell still to run.
    for path in feedback.glob("*.txt"):
        text = path.read_text(encoding="utf-8")
        assert "package's figure" not in text and "run this cell again" not in text and "Not yet" not in text
    assert f"{_show(right('S3', '1.2'), 'decode steps')}" not in cy
    assert "not handed in" in (feedback / "lee.txt").read_text(encoding="utf-8")
    assert "    1.3  0 of 1  not reached: the notebook was stopped before this problem" in (
        feedback / "gus.txt").read_text(encoding="utf-8")


def test_feedback_goes_in_one_zip_named_for_canvas_and_a_rerun_leaves_nothing_old(graded, tmp_path):
    import shutil
    import zipfile
    names = sorted(zipfile.ZipFile(graded["out"] / "feedback.zip").namelist())
    assert "lovelaceada_1001_90001_feedback.txt" in names and "absentlee_1012_feedback.txt" in names
    assert len(names) == len(ROSTER)
    # A second run into a folder an earlier run filled: a stray file from the first is gone.
    out = tmp_path / "out"
    shutil.copytree(graded["out"], out)
    stray = out / "feedback" / "someone-no-longer-enrolled.txt"
    stray.write_text("old")
    (tmp_path / "empty").mkdir()
    (tmp_path / "rubric.yml").write_text("assignment: A\nnotebooks:\n  lesson-1-part-1: {}\n")
    assert cli.main([str(tmp_path / "empty"), "--rubric", str(tmp_path / "rubric.yml"), "--out", str(out),
                       "--jobs", "1", *([] if SANDBOXED else ["--unsafe"])]) == 0
    assert not stray.exists() and list((out / "feedback").glob("*.txt")) == []


@needs_sandbox
def test_the_sandbox_is_what_stops_the_student_reading_the_solutions(problems, tmp_path, graded):
    # Run bare (no sandbox, no recording cells), the same notebook does find the solutions and all six are right.
    write(reading_the_solutions(), tmp_path / "hal.ipynb")
    bare = running.run_notebook(tmp_path / "hal.ipynb", 20)
    assert [bare.records[label]["answer"] for label in LABELS] == [
        problems[PART_1][label]["expected"] for label in LABELS]
    assert graded["table"]["hal"]["score"] == "0"


def test_the_time_limit_is_for_the_whole_notebook_not_each_cell(tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("import time\ntime.sleep(0.8)") for _ in range(6)]
    nbformat.write(notebook, tmp_path / "slow.ipynb")
    ran = running.run_notebook(tmp_path / "slow.ipynb", time_limit=2)
    # Each cell is well under 2 s, so a limit per cell would let all six finish.
    assert ran.problems == ["stopped: the notebook ran past its 2 s"] and 1 <= ran.cells_run <= 3


@pytest.mark.parametrize("content, reason", [
    ("", "is empty"), ("{}", "is JSON but not a notebook: it has no list of cells"),
    ("not json", "is not JSON (line 1, column 1"), ('{"cells": [], "metadata": {}}', "holds no code cells"),
])
def test_a_bad_file_gets_a_reason_not_an_exception(tmp_path, content, reason):
    (tmp_path / "x.ipynb").write_text(content)
    ran = running.run_notebook(tmp_path / "x.ipynb", 5)
    assert reason in ran.unreadable and not ran.records


@pytest.mark.parametrize("content, reason", [
    ("  \n\n", "is empty (4 bytes of blank space)"),
    ('{"cells": [{"cell_type": "code"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
     "is not a valid notebook (ValidationError: "),
    ("PK\x03\x04\xff\xfe", "is not text (not UTF-8)"),
    ('{"cells": [{"cell_type": "code", "sour', "is not JSON (line 1, column 34: Unterminated string"),
])
def test_a_broken_notebook_is_told_as_what_is_wrong_with_it(tmp_path, content, reason):
    (tmp_path / "x.ipynb").write_bytes(content.encode("latin-1"))
    assert reason in running.run_notebook(tmp_path / "x.ipynb", 5).unreadable


def test_a_messy_folder_gives_each_file_a_row_or_a_reason(tmp_path, capsys):
    """A folder as an instructor unpacks it: names of every kind, a copy handed in twice, a zip inside another
    folder, Moodle's folder with one more inside, files that are no notebook, broken, empty or too large, and links."""
    folder = tmp_path / "submissions"
    write(worked("S1", {"1.1": "answer = 999"}), folder / "Ada" / f"{PART_1}.ipynb", DEADLINE - dt.timedelta(days=2))
    write(worked("S1"), folder / f"ada-{PART_1}.ipynb", DEADLINE - dt.timedelta(days=1))    # the later copy
    write(worked("S3"), folder / "unzipped" / "cy" / f"{PART_1}.ipynb")                     # a folder further down
    write(worked("S4"), folder / "Di Raise_2004_assignsubmission_file_" / "work" / f"{PART_1}.ipynb")
    files = {"em": b"", "flo": b"PK\x03\x04\xff", "gus": b'{"cells": "none"}', "hal": b"\n  \n"}
    for student, content in files.items():
        (folder / student).mkdir()
        (folder / student / f"{PART_1}.ipynb").write_bytes(content)
    (folder / "ivy").mkdir()
    (folder / "ivy" / f"{PART_1}.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    (folder / "ivy" / f"{PART_1}.ipynb").symlink_to(folder / f"ada-{PART_1}.ipynb")     # Ada's work, linked
    (folder / "jo").symlink_to(folder / "Ada", target_is_directory=True)
    (folder / "notes.txt").write_text("not a notebook")
    with (folder / f"kay-{PART_1}.ipynb").open("wb") as huge:     # sparse: nothing written to the disk
        huge.truncate(submissions.LARGEST + 2 ** 20)
    (tmp_path / "rubric.yml").write_text("assignment: Messy\ntime_limit: 30\nnotebooks:\n  lesson-1-part-1: {}\n")
    people = [("Lovelace, Ada", "1001", "S1", "ada"), ("Part, Cy", "1003", "S3", "cy"), ("Raise, Di", "1004", "S4", "di"),
              ("Mty, Em", "1005", "S5", "em"), ("Bin, Flo", "1006", "S6", "flo"), ("Jsn, Gus", "1007", "S7", "gus"),
              ("Wsp, Hal", "1008", "S8", "hal"), ("Zip, Ivy", "1009", "S9", "ivy"), ("Link, Jo", "1010", "S10", "jo")]
    (tmp_path / "roster.csv").write_text("Student,ID,SIS User ID,SIS Login ID\n" + "".join(
        f'"{name}",{number},{sis},{login}\n' for name, number, sis, login in people), encoding="utf-8")
    out = tmp_path / "out"
    assert cli.main([str(folder), "--rubric", str(tmp_path / "rubric.yml"), "--roster", str(tmp_path / "roster.csv"),
                     "--out", str(out), "--jobs", "2", *([] if SANDBOXED else ["--unsafe"])]) == 0
    told = capsys.readouterr().err
    assert "Traceback" not in told and "Task was destroyed" not in told
    table = {row["student"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    assert sorted(table) == sorted(login for *_, login in people)
    assert [table[student]["score"] for student in ("ada", "cy", "di")] == ["6", "6", "6"]
    for student, why in (("em", "the file is empty (0 bytes)"), ("flo", "the file is not text (not UTF-8)"),
                         ("gus", "the file is JSON but not a notebook"), ("hal", "the file is empty (4 bytes of blank")):
        assert table[student]["score"] == "0" and table[student]["notes"].startswith(f"{PART_1}: {why}"), student
    assert table["ivy"]["notes"] == table["jo"]["notes"] == f"{PART_1}: nothing handed in"
    report = (out / "report.txt").read_text(encoding="utf-8")
    for path, why in ((f"Ada/{PART_1}.ipynb", f"a second copy of {PART_1} from ada; graded the later ada-{PART_1}"),
                      (f"ivy/{PART_1}.zip", "is a .zip, not a notebook"), (f"ivy/{PART_1}.ipynb", "is a link, not a"),
                      ("jo", "is a link, not a file"), ("notes.txt", "is a .txt, not a notebook"),
                      (f"em/{PART_1}.ipynb", "is empty (0 bytes)"),
                      (f"kay-{PART_1}.ipynb", "is 65 MiB, more than the 64 MiB the grader reads of a notebook")):
        assert f"- {folder / path}: {why}" in report and f"grade: {folder / path}: {why}" in told, path


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
    assert submissions.identify(Path("/s") / path, Path("/s"), names) == who


@pytest.mark.parametrize("files, students", [
    (["term/alice/a.ipynb", "term/bob/work/b.ipynb", "term/.DS_Store"], ["alice", "bob"]),   # unpacked in a folder
    (["term/zip/alice/a.ipynb", "term/zip/bob/b.ipynb"], ["alice", "bob"]),                 # and in another
    (["alice/work/a.ipynb"], ["alice"]),                          # one student, a folder of their own inside
    (["alice/a.ipynb", "alice/old/b.ipynb"], ["alice", "alice"]),
    (["alice/a.ipynb", "bob/b.ipynb"], ["alice", "bob"]),
])
def test_a_folder_holding_every_students_folder_is_looked_through(tmp_path, files, students):
    for name in files:
        path = tmp_path / name.replace("a.ipynb", f"{PART_1}.ipynb").replace("b.ipynb", f"{PART_1}.ipynb")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    found, _ = submissions.find_submissions(tmp_path, [PART_1])
    assert sorted(submission.student for submission in found) == students


def test_the_command_refuses_a_bad_folder_notebook_or_rubric(tmp_path, capsys):
    unsafe = [] if SANDBOXED else ["--unsafe"]    # where there is no sandbox, the command refuses that first
    assert cli.main([str(tmp_path / "nowhere"), *unsafe]) == 2
    assert cli.main([str(tmp_path), "--notebooks", "lesson-9", *unsafe]) == 2
    assert "notebooks must be among" in capsys.readouterr().err
    (tmp_path / "rubric.yml").write_text("close_credit: 2\n")
    assert cli.main([str(tmp_path), "--rubric", str(tmp_path / "rubric.yml"), *unsafe]) == 2
    assert "close_credit must be a number from 0 to 1, got 2" in capsys.readouterr().err
    (tmp_path / "rubric.yml").write_text("notebooks: {lesson-9: {}}\n")
    assert cli.main([str(tmp_path), "--rubric", str(tmp_path / "rubric.yml"), *unsafe]) == 2
    assert "notebook 'lesson-9' is not among the solutions" in capsys.readouterr().err


# -- the three attacks, as root --------------------------------------------------------
PROC_ROUTE = '''import os, pathlib, re
stolen = {}
# The kernel's parent (the grader) first, then every other process the kernel can see.
for cwd in [pathlib.Path(f"/proc/{os.getppid()}/cwd"), *sorted(pathlib.Path("/proc").glob("[0-9]*/cwd"))]:
    if stolen:
        break
    for name in ("solutions/lesson-1-part-1.md", "../solutions/lesson-1-part-1.md"):
        try:
            text = (cwd / name).read_text()
        except OSError:
            continue
        for number, block in enumerate(re.findall(r"### BEGIN SOLUTION\\n(.*?)### END SOLUTION", text, re.S), 1):
            scope = {}
            exec(block, scope)
            stolen[number] = scope["answer"]
'''

WRITE_PACKAGE = '''import pathlib, servingmath
written = []
for place in [pathlib.Path(servingmath.__file__).parent / "checks.py"]:
    try:
        with place.open("a") as handle:
            handle.write("\\ncheck = submit = lambda *args, **kwargs: None\\n")
        written.append(str(place))
    except OSError as error:
        written.append(repr(error))
'''

OUTLIVE = '''import subprocess, sys, textwrap
# A process of its own session that waits for the grader to finish, then rewrites every canvas.csv it finds.
subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
    import pathlib, time  # grader-attack-marker
    for _ in range(600):
        time.sleep(0.05)
        for path in pathlib.Path("/").glob("**/canvas.csv"):
            try:
                path.write_text("Student,ID\\\\nhacked,1\\\\n")
            except OSError:
                pass
""")], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
'''


LIMITS = '''import os, subprocess
seen = {"uid": os.getuid()}
try:
    seen["shadow"] = open("/etc/shadow").read()
except OSError as error:
    seen["shadow"] = type(error).__name__
children = []
try:
    for _ in range(5000):
        children.append(subprocess.Popen(["sleep", "2"]))
except OSError:
    pass
seen["processes"] = len(children)
for child in children:
    child.wait()
try:
    hog = bytearray(16 * 2**30)
    seen["memory"] = "held"
except MemoryError:
    seen["memory"] = "refused"
import json
from ipykernel.connect import get_connection_file
given = os.path.dirname(get_connection_file())      # the one folder of the grader's machine it is shown
sockets = os.path.dirname(json.load(open(get_connection_file()))["ip"])    # where its sockets are
for place in ("/tmp", "/dev/shm", os.path.expanduser("~"), given, sockets):
    try:
        with open(os.path.join(place, "fill"), "wb") as handle:
            for _ in range(1024):
                handle.write(b"x" * 2**20)
        seen[place] = "filled"
    except OSError as error:
        seen[place] = type(error).__name__
print(seen)
'''
FLOOD = "import sys\nfor _ in range(64):\n    sys.stdout.write('y' * 2**20)"


def attacker(code: str, answers: dict[str, str]):
    notebook = graded_release()
    notebook.cells.insert(answer_cell(notebook, "1.1"), nbformat.v4.new_code_cell(code))
    return answered(notebook, answers)


def survivors(marker: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker in cmdline.read_bytes().decode(errors="replace"):
                found.append(cmdline.parent.name)
        except OSError:
            continue
    return found


@pytest.fixture(scope="module")
def attacked(problems, tmp_path_factory):
    """Three attackers and an honest student graded after them, one at a time, as root."""
    root = tmp_path_factory.mktemp("attacks")
    folder = root / "submissions"
    write(attacker(PROC_ROUTE, {label: f"answer = stolen.get({n})" for n, label in enumerate(LABELS, 1)}),
          folder / "a-proc" / f"{PART_1}.ipynb")
    write(attacker(WRITE_PACKAGE, {label: "answer = 31337" for label in LABELS}),
          folder / "b-package" / f"{PART_1}.ipynb")
    write(attacker(OUTLIVE, {label: "answer = 31337" for label in LABELS}), folder / "c-outlive" / f"{PART_1}.ipynb")
    write(worked("d-honest"), folder / "d-honest" / f"{PART_1}.ipynb")
    limits = attacker(LIMITS, {"1.1": "answer = str(seen['uid'])", "1.2": "answer = seen['shadow']",
                               "1.3": "answer = str(seen['processes'])", "1.4": "answer = seen['memory']",
                               "1.5": "answer = seen['/tmp'] + seen['/dev/shm']",
                               "1.6": "answer = seen[os.path.expanduser('~')] + seen[given] + seen[sockets]"})
    limits.cells.insert(answer_cell(limits, "1.1"), nbformat.v4.new_code_cell(FLOOD))
    write(limits, folder / "e-limits" / f"{PART_1}.ipynb")
    (root / "rubric.yml").write_text("assignment: Attacks\ntime_limit: 20\nnotebooks:\n  lesson-1-part-1: {}\n")
    checks = (ROOT / "src" / "servingmath" / "checks.py").read_bytes()
    out = root / "out"
    # The grader in a process of its own, so that its peak memory is its own, not that of other tests run here;
    # read as VmHWM, which starts again at exec (ru_maxrss keeps the forking test process's peak).
    graded = subprocess.run(
        [sys.executable, "-c", "import re, sys\nfrom coursegrader import cli\ncode = cli.main(sys.argv[1:])\n"
         "status = open('/proc/self/status').read()\n"
         "print(re.search(r'VmHWM:\\s+(\\d+) kB', status).group(1), file=sys.stderr)\nsys.exit(code)",
         str(folder), "--rubric", str(root / "rubric.yml"), "--out", str(out), "--jobs", "1"],
        capture_output=True, text=True, timeout=900, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert graded.returncode == 0, graded.stderr[-3000:]
    canvas = (out / "canvas.csv").read_bytes()
    time.sleep(3)  # time for a process left behind to act
    table = {row["student"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    return {"table": table, "canvas_before": canvas, "out": out,
            "grader_rss": int(graded.stderr.split()[-1]) * 1024, "canvas_after": (out / "canvas.csv").read_bytes(),
            "checks_before": checks, "checks_after": (ROOT / "src" / "servingmath" / "checks.py").read_bytes()}


@needs_sandbox
def test_reading_the_grader_through_proc_gains_nothing(attacked):
    assert os.geteuid() == 0 or pytest.skip("the /proc route matters as root")
    assert attacked["table"]["a-proc"]["score"] == "0"


def test_the_proc_route_does_reach_the_solutions_without_the_sandbox(problems, tmp_path):
    # The same notebook run bare, from the repository as the grader runs: it finds every answer.
    write(attacker(PROC_ROUTE, {label: f"answer = stolen.get({n})" for n, label in enumerate(LABELS, 1)}),
          tmp_path / "a.ipynb")
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        bare = running.run_notebook(tmp_path / "a.ipynb", 20)
    finally:
        os.chdir(here)
    assert [bare.records[label]["answer"] for label in LABELS] == [problems[PART_1][label]["expected"]
                                                                   for label in LABELS]


@needs_sandbox
def test_writing_the_package_gains_nothing(attacked):
    assert attacked["checks_after"] == attacked["checks_before"]
    assert attacked["table"]["b-package"]["score"] == "0"
    assert attacked["table"]["d-honest"]["score"] == "6"   # graded after it, in the same run


@needs_sandbox
def test_a_process_left_behind_dies_with_the_kernel(attacked):
    assert attacked["table"]["c-outlive"]["score"] == "0"
    assert attacked["canvas_after"] == attacked["canvas_before"] and b"hacked" not in attacked["canvas_after"]
    assert survivors("grader-attack-marker") == []


def test_without_a_sandbox_the_grader_refuses_in_one_line(tmp_path):
    # No bwrap on the PATH: the command says why and grades nothing, unless told --unsafe.
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "grade.py"), str(tmp_path), "--out",
                           str(tmp_path / "out")], env={"PATH": str(tmp_path)}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and not (tmp_path / "out").exists()
    assert done.stderr == ("grade: no sandbox: bubblewrap is not installed (apt-get install bubblewrap); refusing to "
                           "run students' code without one (--unsafe to run it anyway)\n")


def test_moodle_students_who_share_a_name_are_told_apart_by_participant_number(problems, tmp_path):
    """Two Sam Lees on a Moodle roster: the folder's participant number and the worksheet's email say which
    is which, and the worksheet's times are read in the rubric's zone."""
    folder = tmp_path / "submissions"
    write(worked("S-one"), folder / "Sam Lee_3001_assignsubmission_file_" / f"{PART_1}.ipynb")
    write(graded_release(), folder / "Sam Lee_3002_assignsubmission_file_" / f"{PART_1}.ipynb")
    (tmp_path / "roster.csv").write_text("First name,Last name,ID number,Email address\n"
                                         "Sam,Lee,S-one,sam.lee@example.edu\nSam,Lee,S-two,slee2@example.edu\n")
    # Berlin's 17:30 is 16:30 UTC (on time); 18:30 is 17:30 UTC, past the 15 minutes' grace.
    (tmp_path / "times.csv").write_text(
        'Identifier,Full name,Email address,Status,"Last modified (submission)"\n'
        'Participant 3001,Sam Lee,sam.lee@example.edu,Submitted,"Friday, 11 December 2026, 5:30 PM"\n'
        'Participant 3002,Sam Lee,slee2@example.edu,Submitted,"Friday, 11 December 2026, 6:30 PM"\n')
    (tmp_path / "rubric.yml").write_text(f"assignment: A\ndeadline: {DEADLINE.isoformat()}\ntimezone: Europe/Berlin\n"
                                         "grace_minutes: 15\ntime_limit: 20\nnotebooks:\n  lesson-1-part-1: {}\n")
    out = tmp_path / "out"
    assert cli.main([str(folder), "--rubric", str(tmp_path / "rubric.yml"), "--roster", str(tmp_path / "roster.csv"),
                       "--times", str(tmp_path / "times.csv"), "--out", str(out), "--jobs", "2",
                       *([] if SANDBOXED else ["--unsafe"])]) == 0
    table = {row["student"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    one, two = table["sam-lee-example-edu"], table["slee2-example-edu"]
    assert (one["score"], one["late"], two["score"], two["late"]) == ("6", "", "0", PART_1)
    assert "late (30 min after the deadline, by the LMS's times)" in two["notes"]


def test_a_moodle_time_without_a_zone_needs_the_rubrics_timezone(tmp_path):
    (tmp_path / "times.csv").write_text('Identifier,Full name,"Last modified (submission)"\n'
                                        'Participant 1,Ann,"Friday, 11 December 2026, 5:30 PM"\n')
    with pytest.raises(ValueError, match="names no time zone; set the rubric's timezone"):
        roster.load_times(tmp_path / "times.csv")
    assert roster.load_times(tmp_path / "times.csv", "Asia/Tokyo").of("participant:1") == dt.datetime(
        2026, 12, 11, 8, 30, tzinfo=dt.timezone.utc)


# -- answers as students give them -------------------------------------------------------
def test_answers_as_students_give_them_are_graded_as_their_value(tmp_path):
    gpus = {key: [gpu.name] for key, gpu in sm.CATALOG.items()}
    cells = ["import numpy as np\nimport servingmath as sm\nfrom servingmath.checks import submit",
             'answer = sm.CATALOG["l4"]', f"submit(answer, label='gpu', choices={gpus!r})",
             "answer = sm.LLAMA_3_8B", f"submit(answer, label='model', choices={list(sm.MODELS)!r})",
             "answer = np.float32(2.5)", "submit(answer, label='scalar')",
             "answer = np.array([1000.0])", "submit(answer, label='array')",
             # submit(...) inside the answer cell: the answer stays for the check cell under it.
             "answer = 6\nsubmit(answer, label='inside')", "submit(answer, label='inside')",
             "answer = np.array([1.0, 2.0])", "submit(answer, label='two')"]
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(notebook, tmp_path / "kinds.ipynb")
    ran = running.run_notebook(tmp_path / "kinds.ipynb", 60, releases={})
    expected = {"gpu": ("l4", gpus), "model": ("llama-3-8b", list(sm.MODELS)), "scalar": (2.5, None),
                "array": (1000.0, None), "inside": (6.0, None), "two": (1.0, None)}
    statuses = {label: marking.mark(ran.records.get(label), {"expected": value, "rel": 0.0, "label": label, "units": "",
                                                           "choices": choices}).status
                for label, (value, choices) in expected.items()}
    assert statuses == {"gpu": "right", "model": "right", "scalar": "right", "array": "right", "inside": "right",
                        "two": "wrong"}
    two = marking.mark(ran.records["two"], {"expected": 1.0, "rel": 0.0, "label": "two", "units": "", "choices": None})
    assert "of type ndarray" in two.message and "NotebookNode" not in two.message


def test_a_renamed_notebook_is_known_by_its_metadata(tmp_path):
    folder = tmp_path / "s"
    write(worked("S1"), folder / "ada" / "L1P1_final.ipynb")
    write(worked("S1"), folder / "L1P1_final.ipynb")
    found, bad = submissions.find_submissions(folder, [PART_1, "lesson-1-part-2"])
    assert [(item.student, item.notebook) for item in found] == [("ada", PART_1)]
    assert bad == [(folder / "L1P1_final.ipynb", "its metadata says which notebook it is but its name not whose "
                                                 "(put the student's name first)")]



def test_the_sandbox_binds_the_course_over_its_empty_tmp(tmp_path):
    # CI clones the course under /tmp: the sandbox's empty /tmp must come before the course's binds, not hide them.
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed here")
    argv = sandbox.sandbox_argv(tmp_path, sandbox.kernel_environment())
    empty_tmp = next(k for k in range(len(argv) - 1) if argv[k:k + 2] == ["--tmpfs", "/tmp"])
    python_and_package = [k for k, word in enumerate(argv) if word == "--ro-bind"]
    assert python_and_package and min(python_and_package) > empty_tmp


def test_grading_a_notebook_without_per_student_numbers_warns_that_its_answers_are_public():
    # Every problem the course has today has per-student numbers: no notebook's graded release asks a public one.
    every = {path.stem: {match.group(2): {} for match in make_exercises.PROBLEM.finditer(path.read_text("utf-8"))}
             for path in make_exercises.solution_files()}
    assert len(every) == 19 and all(every.values()) and marking.public_answers(every) == []
    assert marking.public_answers({"lesson-1-part-1": {"1.1": {}, "1.2": {}}}) == []
    # A problem added without a template (here a label no notebook has yet) is asked with the practice numbers.
    assert marking.public_answers({"lesson-3-part-1": {"1.1": {}, "1.7": {}, "1.8": {}}}) == [
        "lesson-3-part-1: problems 1.7, 1.8 have no per-student numbers (servingmath.variants); every student is "
        "asked them with the practice release's numbers, whose answers are public"]


def test_feedback_tells_several_late_notebooks_and_the_penalty_once():
    student = roster.Student("kim", "Kim Late")
    graded = marking.Graded(student)
    settings = rubric.Rubric(assignment="Lesson 1 problems", notebooks={PART_1: {}, "lesson-1-part-2": {}},
                             late_penalty=0.1)
    problems = {PART_1: {"1.1": {}}, "lesson-1-part-2": {"2.1": {}}}
    for name, label in ((PART_1, "1.1"), ("lesson-1-part-2", "2.1")):
        graded.points[(name, label)], graded.feedback[(name, label)] = 0.9, "✓ right: 1 pass"
        graded.handed_in[name] = f"kim_LATE_1_2_{name}.ipynb"
        graded.late.append(name)
        graded.late_notes[name] = "Canvas marked it LATE"
        graded.notes.append(f"{name}: late (Canvas marked it LATE)")
    text = feedback.feedback_text(graded, problems, settings)
    assert ("Late: lesson-1-part-1 and lesson-1-part-2 (Canvas marked them LATE). The rubric takes 10% off a late "
            "notebook's points") in text
    assert text.count("The rubric takes") == 1 and "Notes:" not in text


def test_feedback_on_a_word_the_problem_does_not_take_says_so():
    result = check("h100-sxm", "memory", label="2.2", choices=("memory", "compute"))
    assert feedback.final_word(result) == ("✗ 'h100-sxm' is not right: it is none of the words the problem takes "
                                        '("memory", "compute")')
    assert feedback.final_word(check("compute", "memory", label="2.2", choices=("memory", "compute"))) == (
        "✗ 'compute' is not right")


def test_feedback_on_a_problems_own_slip_gives_its_hint():
    result = check(72, 100, label="3.1", units="users", slips={"a 16-bit cache": (72, "the cache is 4-bit.")})
    assert feedback.final_word(result) == "✗ 72 users is not right: it looks like a 16-bit cache (the cache is 4-bit.)"


@needs_sandbox
def test_the_sandbox_holds_a_student_to_an_unprivileged_user_and_its_limits(attacked):
    """Run as root: no root in the sandbox, no /etc/shadow, processes, memory, every tmpfs and file bounded,
    the grader's folder read-only and the sockets' own small tmpfs full, the output cut and said so, and the
    grader's own memory small."""
    assert os.geteuid() == 0 or pytest.skip("the sandbox's own uid is as root")
    feedback = (attacked["out"] / "feedback" / "e-limits.txt").read_text(encoding="utf-8")
    told = {line.split()[0]: line.split("✗ ")[1].split(" is not right")[0] for line in feedback.splitlines()
            if line.startswith("    1.")}
    assert int(re.sub(r"\D", "", told["1.1"])) in sandbox.SANDBOX_UIDS     # not root
    assert (told["1.2"], told["1.4"], told["1.5"]) == ("'FileNotFoundError'", "'refused'", "'OSErrorOSError'")
    assert int(re.sub(r"\D", "", told["1.3"])) < sandbox.LIMITS.processes and told["1.6"] == "'OSErrorOSErrorOSError'"
    notes = attacked["table"]["e-limits"]["notes"]
    assert attacked["table"]["e-limits"]["score"] == "0" and "output cut: code cell" in notes
    assert attacked["grader_rss"] < 1.5 * 2**30
