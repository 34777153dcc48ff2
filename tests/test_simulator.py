"""Lesson 3's serving simulator (servingmath.simulator) and its workloads (servingmath.workload)."""
import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import servingmath as sm
from servingmath import serving
from servingmath import simulator as S
from servingmath import workload as W

M, G = sm.LLAMA_3_8B, sm.H100_SXM
PLATE = sm.PLATE


def prefill(tokens):
    return serving.prefill(M, G, tokens, assumptions=PLATE).time


def decode(cached, users=1):
    return serving.decode_step(M, G, cached, users, assumptions=PLATE).time


def tiny_gpu(blocks):
    """An H100 with room beside the weights for exactly ``blocks`` blocks of Llama 3 8B's cache."""
    block = S.Server(M, G).block_bytes
    room = M.parameters * 2 + (blocks + 0.5) * block
    return G.with_changes(memory_bytes=room / (1 - sm.RESERVE))


# -- the step clock is the package's pass model -------------------------------------------------

@pytest.mark.parametrize("key", ["llama-3-8b", "llama-3-70b", "mixtral-8x7b", "mistral-7b", "gemma-2-9b",
                                 "deepseek-v2-lite", "qwen3-30b-a3b"])
def test_a_steps_time_is_the_sum_of_its_users_passes_with_the_weights_read_once(key):
    model = sm.MODELS[key]
    gpu = G if key == "llama-3-8b" else sm.CATALOG["b200"]
    clock = S.StepClock(S.Server(model, gpu))
    rng = np.random.default_rng(7)
    for _ in range(40):
        caches = rng.integers(0, 8000, rng.integers(0, 30)).tolist()
        pieces = [(int(n), int(c)) for n, c in zip(rng.integers(1, 600, rng.integers(0 if caches else 1, 3)),
                                                   rng.integers(0, 4000, 3))]
        assert clock.time(caches, pieces) == pytest.approx(clock.check(caches, pieces), rel=1e-12)


def test_a_decode_step_and_a_prefill_alone_are_lesson_ones_passes():
    clock = S.StepClock(S.Server(M, G))
    assert clock.time([500] * 32) == pytest.approx(decode(500, 32), rel=1e-12)
    assert clock.time([], [(100, 0)]) == pytest.approx(prefill(100), rel=1e-12)
    with pytest.raises(ValueError, match="at least one token"):
        clock.time([], [])


# -- hand-checked runs ------------------------------------------------------------------------

def test_one_request_prefill_then_a_decode_step_for_each_later_token():
    run = S.simulate(S.Server(M, G), W.workload([0.0], [100], [3]))
    t0, t1, t2 = prefill(100), decode(100), decode(101)
    record = run.request(0)
    np.testing.assert_allclose(record.token_times, [t0, t0 + t1, t0 + t1 + t2], rtol=1e-12)
    assert record.ttft == pytest.approx(t0, rel=1e-12)
    assert record.finish == pytest.approx(t0 + t1 + t2, rel=1e-12)
    assert record.tpot == pytest.approx((t1 + t2) / 2, rel=1e-12)
    assert record.preemptions == 0 and run.steps == 3


def test_a_static_batch_makes_a_late_request_wait_for_the_longest_reply():
    # A arrives at 0 with a 50-token reply; B a millisecond later, during A's prefill.
    work = W.workload([0.0, 0.001], [10, 10], [50, 5])
    static = S.simulate(S.Server(M, G, policy="static"), work)
    a_prefill = prefill(10)
    a_done = a_prefill + sum(decode(10 + k) for k in range(49))
    assert static.finish[0] == pytest.approx(a_done, rel=1e-12)
    assert static.first_token[1] == pytest.approx(a_done + prefill(10), rel=1e-12)
    continuous = S.simulate(S.Server(M, G, policy="continuous"), work)
    # B joins at the next step: its prefill rides in the same pass as A's first next token.
    clock = S.StepClock(S.Server(M, G))
    assert continuous.first_token[1] == pytest.approx(a_prefill + clock.check([10], [(10, 0)]), rel=1e-12)
    assert continuous.first_token[1] < static.first_token[1]
    assert continuous.finish[0] > static.finish[0]    # A's steps carry B too


