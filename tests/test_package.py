"""Exact expectations for each module of servingmath."""
import numpy as np
import pytest

import servingmath as sm
from servingmath import cache, hardware, models, passes, roofline, serving, units

M = sm.LLAMA_3_8B
G = sm.H100_SXM


# -- hardware ------------------------------------------------------------------------
def test_catalog_starts_with_the_h100_sxm_and_holds_at_least_eight_machines():
    keys = list(sm.CATALOG)
    assert keys[0] == "h100-sxm" and len(keys) >= 8
    assert {"h100-pcie", "h200", "a100-80gb", "l4", "l40s", "mi300x", "b200", "laptop"} <= set(keys)


def test_h100_sxm_figures():
    assert G.peak_flops == 989.4e12
    assert G.memory_bandwidth == 3.35e12
    assert G.memory_bytes == 80 * 2**30 and G.listed_memory == "80 GB"
    assert G.price_per_hour == 3.0


@pytest.mark.parametrize("entry", list(sm.CATALOG.values()), ids=list(sm.CATALOG))
def test_every_catalog_entry_is_dense_sourced_and_dated(entry):
    assert entry.source and len(entry.as_of) == 7 and entry.as_of[4] == "-"
    assert entry.price_source
    if entry.listed_with_sparsity is not None:
        # the sparse headline is twice the dense rate, never the rate the arithmetic uses
        assert entry.listed_with_sparsity == pytest.approx(2 * entry.peak_flops, rel=0.02)
        assert entry.peak_flops < entry.listed_with_sparsity


@pytest.mark.parametrize("entry", list(sm.CATALOG.values()), ids=list(sm.CATALOG))
def test_every_catalog_entry_links_its_source(entry):
    assert entry.source_url.startswith("https://") and " " not in entry.source_url
    assert f"<{entry.source_url}>" in hardware.catalog_markdown()


def test_b200_bandwidth_is_nvidias_dgx_b200_figure_per_gpu():
    # NVIDIA DGX B200: 8 GPUs, 1,440 GB of HBM3e and 64 TB/s in all
    b200 = sm.CATALOG["b200"]
    assert b200.memory_bandwidth == 64e12 / 8
    assert b200.listed_memory == f"{1440 // 8} GB"
    assert "dgx-b200" in b200.source_url


def test_memory_counts_the_spec_sheets_gigabytes_as_2_to_the_30_bytes():
    assert {key: entry.listed_memory for key, entry in sm.CATALOG.items()} == {
        "h100-sxm": "80 GB", "h100-pcie": "80 GB", "h200": "141 GB", "a100-80gb": "80 GB", "a100-80gb-pcie": "80 GB", "l4": "24 GB",
        "l40s": "48 GB", "mi300x": "192 GB", "b200": "180 GB", "t4": "16 GB", "laptop": "16 GB",
        "m1-max": "64 GB", "m1-ultra": "128 GB", "m2-ultra": "192 GB"}
    assert sm.CATALOG["h200"].memory_bytes == 141 * 2**30
    assert "the H100's 80 GB hold 85.90 GB" in hardware.catalog_markdown()


def test_gpu_lookup_by_key_or_name_and_unknown():
    assert sm.gpu("h100-sxm") is G and sm.gpu("NVIDIA H100 SXM") is G and sm.gpu(G) is G
    with pytest.raises(ValueError, match="gpu must be one of .* got 'h1000'"):
        sm.gpu("h1000")


def test_flops_by_format_and_16_bit_fallback_to_fp16():
    assert G.flops("fp8") == 1978.9e12
    assert sm.CATALOG["t4"].peak_flops == 65e12  # no bf16 on a T4: fp16 stands in
    with pytest.raises(ValueError, match="dtype must be one of"):
        sm.CATALOG["t4"].flops("fp8")


def test_with_changes_makes_a_what_if_copy():
    faster = G.with_changes(memory_bandwidth=4.8e12)
    assert faster.memory_bandwidth == 4.8e12 and G.memory_bandwidth == 3.35e12
    with pytest.raises(ValueError, match="memory_bandwidth"):
        G.with_changes(memory_bandwidth=0)


def test_catalog_rows_and_markdown():
    rows = hardware.catalog_rows()
    assert rows[0]["GPU"] == "NVIDIA H100 SXM" and rows[0]["ridge FLOP/byte"] == pytest.approx(295.343, abs=1e-3)
    table = hardware.catalog_markdown()
    assert "| NVIDIA H100 SXM | 989 TFLOP/s | 3.35 TB/s | 80 GB | 295 | $3.00 |" in table
    assert "| Laptop (Apple M2, 16 GB) |" in table and "| — |" in table


