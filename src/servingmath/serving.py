"""A request end to end, and what batching does to throughput and cost.

A request is one prefill pass over the prompt, which also yields the first reply
token, then one decode pass for each later reply token.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import _check
from .hardware import GPU
from .models import Model
from .passes import PassCost, forward_pass
from .roofline import LESSON, Assumptions, PassTime, pass_time

SECONDS_PER_HOUR = 3600


def passes_for_request(prompt_tokens, reply_tokens):
    """Forward passes a request needs: 1 prefill + (reply tokens − 1) decode steps."""
    _check.count("prompt_tokens", prompt_tokens, minimum=1)
    reply_tokens = _check.count("reply_tokens", reply_tokens, minimum=1)
    return 1 + (reply_tokens - 1)


@dataclass(frozen=True)
class Step:
    """One pass on one GPU: its cost and its time."""

    cost: PassCost
    timing: PassTime

    @property
    def time(self):
        return self.timing.time

    @property
    def time_per_token(self):
        return self.time / self.cost.tokens

    @property
    def bound(self):
        return self.timing.bound


def step(model: Model, gpu: GPU, new_tokens, cached_tokens=0, batch=1, weight_bits=16, kv_bits=16,
         assumptions: Assumptions = LESSON) -> Step:
    """Cost and time of one forward pass of ``model`` on ``gpu``."""
    _check.instance("gpu", gpu, GPU)
    _check.instance("assumptions", assumptions, Assumptions)
    cost = forward_pass(model, new_tokens, cached_tokens, batch, weight_bits, kv_bits,
                        attention=assumptions.attention, kv_cache=assumptions.kv_cache)
    return Step(cost, pass_time(cost.flops, cost.bytes, gpu.peak_flops, gpu.memory_bandwidth, assumptions))


def prefill(model, gpu, prompt_tokens, batch=1, weight_bits=16, kv_bits=16, assumptions=LESSON) -> Step:
    """The first pass: the whole prompt at once, nothing cached yet."""
    return step(model, gpu, prompt_tokens, 0, batch, weight_bits, kv_bits, assumptions)


def decode_step(model, gpu, cached_tokens=0, batch=1, weight_bits=16, kv_bits=16, assumptions=LESSON) -> Step:
    """One later pass: one new token for each of ``batch`` users, each over its cache."""
    return step(model, gpu, 1, cached_tokens, batch, weight_bits, kv_bits, assumptions)


@dataclass(frozen=True)
class Request:
    """Timing of one request, best case, for one user."""

    passes: object
    prefill: Step
    decode: Step
    decode_steps: object

    @property
    def ttft(self):
        """Time to first token: the prefill pass (network and queueing left out)."""
        return self.prefill.time

    @property
    def tpot(self):
        """Time per output token after the first: one decode step."""
        return self.decode.time

    @property
    def tokens_per_second(self):
        return 1 / self.tpot

    @property
    def decode_time(self):
        return self.decode_steps * self.tpot

    @property
    def total_time(self):
        return self.ttft + self.decode_time

    @property
    def decode_share(self):
        return self.decode_time / self.total_time


def request(model: Model, gpu: GPU, prompt_tokens, reply_tokens, weight_bits=16, kv_bits=16,
            assumptions: Assumptions = LESSON) -> Request:
    """Time a request: prefill, then ``reply_tokens − 1`` decode steps.

    The decode step is timed at the mean cache length (prompt + half the reply).
    While every step is held by the same limit, as decode for one user always is,
    that equals the average of the steps' times exactly.
    """
    passes = passes_for_request(prompt_tokens, reply_tokens)
    reply_tokens = _check.count("reply_tokens", reply_tokens, minimum=1)
    prompt_tokens = _check.count("prompt_tokens", prompt_tokens, minimum=1)
    mean_cache = prompt_tokens + reply_tokens // 2
    return Request(
        passes=passes,
        prefill=prefill(model, gpu, prompt_tokens, 1, weight_bits, kv_bits, assumptions),
        decode=decode_step(model, gpu, mean_cache, 1, weight_bits, kv_bits, assumptions),
        decode_steps=reply_tokens - 1,
    )


def decode_ceiling(memory_bandwidth, weight_bytes):
    """The most tokens a second one user can get, in tokens/s: memory bandwidth ÷ weight bytes.

    Every decode step reads every weight byte once, so no step is shorter than
    weight bytes ÷ bandwidth. Takes raw figures (bytes/s, bytes), for machines and
    model files the catalog does not hold, such as a laptop running a quantized copy.
    """
    memory_bandwidth = _check.positive("memory_bandwidth", memory_bandwidth)
    weight_bytes = _check.positive("weight_bytes", weight_bytes)
    return memory_bandwidth / weight_bytes


def tokens_per_hour(batch, step_time):
    """Tokens made in an hour when every step makes ``batch`` tokens in ``step_time`` seconds."""
    batch = _check.count("batch", batch, minimum=1)
    step_time = _check.positive("step_time", step_time)
    return batch * SECONDS_PER_HOUR / step_time


def cost_per_million_tokens(price_per_hour, tokens_an_hour):
    """Dollars for a million tokens: the hourly price divided by the tokens made in an hour, in millions."""
    price_per_hour = _check.finite("price_per_hour", price_per_hour, minimum=0)
    tokens_an_hour = _check.positive("tokens_an_hour", tokens_an_hour)
    return price_per_hour / (tokens_an_hour / 1e6)


@dataclass(frozen=True)
class Batching:
    """Decode with ``batch`` users sharing every read of the weights."""

    batch: object
    decode: Step
    price_per_hour: float

    @property
    def step_time(self):
        return self.decode.time

    @property
    def tokens_per_second_per_user(self):
        return 1 / self.step_time

    @property
    def tokens_per_hour(self):
        return tokens_per_hour(self.batch, self.step_time)

    @property
    def cost_per_million_tokens(self):
        return cost_per_million_tokens(self.price_per_hour, self.tokens_per_hour)


def batching(model: Model, gpu: GPU, batch, cached_tokens=0, price_per_hour=None, weight_bits=16, kv_bits=16,
             assumptions: Assumptions = LESSON) -> Batching:
    """Throughput and cost of decode at a batch size; the price defaults to the GPU's."""
    _check.instance("gpu", gpu, GPU)
    price = gpu.price_per_hour if price_per_hour is None else price_per_hour
    if price is None:
        raise ValueError(f"price_per_hour is needed: {gpu.name} has no rental price, got {price_per_hour!r}")
    price = _check.finite("price_per_hour", price, minimum=0)
    return Batching(batch, decode_step(model, gpu, cached_tokens, batch, weight_bits, kv_bits, assumptions), price)
