"""Grade a term's problem notebooks: run each in a sandbox, mark it by a rubric, write what the LMS imports.

    python scripts/grade.py SUBMISSIONS [--rubric grading/rubric.yml] [--roster ROSTER.csv]
                            [--times TIMES.csv] [--out grades] [--jobs N]

SUBMISSIONS is a folder of notebooks (.ipynb, or .md as jupytext writes them) as they come:

    SUBMISSIONS/alice/lesson-1-part-1.ipynb                        a folder for each student
    SUBMISSIONS/bob-lesson-1-part-1.ipynb                          the student's name, then the notebook's
    SUBMISSIONS/smithjohn_LATE_1234_5678_lesson-1-part-1.ipynb     Canvas's "Download Submissions"
    SUBMISSIONS/John Smith_4321_assignsubmission_file_/Lesson_1_Part_1.ipynb     Moodle's "Download all"

A file counts as the notebook whose name (those in solutions/) it contains, whatever the case
and the spaces, dots and underscores. The rubric (YAML) names the notebooks graded and each
problem's points, the share a "close" answer earns, the deadline, the grace and the late
penalty, and the wall-clock seconds each notebook may run, all its cells together. The roster
(a CSV: the LMS's own gradebook export, Canvas's or Moodle's, or one with a ``student`` column)
lists everyone, so a student who handed in nothing gets a row of zeros. A submission's time
comes from the LMS where it says: the times CSV (Moodle's grading worksheet, or ``student,
submitted``), or Canvas's ``LATE`` in a file name; otherwise it is taken as on time (a file's date says
when it was unzipped or copied, not when it was handed in).

Each notebook runs from a clean start, its saved outputs dropped, in a sandbox built with
bubblewrap (Debian's ``bubblewrap``): its own PID, mount, network and IPC namespaces, no
capabilities, the system, Python and the course's package read-only, a small home folder of
its own the only place it can write, no network, and nothing else of the machine (no
repository, solutions, roster, rubric, grade files or other submissions; no grader's process in
/proc). It dies with the grader, and every process it started ends with its kernel. Where no
sandbox can start, the grader says why and refuses to grade unless given ``--unsafe``.
Every check cell is replaced by one that only records the answer (as the graded release's
``submit`` does), so no expected figure enters a student's kernel; the answers are marked
against the solutions, run first and held only in the grader's process. A
check cell edited or patched therefore changes no mark (the notes say it was changed).

``--out`` is a folder (made if missing) that receives:

- ``grades.csv``: a row for each student, a column for each problem's points, total, late, notes;
- ``canvas.csv``: Canvas's gradebook import (Student, ID, SIS User ID, SIS Login ID, Section, the assignment);
- ``moodle.csv``: Moodle's grade import (identifiers, the grade, a feedback comment);
- ``feedback/STUDENT.txt``: what each student is told, problem by problem, for the notebook as handed in:
  right or not and the slip an answer looks like, never the expected figure; a late penalty explained;
- ``feedback.zip``: the same files, each named as Canvas names a submission's files
  (``lastfirst_userid_submissionid_feedback.txt``) where the roster and the file names give Canvas's IDs;

Each run first removes the files and folder above that an earlier run left in ``--out``.
- ``report.txt``: every file that was not graded as handed in, and why.

The notebooks run students' code: the sandbox keeps it from the machine, but grade in an account
or a container that holds nothing else all the same.
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import jupytext
import nbformat
import yaml
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

import servingmath
from servingmath import variants
from servingmath.checks import RECORD_MIME, SLIPS, OFF_BY_ONE, SIGN, _matching, _show, check

sys.path.insert(0, str(Path(__file__).resolve().parent))
import variant_answers  # noqa: E402  (beside this script: the expected answer of each student's variant)

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
RUBRIC = ROOT / "grading" / "rubric.yml"
SUFFIXES = (".ipynb", ".md")
RUBRIC_KEYS = {"assignment", "deadline", "grace_minutes", "late_penalty", "close_credit", "time_limit", "notebooks",
               "timezone"}


# -- the rubric ----------------------------------------------------------------------
@dataclass
class Rubric:
    assignment: str = "Coursework"
    deadline: dt.datetime | None = None
    grace_minutes: float = 0.0
    late_penalty: float = 0.0     # share of a late notebook's points taken off
    close_credit: float = 0.0     # share of a problem's points a "close" answer earns
    time_limit: float = 60.0      # wall-clock seconds a notebook may run, all its cells together
    timezone: str | None = None   # the zone the LMS writes times in where they name none (Moodle's)
    notebooks: dict[str, dict[str, float]] = field(default_factory=dict)  # notebook -> {label: points}

    def points(self, name: str, label: str) -> float:
        return float(self.notebooks.get(name, {}).get(label, 1))


def load_rubric(path: Path | None, names: list[str]) -> Rubric:
    """The rubric in ``path`` (every notebook, one point a problem, if None); ValueError names what is wrong."""
    if path is None:
        return Rubric(notebooks={name: {} for name in names})
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as error:
        raise ValueError(f"rubric {path} cannot be read: {error}") from error
    if not isinstance(data, dict):
        raise ValueError(f"rubric {path} must be a mapping of settings, got {data!r}")
    unknown = sorted(set(data) - RUBRIC_KEYS)
    if unknown:
        raise ValueError(f"rubric {path}: unknown settings {unknown}; known: {sorted(RUBRIC_KEYS)}")
    rubric = Rubric(assignment=str(data.get("assignment", "Coursework")))
    for key, low, high in (("grace_minutes", 0, math.inf), ("late_penalty", 0, 1), ("close_credit", 0, 1),
                           ("time_limit", 1e-3, math.inf)):
        if key in data:
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
                raise ValueError(f"rubric {path}: {key} must be a number from {low} to {high}, got {value!r}")
            setattr(rubric, key, float(value))
    if data.get("timezone") is not None:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
        try:
            ZoneInfo(str(data["timezone"]))
        except (ZoneInfoNotFoundError, ValueError) as error:
            raise ValueError(f"rubric {path}: timezone must be an IANA zone such as Europe/London, "
                             f"got {data['timezone']!r}") from error
        rubric.timezone = str(data["timezone"])
    if data.get("deadline") is not None:
        rubric.deadline = _when(data["deadline"], f"rubric {path}: deadline", rubric.timezone)
    notebooks = data.get("notebooks") or {name: {} for name in names}
    if not isinstance(notebooks, dict):
        raise ValueError(f"rubric {path}: notebooks must map each notebook to its problems' points, got {notebooks!r}")
    for name, weights in notebooks.items():
        if name not in names:
            raise ValueError(f"rubric {path}: notebook {name!r} is not among the solutions {names}")
        weights = weights or {}
        if not isinstance(weights, dict):
            raise ValueError(f"rubric {path}: {name} must map problem labels to points, got {weights!r}")
        for label, points in weights.items():
            if isinstance(points, bool) or not isinstance(points, (int, float)) or points < 0:
                raise ValueError(f"rubric {path}: {name} {label} must be points of 0 or more, got {points!r}")
        rubric.notebooks[name] = {str(label): float(points) for label, points in weights.items()}
    return rubric


def _when(value, what: str, zone: str | None = None) -> dt.datetime:
    """A date and time as the rubric writes it; one naming no zone is in ``zone`` (UTC if None)."""
    if isinstance(value, dt.datetime):
        moment = value
    else:
        try:
            from dateutil import parser as dateparser
            moment = dateparser.parse(str(value))
        except (ValueError, OverflowError) as error:
            raise ValueError(f"{what} must be a date and time, got {value!r}") from error
    if moment.tzinfo:
        return moment
    from zoneinfo import ZoneInfo
    return moment.replace(tzinfo=ZoneInfo(zone) if zone else dt.timezone.utc)


# -- the sandbox ---------------------------------------------------------------------
# Each student's kernel runs under bubblewrap (Debian's ``bubblewrap``): its own PID, mount, network,
# IPC and UTS namespaces, as an unprivileged user (a uid of its own when the grader is root, so no file
# of the machine is its own; uid 65534 in a user namespace otherwise), with no capability, the system's
# programs, Python, its packages and the course's package read-only, the few files of /etc Python reads,
# and nothing else of the machine: no repository, no solutions, no roster or rubric, no other
# submission, no grader's /proc, no /etc/shadow or host keys. Its writable places are small tmpfs
# (its home, /tmp, /dev/shm) and the folder of its kernel's sockets, which the grader takes back once
# the kernel is up (as root). Limits on its processes, memory, file sizes and open files hold inside.
# With no network the kernel talks to the grader through Unix sockets (ZeroMQ's ipc transport). It dies
# with the grader, and every process it started dies with it, since its PID namespace ends with it.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64")
# What of /etc Python, numpy and matplotlib read: the loader's cache, the time zone, fonts, MIME types.
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "alternatives", "fonts",
             "mime.types", "nsswitch.conf", "host.conf")
HOME = "/home/student"
SANDBOX_UIDS = range(61001, 61065)   # one for each kernel running at once, where the grader is root
NOBODY = 65534
MIB = 2 ** 20


@dataclass(frozen=True)
class Limits:
    """What one student's notebook may use: defaults a laptop grading on all its processors survives."""

    processes: int = 128              # processes and threads of the sandbox's user
    memory: int = 4096 * MIB          # address space of each process
    file_size: int = 64 * MIB         # the largest file it may write
    open_files: int = 256
    home: int = 128 * MIB             # each tmpfs: the home folder, /tmp, /dev/shm
    tmp: int = 64 * MIB
    cell_output: int = 256 * 1024     # text and images a cell may show; the rest is dropped, the notes say so
    notebook_output: int = 2 * MIB    # all its cells together


