"""Serving engines' defaults by engine and version (servingmath.engines): one table, each cell sourced."""
import pytest

import servingmath as sm
from servingmath import engines as E


def test_vllm_v1_sets_its_batch_from_the_card_and_the_entry_point():
    h100, a100, l4 = sm.CATALOG["h100-sxm"], sm.CATALOG["a100-80gb"], sm.CATALOG["l4"]
    served = E.defaults("vllm", "0.9", gpu=h100)
    assert (served.max_running, served.step_tokens, served.chunked_prefill) == (1024, 8192, True)
    assert E.defaults("vllm", "0.9", gpu=h100, entry="llm").step_tokens == 16384
    # The A100 80 GB passes 70 GiB but is excluded by name; the L4 is under it.
    for card in (a100, l4):
        assert (E.defaults("vllm", "0.10", gpu=card).max_running, E.defaults("vllm", "0.10", gpu=card).step_tokens) == (256, 2048)
        assert E.defaults("vllm", "0.10", gpu=card, entry="llm").step_tokens == 8192


def test_every_card_in_the_catalog_gets_a_value_from_every_engine():
    for key in sm.CATALOG:
        gpu = sm.CATALOG[key]
        for engine, version in (("vllm", "V0"), ("vllm", "V1"), ("sglang", "0.5"), ("tgi", "3.0"), ("tensorrt-llm", "1.0")):
            found = E.defaults(engine, version, gpu=gpu)
            assert set(E.SETTINGS) <= set(found.values) <= set(E.SETTINGS) | set(E.PROFILING)
            assert all(found.source(s) for s in found.values)


def test_versions_pick_their_engine():
    assert E.defaults("vllm", "0.6.3").label == "vLLM V0 (0.4 to 0.6.4)"
    assert E.defaults("vllm", "0.6.3").step_tokens == 512 and E.defaults("vllm", "0.6").chunked_prefill is False
    assert E.row("vllm", "0.8.0").name == "vLLM V1"          # V1 is the default from 0.8
    assert E.row("vllm", "0.11.0").name == "vLLM V1"         # V0 is gone from 0.11
    assert E.row("vllm", "V0").label == "vLLM V0 (0.6.5 to 0.10)"
    assert E.defaults("vllm", "0.6.4").step_tokens == 512 and E.defaults("vllm", "0.7").step_tokens == 2048 and E.defaults("vllm", "V0").step_tokens == 2048
    assert E.defaults("sglang", "0.5.2", gpu=sm.H100_SXM).mixed_steps is False
    assert E.defaults("sglang", "0.5.2", gpu=sm.CATALOG["b200"]).step_tokens == 16384


def test_bad_lookups_are_refused_clearly():
    with pytest.raises(ValueError, match="engine must be one of"):
        E.defaults("llamacpp", "1.0")
    with pytest.raises(ValueError, match="version must be one the table covers for vllm"):
        E.defaults("vllm", "0.3")
    with pytest.raises(ValueError, match="gpu is needed"):
        E.defaults("vllm", "V1")
    with pytest.raises(ValueError, match="entry must be one of"):
        E.defaults("vllm", "V0", entry="cli")
    with pytest.raises(TypeError, match="version must be a string"):
        E.defaults("vllm", 0.9)


def test_the_table_names_each_engines_flags():
    text = E.markdown_table(sm.H100_SXM)
    for flag in ("--max-num-seqs", "--max-num-batched-tokens", "--chunked-prefill-size", "--enable-mixed-chunk",
                 "--max-running-requests", "--mem-fraction-static", "--max-batch-size", "--max-batch-prefill-tokens",
                 "--cuda-memory-fraction", "--max-batch-total-tokens", "capacity_scheduler_policy"):
        assert f"`{flag}`" in text
    assert "`--max-num-batched-tokens` 8,192" in text and "`--max-num-batched-tokens` 512" in text


def test_vllm_start_up_budget_defaults_are_cells_of_the_table():
    v0, v1 = E.defaults("vllm", "V0"), E.defaults("vllm", "V1", gpu=sm.H100_SXM)
    assert (v0.profile_min_tokens, v0.chunked_past, v0.chunked_profile_tokens, v0.max_running) == (2048, 32768, 2048, 256)
    assert (v1.graph_estimate_since, v1.memory_fraction, v1.memory_fraction_current) == ("0.21.0", 0.92, 0.92)
    # The budget reads them from here: one place for each default.
    assert sm.memory.VLLM_V0_CHUNKED_PAST == v0.chunked_past and sm.memory.VLLM_MAX_NUM_SEQS == v0.max_running
    assert sm.memory.VLLM_CUDA_GRAPH_ESTIMATE_SINCE == v1.graph_estimate_since
    for key in sm.CATALOG:
        gpu = sm.CATALOG[key]
        if gpu.cuda_reported_bytes is not None:
            for version, row in ((None, "0.27"), ("0.27.1", "0.27"), ("0.28.0", "V1")):
                if version is None and key in E.VLLM_V1_BELOW_SM80:
                    continue            # V1 ran on the T4 only from 0.11; no version is refused there
                served = E.defaults("vllm", row, gpu=gpu)
                assert sm.memory.vllm_profile_defaults(sm.LLAMA_3_8B, gpu, "v1", version=version) == \
                    (served.step_tokens, served.max_running)
    assert "profile_min_tokens" not in E.markdown_table(sm.H100_SXM)


