"""The expected answer to each graded problem's variant, computed with the package: the grader's alone.

``expected(notebook, label, student_id)`` draws the student's numbers (``servingmath.variants``)
and computes the answer from them as the solution's check does from its fixed numbers. The
students' notebooks never import this file; the grader (scripts/grade.py) does.
"""
from __future__ import annotations

import math

import numpy as np

import servingmath as sm
from servingmath import cache, variants
from servingmath.memory import fit, kv_cache_bytes, max_batch

H100 = sm.H100_SXM
L3 = sm.LLAMA_3_8B


def _first(mask, values):
    hits = np.asarray(values)[np.asarray(mask)]
    if not len(hits):
        raise ValueError("no value in the range searched meets the condition")
    return int(hits[0])


def _prompts(model=L3):
    return np.arange(1, variants.window(model) + 1)


def _cheapest(n):
    rented = [gpu for gpu in sm.CATALOG.values() if gpu.price_per_hour is not None
              and sm.memory.fit(L3, gpu).fits]
    quick = [gpu for gpu in rented if 1 / sm.decode_step(L3, gpu).time >= n["speed"]]
    return min(quick, key=lambda gpu: gpu.price_per_hour).key


def _cache_share(n):
    step = sm.decode_step(L3, sm.CATALOG[n["gpu"]], cached_tokens=n["long_cache"], assumptions=sm.PLATE).cost
    return (step.kv_read_bytes + step.kv_write_bytes) / step.bytes


ANSWERS = {
    "lesson-1-part-1": {
        "1.1": lambda n: sm.passes_for_request(n["prompt"], n["reply"]),
        "1.2": lambda n: sm.request(L3, H100, n["prompt"], n["reply"]).decode_steps,
        "1.3": lambda n: sm.passes_for_request(n["report"], n["summary"]),
        "1.4": lambda n: sm.passes_for_request(n["short"], n["story"]) / sm.passes_for_request(n["report"],
                                                                                                n["summary"]),
        "1.5": lambda n: n["requests"] * sm.passes_for_request(n["day_prompt"], n["day_reply"]),
        "1.6": lambda n: n["requests"] * (lambda day: day.prefill.cost.tokens + day.decode_steps
                                          * day.decode.cost.tokens)(sm.request(L3, H100, n["day_prompt"],
                                                                               n["day_reply"])),
    },
    "lesson-1-part-2": {
        "2.1": lambda n: sm.prefill(L3, H100, n["prompt"]).cost.intensity,
        "2.2": lambda n: sm.prefill(L3, H100, n["prompt"]).bound,
        "2.3": lambda n: sm.weight_bytes(sm.MODELS[n["model"]].parameters, n["bits"]) / 1e9,
        "2.4": lambda n: sm.ridge_point(sm.CATALOG[n["ridge_gpu"]].peak_flops,
                                        sm.CATALOG[n["ridge_gpu"]].memory_bandwidth),
        "2.5": lambda n: sm.decode_step(L3, H100, weight_bits=n["decode_bits"]).cost.intensity,
        "2.6": lambda n: _first(sm.prefill(L3, sm.CATALOG[n["turn_gpu"]], _prompts()).timing.compute_bound,
                                _prompts()),
        "2.7": lambda n: sm.prefill(L3, sm.CATALOG[n["pace_gpu"]], n["pace_prompt"], weight_bits=n["pace_bits"]).bound,
    },
    "lesson-1-part-3": {
        "3.1": lambda n: 1 / sm.decode_step(L3, H100, weight_bits=n["bits"]).time,
        "3.2": lambda n: sm.prefill(L3, H100, n["prompt"]).time * 1e3,
        "3.3": lambda n: 1 / sm.decode_step(L3, sm.CATALOG[n["gpu"]]).time,
        "3.4": lambda n: sm.decode_step(sm.MODELS["llama-3-70b"], sm.CATALOG[n["big_gpu"]]).time * 1e3,
        "3.5": lambda n: sm.request(L3, H100, n["request_prompt"], n["request_reply"]).total_time,
        "3.6": _cheapest,
    },
    "lesson-1-part-4": {
        "4.1": lambda n: sm.batching(L3, H100, n["users"], price_per_hour=n["price"]).cost_per_million_tokens,
        "4.2": lambda n: sm.batching(L3, H100, n["users"], price_per_hour=n["price"]).tokens_per_hour,
        "4.3": lambda n: sm.batching(L3, sm.CATALOG[n["gpu"]], n["gpu_users"]).cost_per_million_tokens,
        "4.4": lambda n: sm.batching(L3, H100, n["bits_users"], price_per_hour=n["price"],
                                     weight_bits=n["bits"]).cost_per_million_tokens,
        "4.5": lambda n: _first(sm.batching(L3, H100, np.arange(1, 2001), price_per_hour=n["price"])
                                .cost_per_million_tokens <= n["target"], np.arange(1, 2001)),
        "4.6": lambda n: _first(sm.decode_step(L3, sm.CATALOG[n["gpu"]], batch=np.arange(1, 4001)).timing.compute_bound,
                                np.arange(1, 4001)),
        "4.7": lambda n: sm.batching(L3, H100, n["plate_users"], cached_tokens=n["plate_cache"], assumptions=sm.PLATE,
                                     price_per_hour=n["price"]).cost_per_million_tokens,
    },
    "plate-xxiii-1": {
        "1": lambda n: sm.decode_step(L3, sm.CATALOG[n["gpu"]], cached_tokens=n["cache"],
                                      assumptions=sm.PLATE).time * 1e3,
        "2": lambda n: 1 / sm.decode_step(L3, sm.CATALOG[n["gpu"]], cached_tokens=n["cache"],
                                          assumptions=sm.PLATE).time,
        "3": lambda n: sm.prefill(L3, sm.CATALOG[n["gpu"]], n["prompt"], assumptions=sm.PLATE).time_per_token * 1e3,
        "4": lambda n: sm.decode_step(L3, sm.CATALOG[n["gpu"]], cached_tokens=n["long_cache"],
                                      assumptions=sm.PLATE).time * 1e3,
        "5": _cache_share,
        "7": lambda n: _first(sm.prefill(L3, sm.CATALOG[n["gpu"]], _prompts(), assumptions=sm.PLATE)
                              .timing.compute_bound, _prompts()),
    },
}


