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


def test_a_copys_cache_is_the_simulators_room_more_than_vllms_start_up_count():
    """Part 3 says so: the simulator gives an L4 copy 90 % of the catalog's memory less the weights, 5.68 GB;
    vLLM 0.9.2's own count (the memory CUDA reports, activations set aside) keeps about 4.7 GB."""
    from servingmath import memory, units

    copy = replicas.server()
    started = memory.vllm_budget(copy.model, copy.gpu, engine="v1", version=replicas.ENGINE[1])
    assert copy.cache_room == 0.9 * copy.gpu.memory_bytes - copy.gpu_weight_bytes
    assert (units.gb(copy.cache_room), units.gb(started.cache_bytes, 1)) == ("5.68 GB", "4.7 GB")


def test_the_profiles_charge_a_user_is_fitted_to_single_gpu_runs_of_vllm_0_8_5_to_0_11():
    """Part 3's 91 µs a user a step: the V1 group's fit, on runs of one GPU each, vLLM 0.8.5 to 0.11.0."""
    from servingmath import calibration, engines, runs

    group = engines.engine(*replicas.ENGINE).group
    fitted = [run for run in runs.load_runs() if run.id in calibration.results()["rows"]
              and engines.engine(run.engine, run.version).group == group]
    versions = sorted({run.version for run in fitted}, key=runs.version_key)
    assert group == "vllm-v1" and (versions[0], versions[-1]) == ("0.8.5", "0.11.0")
    assert {run.tensor_parallel for run in fitted} == {1}
    assert replicas.server().user_time == calibration.fitted_overheads()[group].user_time
