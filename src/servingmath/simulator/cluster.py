"""More than one server: copies of a server behind a router, and prefill and decode on servers of their own.

``simulate_cluster(server, work, replicas, router)`` serves one stream of requests on ``replicas`` copies of
``server``, each with its own engine (the same schedulers, block managers and step clock as ``simulate``).
The router places each request as it arrives:

- ``"round-robin"``: to the copies in turn, whatever their load;
- ``"least-loaded"``: to the copy with the fewest requests in flight (placed there and not finished; the
  first such copy on a tie), which is what a router can count without knowing how long each reply will be;
- ``"one-queue"``: to a copy with room for it now (a place and the memory its prompt takes, no one waiting
  there), the one running the fewest requests; where no copy has room, to one queue that every copy admits
  from, first come first served: each waiting request goes to whichever copy frees first. A request
  preempted on a copy waits at the head of that copy's own line, as on one server.

``simulate_disaggregated(prefill, decode, work, ...)`` separates the two phases, as DistServe (Zhong et al.
2024) and Splitwise (Patel et al. 2024) do: ``prefill_instances`` copies of ``prefill`` read each prompt and
make its first token; the cache of its prompt (``memory.kv_cache_bytes``) then crosses ``link`` (its latency
plus the bytes over its bandwidth, ``transfer_time``; transfers do not slow one another) to one of
``decode_instances`` copies of ``decode``, which batch their users continuously and write the rest of each
reply. The prefill copy's memory is free once the prompt is read; the first token reaches the user with the
cache, when the transfer ends, so the time to first token counts the transfer. Each stage has its router.

Both return a ``ClusterSimulation``: a ``Simulation`` whose log holds every copy's steps one copy after
another (and, disaggregated, each transfer as a step that carries the first token and nothing else), so
that every figure of one server's run (time to first token, time between tokens, ``benchmark()``) is read
the same way. The requests reach the router as they reach one server's engine: after the API server's
``request_time``, one after another, then each request's ``request_latency``, which holds up no other. One copy
behind any router gives exactly ``simulate``'s run.
"""
from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, fields

import numpy as np

from .. import _check
from ..hardware import Interconnect, link as _link
from ..memory import kv_cache_bytes
from ..parallel import send_time
from ..workload import Workload, workload
from .client import _Client
from .clock import clock_of
from .loop import Engine
from .requests import SWAPPED, of
from .results import Simulation, StepLog
from .schedulers import SCHEDULERS
from .server import Server, _choice, _whole

ROUTERS = ("round-robin", "least-loaded", "one-queue")


@dataclass(frozen=True)
class ClusterSimulation(Simulation):
    """A cluster's run: ``Simulation``'s records, the copy that wrote each request's last token
    (``replica``; under disaggregation, the decode copy) and each request's transfer, seconds (``transfer``;
    zeros for replicas). ``server`` is the copy's server (the decode server, disaggregated)."""

    replica: np.ndarray | None = None
    transfer: np.ndarray | None = None


class _Queue:
    """A copy's waiting line under one queue: its own preempted requests first, then the queue every copy shares."""

    __slots__ = ("own", "shared")

    def __init__(self, shared):
        self.own, self.shared = deque(), shared

    def __bool__(self):
        return bool(self.own) or bool(self.shared)

    def __getitem__(self, index):
        if index != 0:
            raise IndexError("only the head of the line is read")
        return self.own[0] if self.own else self.shared[0]

    def popleft(self):
        return self.own.popleft() if self.own else self.shared.popleft()

    def appendleft(self, request):
        self.own.appendleft(request)


class _Replica:
    """A policy's scheduler as one copy among several (mixed in before the policy's class): its requests
    come from the router, which hands them to its waiting line; their states are shared with the other
    copies; its engine stops at ``horizon``, when the router next places a request; and each request that
    finishes here is told to the stage (``finished``)."""

    def __init__(self, server, work, requests, waiting, finished):
        super().__init__(server, work, (), None, requests)
        self.waiting = waiting
        self.horizon = math.inf
        self.in_flight = 0
        self.finished = finished          # called with (request, time) as each request finishes here

    @property
    def next_arrival(self):
        return self.horizon

    @property
    def arrivals_left(self):
        return self.horizon < math.inf

    def take_arrivals(self, now):
        """Nothing: the router puts each request in the line."""

    def has_room(self, request):
        """Whether the copy would admit ``request`` at its next step: no one waiting before it, a place free,
        and the blocks it takes free beside the watermark."""
        return (not self.waiting and self.running < self.max_running
                and self.blocks.fits(self.blocks.to_admit(self.requests[request]), self.running))

    def finish(self, r, blocks, step, now):
        super().finish(r, blocks, step, now)
        self.in_flight -= 1
        self.finished(r, now)


