"""Lesson 4's cluster: copies of a server behind a router, disaggregated prefill and decode, and a server
on a tensor-parallel group (servingmath.simulator.cluster, Server(tensor_parallel=...))."""
import numpy as np
import pytest

import servingmath as sm
from servingmath import hardware, parallel
from servingmath import simulator as S
from servingmath import workload as W
from servingmath.simulator import cluster as C

M, G, L4 = sm.LLAMA_3_8B, sm.H100_SXM, sm.CATALOG["l4"]
M70 = sm.MODELS["llama-3-70b"]


def same_run(a, b):
    for name in S.SIMULATION_ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.shape == y.shape and np.array_equal(x, y, equal_nan=True), name
    assert np.array_equal(a.workload.arrival, b.workload.arrival)


def tiny_gpu(blocks):
    """An H100 with room beside the weights for exactly ``blocks`` blocks of Llama 3 8B's cache."""
    room = M.parameters * 2 + (blocks + 0.5) * S.Server(M, G).block_bytes
    return G.with_changes(memory_bytes=room / (1 - sm.RESERVE))


# -- one copy is one server ------------------------------------------------------------------------

@pytest.mark.parametrize("router", C.ROUTERS)
@pytest.mark.parametrize("flags", [{}, {"policy": "chunked"}, {"policy": "static"}, {"memory": "reserved"},
                                   {"gpu": "tiny"}, {"gpu": "tiny", "preemption": "swap", "swap_bandwidth": 25e9},
                                   {"gpu": "tiny", "policy": "chunked"}, {"request_time": 0.004},
                                   {"request_time": 0.004, "request_latency": 0.003}])
def test_one_copy_behind_any_router_is_exactly_simulate(router, flags):
    flags = dict(flags)
    gpu = tiny_gpu(300) if flags.pop("gpu", None) else G
    server = S.Server(M, gpu, **flags)
    work = W.poisson_workload(30, 300, seed=3, model=M)
    run = C.simulate_cluster(server, work, 1, router)
    alone = S.simulate(server, work)
    same_run(run, alone)
    assert run.benchmark().ttft_p99 == alone.benchmark().ttft_p99
    if gpu is not G:
        assert alone.preemptions.sum() > 0          # the tiny GPU's runs exercise preemption


# -- routers ----------------------------------------------------------------------------------------

def test_round_robin_sends_the_requests_to_the_copies_in_turn_and_each_copy_runs_as_a_server_of_its_own():
    server = S.Server(M, L4)
    work = W.poisson_workload(6, 300, seed=1, model=M)
    run = C.simulate_cluster(server, work, 3, "round-robin")
    assert np.array_equal(run.replica, np.arange(300) % 3)
    for k in range(3):       # a copy's requests, served alone, end as they do in the cluster
        mine = np.arange(k, 300, 3)
        part = W.workload(work.arrival[mine], work.prompt[mine], work.reply[mine])
        alone = S.simulate(server, part)
        assert np.array_equal(alone.first_token, run.first_token[mine])
        assert np.array_equal(alone.finish, run.finish[mine])


@pytest.mark.parametrize("router", C.ROUTERS)
def test_every_request_is_served_once_with_every_token(router):
    work = W.poisson_workload(12, 400, seed=2, model=M)
    run = C.simulate_cluster(S.Server(M, L4), work, 3, router)
    assert np.all(run.first_token >= work.arrival) and np.all(run.finish >= run.first_token)
    for i in (0, 123, 399):
        assert len(run.request(i).token_times) == work.reply[i]
    assert set(run.replica) == {0, 1, 2}
    assert run.benchmark().completed == 400


@pytest.mark.parametrize("copies", [2, 4])
@pytest.mark.parametrize("rate", [4, 5])
def test_one_queue_gives_a_p99_ttft_no_worse_than_round_robin_at_copies_times_the_rate(copies, rate):
    """Where requests queue (a single L4 at ``rate`` a second keeps some waiting), one queue for all copies
    serves the tail no worse than sending each copy its share blindly: the queueing gain."""
    server = S.Server(M, L4)
    work = W.poisson_workload(rate * copies, 400 * copies, seed=0, model=M)
    pooled = C.simulate_cluster(server, work, copies, "one-queue").benchmark()
    blind = C.simulate_cluster(server, work, copies, "round-robin").benchmark()
    assert pooled.ttft_p99 <= blind.ttft_p99


def test_least_loaded_sends_each_request_to_the_copy_with_the_fewest_in_flight():
    work = W.workload([0.0] * 7, [100] * 7, [50] * 7)     # all at once: each goes to the emptiest copy
    run = C.simulate_cluster(S.Server(M, G), work, 3, "least-loaded")
    assert list(run.replica) == [0, 1, 2, 0, 1, 2, 0]


def test_a_run_is_the_same_for_the_same_seed_and_differs_for_another():
    server = S.Server(M, L4)
    runs = [C.simulate_cluster(server, W.poisson_workload(10, 300, seed=s, model=M), 3, "one-queue") for s in (5, 5, 6)]
    same_run(runs[0], runs[1])
    assert not np.array_equal(runs[0].finish, runs[2].finish)
    d = [C.simulate_disaggregated(server, server, W.poisson_workload(8, 200, seed=5, model=M), 2, 2) for _ in range(2)]
    same_run(*d)