LIMITS = Limits()


class NoSandbox(RuntimeError):
    """No sandbox can start here; the message says why, in one line."""


def kernel_python() -> str:
    """The course's Python as the sandbox sees it: its virtual environment's own path, links resolved
    (a link to the environment would not be there), so that Python still finds the environment's packages."""
    return str(Path(sys.prefix).resolve() / "bin" / Path(sys.executable).name)


def package_dir() -> Path:
    return Path(servingmath.__file__).resolve().parent


def _limits_argv(limits: Limits) -> list[str]:
    """util-linux's prlimit, run inside the sandbox (so the count of processes is the sandbox's own)."""
    return ["prlimit", f"--nproc={limits.processes}", f"--as={limits.memory}", f"--fsize={limits.file_size}",
            f"--nofile={limits.open_files}", "--core=0", "--"]


def sandbox_argv(sockets: Path, env: dict[str, str], limits: Limits = LIMITS, uid: int | None = None,
                 identity: Path | None = None) -> list[str]:
    """The bwrap command line that starts a kernel (``{connection_file}`` left for jupyter_client).

    ``uid``: the grader is root, and the kernel runs as this uid of the machine (``setpriv`` drops to
    it inside, every capability with it); else bwrap makes a user namespace and the kernel is uid 65534
    there. ``identity``: a folder holding the ``passwd`` and ``group`` files the sandbox sees."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise NoSandbox("bubblewrap is not installed (apt-get install bubblewrap)")
    argv = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--hostname", "sandbox"]
    if uid is None:
        argv += ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY), "--cap-drop", "ALL"]
    for folder in SYSTEM_DIRS:
        argv += ["--ro-bind-try", folder, folder]
    argv += ["--perms", "0755", "--dir", "/etc"]
    for name in ETC_FILES:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    if identity is not None:
        argv += ["--ro-bind", str(identity / "passwd"), "/etc/passwd", "--ro-bind", str(identity / "group"),
                 "/etc/group"]
    # An empty /tmp first: a course cloned under /tmp (as CI clones it) is bound over it below, not hidden by it.
    argv += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(limits.tmp), "--tmpfs", "/dev/shm",
             "--perms", "1777", "--size", str(limits.tmp), "--tmpfs", "/tmp"]
    python = sorted({Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(),
                     Path(os.path.realpath(sys.executable)).parent.parent})
    package = package_dir()
    # The folders above each bound one, made here open to read (bwrap would make them its user's alone).
    made = {"/", "/tmp", "/dev", "/proc", *SYSTEM_DIRS}
    for folder in (*python, package, sockets):
        for above in reversed(Path(folder).parents):
            if str(above) not in made:
                made.add(str(above))
                argv += ["--perms", "0755", "--dir", str(above)]
    for folder in python:
        argv += ["--ro-bind", str(folder), str(folder)]
    argv += ["--ro-bind", str(package), str(package),
             "--perms", "1777", "--size", str(limits.home), "--tmpfs", HOME,
             "--bind", str(sockets), str(sockets), "--chdir", HOME, "--clearenv"]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    argv.append("--")
    if uid is not None:
        argv += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs",
                 "--bounding-set=-all", "--inh-caps=-all", "--"]
    return argv + _limits_argv(limits) + [kernel_python(), "-m", "ipykernel_launcher", "-f", "{connection_file}"]


def kernel_environment() -> dict[str, str]:
    """Only what a kernel needs: the course's package on its path, no user's IPython or Jupyter settings."""
    return {
        "PATH": os.pathsep.join([str(Path(kernel_python()).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": HOME, "IPYTHONDIR": f"{HOME}/.ipython", "JUPYTER_CONFIG_DIR": f"{HOME}/.jupyter",
        "PYTHONPATH": str(package_dir().parent), "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg", "MPLCONFIGDIR": f"{HOME}/.matplotlib", "LANG": "C.UTF-8", "TMPDIR": "/tmp",
        # One thread each for the maths libraries: their pools reserve address space a thread.
        "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
    }


def as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def kernel_spec(folder: Path, limits: Limits = LIMITS, uid: int | None = None) -> Path:
    """A kernelspec in ``folder/kernels/grading`` that starts a sandboxed kernel; its sockets go in ``folder``.

    With ``uid`` (the grader is root), ``folder`` is handed to that uid until the kernel is up."""
    spec = folder / "kernels" / "grading"
    spec.mkdir(parents=True)
    identity = folder / "identity"
    identity.mkdir()
    shown = uid if uid is not None else NOBODY
    (identity / "passwd").write_text(f"student:x:{shown}:{shown}:student:{HOME}:/bin/sh\n")
    (identity / "group").write_text(f"student:x:{shown}:\n")
    (spec / "kernel.json").write_text(json.dumps({
        "argv": sandbox_argv(folder, kernel_environment(), limits, uid, identity),
        "display_name": "grading", "language": "python"}))
    if uid is not None:
        os.chown(folder, uid, uid)
        os.chmod(folder, 0o700)
    return folder / "kernels"


class _Uids:
    """The uids kernels run as where the grader is root: one each for the kernels running at once."""

    def __init__(self):
        import queue
        self.free = queue.Queue()
        for uid in SANDBOX_UIDS:
            self.free.put(uid)

    def take(self) -> int | None:
        return self.free.get() if as_root() else None

    def give(self, uid: int | None) -> None:
        if uid is not None:
            self.free.put(uid)


UIDS = _Uids()


def _sandboxed_manager(scratch: Path, limits: Limits, uid: int | None):
    """jupyter_client's kernel manager, starting the sandbox; the connection file readable by ``uid``."""
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpecManager

    class SandboxedKernel(AsyncKernelManager):
        def client(self, **kwargs):
            # At most 32 messages wait in the grader, none over the notebook's bound: a flood is dropped
            # in ZeroMQ (a larger message closes the connection), never held in the grader's memory.
            import zmq.asyncio
            context = zmq.asyncio.Context()
            context.setsockopt(zmq.RCVHWM, 32)
            context.setsockopt(zmq.MAXMSGSIZE, limits.notebook_output + 64 * 1024)
            return super().client(context=context, **kwargs)

        async def _async_launch_kernel(self, kernel_cmd, **kw):
            if uid is not None:
                os.chown(self.connection_file, uid, uid)
            return await super()._async_launch_kernel(kernel_cmd, **kw)

    kernels = kernel_spec(scratch, limits, uid)
    return SandboxedKernel(kernel_name="grading", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]),
                           transport="ipc", ip=str(scratch / "ipc"), connection_file=str(scratch / "connection.json"))


