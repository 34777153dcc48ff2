"""Marking: the reference answers, each student's own expected answers, the course's tolerance, one
student's marks for every notebook."""
from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from pathlib import Path

from servingmath import variants
from servingmath.checks import check

from . import SOLUTIONS, answers
from .roster import Student, Times, squash
from .rubric import Rubric
from .key import code, graded_id, split
from .running import Run, release_cells, run_many
from .sandbox import LIMITS, Limits, NoSandbox, sandbox_problem
from .submissions import Submission, find_submissions


def notebook_names(solutions: Path = SOLUTIONS) -> list[str]:
    return [path.stem for path in sorted(solutions.glob("*.md"))]


def reference(names: list[str], solutions: Path = SOLUTIONS, time_limit: float = 300,
              jobs: int = 1) -> dict[str, dict[str, dict]]:
    """Each notebook's problems, in order, from running its solution: label -> record.

    Raises RuntimeError if a solution fails to run or any of its checks is not right,
    since grading against it would be wrong.
    """
    problems = {}
    for name, ran in zip(names, run_many([solutions / f"{name}.md" for name in names], time_limit, jobs)):
        not_right = [label for label, record in ran.records.items() if record.get("status") != "right"]
        if ran.unreadable or ran.problems or not_right or not ran.records:
            raise RuntimeError(f"the solution {name}.md cannot be the reference: "
                               f"{ran.unreadable or '; '.join(ran.problems) or 'no checks'}; not right: {not_right}")
        problems[name] = ran.records
    return problems


DEFAULT_REL = 0.02


def tolerance(expected, rel: float) -> float:
    """The course's rule for a number: a count (a whole number asked exactly) exactly; any other figure
    within the problem's own tolerance, 2 % where it sets none, so an answer rounded to three significant
    figures is right. A figure a problem asks exactly but that is not whole (a ratio of two counts, for
    one student's numbers) is held to 2 %."""
    if isinstance(expected, (int, float)) and not isinstance(expected, bool) and rel == 0 \
            and not float(expected).is_integer():
        return DEFAULT_REL
    return rel


def mark(record: dict | None, expected: dict):
    """The student's recorded answer, checked again against the reference's figure by the course's rule
    (``tolerance``): a Result."""
    answer = None if record is None else record.get("answer")
    if isinstance(answer, dict) and set(answer) == {"type", "repr"}:
        # What the kernel could not record as a number or a word: told as what it was there.
        answer = type(str(answer["type"]), (), {"__repr__": lambda self, shown=str(answer["repr"]): shown})()
    slips = expected.get("slips")
    return check(answer, expected["expected"], rel=tolerance(expected["expected"], expected["rel"]),
                 label=expected["label"],
                 units=expected["units"], choices=expected["choices"],
                 slips=None if not slips else {name: (entry[0], entry[1]) for name, entry in slips.items()})


