"""Run `make test`'s stages and say how long each took.

``stages.py unit book-check,browser-check+lab-check ...`` runs ``make <stage>`` for each stage
in turn and stops at the first that fails. Lanes joined by ``+`` run side by side (the book's
build and the site's browser test keep a processor busy while the JupyterLab test mostly waits
on its browser and kernel); the stages of a lane, joined by ``,``, run one after another, and a
lane stops at its first failure. Each stage's output is passed on whole when it ends, so two
never interleave. At the end
it prints one line a stage: its wall-clock seconds, the processor seconds it used (the
figure a busy machine changes least), and its last pytest summary line (``812 passed in
61.2s``), or the stage's last line where it ran no pytest (a skipped browser stage says
why). The machine's load average and processors are printed with them, since a busy machine
slows every stage. The figures are also written to ``_build/stage-times.json`` (or the file
``STAGE_TIMES`` names), which ``make bench`` prints.

``stages.py --show`` prints the figures of the last run without running anything.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import tempfile
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


class Stage:
    """``make <name>`` started; its output passed on as it comes (``log`` None) or kept in ``log`` till it ends."""

    def __init__(self, name: str, log=None):
        self.name, self.log = name, log
        make = os.environ.get("MAKE", "make")
        self.start = time.monotonic()
        self.process = subprocess.Popen([make, "--no-print-directory", name], cwd=ROOT,
                                        stdout=subprocess.PIPE if log is None else log, stderr=subprocess.STDOUT)
        self.lines: list[str] = []

    def follow(self):
        """Pass the output on line by line as it comes, keeping the last lines for the summary."""
        for line in iter(self.process.stdout.readline, b""):
            text = line.decode(errors="replace")
            sys.stdout.write(text)
            sys.stdout.flush()
            self.lines.append(text)
            del self.lines[:-200]

    def ended(self) -> bool:
        """Whether it has ended (it is then reaped, and ``wait`` returns at once)."""
        pid, status, usage = os.wait4(self.process.pid, os.WNOHANG)
        if pid == 0:
            return False
        self._reaped = status, usage
        return True

    def wait(self) -> dict:
        """Wait for it to end and pass on what it kept; its figures."""
        status, usage = getattr(self, "_reaped", None) or os.wait4(self.process.pid, 0)[1:]
        self.process.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - self.start
        if self.log is not None:
            self.log.seek(0)
            self.lines = self.log.read().decode(errors="replace").splitlines(keepends=True)
            sys.stdout.write("".join(self.lines))
            sys.stdout.flush()
        return {"stage": self.name, "seconds": round(seconds, 1), "cpu": round(usage.ru_utime + usage.ru_stime, 1),
                "status": self.process.returncode, "summary": summary_of(self.lines[-200:])}


def run(lanes: list[list[str]]) -> list[dict]:
    """The ``lanes`` side by side, each lane's stages in turn (one stage alone passes its output on as it
    comes); their figures, in the order given. A lane stops at its first failure; the others go on."""
    if len(lanes) == 1 and len(lanes[0]) == 1:
        stage = Stage(lanes[0][0])
        stage.follow()
        return [stage.wait()]
    print(f"stages: {' beside '.join(', then '.join(lane) for lane in lanes)}; "
          "each one's output follows when it ends", flush=True)
    order = [name for lane in lanes for name in lane]
    results = {}
    waiting = [list(lane) for lane in lanes]
    def start(lane):
        return Stage(lane.pop(0), tempfile.TemporaryFile()), lane

    running = [start(lane) for lane in waiting]
    while running:
        for stage, lane in [pair for pair in running if pair[0].ended()]:
            running.remove((stage, lane))
            results[stage.name] = stage.wait()
            stage.log.close()
            if results[stage.name]["status"] == 0 and lane:
                running.append(start(lane))
        time.sleep(0.2)
    return [results[name] for name in order if name in results]


def load() -> float:
    """The machine's load average over the last minute: processes running or waiting for a processor."""
    return round(os.getloadavg()[0], 1)


def table(record: dict) -> list[str]:
    lines = [f"stage times, {record['when']} (load average {record['load_before']} at the start, "
             f"{record['load_after']} at the end, on {record['processors']} processors):"]
    width = max(len(stage["stage"]) for stage in record["stages"])
    for stage in record["stages"]:
        mark = "" if stage["status"] == 0 else f"  FAILED (exit {stage['status']})"
        beside = f"  (beside {stage['beside']})" if stage.get("beside") else ""
        lines.append(f"  {stage['stage']:<{width}}  {stage['seconds']:6.1f} s, cpu {stage['cpu']:6.1f} s  "
                     f"{stage['summary']}{mark}{beside}")
    lines.append(f"  {'all':<{width}}  {record['seconds']:6.1f} s, cpu {sum(s['cpu'] for s in record['stages']):6.1f} s")
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
              "processors": os.cpu_count(), "stages": []}
    start = time.monotonic()
    status = 0
    for lanes in ([lane.split(",") for lane in argument.split("+")] for argument in argv):
        results = run(lanes)
        for result in results:
            mine = next(lane for lane in lanes if result["stage"] in lane)
            result["beside"] = ", ".join(other for lane in lanes if lane is not mine for other in lane)
        record["stages"] += results
        status = next((result["status"] for result in results if result["status"] != 0), 0)
        if status != 0:
            break
    record["seconds"] = round(time.monotonic() - start, 1)
    record["load_after"] = load()
    TIMES.parent.mkdir(parents=True, exist_ok=True)
    TIMES.write_text(json.dumps(record, indent=1) + "\n")
    print()
    print("\n".join(table(record)))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
