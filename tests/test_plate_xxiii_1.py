"""Plate XXIII.1, Prefill and Decode: the data behind the workshop chart, its figure, and the
workshop explorer driven headless as a reader would drive it."""
from dataclasses import replace

import matplotlib
import numpy as np
import pytest

import servingmath as sm
from servingmath import plots, units
from servingmath.roofline import LESSON, PLATE
from servingmath.serving import TimePerTokenCurve, decode_step, prefill, time_per_token_curve
from servingmath.widgets import WORKSHOP_STOPS, workshop_explorer

matplotlib.use("Agg")

M = sm.LLAMA_3_8B
G = sm.H100_SXM


@pytest.fixture(scope="module")
def curve():
    return time_per_token_curve(M, G)


# -- the data behind the chart -----------------------------------------------------------
def test_the_curve_runs_from_one_token_to_the_models_window_under_the_plate(curve):
    assert isinstance(curve, TimePerTokenCurve)
    assert curve.assumptions is PLATE
    np.testing.assert_array_equal(curve.tokens, np.arange(1, 8193))  # Llama 3 8B reads 8,192 tokens
    assert curve.time.shape == curve.time_per_token.shape == curve.bound.shape == (8192,)
    longer = time_per_token_curve(sm.MODELS["llama-3.1-8b"], G)  # a longer window: the plate's 16,384
    assert longer.tokens.max() == 16_384


def test_each_point_of_the_curve_is_the_prefill_pass_of_that_many_tokens(curve):
    for tokens in (1, 295, 1024, 8192):
        single = prefill(M, G, tokens, assumptions=PLATE)
        assert curve.time[tokens - 1] == pytest.approx(single.time, rel=1e-12)
        assert curve.time_per_token[tokens - 1] == pytest.approx(single.time_per_token, rel=1e-12)
        assert curve.bound[tokens - 1] == single.bound


def test_marked_points_are_the_published_figures(curve):
    at_1024 = curve.prefill_at(1024)
    decode = curve.decode_at(1000)
    assert units.ms(at_1024.time, 1) == "28.4 ms"
    assert units.ms(at_1024.time_per_token, 4) == "0.0277 ms"
    assert units.ms(decode.time) == "6.24 ms"
    assert decode.time == decode_step(M, G, 1000, assumptions=PLATE).time
    assert units.number(decode.time / at_1024.time_per_token) == "225"
    assert units.number(units.round_to(1 / decode.time, 2)) == "160"
    assert units.number(curve.ridge) == "295"


def test_memory_sets_the_time_up_to_221_tokens_and_arithmetic_from_222(curve):
    # 60 % of the arithmetic against 80 % of the bandwidth moves the crossing below the ridge:
    # 295 × 0.6 ÷ 0.8 ≈ 221.5.
    assert curve.arithmetic_from == 222
    assert set(curve.bound[:221]) == {"memory"} and set(curve.bound[221:]) == {"compute"}
    assert curve.arithmetic_from == pytest.approx(curve.ridge * 0.6 / 0.8, abs=1)


def test_the_lessons_ideal_turns_at_the_ridge_itself():
    ideal = time_per_token_curve(M, G, assumptions=LESSON)
    assert ideal.arithmetic_from == 296
    assert units.ms(ideal.decode_at(1000).time) == "4.79 ms"
    assert ideal.fastest == 296  # flat beyond the ridge: nothing in the lesson makes long prompts dearer


def test_per_token_prefill_is_lowest_at_673_tokens_and_rises_past_a_few_thousand(curve):
    assert curve.fastest == 673
    lowest = curve.time_per_token.min()
    assert units.ms(lowest, 4) == "0.0276 ms"
    per_token = {tokens: curve.time_per_token[tokens - 1] for tokens in (2048, 4096, 8192)}
    assert [units.ms(per_token[tokens], 4) for tokens in per_token] == ["0.0281 ms", "0.0289 ms", "0.0307 ms"]
    assert [units.percent(per_token[tokens] / lowest - 1) for tokens in per_token] == ["1 %", "5 %", "11 %"]
    assert np.all(np.diff(curve.time_per_token[672:]) > 0)


def test_counting_the_full_square_of_attention_instead_of_the_causal_half():
    full = prefill(M, G, 1024, assumptions=replace(PLATE, attention="full"))
    assert units.ms(full.time, 1) == "28.8 ms"


def test_a_shorter_sweep_and_a_single_count_are_accepted():
    short = time_per_token_curve(M, G, [1, 2, 4])
    assert short.arithmetic_from is None and short.fastest == 4
    single = time_per_token_curve(M, G, 1024)
    assert single.tokens.tolist() == [1024.0] and single.arithmetic_from == 1024


@pytest.mark.parametrize("tokens, error", [
    (0, ValueError), ([1, -4], ValueError), (2.5, ValueError), ([], ValueError), ("many", TypeError),
])
def test_bad_token_counts_are_refused_by_name(tokens, error):
    with pytest.raises(error, match="tokens"):
        time_per_token_curve(M, G, tokens)


def test_bad_model_gpu_or_assumptions_are_refused_by_name():
    with pytest.raises(TypeError, match="model"):
        time_per_token_curve("Llama 3 8B", G)
    with pytest.raises(TypeError, match="gpu"):
        time_per_token_curve(M, "h100-sxm")
    with pytest.raises(TypeError, match="assumptions"):
        time_per_token_curve(M, G, assumptions="plate")


