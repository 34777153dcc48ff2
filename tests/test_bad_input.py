"""Every public function refuses bad input with an error naming the argument and its value."""
import math
import re

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
    (hardware.metal_working_set, dict(unified_bytes=16 * 2**30), ["unified_bytes"]),
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


# -- every public function, every kind of bad value (hypothesis) ------------------------
import inspect  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from servingmath import cache, load, memory, workload  # noqa: E402

# What each argument must be, so that what is bad for it can be drawn.
WHOLE_FROM_1, WHOLE, POSITIVE, NOT_NEGATIVE, REAL, FRACTION, LOG = (
    "a whole number ≥ 1", "a whole number ≥ 0", "a number > 0", "a number ≥ 0", "a real number", "in (0, 1]",
    "the id of a published log")

NOT_A_FINITE_NUMBER = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, np.float32("nan"), np.inf]),
    st.text(max_size=4),
    st.none(),
    st.booleans(),
    st.complex_numbers(allow_nan=False, allow_infinity=False).filter(lambda z: z.imag != 0),
    st.lists(st.floats(1, 100), min_size=0, max_size=3).map(lambda xs: xs + [math.nan]),
    st.lists(st.floats(1, 100), min_size=0, max_size=3).map(lambda xs: np.array(xs + [math.inf])),
    st.builds(object),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    st.integers(min_value=10**309, max_value=10**400),  # beyond any float
)
OUT_OF_RANGE = {
    WHOLE_FROM_1: st.one_of(st.integers(max_value=0), st.floats(0.01, 1e6).filter(lambda x: x != round(x)),
                            st.integers(-10, 0).map(np.int64)),
    WHOLE: st.one_of(st.integers(max_value=-1), st.floats(0.01, 1e6).filter(lambda x: x != round(x))),
    POSITIVE: st.floats(max_value=0, allow_nan=False, allow_infinity=False),
    NOT_NEGATIVE: st.floats(max_value=-1e-6, allow_nan=False, allow_infinity=False),
    REAL: st.nothing(),
    FRACTION: st.one_of(st.floats(max_value=0, allow_nan=False, allow_infinity=False),
                        st.floats(min_value=1.001, max_value=1e9)),
    LOG: st.one_of(st.just(""), st.just("no-such-log"), st.just("VLLM-PR-10511")),
}

MIXTRAL = sm.MODELS["mixtral-8x7b"]
A = sm.PLATE

