"""Lesson 1's explorers: each at its example and at the settings the parts ask the reader to try, on the
website's steps and at Jupyter's finer ones."""
import re

import pytest

import servingmath as sm
from servingmath import serving, units
from servingmath.explorers import lesson_1
from servingmath.models import Model
from servingmath.serving import request_passes

WINDOWS = pytest.mark.skipif(not hasattr(Model, "context_window"), reason="the package names no context window yet")


def texts(svg):
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def test_passes_shows_example_1_1_and_the_two_flavours():
    made = lesson_1.passes()
    assert made.readouts_at() == {"forward passes": "300", "tokens in the prefill pass": "2,000",
                                  "decode passes, one token each": "299",
                                  "share of the tokens that go through in prefill": "87.0 %"}
    share = "share of the tokens that go through in prefill"
    assert made.readouts_at(prompt_tokens=500, reply_tokens=1000)["forward passes"] == "1,000"
    assert made.readouts_at(prompt_tokens=8000, reply_tokens=100)[share] == units.percent(
        request_passes(8000, 100).prefill_share_of_tokens, 1)
    assert made.readouts_at(prompt_tokens=20, reply_tokens=2000)[share] == "1.0 %"
    shown = texts(made.svg_at())
    assert "decode: 299 passes, 1 token each" in shown and "284 more" in shown and "300" in shown
    assert texts(made.svg_at(reply_tokens=10))[-1] == "decode: 9 passes, 1 token each"
    assert "decode: no passes" in texts(made.svg_at(reply_tokens=1))


def test_passes_live_takes_any_whole_number_of_tokens():
    live = lesson_1.passes().live()
    live.set(prompt_tokens=1234, reply_tokens=5)
    assert live.readouts["tokens in the prefill pass"] == "1,234" and live.readouts["forward passes"] == "5"
    assert "decode: 4 passes, 1 token each" in texts(live.svg) and live.draws == 2
    live.controls["reply_tokens"].value = 7
    assert live.readouts["forward passes"] == "7" and live.draws == 3


def test_roofline_shows_example_2_1_a_short_prompt_and_fewer_bits():
    made = lesson_1.roofline()
    shown = made.readouts_at()
    assert shown["FLOP per byte"] == "3,000" and shown["the pass is"] == "compute-bound"
    assert shown["ridge of the GPU"] == "295 FLOP per byte"
    short = made.readouts_at(tokens=200)
    assert short["FLOP per byte"] == "200" and short["the pass is"] == "memory-bound"
    assert made.readouts_at(tokens=1)["FLOP per byte"] == "1"
    assert made.readouts_at(tokens=200, weight_bits=4)["FLOP per byte"] == "800"
    assert made.readouts_at(weight_bits=4)["ridge of the GPU"] == "295 FLOP per byte"
    assert made.readouts_at(tokens=323, gpu="l4")["the pass is"] == "memory-bound"
    # What a pass reaches, to three figures: the H100's peak as the catalog shows it, a laptop's not rounded to 0.
    assert made.readouts_at()["FLOP/s it can reach"] == "989 TFLOP/s of 989 TFLOP/s"
    assert made.readouts_at(tokens=1, gpu="laptop", weight_bits=8)["FLOP/s it can reach"] \
        == "0.200 TFLOP/s of 3.60 TFLOP/s"
    assert made.readouts_at(tokens=1)["FLOP/s it can reach"] == "3.35 TFLOP/s of 989 TFLOP/s"
    refused = []
    for key, gpu in sm.CATALOG.items():
        ridge = units.number(sm.ridge_point(gpu.peak_flops, gpu.memory_bandwidth))
        # Where the 16-bit weights and the 3,000-token prompt's cache do not fit, the pass is refused, and in
        # 8 bits it is placed.
        fits = sm.memory.fit(sm.LLAMA_3_8B, gpu, 3000).fits
        bits = 16 if fits else 8
        assert sm.memory.fit(sm.LLAMA_3_8B, gpu, 3000, weight_bits=bits).fits
        if not fits:
            refused.append(key)
            assert set(made.readouts_at(gpu=key).values()) == {"does not fit"}
        assert made.readouts_at(gpu=key, weight_bits=bits)["ridge of the GPU"] == f"{ridge} FLOP per byte"
        assert f"ridge: {ridge} FLOP/byte" in texts(made.svg_at(gpu=key))
    assert refused == ["t4", "laptop"]


