"""The published measurements, their floors, and the rule that nothing beats its floor unexplained."""
import copy
import math
import re
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

import servingmath as sm
from servingmath import ollama, reality

ROWS = reality.load()
FLOORS = reality.floors(ROWS)
BY_ID = {f.measurement.id: f for f in FLOORS}


def raw_document():
    """The measurements file as parsed, a copy of its own for each test to change."""
    return copy.deepcopy(_raw_document())


@lru_cache(maxsize=1)
def _raw_document():
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
    # 93.89 tokens/s on one A100 (2.039 TB/s); weights in 16 bits but the input table
    # (128,256 x 4,096), of which one row is read; a cache of 5 + 200/2 tokens read and the
    # new token's keys and values written.
    cache = (5 + 100 + 1) * 2 * 32 * 8 * 128 * 2
    weights = (LLAMA3_8B - 128256 * 4096 + 4096) * 2
    floor = (weights + cache) / 2.039e12
    assert BY_ID["gptfast-llama31-8b-bf16"].share == pytest.approx(floor * 93.89, rel=1e-9)
    assert round(floor * 93.89, 3) == 0.692


def test_the_floor_charges_one_row_of_the_input_table_not_the_table():
    # The table is 6.5 % of Llama 3 8B's bytes: counting it whole lowered every Llama 3 share.
    m = BY_ID["gptfast-llama31-8b-bf16"].measurement
    whole = reality.floor(m).time * m.bandwidth
    table = 128256 * 4096 * 2
    assert round(table / (LLAMA3_8B * 2), 3) == 0.065
    full = sm.forward_pass(m.shape, 1, 105, 1, 16, 16, attention="causal")
    assert full.bytes - whole == pytest.approx(table - 4096 * 2, rel=1e-12)
    # A tied table is the output layer too: read whole, so nothing is taken off.
    tied = sm.MODELS["llama-3.2-1b"]
    assert tied.tied_embeddings
    flops, moved = reality.step_cost(tied, 1, 0, 1, 16, 16)
    assert moved == pytest.approx(sm.forward_pass(tied, 1, 0, 1, 16, 16).bytes, rel=1e-12)


def test_prefill_flops_leave_the_lookup_out():
    m = BY_ID["nim-llama33-70b-5000-500-ttft"].measurement
    flops, _ = reality.step_cost(m.shape, 5000, 0, 1, 8, 8)
    counted = sm.forward_pass(m.shape, 5000, 0, 1, 8, 8, attention="causal").flops
    # The input table's lookup, and the output layer on the 4,999 prompt tokens before the last.
    assert counted - flops == pytest.approx(2 * 128256 * 8192 * (5000 + 4999), rel=1e-12)
    assert round((counted - flops) / flops, 3) == 0.029  # what counting both added to this row's MFU
    eight_b = BY_ID["trtllm-h100-llama31-8b-128-128"].measurement
    flops_8b, _ = reality.saturated_request(eight_b.shape, 8, 8, 128, 128)
    counted_8b = sm.forward_pass(eight_b.shape, 256, 0, 1, 8, 8, attention="causal").flops
    # The lookup on 256 tokens, and logits drawn for the 128 reply tokens only.
    assert counted_8b - flops_8b == pytest.approx(2 * 128256 * 4096 * (256 + 128), rel=1e-12)
    assert round((counted_8b - flops_8b) / flops_8b, 3) == 0.108  # and to a Llama 3 8B row's


def test_the_output_layer_is_charged_only_for_the_tokens_a_logit_is_drawn_from():
    """Engines turn only each sequence's last new token into logits: a prefill pays the output layer's
    arithmetic once, a decode step once for each user, and a saturated request once for each reply token."""
    model = sm.LLAMA_3_8B
    out = 2 * model.vocab * model.hidden
    assert reality.logit_flops(model, 3) == 3 * out
    one_prompt, _ = reality.step_cost(model, 2048, 0, 1, 16, 16)
    counted = sm.forward_pass(model, 2048, 0, 1, 16, 16, attention="causal").flops
    assert counted - one_prompt == pytest.approx(out * 2048 + out * 2047, rel=1e-12)  # lookup + 2,047 logits
    decode, _ = reality.step_cost(model, 1, 1000, 8, 16, 16)
    counted = sm.forward_pass(model, 1, 1000, 8, 16, 16, attention="causal").flops
    assert counted - decode == pytest.approx(out * 8, rel=1e-12)                      # the lookup only
    for model in sm.MODELS.values():
        flops, _ = reality.saturated_request(model, 16, 16, 2048, 128)
        whole = sm.forward_pass(model, 2048 + 128, 0, 1, 16, 16, attention="causal").flops
        lookup = 0 if model.tied_embeddings else 2 * model.vocab * model.hidden * (2048 + 128)
        assert whole - lookup - flops == pytest.approx(2 * model.vocab * model.hidden * 2048, rel=1e-12), model.name
    with pytest.raises(ValueError, match="tokens"):
        reality.logit_flops(sm.LLAMA_3_8B, -1)
    # TensorRT-LLM's 2,048-token prompts with 128-token replies: 46 % counted on every prompt token, 43 % now.
    assert round(BY_ID["trtllm-h100-llama31-8b-2048-128"].share, 2) == 0.43


