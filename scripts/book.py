"""`make book`: the website built, said as it goes: one line a page as it runs, with its time, then where the book is.

    python scripts/book.py [jupyter-book build options ...]

Runs ``jupyter-book build .`` with the options given (the Makefile's: warnings as errors, every reference
checked) and keeps its whole output in ``_build/book.log``. On the screen: each page's run with its seconds,
every warning and error Sphinx reports, and a last line with the pages, the time and where the book is. What a
reader would otherwise learn to ignore stays in the log only: Sphinx's step-by-step progress, the Markdown
parsers' settings, and the warning every kernel prints that its local connection is not encrypted (the kernels
listen on 127.0.0.1 only). A failed build prints the log's last lines and exits with the build's status.
"""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "_build" / "book.log"
COLOUR = re.compile(r"\x1b\[[0-9;]*m")
RAN = re.compile(r"^(?P<path>\S+\.(?:md|ipynb)): Executed notebook in (?P<seconds>[\d.]+) seconds")
# Sphinx's warnings and errors ("path:line: WARNING: ..."), and what a failing extension raises.
SAID = re.compile(r"\b(WARNING|ERROR|CRITICAL|SEVERE)\b|^(Traceback|Exception|\w+Error\b)")
HUSHED = ("Kernel is running over TCP without encryption",)


def shown(line: str) -> str | None:
    """What the reader sees of one line of the build's output, or None."""
    line = COLOUR.sub("", line).rstrip()
    ran = RAN.match(line)
    if ran:
        page = Path(ran["path"]).resolve()
        name = page.relative_to(ROOT).with_suffix("").as_posix() if page.is_relative_to(ROOT) else ran["path"]
        return f"  {name:<58} {float(ran['seconds']):5.1f} s"
    if SAID.search(line) and not any(words in line for words in HUSHED):
        return line
    return None


def main(options: list[str]) -> int:
    LOG.parent.mkdir(parents=True, exist_ok=True)
    command = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT), *options]
    start, pages = time.perf_counter(), 0
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
