"""Lesson 4's explorer, at Part 1's example and at settings the page asks the reader to try, and the part's
claims over every model the explorer offers."""
import numpy as np
import pytest

from servingmath import parallel, stage_sweep
from servingmath.explorers import lesson_4, ms
from servingmath.memory import DoesNotFit
from servingmath.models import MODELS

L70 = MODELS["llama-3-70b"]


def step(gpus, link="nvlink", batch=1, model="llama-3-70b"):
    gpu, joined = lesson_4.MACHINES[link]
    return parallel.tensor_parallel_step(MODELS[model], parallel.group(gpu, gpus, joined if gpus > 1 else None),
                                         cached_tokens=lesson_4.CACHED, batch=batch)


def test_tensor_parallel_shows_example_1_1_and_follows_every_control():
    made = lesson_4.tensor_parallel()
    assert made.readouts_at() == {"a decode step": "11.5 ms", "of it, the all-reduces": "0.969 ms, 8 %",
                                  "tokens a second, each user": "87",
                                  "each GPU holds": "weights 35.28 GB, caches 0.08 GB",
                                  "each GPU's cache": "2 of 8 KV heads"}
    assert made.readouts_at(gpus=8)["a decode step"] == "6.25 ms"
    assert set(made.readouts_at(gpus=1).values()) == {"does not fit"}
    for gpus, link, batch, model in [(2, "pcie", 64, "llama-3-8b"), (8, "pcie", 256, "llama-3-70b"),
                                     (1, "nvlink", 16, "llama-3.2-1b"), (8, "nvlink", 32, "qwen3-235b-a22b")]:
        shown = made.readouts_at(gpus=gpus, link=link, batch=batch, model=model)
        assert shown["a decode step"] == ms(step(gpus, link, batch, model).time), (gpus, link, batch, model)
    assert made.readouts_at(gpus=8, model="qwen3-235b-a22b")["each GPU's cache"] == "each of 4 KV heads on 2 GPUs"
    live = made.live().set(gpus=2, link="pcie", batch=30)      # Jupyter's finer steps
    assert live.readouts["a decode step"] == ms(step(2, "pcie", 30).time)


def test_every_setting_draws_a_bar_for_each_split_that_fits_and_says_which_do_not():
    made = lesson_4.tensor_parallel()
    svg = made.svg_at(link="pcie", batch=256)
    assert "1 GPU: does not fit" in svg and "2 GPUs: does not fit" in svg
    assert f"4 GPUs: {ms(step(4, 'pcie', 256).time)}" in svg


@pytest.mark.parametrize("key", lesson_4.MODELS_SHOWN)
def test_the_page_s_claims_hold_for_every_model_the_explorer_offers(key):
    """Each GPU keeps 1/N of the cache up to as many GPUs as KV heads, and the same share past them; the all-reduces
    cost about the same at every N while each GPU's pass shrinks; over PCIe they grow with the batch."""
    model = MODELS[key]
    for gpus in (1, 2, 4, 8):
        share = parallel.kv_share(model, gpus)
        assert share == (1 / gpus if gpus <= model.kv_heads else 1 / model.kv_heads), (key, gpus)
    fitting = {}
    for gpus in (2, 4, 8):
        try:
            fitting[gpus] = step(gpus, model=key)
        except DoesNotFit:
            continue
    assert fitting, key
    passes = [s.compute.time for s in fitting.values()]
    assert passes == sorted(passes, reverse=True)
    talks = [s.communication for s in fitting.values()]
    assert max(talks) < 1.01 * min(talks)
    top = max(fitting)
    assert step(top, "pcie", 64, key).communication > step(top, "pcie", 1, key).communication


def test_a_setting_past_memory_reads_as_its_refusal_in_every_readout():
    made = lesson_4.tensor_parallel()
    assert set(made.readouts_at(gpus=2, batch=256).values()) == {"does not fit"}
    with pytest.raises(DoesNotFit):
        step(2, batch=256)
    assert not parallel.fit(L70, parallel.group("h100-sxm", 2), lesson_4.CACHED + 1, 256).fits


