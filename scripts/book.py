"""`make book`: the website built, said as it goes: one line a page as it runs, with its time, then where the book is.

    python scripts/book.py [jupyter-book build options ...]

Runs ``jupyter-book build .`` with the options given (the Makefile's: warnings as errors, every reference
checked) and keeps its whole output in ``_build/book.log``. On the screen: each page's run with its seconds,
every warning and error Sphinx reports, and a last line with the pages, the time and where the book is. What a
reader would otherwise learn to ignore stays in the log only: Sphinx's step-by-step progress and the Markdown
parsers' settings. A failed build prints the log's last lines and exits with the build's status.

Sphinx runs the pages one after another, on one processor. Where the machine has a second, the pages whose time
is almost all lessons 3 and 4's simulations (``RUN_AHEAD``) are run ahead of it by another process
(``python scripts/book.py --run-ahead``), in the order the build reaches them: the simulations are kept on disk
(``servingmath._kept``, under ``SERVINGMATH_RESULTS``), so when the build reaches those pages it reads them back,
or waits for the one being computed, instead of computing them itself. The pages it builds are the same. The
process starts once the lab's page that measures this machine has run, so that nothing else runs beside those
measurements.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "_build" / "book.log"
AHEAD_LOG = ROOT / "_build" / "run-ahead.log"
COLOUR = re.compile(r"\x1b\[[0-9;]*m")
RAN = re.compile(r"^(?P<path>\S+\.(?:md|ipynb)): Executed notebook in (?P<seconds>[\d.]+) seconds")
# Sphinx's warnings and errors ("path:line: WARNING: ..."), and what a failing extension raises.
SAID = re.compile(r"\b(WARNING|ERROR|CRITICAL|SEVERE)\b|^(Traceback|Exception|\w+Error\b)")
# The pages run ahead, in the order the build reads them (Sphinx reads pages in the order of their names): the two
# whose time is most nearly all simulations kept on disk (cold and kept, on a two-processor machine: 46 s and 0.2 s,
# 17 s and 5 s), about half the time the build spends running pages. The build runs the others itself meanwhile,
# lesson 3 Part 4 (15 s, 0.7 kept) and lesson 4 Part 3 (10 s, 1.8 kept) among them.
RUN_AHEAD = ("chapters/lesson-4/part-4-disaggregation.md", "chapters/reality-check-multi-gpu.md")
# The page that measures this machine: the run ahead starts once it has run.
MEASURING = "chapters/lab/measure-your-machine"


def page_run(line: str) -> tuple[str, float] | None:
    """(the page, as a path from the book's root without its suffix, and its seconds) where ``line`` of the
    build's output says a page has run, else None."""
    ran = RAN.match(COLOUR.sub("", line).rstrip())
    if not ran:
        return None
    page = Path(ran["path"]).resolve()
    name = page.relative_to(ROOT).with_suffix("").as_posix() if page.is_relative_to(ROOT) else ran["path"]
    return name, float(ran["seconds"])


def shown(line: str) -> str | None:
    """What the reader sees of one line of the build's output, or None."""
    ran = page_run(line)
    if ran:
        return f"  {ran[0]:<58} {ran[1]:5.1f} s"
    line = COLOUR.sub("", line).rstrip()
    if SAID.search(line):
        return line
    return None


def run_ahead() -> int:
    """Run the pages of ``RUN_AHEAD`` in turn, as the answer-leak test reads them (``pages_seen``), for the
    simulations they keep; their text is not needed. A page that fails here is left to the build to report (what
    it raised here goes to ``_build/run-ahead.log``)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import pages_seen
    for page in RUN_AHEAD:
        try:
            pages_seen.page_text(ROOT / page, stored=False)
        except Exception as error:    # the build runs the same page and reports the error in its place
            print(f"{page}: {type(error).__name__}: {error}", file=sys.stderr)
    return 0


def processors() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def main(options: list[str]) -> int:
    if options == ["--run-ahead"]:
        return run_ahead()
    LOG.parent.mkdir(parents=True, exist_ok=True)
    command = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT), *options]
    start, pages, ahead = time.perf_counter(), 0, None
    ahead_wanted = processors() > 1 and bool(os.environ.get("SERVINGMATH_RESULTS"))
    print(f"building the book, every page run (jupyter-book build . {' '.join(options)}); its whole output goes to "
          f"{LOG.relative_to(ROOT)}", flush=True)
    with LOG.open("w", encoding="utf-8") as log, subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1) as build:
        for line in build.stdout:
            log.write(line)
            said = shown(line)
            if said is not None:
                pages += said.startswith("  ")
                print(said, flush=True)
            ran = page_run(line)
            if ahead_wanted and ahead is None and ran and ran[0] == MEASURING:
                print(f"a second process now runs the simulations of {len(RUN_AHEAD)} later pages ahead of the build",
                      flush=True)
                with AHEAD_LOG.open("w", encoding="utf-8") as errors:
                    ahead = subprocess.Popen([sys.executable, __file__, "--run-ahead"], cwd=ROOT,
                                             stdout=subprocess.DEVNULL, stderr=errors)
    if ahead is not None:
        if build.returncode:
            ahead.kill()
        ahead.wait()
    seconds = time.perf_counter() - start
    if build.returncode:
        tail = LOG.read_text(encoding="utf-8").splitlines()[-30:]
        print("\n".join(["", f"the build failed (exit {build.returncode}) after {seconds:.0f} s; the log's last lines:",
                         *tail]), file=sys.stderr)
        return build.returncode
    print(f"{pages} pages run, the book built in {seconds:.0f} s: {ROOT / '_build' / 'html' / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
