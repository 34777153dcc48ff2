"""servingmath.parallel and the catalog's interconnects: hand-computed cases, catalog-wide
properties and every bad input."""
import dataclasses

import numpy as np
import pytest

from servingmath import hardware, parallel
from servingmath.hardware import CATALOG, GPU_LINKS, INTERCONNECTS
from servingmath.memory import DoesNotFit
from servingmath.models import MODELS
from servingmath.passes import forward_pass

L70 = MODELS["llama-3-70b"]
H100 = CATALOG["h100-sxm"]
PASS = forward_pass(L70, 1, 1000)


# -- the catalog's links ----------------------------------------------------------------------------
def test_llama_3_70b_is_catalogued_with_its_config_json_shape():
    # meta-llama/Meta-Llama-3-70B config.json: 80 layers, 8,192 wide, 64 heads, 8 KV heads, 28,672 MLP
    assert (L70.layers, L70.hidden, L70.heads, L70.kv_heads, L70.ffn, L70.vocab) == (80, 8192, 64, 8, 28672, 128256)
    assert L70.parameters == 70_553_706_496


def test_links_name_gpus_and_links_that_exist():
    assert set(GPU_LINKS) <= set(CATALOG)
    assert all(key in INTERCONNECTS for keys in GPU_LINKS.values() for key in keys)
    assert all(INTERCONNECTS[keys[0]].scope == "node" for keys in GPU_LINKS.values())


def test_each_links_latency_is_a_two_gpu_measurement_named_with_its_source():
    assert (hardware.NVLINK_LATENCY, hardware.PCIE_LATENCY) == (6e-6, 20.36e-6)
    assert "2 GPUs, NCCL 2.20.5" in hardware.NVLINK_LATENCY_SOURCE and "NVLSTree" in hardware.NVLINK_LATENCY_SOURCE
    assert "-g 2 on 2 Tesla T4" in hardware.PCIE_LATENCY_SOURCE and "20.36" in hardware.PCIE_LATENCY_SOURCE
    for key in ("pcie3", "pcie4", "pcie5"):
        assert INTERCONNECTS[key].latency == hardware.PCIE_LATENCY
    for key in ("nvlink-bridge-h100", "nvlink-bridge-a100"):    # borrowed from the NVSwitch, and said so
        assert "needs an NVSwitch that a bridged pair lacks" in INTERCONNECTS[key].latency_source


def test_pcie_latency_grows_from_its_two_gpu_to_its_eight_gpu_measurement():
    assert hardware.PCIE_LATENCY_8 == 43.47e-6 and "-g 8" in hardware.PCIE_LATENCY_8_SOURCE
    assert "43.47" in hardware.PCIE_LATENCY_8_SOURCE and "nccl/issues/1530" in hardware.PCIE_LATENCY_8_SOURCE
    for key in ("pcie3", "pcie4", "pcie5"):
        link = INTERCONNECTS[key]
        assert link.latency_for(2) == hardware.PCIE_LATENCY and link.latency_for(8) == hardware.PCIE_LATENCY_8
        assert link.latency_for(4) == pytest.approx(hardware.PCIE_LATENCY + (hardware.PCIE_LATENCY_8 - hardware.PCIE_LATENCY) / 3)
        assert link.latency_for(16) == hardware.PCIE_LATENCY_8      # held at the largest count measured
        assert hardware.PCIE_LATENCY_8_SOURCE in link.latency_source
    # Links measured on two GPUs only keep that figure at every count; the all-reduce reads the count's figure.
    nvlink = INTERCONNECTS["nvlink4"]
    assert nvlink.latency_for(8) == nvlink.latency_for(2) == hardware.NVLINK_LATENCY
    pcie = INTERCONNECTS["pcie5"]
    np.testing.assert_allclose(parallel.allreduce_time(0.0, np.array([1, 2, 4, 8]), pcie),
                               [0.0, pcie.latency, pcie.latency_for(4), hardware.PCIE_LATENCY_8])


@pytest.mark.parametrize("points", [((8, 1e-6),), ((2, 50e-6),), ((8, 50e-6), (4, 30e-6)), ((4, 30e-6), (4, 40e-6))])
def test_more_gpus_latency_must_grow_above_two_gpus(points):
    with pytest.raises(ValueError, match="more_gpus_latency"):
        dataclasses.replace(INTERCONNECTS["pcie5"], more_gpus_latency=points)


