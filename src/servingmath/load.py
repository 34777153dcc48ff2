"""Lesson 3's questions, asked of the simulator: what each part and the plate show.

Each function takes the settings a reader can move (a request rate, a token budget, a prompt's
length...) and returns the figures a page, an explorer or a problem shows for them. The
arithmetic is the simulator's (``simulator``), itself the package's pass model; nothing here
times a pass of its own. Results are kept, so an explorer moved back to a setting it has shown
answers at once.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import _check, engines, simulator
from ._kept import kept_arrays
from .hardware import GPU, H100_SXM, links
from .models import LLAMA_3_8B, Model
from .roofline import LESSON, PLATE, Assumptions
from .simulator import Server, simulate
from .workload import SHAREGPT, LengthDistribution, poisson_workload, workload

# The lesson's running example: Llama 3 8B on an H100 SXM, under the plate's assumptions.
MODEL, GPU_ = LLAMA_3_8B, H100_SXM
# Requests a run simulates unless told otherwise: enough for a p99 to rest on 20 requests.
REQUESTS = 2000


def _rate(rate):
    return float(_check.single("rate", _check.number("rate", rate, above=0)))


@dataclass(frozen=True)
class RunFigures:
    """A run in the figures the lesson reads off it."""

    policy: str
    memory: str
    rate: float
    tokens_per_second: float
    ttft_p50: float
    ttft_p99: float
    tbt_p50: float
    tbt_p99: float
    preemptions: int
    memory_used_share: float


def figures(run: simulator.Simulation, rate) -> RunFigures:
    summary = run.summary()
    return RunFigures(run.server.policy, run.server.memory, float(rate), summary["tokens_per_second"],
                      summary["ttft_p50"], summary["ttft_p99"], summary["tbt_p50"], summary["tbt_p99"],
                      summary["preemptions"], summary["memory_used_share"])


@lru_cache(maxsize=512)
def _run(model: Model, gpu: GPU, assumptions: Assumptions, policy, memory, rate, count, seed, step_tokens,
         lengths: LengthDistribution, max_reply_tokens):
    server = Server(model, gpu, policy=policy, memory=memory, assumptions=assumptions, step_tokens=step_tokens,
                    max_reply_tokens=max_reply_tokens)
    work = poisson_workload(rate, count, lengths, seed, model=model)
    arrays = kept_arrays("run", (server, rate, count, seed, lengths), lambda: simulator.arrays_of(simulate(server, work)))
    return simulator.Simulation(server, work, **arrays)


def run(rate, policy="continuous", memory="paged", model: Model = MODEL, gpu: GPU = GPU_,
        assumptions: Assumptions = PLATE, count=REQUESTS, seed=0, step_tokens=None, lengths=SHAREGPT,
        max_reply_tokens=None) -> simulator.Simulation:
    """``count`` ShareGPT-like requests at ``rate`` a second through one server (kept once run)."""
    rate = _rate(rate)
    count = simulator._whole("count", count, 1)
    return _run(model, gpu, assumptions, policy, memory, rate, count, seed, step_tokens, lengths, max_reply_tokens)


# -- Part 1: paged memory ------------------------------------------------------------------------

# Kwon et al. 2023 (PagedAttention), figure 2, as the paper states it: of the memory each system set
# aside for the KV cache "during the experiment in §6.2" (basic sampling: OPT-13B, 66B and 175B on
# ShareGPT and Alpaca; the figure names no one run), the share holding tokens' keys and values
# ("token states"). The Orca rows are the authors' own rebuild of Orca, which is not public:
# Orca (Max) reserves the model's 2,048 tokens for every request, Orca (Pow2) up to twice the
# reply, Orca (Oracle) exactly the reply; vLLM pages blocks of 16.
KWON_FIGURE_2 = {"Orca (Max)": 0.204, "Orca (Pow2)": 0.268, "Orca (Oracle)": 0.382, "vLLM": 0.963}
KWON_FIGURE_2_RESERVATION = 2048


@dataclass(frozen=True)
class MemoryComparison:
    """The same traffic held two ways: the share of held memory that holds tokens, and users that fit."""

    rate: float
    paged_share: float
    reserved_share: float
    paged_users: int
    reserved_users: int
    paged_peak_users: int
    reserved_peak_users: int


def paged_against_reserved(rate=10, model: Model = MODEL, gpu: GPU = GPU_, count=REQUESTS, seed=0,
                           max_reply_tokens=None) -> MemoryComparison:
    """Part 1: ShareGPT-like traffic at ``rate`` a second under paged and reserved memory. ``users``:
    how many of the run's requests, each at its longest, fit at once either way; ``peak_users``: the
    most the simulated server ever ran at once."""
    rate = _rate(rate)
    paged = run(rate, "continuous", "paged", model, gpu, PLATE, count, seed)
    reserved = run(rate, "continuous", "reserved", model, gpu, PLATE, count, seed, max_reply_tokens=max_reply_tokens)
    work = paged.workload
    return MemoryComparison(
        rate,
        paged.memory_used_share, reserved.memory_used_share,
        simulator.users_that_fit(paged.server, work.prompt, work.reply),
        simulator.users_that_fit(reserved.server, work.prompt, work.reply),
        _peak_running(paged), _peak_running(reserved),
    )


def _peak_running(run_: simulator.Simulation) -> int:
    """The most users writing their reply in any one step of the run."""
    return int(run_.step_decodes.max()) if run_.steps else 0


# -- Part 2: continuous batching ------------------------------------------------------------------

def policies_at(rate, model: Model = MODEL, gpu: GPU = GPU_, count=REQUESTS, seed=0, step_tokens=None):
    """Part 2 and the plate: the same arrivals under static, continuous and chunked batching."""
    rate = _rate(rate)
    return {policy: figures(run(rate, policy, "paged", model, gpu, PLATE, count, seed,
                                step_tokens if policy == "chunked" else None), rate)
            for policy in simulator.POLICIES}


# -- Part 3: prefill meets decode -----------------------------------------------------------------

@dataclass(frozen=True)
class Stall:
    """A user decoding when a long prompt arrives: its gaps between tokens, whole and chunked."""

    prompt_tokens: int
    step_tokens: int
    usual_gap: float
    whole_gap: float
    chunked_gap: float
    whole_ttft: float
    chunked_ttft: float


def prefill_stall(prompt_tokens=4000, step_tokens=512, model: Model = MODEL, gpu: GPU = GPU_,
                  assumptions: Assumptions = PLATE) -> Stall:
    """Part 3: one user mid-reply; a prompt of ``prompt_tokens`` arrives. Its prefill in one step
    stalls the user's next token for that step; chunked at ``step_tokens`` a step, the user's
    longest gap is one chunk's step."""
    prompt_tokens = simulator._whole("prompt_tokens", prompt_tokens, 1)
    step_tokens = simulator._whole("step_tokens", step_tokens, 2)
    reply = 400
    work = workload([0.0, 0.5], [200, prompt_tokens], [reply, 2])
    whole = simulate(Server(model, gpu, "continuous", assumptions=assumptions), work)
    chunked = simulate(Server(model, gpu, "chunked", assumptions=assumptions, step_tokens=step_tokens), work)
    first = whole.request(0)
    return Stall(prompt_tokens, step_tokens, float(np.median(first.gaps)), float(first.gaps.max()),
                 float(chunked.request(0).gaps.max()), float(whole.ttft[1]), float(chunked.ttft[1]))