def test_request_shows_example_3_1_8_bit_weights_and_the_h200():
    made = lesson_1.request()
    assert made.readouts_at() == {
        "time to first token (TTFT)": "49 ms, compute-bound", "time per output token (TPOT)": "4.79 ms, memory-bound",
        "tokens a second": "209", "whole reply": "1.24 s", "share spent in decode": "96 %",
        "weights read each pass": "16.06 GB; they fit in the GPU's 80 GB, with the cache"}
    assert made.readouts_at(weight_bits=8)["tokens a second"] == "417"
    assert made.readouts_at(weight_bits=8)["time per output token (TPOT)"] == "2.40 ms, memory-bound"
    h200 = made.readouts_at(gpu="h200")
    assert h200["time to first token (TTFT)"] == "49 ms, compute-bound" and h200["tokens a second"] == "299"
    assert made.readouts_at(prompt_tokens=200)["time to first token (TTFT)"].endswith("memory-bound")
    assert made.readouts_at(prompt_tokens=6000)["share spent in decode"] == units.percent(
        serving.request(sm.LLAMA_3_8B, sm.H100_SXM, 6000, 250).decode_share)
    # Where the weights and the cache do not fit the GPU, nothing is timed.
    for key, gpu in sm.CATALOG.items():
        fits = serving.request(sm.LLAMA_3_8B, gpu, 3000, 250).fits
        assert (set(made.readouts_at(gpu=key).values()) == {"does not fit"}) == (not fits), key


def test_request_draws_the_split_the_package_computes():
    made = lesson_1.request()
    timed = serving.request(sm.LLAMA_3_8B, sm.H100_SXM, 3000, 250)
    prefill = float(re.search(r'<rect x="[\d.]+" y="[\d.]+" width="([\d.]+)"', made.layers_at()[0]).group(1))
    assert prefill == pytest.approx(round(float(timed.ttft / timed.total_time) * (480 - 16 - 84)), abs=0.1)


def test_request_offers_only_dense_models_live():
    [model] = [c for c in lesson_1.request().controls if c.name == "model"]
    assert not model.site and "llama-3-8b" in model.options
    assert all(not sm.MODELS[key].mixture_of_experts for key in model.options)


def test_batching_shows_example_4_1_and_your_turn_4():
    made = lesson_1.batching()
    cost = "cost per million tokens"
    assert made.readouts_at(users=1)["tokens an hour"] == "0.75 million" and made.readouts_at(users=1)[cost] == "$3.995"
    assert made.readouts_at(users=8)[cost] == "$0.499"
    assert made.readouts_at() == {"tokens an hour": "24.03 million", cost: "$0.125",
                                  "each user's tokens a second": "209", "one decode step": "4.79 ms, memory-bound",
                                  "arithmetic becomes the limit at": "296 users", "the GPU's price": "$3.00 an hour"}
    assert made.readouts_at(users=1024)["one decode step"] == "16.62 ms, compute-bound"
    # The laptop has no rental price, so it is not offered.
    gpus = made.controls[1].options
    assert "laptop" not in gpus and "h200" in gpus
    assert made.readouts_at(gpu="h200")["arithmetic becomes the limit at"] == "207 users"


def test_batching_at_a_price_of_your_own():
    live = lesson_1.batching().live()
    live.set(price=6.0)
    assert live.readouts["cost per million tokens"] == "$0.250" and live.readouts["the GPU's price"] == "$6.00 an hour"
    live.set(price="listed", gpu="l4")
    l4 = serving.batching(sm.LLAMA_3_8B, sm.CATALOG["l4"], 32)
    assert live.readouts["cost per million tokens"] == units.dollars(l4.cost_per_million_tokens, 3)