class _Decoder(_Replica):
    """A decode copy: a request comes with its cache over the link, admitted as one swapped out (its cache
    held, its first token made) but with no copy from the host to wait for."""

    def swap_in(self, r, batch, step):
        super().swap_in(r, batch, step)
        if r.preemptions == 0:            # it came over the link, not back from this copy's host
            batch.copies.pop()


REPLICAS = {name: type(f"{cls.__name__}Replica", (_Replica, cls), {}) for name, cls in SCHEDULERS.items()}
DECODERS = {name: type(f"{cls.__name__}Decoder", (_Decoder, cls), {}) for name, cls in SCHEDULERS.items()}


class _Stage:
    """Copies of one server behind a router: their engines, the requests still to reach the router
    (``coming``, a heap of (time, request)), and where the router sends each as it comes."""

    def __init__(self, server, work, count, router, requests, classes, finished):
        self.router, self.turn = router, 0
        self.shared = deque() if router == "one-queue" else None
        clock = clock_of(server)
        self.engines = []
        for k in range(count):
            waiting = deque() if self.shared is None else _Queue(self.shared)
            scheduler = classes[server.policy](server, work, requests, waiting,
                                               lambda r, now, k=k: finished(k, r, now))
            self.engines.append(Engine(server, scheduler, clock))
        self.coming = []

    def send(self, request, at):
        """``request`` reaches the router at ``at``."""
        heapq.heappush(self.coming, (at, request))

    def advance(self, until):
        """Run the copies till ``until``, the router placing each request as it comes."""
        coming = self.coming
        while coming and coming[0][0] <= until:
            at = coming[0][0]
            self._run(at)
            while coming and coming[0][0] <= at:
                self._place(heapq.heappop(coming)[1])
        self._run(until)

    def _place(self, request):
        engines = self.engines
        if self.shared is not None:
            free = [] if self.shared else [e.scheduler for e in engines if e.scheduler.has_room(request)]
            if not free:
                self.shared.append(request)
                return
            min(free, key=_running).waiting.own.append(request)
            return
        if self.router == "round-robin":
            k = self.turn % len(engines)
            self.turn += 1
        else:
            k = min(range(len(engines)), key=lambda k: engines[k].scheduler.in_flight)
        scheduler = engines[k].scheduler
        scheduler.waiting.append(request)
        scheduler.in_flight += 1

    def _run(self, until):
        """Every copy till ``until``. While requests wait in the one queue, the copies share it: the copy
        furthest behind in time runs till it passes the next, so that each request goes to the first with room."""
        engines = self.engines
        while self.shared:
            first = min(engines, key=_now)
            if first.now >= until:
                return
            behind = min((engine.now for engine in engines if engine is not first), default=math.inf)
            _run_engine(first, min(until, behind if behind > first.now else math.nextafter(first.now, math.inf)))
        for engine in engines:
            if engine.now < until:
                _run_engine(engine, until)


def _now(engine):
    return engine.now


def _running(scheduler):
    return scheduler.running


def _run_engine(engine, until):
    engine.scheduler.horizon = until
    engine.run(until)


class _Handoff:
    """What a prefill copy does with a request whose prompt it has read (its first token made at ``now``):
    its cache crosses the link to the decode stage, and its first token reaches the user when the cache lands."""

    def __init__(self, requests, transfer, decoders):
        self.requests, self.transfer, self.decoders = requests, transfer, decoders
        self.log, self.runs = StepLog(), []      # each transfer, as a step that carries the first token

    def __call__(self, k, prefilled, now):
        i = prefilled.index
        seconds = self.transfer[i]
        landed = now + seconds
        self.runs.append((i, len(self.log.end), len(self.log.end)))
        self.log.step(landed, seconds, 0, 0)
        self.log.memory(0, 0)
        r = self.requests[i]
        r.first_token = landed
        if r.reply == 1:
            r.finish = landed
            return
        r.state, r.start_len, r.generated = SWAPPED, r.prompt, 1
        self.decoders.send(i, landed)


def _arrivals(server: Server, work: Workload):
    """When each request reaches the router: after the API server's ``request_time``, one after another, then its
    own ``request_latency``."""
    if not (server.request_time or server.request_latency):
        return work.arrival.tolist()
    return _Client(work, None, server.request_time, server.request_latency).entry