def test_bandwidth_is_one_way_half_the_listed_sum_of_both():
    assert hardware.link("h100-sxm").bandwidth == 450e9      # "900 GB/s"
    assert hardware.link("h200").bandwidth == 450e9
    assert hardware.link("a100-80gb").bandwidth == 300e9     # "600 GB/s"
    assert hardware.link("b200").bandwidth == 900e9          # "1.8 TB/s"
    assert hardware.link("h100-pcie").max_gpus == 2          # the bridge pairs two cards
    assert hardware.link("l4").key == hardware.link("l40s").key == "pcie4"
    assert hardware.link("h100-pcie", "pcie5").bandwidth == 64e9
    for entry in INTERCONNECTS.values():
        both = float(entry.listed.split()[0].replace(",", "")) * (1e12 if " TB/s" in entry.listed else 1e9)
        if "both directions" in entry.listed:
            assert entry.bandwidth == both / 2, entry.key
        else:  # a NIC's port, listed in gigabits a second each way
            assert entry.bandwidth == both / 8, entry.key


def test_a_link_the_gpu_cannot_have_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"NVIDIA L4 cannot have 'nvlink4'"):
        hardware.link("l4", "nvlink4")
    with pytest.raises(ValueError, match=r"no link to other GPUs.*'laptop'"):
        hardware.link("laptop")
    with pytest.raises(TypeError, match="link must be"):
        hardware.link("h100-sxm", 4)
    assert hardware.links("m2-ultra") == ()


# -- Llama 3 70B decode on 1, 2, 4, 8 H100 SXM, computed by hand --------------------------------------
CACHED = 1000


def by_hand(n):
    """Per-GPU roofline time (memory-bound) and the 160 all-reduces of one decode step."""
    params, norms = 70_553_706_496, 80 * 2 * 8192 + 8192
    weights = ((params - norms) / n + norms) * 2
    kv_token = 2 * 80 * 8 * 128 * 2                      # 327,680 bytes a token
    cache = (CACHED + 1) * kv_token / n                   # read 1,000, write 1
    flops = (2 * 70_553_706_496 + 4 * 80 * 8192 * (CACHED + 1)) / n
    compute = max(flops / 989.4e12, (weights + cache) / 3.35e12)
    each = 6e-6 + 2 * (n - 1) / n * 8192 * 2 / 450e9 if n > 1 else 0.0
    return compute, 2 * 80 * each


def test_70b_in_16_bits_is_refused_on_one_h100():
    with pytest.raises(DoesNotFit, match=r"Llama 3 70B does not fit on 1 x NVIDIA H100 SXM.*141\.11 GB"):
        parallel.tensor_parallel_step(L70, parallel.group("h100-sxm", 1), cached_tokens=CACHED)
    assert not parallel.fit(L70, parallel.group(H100, 1)).fits
    assert parallel.fit(L70, parallel.group(H100, 1), weight_bits=8).fits


@pytest.mark.parametrize("n", [2, 4, 8])
def test_decode_step_of_70b_on_n_h100s_by_hand(n):
    step = parallel.tensor_parallel_step(L70, parallel.group("h100-sxm", n), cached_tokens=CACHED)
    compute, communication = by_hand(n)
    assert step.compute.bound == "memory"
    assert step.compute.time == pytest.approx(compute, rel=1e-12)
    assert step.allreduces == 160
    assert step.communication == pytest.approx(communication, rel=1e-12)
    assert step.time == pytest.approx(compute + communication, rel=1e-12)


def test_decode_of_70b_figures_and_the_all_reduce_share():
    steps = {n: parallel.tensor_parallel_step(L70, parallel.group(H100, n), cached_tokens=CACHED) for n in (2, 4, 8)}
    assert [round(steps[n].time * 1e3, 2) for n in (2, 4, 8)] == [22.08, 11.52, 6.25]
    assert [round(float(steps[n].communication_share) * 100, 1) for n in (2, 4, 8)] == [4.4, 8.4, 15.5]
    # the all-reduces cost nearly the same at every N (latency-bound), so their share grows as the pass shrinks
    assert steps[2].communication < steps[4].communication < steps[8].communication
    assert steps[2].communication_share < steps[4].communication_share < steps[8].communication_share


