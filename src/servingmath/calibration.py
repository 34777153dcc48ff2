"""Engines' overheads fitted on published runs, and checked on runs held out from the fit.

Each run of ``data/serving_runs.yaml`` is simulated as its publisher ran it (``replay``): the engine at
its version (``engines.engine``) with the run's flags, the model and the card, requests of the run's
lengths sent as its client sent them (all at once, Poisson at a rate, or a closed loop of at most C in
flight), and the figures computed as vLLM's benchmark computes them (``Simulation.benchmark``). Where
a run's lengths were not fixed, they are drawn from the course's geometric law (``workload``) with the
means the run states (its totals ÷ its requests, or its output ÷ request throughput), else those another
run of the same publisher, model and dataset printed, else ShareGPT's means from the vLLM paper: an
assumption, stated in each ``Replay``'s ``lengths``.

The fit (``fit``) chooses, for each group of engine versions (``engines.GROUPS``), a fixed cost a
step, a processor cost a user in a step, a streaming cost a token, the API server's cost a request
and a request's latency on its way (``PER_GROUP``), and for all engines together the kernels' share
of the datasheet's peaks (``GLOBAL``): the values whose predictions come nearest the published
figures (least squares of the logarithms of published ÷ predicted), each group's pulled towards the
others' where it has few runs. ``leave_one_source_out`` fits again without each publisher
in turn and predicts that publisher's runs: the honest figure for runs the fit never saw. Results are
kept in ``data/engine_fit.json``, written by ``scripts/engine_fit.py``; reading them runs nothing.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from . import engines
from .runs import Run, load_runs
from .workload import SHAREGPT, LengthDistribution, workload

FIT_FILE = Path(__file__).with_name("data") / "engine_fit.json"
# Requests a replay of fixed lengths simulates at most: enough for its medians, few enough to fit in
# seconds; at least four times its batch cap, so that its steady state, not its ramp down, sets its
# throughput. A replay of drawn lengths, or of Poisson arrivals, sends every request the run sent.
REPLAY_REQUESTS = 400
# The metrics a replay predicts and the fit weighs (throughput first; latencies where published).
THROUGHPUTS = ("output_throughput", "request_throughput", "total_token_throughput")
LATENCIES = ("tpot_median", "ttft_median", "tpot_mean", "ttft_mean", "itl_median")
# Clients that drive the engine in their own process, with no API server between the requests and the
# engine, and the costs they do not pay: TensorRT-LLM's trtllm-bench (NVIDIA's performance overview) sends
# token ids and turns no token into text (tensorrt_llm/bench/benchmark/throughput.py: "post_proc_params =
# None  # No detokenization"); LMDeploy 0.1's benchmark/profile_throughput.py calls TurboMind's
# stream_infer from its threads, which decode each new token (tokenizer.decode) as it streams.
# The costs of a client that takes token ids back in the engine's own process: no API server, no trip to it,
# no text streamed (multi_runs.IN_PROCESS reads it too).
NO_CLIENT_COSTS = ("request_time", "request_latency", "stream_time")
IN_PROCESS_CLIENTS = {"trtllm-bench": NO_CLIENT_COSTS,
                      "python3 benchmark/profile_throughput.py": ("request_time", "request_latency")}
# Vidur (agrawal2024vidur, abstract): latency "with less than 9% error", its operators profiled on the card.
VIDUR_ERROR = 0.09
# Rows that repeat a figure measurements.yaml already holds (set against lesson 3 in the reality
# check): a check of runs the project never saw leaves them out.
REPEATED = ("trtllm10-h100-llama31-8b-fp8-128-128", "trtllm10-h100-llama31-8b-fp8-1000-1000",
            "trtllm10-h100-llama31-8b-fp8-2048-128", "trtllm10-h200-llama31-8b-fp8-128-128",
            "trtllm10-h200-llama31-8b-fp8-1000-1000", "trtllm10-h200-llama31-8b-fp8-2048-128")


def cache_format(run, runs=None) -> tuple[str | None, str]:
    """The run's cache format as the replay takes it, and words saying why. ``run``: a ``Run``, or a row of
    another file with the same properties (``multi_runs.MultiRun``); ``runs``: the rows of its file
    (``load_runs()`` if None).

    As published where the publisher states it. Where not, 16 bits, unless the run's weights are FP8 and
    a row of the same table (``table``: publisher, checkpoint, engine and version) passed more output
    tokens a second than a 16-bit cache allows (``beyond_16_bit_cache``): a 16-bit cache cannot have done
    it, so the table's cache is the 8 bits the FP8 path stores."""
    if run.kv_cache_dtype:
        return run.kv_cache_dtype, f"{run.kv_cache_dtype}, as published"
    beaten = [other.id for other in (load_runs() if runs is None else runs)
              if other.table == run.table and run.precision == "fp8" and other.beyond_16_bit_cache]
    if beaten:
        return "fp8", "fp8: not stated, but " + ", ".join(beaten) + " passed more than a 16-bit cache allows"
    return None, "16-bit: not stated"


