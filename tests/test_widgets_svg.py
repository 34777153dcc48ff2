"""The explorers' live figures: SVG the package writes, redrawn on every move, and a static figure that shows."""
import re
import warnings
import xml.etree.ElementTree as ElementTree

import ipywidgets as widgets
import pytest

import servingmath as sm
from servingmath import plots, svgcharts, units
from servingmath import widgets as explorers
from servingmath.widgets import (Explorer, batching_explorer, intensity_explorer, passes_explorer, request_explorer,
                                 workshop_explorer)

SVG = "{http://www.w3.org/2000/svg}"
L4_RIDGE = sm.ridge_point(sm.CATALOG["l4"].peak_flops, sm.CATALOG["l4"].memory_bandwidth)


def texts(svg):
    """Every line of text the figure shows."""
    return [span.text for span in ElementTree.fromstring(svg).iter(f"{SVG}tspan")]


def marks(svg, gid):
    return [element for element in ElementTree.fromstring(svg).iter() if element.get("data-gid") == gid]


MOVES = [  # (explorer, a control moved, the text the figure must then show)
    (passes_explorer, {"reply_tokens": 5}, "decode: 4 passes, 1 token each"),
    (intensity_explorer, {"tokens": 100}, "100 FLOP/byte, memory-bound"),
    (intensity_explorer, {"gpu": "l4"}, f"ridge: {units.number(L4_RIDGE)} FLOP/byte"),
    (request_explorer, {"weight_bits": 8}, "decode, 249 steps of 2.40 ms: 0.60 s"),
    (batching_explorer, {"batch": 8}, "8 users: $0.499 per million"),
    (workshop_explorer, {"tokens": 4096}, "4,096-token prefill:"),
]


@pytest.mark.parametrize("make, move, shown", MOVES, ids=[f"{m.__name__}-{list(v)[0]}" for m, v, _ in MOVES])
def test_moving_a_control_rewrites_the_live_figure(make, move, shown):
    explorer = make()
    before, draws = explorer.svg, explorer.draws
    assert explorer.view.value == before and shown not in texts(before)
    explorer.set(**move)
    assert explorer.draws == draws + 1
    assert explorer.view.value == explorer.svg != before
    assert shown in texts(explorer.svg)
    # The same picture as the package draws from the explorer's result, and no other.
    assert explorer.svg == explorer.sketch(explorer.result)


def test_the_live_figure_is_small_well_formed_svg_for_every_explorer():
    for make in (passes_explorer, intensity_explorer, request_explorer, batching_explorer, workshop_explorer):
        svg = make().svg
        root = ElementTree.fromstring(svg)
        assert root.tag == f"{SVG}svg" and root.get("viewBox").startswith("0 0 700 ")
        assert len(svg) < 20_000, make.__name__  # long sweeps are thinned to about a point a pixel
        assert svg._repr_svg_() == svg


def test_the_figures_show_the_example_at_their_defaults():
    assert "2,000\ntokens" not in texts(passes_explorer().svg) and "2,000" in texts(passes_explorer().svg)
    assert len(marks(passes_explorer().svg, "decode")) == 17  # 14 first, 3 last, the middle elided
    assert "3,000 FLOP/byte, compute-bound" in texts(intensity_explorer().svg)
    assert "Where the time goes: 96 % of it decode" in texts(request_explorer().svg)
    assert "32 users: $0.125 per million" in texts(batching_explorer().svg)
    assert "6.24 ms a token" in texts(workshop_explorer().svg)
    assert len(marks(workshop_explorer().svg, "prefill")) == 1
    assert marks(workshop_explorer(tokens=1).svg, "prefill") == []


def test_the_static_figure_follows_the_controls():
    explorer = request_explorer()
    explorer.set(weight_bits=8)
    labels = explorer.ax.get_legend_handles_labels()[1]
    assert labels[1] == "decode, 249 steps of 2.40 ms: 0.60 s"
    assert plots.figure_png(explorer.figure).startswith(b"\x89PNG\r\n\x1a\n")


def test_an_explorer_without_an_svg_drawing_shows_its_matplotlib_figure():
    explorer = Explorer({"tokens": widgets.IntSlider(value=3, min=1, max=10)}, compute=lambda tokens: tokens,
                        describe=lambda n: {"n": str(n)}, draw=lambda n, ax: plots.new_axes(ax)[1].bar([0], [n]))
    assert ElementTree.fromstring(explorer.svg).tag == f"{SVG}svg"


def test_scales_and_ticks():
    scale = svgcharts.Scale(1, 1000, 0, 300, log=True)
    assert list(scale([1, 10, 1000])) == [0, 100, 300]
    assert svgcharts.decades(0.3, 2e6) == [1, 10, 100, 1e3, 1e4, 1e5, 1e6]
    assert svgcharts.round_steps(0, 1.34) == [0, 0.5, 1.0]
    assert list(svgcharts.spread(4096, 300))[:3] == [0, 1, 2] and svgcharts.spread(4096, 300)[-1] == 4095


@pytest.mark.parametrize("make", [passes_explorer, intensity_explorer, request_explorer, batching_explorer,
                                  workshop_explorer])
def test_every_control_at_either_end_still_draws_a_whole_figure(make):
    explorer = make()
    for control in explorer.controls.values():
        for end in ("last", "first"):
            if hasattr(control, "options"):
                control.index = len(control.options) - 1 if end == "last" else 0
            else:
                extreme = control.max if end == "last" else control.min
                control.value = control.base ** extreme if hasattr(control, "base") else extreme
            root = ElementTree.fromstring(explorer.svg)
            numbers = " ".join(value for element in root.iter() for value in element.attrib.values())
            assert "nan" not in numbers and "inf" not in numbers, (make.__name__, control.description, end)
            assert explorer.svg == explorer.sketch(explorer.result)


EXPLORERS = sorted(name for name in dir(explorers) if name.endswith("_explorer"))


@pytest.mark.parametrize("name", EXPLORERS)
def test_every_explorer_draws_a_finite_figure_at_every_controls_ends_and_choices(name):
    # A log axis handed a zero draws at -inf: the figure vanishes and numpy warns. Catch both.
    explorer = getattr(explorers, name)()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for control_name, control in explorer.controls.items():
            options = getattr(control, "options", None)
            settings = ([option[1] if isinstance(option, tuple) else option for option in options] if options
                        else [control.min, control.value, control.max])
            for setting in settings:
                explorer.set(**{control_name: setting})
                svg = str(explorer.svg)
                assert not re.search(r"\b(nan|inf)\b", svg), (name, control_name, setting)
