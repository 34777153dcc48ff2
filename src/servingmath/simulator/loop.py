"""The engine's loop: schedule, time, postprocess, a step at a time, for one server.

``Engine`` holds what the loop carries from step to step (the scheduler, the step clock, the log, the step
and the time), so that a run may stop at a time and go on later: ``simulate`` runs one engine to the end, and
``cluster`` runs several side by side, each stopped whenever the router has a request to place.
"""
from __future__ import annotations

import math

from .clock import StepClock, clock_of
from .results import StepLog
from .schedulers import Scheduler


class Engine:
    """One server's engine: its ``scheduler``, its step ``clock`` (``clock.clock_of``: shared by servers alike in
    what times a step, as it holds only tables of their costs), its ``log``, the ``step`` it is at and the time, ``now``."""

    def __init__(self, server, scheduler: Scheduler, clock: StepClock | None = None):
        self.server, self.scheduler = server, scheduler
        self.clock = clock_of(server) if clock is None else clock
        self.log = StepLog()
        self.step, self.now = 0, 0.0

    def run(self, until=math.inf, total=math.inf):
        """Run steps till ``total`` requests are done, or till the time is ``until`` or later (a step begun
        before ``until`` runs to its end)."""
        scheduler, clock, log, server = self.scheduler, self.clock, self.log, self.server
        seconds_by_users = clock.decode_only_by_users
        appends = log.appends()
        step, now = self.step, self.now
        while scheduler.done < total and now < until:
            scheduler.take_arrivals(now)
            if scheduler.idle:
                now = scheduler.next_arrival
                continue
            decoding = scheduler.decoding
            if clock.linear and decoding.users and not scheduler.prefilling:
                # Most steps: next tokens only, till something changes. With no one waiting, till someone
                # arrives; with the line closed to the one at its head, arrivals change nothing till someone
                # finishes (each such step timed as ``clock.step`` times it when the loop below runs it).
                if not scheduler.waiting:
                    seconds_of = seconds_by_users.get(decoding.users)
                    if seconds_of is None:
                        seconds_of = clock.decode_only(decoding.users)
                    step, now, blocked = _decode_steps(scheduler, seconds_of, log, appends, step, now,
                                                       min(until, scheduler.next_arrival))
                    if not blocked:
                        continue
                elif scheduler.admits_no_one():
                    step, now, blocked = _decode_steps(scheduler, clock.decode_step(decoding.users, server.mixed_steps),
                                                       log, appends, step, now, until)
                    if not blocked:
                        continue
            batch = scheduler.schedule(step)                # who runs, preempting for room where needed
            decoding = scheduler.decoding
            tokens = decoding.users
            for piece in batch.pieces:
                tokens += piece[1]
            if tokens == 0:
                # Everyone admitted was preempted again before the step ran: wait for the next arrival or finish.
                if not scheduler.waiting or not scheduler.arrivals_left:
                    raise AssertionError("the engine stalled with nothing to run")
                now = max(now, scheduler.next_arrival)
                continue
            waited = clock.copy_time(batch.copies, server.swap_bandwidth)
            seconds = clock.step(tokens, decoding.users, decoding.cached, lambda: decoding.caches(step), batch.pieces,
                                 waited, server.mixed_steps)
            # Where prompts and next tokens may not share a step, the prompts' step runs first: their first
            # tokens come out at its end, before the next tokens' step.
            prompts_end = None
            if not server.mixed_steps and decoding.users and batch.pieces:
                prompts_end = now + clock.step(tokens - decoding.users, 0, 0, tuple, batch.pieces, waited)
            now += seconds                                  # the step runs
            log.step(now, seconds, decoding.users - len(batch.resumed), tokens)
            scheduler.postprocess(batch, step, now, prompts_end)
            log.memory(scheduler.blocks.held_tokens(), decoding.cached + scheduler.pre_cached)
            step += 1
        self.step, self.now = step, now


def _decode_steps(scheduler: Scheduler, seconds_of, log: StepLog, appends, step, now, until):
    """Steps of next tokens only, each ``seconds_of(cached)`` long (the users' caches' tokens in all), until
    ``until`` (the next arrival where anyone arriving may join), someone finishes or someone needs a block that
    is not free: the loop's steps with nothing else in them (most of an hour's steps), run with their sums held
    in locals. Returns the next step, the time, and whether a step was blocked for want of a block (the loop's
    next step then preempts someone)."""
    decoding, blocks = scheduler.decoding, scheduler.blocks
    users, cached, pre_cached = decoding.users, decoding.cached, scheduler.pre_cached
    last = decoding.finishing[0][0]          # the step of the next last token: no one else finishes before it
    due = blocks.per_step if blocks.paged else None
    block_tokens, total, free = blocks.block_tokens, blocks.total, blocks.free
    end, time, decodes, held, used = appends
    blocked = False
    while True:
        if due is not None:
            need = due[step % block_tokens]
            if need > free:
                blocked = True
                break
            free -= need
        seconds = seconds_of(cached)
        now += seconds
        end(now)
        time(seconds)
        decodes(users)
        cached += users
        if last <= step:
            blocks.free, decoding.cached = free, cached
            scheduler.retire(step, now)
            log.memory(blocks.held_tokens(), decoding.cached + scheduler.pre_cached)
            return step + 1, now, False
        held((total - free) * block_tokens)
        used(cached + pre_cached)
        step += 1
        if until <= now:
            break
    blocks.free, decoding.cached = free, cached
    return step, now, blocked
