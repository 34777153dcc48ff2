"""Running one notebook from a clean start, in the sandbox, within its time: what it left."""
from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from servingmath import variants
from servingmath.checks import RECORD_MIME

from . import ROOT, cgroups
from .sandbox import CUT_IN_KERNEL, LIMITS, MIB, UIDS, Limits, _sandboxed_manager


@dataclass
class Run:
    """What one executed notebook left: its check records by label, what went wrong, whether it was read."""

    records: dict[str, dict] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    unreadable: str | None = None
    seconds: float = 0.0
    changed: list[str] = field(default_factory=list)   # labels whose check cell differs from the release's
    cells_run: int = 0                                  # code cells that finished
    shown_ids: list[str] = field(default_factory=list)  # whose variant the notebook's problem cells showed
    executed: nbformat.NotebookNode | None = None       # the notebook with its outputs, as it ran


LABEL = re.compile(r"""\b(?:check|submit)\s*\(.*?\blabel\s*=\s*["']([^"']+)["']""", re.S)


def recording_cell(label: str) -> str:
    """What the grader runs in place of a check cell: it records the answer and holds no figure."""
    return ("from servingmath.checks import submit as _grader_submit\n"
            f"_grader_submit(globals().get('answer'), label={label!r})")


def release_cells(names: list[str]) -> dict[str, dict[str, set[str]]]:
    """Each notebook's check cells as the practice and graded releases hand them out, by label."""
    cells: dict[str, dict[str, set[str]]] = {}
    for name in names:
        for folder in (ROOT / "exercises", ROOT / "exercises" / "graded"):
            path = folder / f"{name}.md"
            if not path.is_file():
                continue
            for cell in jupytext.read(path).cells:
                found = LABEL.search(cell.source) if cell.cell_type == "code" else None
                if found:
                    cells.setdefault(name, {}).setdefault(found.group(1), set()).add(_squeezed(cell.source))
    return cells