def test_vllm_v1_took_1024_users_a_step_on_every_card_until_0_8_4():
    a100 = sm.CATALOG["a100-80gb"]
    assert E.defaults("vllm", "0.8.2", gpu=a100).max_running == 1024
    assert E.defaults("vllm", "0.8.4", gpu=a100).max_running == 256
    assert E.row("vllm", "0.8.2").label == "vLLM V1 (0.8 to 0.8.3)"
    assert E.row("vllm", "0.20").label == "vLLM V1 (0.8.4 to 0.20)"
    assert E.row("vllm", "0.27").label == "vLLM V1 (0.21 to 0.27)"
    assert E.row("vllm", "V1").label == "vLLM V1 (0.28 on)"


def test_vllm_0_28_gives_cards_of_160_gib_16384_tokens_a_step():
    # Pull request 51726, first in 0.28.0: a tier above the 70 GiB one; the H100 keeps 8,192 under `vllm serve`.
    h100, b200, a100 = sm.H100_SXM, sm.CATALOG["b200"], sm.CATALOG["a100-80gb"]
    for entry, h100_tokens in (("serve", 8192), ("llm", 16384)):
        assert E.defaults("vllm", "0.27.1", gpu=b200, entry=entry).step_tokens == h100_tokens
        assert E.defaults("vllm", "0.28.0", gpu=b200, entry=entry).step_tokens == 16384
        assert E.defaults("vllm", "0.28.0", gpu=h100, entry=entry).step_tokens == h100_tokens
        assert E.defaults("vllm", "0.28.0", gpu=a100, entry=entry).step_tokens == E.defaults("vllm", "0.27", gpu=a100,
                                                                                             entry=entry).step_tokens
    assert E.defaults("vllm", "0.28.0", gpu=b200).max_running == 1024
    assert E.VLLM_LARGE_TIER_SINCE == E.row("vllm", "V1").since == "0.28"
    assert "16,384 on cards of 160 GiB or more" in E.markdown_table(h100, rows=(("vllm", "V1"),))


def test_vllm_raised_its_memory_share_with_the_cuda_graphs_estimate():
    # Pull request 38284 turned the CUDA graphs' estimate on and raised the share from 0.9 to 0.92 in one change.
    before = E.defaults("vllm", "0.20", gpu=sm.H100_SXM).memory_fraction
    after = E.defaults("vllm", "V1", gpu=sm.H100_SXM)
    assert (before, after.memory_fraction) == (0.9, 0.92) == (sm.memory.VLLM_GPU_MEMORY_UTILIZATION, after.memory_fraction_current)
    assert E.VLLM_V1_SHARE_RAISED == E.row("vllm", "0.21").since == after.graph_estimate_since.rsplit(".0", 1)[0]
    for version in ("0.6", "V0", "0.8", "0.8.4"):
        assert E.defaults("vllm", version, gpu=sm.H100_SXM).memory_fraction == 0.9


def test_vllm_v0_budget_is_named_with_chunking_and_without():
    # With chunked prefill off (V0's default) the budget is the window, at least 2,048: the table says so beside it.
    text = E.markdown_table(sm.H100_SXM, rows=(("vllm", "0.6"), ("vllm", "V0")))
    row = next(line for line in text.splitlines() if line.startswith(f"| {E.MEANINGS['step_tokens']} |"))
    assert row.count("off: the window, at least 2,048") == 2
    chunked = next(line for line in text.splitlines() if line.startswith(f"| {E.MEANINGS['chunked_prefill']} |"))
    assert "32,768" in chunked


def test_sglang_chunk_follows_the_card_s_memory_in_four_tiers():
    rule = E.row("sglang", "0.5").cells["step_tokens"].value
    assert [least for least, _ in rule.tiers] == [0, 35, 60, 160]
    assert [values["serve"] for _, values in rule.tiers] == [2048, 4096, 8192, 16384]
    assert E.defaults("sglang", "0.5", gpu=sm.H100_SXM).step_tokens == 8192
    assert E.defaults("sglang", "0.5", gpu=sm.CATALOG["l40s"]).step_tokens == 4096
    assert E.defaults("sglang", "0.5", gpu=sm.CATALOG["l4"]).step_tokens == 2048