# -- disaggregated prefill and decode -----------------------------------------------------------------

def test_the_transfer_is_the_caches_bytes_over_the_link():
    server = S.Server(M, G)
    for key in ("nvlink4", "pcie5", "infiniband-ndr"):
        link = hardware.INTERCONNECTS[key]
        expected = link.latency + 1000 * M.kv_bytes_per_token() / link.bandwidth
        assert C.transfer_time(server, 1000, key) == pytest.approx(expected, rel=1e-12)
    assert C.transfer_time(server, 1000) == C.transfer_time(server, 1000, hardware.link(G).key)
    pair = S.Server(M70, G, tensor_parallel=2)        # each GPU of a pair takes half of the cache over its own link
    link = hardware.INTERCONNECTS["infiniband-ndr"]
    assert C.transfer_time(pair, 1000, link.key) == pytest.approx(
        link.latency + 1000 * M70.kv_bytes_per_token() / 2 / link.bandwidth, rel=1e-12)


def test_a_slower_link_raises_each_ttft_by_the_difference_of_the_transfers():
    server = S.Server(M, G)
    work = W.poisson_workload(20, 300, seed=4, model=M)
    fast = C.simulate_disaggregated(server, server, work, 1, 2, link="nvlink4")
    slow = C.simulate_disaggregated(server, server, work, 1, 2, link="roce-400g")
    added = C.transfer_time(server, work.prompt, "roce-400g") - C.transfer_time(server, work.prompt, "nvlink4")
    assert np.all(added > 0)
    np.testing.assert_allclose(slow.ttft - fast.ttft, added, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(slow.transfer, C.transfer_time(server, work.prompt, "roce-400g"))


def test_the_ttft_is_the_prefill_copys_first_token_plus_the_transfer():
    """With one prefill copy, its first tokens are those of a server given one-token replies."""
    server = S.Server(M, G)
    work = W.poisson_workload(20, 300, seed=4, model=M)
    run = C.simulate_disaggregated(server, server, work, 1, 1, link="pcie5")
    prompts_only = S.simulate(server, W.workload(work.arrival, work.prompt, np.ones_like(work.reply)))
    np.testing.assert_array_equal(run.first_token, prompts_only.first_token + run.transfer)


@pytest.mark.parametrize("decoders, flags", [(3, {}), (1, {}), (1, {"preemption": "swap", "swap_bandwidth": 25e9})])
def test_disaggregated_runs_write_every_token_and_decode_only_after_the_cache_lands(decoders, flags):
    work = W.poisson_workload(6 if decoders == 3 else 8, 300, seed=8, model=M)
    run = C.simulate_disaggregated(S.Server(M, L4), S.Server(M, L4, **flags), work, 2, decoders, link="pcie4")
    if decoders == 1:
        assert run.preemptions.sum() > 0      # one L4 decoding for two runs out of memory
    for i in range(0, 300, 37):
        record = run.request(i)
        assert len(record.token_times) == work.reply[i]
        assert record.token_times[0] == run.first_token[i]
        assert np.all(np.diff(record.token_times) > 0)
    assert set(run.replica) == set(range(decoders))
    bench = run.benchmark()
    assert bench.completed == 300 and len(bench.itls) == (work.reply - 1).sum()


# -- a copy on a tensor-parallel group -------------------------------------------------------------

def test_a_tensor_parallel_servers_step_is_parallel_pys_step():
    server = S.Server(M70, G, tensor_parallel=4, link="nvlink4")
    clock = S.StepClock(server)
    grp = parallel.group(G, 4, "nvlink4")
    for users, cached in ((1, 100), (8, 500), (64, 2000)):
        expected = parallel.tensor_parallel_step(M70, grp, 1, cached, users, assumptions=server.assumptions).time
        assert clock.time([cached] * users) == pytest.approx(expected, rel=1e-12)
        assert clock.check([cached] * users) == pytest.approx(expected, rel=1e-12)
    prompt = parallel.tensor_parallel_step(M70, grp, 3000, 0, 1, assumptions=server.assumptions).time
    assert clock.time(pieces=[(3000, 0)]) == pytest.approx(prompt, rel=1e-12)
    assert clock.check([700, 20], [(300, 0), (50, 10)]) == pytest.approx(clock.time([700, 20], [(300, 0), (50, 10)]),
                                                                           rel=1e-12)


def test_a_tensor_parallel_server_holds_its_share_of_the_weights_and_of_the_cache():
    server = S.Server(M70, G, tensor_parallel=4)
    fit = parallel.fit(M70, parallel.group(G, 4))
    assert server.gpu_weight_bytes == pytest.approx(fit.weight_bytes, rel=1e-12)
    blocks = (sm.usable_memory(G, sm.RESERVE) - fit.weight_bytes) // (server.block_bytes * parallel.kv_share(M70, 4))
    assert server.cache_blocks == blocks
    eight = S.Server(M70, G, tensor_parallel=8)
    assert eight.kv_share == 1 / 8 and eight.cache_blocks > server.cache_blocks


def test_replicas_of_a_tensor_parallel_group_run():
    server = S.Server(M70, G, tensor_parallel=2)
    work = W.poisson_workload(4, 200, seed=0, model=M70)
    run = C.simulate_cluster(server, work, 4, "one-queue")
    assert run.benchmark().completed == 200
    same_run(C.simulate_cluster(server, work, 1, "round-robin"), S.simulate(server, work))


# -- bad input ------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda w: C.simulate_cluster(S.Server(M, G), w, 0), "replicas must be at least 1, got 0"),
    (lambda w: C.simulate_cluster(S.Server(M, G), w, 2.5), "replicas"),
    (lambda w: C.simulate_cluster(S.Server(M, G), w, 2, "random"), "router must be one of"),
    (lambda w: C.simulate_cluster(S.Server(M, G), w, 2, "shortest"), "'shortest'"),
    (lambda w: C.simulate_disaggregated(S.Server(M, G), S.Server(M, G), w, link="nvlink5"),
     "link must be one of ['nvlink4', 'pcie5', 'infiniband-ndr', 'roce-400g'] for NVIDIA H100 SXM"),
    (lambda w: C.simulate_disaggregated(S.Server(M, L4), S.Server(M, L4), w, link="nvlink4"), "'nvlink4'"),
    (lambda w: C.simulate_disaggregated(S.Server(M, G), S.Server(M, G), w, 0, 1), "prefill_instances must be at least 1"),
    (lambda w: C.simulate_disaggregated(S.Server(M, G), S.Server(M, G), w, 1, 0), "decode_instances must be at least 1"),
    (lambda w: C.simulate_disaggregated(S.Server(M, G), S.Server(M, G, memory="reserved"), w),
     "memory='reserved'"),
    (lambda w: C.simulate_disaggregated(S.Server(M, G), S.Server(sm.MODELS["mistral-7b"], G), w), "Mistral"),
    (lambda w: S.Server(M70, G, tensor_parallel=3), "tensor_parallel must divide Llama 3 70B's 64 attention heads, got 3"),
    (lambda w: S.Server(M70, G, tensor_parallel=2, link="nvlink5"), "'nvlink5'"),
    (lambda w: S.Server(M, G, link="pcie5"), "needs tensor_parallel above 1, got link='pcie5'"),
    (lambda w: S.Server(M70, G), "on one NVIDIA H100 SXM"),
])
def test_bad_input_names_the_argument_and_the_value(call, message):
    work = W.poisson_workload(5, 20, seed=0, model=M)
    with pytest.raises((ValueError, TypeError)) as raised:
        call(work)
    assert message in str(raised.value)


