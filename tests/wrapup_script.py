"""The editable script of a lesson's wrap-up, as the reader runs it (shared by the wrap-ups' tests)."""
import contextlib
import io

import jupytext


def script_cell(page, defines):
    """The one code cell of ``page`` that defines ``defines`` (``"def estimate("``), as written on the page."""
    cells = [cell.source for cell in jupytext.read(page).cells
             if cell.cell_type == "code" and defines in cell.source]
    assert len(cells) == 1, f"{page} has {len(cells)} cells with {defines!r}, expected one"
    return cells[0]


def run_script(source, call=None):
    """What the cell prints when run alone (it defines its function and calls it), or what ``call`` then prints."""
    namespace = {}
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        exec(source, namespace)
        if call is not None:
            printed.seek(0)
            printed.truncate()
            exec(call, namespace)
    return printed.getvalue().splitlines()