def test_chunked_prefill_splits_a_long_prompt_by_the_token_budget():
    work = W.workload([0.0], [1000], [2])
    run = S.simulate(S.Server(M, G, policy="chunked", step_tokens=512), work)
    clock = S.StepClock(S.Server(M, G))
    first = clock.check([], [(512, 0)])
    second = clock.check([], [(488, 512)])
    assert run.first_token[0] == pytest.approx(first + second, rel=1e-12)
    np.testing.assert_array_equal(run.step_tokens, [512, 488, 1])
    whole = S.simulate(S.Server(M, G, policy="continuous"), work)
    assert whole.first_token[0] == pytest.approx(prefill(1000), rel=1e-12)


def test_chunked_prefill_keeps_the_running_users_tokens_coming():
    # A decodes; B's 3,000-token prompt arrives. Whole, it stalls A for one long step; in chunks, never as long.
    work = W.workload([0.0, 0.05], [20, 3000], [60, 2])
    whole = S.simulate(S.Server(M, G, policy="continuous"), work)
    chunked = S.simulate(S.Server(M, G, policy="chunked", step_tokens=512), work)
    assert whole.request(0).gaps.max() > 2 * chunked.request(0).gaps.max()
    assert chunked.first_token[1] > whole.first_token[1]


def test_preemption_by_recompute_drops_the_latest_and_rebuilds_it_later():
    # Room for 3 blocks. A and B (16-token prompts, 20-token replies) both start; at the next step
    # each needs a second block and only one is free: B, admitted last, is preempted. A finishes at
    # step 19; B's prompt and its one token are prefilled again at step 20, and it ends at step 38.
    server = S.Server(M, tiny_gpu(3))
    assert server.cache_blocks == 3
    run = S.simulate(server, W.workload([0.0, 0.0], [16, 16], [20, 20]))
    np.testing.assert_array_equal(run.preemptions, [0, 1])
    assert run.steps == 39
    assert run.runs.tolist() == [[1, 0, 0], [0, 0, 19], [1, 20, 38]]
    clock = S.StepClock(server)
    assert run.step_time[20] == pytest.approx(clock.check([], [(17, 0)]), rel=1e-12)
    assert len(run.request(1).token_times) == 20
    assert run.request(1).gaps.max() == pytest.approx(run.step_end[20] - run.step_end[0], rel=1e-12)


def test_preemption_by_swap_copies_the_cache_out_and_back():
    bandwidth = 25e9
    server = S.Server(M, tiny_gpu(3), preemption="swap", swap_bandwidth=bandwidth)
    run = S.simulate(server, W.workload([0.0, 0.0], [16, 16], [20, 20]))
    np.testing.assert_array_equal(run.preemptions, [0, 1])
    copy = sm.kv_cache_bytes(M, 16) / bandwidth
    assert run.step_time[1] == pytest.approx(decode(16) + copy, rel=1e-12)      # copied out
    assert run.step_time[20] == pytest.approx(decode(16) + copy, rel=1e-12)     # copied back, decoding at once
    assert run.runs.tolist() == [[1, 0, 0], [0, 0, 19], [1, 20, 38]]
    assert run.steps == 39


def test_reserved_memory_never_preempts_and_admits_only_what_its_reservations_allow():
    server = S.Server(M, tiny_gpu(3), memory="reserved", max_reply_tokens=20)
    run = S.simulate(server, W.workload([0.0, 0.0], [16, 16], [20, 20]))
    np.testing.assert_array_equal(run.preemptions, [0, 0])
    # Each reservation is 36 tokens, 3 blocks: B waits for A to finish.
    assert run.first_token[1] == pytest.approx(run.finish[0] + prefill(16), rel=1e-12)


def test_a_sliding_window_model_is_timed_user_by_user():
    mistral = sm.MODELS["mistral-7b"]
    run = S.simulate(S.Server(mistral, G), W.workload([0.0, 0.0], [100, 50], [3, 3]))
    clock = S.StepClock(S.Server(mistral, G))
    assert not clock.linear
    np.testing.assert_allclose(run.step_time, [clock.check([], [(100, 0), (50, 0)]), clock.check([100, 50]),
                                               clock.check([101, 51])], rtol=1e-12)