def test_arrays_sweep_as_scalars_do():
    lengths = np.array([0, 1000, 4000])
    swept = parallel.tensor_parallel_step(L70, parallel.group(H100, 4), cached_tokens=lengths, batch=8)
    one = [parallel.tensor_parallel_step(L70, parallel.group(H100, 4), cached_tokens=int(c), batch=8).time
           for c in lengths]
    np.testing.assert_allclose(swept.time, one, rtol=1e-12)
    np.testing.assert_allclose(parallel.allreduce_time(np.array([0.0, 1e6]), np.array([1, 8]), INTERCONNECTS["nvlink4"]),
                               [0.0, 6e-6 + 1.75 * 1e6 / 450e9], rtol=1e-12)


def test_a_swept_fit_holds_each_settings_fullest_stage_over_pipeline_stages():
    """One setting's fit picks its fullest stage without arrays; swept, the arrays pick the same stage, bit for bit."""
    contexts, batches = np.array([0, 1000, 4000, 8000]), np.array([1, 16, 64, 256])
    group = parallel.group(H100, 8)
    for model in (L70, MODELS["llama-3-8b"], MODELS["qwen3-235b-a22b"]):
        for stages in (1, 2, 4, 8):
            swept = parallel.fit(model, group, contexts, batches, pipeline_parallel=stages)
            each = [parallel.fit(model, group, int(c), int(b), pipeline_parallel=stages) for c, b in zip(contexts, batches)]
            assert all(type(one.weight_bytes) is float and type(one.cache_bytes) is float for one in each)
            assert swept.weight_bytes.tolist() == [one.weight_bytes for one in each], (model.name, stages)
            assert swept.cache_bytes.tolist() == [one.cache_bytes for one in each], (model.name, stages)
            assert swept.fits.tolist() == [one.fits for one in each]


# -- properties over the catalog -------------------------------------------------------------------
def degrees(model, key):
    top = hardware.link(key).max_gpus or 8     # the group's default link, fastest in a server
    out = []
    for n in (1, 2, 4, 8):
        if n > top:
            break
        try:
            parallel.check_tensor_parallel(model, n)
        except ValueError:
            break
        out.append(n)
    return out


def test_more_gpus_never_raise_the_weight_bytes_each_gpu_holds():
    checked = 0
    for key in GPU_LINKS:
        for model in MODELS.values():
            held = [parallel.fit(model, parallel.group(key, n)).weight_bytes for n in degrees(model, key)]
            assert all(b <= a for a, b in zip(held, held[1:])), (key, model.name)
            checked += len(held) > 1
    assert checked > 100


def test_all_reduce_time_grows_with_the_ring_factor():
    link = INTERCONNECTS["nvlink4"]
    n = np.arange(2, 9)
    size = 64e6
    excess = parallel.allreduce_time(size, n, link) - link.latency
    np.testing.assert_allclose(excess, 2 * (n - 1) / n * size / link.bandwidth, rtol=1e-12)
    assert np.all(np.diff(excess) > 0)
    assert excess[-1] < 2 * size / link.bandwidth      # bounded by twice the bytes, however many GPUs


def test_no_70b_model_fits_two_l4s_in_16_bits():
    big = [m for m in MODELS.values() if 60e9 < m.parameters < 80e9]
    assert len(big) >= 4
    for model in big:
        assert not parallel.fit(model, parallel.group("l4", 2)).fits
        with pytest.raises(DoesNotFit, match=r"does not fit on 2 x NVIDIA L4"):
            parallel.tensor_parallel_step(model, parallel.group("l4", 2))


def test_past_the_kv_heads_the_cache_is_copied():
    assert [parallel.kv_copies(L70, n) for n in (1, 2, 4, 8, 16, 32, 64)] == [1, 1, 1, 1, 2, 4, 8]
    sixteen = parallel.group("h100-sxm", 16, "infiniband-ndr")
    eight = parallel.group("h100-sxm", 8)
    assert parallel.fit(L70, sixteen, 4000, 4).cache_bytes == parallel.fit(L70, eight, 4000, 4).cache_bytes
    assert parallel.fit(L70, sixteen).weight_bytes < parallel.fit(L70, eight).weight_bytes
    deepseek = MODELS["deepseek-v2-lite"]               # latent attention: every GPU keeps the whole cache
    assert parallel.kv_share(deepseek, 4) == 1.0