def test_v1_became_vllm_s_default_at_its_first_row():
    # The budget dates V1 from the table's first V1 row, not from the latest one.
    assert sm.memory.VLLM_V1_DEFAULT_SINCE == "0.8" == E.row("vllm", "0.8").since


def test_vllm_version_boundaries_the_pages_name_agree_with_the_rows():
    assert E.row("vllm", "V0").until == E.VLLM_V0_REMOVED
    assert E._parse(E.VLLM_V1_CHUNKING_FORCED_LAST) <= E._parse(E.VLLM_V0_REMOVED) < E._parse(E.VLLM_SWAP_SPACE_REMOVED)
    assert E.row("vllm", E.VLLM_V1_CHUNKING_FORCED_LAST).name == "vLLM V1"
    assert E.defaults("vllm", "V1", gpu=sm.H100_SXM).chunked_prefill is True


# -- engines as they run: the contract ---------------------------------------------------------------

import dataclasses  # noqa: E402

import numpy as np  # noqa: E402

from servingmath import simulator as S  # noqa: E402
from servingmath import workload as W  # noqa: E402

M, G = sm.LLAMA_3_8B, sm.H100_SXM


def test_a_version_takes_the_latest_profile_at_or_before_it():
    assert E.engine("vllm", "0.9.2").version == "0.8" and E.engine("vllm", "0.9.2").group == "vllm-v1"
    assert E.engine("vllm", "0.6.0").group == "vllm-v0" and E.engine("vllm", "0.7.3").version == "0.6"
    assert E.engine("sglang", "0.5.3.post3").version == "0.5" and E.engine("sglang", "0.3.0").version == "0.3"
    assert E.engine("tensorrt-llm", "1.2.0rc1").version == "1.0"
    with pytest.raises(ValueError, match="'0.5.4' of vllm is before the first profiled, 0.6"):
        E.engine("vllm", "0.5.4")
    with pytest.raises(ValueError, match="name must be one of .*'llamacpp'"):
        E.engine("llamacpp", "1.0")
    with pytest.raises(ValueError, match="version must be a release"):
        E.engine("vllm", "latest")


def test_the_ideal_engine_is_todays_server_exactly():
    assert E.engine("ideal").server(M, G) == S.Server(M, G)
    assert E.engine("ideal").server(M, G, policy="chunked") == S.Server(M, G, policy="chunked")
    assert E.engine("ideal").overheads == E.IDEAL
    work = W.poisson_workload(5, 60, seed=3, model=M)
    a, b = S.simulate(E.engine("ideal").server(M, G), work), S.simulate(S.Server(M, G), work)
    assert np.array_equal(a.step_end, b.step_end) and np.array_equal(a.finish, b.finish)


def test_a_named_engine_takes_its_defaults_from_the_table_and_its_flags_by_their_names():
    v1 = E.engine("vllm", "0.9.2")
    server = v1.server(M, G)
    d = E.defaults("vllm", "0.9.2", gpu=G)
    assert (server.policy, server.max_running, server.step_tokens) == ("chunked", d.max_running, d.step_tokens)
    assert server.reserve == pytest.approx(1 - d.memory_fraction) and server.clock == "phases"
    small = v1.server(M, G, max_num_seqs=64, max_num_batched_tokens=4096, gpu_memory_utilization=0.8,
                      max_model_len=4096)
    assert (small.max_running, small.step_tokens, small.window) == (64, 4096, 4096)
    assert small.reserve == pytest.approx(0.2)
    sg = E.engine("sglang", "0.5.3").server(M, G, chunked_prefill_size=-1, max_running_requests=48, mem_fraction_static=0.7)
    assert (sg.policy, sg.max_running, sg.reserve) == ("continuous", 48, pytest.approx(0.3))


def test_fp8_halves_the_weights_and_runs_the_products_at_the_fp8_peak():
    v1 = E.engine("vllm", "0.9.2")
    base, fp8 = v1.server(M, G), v1.server(M, G, quantization="fp8")
    assert fp8.weight_bits == base.weight_bits / 2 and fp8.linear_peak == G.dense_flops["fp8"]
    a, b = S.StepClock(base).phases([500] * 8), S.StepClock(fp8).phases([500] * 8)
    assert b["matrix products"] == pytest.approx(a["matrix products"] / 2, rel=1e-3)   # memory-bound: half the bytes (less the new keys and values)
    big_a, big_b = S.StepClock(base).phases(pieces=[(4096, 0)]), S.StepClock(fp8).phases(pieces=[(4096, 0)])
    assert big_b["matrix products"] == pytest.approx(big_a["matrix products"] / 2, rel=1e-3)   # compute-bound: twice the peak
    assert v1.server(M, G, kv_cache_dtype="fp8").kv_bits == 8


