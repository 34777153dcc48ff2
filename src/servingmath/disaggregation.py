"""Lesson 4 Part 4's questions: prefill and decode on GPUs of their own, against the same GPUs each doing both.

A ``Layout`` says how a pool's GPUs serve: ``prefill`` GPUs that only read prompts and ``decode`` GPUs that only
write replies, each cache crossing a link between them (``simulator.simulate_disaggregated``), or, with
``prefill`` 0, ``decode`` copies that do both behind one queue (colocated, ``simulator.simulate_cluster``). Every
GPU runs the same server: vLLM 0.9.2's profile (``load.ENGINE``) of Llama 3 8B on an H100 SXM, with its
default token budget a step (8,192 under ``vllm serve`` on this card) or the layout's ``budget``. ``goodput``
finds a layout's as ``simulator.goodput`` finds one server's, and keeps it (``_kept``); each rate it tries is read
through ``attainment``, which keeps a run's requests' latencies. ``transfers`` gives a split's caches' trips without a
run. ``tuned`` tries the colocated pool at each of ``BUDGETS`` and keeps the best, the baseline a split must beat;
``decode_cost`` is a decode GPU's step of next tokens alone; ``best_split`` is the arithmetic of sizing the two
stages from each GPU's rate.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

import numpy as np
import yaml

from . import _check, engines, load, simulator
from ._kept import kept_arrays
from .hardware import CATALOG, GPU
from .models import Model
from .simulator import cluster
from .simulator.goodput import ATTAINMENT, highest_rate, kept_latencies
from .simulator.results import attainment_of
from .workload import SHAREGPT, LengthDistribution, Workload, poisson_arrivals, poisson_workload, workload

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
def server(budget=None, user_time=None, stream_time=None) -> simulator.Server:
    """Every GPU's server, at the engine's default token budget a step or at ``budget`` tokens. vLLM refuses a
    budget below its most users a step (``max_num_seqs must be at most max_num_batched_tokens``), so a small
    budget lowers that too. ``user_time`` (the processor's seconds a user in a step) and ``stream_time`` (the API
    server's seconds a token streamed), where not the profile's: to see what a result rests on."""
    engine = engines.engine(*load.ENGINE)
    if budget is None:
        found = engine.server(load.MODEL, load.GPU_)
    else:
        budget = simulator._whole("budget", budget, 1)
        most = engine.server(load.MODEL, load.GPU_).max_running
        found = engine.server(load.MODEL, load.GPU_, max_num_batched_tokens=budget, max_num_seqs=min(most, budget))
    costs = {name: _check.finite(name, value, minimum=0)
             for name, value in (("user_time", user_time), ("stream_time", stream_time)) if value is not None}
    return dataclasses.replace(found, **costs) if costs else found


def _lengths(lengths) -> LengthDistribution:
    if lengths not in LENGTHS:
        raise ValueError(f"lengths must be one of {sorted(LENGTHS)}, got {lengths!r}")
    return LENGTHS[lengths]


@lru_cache(maxsize=256)
def run(layout: Layout, rate, lengths="long", link="nvlink4", count=REQUESTS, seed=0,
        user_time=None, stream_time=None) -> cluster.ClusterSimulation:
    """``count`` requests of ``lengths`` ("long" or "sharegpt") arriving at ``rate`` a second, served by ``layout``
    (each cache over ``link``, disaggregated); ``user_time`` and ``stream_time`` as ``server`` takes them."""
    _check.instance("layout", layout, Layout)
    rate = float(_check.single("rate", _check.number("rate", rate, above=0)))
    work = _work(rate, lengths, count, seed)
    each = server(layout.budget, user_time, stream_time)
    if layout.colocated:
        return cluster.simulate_cluster(each, work, layout.decode)
    return cluster.simulate_disaggregated(each, each, work, layout.prefill, layout.decode, link)


@lru_cache(maxsize=1024)
def _latencies(layout: Layout, rate: float, lengths, link, count, seed, user_time, stream_time):
    """``run``'s requests' latencies (``simulator.goodput.kept_latencies``), kept on disk for the other processes
    that run the same layouts (the page, its explorer's table, the tests) and in the process, so that searches and
    explorer settings that meet again need not read the file again."""
    return kept_latencies(("disaggregation", server(layout.budget, user_time, stream_time), layout, rate, lengths, link,
                           count, seed),
                          lambda: run(layout, rate, lengths, link, count, seed, user_time, stream_time))


def attainment(layout: Layout, rate, ttft=None, tpot=None, lengths="long", link="nvlink4", count=REQUESTS, seed=0,
               user_time=None, stream_time=None) -> float:
    """``run(layout, rate, ...).attainment(ttft, tpot)``: the share of the requests that see a first token within
    ``ttft`` seconds and a mean time per later token within ``tpot`` (either may be None: not asked), from the run's
    kept latencies."""
    _check.instance("layout", layout, Layout)
    rate = float(_check.single("rate", _check.number("rate", rate, above=0)))
    ttft = None if ttft is None else _check.positive("ttft", ttft)
    tpot = None if tpot is None else _check.positive("tpot", tpot)
    _lengths(lengths)
    link = None if layout.colocated else link      # a colocated pool sends no cache: one run serves every link
    return attainment_of(*_latencies(layout, rate, lengths, link, count, seed, user_time, stream_time), ttft, tpot)


def transfers(lengths="long", link="nvlink4", count=REQUESTS, seed=0) -> np.ndarray:
    """Each request's cache's trip from a prefill GPU to a decode GPU over ``link`` in ``run``'s runs of a split
    (their ``transfer``), without a run: the same for every split, budget and rate (the prompts' draw does not depend
    on the arrivals)."""
    return np.asarray(cluster.transfer_time(server(), _work(1.0, lengths, count, seed).prompt, link), dtype=float)


def _work(rate, lengths, count, seed) -> Workload:
    """The requests ``run`` serves at ``rate``."""
    return poisson_workload(rate, count, _lengths(lengths), seed, model=load.MODEL)


def goodput(layout: Layout, ttft, tpot, lengths="long", link="nvlink4", count=REQUESTS, seed=0,
            user_time=None, stream_time=None) -> float:
    """The most requests a second ``layout`` takes while 90 % of them see a first token within ``ttft`` seconds
    and a mean time per later token within ``tpot`` (the rates ``simulator.goodput`` tries, halved ``STEPS`` times);
    ``user_time`` and ``stream_time`` as ``server`` takes them."""
    _check.instance("layout", layout, Layout)
    ttft, tpot = _check.positive("ttft", ttft), _check.positive("tpot", tpot)
    _lengths(lengths)

    def search():
        found, _ = highest_rate(lambda rate: (attainment(layout, rate, ttft, tpot, lengths, link, count, seed, user_time,
                                                         stream_time) >= ATTAINMENT, None), STEPS)
        return {"rate": np.array(found)}

    kept = kept_arrays("goodput", ("disaggregation", server(layout.budget, user_time, stream_time), layout, ttft, tpot, lengths, link,
                                   count, seed, STEPS),
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
    work = _work(1.0, lengths, count, seed)
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


# -- DistServe's first example, replayed ------------------------------------------------------------------------
PUBLISHED = Path(__file__).with_name("data") / "disaggregation_runs.yaml"
# Requests each rate of the example's searches sends: at ten a second, well over a minute and a half of traffic.
EXAMPLE_REQUESTS = 1000
# Prefill GPUs feeding the one decode GPU whose rate alone is asked: enough that prompts never wait
# (each reads prompts faster than the decode GPU finishes them, at every profile tried).
PLENTY = 8
# The engine profiles the example is replayed with: vLLM's last engine that ran each prompt whole in steps
# of its own (V0, as the vLLM the paper compared with did), and the profile lesson 4 runs (V1, prompts in chunks).
EXAMPLE_ENGINES = (("vllm", "0.6"), ("vllm", load.ENGINE[1]))
STAGES = ("colocated", "prefill", "decode", "split")


@dataclass(frozen=True)
class Published:
    """DistServe's first example (``data/disaggregation_runs.yaml``): ``figures`` are requests a second per
    GPU as published, by stage (``STAGES``); the rest are the run's conditions."""

    model: Model
    model_as_published: str
    paper_model_ffn: int
    gpu: GPU
    prompt: int
    reply: int
    ttft: float
    tpot: float
    figures: Mapping[str, float]
    split_total: float
    baseline: str
    sources: Mapping[str, Mapping[str, str]]
    paper_quote: str
    blog_quote: str
    note: str


def published(path=PUBLISHED) -> Published:
    """The example as the data file states it, checked: each figure in the paper's quote, the conditions in the
    blog's, the stand-in's config one the catalog's reader takes."""
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    row = data["example"]
    for stage in STAGES:
        if f" {row['figures'][stage]} r" not in row["paper_quote"]:
            raise ValueError(f"figures.{stage} must appear in paper_quote as published, got {row['figures'][stage]!r}")
    for said in (f"inputs of length {row['prompt_tokens']}", f"output length {row['reply_tokens']}",
                 f"TTFT as {row['ttft']} second", f"TPOT as {row['tpot']} second", f"{row['arrivals'].title()} arrival"):
        if said not in row["blog_quote"]:
            raise ValueError(f"blog_quote must state {said!r}, as the example's conditions do")
    return Published(
        model=Model.from_hf_config(row["stand_in"]), model_as_published=row["model_as_published"],
        paper_model_ffn=_check.count("paper_model_ffn_dim", row["paper_model_ffn_dim"]),
        gpu=CATALOG[row["gpu"]], prompt=_check.count("prompt_tokens", row["prompt_tokens"]),
        reply=_check.count("reply_tokens", row["reply_tokens"], minimum=2),
        ttft=_check.positive("ttft", row["ttft"]), tpot=_check.positive("tpot", row["tpot"]),
        figures=MappingProxyType({stage: float(row["figures"][stage]) for stage in STAGES}),
        split_total=float(row["split_total"]), baseline=row["baseline"],
        sources=MappingProxyType({key: MappingProxyType(dict(value)) for key, value in data["sources"].items()}),
        paper_quote=row["paper_quote"], blog_quote=row["blog_quote"], note=row["note"])


def feed_forward_excess(example: Published) -> float:
    """How much larger the stand-in's feed-forward block is than OPT-13B's, a layer: gated (three matrices)
    against plain (two, ``paper_model_ffn`` wide), at the same width of the model."""
    _check.instance("example", example, Published)
    stand_in = example.model
    return stand_in._ffn_parameters(stand_in.ffn) / (2 * stand_in.hidden * example.paper_model_ffn) - 1


def _example_work(example: Published, rate, reply=None) -> Workload:
    """``EXAMPLE_REQUESTS`` requests of the example's fixed lengths (``reply`` tokens if given) at ``rate`` a second."""
    arrival = poisson_arrivals(rate, EXAMPLE_REQUESTS, 0)
    count = len(arrival)
    return workload(arrival, np.full(count, example.prompt), np.full(count, reply or example.reply),
                    f"{example.prompt}/{reply or example.reply} tokens, {rate:g} a second")


def _p90_met(found, ttft=None, tpot=None) -> bool:
    """90 % of requests within each target asked, as the example reads its P90 lines (each target on its own)."""
    return all(found.attainment(**{name: target}) >= ATTAINMENT
               for name, target in (("ttft", ttft), ("tpot", tpot)) if target is not None)


def example_goodput(example: Published, engine_version, stage, overheads_of=None) -> float:
    """Requests a second per GPU that ``stage`` of the example meets its targets at (P90 each), on GPUs running
    ``engine_version``'s profile (an (engine, version) pair): ``colocated``, one GPU doing both; ``prefill``, one
    GPU reading prompts (each to its first token, the TTFT target alone); ``decode``, one GPU writing replies
    fed by ``PLENTY`` prefill GPUs (the TPOT target alone); ``split``, two prefill GPUs and one decode GPU
    (both targets), divided by its three GPUs. Caches cross the card's fastest link. With ``overheads_of`` (an
    (engine, version) pair), ``engine_version`` schedules as it does but pays that profile's overheads."""
    _check.instance("example", example, Published)
    if stage not in STAGES:
        raise ValueError(f"stage must be one of {STAGES}, got {stage!r}")
    engine = engines.engine(*engine_version)
    if overheads_of is not None:
        engine = engine.with_overheads(engines.engine(*overheads_of).overheads)
    each = engine.server(example.model, example.gpu)

    def meets(rate):
        if stage == "colocated":
            return _p90_met(cluster.simulate_cluster(each, _example_work(example, rate), 1), example.ttft, example.tpot)
        if stage == "prefill":
            return _p90_met(cluster.simulate_cluster(each, _example_work(example, rate, reply=1), 1), ttft=example.ttft)
        prefills, targets = (PLENTY, {"tpot": example.tpot}) if stage == "decode" else (
            2, {"ttft": example.ttft, "tpot": example.tpot})
        return _p90_met(cluster.simulate_disaggregated(each, each, _example_work(example, rate), prefills, 1), **targets)

    found, _ = highest_rate(lambda rate: (meets(rate), None), STEPS)
    return found / (3 if stage == "split" else 1)
