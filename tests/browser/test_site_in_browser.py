"""The built website in headless Chromium (Playwright driving Debian's Chromium), offline.

On every page of the table of contents, on a first visit: no error from the site's own scripts,
styles or images, no request that leaves the site, and at most 1.0 MB loaded (2.0 MB with maths); every image and every figure loads; no
Python object's text where a figure or number belongs; every glued number shows; every
solution dropdown is closed until clicked and opens when clicked; every control of every
chart is moved, and what the chart shows is compared with the package's own values at
settings chosen at random on each run (``COURSE_SEED`` repeats a run). Then the charts by
keyboard and by touch, and every page 400 px wide in light and dark mode. A test page
built with the course's configuration makes sure each check meets something to check,
and a broken page makes sure each check can fail.

``make browser-check`` (part of ``make test``) runs this on ``_build/html``; it is
skipped where Chromium (``browser.py``) is missing, and in a plain ``pytest`` run, which names
no site.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).parent / "fixture" / "exercise-and-chart.md"
SITE = os.environ.get("COURSE_SITE")

if not SITE:
    pytest.skip("the browser test runs on a built site: make browser-check", allow_module_level=True)

from browser import CHROMIUM, Chromium  # noqa: E402

if not CHROMIUM.exists():
    pytest.skip(f"browser test skipped: {CHROMIUM} not found", allow_module_level=True)

from site_checks import RANDOM_SETTINGS, WEIGHT_LIMITS, check_page, serve  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
import launch_files  # noqa: E402
from check_site import toc_files  # noqa: E402

from servingmath import charts  # noqa: E402
from servingmath.charts import kit  # noqa: E402
from servingmath.explorers import lesson_1  # noqa: E402

SEED = int(os.environ.get("COURSE_SEED") or random.SystemRandom().randrange(10**6))
# Phones: the narrowest width a page must read well at, in both of the theme's modes.
PHONE = 400

# Each chart's readouts, control texts and the size of its SVG text, as a phone shows them.
PHONE_CHECK = """
() => {
  const width = document.documentElement.clientWidth;
  const luminance = colour => {
    const [r, g, b] = colour.match(/[\\d.]+/g).slice(0, 3).map(Number).map(v => {
      v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const contrast = (a, b) => { const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
                               return (x + 0.05) / (y + 0.05); };
  const background = element => {
    for (let node = element; node; node = node.parentElement) {
      const colour = getComputedStyle(node).backgroundColor;
      if (!/rgba\\(.*, 0\\)$/.test(colour) && colour !== "transparent") return colour;
    }
    return "rgb(255, 255, 255)";
  };
  return {
    width: width,
    scrollWidth: document.documentElement.scrollWidth,
    // How far a finger can push the page sideways: text running out of its box (a long path in a reference)
    // widens the page without any element's box doing so.
    sideways: (() => { window.scrollTo(10000, window.scrollY); const x = window.scrollX; window.scrollTo(0, window.scrollY); return x; })(),
    wide: Array.from(document.querySelectorAll("article.bd-article *")).filter(element => {
      const box = element.getBoundingClientRect();
      const scrolls = element.closest("pre, .highlight, .table-wrapper, .pst-scrollable-table-container, mjx-container, .MathJax");
      return box.width > 0 && box.right > width + 1 && !scrolls;
    }).slice(0, 3).map(element => element.tagName + "." + element.className + ": " + element.textContent.slice(0, 40)),
    charts: Array.from(document.querySelectorAll("figure.webchart, svg.sm-figure:not(figure.webchart svg)"), figure => {
      const box = figure.getBoundingClientRect();
      return {
        kind: figure.dataset.chart || "still",
        framed: background(figure.parentElement) !== background(figure.closest("article")),
        inside: box.left >= -1 && box.right <= width + 1,
        readouts: Array.from(figure.querySelectorAll("[data-readout], output"), element => {
          const r = element.getBoundingClientRect();
          return {text: element.textContent, shown: r.width > 0 && r.left >= -1 && r.right <= width + 1,
                  contrast: contrast(getComputedStyle(element).color, background(element))};
        }),
        svgText: Array.from(figure.querySelectorAll("svg text"), text => {
          const r = text.getBoundingClientRect();
          const size = parseFloat(getComputedStyle(text).fontSize) * text.getScreenCTM().a;
          return {text: text.textContent, height: size, inside: r.width === 0 || (r.left >= box.left - 1 && r.right <= box.right + 1),
                  contrast: text.getAttribute("fill") === "#fff" ? 99 : contrast(getComputedStyle(text).fill, background(figure)),
                  width: text.getBBox().width, size: parseFloat(text.getAttribute("font-size")),
                  bold: text.getAttribute("font-weight") === "bold"};
        }),
        // A label's card (the rectangle drawn just before its words) and the words as drawn, in the figure's units.
        cards: Array.from(figure.querySelectorAll("svg rect.sm-card"), card => [card, card.nextElementSibling])
          .filter(([card, text]) => text && text.localName === "text" && card.height.baseVal.value < 30)
          .map(([card, text]) => ({text: text.textContent, card: [card.x.baseVal.value, card.width.baseVal.value],
                                   drawn: [text.getBBox().x, text.getBBox().width]})),
      };
    }),
    // Each table: whether it is cut (runs past the phone's width or its scrolling box), whether a box scrolls it,
    // and whether that box says so (course.js marks it "course-scrolls", course.css writes the line above it).
    tables: Array.from(document.querySelectorAll("article.bd-article table"), table => {
      let scroller = table.parentElement;
      while (scroller && scroller !== document.body && !/auto|scroll/.test(getComputedStyle(scroller).overflowX)) {
        scroller = scroller.parentElement;
      }
      const scrolls = !!scroller && scroller !== document.body;
      const box = table.getBoundingClientRect(), edge = scrolls ? scroller.getBoundingClientRect().right : width;
      const frame = table.closest(".course-table.course-scrolls");
      const said = !!frame && !["none", "normal", '""'].includes(getComputedStyle(frame, "::before").content);
      return {text: table.textContent.trim().replace(/\\s+/g, " ").slice(0, 50), cut: box.width > 0 && box.right > edge + 1,
              scrolls: scrolls, cue: said};
    }),
    // Inline code that wraps inside a word: a line ends between two letters or digits, before a "-" or after a
    // flag's dashes alone (a break after "-", "_", "=", "/", a space or any other sign is between words).
    brokenCode: Array.from(document.querySelectorAll("article.bd-article code"))
      .filter(code => code.getClientRects().length > 1).flatMap(code => {
        const chars = [], walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          for (let i = 0; i < node.data.length; i++) {
            const range = document.createRange();
            range.setStart(node, i);
            range.setEnd(node, i + 1);
            const rect = range.getClientRects()[0];
            if (rect && rect.width > 0) chars.push({c: node.data[i], top: rect.top});
          }
        }
        // A line that ends between two letters or digits, before a "-", or after a flag's leading dashes alone.
        const inside = k => {
          const before = chars.slice(0, k + 1).map(x => x.c).join("").split(/\\s/).pop();
          return (/[A-Za-z0-9]/.test(chars[k].c) && /[A-Za-z0-9]/.test(chars[k + 1].c)) || chars[k + 1].c === "-"
            || /^-+$/.test(before);
        };
        return chars.slice(1).filter((next, k) => next.top > chars[k].top + 2 && inside(k))
          .map(next => code.textContent.trim().slice(0, 50));
      }).slice(0, 5),
    // Display formulas that need a scroll bar to be read whole.
    formulas: Array.from(document.querySelectorAll("div.math mjx-container"))
      .filter(formula => formula.scrollWidth > formula.clientWidth + 1)
      .map(formula => formula.textContent.slice(0, 60)),
  };
}
"""


@pytest.fixture(scope="module")
def chromium():
    browser = Chromium()
    yield browser
    browser.close()


@pytest.fixture(scope="module")
def browser(chromium):
    tab = chromium.tab()
    yield tab
    tab.close()


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


def set_chart(tab, kind: str, **setting) -> list[str]:
    """Set the first chart of ``kind`` as a reader would; return its controls' texts, then its readouts."""
    figure = tab.page.locator(f'figure.webchart[data-chart="{kind}"]').first
    call = json.loads(figure.get_attribute("data-call"))
    chart = charts.BUILDERS[call["function"]](**call["kwargs"])
    for k, control in enumerate(chart.site_controls):
        if control.name in setting:
            index, box = control.index(setting[control.name]), figure.locator(f'[data-control="{k}"]')
            if control.kind == "slider":
                box.locator("input").fill(str(index))
            elif control.kind == "menu":
                box.locator("select").select_option(str(index))
            else:
                box.locator(f'input[value="{index}"]').check()
    return figure.evaluate("f => [...Array.from(f.querySelectorAll('output, select option:checked'), o => o.textContent),"
                           " ...Array.from(f.querySelectorAll('[data-readout]'), r => r.textContent)]")


@pytest.mark.parametrize("page", toc_files())
def test_every_page_works_offline_weighs_little_and_every_chart_shows_the_package(chromium, site, page):
    """Each page on a first visit (a fresh tab: nothing cached), which loads at most 1.0 MB for a page without maths
    and 2.0 MB for one with maths (MathJax and its fonts): every byte, uncompressed, as the browser counts it."""
    tab = chromium.tab()
    try:
        check = check_page(tab, f"{site}{page}.html", site, random.Random(f"{SEED}{page}"), weigh=True)
    finally:
        tab.close()
    assert check.problems == [], f"COURSE_SEED={SEED}"
    assert check.settings >= RANDOM_SETTINGS * check.charts
    weight, limit = check.weight, WEIGHT_LIMITS[check.weight["maths"]]
    assert weight["bytes"] <= limit, (f"{page}: {weight['bytes']:,} bytes in {weight['requests']} requests, over "
                                      f"{limit:,}; the largest: {weight['largest']}")


def test_index_shows_its_numbers_its_chart_and_its_launch_links(browser, site):
    check = check_page(browser, f"{site}index.html", site, random.Random(SEED))
    assert check.problems == []
    assert "4.79 ms" in check.visible_text and "295" in check.visible_text
    assert check.charts == 1
    assert set_chart(browser, "batching", users=1, gpu="h100-sxm") == [
        "1 user", "NVIDIA H100 SXM, $3.00 an hour", "0.75 million", "$3.995", "209", "4.79 ms, memory-bound",
        "296 users", "$3.00 an hour"]
    assert set_chart(browser, "batching", users=8)[2:4] == ["6.01 million", "$0.499"]
    assert set_chart(browser, "batching", users=1024)[4:6] == ["60", "16.62 ms, compute-bound"]
    links = browser.evaluate("Array.from(document.querySelectorAll('a'), a => a.href)")
    # The launch buttons open the branch the book is built from (the Colab copies install the release).
    url = launch_files.repository()[0]
    branch = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]["branch"]
    repository_path = url.split("github.com/")[1]
    assert f"https://colab.research.google.com/github/{repository_path}/blob/{branch}/notebooks/index.ipynb" in links
    assert f"https://mybinder.org/v2/gh/{repository_path}/{branch}?urlpath=lab/tree/index.md" in links


@pytest.mark.parametrize("page, kind, setting, expected", [
    ("chapters/lesson-1/part-1-prompt-and-reply", "passes", {"prompt_tokens": 500, "reply_tokens": 1000},
     ["500 tokens", "1,000 tokens", "1,000", "500", "999", "33.4 %"]),
    ("chapters/lesson-1/part-2-same-weights-different-work", "roofline", {"tokens": 200, "gpu": "h100-sxm"},
     ["200 tokens", "NVIDIA H100 SXM", "200", "295 FLOP per byte", "memory-bound"]),
    ("chapters/lesson-1/part-3-time-on-the-clock", "request", {"weight_bits": 8},
     ["NVIDIA H100 SXM", "3,000 tokens", "250 tokens"]),
    ("chapters/plates/xxiii-1-prefill-and-decode", "workshop", {"tokens": 1024, "assumptions": "plate"},
     ["1,024 tokens", "NVIDIA H100 SXM", "28.4 ms", "0.0277 ms", "1,033", "compute-bound"]),
    ("chapters/lesson-2/part-1-what-the-cache-holds", "cache_saving", {"tokens": 3000, "gpu": "h100-sxm"},
     ["3,000 tokens", "NVIDIA H100 SXM", "50.56 T", "17.6 billion", "2,867"]),
    ("chapters/lesson-2/part-2-its-size", "cache_size", {"tokens": 8000, "kv_bits": 16},
     ["8,000 tokens", "4.19 GB", "1.05 GB", "0.13 GB", "6.5 %"]),
    ("chapters/lesson-2/part-3-how-many-users-fit", "users_that_fit", {"tokens": 8000, "kv_bits": 8},
     ["8,000 tokens", "NVIDIA H100 SXM", "65.54 GB", "0.52 GB", "125"]),
    ("chapters/lesson-2/part-4-decode-and-price", "cached_batching", {"users": 32, "tokens": 3000},
     ["32 users", "3,000 tokens", "8.55 ms, memory-bound", "117", "$0.223", "$0.125"]),
    ("chapters/plates/xxiii-2-the-kv-cache", "kv_workshop", {"tokens": 4000, "gpu": "h100-sxm"},
     ["4,000 tokens", "NVIDIA H100 SXM", "125; caches outweigh the weights from 31 users"]),
])
def test_each_lessons_chart_shows_its_examples(browser, site, page, kind, setting, expected):
    browser.open(f"{site}{page}.html")
    shown = set_chart(browser, kind, **setting)
    assert shown[:len(expected)] == expected or all(value in shown for value in expected)
    if kind == "request":
        assert "417" in shown


def test_charts_answer_the_keyboard(chromium, site):
    tab = chromium.tab()
    try:
        tab.open(f"{site}chapters/lesson-1/part-3-time-on-the-clock.html")
        figure = tab.page.locator('figure.webchart[data-chart="request"]')
        prompt = figure.locator('[data-control="2"] input')
        prompt.focus()
        tab.page.keyboard.press("End")
        assert figure.locator('[data-control="2"] output').text_content() == "6,000 tokens"
        tab.page.keyboard.press("Home")
        tab.page.keyboard.press("ArrowRight")
        assert figure.locator('[data-control="2"] output').text_content() == "20 tokens"
        before = figure.locator("[data-readout]").all_text_contents()
        figure.locator('[data-control="1"] input[value="0"]').focus()
        tab.page.keyboard.press("ArrowRight")   # 16 bits -> 8 bits, as arrow keys move through radio buttons
        assert figure.locator('[data-control="1"] input:checked').get_attribute("value") == "1"
        tab.page.keyboard.press("Tab")
        assert tab.evaluate("document.activeElement.type") == "range"
        figure.locator("select").focus()
        tab.page.keyboard.press("ArrowDown")
        assert figure.locator("select").input_value() == "1"
        assert figure.locator("[data-readout]").all_text_contents() != before
        # A focused control shows where the keyboard is.
        figure.locator("select").focus()
        assert tab.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"
    finally:
        tab.close()


def test_a_slider_answers_a_finger(chromium, site):
    phone = chromium.tab(width=PHONE, height=800, touch=True)
    try:
        phone.open(f"{site}index.html")
        figure = phone.page.locator("figure.webchart")
        slider = figure.locator("input[type=range]")
        slider.scroll_into_view_if_needed()
        box = slider.bounding_box()
        assert box["height"] >= 24, "a slider a finger can find"
        phone.page.touchscreen.tap(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)
        assert figure.locator("output").text_content() == "1,024 users"
        phone.page.touchscreen.tap(box["x"] + 2, box["y"] + box["height"] / 2)
        assert figure.locator("output").text_content() == "1 user"
        assert figure.locator("[data-readout]").first.text_content() == "0.75 million"
    finally:
        phone.close()


def card_fits(card, drawn):
    """Whether a label's card (x, width) covers its words as drawn (x, width) with a unit or more to spare at each
    end, and no more than 4 units and 6 % of their width to spare in all."""
    left, right = drawn[0] - card[0], sum(card) - sum(drawn)
    return left >= 1 and right >= 1 and left + right <= 4 + 0.06 * drawn[1]


def read_on_a_phone(phone, url: str) -> dict:
    """``PHONE_CHECK`` on ``url`` loaded in ``phone``, its formulas set."""
    phone.open(url)
    phone.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    return phone.evaluate(PHONE_CHECK)


def test_a_page_turned_dark_on_the_phone_reads_as_the_page_loaded_dark(chromium, site):
    """The check below turns each page dark after loading it light (the theme's colours follow the phone's setting
    as it changes); here a lesson page with charts and formulas, loaded dark, reads the same as turned dark."""
    dark, turned = chromium.tab(width=PHONE, height=800, dark=True, touch=True), chromium.tab(width=PHONE, height=800,
                                                                                            touch=True)
    try:
        url = f"{site}chapters/lesson-1/part-2-same-weights-different-work.html"
        loaded_dark = read_on_a_phone(dark, url)
        light = read_on_a_phone(turned, url)
        turn_dark(turned)
        assert loaded_dark["charts"] and light != loaded_dark and turned.evaluate(PHONE_CHECK) == loaded_dark
    finally:
        dark.close(), turned.close()


def turn_dark(phone):
    """The phone set to dark mode, the page's colours changed and settled."""
    phone.page.emulate_media(color_scheme="dark")
    phone.page.wait_for_function("() => document.documentElement.dataset.theme === 'dark'")
    phone.page.wait_for_function("() => !document.getAnimations().some(a => a.playState === 'running' "
                                 "&& isFinite(a.effect.getTiming().iterations))")


def test_every_page_reads_on_a_phone_light_and_dark(chromium, site):
    """Each page loaded once on a phone in light mode and read, then turned dark and read again."""
    phone = chromium.tab(width=PHONE, height=800, touch=True)
    problems = []
    try:
        for page, dark in ((page, dark) for page in toc_files() for dark in (False, True)):
            if dark:
                turn_dark(phone)
                seen = phone.evaluate(PHONE_CHECK)
            else:
                phone.page.emulate_media(color_scheme="light")
                seen = read_on_a_phone(phone, f"{site}{page}.html")
            page = f"{page} ({'dark' if dark else 'light'})"
            if seen["wide"]:
                problems.append(f"{page}: wider than the phone: {seen['wide']}")
            if seen["sideways"] > 1 or seen["scrollWidth"] > PHONE + 1:
                problems.append(f"{page}: scrolls {seen['sideways']:.0f} px sideways on the phone, "
                                f"{seen['scrollWidth']} px wide")
            problems += [f"{page}: a formula runs past the phone's width: {formula!r}" for formula in seen["formulas"]]
            problems += [f"{page}: a table is cut {'with no word that it scrolls' if t['scrolls'] else 'and does not scroll'}"
                         f": {t['text']!r}" for t in seen["tables"] if t["cut"] and not (t["scrolls"] and t["cue"])]
            problems += [f"{page}: inline code wraps inside a word: {code!r}" for code in seen["brokenCode"]]
            for chart in seen["charts"]:
                name = f"{page}: {chart['kind']} chart"
                if not chart["inside"]:
                    problems.append(f"{name} runs off the screen")
                if chart["framed"]:
                    problems.append(f"{name} sits in a box of another colour than the page")
                problems += [f"{name}: {r['text']!r} is off the screen" for r in chart["readouts"] if not r["shown"]]
                problems += [f"{name}: {r['text']!r} has contrast {r['contrast']:.1f}" for r in chart["readouts"]
                             if r["contrast"] < 4.5]
                problems += [f"{name}: {t['text']!r} is drawn at {t['height']:.1f} px" for t in chart["svgText"]
                             if 0 < t["height"] < 10]
                problems += [f"{name}: {t['text']!r} is cut off" for t in chart["svgText"] if not t["inside"]]
                problems += [f"{name}: {t['text']!r} has contrast {t['contrast']:.1f}" for t in chart["svgText"]
                             if t["contrast"] < 4.5]
                # The kit's reckoning of a label's width (what places labels and cuts cards) against the browser's.
                problems += [f"{name}: {t['text']!r} is drawn {t['width']:.0f} wide, reckoned {reckoned:.0f}"
                             for t in chart["svgText"] for reckoned in [kit.text_width(t["text"], t["size"], t["bold"])]
                             if not 0.9 * reckoned - 1 <= t["width"] <= reckoned + 0.5]
                problems += [f"{name}: the card of {c['text']!r} spans {c['card']}, its words {c['drawn']}"
                             for c in chart["cards"] if not card_fits(c["card"], c["drawn"])]
    finally:
        phone.close()
    assert problems == []


def test_each_check_meets_a_solution_a_glued_number_a_formula_a_figure_charts_and_an_explorer(browser, test_page_site):
    check = check_page(browser, f"{test_page_site}{FIXTURE.stem}.html", test_page_site, random.Random(SEED))
    assert check.problems == []
    assert (check.solutions, check.glued, check.charts, check.explorers, check.figures) == (1, 1, 2, 1, 1)
    assert check.settings >= 2 * RANDOM_SETTINGS
    assert "4.79 ms" in check.visible_text and "This explorer runs live" in check.visible_text
    # MathJax typeset the formula from the site's own copy (no request left the site).
    assert browser.evaluate("document.querySelectorAll('mjx-container').length") == 1
    # The explorer's code is folded under the line that says how to run it live.
    assert browser.evaluate("Array.from(document.querySelectorAll('details summary'), s => s.textContent)"
                            ".filter(t => t.includes('Live explorer')).length") == 1


def test_the_checks_catch_a_broken_page(browser, tmp_path):
    broken_chart = lesson_1.batching()._repr_html_().replace("data-call=", "data-other=", 1)
    (tmp_path / "broken.html").write_text(f"""<!doctype html>
<html><head><meta charset="utf-8"><script src="https://cdn.example.org/library.js"></script></head>
<body>
<img src="missing.png" alt="">
<script>notAFunction();</script>
<div class="solution dropdown admonition" id="always-open">
  <p class="admonition-title">Solution</p><section><p>Shown from the start.</p></section>
</div>
<p>A value: <span class="output text_plain" style="display: none">4.79 ms</span></p>
<figure id="fig-timeline"><pre>&lt;Figure size 700x360 with 1 Axes&gt;</pre><figcaption>A timeline</figcaption></figure>
{lesson_1.batching()._repr_html_()}
{broken_chart}
</body></html>""", encoding="utf-8")
    with serve(tmp_path) as origin:
        problems = "\n".join(check_page(browser, f"{origin}broken.html", origin, random.Random(SEED)).problems)
    for expected in ("asked the network for https://cdn.example.org/library.js", "image did not load: missing.png",
                     "HTTP 404", "notAFunction", "solution always-open is open before it is clicked",
                     "a glued value is hidden: '4.79 ms'", "batching chart: its controls were never switched on",
                     "figure 'fig-timeline' shows no image or SVG", "shows Python's text for an object: '<Figure size'",
                     "batching chart: the page does not say how it was built"):
        assert expected in problems


def test_a_chart_that_shows_the_wrong_values_is_caught(browser, tmp_path):
    chart = lesson_1.batching()._repr_html_()
    # A chart whose table was shuffled: the page would show another setting's values.
    wrong = chart.replace('"readouts":[', '"readouts":[0,0,0,0,0,', 1)
    script = (ROOT / "_static" / "webcharts.js").read_text()
    (tmp_path / "wrong.html").write_text(f"<!doctype html><html><head><meta charset='utf-8'></head><body>{wrong}"
                                         f"<script>{script}</script></body></html>", encoding="utf-8")
    with serve(tmp_path) as origin:
        problems = "\n".join(check_page(browser, f"{origin}wrong.html", origin, random.Random(SEED)).problems)
    assert "the package gives" in problems
