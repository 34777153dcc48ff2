"""Plate XXIII.1, Prefill and Decode: the data behind the workshop chart, its figure, and the
workshop explorer driven headless as a reader would drive it."""
from dataclasses import replace

import numpy as np
import pytest

import servingmath as sm
from servingmath import units
from servingmath.roofline import LESSON, PLATE
from servingmath.serving import TimePerTokenCurve, decode_step, prefill, time_per_token_curve

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


def test_the_workshops_readouts_time_a_prefill_and_the_cache_moves_only_the_decode_line():
    # The plate says the tokens slider sets a prefill (one token: nothing cached) and the cache
    # slider only the red dashes' decode step.
    from servingmath.explorers import plates

    chart = plates.workshop(tokens=1024, cached=1000)
    at_one = chart.readouts_at(tokens=1)
    assert at_one == chart.readouts_at(tokens=1, cached=8000)
    prefill_one = sm.time_per_token_curve(sm.LLAMA_3_8B, sm.H100_SXM, [1]).prefill_at(1)
    assert at_one["time of the pass"] == sm.units.ms_significant(prefill_one.time)
    decode = sm.time_per_token_curve(sm.LLAMA_3_8B, sm.H100_SXM, [1]).decode_at(1000)
    assert decode.time > prefill_one.time
