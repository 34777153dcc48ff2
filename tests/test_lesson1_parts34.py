"""Lesson 1, parts 3 and 4: the explorers driven headless, their figures, and the batch
where a decode step turns compute-bound."""
import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import servingmath as sm  # noqa: E402
from servingmath import plots, serving, units, widgets  # noqa: E402
from servingmath.roofline import PLATE  # noqa: E402

M = sm.LLAMA_3_8B
G = sm.H100_SXM


# -- compute_bound_batch ---------------------------------------------------------------
def test_llama_on_h100_turns_compute_bound_at_296_users():
    assert serving.compute_bound_batch(M, G) == 296
    assert serving.decode_step(M, G, batch=295).bound == "memory"
    assert serving.decode_step(M, G, batch=296).bound == "compute"


@pytest.mark.parametrize("key", list(sm.CATALOG))
def test_every_gpu_turns_at_the_first_compute_bound_batch(key):
    gpu = sm.CATALOG[key]
    turn = serving.compute_bound_batch(M, gpu)
    assert serving.decode_step(M, gpu, batch=turn).timing.compute_bound
    assert not serving.decode_step(M, gpu, batch=turn - 1).timing.compute_bound


def test_an_exact_ridge_is_still_memory_bound():
    # The laptop's ridge is 36 FLOP a byte exactly: at 36 users the two times tie, and a tie is not compute-bound.
    laptop = sm.CATALOG["laptop"]
    assert sm.ridge_point(laptop.peak_flops, laptop.memory_bandwidth) == 36
    assert serving.compute_bound_batch(M, laptop) == 37


def test_fewer_weight_bits_turn_compute_bound_sooner():
    assert serving.compute_bound_batch(M, G, weight_bits=8) == 148
    assert serving.compute_bound_batch(M, G, weight_bits=4) == 74


def test_a_step_reading_a_long_cache_for_each_user_never_turns():
    # Under the plate's assumptions each user's 1,000 cached tokens take longer to read than its arithmetic.
    assert serving.compute_bound_batch(M, G, cached_tokens=1000, assumptions=PLATE) is None
    assert serving.decode_step(M, G, cached_tokens=1000, batch=100_000, assumptions=PLATE).bound == "memory"
    assert serving.compute_bound_batch(M, G, cached_tokens=0, assumptions=PLATE) == 222


@pytest.mark.parametrize("argument, value, error", [
    ("cached_tokens", -1, ValueError),
    ("cached_tokens", np.array([0, 10]), TypeError),
    ("weight_bits", "16", TypeError),
    ("weight_bits", 0, ValueError),
    ("kv_bits", np.array([8, 16]), TypeError),
])
def test_compute_bound_batch_refuses_bad_input_by_name(argument, value, error):
    with pytest.raises(error, match=argument):
        serving.compute_bound_batch(M, G, **{argument: value})


def test_compute_bound_batch_refuses_a_gpu_that_is_not_one():
    with pytest.raises(TypeError, match="gpu"):
        serving.compute_bound_batch(M, "h100-sxm")


# -- part 3: the request explorer ------------------------------------------------------
def test_request_explorer_defaults_show_example_3_1():
    explorer = widgets.request_explorer()
    shown = explorer.readouts
    assert shown["time to first token (TTFT)"] == "49 ms, compute-bound"
    assert shown["time per output token (TPOT)"] == "4.79 ms, memory-bound"
    assert shown["tokens a second"] == "209"
    assert shown["whole reply"] == "1.24 s"
    assert shown["share spent in decode"] == "96 %"
    assert shown["weights read each pass"] == "16.06 GB (the GPU holds 80 GB)"
    assert explorer.draws == 1
    assert "4.79 ms" in explorer.readout.value


