"""Lesson 4 Part 4's questions: prefill and decode on GPUs of their own, against the same GPUs each doing both.

A ``Layout`` says how a pool's GPUs serve: ``prefill`` GPUs that only read prompts and ``decode`` GPUs that only
write replies, each cache crossing a link between them (``simulator.simulate_disaggregated``), or, with
``prefill`` 0, ``decode`` copies that do both behind one queue (colocated, ``simulator.simulate_cluster``). Every
GPU runs the same server: vLLM 0.9.2's profile (``load.ENGINE``) of Llama 3 8B on an H100 SXM. ``goodput`` finds
a layout's as ``simulator.goodput`` finds one server's, and keeps it (``_kept``); ``best_split`` is the
arithmetic of sizing the two stages from each GPU's rate.
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


@dataclass(frozen=True)
class Layout:
    """``prefill`` GPUs reading prompts and ``decode`` GPUs writing replies; ``prefill`` 0: ``decode`` GPUs doing both."""

    prefill: int
    decode: int

    def __post_init__(self):
        simulator._whole("prefill", self.prefill, 0)
        simulator._whole("decode", self.decode, 1)

    @property
    def gpus(self) -> int:
        return self.prefill + self.decode

    @property
    def colocated(self) -> bool:
        return self.prefill == 0

    @property
    def name(self) -> str:
        return f"{self.decode} colocated" if self.colocated else f"{self.prefill} prefill + {self.decode} decode"


def layouts(gpus) -> tuple[Layout, ...]:
    """``gpus`` GPUs colocated, then every split of them into prefill and decode GPUs, fewest prefill first."""
    gpus = simulator._whole("gpus", gpus, 2)
    return (Layout(0, gpus),) + tuple(Layout(p, gpus - p) for p in range(1, gpus))


@lru_cache(maxsize=1)
def server() -> simulator.Server:
    return engines.engine(*load.ENGINE).server(load.MODEL, load.GPU_)


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
    if layout.colocated:
        return cluster.simulate_cluster(server(), work, layout.decode)
    return cluster.simulate_disaggregated(server(), server(), work, layout.prefill, layout.decode, link)


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

    kept = kept_arrays("goodput", ("disaggregation", server(), layout, ttft, tpot, lengths, link, count, seed, STEPS),
                       search)
    return float(kept["rate"])


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
