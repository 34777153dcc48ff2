"""Who runs in each step: one scheduler per policy, each with one ``schedule()``, as nano-vllm's
``nanovllm/engine/scheduler.py`` has one, and a ``postprocess()`` that takes in what the step made.

Every policy admits the requests waiting first come first served, while places (``max_running``), memory
and the step's token budget allow, and each decoding user's next token rides in every step. They differ in
when they admit and how they carry prompts:

- ``Static``: request-level scheduling, the systems before Orca: a batch forms when the last one is over;
- ``Continuous``: Orca's iteration-level scheduling with selective batching: a prompt joins at any step,
  prefilled whole beside everyone's next token;
- ``Chunked``: Sarathi-Serve and vLLM's V1 engine: next tokens first, then pieces of prompts in the room
  the step's token budget leaves.

Whether a step may mix prompts and next tokens at all (vLLM V0's steps of prompts alone, SGLang's unless
started with ``--enable-mixed-chunk``) is the step clock's to time: such a step runs as two.

When a decoding user's cache needs a block and none is free, the user admitted last is preempted
(vLLM's policy): its blocks are freed, and it waits at the head of the queue to be prefilled again or
copied back from the host.
"""
from __future__ import annotations

import heapq
import math
from collections import deque

from .blocks import BlockManager
from .requests import DECODING, FINISHED, PREFILLING, SWAPPED, WAITING, Decoding, Request, of


class Batch:
    """A step's work beyond the next tokens: prompt ``pieces`` (request, new tokens, cached tokens), the
    caches copied to or from the host (``copies``, their lengths), the users ``resumed`` from the host
    (they decode in the step but make no token in it), and the tokens the step may still take (``budget``)."""

    def __init__(self, budget):
        self.budget = budget
        self.pieces = []
        self.copies = []
        self.resumed = set()

    def add(self, i, new, cached):
        """Request ``i`` reads ``new`` tokens of its prompt over ``cached`` ones."""
        self.pieces.append((i, new, cached))
        self.budget -= new


