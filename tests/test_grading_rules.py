"""The grader's rules without running a notebook: the tolerance every problem is marked by, which of a
student's IDs their numbers come from, the names the LMS files use, the sandbox's command line."""
import ast
import csv
import math
import sys
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import grade  # noqa: E402  (a script, not a package)
import variant_answers  # noqa: E402
from servingmath import variants  # noqa: E402
from servingmath.checks import check  # noqa: E402


def solution_checks() -> dict[tuple[str, str], float]:
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


def three_figures(value: float) -> float:
    return float(f"{value:.3g}")


def test_every_problem_follows_the_rule_over_a_thousand_variants():
    """2 % unless the problem sets another, counts exact: for 1,000 students' numbers of every problem, the
    answer rounded to three significant figures is right, and a count one off is not."""
    rels = solution_checks()
    assert len(rels) == sum(len(answers) for answers in variant_answers.ANSWERS.values())
    assert rels[("lesson-1-part-1", "1.4")] == 0.02    # a ratio of two counts: not exact
    for (name, label), rel in rels.items():
        for student in range(1000):
            expected = variant_answers.expected(name, label, f"S{student:04d}")
            if isinstance(expected, str):
                continue
            rule = grade.tolerance(expected, rel)
            if expected.is_integer() and rel == 0:
                assert rule == 0 and check(expected + 1, expected, rel=rule).status != "right", (name, label)
                continue
            given = three_figures(expected)
            assert check(given, expected, rel=rule).status == "right", (name, label, student, expected, given)


def test_a_count_is_exact_and_a_fraction_asked_exactly_gets_two_percent():
    assert grade.tolerance(1201.0, 0) == 0 and grade.tolerance(11.3333, 0) == 0.02
    assert grade.tolerance(11.3333, 0.01) == 0.01 and grade.tolerance("memory", 0) == 0
    record = {"expected": 34 / 3, "rel": 0.0, "label": "1.4", "units": "times as many", "choices": None}
    assert grade.mark({"answer": 11.33}, record).status == "right"
    assert grade.mark({"answer": 11.0}, record).status != "right"


# -- which of a student's IDs the numbers come from -----------------------------------------
def roster(tmp_path, header, *rows):
    path = tmp_path / "roster.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return grade.load_roster(path)


class Shown:
    def __init__(self, *ids):
        self.shown_ids, self.unreadable = [variants.student_key(i) for i in ids], None


def test_canvas_without_sis_columns_takes_the_login_or_the_email(tmp_path):
    (student,) = roster(tmp_path, ["Student", "ID", "SIS Login ID", "Section"],
                        ["Liskov, Barbara", "2001", "bliskov@uni.example.edu", "A"])
    assert student.student == "bliskov-uni-example-edu" and student.variant_id == "bliskov@uni.example.edu"
    owner, note, which = grade.whose_numbers(student, "lesson-1-part-1", Shown("BLiskov@uni.example.edu"), True)
    assert (owner, note) == ("bliskov@uni.example.edu", "")
    assert which == ("lesson-1-part-1: your numbers are those of your SIS Login ID on the roster "
                     "(bliskov@uni.example.edu)")


def test_moodle_with_a_blank_id_number_takes_the_email_and_any_id_the_roster_gives(tmp_path):
    blank, numbered = roster(tmp_path, ["First name", "Last name", "ID number", "Email address"],
                             ["Ada", "Byron", "", "ada@uni.example.edu"], ["Alan", "Kay", "K77", "kay@uni.example.edu"])
    assert blank.variant_id == "ada@uni.example.edu"
    assert grade.whose_numbers(blank, "lesson-1-part-1", Shown("ada@uni.example.edu"), True)[:2] == (
        "ada@uni.example.edu", "")
    # Either of Alan's IDs is his: the email he typed is the one his numbers come from.
    owner, note, which = grade.whose_numbers(numbered, "lesson-1-part-1", Shown("kay@uni.example.edu"), True)
    assert (owner, note) == ("kay@uni.example.edu", "") and "email address" in which
    # An ID that is none of his is told, and he is marked by his first ID (Moodle's ID number).
    owner, note, _ = grade.whose_numbers(numbered, "lesson-1-part-1", Shown("S261029"), True)
    assert owner == "k77" and "shows the numbers of ID s261029, none of this student's IDs" in note


def test_a_jupyterhub_username_column_is_an_id_too(tmp_path):
    (student,) = roster(tmp_path, ["student", "name", "username", "student id"], ["jdoe", "Jo Doe", "jdoe", "S1"])
    assert [what for what, _ in student.identifiers()] == ["student ID", "username"]
    assert grade.whose_numbers(student, "lesson-1-part-1", Shown("jdoe"), True)[0] == "jdoe"


def test_canvas_names_come_from_the_rosters_own_text(tmp_path):
    (student,) = roster(tmp_path, ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"],
                        ["Châtelet, Émilie du", "3001", "S9", "emilie", "A"])
    assert student.listed == "Châtelet, Émilie du" and student.name == "Émilie du Châtelet"
    graded = grade.Graded(student)
    assert grade.canvas_feedback_name(graded) == "chteletmiliedu_3001_feedback.txt"


# -- what feedback says ----------------------------------------------------------------------
@pytest.mark.parametrize("answer", [math.nan, {"type": "float", "repr": "nan"}])
def test_nan_is_told_as_not_a_finite_number(answer):
    result = check(answer if isinstance(answer, float) else 1.0, 2.0, label="1.1")
    result = grade.mark({"answer": answer}, {"expected": 2.0, "rel": 0.02, "label": "1.1", "units": "",
                                             "choices": None})
    word = grade.final_word(result)
    assert "not a finite number" in word and "of type" not in word


# -- the sandbox's command line ------------------------------------------------------------
def test_the_sandbox_runs_as_an_unprivileged_user_with_limits(tmp_path):
    if grade.shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed here")
    limits = grade.Limits(processes=50, memory=2**30, file_size=2**20, tmp=2**21, home=2**22)
    as_root = grade.sandbox_argv(tmp_path, {}, limits, uid=61001, identity=tmp_path)
    text = " ".join(as_root)
    assert "setpriv --reuid=61001 --regid=61001 --clear-groups --no-new-privs" in text
    assert "prlimit --nproc=50 --as=1073741824 --fsize=1048576" in text
    assert "--size 2097152 --tmpfs /dev/shm" in text and "--size 2097152 --tmpfs /tmp" in text
    assert f"--size 4194304 --tmpfs {grade.HOME}" in text
    assert "/etc/shadow" not in text and "--ro-bind-try /etc /etc" not in text and "/etc/ld.so.cache" in text
    as_user = " ".join(grade.sandbox_argv(tmp_path, {}, limits))
    assert "--unshare-user --uid 65534 --gid 65534 --cap-drop ALL" in as_user and "setpriv" not in as_user
