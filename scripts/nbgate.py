"""The notebook gate: every page read as a notebook, and every page's run checked cell by cell.

Every MyST notebook (a Markdown file with a jupytext header) under chapters/, exercises/
and solutions/, and the landing page, must read as a notebook through jupytext, as
JupyterLab, Binder and Colab's copies read it. Then each page's run is checked: every code
cell ran, none raised, none wrote to stderr, and no figure shows as its text
(``<Figure size 640x480 with 1 Axes>``) instead of an image.

Each page is run once in `make test`: the book (``make book-check``) runs every page of the
table of contents and keeps each run in ``_build/jupyter_execute/``; the gate reads those
runs when they are newer than the page and the package, and runs any other page itself
(pages of chapters/ not in the book, or every page when the book has not been built since
they changed), two at a time. The notebooks of exercises/ and solutions/ are run by
``tests/test_grading.py`` (each solution's checks all right, each blank release run to
the end and its outputs checked with ``problems_in`` below; two of the exercises are opened in
JupyterLab too, by ``make lab-check``), so the gate reads them without running them. Finding no notebook fails the gate, so it
cannot pass by checking nothing.
"""
from __future__ import annotations

import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("chapters", "exercises", "solutions")
# Where the book keeps each page it ran (MyST-NB writes the executed notebook there).
EXECUTED = ROOT / "_build" / "jupyter_execute"
# Run by tests/test_grading.py: read here, not run again.
RUN_ELSEWHERE = ("exercises", "solutions")
# A matplotlib figure that failed to show as an image leaves only its text.
FIGURE_AS_TEXT = re.compile(r"<(matplotlib\.figure\.)?Figure size \d+x\d+ with \d+ Axes>")


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


def problems_in(notebook) -> list[str]:
    """What a reader would see go wrong in a run notebook: a cell never run, an error, stderr, a figure as text."""
    found = []
    for number, cell in enumerate((c for c in notebook.cells if c.cell_type == "code"), start=1):
        first_line = next(iter(cell.source.strip().splitlines()), "")[:60]
        where = f"code cell {number} ({first_line})"
        if cell.get("execution_count") is None and cell.source.strip():
            found.append(f"{where}: never ran")
        for output in cell.get("outputs", []):
            kind = output.get("output_type")
            if kind == "error":
                found.append(f"{where}: {output.get('ename')}: {output.get('evalue')}")
            elif kind == "stream" and output.get("name") == "stderr":
                found.append(f"{where}: stderr: {''.join(output.get('text', ''))[:300]}")
            elif kind in ("display_data", "execute_result"):
                data = output.get("data", {})
                text = "".join(data.get("text/plain", ""))
                if FIGURE_AS_TEXT.search(text) and not any(key.startswith("image/") for key in data):
                    found.append(f"{where}: a figure shows as text, not as an image: {text[:80]}")
    return found


def package_changed() -> float:
    """When the package last changed: a run older than this may show yesterday's numbers."""
    return max(path.stat().st_mtime for path in (ROOT / "src" / "servingmath").rglob("*") if path.is_file())


def book_run(source: Path, root: Path = ROOT, executed: Path = EXECUTED, since: float = 0.0):
    """The book's run of ``source``, if there is one newer than it and than ``since``; else None."""
    run = executed / source.relative_to(root).with_suffix(".ipynb")
    if run.is_file() and run.stat().st_mtime >= max(source.stat().st_mtime, since):
        return nbformat.read(run, as_version=4)
    return None


def execute(source: Path, timeout: int = 600):
    """``source`` run from a fresh kernel in its own folder, as the book runs it; errors kept in the outputs."""
    from nbclient import NotebookClient

    notebook = jupytext.read(source)
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(source.parent)}})
    client.execute()
    return notebook


def main(argv: list[str]) -> int:
    notebooks = sources()
    if not notebooks:
        print("nbgate: no notebooks found under", ", ".join(FOLDERS), file=sys.stderr)
        return 1
    failures = []
    for source in notebooks:
        try:
            notebook = jupytext.read(source)
            nbformat.validate(notebook)
        except Exception as error:  # noqa: BLE001 (any reason it cannot be read is the failure)
            failures.append(f"{source.relative_to(ROOT)}: does not read as a notebook: {error}")
    since = package_changed()
    to_check = [source for source in notebooks if source.relative_to(ROOT).parts[0] not in RUN_ELSEWHERE]
    runs = {source: book_run(source, since=since) for source in to_check}
    to_run = [source for source, run in runs.items() if run is None]
    print(f"nbgate: {len(notebooks)} notebooks read; {len(runs) - len(to_run)} runs of the book's pages checked, "
          f"{len(to_run)} pages run here; exercises/ and solutions/ are run by tests/test_grading.py", flush=True)
    with ThreadPoolExecutor(max_workers=2) as pool:
        for source, run in zip(to_run, pool.map(execute, to_run)):
            runs[source] = run
    for source, run in runs.items():
        failures += [f"{source.relative_to(ROOT)}: {problem}" for problem in problems_in(run)]
    for failure in failures:
        print(f"nbgate: {failure}", file=sys.stderr)
    print(f"nbgate: {len(notebooks)} notebooks, {len(runs)} runs checked: "
          f"{'no problem' if not failures else f'{len(failures)} problems'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
