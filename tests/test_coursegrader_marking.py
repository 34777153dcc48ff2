"""coursegrader.marking and .feedback: the tolerance every problem is marked by, over a thousand students'
numbers; whose numbers a notebook is marked by; what feedback says of an answer that is no number."""
import ast
import csv
import math
from pathlib import Path

import jupytext
import pytest

from coursegrader import answers, feedback, marking
from coursegrader.key import graded_id
from coursegrader.roster import Student, load_roster
from coursegrader.rubric import Rubric
from servingmath import variants
from servingmath.checks import check

ROOT = Path(__file__).resolve().parent.parent
KEY = b"a key for the tests alone, 32 characters or more, not secret"


def solution_tolerances() -> dict[tuple[str, str], float]:
    """Each problem's tolerance as its solution's check cell sets it (the check's default, 2 %, if none)."""
    found = {}
    for path in sorted((ROOT / "solutions").glob("*.md")):
        for cell in jupytext.read(path).cells:
            if cell.cell_type != "code" or "check(" not in cell.source:
                continue
            for node in ast.walk(ast.parse(cell.source)):
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "check":
                    keywords = {keyword.arg: keyword.value for keyword in node.keywords}
                    rel = ast.literal_eval(keywords["rel"]) if "rel" in keywords else 0.02
                    found[(path.stem, ast.literal_eval(keywords["label"]))] = float(rel)
    return found


def test_every_problem_has_a_tolerance_in_its_solution():
    tolerances = solution_tolerances()
    assert len(tolerances) == sum(len(labels) for labels in answers.ANSWERS.values())
    assert tolerances[("lesson-1-part-1", "1.4")] == 0.02    # a ratio of two counts: not exact


@pytest.mark.parametrize("notebook", sorted(answers.ANSWERS))
def test_every_problem_follows_the_rule_over_a_thousand_variants(notebook):
    """2 % unless the problem sets another, counts exact: for 1,000 students' numbers of every problem, the
    answer rounded to three significant figures is right, and a count one off is not."""
    tolerances = {(name, label): rel for (name, label), rel in solution_tolerances().items() if name == notebook}
    assert tolerances
    for (name, label), rel in tolerances.items():
        for student in range(1000):
            expected = answers.expected(name, label, f"S{student:04d}")
            if isinstance(expected, str):
                continue
            rule = marking.tolerance(expected, rel)
            if expected.is_integer() and rel == 0:
                assert rule == 0 and check(expected + 1, expected, rel=rule).status != "right", (name, label)
                continue
            given = float(f"{expected:.3g}")
            assert check(given, expected, rel=rule).status == "right", (name, label, student, expected, given)


def test_a_count_is_exact_and_a_fraction_asked_exactly_gets_two_percent():
    assert marking.tolerance(1201.0, 0) == 0 and marking.tolerance(11.3333, 0) == 0.02
    assert marking.tolerance(11.3333, 0.01) == 0.01 and marking.tolerance("memory", 0) == 0
    record = {"expected": 34 / 3, "rel": 0.0, "label": "1.4", "units": "times as many", "choices": None}
    assert marking.mark({"answer": 11.33}, record).status == "right"
    assert marking.mark({"answer": 11.0}, record).status != "right"


@pytest.mark.parametrize("answer", [math.nan, {"type": "float", "repr": "nan"}])
def test_nan_is_told_as_not_a_finite_number(answer):
    result = marking.mark({"answer": answer}, {"expected": 2.0, "rel": 0.02, "label": "1.1", "units": "",
                                               "choices": None})
    word = feedback.final_word(result)
    assert "not a finite number" in word and "of type" not in word


# -- whose numbers ---------------------------------------------------------------------------
class Shown:
    def __init__(self, *entered):
        self.shown_ids, self.unreadable = [variants.student_key(text) for text in entered], None


def term(student, key=None, rostered=True):
    return marking.Term({}, Rubric(), [student] if rostered else None, key=key)


ADA = Student("ada-uni-example-edu", "Ada Byron", email="ada@uni.example.edu", id_number="")
KAY = Student("k77", "Alan Kay", id_number="K77", email="kay@uni.example.edu")


def test_any_id_on_the_roster_is_the_students_and_the_feedback_names_it():
    assert ADA.variant_id == "ada@uni.example.edu"        # Moodle, its ID number blank: the email
    owner, note, which = marking.whose_numbers(KAY, "lesson-1-part-1", Shown("KAY@uni.example.edu"), term(KAY))
    assert (owner, note) == ("kay@uni.example.edu", "")
    assert which == "lesson-1-part-1: your numbers are those of your email address on the roster (kay@uni.example.edu)"
    owner, note, _ = marking.whose_numbers(KAY, "lesson-1-part-1", Shown("S261029"), term(KAY))
    assert owner == "k77" and "shows the numbers of ID s261029, none of this student's IDs" in note


def test_with_the_key_a_graded_id_is_marked_and_an_id_alone_is_practice():
    mine = graded_id(KEY, "K77")
    owner, note, which = marking.whose_numbers(KAY, "lesson-1-part-1", Shown(mine), term(KAY, KEY))
    assert (owner, note) == (mine.lower(), "") and "ID number on the roster (" + mine + ")" in which
    owner, note, _ = marking.whose_numbers(KAY, "lesson-1-part-1", Shown("K77"), term(KAY, KEY))
    assert owner == mine.lower() and "shows practice numbers (an ID without its code)" in note
    owner, note, _ = marking.whose_numbers(KAY, "lesson-1-part-1", Shown("K77/AAAA-AAAA"), term(KAY, KEY))
    assert owner == mine.lower() and "a code that is not the one given for it" in note
    # Without a roster, a code that is not the ID's is told, and the ID's graded numbers are the ones marked.
    owner, note, _ = marking.whose_numbers(KAY, "lesson-1-part-1", Shown("K77/AAAA-AAAA"), term(KAY, KEY, False))
    assert owner == mine.lower() and "no valid code for ID k77" in note


