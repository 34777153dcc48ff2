"""What the browser test checks on each page, run in the page by headless Chromium.

``check_page`` loads a page and returns the problems it found (an empty list when the
page is sound) and what it checked, so a test can tell "nothing was wrong" from
"nothing was there". ``chart_problems`` moves every control of a chart to settings chosen
at random and compares what the page shows with the package's own values.
"""
from __future__ import annotations

import functools
import http.server
import json
import random
import threading
import xml.etree.ElementTree as ElementTree
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from servingmath import charts

# Text that means Python printed an object where a reader expected a figure or a number.
PYTHON_TEXT = ("<Figure size", "object at 0x", "<servingmath.", "Traceback (most recent call last)",
               "<matplotlib.", "<IPython.core.display")

# Opens every solution dropdown, reporting for each whether its body was hidden before the
# click and shown after it.
SOLUTIONS = """
(async () => {
  const seen = [];
  for (const solution of document.querySelectorAll(".solution.dropdown")) {
    const body = Array.from(solution.children).filter(
      child => !child.classList.contains("admonition-title") && child.tagName !== "BUTTON");
    const shown = () => body.some(child => child.checkVisibility({opacityProperty: true, visibilityProperty: true}));
    const closed = !shown();
    const opener = solution.querySelector(":scope > .admonition-title") || solution;
    opener.click();
    await new Promise(done => setTimeout(done, 300));
    seen.push({id: solution.id, parts: body.length, closed: closed, opened: shown()});
  }
  return seen;
})()
"""

IMAGES = """
Array.from(document.images).filter(image => !(image.complete && image.naturalWidth > 0))
  .map(image => image.getAttribute("src"))
"""

# Every figure on the page that is not a live chart: it must hold an image that loaded or an SVG.
FIGURES = """
Array.from(document.querySelectorAll("figure:not(.webchart)"), figure => ({
  id: figure.id || (figure.querySelector("[id]") || {}).id || "",
  images: Array.from(figure.querySelectorAll("img"), image => image.complete ? image.naturalWidth : 0),
  svgs: figure.querySelectorAll("svg").length,
  text: figure.textContent.trim().slice(0, 80),
}))
"""

# The page's text, scripts and styles left out, hidden blocks (folded cells) kept in.
PAGE_TEXT = """
(() => {
  const copy = document.body.cloneNode(true);
  copy.querySelectorAll("script, style").forEach(node => node.remove());
  return copy.textContent;
})()
"""

# Inline glue ({glue:}`name` in the prose) renders as <span class="output ...">. One inside a
# block the reader has not opened (a hint's dropdown, a hidden cell) is shown once it is opened.
GLUE = """
Array.from(document.querySelectorAll("span.output"), span => ({
  text: span.textContent.trim(),
  visible: span.checkVisibility() || span.closest(".toggle-hidden, details:not([open])") !== null,
}))
"""

# What a chart shows: its readouts, the text each control shows, each layer's elements.
READ_CHART = """
figure => {
  const own = node => Array.from(node.childNodes).filter(n => n.nodeType === 3).map(n => n.data).join("").trim();
  const shownText = box => {
    const kind = box.dataset.kind;
    if (kind === "slider") {
      const input = box.querySelector("input");
      return {text: box.querySelector("output").textContent, valuetext: input.getAttribute("aria-valuetext")};
    }
    if (kind === "menu") {
      const select = box.querySelector("select");
      return {text: select.options[select.selectedIndex].textContent};
    }
    const checked = box.querySelector("input:checked");
    return {text: checked ? checked.parentElement.textContent.trim() : ""};
  };
  const svg = figure.querySelector("svg");
  const described = document.getElementById(svg.getAttribute("aria-describedby") || "");
  const titled = document.getElementById(svg.getAttribute("aria-labelledby") || "");
  return {
    alternative: svg.getAttribute("role") === "img" && titled !== null && titled.textContent.trim() !== "" &&
      described !== null && Array.from(figure.querySelectorAll("[data-readout]"))
        .every(r => described.contains(r)),
    enabled: Array.from(figure.querySelectorAll("input, select")).every(input => !input.disabled),
    readouts: Array.from(figure.querySelectorAll("[data-readout]"), r => r.textContent),
    controls: Array.from(figure.querySelectorAll("[data-control]"), shownText),
    layers: Array.from(figure.querySelectorAll("svg .webchart-layer"), layer =>
      Array.from(layer.querySelectorAll("*"), node => [
        node.localName, Array.from(node.attributes, a => [a.name, a.value]).sort(), own(node)])),
  };
}
"""


