"""Run an nbgrader command in a course folder from the course's environment.

    .venv/bin/python scripts/nbgrader.py COURSE generate_assignment lesson-1
    .venv/bin/python scripts/nbgrader.py COURSE autograde lesson-1 --create
    .venv/bin/python scripts/nbgrader.py COURSE generate_feedback lesson-1
    .venv/bin/python scripts/nbgrader.py COURSE export --to grades.csv

nbgrader calls the ``alembic`` command of its environment by name, so it fails ("No such file or
directory: 'alembic'") unless that environment's bin folder is on the PATH; this puts it there.
"""
import os
import subprocess
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not Path(argv[0]).is_dir():
        print(__doc__.strip(), file=sys.stderr)
        return 2
    course, arguments = Path(argv[0]), argv[1:]
    bin_folder = Path(sys.executable).parent
    environment = {**os.environ, "PATH": os.pathsep.join([str(bin_folder), os.environ.get("PATH", "")])}
    return subprocess.run([str(bin_folder / "nbgrader"), *arguments], cwd=course, env=environment).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
