"""The benchmark's client and the engine's API server: when each request reaches the engine."""
from __future__ import annotations

import math

from ..workload import Workload, workload


def _sent(work: Workload, client) -> Workload:
    """``work`` as the client sent it: each request's time is when it left the client."""
    return workload(client.sent, work.prompt, work.reply, work.label)


class _Client:
    """The benchmark's client and the engine's API server in front of the engine.

    The client sends each request at its time in the workload, or, with ``concurrency``, once fewer
    than that many of its requests are in flight (as ``--max-concurrency`` does in vLLM's and SGLang's
    benchmarks: a request waits for a free place, and its clock starts when it is sent). The API server
    takes ``request_time`` seconds for each request (HTTP, the chat template, tokenizing), one request
    after another, before the engine sees it; each request then takes ``request_latency`` seconds more, on its
    own, in the hops between processes that no one request holds up for another. ``entry`` is when each
    request reaches the engine (infinite while not yet sent); ``sent`` when each left the client."""

    def __init__(self, work: Workload, concurrency, request_time, request_latency=0.0):
        self.arrival = work.arrival.tolist()
        self.sent = list(self.arrival)
        self.entry = [math.inf] * len(work)
        self.request_time, self.request_latency = request_time, request_latency
        self.api_free = 0.0
        self.next = len(work) if concurrency is None else min(concurrency, len(work))
        for k in range(self.next):
            self._send(k, self.arrival[k])

    def _send(self, k, at):
        self.sent[k] = at
        self.api_free = max(at, self.api_free) + self.request_time
        self.entry[k] = self.api_free + self.request_latency

    def finished(self, now):
        """A request has finished at ``now``: under a concurrency cap the next one is sent."""
        if self.next < len(self.entry):
            self._send(self.next, max(now, self.arrival[self.next]))
            self.next += 1
