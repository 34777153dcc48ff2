"""What a run leaves: every request's record, every step, and the figures read from them."""
from __future__ import annotations

import itertools
from array import array
from dataclasses import dataclass, field, fields

import numpy as np

from .. import _check
from ..workload import Workload
from .server import Server, _whole


def arrays_of(run: "Simulation") -> dict[str, np.ndarray]:
    """A run's arrays (all it holds but its server and its requests), from which ``Simulation`` is made again."""
    return {name: getattr(run, name) for name in SIMULATION_ARRAYS}


def percentile(values, q, weights=None):
    """The ``q``-th percentile (0 to 100) of ``values``: the smallest value with at least q % of the
    (weighted) count at or below it. NaN when there are no values."""
    return percentiles(values, (q,), weights)[0]


def percentiles(values, qs, weights=None) -> tuple[float, ...]:
    """``percentile`` at each of ``qs`` (a sequence of numbers from 0 to 100), the values sorted once."""
    if isinstance(qs, (str, bytes)) or not hasattr(qs, "__iter__"):
        raise TypeError(f"qs must be a sequence of percentiles from 0 to 100, got {qs!r}")
    qs = [_check.number("q", q, minimum=0, maximum=100) for q in qs]
    return _at(_ranked(values, weights), qs)


def _ranked(values, weights=None):
    """``values`` of positive weight in order, and the weight at or below each: what a percentile reads."""
    values = np.asarray(values, dtype=float).ravel()
    weights = np.ones_like(values) if weights is None else np.asarray(weights, dtype=float).ravel()
    if weights.shape != values.shape:
        raise ValueError(f"weights must match values, got {weights.shape} and {values.shape}")
    keep = weights > 0
    values, weights = values[keep], weights[keep]
    order = np.argsort(values, kind="stable")
    return values[order], np.cumsum(weights[order])