def test_a_mixture_of_experts_reads_one_tokens_experts_however_many_users():
    # Routing is not uniform: all the tokens of a step may go to the same experts, so the floor
    # reads one token's experts at any batch, while the package's expected count grows with it.
    for key in ("mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3"):
        model = sm.MODELS[key]
        per_user = model.kv_bytes_per_token(16)
        _, one = reality.step_cost(model, 1, 0, 1, 16, 16)
        _, many = reality.step_cost(model, 1, 0, 64, 16, 16)
        rows = 63 * model.hidden * 2   # the input table's rows of the 63 other users' tokens
        assert many - 64 * per_user == pytest.approx(one - per_user + rows, rel=1e-12)
        expected = sm.forward_pass(model, 1, 0, 64, 16, 16).weight_bytes
        assert many - 64 * per_user < expected
    # A dense model reads the same weights at any batch, with or without this rule.
    dense = sm.MODELS["llama-3-8b"]
    _, one = reality.step_cost(dense, 1, 0, 1, 16, 16)
    _, many = reality.step_cost(dense, 1, 0, 64, 16, 16)
    assert many - one == pytest.approx(63 * (dense.kv_bytes_per_token(16) + dense.hidden * 2), rel=1e-12)


def test_llama_cpp_trims_its_cache_to_the_context_window():
    # 494-token prompt, 1,023 timed steps, a 512-token context: when full, the older half
    # (255 of 511 tokens) goes. 18 steps from 494 to 511, then three runs of 257..511, then 257..496.
    lengths = reality.cache_lengths(494, 1023, 512)
    by_hand = list(range(494, 512)) + 3 * list(range(257, 512)) + list(range(257, 497))
    assert lengths.tolist() == by_hand and len(by_hand) == 1023
    assert lengths.max() < 512
    with pytest.raises(ValueError, match="prompt_tokens must be below context_window"):
        reality.cache_lengths(600, 10, 512)


def test_llama_cpp_q4_0_on_an_m2_ultra_share_by_hand():
    # 91.89 tokens/s; 4.54 bits a weight (3.56 GiB for 6.74 B parameters); 819.2 GB/s; the weights
    # but the input table (one row read), the mean cache the 512-token window leaves, read, and
    # the new token's keys and values written (32 layers x 32 heads x 128 x 2, in 16 bits).
    per_token = 2 * 32 * 32 * 128 * 2
    lengths = list(range(494, 512)) + 3 * list(range(257, 512)) + list(range(257, 497))
    cache = (sum(lengths) / len(lengths) + 1) * per_token
    floor = ((LLAMA2_7B - 32000 * 4096 + 4096) * 4.54 / 8 + cache) / 819.2e9
    assert BY_ID["llamacpp-m2ultra-llama2-7b-q4_0"].share == pytest.approx(floor * 91.89, rel=1e-9)
    assert round(floor * 91.89, 3) == 0.443


def test_llama_cpp_own_q4_0_on_an_m2_ultra_share_by_hand():
    # 88.54 tokens/s, tg 128 after an empty prompt; 4.54 bits a weight (3.56 GiB for 6.74 B
    # parameters); 819.2 GB/s. A step reads the weights and a cache of 128/2 tokens, and writes
    # the new token's keys and values: 32 layers x 32 heads x 128 x 2, in 16 bits.
    assert round(3.56 * 2**30 * 8 / LLAMA2_7B, 2) == 4.54
    cache = (0 + 64 + 1) * 2 * 32 * 32 * 128 * 2
    floor = ((LLAMA2_7B - 32000 * 4096 + 4096) * 4.54 / 8 + cache) / 819.2e9
    assert BY_ID["ggml-m2ultra-llama-7b-q4_0"].share == pytest.approx(floor * 88.54, rel=1e-9)
    assert round(floor * 88.54, 3) == 0.409


def test_mlc_llama2_13b_on_an_m2_ultra_share_by_hand():
    # 55 tokens/s; q4f16_1: 4 bits and a 16-bit scale for every 32 weights, 4.5 bits; no lengths,
    # so the weights and the new token's keys and values (40 layers x 40 heads x 128 x 2).
    assert 4 + 16 / 32 == BY_ID["mlc-m2ultra-llama2-13b-q4f16_1"].measurement.weight_bits
    floor = ((LLAMA2_13B - 32000 * 5120 + 5120) * 4.5 / 8 + 2 * 40 * 40 * 128 * 2) / 819.2e9
    assert BY_ID["mlc-m2ultra-llama2-13b-q4f16_1"].share == pytest.approx(floor * 55, rel=1e-9)
    assert round(floor * 55, 3) == 0.485


def test_the_pull_request_row_is_labelled_with_the_main_branch_figure():
    pr = BY_ID["ggml-m2ultra-llama2-7b-f16"]
    assert pr.measurement.pull_request and pr.measurement.main_branch_value == 29.59
    assert [f.measurement.id for f in FLOORS if f.measurement.pull_request] == [pr.measurement.id]
    table = reality.table_markdown(FLOORS)
    assert "40.53 tok/s (pull request; main branch 29.59)" in table
    # On the main branch the same step ran at under half of the bandwidth.
    assert round(pr.time * 29.59, 2) == 0.48