@dataclass(frozen=True)
class Preemption:
    """Traffic that outgrows the memory: what each way of making room costs."""

    blocks: int
    recompute: RunFigures
    swap: RunFigures
    roomy: RunFigures


# Swapping copies over the card's PCIe link to the host (hardware.GPU_LINKS); the course takes half of its
# speed each way as reached by the engine's many block-sized copies: an assumption, stated on the page.
SWAP_REACHED = 0.5


def swap_link(gpu: GPU = GPU_):
    """The PCIe link between ``gpu`` and its host, from the catalog (``hardware.links``)."""
    found = [found for found in links(gpu) if found.kind == "pcie"]
    if not found:
        raise ValueError(f"gpu {gpu.name!r} has no PCIe link to a host in the catalog, so it cannot swap")
    return found[0]


SWAP_BANDWIDTH = swap_link().bandwidth * SWAP_REACHED      # bytes a second each way on the lesson's H100
# Kwon et al. 2023, section 7.3 and figure 19: swapping's many small copies cost most with small blocks;
# "for medium block sizes from 16 to 64, the two methods exhibit comparable end-to-end performance".
KWON_SWAP_EVEN_BLOCKS = (16, 64)


def preemption(rate=10, blocks=800, count=REQUESTS, seed=0, model: Model = MODEL, gpu: GPU = GPU_) -> Preemption:
    """Part 3: the GPU's cache cut to ``blocks`` blocks, so Part 2's traffic (the same ``count`` requests
    at ``rate`` a second, served under continuous batching on paged memory) runs out of memory;
    preemption by recompute and by swap, against the full GPU (``roomy``: Part 2's run itself)."""
    rate = _rate(rate)
    blocks = simulator._whole("blocks", blocks, 1)
    count = simulator._whole("count", count, 1)
    block = Server(model, gpu).block_bytes
    weights = model.parameters * 2
    small = gpu.with_changes(memory_bytes=(weights + (blocks + 0.5) * block) / (1 - simulator.RESERVE))
    work = poisson_workload(rate, count, SHAREGPT, seed, model=model)
    out = {}
    for name, server in (("recompute", Server(model, small)),
                         ("swap", Server(model, small, preemption="swap",
                                         swap_bandwidth=swap_link(gpu).bandwidth * SWAP_REACHED))):
        out[name] = figures(simulate(server, work), rate)
    out["roomy"] = figures(run(rate, "continuous", "paged", model, gpu, PLATE, count, seed), rate)
    return Preemption(blocks, out["recompute"], out["swap"], out["roomy"])


