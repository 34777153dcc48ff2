"""Every page with controls, and two exercise notebooks, in a real JupyterLab, in headless Chromium.

JupyterLab starts as `make lab` sets it up (Markdown pages open as notebooks through
jupytext), on a free local port with a token, serving a temporary copy of the course, so
the work tree is left as it was. It loads once, with one browser, for the whole run. Each
notebook that a reader works in JupyterLab (every page importing widgets or live charts:
the explorers, the quizzes; and one practice and one graded exercise notebook, whose checks
answer the reader) is opened and run with Run All. Then:

- no cell shows an error or writes to stderr, and no figure shows as text instead of an image;
- every explorer shows its controls, its readouts and its figure, each as the package
  computes them at the explorer's defaults;
- each control of each explorer is moved, as a reader moves it (a slider's handle with
  the keyboard, a dropdown's menu, a button), and the readouts and the figure then show
  what the package computes at the new setting.

The other pages (no widget, no chart: the glossary, the lessons' front pages...) are run once,
by the book's build, and ``scripts/nbgate.py`` checks those runs for the same faults (no
error, no stderr, no figure shown as text, every cell run) and reads every page as a
notebook through jupytext, as JupyterLab opens it. Every exercise notebook, practice and graded, is
run blank by ``tests/test_grading.py``, whose runs are checked for the same faults; the two opened
here show that JupyterLab opens and runs them as that run does.

Skipped only where Chromium (Debian's, or $CHROMIUM: ``tests/browser/browser.py``) is missing. ``make lab-check`` runs it
(part of ``make test``); the explorers' screenshots come from ``scripts/lab_screenshots.py``
and the redraw times from ``make bench``.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
import labdriver  # noqa: E402

sys.path.insert(0, str(labdriver.ROOT / "scripts"))
import nbgate  # noqa: E402

from servingmath import charts  # noqa: E402

if not labdriver.CHROMIUM.exists():
    pytest.skip(f"JupyterLab test skipped: {labdriver.CHROMIUM} not found (apt-get install chromium)",
                allow_module_level=True)

PAGES = labdriver.pages_with_controls()
# The explorers each page holds.
EXPLORER_PAGES = {path: [name] for name, path in labdriver.EXPLORER_PAGES.items()}


def work_tree():
    """What git sees in the work tree, changed, untracked or ignored (bytecode aside); None outside a clone."""
    try:
        listed = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=labdriver.ROOT,
                                capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    # What the stages beside this test write (the book's _build/, pytest's and hypothesis's caches) is theirs;
    # JupyterLab serves a copy outside the tree.
    theirs = {"_build/", ".pytest_cache/", ".hypothesis/"}
    return sorted(line for line in listed.splitlines() if "__pycache__" not in line and line[3:] not in theirs)


@pytest.fixture(scope="module")
def lab():
    before = work_tree()
    with labdriver.lab_browser() as running:
        yield running
    with pytest.raises(OSError):  # the server is stopped
        running.server.api("/api/status")
    assert work_tree() == before, "JupyterLab left something in the work tree"


def problems_in(cells):
    """What a reader would see go wrong in the page's outputs, as ``scripts/nbgate.py`` reads a book's run:
    errors, stderr, figures shown as text, cells never run."""
    notebook = nbformat.from_dict({"cells": [{"cell_type": "code", "source": cell["source"], "outputs": cell["outputs"],
                                              "execution_count": cell["count"]} for cell in cells]})
    return nbgate.problems_in(notebook)


def test_the_test_covers_every_page_with_controls_and_two_exercises():
    toc = yaml.safe_load((labdriver.ROOT / "_toc.yml").read_text(encoding="utf-8"))
    listed = [toc["root"]] + [chapter["file"] for part in toc["parts"] for chapter in part["chapters"]]
    every = labdriver.pages()
    assert [page for page in listed if f"{page}.md" not in every] == []
    with_widgets = [page for page in every if labdriver.has_controls(page)]
    exercises = [page for page in PAGES if page.startswith("exercises/")]
    assert sorted(exercises) == sorted(labdriver.EXERCISES_IN_LAB) and set(exercises) <= set(every)
    assert not any(page.startswith("exercises/") for page in with_widgets)
    assert len(with_widgets) >= 12 and set(with_widgets) | set(exercises) == set(PAGES)
    assert {"index.md", "chapters/lesson-1/wrap-up.md", "chapters/lesson-2/wrap-up.md"} <= set(PAGES)  # chart, quizzes
    # The pages left out (the book's build or tests/test_grading.py runs them) build no widget and no chart.
    plain = set(every) - set(PAGES)
    uses = re.compile(r"\bipywidgets\.\w|\.live\(|\bQuiz\(")
    assert plain and not any(uses.search((labdriver.ROOT / page).read_text()) for page in plain)
    assert not any(p.startswith("solutions/") or "/." in p for p in PAGES)
    assert set(EXPLORER_PAGES) <= set(PAGES)
    # Every explorer a page builds is listed with its page (so the redraw benchmark and the screenshots find it).
    built = {(page, name) for page in every
             for name in re.findall(r"\b(\w+)\(\)\.live\(", (labdriver.ROOT / page).read_text())}
    assert built == {(page, name) for name, page in labdriver.EXPLORER_PAGES.items()}


def check_explorer(notebook, index, shown, settle=15):
    """Compare explorer ``index`` on the page with the package's, then move each control and compare again,
    waiting up to ``settle`` seconds a move for the page to show the package's readouts and figure."""
    name = shown["name"]
    mirror = labdriver.make_explorer(name)
    controls = list(mirror.controls.values())
    assert [c["label"] for c in shown["controls"]] == [c.description for c in controls], name
    assert shown["figureSize"][0] > 300 and shown["figureSize"][1] > 100, f"{name}: the figure is not on screen"
    assert dict(shown["readouts"]) == mirror.readouts, f"{name}: readouts at the defaults"
    assert shown["figure"] == notebook.as_parsed(mirror.svg), f"{name}: figure at the defaults"
    for number, control in enumerate(controls):
        to_end = not labdriver.at_end(control)
        before = notebook.explorers()[index]
        package_before = (dict(mirror.readouts), mirror.svg)
        labdriver.mirror_move(mirror, number, to_end)
        package_shows = package_before != (dict(mirror.readouts), mirror.svg)
        expected = {"readouts": list(map(list, mirror.readouts.items())), "figure": notebook.as_parsed(mirror.svg)}
        notebook.move(index, number, labdriver.control_kind(control), to_end)
        after = notebook.wait_for(index, expected, timeout=settle)
        what = f"{name}: after moving {control.description!r} to its {'last' if to_end else 'first'} setting"
        # Every move the package's explorer shows (in its figure or its readouts) shows on the page too;
        # a move between two settings refused for the same reason may show neither, there and here.
        shows = after["figure"] != before["figure"] or dict(after["readouts"]) != dict(before["readouts"])
        assert shows or not package_shows, f"{what}, neither the figure nor the readouts changed"
        assert dict(after["readouts"]) == mirror.readouts, what
        assert after["figure"] == expected["figure"], f"{what}, the figure is not the package's"