# function, good keyword arguments, {argument: what it must be}
EVERY_CALL = [
    (sm.weight_bytes, dict(parameters=8e9, weight_bits=16), dict(parameters=POSITIVE, weight_bits=POSITIVE)),
    (sm.kv_cache_bytes, dict(model=M, context_tokens=10, batch=2, kv_bits=16),
     dict(context_tokens=WHOLE, batch=WHOLE, kv_bits=POSITIVE)),
    (memory.usable_memory, dict(gpu=G, reserve=0.05), dict(reserve=NOT_NEGATIVE)),
    (sm.fit, dict(model=M, gpu=G, context_tokens=10, batch=2, weight_bits=16, kv_bits=16, reserve=0.05),
     dict(context_tokens=WHOLE, batch=WHOLE, weight_bits=POSITIVE, kv_bits=POSITIVE, reserve=NOT_NEGATIVE)),
    (sm.max_batch, dict(model=M, gpu=G, context_tokens=10, weight_bits=16, kv_bits=16, reserve=0.05),
     dict(context_tokens=WHOLE_FROM_1, weight_bits=POSITIVE, kv_bits=POSITIVE, reserve=NOT_NEGATIVE)),
    (sm.linear_flops, dict(parameters=8e9, tokens=10), dict(parameters=POSITIVE, tokens=WHOLE)),
    (passes.positions_attended, dict(new_tokens=10, cached_tokens=5, window=8),
     dict(new_tokens=WHOLE, cached_tokens=WHOLE, window=WHOLE_FROM_1)),
    (sm.attention_flops, dict(model=M, new_tokens=10, cached_tokens=5), dict(new_tokens=WHOLE, cached_tokens=WHOLE)),
    (sm.forward_pass, dict(model=MIXTRAL, new_tokens=10, cached_tokens=5, batch=2, weight_bits=16, kv_bits=16),
     dict(new_tokens=WHOLE_FROM_1, cached_tokens=WHOLE, batch=WHOLE_FROM_1, weight_bits=POSITIVE, kv_bits=POSITIVE)),
    (sm.arithmetic_intensity, dict(flops=1e12, bytes_moved=1e9), dict(flops=NOT_NEGATIVE, bytes_moved=POSITIVE)),
    (sm.ridge_point, dict(peak_flops=1e15, bandwidth=3e12), dict(peak_flops=POSITIVE, bandwidth=POSITIVE)),
    (hardware.metal_working_set, dict(unified_bytes=16 * 2**30), dict(unified_bytes=POSITIVE)),
    (sm.attainable_flops, dict(intensity=10, peak_flops=1e15, bandwidth=3e12),
     dict(intensity=NOT_NEGATIVE, peak_flops=POSITIVE, bandwidth=POSITIVE)),
    (sm.pass_time, dict(flops=1e12, bytes_moved=1e9, peak_flops=1e15, bandwidth=3e12),
     dict(flops=NOT_NEGATIVE, bytes_moved=NOT_NEGATIVE, peak_flops=POSITIVE, bandwidth=POSITIVE)),
    (sm.step, dict(model=M, gpu=G, new_tokens=10, cached_tokens=0, batch=1, weight_bits=16, kv_bits=16, assumptions=A),
     dict(new_tokens=WHOLE_FROM_1, cached_tokens=WHOLE, batch=WHOLE_FROM_1, weight_bits=POSITIVE, kv_bits=POSITIVE)),
    (sm.prefill, dict(model=M, gpu=G, prompt_tokens=10, batch=1, weight_bits=16, kv_bits=16),
     dict(prompt_tokens=WHOLE_FROM_1, batch=WHOLE_FROM_1, weight_bits=POSITIVE, kv_bits=POSITIVE)),
    (sm.decode_step, dict(model=M, gpu=G, cached_tokens=10, batch=1, weight_bits=16, kv_bits=16),
     dict(cached_tokens=WHOLE, batch=WHOLE_FROM_1, weight_bits=POSITIVE, kv_bits=POSITIVE)),
    (sm.passes_for_request, dict(prompt_tokens=10, reply_tokens=5),
     dict(prompt_tokens=WHOLE_FROM_1, reply_tokens=WHOLE_FROM_1)),
    (serving.request_passes, dict(prompt_tokens=10, reply_tokens=5),
     dict(prompt_tokens=WHOLE_FROM_1, reply_tokens=WHOLE_FROM_1)),
    (sm.request, dict(model=M, gpu=G, prompt_tokens=10, reply_tokens=5, weight_bits=16, kv_bits=16),
     dict(prompt_tokens=WHOLE_FROM_1, reply_tokens=WHOLE_FROM_1, weight_bits=POSITIVE, kv_bits=POSITIVE)),
    (serving.decode_ceiling, dict(memory_bandwidth=3e12, weight_bytes=16e9),
     dict(memory_bandwidth=POSITIVE, weight_bytes=POSITIVE)),
    (sm.tokens_per_hour, dict(batch=1, step_time=0.005), dict(batch=WHOLE_FROM_1, step_time=POSITIVE)),
    (sm.cost_per_million_tokens, dict(price_per_hour=3, tokens_an_hour=1e6),
     dict(price_per_hour=NOT_NEGATIVE, tokens_an_hour=POSITIVE)),
    (sm.batching, dict(model=M, gpu=G, batch=4, cached_tokens=0, price_per_hour=3, weight_bits=16, kv_bits=16),
     dict(batch=WHOLE_FROM_1, cached_tokens=WHOLE, price_per_hour=NOT_NEGATIVE, weight_bits=POSITIVE,
          kv_bits=POSITIVE)),
    (sm.time_per_token_curve, dict(model=M, gpu=G, tokens=[1, 10]), dict(tokens=WHOLE_FROM_1)),
    (serving.workshop_tokens, dict(model=M), dict()),
    (serving.compute_bound_batch, dict(model=M, gpu=G, cached_tokens=0, weight_bits=16, kv_bits=16),
     dict(cached_tokens=WHOLE, weight_bits=POSITIVE, kv_bits=POSITIVE)),
    (serving.shared_decode, dict(model=M, gpu=G, users=32, prompt_tokens=3000, reply_tokens=250, price_per_hour=3,
                                 weight_bits=16, kv_bits=16),
     dict(users=WHOLE_FROM_1, prompt_tokens=WHOLE_FROM_1, reply_tokens=WHOLE_FROM_1, price_per_hour=NOT_NEGATIVE,
          weight_bits=POSITIVE, kv_bits=POSITIVE)),
    (serving.weight_bytes_read_per_token, dict(model=M, weight_bits=16), dict(weight_bits=POSITIVE)),
    (serving.strict_decode_floor, dict(model=M, gpu=G, weight_bits=16), dict(weight_bits=POSITIVE)),
    (serving.strict_prefill_time, dict(model=M, gpu=G, prompt_tokens=10, weight_bits=16),
     dict(prompt_tokens=WHOLE_FROM_1, weight_bits=POSITIVE)),
    (serving.memory_bound_from_cache, dict(model=M, gpu=G, weight_bits=16, kv_bits=16, longest=4096),
     dict(weight_bits=POSITIVE, kv_bits=POSITIVE, longest=WHOLE_FROM_1)),
    (M.kv_bytes_per_token, dict(kv_bits=16), dict(kv_bits=POSITIVE)),
    (MIXTRAL.experts_touched, dict(tokens=3), dict(tokens=WHOLE)),
    (MIXTRAL.parameters_read, dict(tokens=3), dict(tokens=WHOLE)),
    (G.with_changes, dict(memory_bandwidth=4e12),
     dict(memory_bandwidth=POSITIVE, memory_bytes=POSITIVE, price_per_hour=POSITIVE)),
    (models.Model, dict(name="x", layers=2, hidden=64, heads=8, kv_heads=8, head_dim=8, ffn=128, vocab=100),
     dict(layers=WHOLE_FROM_1, hidden=WHOLE_FROM_1, heads=WHOLE_FROM_1, kv_heads=WHOLE_FROM_1,
          head_dim=WHOLE_FROM_1, ffn=WHOLE_FROM_1, vocab=WHOLE_FROM_1, experts=WHOLE_FROM_1,
          expert_ffn=WHOLE, sliding_window=WHOLE, kv_lora_rank=WHOLE, context_window=WHOLE_FROM_1)),
    (roofline.Assumptions, dict(), dict(compute_efficiency=FRACTION, bandwidth_efficiency=FRACTION,
                                        overhead=NOT_NEGATIVE)),
    (cache.decode_with_and_without_cache, dict(model=M, context_tokens=10), dict(context_tokens=WHOLE)),
    (cache.time_with_and_without_cache, dict(model=M, gpu=G, context_tokens=10), dict(context_tokens=WHOLE)),
    (cache.cached_decode, dict(model=M, gpu=G, users=4, context_tokens=100, price_per_hour=3, weight_bits=16,
                               kv_bits=16),
     dict(users=WHOLE_FROM_1, context_tokens=WHOLE, price_per_hour=NOT_NEGATIVE, weight_bits=POSITIVE,
          kv_bits=POSITIVE)),
    (cache.cache_matches_weights_batch, dict(model=M, context_tokens=100, weight_bits=16, kv_bits=16),
     dict(context_tokens=WHOLE_FROM_1, weight_bits=POSITIVE, kv_bits=POSITIVE)),
    (cache.cheapest_cost_per_million, dict(model=M, gpu=G, context_tokens=100, price_per_hour=3, weight_bits=16,
                                           kv_bits=16),
     dict(context_tokens=WHOLE, price_per_hour=NOT_NEGATIVE, weight_bits=POSITIVE, kv_bits=POSITIVE)),
    (cache.longest_compute_bound_context, dict(model=M, gpu=G, weight_bits=16, kv_bits=16),
     dict(weight_bits=POSITIVE, kv_bits=POSITIVE)),
    (cache.decode_attention_intensity, dict(model=M, kv_bits=16), dict(kv_bits=POSITIVE)),
    (memory.max_batch_sharing_prefix, dict(model=M, gpu=G, context_tokens=3000, prefix_tokens=1000, block_tokens=16,
                                           weight_bits=16, kv_bits=16, reserve=0.05),
     dict(context_tokens=WHOLE_FROM_1, prefix_tokens=WHOLE, block_tokens=WHOLE_FROM_1, weight_bits=POSITIVE,
          kv_bits=POSITIVE)),
    (memory.vllm_log, dict(log_id="vllm-pr-10511"), dict(log_id=LOG)),
    (memory.vllm_weight_bytes, dict(model=M, weight_bits=8), dict(weight_bits=POSITIVE)),
    (memory.vllm_activation_bytes, dict(model=M, max_num_batched_tokens=8192, max_num_seqs=256),
     dict(max_num_batched_tokens=WHOLE_FROM_1, max_num_seqs=WHOLE_FROM_1)),
    (memory.vllm_budget, dict(model=M, gpu=G, gpu_memory_utilization=0.9, max_num_batched_tokens=8192, weight_bits=16,
                              kv_bits=16, max_num_seqs=256, max_model_len=8192),
     dict(gpu_memory_utilization=FRACTION, max_num_batched_tokens=WHOLE_FROM_1, weight_bits=POSITIVE,
          kv_bits=POSITIVE, max_num_seqs=WHOLE_FROM_1, max_model_len=WHOLE_FROM_1)),
    (memory.vllm_profile_defaults, dict(model=M, gpu=G, engine="v1", max_model_len=8192),
     dict(max_model_len=WHOLE_FROM_1)),
    (memory.vllm_cache_tokens, dict(model=M, gpu=G, gpu_memory_utilization=0.9, max_num_batched_tokens=8192,
                                    weight_bits=16),
     dict(gpu_memory_utilization=FRACTION, max_num_batched_tokens=WHOLE_FROM_1, weight_bits=POSITIVE)),
] + [
    (function, dict(value=1.0, digits=2), dict(value=REAL if name in ("number", "percent") else NOT_NEGATIVE,
                                               digits=WHOLE))
    for name, function in [(n, getattr(units, n)) for n in ("number", "seconds", "ms", "gb", "tb_per_s", "mb",
                                                             "gb_per_s", "gbit_per_s", "gflops", "tflops", "trillions", "billions",
                                                             "millions", "dollars", "times", "kib")]
] + [
    (units.percent, dict(fraction=0.5, digits=0), dict(fraction=REAL, digits=WHOLE)),
    (units.round_to, dict(value=123.0, significant=2), dict(value=REAL, significant=WHOLE_FROM_1)),
    (units.ms_significant, dict(value=0.1, significant=3), dict(value=NOT_NEGATIVE, significant=WHOLE_FROM_1)),
    (units.us_significant, dict(value=0.1, significant=3), dict(value=NOT_NEGATIVE, significant=WHOLE_FROM_1)),
]
# Values not bad for that argument: batching(price_per_hour=None) takes the GPU's price;
# positions_attended(window=None) has no window; GPU.with_changes(price_per_hour=None) is a GPU nobody rents.
NONE_ACCEPTED = {(sm.batching, "price_per_hour"), (serving.shared_decode, "price_per_hour"),
                 (passes.positions_attended, "window"), (G.with_changes, "price_per_hour"),
                 (cache.cached_decode, "price_per_hour"), (cache.cheapest_cost_per_million, "price_per_hour"),
                 (serving.memory_bound_from_cache, "longest"), (models.Model, "context_window"),
                 (memory.vllm_budget, "max_model_len"), (memory.vllm_budget, "max_num_batched_tokens"),
                 (memory.vllm_budget, "max_num_seqs"), (memory.vllm_cache_tokens, "max_num_batched_tokens"),
                 (memory.vllm_profile_defaults, "max_model_len"), (memory.vllm_budget, "gpu_memory_utilization"),
                 (memory.vllm_cache_tokens, "gpu_memory_utilization")}