def test_saturated_tensorrt_llm_share_by_hand():
    # 128 in, 128 out, FP8 on one H100 (1,978.9 TFLOP/s): arithmetic over 256 tokens, attention causal,
    # the output layer (128,256 × 4,096) only for the 128 tokens a logit is drawn from.
    flops = 2 * (LLAMA3_8B - 128256 * 4096) * 256 - 2 * 128256 * 4096 * 128 + 4 * 32 * 4096 * (256 * 257 / 2)
    cache_bytes = (128 * 128 + 128 * 127 / 2 + 256) * (2 * 32 * 8 * 128 * 1)
    per_request = max(flops / 1978.9e12, cache_bytes / 3.35e12)
    assert per_request == flops / 1978.9e12  # compute-bound
    floor_per_token = per_request / 128
    f = BY_ID["trtllm-h100-llama31-8b-128-128"]
    assert f.bound == "compute" and f.share_name == "MFU"
    assert f.share == pytest.approx(floor_per_token * 28312, rel=1e-9)
    assert round(f.share, 3) == 0.416


def test_nim_ttft_share_by_hand():
    # A 5,000-token prefill of Llama 3.3 70B on two H100s in FP8; TTFT 406.77 ms. The output layer
    # (128,256 × 8,192) draws logits for the last prompt token only.
    flops = (2 * (LLAMA3_70B - 128256 * 8192) * 5000 - 2 * 128256 * 8192 * 4999
             + 4 * 80 * 8192 * (5000 * 5001 / 2))
    floor = flops / (2 * 1978.9e12)
    f = BY_ID["nim-llama33-70b-5000-500-ttft"]
    assert f.share == pytest.approx(floor / 0.40677, rel=1e-9)
    assert round(f.share, 3) == 0.446


def test_gpt_fast_counted_the_input_table_in_2023_and_left_it_out_from_2024():
    # The 2023 int8 row: int8 linear weights, a bf16 scale per output channel, the bf16 input
    # table and norms; 155.58 tokens/s times those bytes is the published 1,069.20 GB/s.
    linear = LLAMA2_7B - 32000 * 4096 - 32 * 2 * 4096 - 4096
    scales = (32 * (4 * 4096 + 2 * 11008 + 4096) + 32000) * 2
    int8_bytes = linear + scales + 32000 * 4096 * 2 + (32 * 2 * 4096 + 4096) * 2
    assert round(155.58 * int8_bytes / 1e9, 1) == 1069.2 == BY_ID["gptfast-llama2-7b-int8"].measurement.published_bandwidth
    for row_id, counts in (("gptfast-llama31-8b-bf16", "every weight but the input embedding table"),
                           ("gptfast-llama2-70b-int8", "every weight")):
        m = BY_ID[row_id].measurement
        assert m.published_bandwidth_counts == counts
        counted = m.value * reality.gptfast_bytes(m.shape, m.weight_bits, counts) / 1e9
        assert counted == pytest.approx(m.published_bandwidth, rel=0.01)
    old = [f.measurement for f in FLOORS if f.measurement.published_bandwidth_counts == "every weight"]
    assert [m.id for m in old] == ["gptfast-llama2-7b-bf16", "gptfast-llama2-7b-int8", "gptfast-llama2-7b-int4",
                                   "gptfast-llama2-70b-int8", "gptfast-llama2-70b-int4"]
    # Every 2023 row was in the README's first version (2023-10-16), the speculative row's included.
    assert {m.date for m in old} == {BY_ID["gptfast-llama2-70b-int4-speculative"].measurement.date} == {"2023-10"}
    with pytest.raises(ValueError, match="counts must be one of"):
        reality.gptfast_bytes(LLAMA := reality.model_for("llama-2-7b"), 16, "some weights")


def test_gpt_fast_tensor_parallel_bandwidth_is_one_gpus_and_stays_out_of_the_published_share():
    # gpt-fast's tensor-parallel table prints, for each row, one GPU's bytes (its shards, and the
    # input table, output layer and norms it keeps whole: the 2023 count) times the rate. Set
    # against the 8 GPUs' bandwidth it would read 8 times too low, so the rows keep it in the note.
    for row_id in ("gptfast-llama2-7b-bf16-tp8", "gptfast-llama2-70b-bf16-tp8"):
        m = BY_ID[row_id].measurement
        shape = m.shape
        whole = 2 * shape.vocab * shape.hidden + shape.layers * shape.norms_per_layer * shape.hidden + shape.hidden
        one_gpu = ((shape.parameters - whole) / m.gpus + whole) * m.weight_bits / 8
        printed = float(re.search(r"README's ([\d,]+\.\d+) GB/s is\s+one GPU's", m.note).group(1).replace(",", ""))
        assert m.value * one_gpu / 1e9 == pytest.approx(printed, rel=2e-3), row_id
        assert m.published_bandwidth is None and BY_ID[row_id].published_share is None
    document = raw_document()
    document["measurements"][0]["gpus"] = 8   # the bf16 row, with its printed bandwidth, read as run on 8 GPUs
    with pytest.raises(ValueError, match="'gptfast-llama2-7b-bf16': published_bandwidth must be null for several GPUs"):
        reality.parse(document)


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
    with pytest.raises(ValueError, match="gives a reason .* but reaches only 68 %"):
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