@pytest.mark.parametrize("path", PAGES)
def test_page_runs_clean_in_jupyterlab_and_its_explorers_answer(lab, path):
    notebook = lab.open(path)
    cells = notebook.run_all()
    assert cells, f"{path}: no code cell ran"
    assert problems_in(cells) == [], path
    widget_outputs = sum("application/vnd.jupyter.widget-view+json" in output.get("data", {})
                         for cell in cells for output in cell["outputs"])
    explorers = notebook.explorers()
    names = [e["name"] for e in explorers]
    assert set(EXPLORER_PAGES.get(path, [])) <= set(names), f"{path}: explorers missing"
    # Each named after the function that declares it, so the test can build the same one.
    for name in names:
        charts.find(name)
    assert widget_outputs >= len(explorers)
    for index, shown in enumerate(explorers):
        check_explorer(notebook, index, shown)
    assert lab.messages == [], f"{path}: errors in the page's scripts"


def test_a_broken_callback_a_blank_figure_and_a_figure_shown_as_text_fail_the_checks(lab):
    """A fixture page with each fault: every check above meets something to catch."""
    notebook = lab.open("tests/jupyterlab/fixture/broken-explorer.md")
    problems = problems_in(notebook.run_all())
    assert len(problems) == 1 and "a figure shows as text, not as an image" in problems[0]
    deaf, blank = notebook.explorers()
    with pytest.raises(AssertionError, match="after moving 'tokens in the reply' to its last setting, neither the figure nor the readouts changed"):
        check_explorer(notebook, 0, deaf, settle=4)  # a deaf slider never shows what is awaited
    with pytest.raises(AssertionError, match="passes: the figure is not on screen"):
        check_explorer(notebook, 1, blank)