def test_request_explorer_with_8_bit_weights_gets_417_tokens_a_second():
    explorer = widgets.request_explorer()
    explorer.set(weight_bits=8)
    assert explorer.readouts["tokens a second"] == "417"
    assert explorer.readouts["time per output token (TPOT)"] == "2.40 ms, memory-bound"
    assert explorer.draws == 2


def test_request_explorer_follows_the_gpu_and_a_short_prompt():
    explorer = widgets.request_explorer()
    explorer.controls["gpu"].value = "h200"
    assert explorer.draws == 2
    # Same arithmetic as the H100, faster memory: TTFT unchanged, TPOT shorter.
    assert explorer.readouts["time to first token (TTFT)"] == "49 ms, compute-bound"
    assert explorer.readouts["time per output token (TPOT)"] == "3.35 ms, memory-bound"
    assert explorer.readouts["tokens a second"] == "299"
    explorer.set(prompt_tokens=200)
    assert explorer.readouts["time to first token (TTFT)"].endswith("memory-bound")
    assert explorer.draws == 3


def test_request_explorer_figure_is_the_request_split():
    explorer = widgets.request_explorer()
    timed = serving.request(M, G, 3000, 250)
    bars = {patch.get_gid(): patch for patch in explorer.ax.patches}
    assert bars["prefill"].get_width() == timed.ttft
    assert bars["decode"].get_x() == timed.ttft
    assert bars["decode"].get_width() == timed.decode_time
    explorer.set(reply_tokens=1000)
    bars = {patch.get_gid(): patch for patch in explorer.ax.patches}
    assert bars["decode"].get_width() == serving.request(M, G, 3000, 1000).decode_time
    assert len(explorer.ax.patches) == 2  # redrawn, not piled on top


def test_request_time_split_draws_both_phases_and_names_them():
    timed = serving.request(M, G, 3000, 250)
    figure = plots.request_time_split(timed)
    ax = figure.axes[0]
    assert [patch.get_gid() for patch in ax.patches] == ["prefill", "decode"]
    assert ax.get_title() == "Where the time goes: 96 % of it decode"
    labels = [text.get_text() for text in ax.get_legend().get_texts()]
    assert labels == ["prefill, 1 pass: 49 ms", "decode, 249 steps of 4.79 ms: 1.19 s"]


# -- part 4: the batching explorer -----------------------------------------------------
def test_batching_explorer_defaults_show_example_4_1():
    explorer = widgets.batching_explorer()
    shown = explorer.readouts
    assert shown["cost per million tokens"] == "$0.125"
    assert shown["tokens an hour"] == "24.03 million"
    assert shown["each user's tokens a second"] == "209"
    assert shown["one decode step"] == "4.79 ms, memory-bound"
    assert shown["arithmetic becomes the limit at"] == "296 users per pass"


def test_batching_explorer_at_8_and_1_users():
    explorer = widgets.batching_explorer()
    explorer.set(batch=8)
    assert explorer.readouts["cost per million tokens"] == "$0.499"
    assert explorer.draws == 2
    explorer.set(batch=1)
    assert explorer.readouts["cost per million tokens"] == "$3.995"
    assert explorer.readouts["tokens an hour"] == "0.75 million"


def test_batching_explorer_price_and_gpu_move_the_readouts():
    explorer = widgets.batching_explorer()
    explorer.set(price_per_hour=6.0)
    assert explorer.readouts["cost per million tokens"] == "$0.250"
    explorer.set(gpu="h200", price_per_hour=3.0)  # later controls win: the price stays at $3
    assert explorer.readouts["one decode step"] == "3.35 ms, memory-bound"
    assert explorer.readouts["arithmetic becomes the limit at"] == "207 users per pass"
    assert explorer.controls["price_per_hour"].value == 3.0
    assert explorer.draws == 3


