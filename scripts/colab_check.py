"""Run every Colab copy (notebooks/) as Colab would, in a clean virtual environment.

    python scripts/colab_check.py [--venv /tmp/servingmath-colab]

The environment holds Colab's versions of the packages the course uses (``COLAB``,
as Colab's runtime listed them in February 2026) and no Sphinx, myst-nb or Jupyter Book.
The package is installed from the work tree with its declared dependencies, as the
copies' setup cell installs it from the pinned commit, and must leave Colab's versions
as they are. Then every copy runs with nbclient (no error, nothing on stderr, no figure
shown as text), and every control of every explorer is moved under ipywidgets 7.

Not checked here: Colab's own front end (its widget manager in the browser), its
Python (3.12; this runs the Python it is started with), and the install from the
repository at the pinned commit, which needs the commit pushed
(tests/test_launch_files.py installs the pinned commit from this repository).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COLAB = ("ipywidgets==7.7.1", "numpy==2.0.2", "matplotlib==3.10.0")
NOT_ON_COLAB_COPIES = ("sphinx", "myst-nb", "jupyter-book")

RUN_COPIES = r'''
import pathlib, sys, nbformat
from nbclient import NotebookClient
failed = []
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.ipynb")):
    notebook = nbformat.read(path, as_version=4)
    try:
        NotebookClient(notebook, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    except Exception as error:
        failed.append(f"{path}: {str(error)[-500:]}")
        continue
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.output_type == "stream" and output.name == "stderr":
                failed.append(f"{path}: stderr: {output.text[:200]}")
            data = output.get("data", {})
            if set(data) == {"text/plain"} and "<Figure size" in data["text/plain"]:
                failed.append(f"{path}: a figure shows as text")
    print("ran", path)
print("\n".join(failed) or "every copy ran clean")
sys.exit(1 if failed else 0)
'''

MOVE_EXPLORERS = r'''
import sys, ipywidgets
sys.path.insert(0, sys.argv[1])
import labdriver
for name in labdriver.EXPLORER_NAMES:
    explorer = labdriver.make_explorer(name)
    explorer.widget()
    refusals = set(explorer.explorer.refuse.values())
    for number, control in enumerate(explorer.controls.values()):
        svg, draws, shown = explorer.svg, explorer.draws, set(explorer.readouts.values())
        labdriver.mirror_move(explorer, number, not labdriver.at_end(control))
        # A move between two settings refused for the same reason draws the same refusal.
        still_refused = bool(shown) and shown == set(explorer.readouts.values()) and shown <= refusals
        assert explorer.draws == draws + 1 and explorer.view.value.endswith(explorer.svg), (name, control.description)
        assert explorer.svg != svg or still_refused, (name, control.description)
    print(f"{name}: {len(explorer.controls)} controls moved under ipywidgets {ipywidgets.__version__}")
'''


def run(*command, **kwargs):
    print("$", " ".join(str(part) if "\n" not in str(part) else "<script>" for part in command), flush=True)
    return subprocess.run(list(map(str, command)), check=True, **kwargs)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", default=str(Path(tempfile.gettempdir()) / "servingmath-colab"))
    venv = Path(parser.parse_args(argv).venv)
    python = venv / "bin" / "python"
    if not python.exists():
        run(sys.executable, "-m", "venv", venv)
    run(python, "-m", "pip", "install", "--quiet", *COLAB, "ipykernel", "nbclient", "nbformat")
    run(python, "-m", "ipykernel", "install", "--sys-prefix", "--name", "python3", stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory() as scratch:
        # The package from a copy of the work tree, so no build output lands in it.
        source = Path(scratch) / "course"
        files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                               capture_output=True, text=True).stdout.split()
        for name in files:
            if (ROOT / name).is_file():
                (source / name).parent.mkdir(parents=True, exist_ok=True)
                (source / name).write_bytes((ROOT / name).read_bytes())
        run(python, "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps", source)
        run(python, "-m", "pip", "install", "--quiet", source)
        installed = subprocess.run([python, "-m", "pip", "freeze"], check=True, capture_output=True,
                                   text=True).stdout.lower().splitlines()
        changed = [pin for pin in COLAB if pin.lower() not in installed]
        extra = [line for line in installed if line.split("==")[0] in NOT_ON_COLAB_COPIES]
        if changed or extra:
            print(f"colab_check: installing the package changed {changed} or brought {extra}", file=sys.stderr)
            return 1
        run(python, "-c", RUN_COPIES, source / "notebooks", cwd=source, env={"CI": "true", "PATH": "/usr/bin:/bin"})
        run(python, "-c", MOVE_EXPLORERS, source / "tests" / "jupyterlab", cwd=source)
    print(f"colab_check: every copy ran under {', '.join(COLAB)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
