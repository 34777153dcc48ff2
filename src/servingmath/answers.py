"""The answer to each templated problem, as a function of the numbers a student is asked with.

``ANSWERS[notebook][label](numbers)`` computes, with the package, the figure (or word) the solution's check
expects, from a student's numbers (``variants.numbers``) as the solution computes it from the practice's. The
grader marks answers with them (``scripts/variant_answers.py``), and ``variants`` draws no student a problem whose
answer is the practice's or one the pages print (``variants.given_away``). ``answer`` computes one, once for each
distinct set of the numbers it reads: a class shares a few simulations.
"""
from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache

import numpy as np

import servingmath as sm
from . import cache, disaggregation, hardware, load, parallel, replicas
from .memory import fit, kv_cache_bytes, max_batch
from .simulator import Server, simulate, users_that_fit
from .workload import workload

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


def _reached(compute, memory):
    """The lesson's count (weights alone, no overhead) at the shares of peak, in per cent, a GPU's kernels reach."""
    return sm.roofline.Assumptions(compute_efficiency=compute / 100, bandwidth_efficiency=memory / 100)


def _cheapest(n):
    rented = [gpu for gpu in sm.CATALOG.values() if gpu.price_per_hour is not None
              and sm.memory.fit(L3, gpu).fits]
    quick = [gpu for gpu in rented if 1 / sm.decode_step(L3, gpu).time >= n["speed"]]
    return min(quick, key=lambda gpu: gpu.price_per_hour).key


def _cache_share(n):
    step = sm.decode_step(L31, sm.CATALOG[n["plate_gpu"]], cached_tokens=n["long_cache"], assumptions=sm.PLATE).cost
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
        "2.4": lambda n: sm.ridge_point(sm.CATALOG[n["ridge_gpu"]].peak_flops * n["ridge_compute"] / 100,
                                        sm.CATALOG[n["ridge_gpu"]].memory_bandwidth * n["ridge_memory"] / 100)
        * sm.weight_bytes(L3.parameters, 16),
        "2.5": lambda n: sm.prefill(L3, H100, n["low_prompt"], weight_bits=n["low_bits"]).cost.intensity,
        "2.6": lambda n: _first(sm.prefill(L3, sm.CATALOG[n["turn_gpu"]], _prompts(), assumptions=_reached(
            n["turn_compute"], n["turn_memory"])).timing.compute_bound, _prompts()),
        "2.7": lambda n: sm.prefill(L3, sm.CATALOG["l40s"], n["pace_prompt"], weight_bits=8).bound,
    },
    "lesson-1-part-3": {
        "3.1": lambda n: 1 / sm.decode_step(L3, sm.CATALOG[n["bits_gpu"]], weight_bits=n["bits"]).time,
        "3.2": lambda n: sm.prefill(L3, H100, n["prompt"]).time * 1e3,
        "3.3": lambda n: 1 / sm.decode_step(sm.MODELS[n["speed_model"]], sm.CATALOG[n["gpu"]]).time,
        "3.4": lambda n: sm.decode_step(sm.MODELS[n["big_model"]], sm.CATALOG[n["big_gpu"]],
                                        weight_bits=n["big_bits"]).time * 1e3,
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
        "4.6": lambda n: _first(sm.decode_step(L3, sm.CATALOG[n["flip_gpu"]], batch=np.arange(1, 4001),
                                               weight_bits=n["flip_bits"], assumptions=_reached(
            n["flip_compute"], n["flip_memory"])).timing.compute_bound, np.arange(1, 4001)),
        "4.7": lambda n: sm.batching(L3, H100, n["plate_users"], cached_tokens=n["plate_cache"],
                                     assumptions=sm.PLATE).cost_per_million_tokens,
    },
    "plate-xxiii-1": {
        "1": lambda n: sm.decode_step(L3, sm.CATALOG[n["plate_gpu"]], cached_tokens=n["cache"], batch=n["users"],
                                      assumptions=sm.PLATE).time * 1e3,
        "2": lambda n: 1 / sm.decode_step(L3, sm.CATALOG[n["plate_gpu"]], cached_tokens=n["cache"], batch=n["users"],
                                          assumptions=sm.PLATE).time,
        "3": lambda n: sm.prefill(L3, sm.CATALOG[n["plate_gpu"]], n["prompt"], assumptions=sm.PLATE).time * 1e3,
        "4": lambda n: sm.decode_step(L31, sm.CATALOG[n["plate_gpu"]], cached_tokens=n["long_cache"],
                                      assumptions=sm.PLATE).time * 1e3,
        "5": _cache_share,
        "6": lambda n: math.ceil(sm.weight_bytes(L31.parameters, n["weight_bits"])
                                 / (n["share_users"] * L31.kv_bytes_per_token(n["kv_bits"]))),
        "7": lambda n: _first(sm.prefill(L3, sm.CATALOG[n["ridge_gpu"]], _prompts(), weight_bits=n["ridge_bits"],
                                         assumptions=replace(sm.PLATE, compute_efficiency=n["ridge_compute"] / 100,
                                                             bandwidth_efficiency=n["ridge_memory"] / 100)
                                         ).timing.compute_bound, _prompts()),
    },
}