# memory_bound_from_cache(longest=None) searches up to the model's window; Model(context_window=None) is a
# shape built by hand that states no window; vllm_budget(max_model_len=None) takes the model's window, and
# its max_num_batched_tokens=None and max_num_seqs=None the profiling pass its engine runs on the card, and its
# gpu_memory_utilization=None the share of the engines table's row for its engine and version.

EVERY_ARGUMENT = [(function, good, argument, must_be)
                  for function, good, arguments in EVERY_CALL for argument, must_be in arguments.items()]


def _label(case):
    function, _, argument, _ = case
    return f"{getattr(function, '__qualname__', function)}-{argument}"


@pytest.mark.parametrize("case", EVERY_ARGUMENT, ids=[_label(c) for c in EVERY_ARGUMENT])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_public_function_refuses_every_kind_of_bad_value_by_name(case, data):
    function, good, argument, must_be = case
    bad = data.draw(st.one_of(NOT_A_FINITE_NUMBER, OUT_OF_RANGE[must_be]), label=argument)
    if bad is None and (function, argument) in NONE_ACCEPTED:
        return
    with pytest.raises((ValueError, TypeError)) as raised:
        function(**{**good, argument: bad})
    assert argument in str(raised.value), f"{argument} = {bad!r} gave {raised.value!r}"