def take_back(scratch: Path, uid: int | None) -> None:
    """Once the kernel is up, its socket folder is the grader's again: it writes nothing more there."""
    if uid is not None:
        os.chown(scratch, 0, 0)
        os.chmod(scratch, 0o755)


@lru_cache(maxsize=1)
def sandbox_problem() -> str:
    """'' where the sandbox starts here, else why not, in one line."""
    if sys.platform != "linux":
        return f"bubblewrap needs Linux, this is {sys.platform}"
    with tempfile.TemporaryDirectory(prefix="grade-probe-") as probe:
        uid = SANDBOX_UIDS[-1] if as_root() else None
        try:
            argv = sandbox_argv(Path(probe), kernel_environment(), uid=uid)
        except NoSandbox as error:
            return str(error)
        argv = argv[: len(argv) - 4] + ["-c", "import servingmath, os; print(os.getpid(), os.getuid())"]
        try:
            trial = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"bubblewrap cannot start ({error})"
        if trial.returncode != 0:
            last = (trial.stderr.strip().splitlines() or ["no message"])[-1]
            return f"bubblewrap cannot start here ({last}); in a container, allow user namespaces or run it privileged"
        pid, _, user = trial.stdout.strip().partition(" ")
        if pid not in ("1", "2", "3"):
            return "bubblewrap started without its own PID namespace"
        if user == "0":
            return "the sandbox's user is root"
    return ""


# -- running a notebook --------------------------------------------------------------
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
        raise ValueError("is empty (0 bytes of content)")
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
            raise ValueError(f"is not a valid notebook ({type(error).__name__})") from error
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
    try:
        timed_out = _execute(notebook, outcome, time_limit, sandboxed, limits, uid)
    finally:
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
        if kept + size > self.limits.cell_output or self.total + size > self.limits.notebook_output:
            if cell_index not in self.cut:
                self.cut.append(cell_index)
            return None
        self.kept[cell_index] = kept + size
        self.total += size
        return super().output(outs, msg, display_id, cell_index)


def _execute(notebook, outcome: Run, time_limit: float, sandboxed: bool, limits: Limits, uid: int | None) -> bool:
    """Run ``notebook`` in place (in the sandbox if ``sandboxed``); True if it ran past ``time_limit``."""
    with tempfile.TemporaryDirectory(prefix="grade-") as scratch_name:
        scratch = Path(scratch_name)
        options = {"km": _sandboxed_manager(scratch, limits, uid)} if sandboxed else {}
        started = time.monotonic()
        # The clock starts once the kernel is up, so a busy machine's slow start costs no student time.
        deadline = [started + time_limit]

        def start_clock(**_):
            take_back(scratch, uid)
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


# -- the reference -------------------------------------------------------------------
def notebook_names(solutions: Path = SOLUTIONS) -> list[str]:
    return [path.stem for path in sorted(solutions.glob("*.md"))]


def reference(names: list[str], solutions: Path = SOLUTIONS, time_limit: float = 300,
              jobs: int = 1) -> dict[str, dict[str, dict]]:
    """Each notebook's problems, in order, from running its solution: label -> record.

    Raises RuntimeError if a solution fails to run or any of its checks is not right,
    since grading against it would be wrong.
    """
    problems = {}
    for name, ran in zip(names, run_many([solutions / f"{name}.md" for name in names], time_limit, jobs)):
        not_right = [label for label, record in ran.records.items() if record.get("status") != "right"]
        if ran.unreadable or ran.problems or not_right or not ran.records:
            raise RuntimeError(f"the solution {name}.md cannot be the reference: "
                               f"{ran.unreadable or '; '.join(ran.problems) or 'no checks'}; not right: {not_right}")
        problems[name] = ran.records
    return problems


DEFAULT_REL = 0.02


def tolerance(expected, rel: float) -> float:
    """The course's rule for a number: a count (a whole number asked exactly) exactly; any other figure
    within the problem's own tolerance, 2 % where it sets none, so an answer rounded to three significant
    figures is right. A figure a problem asks exactly but that is not whole (a ratio of two counts, for
    one student's numbers) is held to 2 %."""
    if isinstance(expected, (int, float)) and not isinstance(expected, bool) and rel == 0 \
            and not float(expected).is_integer():
        return DEFAULT_REL
    return rel


