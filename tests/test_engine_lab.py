"""llama.cpp beside the course: the model file, the readers of its output, the three predictions.

The comparison runs on the recorded run committed with the package; the live check runs only
where `make engine` has built the engine on this machine.
"""
import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from servingmath import engine_lab as E
from servingmath.lab import this_machine
from servingmath.passes import forward_pass, output_parameters
from servingmath.roofline import pass_time
from servingmath.simulator import Server, simulate
from servingmath.workload import workload

CACHE = Path(os.environ.get("SERVINGMATH_ENGINE_CACHE", Path.home() / ".cache" / "servingmath-engine"))
BIN = CACHE / f"build-{E.ENGINE_VERSION}" / "bin"
GGUF_PY = CACHE / f"llama_cpp_python-{E.ENGINE_VERSION}" / "vendor" / "llama.cpp" / "gguf-py"
MACHINE = this_machine(10e9, 100e9, memory_bytes=8 * 2**30, name="test machine")


@pytest.fixture(scope="module")
def run():
    return E.load_run()


@pytest.fixture(scope="module")
def rows(run):
    return E.compare(run)


def test_the_model_files_every_weight_the_course_counts_and_no_other():
    count = sum(a.size for _, a in E.gguf_tensors())
    assert count == E.ENGINE_MODEL.parameters
    # Tied table: a pass reads every weight once, so forward_pass's bytes are the file's F16 weights.
    assert forward_pass(E.ENGINE_MODEL, 1, 0, kv_cache=False).weight_bytes == 2 * count


def test_the_vocabulary_has_the_byte_pieces_and_the_asked_size():
    pieces, scores, kinds = E.vocabulary(1000)
    assert len(pieces) == len(scores) == len(kinds) == 1000
    assert pieces[3] == "<0x00>" and pieces[258] == "<0xFF>" and kinds[3:259] == [6] * 256
    assert kinds[:3] == [2, 3, 3] and set(kinds[259:]) == {1}
    with pytest.raises(ValueError, match="size"):
        E.vocabulary(100)


@pytest.mark.skipif(not GGUF_PY.exists(), reason="llama.cpp's gguf-py is not unpacked here (make engine)")
def test_the_gguf_file_reads_back_with_the_models_shape(tmp_path):
    import sys
    sys.path.insert(0, str(GGUF_PY))
    import gguf
    small = E.Model("tiny", layers=1, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=300,
                    tied_embeddings=True, context_window=256)
    path = tmp_path / "tiny.gguf"
    assert E.write_gguf(path, small, gguf=gguf) == small.parameters
    reader = gguf.GGUFReader(str(path))
    shapes = {t.name: tuple(int(x) for x in t.shape) for t in reader.tensors}
    assert shapes["blk.0.attn_k.weight"] == (64, 32)  # GGUF lists (in, out)
    assert shapes["token_embd.weight"] == (64, 300)
    assert "output.weight" not in shapes


BENCH = "\n".join(json.dumps(r) for r in [
    {"build_commit": "abc", "build_number": 1, "n_prompt": 128, "n_gen": 0, "avg_ts": 500.0, "stddev_ts": 5.0,
     "n_threads": 2, "model_type": "llama ?B F16"},
    {"build_commit": "abc", "build_number": 1, "n_prompt": 0, "n_gen": 64, "avg_ts": 50.0, "stddev_ts": 1.0,
     "n_threads": 2, "model_type": "llama ?B F16"}])
BATCHED = "main: loaded\n" + "\n".join(json.dumps(
    {"pp": 128, "tg": 32, "pl": b, "t_pp": 0.25 * b, "t_tg": 32 * t, "n_threads": 2})
    for b, t in ((1, 0.02), (2, 0.024), (4, 0.03), (8, 0.05)))


def test_the_readers_take_the_json_lines_and_refuse_other_text():
    bench = E.parse_bench(BENCH)
    assert [(r["prompt"], r["generated"], r["tokens_per_second"]) for r in bench] == [(128, 0, 500.0), (0, 64, 50.0)]
    table = E.step_table({"batched_bench": BATCHED})
    assert table.batches == (1, 2, 4, 8) and table.decode == pytest.approx((0.02, 0.024, 0.03, 0.05))
    assert table.prefill_per_token == pytest.approx(0.25 / 128)
    with pytest.raises(ValueError, match="no JSON lines"):
        E.parse_bench("| model | size |\n")
    with pytest.raises(TypeError, match="text"):
        E.parse_batched(None)


