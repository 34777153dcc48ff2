"""Each explorer as JupyterLab shows it, before and after a control moves, as PNGs.

    python scripts/lab_screenshots.py [--out _build/screenshots/jupyterlab]

JupyterLab starts as `make lab` sets it up, on a temporary copy of the course (see
``tests/jupyterlab/labdriver.py``); each page with an explorer is run with Run All, and
each explorer is captured, then its first control is moved to its last setting and it is
captured again, with the whole window around it. Part of ``make screenshots``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "jupyterlab"))
import labdriver  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "_build" / "screenshots" / "jupyterlab"))
    out = Path(parser.parse_args(argv).out)
    if not labdriver.CHROMIUM.exists():
        print(f"lab_screenshots: {labdriver.CHROMIUM} not found (apt-get install chromium-headless-shell)", file=sys.stderr)
        return 1
    out.mkdir(parents=True, exist_ok=True)
    # A window tall enough for the tallest explorer (the plate's seven controls) in one piece.
    with labdriver.lab_browser(height=1500) as lab:
        for name, path in labdriver.EXPLORER_PAGES.items():
            notebook = lab.open(path)
            notebook.run_all()
            index = [shown["name"] for shown in notebook.explorers()].index(name)
            box = notebook.explorer_box(index)
            box.scroll_into_view_if_needed()
            lab.page.mouse.move(0, 0)
            box.screenshot(path=str(out / f"{name}-before.png"))
            lab.page.screenshot(path=str(out / f"{name}-window.png"))
            number, kind, to_end, _ = next(labdriver.moves(labdriver.make_explorer(name), 1))
            before = notebook.explorers()[index]["figure"]
            notebook.move(index, number, kind, to_end)
            notebook.wait_for_figure_change(index, before)
            time.sleep(0.3)
            box.screenshot(path=str(out / f"{name}-after.png"))
            print(f"wrote {name}-before.png, {name}-after.png, {name}-window.png")
    print(f"lab_screenshots: the explorers in JupyterLab are in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