def test_tensor_parallel_floor_is_one_gpu_reading_its_share_and_what_it_holds_whole():
    m = BY_ID["nim-llama33-70b-5000-500-itl"].measurement
    assert m.bandwidth == 2 * sm.H100_SXM.memory_bandwidth and m.peak_flops == 2 * sm.H100_SXM.flops("fp8")
    assert m.hardware_label == "2 × NVIDIA H100 SXM" and m.hardware_short == "2 × H100 SXM"
    assert BY_ID["llamacpp-m2ultra-llama3-8b-f16"].measurement.hardware_short == "M2 Ultra"
    # gpt-fast over 8 A100s: each GPU holds an eighth of the layers' matrices, the whole output
    # layer (32,000 x 4,096) and the norms, and one eighth of the cache (32 KV heads).
    tp = BY_ID["gptfast-llama2-7b-bf16-tp8"]
    assert tp.measurement.replicated == ("output layer",)
    norms = 32 * 2 * 4096 + 4096
    table, output = 32000 * 4096, 32000 * 4096
    shared = LLAMA2_7B - table - output - norms + 4096  # the layers' matrices and one row of the table
    cache = (5 + 100 + 1) * 2 * 32 * 32 * 128 * 2
    per_gpu = (shared / 8 + output + norms) * 2 + cache / 8
    assert tp.bytes == pytest.approx(per_gpu, rel=1e-12)
    assert tp.time == pytest.approx(per_gpu / 2.039e12, rel=1e-12)
    # TurboMind keeps the output layer whole on each of its 4 GPUs but multiplies only a quarter of
    # the vocabulary on each, so only the norms are read whole there.
    lmdeploy = BY_ID["lmdeploy-a100x4-llama2-70b-1-128"]
    assert lmdeploy.measurement.replicated == () and lmdeploy.measurement.gpus == 4
    cost = sm.forward_pass(lmdeploy.measurement.shape, 1, 1 + 64, 1, 16, 16, attention="causal")
    norms70 = 80 * 2 * 8192 + 8192
    table70 = 32000 * 8192
    weights70 = ((cost.weight_bytes / 2 - table70 + 8192 - norms70) / 4 + norms70) * 2
    assert lmdeploy.bytes == pytest.approx(weights70 + (cost.kv_read_bytes + cost.kv_write_bytes) / 4, rel=1e-12)
    # Llama 2 70B has 8 KV heads: over 8 GPUs, one each.
    assert BY_ID["gptfast-llama2-70b-bf16-tp8"].measurement.shape.kv_heads == 8
    with pytest.raises(ValueError, match="replicated must name parts"):
        reality.step_cost(tp.measurement.shape, 1, 0, 1, 16, 16, gpus=8, replicated=("embedding",))


def test_decode_floor_is_the_package_step_at_the_mean_cache():
    m = BY_ID["nim-llama33-70b-5000-500-itl-c50"].measurement
    cost = sm.forward_pass(m.shape, 1, 5000 + 250, 50, 8, 8, attention="causal")
    table, norms = 128256 * 8192, 80 * 2 * 8192 + 8192
    weights = (cost.weight_bytes - (table - 50 * 8192) - norms) / 2 + norms  # 8-bit: a byte a weight
    flops = (cost.flops - 2 * table * 50) / 2
    moved = weights + (cost.kv_read_bytes + cost.kv_write_bytes) / 2
    expected = max(flops / sm.H100_SXM.flops("fp8"), moved / sm.H100_SXM.memory_bandwidth)
    assert BY_ID[m.id].time == pytest.approx(expected, rel=1e-12)


def test_apple_rows_are_memory_bound_so_the_estimated_gpu_rate_cannot_move_them():
    apple = [f for f in FLOORS if f.measurement.hardware.startswith("m")]
    assert len(apple) >= 5
    for f in apple:
        m = f.measurement
        assert f.bytes / m.bandwidth >= 5 * f.flops / m.peak_flops, m.id


def test_groups_compare_like_with_like_and_leave_out_rows_that_beat_the_floor():
    found = reality.groups(FLOORS)
    assert {g.kind for g in found} == {m.kind for m in ROWS}
    assert sum(g.rows for g in found) == sum(1 for f in FLOORS if not f.beats)
    for g in found:
        members = [f for f in FLOORS if not f.beats and (f.measurement.kind, f.measurement.precision, f.share_name)
                   == (g.kind, g.precision, g.share_name)]
        assert sorted(g.shares) == sorted(f.share for f in members) and 0 < g.median <= g.highest < 1
    assert all(g.rows >= 3 for g in reality.groups(FLOORS, minimum=3))
    assert reality.groups([BY_ID["gptfast-llama2-70b-int4-speculative"]]) == []
    with pytest.raises(ValueError, match="minimum"):
        reality.groups(FLOORS, minimum=0)


