"""Lesson 1, parts 1 and 2: counting passes, and FLOP per byte against the ridge.

The explorers are driven headless as a reader's clicks would drive them; the figures
are checked for the artists that carry the idea.
"""
import matplotlib
import pytest
from matplotlib.container import BarContainer

import servingmath as sm
from servingmath import plots, units
from servingmath.serving import TOKENS_PER_DECODE_PASS, request_passes
from servingmath.widgets import intensity_explorer, passes_explorer

matplotlib.use("Agg")

M, H100 = sm.LLAMA_3_8B, sm.H100_SXM


# -- the package: a request counted in passes -----------------------------------------
def test_example_1_1_counted():
    counted = request_passes(2000, 300)
    assert counted.passes == 300
    assert counted.prefill_tokens == 2000
    assert counted.decode_passes == 299
    assert units.percent(counted.decode_share_of_passes, 1) == "99.7 %"


def test_your_turn_1_counted():
    assert request_passes(500, 1000).passes == 1000


def test_a_longer_prompt_adds_no_passes_and_a_longer_reply_adds_one_each():
    assert request_passes(7000, 300).passes == request_passes(1, 300).passes == 300
    assert request_passes(2000, 301).passes - request_passes(2000, 300).passes == 1


def test_a_one_token_reply_is_prefill_alone():
    counted = request_passes(2000, 1)
    assert (counted.passes, counted.decode_passes, counted.decode_share_of_passes) == (1, 0, 0)


def test_summary_is_mostly_prefill_story_mostly_decode():
    assert units.percent(request_passes(8000, 100).prefill_share_of_tokens, 1) == "98.8 %"
    assert units.percent(request_passes(20, 2000).prefill_share_of_tokens, 1) == "1.0 %"


def test_request_passes_sweeps_arrays():
    counted = request_passes(2000, [1, 300, 1000])
    assert list(counted.passes) == [1, 300, 1000]
    assert list(counted.decode_passes) == [0, 299, 999]


@pytest.mark.parametrize("prompt, reply, error, argument", [
    (0, 300, ValueError, "prompt_tokens"),
    (2000, 0, ValueError, "reply_tokens"),
    (2000, 2.5, ValueError, "reply_tokens"),
    ("2000", 300, TypeError, "prompt_tokens"),
    (2000, None, TypeError, "reply_tokens"),
])
def test_request_passes_refuses_bad_input_by_name(prompt, reply, error, argument):
    with pytest.raises(error, match=argument):
        request_passes(prompt, reply)


# -- Part 1 explorer and figure -------------------------------------------------------
def test_passes_explorer_defaults_to_example_1_1():
    explorer = passes_explorer()
    assert explorer.readouts == {
        "passes": "300",
        "tokens in the prefill pass": "2,000",
        "decode passes": "299",
        "share of passes that are decode": "99.7 %",
    }


def test_passes_explorer_follows_its_controls():
    explorer = passes_explorer()
    before = explorer.draws
    explorer.set(prompt_tokens=500, reply_tokens=1000)
    assert explorer.readouts["passes"] == "1,000"
    assert explorer.readouts["tokens in the prefill pass"] == "500"
    assert explorer.readouts["decode passes"] == "999"
    assert explorer.draws == before + 1
    explorer.controls["prompt_tokens"].value = 20_000
    assert explorer.readouts["passes"] == "1,000"
    assert explorer.draws == before + 2


def bars(ax, label):
    [container] = [c for c in ax.containers if isinstance(c, BarContainer) and c.get_label() == label]
    return container


def test_timeline_draws_every_decode_pass_of_a_short_reply():
    figure = plots.request_timeline(request_passes(500, 10))
    ax = figure.axes[0]
    assert len(bars(ax, "prefill")) == 1
    assert len(bars(ax, "decode")) == 9
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "10"]


def test_timeline_elides_the_middle_of_a_long_reply_and_says_how_many():
    figure = plots.request_timeline(request_passes(2000, 300))
    ax = figure.axes[0]
    shown = plots.DECODE_SHOWN_FIRST + plots.DECODE_SHOWN_LAST
    assert len(bars(ax, "prefill")) == 1
    assert len(bars(ax, "decode")) == shown
    texts = [t.get_text() for t in ax.texts]
    assert f"{299 - shown} more" in texts
    assert f"decode: 299 passes, {TOKENS_PER_DECODE_PASS} token each" in texts
    assert "2,000\ntokens" in texts
    assert [t.get_text() for t in ax.get_xticklabels()][-1] == "300"
    # The decode bars stay in time order, each after the prefill pass.
    lefts = [bar.get_x() for bar in bars(ax, "decode")]
    assert lefts == sorted(lefts) and lefts[0] > bars(ax, "prefill")[0].get_width()