def _latent_conversation(n):
    """Megabytes of one conversation's cache in a latent-attention model (Part 2's problem 2.5, the plate's 1)."""
    return kv_cache_bytes(sm.MODELS[n["latent"]], n["latent_context"], kv_bits=n["latent_bits"]) / 1e6


def _without_against_with(n):
    steps = cache.decode_with_and_without_cache(L3, np.arange(n["prompt"], n["last"] + 1))
    return steps.without_cache.flops.sum() / steps.with_cache.flops.sum()


def _room_gb(model, card, **options):
    """Decimal gigabytes left for caches beside ``model``'s weights on ``card`` (problem 3.2 and its slips)."""
    budget = fit(model, card, **options)
    return (budget.usable_bytes - budget.weight_bytes) / 1e9


def _room(n):
    return _room_gb(sm.MODELS[n["room_model"]], sm.CATALOG[n["room_gpu"]], weight_bits=n["room_bits"])


def _full(n):
    users = max_batch(L3, H100, n["full_context"])
    return cache.cached_decode(L3, H100, users, n["full_context"]).cost_per_million_tokens


ANSWERS.update({
    "lesson-2-part-1": {
        "1.1": lambda n: cache.decode_with_and_without_cache(L3, n["context"]).flops_saved,
        "1.2": lambda n: cache.decode_with_and_without_cache(sm.MODELS[n["long_model"]], n["long"]).without_cache.flops,
        "1.3": lambda n: cache.decode_with_and_without_cache(sm.MODELS[n["long_model"]], n["long"]).with_cache.flops,
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
        "2.5": _latent_conversation,
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
        "1": _latent_conversation,
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


def _held(n, **settings):
    """Lesson 3 Part 1's server: Llama 3 8B's weights in ``bits`` on ``gpu``, ``reserve`` of its memory held back."""
    return _server(n["gpu"], weight_bits=n["bits"], reserve=n["reserve"], **settings)


def _users(n, memory, prompt, reply):
    """How many users of these lengths fit at their longest: as many as the cache has blocks, at most."""
    many = _held(n).cache_blocks + 1
    return users_that_fit(_held(n, memory=memory), np.full(many, prompt), np.full(many, reply))


@lru_cache(maxsize=None)
def _stall(prompt, budget, gpu_key="h100-sxm"):
    return load.prefill_stall(prompt, budget, gpu=sm.CATALOG[gpu_key])


@lru_cache(maxsize=None)
def _alone(prompt, reply):
    return simulate(_server(policy="static"), workload([0.0], [prompt], [reply]))


@lru_cache(maxsize=None)
def _joined(a_prompt, a_reply, b_prompt):
    return simulate(_server(), workload([0.0, 0.001], [a_prompt, b_prompt], [a_reply, 5]))


@lru_cache(maxsize=None)
def _chunked_first_token(budget, prompt, gpu_key):
    """When a prompt read ``budget`` tokens a step, beside one user decoding, makes its first token (seconds)."""
    run = simulate(_server(gpu_key, policy="chunked", step_tokens=budget), workload([0.0, 0.0], [1, prompt], [2000, 1]))
    return float(run.first_token[1])


@lru_cache(maxsize=None)
def _figures(rate, policy, gpu_key="h100-sxm"):
    return load.figures(load.run(rate, policy=policy, gpu=sm.CATALOG[gpu_key]), rate)


def _capacity(n, rate, ttft="good_ttft", tpot="good_tpot"):
    return load.capacity(rate, ttft=n[ttft], tpot=n[tpot])


@lru_cache(maxsize=None)
def _curve(policy):
    return load.load_curve(policy)


def _line_reaches(rates, values, limit):
    """Where the line through (rate, value), straight between the plate's rates, first reaches ``limit``."""
    at = int(np.argmax(values >= limit))
    if at == 0 or values[at] < limit:
        raise ValueError(f"the line does not rise through {limit} between two of the plate's rates")
    return float(np.interp(limit, values[at - 1:at + 1], rates[at - 1:at + 1]))


ANSWERS.update({
    "lesson-3-part-1": {
        "1.1": lambda n: 100 * (n["prompt"] + n["reply"]) / int(
            _server(memory="reserved", max_reply_tokens=n["cap"]).reservation(n["prompt"])),
        "1.2": lambda n: int(_server().blocks(n["tokens"])),
        "1.3": lambda n: 100 * (1 - n["tokens"] / (int(_server().blocks(n["tokens"])) * _server().block_tokens)),
        "1.4": lambda n: _held(n).cache_blocks,
        "1.5": lambda n: _users(n, "reserved", 161, 338),
        "1.6": lambda n: _users(n, "paged", n["prompt"], n["reply"]),
    },
    "lesson-3-part-2": {
        "2.1": lambda n: _figures(n["rate"], "static", n["run_gpu"]).ttft_p99,
        "2.2": lambda n: _alone(n["a_prompt"], n["a_reply"]).finish[0] * 1e3,
        "2.3": lambda n: _joined(n["a_prompt"], n["a_reply"], n["b_prompt"]).first_token[1] * 1e3,
        "2.4": lambda n: _figures(n["median_rate"], "continuous", n["median_gpu"]).tbt_p99 * 1e3,
        "2.5": lambda n: _figures(n["static_rate"], "static").tokens_per_second,
    },
    "lesson-3-part-3": {
        "3.1": lambda n: _stall(n["prompt"], n["budget"], n["gpu"]).chunked_gap * 1e3,
        "3.2": lambda n: _chunked_first_token(n["steps_budget"], n["steps_prompt"], n["gpu"]) * 1e3,
        "3.3": lambda n: _stall(n["whole_prompt"], 512, n["gpu"]).whole_gap * 1e3,
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
        "1": lambda n: _line_reaches(_curve("continuous").rates, _curve("continuous").ttft_p99, n["ttft_limit"] / 1e3),
        "2": lambda n: _line_reaches(_curve("continuous").rates, _curve("continuous").tbt_p99, n["tbt_limit"] / 1e3),
        "3": lambda n: _figures(n["chunked_rate"], "chunked").tokens_per_second,
        "4": lambda n: _figures(n["static_rate"], "static", n["static_gpu"]).ttft_p99,
        "5": lambda n: (_figures(n["saving_rate"], "continuous", n["saving_gpu"]).tbt_p99
                        - _figures(n["saving_rate"], "chunked", n["saving_gpu"]).tbt_p99) * 1e3,
    },
})




# -- Lesson 4: a model split over a group of GPUs ---------------------------------------------------
def _split_step(model_key, gpu_key, count, link=None, **options):
    return parallel.tensor_parallel_step(sm.MODELS[model_key], parallel.group(gpu_key, count, link), **options)


def _step_4_1(n, **changes):
    options = {"cached_tokens": n["context"], "batch": n["users"], "weight_bits": n["bits"], **changes}
    return _split_step("llama-3-70b", "h100-sxm", n["gpus"], "nvlink4", **options)


def _small_steps(n):
    """Problem 1.5's decode step on one card, and on several joined by PCIe."""
    options = {"cached_tokens": n["small_context"], "batch": n["small_users"]}
    return (_split_step(n["small"], n["card"], 1, **options),
            _split_step(n["small"], n["card"], n["cards"], n["card_link"], **options))


def _allreduce_bytes(n):
    return parallel.activation_bytes(sm.MODELS["llama-3-70b"], n["ar_batch"])


ANSWERS.update({
    "lesson-4-part-1": {
        "1.1": lambda n: _step_4_1(n).time * 1e3,
        "1.2": lambda n: parallel.fit(sm.MODELS[n["split"]], parallel.group("h100-sxm", n["parts"]),
                                         weight_bits=n["split_bits"]).weight_bytes / 1e9,
        "1.3": lambda n: parallel.allreduce_time(_allreduce_bytes(n), n["ar_count"],
                                                    hardware.link(n["ar_gpu"], n["ar_link"])) * 1e6,
        "1.4": lambda n: sm.MODELS[n["kv_model"]].kv_bytes_per_token(n["kv_bits"]) * parallel.kv_share(sm.MODELS[n["kv_model"]],
                                                                                               n["kv_gpus"]),
        "1.5": lambda n: (lambda one, two: two.time / one.time)(*_small_steps(n)),
    },
})


def _stages_4_2(n, **changes):
    options = {"cached_tokens": n["context"], "batch": n["users"], "weight_bits": n["bits"], **changes}
    return parallel.pipeline_parallel_step(sm.MODELS["llama-3-70b"], parallel.group("h100-sxm", n["stages"], n["link"]),
                                           n["stages"], **options)


def _send_bytes(n):
    return parallel.SENT_PER_TOKEN * parallel.activation_bytes(sm.MODELS[n["send_model"]], n["send_users"])


def _in_flight(n):
    """Problem 2.4's pipeline: its micro-batches in flight on H100 SXM stages."""
    return parallel.pipeline_parallel_step(sm.MODELS["llama-3-70b"], parallel.group("h100-sxm", n["flight_stages"]),
                                           n["flight_stages"], cached_tokens=n["flight_context"],
                                           batch=n["flight_micro"] * n["flight_users"], micro_batches=n["flight_micro"])


def _compared(n):
    """Problem 2.5's servers: the users under a tensor split, and in stages with a micro-batch a stage."""
    grp, count = parallel.group(n["cmp_gpu"], n["cmp_gpus"], n["cmp_link"]), n["cmp_gpus"]
    users, options = count * n["cmp_per"], {"cached_tokens": n["cmp_context"]}
    model = sm.MODELS[n["cmp_model"]]
    return (parallel.tensor_parallel_step(model, grp, batch=users, **options),
            parallel.pipeline_parallel_step(model, grp, count, batch=users, micro_batches=count, **options))


ANSWERS.update({
    "lesson-4-part-2": {
        "2.1": lambda n: _stages_4_2(n).token_time * 1e3,
        "2.2": lambda n: parallel.fit(sm.MODELS[n["split"]], parallel.group("h100-sxm", n["parts"]),
                                      weight_bits=n["split_bits"], pipeline_parallel=n["parts"]).weight_bytes / 1e9,
        "2.3": lambda n: parallel.send_time(_send_bytes(n), hardware.link(n["send_gpu"], n["send_link"])) * 1e6,
        "2.4": lambda n: n["flight_micro"] * n["flight_users"] / _in_flight(n).interval,
        "2.5": lambda n: (lambda split, staged: staged.interval / split.time)(*_compared(n)),
    },
})


# -- Lesson 4 Part 3: copies behind a router (replicas, the simulator) ---------------------------------------------
def _tokens_held(model_key, gpu_key, degree, gpus=8):
    copy = replicas.server(model_key, gpu_key, degree)
    return gpus // degree * copy.cache_blocks * copy.block_tokens


ANSWERS.update({
    "lesson-4-part-3": {
        "3.1": lambda n: replicas.routed(round(n["copies"] * n["each"], 6), n["copies"], n["router"]).ttft_p99,
        "3.2": lambda n: _tokens_held(n["held_model"], n["held_gpu"], n["held_degree"]),
        "3.3": lambda n: replicas.layouts(n["cut_rate"])[n["cut_degree"]].run.ttft_p99 * 1e3,
        "3.4": lambda n: replicas.routed(n["tbt_rate"], 8 // n["tbt_degree"], "one-queue", n["tbt_model"], n["tbt_gpu"],
                                         n["tbt_degree"]).tbt_p50 * 1e3,
        "3.5": lambda n: replicas.routed(round(n["pre_copies"] * n["pre_each"], 6), n["pre_copies"],
                                         n["pre_router"]).preemptions,
    },
})


# -- Lesson 4, Part 4: prefill and decode apart -----------------------------------------------------
def _trip(model_key, tokens, link_key):
    """A cache's trip over an H100 SXM's link, seconds, and the link."""
    link = hardware.link("h100-sxm", link_key)
    return parallel.send_time(kv_cache_bytes(sm.MODELS[model_key], tokens), link), link


def _split_4_4(n):
    return disaggregation.best_split(n["p_rate"], n["d_rate"], n["pool"])


ANSWERS.update({
    "lesson-4-part-4": {
        "4.1": lambda n: _trip(n["t_model"], n["t_prompt"], n["t_link"])[0] * 1e3,
        "4.2": lambda n: 1 / parallel.tensor_parallel_step(sm.MODELS[n["pf_model"]], parallel.group(sm.CATALOG[n["pf_gpu"]]),
                                                       new_tokens=n["pf_prompt"]).time,
        "4.3": lambda n: _split_4_4(n)[1],
        "4.4": lambda n: _split_4_4(n)[1] / n["pool"] / n["colo_rate"],
        "4.5": lambda n: 100 * _trip(n["s_model"], n["s_prompt"], n["s_link"])[0] / (n["s_ttft"] / 1e3),
    },
})


_READS: dict = {}
_KEPT: dict = {}
_UNKNOWN = object()


class _Reading(dict):
    """A student's numbers that note which of them an answer reads."""

    def __init__(self, numbers, read):
        super().__init__(numbers)
        self.read = read

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)


def _key(notebook: str, label: str, numbers: dict) -> tuple:
    read = _READS.get((notebook, label), ())
    return notebook, label, tuple(sorted((name, repr(numbers[name])) for name in read))


def known(notebook: str, label: str, numbers: dict) -> bool:
    """Whether ``answer(notebook, label, numbers)`` has been computed already in this process."""
    return bool(_READS.get((notebook, label))) and _key(notebook, label, numbers) in _KEPT


def answer(notebook: str, label: str, numbers: dict):
    """``ANSWERS[notebook][label](numbers)`` as a float (or a word), computed once for each distinct set of the
    numbers it reads (an answer reads a few: a class shares its runs of the simulator)."""
    read = _READS.setdefault((notebook, label), set())
    if read:
        found = _KEPT.get(_key(notebook, label, numbers), _UNKNOWN)
        if found is not _UNKNOWN:
            return found
    value = ANSWERS[notebook][label](_Reading(numbers, read))
    value = value if isinstance(value, str) else float(value)
    _KEPT[_key(notebook, label, numbers)] = value
    return value
