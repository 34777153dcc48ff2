"""A request's state as the engine keeps it, and the users decoding, summed as the step clock reads them.

A request waits, is admitted and prefills its prompt (whole, or in pieces under chunking), then decodes a
token a step until its reply is written. Preempted, it waits again: its cache dropped, to be rebuilt by a
prefill of its prompt and the reply so far (recompute), or copied to the host to come back as it was
(swap). vLLM's ``Sequence`` and nano-vllm's ``nanovllm/engine/sequence.py`` keep the same states.
"""
from __future__ import annotations

import heapq

WAITING, PREFILLING, DECODING, FINISHED, SWAPPED = range(5)


class Request:
    """One request: its lengths, its state, and where it stands in its prompt and its reply.

    While it decodes, its cache grows a token a step: it held ``start_len`` tokens at the start of step
    ``start_step``, so ``cache(step)`` needs no update each step. ``version`` counts its admissions, so
    that entries left behind in the engine's queues by an earlier admission are recognised and skipped."""

    __slots__ = ("index", "prompt", "reply", "state", "version", "held", "need_tokens", "prefilled",
                 "generated", "start_len", "start_step", "run_start", "first_token", "finish", "preemptions")

    def __init__(self, index, prompt, reply):
        self.index, self.prompt, self.reply = index, prompt, reply
        self.state = WAITING
        self.version = 0
        self.held = 0                # blocks held while prefilling (and under reserved memory, always)
        self.need_tokens = prompt    # what its next prefill carries: the prompt, and on recompute the reply so far
        self.prefilled = 0
        self.generated = 0           # tokens made, as of the last time it stopped decoding
        self.start_len = self.start_step = 0
        self.run_start = 0           # the step of the first token of its current run (between preemptions)
        self.first_token = self.finish = float("nan")
        self.preemptions = 0

    def cache(self, step):
        """Tokens in its cache at the start of ``step``, while it decodes."""
        return self.start_len + step - self.start_step


def of(work):
    """A request for each of ``work``'s, waiting, in order of arrival."""
    return [Request(i, p, r) for i, (p, r) in enumerate(zip(work.prompt.tolist(), work.reply.tolist()))]


class Decoding:
    """The users decoding: how many (``users``), their caches' tokens at the start of the coming step in all
    (``cached``), and a heap of the step at which each writes its last token (``finishing``). The step
    clock needs no more than the two sums where a user's decode costs grow in a straight line with its
    cache; ``ids`` lists them for the models where they do not. ``blocks`` learns at which step each will
    need its next block."""

    def __init__(self, requests, blocks):
        self.requests, self.blocks = requests, blocks
        self.ids = set()
        self.users = 0
        self.cached = 0
        self.finishing = []          # (last step, request, version)

    def start(self, r: Request, length, step):
        """``r`` decodes from ``step`` on, its cache holding ``length`` tokens then."""
        r.state, r.start_len, r.start_step = DECODING, length, step
        self.ids.add(r.index)
        self.users += 1
        self.cached += length
        self.blocks.track(step - length, 1)
        heapq.heappush(self.finishing, (step + r.reply - r.generated - 1, r.index, r.version))

    def stop(self, r: Request, length):
        """``r`` stops decoding, its cache holding ``length`` tokens."""
        self.ids.discard(r.index)
        self.users -= 1
        self.cached -= length
        self.blocks.track(r.start_step - r.start_len, -1)

    def due(self, step):
        """Whether someone's last token is in ``step``."""
        return bool(self.finishing) and self.finishing[0][0] <= step

    def caches(self, step):
        """Each decoding user's cache at the start of ``step``."""
        requests = self.requests
        return [requests[i].cache(step) for i in self.ids]