# A first visit's weight: every byte the page and all it loads hold, uncompressed, as the browser counts them, once
# its formulas and fonts are drawn; and whether it loaded MathJax.
WEIGHT = """
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  await document.fonts.ready;
  await new Promise(done => setTimeout(done, 300));
  const entries = [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")];
  const sized = entries.map(e => [e.decodedBodySize || 0, e.name.replace(location.origin, "").split("?")[0]])
    .sort((a, b) => b[0] - a[0]);
  return {bytes: sized.reduce((sum, [size]) => sum + size, 0), requests: entries.length,
          maths: entries.some(e => e.name.toLowerCase().includes("/mathjax/")), largest: sized.slice(0, 3)};
}
"""
# The most a first visit may load, uncompressed: a page without maths, and one with (MathJax and its fonts).
WEIGHT_LIMITS = {False: 1_000_000, True: 2_000_000}


def first_visit(chromium, url: str) -> dict:
    """What a first visit to ``url`` loads (a fresh browser context: nothing cached): bytes, requests, whether
    MathJax came, the three largest."""
    tab = chromium.tab()
    try:
        tab.open(url)
        return tab.evaluate(WEIGHT)
    finally:
        tab.close()


@dataclass
class PageCheck:
    url: str
    problems: list[str] = field(default_factory=list)
    solutions: int = 0
    charts: int = 0
    settings: int = 0
    explorers: int = 0
    glued: int = 0
    images: int = 0
    figures: int = 0
    visible_text: str = ""
    weight: dict | None = None


def own(url: str, origin: str) -> bool:
    return url.startswith(origin)


def load_problems(events: list[dict], origin: str) -> list[str]:
    """Errors from the site's own assets and scripts, and any request that left the site."""
    problems = []
    for event in events:
        kind, url = event["kind"], event.get("url", "")
        if kind == "request" and not own(url, origin) and not url.startswith(("data:", "blob:", "about:")):
            problems.append(f"asked the network for {url} (the site must work offline)")
        elif kind == "response" and own(url, origin) and event["status"] >= 400:
            problems.append(f"{url}: HTTP {event['status']}")
        elif kind == "failed" and own(url, origin) and "ERR_ABORTED" not in event["error"]:
            problems.append(f"{url}: {event['error']}")
        elif kind == "script error":
            problems.append(f"script error: {event['text']}")
        elif kind == "console" and event["type"] == "error" and (not url or own(url, origin)):
            problems.append(f"console error: {event['text']} ({url})")
    return problems


@functools.lru_cache(maxsize=None)
def rebuilt(call: str) -> charts.Explorer:
    """The chart a page's ``data-call`` names, built anew by the package."""
    recorded = json.loads(call)
    return charts.BUILDERS[recorded["function"]](**recorded["kwargs"])


def _elements(markup: str) -> list:
    """A layer's markup as webcharts.js leaves it in the page: (tag, sorted attributes, own text) for each element."""
    root = ElementTree.fromstring(f'<g xmlns="http://www.w3.org/2000/svg">{markup}</g>')
    return [[node.tag.split("}")[-1], sorted([k, v] for k, v in node.attrib.items()), (node.text or "").strip()]
            for node in root.iter() if node is not root]


def _set(figure, chart, setting, positions):
    """Move the controls whose position differs, as a reader would: fill a slider, pick from a menu, click a button."""
    for k, control in enumerate(chart.site_controls):
        index = control.index(setting[control.name])
        if positions.get(k) == index:
            continue
        box = figure.locator(f'[data-control="{k}"]')
        if control.kind == "slider":
            box.locator("input[type=range]").fill(str(index))
        elif control.kind == "menu":
            box.locator("select").select_option(str(index))
        else:
            box.locator(f'input[value="{index}"]').check()
        positions[k] = index


# Settings chosen at random on each chart, beside each control at its far end. The package's table for every
# setting is compared with the package itself in tests/test_charts.py; here the page's script is checked to
# show that table's entries, which a score of settings a run does (a new draw each run, COURSE_SEED repeats one).
RANDOM_SETTINGS = 20


