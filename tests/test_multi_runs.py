"""The published multi-GPU runs (data/multi_gpu_runs.yaml), their loader and the floor beside each."""
import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

from servingmath import multi_runs, parallel
from servingmath.hardware import CATALOG, INTERCONNECTS
from servingmath.models import MODELS, model

RUNS = multi_runs.load()
FLOORS = multi_runs.floors(RUNS)
ROOT = Path(__file__).resolve().parents[1]

with open(multi_runs.DATA, encoding="utf-8") as _handle:
    RAW = yaml.safe_load(_handle)


def test_enough_runs_from_enough_publishers():
    assert len(RUNS) >= 12
    groups = {run.source.source_group for run in RUNS}
    assert len(groups) >= 4
    assert all(sum(run.source.source_group == g for run in RUNS) < len(RUNS) / 2 for g in groups)
    assert {run.tensor_parallel for run in RUNS} >= {1, 2, 4, 8}
    assert any(run.replicas > 1 for run in RUNS)
    assert all(run.gpus >= 2 for run in RUNS)


def test_every_row_resolves_in_the_catalogs():
    for run in RUNS:
        assert run.gpu in CATALOG and run.interconnect in INTERCONNECTS
        assert model(run.model) is MODELS[run.model]
        assert run.replicas * run.tensor_parallel * run.pipeline_parallel == run.gpus
        assert run.group.count == run.tensor_parallel * run.pipeline_parallel
        assert parallel.fit(run.shape, run.group, weight_bits=run.weight_bits).fits, run.id


def test_every_source_has_a_url_and_a_bibliography_entry():
    bib = (ROOT / "references.bib").read_text(encoding="utf-8")
    for run in RUNS:
        assert run.source.url.startswith("https://")
        assert f"{{{run.source.bib}," in bib, run.source.bib


def test_each_value_is_printed_in_its_quote():
    for run in RUNS:
        assert run.value in multi_runs.quoted_numbers(run.quote), run.id


def test_the_units_say_what_the_metric_counts():
    by_id = {run.id: run for run in RUNS}
    server = by_id["mlperf41-h100x8-llama2-70b-server"]
    assert server.measured_time == pytest.approx(4 / 21605.79)       # 4 copies of TP 2 on 8 GPUs
    assert by_id["sglang030-h100x4-llama31-70b-rps4-itl"].measured_time == pytest.approx(21.67e-3)
    assert by_id["gptfast-a100x8-llama2-70b-bf16"].measured_time == pytest.approx(1 / 62.5)


def test_no_run_beats_its_floor_and_the_spread_is_as_reported():
    shares = {f.run.id: f.share for f in FLOORS}
    assert all(0 < share < 1 for share in shares.values()), shares
    assert min(shares.values()) == pytest.approx(0.041, abs=0.001)      # MLPerf's H100 server, its first token
    assert max(shares.values()) == pytest.approx(0.742, abs=0.001)
    # gpt-fast's one-user rows: more GPUs, a smaller share of the floor, as the all-reduces weigh more
    tp = [shares[f"gptfast-a100x{n}-llama2-70b-bf16"] for n in (2, 4, 8)]
    assert tp[0] > tp[1] > tp[2]
    comm = {f.run.id: f.communication for f in FLOORS}
    assert comm["mlperf41-h200x8-llama2-70b-server"] == 0         # one copy a GPU: no all-reduce


# -- malformed rows are refused, naming the row and the field --------------------------------------
def altered(index, **changes):
    document = copy.deepcopy(RAW)
    document["runs"][index].update(changes)
    return document


@pytest.mark.parametrize("changes, match", [
    ({"gpu": "h300"}, r"gpu must be a key of servingmath.hardware.CATALOG, got 'h300'"),
    ({"model": "llama-9-70b"}, r"model must be a key of servingmath.models.MODELS"),
    ({"gpu": "l4", "gpu_as_published": "L4"}, r"interconnect must be a link its GPU can have.*NVIDIA L4 cannot have 'nvlink4'"),
    ({"gpus": 6}, r"gpus must be replicas × tensor_parallel × pipeline_parallel = 8, got 6"),
    ({"tensor_parallel": 3, "replicas": 1, "gpus": 3}, r"tensor_parallel must be a degree the model splits into"),
    ({"value": 21605.8}, r"value must be a number printed in its quote, got 21605.8"),
    ({"unit": "ms"}, r"unit must be one of \('tok/s',\) for output_throughput"),
    ({"date": 2024}, r"date must be YYYY"),
    ({"arrivals": {"kind": "burst", "rate": None, "concurrency": None}}, r"arrivals must be"),
])
def test_a_malformed_row_is_refused(changes, match):
    with pytest.raises(ValueError, match=match):
        multi_runs.parse(altered(0, **changes))