def _at(ranked, qs) -> tuple[float, ...]:
    ordered, cumulative = ranked
    found = []
    for q in qs:
        if ordered.size == 0:
            found.append(float("nan"))
            continue
        index = int(np.searchsorted(cumulative, q / 100 * cumulative[-1] * (1 - 1e-12), side="left"))
        found.append(float(ordered[min(index, ordered.size - 1)]))
    return tuple(found)


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

    def _streamed_gaps(self, steps_a_call):
        """Under multi-step scheduling the engine runs ``steps_a_call`` steps a call, from steps that are
        multiples of it, and streams each request's tokens of a call together when the call ends (or the
        run does); a run's first token, from a prompt's step (run alone, as vLLM runs prefills), comes at
        that step's end. The benchmark's ITL is then every gap between two such chunks of one request, one
        gap a chunk, not a token."""
        gaps = []
        runs = self.runs[np.lexsort((self.runs[:, 1], self.runs[:, 0]))] if len(self.runs) else self.runs
        request, sent = -1, 0.0
        for index, first, final in runs:
            steps = np.arange(first + 1, final + 1)
            ends = np.minimum((steps // steps_a_call + 1) * steps_a_call - 1, final)
            times = self.step_end[np.concatenate([[first], np.unique(ends)]).astype(np.int64)]
            if index == request:                 # resumed after a preemption: the gap from its last chunk
                gaps.append(times[:1] - sent)
            gaps.append(np.diff(times))
            request, sent = index, times[-1]
        return np.concatenate(gaps) if gaps else np.zeros(0)

    def tbt_percentile(self, q):
        """The ``q``-th percentile of the time between tokens, over every token after a request's first."""
        q = _check.number("q", q, minimum=0, maximum=100)
        if "tbt ranked" not in self._cache:      # sorted once for every percentile asked of the run
            self._cache["tbt ranked"] = _ranked(*self._tbt())
        return _at(self._cache["tbt ranked"], (q,))[0]

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
        return attainment_of(self.ttft, self.tpot, ttft, tpot)

    @property
    def memory_used_share(self) -> float:
        """Of the cache memory held over the run (each step weighted by its time), the share that holds
        tokens' keys and values: what the vLLM paper's figure 2 calls token states."""
        durations = self.step_time
        held = float((self.step_held_tokens * durations).sum())
        return float((self.step_used_tokens * durations).sum()) / held if held else float("nan")

    def benchmark(self) -> Benchmark:
        """The run's figures as vLLM's benchmark prints them (``Benchmark``)."""
        w = self.workload
        reply = w.reply
        e2e = self.finish - w.arrival
        ttft = self.ttft
        many = reply > 1
        tpots = (e2e[many] - ttft[many]) / (reply[many] - 1)
        if self.server.admit_every > 1:
            itls = self._streamed_gaps(self.server.admit_every)
        else:
            values, weights = self._tbt()
            itls = np.repeat(values, np.rint(weights).astype(np.int64))
        duration = float(self.finish.max() - w.arrival[0])
        return Benchmark(len(w), duration, int(w.prompt.sum()), int(reply.sum()), ttft, tpots, itls, e2e)

    def summary(self) -> dict:
        """The run in a few figures: tokens a second, TTFT and TBT at p50 and p99, preemptions."""
        return {
            "requests": len(self.workload),
            "steps": self.steps,
            "tokens_per_second": self.tokens_per_second,
            **dict(zip(("ttft_p50", "ttft_p99"), percentiles(self.ttft, (50, 99)))),
            "tbt_p50": self.tbt_percentile(50),
            "tbt_p99": self.tbt_percentile(99),
            "preemptions": int(self.preemptions.sum()),
            "memory_used_share": self.memory_used_share,
        }


@dataclass(frozen=True)
class Benchmark:
    """A run's figures as vLLM's ``benchmark_serving`` (``vllm bench serve``, vllm/benchmarks/serve.py,
    ``calculate_metrics``) computes them: throughputs over the benchmark's duration (first request sent
    to last token), in tokens or requests a second; each request's TTFT (sent to first token), E2E (sent
    to last token) and TPOT ((E2E − TTFT) ÷ (output − 1), only for requests of more than one output
    token); ITL, every gap between two tokens of a request, pooled over all requests; medians and
    percentiles with numpy's default (linear) interpolation, in seconds (the lessons' own figures,
    ``percentile``, take the nearest rank instead). Empty lists count as 0, as there. Each token is taken
    as streamed on its own, except where the engine runs several steps a call (vLLM V0's multi-step
    scheduling, ``Server.admit_every``): it streams a request's tokens of a call together, so each ITL is
    the gap between two such chunks (``Simulation._streamed_gaps``). The duration starts with the first request sent at once, as the older
    ``benchmarks/benchmark_serving.py`` and SGLang's ``bench_serving`` send it; the newer ``vllm bench
    serve``, at a finite rate, delays the first request too and stretches the gaps so that the last is
    sent requests ÷ rate seconds in (``get_request``, "target_total_delay_s = total_requests /
    request_rate")."""

    completed: int
    duration: float
    total_input: int
    total_output: int
    ttfts: np.ndarray
    tpots: np.ndarray
    itls: np.ndarray
    e2els: np.ndarray

    @property
    def request_throughput(self):
        return self.completed / self.duration

    @property
    def output_throughput(self):
        return self.total_output / self.duration

    @property
    def total_token_throughput(self):
        return (self.total_input + self.total_output) / self.duration

    def _stat(self, name, q):
        values = getattr(self, name)
        values = values if len(values) else np.zeros(1)
        return float(np.mean(values)) if q == "mean" else float(np.percentile(values, q))

    def __getattr__(self, name):
        # ttft_p50, tpot_p99, itl_mean, e2e_p90... as the benchmark prints them (in seconds here).
        stem, _, stat = name.rpartition("_")
        lists = {"ttft": "ttfts", "tpot": "tpots", "itl": "itls", "e2e": "e2els"}
        if stem in lists and (stat == "mean" or stat == "median" or (stat[:1] == "p" and stat[1:].isdigit())):
            q = "mean" if stat == "mean" else 50 if stat == "median" else int(stat[1:])
            return self._stat(lists[stem], q)
        raise AttributeError(name)


def attainment_of(ttfts, tpots, ttft=None, tpot=None) -> float:
    """``Simulation.attainment`` from each request's time to first token (``ttfts``) and mean time per later
    token (``tpots``, NaN for a one-token reply)."""
    ok = np.ones(len(ttfts), dtype=bool)
    if ttft is not None:
        ok &= ttfts <= _check.positive("ttft", ttft)
    if tpot is not None:
        ok &= np.isnan(tpots) | (tpots <= _check.positive("tpot", tpot))
    return float(ok.mean())


# What a ``Simulation`` holds beyond its server and its requests: its records, as arrays.
SIMULATION_ARRAYS = tuple(f.name for f in fields(Simulation) if f.name not in ("server", "workload", "_cache"))


def _with_extra(decodes, extra):
    tokens = decodes.copy()
    if extra:
        steps = np.fromiter(extra.keys(), dtype=np.int64, count=len(extra))
        tokens[steps] += np.fromiter(extra.values(), dtype=np.int64, count=len(extra))
    return tokens



class StepLog:
    """Every step as it ran: its end, its seconds, its next tokens made, its tokens beyond them, and the
    cache memory held and used after it, in tokens. ``simulation`` gathers them with each request's times."""

    def __init__(self):
        self.end, self.time = array("d"), array("d")
        self.decodes, self.held, self.used = array("q"), array("q"), array("q")
        self.extra_tokens = {}   # step → tokens beyond its next tokens (prompt pieces, users copied back in)

    def step(self, now, seconds, decodes, tokens):
        if tokens != decodes:
            self.extra_tokens[len(self.end)] = tokens - decodes
        self.end.append(now)
        self.time.append(seconds)
        self.decodes.append(decodes)

    def memory(self, held, used):
        self.held.append(held)
        self.used.append(used)

    def appends(self):
        """The appends of a step's end, seconds and next tokens, and of the memory held and used after it, bound
        once for the loop's runs of next-token steps (``loop._decode_steps``)."""
        return self.end.append, self.time.append, self.decodes.append, self.held.append, self.used.append

    def simulation(self, server, work, requests, runs) -> Simulation:
        decodes = np.frombuffer(self.decodes, dtype=np.int64)
        return Simulation(
            server=server, workload=work, first_token=np.asarray([r.first_token for r in requests]),
            finish=np.asarray([r.finish for r in requests]), preemptions=np.asarray([r.preemptions for r in requests]),
            step_end=np.frombuffer(self.end, dtype=float), step_time=np.frombuffer(self.time, dtype=float),
            step_decodes=decodes, step_tokens=_with_extra(decodes, self.extra_tokens),
            step_held_tokens=np.frombuffer(self.held, dtype=np.int64),
            step_used_tokens=np.frombuffer(self.used, dtype=np.int64),
            runs=np.fromiter(itertools.chain.from_iterable(runs), dtype=np.int64, count=3 * len(runs)).reshape(-1, 3),
        )