def test_batching_explorer_takes_the_price_of_the_gpu_chosen():
    explorer = widgets.batching_explorer()
    explorer.controls["gpu"].value = "l4"
    assert explorer.controls["price_per_hour"].value == sm.CATALOG["l4"].price_per_hour
    l4 = serving.batching(M, sm.CATALOG["l4"], 32)
    assert explorer.readouts["cost per million tokens"] == units.dollars(l4.cost_per_million_tokens, 3)
    explorer.controls["gpu"].value = "laptop"  # owned, not rented: the price stays where it was
    assert explorer.controls["price_per_hour"].value == sm.CATALOG["l4"].price_per_hour


def test_batching_explorer_past_the_ridge_every_user_slows():
    explorer = widgets.batching_explorer()
    explorer.set(batch=1024)
    assert explorer.readouts["one decode step"] == "16.62 ms, compute-bound"
    assert explorer.readouts["each user's tokens a second"] == "60"


def test_batching_explorer_marks_the_batches_the_package_computes():
    explorer = widgets.batching_explorer()
    explorer.set(batch=64, gpu="a100-80gb")
    lines = {line.get_gid(): line for line in explorer.ax.lines}
    assert lines["compute-bound-batch"].get_xdata()[0] == serving.compute_bound_batch(M, sm.CATALOG["a100-80gb"])
    assert list(lines["chosen-batch"].get_xdata()) == [64]
    chosen = serving.batching(M, sm.CATALOG["a100-80gb"], 64)  # at the A100's own price
    assert lines["chosen-batch"].get_ydata()[0] == chosen.cost_per_million_tokens
    # One right-hand axis for the users' speed, however often the figure is redrawn.
    assert len(explorer.figure.axes) == 2


def test_batching_sweep_curves_fall_and_flatten_at_the_ridge():
    sweep = serving.batching(M, G, range(1, 4097), price_per_hour=3.0)
    chosen = serving.batching(M, G, 32, price_per_hour=3.0)
    turn = serving.compute_bound_batch(M, G)
    figure = plots.batching_sweep(sweep, chosen, turn)
    cost_axis, speed_axis = figure.axes
    cost = {line.get_gid(): line for line in cost_axis.lines}["cost"]
    speed = {line.get_gid(): line for line in speed_axis.lines}["speed"]
    np.testing.assert_array_equal(cost.get_ydata(), sweep.cost_per_million_tokens)
    np.testing.assert_array_equal(speed.get_ydata(), sweep.tokens_per_second_per_user)
    assert {line.get_gid() for line in cost_axis.lines} == {"cost", "chosen-batch", "compute-bound-batch", None}
    assert cost_axis.get_xscale() == "log" and cost_axis.get_yscale() == "log"
    assert cost_axis.get_xlim() == (1, 4096)


def test_batching_sweep_without_a_turning_batch_marks_none():
    sweep = serving.batching(M, G, range(1, 65), cached_tokens=1000, price_per_hour=3.0, assumptions=PLATE)
    chosen = serving.batching(M, G, 8, cached_tokens=1000, price_per_hour=3.0, assumptions=PLATE)
    figure = plots.batching_sweep(sweep, chosen, None)
    gids = {line.get_gid() for line in figure.axes[0].lines}
    assert "compute-bound-batch" not in gids and "chosen-batch" in gids


@settings(max_examples=40, deadline=None)
@given(peak_tera=st.floats(1, 5000), bandwidth_tera=st.floats(0.05, 10), weight_bits=st.sampled_from([4, 8, 16]))
def test_compute_bound_batch_is_the_first_compute_bound_batch_on_any_gpu(peak_tera, bandwidth_tera, weight_bits):
    gpu = G.with_changes(dense_flops={"bf16": peak_tera * 1e12}, memory_bandwidth=bandwidth_tera * 1e12)
    turn = serving.compute_bound_batch(M, gpu, weight_bits=weight_bits)
    assert serving.decode_step(M, gpu, batch=turn, weight_bits=weight_bits).bound == "compute"
    if turn > 1:
        assert serving.decode_step(M, gpu, batch=turn - 1, weight_bits=weight_bits).bound == "memory"