def test_timeline_of_a_one_token_reply_has_no_decode_bars():
    ax = plots.request_timeline(request_passes(2000, 1)).axes[0]
    assert len(bars(ax, "decode")) == 0
    assert not any(t.get_text().startswith("decode") for t in ax.texts)


def test_timeline_redraws_into_the_same_axes():
    explorer = passes_explorer()
    explorer.set(reply_tokens=5)
    assert len(explorer.figure.axes) == 1
    assert len(bars(explorer.ax, "decode")) == 4


# -- Part 2 explorer and figure -------------------------------------------------------
def test_intensity_explorer_defaults_to_example_2_1():
    explorer = intensity_explorer()
    assert explorer.readouts == {
        "tokens in the pass": "3,000",
        "FLOP per byte": "3,000",
        "ridge of the GPU": "295",
        "the pass is": "compute-bound",
    }


def test_intensity_explorer_your_turn_2():
    explorer = intensity_explorer()
    before = explorer.draws
    explorer.set(tokens=200)
    assert explorer.readouts["FLOP per byte"] == "200"
    assert explorer.readouts["the pass is"] == "memory-bound"
    assert explorer.draws == before + 1


def test_intensity_explorer_decode_step_is_one_flop_a_byte():
    explorer = intensity_explorer(tokens=1)
    assert explorer.readouts["FLOP per byte"] == "1"
    assert explorer.readouts["the pass is"] == "memory-bound"


def test_intensity_explorer_rounds_a_log_slider_value_to_whole_tokens():
    explorer = intensity_explorer()
    explorer.set(tokens=10 ** 2.5)  # 316.2...
    assert explorer.readouts["tokens in the pass"] == "316"
    assert explorer.readouts["FLOP per byte"] == "316"
    assert explorer.readouts["the pass is"] == "compute-bound"


def test_fewer_weight_bits_raise_flop_per_byte():
    explorer = intensity_explorer(tokens=200)
    explorer.set(weight_bits=8)
    assert explorer.readouts["FLOP per byte"] == "400"
    assert explorer.readouts["the pass is"] == "compute-bound"
    explorer.set(weight_bits=4)
    assert explorer.readouts["FLOP per byte"] == "800"


def ridge_x(ax):
    [line] = [line for line in ax.lines if line.get_gid() == "ridge"]
    return line.get_xdata()[0]


def test_changing_gpu_changes_the_ridge_shown():
    explorer = intensity_explorer(tokens=300)
    assert explorer.readouts["the pass is"] == "compute-bound"
    assert ridge_x(explorer.ax) == sm.ridge_point(H100.peak_flops, H100.memory_bandwidth)
    explorer.set(gpu="l4")
    l4 = sm.CATALOG["l4"]
    assert explorer.readouts["ridge of the GPU"] == "403"
    assert explorer.readouts["the pass is"] == "memory-bound"
    assert ridge_x(explorer.ax) == sm.ridge_point(l4.peak_flops, l4.memory_bandwidth)


def test_every_catalog_gpu_can_be_chosen():
    explorer = intensity_explorer()
    for key, gpu in sm.CATALOG.items():
        explorer.set(gpu=key)
        assert explorer.readouts["ridge of the GPU"] == units.number(sm.ridge_point(gpu.peak_flops,
                                                                                   gpu.memory_bandwidth))


def test_roofline_chart_places_each_pass_on_the_roof():
    passes = {"prefill": sm.prefill(M, H100, 3000), "decode": sm.decode_step(M, H100)}
    ax = plots.roofline_chart(H100, passes).axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert ridge_x(ax) == sm.ridge_point(H100.peak_flops, H100.memory_bandwidth)
    points = [line for line in ax.lines if line.get_gid() == "pass"]
    assert [line.get_xdata()[0] for line in points] == [3000, 1]
    # On the roof: the flat top for prefill, bandwidth × intensity for decode (TFLOP/s).
    assert points[0].get_ydata()[0] == pytest.approx(H100.peak_flops / 1e12)
    assert points[1].get_ydata()[0] == pytest.approx(H100.memory_bandwidth / 1e12)
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "3,000 FLOP/byte, compute-bound" in texts
    assert "1 FLOP/byte, memory-bound" in texts
    assert "ridge: 295 FLOP/byte" in texts
    [roof] = [line for line in ax.lines if line.get_gid() == "roof"]
    assert max(roof.get_ydata()) == pytest.approx(H100.peak_flops / 1e12)
