"""The kernels the course's tools start (the book's build, JupyterLab, nbclient in the tests) talk over IPC, each
through sockets of its own (coursegrader/kernels.py): no port another process can take between its choice and its
bind, no warning that TCP carries the messages unencrypted."""
from __future__ import annotations

import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import start_new_kernel

from coursegrader import kernels

ROOT = Path(__file__).resolve().parent.parent
IN_VENV = Path(sys.prefix) == ROOT / ".venv"


def started(runtime: Path, name: str):
    """A kernel from the environment's spec (the runtime folder is ``runtime``): its sockets' prefix, the files there
    while it ran, what its first cell printed, and its stderr."""
    stderr = runtime / f"{name}.stderr"
    with open(stderr, "w") as written:
        manager, client = start_new_kernel(kernel_name="python3", stderr=written)
    try:
        printed = []
        client.execute_interactive("print(6 * 7)", timeout=60,
                                   output_hook=lambda message: printed.append(message["content"].get("text", "")))
        prefix = manager.ip
        sockets = sorted(str(path) for path in runtime.glob("kernel-*") if str(path).startswith(prefix + "-"))
        assert manager.transport == "ipc"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return prefix, sockets, "".join(printed), stderr.read_text()


@pytest.mark.skipif(not IN_VENV, reason="the kernel spec is the one `make` writes into .venv")
def test_kernels_started_at_once_talk_over_sockets_of_their_own_and_leave_none(monkeypatch):
    # A runtime folder as short as Jupyter's own (pytest's are too deep for a socket's path).
    with tempfile.TemporaryDirectory(prefix="runtime-") as folder:
        check_two_kernels(Path(folder), monkeypatch)


def check_two_kernels(runtime: Path, monkeypatch):
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    spec = KernelSpecManager().get_kernel_spec("python3")
    assert spec.metadata["kernel_provisioner"]["provisioner_name"] == kernels.NAME
    with ThreadPoolExecutor(2) as pool:     # two at once, as the lanes of `make test` start them
        (first, sockets, printed, said), (second, *_) = pool.map(started, [runtime, runtime], "ab")
    assert printed == "42\n" and first != second and first.startswith(str(runtime / "kernel-"))
    assert sockets == [f"{first}-{port}" for port in range(1, 6)]
    assert "TCP" not in said, said
    assert [path.name for path in runtime.iterdir() if path.suffix not in (".json", ".stderr")] == []


def test_a_runtime_folder_too_deep_for_a_socket_sends_the_sockets_to_the_temporary_folder():
    kernel_id = "0123abcd-0123-0123-0123-0123456789ab"
    assert kernels.socket_prefix("/root/.local/share/jupyter/runtime", kernel_id) == \
        f"/root/.local/share/jupyter/runtime/kernel-{kernel_id}"
    assert kernels.socket_prefix("/" + "d" * 80, kernel_id) == os.path.join(tempfile.gettempdir(), f"kernel-{kernel_id}")
    # Made absolute: the kernel resolves the path from its notebook's folder, the manager from its own.
    assert kernels.socket_prefix("runtime", kernel_id) == os.path.join(os.getcwd(), "runtime", f"kernel-{kernel_id}")