class Scheduler:
    """What every policy shares: the queue, admission, preemption and the end of each step."""

    chunks = False

    def __init__(self, server, work, arrival, client=None, requests=None):
        # ``requests``: the requests' states, where several engines share them (a cluster's replicas)
        self.requests = of(work) if requests is None else requests
        self.arrival, self.client = arrival, client   # when each request reaches the engine
        self.blocks = BlockManager(server, work)
        self.decoding = Decoding(self.requests, self.blocks)
        self.budget_cap = server.token_budget
        self.decodes_in_budget = server.mixed_steps   # where prompts have steps of their own, they have the budget
        self.max_running, self.admit_every = server.max_running, server.admit_every
        self.swap = server.preemption == "swap"
        self.waiting = deque()
        self.prefilling = []     # requests part-way through their prompt (chunked), first come first served
        self.admitted = []       # (request, version) in order of admission: the last is preempted first
        self.running = 0         # requests holding a place
        self.pre_cached = 0      # tokens cached by requests part-way through their prompt
        self.arrived = self.done = 0
        self.runs = []           # (request, step of a run's first token, step of its last)

    @property
    def next_arrival(self):
        """When the next request not yet queued reaches the engine (infinite when none is left)."""
        return self.arrival[self.arrived] if self.arrived < len(self.arrival) else math.inf

    @property
    def arrivals_left(self):
        """Whether any request is still to reach the engine."""
        return self.arrived < len(self.arrival)

    def take_arrivals(self, now):
        """Queue every request that has reached the engine by ``now``."""
        while self.arrived < len(self.arrival) and self.arrival[self.arrived] <= now:
            self.waiting.append(self.arrived)
            self.arrived += 1

    @property
    def idle(self):
        """Whether the engine has nothing to do till the next arrival."""
        return not self.decoding.users and not self.prefilling and not self.waiting

    def step_budget(self):
        """Tokens a step may take in beyond the next tokens it must carry."""
        return self.budget_cap

    def blocks_to_admit(self, r: Request):
        """Blocks ``r`` takes as it is admitted: its cache copied back from the host, or its next prefill's."""
        return self.blocks.of(r.start_len) if r.state == SWAPPED else self.blocks.to_admit(r)

    def admits_no_one(self):
        """Whether no one waiting is admitted until someone finishes or is preempted, while the users decoding
        only grow their caches: the places, the step's budget or the memory the request at the head of the
        line needs are taken (first come first served), and growing caches only take more. (The first request a
        step admits is held to these alone under every policy but static, which overrides this.)"""
        if self.running >= self.max_running or self.step_budget() <= 0:
            return True
        r = self.requests[self.waiting[0]]
        return not self.blocks.fits(self.blocks_to_admit(r), self.running)

    def admit(self, batch: Batch, step):
        """Admit waiting requests while places, memory and the budget allow (with ``admit_every`` above 1,
        only every so many steps while anyone decodes)."""
        decoding, requests = self.decoding, self.requests
        while (self.waiting and self.running < self.max_running and batch.budget > 0
               and (decoding.users == 0 or step % self.admit_every == 0)):
            r = requests[self.waiting[0]]
            blocks = self.blocks_to_admit(r)
            if not self.fits(r, blocks, batch):
                break
            self.waiting.popleft()
            self.blocks.free -= blocks
            r.version += 1
            self.admitted.append((r.index, r.version))
            self.running += 1
            r.held = blocks
            if r.state == SWAPPED:
                self.swap_in(r, batch, step)
            else:
                r.state, r.prefilled = PREFILLING, 0
                self.first_piece(r, batch)

    def fits(self, r: Request, blocks, batch: Batch):
        """Whether ``r``, taking ``blocks``, is admitted to this step (else admission stops: first come first served)."""
        return self.blocks.fits(blocks, self.running)

    def first_piece(self, r: Request, batch: Batch):
        """The piece of ``r``'s prompt its first step carries: all of it."""
        batch.add(r.index, r.need_tokens, 0)

    def swap_in(self, r: Request, batch: Batch, step):
        """``r`` comes back from the host: its cache is copied in, and it decodes at once."""
        batch.copies.append(r.start_len)
        self.decoding.start(r, r.start_len, step)
        r.run_start = step
        batch.resumed.add(r.index)

    def make_room(self, batch: Batch, step):
        """Take the blocks the users decoding need for ``step``, preempting the latest admitted till they fit."""
        blocks = self.blocks
        if not (blocks.paged and self.decoding.users):
            return
        need = blocks.due(step)
        while need > blocks.free:
            while True:
                i, version = self.admitted.pop()
                r = self.requests[i]
                if r.version == version and r.state in (PREFILLING, DECODING):
                    break
            if r.state == DECODING and blocks.grows(r, step):
                need -= 1           # its block for this step is no longer needed
            self.preempt(r, batch, step)
        blocks.free -= need

    def preempt(self, r: Request, batch: Batch, step):
        """Free ``r``'s blocks and queue it first: to be prefilled again with its reply so far (recompute),
        or to come back from the host as it was (swap)."""
        r.preemptions += 1
        batch.resumed.discard(r.index)
        r.version += 1
        self.running -= 1
        if r.state == DECODING:
            length = r.cache(step)
            self.decoding.stop(r, length)
            self.blocks.free += self.blocks.of(length)
            r.generated += step - r.start_step
            if step - 1 >= r.run_start:
                self.runs.append((r.index, r.run_start, step - 1))
            if self.swap:
                batch.copies.append(length)
                r.state, r.start_len = SWAPPED, length
            else:
                r.state, r.need_tokens = WAITING, r.prompt + r.generated
        else:                       # part-way through its prompt: dropped, to start again
            self.blocks.free += r.held
            self.pre_cached -= r.prefilled
            r.prefilled, r.state = 0, WAITING
            if r.index in self.prefilling:
                self.prefilling.remove(r.index)
            batch.pieces = [p for p in batch.pieces if p[0] != r.index]
        r.held = 0
        self.waiting.appendleft(r.index)

    def postprocess(self, batch: Batch, step, now, prompts_end=None):
        """The step has run, ending at ``now``: every cache grew by its token, prompts read to the end give
        their first token (at ``prompts_end`` where the prompts ran as a step of their own before the next
        tokens'), and replies written to the end finish."""
        first = now if prompts_end is None else prompts_end
        self.decoding.cached += self.decoding.users
        for i, new, _ in batch.pieces:
            r = self.requests[i]
            r.prefilled += new
            self.pre_cached += new
            if r.prefilled < r.need_tokens:
                continue
            self.pre_cached -= r.prefilled
            if self.chunks:
                self.prefilling.remove(i)
            r.generated += 1
            if r.first_token != r.first_token:
                r.first_token = first
            r.run_start = step
            if r.generated >= r.reply:
                self.finish(r, r.held, step, first)
            else:
                self.decoding.start(r, r.need_tokens, step + 1)
        if self.decoding.due(step):
            self.retire(step, now)

    def retire(self, step, now):
        """Finish every decoding user whose last token came in ``step``."""
        finishing = self.decoding.finishing
        while finishing and finishing[0][0] <= step:
            _, i, version = heapq.heappop(finishing)
            r = self.requests[i]
            if version != r.version or r.state != DECODING:
                continue
            length = r.cache(step) + 1
            self.decoding.stop(r, length)
            r.generated = r.reply
            self.finish(r, self.blocks.held_by(r, length), step, now)

    def finish(self, r: Request, blocks, step, now):
        """``r`` wrote its last token in ``step``, holding ``blocks``."""
        r.finish, r.state = now, FINISHED
        self.release(blocks)
        r.held = 0
        self.done += 1
        self.runs.append((r.index, r.run_start, step))
        if self.client is not None:
            self.client.finished(now)

    def release(self, blocks):
        """A finished request's blocks and place are free at once."""
        self.blocks.free += blocks
        self.running -= 1


