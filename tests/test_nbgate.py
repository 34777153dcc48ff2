"""scripts/nbgate.py: what it finds wrong in a run notebook, and when it trusts the book's run of a page."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import nbgate  # noqa: E402


def ran(*outputs, count=1, source="x = 1"):
    cell = new_code_cell(source, execution_count=count)
    cell.outputs = list(outputs)
    return cell


def test_a_clean_run_has_no_problem():
    notebook = new_notebook(cells=[ran(new_output("execute_result", {"text/plain": "2"}, execution_count=1)),
                                   new_code_cell("")])  # an empty cell need not run
    assert nbgate.problems_in(notebook) == []


def test_each_fault_a_reader_would_see_is_named_with_its_cell():
    notebook = new_notebook(cells=[
        ran(new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=[]), source="1 / 0"),
        ran(new_output("stream", name="stderr", text="UserWarning: careful\n"), source="warn()"),
        ran(new_output("display_data", {"text/plain": "<Figure size 640x480 with 1 Axes>"}), source="plt.figure()"),
        ran(new_output("display_data", {"text/plain": "<Figure size 640x480 with 1 Axes>", "image/png": "iVBOR"})),
        ran(count=None, source="never_run()"),
        ran(new_output("stream", name="stdout", text="fine\n")),
    ])
    assert nbgate.problems_in(notebook) == [
        "code cell 1 (1 / 0): ZeroDivisionError: division by zero",
        "code cell 2 (warn()): stderr: UserWarning: careful\n",
        "code cell 3 (plt.figure()): a figure shows as text, not as an image: <Figure size 640x480 with 1 Axes>",
        "code cell 5 (never_run()): never ran",
    ]


def test_the_books_run_counts_only_when_newer_than_the_page_and_the_package(tmp_path):
    page = tmp_path / "chapters" / "page.md"
    page.parent.mkdir()
    page.write_text("---\njupytext: {}\n---\n")
    executed = tmp_path / "_build" / "jupyter_execute"
    run = executed / "chapters" / "page.ipynb"
    assert nbgate.book_run(page, root=tmp_path, executed=executed) is None  # never run
    run.parent.mkdir(parents=True)
    nbformat.write(new_notebook(cells=[ran()]), run)
    os.utime(page, (1000, 1000))
    os.utime(run, (2000, 2000))
    assert nbgate.book_run(page, root=tmp_path, executed=executed).cells[0].source == "x = 1"
    assert nbgate.book_run(page, root=tmp_path, executed=executed, since=3000) is None  # the package changed since
    os.utime(page, (2500, 2500))
    assert nbgate.book_run(page, root=tmp_path, executed=executed) is None  # the page changed since


def test_a_page_run_here_shows_its_faults(tmp_path):
    """The JupyterLab test's broken fixture page, run by the gate: the figure it shows as text is caught."""
    page = tmp_path / "broken.md"
    page.write_text((ROOT / "tests" / "jupyterlab" / "fixture" / "broken-explorer.md").read_text())
    problems = nbgate.problems_in(nbgate.execute(page))
    assert len(problems) == 1 and "a figure shows as text, not as an image" in problems[0]


def test_every_notebook_is_read_and_the_run_elsewhere_folders_are_named_in_the_docstring():
    found = [path.relative_to(ROOT).parts[0] for path in nbgate.sources()]
    assert {"index.md", "chapters", "exercises", "solutions"} <= set(found)
    for folder in nbgate.RUN_ELSEWHERE:
        assert folder in found and f"{folder}/" in nbgate.__doc__