# -- Part 4 and the plate: load, latency and price -----------------------------------------------

PLATE_RATES = (1, 2, 4, 6, 8, 10, 14, 18, 24, 30, 40, 50, 60, 80)


@dataclass(frozen=True)
class LoadCurve:
    """One policy's run at each rate: the throughput and the latencies the plate draws."""

    policy: str
    rates: np.ndarray
    tokens_per_second: np.ndarray
    ttft_p50: np.ndarray
    ttft_p99: np.ndarray
    tbt_p50: np.ndarray
    tbt_p99: np.ndarray


def load_curve(policy="continuous", rates=PLATE_RATES, model: Model = MODEL, gpu: GPU = GPU_,
               count=REQUESTS, seed=0, step_tokens=None) -> LoadCurve:
    """Part 4 and plate XXIII.4: ``policy`` at each of ``rates`` requests a second."""
    simulator._choice("policy", policy, simulator.POLICIES)
    rates = np.atleast_1d(_check.number("rates", rates, above=0)).astype(float)
    rows = [figures(run(r, policy, "paged", model, gpu, PLATE, count, seed, step_tokens), r) for r in rates]
    pick = lambda name: np.array([getattr(row, name) for row in rows])  # noqa: E731
    return LoadCurve(policy, rates, pick("tokens_per_second"), pick("ttft_p50"), pick("ttft_p99"),
                     pick("tbt_p50"), pick("tbt_p99"))


@dataclass(frozen=True)
class Capacity:
    """How much traffic one GPU takes at a latency target, and what a token costs there."""

    goodput: simulator.Goodput
    rate_asked: float
    gpus: int
    cost_per_million: float
    ideal_cost_per_million: float
    ideal_users: int

    @property
    def times_ideal(self):
        return self.cost_per_million / self.ideal_cost_per_million


# Requests a goodput search runs at each rate it tries (``simulator.GOODPUT_REQUESTS``).
GOODPUT_REQUESTS = simulator.GOODPUT_REQUESTS


def _search(server: Server, ttft, tpot, count, seed, engine_=None) -> simulator.Goodput:
    """The goodput search on ``server``, kept under its arguments (and the engine that made the server, if any)."""
    def search():   # the rate found, and the run there (none where no rate meets the targets)
        found = simulator.goodput(server, ttft, tpot, count=count, seed=seed, steps=10)
        run = simulator.arrays_of(found.run) if found.run is not None else {}
        return {"rate": np.array(found.rate), **{f"run.{name}": array for name, array in run.items()}}

    arguments = (server, ttft, tpot, count, seed) if engine_ is None else (engine_, server, ttft, tpot, count, seed)
    kept = kept_arrays("goodput", arguments, search)
    rate = float(kept["rate"])
    run = simulator.Simulation(server, simulator.poisson_requests(server, rate, count, seed=seed),
                               **{name[4:]: array for name, array in kept.items() if name.startswith("run.")}
                               ) if rate > 0 else None
    return simulator.goodput_at(server, rate, ttft, tpot, count, seed=seed, run=run)


@lru_cache(maxsize=64)
def _goodput(model, gpu, policy, ttft, tpot, count, seed, max_running=simulator.MAX_RUNNING, step_tokens=None):
    server = Server(model, gpu, policy=policy, max_running=max_running, step_tokens=step_tokens)
    return _search(server, ttft, tpot, count, seed)


def _priced(found: simulator.Goodput, rate_asked, model, gpu, ideal_users) -> Capacity:
    from .serving import batching
    ideal = batching(model, gpu, ideal_users, assumptions=LESSON)
    return Capacity(found, rate_asked, int(found.gpus_for(rate_asked)), float(found.cost_per_million_tokens()),
                    float(ideal.cost_per_million_tokens), ideal_users)


