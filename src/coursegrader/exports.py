"""The files an LMS imports: the grade book, Canvas's and Moodle's CSVs, the feedback files and zips, the report."""
from __future__ import annotations

import csv
import re
import shutil
import zipfile
from pathlib import Path

from .feedback import feedback_text, number
from .key import fingerprint
from .marking import Graded, columns, possible
from .rubric import Rubric
from . import cgroups
from .sandbox import LIMITS, MIB, Limits, sandbox_problem


OUTPUTS = ("grades.csv", "canvas.csv", "moodle.csv", "report.txt", "feedback", "feedback.zip", "moodle-feedback.zip")


def write_outputs(out: Path, marks: dict[str, Graded], problems, rubric: Rubric, bad, sandboxed: bool,
                  key: bytes | None = None, limits: Limits = LIMITS) -> None:
    """Every file of ``OUTPUTS`` in ``out``, after removing those an earlier run left."""
    out.mkdir(parents=True, exist_ok=True)
    for name in OUTPUTS:   # last run's files go first, so no old feedback is sent again
        target = out / name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
    most = possible(problems, rubric)
    write_grades(out / "grades.csv", marks, problems, rubric)
    write_canvas(out / "canvas.csv", marks, rubric, most)
    write_moodle(out / "moodle.csv", marks, rubric, most)
    write_feedback(out, marks, problems, rubric)
    write_report(out / "report.txt", marks, rubric, bad, sandboxed, key, limits)


TOGETHER = "a notebook's processes together"


def together(limits: Limits) -> str:
    """How a notebook's processes were bounded together: by a cgroup each, or (and why) only one by one."""
    if not cgroups.problem():
        return (f"{TOGETHER}: each notebook in a cgroup of its own, at most {limits.notebook_memory // MIB} MiB of "
                f"memory and {limits.processes} processes and threads in all")
    return (f"{TOGETHER}: NOT bounded, no cgroup ({cgroups.problem()}): each process of a notebook held to "
            f"{limits.memory // MIB} MiB of address space and each sandbox's user to {limits.processes} processes, "
            "so a notebook's processes together may hold many times that")


def write_grades(path: Path, marks: dict[str, Graded], problems, rubric: Rubric) -> None:
    keys, most = columns(problems, rubric), possible(problems, rubric)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "name", *(f"{name} {label}" for name, label in keys), "score", "out of",
                         "late", "notes"])
        for graded in marks.values():
            writer.writerow([graded.student.student, graded.student.name,
                             *(number(graded.points[key]) for key in keys), number(graded.total), number(most),
                             " ".join(graded.late), "; ".join(graded.notes)])


def write_canvas(path: Path, marks: dict[str, Graded], rubric: Rubric, most: float) -> None:
    """Canvas's gradebook import: its own columns, the student's name as Canvas wrote it where it did."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", rubric.assignment])
        writer.writerow(["Points Possible", "", "", "", "", number(most)])
        for graded in marks.values():
            student = graded.student
            writer.writerow([student.listed or _canvas_name(student.name), student.canvas_id, student.sis_user_id,
                             student.sis_login_id, student.section, number(graded.total)])


def write_moodle(path: Path, marks: dict[str, Graded], rubric: Rubric, most: float) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Full name", "Email address", "ID number", rubric.assignment, "Feedback"])
        for graded in marks.values():
            student = graded.student
            # From a Canvas roster: the SIS User ID as the ID number, an email-like login as the email.
            email = student.email or (student.sis_login_id if "@" in student.sis_login_id else "")
            writer.writerow([student.name, email, student.id_number or student.sis_user_id, number(graded.total),
                             f"{number(graded.total)} of {number(most)}"
                             + (f"; late: {', '.join(graded.late)}" if graded.late else "")
                             + ("; see the notes in your feedback file" if graded.notes else "")])


def write_feedback(out: Path, marks: dict[str, Graded], problems, rubric: Rubric) -> None:
    """feedback/STUDENT.txt; feedback.zip as Canvas's bulk upload names files; moodle-feedback.zip in the
    folders Moodle's "Upload multiple feedback files in a zip" reads (those of its "Download all")."""
    feedback = out / "feedback"
    feedback.mkdir(exist_ok=True)
    with zipfile.ZipFile(out / "feedback.zip", "w", zipfile.ZIP_DEFLATED) as canvas, \
            zipfile.ZipFile(out / "moodle-feedback.zip", "w", zipfile.ZIP_DEFLATED) as moodle:
        for graded in marks.values():
            text = feedback_text(graded, problems, rubric)
            (feedback / f"{graded.student.student}.txt").write_text(text, encoding="utf-8")
            canvas.writestr(canvas_feedback_name(graded), text)
            if graded.moodle_participant:
                moodle.writestr(moodle_feedback_name(graded), text)


def moodle_feedback_name(graded: Graded) -> str:
    """Full name_participant_assignsubmission_file_/feedback.txt, as Moodle's download names a submission."""
    return f"{graded.student.name}_{graded.moodle_participant}_assignsubmission_file_/feedback.txt"


def write_report(path: Path, marks: dict[str, Graded], rubric: Rubric, bad, sandboxed: bool,
                 key: bytes | None, limits: Limits = LIMITS) -> None:
    lines = [f"{rubric.assignment}: {len(marks)} students, {sum(len(g.handed_in) for g in marks.values())} "
             f"notebooks graded",
             "sandbox: " + ("bubblewrap: each kernel in its own PID, mount, network and IPC namespaces, as an "
                            "unprivileged user with limits, seeing only the system, Python and the course's "
                            "package, read-only" if sandboxed else
                            f"NONE (--unsafe; {sandbox_problem()}): students' code ran with the grader's rights"),
             *([together(limits)] if sandboxed else []),
             f"numbers: graded, drawn with the instructor's key (fingerprint {fingerprint(key)})" if key else
             "numbers: PRACTICE (--practice): drawn from IDs alone, so anyone can draw any student's", ""]
    blank = [(graded.student.student, name) for graded in marks.values() for name in graded.blank]
    if blank:
        lines += ["Handed in blank (no problem answered), graded 0:",
                  *(f"- {student}: {name}" for student, name in blank), ""]
    lines += ["Files not graded as handed in:" if bad else "Every file was graded as handed in."]
    lines += [f"- {path}: {reason}" for path, reason in sorted(bad, key=lambda item: str(item[0]))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def canvas_feedback_name(graded: Graded) -> str:
    """A student's feedback file as Canvas names a submission's files on download (lastfirst_userid_
    submissionid_file), so a bulk upload finds its student; by the roster's key where Canvas gave no ID."""
    student = graded.student
    if not student.canvas_id:
        return f"{student.student}.txt"
    parts = student.name.split()
    # Canvas's own "Last, First" where the roster gives it, else the name's last word first.
    written = student.listed.replace(",", " ") if student.listed else " ".join(parts[-1:] + parts[:-1])
    lastfirst = re.sub(r"[^a-z]", "", written.lower()) or "student"
    middle = f"_{graded.canvas_submission}" if graded.canvas_submission else ""
    return f"{lastfirst}_{student.canvas_id}{middle}_feedback.txt"


def _canvas_name(name: str) -> str:
    parts = name.split()
    return f"{parts[-1]}, {' '.join(parts[:-1])}" if len(parts) > 1 else name
