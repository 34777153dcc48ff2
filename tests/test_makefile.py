"""The Makefile as a new user meets it: its list of targets, its Python check, its browser stages
on a machine without Chromium, and `make test`'s closing table of stage times.

Each test runs `make` itself (with ``-o .venv/.ready``, so the environment is taken as made).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parent.parent
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")
NO_CHROMIUM = "/nonexistent/chromium"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


# The Makefile's own variables, which a `make test PYTHON=...` around this test puts in the environment.
MAKE_VARIABLES = {"MAKEFLAGS", "MAKELEVEL", "MFLAGS", "PYTHON", "PYTHON_VERSION", "CHROMIUM", "STAGES", "JOBS",
                  "UNIT_JOBS", "TEST_JOBS", "STAGE_TIMES"}


def make(*args, cwd=ROOT, env=None):
    """`make ARGS` in the project, the environment taken as made; the finished process, output as text."""
    import os

    clean = {name: value for name, value in os.environ.items() if name not in MAKE_VARIABLES}
    return subprocess.run(["make", "--no-print-directory", "-o", ".venv/.ready", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, env={**clean, **(env or {})})


def phony_targets() -> list[str]:
    declared = re.search(r"^\.PHONY:((?:.*\\\n)*.*)$", MAKEFILE, re.M).group(1)
    return declared.replace("\\\n", " ").split()


def test_help_lists_every_target_once_in_one_line():
    result = make("help")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    targets = phony_targets()
    assert len(targets) >= 15 and "test" in targets and "help" in targets
    for target in targets:
        mine = [line for line in lines if line.split()[:2] == ["make", target]]
        assert len(mine) == 1, f"make help: {target!r} in {len(mine)} lines"
        assert len(mine[0].split()) > 3, f"make help: {target!r} has no description"
    assert len(lines) == len(targets), "make help lists something that is not a target"


def lanes_in_words(stages: str) -> str:
    """`make test`'s STAGES in words: "three lanes side by side: unit; book-check, then notebooks-check; lab-check"."""
    lanes = [lane.split(",") for lane in stages.split("+")]
    count = {1: "one lane", 2: "two lanes", 3: "three lanes", 4: "four lanes"}[len(lanes)]
    return f"{count} side by side: " + "; ".join(", then ".join(lane) for lane in lanes)


