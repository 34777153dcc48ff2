"""coursegrader.running: a notebook's output kept within its bounds, the rest dropped and said so."""
import json

import nbformat

from coursegrader import running
from coursegrader.sandbox import Limits


def test_output_past_a_cells_bound_is_dropped_and_the_answer_still_recorded(tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in (
        "import sys\nfor _ in range(40):\n    sys.stdout.write('y' * 50_000)\n    sys.stdout.flush()",
        "from servingmath.checks import submit\nanswer = 7", "submit(answer, label='1.1')")]
    nbformat.write(notebook, tmp_path / "flood.ipynb")
    limits = Limits(cell_output=200 * 1024, notebook_output=400 * 1024)
    ran = running.run_notebook(tmp_path / "flood.ipynb", 60, limits=limits)
    kept = len(json.dumps(ran.executed.cells[0].outputs))
    assert kept <= limits.cell_output and ran.records["1.1"]["answer"] == 7
    assert ran.problems == ["output cut: code cell 1 showed more than the 200 KiB a cell (or 400 KiB a "
                            "notebook) the grader keeps"]