def test_a_step_table_interpolates_carries_on_past_its_last_batch_and_charges_prompts_whole():
    t = E.StepTable((1, 2, 4, 8), (0.02, 0.024, 0.03, 0.05), 0.002, per_token=0.001, per_request=0.01)
    assert t.decode_step(3) == pytest.approx(0.027)
    assert t.decode_step(12) == pytest.approx(0.05 + 4 * 0.005)
    assert t(2, 2, 0) == pytest.approx(0.024 + 0.002)
    # A step reading a 100-token prompt beside 2 next tokens: all 102 tokens at the prompt rate.
    assert t(2, 102, 1) == pytest.approx(102 * 0.002 + 0.002 + 0.01)


def test_the_simulator_times_steps_with_a_given_table():
    with pytest.raises(TypeError, match="step_time"):
        Server(E.ENGINE_MODEL, MACHINE, step_time=0.02)
    t = E.StepTable((1, 2), (0.02, 0.03), 0.001)
    server = Server(E.ENGINE_MODEL, MACHINE, max_running=2, step_time=t)
    one = simulate(server, workload([0.0], [100], [11]))
    assert one.ttft[0] == pytest.approx(0.1)              # the prompt's step: 100 tokens at 1 ms
    assert one.tpot[0] == pytest.approx(0.02)             # then ten decode steps of one token
    two = simulate(server, workload([0.0, 0.0], [100, 100], [11, 11]))
    assert two.ttft[1] == pytest.approx(0.2) and two.tpot[1] == pytest.approx(0.03)


def test_the_recorded_run_names_its_machine_engine_and_version(run):
    assert E.ENGINE_VERSION in run["recorded"]["engine"]
    assert run["recorded"]["machine"] and run["recorded"]["build"]
    assert set(run["load"]) == {str(c) for c in E.CONCURRENCY}
    for slots in E.CONCURRENCY:
        records = run["load"][str(slots)]
        assert len(records) == E.requests_for(slots)
        assert all(len(r["token_times"]) == E.REPLY_TOKENS == r["timings"]["predicted_n"] for r in records)


def test_the_servers_per_token_time_is_its_mean_gap_after_the_first_token(run):
    # predicted_per_token_ms = (last token - first token) / (tokens - 1), as the server times it
    # (tools/server/server-common.h); the client's gaps between streamed tokens agree at concurrency 1.
    for record in run["load"]["1"]:
        r = E.request_from(record)
        client = (r.token_times[-1] - r.token_times[0]) / (len(r.token_times) - 1)
        assert r.predicted_per_token_ms / 1e3 == pytest.approx(client, rel=0.15)
        assert r.predicted_ms == pytest.approx(r.predicted_per_token_ms * (r.predicted_n - 1), rel=1e-3)


def test_every_measured_figure_has_three_predictions_and_its_ratio(rows):
    assert all(set(r) == set(E.COLUMNS) for r in rows)
    served = [r for r in rows if r["test"] == "llama-server"]
    assert len(served) == len(E.CONCURRENCY) * 5 * 3
    for r in rows:
        assert r["ratio"] == pytest.approx(r["measured"] / r["simulated"])


def test_every_miss_named_is_a_profiled_row_past_its_bound(rows):
    # check_targets names exactly the profiled rows at 2, 4 or 8 users whose error passes its bound, and
    # no other row (the page says whether the recorded run meets the targets).
    misses = {(s, m): e for s, m, e in E.check_targets(rows)}
    for r in rows:
        if r["prediction"] != "profiled" or r["setting"] == "concurrency 1" or r["metric"].endswith("_p99"):
            continue
        error = r["simulated"] / r["measured"] - 1
        bound = E.TTFT_TARGET if r["metric"] == "ttft_p50" else E.TBT_TARGET
        assert ((r["setting"], r["metric"]) in misses) == (abs(error) > bound)
    # At one user the server's own costs are fitted, so the profiled time between tokens is the measured.
    one = next(r for r in rows if r["setting"] == "concurrency 1" and r["metric"] == "tbt_p50"
               and r["prediction"] == "profiled")
    assert one["simulated"] >= one["measured"] or one["simulated"] == pytest.approx(one["measured"])


def test_sends_a_few_milliseconds_apart_stagger_the_simulated_slots(run):
    # The client's threads send the requests a few ms apart: given those send times, the simulator
    # admits the first alone and reads the others' prompts a step later, beside its next token, so its
    # reply has a gap as long as their prompts' step. Sent all at 0, the slots run in lockstep and never stall.
    table = E.step_table(run, *E.server_costs(run))
    server = E.server_for(run, 4, step_time=table)
    records = run["load"]["4"]
    lockstep = E.simulated(server, 4)
    staggered = E.simulated(server, 4, [r["sent"] for r in records])
    prompt_step = E.PROMPT_TOKENS * table.prefill_per_token
    assert max(r["sent"] for r in records) < 0.05
    assert lockstep["tbt_p99"] < prompt_step / 5 <= prompt_step <= staggered["tbt_p99"]
    with pytest.raises(ValueError, match="sent must hold 12 send times for concurrency 4, got 2"):
        E.load_workload(4, [0.0, 0.001])