# -- properties --------------------------------------------------------------------------------

def test_the_same_seed_gives_the_same_run_and_another_seed_another():
    server = S.Server(M, tiny_gpu(400))
    one, two = (S.simulate(server, W.poisson_workload(15, 300, seed=5, model=M)) for _ in range(2))
    for name in ("first_token", "finish", "preemptions", "step_end", "runs"):
        np.testing.assert_array_equal(getattr(one, name), getattr(two, name))
    other = S.simulate(server, W.poisson_workload(15, 300, seed=6, model=M))
    assert not np.array_equal(one.finish, other.finish)


def test_every_request_gets_every_token_in_order_whatever_the_rules():
    work = W.poisson_workload(25, 150, seed=2, model=M)
    work = W.workload(work.arrival, np.minimum(work.prompt, 400), np.minimum(work.reply, 400))
    for policy in S.POLICIES:
        for memory in S.MEMORY:
            for preemption in S.PREEMPTION:
                server = S.Server(M, tiny_gpu(120), policy=policy, memory=memory, preemption=preemption,
                                  swap_bandwidth=25e9, max_reply_tokens=400 if memory == "reserved" else None)
                run = S.simulate(server, work)
                assert np.all(run.step_held_tokens >= run.step_used_tokens)
                assert run.step_held_tokens.max() <= server.cache_blocks * server.block_tokens
                for i in range(len(work)):
                    times = run.request(i).token_times
                    assert len(times) == work.reply[i]
                    assert np.all(np.diff(times) > 0)
                    assert times[0] == run.first_token[i] > work.arrival[i]
                    assert times[-1] == run.finish[i]
                assert run.step_tokens.sum() >= work.reply.sum() - len(work)


def test_more_load_never_lowers_p99_ttft_under_continuous_batching_by_more_than_a_step():
    # The same requests, closer together. Where in the step under way a request lands decides how
    # long it waits to join, and that shifts with the rate: so p99 may dip, but by less than the
    # shortest step the server makes; over a wider change in load it only rises.
    server = S.Server(M, G)
    shortest = decode(0)
    rates = (1, 2, 5, 10, 20, 40, 60, 80)
    for seed in range(4):
        p99 = [S.percentile(S.at_rate(server, rate, 400, seed=seed).ttft, 99) for rate in rates]
        assert all(b > a - shortest for a, b in zip(p99, p99[1:])), p99
        assert p99[-1] > p99[4] > p99[0], p99


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4000), st.integers(1, 4000)), min_size=1, max_size=60),
       st.integers(1, 2000))
def test_paged_memory_never_fits_fewer_users_than_reserved(users, room_blocks):
    prompt, reply = np.array(users).T
    gpu = tiny_gpu(room_blocks)
    paged = S.users_that_fit(S.Server(M, gpu), prompt, reply)
    reserved = S.users_that_fit(S.Server(M, gpu, memory="reserved"), prompt, reply)
    assert paged >= reserved


def test_users_that_fit_by_hand():
    server = S.Server(M, tiny_gpu(10))
    assert S.users_that_fit(server, [16, 16, 16], [16, 16, 16]) == 3          # 2 blocks each
    assert S.users_that_fit(server, [100] * 4, [60] * 4) == 1                  # 10 blocks each
    reserved = S.Server(M, tiny_gpu(1100), memory="reserved")                  # the window: 512 blocks each
    assert S.users_that_fit(reserved, [16] * 5, [16] * 5) == 2


def test_percentile_counts_the_smallest_value_with_the_share_below_it():
    assert S.percentile([1, 2, 3, 4], 50) == 2
    assert S.percentile([1, 2, 3, 4], 99) == 4
    assert S.percentile([5, 1], 50, weights=[3, 1]) == 5
    assert np.isnan(S.percentile([], 50))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.5, 1.0, 1.5, 2.0, 7.25]), st.integers(0, 4)), min_size=1, max_size=30),
       st.lists(st.floats(0, 100), min_size=1, max_size=5))