def mark(record: dict | None, expected: dict):
    """The student's recorded answer, checked again against the reference's figure by the course's rule
    (``tolerance``): a Result."""
    answer = None if record is None else record.get("answer")
    if isinstance(answer, dict) and set(answer) == {"type", "repr"}:
        # What the kernel could not record as a number or a word: told as what it was there.
        answer = type(str(answer["type"]), (), {"__repr__": lambda self, shown=str(answer["repr"]): shown})()
    slips = expected.get("slips")
    return check(answer, expected["expected"], rel=tolerance(expected["expected"], expected["rel"]),
                 label=expected["label"],
                 units=expected["units"], choices=expected["choices"],
                 slips=None if not slips else {name: (entry[0], entry[1]) for name, entry in slips.items()})


# -- who handed in what --------------------------------------------------------------
def _normal(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


CANVAS = re.compile(r"^(?P<who>[a-z0-9]+?)(?P<late>_late)?_(?P<uid>\d+)_(?P<sid>\d+)_(?P<file>.+)$", re.I)
MOODLE = re.compile(r"^(?P<who>.+?)_(?P<pid>\d+)_assignsubmission_[a-z]+_?(?P<file>.*)$", re.I)


@dataclass
class Submission:
    path: Path
    student: str                       # as the file names them: a folder, a name, Canvas's lastfirst
    notebook: str
    lms_id: str | None = None          # Canvas's user ID from its file names
    lms_late: bool = False             # Canvas wrote LATE into the file name
    moodle_participant: str | None = None   # Moodle's participant number from its folder names
    canvas_submission: str | None = None    # Canvas's submission ID from its file names
    submitted: dt.datetime | None = None
    time_from: str = ""                # where the time came from


def identify(path: Path, submissions: Path, names: list[str]) -> tuple[str, str] | None:
    """(student, notebook name) for a submitted file, or None if it names no notebook or no student."""
    found = _identify(path, submissions, names)
    return None if isinstance(found, str) else (found.student, found.notebook)


def _identify(path: Path, submissions: Path, names: list[str]) -> Submission | str:
    """The submission a file is, or the reason it is none."""
    parts = path.relative_to(submissions).parts
    first = parts[0] if len(parts) > 1 else None
    file_part, who, lms_id, late = path.stem, None, None, False
    canvas = CANVAS.match(path.name) if first is None else None
    moodle = MOODLE.match(first or path.name)
    if canvas:
        who, lms_id, late, file_part = canvas["who"], canvas["uid"], bool(canvas["late"]), Path(canvas["file"]).stem
    elif moodle:
        who = moodle["who"]
        file_part = path.stem if first else Path(moodle["file"]).stem
    elif first is not None:
        who = first
    stem = _normal(file_part)
    for name in sorted(names, key=len, reverse=True):
        match = re.search(rf"(?:^|-){re.escape(name)}(?:-|$)", stem)
        if not match:
            continue
        if who is None:
            # Colab names a copy "Copy of ...": those words name no student.
            who = re.sub(r"(?:^|-)copy-of(?=-|$)", "", stem[:match.start()]).strip("-")
            who = who or stem[match.end():].strip("-")
            who = re.sub(r"^\d+$", "", who)  # "lesson-1-part-1 (1)": a copy number, not a student
        if not who:
            return "its name says which notebook it is but not whose (put the student's name first, or a folder each)"
        return Submission(path, _normal(who) if not canvas else who.lower(), name, lms_id, late,
                          moodle_participant=moodle["pid"] if moodle and not canvas else None,
                          canvas_submission=canvas["sid"] if canvas else None)
    named = notebook_in_metadata(path)
    if named in names:   # renamed, but the graded release's metadata says which notebook it is
        if who is None and first is None:
            return "its metadata says which notebook it is but its name not whose (put the student's name first)"
        return Submission(path, _normal(who or "") if not canvas else who.lower(), named, lms_id, late,
                          moodle_participant=moodle["pid"] if moodle and not canvas else None,
                          canvas_submission=canvas["sid"] if canvas else None)
    return f"its name matches none of the notebooks graded ({', '.join(names)})"


def notebook_in_metadata(path: Path) -> str | None:
    """The notebook a graded release's metadata names (``servingmath: notebook:``), or None."""
    try:
        raw = path.read_text(encoding="utf-8")
        if path.suffix.lower() == ".ipynb":
            metadata = json.loads(raw).get("metadata", {})
        else:
            front = re.match(r"^---\n(.*?)\n---\n", raw, flags=re.S)
            metadata = yaml.safe_load(front.group(1)) if front else {}
        named = (metadata or {}).get("servingmath", {}).get("notebook")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError, yaml.YAMLError):
        return None
    return named if isinstance(named, str) else None


def find_submissions(submissions: Path, names: list[str]) -> tuple[list[Submission], list[tuple[Path, str]]]:
    """Every submitted notebook file, and every other file with the reason it is not one."""
    found, bad = [], []
    for path in sorted(submissions.rglob("*")):
        relative = path.relative_to(submissions)
        if not path.is_file():
            continue
        if any(part.startswith(".") or part == "__MACOSX" for part in relative.parts):
            bad.append((path, "is a hidden or system file (a checkpoint, a macOS resource fork), skipped"))
            continue
        if path.suffix.lower() not in SUFFIXES:
            bad.append((path, f"is a {path.suffix or 'file without an extension'}, not a notebook (.ipynb or .md)"))
            continue
        submission = _identify(path, submissions, names)
        if isinstance(submission, str):
            bad.append((path, submission))
        else:
            found.append(submission)
    return found, bad


# -- the roster and the times --------------------------------------------------------
@dataclass
class Student:
    student: str                 # the key the grade files use
    name: str = ""
    canvas_id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""
    email: str = ""
    id_number: str = ""
    student_id: str = ""         # a roster's own "student id" column, where it has one
    aliases: set[str] = field(default_factory=set)

    username: str = ""           # a login or JupyterHub username column, where the roster has one
    listed: str = ""             # the name as Canvas's "Student" column writes it ("Châtelet, Émilie du")

    def identifiers(self) -> list[tuple[str, str]]:
        """Every ID of the student's the roster gives, (what, as written), the one a graded notebook asks
        for first: the school's (SIS) ID, Moodle's ID number, a student ID, the login, the email. A student
        may enter any of them; their numbers are that ID's."""
        found = [("SIS User ID", self.sis_user_id), ("ID number", self.id_number), ("student ID", self.student_id),
                 ("SIS Login ID", self.sis_login_id), ("username", self.username), ("email address", self.email),
                 ("roster key", self.student)]
        seen, unique = set(), []
        for what, value in found:
            if value and value.strip().lower() not in seen:
                seen.add(value.strip().lower())
                unique.append((what, value.strip()))
        return unique

    @property
    def variant_id(self) -> str:
        """The ID a graded notebook asks for first (``identifiers``)."""
        return self.identifiers()[0][1]


