"""Lesson 3's server: many users sharing one GPU, step by step.

A ``Server`` is a model on a GPU with an engine's rules: how it holds each user's cache
(``memory``: ``"paged"``, blocks of ``block_tokens`` handed out as the cache grows, or
``"reserved"``, each user's prompt plus the longest reply it may write, ``max_reply_tokens``,
set aside on arrival and never more than the model's window), how it forms each step's batch
(``policy``), and what it does when memory runs out (``preemption``):

- ``"static"`` (request-level scheduling, as Orca's section 2.2 describes the systems before it):
  a batch is formed only when the GPU is idle, from the requests waiting, and runs until every
  request in it is done. A user whose reply ends early keeps its place and its memory until the
  batch ends; no one joins and no one is preempted mid-batch. So that no one need be, a batch takes
  in only the requests whose conversations, at their full length, fit the free memory (each
  reply's length known in advance, as the vLLM paper's Orca (Oracle) knows it; under reserved
  memory, their reservations). Its empty places cost no arithmetic here;
- ``"continuous"`` (iteration-level scheduling with selective batching, Orca's design): at every
  step, waiting requests join as memory allows, and a joining prompt is prefilled whole in the same
  step as everyone else's next token. ``step_tokens`` caps the prompt tokens a step takes in; it
  may not be less than the model's window, since an unsplit prompt must fit one step (vLLM's V0
  engine refuses such a budget too). Not every engine mixes the two: vLLM's V0 engine ran a step of
  prompts alone, and SGLang does unless started with ``--enable-mixed-chunk``;
- ``"chunked"`` (Sarathi-Serve; vLLM's V1 engine): every step carries at most ``step_tokens``
  tokens, each running user's next token first, then pieces of the waiting prompts in the room left.

When a growing cache finds no free block, the latest user admitted is preempted: its
cache is dropped and later rebuilt by a prefill of everything it has so far
(``"recompute"``), or copied to the host's memory and back (``"swap"``, at
``swap_bandwidth`` bytes a second each way; the host's memory is taken as unlimited).

The defaults are vLLM V0's (``engines.defaults("vllm", "V0")``): blocks of 16 tokens, at most
256 users a step, and 512 tokens a step once prompts are chunked.

``simulate(server, workload)`` runs the requests through it. Each step's time is the
package's own pass model: the step's FLOPs and bytes are the sums of what
``passes.forward_pass`` counts for each user's tokens (prompt pieces and next tokens, each
over its own cache), with the weights read once for the whole step, and
``roofline.pass_time`` turns them into seconds under the server's ``assumptions``: the larger
of the arithmetic's time and the memory traffic's, as if the two overlapped perfectly, plus the
fixed cost a pass. To run an hour of traffic in about a second, the simulator reads those counts
from tables the package computes once per server (``StepClock``); ``StepClock.check`` and the
tests set them against ``forward_pass`` and ``pass_time`` directly.

A server given ``step_time`` (a callable of the step's next tokens, all its tokens and the prompts it
starts) takes each step's seconds from it instead: measured step times, as a profiler records them
for a real engine (``engine_lab.StepTable``, from llama.cpp's ``llama-batched-bench``), timed by the
same scheduler.

The same workload and server always give the same result.
"""
from __future__ import annotations

import heapq
import math
from array import array
from collections import deque
from dataclasses import dataclass, field, fields
from functools import lru_cache

import numpy as np

from . import _check, engines
from .hardware import GPU
from .memory import RESERVE, DoesNotFit, kv_cache_bytes, usable_memory, weight_bytes
from .models import Model
from .passes import attention_flops, forward_pass, linear_flops
from .roofline import PLATE, Assumptions, pass_time
from .workload import Workload, context_window

POLICIES = ("static", "continuous", "chunked")
MEMORY = ("paged", "reserved")
PREEMPTION = ("recompute", "swap")
# The lesson's server takes vLLM V0's defaults (servingmath.engines, where each is sourced): blocks
# of 16 tokens, at most 256 sequences a step (--max-num-seqs; V1 allows 1,024 on a card of 70 GiB or
# more other than the A100, such as the H100), and, with chunked prefill on, at most 512 tokens a
# step (--max-num-batched-tokens; V1 takes 8,192 under `vllm serve` on such a card). Part 4 shows
# that the 256 is what caps the goodput, and sets V1's cap beside it.
ENGINE = engines.defaults("vllm", "V0")
BLOCK_TOKENS = ENGINE.block_tokens
MAX_RUNNING = ENGINE.max_running
CHUNK_TOKENS = ENGINE.step_tokens


def _choice(name, value, allowed):
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def _whole(name, value, minimum):
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a single whole number, got {value!r}")
    _check.single(name, value, "whole number")
    return int(_check.count(name, value, minimum=minimum))


