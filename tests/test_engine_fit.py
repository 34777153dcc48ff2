"""Engines' overheads fitted on published runs (servingmath.calibration), checked on publishers held out.

The fit itself takes minutes (``make engine-fit``); these tests read its kept results and replay every
run once with the kept parameters, so a change to the simulator or the engines that moves a prediction
fails here until the fit is run again and its figures are looked at."""
import math

import numpy as np
import pytest

import servingmath as sm
from servingmath import calibration as C
from servingmath import engines as E
from servingmath import simulator as S
from servingmath import workload as W
from servingmath.runs import load_runs

RUNS = load_runs()
KEPT = C.results()


def _params(data):
    return C._from_json(data)


@pytest.mark.parametrize("which", ["fit", "held_out"])
def test_the_kept_predictions_are_what_the_package_predicts_now(which):
    for run in RUNS:
        data = KEPT["fit"] if which == "fit" else KEPT["held_out_fits"][run.source_group]
        group = E.engine(run.engine, run.version).group
        got = C.predict(run, KEPT["requests"], C._overheads(_params(data), group))
        kept = KEPT["rows"][run.id][which]
        for name, value in kept.items():
            assert got[name] == pytest.approx(value, rel=1e-9), (run.id, name)


def test_every_run_is_predicted_by_a_fit_that_never_saw_its_publisher():
    assert set(KEPT["held_out_fits"]) == set(C.sources(RUNS)) and len(KEPT["held_out_fits"]) >= 6
    assert set(KEPT["rows"]) == {r.id for r in RUNS}
    for run in RUNS:
        assert set(KEPT["rows"][run.id]["held_out"]) == set(run.metrics)


def test_the_fitted_parameters_are_physically_plausible():
    for group, o in C.fitted_overheads().items():
        assert 0 < o.step_time < 0.02 and 0 < o.user_time < 2e-4 and 0 < o.request_time < 0.05, group
        assert 0 < o.stream_time < 5e-4 and 1e-3 < o.request_latency < 0.05, group
        assert 0.3 <= o.compute_efficiency <= 1 and 0.5 <= o.bandwidth_efficiency <= 1
    assert E.engine("vllm", "0.9.2").overheads == C.fitted_overheads()["vllm-v1"]
    # vLLM V1's request latency rests on GPUStack's four-user runs: fitted without them, it is under half as long
    assert C.held_out_overheads("gpustack")["vllm-v1"].request_latency < C.fitted_overheads()["vllm-v1"].request_latency / 2
    assert set(KEPT["meanings"]) == set(C.GLOBAL) | set(C.PER_GROUP)


def test_the_repeated_trtllm_rows_are_left_out_of_the_unseen_summaries():
    ids = {r.id for r in RUNS}
    assert set(C.REPEATED) <= ids and len(C.REPEATED) == 6
    assert C.summary("held_out").runs == C.summary("held_out", unseen=False).runs - len(C.REPEATED)


def test_a_cache_format_left_unstated_is_16_bits_unless_the_table_beats_what_16_bits_allow():
    from servingmath.reality import saturated_output_rate
    by_id = {r.id: r for r in RUNS}
    nvidia = [r for r in RUNS if r.source_group == by_id["trtllm10-h100-llama31-8b-fp8-128-2048"].source_group]
    beyond = [r.id for r in nvidia if r.metrics["output_throughput"] > saturated_output_rate(
        r.shape, r.gpu_spec, "fp8", 8, 16, r.input_len, r.output_len)]
    # Two of NVIDIA's H100 rows pass more tokens than a 16-bit cache lets the card pass; none passes an 8-bit one's.
    assert sorted(beyond) == ["trtllm10-h100-llama31-8b-fp8-128-2048", "trtllm10-h100-llama31-8b-fp8-2048-2048"]
    assert all(r.metrics["output_throughput"] < saturated_output_rate(
        r.shape, r.gpu_spec, "fp8", 8, 8, r.input_len, r.output_len) for r in nvidia)
    assert all(C.cache_format(r)[0] == "fp8" for r in nvidia)
    assert C.replay(by_id["trtllm10-h100-llama31-8b-fp8-2048-128"], 10).flags["kv_cache_dtype"] == "fp8"
    # A stated format is kept; an unstated one with nothing beyond 16 bits stays 16 bits.
    assert C.cache_format(by_id["gpustack-h100-qwen3-8b-vllm092-bf16-kvfp8"])[0] == "fp8_e4m3"
    others = [r for r in RUNS if r not in nvidia and not r.kv_cache_dtype]
    assert others and all(C.cache_format(r) == (None, "16-bit: not stated") for r in others)
    # The same run, alone in its table, keeps 16 bits: the deduction needs the run that beats the floor.
    assert C.cache_format(by_id["trtllm10-h100-llama31-8b-fp8-128-128"],
                          [by_id["trtllm10-h100-llama31-8b-fp8-128-128"]])[0] is None