@dataclass(frozen=True)
class Replay:
    """How one published run is simulated: its engine, flags, requests and client."""

    run: Run
    engine: engines.Engine
    flags: dict
    work: object
    concurrency: int | None
    lengths: str
    in_process: tuple     # the costs its in-process client does not pay (IN_PROCESS_CLIENTS), else ()
    cache: str


def _draw(client: str) -> tuple:
    """What decides which requests a benchmark's client draws: its program, its dataset file and its seed
    (vLLM's benchmark shuffles ShareGPT with ``--seed``, 0 unless given, and takes the first requests)."""
    flags = dict(re.findall(r"--([\w-]+)[ =](\S+)", client))
    return client.split(" --")[0], flags.get("dataset-path"), flags.get("seed", "0")


def run_with_the_same_lengths(run: Run) -> Run | None:
    """The first other run of the same publisher, model and dataset, drawn by the same client from the same
    file with the same seed, that printed its token totals (None if there is none, or if ``run`` caps its
    replies): its requests are the first of ``run``'s, so its means are the publisher's own, nearer than
    another paper's. A run that printed neither totals nor rates is replayed with them."""
    if run.output_cap:
        return None
    return next((other for other in load_runs()
                 if other.id != run.id and (other.source_group, other.model, other.dataset, _draw(other.client))
                 == (run.source_group, run.model, run.dataset, _draw(run.client))
                 and other.total_input_tokens and other.total_output_tokens and other.num_prompts), None)


def _lengths(run: Run) -> tuple[LengthDistribution | None, tuple | None, str]:
    """(distribution, fixed lengths, words saying where the lengths come from) for a run."""
    if run.input_len and run.output_len:
        return None, (run.input_len, run.output_len), f"fixed, {run.input_len:,} and {run.output_len:,} tokens"
    n = run.num_prompts
    if run.total_input_tokens and run.total_output_tokens:
        prompt, reply = run.total_input_tokens / n, run.total_output_tokens / n
        said = "means from the run's printed totals"
    elif run.has("request_throughput", "output_throughput", "total_token_throughput"):
        m = run.metrics
        reply = m["output_throughput"] / m["request_throughput"]
        prompt = (m["total_token_throughput"] - m["output_throughput"]) / m["request_throughput"]
        said = "means from the run's printed token and request rates"
    elif run.has("request_throughput", "output_throughput"):
        m = run.metrics
        prompt, reply = SHAREGPT.mean_prompt, m["output_throughput"] / m["request_throughput"]
        said = "ShareGPT's mean prompt (kwon2023paged), the reply's mean from the run's printed rates"
    elif (same := run_with_the_same_lengths(run)) is not None:
        prompt, reply = same.total_input_tokens / same.num_prompts, same.total_output_tokens / same.num_prompts
        said = f"means from the printed totals of {same.id} (same publisher, model and dataset)"
    else:
        prompt, reply = SHAREGPT.mean_prompt, SHAREGPT.mean_reply
        said = "ShareGPT's means (kwon2023paged)"
        if run.output_cap:
            reply = run.output_cap
            said = f"ShareGPT's mean prompt, replies at the cap of {run.output_cap} tokens"
            return LengthDistribution("replay", prompt, reply), ("cap", run.output_cap), said
    if run.dataset == "random" and run.total_input_tokens:
        return None, (round(prompt), round(reply)), said + ", fixed"
    return LengthDistribution("replay", prompt, reply), None, said + ", geometric"


