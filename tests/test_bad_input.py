"""Every public function refuses bad input with an error naming the argument and its value."""
import math

import numpy as np
import pytest

import servingmath as sm
from servingmath import hardware, models, passes, roofline, serving, units

M, G = sm.LLAMA_3_8B, sm.H100_SXM

# (function, good keyword arguments, argument to spoil)
CALLS = [
    (sm.weight_bytes, dict(parameters=8e9, weight_bits=16), ["parameters", "weight_bits"]),
    (sm.linear_flops, dict(parameters=8e9, tokens=10), ["parameters", "tokens"]),
    (passes.positions_attended, dict(new_tokens=10, cached_tokens=5), ["new_tokens", "cached_tokens"]),
    (sm.attention_flops, dict(model=M, new_tokens=10, cached_tokens=5), ["new_tokens", "cached_tokens"]),
    (sm.forward_pass, dict(model=M, new_tokens=10, cached_tokens=5, batch=2, weight_bits=16, kv_bits=16),
     ["new_tokens", "cached_tokens", "batch", "weight_bits", "kv_bits"]),
    (sm.arithmetic_intensity, dict(flops=1e12, bytes_moved=1e9), ["flops", "bytes_moved"]),
    (sm.ridge_point, dict(peak_flops=1e15, bandwidth=3e12), ["peak_flops", "bandwidth"]),
    (sm.attainable_flops, dict(intensity=10, peak_flops=1e15, bandwidth=3e12), ["intensity", "peak_flops", "bandwidth"]),
    (sm.pass_time, dict(flops=1e12, bytes_moved=1e9, peak_flops=1e15, bandwidth=3e12),
     ["flops", "bytes_moved", "peak_flops", "bandwidth"]),
    (sm.step, dict(model=M, gpu=G, new_tokens=10, cached_tokens=0, batch=1, weight_bits=16, kv_bits=16),
     ["new_tokens", "cached_tokens", "batch", "weight_bits", "kv_bits"]),
    (sm.prefill, dict(model=M, gpu=G, prompt_tokens=10), ["prompt_tokens"]),
    (sm.decode_step, dict(model=M, gpu=G, cached_tokens=10, batch=1), ["cached_tokens", "batch"]),
    (sm.passes_for_request, dict(prompt_tokens=10, reply_tokens=5), ["prompt_tokens", "reply_tokens"]),
    (sm.request, dict(model=M, gpu=G, prompt_tokens=10, reply_tokens=5), ["prompt_tokens", "reply_tokens"]),
    (sm.tokens_per_hour, dict(batch=1, step_time=0.005), ["batch", "step_time"]),
    (sm.cost_per_million_tokens, dict(price_per_hour=3, tokens_an_hour=1e6), ["price_per_hour", "tokens_an_hour"]),
    (sm.batching, dict(model=M, gpu=G, batch=4, cached_tokens=0, price_per_hour=3),
     ["batch", "cached_tokens", "price_per_hour"]),
    (M.kv_bytes_per_token, dict(kv_bits=16), ["kv_bits"]),
    (units.ms, dict(value=0.1), ["value"]),
    (units.gb, dict(value=1e9), ["value"]),
    (units.dollars, dict(value=1.0), ["value"]),
    (units.round_to, dict(value=123.0, significant=2), ["value", "significant"]),
]

BAD_VALUES = [
    ("a string", "ten", TypeError),
    ("None", None, TypeError),
    ("a bool", True, TypeError),
    ("NaN", math.nan, ValueError),
    ("negative", -3, ValueError),
    ("an array holding NaN", np.array([1.0, np.nan]), ValueError),
]

# Values that are not bad for that argument: batching(price_per_hour=None) takes the GPU's
# own price, and round_to rounds negative numbers as well as positive ones.
ACCEPTED = {(sm.batching, "price_per_hour", "None"), (units.round_to, "value", "negative")}

CASES = [(function, good, argument, bad, error)
         for function, good, arguments in CALLS
         for argument in arguments
         for label, bad, error in BAD_VALUES
         if (function, argument, label) not in ACCEPTED]


