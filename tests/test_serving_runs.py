"""The published one-GPU serving runs (data/serving_runs.yaml) and their loader, servingmath.runs."""
import copy
import dataclasses
import os
import re
from pathlib import Path

import pytest
import yaml

from servingmath import runs
from servingmath.hardware import CATALOG
from servingmath.models import MODELS

RUNS = runs.load_runs()
BY_ID = {run.id: run for run in RUNS}
ROOT = Path(__file__).resolve().parents[1]


with open(runs.DATA, encoding="utf-8") as _handle:
    RAW = yaml.safe_load(_handle)


def raw_document():
    return copy.deepcopy(RAW)


def has_ttft_and_tpot(run):
    return any(run.has(f"ttft_{s}") for s in ("mean", "median")) and \
        any(run.has(f"tpot_{s}") for s in ("mean", "median"))


# -- enough runs, from enough publishers, engines and versions ----------------------------------
def test_the_dataset_is_as_broad_as_a_fit_needs():
    assert len(RUNS) >= 25
    assert len({run.source_group for run in RUNS}) >= 5
    assert len({run.engine for run in RUNS}) >= 2
    assert len({(run.engine, run.version) for run in RUNS}) >= 3
    assert sum(has_ttft_and_tpot(run) for run in RUNS) >= 20
    assert {run.arrivals.kind for run in RUNS} == set(runs.ARRIVALS)
    # No publisher carries the set: each group is under a third of the runs.
    for group, members in runs.by_source_group(RUNS).items():
        assert len(members) < len(RUNS) / 3, group


def test_every_run_is_one_gpu_of_the_catalogs_with_a_source_and_a_figure():
    for run in RUNS:
        assert run.tensor_parallel == 1
        assert run.gpu in CATALOG and run.gpu_spec is CATALOG[run.gpu]
        assert run.model in MODELS and run.shape is MODELS[run.model]
        assert run.engine in runs.ENGINES
        assert runs.version_key(run.version)
        assert run.source.url.startswith("https://") and run.quote.strip()
        assert run.metrics, run.id
        assert run.arrivals.kind in runs.ARRIVALS
        if run.arrivals.kind == "poisson":
            assert run.arrivals.rate > 0 and run.arrivals.concurrency is None
        elif run.arrivals.kind == "concurrency":
            assert run.arrivals.concurrency >= 1 and run.arrivals.rate is None
        else:
            assert run.arrivals.rate is None and run.arrivals.concurrency is None
    assert len(BY_ID) == len(RUNS)


def test_every_figure_is_printed_in_its_quote_and_converted_exactly():
    # Checked from the raw file, apart from the loader's own check.
    factor = {"ms": 1e-3, "s": 1.0, "tok/s": 1.0, "req/s": 1.0}
    for entry in raw_document()["runs"]:
        assert set(entry["published"]) == set(entry["metrics"]), entry["id"]
        for name, text in entry["published"].items():
            number, unit = text.split(" ")
            assert re.search(rf"(?<![\d.]){re.escape(number)}(?!\d)", entry["quote"]), (entry["id"], name)
            assert entry["metrics"][name] == pytest.approx(float(number.replace(",", "")) * factor[unit], rel=1e-12)
            assert unit in (("ms", "s") if name.split("_")[0] in ("ttft", "tpot", "itl", "e2e") else ("tok/s", "req/s"))
        for text in entry["published_other"].values():
            assert text in entry["quote"], entry["id"]


def test_the_figures_are_the_published_ones():
    assert BY_ID["sglang060-a100-llama31-8b-vllm-rps4"].metrics["ttft_median"] == pytest.approx(0.10048)
    assert BY_ID["sglang060-a100-llama31-8b-sglang-inf"].metrics["output_throughput"] == 4281.51
    assert BY_ID["trtllm10-h100-llama31-8b-fp8-128-128"].metrics["output_throughput"] == 28312
    assert BY_ID["gpustack-h100-qwen3-8b-trtllm-c4"].metrics["tpot_p99"] == pytest.approx(0.01015)
    assert BY_ID["inferencebench-l4-qwen25-7b-sglang-short-c64"].metrics["output_throughput"] == 913.9
    assert BY_ID["lmdeploy010-a100-llama2-7b-c128"].metrics["request_throughput"] == 12.611
    assert BY_ID["gpustack-h100-qwen3-8b-vllm-c4"].arrivals == runs.Arrivals("concurrency", None, 4)
    assert BY_ID["sglang060-a100-llama31-8b-vllm-rps8"].flags["num_scheduler_steps"] == 10


