"""Every family Model.from_hf_config reads, counted exactly and checked against what its publisher states.

The exact counts are also what transformers builds from the same configs on the meta
device (checked once outside this suite, which needs no torch); the publisher's totals
are checked at the precision the publisher prints them.
"""
import json
from dataclasses import replace

import numpy as np
import pytest

import servingmath as sm
from servingmath import models

B = 1e9

# key, exact parameters, (publisher's total, in billions, at the digits printed), where it is stated
TOTALS = [
    ("llama-2-7b", 6_738_415_616, 6.7, "Llama 2 model card: 7B (6.74B stored)"),
    ("llama-3-8b", 8_030_261_248, 8.03, "Meta Llama 3 8B Hugging Face page of the checkpoint, 8.03B params"),
    ("llama-3.1-405b", 405_853_388_800, 405.9, "Llama 3.1 405B Hugging Face page of the checkpoint, 406B params"),
    ("llama-3.2-1b", 1_235_814_400, 1.24, "Llama 3.2 Hugging Face page of the checkpoint, 1.24B params"),
    ("llama-3.2-3b", 3_212_749_824, 3.21, "Llama 3.2 model card: 3.21B"),
    ("llama-3.3-70b", 70_553_706_496, 70.6, "Llama 3.3 70B Hugging Face page of the checkpoint, 70.6B params"),
    ("mistral-7b-v0.3", 7_248_023_552, 7.25, "Mistral 7B v0.3 Hugging Face page of the checkpoint, 7.25B params"),
    ("mixtral-8x7b", 46_702_792_704, 46.7, "Mistral AI, Mixtral of experts: 46.7B total"),
    ("mixtral-8x22b", 140_630_071_296, 141, "Mistral AI, Cheaper, Better, Faster, Stronger: 141B total"),
    ("qwen2-7b", 7_615_616_512, 7.62, "Qwen2 7B Hugging Face page of the checkpoint, 7.62B params"),
    ("qwen2.5-0.5b", 494_032_768, 0.49, "Qwen2.5-0.5B model card: 0.49B"),
    ("qwen2.5-7b", 7_615_616_512, 7.61, "Qwen2.5-7B model card: 7.61B"),
    ("qwen2.5-72b", 72_706_203_648, 72.7, "Qwen2.5-72B model card: 72.7B"),
    ("qwen3-0.6b", 596_049_920, 0.6, "Qwen3-0.6B model card: 0.6B"),
    ("qwen3-8b", 8_190_735_360, 8.2, "Qwen3-8B model card: 8.2B"),
    ("qwen1.5-moe-a2.7b", 14_315_784_192, 14.3, "Qwen1.5-MoE-A2.7B blog: 14.3B total"),
    ("qwen2-57b-a14b", 57_408_658_944, 57, "Qwen2 technical report: 57B total"),
    ("qwen3-30b-a3b", 30_532_122_624, 30.5, "Qwen3-30B-A3B model card: 30.5B total"),
    ("qwen3-235b-a22b", 235_093_634_560, 235, "Qwen3-235B-A22B model card: 235B total"),
    ("gemma-2b", 2_506_172_416, 2.51, "Gemma 2B Hugging Face page of the checkpoint, 2.51B params"),
    ("gemma-7b", 8_537_680_896, 8.54, "Gemma 7B Hugging Face page of the checkpoint, 8.54B params"),
    ("gemma-2-2b", 2_614_341_888, 2.61, "Gemma 2 2B Hugging Face page of the checkpoint, 2.61B params"),
    ("gemma-2-9b", 9_241_705_984, 9.24, "Gemma 2 9B Hugging Face page of the checkpoint, 9.24B params"),
    ("gemma-2-27b", 27_227_128_320, 27.2, "Gemma 2 27B Hugging Face page of the checkpoint, 27.2B params"),
    ("gemma-3-1b", 999_885_952, 1.0, "Gemma 3 technical report, Table 1: 302M + 698M"),
    ("phi-3-mini", 3_821_079_552, 3.8, "Phi-3 technical report: phi-3-mini, 3.8B"),
    ("phi-3-medium", 13_960_238_080, 14, "Phi-3 technical report: phi-3-medium, 14B"),
    ("deepseek-v2-lite", 15_706_484_224, 15.7, "DeepSeek-V2-Lite model card: 15.7B total"),
    ("deepseek-v2", 235_741_434_880, 236, "DeepSeek-V2 report: 236B total"),
    ("deepseek-v3", 671_026_404_352, 671, "DeepSeek-V3 report: 671B total (685B with the MTP module)"),
]


