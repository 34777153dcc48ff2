"""Plate XXIII.2, The KV Cache: its three models, the figures it pins, its workshop explorer and
website chart."""
import numpy as np
import pytest

import servingmath as sm
from servingmath import cache, plots, svgcharts, units, webcharts
from servingmath.memory import RESERVE, fit, kv_cache_bytes, max_batch, weight_bytes
from servingmath.widgets import CACHE_SWEEP_TOKENS, kv_workshop_explorer

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


def test_the_workshop_explorer_starts_at_the_plate_and_follows_its_controls():
    workshop = kv_workshop_explorer()
    assert workshop.result.context_tokens == 4000 and workshop.result.gpu == G
    assert workshop.readouts["Llama 3 8B: users that fit"] == "125 (caches outweigh the weights when full)"
    draws = workshop.draws
    workshop.set(reserve=0.10)
    assert workshop.readouts["Llama 3 8B: users that fit"].startswith(
        units.number(max_batch(MODELS[0], G, 4000, reserve=0.10)))
    workshop.set(kv_bits=8, gpu="h200")
    assert workshop.readouts["Llama 2 7B: users that fit"].startswith(
        units.number(max_batch(MODELS[1], sm.CATALOG["h200"], 4000, kv_bits=8, reserve=0.10)))
    assert workshop.draws == draws + 2 and "<svg" in workshop.svg
    workshop.set(context_tokens=32_768)  # past Llama 2 7B's window: the explorer stops at it
    assert workshop.result.context_tokens == 4095


def test_the_static_figure_and_the_live_one_draw_every_model():
    swept = CACHE_SWEEP_TOKENS[CACHE_SWEEP_TOKENS < 4096]
    sweep = {m.name: max_batch(m, G, swept) for m in MODELS}
    crossings = {m.name: cache.cache_matches_weights_batch(m, swept) for m in MODELS}
    figure = plots.users_that_fit_chart(swept, sweep, 4000, crossings)
    drawn = {line.get_gid() for line in figure.axes[0].get_lines()}
    assert {m.name for m in MODELS} <= drawn and {f"{m.name}: crossing" for m in MODELS} <= drawn
    svg = svgcharts.users_that_fit_chart(swept, sweep, 4000, crossings)
    for m in MODELS:
        assert f'data-gid="{m.name}"' in svg and f'data-gid="{m.name}: crossing"' in svg


def test_the_website_chart_matches_the_package_at_several_settings():
    chart = webcharts.kv_workshop_chart()
    assert chart.readouts_at()["Llama 3 8B: users that fit"] == "125; caches outweigh the weights from 31 users"
    for tokens, gpu, bits in [(1000, "h100-sxm", 16), (4096, "h200", 8), (256, "mi300x", 16)]:
        shown = chart.readouts_at(tokens=tokens, gpu=gpu, kv_bits=bits)
        for m in MODELS:
            assert shown[f"{m.name}: users that fit"].startswith(
                units.number(max_batch(m, sm.CATALOG[gpu], tokens, kv_bits=bits)) + ";")
    assert chart.data_bytes < webcharts.MAX_DATA_BYTES