# -- models ----------------------------------------------------------------------------
@pytest.mark.parametrize("key, total, active", [
    ("llama-3-8b", 8_030_261_248, 8_030_261_248),
    ("llama-3.2-1b", 1_235_814_400, 1_235_814_400),
    ("llama-3-70b", 70_553_706_496, 70_553_706_496),
    ("mistral-7b", 7_241_732_096, 7_241_732_096),
    ("qwen2-7b", 7_615_616_512, 7_615_616_512),
    ("mixtral-8x7b", 46_702_792_704, 12_879_925_248),
])
def test_parameter_counts_match_the_published_checkpoints(key, total, active):
    model = sm.MODELS[key]
    assert model.parameters == total
    assert model.active_parameters == active


def test_llama_3_8b_shape_and_kv_bytes():
    assert (M.layers, M.hidden, M.heads, M.kv_heads, M.head_dim, M.ffn, M.vocab) == (32, 4096, 32, 8, 128, 14336, 128256)
    assert M.kv_bytes_per_token() == 131_072
    assert M.kv_bytes_per_token(8) == 65_536


def test_from_hf_config_reads_explicit_head_dim_tied_embeddings_and_biases():
    base = dict(models.CONFIGS["llama-3-8b"])
    tied = models.Model.from_hf_config({**base, "tie_word_embeddings": True})
    assert M.parameters - tied.parameters == 128256 * 4096
    explicit = models.Model.from_hf_config({**base, "head_dim": 64})
    assert explicit.head_dim == 64 and explicit.attention_width == 32 * 64
    biased = models.Model.from_hf_config({**base, "attention_bias": True})
    assert biased.parameters - M.parameters == 32 * (4096 + 2 * 1024 + 4096)
    mha = models.Model.from_hf_config({k: v for k, v in base.items() if k != "num_key_value_heads"})
    assert mha.kv_heads == mha.heads == 32


def test_from_hf_config_refuses_what_it_cannot_read(tmp_path):
    with pytest.raises(TypeError, match="config must be a dict from config.json or its path, got 42"):
        models.Model.from_hf_config(42)
    with pytest.raises(ValueError, match="config must be a dict or the path of a config.json, got 'no/such.json'"):
        models.Model.from_hf_config("no/such.json")
    broken = tmp_path / "config.json"
    broken.write_text("{not json")
    with pytest.raises(ValueError, match="is not valid JSON"):
        models.Model.from_hf_config(broken)
    with pytest.raises(ValueError, match=r"model_type 'gpt2' is not supported; supported: \['deepseek_v2'"):
        models.Model.from_hf_config({"model_type": "gpt2", "n_layer": 12})
    with pytest.raises(ValueError, match="model_type None is not supported"):
        models.Model.from_hf_config({k: v for k, v in models.CONFIGS["llama-3-8b"].items() if k != "model_type"})


def test_from_hf_config_reads_a_path_or_its_folder(tmp_path):
    import json
    (tmp_path / "config.json").write_text(json.dumps(dict(models.CONFIGS["llama-3-8b"])))
    assert models.Model.from_hf_config(tmp_path / "config.json") == M
    assert models.Model.from_hf_config(str(tmp_path)) == M


def test_model_lookup():
    assert sm.model("Llama 3 8B") is M and sm.model("llama-3-8b") is M
    with pytest.raises(ValueError, match="model must be one of"):
        sm.model("gpt-5")


# -- passes ----------------------------------------------------------------------------
def test_positions_attended_causal_and_full():
    assert passes.positions_attended(4) == 10  # 1 + 2 + 3 + 4
    assert passes.positions_attended(1, 1000) == 1001
    assert passes.positions_attended(4, attention="full") == 16
    assert passes.positions_attended(2, 3, attention="full") == 10
    assert passes.positions_attended(4, attention="none") == 0


def test_forward_pass_counts():
    cost = sm.forward_pass(M, 1024)
    assert cost.tokens == 1024
    assert cost.linear_flops == 2 * M.parameters * 1024
    assert cost.attention_flops == 4 * 32 * 4096 * (1024 * 1025 / 2)
    assert cost.weight_bytes == 2 * M.parameters
    assert cost.kv_read_bytes == 0 and cost.kv_write_bytes == 1024 * 131_072
    step = sm.forward_pass(M, 1, cached_tokens=1000, batch=8)
    assert step.kv_read_bytes == 8 * 1000 * 131_072
    assert step.attention_flops == 8 * 4 * 32 * 4096 * 1001
    assert step.intensity == pytest.approx(step.flops / step.bytes)