def chart_problems(figure, rng: random.Random, count: int = RANDOM_SETTINGS) -> tuple[list[str], int]:
    """Move every control of the chart in ``figure`` (a Playwright locator) and compare what it shows.

    First each control alone to its far end, then ``count`` settings chosen at random;
    returns the problems and the settings checked.
    """
    kind = figure.get_attribute("data-chart")
    call = figure.get_attribute("data-call")
    if not call:
        return [f"{kind} chart: the page does not say how it was built (make it with @explorer)"], 0
    chart = rebuilt(call)
    shown = figure.evaluate(READ_CHART)
    problems = []
    if not shown["alternative"]:
        problems.append(f"{kind} chart: its SVG has no text alternative naming it and giving its readouts")
    if not shown["enabled"]:
        return problems + [f"{kind} chart: its controls were never switched on (webcharts.js did not run)"], 0
    settings = []
    for control in chart.site_controls:
        far = control.options[-1 if control.default != len(control.options) - 1 else 0]
        settings.append({**chart.default, control.name: far})
    settings += [{**chart.default, **{c.name: rng.choice(c.options) for c in chart.site_controls}}
                 for _ in range(count)]
    positions = {k: c.default for k, c in enumerate(chart.site_controls)}
    before = shown["readouts"]
    moved = False
    for setting in settings:
        _set(figure, chart, setting, positions)
        shown = figure.evaluate(READ_CHART)
        expected = list(chart.readouts_at(**setting).values())
        texts = [c.texts[c.index(setting[c.name])] for c in chart.site_controls]
        where = ", ".join(texts)
        moved = moved or shown["readouts"] != before
        if shown["readouts"] != expected:
            problems.append(f"{kind} chart at {where}: shows {shown['readouts']}, the package gives {expected}")
        if [c["text"] for c in shown["controls"]] != texts:
            problems.append(f"{kind} chart at {where}: its controls read {[c['text'] for c in shown['controls']]}")
        for control, text in zip(shown["controls"], texts):
            if "valuetext" in control and control["valuetext"] != text:
                problems.append(f"{kind} chart at {where}: a slider tells a screen reader {control['valuetext']!r}")
        drawn = [_elements(markup) for markup in chart.layers_at(**setting)]
        if shown["layers"] != drawn:
            problems.append(f"{kind} chart at {where}: its drawing is not the package's")
        if len(problems) > 5:
            break
    if not moved:
        problems.append(f"{kind} chart: the readouts did not change when its controls moved")
    return problems, len(settings)


def check_page(browser, url: str, origin: str, rng: random.Random | None = None,
               settings: int = RANDOM_SETTINGS, weigh: bool = False) -> PageCheck:
    """Every check above on the page at ``url``, in the tab ``browser``; with ``weigh``, what it loaded too (``WEIGHT``,
    read before anything on it is moved: in a fresh tab, a first visit's weight)."""
    check = PageCheck(url)
    check.problems += load_problems(browser.open(url), origin)
    if weigh:
        check.weight = browser.evaluate(WEIGHT)
    check.images = browser.evaluate("document.images.length")
    check.problems += [f"image did not load: {src}" for src in browser.evaluate(IMAGES)]
    figures = browser.evaluate(FIGURES)
    check.figures = len(figures)
    for figure in figures:
        if not (any(width > 0 for width in figure["images"]) or figure["svgs"]):
            check.problems.append(f"figure {figure['id'] or figure['text']!r} shows no image or SVG")

    solutions = browser.evaluate(SOLUTIONS)
    check.solutions = len(solutions)
    for solution in solutions:
        if not solution["parts"]:
            check.problems.append(f"solution {solution['id']} has nothing in it")
        if not solution["closed"]:
            check.problems.append(f"solution {solution['id']} is open before it is clicked")
        if not solution["opened"]:
            check.problems.append(f"solution {solution['id']} stays closed when clicked")

    # Read after the solutions are open, so glue inside them counts as shown.
    check.visible_text = browser.evaluate("document.body.innerText")
    text = browser.evaluate(PAGE_TEXT)
    check.problems += [f"shows Python's text for an object: {marker!r}" for marker in PYTHON_TEXT if marker in text]
    glued = browser.evaluate(GLUE)
    check.glued = len(glued)
    for span in glued:
        if not span["text"] or not span["visible"]:
            check.problems.append(f"a glued value is {'empty' if not span['text'] else 'hidden'}: {span['text']!r}")

    check.explorers = browser.evaluate("document.querySelectorAll('p.explorer-runs-live').length")
    rng = rng or random.Random()
    charts = browser.page.locator("figure.webchart")
    check.charts = charts.count()
    for index in range(check.charts):
        problems, moved = chart_problems(charts.nth(index), rng, settings)
        check.problems += problems
        check.settings += moved
    # What clicking and sliding set off (a script error, a font fetched late) counts too.
    check.problems += load_problems(browser.events, origin)
    browser.events.clear()
    return check


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextmanager
def serve(folder: Path):
    """Serve ``folder`` over http on 127.0.0.1; yield its origin (``http://127.0.0.1:PORT/``)."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
