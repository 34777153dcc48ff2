"""Run `make test`'s stages one after another and say how long each took.

``stages.py unit book-check ...`` runs ``make <stage>`` for each stage in turn, passing its
output through as it comes, and stops at the first that fails. At the end it prints one
line a stage: its seconds and its last pytest summary line (``812 passed in 61.2s``), or the
stage's last line where it ran no pytest (a skipped browser stage says why). The machine's
load average and processors are printed with them, since a busy machine slows every stage.
The figures are also written to ``_build/stage-times.json`` (or the file ``STAGE_TIMES``
names), which ``make bench`` prints.

``stages.py --show`` prints the figures of the last run without running anything.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMES = ROOT / os.environ.get("STAGE_TIMES", "_build/stage-times.json")
# pytest's closing line, with or without its rule of '=' and its colours: "3 passed, 1 skipped in 4.2s".
SUMMARY = re.compile(r"\b\d+ (passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?)\b.* in [\d.]+s")
COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def summary_of(lines: list[str]) -> str:
    """The stage's last pytest summary line, else its last line that says something."""
    plain = [COLOUR.sub("", line).strip() for line in lines]
    found = [line.strip("= ") for line in plain if SUMMARY.search(line)]
    if found:
        return found[-1]
    said = [line for line in plain if line]
    return said[-1] if said else ""


def run(stage: str) -> tuple[int, float, str]:
    """``make <stage>``, its output passed through: (exit status, seconds, summary)."""
    make = os.environ.get("MAKE", "make")
    start = time.monotonic()
    process = subprocess.Popen([make, "--no-print-directory", stage], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1)
    lines = []
    for line in process.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        lines.append(line)
        del lines[:-200]
    status = process.wait()
    return status, time.monotonic() - start, summary_of(lines)


def load() -> float:
    """The machine's load average over the last minute: processes running or waiting for a processor."""
    return round(os.getloadavg()[0], 1)


def table(record: dict) -> list[str]:
    lines = [f"stage times, {record['when']} (load average {record['load_before']} at the start, "
             f"{record['load_after']} at the end, on {record['processors']} processors):"]
    width = max(len(stage["stage"]) for stage in record["stages"])
    for stage in record["stages"]:
        mark = "" if stage["status"] == 0 else f"  FAILED (exit {stage['status']})"
        lines.append(f"  {stage['stage']:<{width}}  {stage['seconds']:6.1f} s  {stage['summary']}{mark}")
    lines.append(f"  {'all':<{width}}  {sum(s['seconds'] for s in record['stages']):6.1f} s")
    return lines


def show() -> int:
    if not TIMES.is_file():
        print(f"stage times: none yet ({TIMES} is written by `make test`)")
        return 0
    print("\n".join(table(json.loads(TIMES.read_text()))))
    return 0


def main(argv: list[str]) -> int:
    if argv == ["--show"]:
        return show()
    if not argv:
        print("usage: stages.py STAGE... | --show", file=sys.stderr)
        return 2
    record = {"when": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "load_before": load(),
              "processors": os.cpu_count(),
              "stages": []}
    status = 0
    for stage in argv:
        status, seconds, summary = run(stage)
        record["stages"].append({"stage": stage, "seconds": round(seconds, 1), "status": status, "summary": summary})
        if status != 0:
            break
    record["load_after"] = load()
    TIMES.parent.mkdir(parents=True, exist_ok=True)
    TIMES.write_text(json.dumps(record, indent=1) + "\n")
    print()
    print("\n".join(table(record)))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
