"""Lesson 2's explorers and plate XXIII's workshops: each at its example and at settings the pages ask the
reader to try, on the website's steps and at Jupyter's finer ones."""
from dataclasses import replace

import servingmath as sm
from servingmath import cache, units
from servingmath.explorers import lesson_2, plates
from servingmath.memory import kv_cache_bytes, max_batch

M, G = sm.LLAMA_3_8B, sm.H100_SXM


def test_cache_saving_shows_example_1_1_and_follows_its_controls():
    made = lesson_2.cache_saving()
    shown = made.readouts_at()
    assert shown["FLOPs without the cache"] == "50.56 T" and shown["FLOPs with the cache"] == "17.6 billion"
    assert shown["the step with the cache"] == "4.91 ms, memory-bound"
    for tokens, gpu in [(1000, "h100-sxm"), (8191, "l4"), (1, "b200")]:
        saving = cache.decode_with_and_without_cache(M, tokens)
        assert made.readouts_at(tokens=tokens, gpu=gpu)["times fewer with the cache"] == units.number(saving.flops_saved)
    live = made.live().set(tokens=1280, gpu="l4")
    timed = cache.time_with_and_without_cache(M, sm.CATALOG["l4"], 1280)
    assert live.readouts["the step without the cache"] == f"{units.ms_significant(timed.without_cache.time)}, compute-bound"
    live.set(model="deepseek-v2-lite")   # its 16-bit weights do not fit the L4's 24 GB
    assert set(live.readouts.values()) == {"does not fit"}
    live.set(gpu="h100-sxm")
    lite = cache.decode_with_and_without_cache(sm.MODELS["deepseek-v2-lite"], 1280)
    assert live.readouts["times fewer with the cache"] == units.number(lite.flops_saved)


def test_cache_size_shows_the_three_designs_and_any_model():
    made = lesson_2.cache_size()
    shown = made.readouts_at()
    assert (shown["multi-head"], shown["as published"], shown["multi-query"]) == (
        "4.19 GB", "1.05 GB", "0.13 GB")
    assert shown["as published, as a share of the weights"] == "6.5 %"
    assert shown["cache a token, as published"] == "131,072 bytes, 8 KV heads"
    assert made.readouts_at(kv_bits=8)["as published"] == units.gb(kv_cache_bytes(M, 8000, kv_bits=8))
    lite = sm.MODELS["deepseek-v2-lite"]
    assert made.readouts_at(model="deepseek-v2-lite", kv_bits=8)["cache a token, as published"].startswith(
        units.number(kv_cache_bytes(lite, 1, kv_bits=8)))


def test_users_that_fit_shows_example_3_1_and_follows_every_control():
    made = lesson_2.users_that_fit()
    assert made.readouts_at() == {"room for caches": "65.54 GB", "cache a user": "1.05 GB", "users that fit": "62"}
    assert made.readouts_at(kv_bits=8)["users that fit"] == "125"
    assert made.readouts_at(tokens=1000)["users that fit"] == "500"
    assert made.readouts_at(tokens=8192)["users that fit"] == "61"   # the chart ends at Llama 3 8B's window
    for gpu in ("h200", "a100-80gb", "l4"):
        assert made.readouts_at(gpu=gpu, tokens=4096)["users that fit"] == units.number(max_batch(M, sm.CATALOG[gpu], 4096))
    live = made.live().set(gpu="h200", tokens=1024, kv_bits=8, weight_bits=8)
    assert live.readouts["users that fit"] == units.number(max_batch(M, sm.CATALOG["h200"], 1024, 8, 8))


def test_cached_batching_shows_example_4_1_and_a_batch_too_big():
    made = lesson_2.cached_batching()
    shown = made.readouts_at()
    assert shown["cost per million tokens"] == "$0.223" and shown["without the caches (lesson 1)"] == "$0.125"
    assert shown["one decode step"] == "8.55 ms, memory-bound" and shown["caches weigh as much as the weights at"] == "41 users"
    assert made.readouts_at(users=8)["cost per million tokens"] == "$0.597"
    assert made.readouts_at(users=512, tokens=8000)["users that fit"] == "62: this batch does not fit"
    for users, tokens, bits, gpu in [(64, 1000, 8, "h200"), (1, 8000, 16, "l40s")]:
        expected = cache.cached_decode(M, sm.CATALOG[gpu], users, tokens, kv_bits=bits)
        assert made.readouts_at(users=users, tokens=tokens, kv_bits=bits, gpu=gpu)["cost per million tokens"] == \
            units.dollars(expected.cost_per_million_tokens, 3)
    live = made.live().set(price=6.0)
    assert live.readouts["cost per million tokens"] == units.dollars(
        cache.cached_decode(M, G, 32, 3000, 6.0).cost_per_million_tokens, 3)


def test_the_plate_xxiii_1_workshop_shows_the_plates_figures_and_the_lessons_ideal():
    made = plates.workshop()
    assert made.readouts_at() == {"time of the pass": "28.4 ms", "time per token": "0.0277 ms", "FLOP per byte": "1,033",
                                  "what limits it": "compute-bound", "arithmetic sets the time from": "222 tokens"}
    assert made.readouts_at(tokens=1)["what limits it"] == "memory-bound"
    assert "decode, 1,000 cached: 6.24 ms a token" in made.figure
    per_token = [float(made.readouts_at(tokens=n)["time per token"].removesuffix(" ms")) for n in (1024, 4096, 8192)]
    assert per_token[0] < per_token[1] < per_token[2]
    assert float(made.readouts_at(assumptions="lesson")["time of the pass"].removesuffix(" ms")) < 28.4
    h200 = made.readouts_at(gpu="h200")
    assert h200["time of the pass"] == "28.4 ms" and h200["arithmetic sets the time from"] == "155 tokens"
    exact = sm.time_per_token_curve(M, G).arithmetic_from
    assert exact not in made.controls[0].options and f"compute-bound from {units.number(exact)} tokens" in made.figure