def replay(run: Run, requests=REPLAY_REQUESTS, seed=0, given=None) -> Replay:
    """The run as the simulator replays it (``given``: other overheads for its engine)."""
    found = engines.engine(run.engine, run.version)
    if given is not None:
        found = found.with_overheads(given)
    flags = {k: v for k, v in run.flags.items()}
    if run.precision == "fp8":
        flags["quantization"] = "fp8"
    kv_cache_dtype, cache = cache_format(run)
    if kv_cache_dtype:
        flags["kv_cache_dtype"] = kv_cache_dtype
    server = found.server(run.shape, run.gpu_spec, **flags)
    dist, fixed, said = _lengths(run)
    kind = run.arrivals.kind
    # Every request sent, where the arrivals are Poisson (past saturation the queue, and so the wait, grows
    # with their number) or the lengths are drawn (the last, longest requests run with slots to spare, and
    # their share of the run's time depends on how many requests came before them).
    count = run.num_prompts
    if kind == "all-at-once" and fixed and fixed[0] != "cap":
        count = min(run.num_prompts, max(requests, 4 * server.max_running))
    elif kind == "concurrency" and fixed and fixed[0] != "cap":
        count = min(run.num_prompts, max(requests, 4 * run.arrivals.concurrency))
    rng = np.random.default_rng(seed)
    if fixed and fixed[0] != "cap":
        prompt = np.full(count, fixed[0])
        reply = np.full(count, fixed[1])
    else:
        prompt, reply = dist.draw(count, seed, longest=server.window)
        if fixed:
            reply = np.full(count, fixed[1])
            prompt = np.minimum(prompt, server.window - fixed[1])
    if kind == "poisson":
        arrival = np.cumsum(rng.exponential(1 / run.arrivals.rate, count))
        arrival -= arrival[0]
    else:
        arrival = np.zeros(count)
    work = workload(arrival, prompt, reply, run.id)
    concurrency = run.arrivals.concurrency if kind == "concurrency" else None
    in_process = next((unpaid for client, unpaid in IN_PROCESS_CLIENTS.items() if run.client.startswith(client)), ())
    return Replay(run, found, flags, work, concurrency, said, in_process, cache)


def unpaid(server, costs):
    """The server without the ``costs`` an in-process client does not pay (``IN_PROCESS_CLIENTS``)."""
    import dataclasses
    return dataclasses.replace(server, **{cost: 0.0 for cost in costs})


def predict(run: Run, requests=REPLAY_REQUESTS, given=None) -> dict:
    """The run's published metrics as the simulator predicts them: {metric: value}."""
    from .simulator import simulate
    r = replay(run, requests, given=given)
    server = r.engine.server(run.shape, run.gpu_spec, **r.flags)
    server = unpaid(server, r.in_process)
    bench = simulate(server, r.work, concurrency=r.concurrency).benchmark()
    # A source that divides by the summed latencies ÷ the concurrency (runs.DURATIONS) is read the same way.
    duration = bench.e2els.sum() / r.concurrency if run.source.duration == "latency-sum" else bench.duration
    out = {}
    for name in run.metrics:
        if name in THROUGHPUTS:
            out[name] = getattr(bench, name) * bench.duration / duration
        else:
            stem, _, stat = name.rpartition("_")
            stat = {"median": "p50"}.get(stat, stat)
            out[name] = getattr(bench, f"{stem}_{stat}")
    return out


# -- The fit ---------------------------------------------------------------------------------------

# What the fit weighs in each run: its throughput (output tokens a second, else requests), and its
# median (else mean) time per output token and time to first token where published.
def targets(run: Run) -> dict:
    """{metric: weight} of a run in the fit."""
    out = {}
    for name in ("output_throughput", "request_throughput"):
        if name in run.metrics:
            out[name] = 1.0
            break
    for stem in ("tpot", "ttft"):
        for stat in ("median", "mean"):
            if f"{stem}_{stat}" in run.metrics:
                out[f"{stem}_{stat}"] = 0.5
                break
    return out