def _as_printed(value, stated):
    """True when ``value`` reads as ``stated`` billions, rounded or cut at the digits printed
    (publishers do both: 7.6156B is "7.62B" on one card and "7.61B" on another)."""
    digits = len(repr(stated).split(".")[1]) if isinstance(stated, float) else 0
    return abs(value / B - stated) < 10.0 ** -digits


@pytest.mark.parametrize("key, exact, stated, source", TOTALS, ids=[row[0] for row in TOTALS])
def test_each_family_counts_exactly_and_as_its_publisher_states(key, exact, stated, source):
    model = sm.MODELS[key]
    assert model.parameters == exact
    assert _as_printed(exact, stated), source


# Reports that state the count without the embedding tables: checked exactly, table for table.
NON_EMBEDDING = [
    ("gemma-2b", 1_981_884_416),     # Gemma report (arXiv 2403.08295), Table 2
    ("gemma-7b", 7_751_248_896),
    ("gemma-2-2b", 2_024_517_888),   # Gemma 2 report (arXiv 2408.00118), Table 2
    ("gemma-2-9b", 8_324_201_984),
    ("gemma-2-27b", 26_047_480_320),
]


@pytest.mark.parametrize("key, stated", NON_EMBEDDING)
def test_gemma_reports_non_embedding_counts_exactly(key, stated):
    model = sm.MODELS[key]
    assert model.parameters - model.vocab * model.hidden == stated  # tied: one table


@pytest.mark.parametrize("key, stated_millions", [("gemma-3-1b", 698), ("gemma-3-4b", 3_209), ("gemma-3-27b", 25_600)])
def test_gemma_3_language_models_match_the_reports_non_embedding_millions(key, stated_millions):
    # Gemma 3 technical report (arXiv 2503.19786), Table 1; the 4B and 27B configs nest their text config
    model = sm.MODELS[key]
    assert round((model.parameters - model.vocab * model.hidden) / 1e6) == stated_millions


# Mixtures of experts: parameters a token computes with, as each publisher states them.
ACTIVE = [
    ("mixtral-8x7b", 12_879_925_248, 12.9, True),
    ("mixtral-8x22b", 39_161_468_928, 39, True),
    ("qwen1.5-moe-a2.7b", 2_689_173_504, 2.7, True),
    ("qwen2-57b-a14b", 14_249_270_784, 14, True),
    ("qwen3-30b-a3b", 3_353_032_704, 3.3, True),
    ("qwen3-235b-a22b", 22_190_763_520, 22, True),
    # DeepSeek counts the activated parameters without the input embedding (a lookup, no arithmetic)
    ("deepseek-v2-lite", 2_661_150_208, 2.4, False),
    ("deepseek-v2", 21_375_800_320, 21, False),
    ("deepseek-v3", 37_552_282_624, 37, False),
]


@pytest.mark.parametrize("key, exact, stated, with_input_embedding", ACTIVE, ids=[row[0] for row in ACTIVE])
def test_mixtures_of_experts_activate_what_their_publishers_state(key, exact, stated, with_input_embedding):
    model = sm.MODELS[key]
    assert model.active_parameters == exact
    counted = exact if with_input_embedding else exact - model.vocab * model.hidden
    assert _as_printed(counted, stated)


def test_qwen_moe_was_counted_at_the_dense_width_before():
    qwen = sm.MODELS["qwen1.5-moe-a2.7b"]
    assert (qwen.expert_ffn, qwen.shared_ffn, qwen.shared_expert_gate) == (1408, 5632, True)
    every_expert_at_dense_width = models.Model(**{**qwen.__dict__, "expert_ffn": 0})
    assert every_expert_at_dense_width.parameters / qwen.parameters > 3.5