def test_mixture_of_experts_computes_with_active_and_reads_the_experts_its_tokens_reach():
    mixtral = sm.MODELS["mixtral-8x7b"]
    one = sm.forward_pass(mixtral, 1, attention="none", kv_cache=False)
    assert one.linear_flops == 2 * mixtral.active_parameters
    # one token routes to 2 of the 8 experts: it reads the active parameters, about 26 GB, not 93 GB
    assert one.weight_bytes == pytest.approx(2 * mixtral.active_parameters, rel=1e-12)
    assert units.gb(one.weight_bytes, 1) == "25.8 GB"
    # ten tokens under uniform routing: 8 · (1 − (6/8)^10) experts a layer
    ten = sm.forward_pass(mixtral, 10, attention="none", kv_cache=False)
    touched = 8 * (1 - 0.75 ** 10)
    assert mixtral.experts_touched(10) == pytest.approx(touched)
    assert ten.weight_bytes == pytest.approx(
        2 * (mixtral.active_parameters + (touched - 2) * 32 * mixtral.expert_parameters))
    # a prefill of the lesson's size reads every expert
    prefill = sm.forward_pass(mixtral, 2000, attention="none", kv_cache=False)
    assert prefill.weight_bytes == 2 * mixtral.parameters
    assert units.gb(prefill.weight_bytes, 1) == "93.4 GB"
    # a batch of users decoding together wakes more experts than one
    eight_users = sm.forward_pass(mixtral, 1, batch=8, attention="none", kv_cache=False)
    assert one.weight_bytes < eight_users.weight_bytes < prefill.weight_bytes


def test_forward_pass_sweeps_arrays():
    tokens = np.array([1, 10, 100])
    cost = sm.forward_pass(M, tokens, attention="none", kv_cache=False)
    np.testing.assert_allclose(cost.intensity, [1, 10, 100])


# -- roofline --------------------------------------------------------------------------
def test_ridge_point_and_attainable():
    assert roofline.ridge_point(989.4e12, 3.35e12) == pytest.approx(295.3433, rel=1e-6)
    np.testing.assert_allclose(sm.attainable_flops([1, 295.3433, 1000], 989.4e12, 3.35e12),
                               [3.35e12, 989.4e12, 989.4e12], rtol=1e-6)


def test_pass_time_takes_the_slower_limit_plus_overhead():
    fast = sm.pass_time(1e12, 1e9, peak_flops=1e12, bandwidth=1e9)
    assert fast.compute_time == 1 and fast.memory_time == 1 and fast.time == 1 and fast.bound == "memory"
    plate = sm.pass_time(6e11, 8e8, 1e12, 1e9, sm.PLATE)
    assert plate.time == pytest.approx(1.0 + 0.2e-3) and plate.bound == "memory"
    swept = sm.pass_time(np.array([1e9, 1e13]), 1e9, 1e12, 1e9)
    assert list(swept.bound) == ["memory", "compute"]


# -- serving ---------------------------------------------------------------------------
def test_passes_for_request():
    assert sm.passes_for_request(20_000, 100) == 100
    assert sm.passes_for_request(1, 1) == 1


def test_request_pieces_add_up():
    req = sm.request(M, G, 3000, 250)
    assert req.decode_steps == 249 and req.passes == 250
    assert req.total_time == pytest.approx(req.ttft + 249 * req.tpot)
    assert req.tokens_per_second == pytest.approx(1 / req.tpot)
    assert req.prefill.bound == "compute" and req.decode.bound == "memory"


def test_plate_decode_reads_the_mean_cache():
    req = sm.request(M, G, 1000, 2, assumptions=sm.PLATE)
    assert req.decode.cost.kv_read_bytes == 1001 * 131_072


def test_tokens_and_cost():
    assert serving.tokens_per_hour(2, 0.5) == 14_400
    assert sm.cost_per_million_tokens(3, 750_000) == pytest.approx(4.0)
    assert sm.cost_per_million_tokens(0, 1) == 0


