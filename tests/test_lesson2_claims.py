"""Lesson 2's general sentences, held against every model and GPU of the catalog they speak of."""
import pytest

import servingmath as sm
from servingmath import cache
from servingmath.memory import kv_cache_bytes

# Models whose every layer caches keys and values per KV head for every token (no latent, no window).
KEYS_AND_VALUES = [m for m in sm.MODELS.values() if not m.latent_attention and not m.sliding_layers]
RENTED = [g for g in sm.CATALOG.values() if g.price_per_hour is not None]  # the data-centre GPUs
LATENT = [m for m in sm.MODELS.values() if m.latent_attention]


@pytest.mark.parametrize("model", KEYS_AND_VALUES, ids=[m.name for m in KEYS_AND_VALUES])
def test_grouped_query_and_multi_head_decode_over_a_full_window_never_turns_compute_bound(model):
    """Part 4: "for grouped-query and multi-head models without sliding windows, decode over a
    conversation that fills the window stays memory-bound at any batch on every data-centre GPU of
    the catalog", with a 16-bit cache; and attention alone does heads ÷ KV heads FLOPs a byte, under
    every ridge of the catalog, laptops included."""
    for gpu in sm.CATALOG.values():
        ridge = sm.ridge_point(gpu.peak_flops, gpu.memory_bandwidth)
        assert cache.decode_attention_intensity(model) == model.heads / model.kv_heads < ridge
    for gpu in RENTED:
        assert sm.serving.compute_bound_batch(model, gpu, model.context_window - 1,
                                              assumptions=cache.CACHE_READ) is None, (model.name, gpu.name)


def test_latent_attention_is_the_exception_the_page_names():
    v2 = sm.MODELS["deepseek-v2"]
    h100 = sm.H100_SXM
    ridge = sm.ridge_point(h100.peak_flops, h100.memory_bandwidth)
    assert round(cache.decode_attention_intensity(v2)) == 242 < ridge < round(cache.decode_attention_intensity(v2, 8))
    assert all(cache.decode_attention_intensity(m) > 16 for m in LATENT)
    # "DeepSeek-V2 and V3, with 128 heads, ... about 242; DeepSeek-V2-Lite, with 16, about 30": every
    # latent-attention model of the catalog is one of these, and the ratio is heads × 2,176 ÷ 1,152.
    assert {m.name: m.heads for m in LATENT} == {"DeepSeek-V2-Lite": 16, "DeepSeek-V2": 128, "DeepSeek-V3": 128}
    for m in LATENT:
        assert cache.decode_attention_intensity(m) == m.heads * (2 * 576 + 2 * 512) / (576 * 2)
    assert round(cache.decode_attention_intensity(sm.MODELS["deepseek-v2-lite"])) == 30 < ridge


def test_every_cache_with_a_sliding_window_stops_growing_at_it():
    """Part 2: a cache is a straight line in the tokens only where every layer keeps every token."""
    for model in sm.MODELS.values():
        window = model.context_window
        full, half = kv_cache_bytes(model, window), kv_cache_bytes(model, window // 2)
        if model.sliding_layers and model.sliding_window < window:
            assert full < 2 * half, model.name  # bends: the sliding layers hold only their window
        else:
            assert full == 2 * half, model.name  # a straight line through zero


NOT_LATENT = [m for m in sm.MODELS.values() if not m.latent_attention]


@pytest.mark.parametrize("model", NOT_LATENT, ids=[m.name for m in NOT_LATENT])
def test_wrap_up_memory_bound_sentence_holds_for_every_grouped_query_model_sliding_windows_included(model):
    """Wrap-up, point 4: "for grouped-query models on a data-centre GPU, 16-bit caches that fill the
    window keep decode memory-bound at any batch" names no exception for sliding windows, so it must
    hold for them too."""
    for gpu in RENTED:
        assert sm.serving.compute_bound_batch(model, gpu, model.context_window - 1,
                                              assumptions=cache.CACHE_READ) is None, (model.name, gpu.name)


def _problem_check(solution, label, answer):
    """Run a solution notebook's setup cell and one problem's check cell on ``answer``; return its result."""
    import pathlib

    import jupytext

    cells = [c.source for c in jupytext.read(pathlib.Path(__file__).parents[1] / "solutions" / solution).cells
             if c.cell_type == "code"]
    setup = next(c for c in cells if c.startswith("# Setup."))
    checking = next(c for c in cells if f'label="{label}"' in c and "check(answer" in c)
    namespace = {"__name__": "__main__"}
    exec(setup, namespace)
    exec(f"answer = {answer!r}", namespace)
    exec(checking.replace("check(answer", "_shown = check(answer", 1), namespace)
    return namespace["_shown"]


def test_problem_3_2_names_decimal_memory_and_the_forgotten_reserve():
    from servingmath.memory import fit

    l40s, model = sm.CATALOG["l40s"], sm.MODELS["llama-2-7b"]      # the practice's model
    room = lambda gpu, **kw: (fit(model, gpu, **kw).usable_bytes - fit(model, gpu, **kw).weight_bytes) / 1e9
    assert _problem_check("lesson-2-part-3.md", "3.2", room(l40s)).status == "right"
    decimal = _problem_check("lesson-2-part-3.md", "3.2", room(l40s.with_changes(memory_bytes=45e9)))
    assert decimal.slip == "decimal gigabytes for the memory" and "45 × 2³⁰ bytes" in decimal.message
    assert "course counts decimal gigabytes" not in decimal.message
    assert _problem_check("lesson-2-part-3.md", "3.2", room(l40s, reserve=0)).slip == "the reserve forgotten"
    assert _problem_check("lesson-2-part-3.md", "3.2", room(l40s) * 1e9 / 2**30).slip == "GiB for GB"


def test_part_4s_longest_compute_bound_conversation_is_the_last_that_turns():
    """Part 4: "turns compute-bound only while each conversation holds at most 335 tokens": 335 itself turns."""
    model, gpu = sm.LLAMA_3_8B, sm.H100_SXM
    longest = cache.longest_compute_bound_context(model, gpu)
    assert longest == 335
    for cached, turns in ((longest, True), (longest + 1, False)):
        needed = sm.serving.compute_bound_batch(model, gpu, cached, assumptions=cache.CACHE_READ)
        assert (needed <= sm.memory.max_batch(model, gpu, cached + 1)) is turns


@pytest.mark.parametrize("model", NOT_LATENT, ids=[m.name for m in NOT_LATENT])
def test_the_memory_bound_sentences_hold_with_16_bit_caches_whatever_the_weights_bits(model):
    """Part 4 and the wrap-up name a 16-bit cache: it holds there with 16-, 8- or 4-bit weights."""
    for gpu in RENTED:
        for weight_bits in (16, 8, 4):
            assert sm.serving.compute_bound_batch(model, gpu, model.context_window - 1, weight_bits=weight_bits,
                                                  assumptions=cache.CACHE_READ) is None, (model.name, gpu.name)


def test_a_4_bit_cache_can_turn_a_full_window_compute_bound_as_part_4_says():
    """Why the sentences name the cache's bits: with a 4-bit cache a batch that fits can turn compute-bound."""
    found = []
    for model in NOT_LATENT:
        for gpu in RENTED:
            needed = sm.serving.compute_bound_batch(model, gpu, model.context_window - 1, kv_bits=4,
                                                    assumptions=cache.CACHE_READ)
            if needed is not None and needed <= sm.memory.max_batch(model, gpu, model.context_window, kv_bits=4):
                found.append((model.name, gpu.name))
    assert ("Phi-3 medium 4K", "NVIDIA H200 SXM") in found