def test_percentiles_at_once_are_each_percentile(pairs, qs):
    values, weights = zip(*pairs)
    np.testing.assert_array_equal(S.percentiles(values, qs, weights), [S.percentile(values, q, weights) for q in qs])
    # With whole weights, the nearest rank numpy's inverted_cdf takes of the values repeated by their weights.
    repeated = np.repeat(values, weights)
    if repeated.size:
        np.testing.assert_array_equal(S.percentiles(values, qs, weights),
                                      np.percentile(repeated, qs, method="inverted_cdf"))


def test_percentiles_refuse_a_bad_q_first_and_a_q_that_is_not_a_sequence():
    with pytest.raises(ValueError, match="q must be at most 100"):
        S.percentile([], 101, weights=[1, 1, 1])
    with pytest.raises(TypeError, match="qs must be a sequence"):
        S.percentiles([1, 2], 50)
    with pytest.raises(TypeError, match="qs must be a sequence"):
        S.percentiles([1, 2], "50")


def test_a_runs_percentiles_sort_its_gaps_once_and_read_them_as_percentile_does(monkeypatch):
    run = S.at_rate(S.Server(M, G, assumptions=PLATE), 20, count=300)
    values, weights = run._tbt()
    expected = {q: S.percentile(values, q, weights) for q in (50, 90, 99)}
    sorts = []
    argsort = np.argsort
    monkeypatch.setattr(np, "argsort", lambda *a, **k: sorts.append(1) or argsort(*a, **k))
    assert {q: run.tbt_percentile(q) for q in (50, 90, 99)} == expected
    assert len(sorts) == 1
    summary = run.summary()
    assert (summary["ttft_p50"], summary["ttft_p99"]) == (S.percentile(run.ttft, 50), S.percentile(run.ttft, 99))


def test_servers_alike_in_what_times_a_step_share_one_clock_and_run_as_on_a_clock_of_their_own():
    from servingmath.simulator.clock import TIMED, StepClock, clock_of
    chunked = S.Server(M, G, assumptions=PLATE, policy="chunked", step_tokens=256)
    scheduled = [{"policy": "continuous", "step_tokens": None}, {"policy": "static", "step_tokens": None},
                 {"memory": "reserved"}, {"block_tokens": 32}, {"max_running": 8}, {"reserve": 0.2}, {"admit_every": 2},
                 {"preemption": "swap", "swap_bandwidth": 25e9}]
    others = [dataclasses.replace(chunked, **changes) for changes in scheduled]
    assert not {name for changes in scheduled for name in changes} & set(TIMED)
    assert set(TIMED) < {field.name for field in dataclasses.fields(S.Server)}
    assert all(clock_of(other) is clock_of(chunked) for other in others)
    assert clock_of(dataclasses.replace(chunked, kv_bits=8)) is not clock_of(chunked)
    # A GPU's key picks a group's default link, though equality leaves it out; measured step times may change.
    pcie = sm.CATALOG["h100-pcie"]
    renamed = pcie.with_changes(key="h100-sxm")
    assert renamed == pcie
    grouped = [clock_of(S.Server(M, gpu, assumptions=PLATE, tensor_parallel=2)) for gpu in (pcie, renamed)]
    assert grouped[0] is not grouped[1]
    assert grouped[0].communication_per_token != grouped[1].communication_per_token
    measured = dataclasses.replace(chunked, step_time=lambda decodes, tokens, prompts: 1e-3)
    assert clock_of(measured) is not clock_of(measured)
    for server in (chunked, others[0], others[2]):
        work = S.poisson_requests(server, 30, count=300)
        shared = S.simulate(server, work)
        scheduler = S.SCHEDULERS[server.policy](server, work, work.arrival.tolist())
        engine = S.Engine(server, scheduler, StepClock(server))
        engine.run(total=len(work))
        alone = engine.log.simulation(server, work, scheduler.requests, scheduler.runs)
        for name in S.SIMULATION_ARRAYS:
            assert np.array_equal(getattr(shared, name), getattr(alone, name), equal_nan=True), (server.policy, name)


