"""One cgroup a kernel: a notebook's processes bounded together in memory and number, and all ended after it.

The sandbox's rlimits bound each process (its address space) and each user's count; a notebook that
forks many children could still hold many times the memory limit in all. Where the grader may make a
cgroup (as root on a machine with cgroup v1's ``memory`` and ``pids`` controllers, or in a cgroup v2
subtree delegated to it with both enabled), each kernel gets one, made below the grader's own (so any
bound the grader itself is under still holds), with ``memory.limit_in_bytes`` (and ``memory.memsw`` where
swap is counted) or ``memory.max`` and ``memory.swap.max``, and ``pids.max``. The kernel's sandbox is
started through ``/bin/sh``, which writes its own pid into the cgroup and only then runs bubblewrap, so
no student code runs outside it, and every process the kernel starts is born inside. Afterwards any
process left in it is killed and the cgroup removed.
"""
from __future__ import annotations

import itertools
import os
import signal
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids")
# Writes its own pid into each cgroup.procs named before "--", then runs what follows "--" in its place.
ENTER = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
_COUNT = itertools.count()


def own_paths(text: str) -> dict[str, str]:
    """The grader's cgroup in each hierarchy, from /proc/self/cgroup: {"memory": "/a", "pids": "/", "": "/b"}."""
    paths = {}
    for line in text.splitlines():
        _, names, path = line.split(":", 2)
        for name in names.split(",") if names else [""]:
            paths[name] = path
    return paths


def _writable(folder: Path) -> bool:
    return folder.is_dir() and os.access(folder, os.W_OK) and os.access(folder / "cgroup.procs", os.W_OK)


def place(root: Path = ROOT, own: str | None = None) -> tuple[dict[str, Path], str]:
    """Where the grader may make a kernel's cgroup: ({controller: parent folder}, '') for cgroup v1,
    ({"": parent folder}, '') for v2, or ({}, why not) in one line."""
    if own is None:
        try:
            own = Path("/proc/self/cgroup").read_text()
        except OSError as error:
            return {}, f"cannot read /proc/self/cgroup ({error.strerror})"
    paths = own_paths(own)
    if all((root / name / "cgroup.procs").is_file() for name in CONTROLLERS):   # v1, one hierarchy a controller
        parents = {name: root / name / paths.get(name, "/").lstrip("/") for name in CONTROLLERS}
        unwritable = [str(folder) for folder in parents.values() if not _writable(folder)]
        if unwritable:
            return {}, f"cgroup v1's {' and '.join(unwritable)} cannot be written (grade as root)"
        return parents, ""
    if (root / "cgroup.controllers").is_file():                                  # v2, one hierarchy
        parent = root / paths.get("", "/").lstrip("/")
        try:
            enabled = (parent / "cgroup.subtree_control").read_text().split()
        except OSError:
            enabled = []
        missing = [name for name in CONTROLLERS if name not in enabled]
        if missing:
            try:
                (parent / "cgroup.subtree_control").write_text(" ".join(f"+{name}" for name in missing))
            except OSError as error:
                return {}, (f"cgroup v2's {parent} does not hand {' and '.join(missing)} to its children "
                            f"({error.strerror}); delegate a subtree with them to the grader")
        if not _writable(parent):
            return {}, f"cgroup v2's {parent} cannot be written; delegate a subtree to the grader"
        return {"": parent}, ""
    return {}, f"no cgroup v1 memory and pids controllers or cgroup v2 under {root}"


@lru_cache(maxsize=1)
def problem() -> str:
    """'' where the grader can make a cgroup a kernel here, else why not, in one line."""
    return place()[1]


@dataclass
class KernelGroup:
    """A kernel's cgroup: made with its limits, entered by the kernel's first process, emptied and removed."""

    folders: list[Path]
    memory: int
    processes: int
    ended: list[str] = field(default_factory=list)

    @classmethod
    def make(cls, parents: dict[str, Path], memory: int, processes: int) -> "KernelGroup":
        name = f"coursegrader-{os.getpid()}-{next(_COUNT)}"
        group = cls([parent / name for parent in parents.values()], memory, processes)
        try:
            for folder in group.folders:
                folder.mkdir()
            group._limit()
        except OSError:
            group.remove()
            raise
        return group

    def _limit(self) -> None:
        for folder in self.folders:
            if (folder / "memory.limit_in_bytes").exists():           # v1: the limit before the limit with swap
                (folder / "memory.limit_in_bytes").write_text(str(self.memory))
                if (folder / "memory.memsw.limit_in_bytes").exists():
                    (folder / "memory.memsw.limit_in_bytes").write_text(str(self.memory))
            if (folder / "memory.max").exists():                       # v2
                (folder / "memory.max").write_text(str(self.memory))
                if (folder / "memory.swap.max").exists():
                    (folder / "memory.swap.max").write_text("0")
            if (folder / "pids.max").exists():
                (folder / "pids.max").write_text(str(self.processes))

    def enter_argv(self) -> list[str]:
        """The words put before the kernel's command: it joins the cgroup before it becomes the kernel."""
        return ["/bin/sh", "-c", ENTER, "cgroup-enter", *(str(folder / "cgroup.procs") for folder in self.folders),
                "--"]

    def events(self) -> tuple[int, int]:
        """(processes the system ended for want of memory, processes refused), so far."""
        killed = refused = 0
        for folder in self.folders:
            for name in ("memory.oom_control", "memory.events"):
                killed = max(killed, _field(folder / name, "oom_kill"))
            refused = max(refused, _field(folder / "pids.events", "max"))
        return killed, refused

    def pids(self) -> set[int]:
        found = set()
        for folder in self.folders:
            try:
                found |= {int(word) for word in (folder / "cgroup.procs").read_text().split()}
            except OSError:
                continue
        return found

    def remove(self) -> None:
        """Kill whatever is left in the cgroup, then remove it."""
        for _ in range(200):
            left = self.pids()
            if not left:
                break
            if (self.folders[0] / "cgroup.kill").exists():
                (self.folders[0] / "cgroup.kill").write_text("1")
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.02)
        for folder in self.folders:
            for _ in range(100):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)     # a process killed a moment ago leaves its cgroup a moment later


def _field(path: Path, name: str) -> int:
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def kernel_group(memory: int, processes: int) -> KernelGroup | None:
    """A new cgroup for one kernel, or None where the grader cannot make one here (``problem()`` says why)."""
    parents, why = place()
    if why:
        return None
    return KernelGroup.make(parents, memory, processes)
