"""Lesson 4 Part 4's questions: prefill and decode on GPUs of their own, against the same GPUs each doing both.

A ``Layout`` says how a pool's GPUs serve: ``prefill`` GPUs that only read prompts and ``decode`` GPUs that only
write replies, each cache crossing a link between them (``simulator.simulate_disaggregated``), or, with
``prefill`` 0, ``decode`` copies that do both behind one queue (colocated, ``simulator.simulate_cluster``). Every
GPU runs the same server: vLLM 0.9.2's profile (``load.ENGINE``) of Llama 3 8B on an H100 SXM, with its
default token budget a step (8,192 under ``vllm serve`` on this card) or the layout's ``budget``. ``goodput``
finds a layout's as ``simulator.goodput`` finds one server's, and keeps it (``_kept``); ``tuned`` tries the
colocated pool at each of ``BUDGETS`` and keeps the best, the baseline a split must beat; ``decode_cost`` is a
decode GPU's step of next tokens alone; ``best_split`` is the arithmetic of sizing the two stages from each
GPU's rate.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import _check, engines, load, simulator
from ._kept import kept_arrays
from .simulator import cluster
from .simulator.goodput import ATTAINMENT, highest_rate
from .workload import SHAREGPT, LengthDistribution, poisson_workload

# Prompts ten times ShareGPT's mean and short replies, as summarizing a document asks: the course's choice of
# means (DistServe's summarization load, LongBench, has long prompts and short replies too), geometric like ShareGPT's.
LONG = LengthDistribution("long prompts", 2000, 200, "the course's choice")
LENGTHS = {"sharegpt": SHAREGPT, "long": LONG}
# Requests each rate of a search runs: on four GPUs at a few dozen a second, about a minute of traffic.
REQUESTS = 2000
STEPS = 8
# Token budgets a step (vLLM's --max-num-batched-tokens) a colocated pool is tried with: small chunks of each prompt
# up to 0.9.2's default on an H100 under `vllm serve`.
BUDGETS = (128, 256, 512, 1024, 2048, 4096, 8192)


@dataclass(frozen=True)
class Layout:
    """``prefill`` GPUs reading prompts and ``decode`` GPUs writing replies; ``prefill`` 0: ``decode`` GPUs doing both.
    ``budget``: the token budget a step of every GPU (the engine's default if None)."""

    prefill: int
    decode: int
    budget: int | None = None

    def __post_init__(self):
        simulator._whole("prefill", self.prefill, 0)
        simulator._whole("decode", self.decode, 1)
        if self.budget is not None:
            simulator._whole("budget", self.budget, 1)

    @property
    def gpus(self) -> int:
        return self.prefill + self.decode

    @property
    def colocated(self) -> bool:
        return self.prefill == 0

    @property
    def name(self) -> str:
        name = f"{self.decode} colocated" if self.colocated else f"{self.prefill} prefill + {self.decode} decode"
        return name if self.budget is None else f"{name}, {self.budget:,}-token steps"


def layouts(gpus) -> tuple[Layout, ...]:
    """``gpus`` GPUs colocated, then every split of them into prefill and decode GPUs, fewest prefill first."""
    gpus = simulator._whole("gpus", gpus, 2)
    return (Layout(0, gpus),) + tuple(Layout(p, gpus - p) for p in range(1, gpus))


@lru_cache(maxsize=16)
def server(budget=None) -> simulator.Server:
    """Every GPU's server, at the engine's default token budget a step or at ``budget`` tokens. vLLM refuses a
    budget below its most users a step (``max_num_seqs must be at most max_num_batched_tokens``), so a small
    budget lowers that too."""
    engine = engines.engine(*load.ENGINE)
    if budget is None:
        return engine.server(load.MODEL, load.GPU_)
    budget = simulator._whole("budget", budget, 1)
    most = engine.server(load.MODEL, load.GPU_).max_running
    return engine.server(load.MODEL, load.GPU_, max_num_batched_tokens=budget, max_num_seqs=min(most, budget))


def _lengths(lengths) -> LengthDistribution:
    if lengths not in LENGTHS:
        raise ValueError(f"lengths must be one of {sorted(LENGTHS)}, got {lengths!r}")
    return LENGTHS[lengths]


@lru_cache(maxsize=256)
def run(layout: Layout, rate, lengths="long", link="nvlink4", count=REQUESTS, seed=0) -> cluster.ClusterSimulation:
    """``count`` requests of ``lengths`` ("long" or "sharegpt") arriving at ``rate`` a second, served by ``layout``
    (each cache over ``link``, disaggregated)."""
    _check.instance("layout", layout, Layout)
    rate = float(_check.single("rate", _check.number("rate", rate, above=0)))
    work = poisson_workload(rate, count, _lengths(lengths), seed, model=load.MODEL)
    each = server(layout.budget)
    if layout.colocated:
        return cluster.simulate_cluster(each, work, layout.decode)
    return cluster.simulate_disaggregated(each, each, work, layout.prefill, layout.decode, link)


def goodput(layout: Layout, ttft, tpot, lengths="long", link="nvlink4", count=REQUESTS, seed=0) -> float:
    """The most requests a second ``layout`` takes while 90 % of them see a first token within ``ttft`` seconds
    and a mean time per later token within ``tpot`` (the rates ``simulator.goodput`` tries, halved ``STEPS`` times)."""
    _check.instance("layout", layout, Layout)
    ttft, tpot = _check.positive("ttft", ttft), _check.positive("tpot", tpot)
    _lengths(lengths)

    def search():
        found, _ = highest_rate(lambda rate: (run(layout, rate, lengths, link, count, seed).attainment(ttft, tpot)
                                              >= ATTAINMENT, None), STEPS)
        return {"rate": np.array(found)}

    kept = kept_arrays("goodput", ("disaggregation", server(layout.budget), layout, ttft, tpot, lengths, link, count, seed, STEPS),
                       search)
    return float(kept["rate"])


def tuned(gpus, ttft, tpot, lengths="long") -> tuple[Layout, float]:
    """``gpus`` colocated GPUs at the budget of ``BUDGETS`` under which their goodput at ``ttft`` and ``tpot``
    is highest (the smallest on a tie), and that goodput: the colocated pool an operator would run."""
    gpus = simulator._whole("gpus", gpus, 1)
    found = {budget: goodput(Layout(0, gpus, budget), ttft, tpot, lengths) for budget in BUDGETS}
    best = max(BUDGETS, key=lambda budget: (found[budget], -budget))
    return Layout(0, gpus, best), found[best]


def mean_lengths(lengths="long", count=REQUESTS, seed=0) -> tuple[float, float]:
    """(Mean prompt, mean reply) in tokens of the requests ``run`` serves: ``lengths``' draws, each cut to fit
    the model's context window, so below the distribution's nominal means where its tail is long. The same at
    every rate (the lengths' draw does not depend on the arrivals)."""
    work = poisson_workload(1.0, count, _lengths(lengths), seed, model=load.MODEL)
    return float(np.mean(work.prompt)), float(np.mean(work.reply))


def decode_cost(cached=None) -> tuple[float, float]:
    """(Seconds of a decode GPU's step of next tokens before any user, seconds each user adds), each user holding
    ``cached`` tokens (by default the runs' mean prompt of long prompts and half their mean reply, ``mean_lengths``).
    The step's time is the profile's (``simulator.clock.StepClock``): its fixed cost and the weights' read, then
    each user's attention and the processor's time for it, a straight line in the users."""
    from .simulator.clock import StepClock
    if cached is None:
        prompt, reply = mean_lengths("long")
        cached = round(prompt + reply / 2)
    else:
        cached = simulator._whole("cached", cached, 0)
    clock = StepClock(server())
    one, two = float(clock.time([cached])), float(clock.time([cached] * 2))
    return one - (two - one), two - one


def decode_users(layout: Layout, rate, lengths="long", link="nvlink4") -> float:
    """The median users in a decode GPU's step when ``layout`` (a split) serves ``rate`` requests a second."""
    _check.instance("layout", layout, Layout)
    if layout.colocated:
        raise ValueError(f"layout must split prefill from decode, got {layout.name!r}")
    found = run(layout, rate, lengths, link)
    return float(np.median(found.step_decodes[found.step_decodes > 0]))


def best_split(prefill_rate, decode_rate, gpus) -> tuple[int, float]:
    """The prefill GPUs of ``gpus`` that serve most, and the requests a second they serve: each prefill GPU
    reads ``prefill_rate`` prompts a second, each decode GPU finishes ``decode_rate`` replies a second, and the
    slower stage sets the pool's rate, min(p × prefill_rate, (gpus − p) × decode_rate). The fewest prefill
    GPUs on a tie."""
    prefill_rate = _check.positive("prefill_rate", prefill_rate)
    decode_rate = _check.positive("decode_rate", decode_rate)
    gpus = simulator._whole("gpus", gpus, 2)
    rates = {p: min(p * prefill_rate, (gpus - p) * decode_rate) for p in range(1, gpus)}
    best = max(rates, key=lambda p: (rates[p], -p))
    return best, rates[best]
