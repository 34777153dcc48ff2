"""vLLM's start-up budget (``memory.vllm_budget``, ``memory.vllm_cache_tokens``) against published logs.

Logs matched, each within 5 % of the cache tokens it reports (the figures read from each are pinned below,
in ``servingmath.cache``):

- kubernetes-sigs/gateway-api-inference-extension pull request 550 (2025-03-21, V0 engine), Llama 2 7B on an
  H100 80GB at gpu_memory_utilization 0.90: 7,191 blocks, 115,056 tokens. The V0 engine profiles a pass of
  max(max_model_len, 2,048) = 4,096 tokens for a 4,096-token model; the function gives 7,435 blocks, 3.4 % more.
  Its activation peak (2.38 GiB) is well above the course's model of it (0.47 GiB): that deployment ran with
  LoRA adapters enabled (--enable-lora), whose buffers the profiling pass also counts.
- vllm-project/vllm pull request 10511 (2024-12-13, V0 engine), Llama 3 8B on an H100 80GB at 0.90 and 8,192
  batched tokens: 53.29 GiB of cache, 27,284 blocks, 436,544 tokens; the function gives 449,568, 3.0 % more.
  Its activation peak, 1.26 GiB, against the model's 1.27 GiB. Its non-torch memory (1.79 GiB) is above the
  0.16 GiB the function takes from pull request 12126 and the log of pull request 550.

Logs found but not matched:

- vllm-project/vllm issue 19996 (2025-06-23, V1 engine, 0.9.1), Llama 3.1 8B on an H100 80GB: 51.63 GiB,
  410,128 tokens. It served with EAGLE speculative decoding: the draft model's weights and its cache layer
  (410,128 is 33/32 of the tokens 51.63 GiB holds for 32 layers) take part of the share, which the function
  does not count; it gives 449,568 tokens, 9.6 % more.
- vllm-project/vllm pull request 12126 (2025-01-16), Llama 3.2 11B Vision: an activation peak of 36.63 GiB from
  its image encoder's profiling pass; a multimodal model is outside the catalog and this model.
- vllm-project/vllm pull request 2031 (2023-12-12), Llama 2 7B on an A100-80GB: 7,351 blocks. The catalog has
  no published figure for the memory CUDA reports on an A100 80 GB, so the function refuses that card.
- vllm-project/vllm pull request 17122 (2025-04-24, V1 engine), Llama 3.1 8B on an L40S at max_model_len 32,768:
  158,656 tokens. Not an 80 GB-class card, and no published figure for what CUDA reports on an L40S.

Both matches count about 3 % more tokens than vLLM did: the function's working memory (1.43 GiB for Llama 3 8B,
0.63 GiB for Llama 2 7B at 4,096 tokens) is less than the logs measured (3.05 and 2.54 GiB), one with more
non-torch memory than later versions report, the other with LoRA buffers.
"""
import math
import re

import numpy as np
import pytest

import servingmath as sm
from servingmath import cache
from servingmath.hardware import CATALOG, GiB
from servingmath.memory import (
    DoesNotFit,
    VLLM_NON_TORCH_BYTES,
    fit,
    vllm_activation_bytes,
    vllm_budget,
    vllm_cache_tokens,
    vllm_weight_bytes,
    weight_bytes,
)
from servingmath.models import ContextTooLong

H100 = sm.H100_SXM
LLAMA_3_8B = sm.LLAMA_3_8B
LLAMA_2_7B = sm.MODELS["llama-2-7b"]
TOLERANCE = 0.05


