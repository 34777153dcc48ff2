"""The sandbox a student's kernel runs in: bubblewrap, an unprivileged user, limits, bounded output."""
from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import servingmath


# Each student's kernel runs under bubblewrap (Debian's ``bubblewrap``): its own PID, mount, network,
# IPC and UTS namespaces, as an unprivileged user (a uid of its own when the grader is root, so no file
# of the machine is its own; uid 65534 in a user namespace otherwise), with no capability, the system's
# programs, Python, its packages and the course's package read-only, the few files of /etc Python reads,
# and nothing else of the machine: no repository, no solutions, no roster or rubric, no other
# submission, no grader's /proc, no /etc/shadow or host keys. It writes only to small tmpfs of its own
# (its home, /tmp, /dev/shm, and the folder of its kernel's sockets): nothing on the grader's disk, as
# root or not. The folder the grader made for it (the connection file, the start-up code) is read-only.
# Limits on its processes, memory, file sizes and open files hold inside. With no network the kernel
# talks to the grader through Unix sockets (ZeroMQ's ipc transport), which the grader reaches through
# ``/proc/PID/root`` of the sandbox. It dies with the grader, and every process it started dies with
# it, since its PID namespace ends with it.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64")
# What of /etc Python, numpy and matplotlib read: the loader's cache, the time zone, fonts, MIME types.
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "alternatives", "fonts",
             "mime.types", "nsswitch.conf", "host.conf")
HOME = "/home/student"
SANDBOX_UIDS = range(61001, 61065)   # one for each kernel running at once, where the grader is root
NOBODY = 65534
MIB = 2 ** 20
SOCKETS = "sockets"    # the kernel's own tmpfs for its sockets, in the folder the grader made for it
SOCKETS_SIZE = MIB     # a socket holds no bytes; the rest is room for nothing much


@dataclass(frozen=True)
class Limits:
    """What one student's notebook may use: defaults a laptop grading on all its processors survives."""

    processes: int = 128              # processes and threads of the sandbox's user (and of its cgroup)
    memory: int = 4096 * MIB          # address space of each process
    notebook_memory: int = 2048 * MIB  # all its processes together, where the grader can make a cgroup
    file_size: int = 64 * MIB         # the largest file it may write
    open_files: int = 256
    home: int = 128 * MIB             # each tmpfs: the home folder, /tmp, /dev/shm
    tmp: int = 64 * MIB
    cell_output: int = 256 * 1024     # text and images a cell may show; the rest is dropped, the notes say so
    notebook_output: int = 2 * MIB    # all its cells together


LIMITS = Limits()


class NoSandbox(RuntimeError):
    """No sandbox can start here; the message says why, in one line."""


# What a kernel runs first in the sandbox: each cell's printed text is cut at a bound, so a print in a loop
# cannot flood the grader (which also drops, as it comes, any output past its bounds).
CUT_IN_KERNEL = "[output cut: more than the grader keeps of a cell]"
STARTUP = """
import sys as _sys


class _Bounded:
    def __init__(self, stream, limit):
        self._stream, self._limit, self._used = stream, limit, 0

    def write(self, text):
        room = self._limit - self._used
        self._used = min(self._limit + 1, self._used + len(text))
        if room <= 0:
            return len(text)
        if len(text) > room:
            self._stream.write(text[:room] + "\\n{cut}\\n")
            return len(text)
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _fresh(*_):
    for _name in ("stdout", "stderr"):
        getattr(_sys, _name)._used = 0


_sys.stdout, _sys.stderr = _Bounded(_sys.stdout, {limit}), _Bounded(_sys.stderr, {limit})
get_ipython().events.register("pre_run_cell", _fresh)
del _Bounded, _fresh
"""


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