def test_the_table_covers_every_public_function_of_the_calculation_modules():
    covered = {getattr(function, "__name__", None) for function, _, _ in EVERY_CALL}
    for module in (models, hardware, passes, serving, roofline, units, memory, cache):
        for name, value in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(value) or value.__module__ != module.__name__:
                continue
            takes_numbers = [p for p in inspect.signature(value).parameters
                             if p not in ("model", "gpu", "assumptions", "attention", "key_or_name", "ridge")]
            if takes_numbers:
                assert name in covered, f"{module.__name__}.{name} has no bad-input row"


@pytest.mark.parametrize("call", [
    lambda: sm.gpu(3), lambda: sm.gpu(np.array([1, 2])), lambda: sm.model(None), lambda: G.flops(16),
    lambda: G.with_changes(dense_flops=1e15), lambda: G.with_changes(fast=True),
    lambda: sm.fit("llama", G), lambda: sm.fit(M, "h100"), lambda: sm.kv_cache_bytes(None, 3),
    lambda: sm.Model.from_hf_config({"model_type": "llama", "hidden_size": None}),
    lambda: sm.Model.from_hf_config({"model_type": "llama", "num_attention_heads": 0}),
    lambda: sm.Model.from_hf_config({"model_type": "gemma3", "text_config": [1]}),
    lambda: sm.Model.from_hf_config({"model_type": "deepseek_v3", "n_routed_experts": "many"}),
    lambda: sm.Model.from_hf_config({"model_type": ["llama"]}),
    lambda: sm.Model.from_hf_config(models.CONFIGS["llama-3-8b"], name=5),
])
def test_wrong_objects_get_typed_errors_only(call):
    with pytest.raises((ValueError, TypeError)):
        call()


