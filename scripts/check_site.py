"""Check the built website: every page of the table of contents exists and shows its
numbers, and nothing failed silently.

A page fails on a traceback, an unfilled glue role, Python's text for an object where a
figure or a value belongs (``<Figure size 700x360 with 1 Axes>``, ``object at 0x…``), a
figure its source declares that holds no image or SVG, an explorer with no live chart, a
live chart beside a frozen explorer, chart data over the budget, or the note on running the page live said twice.
The browser test (``tests/browser``) then checks that each image loads.
"""
from __future__ import annotations

import html as html_text
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
# Text that means Python printed an object where a reader expected a figure or a number.
PYTHON_TEXT = ("<Figure size", "object at 0x", "<servingmath.", "Traceback (most recent call last)",
               "<matplotlib.", "<IPython.core.display")
# The most chart data one page may carry (the JSON the charts' script looks values up in).
CHART_DATA_BUDGET = 400_000
CHART_DATA = re.compile(r'<script type="application/json" class="webchart-data">(.*?)</script>', re.S)
# A figure the source declares: {figure} or {glue:figure}, with its :name:.
DECLARED = re.compile(r"^```\{(?:glue:)?figure\}[^\n]*\n(?::[^\n]*\n)*?:name:\s*(\S+)", re.M)


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    return files


def shown_text(page_html: str) -> str:
    """The page's text as a reader could meet it: tags, scripts and styles left out, entities decoded."""
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", page_html, flags=re.S | re.I)
    return html_text.unescape(re.sub(r"<[^>]+>", " ", text))


def article(page_html: str) -> str:
    match = re.search(r'<article class="bd-article".*?</article>', page_html, re.S)
    return match.group(0) if match else page_html


def page_problems(name: str, page_html: str, source: str = "") -> list[str]:
    """What is wrong with one built page (``source``: its Markdown, for the figures it declares)."""
    problems = []
    text = shown_text(page_html)
    problems += [f"{name}: shows Python's text for an object: {marker!r}" for marker in PYTHON_TEXT if marker in text]
    if re.search(r"\{glue:?\w*\}", page_html):
        problems.append(f"{name}: a glue role was left unfilled")
    for label in DECLARED.findall(source):
        figure = re.search(rf'<figure[^>]*\bid="{re.escape(label)}".*?</figure>', page_html, re.S)
        if figure is None:
            problems.append(f"{name}: figure {label!r} is declared but not on the page")
        elif not re.search(r"<img\b|<svg\b", figure.group(0)):
            problems.append(f"{name}: figure {label!r} holds no image or SVG")
    data = sum(len(block.encode()) for block in CHART_DATA.findall(page_html))
    if data > CHART_DATA_BUDGET:
        problems.append(f"{name}: its charts carry {data:,} bytes of data, over {CHART_DATA_BUDGET:,}")
    if re.search(r"\.live\(\)", source) and not CHART_DATA.search(page_html):
        problems.append(f"{name}: has a live explorer but no website chart for readers without a kernel")
    if CHART_DATA.search(page_html) and "explorer-runs-live" in page_html:
        problems.append(f"{name}: a frozen explorer sits beside its live chart")
    # What a first visit loads that the page does not need (_ext/course_site.py takes them out), and the icon
    # without which every visit asks for /favicon.ico in vain.
    for heavy in re.findall(r'<script[^>]+src="[^"]*(fontawesome\.js|searchindex\.js)', page_html):
        problems.append(f"{name}: loads {heavy}, which no page needs")
    if page_html.count("<html") and not re.search(r'<link rel="icon"[^>]*href="[^"]+"', page_html):
        problems.append(f"{name}: names no icon, so the browser asks for /favicon.ico")
    notes = shown_text(article(page_html)).count("rocket")
    if notes > 1:
        problems.append(f"{name}: says how to run the page live {notes} times")
    return problems


def main(html_dir: str) -> int:
    html = Path(html_dir)
    problems = []
    pages = toc_files()
    for page in pages:
        path = html / f"{page}.html"
        if not path.is_file():
            problems.append(f"{path}: missing")
            continue
        source = ROOT / f"{page}.md"
        problems += page_problems(str(path), path.read_text(encoding="utf-8"),
                                  source.read_text(encoding="utf-8") if source.is_file() else "")
    index = (html / "index.html").read_text(encoding="utf-8") if (html / "index.html").is_file() else ""
    for expected in ("NVIDIA H100 SXM", "AMD Instinct MI300X", "<table", "4.79 ms", "295"):
        if expected not in index:
            problems.append(f"index.html: does not show {expected!r}")
    for problem in problems:
        print("check_site:", problem, file=sys.stderr)
    print(f"check_site: {len(pages)} pages checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "_build" / "html")))