def load_roster(path: Path) -> list[Student]:
    """Students from a Canvas or Moodle gradebook export, or any CSV with a ``student`` column."""
    with path.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise ValueError(f"roster {path} lists no students")
    columns = {name.strip().lower(): name for name in rows[0]}
    students = []
    for row in rows:
        value = {key: (row.get(original) or "").strip() for key, original in columns.items()}
        if "student" in value and "points possible" in value["student"].lower():
            continue  # Canvas's second row
        first, last = value.get("first name", ""), value.get("last name", "")
        name = value.get("name") or value.get("full name") or (f"{first} {last}".strip()) or value.get("student", "")
        listed = name if "," in name else ""
        if "," in name and not (first or last):  # Canvas: "Smith, John"
            last, first = (part.strip() for part in name.split(",", 1))
            name = f"{first} {last}"
        if _key(name) == "teststudent" and not value.get("sis user id"):
            continue  # Canvas's Test Student (Student View), not a student
        key = value.get("student") if "id" not in value else None
        key = key or value.get("sis login id") or value.get("username") or value.get("email address") or name
        if not key:
            raise ValueError(f"roster {path}: a row with no student, name or login: {row}")
        student = Student(student=_normal(key), name=name or key, canvas_id=value.get("id", ""),
                          sis_user_id=value.get("sis user id", ""), sis_login_id=value.get("sis login id", ""),
                          section=value.get("section", ""), email=value.get("email address") or value.get("email", ""),
                          id_number=value.get("id number", ""), student_id=value.get("student id", ""),
                          username=value.get("username") or value.get("login") or "", listed=listed)
        student.aliases = {alias for alias in (_key(key), _key(name), _key(last + first), _key(first + last),
                                               _key(student.sis_login_id), _key(student.email.split("@")[0]))
                           if alias}
        students.append(student)
    keys = [student.student for student in students]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise ValueError(f"roster {path}: these students appear twice: {twice}")
    return students


@dataclass
class Times:
    """Submission times from the LMS, by what identifies the student: Moodle's participant number,
    an email, an ID, a login; by full name only where no two students share it."""

    moments: dict[str, dt.datetime] = field(default_factory=dict)
    emails: dict[str, str] = field(default_factory=dict)    # participant number -> email, from the worksheet

    def of(self, *keys: str) -> dt.datetime | None:
        return next((self.moments[key] for key in keys if key and key in self.moments), None)