def test_a_missing_field_and_a_duplicate_id_are_refused():
    document = copy.deepcopy(RAW)
    del document["runs"][0]["note"]
    with pytest.raises(ValueError, match=r"missing \['note'\]"):
        multi_runs.parse(document)
    document = copy.deepcopy(RAW)
    document["runs"][1]["id"] = document["runs"][0]["id"]
    with pytest.raises(ValueError, match="run ids must be unique"):
        multi_runs.parse(document)


# -- the prediction by engine profile -------------------------------------------------------------
from servingmath import engines  # noqa: E402


@pytest.fixture(scope="module")
def predictions():
    """Every row replayed, once for the tests that read the replays (not at collection, in every process)."""
    return multi_runs.predictions(RUNS)


def test_every_row_with_a_profiled_engine_is_replayed_by_that_profile_over_its_own_split_and_link(predictions):
    for run, found in zip(RUNS, predictions):
        if run.engine not in engines.PROFILED:
            assert found is None and multi_runs.profile(run) is None, run.id
            continue
        assert found.run is run and found.engine.name == run.engine
        assert found.flags[engines.TENSOR_PARALLEL_FLAGS[run.engine]] == run.tensor_parallel
        server = found.engine.server(run.shape, run.gpu_spec, link=run.interconnect if run.tensor_parallel > 1 else None,
                                     **found.flags)
        assert server.tensor_parallel == run.tensor_parallel
        if run.tensor_parallel > 1:
            assert server.group.link.key == run.interconnect
        assert found.value > 0 and found.ratio == pytest.approx(run.value / found.value)
    assert {run.engine for run, found in zip(RUNS, predictions) if found is None} == {"gpt-fast"}


def test_the_profiles_are_the_one_gpu_fit_without_the_rows_publisher(predictions):
    from servingmath.calibration import held_out_overheads
    for found in predictions:
        if found is None:
            continue
        publisher = multi_runs.RAN_BY.get(found.run.source.source_group, found.run.source.source_group)
        held = held_out_overheads(publisher)
        assert held is not None, found.run.id          # every profiled row's publisher has one-GPU runs in the fit
        assert found.engine.given == held[found.engine.group] and publisher in found.fit
    assert multi_runs.profile(next(r for r in RUNS if r.id.startswith("mlperf41"))).version == "1.0"
    assert held_out_overheads("pytorch") is None
    with pytest.raises(TypeError, match="source must be"):
        held_out_overheads(3)


def test_each_run_is_replayed_as_it_was_run(predictions):
    by_id = {found.run.id: found for found in predictions if found is not None}
    server = by_id["mlperf41-h100x8-llama2-70b-server"]
    assert multi_runs.duration(server.run) == 2400 > multi_runs.MLPERF_LEAST_SECONDS   # as NVIDIA set it
    assert server.requests == 75 * 2400                             # forty minutes of Poisson arrivals
    assert "a mean reply of 290" in server.lengths                   # 21,605.79 tokens ÷ 74.42 samples a second
    # the rate rows of the SGLang README's ShareGPT set take the reply its offline rows print (3856.01 ÷ 19.84)
    assert "a mean reply of 194 from sglang030-h100x4-llama31-70b-offline" in by_id["vllm060-h100x4-llama31-70b-rps8-tpot"].lengths
    with pytest.raises(ValueError, match="min_duration"):
        multi_runs.duration(by_id["sglang030-h100x4-llama31-70b-offline"].run)
    assert by_id["sglang030-h100x4-llama31-70b-offline"].requests == 5000   # as many as the run sent
    assert by_id["vllm060-h100x4-llama31-70b-offline"].requests == 5000     # lengths drawn: every request, not 4 × 256
    # a client in the engine's process pays neither the API server's cost nor streaming, as the fit's trtllm-bench
    from servingmath.calibration import IN_PROCESS_CLIENTS, NO_CLIENT_COSTS
    assert set(IN_PROCESS_CLIENTS["trtllm-bench"]) == set(NO_CLIENT_COSTS) == {
        "request_time", "request_latency", "stream_time"} and "trtllm-perf" in multi_runs.IN_PROCESS
    assert by_id["lmdeploy-a100x4-llama2-70b-b64-1-128"].requests == 64     # its fixed batch
    assert by_id["trtllm-h100x2-llama33-70b-128-128"].lengths == "fixed, 128 in, 128 out"
    assert dict(by_id["vllm060-h100x4-llama31-70b-offline"].flags) == {
        "num_scheduler_steps": 10, "max_model_len": 4096, "tensor_parallel_size": 4}
    assert dict(by_id["mlperf41-h200x8-llama2-70b-offline"].flags) == {"max_batch_size": 806, "max_num_tokens": 4096, "tp": 1,
                                                                               "quantization": "fp8", "kv_cache_dtype": "fp8"}
    assert by_id["mlperf41-h200x8-llama2-70b-offline"].requests == 4 * 806   # four times what a copy runs at once