class Static(Scheduler):
    """Request-level scheduling, as Orca's section 2.2 describes the systems before it: a batch forms only
    when the last is over, from the requests waiting, and runs till every request in it is done. A user
    done early keeps its place and its memory till the batch ends; no one joins and no one is preempted
    mid-batch. So that no one need be, under paged memory the batch takes only requests whose whole
    conversations fit the free memory (each reply's length known in advance, as the vLLM paper's Orca
    (Oracle) knows it); under reserved memory, their reservations. Its empty places cost no arithmetic
    here, and each token is timed as it is made, as if streamed (Orca's systems returned a request only
    when its batch ended)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.kept_blocks = 0     # blocks of users done before their batch, held till it ends
        self.kept_places = 0     # their places in the batch
        self.promised = self.room = 0

    def schedule(self, step) -> Batch:
        """The batch's next step; a new batch, when the last is over."""
        batch = Batch(self.step_budget())
        if not self.decoding.users and not self.prefilling:
            # The batch is over: its users leave and their memory is free for the next one.
            self.blocks.free += self.kept_blocks
            self.running -= self.kept_places
            self.kept_blocks = self.kept_places = 0
            self.promised, self.room = 0, self.blocks.free
            self.admit(batch, step)
        self.make_room(batch, step)
        return batch

    def step_budget(self):
        """No cap: a batch's prompts are read in its first step."""
        return math.inf

    def admits_no_one(self):
        """While a batch runs, always: the next forms when it is over."""
        return True

    def fits(self, r: Request, blocks, batch: Batch):
        """Under paged memory, whether ``r``'s whole conversation fits beside those promised room already."""
        if not self.blocks.paged:
            return super().fits(r, blocks, batch)
        whole = self.blocks.of(r.prompt + r.reply)   # room for the whole conversation
        if self.promised + whole > self.room:
            return False
        self.promised += whole
        return True

    def preempt(self, r: Request, batch: Batch, step):
        """Never: a static batch was admitted with room for every conversation in it."""
        raise AssertionError("a static batch outgrew the memory it was admitted to")

    def release(self, blocks):
        """A finished request's blocks and place are kept till its batch ends."""
        self.kept_blocks += blocks
        self.kept_places += 1


class Continuous(Scheduler):
    """Iteration-level scheduling with selective batching, Orca's design: at every step, waiting requests
    join as memory allows, and a joining prompt is prefilled whole in the same step as everyone's next
    token, while the prompts in the step stay within the budget (``token_budget``, at least the model's
    window, so that any prompt fits a step alone)."""

    def schedule(self, step) -> Batch:
        """Everyone's next token, and whole prompts joining as places, memory and the budget allow."""
        batch = Batch(self.step_budget())
        self.admit(batch, step)
        self.make_room(batch, step)
        return batch

    def fits(self, r: Request, blocks, batch: Batch):
        """As every policy, and a prompt after the step's first only where the budget holds it whole."""
        if batch.pieces and r.state != SWAPPED and r.need_tokens > batch.budget:
            return False
        return Scheduler.fits(self, r, blocks, batch)   # named, not super(): asked of each request a step tries to admit


class Chunked(Scheduler):
    """Chunked prefill (Sarathi-Serve; vLLM's V1 engine): every step carries at most ``token_budget``
    tokens, each running user's next token first, then the prompts already begun, then new ones, each
    cut to the room left."""

    chunks = True

    def schedule(self, step) -> Batch:
        """Everyone's next token, then the prompts begun, then new ones, till the budget is spent."""
        batch = Batch(self.step_budget())
        for i in self.prefilling:
            if batch.budget <= 0:
                break
            r = self.requests[i]
            batch.add(i, min(batch.budget, r.need_tokens - r.prefilled), r.prefilled)
        self.admit(batch, step)
        self.make_room(batch, step)
        return batch

    def step_budget(self):
        """The token budget less the next tokens, where they count in it."""
        return self.budget_cap - (self.decoding.users if self.decodes_in_budget else 0)

    def first_piece(self, r: Request, batch: Batch):
        """As much of ``r``'s prompt as the budget leaves room for; the rest in the steps after."""
        self.prefilling.append(r.index)
        batch.add(r.index, min(batch.budget, r.need_tokens), 0)

    def swap_in(self, r: Request, batch: Batch, step):
        """As every policy, its next token counted in the budget."""
        super().swap_in(r, batch, step)
        batch.budget -= 1


SCHEDULERS = {"static": Static, "continuous": Continuous, "chunked": Chunked}