def test_eager_mode_adds_the_launches_cuda_graphs_save_where_kernels_are_short():
    v1 = E.engine("vllm", "0.9.2")
    small = sm.MODELS["llama-3.2-1b"]     # one user's kernels shorter than their launches
    graph, eager = S.StepClock(v1.server(small, G)), S.StepClock(v1.server(small, G, enforce_eager=True))
    one = graph.phases([100])
    assert eager.phases([100])["launch wait"] == pytest.approx(small.layers * E.KERNELS_PER_LAYER * E.LAUNCH_SECONDS
                                                               - sum(one[k] for k in ("matrix products", "decode attention", "prompt attention")))
    assert eager.phases([100])["launch wait"] > 0
    assert eager.time([100]) > graph.time([100])
    assert eager.phases(pieces=[(8000, 0)])["launch wait"] == 0      # a long step hides its launches
    sg = E.engine("sglang", "0.4.6")
    assert S.StepClock(sg.server(small, G, disable_cuda_graph=True)).time([100]) > S.StepClock(sg.server(small, G)).time([100])


def test_unknown_and_bad_flags_are_refused_by_name():
    with pytest.raises(ValueError, match="max_num_seq is not a flag of vllm 0.9.2: it takes max_num_seqs"):
        E.engine("vllm", "0.9.2").server(M, G, max_num_seq=8)
    with pytest.raises(ValueError, match="max_num_seqs is not a flag of sglang 0.5"):
        E.engine("sglang", "0.5").server(M, G, max_num_seqs=8)
    with pytest.raises(ValueError, match="quantization must be one of"):
        E.engine("vllm", "0.9.2").server(M, G, quantization="awq")
    with pytest.raises(ValueError, match="gpu_memory_utilization must be a share"):
        E.engine("vllm", "0.9.2").server(M, G, gpu_memory_utilization=1.5)
    with pytest.raises(TypeError, match="enforce_eager must be True or False"):
        E.engine("vllm", "0.9.2").server(M, G, enforce_eager="yes")
    with pytest.raises(ValueError, match="num_scheduler_steps is V0's"):
        E.engine("vllm", "0.9.2").server(M, G, num_scheduler_steps=8)
    assert E.engine("vllm", "0.6.0").server(M, G, num_scheduler_steps=10).user_time == pytest.approx(
        E.engine("vllm", "0.6.0").server(M, G).user_time / 10)


def test_a_phased_step_is_its_phases_summed_and_never_shorter_than_the_overlapped_one():
    server = dataclasses.replace(S.Server(M, G), clock="phases")
    phased, overlap = S.StepClock(server), S.StepClock(S.Server(M, G))
    for caches, pieces in (([500] * 256, [(256, 0)]), ([1000] * 8, []), ([], [(2048, 0)])):
        parts = phased.phases(caches, pieces)
        assert phased.time(caches, pieces) == pytest.approx(sum(parts.values()))
        assert phased.time(caches, pieces) >= overlap.time(caches, pieces) - 1e-12
    # The step behind the chunked headline: a 256-token piece beside 256 users at about 500 tokens.
    assert phased.time([500] * 256, [(256, 0)]) > 1.2 * overlap.time([500] * 256, [(256, 0)])


def test_a_step_of_many_users_waits_for_the_streaming_process_and_a_step_of_few_does_not():
    base = dataclasses.replace(S.Server(M, G), clock="phases")
    streaming = S.StepClock(dataclasses.replace(base, stream_time=100e-6))
    plain = S.StepClock(base)
    # Four users: their 0.4 ms of streaming runs beside a step of several milliseconds.
    assert streaming.time([500] * 4) == plain.time([500] * 4)
    assert streaming.phases([500] * 4)["streaming wait"] == 0
    # A thousand users: 100 ms of streaming outlasts the step, which then takes that long.
    assert plain.time([500] * 1000) < 0.1
    assert streaming.time([500] * 1000) == pytest.approx(0.1)
    parts = streaming.phases([500] * 1000)
    assert parts["streaming wait"] > 0 and sum(parts.values()) == pytest.approx(0.1)
    # The simulator's loop reads the same: a saturated run's steps take the streaming time.
    work = W.workload(np.zeros(300), np.full(300, 100), np.full(300, 50))
    run = S.simulate(dataclasses.replace(base, stream_time=1e-3, max_running=256), work)
    assert run.step_time[run.step_decodes == 256].min() >= 0.256 - 1e-12
    with pytest.raises(ValueError, match="need clock='phases'"):
        S.Server(M, G, stream_time=1e-5)
    with pytest.raises(ValueError, match="stream_time"):
        dataclasses.replace(base, stream_time=-1.0)


