"""Grade students' problem notebooks: run each one, score each problem, write a CSV.

    python scripts/grade.py SUBMISSIONS [--out grades.csv] [--timeout 60] [--notebooks NAME ...]

SUBMISSIONS is a folder of notebooks (.ipynb, or .md as jupytext writes them), laid out
either way, or both mixed:

    SUBMISSIONS/alice/lesson-1-part-1.ipynb      a folder for each student (any depth below it)
    SUBMISSIONS/bob-lesson-1-part-1.ipynb        flat: the student's name, then the notebook's

A file counts as the notebook whose name (``lesson-1-part-1``, ``plate-xxiii-1``, the names
in solutions/) its file name contains, ignoring case and treating spaces, dots and
underscores as hyphens: ``Copy of Lesson_1_Part_1.ipynb`` is ``lesson-1-part-1``. In the flat
layout the student is whatever comes before the notebook's name. Files that match no
notebook are listed and skipped.

Each notebook is run from a clean start (its saved outputs are ignored) with nbclient in a
scratch folder. A cell that raises does not stop the run; a cell that runs past the time
limit, or a kernel that dies, does, and the problems reached so far keep their scores. The
notes column says what went wrong. Each check cell leaves a record of the student's answer
in its output (``servingmath.checks.RECORD_MIME``); the grader checks that answer again
against the reference: the same problem in solutions/, run first, whose checks must all be
right. A check cell a student edited so cannot change a score.

The CSV has a row for each student: a column for each problem (1 right, 0 not), the total,
the most possible, and the notes. A summary line goes to standard output.

The notebooks run students' code with your permissions: grade in a container or an
account that holds nothing else.
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import jupytext
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from servingmath.checks import RECORD_MIME, check

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
SUFFIXES = (".ipynb", ".md")


# -- running a notebook --------------------------------------------------------------
@dataclass
class Run:
    """What one executed notebook left: its check records by label, and what went wrong."""

    records: dict[str, dict] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def run_notebook(path: Path, timeout: float) -> Run:
    """Execute a notebook from a clean start and collect its check records and errors."""
    outcome = Run()
    try:
        notebook = jupytext.read(path)
    except Exception as error:  # not JSON, not a notebook: the student still gets a row
        outcome.problems.append(f"could not be read ({type(error).__name__})")
        return outcome
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    timed_out = False
    with tempfile.TemporaryDirectory(prefix="grade-") as scratch:
        client = NotebookClient(notebook, timeout=timeout, kernel_name="python3", allow_errors=True,
                                resources={"metadata": {"path": scratch}})
        try:
            client.execute(stderr=subprocess.DEVNULL)  # the kernel's own warnings are noise here
        except CellTimeoutError:
            timed_out = True
            outcome.problems.append(f"stopped: a cell ran past {timeout:g} s")
        except DeadKernelError:
            outcome.problems.append("stopped: the kernel died")
        except Exception as error:
            outcome.problems.append(f"stopped: {type(error).__name__}: {_first_line(error)}")
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    raised = [any(output.get("output_type") == "error" for output in cell.get("outputs", [])) for cell in code_cells]
    for number, cell in enumerate(code_cells, start=1):
        for output in cell.get("outputs", []):
            # The interrupt that ends a cell past its time is already told as the timeout.
            if output.get("output_type") == "error" and not (timed_out and output.get("ename") == "KeyboardInterrupt"):
                outcome.problems.append(f"code cell {number} raised {output.get('ename')}")
            record = output.get("data", {}).get(RECORD_MIME)
            if isinstance(record, dict) and isinstance(record.get("label"), str):
                if number > 1 and raised[number - 2]:
                    # The answer cell before this check failed, so `answer` may still hold the
                    # previous problem's value: this problem counts as not answered.
                    record = {**record, "answer": None}
                    outcome.problems.append(f"the answer to {record['label']!r} raised before it was set")
                outcome.records[record["label"]] = record  # a check run twice: the last one counts
    return outcome


def _first_line(error) -> str:
    lines = str(error).strip().splitlines()
    return lines[0][:120] if lines else ""


# -- the reference -------------------------------------------------------------------
def notebook_names(solutions: Path = SOLUTIONS) -> list[str]:
    return [path.stem for path in sorted(solutions.glob("*.md"))]


def run_many(paths: list[Path], timeout: float, jobs: int) -> list[Run]:
    """Run notebooks ``jobs`` at a time (each in its own kernel), results in the order given."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda path: run_notebook(path, timeout), paths))


