"""The published measurements, their floors, and the rule that nothing beats its floor unexplained."""
import copy
import math

import matplotlib
import pytest
import yaml

import servingmath as sm
from servingmath import ollama, reality

matplotlib.use("Agg")

ROWS = reality.load()
FLOORS = reality.floors(ROWS)
BY_ID = {f.measurement.id: f for f in FLOORS}


def raw_document():
    with open(reality.DATA, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


# -- the data parses, and every row has a source and values in range ---------------------------
def test_enough_rows_from_enough_sources():
    assert len(ROWS) >= 25
    assert len({m.source.key for m in ROWS}) >= 5
    assert len({m.source.publisher for m in ROWS}) >= 5
    assert len({m.id for m in ROWS}) == len(ROWS)


@pytest.mark.parametrize("m", ROWS, ids=[m.id for m in ROWS])
def test_every_row_has_a_source_and_values_in_range(m):
    assert m.source.url.startswith("https://") and m.source.title and m.source.publisher
    assert m.date[:2] in ("20",) and 2019 <= int(m.date[:4]) <= 2026
    assert m.note and m.software and m.version and m.kind
    low, high = reality.VALUE_RANGES[m.metric]
    assert low <= m.value <= high
    assert 1 <= m.weight_bits <= 16 and m.cache_bits in (8, 16)
    assert m.hardware in sm.CATALOG and m.gpus >= 1
    assert m.measured_time > 0
    f = BY_ID[m.id]
    # Nothing honest runs at under 1 % of its floor, and nothing runs past it without a reason.
    assert 0.01 < f.share and (f.share <= 1 or f.explained)


def test_every_row_of_the_file_is_read_with_its_source_fields():
    document = raw_document()
    assert len(document["measurements"]) == len(ROWS)
    for raw, m in zip(document["measurements"], ROWS):
        assert raw["value"] == m.value and raw["hardware"] == m.hardware
        source = document["sources"][raw["source"]]
        assert (source["url"], source["title"]) == (m.source.url, m.source.title)


# -- shares recomputed by hand from the rows ----------------------------------------------------
def llama_params(layers, hidden, heads, kv_heads, ffn, vocab):
    head_dim = hidden // heads
    attention = 2 * hidden * hidden + 2 * hidden * kv_heads * head_dim
    return layers * (attention + 3 * hidden * ffn + 2 * hidden) + 2 * vocab * hidden + hidden


LLAMA3_8B = llama_params(32, 4096, 32, 8, 14336, 128256)
LLAMA3_70B = llama_params(80, 8192, 64, 8, 28672, 128256)
LLAMA2_7B = llama_params(32, 4096, 32, 32, 11008, 32000)
LLAMA2_13B = llama_params(40, 5120, 40, 40, 13824, 32000)


def test_hand_counts_match_the_shapes():
    assert LLAMA3_8B == 8_030_261_248 == reality.model_for("llama-3.1-8b").parameters
    assert LLAMA2_7B == 6_738_415_616 == reality.model_for("llama-2-7b").parameters
    assert reality.model_for("llama-7b").parameters == LLAMA2_7B  # LLaMA 7B: the same shape
    assert LLAMA3_70B == reality.model_for("llama-3.3-70b").parameters
    assert LLAMA2_13B == 13_015_864_320 == reality.model_for("llama-2-13b").parameters


def test_gpt_fast_llama31_8b_bf16_share_by_hand():
    # 93.89 tokens/s on one A100 (2.039 TB/s); weights in 16 bits, a cache of 5 + 200/2 tokens
    # read and the new token's keys and values written.
    cache = (5 + 100 + 1) * 2 * 32 * 8 * 128 * 2
    floor = (LLAMA3_8B * 2 + cache) / 2.039e12
    assert BY_ID["gptfast-llama31-8b-bf16"].share == pytest.approx(floor * 93.89, rel=1e-9)
    assert round(floor * 93.89, 3) == 0.740


def test_llama_cpp_q4_0_on_an_m2_ultra_share_by_hand():
    # 91.89 tokens/s; 4.54 bits a weight (llama-bench's 3.56 GiB for 6.74 B parameters); 800 GB/s;
    # no lengths, so the weights and the new token's keys and values (32 layers x 32 heads x 128 x 2,
    # in 16 bits), no cache to read.
    floor = (LLAMA2_7B * 4.54 / 8 + 2 * 32 * 32 * 128 * 2) / 800e9
    assert BY_ID["llamacpp-m2ultra-llama2-7b-q4_0"].share == pytest.approx(floor * 91.89, rel=1e-9)
    assert round(floor * 91.89, 3) == 0.439


def test_llama_cpp_own_q4_0_on_an_m2_ultra_share_by_hand():
    # 88.54 tokens/s, tg 128 after an empty prompt; 4.54 bits a weight (3.56 GiB for 6.74 B
    # parameters); 800 GB/s. A step reads the weights and a cache of 128/2 tokens, and writes
    # the new token's keys and values: 32 layers x 32 heads x 128 x 2, in 16 bits.
    assert round(3.56 * 2**30 * 8 / LLAMA2_7B, 2) == 4.54
    cache = (0 + 64 + 1) * 2 * 32 * 32 * 128 * 2
    floor = (LLAMA2_7B * 4.54 / 8 + cache) / 800e9
    assert BY_ID["ggml-m2ultra-llama-7b-q4_0"].share == pytest.approx(floor * 88.54, rel=1e-9)
    assert round(floor * 88.54, 3) == 0.427


def test_mlc_llama2_13b_on_an_m2_ultra_share_by_hand():
    # 55 tokens/s; q4f16_1: 4 bits and a 16-bit scale for every 32 weights, 4.5 bits; no lengths,
    # so the weights and the new token's keys and values (40 layers x 40 heads x 128 x 2).
    assert 4 + 16 / 32 == BY_ID["mlc-m2ultra-llama2-13b-q4f16_1"].measurement.weight_bits
    floor = (LLAMA2_13B * 4.5 / 8 + 2 * 40 * 40 * 128 * 2) / 800e9
    assert BY_ID["mlc-m2ultra-llama2-13b-q4f16_1"].share == pytest.approx(floor * 55, rel=1e-9)
    assert round(floor * 55, 3) == 0.503


def test_two_engines_agree_on_the_same_machine_and_model():
    # llama.cpp's own F16 figure and a third party's, months apart, land within a point.
    own, theirs = BY_ID["ggml-m2ultra-llama2-7b-f16"], BY_ID["llamacpp-m2ultra-llama2-7b-f16"]
    assert own.measurement.source.publisher != theirs.measurement.source.publisher
    assert abs(own.share - theirs.share) < 0.01


def test_saturated_tensorrt_llm_share_by_hand():
    # 128 in, 128 out, FP8 on one H100 (1,978.9 TFLOP/s): arithmetic over 256 tokens, attention causal.
    flops = 2 * LLAMA3_8B * 256 + 4 * 32 * 4096 * (256 * 257 / 2)
    cache_bytes = (128 * 128 + 128 * 127 / 2 + 256) * (2 * 32 * 8 * 128 * 1)
    per_request = max(flops / 1978.9e12, cache_bytes / 3.35e12)
    assert per_request == flops / 1978.9e12  # compute-bound
    floor_per_token = per_request / 128
    f = BY_ID["trtllm-h100-llama31-8b-128-128"]
    assert f.bound == "compute" and f.share_name == "MFU"
    assert f.share == pytest.approx(floor_per_token * 28312, rel=1e-9)
    assert round(f.share, 3) == 0.461


def test_nim_ttft_share_by_hand():
    # A 5,000-token prefill of Llama 3.3 70B on two H100s in FP8; TTFT 406.77 ms.
    flops = 2 * LLAMA3_70B * 5000 + 4 * 80 * 8192 * (5000 * 5001 / 2)
    floor = flops / (2 * 1978.9e12)
    f = BY_ID["nim-llama33-70b-5000-500-ttft"]
    assert f.share == pytest.approx(floor / 0.40677, rel=1e-9)
    assert round(f.share, 3) == 0.459


def test_gpt_fast_prints_bandwidth_without_the_input_embedding_table():
    for row_id, model in (("gptfast-llama31-8b-bf16", "llama-3.1-8b"), ("gptfast-llama2-7b-bf16", "llama-2-7b")):
        m = BY_ID[row_id].measurement
        counted = m.value * reality.gptfast_bytes(reality.model_for(model), 16) / 1e9
        assert counted == pytest.approx(m.published_bandwidth, rel=0.01)
    f = BY_ID["gptfast-llama31-8b-bf16"]
    assert f.published_share < f.share  # it divides fewer bytes by the same time


# -- a row that beats its floor needs a reason ------------------------------------------------------
def test_only_the_speculative_row_beats_its_floor_and_it_says_why():
    beating = [f for f in FLOORS if f.beats]
    assert [f.measurement.id for f in beating] == ["gptfast-llama2-70b-int4-speculative"]
    assert beating[0].measurement.beats_floor["reason"] == "speculative decoding"
    assert reality.unexplained(FLOORS) == []
    assert reality.check_explained(FLOORS) is FLOORS


def test_a_row_beating_its_floor_without_a_reason_fails():
    spec = BY_ID["gptfast-llama2-70b-int4-speculative"].measurement
    stripped = reality.as_misread(spec)
    with pytest.raises(ValueError, match="gptfast-llama2-70b-int4-speculative reaches 102 % of its floor"):
        reality.check_explained(reality.floors([stripped]))


def test_a_file_with_an_unexplained_row_fails_to_check(tmp_path):
    document = raw_document()
    for raw in document["measurements"]:
        raw.pop("beats_floor", None)
    path = tmp_path / "measurements.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    with pytest.raises(ValueError, match="no explanation"):
        reality.check_explained(reality.floors(reality.load(path)))


def test_a_reason_given_where_the_floor_is_not_beaten_fails():
    honest = BY_ID["gptfast-llama2-7b-bf16"].measurement
    claimed = reality.as_misread(honest, beats_floor={"reason": "speculative decoding", "note": "none used"})
    with pytest.raises(ValueError, match="gives a reason .* but reaches only 70 %"):
        reality.check_explained(reality.floors([claimed]))


def test_misreadings_land_below_the_diagonal():
    int4 = BY_ID["gptfast-llama2-7b-int4"].measurement
    assert reality.floor(reality.as_misread(int4, weight_bits=16.0)).beats
    total = BY_ID["nim-llama33-70b-5000-500-total-c25"].measurement
    assert not BY_ID[total.id].beats
    assert reality.floor(reality.as_misread(total, batch=1, metric="decode_rate")).beats


# -- the floor's conventions -------------------------------------------------------------------------
def test_unstated_cache_counts_8_bits_for_fp8_and_16_otherwise():
    assert BY_ID["nim-llama33-70b-5000-500-itl"].measurement.cache_bits == 8
    assert BY_ID["gptfast-llama2-7b-bf16"].measurement.cache_bits == 16


def test_several_gpus_add_their_bandwidth_and_arithmetic():
    m = BY_ID["nim-llama33-70b-5000-500-itl"].measurement
    assert m.bandwidth == 2 * sm.H100_SXM.memory_bandwidth and m.peak_flops == 2 * sm.H100_SXM.flops("fp8")
    assert m.hardware_label == "2 × NVIDIA H100 SXM" and m.hardware_short == "2 × H100 SXM"
    assert BY_ID["llamacpp-m2ultra-llama3-8b-f16"].measurement.hardware_short == "M2 Ultra"


def test_decode_floor_is_the_package_step_at_the_mean_cache():
    m = BY_ID["nim-llama33-70b-5000-500-itl-c50"].measurement
    cost = sm.forward_pass(m.shape, 1, 5000 + 250, 50, 8, 8, attention="causal")
    expected = max(cost.flops / m.peak_flops, cost.bytes / m.bandwidth)
    assert BY_ID[m.id].time == pytest.approx(expected, rel=1e-12)


def test_apple_rows_are_memory_bound_so_the_estimated_gpu_rate_cannot_move_them():
    apple = [f for f in FLOORS if f.measurement.hardware.startswith("m")]
    assert len(apple) >= 5
    for f in apple:
        m = f.measurement
        assert f.bytes / m.bandwidth >= 5 * f.flops / m.peak_flops, m.id


def test_medians_by_kind_leave_out_rows_that_beat_the_floor():
    medians = reality.median_shares(FLOORS)
    assert set(medians) == {m.kind for m in ROWS}
    assert list(medians.values()) == sorted(medians.values(), reverse=True)
    assert all(0 < share < 1 for share in medians.values())


# -- the checks on the file name the row and the field ----------------------------------------------
@pytest.mark.parametrize("field, value, message", [
    ("metric", "tokens", "metric must be one of"),
    ("value", -3, "value must be a number from"),
    ("value", 1e9, "value must be a number from"),
    ("hardware", "h1000", "hardware must be a catalog key"),
    ("source", "nowhere", "source must be one of"),
    ("weight_bits", 0.5, "weight_bits must be a number of bits"),
    ("batch", 0, "batch must be a whole number"),
    ("date", "Nov 2023", "date must be a date"),
    ("compute", "fp4", "compute must be one of"),
])
def test_a_bad_field_is_named_with_its_row(field, value, message):
    document = raw_document()
    document["measurements"][0][field] = value
    with pytest.raises(ValueError, match=f"measurement 'gptfast-llama2-7b-bf16': {message}"):
        reality.parse(document)


def test_an_unquoted_date_read_by_yaml_as_a_date_is_refused():
    document = yaml.safe_load(open(reality.DATA, encoding="utf-8").read().replace('date: "2026-02-07"',
                                                                                 "date: 2026-02-07"))
    with pytest.raises(ValueError, match="date must be a date written"):
        reality.parse(document)


def test_a_missing_field_a_duplicate_and_an_unknown_model_are_refused():
    document = raw_document()
    del document["measurements"][1]["note"]
    with pytest.raises(ValueError, match="'gptfast-llama2-7b-int8': missing \\['note'\\]"):
        reality.parse(document)
    document = raw_document()
    document["measurements"].append(copy.deepcopy(document["measurements"][0]))
    with pytest.raises(ValueError, match="unique"):
        reality.parse(document)
    with pytest.raises(ValueError, match="model must be one of"):
        reality.model_for("gpt-9")
    with pytest.raises(TypeError, match="model must be a model's key"):
        reality.model_for(7)
    with pytest.raises(TypeError, match="measurement must be a Measurement"):
        reality.floor("gptfast-llama2-7b-bf16")


def test_a_beats_floor_entry_needs_a_known_reason():
    document = raw_document()
    document["measurements"][0]["beats_floor"] = {"reason": "luck", "note": "it was fast"}
    with pytest.raises(ValueError, match="beats_floor must be a reason from"):
        reality.parse(document)


# -- the apple entries of the catalog ------------------------------------------------------------------
@pytest.mark.parametrize("key", ["m1-max", "m1-ultra", "m2-ultra"])
def test_added_machines_cite_a_link_and_say_their_gpu_rate_is_an_estimate(key):
    gpu = sm.CATALOG[key]
    assert gpu.source_url.startswith("https://www.apple.com/newsroom/") and "estimate" in gpu.source
    assert gpu.price_per_hour is None and gpu.memory_bandwidth in (400e9, 800e9)


# -- the table, the chart, the reader's point -----------------------------------------------------------
def test_table_has_a_line_per_row_and_numbered_sources():
    table = reality.table_markdown(FLOORS)
    body = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(body) == len(FLOORS) + 1
    assert "| Llama 3.1 8B | bf16 | 16 | A100 80 GB SXM | 1 | 5 → 200 | 93.89 tok/s | 7.88 ms | 74 % MBU | 1 |" in table
    assert "102 % MBU ‡" in table
    for number, key in enumerate(dict.fromkeys(m.source.key for m in ROWS), start=1):
        assert f"{number}. [" in table


def test_the_chapter_stops_its_build_on_an_unexplained_row():
    import jupytext

    from pathlib import Path

    chapter = jupytext.read(Path(__file__).resolve().parents[1] / "chapters" / "reality-check.md")
    hidden = [cell.source for cell in chapter.cells
              if cell.cell_type == "code" and "remove-cell" in cell.metadata.get("tags", [])]
    assert "reality.check_explained(reality.floors(measurements))" in hidden[0]
