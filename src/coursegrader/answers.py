"""The expected answer to each graded problem's variant, computed with the package: the grader's alone.

``expected(notebook, label, student_id)`` draws the student's numbers (``servingmath.variants``)
and computes the answer from them as the solution's check does from its fixed numbers. The
students' notebooks never import this module; the grader does.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

import servingmath as sm
from servingmath import cache, load, variants
from servingmath.memory import fit, kv_cache_bytes, max_batch
from servingmath.simulator import Server, simulate, users_that_fit
from servingmath.workload import workload

H100 = sm.H100_SXM
L3 = sm.LLAMA_3_8B
L31 = sm.MODELS["llama-3.1-8b"]


def _first(mask, values):
    hits = np.asarray(values)[np.asarray(mask)]
    if not len(hits):
        raise ValueError("no value in the range searched meets the condition")
    return int(hits[0])


def _prompts(model=L3):
    return np.arange(1, model.context_window + 1)


def _cheapest(n):
    rented = [gpu for gpu in sm.CATALOG.values() if gpu.price_per_hour is not None
              and sm.memory.fit(L3, gpu).fits]
    quick = [gpu for gpu in rented if 1 / sm.decode_step(L3, gpu).time >= n["speed"]]
    return min(quick, key=lambda gpu: gpu.price_per_hour).key


def _cache_share(n):
    step = sm.decode_step(L31, H100, cached_tokens=n["long_cache"], assumptions=sm.PLATE).cost
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
        "2.7": lambda n: sm.prefill(L3, sm.CATALOG["l40s"], n["pace_prompt"], weight_bits=8).bound,
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
        "4.1": lambda n: sm.batching(L3, H100, n["users"]).cost_per_million_tokens,
        "4.2": lambda n: sm.batching(L3, H100, n["users"]).tokens_per_hour,
        "4.3": lambda n: sm.batching(L3, sm.CATALOG[n["gpu"]], n["gpu_users"]).cost_per_million_tokens,
        "4.4": lambda n: sm.batching(L3, H100, n["bits_users"], weight_bits=n["bits"]).cost_per_million_tokens,
        "4.5": lambda n: _first(sm.batching(L3, H100, np.arange(1, 2001)).cost_per_million_tokens <= n["target"],
                                np.arange(1, 2001)),
        "4.6": lambda n: _first(sm.decode_step(L3, sm.CATALOG[n["flip_gpu"]], batch=np.arange(1, 4001))
                                .timing.compute_bound, np.arange(1, 4001)),
        "4.7": lambda n: sm.batching(L3, H100, n["plate_users"], cached_tokens=n["plate_cache"],
                                     assumptions=sm.PLATE).cost_per_million_tokens,
    },
    "plate-xxiii-1": {
        "1": lambda n: sm.decode_step(L3, H100, cached_tokens=n["cache"], assumptions=sm.PLATE).time * 1e3,
        "2": lambda n: 1 / sm.decode_step(L3, H100, cached_tokens=n["cache"], assumptions=sm.PLATE).time,
        "3": lambda n: sm.prefill(L3, H100, n["prompt"], assumptions=sm.PLATE).time_per_token * 1e3,
        "4": lambda n: sm.decode_step(L31, H100, cached_tokens=n["long_cache"], assumptions=sm.PLATE).time * 1e3,
        "5": _cache_share,
        "6": lambda n: math.ceil(sm.weight_bytes(L31.parameters, n["weight_bits"])
                                 / L31.kv_bytes_per_token(n["kv_bits"])),
        "7": lambda n: _first(sm.prefill(L3, sm.CATALOG[n["ridge_gpu"]], _prompts(), assumptions=sm.PLATE)
                              .timing.compute_bound, _prompts()),
    },
}


def _without_against_with(n):
    steps = cache.decode_with_and_without_cache(L3, np.arange(n["prompt"], n["last"] + 1))
    return steps.without_cache.flops.sum() / steps.with_cache.flops.sum()


def _room_gb(card, **options):
    """Decimal gigabytes left for caches beside Llama 3 8B's weights on ``card`` (problem 3.2 and its slips)."""
    budget = fit(L3, card, **options)
    return (budget.usable_bytes - budget.weight_bytes) / 1e9


