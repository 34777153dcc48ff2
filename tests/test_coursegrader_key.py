"""coursegrader.key and the command's key and codes: a key outside the repository, codes no one makes
without it, graded IDs to hand out."""
import csv
import os
import stat

import pytest

from coursegrader import ROOT, cli, key

KEY = b"a key for the tests alone, 32 characters or more, not secret"


def test_a_code_is_eight_characters_of_the_key_and_the_id():
    made = key.code(KEY, "S1001")
    assert len(made) == 9 and made[4] == "-" and made == key.code(KEY, " s1001 ")
    assert made != key.code(KEY, "S1002") and made != key.code(KEY + b"!", "S1001")
    assert key.graded_id(KEY, "S1001") == f"S1001/{made}" and key.split(f"S1001/{made}") == ("s1001", made.lower())


def test_the_key_is_made_outside_the_repository_for_its_owner_alone(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="outside the repository"):
        key.create(ROOT / "grading" / "key")
    monkeypatch.delenv(key.ENV, raising=False)
    monkeypatch.setenv(key.FILE_ENV, str(tmp_path / "k" / "grading-key"))
    with pytest.raises(key.NoKey, match="`make exercises` makes one"):
        key.load()
    path, made = key.create()
    assert made and stat.S_IMODE(os.stat(path).st_mode) == 0o600 and len(key.load()) == 64
    assert key.create() == (path, False)      # kept, never replaced


def test_codes_lists_each_students_graded_id(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(key.ENV, KEY.decode())
    (tmp_path / "roster.csv").write_text("First name,Last name,ID number,Email address\n"
                                         "Ada,Byron,,ada@uni.example.edu\nAlan,Kay,K77,kay@uni.example.edu\n")
    assert cli.main(["codes", str(tmp_path / "roster.csv"), "--out", str(tmp_path / "codes.csv")]) == 0
    rows = list(csv.DictReader((tmp_path / "codes.csv").open(encoding="utf-8")))
    assert [row["enter in the setup cell"] for row in rows] == [key.graded_id(KEY, "ada@uni.example.edu"),
                                                                key.graded_id(KEY, "K77")]


def test_grading_without_the_key_refuses_unless_practice(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(key.ENV, raising=False)
    monkeypatch.setenv(key.FILE_ENV, str(tmp_path / "none"))
    options = cli.parser().parse_args([str(tmp_path), "--notebooks", "lesson-9"])
    with pytest.raises(ValueError, match="notebooks must be among"):
        cli.setting_up(options)
    options = cli.parser().parse_args([str(tmp_path), "--notebooks", "lesson-1-part-1"])
    with pytest.raises(ValueError, match="no instructor's key.*--practice to grade practice numbers"):
        cli.setting_up(options)


def test_the_setup_cell_shows_whose_numbers_and_whether_they_are_practice_ones():
    from servingmath import variants

    practice = repr(variants.sheet("lesson-1-part-1", "S1001"))
    graded = repr(variants.sheet("lesson-1-part-1", key.graded_id(KEY, "S1001")))
    assert "object at 0x" not in practice and "s1001" in practice and "practice numbers" in practice
    assert "practice numbers" not in graded and key.graded_id(KEY, "S1001").lower() in graded