def test_summary_and_goodput_on_a_small_run():
    server = S.Server(M, G)
    run = S.at_rate(server, 5, 200, seed=3)
    summary = run.summary()
    assert summary["requests"] == 200 and summary["preemptions"] == 0
    assert summary["ttft_p99"] >= summary["ttft_p50"] >= prefill(1) - 1e-12
    assert summary["tbt_p99"] >= summary["tbt_p50"] >= decode(0)
    assert 0.9 < summary["memory_used_share"] <= 1
    found = S.goodput(server, ttft=0.2, tpot=0.02, count=200, steps=6)
    assert found.run.attainment(0.2, 0.02) >= 0.9
    assert not S.at_rate(server, found.rate * 1.5, 200).attainment(0.2, 0.02) >= 0.9
    assert found.gpus_for(found.rate * 2.5) == 3
    price = found.cost_per_million_tokens()
    assert price == pytest.approx(G.price_per_hour / (found.rate * found.mean_reply * 3600 / 1e6))


def test_a_goodput_search_reuses_the_runs_of_an_earlier_one_on_the_same_server(monkeypatch, tmp_path):
    """Searches for other targets try the same rates first; they find what a search alone finds, and the run
    there, running less, in the same process or, from the runs kept on disk, in another."""
    from servingmath.simulator.goodput import _latencies
    server, ran = S.Server(M, G), []
    simulate = S.simulate
    monkeypatch.setattr(S, "simulate", lambda *args: ran.append(args) or simulate(*args))
    monkeypatch.delenv("SERVINGMATH_RESULTS", raising=False)

    def afresh():
        S._searched_run.cache_clear()
        _latencies.cache_clear()
        ran.clear()

    afresh()
    first = S.goodput(server, ttft=0.2, tpot=0.02, count=150, seed=5, steps=6)
    alone = len(ran)
    second = S.goodput(server, ttft=0.3, tpot=0.02, count=150, seed=5, steps=6)
    shared = len(ran) - alone
    afresh()
    found = S.goodput(server, ttft=0.3, tpot=0.02, count=150, seed=5, steps=6)
    assert found.rate == second.rate and first.rate != second.rate and shared < len(ran)
    np.testing.assert_array_equal(found.run.finish, S.at_rate(server, found.rate, 150, seed=5).finish)
    # Another process: nothing in memory, the tries read from the folder the first search kept them in.
    monkeypatch.setenv("SERVINGMATH_RESULTS", str(tmp_path))
    afresh()
    assert S.goodput(server, ttft=0.3, tpot=0.02, count=150, seed=5, steps=6).rate == second.rate
    tried = len(ran)
    afresh()
    assert S.goodput(server, ttft=0.3, tpot=0.02, count=150, seed=5, steps=6).rate == second.rate
    assert tried > 1 and len(ran) == 1    # the run at the rate found, the search's result


def test_poisson_arrivals_at_another_rate_are_the_same_requests_rescaled():
    np.testing.assert_allclose(W.poisson_arrivals(10, 50, seed=4) * 10, W.poisson_arrivals(2, 50, seed=4) * 2)
    prompts, replies = W.SHAREGPT.draw(20_000, seed=1)
    assert prompts.mean() == pytest.approx(161.31, rel=0.03)
    assert replies.mean() == pytest.approx(337.99, rel=0.03)
    assert prompts.min() >= 1 and replies.min() >= 1