def _squeezed(source: str) -> str:
    return re.sub(r"\s+", "", source)


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """The notebook in ``path``; ValueError with a reason a person can act on."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise ValueError(f"cannot be opened ({error.strerror})") from error
    if not raw.strip():
        raise ValueError("is empty (0 bytes)" if not raw else f"is empty ({len(raw)} bytes of blank space)")
    if path.suffix.lower() == ".ipynb":
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise ValueError("is not text (not UTF-8): not a notebook saved by Jupyter or Colab") from error
        except json.JSONDecodeError as error:
            raise ValueError(f"is not JSON (line {error.lineno}, column {error.colno}: {error.msg}), "
                             "so not a notebook; was it renamed from another kind of file?") from error
        if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
            raise ValueError("is JSON but not a notebook: it has no list of cells")
        try:
            notebook = nbformat.reads(raw.decode("utf-8"), as_version=4)
        except Exception as error:  # nbformat's own validation errors vary
            raise ValueError(f"is not a valid notebook ({type(error).__name__}: {_first_line(error)})") from error
    else:
        try:
            notebook = jupytext.reads(raw.decode("utf-8"), fmt="md:myst")
        except Exception as error:
            raise ValueError(f"cannot be read as a MyST Markdown notebook ({type(error).__name__})") from error
    if not any(cell.get("cell_type") == "code" for cell in notebook.cells):
        raise ValueError("holds no code cells")
    return notebook


def run_notebook(path: Path, time_limit: float, sandboxed: bool = False,
                 releases: dict[str, set[str]] | None = None, limits: Limits = LIMITS) -> Run:
    """Execute a notebook from a clean start within ``time_limit`` wall-clock seconds in all.

    ``sandboxed``: the kernel runs under bubblewrap (``sandbox_argv``), seeing only the system, Python
    and the course's package, read-only. With ``releases`` (a student's notebook: its check cells as
    handed out, by label) every check cell is replaced by ``recording_cell``, so no expected figure
    ever enters the student's kernel and a check patched or edited records the student's own answer.
    """
    outcome = Run()
    try:
        notebook = read_notebook(path)
    except ValueError as error:
        outcome.unreadable = str(error)
        return outcome
    # A problem's check cell is the last cell that checks or submits its label: a student's own
    # submit(...) in an answer cell above it stays, and so does the answer that cell sets.
    last = {}
    for index, cell in enumerate(notebook.cells):
        found = LABEL.search(cell.source) if cell.cell_type == "code" and releases is not None else None
        if found:
            last[found.group(1)] = index
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            found = LABEL.search(cell.source) if releases is not None else None
            if found and last.get(found.group(1)) == index:
                label = found.group(1)
                if _squeezed(cell.source) not in releases.get(label, set()) and label not in outcome.changed:
                    outcome.changed.append(label)
                cell.source = recording_cell(label)
    uid = UIDS.take() if sandboxed else None
    group = _kernel_group(outcome, limits) if sandboxed else None
    try:
        timed_out = _execute(notebook, outcome, time_limit, sandboxed, limits, uid, group)
    finally:
        if group is not None:
            _tell_group(outcome, group, limits)
            group.remove()      # and every process still in it killed, before its uid serves another kernel
        UIDS.give(uid)
    outcome.executed = notebook
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    outcome.cells_run = sum(cell.get("execution_count") is not None for cell in code_cells)
    for number, cell in enumerate(code_cells, start=1):
        for output in cell.get("outputs", []):
            # The interrupt that ends a cell past its time is already told as the timeout.
            if output.get("output_type") == "error" and not (timed_out and output.get("ename") == "KeyboardInterrupt"):
                outcome.problems.append(f"code cell {number} raised {output.get('ename')}")
            shown = output.get("data", {}).get(variants.RECORD_MIME)
            if isinstance(shown, dict) and isinstance(shown.get("student_id"), str):
                if shown["student_id"] not in outcome.shown_ids:
                    outcome.shown_ids.append(shown["student_id"])
            record = output.get("data", {}).get(RECORD_MIME)
            if isinstance(record, dict) and isinstance(record.get("label"), str):
                outcome.records[record["label"]] = record  # a check run twice: the last one counts
    return outcome


class _BoundedClient(NotebookClient):
    """nbclient's client, keeping at most ``limits.cell_output`` bytes of output a cell and
    ``limits.notebook_output`` a notebook: the rest is dropped as it comes, so the grader's memory stays small."""

    def __init__(self, *args, limits: Limits = LIMITS, **kwargs):
        super().__init__(*args, **kwargs)
        self.limits, self.kept, self.total, self.cut = limits, {}, 0, []

    def output(self, outs, msg, display_id, cell_index):
        size = len(json.dumps(msg.get("content", {}), default=str))
        kept = self.kept.get(cell_index, 0)
        data = msg.get("content", {}).get("data") or {}
        if (RECORD_MIME in data or variants.RECORD_MIME in data) and size <= 64 * 1024:
            return super().output(outs, msg, display_id, cell_index)   # an answer's record is always kept
        if CUT_IN_KERNEL in str(msg.get("content", {}).get("text", "")) and cell_index not in self.cut:
            self.cut.append(cell_index)
        if kept + size > self.limits.cell_output or self.total + size > self.limits.notebook_output:
            if cell_index not in self.cut:
                self.cut.append(cell_index)
            return None
        self.kept[cell_index] = kept + size
        self.total += size
        return super().output(outs, msg, display_id, cell_index)


def _kernel_group(outcome: Run, limits: Limits) -> cgroups.KernelGroup | None:
    """The kernel's own cgroup, or None where none can be made (the report says so once, for every notebook)."""
    try:
        return cgroups.kernel_group(limits.notebook_memory, limits.processes)
    except OSError as error:
        outcome.problems.append(f"not bounded together: its cgroup could not be made ({error.strerror}); "
                                "each process's own limits held")
        return None