def test_batching_uses_the_gpu_price_unless_told_and_refuses_no_price():
    assert sm.batching(M, G, 1).price_per_hour == 3.0
    assert sm.batching(M, G, 1, price_per_hour=6).cost_per_million_tokens == pytest.approx(
        2 * sm.batching(M, G, 1).cost_per_million_tokens)
    with pytest.raises(ValueError, match="price_per_hour is needed"):
        sm.batching(M, sm.CATALOG["laptop"], 1)


# -- units -----------------------------------------------------------------------------
@pytest.mark.parametrize("shown, expected", [
    (units.ms(0.0487), "48.70 ms"),
    (units.ms(0.0487, 0), "49 ms"),
    (units.seconds(1.2424), "1.24 s"),
    (units.gb(16_060_522_496), "16.06 GB"),
    (units.tb_per_s(3.35e12), "3.35 TB/s"),
    (units.tflops(989.4e12), "989 TFLOP/s"),
    (units.trillions(48.18e12), "48.2 T"),
    (units.billions(8.03e9), "8.03 billion"),
    (units.millions(24.03e6), "24 million"),
    (units.dollars(0.12485, 3), "$0.125"),
    (units.dollars(3.995), "$4.00"),
    (units.percent(0.9608), "96 %"),
    (units.times(12.05), "12×"),
    (units.number(750_000), "750,000"),
    # a half rounds away from zero, as a reader rounds, where Python's format rounds it to even
    (units.number(6.25, 1), "6.3"),
    (units.number(1234.5), "1,235"),
    (units.percent(0.125), "13 %"),
    (units.number(-2.5), "-3"),
    (units.ms_significant(0.028367), "28.4 ms"),
    (units.us_significant(0.0000912, 2), "91 µs"),
    (units.us_significant(5.53e-6, 2), "5.5 µs"),
    (units.us_significant(0.0009996), "1,000 µs"),
])
def test_units_print_as_the_prose_does(shown, expected):
    assert shown == expected and repr(shown) == expected


def test_round_to_significant_figures():
    assert units.round_to(750_909.6, 2) == 750_000
    assert units.round_to(160.2, 2) == 160
    assert units.round_to(0.0, 2) == 0


LATENT = [m for m in sm.MODELS.values() if m.latent_attention]


def test_the_catalog_holds_latent_attention_models_of_both_head_counts():
    assert {m.heads for m in LATENT} == {16, 128}


@pytest.mark.parametrize("model", LATENT, ids=[m.name for m in LATENT])
def test_latent_attention_is_counted_one_way_the_absorbed_form(model):
    """Every head scores against the cached latent and rotary key and sums the latents, in prefill
    and decode alike, and the cache's attention intensity is the same count over the same bytes."""
    absorbed = model.heads * (2 * (model.kv_lora_rank + model.rope_head_dim) + 2 * model.kv_lora_rank)
    per_head_widths = 2 * model.heads * model.head_dim + 2 * model.heads * model.value_head_dim
    assert passes.attention_flops_per_position(model) == absorbed != per_head_widths
    assert sm.attention_flops(model, 1, 999) == model.layers * absorbed * 1000
    assert sm.attention_flops(model, 1000, 0) == model.layers * absorbed * 1000 * 1001 / 2
    step = sm.forward_pass(model, 1, 999)
    assert step.attention_flops == sm.attention_flops(model, 1, 999)
    assert cache.decode_attention_intensity(model) == absorbed / ((model.kv_lora_rank + model.rope_head_dim) * 2)


def test_deepseek_v2_attention_a_position_and_layer():
    v2 = sm.MODELS["deepseek-v2"]
    assert passes.attention_flops_per_position(v2) == 278_528  # absorbed; per-head widths would give 81,920
    assert 2 * (v2.attention_width + v2.value_width) == 81_920


def test_sliding_window_layers_attend_to_at_most_their_window():
    assert passes.positions_attended(1, 10_000, window=4096) == 4096
    assert passes.positions_attended(3, 0, window=2) == 1 + 2 + 2
    assert passes.positions_attended(3, 0, attention="full", window=2) == 6
    gemma = sm.MODELS["gemma-2-2b"]  # 13 of 26 layers slide over 4,096 tokens; it reads up to 8,192
    per_position = 4 * gemma.attention_width
    assert sm.attention_flops(gemma, 1, 7999) == per_position * (13 * 8000 + 13 * 4096)
    with pytest.raises(sm.ContextTooLong, match="Gemma 2 2B's context window of 8,192 tokens, got 10,000"):
        sm.attention_flops(gemma, 1, 9999)
