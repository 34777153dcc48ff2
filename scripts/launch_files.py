"""Write the files that Binder and Colab open, each made from its source so it cannot drift.

- ``.binder/requirements.txt``: the build's pins (``requirements.txt``), because Binder
  reads only ``.binder/`` once that folder exists, and cannot follow ``-r ../``.
- ``notebooks/``: an ``.ipynb`` copy of every page, exercise and solution (Colab opens
  only ``.ipynb``), at the same path as its source. Its first cell, hidden, installs
  what a fresh kernel lacks: ``servingmath`` at the release tagged in ``_config.yml``
  (the one place the URL and the tag are set), and nothing else. The pages glue numbers
  into the website's prose with myst-nb; in a notebook without it the cell stands in a
  ``glue`` that shows only what it is asked to show, rather than installing Sphinx.

``python scripts/launch_files.py`` writes them (``make notebooks``);
``tests/test_launch_files.py`` fails when a committed copy differs from what this makes.
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import jupytext
import nbformat
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nbgate import ROOT, hidden, sources  # noqa: E402  (the same list of notebooks the gate runs)

NOTEBOOKS = ROOT / "notebooks"
BINDER_REQUIREMENTS = ROOT / ".binder" / "requirements.txt"
GENERATED = "# Made from {source} by `make notebooks`: edit {source} instead, then run `make notebooks`.\n"


def repository() -> tuple[str, str]:
    """The repository's URL and the release tag the copies install the package from, from ``_config.yml``."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]
    return config["url"].rstrip("/"), config["release"]


def package_requirement() -> str:
    """``servingmath`` at the tagged release: what a copy installs, and all it installs.

    The package's own dependencies are loose (``pyproject.toml``), so pip keeps the numpy,
    matplotlib and ipywidgets that Colab already has.
    """
    url, release = repository()
    return f"servingmath @ git+{url}@{release}"


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


def expected() -> dict[Path, str]:
    """Every generated file and the text it should hold."""
    files = {BINDER_REQUIREMENTS: GENERATED.format(source="requirements.txt")
             + "".join(line + "\n" for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
                       if line.strip() and not line.startswith("#"))}
    for source in sources():
        files[NOTEBOOKS / source.relative_to(ROOT).with_suffix(".ipynb")] = notebook_copy(source)
    return files


def stale(files: dict[Path, str], notebooks: Path = NOTEBOOKS) -> list[Path]:
    """Notebook copies whose page no longer exists (what JupyterLab keeps in ``.ipynb_checkpoints/`` is no copy)."""
    if not notebooks.is_dir():
        return []
    return sorted(path for path in notebooks.rglob("*.ipynb") if path not in files and not hidden(path, notebooks))


def main() -> int:
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