def _held(run_id, name):
    return KEPT["rows"][run_id]["held_out"][name]


def test_predicted_throughput_rises_with_load_then_saturates():
    # The L4 runs at 1, 4, 16 and 64 requests in flight, and the A100 runs at 8, 16 and 32 a second.
    ladder = [f"inferencebench-l4-qwen25-7b-vllm-short-c{c}" for c in (1, 4, 16, 64)]
    values = [_held(i, "output_throughput") for i in ladder]
    assert values == sorted(values) and values[-1] > 10 * values[0]
    rates = [_held(f"kvcached-a100-llama32-3b-sglang-rps{r}", "output_throughput") for r in (8, 16, 32)]
    assert rates == sorted(rates)
    # Past the engine's cap on users a step, more requests in flight add nothing.
    engine = E.engine("vllm", "0.8.5")
    server = engine.server(sm.MODELS["qwen2.5-7b"], sm.CATALOG["l4"], max_num_seqs=64)
    work = W.workload(np.zeros(512), np.full(512, 100), np.full(512, 128))
    at = {c: S.simulate(server, work, concurrency=c).benchmark().output_throughput for c in (32, 128, 256)}
    assert at[128] > 1.2 * at[32] and at[256] == pytest.approx(at[128], rel=0.05)


def test_predicted_ttft_grows_with_prompt_length_and_load():
    # No published sweep changes only its prompts' length, so prompt length is tried on the profile itself:
    # the same load, prompts ten times as long.
    server = E.engine("vllm", "0.8.5").server(sm.MODELS["qwen2.5-7b"], sm.CATALOG["l4"])
    ttft = [S.simulate(server, W.poisson_workload(2, 200, W.LengthDistribution("prompts", prompt, 128), seed=3,
                                                  model=server.model)).benchmark().ttft_p50
            for prompt in (200, 2000)]
    assert ttft[1] > 2 * ttft[0]
    loads = [_held(f"inferencebench-l4-qwen25-7b-vllm-short-c{c}", "ttft_median") for c in (1, 4, 16, 64)]
    assert loads == sorted(loads)
    rates = [_held(f"kvcached-a100-llama32-3b-sglang-rps{r}", "ttft_median") for r in (8, 16, 32)]
    assert rates == sorted(rates)


def test_a_run_at_a_rate_or_of_drawn_lengths_is_replayed_with_every_request_it_sent():
    # Past saturation a queue, and the wait in it, grows with the requests sent: a Poisson run sends them all.
    # Drawn lengths leave the longest requests for last, running with slots to spare: their share of the
    # run's time depends on how many requests came before, so every one is sent.
    for run in load_runs():
        replay = C.replay(run)
        count = len(replay.work.prompt)
        if run.arrivals.kind == "poisson" or not replay.lengths.startswith("fixed"):
            assert count == run.num_prompts, run.id
        else:
            assert count <= run.num_prompts, run.id
    lmdeploy = next(r for r in load_runs() if r.id == "lmdeploy010-a100-llama2-7b-c128")
    assert len(C.replay(lmdeploy).work.prompt) == 3000
    l4 = next(r for r in load_runs() if r.id == "inferencebench-l4-qwen25-7b-vllm-short-c64")
    assert C.replay(l4).lengths == "fixed, 42 and 128 tokens"


def test_chunked_prefill_lowers_the_p99_time_between_tokens():
    engine = E.engine("vllm", "0.6.0")
    model, gpu = sm.LLAMA_3_8B, sm.H100_SXM
    work = W.poisson_workload(4, 300, W.LengthDistribution("long prompts", 3000, 200), seed=1, model=model)
    whole = S.simulate(engine.server(model, gpu), work).benchmark()
    chunked = S.simulate(engine.server(model, gpu, enable_chunked_prefill=True), work).benchmark()
    assert chunked.itl_p99 < 0.8 * whole.itl_p99


