"""Lesson 4's explorer, at Part 1's example and at settings the page asks the reader to try, and the part's
claims over every model the explorer offers."""
import pytest

from servingmath import parallel
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


def test_the_note_says_each_link_runs_one_way_at_half_its_listed_figure():
    from servingmath import hardware

    assert "one-way line rate, half the listed figure" in lesson_4.tensor_parallel().note
    for gpu, joined in lesson_4.MACHINES.values():
        link = hardware.link(gpu, joined)
        assert link.bandwidth * 2 == float(link.listed.split()[0]) * 1e9, link.key


# -- Part 4: prefill and decode apart --------------------------------------------------------------
def _held(lengths, tpot, link):
    """Each layout's highest slider rate at which the explorer's run meets both targets for 90 % of requests."""
    from servingmath import disaggregation

    held = {}
    for layout in disaggregation.layouts(4):
        met = [rate for rate in lesson_4.SPLIT_RATES if disaggregation.run(
            layout, rate, lengths, link, lesson_4.SPLIT_REQUESTS).attainment(lesson_4.SPLIT_TTFT, tpot) >= 0.9]
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
