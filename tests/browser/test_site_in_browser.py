"""The built website in headless Chromium, offline.

On every page of the table of contents: no error from the site's own scripts, styles or
images, and no request that leaves the site; every image loads; every glued number
shows; every solution dropdown is closed until clicked and opens when clicked; every
chart answers its slider with the step the package computed. A test page built with
the course's configuration makes sure each check meets something to check, and a
broken page makes sure each check can fail.

``make browser-check`` (part of ``make test``) runs this on ``_build/html``; it is
skipped where /usr/bin/chromium is missing, and in a plain ``pytest`` run, which names
no site.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cdp import CHROMIUM, Browser
from site_checks import check_page, move_slider, serve

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).parent / "fixture" / "exercise-and-chart.md"
SITE = os.environ.get("COURSE_SITE")

if not SITE:
    pytest.skip("the browser test runs on a built site: make browser-check", allow_module_level=True)
if not CHROMIUM.exists():
    pytest.skip(f"browser test skipped: {CHROMIUM} not found", allow_module_level=True)

sys.path.insert(0, str(ROOT / "scripts"))
import launch_files  # noqa: E402
from check_site import toc_files  # noqa: E402

from servingmath import webcharts  # noqa: E402


@pytest.fixture(scope="module")
def browser():
    chromium = Browser()
    yield chromium
    chromium.close()


@pytest.fixture(scope="module")
def site():
    html = ROOT / SITE
    if not (html / "index.html").is_file():
        pytest.fail(f"no built site at {html}: run `make book-check` first")
    with serve(html) as origin:
        yield origin


@pytest.fixture(scope="module")
def test_page_site(tmp_path_factory):
    """The fixture page, built as the course is built: its configuration, extensions, static files."""
    book = tmp_path_factory.mktemp("book")
    for name in ("_config.yml", "references.bib"):
        shutil.copy(ROOT / name, book / name)
    for name in ("_ext", "_static"):
        shutil.copytree(ROOT / name, book / name)
    shutil.copy(FIXTURE, book / FIXTURE.name)
    (book / "_toc.yml").write_text(f"format: jb-book\nroot: {FIXTURE.stem}\n")
    (book / "notebooks").mkdir()
    (book / "notebooks" / f"{FIXTURE.stem}.ipynb").write_text(launch_files.notebook_copy(book / FIXTURE.name))
    build = subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", str(book), "-W", "-n",
                            "--keep-going", "-q"], capture_output=True, text=True)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    with serve(book / "_build" / "html") as origin:
        yield origin


@pytest.mark.parametrize("page", toc_files())
def test_every_page_works_offline(browser, site, page):
    check = check_page(browser, f"{site}{page}.html", site)
    assert check.problems == []


def test_index_shows_its_numbers_its_chart_and_its_launch_links(browser, site):
    check = check_page(browser, f"{site}index.html", site)
    assert check.problems == []
    assert "4.79 ms" in check.visible_text and "295" in check.visible_text
    assert check.charts == 1
    assert move_slider(browser, "batching", "1 user") == ["1 user", "750,000", "$3.995", "209", "memory-bound"]
    assert move_slider(browser, "batching", "8 users")[:3] == ["8 users", "6,000,000", "$0.499"]
    assert move_slider(browser, "batching", "1,024 users")[3:] == ["60", "compute-bound"]
    links = browser.evaluate("Array.from(document.querySelectorAll('a'), a => a.href)")
    url, branch = launch_files.repository()
    repository_path = url.split("github.com/")[1]
    assert f"https://colab.research.google.com/github/{repository_path}/blob/{branch}/notebooks/index.ipynb" in links
    assert f"https://mybinder.org/v2/gh/{repository_path}/{branch}?urlpath=lab/tree/index.md" in links


def test_each_check_meets_a_solution_a_glued_number_a_formula_charts_and_an_explorer(browser, test_page_site):
    check = check_page(browser, f"{test_page_site}{FIXTURE.stem}.html", test_page_site)
    assert check.problems == []
    assert (check.solutions, check.glued, check.charts, check.explorers) == (1, 1, 2, 1)
    assert "4.79 ms" in check.visible_text and "This explorer runs live" in check.visible_text
    # MathJax typeset the formula from the site's own copy (no request left the site).
    assert browser.evaluate("document.querySelectorAll('mjx-container').length") == 1
    assert move_slider(browser, "workshop", "1,024 tokens") == [
        "1,024 tokens", "28.4 ms", "0.0277 ms", "1,033", "compute-bound"]
    assert move_slider(browser, "request", "20,000 tokens") == [
        "20,000 tokens", "325 ms", "4.79 ms", "209", "1.52 s", "79 %"]


def test_the_checks_catch_a_broken_page(browser, tmp_path):
    (tmp_path / "broken.html").write_text(f"""<!doctype html>
<html><head><meta charset="utf-8"><script src="https://cdn.example.org/library.js"></script></head>
<body>
<img src="missing.png" alt="">
<script>notAFunction();</script>
<div class="solution dropdown admonition" id="always-open">
  <p class="admonition-title">Solution</p><section><p>Shown from the start.</p></section>
</div>
<p>A value: <span class="output text_plain" style="display: none">4.79 ms</span></p>
{webcharts.batching_chart()}
</body></html>""", encoding="utf-8")
    with serve(tmp_path) as origin:
        problems = "\n".join(check_page(browser, f"{origin}broken.html", origin).problems)
    for expected in ("asked the network for https://cdn.example.org/library.js", "image did not load: missing.png",
                     "HTTP 404", "notAFunction", "solution always-open is open before it is clicked",
                     "a glued value is hidden: '4.79 ms'", "batching chart: its slider was never switched on",
                     "batching chart: the readouts did not change"):
        assert expected in problems