@dataclass
class Graded:
    """One student's marks: points by (notebook, label), what each answer was told, notes."""

    student: Student
    points: dict[tuple[str, str], float] = field(default_factory=dict)
    feedback: dict[tuple[str, str], str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    late: list[str] = field(default_factory=list)
    handed_in: dict[str, str] = field(default_factory=dict)   # notebook -> the file graded
    blank: list[str] = field(default_factory=list)            # notebooks handed in with no problem answered
    late_notes: dict[str, str] = field(default_factory=dict)  # notebook -> how late, by whose clock
    canvas_submission: str = ""                               # Canvas's submission ID, for the feedback zip
    identities: dict[str, str] = field(default_factory=dict)  # notebook -> whose numbers it was marked by
    moodle_participant: str = ""                              # Moodle's participant number, for its feedback zip

    @property
    def total(self) -> float:
        return round(sum(self.points.values()), 4)


def columns(problems: dict[str, dict[str, dict]], rubric: Rubric) -> list[tuple[str, str]]:
    return [(name, label) for name, records in problems.items() if name in rubric.notebooks for label in records]


def possible(problems, rubric: Rubric) -> float:
    return round(sum(rubric.points(name, label) for name, label in columns(problems, rubric)), 4)


@dataclass
class Term:
    """What one run grades by: the rubric's reference answers, the roster (None: whoever handed in), the
    LMS's times, the instructor's key (None: practice numbers, drawn from IDs alone) and the sandbox's limits."""

    problems: dict[str, dict[str, dict]]
    rubric: Rubric
    roster: list[Student] | None = None
    times: Times = field(default_factory=Times)
    key: bytes | None = None
    limits: Limits = LIMITS


def _aliases(students: dict[str, Student]) -> tuple[dict[str, Student], set[str]]:
    """Each student by every name and login that names them alone, and the names two students share."""
    by_alias, shared = {}, set()
    for student in students.values():
        for alias in student.aliases:
            if alias in by_alias and by_alias[alias] is not student:
                shared.add(alias)     # two students share a name: it identifies neither
            by_alias[alias] = student
    for alias in shared:
        del by_alias[alias]
    return by_alias, shared


def _not_found(submission: Submission, shared: set[str]) -> str:
    if squash(submission.student) in shared:
        why = ("shares a name with another student on the roster, and no Canvas ID or Moodle participant number in "
               "the file or the times tells which (give Moodle's grading worksheet as --times)")
    elif squash(submission.student) in ("studenttest", "teststudent"):
        why = "is Canvas's Test Student (Student View), left out as no student"
    else:
        why = "is not on the roster"
    return f"names a student ({submission.student}) who {why}"


def _timed(submission: Submission, student: Student, times: Times, shared: set[str]) -> None:
    """The submission's time from the LMS, where it gives one."""
    moment = times.of(f"participant:{submission.moodle_participant}" if submission.moodle_participant else "",
                      squash(student.email), squash(student.email.split("@")[0]), squash(student.student),
                      squash(student.id_number), squash(student.sis_user_id), squash(student.sis_login_id),
                      squash(submission.student) if squash(submission.student) not in shared else "",
                      squash(student.name) if squash(student.name) not in shared else "")
    if moment is not None:
        submission.submitted, submission.time_from = moment, "the LMS's times"
    elif submission.lms_late:
        submission.time_from = "Canvas (LATE in the file name)"
    else:
        # A file's own date says when it was unzipped or copied, not when it was handed in.
        submission.time_from = "no time from the LMS: taken as on time"


def match(found: list[Submission], students: dict[str, Student], term: Term, bad: list):
    """Each submission's student (added to ``students`` where there is no roster): {(student, notebook): [files]}."""
    by_alias, shared = _aliases(students)
    by_canvas_id = {student.canvas_id: student for student in students.values() if student.canvas_id}
    slots: dict[tuple[str, str], list[Submission]] = {}
    for submission in found:
        student = by_canvas_id.get(submission.lms_id or "")
        email = term.times.emails.get(submission.moodle_participant or "")
        if student is None and email:     # Moodle's folder gives the participant, the worksheet their email
            student = by_alias.get(squash(email)) or by_alias.get(squash(email.split("@")[0]))
        # The first folder names the student; in a folder unpacked inside another, one further down may.
        student = student or next((by_alias[squash(name)] for name in (submission.student, *submission.within)
                                   if squash(name) in by_alias), None)
        if student is None:
            if term.roster is not None:
                bad.append((submission.path, _not_found(submission, shared)))
                continue
            student = students.setdefault(submission.student, Student(submission.student, submission.student))
        _timed(submission, student, term.times, shared)
        slots.setdefault((student.student, submission.notebook), []).append(submission)
    return slots


def newest(slots, submissions: Path, bad: list) -> dict[tuple[str, str], Submission]:
    """The latest copy each student handed in of each notebook; the others go in the report."""
    chosen = {}
    for slot, candidates in slots.items():
        chosen[slot] = max(candidates, key=lambda item: (
            item.submitted or dt.datetime.min.replace(tzinfo=dt.timezone.utc), item.path.stat().st_mtime,
            str(item.path)))
        for older in candidates:
            if older is not chosen[slot]:
                bad.append((older.path, f"a second copy of {slot[1]} from {slot[0]}; graded the later "
                                        f"{chosen[slot].path.relative_to(submissions)} instead"))
    return chosen


def grade(submissions: Path, problems: dict[str, dict[str, dict]], rubric: Rubric, roster: list[Student] | None = None,
          times: "Times | None" = None, jobs: int = 1, unsafe: bool = False, key: bytes | None = None,
          limits: Limits = LIMITS):
    """Every student's marks, every file not graded as handed in with its reason, and whether sandboxed.

    Raises NoSandbox where bubblewrap cannot start, unless ``unsafe``."""
    problem = sandbox_problem()
    if problem and not unsafe:
        raise NoSandbox(f"no sandbox: {problem}; refusing to run students' code without one (--unsafe to run it anyway)")
    term = Term(problems, rubric, roster, times or Times(), key, limits)
    names = [name for name in problems if name in rubric.notebooks]
    found, bad = find_submissions(submissions, names)
    students: dict[str, Student] = {student.student: student for student in roster or []}
    chosen = newest(match(found, students, term, bad), submissions, bad)
    slots = sorted(chosen)
    handed_out = release_cells(names)
    runs = dict(zip(slots, run_many([chosen[slot].path for slot in slots], rubric.time_limit, jobs, not problem,
                                    [handed_out.get(slot[1], {}) for slot in slots], limits)))
    marks = {name: _mark_student(students[name], names, term, chosen, runs, submissions, bad)
             for name in sorted(students)}
    return marks, bad, not problem


def _ids(student: Student, term: Term) -> dict[str, tuple[str, str]]:
    """What the student may enter, as the seed reads it -> (which ID it is, as the roster writes it): each of
    their IDs, with its code where the instructor's key is held."""
    entered = {}
    for what, value in student.identifiers():
        shown = graded_id(term.key, value) if term.key is not None else value
        entered[variants.student_key(shown)] = (what, shown)
    return entered


def whose_numbers(student: Student, name: str, ran: Run | None, term: Term) -> tuple[str, str, str]:
    """(the ID whose variant of ``name`` the student is marked against, a note or '', which ID it is).

    With a roster, any of the student's IDs there (``Student.identifiers``, each with its code where the key
    is held) the notebook showed, else the first; without one, what the notebook showed (there is nothing
    else to go by; its code checked where the key is held), else the student's key."""
    if name not in variants.TEMPLATES:
        return "", "", ""
    shown = list(ran.shown_ids) if ran else []
    if term.roster is None:
        return _unrostered(student, name, shown, term)
    mine = _ids(student, term)
    used = [entered for entered in shown if entered in mine]
    if used:
        what, value = mine[used[-1]]
        return used[-1], "", f"{name}: your numbers are those of your {what} on the roster ({value})"
    first, (what, value) = next(iter(mine.items()))
    if not shown:
        return first, (f"{name}: no student ID entered in the setup cell; marked against the numbers of their "
                       f"{what} ({value})") if ran is not None and not ran.unreadable else "", ""
    plain = {variants.student_key(text) for _, text in student.identifiers()}
    if term.key is not None and any(split(entered)[0] in plain for entered in shown):
        why = ("shows practice numbers (an ID without its code)" if not any(split(e)[1] for e in shown) else
               "shows the numbers of an ID with a code that is not the one given for it")
        return first, f"{name}: the notebook {why}; marked against the graded numbers of their {what}", ""
    listed = ", ".join(f"{kind} {text}" for kind, text in student.identifiers() if kind != "roster key")
    return first, (f"{name}: the notebook shows the numbers of ID {', '.join(shown)}, none of this student's IDs "
                   f"on the roster ({listed or student.student}); marked against the numbers of their {what} "
                   f"({variants.student_key(value)})"), ""


def _unrostered(student: Student, name: str, shown: list[str], term: Term) -> tuple[str, str, str]:
    own = shown[-1] if shown else student.student
    note = f"{name}: no roster, so marked against the numbers of the ID the notebook shows ({own})"
    identifier, given = split(own)
    if term.key is not None and given != code(term.key, identifier).lower():
        own = variants.student_key(graded_id(term.key, identifier))
        note = (f"{name}: no roster, and the notebook shows no valid code for ID {identifier}; marked against that "
                "ID's graded numbers")
    return own, note, ""


def public_answers(problems: dict[str, dict[str, dict]]) -> list[str]:
    """A line for each graded notebook some of whose problems have no per-student numbers: their graded
    release asks them with the practice release's numbers, so their answers are public."""
    lines = []
    for name, records in problems.items():
        fixed = [label for label in records if not answers.has_variant(name, label)]
        if fixed:
            lines.append(f"{name}: problems {', '.join(fixed)} have no per-student numbers (servingmath.variants); "
                         "every student is asked them with the practice release's numbers, whose answers are public")
    return lines


def expected_for(name: str, label: str, record: dict, student_id: str) -> dict:
    """The reference's record for a problem, its expected answer that of ``student_id``'s variant where it has one."""
    if not student_id or not answers.has_variant(name, label):
        return record
    # The solution's own slips are figures of its fixed numbers: the variant's are the same slips, for its own.
    return {**record, "expected": answers.expected(name, label, student_id),
            "slips": answers.slips(name, label, student_id)}


def _mark_student(student: Student, names: list[str], term: Term, chosen, runs, submissions: Path, bad) -> Graded:
    graded = Graded(student)
    for name in names:
        slot = (student.student, name)
        if slot in chosen:
            _mark_notebook(graded, name, chosen[slot], runs[slot], term, submissions, bad)
            continue
        graded.notes.append(f"{name}: nothing handed in")
        for label in term.problems[name]:
            graded.points[(name, label)] = 0.0
            graded.feedback[(name, label)] = "not handed in"
    return graded


def _mark_notebook(graded: Graded, name: str, submission: Submission, ran: Run, term: Term, submissions: Path,
                   bad: list) -> None:
    owner, whose_note, which = whose_numbers(graded.student, name, ran, term)
    if whose_note and not ran.unreadable:      # a file that could not be read shows no ID: its own note says why
        graded.notes.append(whose_note)
    if which:
        graded.identities[name] = which
    graded.handed_in[name] = str(submission.path.relative_to(submissions))
    if ran.unreadable:
        bad.append((submission.path, ran.unreadable))
        graded.notes.append(f"{name}: the file {ran.unreadable}; nothing could be marked")
    graded.canvas_submission = graded.canvas_submission or submission.canvas_submission or ""
    graded.moodle_participant = graded.moodle_participant or submission.moodle_participant or ""
    _tell_run(graded, name, ran)
    late = _lateness(submission, term.rubric)
    if late:
        graded.late.append(name)
        graded.late_notes[name] = late
        graded.notes.append(f"{name}: late ({late})")
    _mark_answers(graded, name, ran, term, owner, keep=1 - term.rubric.late_penalty if late else 1.0)


def _tell_run(graded: Graded, name: str, ran: Run) -> None:
    """The notes on how the notebook ran: stopped, output cut, cells that raised, check cells changed."""
    raised = [problem for problem in ran.problems if " raised " in problem]
    graded.notes += [f"{name}: {problem}" for problem in ran.problems if problem not in raised]
    if raised:
        cells = ", ".join(f"{problem.split(' raised ')[1]} in cell {problem.split()[2]}" for problem in raised)
        graded.notes.append(f"{name}: {len(raised)} code cell{'s' if len(raised) > 1 else ''} raised an error "
                            f"({cells}); the answers recorded around {'them' if len(raised) > 1 else 'it'} "
                            "were marked as given")
    if ran.changed:
        graded.notes.append(f"{name}: check cell changed for {', '.join(ran.changed)}; the grader recorded the "
                            "answer itself and marked it against the solutions")


def _mark_answers(graded: Graded, name: str, ran: Run, term: Term, owner: str, keep: float) -> None:
    """Each problem's points and what the student is told of it; a blank notebook or a missing check noted."""
    from .feedback import final_word   # feedback reads this module's Graded

    rubric, missing = term.rubric, []
    stopped = any(problem.startswith("stopped") for problem in ran.problems)
    for label, expected in term.problems[name].items():
        record = ran.records.get(label)
        result = mark(record, expected_for(name, label, expected, owner))
        share = 1.0 if result.status == "right" else rubric.close_credit if result.status == "close" else 0.0
        graded.points[(name, label)] = round(rubric.points(name, label) * share * keep, 4)
        graded.feedback[(name, label)] = (final_word(result) if record else
                                          "not reached: the notebook was stopped before this problem" if stopped
                                          else "no answer recorded")
        if record is None and not ran.unreadable:
            missing.append(label)
    answered = [label for label in term.problems[name]
                if (ran.records.get(label) or {}).get("answer") not in (None, "")]
    if not ran.unreadable and not answered and not stopped:
        graded.blank.append(name)
        graded.notes.append(f"{name}: handed in blank, no problem answered: was it the file meant?")
    if missing and not ran.problems:
        graded.notes.append(f"{name}: no check cell for {', '.join(missing)} (removed?), so no answer recorded")


def _lateness(submission: Submission, rubric: Rubric) -> str:
    """'' for on time, else how late and by whose clock."""
    if submission.lms_late and submission.submitted is None:
        return "Canvas marked it LATE"
    if rubric.deadline is None or submission.submitted is None:
        return ""
    over = submission.submitted - rubric.deadline - dt.timedelta(minutes=rubric.grace_minutes)
    if over <= dt.timedelta(0):
        return ""
    minutes = math.ceil((submission.submitted - rubric.deadline).total_seconds() / 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    span = " ".join(f"{count} {unit}" for count, unit in ((days, "d"), (hours, "h"), (minutes, "min")) if count)
    return f"{span} after the deadline, by {submission.time_from}"
