"""Run every notebook of the course under nbval.

Each MyST notebook (a Markdown file with a jupytext header) under chapters/,
exercises/ and solutions/, and the landing page, is converted to .ipynb in
_build/nbval/ and run with ``pytest --nbval-lax``: any cell that raises fails the
gate. Finding no notebook is a failure too, so the gate cannot pass by running nothing.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "_build" / "nbval"
FOLDERS = ("chapters", "exercises", "solutions")


def is_notebook(path: Path) -> bool:
    head = path.read_text(encoding="utf-8")[:600]
    return head.startswith("---") and "jupytext:" in head


def hidden(path: Path, root: Path = ROOT) -> bool:
    """Whether ``path`` lies in a hidden folder under ``root``, such as the ``.ipynb_checkpoints/``
    JupyterLab saves beside a page it opened: copies, never pages of the course."""
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def sources(root: Path = ROOT) -> list[Path]:
    found = [root / "index.md"]
    for folder in FOLDERS:
        found += sorted((root / folder).rglob("*.md"))
    return [path for path in found if path.is_file() and not hidden(path, root) and is_notebook(path)]


def main(argv: list[str]) -> int:
    notebooks = sources()
    if not notebooks:
        print("nbgate: no notebooks found under", ", ".join(FOLDERS), file=sys.stderr)
        return 1
    shutil.rmtree(OUT, ignore_errors=True)
    converted = []
    for source in notebooks:
        target = OUT / source.relative_to(ROOT).with_suffix(".ipynb")
        target.parent.mkdir(parents=True, exist_ok=True)
        jupytext.write(jupytext.read(source), target)
        converted.append(str(target))
    print(f"nbgate: running {len(converted)} notebooks under nbval")
    command = [sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env", "-p", "no:cacheprovider",
               "-o", "addopts=", "-o", "testpaths=", "-q", *argv, *converted]
    return subprocess.call(command, cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