# -- the logs, as read -----------------------------------------------------------------------
def test_the_logs_as_read_add_up():
    for log in (cache.VLLM_LOG_LLAMA_2_7B, cache.VLLM_LOG_LLAMA_3_8B):
        share = log["total_gib"] * log["gpu_memory_utilization"]
        taken = log["weights_gib"] + log["non_torch_gib"] + log["activation_peak_gib"] + log["kv_cache_gib"]
        assert abs(share - taken) < 0.02, log["source"]
    assert cache.VLLM_LOG_LLAMA_2_7B["source"] == "https://github.com/kubernetes-sigs/gateway-api-inference-extension/pull/550"
    assert cache.VLLM_LOG_LLAMA_3_8B["source"] == "https://github.com/vllm-project/vllm/pull/10511"
    assert cache.vllm_log_tokens(cache.VLLM_LOG_LLAMA_2_7B) == 7191 * 16 == 115_056
    # Pull request 10511 prints no block count: 53.29 GiB in blocks of 16 tokens of 131,072 bytes.
    assert cache.vllm_log_tokens(cache.VLLM_LOG_LLAMA_3_8B) == math.floor(53.29 * GiB / (16 * 131_072)) * 16
    assert cache.vllm_log_tokens(cache.VLLM_LOG_LLAMA_3_8B) == 27_284 * 16 == 436_544


def test_the_weights_match_what_the_logs_say_they_take():
    for log in (cache.VLLM_LOG_LLAMA_2_7B, cache.VLLM_LOG_LLAMA_3_8B):
        model = sm.MODELS[log["model"]]
        assert round(vllm_weight_bytes(model) / GiB, 2) == log["weights_gib"]


def test_the_h100s_cuda_figure_is_the_one_the_logs_print():
    assert H100.cuda_reported_bytes == cache.VLLM_LOG_LLAMA_2_7B["total_gib"] * GiB
    assert abs(H100.cuda_reported_bytes / GiB - cache.VLLM_LOG_LLAMA_3_8B["total_gib"]) < 0.05
    assert "gateway-api-inference-extension/pull/550" in H100.cuda_reported_source
    # CUDA reports less than the 80 GiB the spec sheet lists: about 79.2 GiB.
    assert round(H100.cuda_reported_bytes / GiB, 1) == 79.2 < H100.memory_bytes / GiB


# -- the matches ---------------------------------------------------------------------------
def test_llama_2_7b_matches_the_gateway_log_within_5_percent():
    log = cache.VLLM_LOG_LLAMA_2_7B
    # V0 profiles max(max_model_len, 2,048) tokens when chunked prefill is off: 4,096 for Llama 2 7B.
    assert log["max_num_batched_tokens"] == max(LLAMA_2_7B.context_window, 2048) == 4096
    budget = vllm_budget(LLAMA_2_7B, H100, log["gpu_memory_utilization"], max_num_batched_tokens=4096)
    error = cache.vllm_log_error(log, H100)
    assert error == budget.tokens / cache.vllm_log_tokens(log) - 1
    assert abs(error) < TOLERANCE
    assert (budget.blocks, round(100 * error, 1)) == (7435, 3.4)


def test_llama_3_8b_matches_the_profiler_log_within_5_percent():
    log = cache.VLLM_LOG_LLAMA_3_8B
    budget = vllm_budget(LLAMA_3_8B, H100, log["gpu_memory_utilization"], log["max_num_batched_tokens"])
    error = cache.vllm_log_error(log, H100)
    assert error == budget.tokens / cache.vllm_log_tokens(log) - 1
    assert abs(error) < TOLERANCE
    assert (budget.tokens, round(100 * error, 1)) == (449_568, 3.0)
    # The activation model against the peak this log measured (no LoRA, no speculative decoding here).
    assert abs(budget.activation_bytes / GiB / log["activation_peak_gib"] - 1) < TOLERANCE


def test_cache_tokens_is_the_budgets_tokens():
    assert vllm_cache_tokens(LLAMA_3_8B, H100) == vllm_budget(LLAMA_3_8B, H100).tokens == 449_568
    budget = vllm_budget(LLAMA_3_8B, H100)
    assert budget.tokens == budget.blocks * 16 and budget.blocks == 28_098
    assert budget.cache_bytes < 16 * LLAMA_3_8B.kv_bytes_per_token() * (budget.blocks + 1)
    assert budget.max_concurrency == budget.tokens / LLAMA_3_8B.context_window


# -- how it counts -------------------------------------------------------------------------
def test_the_share_is_the_utilization_of_what_cuda_reports():
    budget = vllm_budget(LLAMA_3_8B, H100, 0.8)
    assert budget.share_bytes == 0.8 * H100.cuda_reported_bytes
    assert budget.cache_bytes == pytest.approx(budget.share_bytes - budget.weight_bytes - budget.activation_bytes
                                               - VLLM_NON_TORCH_BYTES)