def capacity(rate_asked=100, ttft=0.5, tpot=0.05, policy="continuous", model: Model = MODEL, gpu: GPU = GPU_,
             count=GOODPUT_REQUESTS, seed=0, ideal_users=32, max_running=simulator.MAX_RUNNING,
             step_tokens=None) -> Capacity:
    """Part 4: the goodput of one GPU at the targets (DistServe's: 90 % of requests within both),
    the GPUs ``rate_asked`` requests a second need, and the price of a million reply tokens there
    against lesson 1's ideal (``ideal_users`` sharing each step at the spec sheet's peaks).
    ``max_running`` caps the users a step (vLLM V0's 256 by default, ``engines``) and ``step_tokens`` the
    tokens a step (``simulator.Server``'s default for the policy unless given)."""
    rate_asked = _rate(rate_asked)
    max_running = simulator._whole("max_running", max_running, 1)
    found = _goodput(model, gpu, policy, _check.positive("ttft", ttft), _check.positive("tpot", tpot), count, seed,
                     max_running, step_tokens)
    return _priced(found, rate_asked, model, gpu, ideal_users)


def capacity_as(engine="vllm", version="V1", rate_asked=100, ttft=0.5, tpot=0.05, gpu: GPU = GPU_,
                model: Model = MODEL, count=GOODPUT_REQUESTS, seed=0) -> Capacity:
    """``capacity`` with an engine version's caps from ``engines.defaults`` (under `vllm serve` on ``gpu``):
    its users a step and, where it chunks prompts, its token budget a step. Only those caps change; the
    step is still timed by the pass model alone."""
    found = engines.defaults(engine, version, gpu=gpu)
    if found.max_running is None or found.step_tokens is None:
        raise ValueError(f"engine {engine!r} at {version!r} states no cap of users or tokens a step the "
                         f"simulator can take, got {found.max_running!r} and {found.step_tokens!r}")
    policy = "chunked" if found.chunked_prefill and found.mixed_steps else "continuous"
    return capacity(rate_asked, ttft, tpot, policy, model, gpu, count, seed, max_running=found.max_running,
                    step_tokens=found.step_tokens if policy == "chunked" else None)


# -- A named engine as it runs: its defaults and fitted overheads (``engines``) ----------------------

# The engine Part 4 and the plate price on: vLLM at a release inside the published runs the overheads
# are fitted on (``data/serving_runs.yaml``), under `vllm serve`; on an H100 its defaults are V1's caps.
ENGINE = ("vllm", "0.9.2")


def _engine(engine_):
    if not isinstance(engine_, engines.Engine):
        raise TypeError(f"engine_ must be an engine profile from servingmath.engines.engine(name, version), "
                        f"got {engine_!r}")
    return engine_


def _flags(flags: dict) -> tuple:
    try:
        hash(tuple(flags.values()))
    except TypeError:
        raise TypeError(f"flags must be plain values (numbers, strings, True or False), got {flags!r}") from None
    return tuple(sorted(flags.items()))


@lru_cache(maxsize=64)
def _engine_run(engine_, flags, model, gpu, rate, count, seed, lengths):
    server = engine_.server(model, gpu, **dict(flags))
    work = simulator.poisson_requests(server, rate, count, lengths, seed)
    arrays = kept_arrays("run", (engine_, server, rate, count, seed, lengths),
                         lambda: simulator.arrays_of(simulate(server, work)))
    return simulator.Simulation(server, work, **arrays)


def engine_run(engine_, rate, model: Model = MODEL, gpu: GPU = GPU_, count=REQUESTS, seed=0, lengths=SHAREGPT,
               **flags) -> simulator.Simulation:
    """``run`` on the server ``engine_.server(model, gpu, **flags)`` gives: ``engine_`` is a profile from
    ``engines.engine(name, version)``, with that version's defaults and fitted overheads, and ``flags``
    the engine's own (``engines.engine("ideal")`` takes ``simulator.Server``'s fields instead). The same
    seed gives the same requests as ``run``'s."""
    engine_ = _engine(engine_)
    rate = _rate(rate)
    count = simulator._whole("count", count, 1)
    return _engine_run(engine_, _flags(flags), model, gpu, rate, count, seed, lengths)


@lru_cache(maxsize=16)
def _engine_goodput(engine_, flags, model, gpu, ttft, tpot, count, seed):
    return _search(engine_.server(model, gpu, **dict(flags)), ttft, tpot, count, seed, engine_)


