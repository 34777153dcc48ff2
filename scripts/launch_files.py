"""Write the files that Binder and Colab open, each made from its source so it cannot drift.

- ``.binder/requirements.txt``: the reader's environment at the build's pins: the package's own
  dependencies, JupyterLab with jupytext (the pages open as notebooks), the widgets, myst-nb (the
  pages' glue) and matplotlib, each with what it needs, as ``requirements.txt`` pins them, and
  none of the build's and the tests' tools (Jupyter Book, pytest, Playwright, nbgrader). Binder
  reads only ``.binder/`` once that folder exists, and cannot follow ``-r ../``.
- ``notebooks/``: an ``.ipynb`` copy of every page, exercise and solution (Colab opens
  only ``.ipynb``), at the same path as its source. Its first cell, hidden, installs
  what a fresh kernel lacks: ``servingmath`` at the commit pinned in ``_config.yml``
  (the one place the URL and the commit are set), and nothing else. The pages glue numbers
  into the website's prose with myst-nb; in a notebook without it the cell stands in a
  ``glue`` that shows only what it is asked to show, rather than installing Sphinx.

``python scripts/launch_files.py`` writes them (``make notebooks``);
``tests/test_launch_files.py`` fails when a committed copy differs from what this makes.

The pin is a commit's full hash, not a tag: a commit exists as soon as it is pushed, never moves,
and can be checked here, where a tag may be cut late or not at all. It must hold the package the
copies were made with (``src/servingmath/`` and ``pyproject.toml`` as committed now), and a test
fails once they differ. ``python scripts/launch_files.py --pin`` (``make pin``), run after the
package's changes are committed, pins the current commit and rewrites the copies; commit the result.
"""
from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import jupytext
import nbformat
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nbgate import ROOT, hidden, sources  # noqa: E402  (the same list of notebooks the gate runs)

NOTEBOOKS = ROOT / "notebooks"
BINDER_REQUIREMENTS = ROOT / ".binder" / "requirements.txt"
GENERATED = "# Made from {source} by `make notebooks`: edit {source} instead, then run `make notebooks`.\n"


def _repository_config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]


def repository() -> tuple[str, str]:
    """The repository's URL and branch (what Colab opens the copies from), from ``_config.yml``."""
    config = _repository_config()
    return config["url"].rstrip("/"), config.get("branch", "main")


def release() -> str:
    """The commit the copies install the package from (its full hash), from ``_config.yml``."""
    return str(_repository_config()["release"])


PACKAGE = ("src/servingmath", "pyproject.toml")


def _git(*args: str, root: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)


def pin_problem(commit: str, root: Path = ROOT) -> str:
    """Why ``commit`` cannot be the copies' pin ('' if it can): it must be a full hash of a commit in the
    history of ``root``'s HEAD that holds ``servingmath.variants`` and the package as committed now."""
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        return f"the pin must be a commit's full hash (40 hex digits), got {commit!r}"
    if _git("cat-file", "-e", f"{commit}^{{commit}}", root=root).returncode:
        return f"commit {commit} is not in this repository"
    # A commit amended or reset away still sits in the object store here, but a clone of the branch never gets it.
    if _git("merge-base", "--is-ancestor", commit, "HEAD", root=root).returncode:
        return f"commit {commit} is not in HEAD's history: run `make pin` and commit the pin"
    if _git("cat-file", "-e", f"{commit}:src/servingmath/variants.py", root=root).returncode:
        return f"commit {commit} has no src/servingmath/variants.py"
    changed = _git("diff", "--name-only", commit, "HEAD", "--", *PACKAGE, root=root).stdout.split()
    if changed:
        return (f"the package changed since the pinned commit {commit[:12]} ({', '.join(changed)}): "
                "commit it, then run `make pin` and commit the pin")
    return ""


def pin() -> str:
    """Pin the current commit in ``_config.yml``, once the package is committed; returns the hash."""
    dirty = _git("status", "--porcelain", "--", *PACKAGE).stdout.strip()
    if dirty:
        raise SystemExit(f"launch_files: commit the package first; not committed:\n{dirty}")
    commit = _git("rev-parse", "HEAD").stdout.strip()
    config = ROOT / "_config.yml"
    text, count = re.subn(r"^(  release: ).*$", lambda match: match.group(1) + commit,
                          config.read_text(encoding="utf-8"), count=1, flags=re.M)
    if count != 1:
        raise SystemExit("launch_files: _config.yml has no `  release:` line under `repository:`")
    config.write_text(text, encoding="utf-8")
    return commit


