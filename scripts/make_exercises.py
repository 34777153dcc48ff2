"""Make the students' notebooks in exercises/ from the worked ones in solutions/.

In a solution notebook, each worked answer sits in a code cell between two marker
lines (nbgrader's convention):

    ### BEGIN SOLUTION
    answer = ...
    ### END SOLUTION

The exercise notebook is the same file, byte for byte, with each such block (markers
included) replaced by one line at the block's indentation:

    answer = None  # your answer here

That is the practice release: its check cells compute each answer with the package and
say at once whether a student is right. The graded release, in exercises/graded/, is the
same notebook with each check cell cut down to one call,

    submit(answer, label="1.1", units="passes")

which records the answer and says only whether it is the kind asked for (a number, one
of the words). Its cells hold no formula and no expected figure, so there is nothing to
copy into an answer cell; the grader (coursegrader, `make grade`) scores the recorded answers
against the solutions, which only it holds.

``--nbgrader DIR`` also writes the solutions as an nbgrader course, one assignment a lesson
(``DIR/source/lesson-1/`` to ``lesson-4/``, the notebooks of grading/rubric.yml and
rubric-lesson-2.yml to rubric-lesson-4.yml): the answer cells marked as solution cells, each problem's statement the
student's own numbers as in the graded release, each check cell an autograded cell whose visible
line is the graded release's ``submit`` and whose hidden test marks the submitted answer with a
fresh copy of the package's check against the student's own variant, worth the rubric's points.
``scripts/nbgrader.py`` runs nbgrader's commands from the course's environment.

Usage: ``python scripts/make_exercises.py`` (what ``make exercises`` runs) writes
exercises/ and exercises/graded/ and removes any exercise whose solution is gone;
``--check`` writes nothing and exits 1 if either is out of date. Writing, it also writes
``src/servingmath/data/leaks.yaml`` (``scripts/pages_seen.py``): the pages as a reader sees them and each
problem's check, from which ``servingmath.variants`` keeps every student's draw off answers the pages give away.
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
GRADED = EXERCISES / "graded"
BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
STUB = "answer = None  # your answer here"
ASSIGNS_ANSWER = re.compile(r"^\s*answer\s*=")


def exercise_text(solution: str, source: str = "solution") -> str:
    """The exercise made from a solution notebook's text; ``source`` names it in errors.

    Raises ValueError for a block that is not closed, is nested, sits outside a code
    cell, or never assigns ``answer``, and for a marker that is misspelt.
    """
    kept: list[str] = []
    opened_at = 0       # line number of the open block's BEGIN, 0 outside a block
    in_code_cell = False
    assigns = False
    for number, line in enumerate(solution.splitlines(keepends=True), start=1):
        stripped = line.strip()
        where = f"{source}:{number}"
        if stripped.startswith("```"):
            if opened_at:
                raise ValueError(f"{where}: the cell ends inside the solution block opened on line {opened_at}")
            in_code_cell = stripped.startswith("```{code-cell}")
        if stripped == BEGIN:
            if opened_at:
                raise ValueError(f"{where}: a solution block starts inside the one opened on line {opened_at}")
            if not in_code_cell:
                raise ValueError(f"{where}: a solution block must be inside a code cell")
            opened_at, assigns = number, False
            indent = line[: len(line) - len(line.lstrip())]
            ending = line[len(line.rstrip("\r\n")):]
            kept.append(indent + STUB + ending)
        elif stripped == END:
            if not opened_at:
                raise ValueError(f"{where}: {END} without a {BEGIN} before it")
            if not assigns:
                raise ValueError(f"{where}: the solution block opened on line {opened_at} never assigns `answer`")
            opened_at = 0
        elif "BEGIN SOLUTION" in line or "END SOLUTION" in line:
            raise ValueError(f"{where}: a solution marker must be a line of its own, exactly {BEGIN!r} or {END!r}")
        elif opened_at:
            assigns = assigns or bool(ASSIGNS_ANSWER.match(line))
        else:
            kept.append(line)
    if opened_at:
        raise ValueError(f"{source}:{opened_at}: the solution block opened here never ends")
    return "".join(kept)


# -- the graded release -----------------------------------------------------------------
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(?:---\n.*?\n---\n)?(.*?)^```$", flags=re.M | re.S)
HOW_TO_WORK = re.compile(r"^\*\*How to work\.\*\*.*?\n\n", flags=re.M | re.S)
GRADED_HOW_TO_WORK = """**How to work (graded).** Run the setup cell first. Under each problem, write your working
in the answer cell and end it by setting `answer`; run it, then run the cell under it,
which records your answer for grading. That cell tells you whether your answer is the
kind asked for (one number, or one of the words the question offers), not whether it is
right: that is for the grader. Give each answer in the units the question asks for, run
every cell from the top before you hand the notebook in, and leave the recording cells as
they are.

