"""What Binder and Colab open: made from the sources, and failing here when they drift.

Run `make notebooks` to bring .binder/requirements.txt and notebooks/ up to date."""
import importlib.util
import json
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "_ext"))
import course_site  # noqa: E402
import launch_files  # noqa: E402
import nbgate  # noqa: E402

FIX = "run `make notebooks` and commit the result"


@pytest.fixture(scope="module")
def expected():
    return launch_files.expected()


def test_binder_installs_the_readers_environment_at_the_builds_pins(expected):
    """The reader's packages (JupyterLab, jupytext, the widgets, myst-nb for the pages' glue, numpy, matplotlib, the
    package's own dependencies) and all they need, each as requirements.txt pins it; none of the build's tools."""
    text = launch_files.BINDER_REQUIREMENTS.read_text(encoding="utf-8")
    assert text == expected[launch_files.BINDER_REQUIREMENTS], f".binder/requirements.txt drifted: {FIX}"
    pins = [line for line in text.splitlines() if not line.startswith("#")]
    build = [line for line in (ROOT / "requirements.txt").read_text().splitlines() if line and not line.startswith("#")]
    assert set(pins) <= set(build) and len(pins) < 0.8 * len(build)
    names = {pin.split("==")[0].lower() for pin in pins}
    assert {"jupyterlab", "jupytext", "ipywidgets", "ipykernel", "myst-nb", "numpy", "matplotlib", "pyyaml", "tqdm",
            "threadpoolctl", "traitlets", "tornado"} <= names
    assert not names & {"jupyter-book", "pytest", "playwright", "nbgrader", "hypothesis", "sphinx-book-theme"}
    # Every page's imports are there: the package's own dependencies and myst-nb's glue.
    from importlib import metadata
    from packaging.requirements import Requirement
    for needed in metadata.requires("myst-nb") + metadata.requires("jupyterlab"):
        requirement = Requirement(needed)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            assert requirement.name.lower().replace("_", "-") in {n.replace("_", "-") for n in names}, requirement


def test_every_page_has_its_notebook_copy_and_no_copy_outlives_its_page(expected):
    copies = {path for path in expected if path.suffix == ".ipynb"}
    assert ROOT / "notebooks" / "index.ipynb" in copies
    assert len(copies) == len(nbgate.sources())
    for path in copies:
        assert path.is_file(), f"{path.relative_to(ROOT)} is missing: {FIX}"
        assert path.read_text(encoding="utf-8") == expected[path], f"{path.relative_to(ROOT)} drifted: {FIX}"
    assert launch_files.stale(expected) == [], f"copies without a page: {FIX}"


def test_a_copy_is_its_page_after_a_hidden_setup_cell():
    import jupytext

    copy = json.loads((ROOT / "notebooks" / "index.ipynb").read_text(encoding="utf-8"))
    page = jupytext.read(ROOT / "index.md")
    setup, *cells = copy["cells"]
    assert [("".join(c["source"]), c["cell_type"]) for c in cells] == [(c.source, c.cell_type) for c in page.cells]
    assert setup["metadata"] == {"tags": ["remove-cell"], "jupyter": {"source_hidden": True}, "cellView": "form"}
    assert copy["metadata"] == {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    assert len({c["id"] for c in copy["cells"]}) == len(copy["cells"])


def test_the_setup_cell_installs_the_package_at_the_commit_pinned_in_config():
    source = launch_files.setup_cell_source()
    url, branch = launch_files.repository()
    release = launch_files.release()
    assert url.startswith("https://github.com/") and branch == "main"
    # A commit of this repository that holds the package as it is committed now (variants and all),
    # not a branch that moves under the copies nor a tag that may never be cut.
    assert launch_files.pin_problem(release) == ""
    assert f'"servingmath @ git+{url}@{release}"' in source
    # Nothing the notebooks do not import: no Sphinx, no myst-nb, no pins of the build's.
    assert source.count('"pip", "install"') == 1 and "==" not in source
    assert source.count("git+") == 1 and "sphinx" not in source.lower()
    # The URL and the commit are written in _config.yml only (the README names the URL for readers).
    for written in (url.split("://")[1], release):
        places = subprocess.run(["git", "grep", "-l", "-w", "-F", written, "--", ".", ":!notebooks", ":!README.md"],
                                cwd=ROOT, capture_output=True, text=True).stdout
        assert places.split() == ["_config.yml"], written


def test_the_package_admits_the_ipywidgets_colab_ships_and_the_current_one():
    from packaging.requirements import Requirement

    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    ipywidgets = next(Requirement(d) for d in dependencies if d.startswith("ipywidgets"))
    assert {"7.7.1", "8.1.9"} <= {v for v in ("7.6.5", "7.7.1", "8.0.0", "8.1.9", "9.0.0") if v in ipywidgets.specifier}
    assert "7.6.5" not in ipywidgets.specifier and "9.0.0" not in ipywidgets.specifier


def run_setup_cell(monkeypatch, absent):
    installs = []
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in absent else real_find_spec(name))
    monkeypatch.setattr(subprocess, "run", lambda command, check: installs.append(command))
    monkeypatch.setitem(sys.modules, "myst_nb", sys.modules.get("myst_nb"))
    namespace = {}
    exec(launch_files.setup_cell_source(), namespace)
    return installs


