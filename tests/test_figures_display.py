"""A figure the package draws shows as an image on a fresh kernel, whatever ran before it (another
backend or figure format chosen, pyplot used): an explorer's SVG, shown and glued for the book."""
import nbformat
import pytest
from nbclient import NotebookClient

SETUPS = {
    "a fresh kernel": "",
    "the Agg backend chosen first": "import matplotlib\nmatplotlib.use('agg')",
    "the inline backend, SVG only": "%matplotlib inline\n%config InlineBackend.figure_formats = ['svg']",
    "pyplot used first": "import matplotlib.pyplot as plt\nplt.plot([1, 2]); plt.close('all')",
}


def run(*sources):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    return notebook.cells


@pytest.mark.parametrize("setup", SETUPS)
def test_explorer_and_plot_figures_show_as_images(setup):
    cells = run(SETUPS[setup],
                "from servingmath.explorers import lesson_1\nlesson_1.passes().figure",
                "from myst_nb import glue\nglue('timeline', lesson_1.passes().figure, display=False)\n"
                "from IPython import get_ipython\n"
                "get_ipython().display_formatter.format(lesson_1.passes().figure)[0].keys()")
    for cell in cells[1:]:
        shown = {kind for output in cell.outputs for kind in output.get("data", {})}
        text = " ".join(output.get("data", {}).get("text/plain", "") for output in cell.outputs)
        assert shown & {"image/png", "image/svg+xml"} or "image/svg+xml" in text or "image/png" in text, \
            (setup, cell.source, cell.outputs)