def test_precision_classes():
    assert {m.precision for m in ROWS} == {"16-bit", "8-bit", "4- to 5-bit"}
    assert BY_ID["ggml-m2ultra-llama-7b-q8_0"].measurement.precision == "8-bit"
    assert BY_ID["llamacpp-m1ultra-tinyllama-q4_k_m"].measurement.precision == "4- to 5-bit"


def test_the_chart_filters_by_each_kind_and_each_machine_in_the_rows_order():
    kinds, machines = reality.kinds(FLOORS), reality.hardware(FLOORS)
    assert sum(kinds.values()) == len(FLOORS) and list(kinds) == list(dict.fromkeys(m.kind for m in ROWS))
    assert list(machines) == list(dict.fromkeys(m.hardware for m in ROWS))
    assert machines["a100-80gb-pcie"] == "NVIDIA A100 80 GB PCIe"
    # Rows on several of one GPU share its entry: 1, 4 and 8 A100s filter together.
    assert {m.gpus for m in ROWS if m.hardware == "a100-80gb"} == {1, 4, 8}


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
    # The bandwidth from the memory itself (LPDDR5 at 6,400 MT/s), not Apple's rounded 400 or 800 GB/s.
    assert gpu.price_per_hour is None and gpu.memory_bandwidth in (409.6e9, 819.2e9)
    assert "409.6" in gpu.source or "819.2" in gpu.source


# -- the table, the chart, the reader's point -----------------------------------------------------------
def test_the_table_shows_each_figure_with_the_digits_it_was_published_with():
    # A number drops a published figure's trailing zeros (62.50 reads as 62.5); the row keeps them.
    shown = {m.id: m.published for m in ROWS}
    assert shown["gptfast-llama2-70b-bf16-tp8"] == "62.50 tok/s" and shown["gptfast-llama2-7b-int4"] == "196.80 tok/s"
    assert shown["torchao-llama3-8b-int4wo-64"] == "180.80 tok/s" and shown["llamacpp-m2ultra-llama3-8b-f16"] == "36.90 tok/s"
    assert shown["gptfast-llama2-7b-bf16"] == "104.9 tok/s" and shown["trtllm-h100-llama31-8b-128-128"] == "28,312 tok/s in all"
    # Every figure the source prints with two decimals and a last zero says so.
    text = reality.DATA.read_text(encoding="utf-8")
    zeros = set(re.findall(r"\n    value: (\d+\.\d0)\n", text))
    assert zeros == {"196.80", "62.50", "180.80", "36.90"}
    assert all(m.value_digits == 2 for m in ROWS if f"{m.value:.2f}" in zeros)


def test_table_has_a_line_per_row_and_numbered_sources():
    table = reality.table_markdown(FLOORS)
    body = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(body) == len(FLOORS) + 1
    assert "| Llama 3.1 8B | bf16 | 16 | A100 80 GB SXM | 1 | 5 → 200 | 93.89 tok/s | 7.37 ms | 69 % MBU | 1 |" in table
    assert "| Llama 2 7B | F16 | 16 | A100 80 GB PCIe | 1 | 494 → 1,023 (a 512-token context) |" in table
    assert "102 % MBU ‡" in table
    for number, key in enumerate(dict.fromkeys(m.source.key for m in ROWS), start=1):
        assert f"{number}. [" in table


def test_the_table_says_which_bandwidths_are_worked_out_from_the_memory_bus():
    """A vendor's round bandwidth (Apple's 400 and 800 GB/s, the H100 PCIe's "greater than 2,000") would put a
    floor above the true minimum: the floors use the bus width × transfer rate, and the table names them."""
    assert sm.hardware.FROM_THE_MEMORY_BUS == pytest.approx((2039.04e9, 409.6e9, 819.2e9, 102.4e9), rel=1e-12)
    worked_out = {m.hardware for m in ROWS if m.gpu.memory_bandwidth in sm.hardware.FROM_THE_MEMORY_BUS}
    assert worked_out == {"m1-max", "m1-ultra", "m2-ultra", "h100-pcie"}
    table = reality.table_markdown(FLOORS)
    assert ("works it out from the memory's bus width and transfer rate: 409.6 GB/s for the M1 Max; 819.2 GB/s "
            "for the M1 Ultra and the M2 Ultra; 2,039 GB/s for the H100 PCIe.") in table
    nvidia_sxm = [f for f in FLOORS if f.measurement.hardware == "a100-80gb"]
    assert "works it out" not in reality.table_markdown(nvidia_sxm)


def test_the_chapter_stops_its_build_on_an_unexplained_row():
    import jupytext

    from pathlib import Path

    chapter = jupytext.read(Path(__file__).resolve().parents[1] / "chapters" / "reality-check.md")
    hidden = [cell.source for cell in chapter.cells
              if cell.cell_type == "code" and "remove-cell" in cell.metadata.get("tags", [])]
    assert "reality.check_explained(reality.floors(measurements))" in hidden[0]