def case_id(case):
    function, _, argument, bad, _ = case
    return f"{getattr(function, '__name__', function)}-{argument}-{bad!r}"


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_bad_value_is_refused_with_its_name(case):
    function, good, argument, bad, error = case
    with pytest.raises(error) as raised:
        function(**{**good, argument: bad})
    message = str(raised.value)
    assert argument in message
    assert (repr(bad) in message) or ("nan" in message.lower())


@pytest.mark.parametrize("function, good, argument", [
    (sm.forward_pass, dict(model=M, new_tokens=10), "new_tokens"),
    (sm.forward_pass, dict(model=M, new_tokens=10), "batch"),
    (sm.passes_for_request, dict(prompt_tokens=10, reply_tokens=5), "reply_tokens"),
    (sm.ridge_point, dict(peak_flops=1e15, bandwidth=3e12), "bandwidth"),
    (sm.tokens_per_hour, dict(batch=1, step_time=0.005), "step_time"),
])
def test_zero_where_it_cannot_be(function, good, argument):
    with pytest.raises(ValueError, match=f"{argument} must be .* got 0"):
        function(**{**good, argument: 0})


def test_fractional_tokens_are_refused():
    with pytest.raises(ValueError, match="new_tokens must be a whole number, got 2.5"):
        sm.forward_pass(M, 2.5)


@pytest.mark.parametrize("field, value, error", [
    ("compute_efficiency", 1.2, ValueError),
    ("compute_efficiency", 0, ValueError),
    ("bandwidth_efficiency", 1.5, ValueError),
    ("bandwidth_efficiency", "80%", TypeError),
    ("overhead", -1e-3, ValueError),
    ("overhead", math.inf, ValueError),
    ("attention", "sparse", ValueError),
    ("kv_cache", "yes", TypeError),
])
def test_assumptions_refuse_impossible_settings(field, value, error):
    with pytest.raises(error, match=field):
        sm.Assumptions(**{field: value})


def test_wrong_kinds_of_object():
    with pytest.raises(TypeError, match="model must be a Model"):
        sm.forward_pass("llama", 10)
    with pytest.raises(TypeError, match="gpu must be a GPU"):
        sm.step(M, "h100", 10)
    with pytest.raises(TypeError, match="assumptions must be a Assumptions"):
        sm.pass_time(1, 1, 1, 1, assumptions={"overhead": 0})
    with pytest.raises(ValueError, match="attention must be one of"):
        passes.positions_attended(3, attention="sliding")
    with pytest.raises(TypeError, match="kv_cache must be True or False"):
        sm.forward_pass(M, 3, kv_cache="no")


def test_impossible_shapes_and_gpus():
    with pytest.raises(ValueError, match="kv_heads must divide heads"):
        models.Model("x", layers=2, hidden=64, heads=8, kv_heads=3, head_dim=8, ffn=128, vocab=100)
    with pytest.raises(TypeError, match="layers must be a whole number, got 2.0"):
        models.Model("x", layers=2.0, hidden=64, heads=8, kv_heads=8, head_dim=8, ffn=128, vocab=100)
    with pytest.raises(ValueError, match="experts_per_token must be at most experts"):
        models.Model("x", 2, 64, 8, 8, 8, 128, 100, experts=2, experts_per_token=3)
    with pytest.raises(ValueError, match=r"dense_flops\['bf16'\] must be greater than 0, got -1"):
        hardware.GPU("x", {"bf16": -1}, 1e12, 1e9, None, "s", "2024-01")
    with pytest.raises(ValueError, match="dense_flops must name at least one format"):
        hardware.GPU("x", {}, 1e12, 1e9, None, "s", "2024-01")
    with pytest.raises(ValueError, match="price_per_hour must be greater than 0, got -2"):
        hardware.GPU("x", {"bf16": 1e12}, 1e12, 1e9, -2, "s", "2024-01")
    with pytest.raises(ValueError, match="overhead must be at least 0"):
        roofline.Assumptions(overhead=-1)
    with pytest.raises(ValueError, match="step_time must be greater than 0"):
        serving.tokens_per_hour(1, np.array([0.1, 0.0]))
