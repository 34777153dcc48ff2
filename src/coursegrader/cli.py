"""Grade a term's problem notebooks: run each in a sandbox, mark it by a rubric, write what the LMS imports.

    python -m coursegrader SUBMISSIONS [--rubric grading/rubric.yml] [--roster ROSTER.csv]
                           [--times TIMES.csv] [--out grades] [--jobs N] [limits]
    python -m coursegrader key                  make the instructor's key (make exercises does), say where it is
    python -m coursegrader codes ROSTER.csv     each student's graded ID (their ID and its code), to hand out

SUBMISSIONS is a folder of notebooks (.ipynb, or .md as jupytext writes them) as they come:

    SUBMISSIONS/alice/lesson-1-part-1.ipynb                        a folder for each student
    SUBMISSIONS/bob-lesson-1-part-1.ipynb                          the student's name, then the notebook's
    SUBMISSIONS/smithjohn_LATE_1234_5678_lesson-1-part-1.ipynb     Canvas's "Download Submissions"
    SUBMISSIONS/John Smith_4321_assignsubmission_file_/Lesson_1_Part_1.ipynb     Moodle's "Download all"

A file counts as the notebook whose name (those in solutions/) it contains, whatever the case and
the spaces, dots and underscores. The rubric (YAML) names the notebooks graded and each problem's
points, the share a "close" answer earns, the deadline, the grace and the late penalty, and the
wall-clock seconds each notebook may run, all its cells together. The roster (the LMS's gradebook
export, Canvas's or Moodle's, or a CSV with a ``student`` column) lists everyone, so a student who
handed in nothing gets a row of zeros; a student may enter any of their IDs on it (SIS ID, ID
number, login, email). A submission's time comes from the LMS where it says: the times CSV
(Moodle's grading worksheet, or ``student, submitted``), or Canvas's ``LATE`` in a file name;
otherwise it is taken as on time (a file's date says when it was copied, not handed in).

Each notebook runs from a clean start, its saved outputs dropped, in a bubblewrap sandbox
(``coursegrader.sandbox``): its own PID, mount, network and IPC namespaces, an unprivileged user,
no capabilities, the system, Python and the course's package read-only, small tmpfs of its own,
limits on processes, memory, file sizes and output, and nothing else of the machine; where the
grader can make a cgroup (``coursegrader.cgroups``), all of a notebook's processes together are
bounded in memory and number too, and ``report.txt`` says whether they were. Every check
cell is replaced by one that only records the answer, and the answers are marked in the grader's
process against each student's own numbers, drawn with the instructor's key (``coursegrader.key``).

``--out`` (made if missing; the files below that an earlier run left are removed first) receives
``grades.csv``, ``canvas.csv`` (Canvas's gradebook import), ``moodle.csv`` (Moodle's grade import),
``feedback/STUDENT.txt``, ``feedback.zip`` (named as Canvas names submissions, for its bulk upload),
``moodle-feedback.zip`` (folders named as Moodle's "Download all", for its feedback-files upload)
and ``report.txt`` (every file not graded as handed in, and why).
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path

from . import RUBRIC, SOLUTIONS, cgroups
from .exports import OUTPUTS, together, write_outputs
from .feedback import summary
from .key import NoKey, create, fingerprint, graded_id, key_path, load
from .marking import grade, notebook_names, public_answers, reference
from .roster import Times, load_roster, load_times
from .rubric import load_rubric
from .sandbox import LIMITS, MIB, Limits, sandbox_problem


def parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser(prog="python -m coursegrader", description=__doc__.split("\n\n")[0],
                                   epilog="Also: `python -m coursegrader key`, `python -m coursegrader codes ROSTER`.")
    made.add_argument("submissions", type=Path, help="folder of submitted notebooks")
    made.add_argument("--out", type=Path, default=Path("grades"), help="folder for the grade files (grades/)")
    made.add_argument("--rubric", type=Path, default=RUBRIC if RUBRIC.is_file() else None,
                      help="the rubric (grading/rubric.yml): notebooks, points, deadline, time limit")
    made.add_argument("--roster", type=Path, help="the class list: an LMS gradebook export, or a CSV with `student`")
    made.add_argument("--times", type=Path, help="submission times: Moodle's grading worksheet or student,submitted")
    made.add_argument("--solutions", type=Path, default=SOLUTIONS, help="folder of the reference solutions")
    made.add_argument("--notebooks", nargs="+", metavar="NAME", help="grade only these notebooks")
    made.add_argument("--time-limit", type=float, help="seconds each notebook may run in all (the rubric's, or 60)")
    made.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                      help="notebooks run at once, each in its own kernel (default: one per CPU)")
    made.add_argument("--practice", action="store_true",
                      help="grade practice numbers (IDs entered without codes): for a release made without the key")
    made.add_argument("--unsafe", action="store_true",
                      help="grade even where no sandbox can start, running students' code with your rights")
    limits = made.add_argument_group("limits on each notebook (defaults a laptop grading on every processor survives)")
    limits.add_argument("--max-processes", type=int, default=LIMITS.processes, help=f"({LIMITS.processes})")
    limits.add_argument("--max-memory-mib", type=int, default=LIMITS.memory // MIB,
                        help=f"address space of each process ({LIMITS.memory // MIB})")
    limits.add_argument("--max-notebook-memory-mib", type=int, default=LIMITS.notebook_memory // MIB,
                        help=f"memory of all a notebook's processes together, where the grader can make a cgroup "
                             f"({LIMITS.notebook_memory // MIB}); --max-processes bounds its processes there too")
    limits.add_argument("--max-file-mib", type=int, default=LIMITS.file_size // MIB,
                        help=f"largest file it writes ({LIMITS.file_size // MIB})")
    limits.add_argument("--max-tmp-mib", type=int, default=LIMITS.tmp // MIB,
                        help=f"/tmp and /dev/shm, each ({LIMITS.tmp // MIB}); the home folder is twice this")
    limits.add_argument("--max-output-kib", type=int, default=LIMITS.cell_output // 1024,
                        help=f"output a cell may show ({LIMITS.cell_output // 1024}); a notebook, 8 times this")
    return made


def limits_of(options) -> Limits:
    for name in ("max_processes", "max_memory_mib", "max_notebook_memory_mib", "max_file_mib", "max_tmp_mib",
                 "max_output_kib"):
        if getattr(options, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be 1 or more, got {getattr(options, name)}")
    return Limits(processes=options.max_processes, memory=options.max_memory_mib * MIB,
                  notebook_memory=options.max_notebook_memory_mib * MIB,
                  file_size=options.max_file_mib * MIB, open_files=LIMITS.open_files, home=2 * options.max_tmp_mib * MIB,
                  tmp=options.max_tmp_mib * MIB, cell_output=options.max_output_kib * 1024,
                  notebook_output=8 * options.max_output_kib * 1024)


def refusal(options) -> str:
    """Why the command grades nothing ('' if it may go on)."""
    if not options.submissions.is_dir():
        return f"{options.submissions} is not a folder"
    if sandbox_problem() and not options.unsafe:
        return (f"no sandbox: {sandbox_problem()}; refusing to run students' code without one "
                "(--unsafe to run it anyway)")
    return ""


def setting_up(options):
    """(rubric, roster, times, key, limits, reference answers) from the options; ValueError says what is wrong."""
    names = notebook_names(options.solutions)
    unknown = sorted(set(options.notebooks or []) - set(names))
    if unknown or not names:
        raise ValueError(f"notebooks must be among {names}, got {unknown or 'none in ' + str(options.solutions)}")
    key = None
    if not options.practice:
        try:
            key = load()
        except NoKey as error:
            raise ValueError(f"{error}; or --practice to grade practice numbers (IDs without codes)") from error
    rubric = load_rubric(options.rubric, names)
    if options.notebooks:
        rubric.notebooks = {name: rubric.notebooks.get(name, {}) for name in options.notebooks}
    if options.time_limit is not None:
        rubric.time_limit = options.time_limit
    roster = load_roster(options.roster) if options.roster else None
    times = load_times(options.times, rubric.timezone) if options.times else Times()
    limits = limits_of(options)
    options.out.mkdir(parents=True, exist_ok=True)
    problems = reference(list(rubric.notebooks), options.solutions, jobs=options.jobs)
    for name, weights in rubric.notebooks.items():
        stray = sorted(set(weights) - set(problems[name]))
        if stray:
            raise ValueError(f"the rubric gives points to {name} problems {stray}, which it does not have")
    return rubric, roster, times, key, limits, problems


def main(argv: list[str]) -> int:
    if argv[:1] in (["key"], ["codes"]):
        return keys(argv)
    options = parser().parse_args(argv)
    refused = refusal(options)
    if refused:
        print(f"grade: {refused}", file=sys.stderr)
        return 2
    try:
        rubric, roster, times, key, limits, problems = setting_up(options)
    except (ValueError, OSError, RuntimeError) as error:
        print(f"grade: {error}", file=sys.stderr)
        return 2
    for line in public_answers(problems):
        print(f"grade: warning: {line}", file=sys.stderr)
    if not sandbox_problem() and cgroups.problem():
        print(f"grade: warning: {together(limits)}", file=sys.stderr)
    marks, bad, sandboxed = grade(options.submissions, problems, rubric, roster, times, options.jobs, options.unsafe,
                                  key, limits)
    write_outputs(options.out, marks, problems, rubric, bad, sandboxed, key, limits)
    for path, reason in bad:
        print(f"grade: {path}: {reason}", file=sys.stderr)
    print(f"{summary(marks, problems, rubric)}; wrote {options.out}/ ({', '.join(OUTPUTS)})")
    return 0


def keys(argv: list[str]) -> int:
    """``key``: make the key where it is missing; ``codes ROSTER [--out FILE]``: each student's graded ID."""
    if argv[0] == "key":
        path, made = create()
        print(f"{'made' if made else 'kept'} the instructor's key {path} (fingerprint {fingerprint(load())}); "
              "keep it, outside the repository, until the term's grading is done")
        return 0
    made = argparse.ArgumentParser(prog="python -m coursegrader codes")
    made.add_argument("roster", type=Path)
    made.add_argument("--out", type=Path, default=Path("codes.csv"))
    options = made.parse_args(argv[1:])
    try:
        key, roster = load(), load_roster(options.roster)
    except (NoKey, ValueError, OSError) as error:
        print(f"codes: {error}", file=sys.stderr)
        return 2
    with options.out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "name", "email", "enter in the setup cell"])
        for student in roster:
            writer.writerow([student.student, student.name, student.email or student.sis_login_id,
                             graded_id(key, student.variant_id)])
    print(f"codes: {len(roster)} students' graded IDs in {options.out} (key {key_path()}, fingerprint "
          f"{fingerprint(key)})")
    return 0
