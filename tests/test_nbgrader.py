"""The course in nbgrader: one assignment a lesson, the rubric's points, hidden tests a notebook cannot talk
round, feedback with no formula; and nbgrader's marks equal to the course's own grader's on one class.

nbgrader is among the course's pins (its JupyterLab menus are switched off for `make lab`), so this
runs in `make test`, through scripts/nbgrader.py as chapters/instructors.md says to run it. Students enter
their graded IDs (their ID and its code); nbgrader's hidden tests mark the numbers of the ID typed where it is
the student's own (they cannot check the code: the key never enters a student's kernel), `make grade` checks it.
"""
import copy
import csv
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import make_exercises  # noqa: E402
from coursegrader import answers as variant_answers  # noqa: E402
from coursegrader import cli, marking, sandbox  # noqa: E402
from coursegrader import nbgrader as nbgrader_route  # noqa: E402
from coursegrader.rubric import load_rubric  # noqa: E402
from coursegrader.key import ENV, graded_id  # noqa: E402

PART_1 = "lesson-1-part-1"
KEY = b"a key for the tests alone, 32 characters or more, not secret"
LABELS = ["1.1", "1.2", "1.3", "1.4", "1.5", "1.6"]


def nbgrader(course: Path, *arguments: str) -> str:
    """An nbgrader command as the instructors' page gives it: the environment's Python, scripts/nbgrader.py."""
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "nbgrader.py"), str(course), *arguments],
                          capture_output=True, text=True, timeout=600, env={"PATH": "/usr/bin:/bin",
                                                                            "HOME": str(course)})
    # nbgrader names the failing student at the end; the reason is where its first error is.
    first_error = done.stderr.find("ERROR")
    assert done.returncode == 0, done.stderr[max(0, first_error - 2000):first_error + 2000] + done.stderr[-500:]
    return done.stderr


def test_one_assignment_a_lesson_each_problem_worth_its_rubrics_points(tmp_path):
    course = tmp_path / "course"
    for assignment, rubric in make_exercises.ASSIGNMENTS.items():
        points = make_exercises.rubric_points(rubric)
        written = make_exercises.write_nbgrader(course, assignment)
        assert sorted(path.stem for path in written) == sorted(points)
        for path in written:
            cells = nbformat.read(path, as_version=4).cells
            worth = {cell.metadata["nbgrader"]["grade_id"]: cell.metadata["nbgrader"]["points"] for cell in cells
                     if cell.metadata.get("nbgrader", {}).get("grade")}
            expected = load_rubric(rubric, marking.notebook_names())
            assert worth == {f"check-{label.replace('.', '-')}": expected.points(path.stem, label)
                             for label in (cell_label(cell) for cell in cells if "check-" in
                                           cell.metadata.get("nbgrader", {}).get("grade_id", ""))}
    assert sorted(folder.name for folder in (course / "source").iterdir()) == ["lesson-1", "lesson-2", "lesson-3", "lesson-4"]


def cell_label(cell):
    return next(line.split("label=")[1].split(",")[0].strip("')\"") for line in cell.source.splitlines()
                if line.startswith("submit("))


def filled(release, student_id, answers):
    """The release as ``student_id`` hands it in: their ID entered, each answer cell set from ``answers``."""
    notebook = copy.deepcopy(release)
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if 'STUDENT_ID = ""' in cell.source:
            cell.source = cell.source.replace('STUDENT_ID = ""', f"STUDENT_ID = {graded_id(KEY, student_id)!r}")
        if grade_id.startswith("answer-"):
            label = grade_id.removeprefix("answer-").replace("-", ".")
            if label in answers:
                cell.source = answers[label]
    return notebook


def own(student_id, label):
    return f"answer = {variant_answers.expected(PART_1, label, graded_id(KEY, student_id))!r}"