# The parameters: kernels' shares of the peaks, for all engines (the same cuBLAS and attention
# kernels); for each group of versions, a fixed cost a step, a processor cost a user in a step, a
# streaming cost a token, an API server's cost a request and a request's latency on its way.
# Starting values, and bounds (the fit stays inside what is physically plausible).
GLOBAL = {"compute_efficiency": (0.7, 0.3, 1.0), "bandwidth_efficiency": (0.85, 0.5, 1.0)}
PER_GROUP = {"step_time": (1e-3, 1e-5, 2e-2), "stream_time": (20e-6, 1e-7, 5e-4), "user_time": (10e-6, 1e-7, 2e-4),
             "request_time": (5e-3, 1e-5, 5e-2), "request_latency": (5e-3, 1e-5, 1e-1)}
# What each parameter means, and the range a physical reading allows (kept beside the values in the data).
MEANINGS = {
    "compute_efficiency": "share of the card's dense peak the matrix products reach (cuBLAS on large products: "
                          "0.5 to 0.8 of the datasheet is what profiles show)",
    "bandwidth_efficiency": "share of the card's memory bandwidth the memory-bound kernels reach (0.8 to 0.95 in "
                            "stream benchmarks; near 1 here where the model counts bytes an engine does not read)",
    "step_time": "seconds every step costs whatever it carries: sampling, the synchronisation of processor and card, "
                 "the fixed part of preparing inputs (a millisecond or a few)",
    "user_time": "seconds of processor work for each user in a step: scheduling it, its inputs, detokenizing and "
                 "streaming its token (microseconds to a hundred, as Python goes)",
    "request_time": "seconds the API server spends on each request before the engine sees it, one after another: "
                    "parsing the HTTP request, chat template, tokenizing",
    "request_latency": "seconds each request spends on its way to the engine and back with its first token that hold "
                       "up no other request: the HTTP round trip, and the messages between the API server's process and the "
                       "engine's (milliseconds); it also takes up any other delay to the first token the model leaves out",
    "stream_time": "seconds the streaming process (an API server's, or a benchmark's own threads) spends on each token "
                   "it turns into text and sends, beside the engine's steps: a step of many users waits for it "
                   "(tens of microseconds, as Python goes)",
}
# How strongly a group's values are drawn to the other groups' (in squared natural logarithms):
# a group with no run in the fit takes their geometric mean.
PULL = 0.05


def _value(params, group, name):
    return params[(group, name)] if (group, name) in params else params[name]


def _overheads(params, group):
    return engines.Overheads(**{name: _value(params, group, name) for name in (*GLOBAL, *PER_GROUP)})


def _residuals(run: Run, params, requests):
    given = _overheads(params, engines.engine(run.engine, run.version).group)
    got = predict(run, requests, given)
    return [(w, math.log(run.metrics[m] / got[m])) for m, w in targets(run).items()]


def _loss(runs, params, requests, cache):
    total = 0.0
    for run in runs:
        group = engines.engine(run.engine, run.version).group
        key = (run.id, *(params[name] for name in GLOBAL), *(params[(group, name)] for name in PER_GROUP))
        if key not in cache:
            cache[key] = _residuals(run, params, requests)
        total += sum(w * r * r for w, r in cache[key])
    for name in PER_GROUP:
        logs = [math.log(params[(g, name)]) for g in engines.GROUPS]
        mean = sum(logs) / len(logs)
        total += PULL * sum((x - mean) ** 2 for x in logs)
    return total


def _golden(f, low, high, steps):
    """The minimum of f over [low, high] (logarithms), by golden-section search."""
    ratio = (math.sqrt(5) - 1) / 2
    a, b = low, high
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(steps):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = f(d)
    return (c, fc) if fc < fd else (d, fd)