# Bytes one token adds to the cache in 16 bits, and the cache of a 32,768-token context, or of a full
# window where the model reads fewer tokens than that.
CACHES = [
    ("llama-3-8b", 131_072, 8192 * 131_072),                                 # its window: 8,192 tokens
    ("llama-3.1-8b", 131_072, 32_768 * 131_072),
    ("llama-2-7b", 524_288, 4096 * 524_288),                                 # 32 layers × 32 KV heads × 128 × 4
    ("mixtral-8x7b", 131_072, 32_768 * 131_072),                             # experts share one attention
    ("qwen2.5-7b", 57_344, 32_768 * 57_344),                                 # 28 × 4 × 128 × 4
    ("qwen1.5-moe-a2.7b", 196_608, 8192 * 196_608),                          # 24 × 16 × 128 × 4
    ("gemma-2b", 18_432, 8192 * 18_432),                                     # 18 × 1 × 256 × 4
    ("gemma-7b", 458_752, 8192 * 458_752),                                   # 28 × 16 × 256 × 4
    ("deepseek-v2-lite", 31_104, 32_768 * 31_104),                           # (512 + 64) × 27 × 2
    ("mistral-7b", 131_072, 4096 * 131_072),                                  # every layer slides over 4,096
    ("mistral-7b-v0.3", 131_072, 32_768 * 131_072),                          # no window
    ("gemma-2-2b", 106_496, (13 * 8192 + 13 * 4096) * 4096),                 # 4 KV heads × 256 × K and V × 2 bytes
    ("gemma-3-1b", 26_624, (4 * 32_768 + 22 * 512) * 1024),                  # 1 KV head × 256 × K and V × 2 bytes
    ("gemma-3-27b", 507_904, (10 * 32_768 + 52 * 1024) * 8192),             # 16 × 128 × K and V × 2 bytes
    ("phi-3-mini", 393_216, 2047 * 393_216),
    ("qwen3-30b-a3b", 98_304, 32_768 * 98_304),
    ("deepseek-v2", 69_120, 32_768 * 69_120),      # (512 latent + 64 rotary) × 60 layers × 2 bytes
    ("deepseek-v3", 70_272, 32_768 * 70_272),      # (512 + 64) × 61 × 2
]


@pytest.mark.parametrize("key, per_token, at_32k", CACHES, ids=[row[0] for row in CACHES])
def test_each_family_caches_what_its_attention_keeps(key, per_token, at_32k):
    model = sm.MODELS[key]
    assert model.kv_bytes_per_token() == per_token
    assert sm.kv_cache_bytes(model, min(32_768, model.context_window)) == at_32k
    assert sm.kv_cache_bytes(model, 1) == per_token


def test_latent_attention_caches_far_less_than_heads_of_keys_and_values_would():
    v3 = sm.MODELS["deepseek-v3"]
    as_if_every_head_cached = 2 * v3.layers * v3.heads * v3.head_dim * 2
    assert as_if_every_head_cached / v3.kv_bytes_per_token() > 50


def test_a_config_without_tie_word_embeddings_takes_the_familys_default():
    gemma = sm.MODELS["gemma-2-2b"]
    assert "tie_word_embeddings" not in models.CONFIGS["gemma-2-2b"] and gemma.tied_embeddings
    llama_like = {key: value for key, value in models.CONFIGS["llama-3-8b"].items() if key != "tie_word_embeddings"}
    assert not sm.Model.from_hf_config(llama_like).tied_embeddings  # LlamaConfig unties by default
    untied = sm.Model.from_hf_config({**models.CONFIGS["gemma-2-2b"], "tie_word_embeddings": False})
    assert untied.parameters - gemma.parameters == 256_000 * 2304


def test_gemma_3_reads_its_text_config_nested_or_not():
    nested = models.CONFIGS["gemma-3-27b"]
    flat = {**nested["text_config"], "model_type": "gemma3_text", "_name_or_path": "Gemma 3 27B"}
    # The same language model; only the multimodal checkpoint carries the vision tower.
    assert sm.Model.from_hf_config(flat) == replace(sm.Model.from_hf_config(nested), vision_tower=False)
    assert sm.Model.from_hf_config(nested).vision_tower and not sm.Model.from_hf_config(flat).vision_tower
    four = sm.MODELS["gemma-3-4b"]  # its text config leaves heads, head size and vocabulary to the defaults
    assert (four.heads, four.kv_heads, four.head_dim, four.vocab) == (8, 4, 256, 262_208)