# Seconds a whole notebook's cells share, under make grade and nbgrader alike (make_exercises.NBGRADER_CONFIG). A
# notebook that runs in a few seconds alone has room to spare while the book and JupyterLab's test load the
# processors (make unit hands this module out early, tests/conftest.py); the endless one is stopped at it in both.
TIME_LIMIT = 30


def endless(notebook):
    """The notebook with a loop that never ends just after Problem 1.2's check (asleep: both limits are wall-clock
    time, and the test's processor is left to the other tests)."""
    at = next(index for index, cell in enumerate(notebook.cells)
              if cell.metadata.get("nbgrader", {}).get("grade_id") == "answer-1-3")
    notebook.cells.insert(at, nbformat.v4.new_code_cell("import time\nwhile True:\n    time.sleep(1)"))
    return notebook


CHEAT = ("import servingmath.checks\ncheck = lambda *args, **kwargs: servingmath.checks.check(1, 1)\n"
         "servingmath.checks.check = check\nanswer = 31337")


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    """A class handed in through nbgrader, autograded by nbgrader and graded by `make grade`'s command."""
    root = tmp_path_factory.mktemp("nbgrader")
    course = root / "course"
    make_exercises.write_nbgrader(course, "lesson-1", names=[PART_1], time_limit=TIME_LIMIT)
    nbgrader(course, "generate_assignment", "lesson-1", "--force")
    release = nbformat.read(course / "release" / "lesson-1" / f"{PART_1}.ipynb", as_version=4)
    half = {label: own("S2", label) for label in LABELS[:3]}
    half["1.4"] = f"answer = {variant_answers.expected(PART_1, '1.4', graded_id(KEY, 'S2')) * 1.05!r}"  # close
    cheat = {label: CHEAT for label in LABELS}
    # The copied set is another student's whose every answer differs from S5's (a problem with few distinct
    # answers, such as 1.3, can give two students the same one: then a copy is right, and rightly counted).
    assert all(variant_answers.expected(PART_1, label, graded_id(KEY, "S6"))
               != variant_answers.expected(PART_1, label, graded_id(KEY, "S5")) for label in LABELS)
    class_ = {"S1": filled(release, "S1", {label: own("S1", label) for label in LABELS}),
              "S2": filled(release, "S2", half),
              "S3": release,                                                               # blank
              "S4": filled(release, "S4", cheat),                                          # a redefined check
              "S5": filled(release, "S6", {label: own("S6", label) for label in LABELS}),  # S6's numbers copied
              "S6": endless(filled(release, "S6", {label: own("S6", label) for label in LABELS}))}
    for student, notebook in class_.items():
        for folder in (course / "submitted" / student / "lesson-1", root / "submissions" / student):
            folder.mkdir(parents=True)
            nbformat.write(notebook, folder / f"{PART_1}.ipynb")
    said = nbgrader(course, "autograde", "lesson-1", "--create", "--force")
    nbgrader(course, "generate_feedback", "lesson-1", "--force")
    nbgrader(course, "export", "--to", str(root / "nbgrader.csv"))
    ours = root / "ours"
    (root / "roster.csv").write_text("student\n" + "\n".join(class_) + "\n")
    (root / "rubric.yml").write_text(f"assignment: Lesson 1\ntime_limit: {TIME_LIMIT}\nnotebooks:\n"
                                     "  lesson-1-part-1: {'1.1': 0.5}\n")
    unsafe = [] if not sandbox.sandbox_problem() else ["--unsafe"]
    os.environ[ENV] = KEY.decode()
    assert cli.main([str(root / "submissions"), "--rubric", str(root / "rubric.yml"), "--roster",
                       str(root / "roster.csv"), "--out", str(ours), "--jobs", "2", *unsafe]) == 0
    exported = list(csv.DictReader((root / "nbgrader.csv").open(encoding="utf-8")))
    nb_scores = {row["student_id"]: (float(row["score"]), float(row["max_score"])) for row in exported}
    our_scores = {row["student"].upper(): (float(row["score"]), float(row["out of"]))
                  for row in csv.DictReader((ours / "grades.csv").open(encoding="utf-8"))}
    return {"course": course, "release": release, "nbgrader": nb_scores, "ours": our_scores, "said": said,
            "exported": exported}