def fit(runs, requests=REPLAY_REQUESTS, sweeps=3, steps=10) -> dict:
    """The parameters that bring ``runs``' predictions nearest their published figures: coordinate
    descent, each parameter in turn by golden-section search on its logarithm within its bounds."""
    runs = list(runs)
    params = {name: start for name, (start, _, _) in GLOBAL.items()}
    for g in engines.GROUPS:
        for name, (start, _, _) in PER_GROUP.items():
            params[(g, name)] = start
    cache = {}
    present = {engines.engine(r.engine, r.version).group for r in runs}
    keys = list(GLOBAL) + [(g, n) for g in engines.GROUPS if g in present for n in PER_GROUP]
    for _ in range(sweeps):
        for key in keys:
            low, high = (GLOBAL[key] if key in GLOBAL else PER_GROUP[key[1]])[1:]
            mine = runs if key in GLOBAL else [r for r in runs if engines.engine(r.engine, r.version).group == key[0]]

            def f(x, key=key, mine=mine):
                trial = dict(params)
                trial[key] = math.exp(x)
                return _loss(mine, trial, requests, cache)
            best, value = _golden(f, math.log(low), math.log(high), steps)
            if value < f(math.log(params[key])):
                params[key] = math.exp(best)
    # A group with no run in the fit takes the others' geometric mean.
    for name in PER_GROUP:
        fitted = [math.log(params[(g, name)]) for g in engines.GROUPS if g in present]
        for g in engines.GROUPS:
            if g not in present:
                params[(g, name)] = math.exp(sum(fitted) / len(fitted))
    return params


def _as_json(params):
    return {"global": {k: params[k] for k in GLOBAL},
            "groups": {g: {n: params[(g, n)] for n in PER_GROUP} for g in engines.GROUPS}}


def _from_json(data):
    params = dict(data["global"])
    for g, values in data["groups"].items():
        for n, v in values.items():
            params[(g, n)] = v
    return params


def sources(runs=None):
    """The publishers (source groups) of the runs, in the file's order."""
    runs = load_runs() if runs is None else runs
    return tuple(dict.fromkeys(r.source_group for r in runs))


# vLLM V1's processor cost a user in a step as the fit gave it before the streaming cost was fitted beside it
# (data/engine_fit.json at commit f5c3076: 91 µs, to the two figures the pages showed): Lesson 4 Part 4 sets it
# back to show what its split's margin rests on.
EARLIER_V1_USER_TIME = 91e-6
# A run whose published latency is under this share of the floor's (``floor_contradiction``) cannot have
# run on the server it states: it is left out of the fit and of its summaries, and shown with the reason.
FLOOR_SHARE = 0.5


def floor_contradiction(run: Run, requests=REPLAY_REQUESTS) -> str | None:
    """Why ``run`` cannot have run as stated, or None: a latency the fit weighs (``targets``) published under
    ``FLOOR_SHARE`` of what the floor predicts for the same server and requests (the datasheet's peaks, no
    overheads: ``engines.IDEAL``'s costs under the engine's own defaults and the run's flags)."""
    got = predict(run, requests, engines.IDEAL)
    for name in targets(run):
        if name not in THROUGHPUTS and run.metrics[name] < FLOOR_SHARE * got[name]:
            return (f"its {name.replace('_', ' ')} of {run.metrics[name]:.3g} s is {run.metrics[name] / got[name]:.2f} of "
                    f"the floor's {got[name]:.3g} s for the server it states")
    return None


def _fit_without(source, requests, sweeps, steps, left_out=()):
    """The fit on every run but ``source``'s (None: on every run) and those ``left_out``, as
    ``data/engine_fit.json`` keeps it."""
    return _as_json(fit([r for r in load_runs() if r.source_group != source and r.id not in left_out],
                        requests, sweeps, steps))


