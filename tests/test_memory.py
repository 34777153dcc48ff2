"""The KV cache of a context, and whether weights and cache fit a GPU (servingmath.memory)."""
import numpy as np
import pytest

import servingmath as sm
from servingmath import memory, models, units

M, G = sm.LLAMA_3_8B, sm.H100_SXM
H200 = sm.CATALOG["h200"]
LLAMA_70B = sm.MODELS["llama-3-70b"]


def test_kv_cache_of_a_context_is_bytes_per_token_times_tokens_and_users():
    assert sm.kv_cache_bytes(M, 1000) == 1000 * 131_072
    assert sm.kv_cache_bytes(M, 1000, batch=8, kv_bits=8) == 8 * 1000 * 65_536
    assert sm.kv_cache_bytes(M, 0) == 0
    np.testing.assert_array_equal(sm.kv_cache_bytes(M, np.array([0, 1, 8192])), [0, 131_072, 8192 * 131_072])


def test_a_sliding_window_layer_holds_at_most_its_window():
    mistral = sm.MODELS["mistral-7b"]  # v0.1: every layer slides over 4,096 tokens
    assert (mistral.sliding_window, mistral.sliding_layers) == (4096, 32)
    assert sm.kv_cache_bytes(mistral, 4096) == sm.kv_cache_bytes(mistral, 32_768) == 4096 * 131_072
    half = models.Model("half", 4, 64, 8, 8, 8, 128, 100, sliding_window=10, sliding_layers=2)
    per_layer_token = 2 * 8 * 8 * 2
    assert sm.kv_cache_bytes(half, 100) == (2 * 100 + 2 * 10) * per_layer_token


def test_forward_pass_reads_the_cache_kv_cache_bytes_counts():
    for model in sm.MODELS.values():
        cached = min(20_000, model.context_window - 1)
        cost = sm.forward_pass(model, 1, cached_tokens=cached, batch=3)
        assert cost.kv_read_bytes == sm.kv_cache_bytes(model, cached, batch=3)


def test_llama_3_70b_in_16_bits_fits_an_h200_but_not_an_h100():
    on_h100 = sm.fit(LLAMA_70B, G)
    assert not on_h100.fits and not on_h100
    assert on_h100.message == (
        "Llama 3 70B does not fit on one NVIDIA H100 SXM: weights 141.11 GB + KV cache 0.00 GB = 141.11 GB, "
        "against 81.60 GB usable of the 85.90 GB it holds (80 GiB; 5 % held back for activations and the runtime)")
    on_h200 = sm.fit(LLAMA_70B, H200)
    assert on_h200.fits and on_h200.message.startswith("Llama 3 70B fits on one NVIDIA H200 SXM: weights 141.11 GB")
    assert sm.max_batch(LLAMA_70B, G, 1000) == 0
    assert sm.max_batch(LLAMA_70B, H200, 1000) == 8  # 2.7 GB of room, 0.33 GB a user
    # with vLLM's own default (0.9 of memory for the engine) the weights alone would not fit the H200
    assert not sm.fit(LLAMA_70B, H200, reserve=0.10).fits


def test_fit_adds_weights_and_cache_against_usable_memory():
    result = sm.fit(M, G, context_tokens=8192, batch=16, weight_bits=8, kv_bits=8)
    assert result.weight_bytes == M.parameters
    assert result.cache_bytes == 16 * 8192 * 65_536
    assert result.usable_bytes == pytest.approx(0.95 * 80 * 2**30)
    assert result.spare_bytes == pytest.approx(result.usable_bytes - result.needed_bytes)
    assert result.fits


def test_max_batch_is_the_last_batch_that_fits():
    for model in sm.MODELS.values():
        for gpu in sm.CATALOG.values():
            for context in (1, 1000, min(32_768, model.context_window)):
                users = sm.max_batch(model, gpu, context)
                if users:
                    assert sm.fit(model, gpu, context, users).fits
                assert not sm.fit(model, gpu, context, users + 1).fits
    swept = sm.max_batch(M, G, np.array([1000, 2000, 4000]))
    assert list(swept) == [sm.max_batch(M, G, c) for c in (1000, 2000, 4000)]


def test_fit_sweeps_batches():
    swept = sm.fit(M, G, 4096, np.array([1, 100, 10_000]))
    assert list(swept.fits) == [True, True, False]
    assert "2 of 3 settings fit" in swept.message


@pytest.mark.parametrize("call, argument", [
    (lambda bad: sm.kv_cache_bytes(M, bad), "context_tokens"),
    (lambda bad: sm.kv_cache_bytes(M, 10, batch=bad), "batch"),
    (lambda bad: sm.fit(M, G, reserve=bad), "reserve"),
    (lambda bad: sm.max_batch(M, G, bad), "context_tokens"),
])
@pytest.mark.parametrize("bad", [-1, float("inf"), float("nan"), 2.5])
def test_memory_refuses_bad_numbers_by_name(call, argument, bad):
    with pytest.raises(ValueError, match=argument):
        call(bad)


def test_reserve_must_leave_some_memory():
    with pytest.raises(ValueError, match="reserve must be less than 1"):
        sm.fit(M, G, reserve=1)
    assert units.gb(memory.usable_memory(G, 0)) == "85.90 GB"


