"""Lesson 4 Part 4's package: layouts of a pool, their runs and goodput, and the split of GPUs between the stages."""
import math

import numpy as np
import pytest

from servingmath import disaggregation as D
from servingmath import hardware, memory, parallel, simulator
from servingmath.simulator import cluster
from servingmath.simulator.goodput import highest_rate
from servingmath.workload import poisson_workload


def test_layouts_are_the_gpus_colocated_then_every_split_fewest_prefill_first():
    found = D.layouts(4)
    assert [layout.name for layout in found] == ["4 colocated", "1 prefill + 3 decode", "2 prefill + 2 decode",
                                                "3 prefill + 1 decode"]
    assert all(layout.gpus == 4 for layout in found) and found[0].colocated and not found[1].colocated


@pytest.mark.parametrize("call, message", [
    (lambda: D.Layout(-1, 3), "prefill must be at least 0"),
    (lambda: D.Layout(1, 0), "decode must be at least 1"),
    (lambda: D.layouts(1), "gpus must be at least 2"),
    (lambda: D.run(D.Layout(1, 1), 4, "alpaca"), r"lengths must be one of \['long', 'sharegpt'\], got 'alpaca'"),
    (lambda: D.run(D.Layout(1, 1), 0), "rate"),
    (lambda: D.goodput((1, 3), 0.4, 0.015), "layout"),
    (lambda: D.goodput(D.Layout(1, 3), 0, 0.015), "ttft"),
    (lambda: D.best_split(0, 3, 4), "prefill_rate"),
    (lambda: D.best_split(10, 3, 1), "gpus must be at least 2"),
])
def test_bad_input_is_refused_naming_the_argument(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


def test_a_run_is_the_simulators_cluster_or_disaggregated_run_of_the_same_requests():
    work = poisson_workload(6, 200, D.LONG, 0, model=D.load.MODEL)
    split = D.run(D.Layout(1, 2), 6, "long", "roce-400g", 200)
    direct = cluster.simulate_disaggregated(D.server(), D.server(), work, 1, 2, "roce-400g")
    assert np.array_equal(split.ttft, direct.ttft) and np.array_equal(split.transfer, direct.transfer)
    colocated = D.run(D.Layout(0, 2), 6, "long", count=200)
    assert np.array_equal(colocated.ttft, cluster.simulate_cluster(D.server(), work, 2).ttft)
    # Each cache's trip is the link's latency plus its bytes over the link's bandwidth.
    link = hardware.link(D.load.GPU_, "roce-400g")
    assert math.isclose(split.transfer[0], parallel.send_time(memory.kv_cache_bytes(D.load.MODEL, work.prompt[0]), link))


def test_goodput_is_the_highest_rate_whose_run_meets_the_targets():
    layout = D.Layout(1, 1)
    found = D.goodput(layout, 0.4, 0.02, "long", count=300)
    assert found > 0
    rate, _ = highest_rate(lambda r: (D.run(layout, r, "long", "nvlink4", 300).attainment(0.4, 0.02)
                                      >= simulator.ATTAINMENT, None), D.STEPS)
    assert found == rate


def test_the_best_split_is_the_one_whose_slower_stage_serves_most():
    # 10 prompts a second on a prefill GPU, 3 replies a second on a decode GPU, 8 GPUs: 2 prefill serve
    # min(20, 18) = 18, 3 prefill min(30, 15) = 15, 1 prefill min(10, 21) = 10.
    assert D.best_split(10, 3, 8) == (2, 18)
    assert D.best_split(3, 3, 4) == (2, 6)
    # A tie goes to the fewest prefill GPUs: 1 gives min(2, 4) = 2, 2 gives min(4, 2) = 2.
    assert D.best_split(2, 2, 3) == (1, 2)