def compute(requests=REPLAY_REQUESTS, sweeps=3, steps=8, log=print, jobs=None) -> dict:
    """The fit on every run, and for each publisher the fit without it and its runs predicted by that
    fit: what ``data/engine_fit.json`` holds (``scripts/engine_fit.py`` writes it). The fits are
    independent, so they run in ``jobs`` processes (default: one a processor)."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    runs = load_runs()
    left_out = {run.id: why for run in runs if (why := floor_contradiction(run, requests))}
    fits = {}
    with ProcessPoolExecutor(jobs) as pool:
        pending = {pool.submit(_fit_without, source, requests, sweeps, steps, tuple(left_out)): source
                   for source in (None,) + sources(runs)}
        for done in as_completed(pending):
            fits[pending[done]] = done.result()
            log("fit on every run done" if pending[done] is None else f"held out {pending[done]}")
    rows = {run.id: {} for run in runs}
    for source, kept in fits.items():
        params = _from_json(kept)
        for run in runs:
            if source is None or run.source_group == source:
                group = engines.engine(run.engine, run.version).group
                rows[run.id]["fit" if source is None else "held_out"] = predict(run, requests, _overheads(params, group))
    held = {source: fits[source] for source in sources(runs)}
    return {"requests": requests, "meanings": MEANINGS, "fit": fits[None], "held_out_fits": held, "rows": rows,
            "left_out": left_out}


@lru_cache(maxsize=1)
def results() -> dict:
    """What ``data/engine_fit.json`` holds (see ``compute``)."""
    return json.loads(FIT_FILE.read_text())


def fitted_overheads() -> dict:
    """{group: Overheads} of the fit on every run."""
    params = _from_json(results()["fit"])
    return {g: _overheads(params, g) for g in engines.GROUPS}


def held_out_overheads(source) -> dict | None:
    """{group: Overheads} of the fit without the runs of ``source`` (a source group of the fit's runs), as
    ``compute`` kept it; None for a source with no run in the fit."""
    fits = results()["held_out_fits"]
    if not isinstance(source, str):
        raise TypeError(f"source must be a source group's name, got {source!r}")
    if source not in fits:
        return None
    params = _from_json(fits[source])
    return {g: _overheads(params, g) for g in engines.GROUPS}


# -- The report -----------------------------------------------------------------------------------

def _headline(run: Run, stem):
    """The metric a run is judged on for ``stem``: "throughput" (output tokens a second, else requests
    a second), "tpot" or "ttft" (the median, else the mean); None where the run published none."""
    names = ("output_throughput", "request_throughput") if stem == "throughput" else (f"{stem}_median", f"{stem}_mean")
    return next((n for n in names if n in run.metrics), None)


@dataclass(frozen=True)
class RowCheck:
    """One run: its published figures over the predictions of the fit on every run (``fit``) and of
    the fit without its publisher (``held_out``), for throughput, TPOT and TTFT (None: not published)."""

    run: Run
    fit: dict
    held_out: dict
    left_out: str | None = None   # why the run cannot have run as stated (floor_contradiction), if so

    @property
    def counts_as_unseen(self) -> bool:
        """False for the runs that repeat a figure the course's reality check already sets against lesson 3."""
        return self.run.id not in REPEATED


def checks() -> list[RowCheck]:
    """Every run's ratios, from the kept results (``data/engine_fit.json``)."""
    kept = results()["rows"]
    out = []
    for run in load_runs():
        fit_, held = {}, {}
        for stem in ("throughput", "tpot", "ttft"):
            name = _headline(run, stem)
            for into, which in ((fit_, "fit"), (held, "held_out")):
                into[stem] = None if name is None else run.metrics[name] / kept[run.id][which][name]
        out.append(RowCheck(run, fit_, held, results()["left_out"].get(run.id)))
    return out


@dataclass(frozen=True)
class Summary:
    """Published ÷ predicted over a set of runs: throughput's median, the share within 0.75 to 1.25, the
    share within 0.5 to 1.5, its extremes; TPOT's and TTFT's medians; how many runs each."""

    runs: int
    throughput_median: float
    within_25: float
    within_50: float
    lowest: float
    highest: float
    tpot_median: float
    tpot_runs: int
    ttft_median: float
    ttft_runs: int


def summary(which="held_out", engine=None, unseen=True) -> Summary:
    """Ratios over the runs (of ``engine``, or all), ``which`` = "held_out" or "fit"; ``unseen`` leaves
    out the runs the reality check already uses. Runs left out of the fit (``floor_contradiction``) count in none."""
    rows = [c for c in checks() if (engine is None or c.run.engine == engine) and (c.counts_as_unseen or not unseen)
            and c.left_out is None]
    pick = [getattr(c, which) for c in rows]
    tp = np.array([p["throughput"] for p in pick if p["throughput"] is not None])
    tpot = np.array([p["tpot"] for p in pick if p["tpot"] is not None])
    ttft = np.array([p["ttft"] for p in pick if p["ttft"] is not None])

    def median(values):
        return float(np.median(values)) if len(values) else float("nan")
    return Summary(len(tp), median(tp), float(np.mean((tp >= 0.75) & (tp <= 1.25))) if len(tp) else float("nan"),
                   float(np.mean((tp >= 0.5) & (tp <= 1.5))) if len(tp) else float("nan"),
                   float(tp.min()) if len(tp) else float("nan"), float(tp.max()) if len(tp) else float("nan"),
                   median(tpot), len(tpot), median(ttft), len(ttft))


def table() -> str:
    """Every run's published ÷ predicted (fit, and held out), then the summaries by engine, as text."""
    def cell(x):
        return "    –" if x is None else f"{x:5.2f}"
    lines = [f"{'run':48s} {'engine':>20s}  thr fit  held  tpot fit held  ttft fit held"]
    for c in checks():
        mark = "†" if c.left_out else "*" if not c.counts_as_unseen else " "
        lines.append(f"{c.run.id[:47]:47s}{mark} {c.run.engine + ' ' + c.run.version:>20s}  "
                     f"{cell(c.fit['throughput'])} {cell(c.held_out['throughput'])}  "
                     f"{cell(c.fit['tpot'])} {cell(c.held_out['tpot'])}  {cell(c.fit['ttft'])} {cell(c.held_out['ttft'])}")
    lines.append("* repeats a figure of measurements.yaml: left out of the summaries below")
    for c in checks():
        if c.left_out:
            lines.append(f"† {c.run.id}: left out of the fit and the summaries: {c.left_out}")
    lines.append("")
    for engine in (None, "vllm", "sglang", "tensorrt-llm", "lmdeploy"):
        for which in ("fit", "held_out"):
            s = summary(which, engine)
            lines.append(f"{engine or 'all':13s} {which:9s} throughput: {s.runs:2d} runs, median {s.throughput_median:.2f}, "
                         f"{s.within_25:.0%} in 0.75-1.25, {s.within_50:.0%} in 0.5-1.5 ({s.lowest:.2f} to {s.highest:.2f}); "
                         f"TPOT median {s.tpot_median:.2f} ({s.tpot_runs}); TTFT median {s.ttft_median:.2f} ({s.ttft_runs})")
    params = results()["fit"]
    lines.append("")
    lines.append("fit on every run: " + ", ".join(f"{k} {v:.3g}" for k, v in params["global"].items()))
    for g, values in params["groups"].items():
        lines.append(f"  {g:13s} " + ", ".join(f"{k} {v * 1e3:.3g} ms" for k, v in values.items()))
    return "\n".join(lines)


ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "tensorrt-llm": "TensorRT-LLM", "lmdeploy": "LMDeploy"}