def test_qwen_moe_layers_follow_decoder_sparse_step_and_mlp_only_layers():
    base = models.CONFIGS["qwen1.5-moe-a2.7b"]
    every_other = sm.Model.from_hf_config({**base, "decoder_sparse_step": 2, "mlp_only_layers": [1, 5]})
    assert every_other.moe_layers == 10  # layers 1, 3, ..., 23 are sparse, less 1 and 5
    assert every_other.parameters == 7_047_403_520  # as transformers builds it
    dense_first = sm.Model.from_hf_config({**models.CONFIGS["qwen3-30b-a3b"], "mlp_only_layers": [0, 1, 2]})
    assert dense_first.dense_layers == 3 and dense_first.parameters == 28_832_643_072


def test_deepseek_keeps_its_first_layers_dense():
    v3 = sm.MODELS["deepseek-v3"]
    assert (v3.dense_layers, v3.moe_layers, v3.experts, v3.experts_per_token) == (3, 58, 256, 8)
    assert (v3.kv_lora_rank, v3.q_lora_rank, v3.rope_head_dim, v3.head_dim, v3.v_head_dim) == (512, 1536, 64, 192, 128)
    lite = sm.MODELS["deepseek-v2-lite"]
    assert lite.q_lora_rank == 0 and lite.dense_layers == 1


def test_qwen2_slides_only_above_max_window_layers_when_told_to():
    base = models.CONFIGS["qwen2.5-7b"]
    assert sm.MODELS["qwen2.5-7b"].sliding_layers == 0
    sliding = sm.Model.from_hf_config({**base, "use_sliding_window": True, "sliding_window": 4096,
                                       "max_window_layers": 20})
    assert (sliding.sliding_layers, sliding.sliding_window) == (8, 4096)


@pytest.mark.parametrize("model_type, parameters", [
    ("llama", 6_738_415_616), ("mistral", 7_241_732_096), ("mixtral", 46_702_792_704),
    ("qwen2", 12_049_846_272), ("qwen3", 12_049_461_248), ("qwen2_moe", 14_315_784_192),
    ("qwen3_moe", 15_350_731_776), ("gemma", 8_537_680_896), ("gemma2", 2_614_341_888),
    ("gemma3_text", 2_628_658_432), ("phi3", 3_821_079_552), ("deepseek_v3", 671_026_404_352),
])
def test_a_config_of_defaults_alone_counts_as_transformers_default_model(model_type, parameters):
    assert sm.Model.from_hf_config({"model_type": model_type}).parameters == parameters


def test_unknown_families_are_refused_by_name_with_the_supported_list():
    with pytest.raises(ValueError) as raised:
        sm.Model.from_hf_config({"model_type": "falcon", "hidden_size": 4544})
    message = str(raised.value)
    assert "'falcon'" in message and all(family in message for family in sm.FAMILIES)
    with pytest.raises(ValueError, match="num_experts_per_tok"):
        sm.Model.from_hf_config({"model_type": "deepseek_v2"})


def test_from_a_config_json_on_disk(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(models.CONFIGS["deepseek-v3"]))
    assert sm.Model.from_hf_config(path) == sm.MODELS["deepseek-v3"]
    assert sm.Model.from_hf_config(path, name="V3").name == "V3"


def test_mixture_decode_reads_about_26_gb_for_one_user_and_compute_counts_the_active_experts():
    mixtral = sm.MODELS["mixtral-8x7b"]
    step = sm.decode_step(mixtral, sm.H100_SXM)
    assert round(step.cost.weight_bytes / 1e9, 1) == 25.8  # not the 93.4 GB of every expert
    assert step.cost.linear_flops == 2 * mixtral.active_parameters
    users = np.array([1, 2, 8, 64, 1024])
    read = sm.decode_step(mixtral, sm.H100_SXM, batch=users).cost.weight_bytes
    assert np.all(np.diff(read) > 0) and read[-1] == pytest.approx(2 * mixtral.parameters)


# -- configs the count refuses, each naming the config key and the value it got ---------------------
_L, _Q, _D, _G = (dict(models.CONFIGS[k]) for k in ("llama-3.1-8b", "qwen2-57b-a14b", "deepseek-v2-lite", "gemma-3-1b"))


