"""JupyterLab as `make lab` sets it up, driven by Playwright in Debian's Chromium (``tests/browser/browser.py``).

``lab_session()`` copies the course into a temporary folder (so nothing JupyterLab writes,
checkpoints or saved notebooks, lands in the work tree), writes the same setting
`make lab` writes (jupytext as the default viewer of Markdown, so each page opens as a
notebook) into a temporary configuration folder, starts ``jupyter lab`` on a free local
port with a token, and stops it afterwards. ``Lab.open(path)`` opens one notebook and
``Notebook`` runs it, reads its outputs and drives its explorers.

Used by ``tests/jupyterlab/test_in_jupyterlab.py``, ``scripts/lab_screenshots.py``, ``scripts/bench.py`` and
``scripts/colab_check.py`` (which imports it where Playwright is not installed).
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
from browser import CHROMIUM  # noqa: E402  (the site's test's choice of Chromium: one rule for both)
BIN = Path(sys.executable).parent
# What the copy leaves out: build outputs, caches, the environment, and what JupyterLab itself writes.
NOT_COPIED = (".git", ".venv", "_build", ".pytest_cache", ".hypothesis", "__pycache__", ".ipynb_checkpoints",
              "notebooks", ".binder", "*.egg-info")



def pages() -> list[str]:
    """Every page of the book (the table of contents) and every exercise notebook, as paths in the course."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from nbgate import sources

    return [path.relative_to(ROOT).as_posix() for path in sources()
            if not path.relative_to(ROOT).as_posix().startswith("solutions/")]


# What puts something a reader works in JupyterLab on a page: importing widgets, the explorers or a quiz.
CONTROLS = re.compile(r"^[ \t]*(?:from|import)[ \t].*\b(?:ipywidgets|explorers|quiz)\b", re.M)
# The exercise notebooks opened in JupyterLab: one practice release and one graded, each as a reader opens
# it. Every exercise notebook is run by tests/test_grading.py, its outputs checked for the same faults.
EXERCISES_IN_LAB = ("exercises/lesson-1-part-1.md", "exercises/graded/lesson-1-part-1.md")


def has_controls(path: str) -> bool:
    """Whether the page ``path`` imports widgets, the explorers or a quiz (no exercise notebook does)."""
    return bool(CONTROLS.search((ROOT / path).read_text(encoding="utf-8")))


def pages_with_controls() -> list[str]:
    """The pages the JupyterLab test runs: those with controls, and the two exercise notebooks of
    ``EXERCISES_IN_LAB``; the others' runs are checked in the book's build (scripts/nbgate.py)."""
    return [path for path in pages() if has_controls(path) or path in EXERCISES_IN_LAB]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Server:
    url: str
    token: str
    root: Path
    process: subprocess.Popen
    log: Path

    def api(self, path, method="GET"):
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            body = answer.read()
        return json.loads(body) if body else None

    def shut_kernels(self):
        for session in self.api("/api/sessions"):
            self.api(f"/api/sessions/{session['id']}", method="DELETE")