def test_infinity_is_refused_where_it_used_to_pass():
    with pytest.raises(ValueError, match="new_tokens must be finite, got inf"):
        sm.forward_pass(M, math.inf)
    with pytest.raises(ValueError, match="memory_bandwidth must be finite, got inf"):
        G.with_changes(memory_bandwidth=math.inf)
    with pytest.raises(ValueError, match="prompt_tokens must be finite, got inf"):
        sm.prefill(M, G, math.inf)


def test_with_changes_takes_a_new_table_of_flops_and_names_what_it_lacks():
    faster = G.with_changes(dense_flops={"bf16": 2e15})
    assert faster.peak_flops == 2e15
    with pytest.raises(TypeError, match=r"dense_flops must map number formats to FLOP/s.*got 1000000000000000.0"):
        G.with_changes(dense_flops=1e15)
    with pytest.raises(TypeError, match=r"with_changes got \['peak'\]"):
        G.with_changes(peak=1)


def test_numpy_integers_are_whole_numbers():
    assert sm.forward_pass(M, np.int64(10), np.int32(5), np.uint8(2)).tokens == 20
    shape = models.Model("x", np.int64(2), np.int32(64), 8, 8, 8, 128, 100)
    assert shape.layers == 2 and type(shape.layers) is int
    assert sm.max_batch(M, G, np.int64(1000)) == sm.max_batch(M, G, 1000)
    assert sm.kv_cache_bytes(M, np.int16(3)) == 3 * 131_072