def _room(n):
    return _room_gb(sm.CATALOG[n["room_gpu"]])


def _full(n):
    users = max_batch(L3, H100, n["full_context"])
    return cache.cached_decode(L3, H100, users, n["full_context"]).cost_per_million_tokens


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
        "2.4": lambda n: sm.weight_bytes(sm.MODELS[n["outweigh"]].parameters, n["outweigh_bits"])
        / kv_cache_bytes(sm.MODELS[n["outweigh"]], 1, kv_bits=n["outweigh_kv_bits"]),
        "2.5": lambda n: kv_cache_bytes(sm.MODELS[n["latent"]], 1, kv_bits=n["latent_bits"]),
        "2.6": lambda n: kv_cache_bytes(L31, n["long_context"], kv_bits=n["long_bits"]) / 1e9,
    },
    "lesson-2-part-3": {
        "3.1": lambda n: max_batch(L3, H100, n["bits_context"], kv_bits=n["bits"]),
        "3.2": _room,
        "3.3": lambda n: max_batch(L3, sm.CATALOG[n["fit_gpu"]], n["context"]),
        "3.4": lambda n: max_batch(sm.MODELS[n["window_model"]], sm.CATALOG[n["window_gpu"]],
                                   sm.MODELS[n["window_model"]].context_window),
        "3.5": lambda n: kv_cache_bytes(L3, n["users_context"], batch=n["users"]) / 1e9,
        "3.6": lambda n: max_batch(L3, sm.CATALOG[n["big_gpu"]], n["big_context"]),
    },
    "lesson-2-part-4": {
        "4.1": lambda n: cache.cached_decode(L3, H100, n["users"], n["context"]).cost_per_million_tokens,
        "4.2": lambda n: cache.cached_decode(L3, H100, n["step_users"], n["step_context"]).step_time * 1e3,
        "4.3": lambda n: cache.cached_decode(L3, H100, n["many"], n["many_context"]).tokens_per_second_per_user,
        "4.4": lambda n: cache.cache_matches_weights_batch(L3, n["match_context"]),
        "4.5": lambda n: cache.cheapest_cost_per_million(L3, H100, n["floor_context"]),
        "4.6": _full,
    },
    "plate-xxiii-2": {
        "1": lambda n: kv_cache_bytes(sm.MODELS[n["latent"]], 1, kv_bits=n["latent_bits"]),
        "2": lambda n: max_batch(sm.MODELS["llama-2-7b"], sm.CATALOG[n["gpu"]], n["mha_context"]),
        "3": lambda n: cache.cache_matches_weights_batch(sm.MODELS["deepseek-v2-lite"], n["lite_context"]),
        "4": lambda n: max_batch(L3, H100, n["reserve_context"], reserve=n["reserve"]),
        "5": lambda n: max_batch(L31, H100, n["bits_context"], kv_bits=n["bits"]),
    },
})


# -- Lesson 3: the simulator's answers, each run once for all the students who share its settings --------
@lru_cache(maxsize=None)
def _server(gpu_key="h100-sxm", **settings):
    return Server(L3, sm.CATALOG[gpu_key], **settings)


@lru_cache(maxsize=None)
def _users(gpu_key, memory, prompt, reply):
    """How many users of these lengths fit at their longest: as many as the cache has blocks, at most."""
    many = _server(gpu_key).cache_blocks + 1
    return users_that_fit(_server(gpu_key, memory=memory), np.full(many, prompt), np.full(many, reply))


@lru_cache(maxsize=None)
def _stall(prompt, budget):
    return load.prefill_stall(prompt, budget)


