"""The instructor's key: a secret kept outside the repository that makes each student's graded numbers
theirs alone.

A graded notebook draws a student's numbers from what they enter in its setup cell
(``servingmath.variants``), with code anyone can read. An ID entered alone therefore gives numbers
anyone can draw for that ID: practice numbers. For graded work each student enters their ID and a
code made from the key, ``S1001/7KQ3-M9XD``; the code is eight characters of HMAC-SHA256 of the ID
under the key, so without the key no one can make it, nor draw the numbers it gives. The student is
given their code (``python -m coursegrader codes``); the grader, holding the key, makes it again for
every ID on the roster. The key never enters a student's kernel or the released notebooks.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from . import ROOT

ENV = "SERVINGMATH_GRADING_KEY"             # the key itself (a CI secret, say)
FILE_ENV = "SERVINGMATH_GRADING_KEY_FILE"   # where the key file is, if not the default
DEFAULT = Path("~/.config/servingmath/grading-key")
SEPARATOR = "/"
ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"   # Crockford's: no I, L, O or U to misread


class NoKey(RuntimeError):
    """No key where the grader looks; the message says where it looked and how to make one."""


def key_path() -> Path:
    return Path(os.environ.get(FILE_ENV) or DEFAULT).expanduser()


def load() -> bytes:
    """The key, from ``SERVINGMATH_GRADING_KEY`` or the key file; NoKey if there is none."""
    if os.environ.get(ENV):
        return os.environ[ENV].strip().encode()
    path = key_path()
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError as error:
        raise NoKey(f"no instructor's key: {ENV} is unset and {path} cannot be read ({error.strerror}); "
                    "`make exercises` makes one") from error
    if len(text) < 32:
        raise NoKey(f"the key in {path} is too short ({len(text)} characters; 32 or more)")
    return text.encode()


def create(path: Path | None = None) -> tuple[Path, bool]:
    """Make the key file (32 random bytes, readable by its owner alone) unless it exists: (path, made)."""
    path = (path or key_path()).expanduser().resolve()
    if path == ROOT or ROOT in path.parents:
        raise ValueError(f"the key must live outside the repository, got {path}")
    if path.exists():
        return path, False
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(secrets.token_hex(32) + "\n")
    return path, True


def _plain(identifier: str) -> str:
    return str(identifier).strip().lower()


def code(key: bytes, identifier: str) -> str:
    """The code of ``identifier`` under ``key``: eight characters, as ``7KQ3-M9XD``."""
    digest = hmac.new(key, f"variant\n{_plain(identifier)}".encode(), hashlib.sha256).digest()
    value = int.from_bytes(digest[:5], "big")
    letters = "".join(ALPHABET[(value >> shift) & 31] for shift in range(35, -1, -5))
    return f"{letters[:4]}-{letters[4:]}"


def graded_id(key: bytes, identifier: str) -> str:
    """What a student enters for graded work: their ID, a slash, their code."""
    return f"{str(identifier).strip()}{SEPARATOR}{code(key, identifier)}"


def split(entered: str) -> tuple[str, str]:
    """(the ID, the code or '') of what a notebook shows, as the seed reads it (lower case)."""
    identifier, _, given = _plain(entered).partition(SEPARATOR)
    return identifier.strip(), given.strip()


def fingerprint(key: bytes) -> str:
    """A short name for a key, to tell which key a run used without showing it."""
    return hashlib.sha256(b"fingerprint\n" + key).hexdigest()[:12]