def sandbox_argv(folder: Path, env: dict[str, str], limits: Limits = LIMITS, uid: int | None = None,
                 identity: Path | None = None, enter: list[str] | tuple = ()) -> list[str]:
    """The bwrap command line that starts a kernel (``{connection_file}`` left for jupyter_client).

    ``folder``: the grader's folder for this kernel, bound read-only, with an empty ``SOCKETS`` folder
    in it over which the sandbox mounts a tmpfs of ``SOCKETS_SIZE`` for the kernel's sockets.

    ``uid``: the grader is root, and the kernel runs as this uid of the machine (``setpriv`` drops to
    it inside, every capability with it); else bwrap makes a user namespace and the kernel is uid 65534
    there. ``identity``: a folder holding the ``passwd`` and ``group`` files the sandbox sees. ``enter``:
    words run first, outside the sandbox (``cgroups.KernelGroup.enter_argv``, which joins the kernel's cgroup)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise NoSandbox("bubblewrap is not installed (apt-get install bubblewrap)")
    argv = [*enter, bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--hostname", "sandbox"]
    if uid is None:
        argv += ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY), "--cap-drop", "ALL"]
    for system in SYSTEM_DIRS:
        argv += ["--ro-bind-try", system, system]
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
    for bound in (*python, package, folder):
        for above in reversed(Path(bound).parents):
            if str(above) not in made:
                made.add(str(above))
                argv += ["--perms", "0755", "--dir", str(above)]
    for bound in python:
        argv += ["--ro-bind", str(bound), str(bound)]
    argv += ["--ro-bind", str(package), str(package),
             "--perms", "1777", "--size", str(limits.home), "--tmpfs", HOME,
             "--ro-bind", str(folder), str(folder),
             "--perms", "1777", "--size", str(SOCKETS_SIZE), "--tmpfs", str(folder / SOCKETS),
             "--chdir", HOME, "--clearenv"]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    argv.append("--")
    if uid is not None:
        argv += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs",
                 "--bounding-set=-all", "--inh-caps=-all", "--"]
    startup = [f"--IPKernelApp.exec_files={[str(Path(folder) / 'startup.py')]!r}"] if identity is not None else []
    return argv + _limits_argv(limits) + [kernel_python(), "-m", "ipykernel_launcher", *startup,
                                          "-f", "{connection_file}"]


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


def kernel_spec(folder: Path, limits: Limits = LIMITS, uid: int | None = None, enter: list[str] | tuple = ()) -> Path:
    """A kernelspec in ``folder/kernels/grading`` that starts a sandboxed kernel; its sockets go in the
    sandbox's own tmpfs over ``folder/SOCKETS``. With ``uid`` (the grader is root), ``folder`` is opened to
    be read by that uid."""
    spec = folder / "kernels" / "grading"
    spec.mkdir(parents=True)
    (folder / SOCKETS).mkdir()
    identity = folder / "identity"
    identity.mkdir()
    shown = uid if uid is not None else NOBODY
    (identity / "passwd").write_text(f"student:x:{shown}:{shown}:student:{HOME}:/bin/sh\n")
    (identity / "group").write_text(f"student:x:{shown}:\n")
    (folder / "startup.py").write_text(STARTUP.format(limit=limits.cell_output // 2, cut=CUT_IN_KERNEL))
    (spec / "kernel.json").write_text(json.dumps({
        "argv": sandbox_argv(folder, kernel_environment(), limits, uid, identity, enter),
        "display_name": "grading", "language": "python"}))
    if uid is not None:
        os.chmod(folder, 0o755)
    return folder / "kernels"


class _Uids:
    """The uids kernels run as where the grader is root: one each for the kernels running at once."""

    def __init__(self):
        import queue
        self.free = queue.Queue()
        import pwd
        taken = {entry.pw_uid for entry in pwd.getpwall()}
        for uid in SANDBOX_UIDS:
            if uid not in taken:    # a uid no account of the machine has: nothing on its disks is the kernel's
                self.free.put(uid)

    def take(self) -> int | None:
        return self.free.get() if as_root() else None

    def give(self, uid: int | None) -> None:
        if uid is not None:
            self.free.put(uid)


UIDS = _Uids()


def _sandboxed_manager(scratch: Path, limits: Limits, uid: int | None, enter: list[str] | tuple = ()):
    """jupyter_client's kernel manager, starting the sandbox; the connection file readable by ``uid``."""
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpecManager

    class SandboxedKernel(AsyncKernelManager):
        contexts: list = []

        def client(self, **kwargs):
            # At most 32 messages wait in the grader, none over the notebook's bound: a flood is dropped
            # in ZeroMQ (a larger message closes the connection), never held in the grader's memory.
            import zmq.asyncio
            context = zmq.asyncio.Context()
            context.setsockopt(zmq.RCVHWM, 32)
            context.setsockopt(zmq.MAXMSGSIZE, 4 * limits.notebook_output)
            self.contexts.append(context)
            return super().client(context=context, **kwargs)

        def close_contexts(self):
            """The clients' ZeroMQ contexts, ended once the kernel is (else each leaks its sockets and threads)."""
            while self.contexts:
                self.contexts.pop().destroy(linger=0)

        async def _async_launch_kernel(self, kernel_cmd, **kw):
            if uid is not None:
                os.chown(self.connection_file, uid, uid)
            await super()._async_launch_kernel(kernel_cmd, **kw)
            # The kernel binds its sockets in its own tmpfs; the grader reaches them through the sandbox's root.
            self.ip = sandbox_root(self.provisioner.process.pid) + inside

    kernels = kernel_spec(scratch, limits, uid, enter)
    inside = str(scratch / SOCKETS / "ipc")     # where the kernel's sockets are, as the kernel sees them
    return SandboxedKernel(kernel_name="grading", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]),
                           transport="ipc", ip=inside, connection_file=str(scratch / "connection.json"))


