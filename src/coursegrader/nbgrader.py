"""nbgrader's commands, run in a course folder from the course's environment.

    python -m coursegrader.nbgrader COURSE generate_assignment lesson-1
    python -m coursegrader.nbgrader COURSE autograde lesson-1 --create
    python -m coursegrader.nbgrader COURSE generate_feedback lesson-1
    python -m coursegrader.nbgrader COURSE export --to grades.csv

nbgrader calls the ``alembic`` command of its environment by name, so it fails ("No such file or
directory: 'alembic'") unless that environment's bin folder is on the PATH; this puts it there. It also
quiets what nbgrader says on every run that tells an instructor nothing: Python's warnings from its
libraries and asyncio's "Task was destroyed but it is pending!" as a kernel closes; nbgrader's warning on
every check cell that its checksum changed is said once, counted, with why it asks nothing of you.

nbgrader's marks are not proof against a student who tampers: its hidden tests run in the student's own
kernel. ``make grade`` (``python -m coursegrader``) is the one that counts.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

QUIET = "ignore"    # PYTHONWARNINGS for nbgrader's process: its libraries' deprecations are not the course's


def environment(bin_folder: Path) -> dict[str, str]:
    return {**os.environ, "PATH": os.pathsep.join([str(bin_folder), os.environ.get("PATH", "")]),
            "PYTHONWARNINGS": QUIET}


# Filtered, not fixed, since both come from inside nbgrader's own process, which the course only configures.
# nbgrader warns on every check cell that its checksum changed: generate_assignment stores the checksum of
# the cell with its hidden test, then strips the test from the release (jupyter/nbgrader#1961, open); the
# stored cell must keep its test, for autograde puts it back, so the two checksums can never agree. autograde
# then runs the cell as it is in source/, whatever the student's copy holds, so no such warning tells
# anything of any one hand-in: they are counted, and said once, in one line, with why. asyncio's "Task was
# destroyed but it is pending!" comes of the kernels nbgrader's autograde starts and stops in that process.
NOISE = ("Task was destroyed but it is pending", "task: <Task pending name=")
CHECKSUM = "Attribute 'checksum' for cell"
CHECKSUMS_SAID = ("nbgrader.py: left out {count} of nbgrader's warnings that a check cell's checksum changed. "
                  "nbgrader gives one for every check cell of every notebook it grades: it keeps each check "
                  "cell's checksum with the cell's hidden test, and hands the cell out without it "
                  "(https://github.com/jupyter/nbgrader/issues/1961). autograde runs every check cell as it is "
                  "in source/, whatever a student's copy holds, so these warnings say nothing of any student.\n")


def quiet(text: str) -> str:
    """``text`` without the lines nbgrader and asyncio print on every run that say nothing to act on; the
    checksum warnings said once, counted, in a line of their own."""
    kept, checksums = [], 0
    for line in text.splitlines(keepends=True):
        if CHECKSUM in line:
            checksums += 1
        elif not any(noise in line for noise in NOISE):
            kept.append(line)
    return "".join(kept) + (CHECKSUMS_SAID.format(count=checksums) if checksums else "")


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not Path(argv[0]).is_dir():
        print(__doc__.strip(), file=sys.stderr)
        return 2
    course, arguments = Path(argv[0]), argv[1:]
    bin_folder = Path(sys.executable).parent
    done = subprocess.run([str(bin_folder / "nbgrader"), *arguments], cwd=course, env=environment(bin_folder),
                          capture_output=True, text=True)
    sys.stdout.write(quiet(done.stdout))
    sys.stderr.write(quiet(done.stderr))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
