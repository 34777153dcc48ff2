"""The kernels the course's tools start on this machine talk to them over IPC (Unix sockets), not TCP.

Over TCP, jupyter_client picks five free ports, closes them and writes them into the connection file; the kernel
binds them a moment later. Another process starting a kernel meanwhile (the book's build beside JupyterLab's test
and the unit tests, in `make test`) can pick the same port, and the kernel dies with "Address already in use"
(jupyter_client issue 487: its guard holds within one process only). Over IPC each kernel's sockets are files of its
own, named after its id, in the Jupyter runtime folder; the kernel does not warn that TCP carries its messages
unencrypted. The grader's sandboxed kernels already talk over IPC (``sandbox.py``).

``make`` writes ``course-ipc`` into the environment's kernel spec ``python3`` (``scripts/lab_settings.py``), which the
book's build, ``make lab`` and the tests start: jupyter_client finds this class through the entry point of that name
(``pyproject.toml``).
"""
from __future__ import annotations

import os
import tempfile

from jupyter_client.provisioning import LocalProvisioner
from jupyter_core.paths import jupyter_runtime_dir

NAME = "course-ipc"
# A Unix socket's path is at most 107 bytes; a kernel's five are this prefix and "-1" to "-5".
LONGEST_PREFIX = 100


def socket_prefix(folder: str, kernel_id: str) -> str:
    """Where a kernel's sockets go: ``folder/kernel-ID``, or in the temporary folder where that path is too long."""
    prefix = os.path.join(folder, f"kernel-{kernel_id}")
    return prefix if len(prefix) <= LONGEST_PREFIX else os.path.join(tempfile.gettempdir(), f"kernel-{kernel_id}")


class IPCProvisioner(LocalProvisioner):
    """jupyter_client's local provisioner, with its kernel manager switched to IPC before the connection file is
    written (and again, to the same, at a restart)."""

    async def pre_launch(self, **kwargs):
        manager = self.parent
        if manager.transport != "ipc":
            folder = jupyter_runtime_dir()
            os.makedirs(folder, mode=0o700, exist_ok=True)
            manager.transport = "ipc"
            manager.cache_ports = False     # the port cache binds TCP ports to find free ones
            manager.ip = socket_prefix(folder, self.kernel_id)
        return await super().pre_launch(**kwargs)