def test_readme_make_help_and_the_makefile_say_the_same_of_every_target_and_of_make_tests_lanes():
    """The README's table of targets is `make help`, row for row; the README, `make help` and the Makefile's own
    comment name `make test`'s lanes in the same words, made here from the STAGES they run."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = [line.split(None, 2)[1:] for line in make("help").stdout.splitlines()]
    table = readme.split("`make help` prints this table:", 1)[1].split("\n## ", 1)[0]
    assert [list(row) for row in re.findall(r"^\| `make ([a-z-]+)` \| (.*) \|$", table, re.M)] == shown
    lanes = lanes_in_words(re.search(r"^STAGES \?= (\S+)$", MAKEFILE, re.M).group(1))
    assert lanes == "three lanes side by side: unit; book-check, then notebooks-check, then browser-check; lab-check"
    assert lanes in dict(shown)["test"]
    assert f"in {lanes}." in " ".join(readme.split())
    assert f"in {lanes}." in " ".join(line.lstrip("# ") for line in MAKEFILE.splitlines() if line.startswith("#"))


def test_every_target_in_help_is_a_target_make_knows():
    """Each line of help names a target with a rule (a typo in a ## comment would show a target that fails)."""
    for line in make("help").stdout.splitlines():
        target = line.split()[1]
        assert make("-n", target, "SUBMISSIONS=x").returncode == 0, target


@pytest.mark.parametrize("version", ["3.10.12", "3.9.1", "2.7.18"])
def test_too_old_a_python_stops_make_with_one_line_naming_it(version):
    result = make("python-check", f"PYTHON_VERSION={version}")
    assert result.returncode != 0
    ours = [line for line in result.stderr.splitlines() if "***" not in line]
    assert ours == [f"make: python3 is Python {version}; the course needs Python 3.11 or newer "
                    f"(make PYTHON=/path/to/python3)"]


@pytest.mark.parametrize("version", ["3.11.0", "3.11.2", "3.12.1", "3.14.0rc1", "4.0"])
def test_every_python_311_or_newer_passes(version):
    result = make("python-check", f"PYTHON_VERSION={version}")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"python3 is Python {version}; the course needs 3.11 or newer\n"


def test_a_missing_python_is_named():
    result = make("python-check", "PYTHON=/nonexistent/python3")
    assert result.returncode != 0
    assert "make: no Python runs as '/nonexistent/python3'; the course needs Python 3.11 or newer" in result.stderr


def test_the_check_stops_make_before_a_venv_is_made_or_pip_runs(tmp_path):
    for name in ("Makefile", "requirements.txt", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    result = subprocess.run(["make", "--no-print-directory", ".venv/.ready", "PYTHON=python3", "PYTHON_VERSION=3.10.12"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert result.stdout == "", "make ran something before the check"
    assert "is Python 3.10.12; the course needs Python 3.11 or newer" in result.stderr.splitlines()[0]
    assert not (tmp_path / ".venv").exists()


def pins() -> dict[str, str]:
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    found = {}
    for line in lines:
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line)
            found[requirement.name] = str(requirement.specifier).removeprefix("==")
    return found


def test_every_pinned_version_installs_on_the_oldest_python_the_makefile_allows():
    """Each pin's own Requires-Python admits 3.11.0 (read from the installed package's metadata)."""
    needed = re.search(r"^PYTHON_NEEDED := (\S+)$", MAKEFILE, re.M).group(1)
    oldest = f"{needed}.0"
    refused = {}
    for name, version in pins().items():
        installed = metadata.metadata(name)
        assert installed["Version"] == version, f"{name}: {installed['Version']} installed, {version} pinned"
        allowed = installed.get("Requires-Python")
        if allowed and not SpecifierSet(allowed).contains(oldest, prereleases=True):
            refused[f"{name}=={version}"] = allowed
    assert refused == {}, f"pins that refuse Python {oldest}"
    assert f"Python {needed} or newer" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_check_catches_a_pin_that_needs_a_newer_python():
    assert not SpecifierSet(">=3.11.5").contains("3.11.0")  # what Soup Sieve 3 asks, which the check above refuses


def test_the_browser_stages_say_in_one_line_each_that_they_were_skipped_without_chromium():
    result = make("lab-check", "browser-check", "screenshots", f"CHROMIUM={NO_CHROMIUM}")
    assert result.returncode == 0, result.stdout + result.stderr
    said = (f"skipped: no Chromium at {NO_CHROMIUM} (apt-get install chromium-headless-shell, "
            f"or make CHROMIUM=/path/to/chromium)")
    assert result.stdout.splitlines() == [f"{stage} {said}" for stage in ("lab-check", "browser-check", "screenshots")]


def test_the_makefile_and_the_browser_tests_pick_the_same_chromium():
    """The Makefile's default and tests/browser/browser.py's (for a plain pytest run) are one rule: Debian's headless
    shell where installed, else its full browser."""
    import os

    by_make = make("--eval=print-chromium: ; @echo $(CHROMIUM)", "print-chromium")
    assert by_make.returncode == 0, by_make.stderr
    by_python = subprocess.run([sys.executable, "-c", "import browser; print(browser.CHROMIUM)"], capture_output=True,
                               text=True, env={**{k: v for k, v in os.environ.items() if k != "CHROMIUM"},
                                               "PYTHONPATH": str(ROOT / "tests" / "browser")})
    assert by_python.returncode == 0, by_python.stderr
    assert by_make.stdout.strip() == by_python.stdout.strip()
    assert Path(by_make.stdout.strip()).name in ("chromium-headless-shell", "chromium")


def test_make_test_passes_without_chromium_and_closes_with_each_stages_time(tmp_path):
    record = tmp_path / "times.json"
    result = make("test", "STAGES=lab-check browser-check", f"CHROMIUM={NO_CHROMIUM}",
                  env={"STAGE_TIMES": str(record)})
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("lab-check skipped: no Chromium") and "apt-get install chromium-headless-shell" in lines[0]
    assert lines[1].startswith("browser-check skipped: no Chromium")
    table = lines[lines.index("") + 1:]
    assert table[0].startswith("stage times, ") and "processors" in table[0]
    seconds = r" +\d+\.\d s, cpu +\d+\.\d s  "
    assert re.fullmatch(rf"  lab-check    {seconds}lab-check skipped: no Chromium at .*", table[1])
    assert re.fullmatch(rf"  browser-check{seconds}browser-check skipped: .*", table[2])
    assert re.fullmatch(r"  all  +\d+\.\d s, cpu +\d+\.\d s", table[3]) and len(table) == 4
    stages = json.loads(record.read_text())["stages"]
    assert [(s["stage"], s["status"]) for s in stages] == [("lab-check", 0), ("browser-check", 0)]
    # `make bench` starts with the same figures, read back from the record.
    shown = subprocess.run([sys.executable, str(ROOT / "scripts" / "stages.py"), "--show"], capture_output=True,
                           text=True, env={"STAGE_TIMES": str(record)}, check=True).stdout.splitlines()
    assert shown == table
    assert "stages.show()" in (ROOT / "scripts" / "bench.py").read_text()


def test_make_test_stops_at_the_first_failing_stage_and_says_so(tmp_path):
    record = tmp_path / "times.json"
    # `make grade` without SUBMISSIONS exits 2 with its usage line: a stage that fails at once.
    result = make("test", "STAGES=lab-check grade browser-check", f"CHROMIUM={NO_CHROMIUM}",
                  env={"STAGE_TIMES": str(record)})
    assert result.returncode == 2
    assert "browser-check skipped" not in result.stdout
    table = result.stdout.split("\nstage times, ")[1].splitlines()
    assert re.fullmatch(r"  grade +\d+\.\d s, cpu +\d+\.\d s  make(\[\d\])?: \*\*\* .*Error 2  FAILED \(exit 2\)", table[2])
    assert [s["stage"] for s in json.loads(record.read_text())["stages"]] == ["lab-check", "grade"]


def test_make_test_runs_the_browser_stages_in_one_process_each_unless_told_otherwise():
    assert 'JOBS="1" ' in make("-n", "test").stdout
    assert 'JOBS="2" ' in make("-n", "test", "JOBS=2").stdout
    assert 'JOBS="2" ' in make("-n", "test", "TEST_JOBS=2").stdout
    assert 'JOBS="3" ' in make("-n", "test", env={"JOBS": "3"}).stdout
    assert "JOBS ?= 2" in MAKEFILE      # a browser stage run alone: two processes finish sooner


def test_lanes_joined_by_a_plus_run_side_by_side_each_in_turn_and_their_outputs_do_not_interleave(tmp_path):
    record = tmp_path / "times.json"
    result = make("test", "STAGES=python-check,browser-check+lab-check help", f"CHROMIUM={NO_CHROMIUM}",
                  "JOBS=1", env={"STAGE_TIMES": str(record)})
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == ("stages: python-check, then browser-check beside lab-check; "
                        "each one's output follows when it ends")
    # Each stage's line once; python-check's before browser-check's, the next in its lane.
    firsts = [line.split()[0] for line in lines[1:4]]
    assert sorted(firsts) == ["browser-check", "lab-check", "python3"]
    assert firsts.index("python3") < firsts.index("browser-check")
    stages = json.loads(record.read_text())["stages"]
    assert [(s["stage"], s["beside"]) for s in stages] == [
        ("python-check", "lab-check"), ("browser-check", "lab-check"), ("lab-check", "python-check, browser-check"),
        ("help", "")]
    assert "(beside lab-check)" in result.stdout.split("stage times, ")[1]


def test_a_lane_stops_at_its_failure_and_the_run_fails(tmp_path):
    record = tmp_path / "times.json"
    result = make("test", "STAGES=grade,browser-check+lab-check help", f"CHROMIUM={NO_CHROMIUM}",
                  env={"STAGE_TIMES": str(record)})
    assert result.returncode != 0
    ran = [(s["stage"], s["status"] == 0) for s in json.loads(record.read_text())["stages"]]
    assert ran == [("grade", False), ("lab-check", True)]


@pytest.mark.parametrize("lines, summary", [
    (["....", "===== 812 passed, 11 skipped in 61.20s (0:01:01) =====", ""],
     "812 passed, 11 skipped in 61.20s (0:01:01)"),
    (["\x1b[32m3 passed\x1b[0m\x1b[32m in 4.2s\x1b[0m"], "3 passed in 4.2s"),
    (["9 passed, 42 deselected in 9.62s", "check_site: 19 pages checked, 0 problems", "done"], "9 passed, 42 deselected in 9.62s"),
    (["lab-check skipped: no Chromium at /x (apt-get install chromium-headless-shell)"],
     "lab-check skipped: no Chromium at /x (apt-get install chromium-headless-shell)"),
    ([], ""),
])
def test_a_stage_is_summed_up_by_its_last_pytest_line_or_else_its_last_words(lines, summary):
    sys.path.insert(0, str(ROOT / "scripts"))
    import stages

    assert stages.summary_of(lines) == summary


def test_learners_jupyterlab_shows_no_nbgrader_menu_or_route_and_its_kernels_talk_over_ipc(tmp_path):
    """`make lab`'s JupyterLab (the environment's settings, scripts/lab_settings.py) keeps nbgrader's menus and
    server routes off, over nbgrader's own setting that turns its routes on; the kernel spec ipykernel installed
    starts kernels through the course's provisioner (coursegrader/kernels.py: over IPC)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import lab_settings
    from jupyter_server.config_manager import BaseJSONConfigManager
    from jupyter_server.extension.config import ExtensionConfigManager

    installed = Path(sys.prefix) / "etc" / "jupyter"
    own = tmp_path / "etc" / "jupyter" / "jupyter_server_config.d"
    own.mkdir(parents=True)
    shutil.copy(installed / "jupyter_server_config.d" / "nbgrader.json", own)
    assert ExtensionConfigManager(read_config_path=[str(own.parent)]).enabled(lab_settings.SERVER_EXTENSIONS[0])
    kernels = tmp_path / "share" / "jupyter" / "kernels" / "python3"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({"argv": ["python", "-m", "ipykernel_launcher", "-f",
                                                              "{connection_file}"], "display_name": "Python 3",
                                                     "language": "python", "metadata": {"debugger": True}}))
    lab_settings.main(str(tmp_path))
    # The settings written here, and those `make` wrote into the environment the tests run in.
    in_venv = Path(sys.prefix) == ROOT / ".venv"
    for prefix in [tmp_path] + ([Path(sys.prefix)] if in_venv else []):
        config = prefix / "etc" / "jupyter"
        server = ExtensionConfigManager(read_config_path=[str(config)])
        assert [name for name in lab_settings.SERVER_EXTENSIONS if server.enabled(name)] == [], config
        page = BaseJSONConfigManager(config_dir=str(config / "labconfig")).get("page_config")
        assert page["disabledExtensions"] == page["lockedExtensions"] == {"@jupyter/nbgrader": True}, config
        spec = json.loads((prefix / "share" / "jupyter" / "kernels" / "python3" / "kernel.json").read_text())
        assert spec["metadata"]["kernel_provisioner"] == {"provisioner_name": "course-ipc", "config": {}}, prefix
        assert spec["metadata"]["debugger"] is True


def test_the_environment_holds_exactly_the_pins_and_nbformat_imports_without_the_iri_parsers():
    """`make` installs requirements.txt as listed, without resolving again; what it leaves out stays out, so
    no process that reads a notebook pays for building rfc3987-syntax's parsers."""
    from packaging.utils import canonicalize_name

    pins = {canonicalize_name(name): version for name, version in
            (line.split("==") for line in (ROOT / "requirements.txt").read_text().splitlines()
             if line and not line.startswith("#"))}
    if Path(sys.prefix) == ROOT / ".venv":
        installed = {canonicalize_name(dist.metadata["Name"]): dist.version for dist in metadata.distributions()}
        assert {name: version for name, version in pins.items() if installed.get(name) != version} == {}
        assert set(installed) - set(pins) <= {"uv", "servingmath"}
    assert "rfc3987-syntax" not in pins and "lark" not in pins
    imported = subprocess.run([sys.executable, "-c", "import sys, nbformat.validator, jsonschema._format; "
                               "print('rfc3987_syntax' in sys.modules)"], capture_output=True, text=True, check=True)
    assert imported.stdout.strip() == "False"


def test_the_unit_tests_of_one_students_notebook_share_one_process_and_the_others_keep_to_their_modules(
        monkeypatch):
    """`make unit` (``--dist loadscope``) gives each module's tests to one process, the tests of the three modules
    that draw a thousand students to one process for each notebook (named in their parameters or their name), the
    notebooks whose draws run the simulator most first (the grader's modules, which wait more than they work, after
    the three slowest), then the other notebooks, then the simulator settings they are drawn from, each test of those
    a unit of its own, in their order (tests/conftest.py): each module named is there, none left out unnoticed."""
    from collections import OrderedDict

    from conftest import (A_THOUSAND_STUDENTS, FIRST, SETTINGS, SLOWEST_DRAWN, STUDENTS, UNIT_JOBS, WAITING,
                          pytest_xdist_make_scheduler)
    from servingmath import variants
    from xdist.scheduler import LoadScopeScheduling

    class Config:
        def getvalue(self, name):
            return {"dist": "loadscope", "tx": ["2*popen"]}[name]

    scheduler = pytest_xdist_make_scheduler(Config(), None)
    assert len(A_THOUSAND_STUDENTS) == 3 and all((ROOT / module).is_file() for module in A_THOUSAND_STUDENTS)
    assert {scheduler._split_scope(f"{module}::test_x[lesson-3-part-2]") for module in A_THOUSAND_STUDENTS} == {
        f"{STUDENTS}: lesson-3-part-2"}
    assert scheduler._split_scope("tests/test_answer_leak.py::test_x[plate-xxiii-4-3]") == f"{STUDENTS}: plate-xxiii-4"
    assert scheduler._split_scope("tests/test_variants.py::test_lesson_4_part_2_x") == f"{STUDENTS}: lesson-4-part-2"
    assert scheduler._split_scope("tests/test_variants.py::test_x") == f"{STUDENTS}: the rest"
    assert scheduler._split_scope("tests/test_load.py::test_x[1]") == "tests/test_load.py"
    assert set(SLOWEST_DRAWN) <= set(variants.TEMPLATES) and FIRST[-2:] == (STUDENTS, SETTINGS)
    assert (ROOT / SETTINGS).is_file() and scheduler._split_scope(f"{SETTINGS}::test_a") == f"{SETTINGS}::test_a"
    assert all((ROOT / module).is_file() for module in WAITING)
    # The order the units are handed out in: the three slowest notebooks, the modules that wait, the other slow
    # notebooks, the other students, each settings test as collected, then the rest.
    given = []
    monkeypatch.setattr(LoadScopeScheduling, "_assign_work_unit",
                        lambda self, node: given.append(self.workqueue.popitem(last=False)[0]))
    scheduler.workqueue = OrderedDict((scope, {}) for scope in (
        "tests/test_load.py", f"{SETTINGS}::test_a", "tests/test_memory.py", f"{STUDENTS}: lesson-1-part-1",
        "tests/test_grading.py", f"{STUDENTS}: the rest", f"{STUDENTS}: lesson-4-part-1", f"{STUDENTS}: plate-xxiii-4",
        f"{SETTINGS}::test_b", f"{STUDENTS}: lesson-3-part-4", "tests/test_nbgrader.py"))
    while scheduler.workqueue:
        scheduler._assign_work_unit(None)
    assert given == [f"{STUDENTS}: lesson-3-part-4", f"{STUDENTS}: plate-xxiii-4", "tests/test_grading.py",
                     "tests/test_nbgrader.py", f"{STUDENTS}: lesson-4-part-1", f"{STUDENTS}: lesson-1-part-1",
                     f"{STUDENTS}: the rest", f"{SETTINGS}::test_a", f"{SETTINGS}::test_b", "tests/test_load.py",
                     "tests/test_memory.py"]
    assert "JOBS ?= 2" in MAKEFILE and f"UNIT_JOBS ?= {UNIT_JOBS}" in MAKEFILE
    assert "-n $(UNIT_JOBS) --dist loadscope" in MAKEFILE


def test_make_books_run_ahead_names_pages_of_the_book_that_the_build_reads_after_the_measuring_page():
    """scripts/book.py runs RUN_AHEAD's pages in a second process once the lab's measuring page has run: each must be
    a page of the book, listed in the order Sphinx reads pages (by name), and read after the measuring page, or the
    build reaches it first and computes its simulations itself."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import book

    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    files = set(re.findall(r"file: (\S+)", toc))
    ahead = [page.removesuffix(".md") for page in book.RUN_AHEAD]
    assert set(ahead) <= files and book.MEASURING in files, (set(ahead) - files, book.MEASURING)
    assert all((ROOT / page).is_file() for page in book.RUN_AHEAD)
    assert ahead == sorted(ahead) and book.MEASURING < ahead[0]


def test_no_students_test_reads_a_class_the_simulator_draws_outside_that_notebooks_process():
    """A test of the students' modules that names one of the notebooks whose draws run the simulator most runs in
    that notebook's process (tests/conftest.py), where its class is drawn and its answers computed once: in another
    process it would draw the class again (Lesson 4 Part 3's thousand took 31 s of a `make test` so). A test
    parametrized over notebooks takes its process from its parameters, which this reading does not see: it is left
    to the test above."""
    import ast

    from conftest import A_THOUSAND_STUDENTS, NOTEBOOK, SLOWEST_DRAWN, STUDENTS, students_scope

    astray = []
    for module in A_THOUSAND_STUDENTS:
        for node in ast.parse((ROOT / module).read_text(encoding="utf-8")).body:
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")) or any(
                    "parametrize" in ast.unparse(decorator) for decorator in node.decorator_list):
                continue
            named = {text.value for text in ast.walk(node) if isinstance(text, ast.Constant)
                     and isinstance(text.value, str) and NOTEBOOK.fullmatch(text.value)}
            scope = students_scope(f"{module}::{node.name}")
            astray += [f"{module}::{node.name} reads {notebook} in {scope!r}" for notebook in sorted(named)
                       if notebook in SLOWEST_DRAWN and scope != f"{STUDENTS}: {notebook}"]
    assert not astray, "\n".join(astray)
