"""coursegrader.sandbox's command line: an unprivileged user, the few files of /etc Python reads, limits."""
import shutil

import pytest

from coursegrader import sandbox


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
