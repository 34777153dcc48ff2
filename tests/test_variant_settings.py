"""The simulator settings lesson 3's templates draw from (``servingmath.variants``): every rate, budget, target and
limit a run that finishes and means what its problem says.

Its own module, so that ``make unit`` runs it in the other process from the one that draws a thousand students
(tests/conftest.py starts the two side by side): the two share the simulations, kept on disk (``servingmath._kept``),
each computing those the other has not yet.
"""
import numpy as np

from servingmath import variants
from servingmath.hardware import CATALOG


def test_the_simulator_settings_drawn_are_runs_that_finish_and_mean_what_the_problems_say():
    """Every rate, budget, target and limit a lesson-3 template draws: the run finishes every request, a
    rate "past the knee" is past it, each limit is crossed between two of the plate's rates, each target has
    a goodput of its own."""
    from servingmath import load

    for rate in set(variants.THROUGHPUT_RATES):
        assert np.isfinite(load.run(rate, policy="static").finish).all(), rate
    for key in variants.SERVING_GPUS:
        for rate in set(variants.STATIC_RATES) | set(variants.STATIC_QUEUE_RATES):
            assert np.isfinite(load.run(rate, policy="static", gpu=CATALOG[key]).finish).all(), (key, rate)
    for rate in set(variants.MEDIAN_RATES) | set(variants.KNEE_RATES) | set(variants.PLATE_4_RATES):
        assert np.isfinite(load.run(rate).finish).all(), rate
        assert np.isfinite(load.run(rate, policy="chunked").finish).all(), rate
    for rate in variants.CHUNKED_RATES:
        assert np.isfinite(load.run(rate, policy="chunked").finish).all(), rate
    for key, lowest in variants.SAVING_FROM.items():     # what chunking saves: half a millisecond or more
        for rate in [rate for rate in variants.PLATE_4_RATES if rate >= lowest]:
            gaps = [load.figures(load.run(rate, policy=policy, gpu=CATALOG[key]), rate).tbt_p99
                    for policy in ("continuous", "chunked")]
            assert gaps[0] - gaps[1] > 0.5e-3, (key, rate, gaps)
    idle = load.figures(load.run(1), 1).ttft_p99
    for rate in variants.KNEE_RATES:
        assert load.figures(load.run(rate), rate).ttft_p99 > 10 * idle, rate
    for key, highest in variants.MEDIAN_GPUS.items():     # continuous batching's gaps, asked below each GPU's knee
        gpu = CATALOG[key]
        idle_there = load.figures(load.run(1, gpu=gpu), 1).ttft_p99
        for rate in [rate for rate in variants.MEDIAN_RATES if rate <= highest]:
            assert load.figures(load.run(rate, gpu=gpu), rate).ttft_p99 < 2 * idle_there, (key, rate)
    curve = load.load_curve("continuous")
    for limits, values in ((variants.TTFT_LIMITS_MS, curve.ttft_p99), (variants.TBT_LIMITS_MS, curve.tbt_p99)):
        for limit in limits:    # the line rises through each limit once, between two of the plate's rates
            crossed = values >= limit / 1e3
            assert crossed.any() and not crossed[0] and (np.diff(crossed.astype(int)) >= 0).all(), limit
    rates = [load.capacity(100, ttft=ttft, tpot=tpot).goodput.rate for ttft, tpot in variants.TARGETS]
    assert min(rates) > 0 and len(set(rates)) == len(rates), rates
