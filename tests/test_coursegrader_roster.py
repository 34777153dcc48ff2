"""coursegrader.roster: Canvas and Moodle rosters with and without their ID columns, a JupyterHub username
column, names as the LMS writes them."""
import csv

from coursegrader import exports, roster
from coursegrader.marking import Graded


def load(tmp_path, header, *rows):
    path = tmp_path / "roster.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return roster.load_roster(path)


def test_canvas_without_sis_columns_asks_for_the_login(tmp_path):
    (student,) = load(tmp_path, ["Student", "ID", "SIS Login ID", "Section"],
                      ["Liskov, Barbara", "2001", "bliskov@uni.example.edu", "A"])
    assert student.student == "bliskov-uni-example-edu" and student.variant_id == "bliskov@uni.example.edu"
    assert [what for what, _ in student.identifiers()] == ["SIS Login ID", "roster key"]


def test_canvas_with_sis_columns_asks_for_the_sis_id_and_takes_the_login_too(tmp_path):
    (student,) = load(tmp_path, ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"],
                      ["Liskov, Barbara", "2001", "S2001", "bliskov", "A"])
    assert student.identifiers()[:2] == [("SIS User ID", "S2001"), ("SIS Login ID", "bliskov")]


def test_moodle_with_and_without_id_numbers(tmp_path):
    blank, numbered = load(tmp_path, ["First name", "Last name", "ID number", "Email address"],
                           ["Ada", "Byron", "", "ada@uni.example.edu"], ["Alan", "Kay", "K77", "kay@uni.example.edu"])
    assert blank.variant_id == "ada@uni.example.edu" and numbered.variant_id == "K77"
    assert ("email address", "kay@uni.example.edu") in numbered.identifiers()


def test_a_jupyterhub_username_column_is_an_id_too(tmp_path):
    (student,) = load(tmp_path, ["student", "name", "username", "student id"], ["jdoe", "Jo Doe", "jdoe", "S1"])
    assert [what for what, _ in student.identifiers()] == ["student ID", "username"]


def test_canvas_names_come_from_the_rosters_own_text(tmp_path):
    (student,) = load(tmp_path, ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"],
                      ["Châtelet, Émilie du", "3001", "S9", "emilie", "A"])
    assert student.listed == "Châtelet, Émilie du" and student.name == "Émilie du Châtelet"
    assert exports.canvas_feedback_name(Graded(student)) == "chteletmiliedu_3001_feedback.txt"
    out = tmp_path / "canvas.csv"
    exports.write_canvas(out, {"s9": Graded(student)}, type("R", (), {"assignment": "A"})(), 1)
    assert list(csv.reader(out.open(encoding="utf-8")))[2][0] == "Châtelet, Émilie du"
