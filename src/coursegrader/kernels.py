"""The kernels the course's tools start on this machine talk to them over IPC (Unix sockets), not TCP.

Over TCP, jupyter_client picks five free ports on 127.0.0.1, releases them and writes them into the connection file;
the kernel binds them a moment later. Any process that binds or connects on 127.0.0.1 meanwhile can take one (in
`make test`: another kernel's manager, the book's run-ahead process, Chromium, the site's test server), and the
kernel dies with "Address already in use" (jupyter_client issue 487: its guard holds within one process only). Over
IPC each kernel's sockets are files of its own, ``kernel-ID-1`` to ``-5`` in the Jupyter runtime folder (in the
temporary folder where that path would be too long for a socket), removed when the kernel is shut down (a manager
killed outright leaves them); the kernel does not warn that TCP carries its messages unencrypted.

``make`` writes ``course-ipc`` into the environment's kernel spec ``python3`` (``scripts/lab_settings.py``), which the
book's build, ``make lab``, the tests and the grader's unsandboxed fallback start: jupyter_client finds this class
through the entry point of that name (``pyproject.toml``). Kernels already set to IPC are left as they are: the
grader's sandboxed ones (``sandbox.py``, a kernel spec of their own) and nbgrader's (``scripts/make_exercises.py``'s
configuration, sockets in a folder of the course's own).
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
    """Where a kernel's sockets go: ``folder/kernel-ID`` (made absolute: the kernel runs in its notebook's folder), or
    in the temporary folder where that path is too long."""
    prefix = os.path.abspath(os.path.join(folder, f"kernel-{kernel_id}"))
    if len(os.fsencode(prefix)) <= LONGEST_PREFIX:
        return prefix
    return os.path.abspath(os.path.join(tempfile.gettempdir(), f"kernel-{kernel_id}"))


class IPCProvisioner(LocalProvisioner):
    """jupyter_client's local provisioner, with its kernel manager switched to IPC before the connection file is
    written; a restart keeps the manager's IPC address and connection file."""

    async def pre_launch(self, **kwargs):
        manager = self.parent
        if manager.transport != "ipc":
            folder = jupyter_runtime_dir()
            os.makedirs(folder, mode=0o700, exist_ok=True)
            manager.transport = "ipc"
            manager.cache_ports = False     # the port cache binds TCP ports to find free ones
            manager.ip = socket_prefix(folder, self.kernel_id)
        return await super().pre_launch(**kwargs)
