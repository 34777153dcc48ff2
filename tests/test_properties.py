"""Properties that must hold for any model, GPU and sizes, checked with hypothesis."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import servingmath as sm

models = st.sampled_from(list(sm.MODELS.values()))
gpus = st.sampled_from([g for g in sm.CATALOG.values()])
tokens = st.integers(min_value=1, max_value=50_000)
cache = st.integers(min_value=0, max_value=200_000)
bits = st.sampled_from([2, 4, 8, 16, 32])
assumptions = st.builds(
    sm.Assumptions,
    compute_efficiency=st.floats(0.05, 1.0),
    bandwidth_efficiency=st.floats(0.05, 1.0),
    overhead=st.floats(0, 1e-2),
    attention=st.sampled_from(["causal", "full", "none"]),
    kv_cache=st.booleans(),
)
settings.register_profile("course", max_examples=150, deadline=None)
settings.load_profile("course")


def inside(model, value, most, least=1):
    """``value`` folded into least..most (most at the model's window or below): a context the model reads."""
    assert most <= model.context_window
    return least + (value - least) % (most - least + 1)


@given(models, gpus, tokens, tokens, cache, assumptions)
def test_pass_time_never_falls_as_tokens_or_cache_grow(model, gpu, a, b, cached, assume):
    half = model.context_window // 2
    small, large = sorted((inside(model, a, half), inside(model, b, half)))
    cached = inside(model, cached, half - 1000, 0)
    time = lambda n, c: sm.step(model, gpu, n, c, assumptions=assume).time  # noqa: E731
    assert time(small, cached) <= time(large, cached)
    assert time(small, cached) <= time(small, cached + 1000)


@given(models, gpus, tokens, cache, st.floats(1e10, 1e13), st.floats(1e10, 1e13), assumptions)
def test_more_bandwidth_never_slows_a_pass(model, gpu, n, cached, bw_a, bw_b, assume):
    slow, fast = sorted((bw_a, bw_b))
    half = model.context_window // 2
    n, cached = inside(model, n, half), inside(model, cached, half, 0)
    time = lambda bw: sm.step(model, gpu.with_changes(memory_bandwidth=bw), n, cached, assumptions=assume).time  # noqa: E731
    assert time(fast) <= time(slow)


@given(models, gpus, tokens, bits, bits, assumptions)
def test_fewer_bits_never_slow_a_pass(model, gpu, n, bits_a, bits_b, assume):
    few, many = sorted((bits_a, bits_b))
    n = inside(model, n, model.context_window)
    assert (sm.step(model, gpu, n, weight_bits=few, kv_bits=few, assumptions=assume).time
            <= sm.step(model, gpu, n, weight_bits=many, kv_bits=many, assumptions=assume).time)


@given(models, gpus, tokens, cache, assumptions)
def test_a_pass_takes_the_slower_of_its_two_limits(model, gpu, n, cached, assume):
    half = model.context_window // 2
    n, cached = inside(model, n, half), inside(model, cached, half, 0)
    timing = sm.step(model, gpu, n, cached, assumptions=assume).timing
    assert timing.time == pytest.approx(max(timing.compute_time, timing.memory_time) + assume.overhead)
    assert timing.time >= timing.compute_time and timing.time >= timing.memory_time
    assert timing.bound == ("compute" if timing.compute_time > timing.memory_time else "memory")


@given(models, tokens)
def test_sixteen_bit_intensity_is_the_tokens_in_the_pass(model, n):
    n = inside(model, n, model.context_window)
    cost = sm.forward_pass(model, n, attention="none", kv_cache=False)
    assert cost.intensity == pytest.approx(n * model.active_parameters / model.parameters_read(n))


@given(models, gpus, st.integers(1, 4096), st.integers(1, 4096), cache, assumptions)
def test_batching_never_costs_more_per_token_while_memory_bound(model, gpu, a, b, cached, assume):
    small, large = sorted((a, b))
    cached = inside(model, cached, model.context_window - 1, 0)
    gpu = gpu if gpu.price_per_hour else gpu.with_changes(price_per_hour=1.0)
    cost_small = sm.batching(model, gpu, small, cached, assumptions=assume)
    cost_large = sm.batching(model, gpu, large, cached, assumptions=assume)
    if cost_large.decode.bound == "memory":
        assert cost_large.cost_per_million_tokens <= cost_small.cost_per_million_tokens * (1 + 1e-12)
    # and never more than one user alone, whatever the bound
    alone = sm.batching(model, gpu, 1, cached, assumptions=assume)
    assert cost_large.cost_per_million_tokens <= alone.cost_per_million_tokens * (1 + 1e-12)


@given(models, gpus, st.lists(tokens, min_size=1, max_size=50), assumptions)
def test_arrays_give_the_same_answers_as_numbers(model, gpu, many, assume):
    many = [inside(model, n, model.context_window) for n in many]
    swept = sm.step(model, gpu, np.array(many), assumptions=assume).time
    one_by_one = [sm.step(model, gpu, n, assumptions=assume).time for n in many]
    np.testing.assert_allclose(swept, one_by_one, rtol=1e-12)


@given(st.integers(1, 100_000), st.integers(1, 100_000))
def test_passes_are_one_per_reply_token_whatever_the_prompt(prompt, reply):
    assert sm.passes_for_request(prompt, reply) == reply


@given(models, gpus, st.integers(1, 200_000), st.integers(1, 200_000), bits, bits)
def test_longer_contexts_never_fit_more_users(model, gpu, a, b, weight_bits, kv_bits):
    short, long = sorted((inside(model, a, model.context_window), inside(model, b, model.context_window)))
    assert (sm.max_batch(model, gpu, long, weight_bits, kv_bits)
            <= sm.max_batch(model, gpu, short, weight_bits, kv_bits))


@given(models, gpus, cache, st.integers(0, 5000), bits)
def test_what_fits_with_more_users_fits_with_fewer(model, gpu, context, users, kv_bits):
    context = inside(model, context, model.context_window, 0)
    if sm.fit(model, gpu, context, users + 1, kv_bits=kv_bits).fits:
        assert sm.fit(model, gpu, context, users, kv_bits=kv_bits).fits


@given(models, st.integers(0, 10_000), st.integers(0, 10_000))
def test_the_cache_grows_with_the_context_and_never_past_every_layer_holding_every_token(model, a, b):
    short, long = sorted((inside(model, a, model.context_window, 0), inside(model, b, model.context_window, 0)))
    assert sm.kv_cache_bytes(model, short) <= sm.kv_cache_bytes(model, long) <= long * model.kv_bytes_per_token()


@given(models, st.integers(1, 10_000), st.integers(1, 10_000))
def test_more_tokens_never_read_fewer_weights(model, a, b):
    few, many = sorted((a, b))
    assert model.active_parameters * (1 - 1e-12) <= model.parameters_read(few)
    assert model.parameters_read(few) <= model.parameters_read(many) <= model.parameters * (1 + 1e-12)


@given(models, gpus, st.integers(1, 10_000), st.integers(1, 1000))
def test_every_context_past_the_window_is_refused_naming_the_model_and_its_window(model, gpu, past, reply):
    """What the cache, a pass, a step or a request would hold past the window cannot exist."""
    too_long = model.context_window + past
    calls = (
        lambda: sm.kv_cache_bytes(model, too_long),
        lambda: sm.forward_pass(model, 1, too_long - 1),
        lambda: sm.prefill(model, gpu, too_long),
        lambda: sm.decode_step(model, gpu, too_long - 1),
        lambda: sm.request(model, gpu, too_long - reply, reply) if too_long > reply else sm.kv_cache_bytes(model, too_long),
        lambda: sm.max_batch(model, gpu, too_long),
        lambda: sm.fit(model, gpu, too_long),
    )
    for call in calls:
        with pytest.raises(sm.ContextTooLong) as refused:
            call()
        message = str(refused.value)
        assert model.name in message and f"{model.context_window:,}" in message and f"{too_long:,}" in message
    # and the window itself is a context the model reads
    assert sm.kv_cache_bytes(model, model.context_window) > 0
    assert sm.decode_step(model, gpu, model.context_window - 1).time > 0



def _outcome(call):
    """What a check gives: its value, or its error's kind and its message up to the value it got."""
    try:
        return "value", call()
    except (TypeError, ValueError) as error:
        return type(error).__name__, str(error).split(", got")[0]


@given(st.one_of(st.integers(-10**400, 10**400), st.floats()),
       st.sampled_from([None, -1, 0, 1.5]), st.sampled_from([None, 0, 2]), st.sampled_from([None, 10, 1e300]),
       st.booleans(), st.booleans())
def test_a_plain_number_is_checked_as_numpy_checks_it(value, minimum, above, maximum, integer, allow_inf):
    """The check's fast path for a Python int or float answers as its general path (here given the same
    value as a Fraction, or a numpy float where no Fraction can hold it) does."""
    from fractions import Fraction

    from servingmath import _check

    options = dict(minimum=minimum, above=above, maximum=maximum, integer=integer, allow_inf=allow_inf)
    same = Fraction(value) if not (isinstance(value, float) and not np.isfinite(value)) else np.float64(value)
    assert type(same) not in (int, float)
    assert _outcome(lambda: _check.number("x", value, **options)) == \
        _outcome(lambda: _check.number("x", same, **options))