def test_a_named_engine_looks_up_an_untied_input_table_and_the_lessons_count_it_whole():
    untied, tied = sm.LLAMA_3_8B, sm.MODELS["llama-3.2-1b"]
    assert not untied.tied_embeddings and tied.tied_embeddings
    table = untied.vocab * untied.hidden
    for model, left_out in ((untied, table), (tied, 0)):
        lessons = S.StepClock(S.Server(model, G))
        engine = S.StepClock(dataclasses.replace(S.Server(model, G), input_table="looked up"))
        assert lessons.weights(1) == model.parameters * 2                    # 16-bit weights, the table's too
        assert engine.weights(1) == (model.parameters - left_out) * 2
        assert lessons.flops_per_token - engine.flops_per_token == 2 * left_out
    assert E.engine("vllm", "0.9.2").server(untied, G).input_table == "looked up"
    # In a tensor-parallel group each GPU leaves out its share of the table.
    group = S.Server(untied, G, tensor_parallel=2)
    whole = S.StepClock(group).weights(1)
    assert S.StepClock(dataclasses.replace(group, input_table="looked up")).weights(1) == pytest.approx(whole - table * 2 / 2)
    with pytest.raises(ValueError, match="input_table must be one of"):
        dataclasses.replace(group, input_table="skipped")


# -- the benchmark's definitions on a run small enough to check by hand ------------------------------

def _flat_server():
    """Every step takes the same time t: weights only, memory-bound, no overhead."""
    return S.Server(M, G, assumptions=sm.LESSON)


def test_benchmark_figures_are_vllms_on_a_run_checked_by_hand():
    server = _flat_server()
    t = S.StepClock(server).time([1])
    work = W.workload([0.0, 0.0], [10, 10], [3, 1])
    b = S.simulate(server, work).benchmark()
    # Step 1 reads both prompts (each request's first token at t); B's only token ends it; A's next two
    # tokens come at 2t and 3t.
    assert b.duration == pytest.approx(3 * t)
    assert b.output_throughput == pytest.approx(4 / (3 * t)) and b.request_throughput == pytest.approx(2 / (3 * t))
    assert b.total_token_throughput == pytest.approx(24 / (3 * t))
    assert b.ttft_p50 == pytest.approx(t) and b.ttft_p99 == pytest.approx(t)
    assert list(b.tpots) == pytest.approx([t])              # B, one token, has no TPOT
    assert b.tpot_p50 == pytest.approx(t) and b.tpot_p99 == pytest.approx(t)
    assert sorted(b.itls) == pytest.approx([t, t]) and b.itl_p99 == pytest.approx(t)
    assert b.e2e_p50 == pytest.approx(2 * t)                # numpy's median of t and 3t


def test_under_multi_step_scheduling_the_itl_is_a_gap_between_streamed_chunks():
    # One request of 9 tokens, alone, on a flat clock of t a step, the steps run 4 a call: its first token
    # ends step 0; tokens 2 to 4 come in the call of steps 1 to 3, 5 to 8 in steps 4 to 7, the last in step 8.
    server = dataclasses.replace(_flat_server(), admit_every=4)
    t = S.StepClock(server).time([1])
    run = S.simulate(server, W.workload([0.0], [10], [9]))
    b = run.benchmark()
    assert sorted(b.itls) == pytest.approx([t, 3 * t, 4 * t])     # chunks at 4t (after t), 8t and 9t
    # TPOT does not change with streaming: (E2E − TTFT) ÷ (output − 1).
    assert b.tpot_p50 == pytest.approx(t)
    # One step a call streams every token on its own.
    single = S.simulate(_flat_server(), W.workload([0.0], [10], [9])).benchmark()
    assert list(single.itls) == pytest.approx([t] * 8)


