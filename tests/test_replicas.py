"""Lesson 4 Part 3's runs (``servingmath.replicas``): copies of a server behind a router, and eight GPUs cut
into copies, read as the page reads them."""
import pytest

from servingmath import load, replicas, simulator


def test_one_copy_behind_any_router_is_one_server_s_run():
    server = replicas.server()
    alone = load.figures(simulator.simulate(server, simulator.poisson_requests(server, 2, 500)), 2)
    for router in simulator.ROUTERS:
        assert replicas.routed(2, 1, router, count=500) == alone


def test_near_the_knee_one_queue_keeps_the_tail_shortest_and_past_it_no_router_does():
    near, past = replicas.routers(9), replicas.routers(10)
    assert near["one-queue"].ttft_p99 < near["least-loaded"].ttft_p99 < near["round-robin"].ttft_p99
    assert near["one-queue"].ttft_p99 < 0.5 < near["round-robin"].ttft_p99 / 10
    assert min(figures.ttft_p99 for figures in past.values()) > 10


def test_the_cuts_of_eight_h100s_are_those_that_fit_and_the_middle_wins_under_load():
    light, heavy = replicas.layouts(4), replicas.layouts(24)
    assert sorted(heavy) == [2, 4, 8] and [heavy[d].copies for d in (2, 4, 8)] == [4, 2, 1]
    assert light[8].run.tbt_p50 < light[4].run.tbt_p50 < light[2].run.tbt_p50
    assert heavy[4].run.ttft_p99 < min(heavy[2].run.ttft_p99, heavy[8].run.ttft_p99) / 10
    assert heavy[2].tokens_held_in_all < heavy[4].tokens_held_in_all < heavy[8].tokens_held_in_all
    assert heavy[2].run.preemptions > 0 == heavy[4].run.preemptions


def test_the_group_of_eight_loses_under_load_by_the_engine_s_charge_a_user_alone():
    """The page: the group of eight's loss at 24 a second rests on the profile's processor time a user each step;
    without that charge (an engine that hid it behind the GPU's step) the group would have the shortest tail."""
    import dataclasses

    heavy, group = replicas.layouts(24), replicas.server("llama-3-70b", "h100-sxm", 8)
    assert group.user_time > 0 and replicas.ENGINE == ("vllm", "0.9.2")
    free = dataclasses.replace(group, user_time=0.0)
    run = simulator.simulate_cluster(free, simulator.poisson_requests(free, 24, replicas.REQUESTS), 1, "one-queue")
    assert run.summary()["ttft_p99"] < heavy[4].run.ttft_p99 < heavy[8].run.ttft_p99


@pytest.mark.parametrize("call, message", [
    (lambda: replicas.routed(0), "rate"),
    (lambda: replicas.routed(2, 0), "copies must be at least 1, got 0"),
    (lambda: replicas.routed(2, 2, "random"), "router must be one of"),
    (lambda: replicas.server("llama-9b"), "model must be one of"),
    (lambda: replicas.server(gpu="h100"), "gpu must be one of"),
    (lambda: replicas.layouts(4, "llama-3.1-405b", "l4"), "fits no group of 8 NVIDIA L4"),
])
def test_bad_input_is_refused_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()