def test_no_time_between_tokens_beats_reading_the_weights_once():
    # A decode step reads every weight, so no run's time per output token can be shorter than
    # the weights' bytes over the GPU's bandwidth: a figure read in the wrong unit would be.
    bits = {"bf16": 16, "fp16": 16, "fp8": 8}
    for run in RUNS:
        floor = run.shape.parameters * bits[run.precision] / 8 / run.gpu_spec.memory_bandwidth
        for name in ("tpot_mean", "tpot_median", "itl_median"):
            if run.has(name):
                assert run.metrics[name] > floor, (run.id, name, run.metrics[name], floor)


def test_load_raises_throughput_and_latency_as_published():
    # The sweeps as the sources print them: more users, more tokens a second and longer waits.
    sweep = [BY_ID[f"inferencebench-l4-qwen25-7b-vllm-short-c{c}"] for c in (1, 4, 16, 64)]
    assert [r.arrivals.concurrency for r in sweep] == [1, 4, 16, 64]
    throughput = [r.metrics["output_throughput"] for r in sweep]
    assert throughput == sorted(throughput)
    assert [r.metrics["tpot_median"] for r in sweep] == sorted(r.metrics["tpot_median"] for r in sweep)
    for engine in ("sglang", "vllm"):
        light, heavy = (BY_ID[f"sglang060-a100-llama31-8b-{engine}-rps{rate}"] for rate in (4, 8))
        assert heavy.metrics["ttft_median"] > light.metrics["ttft_median"]
        assert heavy.metrics["tpot_median"] > light.metrics["tpot_median"]


def test_source_groups_hold_out_whole_publishers():
    groups = runs.by_source_group(RUNS)
    assert sorted(run.id for members in groups.values() for run in members) == sorted(BY_ID)
    publisher_of = {}
    for run in RUNS:
        assert publisher_of.setdefault(run.source_group, run.source.publisher) == run.source.publisher
    # Every source names an entry of references.bib.
    bib = (ROOT / "references.bib").read_text(encoding="utf-8")
    for key in {run.source.bib for run in RUNS}:
        assert re.search(rf"@\w+\{{{re.escape(key)},", bib), key


def test_an_unstated_form_factor_is_said_in_the_note():
    for run in RUNS:
        if not run.gpu_form_factor_stated:
            assert "SXM" in run.note, run.id