def package_requirement() -> str:
    """``servingmath`` at the pinned commit: what a copy installs, and all it installs.

    The package's own dependencies are loose (``pyproject.toml``), so pip keeps the numpy,
    matplotlib and ipywidgets that Colab already has.
    """
    url, _branch = repository()
    return f"servingmath @ git+{url}@{release()}"


def setup_cell_source() -> str:
    return (
        "#@title Setup: install the course's package where it is missing (Colab)\n"
        "import importlib.util\n"
        "import subprocess\n"
        "import sys\n"
        "import types\n"
        "\n"
        'if importlib.util.find_spec("servingmath") is None:\n'
        f'    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "{package_requirement()}"], check=True)\n'
        "    importlib.invalidate_caches()\n"
        "# The pages glue numbers into the website's prose (myst-nb); here glue shows only what it is asked to.\n"
        'if importlib.util.find_spec("myst_nb") is None:\n'
        "    from IPython.display import display as _show\n"
        "\n"
        '    _glue_here = types.ModuleType("myst_nb")\n'
        "    _glue_here.glue = lambda name, value, display=True: _show(value) if display else None\n"
        '    sys.modules["myst_nb"] = _glue_here'
    )


def setup_cell() -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(setup_cell_source())
    # Hidden three ways: removed from the website, collapsed in JupyterLab, a form on Colab.
    cell.metadata = {"tags": ["remove-cell"], "jupyter": {"source_hidden": True}, "cellView": "form"}
    return cell


def notebook_copy(source: Path) -> str:
    """The ``.ipynb`` text of ``source``: the setup cell, then every cell of the page."""
    notebook = jupytext.read(source)
    notebook.cells.insert(0, setup_cell())
    # The pairing with the .md stays in the repository; the copy is a plain notebook.
    notebook.metadata.pop("jupytext", None)
    seen: dict[str, int] = {}
    for cell in notebook.cells:
        # Ids from the cell's text, so regenerating leaves unchanged cells unchanged.
        digest = hashlib.sha1((cell.cell_type + cell.source).encode("utf-8")).hexdigest()[:8]
        seen[digest] = seen.get(digest, 0) + 1
        cell.id = digest if seen[digest] == 1 else f"{digest}-{seen[digest]}"
    nbformat.validate(notebook)
    return nbformat.writes(notebook) + "\n"


# What a reader runs on Binder besides the package's own dependencies (pyproject.toml).
READER = ("jupyterlab", "jupytext", "ipykernel", "ipywidgets", "myst-nb", "numpy", "matplotlib")


def reader_pins() -> list[str]:
    """The lines of requirements.txt that the reader's packages need, theirs and what those need in turn (read
    from the environment `make` installed from the same pins), in requirements.txt's order."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    lines = [line for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    pinned = {canonicalize_name(line.split("==")[0]): line for line in lines}
    own = [Requirement(r).name for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]]
    wanted, todo = set(), [canonicalize_name(name) for name in (*own, *READER)]
    while todo:
        name = todo.pop()
        if name in wanted or name not in pinned:
            continue
        wanted.add(name)
        for needed in map(Requirement, metadata.requires(name) or []):
            if needed.marker is None or needed.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(needed.name))
    return [line for name, line in pinned.items() if name in wanted]


def expected() -> dict[Path, str]:
    """Every generated file and the text it should hold."""
    files = {BINDER_REQUIREMENTS: GENERATED.format(source="requirements.txt") + "".join(f"{line}\n" for line in reader_pins())}
    for source in sources():
        files[NOTEBOOKS / source.relative_to(ROOT).with_suffix(".ipynb")] = notebook_copy(source)
    return files


def stale(files: dict[Path, str], notebooks: Path = NOTEBOOKS) -> list[Path]:
    """Notebook copies whose page no longer exists (what JupyterLab keeps in ``.ipynb_checkpoints/`` is no copy)."""
    if not notebooks.is_dir():
        return []
    return sorted(path for path in notebooks.rglob("*.ipynb") if path not in files and not hidden(path, notebooks))


def main() -> int:
    if "--pin" in sys.argv[1:]:
        print("pinned", pin())
    files = expected()
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print("wrote", path.relative_to(ROOT))
    for path in stale(files):
        path.unlink()
        print("removed", path.relative_to(ROOT))
    print(f"launch files: {len(files)} up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
