"""Lesson 2, parts 1 and 2: what the cache saves a decode step, and how big it grows. The figures
the pages publish, the package functions behind them, and the two parts' explorers and charts."""
from dataclasses import replace

import numpy as np
import pytest

import servingmath as sm
from servingmath import cache, units, webcharts, widgets
from servingmath.memory import kv_cache_bytes, weight_bytes

M, G = sm.LLAMA_3_8B, sm.H100_SXM


# -- part 1: the step with the cache and without it -------------------------------------
def test_example_1_1_after_3000_tokens():
    saving = cache.decode_with_and_without_cache(M, 3000)
    assert units.trillions(saving.without_cache.flops) == "50.6 T"
    assert units.billions(saving.with_cache.flops, 1) == "17.6 billion"
    assert units.number(units.round_to(saving.flops_saved, 2)) == "2,900"
    timed = cache.time_with_and_without_cache(M, G, 3000)
    assert units.ms(timed.without_cache.time, 0) == "51 ms" and timed.without_cache.compute_bound
    assert units.ms(timed.with_cache.time) == "4.91 ms" and not timed.with_cache.compute_bound
    assert units.number(timed.slower_without) == "10"


def test_part_1_your_turn_after_1000_tokens():
    assert units.number(units.round_to(cache.decode_with_and_without_cache(M, 1000).flops_saved, 2)) == "990"


def test_without_the_cache_a_step_is_a_prefill_of_the_whole_sequence():
    saving = cache.decode_with_and_without_cache(M, 2999)
    whole = sm.forward_pass(M, 3000, attention="causal", kv_cache=False)
    assert saving.without_cache.flops == whole.flops
    # With the cache: one token's linear work, and attention over every position.
    assert saving.with_cache.linear_flops == 2 * M.parameters
    assert saving.with_cache.attention_flops == 4 * M.layers * M.attention_width * 3000


def test_the_saving_grows_with_the_conversation_and_is_near_the_tokens():
    tokens = np.array([0, 10, 100, 1000, 8000])
    saved = cache.decode_with_and_without_cache(M, tokens).flops_saved
    assert saved[0] == pytest.approx(1) and np.all(np.diff(saved) > 0)
    assert np.all(saved <= tokens + 1)


@pytest.mark.parametrize("call, argument", [
    (lambda: cache.decode_with_and_without_cache(M, -1), "context_tokens"),
    (lambda: cache.decode_with_and_without_cache("llama", 10), "model"),
    (lambda: cache.time_with_and_without_cache(M, "h100", 10), "gpu"),
    (lambda: cache.cache_matches_weights_batch(M, 0), "context_tokens"),
    (lambda: cache.cached_decode(M, G, 4, 100, assumptions=sm.LESSON), "assumptions"),
    (lambda: cache.cached_decode(M, G, 0, 100), "users"),
    (lambda: cache.cached_decode(M, G, 4, "long"), "context_tokens"),
    (lambda: cache.cheapest_cost_per_million(M, "h100-sxm", 100), "gpu"),
    (lambda: cache.cheapest_cost_per_million(M, sm.CATALOG["laptop"], 100), "price_per_hour"),
    (lambda: cache.longest_compute_bound_context(M, "h100-sxm"), "gpu"),
    (lambda: cache.longest_compute_bound_context("llama", G), "model"),
])
def test_bad_input_names_the_argument(call, argument):
    with pytest.raises((ValueError, TypeError), match=argument):
        call()


# -- part 2: the size of the cache ------------------------------------------------------
def test_llama_3_8b_leaves_128_kib_a_token():
    assert kv_cache_bytes(M, 1) == 2 * 32 * 8 * 128 * 2 == 131_072
    assert units.kib(kv_cache_bytes(M, 1)) == "128 KiB"


def test_grouped_query_saved_four_times_and_multi_query_would_save_eight_more():
    mha, mqa = replace(M, kv_heads=M.heads), replace(M, kv_heads=1)
    assert units.kib(kv_cache_bytes(mha, 1)) == "512 KiB"
    assert units.times(kv_cache_bytes(mha, 1) / kv_cache_bytes(M, 1)) == "4×"
    assert units.times(kv_cache_bytes(M, 1) / kv_cache_bytes(mqa, 1)) == "8×"