def test_the_split_explorers_note_says_it_runs_the_default_budget_only():
    from servingmath import disaggregation

    note = lesson_4.disaggregated().note
    assert f"its default {disaggregation.server().step_tokens:,}-token steps (not Part 4's tuned ones)" in note


def test_the_note_says_each_link_runs_one_way_at_half_its_listed_figure():
    from servingmath import hardware

    assert "one-way line rate, half the listed figure" in lesson_4.tensor_parallel().note
    for gpu, joined in lesson_4.MACHINES.values():
        link = hardware.link(gpu, joined)
        assert link.bandwidth * 2 == float(link.listed.split()[0]) * 1e9, link.key


# -- Part 2: pipeline parallelism ------------------------------------------------------------------
def staged(gpus, link="nvlink", batch=1, micro=1, model="llama-3-70b"):
    gpu, joined = lesson_4.MACHINES[link]
    return parallel.pipeline_parallel_step(MODELS[model], parallel.group(gpu, gpus, joined if gpus > 1 else None), gpus,
                                           cached_tokens=lesson_4.CACHED, batch=batch * micro, micro_batches=micro)


def test_pipeline_parallel_shows_example_2_1_and_follows_every_control():
    made = lesson_4.pipeline_parallel()
    assert made.readouts_at() == {"between a user's tokens": "42.2 ms", "of it, the sends": "0.0182 ms",
                                  "tokens a second, all users": "24", "busiest GPU idle": "74 %",
                                  "the fullest GPU holds": "weights 36.33 GB, caches 0.08 GB"}
    assert made.readouts_at(micro=4, batch=64)["tokens a second, all users"] == "5,152"
    assert set(made.readouts_at(gpus=1).values()) == {"does not fit"}
    for gpus, link, batch, micro, model in [(2, "pcie", 64, 2, "llama-3-8b"), (8, "pcie", 128, 8, "llama-3-70b"),
                                            (1, "nvlink", 16, 1, "llama-3.2-1b"), (8, "nvlink", 32, 4, "qwen3-235b-a22b")]:
        shown = made.readouts_at(gpus=gpus, link=link, batch=batch, micro=micro, model=model)
        assert shown["between a user's tokens"] == ms(staged(gpus, link, batch, micro, model).interval)
    live = made.live().set(gpus=2, link="pcie", batch=30, micro=2)
    assert live.readouts["between a user's tokens"] == ms(staged(2, "pcie", 30, 2).interval)
    svg = made.svg_at(micro=8, batch=64)
    assert "1 GPU: does not fit" in svg and f"8 GPUs: {ms(staged(8, batch=64, micro=8).interval)}, idle 0 %" in svg


@pytest.mark.parametrize("key", lesson_4.MODELS_SHOWN)
def test_part_2_s_claims_hold_for_every_model_the_explorer_offers(key):
    """More stages never bring one user's token sooner; micro-batches in flight, up to the stages, serve that many
    times the users for one send more between tokens and the slowest stage's lag behind the average; the fullest GPU
    holds at least 1/N of the weights, its layers' share with the input table or the output head."""
    fitting = {}
    for gpus in (1, 2, 4, 8):
        try:
            fitting[gpus] = staged(gpus, model=key)
        except DoesNotFit:
            continue
    assert fitting, key
    times = [s.token_time for s in fitting.values()]
    assert times == sorted(times)
    for gpus, s in fitting.items():
        filled = staged(gpus, micro=gpus, model=key)
        assert filled.idle == pytest.approx(0, abs=1e-12)
        assert filled.interval == pytest.approx(gpus * s.slot, rel=1e-12)
        lag = gpus * s.stage.time - sum(p.time for p in s.passes)
        assert filled.interval == pytest.approx(s.interval + s.send_time * (gpus > 1) + lag, rel=1e-9)
        assert lag >= 0
        one = parallel.fit(MODELS[key], parallel.group("h100-sxm", 1), pipeline_parallel=1).weight_bytes
        held = parallel.fit(MODELS[key], parallel.group("h100-sxm", gpus), pipeline_parallel=gpus).weight_bytes
        assert held >= one / gpus
        assert held == pytest.approx(2 * max(parallel.stage_parameters(MODELS[key], gpus, k) for k in range(gpus)))