def test_the_setup_cell_does_nothing_where_the_packages_are_installed(monkeypatch):
    import myst_nb

    assert run_setup_cell(monkeypatch, absent=()) == []
    assert sys.modules["myst_nb"] is myst_nb


def test_the_setup_cell_installs_only_the_package_and_stands_in_for_glue(monkeypatch, capsys):
    assert run_setup_cell(monkeypatch, absent=("servingmath", "myst_nb")) == [
        [sys.executable, "-m", "pip", "install", "--quiet", launch_files.package_requirement()]]
    from myst_nb import glue  # what every page does, now without myst-nb

    assert glue("hidden", "4.79 ms", display=False) is None
    glue("shown", "4.79 ms")
    assert capsys.readouterr().out.strip() == "4.79 ms"


def test_binder_installs_the_package_and_opens_markdown_as_notebooks():
    post_build = ROOT / ".binder" / "postBuild"
    assert post_build.stat().st_mode & stat.S_IXUSR
    text = post_build.read_text()
    assert "pip install --quiet --no-deps ." in text
    assert "jupytext-config set-default-viewer markdown myst" in text
    assert (ROOT / ".binder" / "runtime.txt").read_text().strip() == "python-3.11"


# --- the pages' corrections (_ext/course_site.py) ------------------------------------------
def page_context(url):
    return {"header_buttons": [{"label": "launch-buttons", "buttons": [
        {"text": "Binder", "url": "https://mybinder.org/v2/gh/org/course/main?urlpath=lab/tree/x.md"},
        {"text": "Colab", "url": url}]}]}


def fake_app(srcdir, path_to_docs=""):
    options = {"repository_branch": "main", "path_to_docs": path_to_docs}
    return SimpleNamespace(srcdir=str(srcdir), config=SimpleNamespace(html_theme_options=options))


def test_colab_opens_the_notebook_copy(tmp_path):
    (tmp_path / "notebooks" / "chapters" / "lesson-1").mkdir(parents=True)
    (tmp_path / "notebooks" / "chapters" / "lesson-1" / "part-3.ipynb").write_text("{}")
    context = page_context("https://colab.research.google.com/github/org/course/blob/main/chapters/lesson-1/part-3.md")
    course_site.point_colab_at_notebook_copy(fake_app(tmp_path), "chapters/lesson-1/part-3", "page.html", context, None)
    colab = context["header_buttons"][0]["buttons"][1]["url"]
    assert colab == "https://colab.research.google.com/github/org/course/blob/main/notebooks/chapters/lesson-1/part-3.ipynb"
    assert context["header_buttons"][0]["buttons"][0]["url"].endswith("lab/tree/x.md")  # Binder keeps the page


def test_colab_link_keeps_the_books_folder(tmp_path):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "index.ipynb").write_text("{}")
    context = page_context("https://colab.research.google.com/github/org/course/blob/main/book/index.md")
    course_site.point_colab_at_notebook_copy(fake_app(tmp_path, "book/"), "index", "page.html", context, None)
    assert context["header_buttons"][0]["buttons"][1]["url"].endswith("/blob/main/book/notebooks/index.ipynb")


def test_a_page_without_its_copy_is_a_warning(tmp_path, monkeypatch):
    warnings = []
    monkeypatch.setattr(course_site.logger, "warning", lambda message, **kw: warnings.append(message))
    url = "https://colab.research.google.com/github/org/course/blob/main/index.md"
    context = page_context(url)
    course_site.point_colab_at_notebook_copy(fake_app(tmp_path), "index", "page.html", context, None)
    assert warnings == ["index: Colab needs notebooks/index.ipynb; run `make notebooks` to write it"]
    assert context["header_buttons"][0]["buttons"][1]["url"] == url


def test_a_page_lists_each_inline_script_once_and_no_widget_state():
    from sphinx.builders.html._assets import _JavaScript

    thebe = "const THEBE_JS_URL = 'x'"
    scripts = [_JavaScript("_static/a.js"), _JavaScript(None, body=thebe), _JavaScript("", body=thebe),
               _JavaScript("_static/a.js", priority=900), _JavaScript(None, body="var other = 1"),
               _JavaScript(None, body="{}", type="application/vnd.jupyter.widget-state+json")]
    context = {"script_files": scripts}
    course_site.page_scripts(None, "index", "page.html", context, None)
    assert context["script_files"] == [scripts[0], scripts[1], scripts[3], scripts[4]]
    assert len(scripts) == 6  # the builder's own list is left alone


def test_make_notebooks_is_quiet_when_nothing_changed():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "launch_files.py")], capture_output=True,
                            text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert result.returncode == 0
    assert result.stdout.splitlines() == [f"launch files: {len(nbgate.sources()) + 1} up to date"]