def test_the_release_holds_no_check_formula_or_solution(term):
    text = nbformat.writes(term["release"])
    assert "HIDDEN TESTS" not in text and "check(" not in text and "BEGIN SOLUTION" not in text
    assert "variant_answers" not in text and "sm.passes_for_request(500, 1000)" not in text
    assert text.count(make_exercises.STUB) == 6 and text.count("submit(answer, label=") == 6
    assert text.count("mine.show(") == 6


def test_nbgrader_marks_each_student_as_the_course_grader_does(term):
    assert term["nbgrader"] == term["ours"]
    # S6's loop after Problem 1.2 stops both at the rubric's time limit: 1.1 and 1.2 count, nothing after.
    assert term["nbgrader"] == {"S1": (5.5, 5.5), "S2": (2.5, 5.5), "S3": (0.0, 5.5), "S4": (0.0, 5.5),
                                "S5": (0.0, 5.5), "S6": (1.5, 5.5)}


def test_the_page_says_nbgraders_marks_are_not_proof_against_tampering_and_which_count():
    page = " ".join((ROOT / "chapters" / "instructors.md").read_text(encoding="utf-8").split())
    assert "**nbgrader's marks are not proof against tampering.**" in page
    assert "the marks that count are `make grade`'s" in page and "counts for nothing" not in page


def test_nbgraders_export_is_a_row_for_each_student_and_assignment_as_the_page_says(term):
    assert sorted((row["student_id"], row["assignment"]) for row in term["exported"]) == [
        (student, "lesson-1") for student in ("S1", "S2", "S3", "S4", "S5", "S6")]
    page = " ".join((ROOT / "chapters" / "instructors.md").read_text(encoding="utf-8").split())
    assert "`export` writes one row for each student and assignment (a lesson)" in page


def test_nbgrader_feedback_shows_no_hidden_formula(term):
    page = (term["course"] / "feedback" / "S1" / "lesson-1" / f"{PART_1}.html").read_text(encoding="utf-8")
    assert "variant_answers" not in page and "_expected" not in page and "HIDDEN TESTS" not in page
    assert "_importlib" not in page and "_checks" not in page and "Problem 1.6" in page


def test_hidden_tests_hold_no_path_of_this_machine_and_a_run_says_only_what_matters(term):
    source = (term["course"] / "source" / "lesson-1" / f"{PART_1}.ipynb").read_text(encoding="utf-8")
    assert str(ROOT) not in source and "scripts" not in source
    assert "variant_answers" in source and (term["course"] / "variant_answers.py").is_file()
    for noise in ("Task was destroyed", "Cell 'setup' does not exist", "Attribute 'checksum'"):
        assert noise not in term["said"]
    # nbgrader's warning on every check cell of every hand-in (6 students, 6 checks), said once, with why.
    assert term["said"].count("nbgrader/issues/1961") == 1 and "left out 36 of nbgrader's warnings" in term["said"]


def test_nbgraders_checksum_warnings_are_counted_in_one_line_that_says_why():
    warning = ("[AutogradeApp | WARNING] Attribute 'checksum' for cell check-1-{} has changed! "
               "(should be: 0a1b, got: 2c3d)\n")
    said = nbgrader_route.quiet("[AutogradeApp | INFO] Autograding S1\n" + "".join(map(warning.format, range(3))))
    first, summary = said.splitlines()
    assert first == "[AutogradeApp | INFO] Autograding S1" and summary.startswith("nbgrader.py: left out 3 of")
    assert "issues/1961" in summary and "say nothing of any student" in summary
    assert nbgrader_route.quiet("nothing to leave out\n") == "nothing to leave out\n"