def test_eight_bit_checkpoints_keep_the_embeddings_and_head_in_16_bits():
    tables = 2 * LLAMA_3_8B.vocab * LLAMA_3_8B.hidden            # untied: embedding table and output head
    assert vllm_weight_bytes(LLAMA_3_8B, 8) == (LLAMA_3_8B.parameters - tables) + 2 * tables
    assert vllm_weight_bytes(LLAMA_3_8B, 8) > weight_bytes(LLAMA_3_8B.parameters, 8)
    tied = sm.MODELS["llama-3.2-1b"]
    assert tied.tied_embeddings
    table = tied.vocab * tied.hidden                             # one table, used twice
    assert vllm_weight_bytes(tied, 4) == (tied.parameters - table) / 2 + 2 * table
    assert vllm_weight_bytes(LLAMA_3_8B, 16) == weight_bytes(LLAMA_3_8B.parameters, 16)
    assert vllm_cache_tokens(LLAMA_3_8B, H100, weight_bits=8) > vllm_cache_tokens(LLAMA_3_8B, H100)


def test_the_activation_model_as_its_docstring_states_it():
    tokens, seqs = 8192, 256
    expected = tokens * (3 * LLAMA_3_8B.ffn + 4 * LLAMA_3_8B.hidden) * 2 + seqs * LLAMA_3_8B.vocab * 4 * 3
    assert vllm_activation_bytes(LLAMA_3_8B, tokens, seqs) == expected
    assert round(expected / GiB, 2) == 1.27


def test_more_share_more_cache_and_a_bigger_profile_pass_less():
    shares = [vllm_cache_tokens(LLAMA_3_8B, H100, u) for u in (0.5, 0.7, 0.9, 0.95, 1.0)]
    assert shares == sorted(shares) and len(set(shares)) == len(shares)
    passes = [vllm_cache_tokens(LLAMA_3_8B, H100, max_num_batched_tokens=t) for t in (512, 2048, 8192, 32768)]
    assert passes == sorted(passes, reverse=True) and len(set(passes)) == len(passes)
    assert vllm_cache_tokens(LLAMA_3_8B, H100, kv_bits=8) > 1.9 * vllm_cache_tokens(LLAMA_3_8B, H100)


def test_vllm_holds_fewer_tokens_than_the_lessons_reserve_for_every_model_that_fits():
    # The lesson holds back 5 % of the spec sheet's memory; vLLM keeps 10 % of a smaller figure and
    # takes its working memory out of the rest: fewer tokens for every catalog model it can count.
    counted = 0
    for model in sm.MODELS.values():
        budget_lesson = fit(model, H100)
        if model.sliding_layers or not budget_lesson.fits:
            continue
        try:
            tokens = vllm_cache_tokens(model, H100, max_model_len=min(model.context_window, 4096))
        except DoesNotFit:
            continue
        lesson = (budget_lesson.usable_bytes - budget_lesson.weight_bytes) / model.kv_bytes_per_token()
        assert tokens < lesson, model.name
        counted += 1
    assert counted >= 10


# -- what it refuses ---------------------------------------------------------------------
@pytest.mark.parametrize("utilization", [0, -0.1, 1.01, 2, float("nan")])
def test_utilization_outside_zero_to_one_is_refused_by_name(utilization):
    with pytest.raises(ValueError, match=rf"^gpu_memory_utilization must .*, got {re.escape(repr(utilization))}$"):
        vllm_cache_tokens(LLAMA_3_8B, H100, utilization)


@pytest.mark.parametrize("tokens", [0, -8192])
def test_a_profile_pass_of_no_tokens_is_refused_by_name(tokens):
    with pytest.raises(ValueError, match=rf"max_num_batched_tokens.*{tokens}"):
        vllm_cache_tokens(LLAMA_3_8B, H100, max_num_batched_tokens=tokens)


def test_non_numbers_and_arrays_are_refused():
    with pytest.raises(TypeError, match="gpu_memory_utilization"):
        vllm_cache_tokens(LLAMA_3_8B, H100, "0.9")
    with pytest.raises(TypeError, match="gpu_memory_utilization"):
        vllm_cache_tokens(LLAMA_3_8B, H100, np.array([0.8, 0.9]))
    with pytest.raises(TypeError, match="model"):
        vllm_cache_tokens("llama-3-8b", H100)