# -- the figure ------------------------------------------------------------------------
def test_the_chart_draws_both_curves_the_marks_and_the_ridge(curve):
    ideal = time_per_token_curve(M, G, assumptions=LESSON)
    figure = plots.time_per_token_chart(curve, curve.decode_at(1000), [curve.prefill_at(1024)], ideal=ideal)
    ax = figure.axes[0]
    labels = [line.get_label() for line in ax.get_lines()]
    assert PLATE.label in labels and LESSON.label in labels
    texts = " | ".join(text.get_text() for text in ax.texts)
    assert "6.24 ms a token" in texts and "1,024-token prefill:\n0.0277 ms a token" in texts
    assert "ridge: 295 FLOP/byte" in texts
    assert "memory sets the time" in texts and "arithmetic sets the time" in texts
    assert ax.get_xscale() == ax.get_yscale() == "log"
    low, high = ax.get_xlim()
    assert low < 1 and high > 8192  # the decode point at one token sits inside the frame
    matplotlib.pyplot.close(figure)


# -- the workshop explorer ----------------------------------------------------------------
def test_workshop_defaults():
    explorer = workshop_explorer()
    assert explorer.draws == 1
    assert explorer.readouts == {
        "pass": "prefill of 1,024 prompt tokens",
        "time of the pass": "28.4 ms",
        "time per token": "0.0277 ms",
        "FLOP per byte": "1,033",
        "limit": "arithmetic (compute-bound)",
        "arithmetic sets the time from": "222 tokens",
    }


def test_moving_tokens_to_1024_and_to_one_token_over_the_cache():
    explorer = workshop_explorer(tokens=64)
    assert explorer.readouts["limit"] == "memory (memory-bound)"
    explorer.set(tokens=1024)
    assert explorer.readouts["time of the pass"] == "28.4 ms"
    assert explorer.readouts["time per token"] == "0.0277 ms"
    assert explorer.draws == 2
    explorer.set(tokens=1, cached_tokens=1000)
    assert explorer.readouts["pass"] == "decode step: 1 new token over 1,000 cached"
    assert explorer.readouts["time of the pass"] == explorer.readouts["time per token"] == "6.24 ms"
    assert explorer.readouts["FLOP per byte"] == "1"
    assert explorer.readouts["limit"] == "memory (memory-bound)"
    assert explorer.draws == 3
    explorer.set(cached_tokens=0)  # no cache to read: the weights alone, plus the overhead
    assert explorer.readouts["time of the pass"] == "6.19 ms"


def test_changing_the_gpu_changes_the_readouts_and_redraws():
    explorer = workshop_explorer(tokens=1)
    explorer.controls["gpu"].value = "h200"
    # H200: the H100's arithmetic with 4.8 TB/s, so decode is faster and arithmetic takes over later.
    assert explorer.readouts["time of the pass"] == "4.42 ms"
    assert explorer.readouts["arithmetic sets the time from"] == "155 tokens"
    explorer.set(tokens=1024)
    assert explorer.readouts["time of the pass"] == "28.4 ms"  # prefill is arithmetic: bandwidth does not help
    explorer.set(gpu="a100-80gb")
    assert explorer.readouts["time of the pass"] == "89.5 ms"
    assert explorer.draws == 4
    assert "NVIDIA A100 80 GB SXM" in explorer.ax.get_title()


def test_the_assumptions_and_the_model_move_the_readouts():
    explorer = workshop_explorer(tokens=1)
    explorer.set(compute_efficiency=1.0, bandwidth_efficiency=1.0, overhead=0.0, cached_tokens=0)
    assert explorer.readouts["time of the pass"] == "4.79 ms"  # the lesson's figure, with the cache emptied
    assert explorer.readouts["arithmetic sets the time from"] == "295 tokens"
    explorer.set(model="llama-3.2-1b")
    assert explorer.readouts["time of the pass"] == "0.738 ms"
    assert "Llama 3.2 1B" in explorer.ax.get_title()


def test_the_controls_cover_the_plate():
    explorer = workshop_explorer()
    assert explorer.controls["tokens"].options[0] == ("1", 1) and WORKSHOP_STOPS[-1] == 16_384
    assert explorer.controls["overhead"].value == PLATE.overhead
    assert set(explorer.controls["model"].options) == {(entry.name, key) for key, entry in sm.MODELS.items()}
    assert [key for _, key in explorer.controls["gpu"].options] == list(sm.CATALOG)


def test_a_token_count_off_the_slider_is_refused():
    with pytest.raises(ValueError, match="tokens must be one of"):
        workshop_explorer(tokens=1000)


# -- the readout format ---------------------------------------------------------------------
@pytest.mark.parametrize("seconds, shown", [
    (0.028367, "28.4 ms"), (0.0000277, "0.0277 ms"), (0.006241, "6.24 ms"), (0.5620, "562 ms"),
    (0.009996, "10.0 ms"), (1.2345, "1,230 ms"), (0.0, "0.00 ms"),
])
def test_ms_significant(seconds, shown):
    assert units.ms_significant(seconds) == shown


def test_ms_significant_refuses_bad_input():
    with pytest.raises(ValueError, match="value"):
        units.ms_significant(-1.0)
    with pytest.raises(ValueError, match="significant"):
        units.ms_significant(1.0, 0)
