"""Lesson 4 Part 3's questions, asked of the simulator: copies of one server behind a router, and a
fixed set of GPUs cut into copies of tensor-parallel groups.

Every copy is the server vLLM 0.9.2's profile makes (``engines``: its caps, chunked prefill and fitted
overheads); ``simulator.simulate_cluster`` serves ShareGPT-like requests arriving as a Poisson stream
(``simulator.poisson_requests``) on the copies, and the figures are read off the run as lesson 3
reads one server's (``load.figures``). A run's figures are kept in the process once made, so an explorer
moved back to a setting answers at once, and on disk (``_kept``), so the book's build, the tests and the
JupyterLab kernels that ask for the same run read it back.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import _check, engines, load, simulator
from ._kept import kept_arrays
from .hardware import CATALOG
from .models import MODELS

ENGINE = ("vllm", "0.9.2")
# Requests a run serves: at the rates the part runs, minutes of traffic, so a queue has time to show.
REQUESTS = 4000
# Part 3's running examples: Llama 3 8B on L4s (a card small enough that a copy queues at a few
# requests a second), and Llama 3 70B on an HGX board of eight H100 SXM.
ROUTED = ("llama-3-8b", "l4")
SPLIT = ("llama-3-70b", "h100-sxm", 8)


def server(model=ROUTED[0], gpu=ROUTED[1], tensor_parallel=1) -> simulator.Server:
    """One copy: ``model`` (a key of ``MODELS``) on ``tensor_parallel`` GPUs of the kind ``gpu`` (a key of
    ``CATALOG``; joined by the fastest link the catalog gives it), with vLLM 0.9.2's profile. Its cache is the
    simulator's room (``Server.cache_room``: the catalog's memory less the reserve and the weights), more than vLLM's
    own start-up count keeps (``memory.vllm_budget``)."""
    simulator._choice("model", model, tuple(MODELS))
    simulator._choice("gpu", gpu, tuple(CATALOG))
    return engines.engine(*ENGINE).server(MODELS[model], CATALOG[gpu], tensor_parallel_size=tensor_parallel)


@lru_cache(maxsize=256)
def _figures(copy: simulator.Server, rate, copies, router, count, seed) -> load.RunFigures:
    def run():   # the figures' numbers (the policy and the memory are the copy's)
        found = load.figures(simulator.simulate_cluster(copy, simulator.poisson_requests(copy, rate, count, seed=seed),
                                                        copies, router), rate)
        return {name: np.array(value) for name, value in vars(found).items() if not isinstance(value, str)}

    kept = kept_arrays("run", ("replicas", copy, rate, copies, router, count, seed), run)
    return load.RunFigures(copy.policy, copy.memory, **{name: array.item() for name, array in kept.items()})


def routed(rate, copies=4, router="one-queue", model=ROUTED[0], gpu=ROUTED[1], tensor_parallel=1, count=REQUESTS,
           seed=0) -> load.RunFigures:
    """``count`` requests arriving at ``rate`` a second in all, served by ``copies`` copies behind ``router``
    (one of ``simulator.ROUTERS``)."""
    rate = float(_check.single("rate", _check.number("rate", rate, above=0)))
    copies = simulator._whole("copies", copies, 1)
    simulator._choice("router", router, simulator.ROUTERS)
    count = simulator._whole("count", count, 1)
    return _figures(server(model, gpu, tensor_parallel), rate, copies, router, count, seed)


def routers(rate, copies=4, model=ROUTED[0], gpu=ROUTED[1], count=REQUESTS, seed=0) -> dict[str, load.RunFigures]:
    """The same requests behind each router of ``simulator.ROUTERS``."""
    return {router: routed(rate, copies, router, model, gpu, 1, count, seed) for router in simulator.ROUTERS}


@dataclass(frozen=True)
class Layout:
    """``gpus`` GPUs as ``copies`` copies of a tensor-parallel group of ``tensor_parallel``: the tokens of
    cache one copy holds (``Server.cache_blocks`` whole blocks), and a run behind one queue."""

    tensor_parallel: int
    copies: int
    tokens_held: int
    run: load.RunFigures

    @property
    def tokens_held_in_all(self) -> int:
        return self.copies * self.tokens_held


def layouts(rate, model=SPLIT[0], gpu=SPLIT[1], gpus=SPLIT[2], count=REQUESTS, seed=0) -> dict[int, Layout]:
    """``gpus`` GPUs cut every way a group of them fits ``model``: for each degree that divides ``gpus``
    and ``model``'s heads and leaves room for a cache, ``gpus`` ÷ degree copies behind one queue."""
    gpus = simulator._whole("gpus", gpus, 1)
    found = {}
    for degree in (d for d in range(1, gpus + 1) if gpus % d == 0):
        try:
            copy = server(model, gpu, degree)
        except ValueError:      # the degree does not divide the heads, or the link does not join that many
            continue
        if copy.cache_blocks < 1:
            continue
        found[degree] = Layout(degree, gpus // degree, copy.cache_blocks * copy.block_tokens,
                               routed(rate, gpus // degree, "one-queue", model, gpu, degree, count, seed))
    if not found:
        raise ValueError(f"{MODELS[model].name} fits no group of {gpus} {CATALOG[gpu].name} or fewer, got gpus={gpus!r}")
    return found