def markdown_table(engine=None) -> str:
    """Every run (of ``engine``, or all) as a table: what was run, the published throughput, and
    published ÷ predicted for throughput, TPOT and TTFT, by the fit on every run and by the fit
    without the run's publisher."""
    from . import units

    def ratio(x):
        return "–" if x is None else f"{x:.2f}"
    head = ("| engine | model, card | weights, lengths | requests | published | fit | held out | TPOT fit | held out "
            "| TTFT fit | held out |")
    lines = [head, "|---" * 11 + "|"]
    for c in checks():
        r = c.run
        if engine is not None and r.engine != engine:
            continue
        a = r.arrivals
        sent = ("all at once" if a.kind == "all-at-once" else f"{a.rate:g} a second" if a.kind == "poisson"
                else f"{a.concurrency} at a time")
        name = _headline(r, "throughput")
        shown = ("–" if name is None else
                 f"{units.number(round(r.metrics[name]))} tok/s" if name == "output_throughput"
                 else f"{r.metrics[name]:.3g} req/s")
        mark = "†" if c.left_out else "*" if not c.counts_as_unseen else ""
        cache = cache_format(r)[0]
        setup = r.precision + ("" if cache is None else ", fp8 cache" if r.kv_cache_dtype else ", fp8 cache (deduced)") + (
            f", {r.input_len:,} in {r.output_len:,} out" if r.input_len and r.output_len else f", {r.dataset}")
        lines.append(f"| {ENGINE_NAMES[r.engine]} {r.version}{mark} | {r.shape.name}, {r.gpu_spec.name} | {setup} | "
                     f"{r.num_prompts:,}, {sent} | {shown} | {ratio(c.fit['throughput'])} | {ratio(c.held_out['throughput'])} | "
                     f"{ratio(c.fit['tpot'])} | {ratio(c.held_out['tpot'])} | {ratio(c.fit['ttft'])} | {ratio(c.held_out['ttft'])} |")
    return "\n".join(lines)