def test_an_explorer_on_the_website_says_where_it_runs():
    from docutils import nodes

    doctree = nodes.section()
    output = nodes.container(classes=["cell_output"])
    output += nodes.raw("", '<script type="application/vnd.jupyter.widget-view+json">{"model_id": "1"}</script>',
                        format="html")
    doctree += [output, nodes.raw("", "<p>kept</p>", format="html")]
    course_site.explorers_say_where_they_run(None, doctree, "page")
    note, kept = list(doctree.findall(nodes.paragraph)), list(doctree.findall(nodes.raw))
    assert [n.astext() for n in note] == [course_site.EXPLORER_RUNS_LIVE] and note[0]["classes"] == ["explorer-runs-live"]
    assert [k.astext() for k in kept] == ["<p>kept</p>"]


# --- what a learner's JupyterLab leaves behind ---------------------------------------------
def test_the_page_scan_ignores_what_jupyterlab_saves_beside_the_pages(tmp_path):
    """`make lab` then `make test`: JupyterLab's .ipynb_checkpoints/ hold copies, never pages."""
    page = ROOT / "chapters" / "lesson-1" / "part-1-prompt-and-reply.md"
    (tmp_path / "index.md").write_text((ROOT / "index.md").read_text(encoding="utf-8"), encoding="utf-8")
    lesson = tmp_path / "chapters" / "lesson-1"
    (lesson / ".ipynb_checkpoints").mkdir(parents=True)
    (lesson / page.name).write_text(page.read_text(encoding="utf-8"), encoding="utf-8")
    (lesson / ".ipynb_checkpoints" / "part-1-prompt-and-reply-checkpoint.md").write_text(
        page.read_text(encoding="utf-8"), encoding="utf-8")
    copies = tmp_path / "notebooks" / "chapters" / "lesson-1"
    (copies / ".ipynb_checkpoints").mkdir(parents=True)
    (copies / "part-1-prompt-and-reply.ipynb").write_text("{}")
    (copies / ".ipynb_checkpoints" / "part-1-prompt-and-reply-checkpoint.ipynb").write_text("{}")
    (copies / "gone.ipynb").write_text("{}")

    assert nbgate.sources(tmp_path) == [tmp_path / "index.md", lesson / page.name]
    made = {copies / "part-1-prompt-and-reply.ipynb": "{}"}
    assert launch_files.stale(made, tmp_path / "notebooks") == [copies / "gone.ipynb"]


def test_a_pin_that_is_not_a_commit_holding_this_package_is_refused():
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    first = subprocess.run(["git", "rev-list", "--max-parents=0", "HEAD"], cwd=ROOT, capture_output=True,
                           text=True).stdout.split()[0]
    assert launch_files.pin_problem("v0.1.0") == "the pin must be a commit's full hash (40 hex digits), got 'v0.1.0'"
    assert launch_files.pin_problem("0" * 40) == f"commit {'0' * 40} is not in this repository"
    assert launch_files.pin_problem(first) == f"commit {first} has no src/servingmath/variants.py"
    assert launch_files.pin_problem(head) == ""


def test_a_pin_reset_away_from_the_history_is_refused(tmp_path):
    """A commit dropped by an amend or a reset stays in this object store, but no clone of the branch has it."""
    clone = tmp_path / "clone"
    # An identity of its own (a CI container has none), and nothing that points git at another repository.
    env = {key: value for key, value in os.environ.items() if key not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    env.update(GIT_AUTHOR_NAME="test", GIT_AUTHOR_EMAIL="test@example.invalid", GIT_COMMITTER_NAME="test",
               GIT_COMMITTER_EMAIL="test@example.invalid")

    def run(*args):
        done = subprocess.run(["git", *args], cwd=clone, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(ROOT), str(clone)], env=env, check=True)
    dropped = run("commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "dropped")
    assert launch_files.pin_problem(dropped, root=clone) == (
        f"commit {dropped} is not in HEAD's history: run `make pin` and commit the pin")
    run("update-ref", "HEAD", dropped)
    assert launch_files.pin_problem(dropped, root=clone) == ""


def test_what_the_pin_installs_holds_the_variants_of_this_package(tmp_path):
    """pip installs the pinned commit as Colab's setup cell does (from this repository, not GitHub)."""
    release = launch_files.release()
    target = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--target", str(target), f"servingmath @ git+file://{ROOT}@{release}"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    installed = target / "servingmath" / "variants.py"
    assert installed.read_bytes() == (ROOT / "src" / "servingmath" / "variants.py").read_bytes()


def test_the_colab_check_reads_the_lab_driver_without_playwright():
    """scripts/colab_check.py imports tests/jupyterlab/labdriver.py in Colab's environment, which has no Playwright."""
    done = subprocess.run([sys.executable, "-c", "import sys; sys.modules['playwright'] = None; "
                           f"sys.path.insert(0, {str(ROOT / 'tests' / 'jupyterlab')!r}); import labdriver; "
                           "print(labdriver.CHROMIUM.name)"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().startswith("chromium")
