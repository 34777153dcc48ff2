"""Which student and which notebook a handed-in file is: folders, names, Canvas's and Moodle's downloads."""
from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from .roster import normal

SUFFIXES = (".ipynb", ".md")
# The most of a file the grader reads as a notebook: its saved outputs are dropped before it runs, so a larger
# one is images or data, and reading it whole would hold the grader's memory to nothing.
LARGEST = 64 * 2 ** 20


CANVAS = re.compile(r"^(?P<who>[a-z0-9]+?)(?P<late>_late)?_(?P<uid>\d+)_(?P<sid>\d+)_(?P<file>.+)$", re.I)
MOODLE = re.compile(r"^(?P<who>.+?)_(?P<pid>\d+)_assignsubmission_[a-z]+_?(?P<file>.*)$", re.I)


@dataclass
class Submission:
    path: Path
    student: str                       # as the file names them: a folder, a name, Canvas's lastfirst
    notebook: str
    lms_id: str | None = None          # Canvas's user ID from its file names
    lms_late: bool = False             # Canvas wrote LATE into the file name
    moodle_participant: str | None = None   # Moodle's participant number from its folder names
    canvas_submission: str | None = None    # Canvas's submission ID from its file names
    submitted: dt.datetime | None = None
    time_from: str = ""                # where the time came from
    within: tuple[str, ...] = ()       # the folders below the first, as written: "zipped/cy/..." has ("cy",)


def identify(path: Path, submissions: Path, names: list[str]) -> tuple[str, str] | None:
    """(student, notebook name) for a submitted file, or None if it names no notebook or no student."""
    found = _identify(path, submissions, names)
    return None if isinstance(found, str) else (found.student, found.notebook)


def _identify(path: Path, submissions: Path, names: list[str]) -> Submission | str:
    """The submission a file is, or the reason it is none."""
    found = _named(path, submissions, names)
    if not isinstance(found, str):
        found.within = path.relative_to(submissions).parts[1:-1]
    return found


def _named(path: Path, submissions: Path, names: list[str]) -> Submission | str:
    """The submission a file's name and first folder say it is, or the reason it is none."""
    parts = path.relative_to(submissions).parts
    first = parts[0] if len(parts) > 1 else None
    file_part, who, lms_id, late = path.stem, None, None, False
    canvas = CANVAS.match(path.name) if first is None else None
    moodle = MOODLE.match(first or path.name)
    if canvas:
        who, lms_id, late, file_part = canvas["who"], canvas["uid"], bool(canvas["late"]), Path(canvas["file"]).stem
    elif moodle:
        who = moodle["who"]
        file_part = path.stem if first else Path(moodle["file"]).stem
    elif first is not None:
        who = first
    stem = normal(file_part)
    for name in sorted(names, key=len, reverse=True):
        match = re.search(rf"(?:^|-){re.escape(name)}(?:-|$)", stem)
        if not match:
            continue
        if who is None:
            # Colab names a copy "Copy of ...": those words name no student.
            who = re.sub(r"(?:^|-)copy-of(?=-|$)", "", stem[:match.start()]).strip("-")
            who = who or stem[match.end():].strip("-")
            who = re.sub(r"^\d+$", "", who)  # "lesson-1-part-1 (1)": a copy number, not a student
        if not who:
            return "its name says which notebook it is but not whose (put the student's name first, or a folder each)"
        return Submission(path, normal(who) if not canvas else who.lower(), name, lms_id, late,
                          moodle_participant=moodle["pid"] if moodle and not canvas else None,
                          canvas_submission=canvas["sid"] if canvas else None)
    named = notebook_in_metadata(path)
    if named in names:   # renamed, but the graded release's metadata says which notebook it is
        if who is None and first is None:
            return "its metadata says which notebook it is but its name not whose (put the student's name first)"
        return Submission(path, normal(who or "") if not canvas else who.lower(), named, lms_id, late,
                          moodle_participant=moodle["pid"] if moodle and not canvas else None,
                          canvas_submission=canvas["sid"] if canvas else None)
    return f"its name matches none of the notebooks graded ({', '.join(names)})"


def notebook_in_metadata(path: Path) -> str | None:
    """The notebook a graded release's metadata names (``servingmath: notebook:``), or None."""
    try:
        raw = path.read_text(encoding="utf-8")
        if path.suffix.lower() == ".ipynb":
            metadata = json.loads(raw).get("metadata", {})
        else:
            front = re.match(r"^---\n(.*?)\n---\n", raw, flags=re.S)
            metadata = yaml.safe_load(front.group(1)) if front else {}
        named = (metadata or {}).get("servingmath", {}).get("notebook")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError, yaml.YAMLError):
        return None
    return named if isinstance(named, str) else None


def _shown(folder: Path) -> list[Path]:
    return [entry for entry in folder.iterdir() if not entry.name.startswith(".") and entry.name != "__MACOSX"]


def unwrapped(submissions: Path) -> Path:
    """The folder whose folders are the students': ``submissions``, or, where it holds one folder alone (and
    that one another alone, and so on), the first below that holds nothing but several folders (a download
    unpacked into a folder of its own)."""
    folder = submissions
    while len(_shown(folder)) == 1 and _shown(folder)[0].is_dir() and not _shown(folder)[0].is_symlink():
        folder = _shown(folder)[0]
    inside = _shown(folder)
    if len(inside) >= 2 and all(entry.is_dir() and not entry.is_symlink() for entry in inside):
        return folder
    return submissions


def find_submissions(submissions: Path, names: list[str]) -> tuple[list[Submission], list[tuple[Path, str]]]:
    """Every submitted notebook file, and every other file with the reason it is not one."""
    found, bad = [], []
    students = unwrapped(submissions)
    for path in sorted(submissions.rglob("*")):
        relative = path.relative_to(submissions)
        if path.is_symlink():
            # A link in an unpacked zip may point anywhere: another student's notebook, a file of the machine.
            bad.append((path, "is a link, not a file handed in, skipped (a zip may hold links to anywhere)"))
            continue
        if not path.is_file():
            continue
        if any(part.startswith(".") or part == "__MACOSX" for part in relative.parts):
            bad.append((path, "is a hidden or system file (a checkpoint, a macOS resource fork), skipped"))
            continue
        if path.suffix.lower() not in SUFFIXES:
            bad.append((path, f"is a {path.suffix or 'file without an extension'}, not a notebook (.ipynb or .md)"))
            continue
        if path.stat().st_size > LARGEST:
            bad.append((path, f"is {path.stat().st_size / 2 ** 20:.0f} MiB, more than the {LARGEST // 2 ** 20} MiB "
                              "the grader reads of a notebook: clear its outputs and hand it in again"))
            continue
        submission = _identify(path, students, names)
        if isinstance(submission, str):
            bad.append((path, submission))
        else:
            found.append(submission)
    return found, bad
