"""The roofline: a pass takes as long as the slower of its arithmetic and its memory traffic.

time = max(FLOPs ÷ (compute efficiency × peak FLOP/s),
           bytes ÷ (bandwidth efficiency × bandwidth)) + fixed overhead
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _check


@dataclass(frozen=True)
class Assumptions:
    """How an estimate treats the hardware and what it counts.

    ``compute_efficiency`` and ``bandwidth_efficiency`` are the fractions of peak a
    real program reaches; ``overhead`` is seconds added to every pass (kernel
    launches, sampling, the scheduler). ``attention`` is how attention among tokens
    is counted (``"causal"``, ``"full"`` or ``"none"``) and ``kv_cache`` whether the
    cache's bytes are read and written.
    """

    compute_efficiency: float = 1.0
    bandwidth_efficiency: float = 1.0
    overhead: float = 0.0
    attention: str = "none"
    kv_cache: bool = False
    label: str = ""

    def __post_init__(self):
        _check.fraction("compute_efficiency", self.compute_efficiency)
        _check.fraction("bandwidth_efficiency", self.bandwidth_efficiency)
        _check.finite("overhead", self.overhead, minimum=0)
        if self.attention not in ("causal", "full", "none"):
            raise ValueError(f"attention must be 'causal', 'full' or 'none', got {self.attention!r}")
        if not isinstance(self.kv_cache, bool):
            raise TypeError(f"kv_cache must be True or False, got {self.kv_cache!r}")


# Lesson 1: the spec sheet's peaks reached exactly, nothing else counted.
LESSON = Assumptions(label="lesson: 100 % of peak, no overhead, weights only")
# Plate XXIII.1: a realistic fraction of peak, a per-pass overhead, attention and the cache counted.
PLATE = Assumptions(compute_efficiency=0.6, bandwidth_efficiency=0.8, overhead=0.2e-3,
                    attention="causal", kv_cache=True,
                    label="plate: 60 % compute, 80 % bandwidth, 0.2 ms a pass")


def ridge_point(peak_flops, bandwidth):
    """FLOPs a GPU can do in the time it reads one byte: peak FLOP/s ÷ bytes/s."""
    return _check.positive("peak_flops", peak_flops) / _check.positive("bandwidth", bandwidth)


def attainable_flops(intensity, peak_flops, bandwidth):
    """The roofline itself: min(peak, intensity × bandwidth), in FLOP/s."""
    intensity = _check.number("intensity", intensity, minimum=0)
    peak_flops = _check.positive("peak_flops", peak_flops)
    bandwidth = _check.positive("bandwidth", bandwidth)
    return np.minimum(peak_flops, intensity * bandwidth)


@dataclass(frozen=True)
class PassTime:
    """The time of one pass and what set it."""

    compute_time: object
    memory_time: object
    overhead: float

    @property
    def time(self):
        return np.maximum(self.compute_time, self.memory_time) + self.overhead

    @property
    def compute_bound(self):
        """True where arithmetic, not memory, sets the time."""
        return np.asarray(self.compute_time) > np.asarray(self.memory_time)

    @property
    def bound(self):
        """``"compute"`` or ``"memory"`` (an array of them when swept)."""
        labels = np.where(self.compute_bound, "compute", "memory")
        return str(labels) if labels.ndim == 0 else labels


def pass_time(flops, bytes_moved, peak_flops, bandwidth, assumptions: Assumptions = LESSON) -> PassTime:
    """Time of a pass doing ``flops`` and moving ``bytes_moved`` on a GPU of the given peaks."""
    flops = _check.number("flops", flops, minimum=0)
    bytes_moved = _check.number("bytes_moved", bytes_moved, minimum=0)
    peak_flops = _check.positive("peak_flops", peak_flops)
    bandwidth = _check.positive("bandwidth", bandwidth)
    _check.instance("assumptions", assumptions, Assumptions)
    return PassTime(
        compute_time=flops / (assumptions.compute_efficiency * peak_flops),
        memory_time=bytes_moved / (assumptions.bandwidth_efficiency * bandwidth),
        overhead=assumptions.overhead,
    )