"""
SETUP_IMPORT = "from servingmath.checks import check\n"
VARIANT_HOW_TO = """Your numbers are your own: write your student ID, a slash and the code your instructor
gave you between the quotes in the setup cell (as `S1001/7KQ3-M9XD`) and run it; each problem
then shows the numbers you are to use, drawn for you alone, and says whose they are. They differ
from a classmate's and from the practice notebook's, so check your method there and your figures
here. Your ID alone draws practice numbers, which are not the ones graded.

"""
PROBLEM = re.compile(r"^(## Problem (\S+) · [^\n]*\n)(.*?)(?=^```\{code-cell\})", flags=re.M | re.S)
FRONT_MATTER_END = "\n---\n"


def check_call(source: str, where: str = "solution") -> ast.Call:
    """The ``check(answer, expected, ...)`` call that a solution's check cell ends with."""
    tree = ast.parse(source)
    last = tree.body[-1] if tree.body else None
    call = getattr(last, "value", None)
    if not (isinstance(last, ast.Expr) and isinstance(call, ast.Call) and getattr(call.func, "id", None) == "check"
            and len(call.args) == 2 and getattr(call.args[0], "id", None) == "answer"):
        raise ValueError(f"{where}: a check cell must end with check(answer, expected, label=...), got {source!r}")
    keywords = {keyword.arg for keyword in call.keywords}
    if "label" not in keywords or not keywords <= {"label", "rel", "units", "choices", "slips"}:
        raise ValueError(f"{where}: a check takes label= and may take rel=, units=, choices=, slips=, "
                         f"got {sorted(keywords)}")
    return call


def _code_cells(path: Path) -> list:
    import jupytext

    return [cell for cell in jupytext.read(path).cells if cell.cell_type == "code"]


def _check_cells(cells: list) -> list:
    """The cells of a problem notebook that end with a check."""
    return [cell for cell in cells if "check(answer, " in cell.source]


def check_labels(path: Path) -> list[str]:
    """The label of each check of a problem notebook, in order, read from its source without running it."""
    return [ast.literal_eval(next(keyword.value for keyword in check_call(cell.source, str(path)).keywords
                                  if keyword.arg == "label"))
            for cell in _check_cells(_code_cells(path))]


def checks_in(path: Path) -> list[tuple[str, object, dict]]:
    """Each check of a problem notebook as (label, expected figure, keyword arguments), evaluated as the
    notebook evaluates them: after its imports and the check cell's own lines above its call."""
    import math

    cells = _code_cells(path)
    imports = [node for cell in cells for node in ast.parse(cell.source).body
               if isinstance(node, (ast.Import, ast.ImportFrom))]
    setup = {"math": math}
    exec(compile(ast.Module(imports, []), str(path), "exec"), setup)
    found = []
    for cell in _check_cells(cells):
        namespace = dict(setup)
        exec(compile(ast.Module(ast.parse(cell.source).body[:-1], []), str(path), "exec"), namespace)
        call = check_call(cell.source, str(path))
        evaluate = lambda node: eval(compile(ast.Expression(node), str(path), "eval"), namespace)  # noqa: E731
        keywords = {keyword.arg: evaluate(keyword.value) for keyword in call.keywords}
        found.append((keywords["label"], evaluate(call.args[1]), keywords))
    return found