def test_each_users_rate_falls_only_past_the_compute_bound_point():
    made = lesson_1.batching()
    first = serving.compute_bound_batch(sm.LLAMA_3_8B, sm.H100_SXM)
    assert f"compute-bound from {first} users" in texts(made.svg_at())
    for users in made.controls[0].options:
        shown = made.readouts_at(users=users)
        rate = int(shown["each user's tokens a second"])
        assert (rate == 209) == (users < first) and shown["one decode step"].endswith(
            "memory-bound" if users < first else "compute-bound")


@WINDOWS
def test_a_request_past_the_window_is_counted_nowhere():
    made = lesson_1.passes()
    window = sm.LLAMA_3_8B.context_window
    assert set(made.readouts_at(prompt_tokens=8000, reply_tokens=1000).values()) == {"past the model's window"}
    assert made.readouts_at(prompt_tokens=8000, reply_tokens=100)["forward passes"] == units.number(100)
    assert 8000 + 100 <= window < 8000 + 1000


# -- every setting the explorers offer is a case that can happen, or is refused and priced nothing ------
REFUSALS = {"past the model's window", "does not fit"}


def _can_happen(model, gpu, tokens, weight_bits=16, batch=1):
    """The package's two domain checks: ``tokens`` inside the model's window, weights and cache in the GPU."""
    return tokens <= model.context_window and sm.memory.fit(model, gpu, tokens, batch, weight_bits=weight_bits).fits


def _shown(made, **setting):
    shown = made.readouts_at(**setting)
    refused = set(shown.values()) & REFUSALS
    assert not refused or len(set(shown.values())) == 1, (made.name, setting, shown)   # priced nothing
    return not refused


def _ends(control):
    return sorted({*control.options, *([control.fine[0], control.fine[-1]] if control.fine is not None else [])})


def test_the_passes_explorer_counts_only_requests_inside_the_window():
    made = lesson_1.passes()
    [prompts, replies] = made.controls
    for prompt in _ends(prompts):
        for reply in _ends(replies):
            assert _shown(made, prompt_tokens=prompt, reply_tokens=reply) == (
                prompt + reply <= sm.LLAMA_3_8B.context_window), (prompt, reply)


def test_the_roofline_places_a_pass_only_where_it_can_happen():
    made = lesson_1.roofline()
    controls = {c.name: c for c in made.controls}
    for gpu in controls["gpu"].options:
        for bits in controls["weight_bits"].options:
            for tokens in _ends(controls["tokens"]):
                # A prefill writes its tokens' cache: the weights and that cache must fit together.
                happens = _can_happen(sm.LLAMA_3_8B, sm.CATALOG[gpu], tokens, bits)
                assert _shown(made, tokens=tokens, gpu=gpu, weight_bits=bits) == happens, (gpu, bits, tokens)
    # The laptop's GPU may use two thirds of its 16 GB (Metal's working set): not Llama 3 8B's 16-bit weights.
    assert not _shown(made, gpu="laptop", tokens=1) and _shown(made, gpu="laptop", tokens=3000, weight_bits=8)


def test_the_request_explorer_times_a_request_only_where_it_can_happen():
    """Every model it offers (dense, as the lesson's rules are), on every GPU, in every width, at the ends of
    both sliders: timed where the window holds the request and the weights and its cache fit, else refused."""
    made = lesson_1.request()
    controls = {c.name: c for c in made.controls}
    refused = set()
    for key in controls["model"].options:
        model = sm.MODELS[key]
        assert not model.mixture_of_experts and model.context_window >= 6000 + 2000, key
        for gpu in controls["gpu"].options:
            for bits in controls["weight_bits"].options:
                for prompt in (1, max(_ends(controls["prompt_tokens"]))):
                    for reply in (1, max(_ends(controls["reply_tokens"]))):
                        happens = _can_happen(model, sm.CATALOG[gpu], prompt + reply, bits)
                        assert _shown(made, model=key, gpu=gpu, weight_bits=bits, prompt_tokens=prompt,
                                      reply_tokens=reply) == happens, (key, gpu, bits, prompt, reply)
                        refused |= {(key, gpu)} if not happens else set()
    assert ("llama-3-8b", "t4") in refused and ("llama-3-70b", "h100-sxm") in refused