def test_a_trace_file_is_read_as_a_workload(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text("arrival,prompt,reply\n0,100,20\n0.5,200,10\n")
    work = W.read_trace(path)
    np.testing.assert_array_equal(work.prompt, [100, 200])
    np.testing.assert_array_equal(work.arrival, [0, 0.5])
    (tmp_path / "bad.csv").write_text("arrival,prompt\n0,1\n")
    with pytest.raises(ValueError, match="columns arrival, prompt and reply"):
        W.read_trace(tmp_path / "bad.csv")
    (tmp_path / "word.csv").write_text("arrival,prompt,reply\n0,ten,2\n")
    with pytest.raises(ValueError, match="line 2: prompt must be a number"):
        W.read_trace(tmp_path / "word.csv")
    with pytest.raises(ValueError, match="no such file"):
        W.read_trace(tmp_path / "none.csv")


# -- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("changes, error, words", [
    (dict(policy="batchy"), ValueError, "policy must be one of"),
    (dict(memory="virtual"), ValueError, "memory must be one of"),
    (dict(block_tokens=0), ValueError, "block_tokens must be at least 1"),
    (dict(block_tokens=2.5), ValueError, "block_tokens must be a whole number"),
    (dict(max_running="lots"), TypeError, "max_running must be"),
    (dict(step_tokens=0), ValueError, "step_tokens must be at least 1"),
    (dict(preemption="swap"), ValueError, "swap_bandwidth"),
    (dict(preemption="swap", swap_bandwidth=-1), ValueError, "swap_bandwidth must be greater than 0"),
    (dict(max_reply_tokens=8192), ValueError, "max_reply_tokens must leave room"),
    (dict(assumptions="plate"), TypeError, "assumptions must be a Assumptions"),
    (dict(kv_bits=0), ValueError, "kv_bits must be greater than 0"),
    (dict(reserve=1.0), ValueError, "reserve must be less than 1"),
    (dict(gpu=sm.CATALOG["l4"], model=sm.MODELS["llama-3-70b"]), ValueError, "leave no room"),
    (dict(model="llama"), TypeError, "model must be a Model"),
])
def test_a_bad_server_setting_is_refused_by_name(changes, error, words):
    settings = dict(model=M, gpu=G) | changes
    with pytest.raises(error, match=words):
        S.Server(**settings)


@pytest.mark.parametrize("arguments, error, words", [
    (([0.0, -1.0], [1, 1], [1, 1]), ValueError, "arrival must be at least 0"),
    (([1.0, 0.5], [1, 1], [1, 1]), ValueError, "arrival must not go backwards"),
    (([0.0], [0], [1]), ValueError, "prompt must be at least 1"),
    (([0.0], [1], [1.5]), ValueError, "reply must be a whole number"),
    (([0.0, 1.0], [1], [1, 1]), ValueError, "as long as each other"),
    (([], [], []), ValueError, "at least one request"),
    ((["soon"], [1], [1]), TypeError, "arrival must be"),
])
def test_a_bad_workload_is_refused_by_name(arguments, error, words):
    with pytest.raises(error, match=words):
        W.workload(*arguments)


def test_bad_draws_and_runs_are_refused_by_name():
    with pytest.raises(TypeError, match="seed must be a whole number"):
        W.poisson_arrivals(1, 10, seed=-1)
    with pytest.raises(ValueError, match="rate must be greater than 0"):
        W.poisson_arrivals(0, 10)
    with pytest.raises(ValueError, match="count must be at least 0"):
        W.SHAREGPT.draw(-1)
    with pytest.raises(ValueError, match="mean_reply must be at least 1"):
        W.LengthDistribution("x", 10, 0)
    with pytest.raises(TypeError, match="work must be a Workload"):
        S.simulate(S.Server(M, G), [(0, 1, 1)])
    with pytest.raises(W.ContextTooLong, match="context window of 8,192 tokens"):
        S.simulate(S.Server(M, G), W.workload([0.0], [8000], [500]))
    with pytest.raises(ValueError, match="needs 64 blocks of cache alone"):
        S.simulate(S.Server(M, tiny_gpu(10)), W.workload([0.0], [1000], [24]))
    with pytest.raises(ValueError, match="max_reply_tokens must cover every reply"):
        S.simulate(S.Server(M, G, memory="reserved", max_reply_tokens=10), W.workload([0.0], [10], [11]))
    with pytest.raises(ValueError, match="ttft must be greater than 0"):
        S.goodput(S.Server(M, G), ttft=0, tpot=0.1)
    with pytest.raises(ValueError, match="index must be below"):
        S.simulate(S.Server(M, G), W.workload([0.0], [10], [2])).request(5)


