"""Make the students' notebooks in exercises/ from the worked ones in solutions/.

In a solution notebook, each worked answer sits in a code cell between two marker
lines (nbgrader's convention):

    ### BEGIN SOLUTION
    answer = ...
    ### END SOLUTION

The exercise notebook is the same file, byte for byte, with each such block (markers
included) replaced by one line at the block's indentation:

    answer = None  # your answer here

Usage: ``python scripts/make_exercises.py`` (what ``make exercises`` runs) writes
exercises/ and removes any exercise whose solution is gone; ``--check`` writes nothing
and exits 1 if exercises/ is out of date.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
STUB = "answer = None  # your answer here"
ASSIGNS_ANSWER = re.compile(r"^\s*answer\s*=")


def exercise_text(solution: str, source: str = "solution") -> str:
    """The exercise made from a solution notebook's text; ``source`` names it in errors.

    Raises ValueError for a block that is not closed, is nested, sits outside a code
    cell, or never assigns ``answer``, and for a marker that is misspelt.
    """
    kept: list[str] = []
    opened_at = 0       # line number of the open block's BEGIN, 0 outside a block
    in_code_cell = False
    assigns = False
    for number, line in enumerate(solution.splitlines(keepends=True), start=1):
        stripped = line.strip()
        where = f"{source}:{number}"
        if stripped.startswith("```"):
            if opened_at:
                raise ValueError(f"{where}: the cell ends inside the solution block opened on line {opened_at}")
            in_code_cell = stripped.startswith("```{code-cell}")
        if stripped == BEGIN:
            if opened_at:
                raise ValueError(f"{where}: a solution block starts inside the one opened on line {opened_at}")
            if not in_code_cell:
                raise ValueError(f"{where}: a solution block must be inside a code cell")
            opened_at, assigns = number, False
            indent = line[: len(line) - len(line.lstrip())]
            ending = line[len(line.rstrip("\r\n")):]
            kept.append(indent + STUB + ending)
        elif stripped == END:
            if not opened_at:
                raise ValueError(f"{where}: {END} without a {BEGIN} before it")
            if not assigns:
                raise ValueError(f"{where}: the solution block opened on line {opened_at} never assigns `answer`")
            opened_at = 0
        elif "BEGIN SOLUTION" in line or "END SOLUTION" in line:
            raise ValueError(f"{where}: a solution marker must be a line of its own, exactly {BEGIN!r} or {END!r}")
        elif opened_at:
            assigns = assigns or bool(ASSIGNS_ANSWER.match(line))
        else:
            kept.append(line)
    if opened_at:
        raise ValueError(f"{source}:{opened_at}: the solution block opened here never ends")
    return "".join(kept)


def solution_files(solutions: Path = SOLUTIONS) -> list[Path]:
    return sorted(solutions.glob("*.md"))


def expected_exercises(solutions: Path = SOLUTIONS, exercises: Path = EXERCISES) -> dict[Path, bytes]:
    """Each exercise file's path and the exact bytes it should hold."""
    made = {}
    for source in solution_files(solutions):
        text = source.read_bytes().decode("utf-8")
        made[exercises / source.name] = exercise_text(text, str(source.relative_to(solutions.parent))).encode("utf-8")
    return made


def stale(made: dict[Path, bytes], exercises: Path = EXERCISES) -> tuple[list[Path], list[Path]]:
    """(files that differ or are missing, exercise files with no solution behind them)."""
    different = [path for path, content in made.items() if not path.is_file() or path.read_bytes() != content]
    orphans = [path for path in sorted(exercises.glob("*.md")) if path not in made]
    return different, orphans


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if exercises/ is out of date")
    options = parser.parse_args(argv)
    made = expected_exercises()
    if not made:
        print(f"make_exercises: no solution notebooks in {SOLUTIONS}", file=sys.stderr)
        return 1
    different, orphans = stale(made)
    if options.check:
        for path in different + orphans:
            print(f"make_exercises: {path.relative_to(ROOT)} is out of date; run `make exercises`", file=sys.stderr)
        return 1 if different or orphans else 0
    EXERCISES.mkdir(exist_ok=True)
    for path in different:
        path.write_bytes(made[path])
    for path in orphans:
        path.unlink()
    print(f"make_exercises: {len(made)} notebooks, {len(different)} written, {len(orphans)} removed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