def reference(names: list[str], solutions: Path = SOLUTIONS, timeout: float = 120,
              jobs: int = 1) -> dict[str, dict[str, dict]]:
    """Each notebook's problems, in order, from running its solution: label -> record.

    Raises RuntimeError if a solution fails to run or any of its checks is not right,
    since grading against it would be wrong.
    """
    problems = {}
    for name, ran in zip(names, run_many([solutions / f"{name}.md" for name in names], timeout, jobs)):
        not_right = [label for label, record in ran.records.items() if record.get("status") != "right"]
        if ran.problems or not_right or not ran.records:
            raise RuntimeError(f"the solution {name}.md cannot be the reference: "
                               f"{'; '.join(ran.problems) or 'no checks'}; not right: {not_right}")
        problems[name] = ran.records
    return problems


def score(record: dict | None, expected: dict) -> int:
    """The student's recorded answer, checked again against the reference's figure."""
    if record is None:
        return 0
    result = check(record.get("answer"), expected["expected"], rel=expected["rel"], label=expected["label"],
                   units=expected["units"], choices=expected["choices"])
    return result.score


def edited(record: dict, expected: dict) -> bool:
    """Whether a check cell compared with another figure than the reference's."""
    theirs, ours = record.get("expected"), expected["expected"]
    if isinstance(ours, str) or not isinstance(theirs, (int, float)) or isinstance(theirs, bool):
        return theirs != ours
    return not math.isclose(theirs, ours, rel_tol=1e-9)