def test_deepseek_v2s_latent_cache_is_smaller_than_llama_3_8bs():
    deepseek = sm.MODELS["deepseek-v2"]
    assert (deepseek.layers, deepseek.kv_lora_rank, deepseek.rope_head_dim) == (60, 512, 64)
    assert kv_cache_bytes(deepseek, 1) == 60 * (512 + 64) * 2
    assert units.kib(kv_cache_bytes(deepseek, 1), 1) == "67.5 KiB"
    assert units.billions(deepseek.parameters, 0) == "236 billion"


def test_one_8000_token_conversation_against_the_weights():
    cache_bytes, weights = kv_cache_bytes(M, 8000), weight_bytes(M.parameters)
    assert units.gb(cache_bytes) == "1.05 GB" and units.gb(weights) == "16.06 GB"
    assert units.percent(cache_bytes / weights, 1) == "6.5 %"
    assert units.number(units.round_to(weights / kv_cache_bytes(M, 1), 3)) == "123,000"


def test_part_2_your_turn_qwen2_7b():
    qwen = sm.MODELS["qwen2-7b"]
    assert kv_cache_bytes(qwen, 1) == 57_344 and units.kib(kv_cache_bytes(qwen, 1)) == "56 KiB"


def test_kib_formats_binary_kilobytes_and_refuses_bad_input():
    assert units.kib(1024) == "1 KiB" and units.kib(69_120, 1) == "67.5 KiB"
    with pytest.raises(ValueError, match="value"):
        units.kib(-1)
    with pytest.raises(TypeError, match="value"):
        units.kib("128")


# -- the explorers, driven headless -----------------------------------------------------
def test_cache_saving_explorer_shows_example_1_1_then_follows_its_controls():
    explorer = widgets.cache_saving_explorer()
    assert explorer.readouts["FLOPs with the cache"] == "17.6 billion"
    assert explorer.readouts["the step with the cache"] == "4.91 ms, memory-bound"
    draws = explorer.draws
    explorer.set(context_tokens=1000)
    assert explorer.readouts["times fewer with the cache"] == units.number(
        cache.decode_with_and_without_cache(M, 1000).flops_saved)
    assert explorer.draws == draws + 1 and "<svg" in explorer.svg
    explorer.set(gpu="l4")
    timed = cache.time_with_and_without_cache(M, sm.CATALOG["l4"], 1000)
    assert explorer.readouts["the step without the cache"].startswith(units.ms(timed.without_cache.time))


def test_cache_size_explorer_follows_the_model_and_the_bits():
    explorer = widgets.cache_size_explorer()
    assert explorer.readouts["cache of the conversation"] == "1.05 GB"
    assert explorer.readouts["the cache, as a share of the weights"] == "6.5 %"
    explorer.set(model="deepseek-v2-lite", kv_bits=8)
    lite = sm.MODELS["deepseek-v2-lite"]
    assert explorer.readouts["cache a token"].startswith(units.number(kv_cache_bytes(lite, 1, kv_bits=8)))
    assert explorer.figure is not None


# -- the website charts: the package at every setting ----------------------------------
def test_cache_saving_chart_matches_the_package():
    chart = webcharts.cache_saving_chart()
    assert chart.readouts_at()["FLOPs without the cache"] == "50.56 T"
    for tokens, gpu in [(1000, "h100-sxm"), (8191, "l4"), (1, "b200")]:
        saving = cache.decode_with_and_without_cache(M, tokens)
        assert chart.readouts_at(tokens=tokens, gpu=gpu)["times fewer with the cache"] == units.number(
            saving.flops_saved)


def test_cache_size_chart_shows_the_three_designs():
    chart = webcharts.cache_size_chart()
    shown = chart.readouts_at()
    assert shown["multi-head, 32 KV heads"] == "4.19 GB"
    assert shown["grouped-query, as published, 8 KV heads"] == "1.05 GB"
    assert shown["multi-query, 1 KV head"] == "0.13 GB"
    assert chart.readouts_at(kv_bits=8)["grouped-query, as published, 8 KV heads"] == units.gb(
        kv_cache_bytes(M, 8000, kv_bits=8))
