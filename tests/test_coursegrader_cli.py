"""coursegrader's command: --help, its limits' flags, Moodle's feedback zip; the package's shape."""
import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from coursegrader import cli, exports
from coursegrader.marking import Graded
from coursegrader.roster import Student
from coursegrader.rubric import Rubric
from coursegrader.sandbox import MIB

ROOT = Path(__file__).resolve().parent.parent


def test_python_m_coursegrader_help():
    done = subprocess.run([sys.executable, "-m", "coursegrader", "--help"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0 and "usage: python -m coursegrader" in done.stdout
    assert "--max-processes" in done.stdout and "--practice" in done.stdout


def test_the_limits_flags_make_the_limits(tmp_path):
    options = cli.parser().parse_args([str(tmp_path), "--max-processes", "64", "--max-memory-mib", "1024",
                                       "--max-tmp-mib", "32", "--max-output-kib", "100"])
    limits = cli.limits_of(options)
    assert (limits.processes, limits.memory, limits.tmp, limits.home) == (64, 1024 * MIB, 32 * MIB, 64 * MIB)
    assert (limits.cell_output, limits.notebook_output) == (100 * 1024, 800 * 1024)
    with pytest.raises(ValueError, match="--max-processes must be 1 or more, got 0"):
        cli.limits_of(cli.parser().parse_args([str(tmp_path), "--max-processes", "0"]))


def test_moodle_feedback_goes_in_folders_named_as_moodles_download(tmp_path):
    graded = Graded(Student("cy", "Cy Part"), moodle_participant="2003")
    absent = Graded(Student("lee", "Lee Absent"))
    exports.write_feedback(tmp_path, {"cy": graded, "lee": absent}, {}, Rubric(assignment="A"))
    names = zipfile.ZipFile(tmp_path / "moodle-feedback.zip").namelist()
    assert names == ["Cy Part_2003_assignsubmission_file_/feedback.txt"]
    assert sorted(path.name for path in (tmp_path / "feedback").iterdir()) == ["cy.txt", "lee.txt"]


@pytest.mark.parametrize("path", ["course/submitted/S1/lesson-1/lesson-1-part-1.ipynb", "course/gradebook.db",
                                  "codes.csv", "grades/moodle-feedback.zip"])
def test_students_data_stays_out_of_the_repository(path):
    done = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT, timeout=60)
    assert done.returncode == 0, f"{path} is not ignored"


def test_the_help_says_a_time_comes_from_the_lms_never_a_files_date():
    text = " ".join(cli.__doc__.split())
    assert "otherwise it is taken as on time (a file's date says when it was copied, not handed in)" in text


def test_the_grader_is_a_package_of_small_functions():
    """One module a job, each function within about 60 lines."""
    modules = sorted((ROOT / "src" / "coursegrader").glob("*.py"))
    assert {path.stem for path in modules} >= {"roster", "sandbox", "running", "marking", "feedback", "exports", "cli"}
    long = [f"{path.name}:{node.name} ({node.end_lineno - node.lineno + 1} lines)" for path in modules
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 60]
    assert long == []