def test_printed_reads_a_reports_lines_and_a_tables_last_row():
    by_id = {run.id: run for run in RUNS}
    assert multi_runs.printed(by_id["mlperf41-h100x8-llama2-70b-server"]) == {
        "completed samples per second": 74.42, "completed tokens per second": 21605.79,
        "mean latency (ns)": 44954547225, "50.00 percentile first token latency (ns)": 272954995,
        "50.00 percentile time to output token (ns)": 156419276, "min_duration (ms)": 2400000}
    table = multi_runs.printed(by_id["sglang030-h100x4-llama31-70b-offline"])
    assert (table["num prompts"], table["request throughput"], table["output token throughput"]) == (5000, 19.84, 3856.01)
    with pytest.raises(TypeError, match="run must be"):
        multi_runs.printed("mlperf41-h100x8-llama2-70b-server")
    with pytest.raises(TypeError, match="run must be"):
        multi_runs.predict(None)


def test_the_predictions_land_where_the_multi_gpu_page_says(predictions):
    s = multi_runs.summary(predictions)
    assert (s.rows, s.unpredicted) == (22, 3)
    assert (round(s.within * s.rows), round(s.within_wide * s.rows)) == (11, 17)
    assert (f"{s.throughput_median:.2f}", f"{s.lowest:.2f}", f"{s.highest:.2f}") == ("0.82", "0.56", "7.42")
    assert (s.small_rows, s.small_engines, f"{s.small_slower[0]:.2f}", f"{s.small_slower[1]:.2f}") == (6, 3, "1.17", "1.53")
    with pytest.raises(ValueError, match="found must hold at least one prediction"):
        multi_runs.summary([None])


def test_the_misses_the_multi_gpu_page_reads(predictions):
    by_id = {found.run.id: found for found in predictions if found is not None}
    overview = [found for found in predictions if found is not None and found.run.source.key == "trtllm-perf"]
    assert (f"{min(f.ratio for f in overview):.2f}", f"{max(f.ratio for f in overview):.2f}") == ("0.79", "1.21")
    # the replay's median steps: the 128/128 rows compute-bound, the 70B rows with long prompts or replies not
    assert sorted((f.step_tokens, multi_runs.step_bound(f)) for f in overview) == [
        (127.0, "memory"), (137.0, "memory"), (1086.0, "compute"), (1916.0, "compute"), (2048.0, "compute")]
    servers = [by_id[i] for i in ("mlperf41-h100x8-llama2-70b-server", "mlperf41-h200x8-llama2-70b-server")]
    assert [f"{f.ratio:.2f}" for f in servers] == ["1.01", "1.02"]
    # their latencies miss several times over, and the real copies held far more sequences (Little's law)
    assert [f"{by_id[i].ratio:.2f}" for i in ("mlperf41-h100x8-llama2-70b-server-tpot", "mlperf41-h100x8-llama2-70b-server-ttft",
                                             "mlperf41-h200x8-llama2-70b-server-tpot", "mlperf41-h200x8-llama2-70b-server-ttft")] \
        == ["7.27", "7.42", "4.64", "3.75"]
    assert [round(multi_runs.published_in_flight(f.run)) for f in servers] == [836, 450]
    assert [round(f.in_flight) for f in servers] == [116, 97]
    with pytest.raises(ValueError, match="mean latency"):
        multi_runs.published_in_flight(by_id["trtllm-h100x2-llama33-70b-128-128"].run)
    timed = [found for found in predictions if found is not None and found.run.source.key == "sglang-vllm060"
             and found.run.unit == "ms"]
    assert len(timed) == 4 and all(1.2 < found.ratio < 1.6 for found in timed)
    # the same README's one-GPU rows at the same rates miss already; what is left for the four GPUs
    assert [f"{f.one_gpu_bias:.2f}" for f in timed] == ["1.00", "1.05", "1.16", "1.13"]
    assert [f"{f.ratio / f.one_gpu_bias:.2f}" for f in timed] == ["1.30", "1.24", "1.24", "1.36"]
    gaps = sorted(found.allreduce_gap for found in timed)
    assert (f"{gaps[0] * 1e6:.0f}", f"{gaps[-1] * 1e6:.0f}") == ("28", "48")
    assert all(gap > 4 * timed[0].run.link.latency for gap in gaps)                   # far past the link's latency
    assert multi_runs.one_gpu_bias(servers[0].run) is None
    assert [f"{by_id[i].ratio:.2f}" for i in ("sglang030-h100x4-llama31-70b-offline", "vllm060-h100x4-llama31-70b-offline")] \
        == ["0.56", "0.57"]
    one_user = [found for found in predictions
                if found is not None and found.run.engine == "lmdeploy" and found.run.metric == "decode_rate"]
    assert [f"{found.value / multi_runs.floor(found.run).value:.2f}" for found in one_user] == ["0.71", "0.70"]
    assert [f"{multi_runs.slower(x):.2f}" for x in one_user] == ["1.17", "1.23"]
    with pytest.raises(ValueError, match="allreduce_gap needs a time between tokens, got 'output_throughput'"):
        by_id["mlperf41-h100x8-llama2-70b-server"].allreduce_gap