def submit_line(call: ast.Call) -> str:
    """The graded release's one line for a check: the label, the units, the choices; no figure."""
    kept = [keyword for keyword in call.keywords if keyword.arg in ("label", "units", "choices")]
    return ast.unparse(ast.Call(ast.Name("submit"), [ast.Name("answer")], kept))


def graded_text(solution: str, source: str = "solution", notebook: str | None = None) -> str:
    """The graded release made from a solution notebook's text (its exercise, checks cut to ``submit``).

    ``notebook`` (its name) is written into the notebook's metadata, so a renamed copy is still known;
    where ``servingmath.variants`` has a template for it, the setup cell asks for the student's ID and
    each templated problem's statement is a cell that shows the student's own numbers."""
    from servingmath.variants import TEMPLATES

    text = exercise_text(solution, source)
    if text.count(SETUP_IMPORT) != 1 or not HOW_TO_WORK.search(text):
        raise ValueError(f"{source}: the setup cell must import check once, and the notebook say **How to work.**")
    if TEMPLATES.get(notebook or "") is None:
        text = text.replace(SETUP_IMPORT, "from servingmath.checks import submit\n")
        text = HOW_TO_WORK.sub(lambda _: GRADED_HOW_TO_WORK, text, count=1)
    else:
        text = text.replace(SETUP_IMPORT, "from servingmath.checks import submit\n")
        text = HOW_TO_WORK.sub(lambda _: GRADED_HOW_TO_WORK + VARIANT_HOW_TO, text, count=1)
        text = with_variants(text, notebook, source)
    if notebook:
        text = with_name(text, notebook, source)

    def cut(match: re.Match) -> str:
        body = match.group(1)
        if "check(answer, " not in body:
            return match.group(0)
        start, end = match.span(1)
        whole = match.group(0)
        offset = match.start()
        return whole[: start - offset] + submit_line(check_call(body, source)) + "\n" + whole[end - offset:]

    return CODE_CELL.sub(cut, text)


def with_variants(text: str, notebook: str, source: str) -> str:
    """``text`` (a notebook whose setup cell imports ``submit``) asking for the student's ID and showing
    each templated problem's statement with the student's numbers."""
    from servingmath.variants import TEMPLATES

    template = TEMPLATES[notebook]
    text = re.sub(r"^from servingmath\.checks import [^\n]*\n",
                  lambda match: match.group(0) + "from servingmath.variants import sheet\n", text, count=1, flags=re.M)
    # The setup cell ends by asking for the student's ID and showing whose numbers follow.
    setup_end = text.index("\n```", text.index("from servingmath.variants import sheet\n")) + 1
    text = (text[:setup_end] + "\nSTUDENT_ID = \"\"  # your student ID/your code, between the quotes\n"
            f"mine = sheet({notebook!r}, STUDENT_ID)\nmine\n" + text[setup_end:])
    shown = set()

    def statement(match: re.Match) -> str:
        label = match.group(2)
        if label not in template.statements:
            return match.group(0)
        shown.add(label)
        return f'{match.group(1)}\n```{{code-cell}} ipython3\nmine.show("{label}")\n```\n\n'

    text = PROBLEM.sub(statement, text)
    if shown != set(template.statements):
        raise ValueError(f"{source}: problems {sorted(set(template.statements) - shown)} have a template "
                         "but no heading `## Problem LABEL · title` followed by their statement")
    return text


def with_name(text: str, notebook: str, source: str) -> str:
    """``text`` with the notebook's name in its metadata, so a renamed copy is still known."""
    start = text.index(FRONT_MATTER_END) if text.startswith("---\n") else -1
    if start < 0:
        raise ValueError(f"{source}: a notebook must start with its front matter")
    return text[:start] + f"\nservingmath:\n  notebook: {notebook}" + text[start:]


def solution_files(solutions: Path = SOLUTIONS) -> list[Path]:
    return sorted(solutions.glob("*.md"))