def _result(server, work, parts, requests, replica, transfer) -> ClusterSimulation:
    """The run of ``parts`` (each a log and its runs), their steps one part after another."""
    log, runs = StepLog(), []
    for part, part_runs in parts:
        offset = len(log.end)
        for name in ("end", "time", "decodes", "held", "used"):
            getattr(log, name).extend(getattr(part, name))
        log.extra_tokens.update({offset + step: extra for step, extra in part.extra_tokens.items()})
        runs.extend((i, first + offset, last + offset) for i, first, last in part_runs)
    run = log.simulation(server, work, requests, runs)
    kept = {f.name: getattr(run, f.name) for f in fields(Simulation) if f.name != "_cache"}
    return ClusterSimulation(**kept, replica=replica, transfer=transfer)


def simulate_cluster(server: Server, work: Workload, replicas=2, router="one-queue") -> ClusterSimulation:
    """Serve ``work`` on ``replicas`` copies of ``server`` behind a ``router`` (see the module's docstring)."""
    _check.instance("server", server, Server)
    _check.instance("work", work, Workload)
    replicas = _whole("replicas", replicas, 1)
    _choice("router", router, ROUTERS)
    work.check_window(server.model)
    requests = of(work)
    served = np.zeros(len(work), dtype=np.int64)

    def finished(k, r, now):
        served[r.index] = k

    stage = _Stage(server, work, replicas, router, requests, REPLICAS, finished)
    stage.coming = list(zip(_arrivals(server, work), range(len(work))))   # in order of arrival: a heap
    stage.advance(math.inf)
    return _result(server, work, [(engine.log, engine.scheduler.runs) for engine in stage.engines], requests,
                   served, np.zeros(len(work)))


def transfer_time(server: Server, prompt_tokens, link=None):
    """Seconds to ship the cache of ``prompt_tokens`` tokens (``memory.kv_cache_bytes`` at the server's
    ``kv_bits``) to a copy of ``server`` over ``link`` (a key or name of a link ``server``'s GPU can have;
    its fastest if None): the link's latency + bytes ÷ its bandwidth (``parallel.send_time``). Each GPU of
    a tensor-parallel group takes its share of the cache (``Server.kv_share``) over its own link, all at once."""
    _check.instance("server", server, Server)
    channel = link if isinstance(link, Interconnect) else _link(server.gpu, link)
    return send_time(kv_cache_bytes(server.model, prompt_tokens, 1, server.kv_bits) * server.kv_share, channel)


def simulate_disaggregated(prefill: Server, decode: Server, work: Workload, prefill_instances=1,
                           decode_instances=1, link=None, router="one-queue") -> ClusterSimulation:
    """Serve ``work`` with prompts read on ``prefill_instances`` copies of ``prefill`` and replies written on
    ``decode_instances`` copies of ``decode``, each cache shipped over ``link`` between them (a key or
    name of a link both GPUs can have; the fastest if None), ``router`` placing requests in each stage
    (see the module's docstring)."""
    _check.instance("prefill", prefill, Server)
    _check.instance("decode", decode, Server)
    _check.instance("work", work, Workload)
    prefill_instances = _whole("prefill_instances", prefill_instances, 1)
    decode_instances = _whole("decode_instances", decode_instances, 1)
    _choice("router", router, ROUTERS)
    if decode.model != prefill.model:
        raise ValueError(f"decode must serve the prefill server's model, {prefill.model.name}, got {decode.model.name}")
    if decode.memory != "paged":
        raise ValueError(f"decode must hold caches in paged memory, to take each as it lands, got "
                         f"memory={decode.memory!r}")
    channel = _link(prefill.gpu, link)
    _link(decode.gpu, channel.key)
    work.check_window(decode.model)
    transfer = np.asarray(transfer_time(decode, work.prompt, channel), dtype=float)
    requests = of(work)
    served = np.zeros(len(work), dtype=np.int64)

    def finished(k, r, now):
        served[r.index] = k

    decoders = _Stage(decode, work, decode_instances, router, requests, DECODERS, finished)
    first = workload(work.arrival, work.prompt, np.ones_like(work.reply), work.label)   # each prompt to its first token
    handoff = _Handoff(requests, transfer, decoders)
    prefills = _Stage(prefill, first, prefill_instances, router, of(first), REPLICAS, handoff)
    arrivals = _arrivals(prefill, work)
    prefills.coming = list(zip(arrivals, range(len(work))))
    for at in arrivals + [math.inf]:
        prefills.advance(at)       # every transfer that lands by ``at`` has begun
        decoders.advance(at)
    parts = ([(engine.log, ()) for engine in prefills.engines] + [(handoff.log, handoff.runs)]
             + [(engine.log, engine.scheduler.runs) for engine in decoders.engines])
    return _result(decode, work, parts, requests, served, transfer)