def test_the_cache_format_is_judged_as_on_the_engines_page(predictions):
    # no saturated row of a table passes more than a 16-bit cache allows: every cache unstated stays 16-bit,
    # in the floor and the replay alike; MLPerf's, stated in NVIDIA's code, is 8-bit in both
    assert {run.cache for run in RUNS if run.kv_bits is None} == {"16-bit: not stated"}
    assert all(run.cache_bits == (16 if run.kv_bits is None else run.kv_bits) and not run.beyond_16_bit_cache
               for run in RUNS)
    assert {run.id.split("-")[0] for run in RUNS if run.kv_bits == 8} == {"mlperf41"}
    for found in predictions:
        if found is not None:
            assert ("kv_cache_dtype" in found.flags) == (found.run.kv_bits == 8)
    # a row that passed more than a 16-bit cache allows makes its table's FP8 rows 8-bit
    document = copy.deepcopy(RAW)
    row = next(r for r in document["runs"] if r["id"] == "trtllm-h100x2-llama33-70b-1000-1000")
    row["quote"] = row["quote"].replace("4,205", "14,205")
    row["value"] = 14205
    changed = {run.id: run for run in multi_runs.parse(document)}
    assert changed["trtllm-h100x2-llama33-70b-128-128"].cache_bits == 8
    assert "trtllm-h100x2-llama33-70b-1000-1000 passed more than a 16-bit cache allows" in \
        changed["trtllm-h100x2-llama33-70b-128-128"].cache
    assert changed["trtllm-h100x8-llama31-405b-128-128"].cache_bits == 16     # another checkpoint, another table


def test_the_table_sets_every_row_beside_its_floor_and_its_prediction(predictions):
    table = multi_runs.markdown_table(RUNS, predictions)
    lines = table.splitlines()
    assert len(lines) == 2 + len(RUNS)
    assert sum(line.endswith("| – | – |") for line in lines) == 3                  # gpt-fast: the floor alone
    assert "| 75 a second for 40 min | output | 21,606 tok/s | 98,644 tok/s | 22 % | 21,444 tok/s | 1.01 |" in table
    assert "| TPOT median | 156.4 ms | 11.3 ms | 7 % | 21.5 ms | 7.27 |" in table
    with pytest.raises(ValueError, match="found must hold one prediction"):
        multi_runs.markdown_table(RUNS, predictions[:3])


def test_a_floor_in_the_rows_own_unit_is_never_beaten():
    for lower in FLOORS:
        if lower.run.unit == "tok/s":
            assert lower.value >= lower.run.value
        else:
            assert lower.value <= lower.run.value


def test_a_row_whose_client_runs_in_the_engines_process_is_replayed_paying_none_of_a_clients_costs(monkeypatch):
    from servingmath.calibration import NO_CLIENT_COSTS
    monkeypatch.delenv("SERVINGMATH_RESULTS", raising=False)
    replayed = {}

    def replay(key, stem, run, server, *rest):
        replayed[run.source.key] = server
        return {name: np.array(1.0) for name in ("figure", "copies", "tokens", "decodes", "held")}

    monkeypatch.setattr(multi_runs, "_replay", replay)
    monkeypatch.setattr(multi_runs, "_REPLAYED", {})
    for source in ("trtllm-perf", "sglang-vllm060"):
        run = next(run for run in RUNS if run.source.key == source and multi_runs._profile(run)[0] is not None)
        multi_runs.predict(run)
    assert all(getattr(replayed["trtllm-perf"], cost) == 0 for cost in NO_CLIENT_COSTS)
    assert all(getattr(replayed["sglang-vllm060"], cost) > 0 for cost in NO_CLIENT_COSTS)
