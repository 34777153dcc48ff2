"""The rubric: which notebooks are graded, each problem's points, the deadline, the grace, the late
penalty, the share a close answer earns and the seconds a notebook may run."""
from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from pathlib import Path

import yaml

RUBRIC_KEYS = {"assignment", "deadline", "grace_minutes", "late_penalty", "close_credit", "time_limit", "notebooks",
               "timezone"}


@dataclass
class Rubric:
    assignment: str = "Coursework"
    deadline: dt.datetime | None = None
    grace_minutes: float = 0.0
    late_penalty: float = 0.0     # share of a late notebook's points taken off
    close_credit: float = 0.0     # share of a problem's points a "close" answer earns
    time_limit: float = 60.0      # wall-clock seconds a notebook may run, all its cells together
    timezone: str | None = None   # the zone the LMS writes times in where they name none (Moodle's)
    notebooks: dict[str, dict[str, float]] = field(default_factory=dict)  # notebook -> {label: points}

    def points(self, name: str, label: str) -> float:
        return float(self.notebooks.get(name, {}).get(label, 1))


def load_rubric(path: Path | None, names: list[str]) -> Rubric:
    """The rubric in ``path`` (every notebook, one point a problem, if None); ValueError names what is wrong."""
    if path is None:
        return Rubric(notebooks={name: {} for name in names})
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as error:
        raise ValueError(f"rubric {path} cannot be read: {error}") from error
    if not isinstance(data, dict):
        raise ValueError(f"rubric {path} must be a mapping of settings, got {data!r}")
    unknown = sorted(set(data) - RUBRIC_KEYS)
    if unknown:
        raise ValueError(f"rubric {path}: unknown settings {unknown}; known: {sorted(RUBRIC_KEYS)}")
    rubric = Rubric(assignment=str(data.get("assignment", "Coursework")))
    for key, low, high in (("grace_minutes", 0, math.inf), ("late_penalty", 0, 1), ("close_credit", 0, 1),
                           ("time_limit", 1e-3, math.inf)):
        if key in data:
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
                raise ValueError(f"rubric {path}: {key} must be a number from {low} to {high}, got {value!r}")
            setattr(rubric, key, float(value))
    if data.get("timezone") is not None:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
        try:
            ZoneInfo(str(data["timezone"]))
        except (ZoneInfoNotFoundError, ValueError) as error:
            raise ValueError(f"rubric {path}: timezone must be an IANA zone such as Europe/London, "
                             f"got {data['timezone']!r}") from error
        rubric.timezone = str(data["timezone"])
    if data.get("deadline") is not None:
        rubric.deadline = _when(data["deadline"], f"rubric {path}: deadline", rubric.timezone)
    notebooks = data.get("notebooks") or {name: {} for name in names}
    if not isinstance(notebooks, dict):
        raise ValueError(f"rubric {path}: notebooks must map each notebook to its problems' points, got {notebooks!r}")
    for name, weights in notebooks.items():
        if name not in names:
            raise ValueError(f"rubric {path}: notebook {name!r} is not among the solutions {names}")
        weights = weights or {}
        if not isinstance(weights, dict):
            raise ValueError(f"rubric {path}: {name} must map problem labels to points, got {weights!r}")
        for label, points in weights.items():
            if isinstance(points, bool) or not isinstance(points, (int, float)) or points < 0:
                raise ValueError(f"rubric {path}: {name} {label} must be points of 0 or more, got {points!r}")
        rubric.notebooks[name] = {str(label): float(points) for label, points in weights.items()}
    return rubric


def _when(value, what: str, zone: str | None = None) -> dt.datetime:
    """A date and time as the rubric writes it; one naming no zone is in ``zone`` (UTC if None)."""
    if isinstance(value, dt.datetime):
        moment = value
    else:
        try:
            from dateutil import parser as dateparser
            moment = dateparser.parse(str(value))
        except (ValueError, OverflowError) as error:
            raise ValueError(f"{what} must be a date and time, got {value!r}") from error
    if moment.tzinfo:
        return moment
    from zoneinfo import ZoneInfo
    return moment.replace(tzinfo=ZoneInfo(zone) if zone else dt.timezone.utc)