def _without_against_with(n):
    steps = cache.decode_with_and_without_cache(L3, np.arange(n["prompt"], n["last"] + 1))
    return steps.without_cache.flops.sum() / steps.with_cache.flops.sum()


def _room(n):
    budget = fit(L3, sm.CATALOG[n["gpu"]])
    return (budget.usable_bytes - budget.weight_bytes) / 1e9


def _full(n):
    users = max_batch(L3, H100, n["full_context"])
    return cache.cached_decode(L3, H100, users, n["full_context"], price_per_hour=n["price"]).cost_per_million_tokens


ANSWERS.update({
    "lesson-2-part-1": {
        "1.1": lambda n: cache.decode_with_and_without_cache(L3, n["context"]).flops_saved,
        "1.2": lambda n: cache.decode_with_and_without_cache(L3, n["long"]).without_cache.flops,
        "1.3": lambda n: cache.decode_with_and_without_cache(L3, n["long"]).with_cache.flops,
        "1.4": lambda n: cache.time_with_and_without_cache(L3, sm.CATALOG[n["gpu"]], n["clock_context"])
        .without_cache.time * 1e3,
        "1.5": _without_against_with,
    },
    "lesson-2-part-2": {
        "2.1": lambda n: kv_cache_bytes(sm.MODELS[n["small"]], 1, kv_bits=n["small_bits"]),
        "2.2": lambda n: kv_cache_bytes(sm.MODELS[n["large"]], 1, kv_bits=n["large_bits"]),
        "2.3": lambda n: kv_cache_bytes(sm.MODELS["llama-2-7b"], n["mha_context"]) / 1e9,
        "2.5": lambda n: kv_cache_bytes(sm.MODELS[n["latent"]], 1, kv_bits=n["latent_bits"]),
        "2.6": lambda n: kv_cache_bytes(L3, n["context"], kv_bits=n["bits"]) / 1e9,
    },
    "lesson-2-part-3": {
        "3.1": lambda n: max_batch(L3, H100, n["bits_context"], kv_bits=n["bits"]),
        "3.2": _room,
        "3.3": lambda n: max_batch(L3, sm.CATALOG[n["gpu"]], n["context"]),
        "3.4": lambda n: max_batch(L3, sm.CATALOG[n["window_gpu"]], n["window"], kv_bits=n["window_bits"]),
        "3.5": lambda n: kv_cache_bytes(L3, n["users_context"], batch=n["users"]) / 1e9,
        "3.6": lambda n: max_batch(L3, sm.CATALOG[n["big_gpu"]], n["big_context"]),
    },
    "lesson-2-part-4": {
        "4.1": lambda n: cache.cached_decode(L3, H100, n["users"], n["context"],
                                             price_per_hour=n["price"]).cost_per_million_tokens,
        "4.2": lambda n: cache.cached_decode(L3, H100, n["step_users"], n["step_context"]).step_time * 1e3,
        "4.3": lambda n: cache.cached_decode(L3, H100, n["many"], n["many_context"]).tokens_per_second_per_user,
        "4.4": lambda n: cache.cache_matches_weights_batch(L3, n["match_context"]),
        "4.5": lambda n: cache.cheapest_cost_per_million(L3, H100, n["floor_context"], price_per_hour=n["price"]),
        "4.6": _full,
    },
    "plate-xxiii-2": {
        "1": lambda n: kv_cache_bytes(sm.MODELS[n["latent"]], 1, kv_bits=n["latent_bits"]),
        "2": lambda n: max_batch(sm.MODELS["llama-2-7b"], sm.CATALOG[n["gpu"]], n["mha_context"]),
        "3": lambda n: cache.cache_matches_weights_batch(sm.MODELS["deepseek-v2-lite"], n["lite_context"]),
        "4": lambda n: max_batch(L3, H100, n["reserve_context"], reserve=n["reserve"]),
        "5": lambda n: max_batch(L3, H100, n["bits_context"], kv_bits=n["bits"]),
    },
})


def has_variant(notebook: str, label: str) -> bool:
    return label in ANSWERS.get(notebook, {})


def expected(notebook: str, label: str, student_id):
    """The answer to ``student_id``'s variant of problem ``label``: a number, or a word."""
    value = ANSWERS[notebook][label](variants.numbers(notebook, student_id))
    if isinstance(value, str):
        return value
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{notebook} {label} for {student_id!r}: the answer is {value}")
    return value