# -- pipeline parallelism --------------------------------------------------------------------------
def test_pipeline_stages_bubbles_and_one_users_time():
    grp = parallel.group(H100, 8)
    step = parallel.pipeline_parallel_step(L70, grp, 4, cached_tokens=CACHED, batch=8, micro_batches=4)
    assert step.stage.tensor_parallel == 2 and parallel.stage_layers(L70, 4) == 20
    assert step.token_time == pytest.approx(sum(s.time for s in step.passes) + 3 * step.send_time, rel=1e-12)
    assert step.time == pytest.approx(step.token_time + 3 * step.slot, rel=1e-12)
    assert step.bubble == pytest.approx(3 / 7)
    # two micro-batch tokens' hidden states and residuals, 16 bits each
    assert step.send_time == pytest.approx(6e-6 + 2 * 2 * 8192 * 2 / 450e9)
    one = parallel.pipeline_parallel_step(L70, grp, 4, cached_tokens=CACHED, batch=8, micro_batches=1)
    assert one.time == pytest.approx(one.token_time, rel=1e-12)
    # stages do not shorten one user's time between tokens: 2 stages of TP 2 against TP 2 alone
    staged = parallel.pipeline_parallel_step(L70, parallel.group(H100, 4), 2, cached_tokens=CACHED)
    alone = parallel.tensor_parallel_step(L70, parallel.group(H100, 2), cached_tokens=CACHED)
    assert staged.token_time > alone.time
    # ... but they halve what each GPU holds
    assert parallel.fit(L70, parallel.group(H100, 4), pipeline_parallel=2).weight_bytes < \
        parallel.fit(L70, parallel.group(H100, 2)).weight_bytes


def test_a_servers_steady_pipeline_idles_until_a_micro_batch_fills_each_stage():
    grp = parallel.group(H100, 4)
    for micro in (1, 2, 4, 8):
        step = parallel.pipeline_parallel_step(L70, grp, 4, cached_tokens=CACHED, batch=8 * micro, micro_batches=micro)
        assert step.interval == pytest.approx(max(micro * step.slot, step.token_time), rel=1e-12)
        assert step.idle == pytest.approx(1 - micro * step.slot / step.interval, rel=1e-12)
        # below as many micro-batches as stages a user waits for its token to cross them; from there, its turn
        # (the slowest stage, with the input table or the head, a little less than (p - m) / p)
        assert step.idle == (pytest.approx(0, abs=1e-12) if micro >= 4 else pytest.approx((4 - micro) / 4 - 0.01, abs=0.01))
    one = parallel.pipeline_parallel_step(L70, grp, 4, cached_tokens=CACHED, batch=8)
    four = parallel.pipeline_parallel_step(L70, grp, 4, cached_tokens=CACHED, batch=32, micro_batches=4)
    # four micro-batches of 8 in flight: four times the users, four turns of the slowest stage between tokens
    assert four.interval == pytest.approx(4 * one.slot, rel=1e-12)
    assert one.interval == pytest.approx(one.token_time, rel=1e-12) and one.interval < four.interval