# -- the rows as they were run -------------------------------------------------------------------
def test_the_llama2_rows_of_the_gpu_benchmarks_ran_on_a_pcie_a100_with_a_512_token_context():
    rows = [f for f in FLOORS if f.measurement.source.key == "gpu-benchmarks-llm" and f.measurement.model == "llama-2-7b"]
    assert len(rows) == 6
    for f in rows:
        m = f.measurement
        assert (m.prompt_tokens, m.reply_tokens, m.context_window) == (494, 1023, 512)
        assert m.hardware in ("a100-80gb-pcie", "h100-pcie", "m2-ultra")
    # The README dropped its LLaMA 2 tables on 2024-05-12: the source is the version that holds them.
    assert all(f.measurement.source.url.endswith("/blob/eafac9d26ac593f8e7dd353415dddf0c19de84b2/README.md")
               for f in rows)
    assert sm.CATALOG["a100-80gb-pcie"].memory_bandwidth == 1.935e12
    assert sm.CATALOG["a100-80gb-pcie"].source_url.startswith("https://www.nvidia.com/")


@pytest.mark.parametrize("row_id, with_table, one_row", [
    ("llamacpp-a100-llama2-7b-f16", 0.522, 0.512),
    ("llamacpp-a100-llama2-7b-q4_0", 0.283, 0.278),
    ("llamacpp-h100pcie-llama2-7b-f16", 0.559, 0.548),
    ("llamacpp-m2ultra-llama2-7b-q4_0", 0.452, 0.443),
])
def test_corrected_shares_with_the_whole_table_and_with_one_row(row_id, with_table, one_row):
    # The run's own card, lengths and context; counting the input table whole, then one row of it.
    f = BY_ID[row_id]
    m = f.measurement
    table_bytes = (32000 * 4096 - 4096) * m.weight_bits / 8
    whole_table = (f.bytes + table_bytes) / m.bandwidth / m.measured_time
    assert round(whole_table, 3) == with_table and round(f.share, 3) == one_row


def test_the_speculative_row_states_its_own_conditions():
    m = BY_ID["gptfast-llama2-70b-int4-speculative"].measurement
    assert (m.prompt_text, m.sampling, m.reply_tokens, m.drafted_tokens) == ("def quicksort(arr):", "greedy", 100, 4)
    assert m.prompt_tokens is None


def test_no_kind_of_system_rests_on_fewer_than_three_rows():
    kinds = reality.kinds(FLOORS)
    assert len(kinds) >= 5 and all(count >= 3 for count in kinds.values())


# The publishers of the 42 rows the floor and the schema were first checked against. Rows from any
# other publisher were held out of that check: they test the schema and the floor as new data would.
FIRST_PUBLISHERS = {"PyTorch team (Meta)", "NVIDIA", "Xiongjie Dai", "Georgi Gerganov (llama.cpp)",
                    "spectrometerHBH, a contributor to Apache TVM and MLC LLM",
                    "a contributor to Jeff Geerling's ai-benchmarks"}


def held_out_document():
    """The data file cut down to the rows of publishers the first check did not hold, and their sources."""
    document = raw_document()
    keys = {key for key, source in document["sources"].items() if source["publisher"] not in FIRST_PUBLISHERS}
    return {"sources": {key: document["sources"][key] for key in keys},
            "measurements": [row for row in document["measurements"] if row["source"] in keys]}


HELD_OUT = Path(__file__).parent / "data" / "held_out_measurements.yaml"


def test_rows_from_publishers_held_out_pass_the_schema_and_none_beats_its_floor():
    document = held_out_document()
    held_out = reality.parse(document)   # the schema, on these rows alone
    assert len(held_out) >= 10 and len({m.source.publisher for m in held_out}) >= 2
    assert not {m.source.publisher for m in held_out} & FIRST_PUBLISHERS
    assert len({m.kind for m in held_out}) >= 3
    floors = reality.check_explained(reality.floors(held_out))   # raises if one beats its floor unexplained
    assert all(not f.explained and 0.3 < f.share < 1 for f in floors), [(f.measurement.id, f.share) for f in floors]
    # The same rows in the full file get the same floors: nothing about a row depends on the others.
    assert all(f.time == BY_ID[f.measurement.id].time for f in floors)


def test_rows_no_part_of_the_course_holds_pass_the_schema_and_none_beats_its_floor():
    # A publisher and a machine the data file does not hold at all, read through the same schema.
    rows = reality.load(HELD_OUT)
    assert len(rows) >= 7
    assert not {m.source.publisher for m in rows} & {m.source.publisher for m in ROWS}
    assert not {m.hardware for m in rows} & {m.hardware for m in ROWS}
    assert {m.kind for m in rows} <= {m.kind for m in ROWS}
    floors = reality.check_explained(reality.floors(rows))
    assert all(not f.explained and f.share < 1 for f in floors), [(f.measurement.id, f.share) for f in floors]
    # Fixed costs show through the smallest model here too: TinyLlama's shares are the lowest.
    lowest = sorted(floors, key=lambda f: f.share)[:2]
    assert {f.measurement.model for f in lowest} == {"tinyllama-1.1b"}
    # The same figure read as 16-bit weights beats its floor: the check can fail.
    misread = reality.as_misread(rows[0], weights="bf16", weight_bits=16.0)
    with pytest.raises(ValueError, match="exllamav2-4090-llama2-7b-exl2-3.0 reaches .* with no explanation"):
        reality.check_explained([reality.floor(misread)])


