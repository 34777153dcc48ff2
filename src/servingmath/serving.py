"""A request end to end, and what batching does to throughput and cost.

A request is one prefill pass over the prompt, which also yields the first reply
token, then one decode pass for each later reply token.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _check, memory
from .hardware import GPU
from .memory import Fit
from .models import Model
from .passes import PassCost, forward_pass
from .roofline import LESSON, PLATE, Assumptions, PassTime, pass_time, ridge_point

SECONDS_PER_HOUR = 3600


def passes_for_request(prompt_tokens, reply_tokens):
    """Forward passes a request needs: 1 prefill + (reply tokens − 1) decode steps."""
    _check.count("prompt_tokens", prompt_tokens, minimum=1)
    reply_tokens = _check.count("reply_tokens", reply_tokens, minimum=1)
    return 1 + (reply_tokens - 1)


# A decode pass's only new input is the token the pass before it chose.
TOKENS_PER_DECODE_PASS = 1


@dataclass(frozen=True)
class RequestPasses:
    """How one request's forward passes divide between prefill and decode."""

    prompt_tokens: object
    reply_tokens: object

    @property
    def passes(self):
        return passes_for_request(self.prompt_tokens, self.reply_tokens)

    @property
    def prefill_tokens(self):
        """Tokens the prefill pass carries: the whole prompt, side by side."""
        return self.prompt_tokens

    @property
    def decode_passes(self):
        """Every pass after the first."""
        return self.passes - 1

    @property
    def decode_share_of_passes(self):
        return self.decode_passes / self.passes

    @property
    def prefill_share_of_tokens(self):
        """Of all the tokens the passes carry, the share that goes through in the prefill pass."""
        decode_tokens = self.decode_passes * TOKENS_PER_DECODE_PASS
        return self.prefill_tokens / (self.prefill_tokens + decode_tokens)


def request_passes(prompt_tokens, reply_tokens) -> RequestPasses:
    """A request counted in passes: one prefill pass carrying the prompt, then one decode pass per later reply token."""
    prompt_tokens = _check.count("prompt_tokens", prompt_tokens, minimum=1)
    reply_tokens = _check.count("reply_tokens", reply_tokens, minimum=1)
    return RequestPasses(prompt_tokens, reply_tokens)


@dataclass(frozen=True)
class Step:
    """One pass on one GPU: its cost, its time, and whether its weights and cache fit the GPU."""

    cost: PassCost
    timing: PassTime
    fit: Fit | None = None

    @property
    def fits(self):
        """True where the weights and the cache after this pass fit the GPU's memory (``fit.message`` says why not)."""
        return self.fit.fits

    @property
    def time(self):
        return self.timing.time

    @property
    def time_per_token(self):
        return self.time / self.cost.tokens

    @property
    def bound(self):
        return self.timing.bound


def _must_fit(must_fit):
    if not isinstance(must_fit, (bool, np.bool_)):
        raise TypeError(f"must_fit must be True or False, got {must_fit!r}")
    return bool(must_fit)


def step(model: Model, gpu: GPU, new_tokens, cached_tokens=0, batch=1, weight_bits=16, kv_bits=16,
         assumptions: Assumptions = LESSON, must_fit=False) -> Step:
    """Cost and time of one forward pass of ``model`` on ``gpu``.

    The step's ``fit`` says whether the weights and the batch's cache after the pass
    (``cached_tokens + new_tokens`` each) fit the GPU's memory (``memory.fit``); with
    ``must_fit=True`` a step that does not fit is refused with that message.
    """
    _check.instance("gpu", gpu, GPU)
    _check.instance("assumptions", assumptions, Assumptions)
    must_fit = _must_fit(must_fit)
    _check.instance("model", model, Model)
    model.check_context(_check.count("cached_tokens", cached_tokens) + _check.count("new_tokens", new_tokens),
                        "cached_tokens + new_tokens (the context after the pass)")
    cost = forward_pass(model, new_tokens, cached_tokens, batch, weight_bits, kv_bits,
                        attention=assumptions.attention, kv_cache=assumptions.kv_cache)
    context = _check.count("cached_tokens", cached_tokens) + _check.count("new_tokens", new_tokens)
    fit = memory.fit(model, gpu, context, batch, weight_bits, kv_bits)
    if must_fit:
        fit.require()
    return Step(cost, pass_time(cost.flops, cost.bytes, gpu.peak_flops, gpu.memory_bandwidth, assumptions), fit)