@pytest.mark.parametrize("config, key, shown", [
    ({**_L, "tie_word_embeddings": "false"}, "tie_word_embeddings", "'false'"),      # a string, not a boolean
    ({**_L, "attention_bias": 0}, "attention_bias", "0"),
    ({**_Q, "use_sliding_window": "no"}, "use_sliding_window", "'no'"),
    ({**_Q, "moe_intermediate_size": 0}, "moe_intermediate_size", "0"),              # 0 is not "the default"
    ({**_D, "v_head_dim": 0}, "v_head_dim", "0"),
    ({**_D, "q_lora_rank": 0}, "q_lora_rank", "0"),
    ({**_G, "layer_types": 5}, "layer_types", "5"),                                  # not a list
    ({**_G, "layer_types": ["sliding_attention"] * 3}, "layer_types", "sliding_attention"),  # not one a layer
    ({**_G, "layer_types": ["sliding"] * 26}, "layer_types", "'sliding'"),            # not a kind of layer
    ({**_Q, "num_experts": -3}, "num_experts", "-3"),
    ({**_Q, "decoder_sparse_step": -1}, "decoder_sparse_step", "-1"),
    ({**_Q, "decoder_sparse_step": 0}, "decoder_sparse_step", "0"),
    ({**_Q, "mlp_only_layers": 3}, "mlp_only_layers", "3"),
    ({**_L, "hidden_size": 4097}, "hidden_size", "4097"),                            # the heads don't divide it
    ({**_L, "num_key_value_heads": 5}, "num_key_value_heads", "5"),                  # told in config keys
    ({**dict(models.CONFIGS["mixtral-8x7b"]), "num_experts_per_tok": 9}, "num_experts_per_tok", "9"),
    ({**_G, "sliding_window_pattern": 0}, "sliding_window_pattern", "0"),
    ({**_L, "max_position_embeddings": 0}, "max_position_embeddings", "0"),
])
def test_a_config_that_describes_no_model_is_refused_by_its_key_and_value(config, key, shown):
    with pytest.raises(ValueError) as refused:
        sm.Model.from_hf_config(config)
    message = str(refused.value)
    assert f"config[{key!r}]" in message and shown in message, message
    for field in ("kv_heads", "experts_per_token", "expert_ffn"):
        assert not message.split(": ", 1)[1].startswith(field), message


def test_the_two_gemma_3_forms_transformers_reads_are_read():
    # A multimodal config with no text_config: every key takes Gemma3TextConfig's default.
    bare = sm.Model.from_hf_config({"model_type": "gemma3"})
    defaults = sm.Model.from_hf_config({"model_type": "gemma3_text"}, name=bare.name)
    assert bare == replace(defaults, vision_tower=True) and bare.context_window == 131_072
    # A text_config without its own model_type is the same as one with it.
    nested = dict(models.CONFIGS["gemma-3-4b"])
    untyped = {**nested, "text_config": {k: v for k, v in nested["text_config"].items() if k != "model_type"}}
    assert sm.Model.from_hf_config(untyped) == sm.Model.from_hf_config(nested)


def test_a_config_file_that_is_not_utf_8_is_refused_by_name(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(b'{"model_type": "llama", "note": "\xff"}')
    with pytest.raises(ValueError, match="not UTF-8"):
        sm.Model.from_hf_config(path)
    with pytest.raises(ValueError, match="not UTF-8"):
        sm.Model.from_hf_config(tmp_path)


def test_every_catalog_config_gives_its_context_window():
    for key, config in models.CONFIGS.items():
        model = sm.MODELS[key]
        given = config.get("max_position_embeddings", (config.get("text_config") or {}).get("max_position_embeddings"))
        assert model.context_window == (given or 131_072), key  # Gemma 3's multimodal configs leave it to the default
    assert (sm.LLAMA_3_8B.context_window, sm.MODELS["llama-3.1-8b"].context_window) == (8192, 131_072)
    assert sm.MODELS["llama-2-7b"].context_window == sm.MODELS["phi-3-mini"].context_window == 4096
    assert sm.MODELS["llama-3.1-8b"].parameters == sm.LLAMA_3_8B.parameters
