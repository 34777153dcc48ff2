"""Lesson 1, parts 3 and 4: the explorers driven headless, their figures, and the batch
where a decode step turns compute-bound."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import servingmath as sm
from servingmath import serving
from servingmath.roofline import PLATE

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


@settings(max_examples=40, deadline=None)
@given(peak_tera=st.floats(1, 5000), bandwidth_tera=st.floats(0.05, 10), weight_bits=st.sampled_from([4, 8, 16]))
def test_compute_bound_batch_is_the_first_compute_bound_batch_on_any_gpu(peak_tera, bandwidth_tera, weight_bits):
    gpu = G.with_changes(dense_flops={"bf16": peak_tera * 1e12}, memory_bandwidth=bandwidth_tera * 1e12)
    turn = serving.compute_bound_batch(M, gpu, weight_bits=weight_bits)
    assert serving.decode_step(M, gpu, batch=turn, weight_bits=weight_bits).bound == "compute"
    if turn > 1:
        assert serving.decode_step(M, gpu, batch=turn - 1, weight_bits=weight_bits).bound == "memory"