def test_multi_step_itl_has_one_gap_a_chunk_after_the_first_token():
    server = dataclasses.replace(_flat_server(), admit_every=3)
    run = S.simulate(server, W.workload([0.0] * 3, [10] * 3, [7] * 3))
    gaps = run._streamed_gaps(3)
    # Without preemption each request has one gap for each chunk after its first token's.
    assert len(gaps) == sum(len(np.unique(np.minimum((np.arange(a + 1, b + 1) // 3 + 1) * 3 - 1, b)))
                            for _, a, b in run.runs)
    assert (gaps > 0).all()


def test_a_concurrency_cap_sends_the_next_request_as_one_finishes_and_times_it_from_then():
    server = _flat_server()
    t = S.StepClock(server).time([1])
    work = W.workload([0.0, 0.0], [10, 10], [3, 2])
    run = S.simulate(server, work, concurrency=1)
    assert run.workload.arrival[1] == pytest.approx(3 * t)        # sent when A's third token came
    assert run.ttft[1] == pytest.approx(t) and run.finish[1] == pytest.approx(5 * t)
    b = run.benchmark()
    assert b.duration == pytest.approx(5 * t) and b.ttft_p99 == pytest.approx(t)
    with pytest.raises(ValueError, match="concurrency"):
        S.simulate(server, work, concurrency=0)


def test_the_api_servers_time_delays_each_request_one_after_another():
    server = dataclasses.replace(_flat_server(), request_time=0.01)
    t = S.StepClock(server).time([1])
    run = S.simulate(server, W.workload([0.0, 0.0], [10, 10], [2, 2]))
    assert run.ttft[0] == pytest.approx(0.01 + t)
    assert run.ttft[1] == pytest.approx(0.02 + t)      # waits for the first request's turn


def test_a_requests_latency_delays_its_every_token_alike_and_holds_up_no_other_request():
    server = dataclasses.replace(_flat_server(), request_time=0.01, request_latency=0.005)
    without = dataclasses.replace(server, request_latency=0.0)
    work = W.workload([0.0, 0.0, 0.003], [10, 10, 10], [3, 3, 3])
    run, before = S.simulate(server, work), S.simulate(without, work)
    # every request 5 ms later, all of it: the API server's turns are waited for one after another, the latency
    # is not (it would put the second and third requests 5 and 10 ms further back)
    assert run.ttft - before.ttft == pytest.approx([0.005] * 3)
    assert run.finish - before.finish == pytest.approx([0.005] * 3)
    assert run.benchmark().tpot_p50 == pytest.approx(before.benchmark().tpot_p50)
    # under a concurrency cap, the next request leaves the client when the last token of one has come back
    capped = S.simulate(server, work, concurrency=1)
    assert capped.workload.arrival[1] == pytest.approx(capped.finish[0])
    # ... so each request there pays every earlier one's latency too: one at a time, the run is longer by three
    assert capped.finish - S.simulate(without, work, concurrency=1).finish == pytest.approx([0.005, 0.010, 0.015])
    with pytest.raises(ValueError, match="request_latency"):
        dataclasses.replace(server, request_latency=-0.001)


def test_an_engine_that_keeps_prompts_apart_runs_a_mixed_step_as_two():
    v0 = E.engine("vllm", "0.6.0")
    apart, chunked = v0.server(M, G), v0.server(M, G, enable_chunked_prefill=True)
    assert (apart.mixed_steps, chunked.mixed_steps) == (False, True)
    sg = E.engine("sglang", "0.5.3")
    assert sg.server(M, G).mixed_steps is False and sg.server(M, G, enable_mixed_chunk=True).mixed_steps is True
    clock = S.StepClock(dataclasses.replace(S.Server(M, G), clock="phases"))
    both = S._phased_step(clock, 256 + 8, 8, 8 * 500, (), None, [(0, 256, 0)], mixed=False)
    assert both == pytest.approx(clock.time(pieces=[(256, 0)]) + clock.time([500] * 8))
    assert S._phased_step(clock, 256 + 8, 8, 8 * 500, (), None, [(0, 256, 0)]) == pytest.approx(
        clock.time([500] * 8, [(256, 0)]))
    with pytest.raises(ValueError, match="mixed_steps=False"):
        S.Server(M, G, mixed_steps=False)


def test_a_profile_serves_with_the_defaults_of_the_release_asked_for():
    # vLLM 0.8.2 and 0.9.2 share the 0.8 profile's overheads but not its defaults: 1,024 users a step on an A100
    # until 0.8.4, 256 after; a release named with a suffix ("0.5.3.post3") reads its numbers' row.
    a100 = sm.CATALOG["a100-80gb"]
    assert E.engine("vllm", "0.8.2").server(sm.LLAMA_3_8B, a100).max_running == 1024
    assert E.engine("vllm", "0.9.2").server(sm.LLAMA_3_8B, a100).max_running == 256
    assert E.engine("sglang", "0.5.3.post3").server(sm.LLAMA_3_8B, sm.H100_SXM).step_tokens == 8192


def test_v1s_profiling_pass_is_bounded_by_version_on_the_a100():
    """V1 gave the small cards' pass to the A100 by name until pull request 17073 went by memory, and again from
    pull request 17885 (version 0.9): the page states the A100's figures from that version, read from here."""
    from servingmath import engines
    first_v1 = engines.row("vllm", "0.8").since
    assert engines._parse(first_v1) < engines._parse(engines.VLLM_V1_A100_SMALL_SINCE)
    assert engines.row("vllm", engines.VLLM_V1_A100_SMALL_SINCE).name == "vLLM V1"
    note = engines.row("vllm", "V1").cells["step_tokens"].note
    assert all(pr in note for pr in ("12369", "17073", "17885")) and engines.VLLM_V1_A100_SMALL_SINCE in note
    # The memory share: 0.9 in every vLLM row before 0.21, 0.92 from it, as the current source has it.
    assert {r.cells["memory_fraction"].value for r in engines.TABLE
            if r.engine == "vllm" and engines._parse(r.since) < engines._parse("0.21")} == {0.9}
    assert engines.row("vllm", "V1").cells["memory_fraction_current"].value == 0.92


def test_each_engine_splits_a_model_under_its_own_tensor_parallel_flag_over_the_cards_nvlink():
    big, h100 = sm.MODELS["llama-3.3-70b"], sm.hardware.CATALOG["h100-sxm"]
    assert E.TENSOR_PARALLEL_FLAGS == {"vllm": "tensor_parallel_size", "sglang": "tp_size", "tensorrt-llm": "tp",
                                       "lmdeploy": "tp"}
    for name, flag in E.TENSOR_PARALLEL_FLAGS.items():
        profile = E.engine(name, E.PROFILED[name][-1][0])
        assert flag in profile.flags
        server = profile.server(big, h100, **{flag: 4})
        assert (server.tensor_parallel, server.group.link) == (4, sm.hardware.link(h100))
        assert server.group.link.key == "nvlink4"
        # Each GPU holds a quarter of the matrices, and the step waits for the all-reduces.
        assert server.gpu_weight_bytes < sm.memory.weight_bytes(big.parameters, 16) / 3.9
        assert S.StepClock(server).phases([500] * 8)["all-reduces"] > 0
    slow = E.engine("vllm", "0.9.2").server(big, h100, tensor_parallel_size=4, link="pcie5")
    fast = E.engine("vllm", "0.9.2").server(big, h100, tensor_parallel_size=4)
    assert slow.group.link.key == "pcie5"
    assert S.StepClock(slow).time([500] * 8) > S.StepClock(fast).time([500] * 8)
    # TensorRT-LLM's cache takes its share of what each GPU's own share of the weights leaves.
    trt = E.engine("tensorrt-llm", "1.0")
    for degree in (2, 4):
        server = trt.server(big, h100, tp=degree)
        left = 1 - server.gpu_weight_bytes / h100.memory_bytes
        assert server.reserve == pytest.approx((1 - E.defaults("tensorrt-llm", "1.0").memory_fraction) * left)


def test_a_tensor_parallel_degree_or_link_that_cannot_serve_is_refused_naming_the_flag_and_value():
    big, h100, l4 = sm.MODELS["llama-3.3-70b"], sm.hardware.CATALOG["h100-sxm"], sm.hardware.CATALOG["l4"]
    with pytest.raises(ValueError, match=r"tensor_parallel_size=3 is refused for Llama 3.3 70B .*64 attention heads, got 3"):
        E.engine("vllm", "0.9.2").server(big, h100, tensor_parallel_size=3)
    with pytest.raises(ValueError, match=r"tp_size=6 is refused .*got 6"):
        E.engine("sglang", "0.5").server(big, h100, tp_size=6)
    with pytest.raises(ValueError, match=r"tp=16 is refused .*at most 8 .*got 16"):
        E.engine("tensorrt-llm", "1.0").server(big, h100, tp=16)
    with pytest.raises(ValueError, match=r"tensor_parallel_size=2 is refused .*cannot have 'nvlink3'"):
        E.engine("vllm", "0.9.2").server(big, h100, tensor_parallel_size=2, link="nvlink3")
    with pytest.raises(ValueError, match="link joins the GPUs tensor_parallel_size splits .*got link='pcie5'"):
        E.engine("vllm", "0.9.2").server(big, h100, link="pcie5")
    with pytest.raises(sm.DoesNotFit, match=r"tensor_parallel_size=2 for vllm 0.9.2: Llama 3.3 70B's weights"):
        E.engine("vllm", "0.9.2").server(big, l4, tensor_parallel_size=2)
    with pytest.raises(sm.DoesNotFit, match=r"tp=1 for tensorrt-llm 1.0"):
        E.engine("tensorrt-llm", "1.0").server(big, h100)
    with pytest.raises(ValueError, match="tp_size must be a whole number of at least 1 for sglang 0.5, got 0"):
        E.engine("sglang", "0.5").server(big, h100, tp_size=0)


def test_fp8_products_are_shared_among_the_gpus_of_a_group_like_16_bit_ones():
    big, h100 = sm.MODELS["llama-3.3-70b"], sm.hardware.CATALOG["h100-sxm"]
    trt = E.engine("tensorrt-llm", "1.0")
    for bits in ({}, {"quantization": "fp8"}):
        one = S.StepClock(trt.server(sm.LLAMA_3_8B, h100, **bits)).phases(pieces=[(8192, 0)])["matrix products"]
        four = S.StepClock(trt.server(sm.LLAMA_3_8B, h100, tp=4, **bits)).phases(pieces=[(8192, 0)])["matrix products"]
        assert four == pytest.approx(one / 4, rel=1e-3)     # compute-bound: a quarter of the arithmetic each
    assert S.StepClock(trt.server(big, h100, tp=4, quantization="fp8")).phases(pieces=[(8192, 0)])["matrix products"] < \
        S.StepClock(trt.server(big, h100, tp=4)).phases(pieces=[(8192, 0)])["matrix products"]


def test_where_prompts_run_in_a_step_of_their_own_their_first_token_comes_before_the_next_tokens_step():
    # One user decoding when a 1,000-token prompt arrives: SGLang runs the prompt's step, then the next tokens'.
    server = E.engine("sglang", "0.5.3").server(M, G)
    clock = S.StepClock(server)
    work = W.workload([0.0, 0.05], [100, 1000], [400, 3])
    run = S.simulate(server, work)
    step_start = run.step_end[np.searchsorted(run.step_end, run.first_token[1]) - 1]
    assert run.first_token[1] - step_start == pytest.approx(clock.time(pieces=[(1000, 0)]), rel=1e-9)
    mixed = S.simulate(E.engine("sglang", "0.5.3").server(M, G, enable_mixed_chunk=True), work)
    assert mixed.first_token[1] > run.first_token[1]      # a mixed step gives it at the end of the whole step


def test_vllm_v0_splits_a_long_windows_prompts_by_itself():
    long = sm.MODELS["llama-3.1-8b"]
    assert long.context_window > E.defaults("vllm", "0.6.0").chunked_past
    found = E.engine("vllm", "0.6.0").server(long, G)
    assert (found.policy, found.step_tokens, found.mixed_steps) == ("chunked", 512, True)
    assert E.engine("vllm", "0.6.6").server(long, G).step_tokens == 2048
    assert E.engine("vllm", "0.6.0").server(long, G, max_model_len=4096).policy == "continuous"
    assert E.engine("vllm", "0.6.0").server(long, G, enable_chunked_prefill=False).policy == "continuous"


def test_tensorrt_llm_admits_a_request_only_with_room_to_finish_it_and_never_preempts():
    server = E.engine("tensorrt-llm", "1.0").server(M, G)
    assert (server.memory, server.max_reply_tokens) == ("reserved", "each")
    assert list(server.reservation(np.array([100, 7000]), np.array([50, 2000]))) == [150, M.context_window]
    work = W.poisson_workload(400, 3000, W.LengthDistribution("long replies", 500, 3000), seed=4, model=M)
    run = S.simulate(server, work)
    assert run.preemptions.sum() == 0 and np.isfinite(run.finish).all()
    with pytest.raises(ValueError, match="reply_tokens are needed"):
        server.reservation(100)
    with pytest.raises(ValueError, match="memory='paged'"):
        S.Server(M, G, max_reply_tokens="each")


def test_where_prompts_have_steps_of_their_own_the_whole_chunk_budget_is_theirs():
    one_prompt = W.workload([0.0] * 9, [50] * 8 + [3000], [600] * 8 + [2])
    apart = S.simulate(E.engine("sglang", "0.5.3").server(M, G, chunked_prefill_size=1024), one_prompt)
    mixed = S.simulate(E.engine("sglang", "0.5.3").server(M, G, chunked_prefill_size=1024, enable_mixed_chunk=True),
                       one_prompt)
    # The 3,000-token prompt in chunks of 1,024 beside 8 users decoding: 3 steps apart, 3 or more mixed (1,016 a step).
    assert max(apart.step_tokens) - 8 == 1024 and max(mixed.step_tokens) == 1024


def test_vllm_v1_chunks_whatever_the_flag_says_up_to_the_last_version_read():
    # vLLM 0.9.2's _set_default_args_v1 and 0.11.0's _set_default_args set enable_chunked_prefill = True for a
    # generation model, whatever --no-enable-chunked-prefill asked: the flag is taken and changes nothing there.
    for version in ("0.8.5", "0.9.2", "0.11.0"):
        asked = E.engine("vllm", version).server(M, G, enable_chunked_prefill=False)
        assert (asked.policy, asked.step_tokens) == ("chunked", E.engine("vllm", version).server(M, G).step_tokens)
    assert E._parse(E.VLLM_V1_CHUNKING_FORCED_LAST) == (0, 11)
