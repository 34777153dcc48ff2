"""Headless Chromium for the site's tests, driven by Playwright for Python.

Debian's Chromium is launched through Playwright; no browser is downloaded. Its old headless shell
(``/usr/bin/chromium-headless-shell``, package chromium-headless-shell: the same Blink and V8 as the browser, without
its browser layer, the kind of build Playwright runs headless pages in) where installed, else the full browser
(``/usr/bin/chromium``); ``$CHROMIUM`` names another. It runs offline: every host name but 127.0.0.1 fails to
resolve, so a page that needs the network shows it. Each ``Tab`` keeps a list of what happened while a
page was open (requests, responses, failures, script errors, console errors), which
``site_checks.load_problems`` reads.
"""
from __future__ import annotations

import os
from pathlib import Path

# The one `make ... CHROMIUM=/path` names, else Debian's headless shell, else its full browser (the Makefile's
# default too). The shell passes the same tests for about 15 % less processor time in the JupyterLab test on the
# course's 2-core machine (177-180 s against 199-223 s), which loads JupyterLab's scripts and redraws every explorer.
DEBIANS = (Path("/usr/bin/chromium-headless-shell"), Path("/usr/bin/chromium"))
CHROMIUM = Path(os.environ.get("CHROMIUM") or next((path for path in DEBIANS if path.exists()), DEBIANS[-1]))
# Offline: only the site on 127.0.0.1 can be reached.
OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"


class Chromium:
    """Debian's Chromium, started once; ``tab()`` opens a page in a fresh context."""

    def __init__(self):
        # Imported here: CHROMIUM is read where Playwright is not installed (scripts/colab_check.py, by labdriver).
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        args = [OFFLINE] + (["--no-sandbox"] if os.geteuid() == 0 else [])
        self._browser = self._playwright.chromium.launch(executable_path=str(CHROMIUM), args=args)

    def tab(self, width: int = 1200, height: int = 900, dark: bool = False, touch: bool = False) -> "Tab":
        return Tab(self._browser, width, height, dark, touch)

    def close(self):
        self._browser.close()
        self._playwright.stop()


class Tab:
    """One page, at ``width`` × ``height`` CSS pixels, in light or dark mode.

    ``touch`` makes it a phone's browser (touch events, no mouse hover).
    """

    def __init__(self, browser, width: int = 1200, height: int = 900, dark: bool = False, touch: bool = False):
        self.context = browser.new_context(
            viewport={"width": width, "height": height}, color_scheme="dark" if dark else "light",
            has_touch=touch, is_mobile=touch, device_scale_factor=1)
        self.page = self.context.new_page()
        self.events: list[dict] = []
        page = self.page
        page.on("request", lambda request: self.events.append({"kind": "request", "url": request.url}))
        page.on("response", lambda response: self.events.append(
            {"kind": "response", "url": response.url, "status": response.status}))
        page.on("requestfailed", lambda request: self.events.append(
            {"kind": "failed", "url": request.url, "error": request.failure or ""}))
        page.on("pageerror", lambda error: self.events.append(
            {"kind": "script error", "text": f"{error.name}: {error.message}", "stack": error.stack or ""}))
        page.on("console", lambda message: self.events.append(
            {"kind": "console", "type": message.type, "text": message.text,
             "url": (message.location or {}).get("url", "")}))

    def open(self, url: str) -> list[dict]:
        """Load ``url``; return what happened while it loaded."""
        self.events.clear()
        self.page.goto(url, wait_until="load")
        # Let deferred scripts, fonts and images finish before the page is read.
        self.page.evaluate("Promise.all([document.fonts.ready, ...Array.from(document.images, i => i.complete ? 0 :"
                           " new Promise(done => { i.onload = i.onerror = done; }))])")
        self.page.wait_for_timeout(200)
        load, self.events = list(self.events), []
        return load

    def evaluate(self, expression: str, argument=None):
        return self.page.evaluate(expression, argument)

    def screenshot(self, path: Path, full_page: bool = True):
        self.page.screenshot(path=str(path), full_page=full_page)

    def close(self):
        self.context.close()