def test_request_step_and_batching_flag_what_does_not_fit_and_refuse_it_when_asked():
    too_big = sm.request(LLAMA_70B, G, 2000, 300)
    assert not too_big.fits
    assert too_big.fit.cache_bytes == sm.kv_cache_bytes(LLAMA_70B, 2300)
    assert "weights 141.11 GB + KV cache 0.75 GB" in too_big.fit.message
    with pytest.raises(sm.DoesNotFit, match=r"Llama 3 70B does not fit on one NVIDIA H100 SXM: weights 141.11 GB"):
        sm.request(LLAMA_70B, G, 2000, 300, must_fit=True)
    assert sm.request(LLAMA_70B, H200, 2000, 300, must_fit=True).fits
    step = sm.step(M, G, 1, cached_tokens=999, batch=64)
    assert step.fits and step.fit.cache_bytes == 64 * 1000 * 131_072
    with pytest.raises(sm.DoesNotFit, match="KV cache"):
        sm.decode_step(M, G, cached_tokens=8000, batch=64, must_fit=True)
    with pytest.raises(sm.ContextTooLong, match="Llama 3 8B's context window of 8,192 tokens, got 100,001"):
        sm.decode_step(M, G, cached_tokens=100_000, batch=64)
    crowded = sm.batching(M, G, [1, 64, 4096], cached_tokens=4000)
    assert list(crowded.fits) == [True, True, False]
    with pytest.raises(ValueError, match="2 of 3 settings fit"):
        sm.batching(M, G, [1, 64, 4096], cached_tokens=4000, must_fit=True)
    with pytest.raises(TypeError, match="must_fit must be True or False, got 'yes'"):
        sm.request(M, G, 10, 10, must_fit="yes")


def test_the_explorers_time_nothing_that_does_not_fit():
    from servingmath.explorers import lesson_1

    live = lesson_1.request().live()
    assert live.readouts["tokens a second"] == "209"
    live.set(model="llama-3-70b")
    assert set(live.readouts.values()) == {"does not fit"} and "does not fit" in live.svg
    live.set(gpu="h200")
    assert live.readouts["tokens a second"] == units.number(sm.request(sm.MODELS["llama-3-70b"], sm.CATALOG["h200"],
                                                                       3000, 250).tokens_per_second)


# -- a prefix every user shares, counted in pages ------------------------------------------
def test_a_shared_prefix_is_held_once_and_everything_else_in_each_users_pages():
    model, gpu = sm.LLAMA_3_8B, sm.H100_SXM
    per_token = model.kv_bytes_per_token()
    users = memory.max_batch_sharing_prefix(model, gpu, 3000, 1000, 16)
    room = memory.usable_memory(gpu) - memory.weight_bytes(model.parameters)
    shared, own = 62 * 16, 188 * 16 - 62 * 16            # 62 full pages of the prompt; 188 pages a user
    assert shared * per_token + users * own * per_token <= room < shared * per_token + (users + 1) * own * per_token
    assert users == 247
    # Nothing shared: each user's whole conversation in pages, which max_batch counts at the paged length.
    assert memory.max_batch_sharing_prefix(model, gpu, 3000, 0, 16) == memory.max_batch(model, gpu, 3008) == 166
    # A prefix shorter than a page shares nothing; a longer one shares more.
    assert memory.max_batch_sharing_prefix(model, gpu, 3000, 15, 16) == 166
    assert memory.max_batch_sharing_prefix(model, gpu, 3000, 2000, 16) > users


def test_a_shared_prefix_is_refused_past_the_window_and_past_a_sliding_window():
    with pytest.raises(models.ContextTooLong, match="8,192"):
        memory.max_batch_sharing_prefix(sm.LLAMA_3_8B, sm.H100_SXM, 9000, 1000)
    gemma = sm.MODELS["gemma-2-9b"]
    with pytest.raises(ValueError, match=r"context_tokens.*sliding window of 4,096.*5000"):
        memory.max_batch_sharing_prefix(gemma, sm.H100_SXM, 5000, 1000)
    # Inside its sliding window every layer holds every token, and the count stands.
    assert memory.max_batch_sharing_prefix(gemma, sm.H100_SXM, 4000, 1000) > memory.max_batch(gemma, sm.H100_SXM, 4000)


def test_usable_memory_never_exceeds_what_cuda_reports_on_any_card():
    # What the lessons count as usable (95 % of memory_bytes) must be memory a program can have:
    # below CUDA's total wherever the catalog knows it; GDDR6 cards with ECC on count what is left.
    from servingmath import hardware
    known = [gpu for gpu in sm.CATALOG.values() if gpu.cuda_reported_bytes is not None]
    assert {gpu.key for gpu in known} >= {"h100-sxm", "a100-80gb", "l4", "l40s", "t4"}
    for gpu in known:
        assert memory.usable_memory(gpu) < gpu.cuda_reported_bytes, gpu.key
        users = memory.max_batch(sm.LLAMA_3_8B, gpu, 1000)
        if users:   # the batch the lessons say fits, weights and caches, is within what CUDA shows
            assert users * memory.kv_cache_bytes(sm.LLAMA_3_8B, 1000) \
                + memory.weight_bytes(sm.LLAMA_3_8B.parameters) <= gpu.cuda_reported_bytes, gpu.key
    for key, listed in (("t4", 16), ("l4", 24), ("l40s", 48)):
        gpu = sm.CATALOG[key]
        assert gpu.memory_bytes == listed * hardware.GiB * hardware.ECC_LEFT
        assert gpu.listed_memory == f"{listed} GB"
    # Without the ECC share the L4 would be counted with more than it shows.
    assert memory.usable_memory(sm.CATALOG["l4"].with_changes(memory_bytes=24 * hardware.GiB)) \
        > sm.CATALOG["l4"].cuda_reported_bytes
