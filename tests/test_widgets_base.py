"""The Explorer machinery, driven headless as a reader's clicks would drive it."""
import ipywidgets as widgets
import pytest

from servingmath import plots
from servingmath.widgets import Explorer


def make_explorer():
    return Explorer(
        controls={"tokens": widgets.IntSlider(value=3, min=1, max=10)},
        compute=lambda tokens: tokens * 2,
        describe=lambda doubled: {"doubled": str(doubled)},
        draw=lambda doubled, ax: plots.new_axes(ax)[1].bar([0], [doubled]),
        title="test",
    )


def test_moving_a_control_recomputes_and_redraws():
    explorer = make_explorer()
    assert explorer.readouts == {"doubled": "6"} and explorer.draws == 1
    explorer.controls["tokens"].value = 5
    assert explorer.readouts == {"doubled": "10"} and explorer.draws == 2
    assert "10" in explorer.readout.value


def test_set_updates_once_and_refuses_unknown_controls():
    explorer = make_explorer()
    explorer.set(tokens=7)
    assert explorer.readouts["doubled"] == "14" and explorer.draws == 2
    with pytest.raises(ValueError, match="controls must be among"):
        explorer.set(bandwidth=3)


def test_widget_holds_title_controls_readout_and_figure():
    box = make_explorer().widget()
    assert isinstance(box, widgets.VBox) and len(box.children) == 4