def expected_exercises(solutions: Path = SOLUTIONS, exercises: Path = EXERCISES) -> dict[Path, bytes]:
    """Each exercise file's path (practice and graded) and the exact bytes it should hold."""
    made = {}
    for source in solution_files(solutions):
        text = source.read_bytes().decode("utf-8")
        where = str(source.relative_to(solutions.parent))
        made[exercises / source.name] = exercise_text(text, where).encode("utf-8")
        made[exercises / "graded" / source.name] = graded_text(text, where, source.stem).encode("utf-8")
    return made


def stale(made: dict[Path, bytes], exercises: Path = EXERCISES) -> tuple[list[Path], list[Path]]:
    """(files that differ or are missing, exercise files with no solution behind them)."""
    different = [path for path, content in made.items() if not path.is_file() or path.read_bytes() != content]
    existing = sorted(exercises.glob("*.md")) + sorted((exercises / "graded").glob("*.md"))
    orphans = [path for path in existing if path not in made]
    return different, orphans


# -- nbgrader ------------------------------------------------------------------------
# One nbgrader assignment for each lesson, its notebooks and points those of the lesson's rubric.
ASSIGNMENTS = {"lesson-1": ROOT / "grading" / "rubric.yml", "lesson-2": ROOT / "grading" / "rubric-lesson-2.yml",
               "lesson-3": ROOT / "grading" / "rubric-lesson-3.yml", "lesson-4": ROOT / "grading" / "rubric-lesson-4.yml"}
SCRIPTS = Path(__file__).resolve().parent


def rubric_points(rubric: Path) -> dict[str, dict[str, float]]:
    """The rubric's notebooks, each with its problems' points (a problem not listed is worth 1)."""
    import yaml

    notebooks = (yaml.safe_load(rubric.read_text(encoding="utf-8")) or {}).get("notebooks") or {}
    return {name: {str(label): float(points) for label, points in (weights or {}).items()}
            for name, weights in notebooks.items()}


def hidden_test(notebook: str, call: ast.Call, helpers: list[str], worth: float) -> list[str]:
    """The hidden test of one check cell: the answer the notebook submitted, marked by a fresh copy of
    the package's check (one redefined or patched in the notebook counts for nothing) against the
    expected answer of the student's own variant (the student being the folder nbgrader grades in)."""
    keywords = {keyword.arg: keyword.value for keyword in call.keywords}
    label = ast.literal_eval(keywords["label"])
    from servingmath.variants import TEMPLATES

    lines = ["import importlib as _importlib", "import os as _os", "import sys as _sys",
             "import servingmath.checks as _checks",
             f"_answer = _checks.submitted({label!r})",
             "_checks = _importlib.reload(_checks)  # the package's own check, whatever the notebook redefined"]
    if label in getattr(TEMPLATES.get(notebook), "statements", {}):
        # The course folder's own copy (write_nbgrader puts it there), found from autograded/STUDENT/ASSIGNMENT.
        lines += ["_sys.path.insert(0, _os.path.abspath(_os.path.join(_os.getcwd(), '..', '..', '..')))",
                  "import variant_answers as _variants",
                  "_user = _os.path.basename(_os.path.dirname(_os.getcwd()))  # autograded/STUDENT/ASSIGNMENT",
                  # The ID and code typed, where the ID is the student's own: the code itself is make grade's to check.
                  "_typed = str(globals().get('STUDENT_ID', '')).strip()",
                  "_student = _typed if _typed.split('/')[0].strip().lower() == _user.lower() else _user",
                  f"_expected = _variants.expected({notebook!r}, {label!r}, _student)"]
        # The solution's own slips are figures of its fixed numbers; the student's are of their own.
        if "slips" in keywords:
            keywords["slips"] = ast.parse(f"{{name: tuple(entry) for name, entry in (_variants.slips({notebook!r}, "
                                          f"{label!r}, _student) or {{}}).items()}}", mode="eval").body
    else:
        lines += helpers + [f"_expected = {ast.unparse(call.args[1])}"]
    options = ", ".join(f"{name}={ast.unparse(value)}" for name, value in keywords.items())
    lines += [f"_result = _checks.check(_answer, _expected, {options})",
              f"_result.score * {worth!r}  # the points this answer earns"]
    return lines


