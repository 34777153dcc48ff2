"""Plate XXIII.2, The KV Cache: its three models, the figures it pins, its workshop explorer and
website chart."""
import numpy as np
import pytest

import servingmath as sm
from servingmath import cache, units
from servingmath.memory import RESERVE, fit, kv_cache_bytes, max_batch, weight_bytes

G = sm.H100_SXM
MODELS = [sm.MODELS[key] for key in cache.WORKSHOP_MODELS]


def test_one_model_for_each_design_of_attention():
    gqa, mha, mla = MODELS
    assert [m.name for m in MODELS] == ["Llama 3 8B", "Llama 2 7B", "DeepSeek-V2-Lite"]
    assert 1 < gqa.kv_heads < gqa.heads and mha.kv_heads == mha.heads and mla.latent_attention
    assert [units.kib(kv_cache_bytes(m, 1), 1) for m in MODELS] == ["128.0 KiB", "512.0 KiB", "30.4 KiB"]
    assert kv_cache_bytes(mla, 1) == 27 * (512 + 64) * 2


def test_the_pinned_users_that_fit():
    # 1,000 and 4,000 tokens: inside every one of the three windows (Llama 2 7B reads 4,096).
    assert min(m.context_window for m in MODELS) == 4096
    assert [[max_batch(m, G, t) for t in (1000, 4000)] for m in MODELS] == [
        [500, 125], [129, 32], [1613, 403]]
    assert units.gb(fit(MODELS[0], G).usable_bytes) == "81.60 GB" and RESERVE == 0.05


def test_where_the_caches_outweigh_the_weights_at_4000_tokens():
    crossings = [cache.cache_matches_weights_batch(m, 4000) for m in MODELS]
    assert [units.number(c) for c in crossings] == ["31", "6", "252"]
    for m, crossing in zip(MODELS, crossings):
        assert crossing == pytest.approx(weight_bytes(m.parameters) / kv_cache_bytes(m, 4000))
        # A full GPU always holds more cache than weights for these models.
        assert max_batch(m, G, 4000) > crossing


def test_the_lines_fall_a_decade_a_decade():
    for m in MODELS:
        users = np.asarray(max_batch(m, G, np.array([400, 4000])), dtype=float)
        assert abs(users[1] - users[0] / 10) <= 1  # a tenth of the users, but for rounding down to whole ones




def test_on_every_80_gb_gpu_a_full_batch_of_each_workshop_model_spends_more_on_caches_than_weights():
    """The plate: "on an 80 GB GPU, a full batch of any of these models spends most of its memory on caches,
    not weights", at every length the chart draws and every bits the explorer offers."""
    from servingmath.cache import WORKSHOP_MODELS
    eighty = [g for g in sm.CATALOG.values() if 78e9 < g.memory_bytes < 90e9]
    assert eighty
    for gpu in eighty:
        for model in (sm.MODELS[key] for key in WORKSHOP_MODELS):
            for tokens in (256, 1000, 2048, 4096):
                for wb in (16, 8, 4):
                    for kb in (16, 8, 4):
                        users = max_batch(model, gpu, tokens, wb, kb)
                        assert users * kv_cache_bytes(model, tokens, 1, kb) > weight_bytes(model.parameters, wb), (
                            gpu.name, model.name, tokens, wb, kb)


def test_the_plate_counts_token_by_token_and_says_what_blocks_would_give():
    """The assumptions: a paged cache counted token by token; vLLM's 16-token blocks round each user's cache up to
    63 blocks (1,008 tokens) at 1,000 tokens, so 496 Llama 3 8B users fit where the plate counts 500."""
    from servingmath.memory import BLOCK_TOKENS, max_batch_sharing_prefix

    assert BLOCK_TOKENS == 16 and max_batch(sm.LLAMA_3_8B, G, 1000) == 500
    assert max_batch_sharing_prefix(sm.LLAMA_3_8B, G, 1000, 0) == 496 == max_batch(sm.LLAMA_3_8B, G, 1008)
