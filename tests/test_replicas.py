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
    """Four L4s: near the knee (9 and 10 a second) one queue keeps the shortest tail, a count in flight the next; below
    it (6) the routers' tails lie within a tenth of one another; past it (11) every router's tail runs to seconds.
    At 10 a second this draw's other tails already run to seconds; one queue's stays under a second."""
    below, near, nearer, past = (replicas.routers(rate) for rate in (6, 9, 10, 11))
    for at in (near, nearer):
        assert at["one-queue"].ttft_p99 < at["least-loaded"].ttft_p99 < at["round-robin"].ttft_p99
    assert near["one-queue"].ttft_p99 < 0.3 < near["round-robin"].ttft_p99 / 15
    assert nearer["one-queue"].ttft_p99 < 1 < nearer["least-loaded"].ttft_p99
    assert max(f.ttft_p99 for f in below.values()) < 1.1 * min(f.ttft_p99 for f in below.values())
    assert min(figures.ttft_p99 for figures in past.values()) > 10


def test_the_cuts_of_eight_h100s_are_those_that_fit_and_under_load_only_the_group_of_eight_falls_behind():
    """Part 3: the group of eight has the shortest gaps at a light load and the shortest tail at 12 a second; at 24,
    pairs preempt yet keep up, groups of four keep the shortest tail, and the group of eight alone is past its knee."""
    light, fair, heavy = replicas.layouts(4), replicas.layouts(12), replicas.layouts(24)
    assert sorted(heavy) == [2, 4, 8] and [heavy[d].copies for d in (2, 4, 8)] == [4, 2, 1]
    assert light[8].run.tbt_p50 < light[4].run.tbt_p50 < light[2].run.tbt_p50
    assert fair[8].run.ttft_p99 < fair[4].run.ttft_p99 < fair[2].run.ttft_p99
    assert heavy[4].run.ttft_p99 < heavy[2].run.ttft_p99 < 0.2 < 10 < heavy[8].run.ttft_p99
    assert heavy[8].run.ttft_p99 > 40 * fair[8].run.ttft_p99
    assert heavy[2].tokens_held_in_all < heavy[4].tokens_held_in_all < heavy[8].tokens_held_in_all
    assert heavy[2].run.preemptions > 0 == heavy[4].run.preemptions == heavy[8].run.preemptions


def test_the_group_of_eight_loses_under_load_by_its_one_api_servers_streaming_alone():
    """The page: the group of eight's loss at 24 a second rests on the profile's streaming cost, its one API server's
    time to turn each token into text and send it. That server streams at most 1 / stream_time tokens a second, so
    the group's gaps are its users' streaming; without the charge the group would have the shortest tail, and the
    processor's time a user in series with the GPU (user_time) alone would not sink it."""
    import dataclasses

    import numpy as np

    heavy, group = replicas.layouts(24), replicas.server("llama-3-70b", "h100-sxm", 8)
    assert group.stream_time > 0 and replicas.ENGINE == ("vllm", "0.9.2")
    work = simulator.poisson_requests(group, 24, replicas.REQUESTS)
    run = simulator.simulate_cluster(group, work, 1, "one-queue")
    assert run.summary()["ttft_p99"] == heavy[8].run.ttft_p99
    assert run.summary()["tokens_per_second"] < 1 / group.stream_time
    users = float(np.median(np.repeat(run.step_decodes, run.step_decodes)))     # the step the median token leaves in
    assert abs(heavy[8].run.tbt_p50 / (users * group.stream_time) - 1) < 0.01
    free = dataclasses.replace(group, stream_time=0.0)
    unstreamed = simulator.simulate_cluster(free, simulator.poisson_requests(free, 24, replicas.REQUESTS), 1, "one-queue")
    assert unstreamed.summary()["ttft_p99"] < heavy[4].run.ttft_p99 < heavy[2].run.ttft_p99 < heavy[8].run.ttft_p99
    # Each copy streams through its own server: two groups of four share the tokens and keep up.
    assert heavy[4].run.ttft_p99 < 0.2


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


def test_a_copys_cache_is_the_simulators_room_more_than_vllms_start_up_count():
    """Part 3 says so: the simulator gives an L4 copy 90 % of the catalog's memory less the weights, 5.68 GB;
    vLLM 0.9.2's own count (the memory CUDA reports, activations set aside) keeps about 4.7 GB."""
    from servingmath import memory, units

    copy = replicas.server()
    started = memory.vllm_budget(copy.model, copy.gpu, engine="v1", version=replicas.ENGINE[1])
    assert copy.cache_room == 0.9 * copy.gpu.memory_bytes - copy.gpu_weight_bytes
    assert (units.gb(copy.cache_room), units.gb(started.cache_bytes, 1)) == ("5.68 GB", "4.7 GB")


def test_the_profiles_streaming_cost_is_set_by_gpustacks_thousand_requests_at_once_alone():
    """Part 3's 190 µs a token streamed: the V1 group's fit, which only GPUStack's runs of vLLM 0.9.2 (1,000 requests
    sent at once to one H100) set; the fit without GPUStack's runs leaves it at its starting value, 20 µs."""
    from servingmath import calibration, engines, runs, units

    group = engines.engine(*replicas.ENGINE).group
    kept = calibration.results()
    theirs = [run for run in runs.load_runs() if run.source_group == "gpustack" and run.id in kept["rows"]
              and engines.engine(run.engine, run.version).group == group and run.id not in kept["left_out"]]
    binding = [run for run in theirs if run.arrivals.kind == "all-at-once"]
    assert group == "vllm-v1" and binding
    assert {(run.version, run.gpu, run.num_prompts, run.tensor_parallel) for run in binding} == {("0.9.2", "h100-sxm", 1000, 1)}
    assert all(run.arrivals.concurrency <= 4 for run in theirs if run not in binding)
    held = calibration.held_out_overheads("gpustack")[group].stream_time
    assert held == calibration.PER_GROUP["stream_time"][0] and units.us_significant(held, 2) == "20 µs"
    stream_time = replicas.server().stream_time
    assert stream_time == calibration.fitted_overheads()[group].stream_time
    assert units.us_significant(stream_time, 2) == "190 µs" and units.number(round(1 / stream_time, -2)) == "5,200"