def test_the_plate_xxiii_1_workshop_live_moves_the_plates_assumptions():
    live = plates.workshop().live().set(compute=1.0, bandwidth=1.0, overhead=0.0)
    assert live.readouts["arithmetic sets the time from"] == "295 tokens"
    live.set(model="llama-3.2-1b", tokens=1000)
    ideal = replace(sm.PLATE, compute_efficiency=1.0, bandwidth_efficiency=1.0, overhead=0.0)
    one = sm.time_per_token_curve(sm.MODELS["llama-3.2-1b"], G, [1000], ideal).passes
    assert live.readouts["time of the pass"] == units.ms_significant(float(one.time[0])) and live.draws == 3


def test_the_plate_xxiii_2_workshop_counts_the_users_of_each_model():
    made = plates.kv_workshop()
    assert made.readouts_at()["Llama 3 8B: users that fit"] == "125; caches outweigh the weights from 31 users"
    for tokens, gpu, bits in [(1000, "h100-sxm", 16), (4096, "h200", 8), (256, "mi300x", 16)]:
        shown = made.readouts_at(tokens=tokens, gpu=gpu, kv_bits=bits)
        for key in cache.WORKSHOP_MODELS:
            m = sm.MODELS[key]
            assert shown[f"{m.name}: users that fit"].startswith(
                units.number(max_batch(m, sm.CATALOG[gpu], tokens, kv_bits=bits)) + ";")
    live = made.live().set(reserve=0.10, kv_bits=8, gpu="h200")
    assert live.readouts["Llama 2 7B: users that fit"].startswith(
        units.number(max_batch(sm.MODELS["llama-2-7b"], sm.CATALOG["h200"], 4000, kv_bits=8, reserve=0.10)))


def test_a_context_past_a_models_window_reads_as_such_in_jupyter():
    live = lesson_2.cache_saving().live().set(model="llama-2-7b", tokens=6144)
    assert set(live.readouts.values()) == {"past the model's window"} and "past the model&#x27;s window" in live.svg
    live.set(tokens=3000)
    assert live.readouts["times fewer with the cache"] == units.number(
        cache.decode_with_and_without_cache(sm.MODELS["llama-2-7b"], 3000).flops_saved)


def test_cache_saving_times_no_step_on_a_gpu_that_cannot_hold_the_model():
    """Llama 3 70B's 16-bit weights do not fit an L4: the explorer refuses rather than time the step."""
    made = lesson_2.cache_saving()
    refused = made.readouts_at(model="llama-3-70b", gpu="l4")
    assert set(refused.values()) == {"does not fit"}
    held = made.readouts_at(model="llama-3-70b", gpu="h200")
    assert held["the step with the cache"].endswith("memory-bound")


def test_cache_size_draws_no_regrouped_heads_for_latent_attention():
    """Part 2 invites DeepSeek-V2 into the explorer: it caches a latent, not key-value heads, so the explorer
    neither labels it grouped-query nor draws multi-head and multi-query variants that cannot differ."""
    v2 = sm.MODELS["deepseek-v2"]
    shown = lesson_2.cache_size().readouts_at(model="deepseek-v2")
    assert shown["as published"] == units.gb(kv_cache_bytes(v2, 8000))
    assert shown["multi-head"] == shown["multi-query"] == "no key-value heads: latent attention"
    assert shown["cache a token, as published"] == "69,120 bytes, one latent of 576 numbers a layer"
    assert "KV head" in lesson_2.cache_size().readouts_at(model="llama-3-70b")["cache a token, as published"]


def test_part_4_hint_holds_on_every_gpu_the_explorer_offers():
    """Part 4: "the red line flattens about where the caches outweigh the weights ... and stops where memory
    runs out, if that comes before the last stop of the slider"; the L4 is named as the GPU where memory runs
    out first. Checked at every length, cache width and GPU the website offers."""
    made = lesson_2.cached_batching()
    options = {c.name: c.options for c in made.controls}
    last_stop = max(options["users"])
    named = []
    for key in options["gpu"]:
        gpu = sm.CATALOG[key]
        budget = sm.fit(M, gpu)
        if budget.usable_bytes - budget.weight_bytes < budget.weight_bytes:
            named.append(key)
        for tokens in options["tokens"]:
            for kv_bits in options["kv_bits"]:
                wall = max_batch(M, gpu, tokens, kv_bits=kv_bits)
                crossing = cache.cache_matches_weights_batch(M, tokens, kv_bits=kv_bits)
                shown = made.readouts_at(tokens=tokens, kv_bits=kv_bits, gpu=key)
                assert shown["caches weigh as much as the weights at"].startswith(units.number(round(crossing)))
                if key in named:
                    assert wall < crossing, (key, tokens, kv_bits)   # memory is full first
                else:
                    assert crossing < wall, (key, tokens, kv_bits)   # the caches outweigh the weights first
                if wall < last_stop:
                    assert f"memory full: {units.number(wall)} users" in made.svg_at(tokens=tokens, kv_bits=kv_bits,
                                                                                      gpu=key)
    assert named == ["l4"]
