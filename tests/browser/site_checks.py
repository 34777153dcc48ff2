"""What the browser test checks on each page, run in the page by headless Chromium.

``check_page`` loads a page and returns the problems it found (an empty list when the
page is sound) and what it checked, so a test can tell "nothing was wrong" from
"nothing was there".
"""
from __future__ import annotations

import functools
import http.server
import json
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

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

# Moves every chart's slider to another step as a reader would (value, then an input
# event) and reads back what the chart shows.
CHARTS = """
(() => Array.from(document.querySelectorAll("figure.webchart"), figure => {
  const input = figure.querySelector("input[type=range]");
  const readouts = () => Array.from(figure.querySelectorAll("[data-readout]"), r => r.textContent);
  const markers = () => Array.from(figure.querySelectorAll(".webchart-marker"),
                                   m => [Number(m.getAttribute("cx")), Number(m.getAttribute("cy"))]);
  const before = readouts();
  const target = Number(input.value) === 0 ? Number(input.max) : 0;
  input.value = String(target);
  input.dispatchEvent(new Event("input", {bubbles: true}));
  return {
    kind: figure.dataset.chart, enabled: !input.disabled, target: target, before: before,
    readouts: readouts(), value: figure.querySelector(".webchart-value").textContent, markers: markers(),
    steps: JSON.parse(figure.querySelector("script.webchart-steps").textContent),
  };
}))()
"""

IMAGES = """
Array.from(document.images).filter(image => !(image.complete && image.naturalWidth > 0))
  .map(image => image.getAttribute("src"))
"""

# Inline glue ({glue:}`name` in the prose) renders as <span class="output ...">. One inside a
# block the reader has not opened (a hint's dropdown, a hidden cell) is shown once it is opened.
GLUE = """
Array.from(document.querySelectorAll("span.output"), span => ({
  text: span.textContent.trim(),
  visible: span.checkVisibility() || span.closest(".toggle-hidden, details:not([open])") !== null,
}))
"""


@dataclass
class PageCheck:
    url: str
    problems: list[str] = field(default_factory=list)
    solutions: int = 0
    charts: int = 0
    explorers: int = 0
    glued: int = 0
    images: int = 0
    visible_text: str = ""


def own(url: str, origin: str) -> bool:
    return url.startswith(origin)


def load_problems(events: list[dict], origin: str) -> list[str]:
    """Errors from the site's own assets, and any request that left the site."""
    problems, urls = [], {}
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if params.get("request", {}).get("url") == origin + "favicon.ico":
            continue  # the browser's own guess at an icon: no page names it
        if method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            urls[params["requestId"]] = url
            if not own(url, origin) and not url.startswith(("data:", "blob:", "about:")):
                problems.append(f"asked the network for {url} (the site must work offline)")
        elif method == "Network.responseReceived":
            response = params["response"]
            if own(response["url"], origin) and response["status"] >= 400 and params["requestId"] in urls:
                problems.append(f"{response['url']}: HTTP {response['status']}")
        elif method == "Network.loadingFailed" and own(urls.get(params["requestId"], ""), origin):
            if not params.get("canceled"):
                problems.append(f"{urls[params['requestId']]}: {params['errorText']}")
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            source = details.get("url", "")
            if not source or own(source, origin):
                text = details.get("exception", {}).get("description") or details.get("text")
                problems.append(f"script error{' in ' + source if source else ''}: {text}")
        elif method == "Runtime.consoleAPICalled" and params["type"] == "error":
            frames = params.get("stackTrace", {}).get("callFrames", [])
            if not frames or own(frames[0]["url"], origin):
                text = " ".join(str(arg.get("value", arg.get("description", ""))) for arg in params["args"])
                problems.append(f"console error: {text}")
        elif method == "Log.entryAdded":
            entry = params["entry"]
            if entry["level"] == "error" and own(entry.get("url", ""), origin) and entry["url"] in urls.values():
                problems.append(f"console error: {entry['text']} ({entry.get('url')})")
    return problems


def check_page(browser, url: str, origin: str) -> PageCheck:
    check = PageCheck(url)
    check.problems += load_problems(browser.open(url), origin)
    check.images = browser.evaluate("document.images.length")
    check.problems += [f"image did not load: {src}" for src in browser.evaluate(IMAGES)]

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
    glued = browser.evaluate(GLUE)
    check.glued = len(glued)
    for span in glued:
        if not span["text"] or not span["visible"]:
            check.problems.append(f"a glued value is {'empty' if not span['text'] else 'hidden'}: {span['text']!r}")

    check.explorers = browser.evaluate("document.querySelectorAll('p.explorer-runs-live').length")
    charts = browser.evaluate(CHARTS)
    check.charts = len(charts)
    for chart in charts:
        steps, target = chart["steps"], chart["target"]
        name = f"{chart['kind']} chart"
        if not chart["enabled"]:
            check.problems.append(f"{name}: its slider was never switched on (webcharts.js did not run)")
        if chart["readouts"] != steps["readouts"][target] or chart["value"] != steps["values"][target]:
            check.problems.append(f"{name}: at step {target} it shows {chart['value']!r} {chart['readouts']},"
                                  f" not {steps['values'][target]!r} {steps['readouts'][target]}")
        if chart["readouts"] == chart["before"]:
            check.problems.append(f"{name}: the readouts did not change when the slider moved")
        if chart["markers"] != steps["marks"][target]:
            check.problems.append(f"{name}: markers at {chart['markers']}, not {steps['marks'][target]}")
    # What clicking and sliding set off (a script error, a font fetched late) counts too.
    check.problems += load_problems(browser.events, origin)
    browser.events.clear()
    return check


def move_slider(browser, chart_kind: str, value: str) -> list[str]:
    """Move the first chart of ``chart_kind`` to the step reading ``value``; return its readouts."""
    return browser.evaluate(f"""
(() => {{
  const figure = document.querySelector('figure.webchart[data-chart={json.dumps(chart_kind)}]');
  const steps = JSON.parse(figure.querySelector("script.webchart-steps").textContent);
  const input = figure.querySelector("input[type=range]");
  input.value = String(steps.values.indexOf({json.dumps(value)}));
  input.dispatchEvent(new Event("input", {{bubbles: true}}));
  return [figure.querySelector(".webchart-value").textContent,
          ...Array.from(figure.querySelectorAll("[data-readout]"), r => r.textContent)];
}})()""")


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