def test_the_graded_numbers_are_not_the_practice_ones():
    """The public code with an ID alone draws other numbers than the ID with its code."""
    plain = variants.numbers("lesson-1-part-1", "K77")
    keyed = variants.numbers("lesson-1-part-1", graded_id(KEY, "K77"))
    other = variants.numbers("lesson-1-part-1", graded_id(b"another key, also 32 characters or more", "K77"))
    assert plain != keyed and keyed != other


def test_a_notebook_stopped_before_any_answer_is_not_also_called_blank():
    problems = {"lesson-1-part-1": {"1.1": {"expected": 5.0, "rel": 0.0, "label": "1.1", "units": "", "choices": None}}}
    the_term = marking.Term(problems, Rubric(notebooks={"lesson-1-part-1": {}}))
    stopped, blank = marking.Graded(KAY), marking.Graded(KAY)
    marking._mark_answers(stopped, "lesson-1-part-1", marking.Run(problems=["stopped: the notebook ran past its 8 s"]),
                          the_term, "k77", 1.0)
    marking._mark_answers(blank, "lesson-1-part-1", marking.Run(records={"1.1": {"answer": None}}), the_term, "k77", 1.0)
    assert stopped.blank == [] and stopped.feedback[("lesson-1-part-1", "1.1")].startswith("not reached")
    assert blank.blank == ["lesson-1-part-1"]


# -- a class of 30 on four rosters ------------------------------------------------------------
FIRST = ["Ada", "Alan", "Barbara", "Claude", "Donald", "Edsger", "Frances", "Grace", "Hedy", "Ivan"]
LAST = ["Byron", "Kay", "Liskov"]
CLASS = [(first, last + ("" if k < 3 else "e"), f"S{1000 + k}", f"{first[0]}{last}{k}".lower())
         for k, (first, last) in enumerate((f, l) for l in LAST for f in FIRST)]
CLASS[0] = ("Émilie", "du Châtelet", "S1000", "emilie0")
ROSTERS = {   # header, then a row for each (first, last, SIS or ID number, login)
    "canvas with SIS": (["Student", "ID", "SIS User ID", "SIS Login ID", "Section"],
                        lambda k, f, l, sis, login: [f"{l}, {f}", str(2000 + k), sis, login, "A"]),
    "canvas without SIS": (["Student", "ID", "Section"], lambda k, f, l, sis, login: [f"{l}, {f}", str(2000 + k), "A"]),
    "moodle with ID numbers": (["First name", "Last name", "ID number", "Email address"],
                               lambda k, f, l, sis, login: [f, l, sis, f"{login}@uni.example.edu"]),
    "moodle without ID numbers": (["First name", "Last name", "ID number", "Email address"],
                                  lambda k, f, l, sis, login: [f, l, "", f"{login}@uni.example.edu"]),
}


def three_figures(value):
    """An answer as a student rounds it: three significant figures, a count as it is."""
    if isinstance(value, str) or float(value).is_integer():
        return value
    return float(f"{value:.3g}")


@pytest.mark.parametrize("lms", ROSTERS)
def test_a_class_of_thirty_grades_right_on_each_roster(lms, tmp_path, monkeypatch):
    """Every student enters one of their IDs on the roster with its code (the first, as `codes` hands out, or
    every third student another), answers every problem to three figures, and earns every point; the
    feedback names the ID. The notebooks' runs are given (running is coursegrader.running's, tested there)."""
    header, row = ROSTERS[lms]
    with (tmp_path / "roster.csv").open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([header, *(row(k, *person) for k, person in enumerate(CLASS))])
    rostered = load_roster(tmp_path / "roster.csv")
    assert len(rostered) == 30
    name = "lesson-1-part-1"
    typed = {}
    for k, student in enumerate(rostered):
        ids = student.identifiers()
        what, value = ids[-2 if k % 3 == 2 and len(ids) > 2 else 0]
        typed[student.name] = (what, graded_id(KEY, value))
        (tmp_path / "in" / student.name).mkdir(parents=True)
        (tmp_path / "in" / student.name / f"{name}.ipynb").write_text("{}")
    problems = {name: {label: {"expected": 1.0, "rel": rel, "label": label, "units": "", "choices": None}
                       for (notebook, label), rel in solution_tolerances().items() if notebook == name}}

    def ran(paths, *_args, **_kwargs):
        runs = []
        for path in paths:
            entered = typed[path.parent.name][1]
            runs.append(marking.Run(shown_ids=[variants.student_key(entered)], records={
                label: {"label": label, "answer": three_figures(answers.expected(name, label, entered))}
                for label in problems[name]}))
        return runs

    monkeypatch.setattr(marking, "run_many", ran)
    monkeypatch.setattr(marking, "release_cells", lambda names: {})
    marks, bad, _ = marking.grade(tmp_path / "in", problems, Rubric(notebooks={name: {}}), rostered, unsafe=True,
                                  key=KEY)
    assert bad == [] and len(marks) == 30
    for graded in marks.values():
        what, entered = typed[graded.student.name]
        assert graded.total == len(problems[name]), (lms, graded.student.name, graded.feedback)
        assert graded.identities[name] == f"{name}: your numbers are those of your {what} on the roster ({entered})"
