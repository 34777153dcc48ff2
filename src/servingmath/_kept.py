"""The course's slow simulations kept on disk, for the processes that run the same ones.

Where ``SERVINGMATH_RESULTS`` names an absolute folder (``make`` sets it for the book, the tests and
``make lab``), a simulated run (``load.run``, ``load.engine_run``; copies behind a router, ``replicas.routed``, as
the figures read off the run), a goodput search (``load.capacity``, ``load.engine_capacity``, keyed by the
engine as well as its server; ``disaggregation.goodput``) and a run's requests' latencies (each rate a goodput
search tries, ``simulator.goodput``; a layout's run, ``disaggregation.attainment``) are written under
its ``servingmath-kept/`` once computed, and read back by any later process: the book's build, the
JupyterLab test's kernels and the unit tests run the same simulations, each in processes of
their own. Results are filed under a digest of the package as it was imported (every file of its
source and data) and of the Python and NumPy that ran it; a process whose package files have changed
since it imported them neither reads nor writes, and the results of other digests are removed when
the first result of a new one is written. Only arrays are kept (NumPy's ``.npz``, read without
pickle); the objects around them are made again from the arguments. Where the variable is unset (a
reader's notebook, Colab, the grader's sandbox), or the folder cannot be written, every result is
computed.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import stat
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

try:
    import fcntl
except ImportError:     # Windows: no lock between processes, each computes what it does not find
    fcntl = None

FOLDER_VARIABLE = "SERVINGMATH_RESULTS"
SUBFOLDER = "servingmath-kept"
PACKAGE = Path(__file__).parent
# What is written: a digest's folder, and in it the results and the files being written.
DIGEST_NAME = re.compile(r"[0-9a-f]{32}")
RESULT_NAME = re.compile(r"(run|goodput|try)-[0-9a-f]{32}\.(npz|lock)|\.partial-\w+\.npz")
# NumPy's .npz, its whole numbers compressed at zlib's fastest level (less than half the time of
# ``np.savez_compressed``'s level 6, for files a few per cent larger) and its floats stored as they are: a run's
# step times and ends shrink by a fifth at most, for two thirds of the time spent writing it.
COMPRESSION = 1


def package_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def package_digest() -> str:
    """A digest of every file of the package (its source and its data, bytecode aside), and of the Python and
    NumPy that compute with it."""
    digest = hashlib.blake2b(f"{sys.version} {sys.platform} {np.__version__}".encode(), digest_size=16)
    for path in package_files():
        digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _stamps(paths=None) -> list[tuple]:
    """A stamp of each of ``paths``, by default the package's files and folders (bytecode aside, as in the digest): a
    file's time and size, a folder's names, so that a file edited changes its own stamp and a file added or removed
    its folder's. A result's look-up stamps the paths of the import's stamps again, without listing the package anew
    (0.2 ms against 1 to 1.5 ms, a few thousand look-ups a process)."""
    if paths is None:
        paths = [PACKAGE, *sorted(p for p in PACKAGE.rglob("*") if "__pycache__" not in p.parts)]
    return [_stamp(path) for path in paths]


def _stamp(path: Path) -> tuple:
    found = path.stat()
    if stat.S_ISDIR(found.st_mode):     # its names, not its time: a __pycache__ made there after the import is no change
        return path, tuple(sorted(name for name in os.listdir(path) if name != "__pycache__"))
    return path, found.st_mtime_ns, found.st_size


# Taken once, as the package is imported (servingmath/__init__ imports this module first).
DIGEST, STAMPS = package_digest(), _stamps()


def kept_arrays(kind: str, arguments: tuple, compute) -> dict[str, np.ndarray]:
    """``compute()`` (a dict of arrays), or what it returned before for the same ``kind`` and ``arguments``.

    Their ``repr`` names the result, so each argument must be a value whose ``repr`` says all of it, as the
    package's dataclasses do."""
    folder = os.environ.get(FOLDER_VARIABLE)
    if not folder or not os.path.isabs(folder):
        return compute()
    try:
        if _stamps([stamp[0] for stamp in STAMPS]) != STAMPS:   # edited since imported: old code may run beside new
            return compute()
    except OSError:
        return compute()
    name = hashlib.blake2b(repr(arguments).encode(), digest_size=16).hexdigest()
    path = Path(folder) / SUBFOLDER / DIGEST / f"{kind}-{name}.npz"
    kept = _read(path)
    if kept is not None:
        return kept
    # One process computes a result while the others that want it wait, then read it: the unit tests' workers,
    # the book and the JupyterLab test run the same simulations side by side.
    with _alone(path):
        kept = _read(path)
        if kept is not None:
            return kept
        arrays = compute()
        try:
            _write(path, arrays)
        except OSError:     # a folder that cannot be written keeps nothing; the result stands
            pass
    return arrays


def _read(path: Path) -> dict[str, np.ndarray] | None:
    try:
        with np.load(path, allow_pickle=False) as stored:
            return {key: stored[key] for key in stored.files}
    except Exception:   # none there yet, or one that cannot be read whole: computed again
        return None


@contextlib.contextmanager
def _alone(path: Path):
    """Holds the lock of ``path``'s result (a file beside it) while the block runs; where no lock can be had (a
    folder that cannot be written, a system without ``fcntl``) the block runs unlocked."""
    try:
        _folder(path.parent)
        lock = open(path.with_suffix(".lock"), "a")
    except OSError:
        yield
        return
    with lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _folder(folder: Path):
    if not folder.is_dir():
        _remove_other_digests(folder.parent)
        folder.mkdir(parents=True, exist_ok=True)


def _write(path: Path, arrays: dict[str, np.ndarray]):
    _folder(path.parent)
    # Written whole under another name, then renamed: a process reading at the same time never sees half of it.
    file = tempfile.NamedTemporaryFile(dir=path.parent, prefix=".partial-", suffix=".npz", delete=False)
    try:
        with file, zipfile.ZipFile(file, "w", zipfile.ZIP_DEFLATED, compresslevel=COMPRESSION) as archive:
            for key, array in arrays.items():
                array, data = np.asanyarray(array), io.BytesIO()
                np.lib.format.write_array(data, array, allow_pickle=False)
                archive.writestr(f"{key}.npy", data.getbuffer(),
                                 zipfile.ZIP_STORED if array.dtype.kind == "f" else zipfile.ZIP_DEFLATED)
        os.chmod(file.name, 0o644)
        os.replace(file.name, path)
    finally:
        if os.path.exists(file.name):
            os.unlink(file.name)


def _remove_other_digests(kept: Path):
    """Another version's results, and nothing else: only files named as results are removed, then their
    folder if that leaves it empty."""
    if not kept.is_dir():
        return
    for other in kept.iterdir():
        if other.is_dir() and DIGEST_NAME.fullmatch(other.name) and other.name != DIGEST:
            for result in other.iterdir():
                if RESULT_NAME.fullmatch(result.name):
                    result.unlink(missing_ok=True)
            try:
                other.rmdir()
            except OSError:
                pass