@pytest.mark.parametrize("bad", ["no", None, 1, 0.0, np.array([True])])
def test_the_catalog_table_takes_only_true_or_false_for_its_ridge_column(bad):
    """``ridge`` is a switch, not a number: anything but True or False is refused by name."""
    with pytest.raises(TypeError, match="ridge must be True or False"):
        hardware.catalog_markdown(ridge=bad)


# -- settings that take one value, never a sweep ------------------------------------------------
def _server(**setting):
    from servingmath import simulator

    return simulator.Server(sm.LLAMA_3_8B, sm.H100_SXM, **setting)


SWEEP = np.array([1.0, 2.0])


@pytest.mark.parametrize("name, call", [
    ("weight_bits", lambda: memory.vllm_weight_bytes(sm.LLAMA_3_8B, weight_bits=np.array([8, 16]))),
    ("max_num_seqs", lambda: memory.vllm_activation_bytes(sm.LLAMA_3_8B, max_num_seqs=np.array([64, 256]))),
    ("gpu_memory_utilization", lambda: memory.vllm_budget(sm.LLAMA_3_8B, sm.H100_SXM,
                                                          gpu_memory_utilization=np.array([0.9, 0.95]))),
    ("kv_bits", lambda: memory.vllm_budget(sm.LLAMA_3_8B, sm.H100_SXM, kv_bits=np.array([8, 16]))),
    ("max_model_len", lambda: memory.vllm_budget(sm.LLAMA_3_8B, sm.H100_SXM, max_model_len=np.array([1024, 2048]))),
    ("cached_tokens", lambda: serving.compute_bound_batch(sm.LLAMA_3_8B, sm.H100_SXM, cached_tokens=np.array([1, 2]))),
    ("users", lambda: serving.shared_decode(sm.LLAMA_3_8B, sm.H100_SXM, np.array([1, 2]), 100, 100)),
    ("rate", lambda: workload.poisson_arrivals(SWEEP, 10)),
    ("rate", lambda: load.capacity(SWEEP)),
    ("reserve", lambda: _server(reserve=np.array([0.05, 0.1]))),
    ("kv_bits", lambda: _server(kv_bits=np.array([8, 16]))),
    ("block_tokens", lambda: _server(block_tokens=np.array([16, 32]))),
    ("dense_flops['bf16']", lambda: hardware.GPU(**{**vars(sm.H100_SXM), "dense_flops": {"bf16": SWEEP}})),
])
def test_a_setting_that_takes_one_value_refuses_a_sweep_by_name(name, call):
    with pytest.raises(TypeError, match=rf"^{re.escape(name)} must be a single (whole )?number, got "):
        call()