# -- finding the submissions ---------------------------------------------------------
def _normal(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def identify(path: Path, submissions: Path, names: list[str]) -> tuple[str, str] | None:
    """(student, notebook name) for a submitted file, or None if it names no notebook."""
    stem = _normal(path.stem)
    for name in sorted(names, key=len, reverse=True):
        found = re.search(rf"(?:^|-){re.escape(name)}(?:-|$)", stem)
        if not found:
            continue
        parts = path.relative_to(submissions).parts
        if len(parts) > 1:
            return parts[0], name
        # Colab names a copy "Copy of ...": those words name no student.
        student = re.sub(r"(?:^|-)copy-of(?=-|$)", "", stem[:found.start()]).strip("-")
        student = student or stem[found.end():].strip("-")
        return (student, name) if student else None
    return None


def find_submissions(submissions: Path, names: list[str]):
    """({student: {notebook: path}}, files skipped, notes on duplicates)."""
    found: dict[str, dict[str, list[Path]]] = {}
    skipped = []
    for path in sorted(submissions.rglob("*")):
        relative = path.relative_to(submissions)
        if (not path.is_file() or path.suffix.lower() not in SUFFIXES
                or any(part.startswith(".") for part in relative.parts)):
            continue
        who = identify(path, submissions, names)
        if who is None:
            skipped.append(path)
            continue
        student, name = who
        found.setdefault(student, {}).setdefault(name, []).append(path)
    chosen, notes = {}, {}
    for student, notebooks in found.items():
        chosen[student] = {}
        for name, paths in notebooks.items():
            newest = max(paths, key=lambda candidate: (candidate.stat().st_mtime, str(candidate)))
            chosen[student][name] = newest
            if len(paths) > 1:
                notes.setdefault(student, []).append(f"{name}: {len(paths)} files, graded {newest.name}")
    return chosen, skipped, notes


# -- grading -------------------------------------------------------------------------
def columns(problems: dict[str, dict[str, dict]]) -> list[tuple[str, str]]:
    return [(name, label) for name, records in problems.items() for label in records]


def grade(submissions: Path, problems: dict[str, dict[str, dict]], timeout: float = 60, jobs: int = 1):
    """A row for each student: {(notebook, label): score, ...} plus "notes"; and files skipped."""
    chosen, skipped, duplicate_notes = find_submissions(submissions, list(problems))
    tasks = [(student, name) for student in sorted(chosen) for name in problems if name in chosen[student]]
    runs = dict(zip(tasks, run_many([chosen[student][name] for student, name in tasks], timeout, jobs)))
    rows = {}
    for student in sorted(chosen):
        scores, notes = {}, list(duplicate_notes.get(student, []))
        for name, expected_records in problems.items():
            if (student, name) not in runs:
                notes.append(f"{name}: not submitted")
                scores.update({(name, label): 0 for label in expected_records})
                continue
            ran = runs[(student, name)]
            notes += [f"{name}: {problem}" for problem in ran.problems]
            missing, altered = [], []
            for label, expected in expected_records.items():
                record = ran.records.get(label)
                scores[(name, label)] = score(record, expected)
                if record is None:
                    missing.append(label)
                elif edited(record, expected):
                    altered.append(label)
            if missing and not ran.problems:
                notes.append(f"{name}: no check output for {', '.join(missing)}")
            if altered:
                notes.append(f"{name}: check cell edited for {', '.join(altered)}; graded against the reference")
        rows[student] = {"scores": scores, "notes": notes, "notebooks": len(chosen[student])}
    return rows, skipped


def write_csv(rows, problems, out: Path) -> None:
    header = ["student", *(f"{name} {label}" for name, label in columns(problems)), "score", "out of", "notes"]
    possible = len(columns(problems))
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for student, row in rows.items():
            values = [row["scores"][key] for key in columns(problems)]
            writer.writerow([student, *values, sum(values), possible, "; ".join(row["notes"])])


def summary(rows, problems) -> str:
    possible = len(columns(problems))
    totals = [sum(row["scores"].values()) for row in rows.values()]
    mean = sum(totals) / len(totals) if totals else 0.0
    share = mean / possible if possible else 0.0
    notebooks = sum(row["notebooks"] for row in rows.values())
    return (f"grade: {len(rows)} students, {notebooks} notebooks, "
            f"mean score {mean:.2f} of {possible} ({share:.0%})")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("submissions", type=Path, help="folder of submitted notebooks")
    parser.add_argument("--out", type=Path, default=Path("grades.csv"), help="CSV to write (grades.csv)")
    parser.add_argument("--solutions", type=Path, default=SOLUTIONS, help="folder of the reference solutions")
    parser.add_argument("--notebooks", nargs="+", metavar="NAME",
                        help="grade only these notebooks (default: every one in solutions/)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds a cell may run (60)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="notebooks run at once, each in its own kernel (default: one per CPU)")
    options = parser.parse_args(argv)
    if not options.submissions.is_dir():
        print(f"grade: {options.submissions} is not a folder", file=sys.stderr)
        return 2
    names = notebook_names(options.solutions)
    unknown = sorted(set(options.notebooks or []) - set(names))
    if unknown or not names:
        print(f"grade: notebooks must be among {names}, got {unknown or 'none in ' + str(options.solutions)}",
              file=sys.stderr)
        return 2
    try:
        problems = reference(options.notebooks or names, options.solutions, jobs=options.jobs)
    except RuntimeError as error:
        print(f"grade: {error}", file=sys.stderr)
        return 2
    rows, skipped = grade(options.submissions, problems, options.timeout, options.jobs)
    for path in skipped:
        print(f"grade: skipped {path}: its name matches no notebook or no student", file=sys.stderr)
    write_csv(rows, problems, options.out)
    print(f"{summary(rows, problems)}; wrote {options.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
