"""The class: the roster's students and every ID each may enter, and the LMS's submission times."""
from __future__ import annotations

import csv
import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path


def normal(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())




@dataclass
class Student:
    student: str                 # the key the grade files use
    name: str = ""
    canvas_id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""
    email: str = ""
    id_number: str = ""
    student_id: str = ""         # a roster's own "student id" column, where it has one
    aliases: set[str] = field(default_factory=set)

    username: str = ""           # a login or JupyterHub username column, where the roster has one
    listed: str = ""             # the name as Canvas's "Student" column writes it ("Châtelet, Émilie du")

    def identifiers(self) -> list[tuple[str, str]]:
        """Every ID of the student's the roster gives, (what, as written), the one a graded notebook asks
        for first: the school's (SIS) ID, Moodle's ID number, a student ID, the login, the email. A student
        may enter any of them; their numbers are that ID's."""
        found = [("SIS User ID", self.sis_user_id), ("ID number", self.id_number), ("student ID", self.student_id),
                 ("SIS Login ID", self.sis_login_id), ("username", self.username), ("email address", self.email),
                 ("roster key", self.student)]
        seen, unique = set(), []
        for what, value in found:
            if value and value.strip().lower() not in seen:
                seen.add(value.strip().lower())
                unique.append((what, value.strip()))
        return unique

    @property
    def variant_id(self) -> str:
        """The ID a graded notebook asks for first (``identifiers``)."""
        return self.identifiers()[0][1]


def load_roster(path: Path) -> list[Student]:
    """Students from a Canvas or Moodle gradebook export, or any CSV with a ``student`` column."""
    with path.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise ValueError(f"roster {path} lists no students")
    columns = {name.strip().lower(): name for name in rows[0]}
    students = []
    for row in rows:
        value = {key: (row.get(original) or "").strip() for key, original in columns.items()}
        if "student" in value and "points possible" in value["student"].lower():
            continue  # Canvas's second row
        first, last = value.get("first name", ""), value.get("last name", "")
        name = value.get("name") or value.get("full name") or (f"{first} {last}".strip()) or value.get("student", "")
        listed = name if "," in name else ""
        if "," in name and not (first or last):  # Canvas: "Smith, John"
            last, first = (part.strip() for part in name.split(",", 1))
            name = f"{first} {last}"
        if squash(name) == "teststudent" and not value.get("sis user id"):
            continue  # Canvas's Test Student (Student View), not a student
        key = value.get("student") if "id" not in value else None
        key = key or value.get("sis login id") or value.get("username") or value.get("email address") or name
        if not key:
            raise ValueError(f"roster {path}: a row with no student, name or login: {row}")
        student = Student(student=normal(key), name=name or key, canvas_id=value.get("id", ""),
                          sis_user_id=value.get("sis user id", ""), sis_login_id=value.get("sis login id", ""),
                          section=value.get("section", ""), email=value.get("email address") or value.get("email", ""),
                          id_number=value.get("id number", ""), student_id=value.get("student id", ""),
                          username=value.get("username") or value.get("login") or "", listed=listed)
        student.aliases = {alias for alias in (squash(key), squash(name), squash(last + first), squash(first + last),
                                               squash(student.sis_login_id), squash(student.email.split("@")[0]))
                           if alias}
        students.append(student)
    keys = [student.student for student in students]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise ValueError(f"roster {path}: these students appear twice: {twice}")
    return students


@dataclass
class Times:
    """Submission times from the LMS, by what identifies the student: Moodle's participant number,
    an email, an ID, a login; by full name only where no two students share it."""

    moments: dict[str, dt.datetime] = field(default_factory=dict)
    emails: dict[str, str] = field(default_factory=dict)    # participant number -> email, from the worksheet

    def of(self, *keys: str) -> dt.datetime | None:
        return next((self.moments[key] for key in keys if key and key in self.moments), None)


def load_times(path: Path, zone: str | None = None) -> Times:
    """Submission times from Moodle's grading worksheet, or a CSV with ``student`` (an ID or login) and
    ``submitted``. A time with no zone of its own is in ``zone`` (the rubric's ``timezone``, an IANA
    name such as Europe/London): Moodle writes times in the teacher's zone without saying which."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    with path.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    try:
        where = ZoneInfo(zone) if zone else None
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise ValueError(f"rubric timezone must be an IANA zone such as Europe/London, got {zone!r}") from error
    times, names = Times(), {}
    for row in rows:
        value = {key.strip().lower(): (text or "").strip() for key, text in row.items() if key}
        when = value.get("submitted") or value.get("last modified (submission)")
        if not when or when == "-":
            continue
        moment = _naive_when(when, f"times {path}")
        if moment.tzinfo is None:
            if where is None:
                raise ValueError(f"times {path}: {when!r} names no time zone; set the rubric's timezone to the "
                                 "zone the LMS shows times in (Moodle: the teacher's), such as Europe/London")
            moment = moment.replace(tzinfo=where)
        participant = re.sub(r"\D", "", value.get("identifier", ""))
        email = value.get("email address", "").lower()
        keys = [f"participant:{participant}" if participant else "", squash(email), squash(email.split("@")[0]),
                squash(value.get("id number", "")), squash(value.get("student", ""))]
        for key in filter(None, keys):
            times.moments[key] = moment
        if participant and email:
            times.emails[participant] = email
        if value.get("full name"):
            names.setdefault(squash(value["full name"]), []).append(moment)
    for name, moments in names.items():
        if len(moments) == 1:
            times.moments.setdefault(name, moments[0])
    return times


def _naive_when(value, what: str) -> dt.datetime:
    try:
        from dateutil import parser as dateparser
        return dateparser.parse(str(value))
    except (ValueError, OverflowError) as error:
        raise ValueError(f"{what}: {value!r} is not a date and time") from error
