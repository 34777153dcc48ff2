"""exercises/ is made from solutions/ by `make exercises`: up to date, and with no solution left in it."""
import ast
import re
import sys
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import make_exercises  # noqa: E402  (a script, not a package)
from make_exercises import BEGIN, END, STUB, check_call, exercise_text, graded_text  # noqa: E402

SOLUTIONS = sorted((ROOT / "solutions").glob("*.md"))
NAMES = ["lesson-1-part-1", "lesson-1-part-2", "lesson-1-part-3", "lesson-1-part-4",
         "lesson-2-part-1", "lesson-2-part-2", "lesson-2-part-3", "lesson-2-part-4",
         "lesson-3-part-1", "lesson-3-part-2", "lesson-3-part-3", "lesson-3-part-4", "lesson-4-part-1", "lesson-4-part-2",
         "lesson-4-part-3", "lesson-4-part-4",
         "plate-xxiii-1", "plate-xxiii-2", "plate-xxiii-4"]


def solution_blocks(text):
    """The lines inside each BEGIN/END SOLUTION block of a solution notebook."""
    return re.findall(rf"^[ \t]*{re.escape(BEGIN)}\n(.*?)^[ \t]*{re.escape(END)}$", text, flags=re.M | re.S)


def test_a_solution_notebook_for_each_lesson_part_and_the_plate():
    assert [path.stem for path in SOLUTIONS] == NAMES


def test_exercises_are_up_to_date_byte_for_byte():
    made = make_exercises.expected_exercises()
    different, orphans = make_exercises.stale(made)
    assert not different and not orphans, "run `make exercises`"
    assert sorted(path.name for path in (ROOT / "exercises").glob("*.md")) == [f"{name}.md" for name in NAMES]
    graded = sorted(path.name for path in (ROOT / "exercises" / "graded").glob("*.md"))
    assert graded == [f"{name}.md" for name in NAMES]
    for path, content in made.items():
        assert path.read_bytes() == content


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda path: path.stem)
def test_no_solution_survives_in_the_exercise(solution):
    text = solution.read_text(encoding="utf-8")
    exercise = (ROOT / "exercises" / solution.name).read_text(encoding="utf-8")
    assert "BEGIN SOLUTION" not in exercise and "END SOLUTION" not in exercise
    exercise_lines = {line.strip() for line in exercise.splitlines()}
    blocks = solution_blocks(text)
    for block in blocks:
        for line in block.splitlines():
            if line.strip():
                assert line.strip() not in exercise_lines, f"a solution line leaks into the exercise: {line!r}"
    assert exercise.count(STUB) == len(blocks) == text.count(BEGIN)


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda path: path.stem)
def test_each_problem_has_a_question_an_answer_cell_and_a_check(solution):
    notebook = jupytext.read(solution)
    cells = notebook.cells
    answer_cells = [i for i, cell in enumerate(cells) if cell.cell_type == "code" and BEGIN in cell.source]
    assert len(answer_cells) >= 5  # the part's Your turn and at least four more
    labels = []
    for i in answer_cells:
        question, check_cell = cells[i - 1], cells[i + 1]
        assert question.cell_type == "markdown" and question.source.startswith("## Problem ")
        assert re.search(r"answer = ", cells[i].source)
        assert check_cell.cell_type == "code" and "check(answer, " in check_cell.source
        assert check_cell.metadata["jupyter"]["source_hidden"] is True
        labels.append(re.search(r'label="([^"]+)"', check_cell.source).group(1))
        assert question.source.startswith(f"## Problem {labels[-1]} ")
    assert len(set(labels)) == len(labels)
    # Lesson 1's notebooks open with their parts' Your turn; lesson 2's give every problem numbers of its own,
    # so that no answer is printed on the page (tests/test_answers_hidden.py); the plates open with their workshop.
    if solution.stem.startswith("lesson-1-"):
        assert "Your turn" in cells[answer_cells[0] - 1].source


