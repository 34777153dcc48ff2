"""Lesson 2, parts 3 and 4: how many users fit, and what reading their caches does to decode and
its price. The published figures, the package functions behind them, the explorers and charts."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import servingmath as sm
from servingmath import cache, units, webcharts, widgets
from servingmath.memory import RESERVE, fit, kv_cache_bytes, max_batch

M, G = sm.LLAMA_3_8B, sm.H100_SXM
LONG = sm.MODELS["llama-3.1-8b"]  # Llama 3 8B's shape, reading up to 131,072 tokens


# -- part 3: users that fit --------------------------------------------------------------
def test_the_h100s_memory_and_the_reserve():
    budget = fit(M, G)
    assert G.listed_memory == "80 GB" and units.billions(G.memory_bytes) == "85.90 billion"
    assert RESERVE == budget.reserve == 0.05 and units.gb(G.memory_bytes * RESERVE, 1) == "4.3 GB"
    assert units.gb(budget.usable_bytes - budget.weight_bytes) == "65.54 GB"


def test_example_3_1_the_largest_batch_at_1k_8k_and_32k_tokens():
    assert [max_batch(M, G, tokens) for tokens in (1000, 8000)] == [500, 62]
    assert max_batch(LONG, G, 32_000) == 15  # past Llama 3 8B's window: Llama 3.1 8B
    for model, tokens in ((M, 1000), (M, 8000), (LONG, 32_000)):
        users = max_batch(model, G, tokens)
        assert fit(model, G, tokens, users).fits and not fit(model, G, tokens, users + 1).fits


def test_lesson_1s_batches_with_their_caches():
    assert units.gb(kv_cache_bytes(M, 3000, batch=32), 1) == "12.6 GB" and fit(M, G, 3000, 32).fits
    turning = sm.serving.compute_bound_batch(M, G)
    assert turning == 296
    assert units.gb(kv_cache_bytes(M, 3000, batch=turning), 0) == "116 GB"
    assert kv_cache_bytes(M, 3000, batch=turning) > G.memory_bytes
    assert max_batch(M, G, 3000) == 166


def test_paging_against_reserving_the_whole_window():
    reserved, paged = max_batch(M, G, 8192), max_batch(M, G, math.ceil(3000 / 16) * 16)
    assert (reserved, paged) == (61, 166)
    assert units.number(paged / reserved, 1) == "2.7"


def test_an_8_bit_cache_fits_about_twice_the_users():
    assert max_batch(M, G, 8000, kv_bits=8) == 125
    for model, tokens in ((M, 1000), (M, 8000), (LONG, 32_000)):
        assert max_batch(model, G, tokens, kv_bits=8) in (2 * max_batch(model, G, tokens),
                                                          2 * max_batch(model, G, tokens) + 1)


# -- part 4: decode with every user's cache ----------------------------------------------
def test_example_4_1_lesson_1s_32_users_with_3000_tokens_each():
    served = cache.cached_decode(M, G, 32, 3000)
    assert units.gb(served.decode.cost.bytes, 1) == "28.6 GB"
    assert units.ms(served.step_time) == "8.55 ms" and served.decode.bound == "memory"
    assert units.number(served.tokens_per_second_per_user) == "117"
    assert units.dollars(served.cost_per_million_tokens, 3) == "$0.223"
    lesson_1 = sm.batching(M, G, 32)
    assert units.dollars(lesson_1.cost_per_million_tokens, 3) == "$0.125"
    assert units.number(served.cost_per_million_tokens / lesson_1.cost_per_million_tokens, 1) == "1.8"


def test_the_step_reads_the_weights_once_and_every_users_cache():
    served = cache.cached_decode(M, G, 32, 3000)
    assert served.decode.cost.bytes == pytest.approx(sm.weight_bytes(M.parameters) + 32 * 3001 * 131_072)


def test_why_decode_stays_memory_bound():
    one, two = (cache.cached_decode(M, G, n, 3000) for n in (1, 2))
    per_user = (two.decode.cost.flops - one.decode.cost.flops) / (two.decode.cost.bytes - one.decode.cost.bytes)
    assert units.number(per_user) == "45"
    assert sm.serving.compute_bound_batch(M, G, 3000, assumptions=cache.CACHE_READ) is None
    assert cache.longest_compute_bound_context(M, G) == 419
    assert sm.serving.compute_bound_batch(M, G, 419, assumptions=cache.CACHE_READ) is not None
    assert sm.serving.compute_bound_batch(M, G, 420, assumptions=cache.CACHE_READ) is None
    # Attention over the cache alone: one FLOP a byte for each query head sharing a KV head, in 16 bits.
    assert 4 * M.layers * M.attention_width / kv_cache_bytes(M, 1) == M.heads // M.kv_heads == 4


def test_where_more_users_stop_paying():
    crossing = cache.cache_matches_weights_batch(M, 3000)
    assert units.number(crossing) == "41"
    floor = cache.cheapest_cost_per_million(M, G, 3000)
    assert units.dollars(floor, 3) == "$0.098"
    at_crossing = cache.cached_decode(M, G, 41, 3000)
    assert units.dollars(at_crossing.cost_per_million_tokens, 3) == "$0.195"
    assert at_crossing.cost_per_million_tokens == pytest.approx(2 * floor, rel=0.01)
    assert units.number(at_crossing.tokens_per_second_per_user) == "104"
    assert units.number(cache.cached_decode(M, G, 1, 3000).tokens_per_second_per_user) == "204"


def test_part_4_your_turn_eight_users():
    assert units.dollars(cache.cached_decode(M, G, 8, 3000).cost_per_million_tokens, 3) == "$0.597"
    assert units.dollars(sm.batching(M, G, 8).cost_per_million_tokens, 3) == "$0.499"


@settings(max_examples=40, deadline=None)
@given(users=st.integers(1, 2000), tokens=st.integers(1, 100_000))
def test_more_users_never_cost_more_and_never_go_below_the_floor(users, tokens):
    fewer, more = (cache.cached_decode(LONG, G, n, tokens).cost_per_million_tokens for n in (users, users + 1))
    assert more <= fewer * (1 + 1e-12)
    assert more >= cache.cheapest_cost_per_million(LONG, G, tokens) * (1 - 1e-12)


@settings(max_examples=40, deadline=None)
@given(tokens=st.integers(1, 100_000), more=st.integers(1, 10_000))
def test_a_longer_cache_never_makes_a_step_cheaper(tokens, more):
    shorter, longer = (cache.cached_decode(LONG, G, 16, t).step_time for t in (tokens, tokens + more))
    assert longer >= shorter


# -- the explorers, driven headless -----------------------------------------------------
def test_users_that_fit_explorer_shows_example_3_1():
    explorer = widgets.users_that_fit_explorer()
    assert explorer.readouts["users that fit"] == "62"
    assert explorer.readouts["usable memory"] == "81.60 GB (5 % held back)"
    explorer.set(kv_bits=8)
    assert explorer.readouts["users that fit"] == "125"
    explorer.set(gpu="h200", context_tokens=1024)
    assert explorer.readouts["users that fit"] == units.number(max_batch(M, sm.CATALOG["h200"], 1024, kv_bits=8))


def test_users_that_fit_explorer_says_when_the_weights_alone_do_not_fit():
    explorer = widgets.users_that_fit_explorer()
    explorer.set(model="llama-3-70b", gpu="l4")
    assert explorer.readouts["users that fit"] == "0"
    assert "the weights alone do not fit" in explorer.svg and "nothing fits beside the weights" in explorer.svg


def test_cached_batching_explorer_shows_example_4_1_and_a_batch_too_big():
    explorer = widgets.cached_batching_explorer()
    shown = explorer.readouts
    assert shown["cost per million tokens"] == "$0.223" and shown["without the caches (lesson 1)"] == "$0.125"
    assert shown["one decode step"] == "8.55 ms, memory-bound"
    assert shown["caches weigh as much as the weights at"] == "41 users"
    draws = explorer.draws
    explorer.set(batch=256)
    assert explorer.readouts["users that fit at this length"] == "166: this batch does not fit"
    assert explorer.draws == draws + 1


# -- the website charts -------------------------------------------------------------------
def test_users_that_fit_chart_matches_the_package():
    chart = webcharts.users_that_fit_chart()
    assert chart.readouts_at()["users that fit"] == "62"
    assert chart.readouts_at(kv_bits=8)["users that fit"] == "125"
    assert chart.readouts_at(tokens=1000)["users that fit"] == "500"
    assert chart.readouts_at(tokens=8192)["users that fit"] == "61"  # the chart ends at Llama 3 8B's window
    for gpu in ("h200", "a100-80gb", "l4"):
        assert chart.readouts_at(gpu=gpu, tokens=4096)["users that fit"] == units.number(
            max_batch(M, sm.CATALOG[gpu], 4096))


def test_cached_batching_chart_matches_the_package():
    chart = webcharts.cached_batching_chart()
    shown = chart.readouts_at()
    assert shown["cost per million tokens"] == "$0.223" and shown["without the caches (lesson 1)"] == "$0.125"
    assert chart.readouts_at(users=8)["cost per million tokens"] == "$0.597"
    assert chart.readouts_at(users=512, tokens=8000)["users that fit"] == "62: this batch does not fit"
    for users, tokens, bits, gpu in [(64, 1000, 8, "h200"), (1, 8000, 16, "l40s")]:
        expected = cache.cached_decode(M, sm.CATALOG[gpu], users, tokens, kv_bits=bits)
        assert chart.readouts_at(users=users, tokens=tokens, kv_bits=bits, gpu=gpu)["cost per million tokens"] == \
            units.dollars(expected.cost_per_million_tokens, 3)
    assert chart.data_bytes < webcharts.MAX_DATA_BYTES