def test_a_machine_only_measurements_use_is_no_gpu_the_lessons_offer():
    # The lessons' explorers offer every catalog GPU; a GeForce card that only held-out rows ran on
    # stays out of it, and its rows are memory-bound so far that its arithmetic rate cannot move them.
    assert "rtx-4090" in reality.MACHINES and "rtx-4090" not in sm.CATALOG
    assert all(reality.MACHINES[key] is gpu for key, gpu in sm.CATALOG.items())
    card = reality.MACHINES["rtx-4090"]
    assert (card.memory_bandwidth, card.flops("16-bit")) == (1008e9, 330.3e12) and card.source_url.startswith("https://")
    for f in reality.floors(reality.load(HELD_OUT)):
        assert f.bytes / card.memory_bandwidth >= 5 * f.flops / card.flops("16-bit"), f.measurement.id


def test_the_held_out_check_fails_on_a_misread_row_and_on_a_machine_the_catalog_lacks():
    document = held_out_document()
    row = next(r for r in document["measurements"] if r["id"] == "lmdeploy-a100-llama2-7b-b64-1-128")
    # 64 users' total read as one user's rate: faster than any one user's floor.
    row.update(batch=1, metric="decode_rate", unit="tokens/s per user")
    with pytest.raises(ValueError, match="lmdeploy-a100-llama2-7b-b64-1-128 reaches .* with no explanation"):
        reality.check_explained(reality.floors(reality.parse(document)))
    document = held_out_document()
    document["measurements"][0]["hardware"] = "rtx-5090"
    with pytest.raises(ValueError, match="hardware must be a catalog key"):
        reality.parse(document)


def test_a_row_whose_caches_pass_the_memory_says_so():
    # The floor counts every user's cache at its mean length as if all were held at once; where the
    # last step's caches and the weights pass the memory, the engine cannot have held them all, and
    # the row's note says so (the floor stays a lower bound: holding fewer only adds reads).
    over = []
    for f in FLOORS:
        m = f.measurement
        if m.batch is None or m.reply_tokens is None:
            continue
        last = (m.prompt_tokens or 0) + m.reply_tokens
        if m.context_window is not None:
            last = min(last, m.context_window)
        need = sm.fit(m.shape, m.gpu, last, m.batch, m.weight_bits, m.cache_bits, reserve=0)
        if need.needed_bytes > m.gpus * need.usable_bytes:
            over.append(m.id)
            assert "cannot have held" in m.note, m.id
    assert over == ["lmdeploy-a100-llama2-7b-b64-128-2048"]


@pytest.mark.parametrize("field, value, message", [
    ("context_window", 4, "context_window must be larger than the stated prompt"),
    ("replicated", ["output layer"], "replicated must be a list of parts"),
    ("replicated", "output layer", "replicated must be a list of parts"),
    ("published_bandwidth_counts", "most weights", "published_bandwidth_counts must be one of"),
    ("main_branch_value", -1, "main_branch_value must be a number from"),
    ("drafted_tokens", 0, "drafted_tokens must be a whole number"),
    ("value_digits", 1, "value_digits must be more decimals than the value shows"),   # 104.9 shows 1 already
])
def test_a_bad_condition_is_named_with_its_row(field, value, message):
    document = raw_document()
    document["measurements"][0][field] = value
    with pytest.raises(ValueError, match=f"measurement 'gptfast-llama2-7b-bf16': {message}"):
        reality.parse(document)


def test_the_chapters_sentences_about_groups_hold_for_the_data():
    by_group = {(g.kind, g.precision, g.share_name): g for g in reality.groups(FLOORS)}
    # "In each of the 3 kinds with rows of both widths, 16-bit weights reach a higher median share."
    both = [kind for kind in reality.kinds(FLOORS)
            if (kind, "16-bit", "MBU") in by_group and (kind, "4- to 5-bit", "MBU") in by_group]
    assert len(both) == 3
    for kind in both:
        assert by_group[(kind, "16-bit", "MBU")].median > by_group[(kind, "4- to 5-bit", "MBU")].median
    # "The highest honest share here" is one row's, and it is under the floor.
    honest = [f for f in FLOORS if not f.beats]
    top = max(honest, key=lambda f: f.share)
    assert top.measurement.id == "mlx-m2ultra-llama3-70b-bf16" and round(top.share, 2) == 0.80
    # "With 4-bit weights the same machine runs 7B models at 41 % to 44 % with llama.cpp and 40 % with
    # MLC LLM": every such row on the M2 Ultra, each below every 16-bit row of the same shape there.
    m2 = [f for f in FLOORS if f.measurement.hardware == "m2-ultra" and f.measurement.model in ("llama-7b", "llama-2-7b")]
    narrow = [f for f in m2 if f.measurement.precision == "4- to 5-bit"]
    cpp = sorted(round(f.share, 2) for f in narrow if f.measurement.software.startswith("llama.cpp"))
    mlc = [round(f.share, 2) for f in narrow if f.measurement.software.startswith("MLC LLM")]
    assert (cpp[0], cpp[-1], mlc) == (0.41, 0.44, [0.40]) and len(narrow) == len(cpp) + len(mlc)
    assert max(f.share for f in narrow) < min(f.share for f in m2 if f.measurement.precision == "16-bit")
    # "A saturated TensorRT-LLM has a median MFU of 41 % over its 4 compute-bound rows, the highest 43 %."
    saturated = by_group[("serving engine, saturated", "8-bit", "MFU")]
    assert (saturated.rows, round(saturated.median, 2), round(saturated.highest, 2)) == (4, 0.41, 0.43)
    assert all(f.measurement.software.startswith("TensorRT-LLM") for f in FLOORS
               if f.measurement.kind == "serving engine, saturated")