def test_a_max_model_len_past_the_window_is_refused():
    with pytest.raises(ContextTooLong, match=r"max_model_len.*8,192.*9000|max_model_len.*9,000"):
        vllm_budget(LLAMA_3_8B, H100, max_model_len=9000)
    with pytest.raises(ValueError, match="max_model_len"):
        vllm_budget(LLAMA_3_8B, H100, max_model_len=0)


def test_every_catalog_gpu_has_a_sourced_cuda_figure_or_is_refused_by_name():
    sourced = 0
    for gpu in CATALOG.values():
        if gpu.cuda_reported_bytes is None:
            with pytest.raises(ValueError, match=re.escape(gpu.name) + ".*CUDA reports"):
                vllm_cache_tokens(sm.MODELS["qwen2.5-0.5b"], gpu)
        else:
            sourced += 1
            assert gpu.cuda_reported_bytes < gpu.memory_bytes and "https://" in gpu.cuda_reported_source
            assert vllm_cache_tokens(LLAMA_3_8B, gpu) > 0
    assert sourced >= 1


def test_a_card_of_another_size_forgets_the_cuda_figure():
    assert H100.with_changes(memory_bytes=80e9).cuda_reported_bytes is None
    assert H100.with_changes(price_per_hour=2.0).cuda_reported_bytes == H100.cuda_reported_bytes
    with pytest.raises(ValueError, match="cuda_reported_bytes"):
        H100.with_changes(cuda_reported_bytes=81 * GiB)


def test_what_vllm_would_refuse_to_start_is_refused():
    with pytest.raises(DoesNotFit, match="no cache"):
        vllm_budget(sm.MODELS["llama-3-70b"], H100)
    long_model = sm.MODELS["llama-3.1-8b"]
    with pytest.raises(DoesNotFit, match=r"max_model_len \(131,072\)"):
        vllm_budget(long_model, H100, 0.3)
    assert vllm_budget(long_model, H100, 0.3, max_model_len=8192).tokens > 8192


def test_sliding_window_models_are_refused_by_name():
    gemma = sm.MODELS["gemma-2-9b"]
    with pytest.raises(ValueError, match=r"Gemma 2 9B.*sliding-window"):
        vllm_budget(gemma, H100)


# -- which vLLM it counts ------------------------------------------------------------------
def test_the_count_follows_the_engine_whose_logs_it_matches():
    # Both matched logs come from the V0 engine (vLLM 0.6 to 0.8): "worker.py" profiling lines and, in the
    # gateway's, "# cuda blocks"; its LoRA flag kept vLLM 0.8 off the V1 engine (gateway pull request 573).
    assert {cache.VLLM_LOG_LLAMA_2_7B["engine"], cache.VLLM_LOG_LLAMA_3_8B["engine"]} == {"V0"}
    assert sm.memory.VLLM_MODELLED_VERSIONS == "0.6 to 0.8"
    assert "0.6 to 0.8" in vllm_budget.__doc__.replace("\n    ", " ")


def test_later_versions_on_an_h100_keep_fewer_tokens():
    # V1 on cards of 70 GiB and more (not the A100) samples for up to 1,024 requests in its profiling pass.
    v1 = vllm_budget(LLAMA_3_8B, H100, max_num_seqs=sm.memory.VLLM_V1_MAX_NUM_SEQS_LARGE_CARDS)
    v0 = vllm_budget(LLAMA_3_8B, H100)
    assert sm.memory.VLLM_V1_MAX_NUM_SEQS_LARGE_CARDS == 1024
    extra = v1.activation_bytes - v0.activation_bytes
    assert extra == (1024 - 256) * LLAMA_3_8B.vocab * 4 * 3
    assert v1.tokens < v0.tokens and v0.tokens - v1.tokens == pytest.approx(extra / LLAMA_3_8B.kv_bytes_per_token(), abs=16)
    assert sm.memory.VLLM_CUDA_GRAPH_ESTIMATE_SINCE == "0.21.0"