def test_a_requests_start_cost_is_the_median_over_the_one_user_requests_timed_from_a_free_slot(run):
    # At one user the first request finds the slot free when it is sent, each other one when the reply
    # before it sends its last token; the cost to start a request is the median of those times less the
    # bench's prompt step and a token's cost.
    records = run["load"]["1"]
    served = sorted(records, key=lambda r: r["token_times"][0])
    waits = E.times_from_free_slot(records)
    assert waits[0] == pytest.approx(served[0]["token_times"][0] - served[0]["sent"])
    assert waits[1:] == pytest.approx([b["token_times"][0] - a["token_times"][-1] for a, b in zip(served, served[1:])])
    per_token, per_request = E.server_costs(run)
    table = E.step_table(run)
    assert per_request == max(0.0, float(np.median(waits)) - E.PROMPT_TOKENS * table.prefill_per_token - per_token)
    # its parts, as the page shows them: the same token's cost, the median wait, the cost before it is held at 0
    parts = E.server_cost_parts(run)
    assert parts[:2] == (per_token, float(np.median(waits))) and per_request == max(0.0, parts[2])
    assert parts[2] == pytest.approx(float(np.median(waits)) - E.PROMPT_TOKENS * table.prefill_per_token - per_token)
    # The server's own prompt step, timed by the server, agrees with the client's time from a free slot.
    assert waits == pytest.approx([r["timings"]["prompt_ms"] / 1e3 for r in served], abs=0.02)


def test_a_miss_past_a_target_is_reported():
    row = dict(zip(E.COLUMNS, ("llama-server", "concurrency 4", "tbt_p50", 0.05, "profiled", 0.07, 0.05 / 0.07)))
    assert E.check_targets([row]) == [("concurrency 4", "tbt_p50", pytest.approx(0.4))]


@pytest.mark.skipif(not (BIN / "llama-bench").exists(),
                    reason="llama.cpp is not built on this machine (make engine builds it)")
def test_live_the_built_engine_runs_and_its_output_reads():
    model = CACHE / "engine-model-f16.gguf"
    if not model.exists():
        pytest.skip("the engine's model file is not written (make engine writes it)")
    out = subprocess.run([str(BIN / "llama-bench"), "-m", str(model), "-p", "16", "-n", "4", "-r", "1",
                          "-t", "1", "-o", "jsonl"], capture_output=True, text=True, timeout=120, check=True).stdout
    rows = E.parse_bench(out)
    assert [(r["prompt"], r["generated"]) for r in rows] == [(16, 0), (0, 4)]
    assert all(r["tokens_per_second"] > 0 and not math.isnan(r["tokens_per_second"]) for r in rows)


def test_a_prompt_that_asks_for_its_last_logits_skips_the_last_feed_forward_block_and_the_head():
    # llama.cpp keeps only the output rows after the last layer's attention (inp_out_ids): a prompt of
    # n tokens sends n - 1 of them past the last feed-forward block and the output head.
    m = E.ENGINE_MODEL
    assert output_parameters(m) == 3 * 1024 * 2816 + 8192 * 1024 == 17_039_360
    every, last = forward_pass(m, 128, 0), forward_pass(m, 128, 0, outputs=1)
    assert every.flops - last.flops == 2 * output_parameters(m) * 127
    assert last.bytes == every.bytes and forward_pass(m, 1, 5, outputs=1).flops == forward_pass(m, 1, 5).flops
    with pytest.raises(ValueError, match=r"outputs must be at most new_tokens \(4\), got 5"):
        forward_pass(m, 4, 0, outputs=5)
    with pytest.raises(ValueError, match="outputs"):
        forward_pass(m, 4, 0, outputs=0)


