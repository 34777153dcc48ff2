"""coursegrader.cgroups: a notebook's processes bounded together by a cgroup of its own, removed after it."""
import os
import signal
import subprocess
from pathlib import Path

import nbformat
import pytest

from coursegrader import cgroups, exports, running, sandbox

HERE = cgroups.problem()
MIB = sandbox.MIB
NO_SANDBOX = sandbox.sandbox_problem()
needs_cgroup = pytest.mark.skipif(bool(HERE or NO_SANDBOX),
                                  reason=f"no sandbox or no cgroup here: {HERE or NO_SANDBOX}")


def test_the_graders_own_cgroups_are_read_from_proc():
    text = "9:name=systemd:/\n8:pids:/\n4:memory:/jobs/a1\n2:cpu,cpuacct:/x\n0::/user.slice/grade\n"
    assert cgroups.own_paths(text) == {"name=systemd": "/", "pids": "/", "memory": "/jobs/a1", "cpu": "/x",
                                       "cpuacct": "/x", "": "/user.slice/grade"}


def test_v1_cgroups_are_made_below_the_graders_own(tmp_path):
    for name in ("memory", "memory/jobs/a1", "pids"):
        (tmp_path / name).mkdir(parents=True)
        (tmp_path / name / "cgroup.procs").write_text("")
    parents, why = cgroups.place(tmp_path, "8:pids:/\n4:memory:/jobs/a1\n")
    assert why == "" and parents == {"memory": tmp_path / "memory/jobs/a1", "pids": tmp_path / "pids"}


def test_v2_without_its_controllers_delegated_is_refused_in_one_line(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpu io memory pids\n")
    (tmp_path / "me").mkdir()
    (tmp_path / "me" / "cgroup.subtree_control").mkdir()     # a file that cannot be written
    parents, why = cgroups.place(tmp_path, "0::/me\n")
    assert parents == {} and why.startswith(f"cgroup v2's {tmp_path / 'me'} does not hand memory and pids")
    assert cgroups.place(tmp_path / "nothing", "0::/\n") == ({}, f"no cgroup v1 memory and pids controllers or "
                                                                  f"cgroup v2 under {tmp_path / 'nothing'}")


@pytest.mark.skipif(bool(NO_SANDBOX), reason=f"no sandbox here: {NO_SANDBOX}")
def test_the_kernel_enters_its_cgroup_before_it_starts(tmp_path):
    group = cgroups.KernelGroup([tmp_path / "a", tmp_path / "b"], 2**30, 64)
    argv = sandbox.sandbox_argv(tmp_path, {}, enter=group.enter_argv())
    assert argv[:6] == ["/bin/sh", "-c", cgroups.ENTER, "cgroup-enter", str(tmp_path / "a" / "cgroup.procs"),
                        str(tmp_path / "b" / "cgroup.procs")]
    assert argv[6] == "--" and argv[7].endswith("bwrap")


def test_the_report_says_when_no_cgroup_bounds_a_notebook(monkeypatch):
    monkeypatch.setattr(cgroups, "problem", lambda: "cgroup v1's /sys/fs/cgroup/pids cannot be written (grade as root)")
    assert exports.together(sandbox.LIMITS) == (
        "a notebook's processes together: NOT bounded, no cgroup (cgroup v1's /sys/fs/cgroup/pids cannot be "
        "written (grade as root)): each process of a notebook held to 4096 MiB of address space and each "
        "sandbox's user to 128 processes, so a notebook's processes together may hold many times that")


HOGS = """import os, time
children = []
for _ in range(20):
    child = os.fork()
    if child == 0:
        hog = b"x" * (300 * 2**20)
        time.sleep(0.5)
        os._exit(0)
    children.append(child)
ended = sum(os.waitpid(child, 0)[1] != 0 for child in children)"""


def _notebook(path: Path, *cells: str) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(notebook, path)
    return path


def _left(parents) -> list[Path]:
    return [folder for parent in parents.values() for folder in parent.glob(f"coursegrader-{os.getpid()}-*")]


@needs_cgroup
def test_twenty_children_of_300_mib_are_stopped_at_the_notebooks_memory_and_the_cgroup_removed(tmp_path):
    parents, _ = cgroups.place()
    path = _notebook(tmp_path / "hogs.ipynb", HOGS, "from servingmath.checks import submit\nanswer = 7",
                     "submit(answer, label='1.1')")
    ran = running.run_notebook(path, 30, sandboxed=True, releases={})
    said = [problem for problem in ran.problems if "passed the notebook's 2 GiB of memory" in problem]
    assert said and said[0].startswith(("memory: its processes together", "stopped: the kernel died: its processes"))
    assert _left(parents) == []
    # A notebook within its bounds, in a cgroup of its own as well, runs as it would anywhere.
    fine = running.run_notebook(_notebook(tmp_path / "fine.ipynb", "from servingmath.checks import submit\n"
                                          "answer = 7", "submit(answer, label='1.1')"), 30, sandboxed=True,
                                releases={})
    assert fine.problems == [] and fine.records["1.1"]["answer"] == 7 and _left(parents) == []



@pytest.mark.skipif(bool(HERE), reason=f"no cgroup here: {HERE}")
def test_a_kernels_first_process_is_in_its_cgroup_with_its_limits_and_the_cgroup_goes_after():
    group = cgroups.kernel_group(512 * MIB, 40)
    limits = {(folder / name).read_text().strip() for folder in group.folders
              for name in ("memory.limit_in_bytes", "memory.max", "pids.max") if (folder / name).exists()}
    assert limits == {"40", str(512 * MIB)}
    # The process that becomes the kernel is in the cgroup from its first instruction: it wrote its pid there.
    child = subprocess.Popen([*group.enter_argv(), "sh", "-c", "echo; exec sleep 30"], stdout=subprocess.PIPE,
                             text=True)
    assert child.stdout.readline() == "\n" and child.pid in group.pids()
    group.remove()                          # the sleep left in it is killed, the cgroup removed
    assert child.wait(timeout=5) == -signal.SIGKILL and not any(folder.exists() for folder in group.folders)