@contextlib.contextmanager
def jupyterlab(source: Path = ROOT):
    """JupyterLab serving a temporary copy of ``source``; yields a ``Server``, then stops it and removes the copy."""
    with tempfile.TemporaryDirectory(prefix="servingmath-lab-") as scratch:
        scratch = Path(scratch)
        course = scratch / "course"
        shutil.copytree(source, course, ignore=shutil.ignore_patterns(*NOT_COPIED))
        config = scratch / "config"
        env = {**os.environ,
               # The settings `make lab` writes, here outside the environment and the work tree.
               "JUPYTER_CONFIG_DIR": str(config),
               "JUPYTERLAB_SETTINGS_DIR": str(scratch / "settings"),
               "JUPYTERLAB_WORKSPACES_DIR": str(scratch / "workspaces"),
               "JUPYTER_RUNTIME_DIR": str(scratch / "runtime"),
               "IPYTHONDIR": str(scratch / "ipython"),
               "MPLCONFIGDIR": str(scratch / "matplotlib"),
               # The kernel imports the package from the copy, as it stands in the work tree.
               "PYTHONPATH": str(course / "src"),
               "PYTHONDONTWRITEBYTECODE": "1",
               # The lab page measures this machine: its quick version.
               "SERVINGMATH_LAB": "quick"}
        subprocess.run([str(BIN / "jupytext-config"), "set-default-viewer", "markdown", "myst"], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        # Every cell laid out, not only those scrolled into view, so the test reads every output.
        tracker = scratch / "settings" / "@jupyterlab" / "notebook-extension"
        tracker.mkdir(parents=True)
        (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
        # No question about JupyterLab's news over the notebook.
        notices = scratch / "settings" / "@jupyterlab" / "apputils-extension"
        notices.mkdir(parents=True)
        (notices / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
        port, token = free_port(), secrets.token_hex(16)
        log = scratch / "jupyterlab.log"
        with open(log, "wb") as output:
            process = subprocess.Popen(
                [str(BIN / "jupyter"), "lab", "--no-browser", f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1",
                 "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={course}",
                 "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=",
                 "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                 "--ServerApp.terminals_enabled=False",
                 # CI and containers run as root; JupyterLab refuses that unless told.
                 *(["--allow-root"] if os.geteuid() == 0 else [])],
                cwd=course, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
        server = Server(f"http://127.0.0.1:{port}", token, course, process, log)
        try:
            deadline = time.monotonic() + 120
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"jupyter lab stopped at start:\n{log.read_text()[-3000:]}")
                with contextlib.suppress(OSError):
                    server.api("/api/status")
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"jupyter lab did not answer in 120 s:\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
            yield server
        finally:
            with contextlib.suppress(Exception):
                server.shut_kernels()
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()


# --- in the page ------------------------------------------------------------------------
PANEL = "window.jupyterapp && window.jupyterapp.shell.currentWidget"

STATE = """() => {
  const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.content || !panel.content.model || !panel.sessionContext) return null;
  const session = panel.sessionContext.session;
  const cells = [];
  const model = panel.content.model;
  for (let i = 0; i < model.cells.length; i++) {
    const cell = model.cells.get(i);
    if (cell.type !== 'code') continue;
    const outputs = [];
    for (let j = 0; j < cell.outputs.length; j++) outputs.push(cell.outputs.get(j).toJSON());
    cells.push({index: i, source: cell.sharedModel.getSource(), count: cell.executionCount, outputs});
  }
  return {factory: panel.context ? panel.context.factoryName || '' : '', path: panel.context.path,
          kernel: session && session.kernel ? session.kernel.status : 'none', cells};
}"""

# How far Run All has gone, without the outputs (read four times a second while it runs).
PROGRESS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const session = panel.sessionContext.session;
  const model = panel.content.model;
  let done = true, failed = false;
  for (let i = 0; i < model.cells.length; i++) {
    const cell = model.cells.get(i);
    if (cell.type !== 'code') continue;
    if (cell.executionCount === null) done = false;
    for (let j = 0; j < cell.outputs.length; j++) if (cell.outputs.get(j).type === 'error') failed = true;
  }
  return {done, failed, kernel: session && session.kernel ? session.kernel.status : 'none'};
}"""

# Close every open document without asking to save it (the next page opens in the same JupyterLab).
CLOSE_ALL = """() => {
  for (const widget of Array.from(window.jupyterapp.shell.widgets('main'))) {
    if (widget.context && widget.context.model) widget.context.model.dirty = false;
    widget.dispose();
  }
}"""

# The explorers on a page, and what a reader sees of one: its readouts (rows of [label, value]), its figure's markup,
# and all of it (its name, controls as kind, label and shown value, readouts, figure and the figure's size on screen).
EXPLORER_BOXES = ".jp-Notebook .servingmath-explorer"
BOXES = f"document.querySelectorAll('{EXPLORER_BOXES}')"
READOUTS = """box => Array.from(box.querySelectorAll('.servingmath-readouts tr'))
  .map(row => [row.querySelector('th').textContent, row.querySelector('td').textContent])"""
FIGURE = """box => { const svg = box.querySelector('.servingmath-figure svg'); return svg ? svg.outerHTML : ''; }"""
EXPLORER_STATE = f"""box => {{
  const name = Array.from(box.classList).find(c => c.startsWith('servingmath-explorer-'));
  const controls = Array.from(box.querySelectorAll('.widget-slider, .widget-dropdown, .widget-toggle-buttons'))
    .map(control => {{
      const kind = control.classList.contains('widget-dropdown') ? 'dropdown'
                 : control.classList.contains('widget-toggle-buttons') ? 'buttons' : 'slider';
      const label = (control.querySelector('.widget-label') || {{}}).textContent || '';
      let shown = '';
      if (kind === 'dropdown') {{ const s = control.querySelector('select'); shown = s.options[s.selectedIndex].text; }}
      else if (kind === 'buttons') {{
        const b = control.querySelector('button.mod-active'); shown = b ? b.textContent : '';
      }}
      else {{ const r = control.querySelector('.widget-readout'); shown = r ? r.textContent : ''; }}
      return {{kind, label, shown}};
    }});
  const svg = box.querySelector('.servingmath-figure svg');
  const rect = svg ? svg.getBoundingClientRect() : null;
  return {{name: name ? name.slice('servingmath-explorer-'.length) : '', controls, readouts: ({READOUTS})(box),
          figure: ({FIGURE})(box), figureSize: rect ? [rect.width, rect.height] : [0, 0]}};
}}"""
# Every explorer on the page.
EXPLORERS = f"() => Array.from({BOXES}).map({EXPLORER_STATE})"
# Whether explorer ``index`` shows these readouts and this figure (null: not compared). It reads only those two,
# without laying the page out, as often as the wait asks.
SHOWS = f"""([index, readouts, figure]) => {{
  const box = {BOXES}[index];
  if (!box) return false;
  return (readouts === null || JSON.stringify(({READOUTS})(box)) === JSON.stringify(readouts))
    && (figure === null || ({FIGURE})(box) === figure);
}}"""

# The markup ``svg`` becomes once the browser has parsed it as the HTML widget does, to compare with what is shown.
AS_PARSED = """(svg) => { const holder = document.createElement('div'); holder.innerHTML = svg;
  return holder.firstElementChild ? holder.firstElementChild.outerHTML : ''; }"""

# Time a move: from the reader's input on explorer ``index`` to the next frame after its new figure is in place,
# and to the first change on screen (the "computing…" notice a setting computed the first time puts over the last
# figure, or the figure itself), saying whether that notice came.
ARM_TIMER = """(index) => {
  const box = """ + BOXES + """[index];
  const figure = box.querySelector('.servingmath-figure');
  window.__move = {start: null, shown: null, noticed: null, computed: false};
  const started = () => { if (window.__move.start === null) window.__move.start = performance.now(); };
  for (const kind of ['keydown', 'pointerdown', 'change'])
    box.addEventListener(kind, started, {capture: true, once: true});
  const before = figure.querySelector('svg').outerHTML;
  const observer = new MutationObserver(() => {
    if (window.__move.noticed === null) window.__move.noticed = performance.now();
    const drawn = figure.querySelector('svg');
    if (figure.querySelector('.servingmath-busy')) window.__move.computed = true;
    if (!drawn || drawn.outerHTML === before || figure.querySelector('.servingmath-busy')) return;
    observer.disconnect();
    figure.getBoundingClientRect();  // laid out
    requestAnimationFrame(() => { window.__move.shown = performance.now(); });
  });
  observer.observe(figure, {childList: true, subtree: true, characterData: true});
}"""


def evaluate_json(page, script: str, arg=None):
    """What ``script`` (a function, not async, returning what JSON holds: no undefined at the top, no NaN) returns in
    the page, carried across as one JSON string. Playwright's client checks each part of a value it receives, one by
    one in Python: a notebook's outputs, or every explorer's figure, read four times a second."""
    return json.loads(page.evaluate(f"(arg) => JSON.stringify(({script})(arg))", arg))


class Notebook:
    """One notebook open in JupyterLab."""

    def __init__(self, page, path):
        self.page, self.path = page, path

    def state(self):
        return evaluate_json(self.page, STATE)

    def wait_ready(self, timeout=180, restart_after=60):
        """The notebook's state once its kernel is idle. A kernel still not connected after ``restart_after``
        seconds (seen on a machine loaded well past its processors) is restarted once, as Kernel > Restart does."""
        start = time.monotonic()
        restarted = False
        while time.monotonic() < start + timeout:
            state = self.state()
            if state and state["path"] == self.path and state["kernel"] == "idle":
                return state
            if not restarted and time.monotonic() > start + restart_after and state and state["path"] == self.path:
                self.page.evaluate(f"() => {PANEL}.sessionContext.restartKernel()")
                restarted = True
            time.sleep(0.25)
        state = self.state()
        cells = len(state["cells"]) if state else 0
        raise AssertionError(f"{self.path}: no idle kernel after {timeout} s (kernel: "
                             f"{state and state['kernel']}, {cells} code cells, restarted: {restarted})")

    def run_all(self, timeout=300):
        """Run All, as the Run menu does; return the code cells once each has run or one has failed."""
        self.wait_ready()
        self.page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        deadline = time.monotonic() + timeout
        settled = 0
        while time.monotonic() < deadline:
            time.sleep(0.25)
            progress = evaluate_json(self.page, PROGRESS)
            settled = settled + 1 if (progress["done"] or progress["failed"]) and progress["kernel"] == "idle" else 0
            if settled >= 4:  # idle for a second: the widgets' messages have arrived too
                return self.state()["cells"]
        raise AssertionError(f"{self.path}: Run All had not finished after {timeout} s")

    def explorers(self):
        return evaluate_json(self.page, EXPLORERS)

    def explorer_box(self, index):
        return self.page.locator(EXPLORER_BOXES).nth(index)

    def control(self, index, number):
        return self.explorer_box(index).locator(
            ".widget-slider, .widget-dropdown, .widget-toggle-buttons").nth(number)

    def as_parsed(self, svg):
        return self.page.evaluate(AS_PARSED, svg)

    def _target(self, index, number, kind, to_end):
        """The element a reader acts on to move the control: a slider's handle, a menu, the button to click."""
        control = self.control(index, number)
        control.scroll_into_view_if_needed()
        if kind == "slider":
            return control.locator(".noUi-handle, .ui-slider-handle").first
        if kind == "dropdown":
            return control.locator("select")
        buttons = control.locator("button")
        return buttons.nth(buttons.count() - 1 if to_end else 0)

    def _act(self, target, kind, to_end):
        if kind == "slider":
            target.press("End" if to_end else "Home")
        elif kind == "dropdown":
            count = target.locator("option").count()
            target.select_option(index=count - 1 if to_end else 0)
        else:
            target.click()

    def move(self, index, number, kind, to_end):
        """Move control ``number`` of explorer ``index`` to its last setting (``to_end``) or its first, as a reader
        would: a slider's handle by keyboard, a dropdown's menu, a button by a click."""
        target = self._target(index, number, kind, to_end)
        target.focus()
        self._act(target, kind, to_end)

    def timed_move(self, index, number, kind, to_end, timeout=10):
        """Move a control: seconds from the input to the next frame after the new figure is in place, seconds to the
        first change on screen, and whether the setting was computed the first time ("computing…" shown).

        The control has the focus before the clock starts, as a slider's keys need it: for every kind the time is the
        explorer's answer to a reader already on the control, not JupyterLab making the explorer's cell the active
        one when the focus first enters it (some 50 ms more, on a click into a cell not yet active)."""
        target = self._target(index, number, kind, to_end)
        target.focus()
        self.page.evaluate(ARM_TIMER, index)
        self._act(target, kind, to_end)
        self.page.wait_for_function("() => window.__move.shown !== null", timeout=timeout * 1000)
        move = self.page.evaluate("() => window.__move")
        return (move["shown"] - move["start"]) / 1000, (move["noticed"] - move["start"]) / 1000, move["computed"]

    def wait_for(self, index, expected, timeout=15):
        """Explorer ``index`` once it shows ``expected`` (its ``readouts``, as rows of [label, value], its ``figure``'s
        markup, or both), or as it stands after ``timeout``. The page compares every 50 ms and answers once, so the
        figure's markup crosses to this process once, not at every look."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        if not expected or set(expected) - {"readouts", "figure"}:
            raise ValueError(f"expected must give readouts, a figure or both, got {sorted(expected)}")
        with contextlib.suppress(PlaywrightTimeout):
            self.page.wait_for_function(SHOWS, arg=[index, expected.get("readouts"), expected.get("figure")],
                                        polling=50, timeout=timeout * 1000)
        return self.explorers()[index]

    def wait_for_figure_change(self, index, before, timeout=10):
        """The explorer's state once its figure differs from ``before`` (its readouts come with it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            now = self.explorers()[index]
            if now["figure"] != before:
                return now
            time.sleep(0.05)
        return self.explorers()[index]


# --- the same moves on the package's side ---------------------------------------------------
def make_explorer(name):
    """The explorer ``name`` at its defaults, live, built in this process: what the page should show."""
    from servingmath import charts

    return charts.find(name)().live()


def at_end(control) -> bool:
    """Whether a control stands at its last setting."""
    if hasattr(control, "options"):
        return control.index == len(control.options) - 1
    return control.value == _last(control)


def _last(control):
    return control.base ** control.max if hasattr(control, "base") else control.max


def _first(control):
    return control.base ** control.min if hasattr(control, "base") else control.min


def mirror_move(explorer, number, to_end):
    """Move control ``number`` of ``explorer`` as ``Notebook.move`` moves it on the page."""
    control = list(explorer.controls.values())[number]
    if hasattr(control, "options"):
        control.index = len(control.options) - 1 if to_end else 0
    else:
        control.value = _last(control) if to_end else _first(control)


def control_kind(control) -> str:
    from ipywidgets import Dropdown, ToggleButtons

    if isinstance(control, Dropdown):
        return "dropdown"
    return "buttons" if isinstance(control, ToggleButtons) else "slider"


def moves(explorer, count):
    """``count`` moves: each control in turn, to its last setting or back to its first.

    Yields (control number, kind, to_end, whether the figure changes) and moves ``explorer`` (the package's
    copy) the same way: a move between two settings drawn alike (two refused ones) has no redraw to time.
    """
    controls = list(explorer.controls.values())
    for move in range(count):
        number = move % len(controls)
        to_end = not at_end(controls[number])
        before = explorer.svg
        mirror_move(explorer, number, to_end)
        yield number, control_kind(controls[number]), to_end, explorer.svg != before


# The page that holds each explorer, by its name (``servingmath.charts.find(name)``).
EXPLORER_PAGES = {"passes": "chapters/lesson-1/part-1-prompt-and-reply.md",
                  "roofline": "chapters/lesson-1/part-2-same-weights-different-work.md",
                  "request": "chapters/lesson-1/part-3-time-on-the-clock.md",
                  "batching": "chapters/lesson-1/part-4-batching.md",
                  "workshop": "chapters/plates/xxiii-1-prefill-and-decode.md",
                  "cache_saving": "chapters/lesson-2/part-1-what-the-cache-holds.md",
                  "cache_size": "chapters/lesson-2/part-2-its-size.md",
                  "users_that_fit": "chapters/lesson-2/part-3-how-many-users-fit.md",
                  "cached_batching": "chapters/lesson-2/part-4-decode-and-price.md",
                  "kv_workshop": "chapters/plates/xxiii-2-the-kv-cache.md",
                  "paging": "chapters/lesson-3/part-1-paged-memory.md",
                  "first_token_wait": "chapters/lesson-3/part-2-continuous-batching.md",
                  "stall": "chapters/lesson-3/part-3-prefill-meets-decode.md",
                  "load_latency": "chapters/lesson-3/part-4-load-latency-and-price.md",
                  "continuous_batching": "chapters/plates/xxiii-4-continuous-batching.md",
                  "tensor_parallel": "chapters/lesson-4/part-1-tensor-parallelism.md",
                  "pipeline_parallel": "chapters/lesson-4/part-2-pipeline-parallelism.md",
                  "routers": "chapters/lesson-4/part-3-replicas.md",
                  "disaggregated": "chapters/lesson-4/part-4-disaggregation.md"}
EXPLORER_NAMES = tuple(EXPLORER_PAGES)


def redraw_times(lab, count=20):
    """For each explorer, ``count`` moves: for each that changes the figure, ``timed_move``'s seconds to the new
    figure, seconds to the first change on screen, and whether the setting was computed the first time."""
    times = {}
    for name, path in EXPLORER_PAGES.items():
        notebook = lab.open(path)
        notebook.run_all()
        index = [shown["name"] for shown in notebook.explorers()].index(name)
        notebook.explorer_box(index).scroll_into_view_if_needed()
        times[name] = []
        for number, kind, to_end, redraws in moves(make_explorer(name), count):
            if redraws:
                times[name].append(notebook.timed_move(index, number, kind, to_end))
            else:
                notebook.move(index, number, kind, to_end)
            time.sleep(0.3)  # the kernel settles before the next move
    return times


class Lab:
    """A browser on a running JupyterLab."""

    def __init__(self, server: Server, browser, height=900):
        self.server, self.browser = server, browser
        self.context = browser.new_context(viewport={"width": 1280, "height": height}, device_scale_factor=1)
        self.page = self.context.new_page()
        self.messages: list[str] = []
        self.loaded = False
        self.page.on("pageerror", lambda error: self.messages.append(f"page error: {error}"))

    def open(self, path: str) -> Notebook:
        """Open ``path`` as a reader opens it, in a fresh kernel; the page before it is closed and its kernel shut.

        JupyterLab loads once; each later notebook opens in it through the file menu's command, as a
        reader opens a second notebook (reloading the whole application for each would double the time).
        """
        if self.loaded:
            self.page.evaluate(CLOSE_ALL)
            self.server.shut_kernels()
            self.page.evaluate("(path) => window.jupyterapp.commands.execute('docmanager:open', {path})", path)
        else:
            self.server.shut_kernels()
            self.page.goto(f"{self.server.url}/lab/tree/{path}?reset&token={self.server.token}")
            self.loaded = True
        self.page.wait_for_function(f"() => {PANEL} && {PANEL}.context && {PANEL}.context.path === {json.dumps(path)}",
                                    timeout=120_000)
        notebook = Notebook(self.page, path)
        notebook.wait_ready()
        return notebook

    def close(self):
        self.context.close()


@contextlib.contextmanager
def lab_browser(source: Path = ROOT, height=900):
    """A running JupyterLab on a copy of ``source`` and a headless Chromium on it, ``height`` pixels tall."""
    from playwright.sync_api import sync_playwright

    with jupyterlab(source) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        lab = Lab(server, browser, height)
        try:
            yield lab
        finally:
            lab.close()
            browser.close()