@pytest.mark.parametrize("flags", [{}, {"clock": "phases", "user_time": 1e-5, "launch_time": 1e-3}])
def test_the_loops_sums_time_a_tensor_parallel_step_as_the_clock_does(flags):
    clock = S.StepClock(S.Server(M70, G, tensor_parallel=4, **flags))
    caches = [500, 700, 900]
    assert clock.step(203, 3, sum(caches), lambda: caches, [(0, 200, 0)]) == pytest.approx(
        clock.time(caches, [(200, 0)]), rel=1e-12)
    assert clock.decode_only(3)(sum(caches)) == pytest.approx(clock.time(caches), rel=1e-12)
    slower = S.StepClock(S.Server(M70, G, tensor_parallel=4, link="pcie5", **flags))    # only the all-reduces differ
    assert slower.time(caches) - clock.time(caches) == pytest.approx(
        slower.communication(3) - clock.communication(3), rel=1e-9)
    assert slower.communication(3) > clock.communication(3) > 0


@pytest.mark.parametrize("server", [
    S.Server(M, G), S.Server(M, G, clock="phases", user_time=1e-5, launch_time=1e-3, stream_time=2e-4),
    S.Server(M70, G, tensor_parallel=4), S.Server(M70, G, tensor_parallel=4, clock="phases", user_time=1e-5),
    S.Server(M, G, clock="phases", user_time=1e-5, mixed_steps=False),
    S.Server(M, G, step_time=lambda decodes, tokens, prompts: 4e-3 + 1e-5 * tokens + 1e-4 * prompts),
], ids=["pass model", "phases", "tensor-parallel", "tensor-parallel phases", "unmixed phases", "measured"])
def test_a_step_of_next_tokens_alone_is_timed_as_step_times_it_to_the_last_bit(server):
    """The loop times a run of steps with the line closed by ``decode_step``, the general step by ``step``: the same
    seconds, bit for bit, at any users and cache (a run would otherwise depend on which of the two timed it)."""
    clock = S.StepClock(server)
    for users in range(1, 256, 3):
        seconds = clock.decode_step(users, server.mixed_steps)
        assert clock.decode_step(users, server.mixed_steps) is seconds          # made once for each count
        for cached in (users, 1_000 * users + 1, 3_333 * users + 17, 7_919 * users + 5):
            assert seconds(cached) == clock.step(users, users, cached, tuple, (), 0.0, server.mixed_steps)