def test_fewer_bits_mean_fewer_milliseconds_but_not_in_proportion():
    # "Fewer bytes still means fewer milliseconds, but not in proportion": every pair of rows that
    # differ only in the weights' format (a weight-only format; the dynamic int8 mode is the
    # chapter's named exception) runs faster with fewer bits, by less than its floor shrinks.
    from itertools import combinations

    def conditions(m):
        return (m.source.key, m.model, m.hardware, m.gpus, m.batch, m.prompt_tokens, m.reply_tokens, m.metric,
                m.context_window, m.drafted_tokens)

    weight_only = [f for f in FLOORS if "dynamic" not in f.measurement.weights]
    pairs = 0
    for a, b in combinations(weight_only, 2):
        if conditions(a.measurement) != conditions(b.measurement) or a.measurement.weight_bits == b.measurement.weight_bits:
            continue
        wide, narrow = sorted((a, b), key=lambda f: -f.measurement.weight_bits)
        pairs += 1
        gain = wide.measurement.measured_time / narrow.measurement.measured_time
        assert 1 < gain < wide.time / narrow.time, (wide.measurement.id, narrow.measurement.id)
    assert pairs >= 10
    dynamic = BY_ID["torchao-llama3-8b-int8dq"].measurement
    assert dynamic.measured_time > BY_ID["torchao-llama3-8b-bf16"].measurement.measured_time


def test_the_smallest_floor_shows_fixed_costs_most():
    # "Fixed costs per step hide behind a large model's reads and show through a small one's":
    # among one user's decode rows with weight-only formats, TinyLlama's floor is the smallest and
    # its share the lowest.
    one_user = [f for f in FLOORS if f.measurement.metric in ("decode_rate", "itl") and f.measurement.batch == 1
                and "dynamic" not in f.measurement.weights and not f.beats]
    assert len(one_user) >= 30
    smallest = min(one_user, key=lambda f: f.time)
    assert smallest.measurement.id == "llamacpp-m1ultra-tinyllama-q4_k_m"
    assert smallest.share == min(f.share for f in one_user)


def test_the_other_users_prompts_explain_most_of_the_crowded_servers_drop():
    """The chapter: at 50 users NIM's steps reach 28 % of the decode-only floor; with the prompts of the
    requests that take the finished users' places counted, 34 % (mixed into the steps) to 58 % (apart)."""
    row = BY_ID["nim-llama33-70b-5000-500-itl-c50"]
    among = reality.prompts_among_steps(row.measurement)
    assert among.prompt_tokens_a_step == 50 * 5000 / 500
    assert row.time < among.mixed < among.apart
    assert [round(x, 2) for x in among.shares] == [0.34, 0.58] and round(row.share, 2) == 0.28
    # Apart: the decode step's floor plus a tenth of a 5,000-token prefill's, the TTFT row's own floor.
    prefill = BY_ID["nim-llama33-70b-5000-500-ttft"]
    assert among.apart == pytest.approx(row.time + 0.1 * prefill.time, rel=1e-12)
    with pytest.raises(ValueError, match="several users"):
        reality.prompts_among_steps(BY_ID["nim-llama33-70b-5000-500-itl"].measurement)


def test_a_many_user_row_whose_floor_leaves_out_prompts_is_marked_with_its_counted_share():
    from servingmath.explorers import reality_check
    floors_ = reality.floors()
    left_out = [f for f in floors_ if reality.prompts_left_out(f) is not None]
    assert left_out and all(f.measurement.batch > 1 and f.measurement.metric == "itl" for f in left_out)
    table = reality.table_markdown(floors_)
    marked = [line for line in table.splitlines() if line.startswith("|") and " §" in line]
    assert len(marked) == len(left_out)
    for f in left_out:
        among = reality.prompts_left_out(f)
        assert all(share > f.share for share in among.shares)    # counting more work raises the floor
        assert reality.counted_range(among) in table
        assert reality.counted_range(among) in reality_check._note(f)
    assert all(reality.prompts_left_out(f) is None for f in floors_ if f.measurement.batch in (None, 1))