def nbgrader_notebook(solution: Path, points: dict[str, float] | None = None):
    """The solution as an nbgrader source notebook: solution cells, autograded check cells, each
    templated problem showing the student's own numbers as the graded release does."""
    import jupytext  # only this option needs it

    points = points or {}
    from servingmath.variants import TEMPLATES

    text = solution.read_text(encoding="utf-8")
    source = str(solution)
    text = text.replace(SETUP_IMPORT, "from servingmath.checks import check, submit, submitted\n")
    text = HOW_TO_WORK.sub(lambda _: GRADED_HOW_TO_WORK + (VARIANT_HOW_TO if solution.stem in TEMPLATES else ""),
                           text, count=1)
    if solution.stem in TEMPLATES:
        text = with_variants(text, solution.stem, source)
    notebook = jupytext.reads(with_name(text, solution.stem, source), fmt="md:myst")
    notebook.metadata.pop("jupytext", None)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        if "import check, submit, submitted" in cell.source:
            continue   # the setup cell is the student's to edit, and none of nbgrader's (an id would be unknown to it)
        if BEGIN in cell.source:
            label = _label_after(notebook.cells, index, solution)
            cell.metadata["nbgrader"] = {"grade": False, "solution": True, "locked": False, "schema_version": 3,
                                         "grade_id": f"answer-{_slug(label)}"}
        elif "check(answer, " in cell.source:
            call = check_call(cell.source, str(solution))
            label = ast.literal_eval(next(k.value for k in call.keywords if k.arg == "label"))
            worth = float(points.get(label, 1))
            helpers = [ast.unparse(statement) for statement in ast.parse(cell.source).body[:-1]]
            cell.source = "\n".join([submit_line(call), "### BEGIN HIDDEN TESTS",
                                     *hidden_test(solution.stem, call, helpers, worth), "### END HIDDEN TESTS"])
            cell.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "schema_version": 3,
                                         "grade_id": f"check-{_slug(label)}", "points": worth}
    return notebook


def _label_after(cells, index, solution) -> str:
    for cell in cells[index + 1:]:
        if cell.cell_type == "code" and "check(answer, " in cell.source:
            call = check_call(cell.source, str(solution))
            return ast.literal_eval(next(k.value for k in call.keywords if k.arg == "label"))
    raise ValueError(f"{solution}: the answer cell {index + 1} has no check after it")


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", label).strip("-")


NBGRADER_CONFIG = """c = get_config()  # noqa: F821 (nbgrader provides it)
c.CourseDirectory.root = {root!r}
# The release's answer cells get the same stub as exercises/, not nbgrader's NotImplementedError.
c.ClearSolutions.code_stub = {{'python': {stub!r}}}
# Feedback shows each answer and its points, never a hidden test's formula.
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import ClearHiddenTests, GetGrades  # noqa: E402
c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, CSSHTMLHeaderPreprocessor]
# Kernels talk through Unix sockets, not TCP ports: a port picked free can be taken by another process before
# the kernel binds it, and on a busy machine a student's notebook then fails to start. The sockets' folder is
# named whole (a kernel runs in its notebook's folder, nbgrader in the course's) and short (107 characters).
import atexit as _atexit  # noqa: E402
import shutil as _shutil  # noqa: E402
import tempfile as _tempfile  # noqa: E402
_sockets = _tempfile.mkdtemp(prefix="nbgrader-")
_atexit.register(_shutil.rmtree, _sockets, True)
c.KernelManager.transport = "ipc"
c.KernelManager.ip = _sockets + "/kernel"
# A notebook's cells share one budget of {time_limit!r} seconds, as under `make grade` (the rubric's time_limit),
# its clock started by the setup cell: a cell running at the end is interrupted, and a cell reached after it
# is not run but fails, so it earns nothing here either. (nbgrader's own limit is a cell's, and it would go on
# past an endless loop.)
import re as _re  # noqa: E402
import time as _time  # noqa: E402
_deadline = [float("inf")]


def _start(cell, **_):
    if _re.search(r"^STUDENT_ID\\s*=", cell.source, _re.M):
        _deadline[0] = _time.monotonic() + {time_limit!r}
    elif _time.monotonic() >= _deadline[0]:
        cell.source = "raise TimeoutError('not run: the notebook was past its time limit')"


c.Execute.on_notebook_start = lambda **_: _deadline.__setitem__(0, float("inf"))   # each notebook its own clock
c.Execute.on_cell_execute = _start
c.Execute.timeout_func = lambda cell: max(1.0, _deadline[0] - _time.monotonic()) if _deadline[0] < float("inf") else 600
"""


