"""Lesson 2: what each user's KV cache does to decode, to its speed and to its price.

The cache's size lives in ``memory`` (``kv_cache_bytes``, ``fit``, ``max_batch``); a
pass's FLOPs and bytes in ``passes``. This module asks the lesson's questions of them:

- how much arithmetic the cache saves a decode step (``decode_with_and_without_cache``);
- the time and price of decode when every step also reads every user's cache
  (``cached_decode``, under the ``CACHE_READ`` assumptions);
- the batch at which the cache a step reads weighs as much as the weights
  (``cache_matches_weights_batch``): past it, each extra user buys little;
- the longest context at which any batch still turns decode compute-bound
  (``longest_compute_bound_context``): beyond it, decode is memory-bound for good.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from . import _check
from .hardware import GPU
from .memory import RESERVE, VLLM_GPU_MEMORY_UTILIZATION, kv_cache_bytes, max_batch, vllm_budget, vllm_log, weight_bytes
from .models import Model
from .passes import PassCost, attention_flops_per_position, forward_pass
from .roofline import Assumptions, pass_time
from .serving import (LESSON_WITH_CACHE, Batching, _first_where, batching, compute_bound_batch,
                      memory_bound_from_cache)

# Lesson 2: lesson 1's ideal GPU (the spec sheet's peaks, no overhead), now with each
# user's cache read on every step and attention over it counted: lesson 1's caveat, named for lesson 2.
CACHE_READ = replace(LESSON_WITH_CACHE,
                     label="lesson 2: 100 % of peak, no overhead, every user's cache read each step")


@dataclass(frozen=True)
class CacheSaving:
    """One decode step after ``context_tokens`` tokens, with the cache and without it."""

    context_tokens: object
    with_cache: PassCost
    without_cache: PassCost

    @property
    def flops_saved(self):
        """How many times the arithmetic a step without the cache does, against one with it."""
        return self.without_cache.flops / self.with_cache.flops


def decode_with_and_without_cache(model: Model, context_tokens) -> CacheSaving:
    """The next token after ``context_tokens`` tokens, worked out two ways.

    With the cache the pass carries one new token and attends to the cached keys and
    values of the others. Without it the pass must carry the whole sequence again,
    ``context_tokens + 1`` tokens, recomputing every earlier token's keys and values.
    Attention is counted with the causal mask in both.
    """
    _check.instance("model", model, Model)
    context_tokens = _check.count("context_tokens", context_tokens)
    model.check_context(context_tokens + 1, "context_tokens + 1 (the context and the token the step makes)")
    return CacheSaving(
        context_tokens=context_tokens,
        with_cache=forward_pass(model, 1, context_tokens, attention="causal", kv_cache=True),
        without_cache=forward_pass(model, context_tokens + 1, 0, attention="causal", kv_cache=False),
    )


def cached_decode(model: Model, gpu: GPU, users, context_tokens, price_per_hour=None, weight_bits=16,
                  kv_bits=16, assumptions: Assumptions = CACHE_READ) -> Batching:
    """Decode for ``users`` sharing each step, each over a cache of ``context_tokens`` tokens.

    The step reads the weights once and every user's cache; its time, each user's
    tokens a second, the tokens an hour and the cost of a million follow as in
    lesson 1. ``users`` and ``context_tokens`` may be arrays (they broadcast).
    """
    _check.instance("assumptions", assumptions, Assumptions)
    if not assumptions.kv_cache:
        raise ValueError(f"assumptions must read the cache (kv_cache=True), got {assumptions!r}")
    users = _check.count("users", users, minimum=1)
    context_tokens = _check.count("context_tokens", context_tokens)
    _check.instance("model", model, Model)
    model.check_context(context_tokens + 1, "context_tokens + 1 (the cache and the token the step makes)")
    return batching(model, gpu, users, cached_tokens=context_tokens, price_per_hour=price_per_hour,
                    weight_bits=weight_bits, kv_bits=kv_bits, assumptions=assumptions)


def cache_matches_weights_batch(model: Model, context_tokens, weight_bits=16, kv_bits=16):
    """Users whose caches, of ``context_tokens`` tokens each, weigh as much as the weights.

    weight bytes ÷ one user's cache bytes. Each decode step reads both, so below this
    batch the weights are most of what a step reads and each added user nearly shares
    them for free; at it, a step takes about twice as long as for one user and a token
    costs about twice its floor; above it, the caches set the pace and the price. A
    fraction: the crossing falls between whole batches.
    """
    _check.instance("model", model, Model)
    context_tokens = _check.count("context_tokens", context_tokens, minimum=1)
    return weight_bytes(model.parameters, weight_bits) / kv_cache_bytes(model, context_tokens, 1, kv_bits)


def cheapest_cost_per_million(model: Model, gpu: GPU, context_tokens, price_per_hour=None, weight_bits=16,
                              kv_bits=16, assumptions: Assumptions = CACHE_READ):
    """The floor no batch goes below: the cost of a million tokens as users grow without end.

    Once the weights are shared by enough users, each token still costs its own
    user's cache read (or its own arithmetic, whichever is slower).
    """
    _check.instance("gpu", gpu, GPU)
    price = gpu.price_per_hour if price_per_hour is None else price_per_hour
    # The cost with B users is (weights + B × per user) time ÷ B tokens; its limit is the per-user share.
    one = cached_decode(model, gpu, 1, context_tokens, price, weight_bits, kv_bits, assumptions)
    two = cached_decode(model, gpu, 2, context_tokens, price, weight_bits, kv_bits, assumptions)
    flops_each = two.decode.cost.flops - one.decode.cost.flops
    bytes_each = two.decode.cost.bytes - one.decode.cost.bytes
    seconds_each = np.maximum(flops_each / (assumptions.compute_efficiency * gpu.peak_flops),
                              bytes_each / (assumptions.bandwidth_efficiency * gpu.memory_bandwidth))
    return one.price_per_hour / (3600 / seconds_each / 1e6)


def longest_compute_bound_context(model: Model, gpu: GPU, weight_bits=16, kv_bits=16,
                                  assumptions: Assumptions = CACHE_READ, reserve=RESERVE):
    """The longest cache, in tokens, at which a batch that fits the GPU still turns decode compute-bound.

    Each user brings arithmetic and its cache's bytes; the longer the cache, the more users a step
    needs before arithmetic sets its time, and the fewer fit beside the weights (``memory.max_batch``
    with ``reserve``, each cache one token longer after the step). Past this length no batch that
    fits is compute-bound. ``reserve=None`` leaves memory out: then it is one token short of
    ``serving.memory_bound_from_cache``. Returns None if even an empty cache never turns
    compute-bound (or, with memory counted, if no batch that does fits).
    """
    _check.instance("gpu", gpu, GPU)
    _check.instance("model", model, Model)
    if not assumptions.kv_cache:
        raise ValueError(f"assumptions must count the cache (kv_cache=True), got {assumptions!r}")
    if reserve is None:
        never_from = memory_bound_from_cache(model, gpu, weight_bits, kv_bits, assumptions)
        return never_from - 1 if never_from else None

    def holds(cached):
        needed = compute_bound_batch(model, gpu, cached, weight_bits, kv_bits, assumptions)
        return needed is not None and needed <= max_batch(model, gpu, cached + 1, weight_bits, kv_bits, reserve)

    longest = (model.context_window if model.context_window is not None else 2**20) - 1
    if not holds(0):
        return None
    if holds(longest):
        return longest
    return _first_where(lambda cached: not holds(cached), 0, longest) - 1  # the first that fails, less one


def decode_attention_intensity(model: Model, kv_bits=16):
    """FLOPs a decode step's attention does for each byte of cache it reads.

    Keys and values per KV head: each cached number is used by every query head sharing its
    KV head, so the ratio is heads ÷ KV heads in 16 bits (twice that in 8). Latent attention
    (MLA), counted as ``passes.attention_flops_per_position`` counts it, has every head score and
    sum over the one cached latent (and the shared rotary key): heads × (2 × (latent + rotary)
    + 2 × latent) FLOPs against (latent + rotary) × bytes, so the ratio grows with the heads.
    """
    _check.instance("model", model, Model)
    kv_bits = _check.finite("kv_bits", kv_bits, above=0)
    return attention_flops_per_position(model) / (model.cache_width * kv_bits / 8)


@dataclass(frozen=True)
class CacheSavingTimes:
    """The same step timed on one GPU, with the cache and without it."""

    with_cache: object
    without_cache: object

    @property
    def slower_without(self):
        return self.without_cache.time / self.with_cache.time


def time_with_and_without_cache(model: Model, gpu: GPU, context_tokens,
                                assumptions: Assumptions = CACHE_READ) -> CacheSavingTimes:
    """``decode_with_and_without_cache`` timed on ``gpu``: each pass as long as its slower limit."""
    _check.instance("gpu", gpu, GPU)
    saving = decode_with_and_without_cache(model, context_tokens)
    return CacheSavingTimes(*(pass_time(cost.flops, cost.bytes, gpu.peak_flops, gpu.memory_bandwidth, assumptions)
                              for cost in (saving.with_cache, saving.without_cache)))


# Plate XXIII.2's three models, one for each design of attention: grouped-query, full multi-head, latent.
WORKSHOP_MODELS = ("llama-3-8b", "llama-2-7b", "deepseek-v2-lite")


# Figures the lesson quotes from its sources, as they state them.
# Kwon et al. 2023 (PagedAttention), section 1 and figure 2: the share of the memory earlier serving
# systems set aside for the KV cache that held tokens' keys and values, at the lowest and the highest,
# as the vLLM authors measured them on their own re-implementation of Orca (FasterTransformer and
# Orca's code were not public for this).
MEASURED_SHARE_HOLDING_TOKENS = (0.204, 0.382)
# vLLM's documentation: the share of a GPU's memory its engine fills unless told otherwise
# (the default of ``memory.vllm_budget``).
VLLM_DEFAULT_GPU_MEMORY_UTILIZATION = VLLM_GPU_MEMORY_UTILIZATION
# DeepSeek-AI 2024 (DeepSeek-V2), abstract: how much smaller its KV cache is than DeepSeek 67B's.
DEEPSEEK_V2_CACHE_REDUCTION = 0.933


# Published vLLM start-up logs the lesson quotes, read from the package's dataset of them
# (data/vllm_startup_logs.yaml, where each row quotes its lines and names its source): Llama 2 7B on an
# H100 with LoRA adapters enabled and the model compiled (V0, gateway-api-inference-extension pull request
# 550), and the lesson's own model, Llama 3 8B, on an H100 at vLLM's defaults (V0, vllm-project/vllm pull request 10511). Each is a
# ``memory.VllmLog``: its ``tokens`` as logged, its ``budget()`` and ``error()`` beside the package's count.
VLLM_LOG_LLAMA_2_7B = vllm_log("gaie-pr-550")
VLLM_LOG_LLAMA_3_8B = vllm_log("vllm-pr-10511")