def test_runs_are_frozen():
    run = RUNS[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.version = "9.9"
    with pytest.raises(TypeError):
        run.metrics["ttft_median"] = 0.0
    with pytest.raises(TypeError):
        run.flags["max_num_seqs"] = 1


def test_version_keys_order_releases():
    assert runs.version_key("0.5.3.post3") == (0, 5, 3)
    assert runs.version_key("1.2.0rc1") < runs.version_key("1.2.1")
    assert runs.version_key("0.6.0") < runs.version_key("0.11.0")
    with pytest.raises(ValueError, match="version must look like"):
        runs.version_key("v0.6")


# -- a misread row is refused, naming the run and the field ----------------------------------
def _broken(change):
    document = raw_document()
    change(document["runs"][0])
    return document


@pytest.mark.parametrize("change, message", [
    (lambda r: r["metrics"].update(ttft_median=31.98), "metrics.ttft_median must be 31.98 ms converted"),
    (lambda r: (r["published"].update(ttft_median="31.99 ms"), r["metrics"].update(ttft_median=0.03199)),
     "text containing the published figure '31.99'"),
    (lambda r: r["published"].update(ttft_median="31.98 tok/s"), "published.ttft_median must be in ms or s"),
    (lambda r: r["published"].update(ttft_median="fast"), "published.ttft_median: a published figure must be"),
    (lambda r: r.update(gpu="h100"), "gpu must be a key of servingmath.hardware.CATALOG"),
    (lambda r: r.update(model="llama-9-8b"), "model must be a key of servingmath.models.MODELS"),
    (lambda r: r.update(tensor_parallel=2), "tensor_parallel must be 1"),
    (lambda r: r.update(engine="vLLM"), "engine must be one of"),
    (lambda r: r.update(version="latest"), "version must be a release as the source states it"),
    (lambda r: r["arrivals"].update(rate=None), "arrivals.rate must be a finite number"),
    (lambda r: r.update(arrivals={"kind": "concurrency", "rate": None, "concurrency": 0}), "arrivals.concurrency"),
    (lambda r: r.update(note=None), "note must be a note saying which card was taken"),
    (lambda r: r.pop("dataset"), "missing fields \\['dataset'\\]"),
    (lambda r: r.update(colour="red"), "unknown fields \\['colour'\\]"),
])
def test_a_misread_row_is_refused(change, message):
    with pytest.raises(ValueError, match=message) as caught:
        runs.parse(_broken(change))
    assert "'sglang060-a100-llama31-8b-sglang-rps4'" in str(caught.value)


def test_a_source_that_divides_by_summed_latencies_must_be_a_closed_loop():
    document = raw_document()
    first = document["runs"][0]
    document["sources"][first["source"]]["duration"] = "latency-sum"
    with pytest.raises(ValueError, match="a closed loop"):
        runs.parse(document)
    document["sources"][first["source"]]["duration"] = "elapsed"
    with pytest.raises(ValueError, match="duration must be one of"):
        runs.parse(document)
    # The one source that does: inference-bench's summary, rebuilt by its reaggregate.py.
    assert {r.source.key for r in runs.load_runs() if r.source.duration != "wall"} == {"inference-bench-l4"}


def test_a_repeated_id_is_refused():
    document = raw_document()
    document["runs"].append(copy.deepcopy(document["runs"][0]))
    with pytest.raises(ValueError, match="appears more than once"):
        runs.parse(document)


def test_published_values_read_as_printed():
    assert runs.published_value("28,312 tok/s") == (28312.0, "tok/s")
    assert runs.published_value("0.0695 s") == (0.0695, "s")
    for bad in ("fast", "12 ms/token", "1.2.3 ms", 12.0):
        with pytest.raises(ValueError, match="a published figure must be"):
            runs.published_value(bad)


def test_the_files_header_explains_every_field_metric_and_conversion():
    header = "\n".join(line for line in runs.DATA.read_text(encoding="utf-8").splitlines()
                       if line.startswith("#"))
    words = set(re.findall(r"[a-z_]+", header))
    fields = set(runs._RUN_FIELDS) | set(runs._SOURCE_FIELDS) | {"commit", "duration"}
    assert fields <= words, fields - words
    for prefix in ("request_throughput", "output_throughput", "total_token_throughput",
                   "ttft_", "tpot_", "itl_", "e2e_", "_mean", "_median", "_p95", "_p99"):
        assert prefix in header, prefix
    assert "ms -> s divides by 1,000" in header
    assert all(kind in header for kind in runs.ARRIVALS) and all(e in header for e in ("vllm", "sglang", "tensorrt-llm", "lmdeploy"))


def test_a_data_file_is_read_once_until_it_changes(tmp_path):
    from servingmath import multi_runs, reality
    for source, load in ((runs.DATA, runs.load_runs), (multi_runs.DATA, multi_runs.load), (reality.DATA, reality.load)):
        path = tmp_path / source.name
        path.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
        first = load(path)
        assert load(path) is first and first == load()
        path.write_text(path.read_text(encoding="utf-8") + "# a line more\n", encoding="utf-8")
        again = load(path)
        assert again is not first and again == first
    # An edit of the same size, the file's time put back: read by its bytes, the change is seen.
    path = tmp_path / "same-size.yaml"
    text = runs.DATA.read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    before = path.stat()
    assert runs.load_runs(path) == runs.load_runs()
    path.write_text(text.replace("tensor_parallel: 1", "tensor_parallel: 3", 1), encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(ValueError, match="tensor_parallel"):
        runs.load_runs(path)