def test_the_batching_explorer_offers_only_gpus_that_hold_the_weights():
    made = lesson_1.batching()
    [gpus] = [c for c in made.controls if c.name == "gpu"]
    assert "t4" not in gpus.options
    for gpu in gpus.options:
        assert sm.memory.fit(sm.LLAMA_3_8B, sm.CATALOG[gpu]).fits, gpu
        assert _shown(made, gpu=gpu)


def test_the_plate_workshop_times_a_pass_only_where_it_can_happen():
    """Every dense model it offers on every GPU, at the ends of the tokens and the cache: a prefill and a
    decode step timed only inside the model's window and where its weights and a window's cache fit."""
    from servingmath.explorers import plates

    made = plates.workshop()
    controls = {c.name: c for c in made.controls}
    assert max(_ends(controls["tokens"])) == plates.MOST == sm.LLAMA_3_8B.context_window
    assert "t4" not in controls["gpu"].options
    for key in controls["model"].options:
        model = sm.MODELS[key]
        assert not model.mixture_of_experts and model.context_window >= plates.MOST, key
        for gpu in controls["gpu"].options:
            happens = _can_happen(model, sm.CATALOG[gpu], plates.MOST)
            for tokens in (1, plates.MOST):
                for cached in (0, max(_ends(controls["cached"]))):
                    assert cached + 1 <= model.context_window
                    assert _shown(made, model=key, gpu=gpu, tokens=tokens, cached=cached) == happens, (key, gpu)


def test_a_machine_whose_peak_is_a_third_partys_estimate_says_so_in_the_gpu_menus():
    """Apple publishes no peak arithmetic rate: the catalog holds a third party's FP32 estimate, which sets a
    prefill's time, a ridge and a share of the peak; a GPU menu marks those machines unless its explorer says not to."""
    from servingmath.explorers import gpu_menu
    from servingmath.hardware import ESTIMATED_PEAKS

    assert sorted(k for k, g in sm.CATALOG.items() if "estimate" in g.source) == sorted(ESTIMATED_PEAKS)
    shown = gpu_menu("h100-sxm")
    for key, text in zip(shown.options, shown.texts):
        assert ("third party's FP32 estimate" in text) == (key in ESTIMATED_PEAKS), (key, text)


# The explorers that offer the machines whose peak is an estimate (a priced menu offers none: Apple's are unpriced).
MENUS_WITH_ESTIMATES = ["lesson_1:roofline", "lesson_1:request", "lesson_2:cache_saving", "lesson_2:users_that_fit",
                        "plates:workshop", "plates:kv_workshop"]


@pytest.mark.parametrize("name", MENUS_WITH_ESTIMATES)
def test_the_estimated_peak_is_marked_only_where_the_peak_moves_what_the_explorer_shows(name, monkeypatch):
    """A menu marks an estimated peak where a readout or a line moves with it (a time, a ridge), and not in an
    explorer of memory alone (the users that fit), where the mark would qualify nothing shown."""
    from servingmath import explorers
    from servingmath.hardware import ESTIMATED_PEAK, ESTIMATED_PEAKS

    module, function = name.split(":")
    build = getattr(getattr(explorers, module), function)
    menu = next(c for c in build().controls if c.name == "gpu")
    machine = next(key for key in menu.options if key in ESTIMATED_PEAKS)

    def shown(explorer):
        return explorer.readouts_at(gpu=machine), explorer.layers_at(gpu=machine)

    before = shown(build())
    estimate = sm.CATALOG[machine]
    doubled = estimate.with_changes(dense_flops={dtype: 2 * flops for dtype, flops in estimate.dense_flops.items()})
    # The explorer finds its GPU by key: the same machine, its estimated peak doubled.
    monkeypatch.setattr(getattr(explorers, module), "find_gpu",
                        lambda key: doubled if key == machine else explorers.find_gpu(key))
    moves = shown(build()) != before
    marked = ESTIMATED_PEAK in menu.texts[menu.options.index(machine)]
    assert marked == moves, (name, machine, "marked" if marked else "not marked", "moves" if moves else "does not move")
