"""The assignment in nbgrader: generate_assignment from the solutions, then autograde a worked and a blank copy.

nbgrader is among the course's pins (its JupyterLab menus are switched off for `make lab`), so
this runs in `make test`, with the `nbgrader` command of the environment running the tests.
"""
import copy
import csv
import os
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import make_exercises  # noqa: E402  (a script, not a package)

NBGRADER = Path(sys.executable).parent / "nbgrader"
PART_1 = "lesson-1-part-1"


def nbgrader(course: Path, *arguments: str) -> str:
    environment = {**os.environ, "PATH": os.pathsep.join([str(Path(NBGRADER).parent), os.environ["PATH"]]),
                   "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([NBGRADER, *arguments], cwd=course, env=environment, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stderr


def test_generate_assignment_then_autograde_the_worked_and_the_blank_copies(tmp_path):
    course = tmp_path / "course"
    make_exercises.write_nbgrader(course, "lesson-1", points={PART_1: {"1.1": 0.5}}, names=[PART_1])
    nbgrader(course, "generate_assignment", "lesson-1", "--force")

    release = nbformat.read(course / "release" / "lesson-1" / f"{PART_1}.ipynb", as_version=4)
    source = nbformat.read(course / "source" / "lesson-1" / f"{PART_1}.ipynb", as_version=4)
    text = nbformat.writes(release)
    # What students get holds no check, no formula, no solution: stubs and submit() lines.
    assert "HIDDEN TESTS" not in text and "check(" not in text and "BEGIN SOLUTION" not in text
    assert "sm.passes_for_request(800, 1500)" not in text
    assert text.count(make_exercises.STUB) == 6 and text.count("submit(answer, label=") == 6

    worked = {cell.metadata["nbgrader"]["grade_id"]: cell.source for cell in source.cells
              if cell.metadata.get("nbgrader", {}).get("solution")}
    perfect = copy.deepcopy(release)
    for cell in perfect.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in worked:
            cell.source = "\n".join(line for line in worked[grade_id].splitlines() if "SOLUTION" not in line)
    for student, notebook in (("perfect", perfect), ("blank", release)):
        folder = course / "submitted" / student / "lesson-1"
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / f"{PART_1}.ipynb")

    nbgrader(course, "autograde", "lesson-1", "--create", "--force")
    nbgrader(course, "export", "--to", str(course / "grades.csv"))
    scores = {row["student_id"]: (float(row["score"]), float(row["max_score"]))
              for row in csv.DictReader((course / "grades.csv").open(encoding="utf-8"))}
    assert scores == {"perfect": (5.5, 5.5), "blank": (0.0, 5.5)}