@dataclass(frozen=True)
class Server:
    """A model on one GPU, and the engine's rules for sharing it (see the module's docstring)."""

    model: Model
    gpu: GPU
    policy: str = "continuous"
    memory: str = "paged"
    assumptions: Assumptions = PLATE
    block_tokens: int = BLOCK_TOKENS
    max_running: int = MAX_RUNNING
    step_tokens: int | None = None
    preemption: str = "recompute"
    swap_bandwidth: float | None = None
    max_reply_tokens: int | None = None
    weight_bits: float = 16
    kv_bits: float = 16
    reserve: float = RESERVE
    # Measured step times in place of the pass model: a callable (decodes, tokens, prompts) -> seconds,
    # given each step's next tokens, all its tokens and the prompts it starts (see engine_lab.StepTable).
    step_time: object = None

    def __post_init__(self):
        _check.instance("model", self.model, Model)
        if self.step_time is not None and not callable(self.step_time):
            raise TypeError(f"step_time must be None or a callable (decodes, tokens, prompts) -> seconds, "
                            f"got {self.step_time!r}")
        _check.instance("gpu", self.gpu, GPU)
        _choice("policy", self.policy, POLICIES)
        _choice("memory", self.memory, MEMORY)
        _check.instance("assumptions", self.assumptions, Assumptions)
        _whole("block_tokens", self.block_tokens, 1)
        _whole("max_running", self.max_running, 1)
        if self.step_tokens is not None:
            _whole("step_tokens", self.step_tokens, 1)
            if self.policy == "static":
                raise ValueError(f"step_tokens does not apply to policy='static' (a batch's prompts are read "
                                 f"in one step), got step_tokens={self.step_tokens!r}")
            if self.policy == "continuous" and self.step_tokens < self.window:
                raise ValueError(f"step_tokens must be at least {self.model.name}'s window of {self.window:,} tokens "
                                 f"under policy='continuous', which reads a prompt whole in one step, got "
                                 f"step_tokens={self.step_tokens!r}: use policy='chunked' to split prompts")
        _choice("preemption", self.preemption, PREEMPTION)
        if self.preemption == "swap":
            if self.swap_bandwidth is None:
                raise ValueError("swap_bandwidth (bytes a second between the GPU and the host) is needed "
                                 "when preemption is 'swap', got None")
            _check.positive("swap_bandwidth", _check.single("swap_bandwidth", self.swap_bandwidth))
        elif self.swap_bandwidth is not None:
            _check.positive("swap_bandwidth", self.swap_bandwidth)
        if self.max_reply_tokens is not None:
            longest = _whole("max_reply_tokens", self.max_reply_tokens, 1)
            if longest >= self.window:
                raise ValueError(f"max_reply_tokens must leave room for a prompt in {self.model.name}'s window "
                                 f"of {self.window:,} tokens, got {self.max_reply_tokens!r}")
        for name in ("weight_bits", "kv_bits"):
            _check.finite(name, _check.single(name, getattr(self, name)), above=0)
        usable_memory(self.gpu, _check.single("reserve", self.reserve))
        if self.cache_room <= 0 or self.cache_blocks < 1:
            raise DoesNotFit(f"{self.model.name}'s weights ({weight_bytes(self.model.parameters, self.weight_bits) / 1e9:.2f} GB) "
                             f"leave no room for a block of cache on one {self.gpu.name} "
                             f"(reserve {self.reserve!r}): the server cannot run")

    @property
    def window(self) -> int:
        """The model's context window: no conversation may hold more tokens."""
        return context_window(self.model)

    @property
    def token_budget(self):
        """Tokens a step may carry: ``step_tokens``, else the chunked default, else one window's worth
        of prompt a step (continuous) or no limit (static)."""
        if self.step_tokens is not None:
            return int(self.step_tokens)
        if self.policy == "chunked":
            return CHUNK_TOKENS
        if self.policy == "continuous":
            return self.window
        return None

    @property
    def cache_room(self) -> float:
        """Bytes left for caches once the weights and the reserve are out (lesson 2's budget)."""
        return usable_memory(self.gpu, self.reserve) - weight_bytes(self.model.parameters, self.weight_bits)

    @property
    def block_bytes(self) -> float:
        """Bytes of one block: the cache of ``block_tokens`` tokens."""
        return float(kv_cache_bytes(self.model, self.block_tokens, 1, self.kv_bits))

    @property
    def cache_blocks(self) -> int:
        """Blocks the cache room holds."""
        return int(self.cache_room // self.block_bytes)

    def blocks(self, tokens):
        """Blocks that hold ``tokens`` tokens of cache."""
        tokens = _check.count("tokens", tokens)
        return np.ceil(np.asarray(tokens) / self.block_tokens).astype(np.int64)

    def reservation(self, prompt_tokens):
        """Tokens set aside for a request under reserved memory: its prompt and the longest reply it may
        write (``max_reply_tokens``, the cap a client sends), never past the model's window. With no cap,
        a reply may run to the window, so the window is reserved (the vLLM paper's Orca (Max))."""
        prompt_tokens = _check.count("prompt_tokens", prompt_tokens, minimum=1)
        longest = prompt_tokens + (self.window if self.max_reply_tokens is None else self.max_reply_tokens)
        return np.minimum(longest, self.window).astype(np.int64)


class StepClock:
    """The time of one step, read from the package's pass model through tables built once.

    A step carries, for each user, some new tokens over that user's cache. Its FLOPs are
    2 × active parameters for each token (``passes.linear_flops``) plus each user's
    attention (``passes.attention_flops``); its bytes are the weights, read once
    (``memory.weight_bytes`` of ``Model.parameters_read``), plus each user's cache read
    (``memory.kv_cache_bytes``) and the new tokens' keys and values written. The tables
    hold those functions' values for every cache length up to the model's window; the
    step's time is ``roofline.pass_time`` of the sums.
    """

    def __init__(self, server: Server):
        _check.instance("server", server, Server)
        model, gpu, assumptions = server.model, server.gpu, server.assumptions
        self.server = server
        window = server.window
        lengths = np.arange(window + 1)
        counted = assumptions.kv_cache
        self.per_flop = float(pass_time(1.0, 0.0, gpu.peak_flops, gpu.memory_bandwidth, assumptions).compute_time)
        self.per_byte = float(pass_time(0.0, 1.0, gpu.peak_flops, gpu.memory_bandwidth, assumptions).memory_time)
        self.overhead = float(assumptions.overhead)
        self.flops_per_token = float(linear_flops(model.active_parameters, 1))
        self.write_per_token = float(model.kv_bytes_per_token(server.kv_bits)) if counted else 0.0
        self.read = (kv_cache_bytes(model, lengths, 1, server.kv_bits) if counted else np.zeros(window + 1)).astype(float)
        self.attention_mode = assumptions.attention
        # Attention of a whole prompt of each length: a piece of n tokens after c cached ones is
        # A[c + n] − A[c] when counted causally (or not at all), as passes.positions_attended sums it.
        self.prompt_attention = np.asarray(attention_flops(model, lengths, 0, assumptions.attention), dtype=float) \
            if assumptions.attention != "none" else np.zeros(window + 1)
        self.telescopes = assumptions.attention in ("causal", "none")
        decode_attention = np.diff(self.prompt_attention) if self.telescopes else np.asarray(
            attention_flops(model, 1, lengths[:-1], assumptions.attention), dtype=float)
        self.decode_attention = decode_attention
        # Where each user's decode costs grow in a straight line with the cache (every full-attention
        # model), a step's sums follow from the number of users and their total cache.
        c = lengths[:-1].astype(float)
        self.attention_base = float(decode_attention[0])
        self.attention_slope = float(decode_attention[1] - decode_attention[0]) if window > 1 else 0.0
        self.read_slope = float(self.read[1] - self.read[0])
        self.linear = bool(np.allclose(decode_attention, self.attention_base + self.attention_slope * c, rtol=1e-12, atol=0)
                           and np.allclose(self.read[:-1], self.read[0] + self.read_slope * c, rtol=1e-12, atol=0)
                           and self.read[0] == 0)
        self._weights = {}
        self._dense = not model.mixture_of_experts

    def weights(self, tokens):
        """Bytes of weights a step of ``tokens`` tokens reads (every weight once, in a dense model)."""
        key = 1 if self._dense else tokens
        found = self._weights.get(key)
        if found is None:
            model = self.server.model
            found = float(weight_bytes(model.parameters_read(key), self.server.weight_bits))
            self._weights[key] = found
        return found

    def piece(self, new, cached):
        """(FLOPs of attention, bytes of cache read) for ``new`` prompt tokens after ``cached`` ones."""
        if self.telescopes:
            attention = self.prompt_attention[cached + new] - self.prompt_attention[cached]
        else:
            attention = float(attention_flops(self.server.model, new, cached, self.attention_mode))
        return float(attention), float(self.read[cached])

    def time(self, decode_caches=(), pieces=()):
        """Seconds of one step: a next token for users holding ``decode_caches`` tokens each, and
        prompt ``pieces`` as (new tokens, cached tokens) pairs."""
        decode_caches = [int(c) for c in decode_caches]
        pieces = [(int(n), int(c)) for n, c in pieces]
        tokens = len(decode_caches) + sum(n for n, _ in pieces)
        if tokens == 0:
            raise ValueError("a step must carry at least one token, got none")
        flops = self.flops_per_token * tokens + sum(self.decode_attention[c] for c in decode_caches)
        moved = self.weights(tokens) + self.write_per_token * tokens + sum(self.read[c] for c in decode_caches)
        for n, c in pieces:
            attention, read = self.piece(n, c)
            flops += attention
            moved += read
        return max(flops * self.per_flop, moved * self.per_byte) + self.overhead

    def check(self, decode_caches=(), pieces=()):
        """The same step's time straight from ``passes.forward_pass`` and ``roofline.pass_time``."""
        server = self.server
        flops = moved = 0.0
        users = [(1, int(c)) for c in decode_caches] + [(int(n), int(c)) for n, c in pieces]
        for n, c in users:
            cost = forward_pass(server.model, n, c, 1, server.weight_bits, server.kv_bits,
                                attention=server.assumptions.attention, kv_cache=server.assumptions.kv_cache)
            flops += cost.flops
            moved += cost.bytes - cost.weight_bytes
        tokens = sum(n for n, _ in users)
        moved += weight_bytes(server.model.parameters_read(tokens), server.weight_bits)
        return float(pass_time(flops, moved, server.gpu.peak_flops, server.gpu.memory_bandwidth,
                               server.assumptions).time)


def arrays_of(run: "Simulation") -> dict[str, np.ndarray]:
    """A run's arrays (all it holds but its server and its requests), from which ``Simulation`` is made again."""
    return {name: getattr(run, name) for name in SIMULATION_ARRAYS}


def percentile(values, q, weights=None):
    """The ``q``-th percentile (0 to 100) of ``values``: the smallest value with at least q % of the
    (weighted) count at or below it. NaN when there are no values."""
    q = _check.number("q", q, minimum=0, maximum=100)
    values = np.asarray(values, dtype=float).ravel()
    weights = np.ones_like(values) if weights is None else np.asarray(weights, dtype=float).ravel()
    if weights.shape != values.shape:
        raise ValueError(f"weights must match values, got {weights.shape} and {values.shape}")
    keep = weights > 0
    values, weights = values[keep], weights[keep]
    if values.size == 0:
        return float("nan")
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    index = int(np.searchsorted(cumulative, q / 100 * cumulative[-1] * (1 - 1e-12), side="left"))
    return float(values[order][min(index, values.size - 1)])


@dataclass(frozen=True)
class RequestRecord:
    """One request's life: when it arrived, its first token, every token, its end, its preemptions."""

    index: int
    arrival: float
    prompt: int
    reply: int
    first_token: float
    finish: float
    preemptions: int
    token_times: np.ndarray

    @property
    def ttft(self):
        return self.first_token - self.arrival

    @property
    def gaps(self):
        """Time between each token and the one before it."""
        return np.diff(self.token_times)

    @property
    def tpot(self):
        """Mean time per token after the first (NaN for a one-token reply)."""
        return (self.finish - self.first_token) / (self.reply - 1) if self.reply > 1 else float("nan")


@dataclass(frozen=True)
class Simulation:
    """What ``simulate`` returns: every request's record, every step, and the summaries."""

    server: Server
    workload: Workload
    first_token: np.ndarray
    finish: np.ndarray
    preemptions: np.ndarray
    step_end: np.ndarray
    step_time: np.ndarray
    step_decodes: np.ndarray
    step_tokens: np.ndarray
    step_held_tokens: np.ndarray
    step_used_tokens: np.ndarray
    runs: np.ndarray  # rows: request, step of the run's first token, step of its last
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def steps(self) -> int:
        return len(self.step_end)

    def request(self, index) -> RequestRecord:
        """The record of request ``index`` (in order of arrival)."""
        index = _whole("index", index, 0)
        if index >= len(self.workload):
            raise ValueError(f"index must be below the {len(self.workload)} requests, got {index!r}")
        rows = self.runs[self.runs[:, 0] == index]
        steps = np.concatenate([np.arange(a, b + 1) for _, a, b in rows]) if len(rows) else np.array([], int)
        w = self.workload
        return RequestRecord(index, float(w.arrival[index]), int(w.prompt[index]), int(w.reply[index]),
                             float(self.first_token[index]), float(self.finish[index]),
                             int(self.preemptions[index]), self.step_end[steps])

    @property
    def ttft(self):
        """Each request's time to first token, seconds."""
        return self.first_token - self.workload.arrival

    @property
    def tpot(self):
        """Each request's mean time per token after the first (NaN for one-token replies)."""
        reply = self.workload.reply
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(reply > 1, (self.finish - self.first_token) / np.maximum(reply - 1, 1), np.nan)

    def _tbt(self):
        """Every time between tokens, as (values, weights): step durations weighted by the tokens each
        step made inside a run, and one gap for each run that resumed after a preemption."""
        if "tbt" not in self._cache:
            runs = self.runs
            gaps = []
            if len(runs):
                order = np.lexsort((runs[:, 1], runs[:, 0]))
                ordered = runs[order]
                same = ordered[1:, 0] == ordered[:-1, 0]
                gaps = self.step_end[ordered[1:, 1][same]] - self.step_end[ordered[:-1, 2][same]]
            # Inside a run a token's gap is its step's end less the step before's: no idle time falls
            # between them, as the engine never idles while anyone is decoding.
            inside = np.diff(self.step_end, prepend=0.0)
            values = np.concatenate([inside, np.asarray(gaps, dtype=float)])
            weights = np.concatenate([self.step_decodes.astype(float), np.ones(len(gaps))])
            self._cache["tbt"] = (values, weights)
        return self._cache["tbt"]

    def tbt_percentile(self, q):
        """The ``q``-th percentile of the time between tokens, over every token after a request's first."""
        values, weights = self._tbt()
        return percentile(values, q, weights)

    @property
    def output_tokens(self) -> int:
        return int(self.workload.reply.sum())

    @property
    def makespan(self) -> float:
        """Seconds from the first arrival to the last token."""
        return float(self.finish.max() - self.workload.arrival[0])

    @property
    def tokens_per_second(self) -> float:
        """Reply tokens made a second over the whole run."""
        return self.output_tokens / self.makespan

    def attainment(self, ttft=None, tpot=None):
        """The share of requests whose time to first token is at most ``ttft`` seconds and whose mean
        time per later token is at most ``tpot`` (either target may be None: not asked)."""
        ok = np.ones(len(self.workload), dtype=bool)
        if ttft is not None:
            ok &= self.ttft <= _check.positive("ttft", ttft)
        if tpot is not None:
            tpots = self.tpot
            ok &= np.isnan(tpots) | (tpots <= _check.positive("tpot", tpot))
        return float(ok.mean())

    @property
    def memory_used_share(self) -> float:
        """Of the cache memory held over the run (each step weighted by its time), the share that holds
        tokens' keys and values: what the vLLM paper's figure 2 calls token states."""
        durations = self.step_time
        held = float((self.step_held_tokens * durations).sum())
        return float((self.step_used_tokens * durations).sum()) / held if held else float("nan")

    def summary(self) -> dict:
        """The run in a few figures: tokens a second, TTFT and TBT at p50 and p99, preemptions."""
        return {
            "requests": len(self.workload),
            "steps": self.steps,
            "tokens_per_second": self.tokens_per_second,
            "ttft_p50": percentile(self.ttft, 50),
            "ttft_p99": percentile(self.ttft, 99),
            "tbt_p50": self.tbt_percentile(50),
            "tbt_p99": self.tbt_percentile(99),
            "preemptions": int(self.preemptions.sum()),
            "memory_used_share": self.memory_used_share,
        }


# What a ``Simulation`` holds beyond its server and its requests: its records, as arrays.
SIMULATION_ARRAYS = tuple(f.name for f in fields(Simulation) if f.name not in ("server", "workload", "_cache"))


def _with_extra(decodes, extra):
    tokens = decodes.copy()
    if extra:
        steps = np.fromiter(extra.keys(), dtype=np.int64, count=len(extra))
        tokens[steps] += np.fromiter(extra.values(), dtype=np.int64, count=len(extra))
    return tokens


def simulate(server: Server, work: Workload) -> Simulation:
    """Serve ``work`` on ``server`` and record every step and every request (see the module's docstring)."""
    _check.instance("server", server, Server)
    _check.instance("work", work, Workload)
    work.check_window(server.model)
    clock = StepClock(server)
    n = len(work)
    arrival = work.arrival.tolist()
    prompt = work.prompt.tolist()
    reply = work.reply.tolist()
    bt = server.block_tokens
    total = server.cache_blocks
    paged = server.memory == "paged"
    chunked = server.policy == "chunked"
    static = server.policy == "static"
    swap = server.preemption == "swap"
    budget_cap = server.token_budget
    max_running = server.max_running
    if not paged:
        reserved = server.blocks(server.reservation(work.prompt)).tolist()
        if server.max_reply_tokens is not None and work.reply.max() > server.max_reply_tokens:
            i = int(np.argmax(work.reply))
            raise ValueError(f"max_reply_tokens must cover every reply: request {i} writes {int(work.reply[i]):,} "
                             f"tokens, got max_reply_tokens={server.max_reply_tokens!r}")
        alone = np.asarray(reserved)
    else:
        alone = server.blocks(work.prompt + work.reply)
    if alone.max() > total:
        i = int(np.argmax(alone))
        raise DoesNotFit(f"request {i} needs {int(alone[i]):,} blocks of cache alone, more than the "
                         f"{total:,} that fit beside {server.model.name}'s weights on one {server.gpu.name}")
    watermark = max(1, total // 100) if paged else 0
    per_flop, per_byte, overhead = clock.per_flop, clock.per_byte, clock.overhead
    fpt, wpt = clock.flops_per_token, clock.write_per_token
    a_base, a_slope, r_slope = clock.attention_base, clock.attention_slope, clock.read_slope
    linear = clock.linear
    dec_att, read = clock.decode_attention, clock.read
    weights = clock.weights
    dense_weights = clock.weights(1) if clock._dense else None
    swap_bw = server.swap_bandwidth
    measured = server.step_time

    nan = float("nan")
    first_token = [nan] * n
    finish = [nan] * n
    preempt = [0] * n
    state = [0] * n        # 0 waiting, 1 prefilling, 2 decoding, 3 done, 4 swapped out
    version = [0] * n
    held = [0] * n         # blocks held while prefilling (and under reserved memory, always)
    need_tokens = list(prompt)  # tokens the next prefill must carry: the prompt, plus replies so far on recompute
    prefilled = [0] * n
    generated = [0] * n    # tokens made, as of the last time the request stopped decoding
    start_len = [0] * n    # decoding: cache length at the start of step start_step
    start_step = [0] * n
    run_start = [0] * n
    runs = []
    waiting = deque()
    prefilling = []        # chunked: requests part-way through their prompt, first come first served
    stack = []             # (request, version) in order of admission: the last is preempted first
    finishing = []         # heap of (last step, request, version)
    phase = [0] * bt       # decoding requests by the step (mod bt) at which each next needs a block
    decoding = set()
    d = 0                  # decoding requests
    sum_c = 0              # their caches' tokens at the start of the coming step
    pre_cached = 0         # tokens cached by requests part-way through their prompt
    free = total
    kept_blocks = 0        # static: blocks of users done before their batch, held until it ends
    kept_places = 0        # static: their places in the batch
    running = 0
    g = 0
    now = 0.0
    nxt = 0
    done = 0
    step_end, step_time = array("d"), array("d")
    step_decodes, step_held, step_used = array("q"), array("q"), array("q")
    step_extra_tokens = {}  # step → tokens beyond its next tokens (prompt pieces, users swapped back in)

    def cur_len(i):
        return start_len[i] + g - start_step[i]

    def stop_decoding(i, length):
        nonlocal d, sum_c
        decoding.discard(i)
        d -= 1
        sum_c -= length
        if paged:
            phase[(start_step[i] - start_len[i]) % bt] -= 1

    def start_decoding(i, length, at_step):
        nonlocal d, sum_c
        state[i] = 2
        start_len[i] = length
        start_step[i] = at_step
        decoding.add(i)
        d += 1
        sum_c += length
        if paged:
            phase[(at_step - length) % bt] += 1
        heapq.heappush(finishing, (at_step + reply[i] - generated[i] - 1, i, version[i]))

    def finish_due():
        """Retire every decoding request whose last token came in step ``g``."""
        nonlocal free, running, done, kept_blocks, kept_places
        while finishing and finishing[0][0] <= g:
            last, i, ver = heapq.heappop(finishing)
            if ver != version[i] or state[i] != 2:
                continue
            length = start_len[i] + g + 1 - start_step[i]
            stop_decoding(i, length)
            generated[i] = reply[i]
            finish[i] = now
            state[i] = 3
            if static:
                kept_blocks += -(-length // bt) if paged else held[i]
                kept_places += 1
            else:
                free += -(-length // bt) if paged else held[i]
                running -= 1
            held[i] = 0
            done += 1
            runs.append((i, run_start[i], g))

    while done < n:
        while nxt < n and arrival[nxt] <= now:
            waiting.append(nxt)
            nxt += 1
        if d == 0 and not prefilling and not waiting:
            now = arrival[nxt]
            continue
        if d and linear and not waiting and not prefilling:
            # Only next tokens until someone arrives, finishes or needs a block that is not free:
            # the same step as below with nothing else in it, run in a tight loop.
            next_arrival = arrival[nxt] if nxt < n else math.inf
            weights_read = (dense_weights if dense_weights is not None else weights(d)) + wpt * d
            flops_fixed = (fpt + a_base) * d
            blocked = False
            while True:
                if paged:
                    need = phase[g % bt]
                    if need > free:
                        blocked = True     # the step below preempts someone
                        break
                    free -= need
                if measured is None:
                    step = (flops_fixed + a_slope * sum_c) * per_flop
                    memory_time = (weights_read + r_slope * sum_c) * per_byte
                    if memory_time > step:
                        step = memory_time
                    step += overhead
                else:
                    step = measured(d, d, 0)
                now += step
                step_end.append(now)
                step_time.append(step)
                step_decodes.append(d)
                sum_c += d
                if finishing[0][0] <= g:
                    finish_due()
                    step_held.append((total - free) * bt)
                    step_used.append(sum_c + pre_cached)
                    g += 1
                    break
                step_held.append((total - free) * bt)
                step_used.append(sum_c + pre_cached)
                g += 1
                if next_arrival <= now:
                    break
            if not blocked:
                continue
        pieces = []            # (request, new tokens, cached tokens)
        extra = 0.0
        resumed = set()
        if budget_cap is None:
            budget = math.inf
        elif chunked:
            budget = budget_cap - d
        else:
            budget = budget_cap
        if chunked:
            for i in prefilling:
                if budget <= 0:
                    break
                take = min(budget, need_tokens[i] - prefilled[i])
                pieces.append((i, take, prefilled[i]))
                budget -= take
        if static and d == 0 and not prefilling:
            # The batch is over: its users leave and their memory is free for the next one.
            free += kept_blocks
            running -= kept_places
            kept_blocks = kept_places = 0
            promised, room = 0, free
        if not static or (d == 0 and not prefilling):
            while waiting and running < max_running and budget > 0:
                i = waiting[0]
                if state[i] == 4:
                    length = start_len[i]
                    blocks = -(-length // bt)
                else:
                    blocks = -(-need_tokens[i] // bt) if paged else reserved[i]
                if static and paged:
                    # Room for the whole conversation, so that no one in the batch is preempted.
                    whole = -(-(prompt[i] + reply[i]) // bt)
                    if promised + whole > room:
                        break
                    promised += whole
                elif blocks + (watermark if running else 0) > free:
                    break
                if state[i] != 4 and not chunked and pieces and need_tokens[i] > budget:
                    break
                waiting.popleft()
                free -= blocks
                version[i] += 1
                stack.append((i, version[i]))
                running += 1
                if state[i] == 4:       # back from the host: its cache is copied in, and it decodes at once
                    extra += read[length] / swap_bw
                    held[i] = blocks
                    start_decoding(i, length, g)
                    run_start[i] = g
                    resumed.add(i)
                    if chunked:
                        budget -= 1
                    continue
                held[i] = blocks
                state[i] = 1
                prefilled[i] = 0
                take = min(budget, need_tokens[i]) if chunked else need_tokens[i]
                if chunked:
                    prefilling.append(i)
                pieces.append((i, take, 0))
                budget -= take
        if paged and d:
            need = phase[g % bt]
            if static and need > free:
                raise AssertionError("a static batch outgrew the memory it was admitted to")
            while need > free:
                while True:
                    v, ver = stack.pop()
                    if version[v] == ver and state[v] in (1, 2):
                        break
                preempt[v] += 1
                resumed.discard(v)
                version[v] += 1
                running -= 1
                if state[v] == 2:
                    length = cur_len(v)
                    if (start_step[v] - start_len[v]) % bt == g % bt:
                        need -= 1
                    stop_decoding(v, length)
                    free += -(-length // bt)
                    made = generated[v] + g - start_step[v]
                    generated[v] = made
                    if g - 1 >= run_start[v]:
                        runs.append((v, run_start[v], g - 1))
                    if swap:
                        extra += read[length] / swap_bw
                        state[v] = 4
                        start_len[v] = length
                    else:
                        state[v] = 0
                        need_tokens[v] = prompt[v] + made
                else:                   # part-way through its prompt: dropped, to start again
                    free += held[v]
                    pre_cached -= prefilled[v]
                    prefilled[v] = 0
                    state[v] = 0
                    if v in prefilling:
                        prefilling.remove(v)
                    pieces = [p for p in pieces if p[0] != v]
                held[v] = 0
                waiting.appendleft(v)
            free -= need
        # The step's time: the package's pass model, summed over the users it carries.
        tokens = d + sum(p[1] for p in pieces)
        if tokens == 0:
            # Everyone admitted was preempted again before the step ran: wait for the next arrival or finish.
            if not waiting or nxt >= n:
                raise AssertionError("the engine stalled with nothing to run")
            now = max(now, arrival[nxt])
            continue
        if linear:
            flops = fpt * tokens + a_base * d + a_slope * sum_c
            moved = (dense_weights if dense_weights is not None else weights(tokens)) + wpt * tokens + r_slope * sum_c
        else:
            flops = fpt * tokens
            moved = (dense_weights if dense_weights is not None else weights(tokens)) + wpt * tokens
            for i in decoding:
                c = cur_len(i)
                flops += dec_att[c]
                moved += read[c]
        for i, take, cached in pieces:
            attention, cache_read = clock.piece(take, cached)
            flops += attention
            moved += cache_read
        if measured is None:
            step = flops * per_flop
            memory_time = moved * per_byte
            if memory_time > step:
                step = memory_time
            step += overhead + extra
        else:
            step = measured(d, tokens, sum(1 for p in pieces if p[2] == 0)) + extra
        now += step
        step_end.append(now)
        step_time.append(step)
        step_decodes.append(d - len(resumed))
        if tokens != d - len(resumed):
            step_extra_tokens[g] = tokens - (d - len(resumed))
        sum_c += d
        for i, take, cached in pieces:
            prefilled[i] += take
            pre_cached += take
            if prefilled[i] < need_tokens[i]:
                continue
            pre_cached -= prefilled[i]
            if chunked:
                prefilling.remove(i)
            generated[i] += 1
            if first_token[i] != first_token[i]:
                first_token[i] = now
            run_start[i] = g
            if generated[i] >= reply[i]:
                finish[i] = now
                state[i] = 3
                if static:
                    kept_blocks += held[i]
                    kept_places += 1
                else:
                    free += held[i]
                    running -= 1
                held[i] = 0
                done += 1
                runs.append((i, g, g))
            else:
                start_decoding(i, need_tokens[i], g + 1)
        if finishing and finishing[0][0] <= g:
            finish_due()
        step_held.append((total - free) * bt)
        step_used.append(sum_c + pre_cached)
        g += 1

    runs_array = np.asarray(runs, dtype=np.int64).reshape(-1, 3)
    return Simulation(
        server=server, workload=work,
        first_token=np.asarray(first_token), finish=np.asarray(finish), preemptions=np.asarray(preempt),
        step_end=np.frombuffer(step_end, dtype=float), step_time=np.frombuffer(step_time, dtype=float),
        step_decodes=np.frombuffer(step_decodes, dtype=np.int64),
        step_tokens=_with_extra(np.frombuffer(step_decodes, dtype=np.int64), step_extra_tokens),
        step_held_tokens=np.frombuffer(step_held, dtype=np.int64),
        step_used_tokens=np.frombuffer(step_used, dtype=np.int64),
        runs=runs_array,
    )


# -- Load, latency and price ----------------------------------------------------------------------

# DistServe (zhong2024distserve) counts a rate as served when at least 90 % of requests meet both targets.
ATTAINMENT = 0.9
# Requests a goodput search runs at each rate it tries. The server starts empty, so a short run
# flatters a rate the server cannot keep up with: its queue has not had time to grow. At about 50
# requests a second, 1,000 requests (20 s) put the goodput near 68; 8,000 (nearly three minutes)
# put it near 53, and 16,000 no lower (tests/test_lesson3_review.py holds the found rate to a run
# twice as long).
GOODPUT_REQUESTS = 8000


def poisson_requests(server: Server, rate, count=2000, lengths=None, seed=0) -> Workload:
    """The requests ``at_rate`` serves: ``count`` arriving as a Poisson stream of ``rate`` a second (lengths
    from ``lengths``, ShareGPT's means by default), each within ``server``'s model's window."""
    from .workload import SHAREGPT, poisson_workload
    _check.instance("server", server, Server)
    return poisson_workload(rate, count, SHAREGPT if lengths is None else lengths, seed, model=server.model)


def at_rate(server: Server, rate, count=2000, lengths=None, seed=0) -> Simulation:
    """``count`` requests arriving as a Poisson stream of ``rate`` a second (lengths from ``lengths``,
    ShareGPT's means by default), served by ``server``. The same seed at another rate gives the same
    requests, closer together or further apart."""
    return simulate(server, poisson_requests(server, rate, count, lengths, seed))


@dataclass(frozen=True)
class Goodput:
    """The most requests a second one server takes while ``attainment`` of them meet both targets."""

    server: Server
    rate: float
    ttft: float
    tpot: float
    attainment: float
    mean_reply: float
    run: Simulation | None

    @property
    def tokens_per_second(self):
        """Reply tokens a second at that rate."""
        return self.rate * self.mean_reply

    def gpus_for(self, rate):
        """Servers (GPUs) needed to take ``rate`` requests a second at the same targets, the stream
        split evenly among them."""
        rate = _check.number("rate", rate, above=0)
        if self.rate <= 0:
            raise ValueError(f"no rate meets the targets on one {self.server.gpu.name}, so no number of "
                             f"them serves rate={rate!r}")
        return np.ceil(np.asarray(rate) / self.rate - 1e-9).astype(np.int64)

    def cost_per_million_tokens(self, price_per_hour=None):
        """Dollars for a million reply tokens made at the goodput rate (the GPU's price by default)."""
        from .serving import SECONDS_PER_HOUR, cost_per_million_tokens
        price = self.server.gpu.price_per_hour if price_per_hour is None else price_per_hour
        if price is None:
            raise ValueError(f"price_per_hour is needed: {self.server.gpu.name} has no rental price, got None")
        if self.rate <= 0:
            raise ValueError(f"no rate meets the targets on one {self.server.gpu.name}: a token has no price")
        return cost_per_million_tokens(price, self.tokens_per_second * SECONDS_PER_HOUR)


@lru_cache(maxsize=24)
def _searched_run(server, rate, count, lengths, seed):
    # Searches for other targets on the same server try the same rates first (1, 2, 4... then halfway
    # between the last two), so the runs there are kept for them: a score of runs, some megabytes each.
    return at_rate(server, rate, count, lengths, seed)


def goodput(server: Server, ttft, tpot, count=GOODPUT_REQUESTS, lengths=None, seed=0, attainment=ATTAINMENT,
            steps=14) -> Goodput:
    """The highest request rate at which at least ``attainment`` of requests see a time to first token
    of at most ``ttft`` seconds and a mean time per later token of at most ``tpot`` (DistServe's goodput),
    found by halving the interval between a rate that meets them and one that does not ``steps`` times.

    Each rate is tried with ``count`` requests on a server that starts empty. Past the rate the server
    keeps up with, its queue grows steadily, but a short run ends before the queue is long enough to
    break the targets: keep ``count`` large enough that a run twice as long gives the same rate."""
    from .workload import SHAREGPT
    _check.instance("server", server, Server)
    ttft = _check.positive("ttft", ttft)
    tpot = _check.positive("tpot", tpot)
    attainment = _check.fraction("attainment", attainment)
    steps = _whole("steps", steps, 1)
    lengths = SHAREGPT if lengths is None else lengths

    def meets(rate):
        run = _searched_run(server, rate, count, lengths, seed)
        return run.attainment(ttft, tpot) >= attainment, run

    low, high, best = 0.0, 1.0, None
    ok, run = meets(high)
    while ok:
        low, best = high, run
        high *= 2
        ok, run = meets(high)
        if high > 1e6:
            raise ValueError("the targets are met at every rate tried: check ttft and tpot")
    for _ in range(steps):
        middle = (low + high) / 2
        ok, run = meets(middle)
        if ok:
            low, best = middle, run
        else:
            high = middle
    return goodput_at(server, low, ttft, tpot, count, lengths, seed, attainment, best)


def goodput_at(server: Server, rate, ttft, tpot, count=GOODPUT_REQUESTS, lengths=None, seed=0,
               attainment=ATTAINMENT, run: Simulation | None = None) -> Goodput:
    """The ``Goodput`` a search found at ``rate`` (0 where no rate met the targets), with the run at that
    rate (``run``, or run again here)."""
    from .workload import SHAREGPT
    _check.instance("server", server, Server)
    rate = float(_check.single("rate", _check.number("rate", rate, minimum=0)))
    ttft, tpot = _check.positive("ttft", ttft), _check.positive("tpot", tpot)
    attainment = _check.fraction("attainment", attainment)
    lengths = SHAREGPT if lengths is None else lengths
    if run is not None and (rate == 0 or run.server != server or len(run.workload) != count):
        raise ValueError(f"run must be {count:,} requests on the server given, at rate={rate!r}, got {run.workload.label}")
    if rate > 0 and run is None:
        run = at_rate(server, rate, count, lengths, seed)
    mean_reply = float(run.workload.reply.mean()) if run is not None else float(lengths.mean_reply)
    return Goodput(server, rate, ttft, tpot, attainment, mean_reply, run)


def users_that_fit(server: Server, prompt, reply):
    """How many of these users, taken in order, fit at once when each has written its whole reply:
    under paged memory each holds the blocks of its own conversation, under reserved memory the
    blocks of its reservation, however short its reply turns out."""
    _check.instance("server", server, Server)
    prompt = np.atleast_1d(_check.count("prompt", prompt, minimum=1)).astype(np.int64)
    reply = np.atleast_1d(_check.count("reply", reply, minimum=1)).astype(np.int64)
    if prompt.shape != reply.shape or prompt.ndim != 1:
        raise ValueError(f"prompt and reply must be flat and as long as each other, got {prompt.shape} and {reply.shape}")
    longest = prompt + reply
    if longest.max() > server.window:
        from .workload import ContextTooLong
        i = int(np.argmax(longest))
        raise ContextTooLong(f"user {i} holds {int(longest[i]):,} tokens, past {server.model.name}'s context "
                             f"window of {server.window:,} tokens")
    held = server.blocks(longest) if server.memory == "paged" else server.blocks(server.reservation(prompt))
    return int(np.searchsorted(np.cumsum(held), server.cache_blocks, side="right"))
