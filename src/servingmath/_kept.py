"""Lesson 3's slow simulations kept on disk, for the processes that run the same ones.

Where ``SERVINGMATH_RESULTS`` names a folder (``make`` sets it for the book, the tests and ``make lab``),
a load curve's run and a goodput search's rate are written there once computed, and read back by any
later process: the book's build, the JupyterLab test's kernels and the unit tests run the same lesson 3
simulations, each in processes of their own. A result is filed under its arguments and a digest of the
package's source and data, so a changed formula or catalog never reads an old result. Only arrays are
kept (NumPy's ``.npz``, read without pickle); the objects around them are made again from the
arguments. Where the variable is unset (a reader's notebook, Colab, the grader's sandbox) every result
is computed.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from functools import lru_cache
from pathlib import Path

import numpy as np

VARIABLE = "SERVINGMATH_RESULTS"


@lru_cache(maxsize=1)
def package_digest() -> str:
    """A digest of every file of the package (its source and its data), bytecode aside."""
    package = Path(__file__).parent
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def kept_arrays(kind: str, arguments: tuple, compute) -> dict[str, np.ndarray]:
    """``compute()`` (a dict of arrays), or what it returned before for the same ``kind`` and ``arguments``.

    Their ``repr`` names the result, so each argument must be a value whose ``repr`` says all of it, as the
    package's dataclasses do."""
    folder = os.environ.get(VARIABLE)
    if not folder:
        return compute()
    name = hashlib.blake2b(repr(arguments).encode(), digest_size=16).hexdigest()
    path = Path(folder) / package_digest() / f"{kind}-{name}.npz"
    try:
        with np.load(path, allow_pickle=False) as stored:
            return {key: stored[key] for key in stored.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):   # none there, or one half written
        pass
    arrays = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written whole under another name, then renamed: a process reading at the same time never sees half of it.
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{kind}-", suffix=".npz", delete=False) as file:
        np.savez_compressed(file, **arrays)
    os.replace(file.name, path)
    return arrays