def prefill(model, gpu, prompt_tokens, batch=1, weight_bits=16, kv_bits=16, assumptions=LESSON,
            must_fit=False) -> Step:
    """The first pass: the whole prompt at once, nothing cached yet."""
    _check.instance("model", model, Model)
    model.check_context(_check.count("prompt_tokens", prompt_tokens, minimum=1), "prompt_tokens")
    return step(model, gpu, prompt_tokens, 0, batch, weight_bits, kv_bits, assumptions, must_fit)


def decode_step(model, gpu, cached_tokens=0, batch=1, weight_bits=16, kv_bits=16, assumptions=LESSON,
                must_fit=False) -> Step:
    """One later pass: one new token for each of ``batch`` users, each over its cache."""
    _check.instance("model", model, Model)
    model.check_context(_check.count("cached_tokens", cached_tokens) + 1,
                        "cached_tokens + 1 (the cache and the token the step adds)")
    return step(model, gpu, 1, cached_tokens, batch, weight_bits, kv_bits, assumptions, must_fit)


@dataclass(frozen=True)
class Request:
    """Timing of one request, best case, for one user."""

    passes: object
    prefill: Step
    decode: Step
    decode_steps: object
    fit: Fit | None = None

    @property
    def fits(self):
        """True when the weights and the cache of the whole exchange (prompt and reply) fit the GPU."""
        return self.fit.fits

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
            assumptions: Assumptions = LESSON, must_fit=False) -> Request:
    """Time a request: prefill, then ``reply_tokens − 1`` decode steps.

    The decode step is timed at the mean cache length (prompt + half the reply).
    While every step is held by the same limit, as decode for one user always is,
    that equals the average of the steps' times exactly.

    ``fit`` says whether the weights and the cache at the end of the reply fit the GPU;
    with ``must_fit=True`` a request that does not fit is refused with that message.
    """
    passes = passes_for_request(prompt_tokens, reply_tokens)
    reply_tokens = _check.count("reply_tokens", reply_tokens, minimum=1)
    prompt_tokens = _check.count("prompt_tokens", prompt_tokens, minimum=1)
    _check.instance("model", model, Model)
    model.check_context(prompt_tokens + reply_tokens, "prompt_tokens + reply_tokens")
    _check.instance("gpu", gpu, GPU)
    must_fit = _must_fit(must_fit)
    fit = memory.fit(model, gpu, prompt_tokens + reply_tokens, 1, weight_bits, kv_bits)
    if must_fit:
        fit.require()
    mean_cache = prompt_tokens + reply_tokens // 2
    return Request(
        passes=passes,
        prefill=prefill(model, gpu, prompt_tokens, 1, weight_bits, kv_bits, assumptions),
        decode=decode_step(model, gpu, mean_cache, 1, weight_bits, kv_bits, assumptions),
        decode_steps=reply_tokens - 1,
        fit=fit,
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

    @property
    def fit(self) -> Fit:
        """Whether the weights and every user's cache fit the GPU (the decode step's ``fit``)."""
        return self.decode.fit

    @property
    def fits(self):
        return self.decode.fits


def batching(model: Model, gpu: GPU, batch, cached_tokens=0, price_per_hour=None, weight_bits=16, kv_bits=16,
             assumptions: Assumptions = LESSON, must_fit=False) -> Batching:
    """Throughput and cost of decode at a batch size; the price defaults to the GPU's.

    ``fit`` says whether the weights and the batch's caches fit the GPU; with
    ``must_fit=True`` a batch that does not fit is refused with that message.
    """
    _check.instance("gpu", gpu, GPU)
    price = gpu.price_per_hour if price_per_hour is None else price_per_hour
    if price is None:
        raise ValueError(f"price_per_hour is needed: {gpu.name} has no rental price, got {price_per_hour!r}")
    price = _check.finite("price_per_hour", price, minimum=0)
    return Batching(batch, decode_step(model, gpu, cached_tokens, batch, weight_bits, kv_bits, assumptions, must_fit),
                    price)


# Plate XXIII.1's range: one token (a decode step's worth) up to a 16,384-token prompt, or the
# model's context window where that is shorter (``workshop_tokens``).
WORKSHOP_TOKENS = range(1, 16_385)


def workshop_tokens(model: Model):
    """Plate XXIII.1's prompt lengths for ``model``: 1 to 16,384 tokens, stopping at its context window."""
    _check.instance("model", model, Model)
    window = model.context_window
    return WORKSHOP_TOKENS if window is None or window >= WORKSHOP_TOKENS[-1] else range(1, window + 1)


@dataclass(frozen=True)
class TimePerTokenCurve:
    """Prefill passes of every size in ``tokens`` on one GPU: the data behind the plate's chart.

    ``passes`` is one ``Step`` swept over the token counts, so each property below is an
    array with one entry per count.
    """

    model: Model
    gpu: GPU
    assumptions: Assumptions
    passes: Step

    @property
    def tokens(self):
        return self.passes.cost.tokens

    @property
    def time(self):
        return self.passes.time

    @property
    def time_per_token(self):
        return self.passes.time_per_token

    @property
    def intensity(self):
        return self.passes.cost.intensity

    @property
    def bound(self):
        """``"compute"`` or ``"memory"`` for each token count."""
        return self.passes.bound

    @property
    def ridge(self):
        """The GPU's ridge point, FLOP per byte (about the tokens a pass needs, as intensity ≈ tokens)."""
        return ridge_point(self.gpu.peak_flops, self.gpu.memory_bandwidth)

    @property
    def arithmetic_from(self):
        """The fewest tokens on the curve at which arithmetic, not memory, sets the time (None if never)."""
        compute = np.asarray(self.passes.timing.compute_bound)
        return int(self.tokens[compute].min()) if compute.any() else None

    @property
    def fastest(self):
        """The tokens on the curve where the time per token is lowest: past it, prefill stops gaining."""
        return int(self.tokens[np.argmin(self.time_per_token)])

    def prefill_at(self, tokens) -> Step:
        """The prefill pass of ``tokens`` prompt tokens under the curve's model, GPU and assumptions."""
        return prefill(self.model, self.gpu, tokens, assumptions=self.assumptions)

    def decode_at(self, cached_tokens) -> Step:
        """One user's decode step over ``cached_tokens`` under the curve's model, GPU and assumptions."""
        return decode_step(self.model, self.gpu, cached_tokens, assumptions=self.assumptions)


def time_per_token_curve(model: Model, gpu: GPU, tokens=WORKSHOP_TOKENS,
                         assumptions: Assumptions = PLATE) -> TimePerTokenCurve:
    """Time per token of one prefill pass as the tokens it carries grow (plate XXIII.1).

    By default the prompts run from 1 to 16,384 tokens, or to the model's window where that is
    shorter (``workshop_tokens``); prompts given past the window raise ``ContextTooLong``.
    """
    if tokens is WORKSHOP_TOKENS:
        tokens = workshop_tokens(model)
    tokens = np.atleast_1d(_check.count("tokens", tokens, minimum=1))
    if tokens.size == 0:
        raise ValueError(f"tokens must hold at least one token count, got {tokens!r}")
    return TimePerTokenCurve(model, gpu, assumptions, prefill(model, gpu, tokens, assumptions=assumptions))


# Far more users than any GPU's memory could hold; a step that is still memory-bound here never turns.
_MOST_USERS_SEARCHED = 2**40


def compute_bound_batch(model: Model, gpu: GPU, cached_tokens=0, weight_bits=16, kv_bits=16,
                        assumptions: Assumptions = LESSON):
    """The fewest users per decode step at which arithmetic, not memory, sets the step's time.

    Found by searching the package's own timing of a decode step: double the batch
    until the step is compute-bound, then halve the gap. Adding users never makes a
    step less compute-bound (each brings the same arithmetic and the same bytes of its
    own, while the weights are read once for all), so the search is exact. Returns
    None when no batch turns the step compute-bound, as when each user's cache reads
    take longer than its arithmetic. Takes single numbers, not arrays.
    """
    for name, value in (("cached_tokens", cached_tokens), ("weight_bits", weight_bits), ("kv_bits", kv_bits)):
        _check.single(name, value)

    def compute_bound(batch):
        return bool(decode_step(model, gpu, cached_tokens, batch, weight_bits, kv_bits, assumptions)
                    .timing.compute_bound)

    if not compute_bound(_MOST_USERS_SEARCHED):
        return None
    memory_bound_at, compute_bound_at = 0, 1
    while not compute_bound(compute_bound_at):
        memory_bound_at, compute_bound_at = compute_bound_at, compute_bound_at * 2
    return _first_where(compute_bound, memory_bound_at, compute_bound_at)


def _first_where(holds, below, at):
    """The least whole number in (below, at] where ``holds`` is true, given it is false at
    ``below``, true at ``at``, and stays true once it is (halving the gap each time)."""
    while at - below > 1:
        middle = (below + at) // 2
        if holds(middle):
            at = middle
        else:
            below = middle
    return at


# -- Lesson 1's fine print: what a prompt costs a server, and what the decode floor assumes --------


@dataclass(frozen=True)
class SharedDecode:
    """``users`` requests served together: each prompt prefilled in a pass of its own, then
    every later reply token made in decode steps that all the users share.

    Times and the price are best cases under the assumptions the steps were timed with.
    """

    users: int
    reply_tokens: object
    prefill: Step
    decode: Step
    price_per_hour: float

    @property
    def prefill_time(self):
        """GPU time the users' prefills take, one after another."""
        return self.users * self.prefill.time

    @property
    def decode_time(self):
        """GPU time of the shared decode steps: one for each reply token after the first."""
        return (self.reply_tokens - 1) * self.decode.time

    @property
    def gpu_time(self):
        return self.prefill_time + self.decode_time

    @property
    def reply_tokens_made(self):
        return self.users * self.reply_tokens

    @property
    def cost_per_million_reply_tokens(self):
        """Dollars a million reply tokens cost once the GPU time spent on the prompts is paid for too."""
        return cost_per_million_tokens(self.price_per_hour,
                                       self.reply_tokens_made * SECONDS_PER_HOUR / self.gpu_time)

    @property
    def decode_only_cost_per_million(self):
        """The same, counting the decode steps alone (lesson 1, part 4's figure)."""
        return cost_per_million_tokens(self.price_per_hour, tokens_per_hour(self.users, self.decode.time))


def shared_decode(model: Model, gpu: GPU, users, prompt_tokens, reply_tokens, price_per_hour=None,
                  weight_bits=16, kv_bits=16, assumptions: Assumptions = LESSON) -> SharedDecode:
    """Serve ``users`` requests of the same lengths together: their prefills, then shared decode steps.

    The decode step is timed at the mean cache length, as ``request`` does.
    """
    users = _check.count("users", users, minimum=1)
    prompt_tokens = _check.count("prompt_tokens", prompt_tokens, minimum=1)
    reply_tokens = _check.count("reply_tokens", reply_tokens, minimum=1)
    for name, value in (("users", users), ("prompt_tokens", prompt_tokens), ("reply_tokens", reply_tokens)):
        _check.single(name, value)
    users, prompt_tokens, reply_tokens = int(users), int(prompt_tokens), int(reply_tokens)
    _check.instance("model", model, Model)
    model.check_context(prompt_tokens + reply_tokens, "prompt_tokens + reply_tokens")
    timed = batching(model, gpu, users, prompt_tokens + reply_tokens // 2, price_per_hour, weight_bits, kv_bits,
                     assumptions)
    return SharedDecode(users, reply_tokens, prefill(model, gpu, prompt_tokens, 1, weight_bits, kv_bits, assumptions),
                        timed.decode, timed.price_per_hour)


def weight_bytes_read_per_token(model: Model, weight_bits=16):
    """Bytes of weights one user's decode step must read, strictly.

    Every weight is read, except the input embedding table: a token looks up only its own
    row of it. Where the table is tied to the output layer it is read whole there anyway.
    """
    _check.instance("model", model, Model)
    weight_bits = _check.positive("weight_bits", weight_bits)
    looked_up = 0 if model.tied_embeddings else model.vocab * model.hidden - model.hidden
    return (model.parameters - looked_up) * weight_bits / 8


def _multiplied_parameters(model: Model):
    """Parameters that do a multiply and an add for every token in a pass, strictly.

    Every weight but the input embedding table's: a token looks up its own row there and
    multiplies by none of it. Where the table is tied to the output layer, the output
    layer multiplies by all of it, so nothing is left out. (``linear_flops`` counts 2 FLOPs
    for every parameter, the lesson's simpler convention.)
    """
    _check.instance("model", model, Model)
    return model.parameters - (0 if model.tied_embeddings else model.vocab * model.hidden)


def strict_prefill_time(model: Model, gpu: GPU, prompt_tokens, weight_bits=16):
    """The least time a prefill of ``prompt_tokens`` can take with the weights alone counted,
    strictly: 2 FLOPs a token for each multiplied parameter (``_multiplied_parameters``) at
    peak, or the weights a pass must read (``weight_bytes_read_per_token``) at full
    bandwidth, whichever is longer."""
    _check.instance("gpu", gpu, GPU)
    prompt_tokens = _check.count("prompt_tokens", prompt_tokens, minimum=1)
    arithmetic = 2 * _multiplied_parameters(model) * prompt_tokens / gpu.peak_flops
    return np.maximum(arithmetic, weight_bytes_read_per_token(model, weight_bits) / gpu.memory_bandwidth)


def strict_decode_floor(model: Model, gpu: GPU, weight_bits=16):
    """The least time one user's decode step can take at one token a pass: the weights it
    must read (``weight_bytes_read_per_token``) at the GPU's full memory bandwidth."""
    _check.instance("gpu", gpu, GPU)
    return weight_bytes_read_per_token(model, weight_bits) / gpu.memory_bandwidth


# Lesson 1's peaks, with each user's cache read and attention over it counted (part 4's caveat).
LESSON_WITH_CACHE = Assumptions(attention="causal", kv_cache=True,
                                label="lesson: 100 % of peak, no overhead, the cache read and attention counted")


def memory_bound_from_cache(model: Model, gpu: GPU, weight_bits=16, kv_bits=16,
                            assumptions: Assumptions = LESSON_WITH_CACHE, longest=None):
    """The fewest cached tokens per user at which no batch turns a decode step compute-bound.

    Each user's cache brings bytes of its own, so a long enough cache keeps a step
    memory-bound however many users share it. The search runs up to ``longest`` cached
    tokens: by default the longest cache a decode step can read inside the model's
    window (the window less the token the step adds). Returns None when even ``longest``
    cached tokens leave some batch compute-bound (as when the cache is not counted at all,
    or the window ends before the cache outweighs the arithmetic).
    """
    _check.instance("model", model, Model)
    if longest is None:
        longest = model.context_window - 1 if model.context_window is not None else 2**20
    longest = int(_check.count("longest", longest, minimum=1))

    def turns(cached):
        return compute_bound_batch(model, gpu, cached, weight_bits, kv_bits, assumptions) is not None

    if turns(longest):
        return None
    if not turns(0):
        return 0
    return _first_where(lambda cached: not turns(cached), 0, longest)
