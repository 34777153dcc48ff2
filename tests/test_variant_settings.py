"""The simulator settings lesson 3's templates draw from (``servingmath.variants``): every rate, budget, target and
limit a run that finishes and means what its problem says.

A test for each kind of setting, each its own unit of work for ``make unit`` (tests/conftest.py starts them first,
the longest first, beside the process that draws a thousand students): the processes share the simulations, kept
on disk (``servingmath._kept``), each computing those no other has yet.
"""
import numpy as np

from servingmath import load, variants
from servingmath.hardware import CATALOG


def test_each_pair_of_targets_drawn_has_a_goodput_of_its_own():
    rates = [load.capacity(100, ttft=ttft, tpot=tpot).goodput.rate for ttft, tpot in variants.TARGETS]
    assert min(rates) > 0 and len(set(rates)) == len(rates), rates


def test_chunking_saves_half_a_millisecond_or_more_of_the_p99_gap_at_every_rate_drawn_on_each_gpu():
    for key, lowest in variants.SAVING_FROM.items():
        for rate in [rate for rate in variants.PLATE_4_RATES if rate >= lowest]:
            gaps = [load.figures(load.run(rate, policy=policy, gpu=CATALOG[key]), rate).tbt_p99
                    for policy in ("continuous", "chunked")]
            assert gaps[0] - gaps[1] > 0.5e-3, (key, rate, gaps)


def test_every_rate_continuous_and_chunked_batching_are_drawn_at_finishes_every_request():
    for rate in set(variants.MEDIAN_RATES) | set(variants.KNEE_RATES) | set(variants.PLATE_4_RATES):
        assert np.isfinite(load.run(rate).finish).all(), rate
        assert np.isfinite(load.run(rate, policy="chunked").finish).all(), rate
    for rate in variants.CHUNKED_RATES:
        assert np.isfinite(load.run(rate, policy="chunked").finish).all(), rate


def test_continuous_batchings_gaps_are_asked_below_each_gpus_knee():
    for key, highest in variants.MEDIAN_GPUS.items():
        gpu = CATALOG[key]
        idle_there = load.figures(load.run(1, gpu=gpu), 1).ttft_p99
        for rate in [rate for rate in variants.MEDIAN_RATES if rate <= highest]:
            assert load.figures(load.run(rate, gpu=gpu), rate).ttft_p99 < 2 * idle_there, (key, rate)


def test_every_rate_a_static_batch_is_drawn_at_on_each_gpu_finishes_every_request():
    for key in variants.SERVING_GPUS:
        for rate in set(variants.STATIC_RATES) | set(variants.STATIC_QUEUE_RATES):
            assert np.isfinite(load.run(rate, policy="static", gpu=CATALOG[key]).finish).all(), (key, rate)


def test_every_rate_a_static_batch_is_drawn_at_finishes_every_request():
    for rate in set(variants.THROUGHPUT_RATES):
        assert np.isfinite(load.run(rate, policy="static").finish).all(), rate


def test_a_rate_drawn_past_the_knee_is_past_it():
    idle = load.figures(load.run(1), 1).ttft_p99
    for rate in variants.KNEE_RATES:
        assert load.figures(load.run(rate), rate).ttft_p99 > 10 * idle, rate


def test_each_limit_drawn_is_crossed_once_between_two_of_the_plates_rates():
    curve = load.load_curve("continuous")
    for limits, values in ((variants.TTFT_LIMITS_MS, curve.ttft_p99), (variants.TBT_LIMITS_MS, curve.tbt_p99)):
        for limit in limits:    # the line rises through each limit once, between two of the plate's rates
            crossed = values >= limit / 1e3
            assert crossed.any() and not crossed[0] and (np.diff(crossed.astype(int)) >= 0).all(), limit