def test_the_held_out_figures_the_page_reports():
    """The figures reached on runs whose publisher the fit never saw (the six runs that repeat the
    reality check's figures left out), as reported; the issue's targets are 0.9 to 1.1 for the median,
    80 % within 0.75 to 1.25 and all within 0.5 to 1.5, and 0.7 to 1.4 for the TPOT and TTFT medians."""
    held = C.summary("held_out")
    assert held.runs == 22 and held.tpot_runs == 20 and held.ttft_runs == 25
    assert held.throughput_median == pytest.approx(1.098, abs=0.0005) and 0.9 <= held.throughput_median <= 1.1
    assert held.within_25 == pytest.approx(19 / 22) and held.within_50 == 1    # past 80 %, and all
    assert held.tpot_median == pytest.approx(1.00, abs=0.005) and 0.7 <= held.tpot_median <= 1.4
    assert held.ttft_median == pytest.approx(1.06, abs=0.005) and 0.7 <= held.ttft_median <= 1.4
    # By engine: every run within half of its prediction, and TensorRT-LLM's and LMDeploy's within a quarter.
    for engine in ("vllm", "sglang", "tensorrt-llm", "lmdeploy"):
        assert C.summary("held_out", engine).within_50 == 1, engine
    assert C.summary("held_out", "tensorrt-llm").within_25 == C.summary("held_out", "lmdeploy").within_25 == 1


def test_a_source_that_divides_by_summed_latencies_is_replayed_the_same_way():
    """inference-bench's summary: tokens × concurrency ÷ the requests' latencies summed (its reaggregate.py)."""
    run = next(r for r in RUNS if r.id == "inferencebench-l4-qwen25-7b-vllm-short-c64")
    assert run.source.duration == "latency-sum"
    replay = C.replay(run)
    engine = E.engine(run.engine, run.version)
    server = engine.server(run.shape, run.gpu_spec, **replay.flags)
    bench = S.simulate(server, replay.work, concurrency=replay.concurrency).benchmark()
    predicted = C.predict(run)["output_throughput"]
    assert predicted == pytest.approx(bench.total_output * 64 / bench.e2els.sum())
    # 100 requests, 64 at a time: the last 36 run with slots to spare, so the wall time is longer.
    assert predicted > 1.1 * bench.output_throughput
    # The published figure is that: the same commit's wall_seconds, 15.436 s, is the raw latencies summed / 64.
    assert run.metrics["output_throughput"] == pytest.approx(12800 / 15.398, rel=1e-3)


def test_an_in_process_client_pays_no_api_server_and_trtllm_bench_streams_no_text():
    assert C.replay(next(r for r in RUNS if r.engine == "tensorrt-llm" and r.source_group == "nvidia")).in_process == \
        ("request_time", "request_latency", "stream_time")
    assert C.replay(next(r for r in RUNS if r.engine == "lmdeploy")).in_process == ("request_time", "request_latency")
    assert all(C.replay(r).in_process == () for r in RUNS if r.engine in ("vllm", "sglang"))


def test_a_run_the_floor_contradicts_is_left_out_of_the_fit_and_the_summaries():
    left = {c.run.id: c.left_out for c in C.checks() if c.left_out}
    assert list(left) == ["gpustack-a100-qwen3-8b-vllm092-bf16"] == list(KEPT["left_out"])
    run = next(r for r in RUNS if r.id in left)
    floor = C.predict(run, KEPT["requests"], E.IDEAL)["ttft_mean"]
    assert run.metrics["ttft_mean"] < C.FLOOR_SHARE * floor and f"{floor:.3g} s" in left[run.id]
    # Every other run's fitted latencies lie above that share of its floor.
    assert all(C.floor_contradiction(r, KEPT["requests"]) is None for r in RUNS if r.id not in left)
    assert C.summary("held_out").tpot_runs == sum(
        1 for c in C.checks() if c.held_out["tpot"] is not None and c.counts_as_unseen and not c.left_out)


def test_a_run_that_printed_no_lengths_takes_its_publishers_own_from_the_same_setup():
    by_id = {r.id: r for r in RUNS}
    thousand = [r for r in RUNS if r.source.key == "gpustack-quantization"]
    assert thousand and all(r.total_input_tokens is None and not r.has("request_throughput") for r in thousand)
    for run in thousand:
        same = C.run_with_the_same_lengths(run)
        assert same.id == "gpustack-h100-qwen3-8b-vllm-c4" and same.dataset == run.dataset == "sharegpt"
        assert C._lengths(run)[0].mean_prompt == pytest.approx(23260 / 100)
        assert C._lengths(run)[0].mean_reply == pytest.approx(22061 / 100)
        assert "printed totals of gpustack-h100-qwen3-8b-vllm-c4" in C.replay(run).lengths
    # Another file or seed draws other requests: their means are not the run's.
    import dataclasses
    for other_client in (thousand[0].client + " --seed 1", thousand[0].client.replace("ShareGPT_V3", "ShareGPT_V4")):
        assert C.run_with_the_same_lengths(dataclasses.replace(thousand[0], client=other_client)) is None
    # No run of the SGLang team's printed its totals: their Poisson runs keep ShareGPT's means.
    rps = by_id["sglang060-a100-llama31-8b-sglang-rps4"]
    assert C.run_with_the_same_lengths(rps) is None
    assert C.replay(rps).lengths == "ShareGPT's means (kwon2023paged), geometric"