def sandbox_root(bwrap: int, wait: float = 30.0) -> str:
    """``/proc/PID/root`` of the sandbox that the bubblewrap process ``bwrap`` starts (its child's root)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                parent = int(stat.read_text().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if parent == bwrap:
                return f"/proc/{stat.parent.name}/root"
        time.sleep(0.01)
    raise NoSandbox(f"bubblewrap (pid {bwrap}) started no sandbox within {wait:g} s")


# What the probe runs in the sandbox: the course's package imported, a mark left in the sockets' tmpfs (which
# the grader then looks for through the sandbox's root, as it will reach a kernel's sockets), its pid and uid
# said, and the sandbox kept until the grader has looked.
PROBE = ("import os, sys, servingmath; open(sys.argv[1], 'w').close(); print(os.getpid(), os.getuid(), flush=True); "
         "sys.stdin.read()")


@lru_cache(maxsize=1)
def sandbox_problem() -> str:
    """'' where the sandbox starts here, else why not, in one line."""
    if sys.platform != "linux":
        return f"bubblewrap needs Linux, this is {sys.platform}"
    with tempfile.TemporaryDirectory(prefix="grade-probe-") as probe:
        (Path(probe) / SOCKETS).mkdir()
        uid = SANDBOX_UIDS[-1] if as_root() else None
        if uid is not None:
            os.chmod(probe, 0o755)
        try:
            argv = sandbox_argv(Path(probe), kernel_environment(), uid=uid)
        except NoSandbox as error:
            return str(error)
        mark = str(Path(probe) / SOCKETS / "probe")
        try:
            trial = subprocess.Popen(argv[: len(argv) - 4] + ["-c", PROBE, mark], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        except OSError as error:
            return f"bubblewrap cannot start ({error})"
        try:
            return _probed(trial, mark)
        finally:
            trial.kill()
            trial.communicate()


def _probed(trial: subprocess.Popen, mark: str) -> str:
    """What is wrong with the sandbox the probe ``trial`` started ('' for nothing)."""
    if not select.select([trial.stdout], [], [], 60)[0]:
        return "bubblewrap cannot start (the probe said nothing in 60 s)"
    said = trial.stdout.readline()
    if not said:
        trial.kill()
        last = (trial.communicate()[1].strip().splitlines() or ["no message"])[-1]
        return f"bubblewrap cannot start here ({last}); in a container, allow user namespaces or run it privileged"
    pid, _, user = said.strip().partition(" ")
    if pid not in ("1", "2", "3"):
        return "bubblewrap started without its own PID namespace"
    if user == "0":
        return "the sandbox's user is root"
    try:
        reached = os.path.exists(sandbox_root(trial.pid, wait=10) + mark)
    except NoSandbox:
        reached = False
    if not reached:
        return "the grader cannot reach the sandbox's files through /proc/PID/root (its kernel's sockets are there)"
    return ""