def test_the_expected_figures_are_computed_not_typed():
    # Each check compares with an expression the package computes, never a number or word typed in.
    checks = 0
    for solution in SOLUTIONS:
        for cell in jupytext.read(solution).cells:
            if cell.cell_type != "code" or "check(answer, " not in cell.source:
                continue
            calls = [node for node in ast.walk(ast.parse(cell.source))
                     if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check"]
            expected = calls[0].args[1]
            if isinstance(expected, ast.UnaryOp):
                expected = expected.operand
            assert not isinstance(expected, ast.Constant), f"{solution.name}: {ast.unparse(calls[0])}"
            checks += 1
    assert checks == 33 + 28 + 26 + 20


def test_check_cells_assign_only_underscored_names_so_they_never_overwrite_a_students():
    for solution in SOLUTIONS:
        for cell in jupytext.read(solution).cells:
            if cell.cell_type == "code" and "check(answer, " in cell.source:
                tree = ast.parse(cell.source)
                assigned = [target.id for node in tree.body if isinstance(node, ast.Assign)
                            for target in node.targets if isinstance(target, ast.Name)]
                assert all(name.startswith("_") for name in assigned), f"{solution.name}: {assigned}"


def test_the_stub_keeps_the_indentation_and_the_rest_byte_for_byte():
    solution = "```{code-cell} ipython3\nx = 1\r\n    ### BEGIN SOLUTION\r\n    answer = 2\r\n    ### END SOLUTION\r\ny = 3\n```\n"
    assert exercise_text(solution) == "```{code-cell} ipython3\nx = 1\r\n    " + STUB + "\r\ny = 3\n```\n"


@pytest.mark.parametrize("solution, says", [
    ("```{code-cell} ipython3\n### BEGIN SOLUTION\nanswer = 1\n```\n", "cell ends inside"),
    ("```{code-cell} ipython3\n### BEGIN SOLUTION\nanswer = 1\n", "never ends"),
    ("```{code-cell} ipython3\n### BEGIN SOLUTION\n### BEGIN SOLUTION\n", "starts inside"),
    ("```{code-cell} ipython3\n### END SOLUTION\n```\n", "without a"),
    ("```{code-cell} ipython3\n### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n```\n", "never assigns `answer`"),
    ("### BEGIN SOLUTION\nanswer = 1\n### END SOLUTION\n", "inside a code cell"),
    ("```{code-cell} ipython3\n## BEGIN SOLUTIONS\nanswer = 1\n```\n", "line of its own"),
])
def test_a_malformed_solution_block_is_refused_with_its_line(solution, says):
    with pytest.raises(ValueError, match=says) as raised:
        exercise_text(solution, "solutions/x.md")
    assert str(raised.value).startswith("solutions/x.md:")


# -- the graded release --------------------------------------------------------------
@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda path: path.stem)
def test_graded_check_cells_hold_no_formula_and_no_figure(solution):
    graded = jupytext.read(ROOT / "exercises" / "graded" / solution.name)
    worked = jupytext.read(solution)
    checks = [cell.source for cell in worked.cells if cell.cell_type == "code" and "check(answer, " in cell.source]
    recorders = [cell.source for cell in graded.cells if cell.cell_type == "code" and "submit(answer" in cell.source]
    assert len(recorders) == len(checks)
    text = (ROOT / "exercises" / "graded" / solution.name).read_text(encoding="utf-8")
    assert "check(" not in text and "import check" not in text and "_prompts" not in text
    for source, recorder in zip(checks, recorders):
        call = check_call(source)
        assert ast.unparse(call.args[1]) not in text
        tree = ast.parse(recorder)
        assert len(tree.body) == 1, recorder  # one call: no helper lines, nothing computed
        (statement,) = tree.body
        assert statement.value.func.id == "submit" and [a.id for a in statement.value.args] == ["answer"]
        assert {k.arg for k in statement.value.keywords} <= {"label", "units", "choices"}
        names = {node.id for node in ast.walk(statement) if isinstance(node, ast.Name)}
        # A word problem's choices list every answer it takes (the catalog's GPUs): the question's own options.
        assert names <= {"submit", "answer", "gpu", "sm"}, names


def test_the_graded_release_runs_blank_and_records_without_judging():
    import servingmath.checks as checks

    notebook = jupytext.read(ROOT / "exercises" / "graded" / "lesson-1-part-1.md")
    namespace = {"__name__": "__main__"}
    shown = []
    for cell in notebook.cells:
        if cell.cell_type == "code":
            *body, last = cell.source.splitlines() or [""]
            exec("\n".join(body + [f"_last = {last}" if last.startswith("submit(") else last]), namespace)
            if last.startswith("submit("):
                shown.append(namespace["_last"])
    assert [result.status for result in shown] == ["unanswered"] * 6
    assert checks.submitted("1.1") is None


def test_graded_text_refuses_a_check_that_is_not_the_cells_last_call():
    original = (SOLUTIONS[0]).read_text(encoding="utf-8")
    call = re.search(r'^check\(answer, .*label="1\.1".*\)$', original, flags=re.M).group(0)
    solution = original.replace(call, f"print({call})")
    assert solution != original
    with pytest.raises(ValueError, match="must end with check"):
        graded_text(solution, "solutions/x.md")


def test_nbgrader_source_marks_answer_and_check_cells_and_hides_the_check():
    notebook = make_exercises.nbgrader_notebook(SOLUTIONS[0], {"1.1": 0.5})
    answers = [cell for cell in notebook.cells if cell.metadata.get("nbgrader", {}).get("solution")]
    graded = [cell for cell in notebook.cells if cell.metadata.get("nbgrader", {}).get("grade")]
    assert len(answers) == len(graded) == 6
    assert all(BEGIN in cell.source for cell in answers)
    first = graded[0]
    assert first.metadata["nbgrader"]["points"] == 0.5 and first.metadata["nbgrader"]["grade_id"] == "check-1-1"
    visible, hidden = first.source.split("### BEGIN HIDDEN TESTS")
    assert visible.strip() == "submit(answer, label='1.1', units='passes')"
    # The hidden test marks against the student's own variant, with a fresh copy of the package's check.
    assert "_variants.expected('lesson-1-part-1', '1.1', _student)" in hidden and "### END HIDDEN TESTS" in hidden
    assert "_importlib.reload(_checks)" in hidden and "sm.passes_for_request(500, 1000)" not in hidden


def test_a_problem_that_names_its_cache_checks_that_cache():
    # Each problem of plate XXIII.1 that says "N cached tokens" or "the cache now holds N tokens"
    # is checked against a decode step over those same N tokens.
    text = (ROOT / "solutions" / "plate-xxiii-1.md").read_text(encoding="utf-8")
    problems = re.split(r"^## Problem ", text, flags=re.M)[1:]
    named_somewhere = False
    for problem in problems:
        prose = re.sub(r"```.*?```", "", problem, flags=re.S)
        named = {int(n.replace(",", "")) for n in
                 re.findall(r"([\d,]+) cached tokens|cache now holds ([\d,]+) tokens", prose) for n in n if n}
        checked = {int(n.replace("_", "")) for n in re.findall(r"cached_tokens=([\d_]+)", problem)}
        if named:
            named_somewhere = True
            assert named <= checked, (problem.splitlines()[0], named, checked)
    assert named_somewhere