def test_the_simulator_charges_a_step_as_llama_cpp_computes_it_when_told_to():
    from servingmath.simulator.clock import StepClock
    every = Server(E.ENGINE_MODEL, MACHINE, max_running=4, assumptions=E.FLOOR)
    last = Server(E.ENGINE_MODEL, MACHINE, max_running=4, assumptions=E.FLOOR, logits="last of each prompt")
    caches, pieces = [150, 160], [(128, 0), (64, 0)]
    clock = StepClock(last)
    assert clock.time(caches, pieces) == pytest.approx(clock.check(caches, pieces), rel=1e-12)
    assert clock.step(194, 2, 310, lambda: caches, [(0, 128, 0), (1, 64, 0)]) == pytest.approx(
        clock.time(caches, pieces), rel=1e-12)
    # Compute-bound at 100 GFLOP/s: the step is shorter by the skipped FLOPs of 190 prompt tokens.
    skipped = 2 * output_parameters(E.ENGINE_MODEL) * (128 + 64 - 2) / 100e9
    assert StepClock(every).time(caches, pieces) - clock.time(caches, pieces) == pytest.approx(skipped, rel=1e-9)
    assert clock.time([150, 160]) == StepClock(every).time([150, 160])   # next tokens all give logits
    with pytest.raises(ValueError, match="logits='last of each prompt' needs each prompt read whole"):
        Server(E.ENGINE_MODEL, MACHINE, policy="chunked", logits="last of each prompt")
    with pytest.raises(ValueError, match="logits must be one of"):
        Server(E.ENGINE_MODEL, MACHINE, logits="last")


def test_the_floor_charges_a_prompt_and_the_simulators_floor_its_steps_as_llama_cpp_computes_them(run):
    gpu = E.machine(run)
    for phase, length, _, floor in E.floor_rates(run):
        if phase == "prefill":
            cost = forward_pass(E.ENGINE_MODEL, length, 0, outputs=1)
            seconds = float(pass_time(cost.flops, cost.bytes, gpu.peak_flops, gpu.memory_bandwidth, E.FLOOR).time)
            assert floor == pytest.approx(length / seconds)
    for assumptions in (E.FLOOR, E.single_stream_assumptions(run)):
        assert E.server_for(run, 4, assumptions).logits == "last of each prompt"


def test_decodes_share_is_the_median_over_the_runs_of_one_streams_decode(run):
    runs = E.decode_runs(run)
    assert [name for name, _, _ in runs] == ["llama-bench", "llama-bench again", "llama-batched-bench, batch 1"]
    shares = sorted(rate / floor for _, rate, floor in runs)
    assert E.decode_share(run) == shares[1]
    assert E.single_stream_assumptions(run).bandwidth_efficiency == min(1.0, shares[1])
    assert runs[1][1] == run["decode_probe"]["f16, 1 thread"] and runs[0][2] == runs[1][2]


def test_the_floor_rests_on_the_best_of_the_labs_runs_and_keeps_the_median_beside_it(run):
    lab = run["machine"]
    assert lab["runs"] >= 3
    assert lab["bandwidth"] >= lab["bandwidth_median"] and lab["flops"] >= lab["flops_median"]
    assert E.machine(run).memory_bandwidth == lab["bandwidth"] and E.machine(run).peak_flops == lab["flops"]


def test_the_ollama_block_is_the_first_served_reply_with_ollamas_rates(run):
    from servingmath import ollama
    first = E.first_served(run["load"]["1"])
    assert first["token_times"][0] == min(r["token_times"][0] for r in run["load"]["1"])
    # The server's log prints the first-served reply's timings: the same request as the block.
    assert f"{first['timings']['prompt_ms']:.2f} ms" in run["server_log"][0]
    t = first["timings"]
    read = ollama.parse_verbose(E.ollama_lines(t))
    # Ollama's eval rate is its eval count over its eval duration, the first token included in both.
    assert read.eval_rate == pytest.approx(t["predicted_n"] / t["predicted_ms"] * 1e3, abs=0.005)
    assert read.prompt_eval_rate == pytest.approx(t["prompt_n"] / t["prompt_ms"] * 1e3, abs=0.005)


def test_a_load_tests_summary_names_its_longest_gap(run):
    records = run["load"]["4"]
    summary = E.load_summary(records)
    assert summary["tbt_max"] == max(float(np.max(np.diff(r["token_times"]))) for r in records)
    assert summary["tbt_max"] >= summary["tbt_p99"]


def test_the_recorded_engine_is_the_pinned_upstream_commit(run):
    assert run["recorded"]["build"].endswith(f"({E.ENGINE_COMMIT[:7]})")
    assert E.ENGINE_COMMIT_DATE == "2026-10-01" and len(E.ENGINE_COMMIT) == 40


def test_each_run_of_the_batched_bench_gives_its_own_rate_and_the_table_keeps_the_quickest(run):
    for batch, step, rate, _ in E.batched_steps(run):
        runs = E.batched_runs(run, batch)
        assert len(runs) == 3 and max(runs) == pytest.approx(rate)
    with pytest.raises(ValueError, match="batch must be one of the batches llama-batched-bench ran, got 3"):
        E.batched_runs(run, 3)