def test_the_last_stage_reads_the_output_head_and_sets_the_pace():
    # Llama 3.2 1B, tied embeddings: 16 layers in four stages of 4; the last reads the 128,256 x 2,048 table as its head
    small = MODELS["llama-3.2-1b"]
    assert small.tied_embeddings and parallel.stage_split(small, 4) == (4, 4, 4, 4)
    step = parallel.pipeline_parallel_step(small, parallel.group(H100, 4), 4, cached_tokens=CACHED, batch=64,
                                           micro_batches=4)
    first, *middle, last = (s.time for s in step.passes)
    head = (128256 * 2048 + 2048) * 2 / H100.memory_bandwidth
    assert first == pytest.approx(middle[0], rel=1e-12) and last == pytest.approx(first + head, rel=1e-9)
    average = sum(s.time for s in step.passes) / 4
    assert last - average == pytest.approx(head * 3 / 4, rel=1e-9)
    assert step.stage is step.passes[-1] and step.slot == pytest.approx(last + step.send_time, rel=1e-12)
    assert step.interval == pytest.approx(4 * (last + step.send_time), rel=1e-12)
    # one stage is the whole pass, and the stages' passes add up to it
    whole = parallel.tensor_parallel_step(small, "h100-sxm", cached_tokens=CACHED, batch=16)
    assert sum(s.cost.bytes for s in step.passes) == pytest.approx(whole.cost.bytes, rel=1e-12)
    assert sum(s.cost.flops for s in step.passes) == pytest.approx(whole.cost.flops, rel=1e-12)
    # Llama 3 70B, untied: the first stage holds the input table, the last the head, each 128,256 x 8,192
    ends = [s.cost.weight_bytes for s in parallel.pipeline_parallel_step(L70, parallel.group(H100, 8), 8,
                                                                        cached_tokens=CACHED).passes]
    assert ends[0] == pytest.approx(ends[-1] - 8192 * 2, rel=1e-12)
    assert ends[0] - ends[1] == pytest.approx(128256 * 8192 * 2, rel=1e-9)


def test_each_stage_is_checked_for_memory_with_what_it_holds():
    # Llama 3 70B on four H100 SXM stages of 20 layers: the last holds the output head and final norm on top of its
    # layers, so 4 x 140 users at 1,001 tokens overflow it though the average stage would hold them
    four = parallel.group(H100, 4, "nvlink4")
    held = [parallel.stage_parameters(L70, 4, s) for s in range(4)]
    assert sum(held) == pytest.approx(L70.parameters, rel=1e-12)
    assert held[0] - held[1] == 128256 * 8192 and held[3] - held[0] == 8192
    crowded = parallel.fit(L70, four, CACHED + 1, 4 * 140, pipeline_parallel=4)
    assert not crowded.fits and crowded.weight_bytes == pytest.approx(held[3] * 2, rel=1e-12)
    assert sum(held) / 4 * 2 + crowded.cache_bytes < crowded.usable_bytes
    assert "each GPU of the fullest stage holds weights 36.33 GB" in crowded.message
    with pytest.raises(DoesNotFit, match=r"fullest stage holds weights 36\.33 GB"):
        parallel.pipeline_parallel_step(L70, four, 4, cached_tokens=CACHED, batch=4 * 140, micro_batches=4)
    # with tied embeddings the first and the last stage each keep the matrix (vLLM's embed_tokens on both)
    small = MODELS["llama-3.2-1b"]
    ends = [parallel.stage_parameters(small, 2, s) for s in range(2)]
    assert ends[1] - ends[0] == 2048 and sum(ends) == pytest.approx(small.parameters + 128256 * 2048, rel=1e-12)
    assert parallel.stage_parameters(small, 1, 0) == small.parameters
    # swept, each setting's fullest stage: Qwen2.5 72B's 80 layers in six stages (13, 13, 13, 14, 14, 13), the head
    # outweighing a layer until the fourteen-layer stages' cache overtakes it
    qwen = MODELS["qwen2.5-72b"]
    swept = parallel.fit(qwen, parallel.group(H100, 6), [1, 32001], 16, pipeline_parallel=6)
    assert swept.weight_bytes[0] == pytest.approx(2 * parallel.stage_parameters(qwen, 6, 5), rel=1e-12)
    assert swept.weight_bytes[1] == pytest.approx(2 * parallel.stage_parameters(qwen, 6, 4), rel=1e-12)


def test_layers_left_over_go_to_the_stages_before_the_last_as_vllm_puts_them():
    assert parallel.stage_split(MODELS["qwen3-235b-a22b"], 4) == (23, 24, 24, 23)
    assert parallel.stage_split(L70, 3) == (27, 27, 26) and parallel.stage_layers(L70, 3) == 27
    assert parallel.stage_split(L70, 80) == (1,) * 80


