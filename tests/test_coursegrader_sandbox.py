"""coursegrader.sandbox: an unprivileged user, the few files of /etc Python reads, limits, nothing of the disk
to write."""
import errno
import json
import shutil

import nbformat
import pytest

from coursegrader import running, sandbox


def test_the_sandbox_runs_as_an_unprivileged_user_with_limits(tmp_path):
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed here")
    limits = sandbox.Limits(processes=50, memory=2**30, file_size=2**20, tmp=2**21, home=2**22)
    text = " ".join(sandbox.sandbox_argv(tmp_path, {}, limits, uid=61001, identity=tmp_path))
    assert "setpriv --reuid=61001 --regid=61001 --clear-groups --no-new-privs" in text
    assert "prlimit --nproc=50 --as=1073741824 --fsize=1048576" in text
    assert "--size 2097152 --tmpfs /dev/shm" in text and "--size 2097152 --tmpfs /tmp" in text
    assert f"--size 4194304 --tmpfs {sandbox.HOME}" in text and f"--ro-bind {tmp_path}/passwd /etc/passwd" in text
    assert "/etc/shadow" not in text and "--ro-bind-try /etc /etc" not in text and "/etc/ld.so.cache" in text
    assert f"--ro-bind {tmp_path} {tmp_path} " in text and "--bind " not in text     # nothing of the disk to write
    assert f"--size 1048576 --tmpfs {tmp_path}/sockets " in text
    as_user = " ".join(sandbox.sandbox_argv(tmp_path, {}, limits))
    assert "--unshare-user --uid 65534 --gid 65534 --cap-drop ALL" in as_user and "setpriv" not in as_user


def test_the_sandbox_binds_the_course_over_its_empty_tmp(tmp_path):
    # CI clones the course under /tmp: the sandbox's empty /tmp must come before the course's binds, not hide them.
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed here")
    argv = sandbox.sandbox_argv(tmp_path, sandbox.kernel_environment())
    empty_tmp = next(k for k in range(len(argv) - 1) if argv[k:k + 2] == ["--tmpfs", "/tmp"])
    python_and_package = [k for k, word in enumerate(argv) if word == "--ro-bind"]
    assert python_and_package and min(python_and_package) > empty_tmp


FILL = """import errno, json, os
from ipykernel.connect import get_connection_file
given = os.path.dirname(get_connection_file())
sockets = os.path.dirname(json.load(open(get_connection_file()))["ip"])
seen = {}
for name, place in (("given", given), ("sockets", sockets)):
    try:
        for count in range(10_000):     # many small files, then one large
            with open(os.path.join(place, f"f{count}"), "wb") as handle:
                handle.write(b"x" * (2**20 if count == 9_999 else 10))
        seen[name] = "filled"
    except OSError as error:
        seen[name] = errno.errorcode[error.errno]
import socket
try:
    socket.create_connection(("192.0.2.1", 80), timeout=5)     # any address off the machine
    seen["network"] = "reached"
except OSError as error:
    seen["network"] = errno.errorcode.get(error.errno, "timed out")
seen["interfaces"] = [name for _, name in socket.if_nameindex()]
print(json.dumps({**seen, "files": len(os.listdir(sockets))}))
"""


def test_graded_as_yourself_a_notebook_writes_nothing_on_your_disk_and_reaches_no_network(tmp_path):
    # The sandbox the grader starts when it is not root (bwrap's user namespace): the folder it is given is
    # read-only, and its sockets are in a tmpfs of its own, bounded, gone with it.
    if sandbox.sandbox_problem():
        pytest.skip(f"no sandbox here: {sandbox.sandbox_problem()}")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(FILL)]
    outcome = running.Run()
    running._execute(notebook, outcome, 60, True, sandbox.LIMITS, uid=None)
    seen = json.loads(notebook.cells[0].outputs[0]["text"])
    assert outcome.problems == [] and seen["given"] == errno.errorcode[errno.EROFS]
    assert seen["sockets"] == errno.errorcode[errno.ENOSPC] and seen["files"] < 10_000
    assert seen["network"] == errno.errorcode[errno.ENETUNREACH] and seen["interfaces"] == ["lo"]


def test_the_probe_refuses_in_one_line_where_the_grader_cannot_reach_a_sandboxs_sockets(monkeypatch):
    if sandbox.sandbox_problem():
        pytest.skip(f"no sandbox here: {sandbox.sandbox_problem()}")
    monkeypatch.setattr(sandbox, "sandbox_root", lambda pid, wait: "/nowhere")
    assert sandbox.sandbox_problem.__wrapped__() == (
        "the grader cannot reach the sandbox's files through /proc/PID/root (its kernel's sockets are there)")
    monkeypatch.setattr(sandbox, "kernel_python", lambda: "/no/python")
    assert sandbox.sandbox_problem.__wrapped__().startswith("bubblewrap cannot start here (prlimit: failed to execute /no/python")