def engine_capacity(engine_, rate_asked=100, ttft=0.5, tpot=0.05, model: Model = MODEL, gpu: GPU = GPU_,
                    count=GOODPUT_REQUESTS, seed=0, ideal_users=32, **flags) -> Capacity:
    """``capacity`` on the server ``engine_.server(model, gpu, **flags)`` gives (``engine_`` from
    ``engines.engine(name, version)``): the goodput, GPUs and price a reader could reproduce on that
    engine, as far as its fitted overheads predict it (``calibration`` says how far)."""
    engine_ = _engine(engine_)
    rate_asked = _rate(rate_asked)
    found = _engine_goodput(engine_, _flags(flags), model, gpu, _check.positive("ttft", ttft),
                            _check.positive("tpot", tpot), simulator._whole("count", count, 1), seed)
    return _priced(found, rate_asked, model, gpu, ideal_users)


# -- The reality check: the simulator against a published serving benchmark --------------------

# TensorRT-LLM's performance overview (trtllm2025perf, in data/measurements.yaml): Llama 3.1 8B in
# FP8 on one H100 SXM, every request of the same lengths, fed at an infinite rate; total output
# tokens a second at maximum load.
SERVING_BENCHMARKS = ("trtllm-h100-llama31-8b-128-128", "trtllm-h100-llama31-8b-2048-128",
                      "trtllm-h100-llama31-8b-1000-1000")
# The band the published figure must land in, as a share of the simulator's: the simulator takes
# the plate's efficiencies for every part of a step, so it may run ahead of a real engine, and no
# engine should beat it.
SERVING_BAND = (0.70, 1.00)
SERVING_GAP = (
    "The simulator runs every part of a step at the plate's 60 % of peak arithmetic and 80 % of "
    "bandwidth plus 0.2 ms; a real engine also samples, schedules and copies between steps, and its "
    "attention over many short caches reaches less of the peak than its matrix products do.")
# How the simulator is set for a saturated benchmark: requests all waiting at once, chunked steps with
# the token budget and the users a step of the engine the saturated rows ran (TensorRT-LLM's
# max_num_tokens and max_batch_size, from servingmath.engines), as many users as memory holds.
SATURATED_REQUESTS = 3000
_SATURATED_ENGINE = engines.defaults("tensorrt-llm", "1.0")
SATURATED_STEP_TOKENS = _SATURATED_ENGINE.step_tokens
SATURATED_RUNNING = _SATURATED_ENGINE.max_running


@dataclass(frozen=True)
class ServingCheck:
    """One published throughput against the simulator's for the same model, GPU, formats and lengths."""

    id: str
    label: str
    prompt_tokens: int
    reply_tokens: int
    published: float
    simulated: float

    @property
    def share(self):
        """The published figure as a share of the simulator's."""
        return self.published / self.simulated

    @property
    def explained(self):
        low, high = SERVING_BAND
        return low <= self.share <= high


@lru_cache(maxsize=16)
def serving_check(measurement_id: str, count=SATURATED_REQUESTS) -> ServingCheck:
    """Simulate the benchmark row ``measurement_id``: its requests all waiting at time 0, served with
    chunked prefill on its GPU at its formats (the peak taken in the format its arithmetic runs on)."""
    from . import reality
    rows = {m.id: m for m in reality.load()}
    if measurement_id not in rows:
        raise ValueError(f"measurement_id must be one of {sorted(rows)}, got {measurement_id!r}")
    row = rows[measurement_id]
    if row.prompt_tokens is None or row.reply_tokens is None or row.gpus != 1:
        raise ValueError(f"measurement_id must name a one-GPU row with stated lengths, got {measurement_id!r}")
    gpu = row.gpu.with_changes(dense_flops={**row.gpu.dense_flops, "bf16": row.peak_flops})
    server = Server(row.shape, gpu, policy="chunked", step_tokens=SATURATED_STEP_TOKENS,
                    max_running=SATURATED_RUNNING, weight_bits=row.weight_bits, kv_bits=row.cache_bits)
    count = simulator._whole("count", count, 1)
    traffic = workload(np.zeros(count), np.full(count, row.prompt_tokens), np.full(count, row.reply_tokens))
    run_ = simulate(server, traffic)
    return ServingCheck(row.id, f"{row.shape.name}, {row.weights}, {row.hardware_label}", row.prompt_tokens,
                        row.reply_tokens, float(row.value), float(run_.tokens_per_second))


def serving_checks(ids=SERVING_BENCHMARKS) -> list[ServingCheck]:
    """Every benchmark row of ``ids`` set against the simulator."""
    return [serving_check(i) for i in ids]