# -- bad input -------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, error, match", [
    (lambda: parallel.check_tensor_parallel(L70, 3), ValueError, r"divide Llama 3 70B's 64 attention heads, got 3"),
    (lambda: parallel.check_tensor_parallel(MODELS["qwen2-7b"], 14), ValueError, r"past Qwen2 7B's 4 KV heads.*got 14"),
    (lambda: parallel.check_tensor_parallel(MODELS["phi-3-medium"], 4), ValueError, r"10 KV heads, got 4"),
    (lambda: parallel.check_tensor_parallel(L70, 0), ValueError, r"tensor_parallel must be at least 1, got 0"),
    (lambda: parallel.check_tensor_parallel(L70, "8"), TypeError, r"tensor_parallel must be a number"),
    (lambda: parallel.group("l4", 2, "nvlink4"), ValueError, r"NVIDIA L4 cannot have 'nvlink4'"),
    (lambda: parallel.group("h100-pcie", 4), ValueError, r"count must be at most 2 for NVLink bridge.*got 4"),
    (lambda: parallel.group("h100-sxm", 16), ValueError, r"count must be at most 8.*got 16"),
    (lambda: parallel.group("laptop", 2), ValueError, r"no link to other GPUs"),
    (lambda: parallel.group("h100-sxm", 2.5), ValueError, r"count must be a whole number, got 2.5"),
    (lambda: parallel.group("h100-sxm", np.array([2, 4])), TypeError, r"count must be a single number"),
    (lambda: parallel.tensor_parallel_step(L70, "h100-sxm"), DoesNotFit, r"does not fit"),
    (lambda: parallel.tensor_parallel_step(L70, 8), TypeError, r"group must be a GPUGroup"),
    (lambda: parallel.tensor_parallel_step(L70, parallel.group(H100, 2), batch=-1), ValueError, r"batch must be at least"),
    (lambda: parallel.pipeline_parallel_step(L70, parallel.group(H100, 8), 3), ValueError,
     r"pipeline_parallel must divide the group's 8 GPUs, got 3"),
    (lambda: parallel.pipeline_parallel_step(L70, parallel.group(H100, 8, "infiniband-ndr"), 81), ValueError,
     r"at most Llama 3 70B's 80 layers, got 81"),
    (lambda: parallel.pipeline_parallel_step(L70, parallel.group(H100, 4), 2, batch=6, micro_batches=4), ValueError,
     r"micro_batches must divide the batch of 6, got 4"),
    (lambda: parallel.shard(PASS, L70, 2, 4, 4), ValueError, r"stage must be below the 4 stages \(0 the first\), got 4"),
    (lambda: parallel.shard(PASS, L70, 2, 4, -1), ValueError, r"stage must be at least 0, got -1"),
    (lambda: parallel.allreduce_time(-1, 2, INTERCONNECTS["nvlink4"]), ValueError, r"bytes must be at least 0, got -1"),
    (lambda: parallel.allreduce_time(1, 2, "nvlink4"), TypeError, r"link must be a Interconnect"),
    (lambda: parallel.activation_bytes(L70, 1.5), ValueError, r"tokens must be a whole number"),
    (lambda: parallel.group("mi300x", 2), ValueError, r"AMD Instinct MI300X has no link"),
    (lambda: parallel.group("h100-sxm", 2, "pcie4"), ValueError, r"NVIDIA H100 SXM cannot have 'pcie4'"),
    (lambda: parallel.allreduce_time(np.nan, 2, INTERCONNECTS["nvlink4"]), ValueError, r"bytes must not be NaN"),
    (lambda: parallel.allreduce_time(1e6, np.array([2, 0]), INTERCONNECTS["nvlink4"]), ValueError,
     r"gpus must be at least 1"),
    (lambda: parallel.tensor_parallel_step(L70, parallel.group(H100, 2), cached_tokens="ten"), TypeError,
     r"cached_tokens must be a number"),
    (lambda: parallel.tensor_parallel_step(L70, parallel.group(H100, 2), compute="fp4"), ValueError,
     r"dtype must be one of"),
    (lambda: parallel.fit(L70, parallel.group(H100, 2), reserve=1.5), ValueError, r"reserve must be less than 1"),
])
def test_bad_input_is_refused_naming_the_value(call, error, match):
    with pytest.raises(error, match=match):
        call()