def test_at_the_same_users_a_split_gives_more_decode_tokens_over_the_explorers_menus_but_for_many_users_or_a_small_model():
    """Part 2's verdict on decode, over every setting of the live pipeline explorer, its finer steps of users
    included: stages beat Part 1's split for the same users only over PCIe: for Llama 3 70B from 848 users (eight
    micro-batches of 106) on eight cards, for Llama 3 8B from 338 users, and for Llama 3.2 1B from one user; never
    for Qwen3-235B-A22B, nor over NVLink, where the last stage's output head keeps the split ahead; every model loses
    somewhere. The site's powers of two first reach 1,024 and 512."""
    assert set(lesson_4.FINE_BATCHES) >= set(lesson_4.BATCHES) and lesson_4.FINE_BATCHES == tuple(range(1, 257))
    won, lost, swept = [], set(), set()
    for key, link, users, staged, split in stage_sweep.settings():
        assert staged.stages > 1
        swept.add(users // staged.micro_batches)
        if split is None:
            continue
        assert split.time == step(staged.stages, link, users, key).time
        if staged.interval < split.time:
            won.append((key, link, staged.stages, staged.micro_batches, users))
        else:
            lost.add(key)
    assert swept == set(lesson_4.FINE_BATCHES)
    assert lost == set(lesson_4.MODELS_SHOWN)
    assert {w[1:3] for w in won if w[0] == "llama-3-70b"} == {("pcie", 8)}
    assert min(w[3:] for w in won if w[0] == "llama-3-70b") == (8, 848)
    assert not [w for w in won if w[0] == "qwen3-235b-a22b"]
    assert min(w[4] for w in won if w[0] == "llama-3-8b") == 338 and {w[1] for w in won} == {"pcie"}
    assert min(w[4] for w in won if w[0] == "llama-3.2-1b" and w[1] == "pcie") == 1
    assert stage_sweep.stages_ahead() == {"llama-3-70b": {"pcie": 848}, "llama-3-8b": {"pcie": 338},
                                       "llama-3.2-1b": {"pcie": 1}}
    # At the site's settings, powers of two, the stages first win at 1,024 and 512 users.
    site = [w for w in won if w[4] // w[3] in lesson_4.BATCHES]
    assert (min(w[4] for w in site if w[0] == "llama-3-70b"), min(w[4] for w in site if w[0] == "llama-3-8b")) \
        == (1024, 512)


def test_the_sends_are_a_sliver_of_each_bar_for_llama_3_70b():
    """The legend's red segments: at most 0.95 % of a bar for the page's model, four pixels of the panel's width."""
    from servingmath.charts import kit

    width = kit.Panel.make((0, 1), (0, 1), kit.TOP, 220).x
    for key in lesson_4.MODELS_SHOWN:
        shares = [(s.stages - 1) * s.send_time / s.interval for k, *_, s, _ in stage_sweep.settings() if k == key]
        assert stage_sweep.sends_most(key) == max(shares)
    assert stage_sweep.sends_most("llama-3-70b") * (width.end - width.start) < 4
    assert stage_sweep.sends_most("qwen3-235b-a22b") < 0.01 < stage_sweep.sends_most("llama-3.2-1b")
    with pytest.raises(ValueError, match="model must be one of the explorer's .* got 'gpt-5'"):
        stage_sweep.sends_most("gpt-5")


def test_routers_shows_example_3_1_and_every_rate_the_slider_offers():
    from servingmath import replicas
    from servingmath.explorers import clock
    made = lesson_4.routers()
    at = replicas.routers(9)
    assert made.readouts_at()["one queue: first token p50 / p99"] == f"{clock(at['one-queue'].ttft_p50)} / " \
        f"{clock(at['one-queue'].ttft_p99)}"
    for rate in lesson_4.ROUTER_RATES:
        shown = made.readouts_at(rate=rate)
        assert shown["in turn: preemptions"] == f"{replicas.routers(rate)['round-robin'].preemptions:,}"
    assert "fewest in flight: p50" in made.svg_at(rate=10)


# -- Part 4: prefill and decode apart --------------------------------------------------------------
def _held(lengths, tpot, link):
    """Each layout's highest slider rate at which the explorer's run meets both targets for 90 % of requests."""
    from servingmath import disaggregation

    held = {}
    for layout in disaggregation.layouts(4):
        met = [rate for rate in lesson_4.SPLIT_RATES if disaggregation.attainment(
            layout, rate, lesson_4.SPLIT_TTFT, tpot, lengths, link, lesson_4.SPLIT_REQUESTS) >= 0.9]
        held[layout.name] = max(met, default=0)
    return held


def test_disaggregated_reads_out_each_layouts_run_and_follows_every_control():
    from servingmath import disaggregation, units

    made = lesson_4.disaggregated()
    for settings in ({}, {"rate": 16, "lengths": "sharegpt"}, {"tpot": 0.02, "link": "roce-400g", "rate": 20}):
        asked = {**made.default, **settings}
        shown = made.readouts_at(**settings)
        for layout in disaggregation.layouts(4):
            run = disaggregation.run(layout, asked["rate"], asked["lengths"], asked["link"], lesson_4.SPLIT_REQUESTS)
            assert shown[f"met, {layout.name}"] == units.percent(run.attainment(lesson_4.SPLIT_TTFT, asked["tpot"]))
            if not layout.colocated:
                assert shown["trip, 1 prefill + 3 decode, median"] == ms(float(np.median(run.transfer)))
    live = made.live().set(rate=9)      # Jupyter's finer steps
    assert live.readouts["met, 4 colocated"] == made.readouts_at(rate=9)["met, 4 colocated"]


@pytest.mark.parametrize("tpot", [0.015, 0.02])
@pytest.mark.parametrize("link", ["nvlink4", "roce-400g"])
def test_with_sharegpts_prompts_the_colocated_bar_holds_longest_and_with_long_ones_a_split_does(tpot, link):
    """The page's pointer (ShareGPT's prompts: colocated holds longest) at every setting; long prompts at Example
    4.1's 15 ms: a split holds longer (at 20 ms the layouts' goodputs lie within a slider step of one another)."""
    short = _held("sharegpt", tpot, link)
    assert short["4 colocated"] > max(v for name, v in short.items() if name != "4 colocated"), short
    if tpot == 0.015:
        long = _held("long", tpot, link)
        assert max(v for name, v in long.items() if name != "4 colocated") > long["4 colocated"], long


def test_the_layouts_bars_keep_off_the_prefill_and_decode_colours():
    """Colocated and split GPUs each do something other than one phase: neither is drawn in a phase's colour."""
    from servingmath.charts import kit

    svg = lesson_4.disaggregated().svg_at()
    light = {name: colours[0] for name, colours in kit.PALETTE.items()}
    assert light["extra"] in svg and light["teal"] in svg
    assert light["prefill"] not in svg and light["decode"] not in svg


def test_the_routers_bars_keep_off_the_prefill_and_decode_colours():
    """A router is no phase: no router's bar is drawn in the prefill or the decode colour."""
    from servingmath.charts import kit

    svg = lesson_4.routers(rate=6).svg_at()
    light = {name: colours[0] for name, colours in kit.PALETTE.items()}
    assert light["neutral"] in svg and light["extra"] in svg and light["teal"] in svg
    assert light["prefill"] not in svg and light["decode"] not in svg


@pytest.mark.parametrize("link", ["nvlink4", "roce-400g"])
def test_with_sharegpts_prompts_at_20_ms_the_colocated_bar_falls_within_the_slider(link):
    held = _held("sharegpt", 0.02, link)
    assert held["4 colocated"] < max(lesson_4.SPLIT_RATES), held