# -- static batching as the literature means it (Orca, section 2.2) ----------------------------

def test_a_static_batch_keeps_a_finished_users_memory_and_place_until_its_last_reply_ends():
    # A writes 3 tokens, B 60: both in one batch. A's blocks stay held until B is done.
    work = W.workload([0.0, 0.0], [100, 100], [3, 60])
    static = S.simulate(S.Server(M, G, policy="static"), work)
    continuous = S.simulate(S.Server(M, G, policy="continuous"), work)
    a_blocks = -(-(100 + 3) // 16) * 16
    assert static.step_held_tokens[-1] >= a_blocks + 100 + 59
    assert continuous.step_held_tokens[-1] < a_blocks + 100
    # A third user arriving after A is done still waits for B: no one joins a running batch.
    late = W.workload([0.0, 0.0, 0.05], [100, 100, 10], [3, 60, 2])
    run = S.simulate(S.Server(M, G, policy="static"), late)
    assert run.first_token[2] > run.finish[1]


def test_multi_step_itl_counts_the_wait_of_a_preempted_request_as_one_gap():
    # The preemption above, the steps run 4 a call: B's first token ends step 0, it is preempted, and its
    # second run starts with its prompt's step 20; after that its tokens stream at the calls' ends.
    server = dataclasses.replace(S.Server(M, tiny_gpu(3)), admit_every=4)
    run = S.simulate(server, W.workload([0.0, 0.0], [16, 16], [20, 20]))
    assert run.runs.tolist() == [[1, 0, 0], [0, 0, 19], [1, 20, 38]]
    end = run.step_end
    a = np.diff(end[[0, 3, 7, 11, 15, 19]])
    b = np.concatenate([[end[20] - end[0]], np.diff(end[[20, 23, 27, 31, 35, 38]])])
    np.testing.assert_allclose(np.sort(run.benchmark().itls), np.sort(np.concatenate([a, b])))


def test_a_static_batch_takes_in_only_what_fits_whole_and_is_never_preempted():
    # 40 blocks (640 tokens): each conversation needs 20 blocks at its end, 7 at its start. Paged
    # continuous batching admits all three and preempts; a static batch takes two, then the third.
    work = W.workload([0.0, 0.0, 0.0], [100, 100, 100], [220, 220, 220])
    small = tiny_gpu(40)
    static = S.simulate(S.Server(M, small, policy="static"), work)
    continuous = S.simulate(S.Server(M, small, policy="continuous"), work)
    assert static.preemptions.sum() == 0 and continuous.preemptions.sum() > 0
    assert static.first_token[2] > max(static.finish[:2])
    assert static.step_decodes.max() == 2


def test_step_tokens_is_refused_where_the_policy_cannot_honour_it():
    with pytest.raises(ValueError, match="step_tokens must be at least Llama 3 8B's window of 8,192 tokens"):
        S.Server(M, G, policy="continuous", step_tokens=512)
    with pytest.raises(ValueError, match="step_tokens does not apply to policy='static'"):
        S.Server(M, G, policy="static", step_tokens=512)
    assert S.Server(M, G, policy="continuous", step_tokens=8192).token_budget == 8192
    assert S.Server(M, G, policy="chunked", step_tokens=512).token_budget == 512


def test_a_reservation_is_the_prompt_plus_the_reply_cap_never_past_the_window():
    capped = S.Server(M, G, memory="reserved", max_reply_tokens=1024)
    assert capped.reservation(161) == 161 + 1024
    assert capped.reservation(8000) == 8192
    assert S.Server(M, G, memory="reserved").reservation(161) == 8192      # no cap: the window


def test_the_servers_defaults_are_vllm_v0s_from_the_engine_table():
    from servingmath import engines
    v0 = engines.defaults("vllm", "0.6")
    assert (S.BLOCK_TOKENS, S.MAX_RUNNING, S.CHUNK_TOKENS) == (v0.block_tokens, v0.max_running, v0.step_tokens)
    server = S.Server(M, G, policy="chunked")
    assert (server.block_tokens, server.max_running, server.token_budget) == (16, 256, 512)