@lru_cache(maxsize=None)
def _alone(prompt, reply):
    return simulate(_server(policy="static"), workload([0.0], [prompt], [reply]))


@lru_cache(maxsize=None)
def _joined(a_prompt, a_reply, b_prompt):
    return simulate(_server(), workload([0.0, 0.001], [a_prompt, b_prompt], [a_reply, 5]))


@lru_cache(maxsize=None)
def _chunk_steps(budget, prompt):
    run = simulate(_server(policy="chunked", step_tokens=budget), workload([0.0, 0.0], [1, prompt], [2000, 1]))
    return int(np.searchsorted(run.step_end, run.first_token[1])) + 1


@lru_cache(maxsize=None)
def _figures(rate, policy):
    return load.figures(load.run(rate, policy=policy), rate)


def _capacity(n, rate, ttft="good_ttft", tpot="good_tpot"):
    return load.capacity(rate, ttft=n[ttft], tpot=n[tpot])


@lru_cache(maxsize=None)
def _curve(policy):
    return load.load_curve(policy)


def _first_past(n):
    curve = _curve("continuous")
    return float(curve.rates[int(np.argmax(curve.ttft_p99 > n["ttft_limit"]))])


ANSWERS.update({
    "lesson-3-part-1": {
        "1.1": lambda n: 100 * (n["prompt"] + n["reply"]) / int(
            _server(memory="reserved", max_reply_tokens=n["cap"]).reservation(n["prompt"])),
        "1.2": lambda n: int(_server().blocks(n["tokens"])),
        "1.3": lambda n: int(_server().blocks(n["tokens"])) * _server().block_tokens - n["tokens"],
        "1.4": lambda n: _server(n["gpu"]).cache_blocks,
        "1.5": lambda n: _users(n["gpu"], "reserved", 161, 338),
        "1.6": lambda n: _users(n["gpu"], "paged", n["prompt"], n["reply"]),
    },
    "lesson-3-part-2": {
        "2.1": lambda n: _figures(n["rate"], "static").ttft_p99,
        "2.2": lambda n: _alone(n["a_prompt"], n["a_reply"]).finish[0] * 1e3,
        "2.3": lambda n: _joined(n["a_prompt"], n["a_reply"], n["b_prompt"]).first_token[1] * 1e3,
        "2.4": lambda n: _figures(n["median_rate"], "continuous").ttft_p50 * 1e3,
        "2.5": lambda n: _figures(n["static_rate"], "static").tokens_per_second,
    },
    "lesson-3-part-3": {
        "3.1": lambda n: _stall(n["prompt"], n["budget"]).chunked_gap * 1e3,
        "3.2": lambda n: _chunk_steps(n["steps_budget"], n["steps_prompt"]),
        "3.3": lambda n: _stall(n["whole_prompt"], 512).whole_gap * 1e3,
        "3.4": lambda n: kv_cache_bytes(L3, n["swap_tokens"]) / 1e6,
        "3.5": lambda n: kv_cache_bytes(L3, n["swap_tokens"]) / load.SWAP_BANDWIDTH * 1e3,
    },
    "lesson-3-part-4": {
        "4.1": lambda n: _capacity(n, n["rate"], "ttft", "tpot").gpus,
        "4.2": lambda n: _capacity(n, 100).goodput.rate,
        "4.3": lambda n: _capacity(n, n["many"]).gpus,
        "4.4": lambda n: _capacity(n, 100).goodput.cost_per_million_tokens(n["price"]),
        "4.5": lambda n: _figures(n["knee_rate"], "continuous").ttft_p99,
    },
    "plate-xxiii-4": {
        "1": _first_past,
        "2": lambda n: float(_curve("continuous").rates[_curve("continuous").tbt_p99 <= n["tbt_limit"] / 1e3].max()),
        "3": lambda n: _figures(n["chunked_rate"], "chunked").tokens_per_second,
        "4": lambda n: _figures(n["static_rate"], "static").tbt_p99 * 1e3,
        "5": lambda n: _figures(n["ratio_rate"], "continuous").tbt_p99 / _figures(n["ratio_rate"], "chunked").tbt_p99,
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


# -- the problems' own slips, for each student's numbers -----------------------------------
def _binary(gpu, name=None) -> str:
    gb = f"{gpu.memory_bytes / 2**30:g}"
    return f"memory is counted in binary: the {name or gpu.name}'s {gb} GB are {gb} × 2³⁰ bytes, not {gb} × 10⁹."


RESERVE = "hold back 5 % of the memory for the engine first: usable = 0.95 × memory."


def _decimal_named(gpu) -> str:
    gb = f"{gpu.memory_bytes / 2**30:g}"
    return f"{gb} × 10⁹ bytes for the {variants.SHORT_NAMES.get(gpu.key, gpu.name)}'s {gb} GB"


def _batch_slips(model, gpu, context, kv_bits=16, decimal=True, decimal_name="decimal gigabytes for the memory"):
    slips = {}
    if kv_bits != 16:
        size = {8: "1 byte", 4: "half a byte"}.get(kv_bits, f"{kv_bits / 8:g} bytes")
        slips["a 16-bit cache"] = (max_batch(model, gpu, context),
                                   f"the question stores the cache in {kv_bits} bits: {size} a value, not 2.")
    if decimal:
        slips[decimal_name] = (
            max_batch(model, gpu.with_changes(memory_bytes=gpu.memory_bytes / 2**30 * 1e9), context, kv_bits=kv_bits),
            _binary(gpu))
    slips["the reserve forgotten"] = (max_batch(model, gpu, context, kv_bits=kv_bits, reserve=0), RESERVE)
    return slips


def _room_slips(gpu):
    """Problem 3.2's slips: the card's memory taken as decimal gigabytes, and the reserve forgotten."""
    decimal = gpu.with_changes(memory_bytes=gpu.memory_bytes / 2**30 * 1e9)
    binary = _binary(gpu, variants.SHORT_NAMES.get(gpu.key, gpu.name))
    return {"decimal gigabytes for the memory": (
                _room_gb(decimal), f"the card's {binary[:-1]}; only the answer is given in decimal gigabytes."),
            "the reserve forgotten": (_room_gb(gpu, reserve=0), RESERVE)}


# A problem whose solution names slips of its own: the same slips, for the student's numbers.
SLIPS = {
    ("lesson-2-part-3", "3.2"): lambda n: _room_slips(sm.CATALOG[n["room_gpu"]]),
    ("lesson-2-part-3", "3.1"): lambda n: _batch_slips(L3, H100, n["bits_context"], n["bits"]),
    ("lesson-2-part-3", "3.3"): lambda n: _batch_slips(L3, sm.CATALOG[n["fit_gpu"]], n["context"]),
    ("lesson-2-part-3", "3.6"): lambda n: _batch_slips(L3, sm.CATALOG[n["big_gpu"]], n["big_context"],
                                                       decimal_name=_decimal_named(sm.CATALOG[n["big_gpu"]])),
    ("plate-xxiii-2", "2"): lambda n: _batch_slips(sm.MODELS["llama-2-7b"], sm.CATALOG[n["gpu"]], n["mha_context"]),
    ("plate-xxiii-2", "5"): lambda n: _batch_slips(L31, H100, n["bits_context"], n["bits"], decimal=False),
}


def slips(notebook: str, label: str, student_id) -> dict | None:
    """The named slips of ``student_id``'s variant of problem ``label`` ({name: [value, hint]}), or None."""
    named = SLIPS.get((notebook, label))
    if named is None:
        return None
    right = expected(notebook, label, student_id)
    # A slip that lands on the right answer (a small count) names nothing: it is left out.
    return {name: [float(value), hint] for name, (value, hint) in named(variants.numbers(notebook, student_id)).items()
            if value != right} or None
