"""Lesson 3's questions of load, latency and price: a run at a rate, goodput, the users that fit."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .. import _check
from .._kept import kept_arrays
from ..workload import Workload
from .results import Simulation, attainment_of
from .server import Server, _whole


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
    from ..workload import SHAREGPT, poisson_workload
    _check.instance("server", server, Server)
    return poisson_workload(rate, count, SHAREGPT if lengths is None else lengths, seed, model=server.model)


def at_rate(server: Server, rate, count=2000, lengths=None, seed=0) -> Simulation:
    """``count`` requests arriving as a Poisson stream of ``rate`` a second (lengths from ``lengths``,
    ShareGPT's means by default), served by ``server``. The same seed at another rate gives the same
    requests, closer together or further apart."""
    from . import simulate   # looked up at each call, so that a replaced ``simulator.simulate`` is the one run
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
        from ..serving import SECONDS_PER_HOUR, cost_per_million_tokens
        price = self.server.gpu.price_per_hour if price_per_hour is None else price_per_hour
        if price is None:
            raise ValueError(f"price_per_hour is needed: {self.server.gpu.name} has no rental price, got None")
        if self.rate <= 0:
            raise ValueError(f"no rate meets the targets on one {self.server.gpu.name}: a token has no price")
        return cost_per_million_tokens(price, self.tokens_per_second * SECONDS_PER_HOUR)


@lru_cache(maxsize=24)
def _searched_run(server, rate, count, lengths, seed):
    # The runs a search tried last, some megabytes each: the one at the rate it finds is its result.
    return at_rate(server, rate, count, lengths, seed)


def kept_latencies(arguments: tuple, simulated) -> tuple[np.ndarray, np.ndarray]:
    """Each request's time to first token and mean time per later token in the run ``simulated()`` makes, kept on
    disk under ``arguments`` (``_kept``, for the other processes that ask for the same run's): all a goodput search
    and an attainment read of a run."""
    def latencies():
        run = simulated()
        return {"ttft": run.ttft, "tpot": run.tpot}

    kept = kept_arrays("try", arguments, latencies)
    return kept["ttft"], kept["tpot"]


@lru_cache(maxsize=512)
def _latencies(server, rate, count, lengths, seed) -> tuple[np.ndarray, np.ndarray]:
    """The requests' latencies at ``rate`` (``kept_latencies``). Searches for other targets on the same server try
    many of the same rates (1, 2, 4... then halfway between the last two, for targets whose rates are near), so
    these are kept, in the process (128 KB at 8,000 requests, against 1.5 to 6 MB for the run's records) and on
    disk."""
    return kept_latencies((server, rate, count, lengths, seed), lambda: _searched_run(server, rate, count, lengths, seed))


def goodput(server: Server, ttft, tpot, count=GOODPUT_REQUESTS, lengths=None, seed=0, attainment=ATTAINMENT,
            steps=14) -> Goodput:
    """The highest request rate at which at least ``attainment`` of requests see a time to first token
    of at most ``ttft`` seconds and a mean time per later token of at most ``tpot`` (DistServe's goodput),
    found by halving the interval between a rate that meets them and one that does not ``steps`` times.

    Each rate is tried with ``count`` requests on a server that starts empty. Past the rate the server
    keeps up with, its queue grows steadily, but a short run ends before the queue is long enough to
    break the targets: keep ``count`` large enough that a run twice as long gives the same rate."""
    from ..workload import SHAREGPT
    _check.instance("server", server, Server)
    ttft = _check.positive("ttft", ttft)
    tpot = _check.positive("tpot", tpot)
    attainment = _check.fraction("attainment", attainment)
    steps = _whole("steps", steps, 1)
    lengths = SHAREGPT if lengths is None else lengths

    def meets(rate):
        return attainment_of(*_latencies(server, rate, count, lengths, seed), ttft, tpot) >= attainment, None

    low, _ = highest_rate(meets, steps)
    best = _searched_run(server, low, count, lengths, seed) if low > 0 else None
    return goodput_at(server, low, ttft, tpot, count, lengths, seed, attainment, best)


def highest_rate(meets, steps=14):
    """The highest rate ``meets`` (a rate -> (met, run)) accepts, and the run there (None, at 0): rates
    1, 2, 4... tried till one fails, then the interval between the last two halved ``steps`` times."""
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
    return low, best


def goodput_at(server: Server, rate, ttft, tpot, count=GOODPUT_REQUESTS, lengths=None, seed=0,
               attainment=ATTAINMENT, run: Simulation | None = None) -> Goodput:
    """The ``Goodput`` a search found at ``rate`` (0 where no rate met the targets), with the run at that
    rate (``run``, or run again here)."""
    from ..workload import SHAREGPT
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
        from ..workload import ContextTooLong
        i = int(np.argmax(longest))
        raise ContextTooLong(f"user {i} holds {int(longest[i]):,} tokens, past {server.model.name}'s context "
                             f"window of {server.window:,} tokens")
    held = server.blocks(longest) if server.memory == "paged" else server.blocks(server.reservation(prompt))
    return int(np.searchsorted(np.cumsum(held), server.cache_blocks, side="right"))