def load_times(path: Path, zone: str | None = None) -> Times:
    """Submission times from Moodle's grading worksheet, or a CSV with ``student`` (an ID or login) and
    ``submitted``. A time with no zone of its own is in ``zone`` (the rubric's ``timezone``, an IANA
    name such as Europe/London): Moodle writes times in the teacher's zone without saying which."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    with path.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    try:
        where = ZoneInfo(zone) if zone else None
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise ValueError(f"rubric timezone must be an IANA zone such as Europe/London, got {zone!r}") from error
    times, names = Times(), {}
    for row in rows:
        value = {key.strip().lower(): (text or "").strip() for key, text in row.items() if key}
        when = value.get("submitted") or value.get("last modified (submission)")
        if not when or when == "-":
            continue
        moment = _naive_when(when, f"times {path}")
        if moment.tzinfo is None:
            if where is None:
                raise ValueError(f"times {path}: {when!r} names no time zone; set the rubric's timezone to the "
                                 "zone the LMS shows times in (Moodle: the teacher's), such as Europe/London")
            moment = moment.replace(tzinfo=where)
        participant = re.sub(r"\D", "", value.get("identifier", ""))
        email = value.get("email address", "").lower()
        keys = [f"participant:{participant}" if participant else "", _key(email), _key(email.split("@")[0]),
                _key(value.get("id number", "")), _key(value.get("student", ""))]
        for key in filter(None, keys):
            times.moments[key] = moment
        if participant and email:
            times.emails[participant] = email
        if value.get("full name"):
            names.setdefault(_key(value["full name"]), []).append(moment)
    for name, moments in names.items():
        if len(moments) == 1:
            times.moments.setdefault(name, moments[0])
    return times


def _naive_when(value, what: str) -> dt.datetime:
    try:
        from dateutil import parser as dateparser
        return dateparser.parse(str(value))
    except (ValueError, OverflowError) as error:
        raise ValueError(f"{what}: {value!r} is not a date and time") from error


# -- grading -------------------------------------------------------------------------
@dataclass
class Graded:
    """One student's marks: points by (notebook, label), what each answer was told, notes."""

    student: Student
    points: dict[tuple[str, str], float] = field(default_factory=dict)
    feedback: dict[tuple[str, str], str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    late: list[str] = field(default_factory=list)
    handed_in: dict[str, str] = field(default_factory=dict)   # notebook -> the file graded
    blank: list[str] = field(default_factory=list)            # notebooks handed in with no problem answered
    late_notes: dict[str, str] = field(default_factory=dict)  # notebook -> how late, by whose clock
    canvas_submission: str = ""                               # Canvas's submission ID, for the feedback zip
    identities: dict[str, str] = field(default_factory=dict)  # notebook -> whose numbers it was marked by

    @property
    def total(self) -> float:
        return round(sum(self.points.values()), 4)


def columns(problems: dict[str, dict[str, dict]], rubric: Rubric) -> list[tuple[str, str]]:
    return [(name, label) for name, records in problems.items() if name in rubric.notebooks for label in records]


def possible(problems, rubric: Rubric) -> float:
    return round(sum(rubric.points(name, label) for name, label in columns(problems, rubric)), 4)


def grade(submissions: Path, problems: dict[str, dict[str, dict]], rubric: Rubric, roster: list[Student] | None = None,
          times: "Times | None" = None, jobs: int = 1, unsafe: bool = False):
    """Every student's marks, every file not graded as handed in with its reason, and whether sandboxed.

    Raises NoSandbox where bubblewrap cannot start, unless ``unsafe``."""
    problem = sandbox_problem()
    if problem and not unsafe:
        raise NoSandbox(f"no sandbox: {problem}; refusing to run students' code without one (--unsafe to run it anyway)")
    names = [name for name in problems if name in rubric.notebooks]
    found, bad = find_submissions(submissions, names)
    times = times or Times()
    students: dict[str, Student] = {student.student: student for student in roster or []}
    by_alias, shared = {}, set()
    for student in students.values():
        for alias in student.aliases:
            if alias in by_alias and by_alias[alias] is not student:
                shared.add(alias)     # two students share a name: it identifies neither
            by_alias[alias] = student
    for alias in shared:
        del by_alias[alias]
    by_canvas_id = {student.canvas_id: student for student in students.values() if student.canvas_id}
    chosen: dict[tuple[str, str], Submission] = {}
    others: dict[tuple[str, str], list[Submission]] = {}
    for submission in found:
        student = by_canvas_id.get(submission.lms_id or "")
        email = times.emails.get(submission.moodle_participant or "")
        if student is None and email:     # Moodle's folder gives the participant, the worksheet their email
            student = by_alias.get(_key(email)) or by_alias.get(_key(email.split("@")[0]))
        student = student or by_alias.get(_key(submission.student))
        if student is None:
            if roster is not None:
                why = ("shares a name with another student on the roster, and no Canvas ID or Moodle participant "
                       "number in the file or the times tells which (give Moodle's grading worksheet as --times)"
                       if _key(submission.student) in shared else
                       "is Canvas's Test Student (Student View), left out as no student"
                       if _key(submission.student) in ("studenttest", "teststudent") else "is not on the roster")
                bad.append((submission.path, f"names a student ({submission.student}) who {why}"))
                continue
            student = students.setdefault(submission.student, Student(submission.student, submission.student))
        moment = times.of(f"participant:{submission.moodle_participant}" if submission.moodle_participant else "",
                          _key(student.email), _key(student.email.split("@")[0]), _key(student.student),
                          _key(student.id_number), _key(student.sis_user_id), _key(student.sis_login_id),
                          _key(submission.student) if _key(submission.student) not in shared else "",
                          _key(student.name) if _key(student.name) not in shared else "")
        if moment is not None:
            submission.submitted, submission.time_from = moment, "the LMS's times"
        elif submission.lms_late:
            submission.time_from = "Canvas (LATE in the file name)"
        else:
            # A file's own date says when it was unzipped or copied, not when it was handed in.
            submission.time_from = "no time from the LMS: taken as on time"
        slot = (student.student, submission.notebook)
        others.setdefault(slot, []).append(submission)
    for slot, candidates in others.items():
        newest = max(candidates, key=lambda item: (item.submitted or dt.datetime.min.replace(tzinfo=dt.timezone.utc),
                                                   item.path.stat().st_mtime, str(item.path)))
        chosen[slot] = newest
        for older in candidates:
            if older is not newest:
                bad.append((older.path, f"a second copy of {slot[1]} from {slot[0]}; graded the later "
                                        f"{newest.path.relative_to(submissions)} instead"))

    slots = sorted(chosen)
    handed_out = release_cells(names)
    runs = dict(zip(slots, run_many([chosen[slot].path for slot in slots], rubric.time_limit, jobs, not problem,
                                    [handed_out.get(slot[1], {}) for slot in slots])))
    marks = {}
    for key in sorted(students):
        marks[key] = _mark_student(students[key], names, problems, rubric, chosen, runs, submissions, bad,
                                   rostered=roster is not None)
    return marks, bad, not problem


def whose_numbers(student: Student, name: str, ran: Run | None, rostered: bool) -> tuple[str, str, str]:
    """(the ID whose variant of ``name`` the student is marked against, a note or '', which ID it is).

    With a roster, any of the student's IDs there (``Student.identifiers``) the notebook showed, else the
    first of them; without one, the ID the notebook showed (there is nothing else to go by), else the key."""
    if name not in variants.TEMPLATES:
        return "", "", ""
    shown = list(ran.shown_ids) if ran else []
    if not rostered:
        own = shown[-1] if shown else student.student
        return own, f"{name}: no roster, so marked against the numbers of the ID the notebook shows ({own})", ""
    mine = {variants.student_key(value): (what, value) for what, value in student.identifiers()}
    used = [key for key in shown if key in mine]
    if used:
        what, value = mine[used[-1]]
        return used[-1], "", f"{name}: your numbers are those of your {what} on the roster ({value})"
    what, value = student.identifiers()[0]
    own = variants.student_key(value)
    listed = ", ".join(f"{kind} {text}" for kind, text in student.identifiers() if kind != "roster key")
    if shown:
        return own, (f"{name}: the notebook shows the numbers of ID {', '.join(shown)}, none of this student's IDs "
                     f"on the roster ({listed or own}); marked against the numbers of their {what} ({own})"), ""
    if ran is not None and not ran.unreadable:
        return own, (f"{name}: no student ID entered in the setup cell; marked against the numbers of their "
                     f"{what} ({own})"), ""
    return own, "", ""


def public_answers(problems: dict[str, dict[str, dict]]) -> list[str]:
    """A line for each graded notebook some of whose problems have no per-student numbers: their graded
    release asks them with the practice release's numbers, so their answers are public."""
    lines = []
    for name, records in problems.items():
        fixed = [label for label in records if not variant_answers.has_variant(name, label)]
        if fixed:
            lines.append(f"{name}: problems {', '.join(fixed)} have no per-student numbers (servingmath.variants); "
                         "every student is asked them with the practice release's numbers, whose answers are public")
    return lines


def expected_for(name: str, label: str, record: dict, student_id: str) -> dict:
    """The reference's record for a problem, its expected answer that of ``student_id``'s variant where it has one."""
    if not student_id or not variant_answers.has_variant(name, label):
        return record
    # The solution's own slips are figures of its fixed numbers: the variant's are the same slips, for its own.
    return {**record, "expected": variant_answers.expected(name, label, student_id),
            "slips": variant_answers.slips(name, label, student_id)}


def _mark_student(student, names, problems, rubric, chosen, runs, submissions, bad, rostered=True) -> Graded:
    graded = Graded(student)
    for name in names:
        slot = (student.student, name)
        expected_records = problems[name]
        if slot not in chosen:
            graded.notes.append(f"{name}: nothing handed in")
            for label in expected_records:
                graded.points[(name, label)] = 0.0
                graded.feedback[(name, label)] = "not handed in"
            continue
        submission, ran = chosen[slot], runs[slot]
        owner, whose_note, which = whose_numbers(student, name, ran, rostered)
        if whose_note:
            graded.notes.append(whose_note)
        if which:
            graded.identities[name] = which
        graded.handed_in[name] = str(submission.path.relative_to(submissions))
        if ran.unreadable:
            bad.append((submission.path, ran.unreadable))
            graded.notes.append(f"{name}: the file {ran.unreadable}; nothing could be marked")
        graded.canvas_submission = graded.canvas_submission or submission.canvas_submission or ""
        raised = [problem for problem in ran.problems if " raised " in problem]
        graded.notes += [f"{name}: {problem}" for problem in ran.problems if problem not in raised]
        if raised:
            cells = ", ".join(f"{problem.split(' raised ')[1]} in cell {problem.split()[2]}" for problem in raised)
            graded.notes.append(f"{name}: {len(raised)} code cell{'s' if len(raised) > 1 else ''} raised an error "
                                f"({cells}); the answers recorded around {'them' if len(raised) > 1 else 'it'} "
                                "were marked as given")
        late = _lateness(submission, rubric)
        if late:
            graded.late.append(name)
            graded.late_notes[name] = late
            graded.notes.append(f"{name}: late ({late})")
        keep = 1 - rubric.late_penalty if late else 1.0
        missing = []
        stopped = any(problem.startswith("stopped") for problem in ran.problems)
        for label, expected in expected_records.items():
            record = ran.records.get(label)
            result = mark(record, expected_for(name, label, expected, owner))
            share = 1.0 if result.status == "right" else rubric.close_credit if result.status == "close" else 0.0
            graded.points[(name, label)] = round(rubric.points(name, label) * share * keep, 4)
            graded.feedback[(name, label)] = (final_word(result) if record else
                                              "not reached: the notebook was stopped before this problem" if stopped
                                              else "no answer recorded")
            if record is None and not ran.unreadable:
                missing.append(label)
        answered = [label for label in expected_records
                    if (ran.records.get(label) or {}).get("answer") not in (None, "")]
        if not ran.unreadable and not answered and not stopped:
            graded.blank.append(name)
            graded.notes.append(f"{name}: handed in blank, no problem answered: was it the file meant?")
        if missing and not ran.problems:
            graded.notes.append(f"{name}: no check cell for {', '.join(missing)} (removed?), so no answer recorded")
        if ran.changed:
            graded.notes.append(f"{name}: check cell changed for {', '.join(ran.changed)}; the grader recorded the "
                                "answer itself and marked it against the solutions")
    return graded


def final_word(result) -> str:
    """What the feedback tells of one answer as handed in: right or not, the slip it looks like; never the
    expected value (a student's variant is their own, but its answer is for them to find)."""
    answer = result.answer
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        shown = _show(float(answer), result.units)
    elif isinstance(answer, str):
        shown = repr(answer)
    else:
        shown = None
    if result.status == "right":
        return f"✓ right: {shown}"
    if result.status == "unanswered" or answer is None:
        return "… no answer: `answer` was still None when this problem's cell ran"
    if isinstance(answer, float) and not math.isfinite(answer):
        return f"✗ not marked: the answer was {answer} (not a finite number): a division by zero, or a sum over nothing?"
    if isinstance(answer, dict) and str(answer.get("repr", "")).strip().lower() in ("nan", "inf", "-inf"):
        return (f"✗ not marked: the answer was {answer['repr']} (not a finite number): a division by zero, or a sum "
                "over nothing?")
    if shown is None:
        kind = answer.get("type", "another kind") if isinstance(answer, dict) else type(answer).__name__
        return f"✗ not marked: the answer was of type {kind}, not " + (
            "one number" if result.choices is None else "one of the words the problem takes")
    if result.status == "close":
        return f"≈ close: {shown} is near the answer but outside its tolerance: a figure rounded early?"
    if result.status == "slip":
        slip = next((slip for slip in (*SLIPS, OFF_BY_ONE, SIGN) if slip.name == result.slip), None)
        if slip is OFF_BY_ONE:
            return f"✗ {shown} is not right: it looks like a count off by one ({slip.hint})"
        if slip is SIGN:
            return f"✗ {shown} is not right: {slip.hint}"
        # The problem's own slips carry their hint too (what to look at again, never the answer).
        hint = slip.hint if slip else ((getattr(result, "slips", None) or {}).get(result.slip) or (None, ""))[1]
        return f"✗ {shown} is not right: it looks like {result.slip}" + (f" ({hint})" if hint else "")
    if isinstance(answer, str) and result.choices and not _matching(answer, result.choices,
                                                                     partial=len(result.choices) > 1):
        # A word the problem does not take at all: say so, and which it takes where they are few.
        listed = ", ".join(f'"{option}"' for option in result.choices)
        return f"✗ {shown} is not right: it is none of the words the problem takes" + (
            f" ({listed})" if len(result.choices) <= 4 else "")
    return f"✗ {shown} is not right"


def _lateness(submission: Submission, rubric: Rubric) -> str:
    """'' for on time, else how late and by whose clock."""
    if submission.lms_late and submission.submitted is None:
        return "Canvas marked it LATE"
    if rubric.deadline is None or submission.submitted is None:
        return ""
    over = submission.submitted - rubric.deadline - dt.timedelta(minutes=rubric.grace_minutes)
    if over <= dt.timedelta(0):
        return ""
    minutes = math.ceil((submission.submitted - rubric.deadline).total_seconds() / 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    span = " ".join(f"{count} {unit}" for count, unit in ((days, "d"), (hours, "h"), (minutes, "min")) if count)
    return f"{span} after the deadline, by {submission.time_from}"


# -- writing -------------------------------------------------------------------------
def _number(value: float) -> str:
    return f"{value:g}"


OUTPUTS = ("grades.csv", "canvas.csv", "moodle.csv", "report.txt", "feedback", "feedback.zip")


def write_outputs(out: Path, marks: dict[str, Graded], problems, rubric: Rubric, bad, sandboxed: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in OUTPUTS:   # last run's files go first, so no old feedback is sent again
        target = out / name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
    keys = columns(problems, rubric)
    most = possible(problems, rubric)
    with (out / "grades.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "name", *(f"{name} {label}" for name, label in keys), "score", "out of",
                         "late", "notes"])
        for graded in marks.values():
            writer.writerow([graded.student.student, graded.student.name,
                             *(_number(graded.points[key]) for key in keys), _number(graded.total), _number(most),
                             " ".join(graded.late), "; ".join(graded.notes)])
    on_roster = [graded for graded in marks.values()]
    with (out / "canvas.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", rubric.assignment])
        writer.writerow(["Points Possible", "", "", "", "", _number(most)])
        for graded in on_roster:
            student = graded.student
            canvas_name = student.listed or _canvas_name(student.name)
            writer.writerow([canvas_name, student.canvas_id, student.sis_user_id, student.sis_login_id,
                             student.section, _number(graded.total)])
    with (out / "moodle.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Full name", "Email address", "ID number", rubric.assignment, "Feedback"])
        for graded in on_roster:
            student = graded.student
            # From a Canvas roster: the SIS User ID as the ID number, an email-like login as the email.
            email = student.email or (student.sis_login_id if "@" in student.sis_login_id else "")
            writer.writerow([student.name, email, student.id_number or student.sis_user_id, _number(graded.total),
                             f"{_number(graded.total)} of {_number(most)}"
                             + (f"; late: {', '.join(graded.late)}" if graded.late else "")
                             + ("; see the notes in your feedback file" if graded.notes else "")])
    feedback = out / "feedback"
    feedback.mkdir(exist_ok=True)
    import zipfile
    with zipfile.ZipFile(out / "feedback.zip", "w", zipfile.ZIP_DEFLATED) as bundle:
        for graded in marks.values():
            text = feedback_text(graded, problems, rubric)
            (feedback / f"{graded.student.student}.txt").write_text(text, encoding="utf-8")
            bundle.writestr(canvas_feedback_name(graded), text)
    lines = [f"{rubric.assignment}: {len(marks)} students, {sum(len(g.handed_in) for g in marks.values())} "
             f"notebooks graded",
             "sandbox: " + ("bubblewrap: each kernel in its own PID, mount, network and IPC namespaces, seeing "
                            "only the system, Python and the course's package, read-only" if sandboxed else
                            f"NONE (--unsafe; {sandbox_problem()}): students' code ran with the grader's rights"),
             ""]
    blank = [(graded.student.student, name) for graded in marks.values() for name in graded.blank]
    if blank:
        lines += ["Handed in blank (no problem answered), graded 0:",
                  *(f"- {student}: {name}" for student, name in blank), ""]
    lines += ["Files not graded as handed in:" if bad else "Every file was graded as handed in."]
    lines += [f"- {path}: {reason}" for path, reason in sorted(bad, key=lambda item: str(item[0]))]
    (out / "report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def canvas_feedback_name(graded: Graded) -> str:
    """A student's feedback file as Canvas names a submission's files on download (lastfirst_userid_
    submissionid_file), so a bulk upload finds its student; by the roster's key where Canvas gave no ID."""
    student = graded.student
    if not student.canvas_id:
        return f"{student.student}.txt"
    parts = student.name.split()
    # Canvas's own "Last, First" where the roster gives it, else the name's last word first.
    written = student.listed.replace(",", " ") if student.listed else " ".join(parts[-1:] + parts[:-1])
    lastfirst = re.sub(r"[^a-z]", "", written.lower()) or "student"
    middle = f"_{graded.canvas_submission}" if graded.canvas_submission else ""
    return f"{lastfirst}_{student.canvas_id}{middle}_feedback.txt"


def _canvas_name(name: str) -> str:
    parts = name.split()
    return f"{parts[-1]}, {' '.join(parts[:-1])}" if len(parts) > 1 else name


def feedback_text(graded: Graded, problems, rubric: Rubric) -> str:
    keys = columns(problems, rubric)
    most = possible(problems, rubric)
    share = graded.total / most if most else 0.0
    lines = [f"{rubric.assignment}: feedback for {graded.student.name}",
             f"Score: {_number(graded.total)} of {_number(most)} ({share:.0%})", ""]
    for name in dict.fromkeys(name for name, _ in keys):
        handed = graded.handed_in.get(name)
        late = " (late)" if name in graded.late else ""
        lines.append(f"{name}: " + (f"graded {handed}{late}" if handed else "not handed in"))
        if name in graded.identities:
            lines.append("  " + graded.identities[name].split(": ", 1)[1].capitalize())
        for notebook, label in keys:
            if notebook == name:
                points = graded.points[(name, label)]
                lines.append(f"  {label:>5}  {_number(points)} of {_number(rubric.points(name, label))}  "
                             f"{graded.feedback[(name, label)]}")
        lines.append("")
    if graded.late_notes:
        # One sentence for the notebooks late for the same reason (Canvas's mark, or how late by whose clock),
        # and the penalty told once.
        reasons: dict[str, list[str]] = {}
        for name, late in graded.late_notes.items():
            reasons.setdefault(late, []).append(name)
        sentences = []
        for late, names in reasons.items():
            named = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
            if late.startswith("Canvas marked it"):
                sentences.append(f"Late: {named} ({late.replace('marked it', 'marked them') if len(names) > 1 else late}).")
            else:
                sentences.append(f"Late: {named} {'was' if len(names) == 1 else 'were'} handed in {late}.")
        lines.append(" ".join(sentences) + " " + (
            f"The rubric takes {rubric.late_penalty:.0%} off a late notebook's points: each mark of a notebook "
            f"marked (late) above is {1 - rubric.late_penalty:.0%} of what the answer earned." if rubric.late_penalty
            else "The rubric takes nothing off for it."))
        lines.append("")
    # The lateness is told above; the notes keep the rest.
    notes = [note for note in graded.notes if not any(note == f"{name}: late ({late})"
                                                      for name, late in graded.late_notes.items())]
    if notes:
        lines += ["Notes:", *(f"- {note}" for note in notes), ""]
    return "\n".join(lines)


def summary(marks: dict[str, Graded], problems, rubric: Rubric) -> str:
    most = possible(problems, rubric)
    totals = [graded.total for graded in marks.values()]
    mean = sum(totals) / len(totals) if totals else 0.0
    notebooks = sum(len(graded.handed_in) for graded in marks.values())
    late = sum(1 for graded in marks.values() if graded.late)
    return (f"grade: {len(marks)} students, {notebooks} notebooks, mean score {mean:.2f} of {_number(most)} "
            f"({(mean / most if most else 0):.0%}), {late} late")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("submissions", type=Path, help="folder of submitted notebooks")
    parser.add_argument("--out", type=Path, default=Path("grades"), help="folder for the grade files (grades/)")
    parser.add_argument("--rubric", type=Path, default=RUBRIC if RUBRIC.is_file() else None,
                        help="the rubric (grading/rubric.yml): notebooks, points, deadline, time limit")
    parser.add_argument("--roster", type=Path, help="the class list: an LMS gradebook export, or a CSV with `student`")
    parser.add_argument("--times", type=Path, help="submission times: Moodle's grading worksheet or student,submitted")
    parser.add_argument("--solutions", type=Path, default=SOLUTIONS, help="folder of the reference solutions")
    parser.add_argument("--notebooks", nargs="+", metavar="NAME", help="grade only these notebooks")
    parser.add_argument("--time-limit", type=float, help="seconds each notebook may run in all (the rubric's, or 60)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="notebooks run at once, each in its own kernel (default: one per CPU)")
    parser.add_argument("--unsafe", action="store_true",
                        help="grade even where no sandbox can start, running students' code with your rights")
    options = parser.parse_args(argv)
    if not options.submissions.is_dir():
        print(f"grade: {options.submissions} is not a folder", file=sys.stderr)
        return 2
    if sandbox_problem() and not options.unsafe:
        print(f"grade: no sandbox: {sandbox_problem()}; refusing to run students' code without one "
              "(--unsafe to run it anyway)", file=sys.stderr)
        return 2
    names = notebook_names(options.solutions)
    unknown = sorted(set(options.notebooks or []) - set(names))
    if unknown or not names:
        print(f"grade: notebooks must be among {names}, got {unknown or 'none in ' + str(options.solutions)}",
              file=sys.stderr)
        return 2
    try:
        rubric = load_rubric(options.rubric, names)
        if options.notebooks:
            rubric.notebooks = {name: rubric.notebooks.get(name, {}) for name in options.notebooks}
        if options.time_limit is not None:
            rubric.time_limit = options.time_limit
        roster = load_roster(options.roster) if options.roster else None
        times = load_times(options.times, rubric.timezone) if options.times else Times()
        options.out.mkdir(parents=True, exist_ok=True)
        problems = reference(list(rubric.notebooks), options.solutions, jobs=options.jobs)
    except (ValueError, OSError, RuntimeError) as error:
        print(f"grade: {error}", file=sys.stderr)
        return 2
    for name, weights in rubric.notebooks.items():
        stray = sorted(set(weights) - set(problems[name]))
        if stray:
            print(f"grade: the rubric gives points to {name} problems {stray}, which it does not have", file=sys.stderr)
            return 2
    for line in public_answers(problems):
        print(f"grade: warning: {line}", file=sys.stderr)
    marks, bad, sandboxed = grade(options.submissions, problems, rubric, roster, times, options.jobs, options.unsafe)
    write_outputs(options.out, marks, problems, rubric, bad, sandboxed)
    for path, reason in bad:
        print(f"grade: {path}: {reason}", file=sys.stderr)
    print(f"{summary(marks, problems, rubric)}; wrote {options.out}/ (grades.csv, canvas.csv, moodle.csv, "
          f"feedback/, feedback.zip, report.txt)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