def write_nbgrader(course: Path, assignment: str = "lesson-1", points: dict | None = None,
                   names: list[str] | None = None, time_limit: float | None = None) -> list[Path]:
    """Write ``course/source/assignment/NAME.ipynb`` for each notebook of ``names`` (those ``points``
    lists, or the assignment's rubric's); return the paths. ``points``: notebook -> {label: points}.
    ``time_limit``: the seconds a notebook's cells share (the longest of the rubrics' ``time_limit``)."""
    import nbformat
    import yaml

    if points is None:
        points = rubric_points(ASSIGNMENTS[assignment])
    names = list(points) if names is None else names
    folder = course / "source" / assignment
    folder.mkdir(parents=True, exist_ok=True)
    time_limit = time_limit or max(float(yaml.safe_load(rubric.read_text(encoding="utf-8")).get("time_limit", 60))
                                   for rubric in ASSIGNMENTS.values())
    (course / "nbgrader_config.py").write_text(NBGRADER_CONFIG.format(root=str(course.resolve()), stub=STUB,
                                                                      time_limit=time_limit),
                                               encoding="utf-8")
    # The hidden tests import the grader's answers from the course folder, wherever it is moved.
    import shutil
    shutil.copyfile(ROOT / "src" / "coursegrader" / "answers.py", course / "variant_answers.py")
    written = []
    for solution in solution_files():
        if solution.stem not in names:
            continue
        target = folder / f"{solution.stem}.ipynb"
        nbformat.write(nbgrader_notebook(solution, points.get(solution.stem)), target)
        written.append(target)
    return written


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if exercises/ is out of date")
    parser.add_argument("--nbgrader", type=Path, metavar="COURSE",
                        help="also write an nbgrader course: COURSE/source/lesson-1/, lesson-2/ and lesson-3/, one "
                             "assignment a lesson, each problem worth its rubric's points")
    options = parser.parse_args(argv)
    if options.nbgrader:
        for assignment in ASSIGNMENTS:
            written = write_nbgrader(options.nbgrader, assignment)
            print(f"make_exercises: {len(written)} nbgrader source notebooks in {written[0].parent}")
    made = expected_exercises()
    if not made:
        print(f"make_exercises: no solution notebooks in {SOLUTIONS}", file=sys.stderr)
        return 1
    different, orphans = stale(made)
    if options.check:
        for path in different + orphans:
            print(f"make_exercises: {path.relative_to(ROOT)} is out of date; run `make exercises`", file=sys.stderr)
        return 1 if different or orphans else 0
    for path in different:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(made[path])
    for path in orphans:
        path.unlink()
    print(f"make_exercises: {len(made)} notebooks, {len(different)} written, {len(orphans)} removed")
    # What the variants keep students' draws off: the pages as seen, each problem's check (tests/test_answer_leak.py
    # holds it to the pages and the solutions).
    import pages_seen

    wanted = pages_seen.text()
    if not pages_seen.DATA.is_file() or pages_seen.DATA.read_text(encoding="utf-8") != wanted:
        pages_seen.DATA.write_text(wanted, encoding="utf-8")
        print(f"make_exercises: wrote {pages_seen.DATA.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
