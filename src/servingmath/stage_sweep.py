"""Lesson 4 Part 2's verdict on decode, swept over every setting of its live pipeline explorer (its finer steps of
users included): where stages give the same users more tokens a second than Part 1's split, and the largest share
of a token's time the sends take. The explorer draws; the sweep is arithmetic over its menus, so it lives here."""
from __future__ import annotations

import functools
import itertools

from . import memory
from .explorers import lesson_4 as menus


@functools.cache
def settings() -> tuple:
    """Every setting of the live pipeline explorer, its finer steps of users included, on two or more GPUs where the
    stages fit: (model, link, users in all, the stages' step, Part 1's split of the same users, or None where it
    does not fit)."""
    found, splits = [], {}    # Part 1's split by (model, link, GPUs, users), shared by every batch × micro-batches
    for model, link, gpus, batch, micro in itertools.product(menus.MODELS_SHOWN, menus.MACHINES, menus.GPUS[1:],
                                                             menus.FINE_BATCHES, menus.GPUS):
        try:
            staged = menus._pipeline(gpus, link, batch, micro, model)
        except memory.DoesNotFit:
            continue
        key = (model, link, gpus, batch * micro)
        if key not in splits:
            try:
                splits[key] = menus._step(gpus, link, batch * micro, model)
            except memory.DoesNotFit:
                splits[key] = None
        found.append((model, link, batch * micro, staged, splits[key]))
    return tuple(found)


def sends_most(model: str) -> float:
    """The largest share of the time between a user's tokens the sends take, over every setting of the live pipeline
    explorer for ``model``."""
    if model not in menus.MODELS_SHOWN:
        raise ValueError(f"model must be one of the explorer's {menus.MODELS_SHOWN}, got {model!r}")
    return max((s.stages - 1) * s.send_time / s.interval for key, *_, s, _ in settings() if key == model)


def stages_ahead() -> dict:
    """Where stages give the same users more decode tokens a second than Part 1's split, over every setting of the
    live pipeline explorer: {model: {link: the fewest users in all}}, each model and link where they do at some
    setting."""
    found = {}
    for model, link, users, staged, split in settings():
        if split is not None and staged.interval < split.time:
            fewest = found.setdefault(model, {})
            fewest[link] = min(fewest.get(link, users), users)
    return found