def _tell_group(outcome: Run, group: cgroups.KernelGroup, limits: Limits) -> None:
    """The notes on a notebook that reached its cgroup's bounds: the memory of all its processes, their number."""
    killed, refused = group.events()
    if killed:
        said = (f"its processes together passed the notebook's {_size(limits.notebook_memory)} of memory, "
                f"and the system ended {killed} of them")
        died = [k for k, problem in enumerate(outcome.problems) if problem.startswith("stopped: the kernel died")]
        if died:
            outcome.problems[died[0]] = f"stopped: the kernel died: {said}"
        else:
            outcome.problems.append(f"memory: {said}")
    if refused:
        outcome.problems.append(f"processes: it tried to run more than its {limits.processes} processes and "
                                f"threads at once; {refused} were refused")


def _execute(notebook, outcome: Run, time_limit: float, sandboxed: bool, limits: Limits, uid: int | None,
             group: cgroups.KernelGroup | None = None) -> bool:
    """Run ``notebook`` in place (in the sandbox if ``sandboxed``, in ``group`` if one); True if it ran past
    ``time_limit``."""
    with tempfile.TemporaryDirectory(prefix="grade-") as scratch_name:
        scratch = Path(scratch_name)
        enter = group.enter_argv() if group is not None else ()
        options = {"km": _sandboxed_manager(scratch, limits, uid, enter)} if sandboxed else {}
        started = time.monotonic()
        # The clock starts once the kernel is up, so a busy machine's slow start costs no student time.
        deadline = [started + time_limit]

        def start_clock(**_):
            deadline[0] = time.monotonic() + time_limit

        client = _BoundedClient(notebook, timeout_func=lambda cell: max(0.05, deadline[0] - time.monotonic()),
                                on_notebook_start=start_clock, limits=limits,
                                kernel_name="grading" if sandboxed else "python3", allow_errors=True,
                                interrupt_on_timeout=False, startup_timeout=60, **options,
                                resources={"metadata": {"path": str(scratch)}})
        client.owns_km = True  # so nbclient ends the kernel it was handed, a loop and all
        timed_out = False
        try:
            extra = {"env": {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}} if sandboxed else {}
            # The kernel's own start-up notes and warnings are noise here.
            client.execute(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **extra)
        except CellTimeoutError:
            timed_out = True
            outcome.problems.append(f"stopped: the notebook ran past its {time_limit:g} s")
        except DeadKernelError:
            outcome.problems.append("stopped: the kernel died (the code exited, or ran past the sandbox's limits "
                                    "on memory or processes)")
        except Exception as error:
            outcome.problems.append(f"stopped: {type(error).__name__}: {_first_line(error)}")
        if sandboxed:
            options["km"].close_contexts()
        outcome.seconds = time.monotonic() - started
        if client.cut:
            outcome.problems.append(f"output cut: code cell{'s' if len(client.cut) > 1 else ''} "
                                    f"{', '.join(str(_code_number(notebook, index)) for index in client.cut)} "
                                    f"showed more than the {_size(limits.cell_output)} a cell "
                                    f"(or {_size(limits.notebook_output)} a notebook) the grader keeps")
        return timed_out


def _code_number(notebook, index: int) -> int:
    return sum(cell.cell_type == "code" for cell in notebook.cells[: index + 1])


def _size(count: int) -> str:
    if count >= 1024 * MIB and count % (256 * MIB) == 0:
        return f"{count / (1024 * MIB):g} GiB"
    return f"{count / MIB:g} MiB" if count >= MIB else f"{count / 1024:g} KiB"


def _first_line(error) -> str:
    lines = str(error).strip().splitlines()
    return lines[0][:120] if lines else ""


def run_many(paths: list[Path], time_limit: float, jobs: int, sandboxed: bool = False, releases=None,
             limits: Limits = LIMITS) -> list[Run]:
    """Run notebooks ``jobs`` at a time (each in its own kernel), results in the order given.

    ``releases``, one per path, as ``run_notebook`` takes it (None for the solutions)."""
    if not paths:
        return []
    releases = releases or [None] * len(paths)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda pair: run_notebook(pair[0], time_limit, sandboxed, pair[1], limits),
                              zip(paths, releases)))
