"""nbgrader's commands, run in a course folder from the course's environment.

    python -m coursegrader.nbgrader COURSE generate_assignment lesson-1
    python -m coursegrader.nbgrader COURSE autograde lesson-1 --create
    python -m coursegrader.nbgrader COURSE generate_feedback lesson-1
    python -m coursegrader.nbgrader COURSE export --to grades.csv

nbgrader calls the ``alembic`` command of its environment by name, so it fails ("No such file or
directory: 'alembic'") unless that environment's bin folder is on the PATH; this puts it there. It also
quiets what nbgrader says on every run that tells an instructor nothing: Python's warnings from its
libraries and asyncio's "Task was destroyed but it is pending!" as a kernel closes.

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
# stored cell must keep its test, for autograde puts it back, so the two checksums can never agree, and a
# note on every cell of every hand-in tells nothing of any one of them. asyncio's "Task was destroyed but
# it is pending!" comes of the kernels nbgrader's autograde starts and stops in that process, not of ours.
NOISE = ("Task was destroyed but it is pending", "task: <Task pending name=", "Attribute 'checksum' for cell")


def quiet(text: str) -> str:
    """``text`` without the lines nbgrader and asyncio print on every run that say nothing to act on."""
    kept = [line for line in text.splitlines(keepends=True) if not any(noise in line for noise in NOISE)]
    return "".join(kept)


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
