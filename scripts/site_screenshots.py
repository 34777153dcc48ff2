"""Screenshots of the built website, as readers see it: every page of the table of contents
at 1,400 and 400 px wide, in light and dark mode, and each live chart on its own.

    python scripts/site_screenshots.py [_build/html] [--out _build/screenshots]

Writes ``<page>-<width>-<mode>.png`` (the whole page) and
``charts/<page>-<n>-<width>-<mode>.png`` (each chart) under ``--out``. Needs a built
site (``make book``) and Debian's Chromium (``tests/browser/browser.py``), driven by Playwright.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "tests" / "browser")]

from browser import CHROMIUM, Chromium  # noqa: E402
from check_site import toc_files  # noqa: E402
from site_checks import serve  # noqa: E402

WIDTHS = (1400, 400)
MODES = ("light", "dark")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("html", nargs="?", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--out", default=str(ROOT / "_build" / "screenshots"))
    args = parser.parse_args(argv)
    html, out = Path(args.html), Path(args.out)
    if not (html / "index.html").is_file():
        print(f"site_screenshots: no built site at {html}; run `make book` first", file=sys.stderr)
        return 1
    if not CHROMIUM.exists():
        print(f"site_screenshots: {CHROMIUM} not found (apt-get install chromium-headless-shell)", file=sys.stderr)
        return 1
    (out / "charts").mkdir(parents=True, exist_ok=True)
    chromium = Chromium()
    written = 0
    try:
        with serve(html) as origin:
            for width in WIDTHS:
                for mode in MODES:
                    tab = chromium.tab(width=width, height=900, dark=mode == "dark", touch=width < 600)
                    for page in toc_files():
                        name = page.replace("/", "-")
                        tab.open(f"{origin}{page}.html")
                        tab.screenshot(out / f"{name}-{width}-{mode}.png")
                        written += 1
                        charts = tab.page.locator("figure.webchart")
                        if charts.count():
                            # The theme's header stays at the top of the window, its skip link and back-to-top button
                            # float over the page: out of the way of a chart's picture, in a window taller than the chart.
                            tab.page.add_style_tag(content=".bd-header, .bd-header-article { position: static !important; }"
                                                   " .skip-link, #pst-back-to-top { display: none !important; }")
                            tab.page.set_viewport_size({"width": width, "height": 2400})
                        for k in range(charts.count()):
                            charts.nth(k).screenshot(path=str(out / "charts" / f"{name}-{k + 1}-{width}-{mode}.png"))
                            written += 1
                        tab.page.set_viewport_size({"width": width, "height": 900})
                    tab.close()
    finally:
        chromium.close()
    print(f"site_screenshots: {written} screenshots in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
