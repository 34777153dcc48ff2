"""The lab: the model's passes agree with each other and with the package's count, the
measurements return sane figures, the machine entry is a valid catalog entry, and the
chart draws what it is given."""
import itertools
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import servingmath as sm
from servingmath import lab, units
from servingmath.explorers import lab as lab_figures

SMALL = sm.Model("small", layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=160, vocab=97,
                 tied_embeddings=True)


@pytest.fixture(scope="module")
def small():
    return lab.Decoder.random(SMALL, seed=3)


def prompt(length, vocab=SMALL.vocab):
    return np.random.default_rng(7).integers(0, vocab, length)


# -- the model ---------------------------------------------------------------------------
def test_prefill_logits_equal_decode_steps_over_the_cache(small):
    tokens = prompt(11)
    at_once = small.forward(tokens, small.new_cache(11))
    cache = small.new_cache(11)
    one_at_a_time = np.concatenate([small.forward(tokens[i:i + 1], cache) for i in range(11)])
    assert at_once.shape == (11, SMALL.vocab) and cache.length == 11
    np.testing.assert_allclose(at_once[-1], one_at_a_time[-1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(at_once, one_at_a_time, rtol=1e-4, atol=1e-5)


def test_a_prompt_read_in_two_passes_over_the_cache_equals_one_pass(small):
    tokens = prompt(11)
    at_once = small.forward(tokens, small.new_cache(11))
    cache = small.new_cache(11)
    first, second = small.forward(tokens[:5], cache), small.forward(tokens[5:], cache)
    np.testing.assert_allclose(np.concatenate([first, second]), at_once, rtol=1e-4, atol=1e-5)


def test_attention_in_chunks_of_queries_equals_attention_at_once(small, monkeypatch):
    tokens = prompt(11)
    at_once = small.forward(tokens, small.new_cache(11))
    monkeypatch.setattr(lab, "QUERY_CHUNK", 4)
    np.testing.assert_allclose(small.forward(tokens, small.new_cache(11)), at_once, rtol=1e-5, atol=1e-6)


def test_causal_mask_hides_later_tokens(small):
    tokens = prompt(6)
    changed = tokens.copy()
    changed[-1] = (changed[-1] + 1) % SMALL.vocab
    original = small.forward(tokens, small.new_cache(6))
    altered = small.forward(changed, small.new_cache(6))
    np.testing.assert_array_equal(original[:-1], altered[:-1])
    assert not np.allclose(original[-1], altered[-1])


def test_forward_refuses_more_tokens_than_the_cache_holds(small):
    cache = small.new_cache(4)
    small.forward(prompt(3), cache)
    with pytest.raises(ValueError, match="tokens must number 1 to 1"):
        small.forward(prompt(2), cache)


def test_parameters_in_the_arrays_equal_the_package_count(small):
    assert small.parameters == SMALL.parameters == 92_544
    assert all(w.dtype == np.float32 for w in small.weights.values())
    one_layer = lab.Decoder.random(lab.lab_shape(100e6))
    assert one_layer.parameters == one_layer.shape.parameters == 22_023_168


def test_random_weights_refuse_shapes_the_decoder_does_not_build():
    with pytest.raises(ValueError, match="tied embeddings"):
        lab.Decoder.random(sm.LLAMA_3_8B)  # untied: refused before any weight is made
    with pytest.raises(TypeError, match="shape must be a Model"):
        lab.Decoder.random("llama")


def test_lab_shape_is_the_deepest_that_fits():
    assert lab.lab_shape(100e6).layers == 1
    shape = lab.lab_shape(1e9)
    assert shape.layers == 17 and shape.name == "lab model, 17 layers"
    one, two = (sm.Model("x", layers=n, tied_embeddings=True, **lab.WIDTH) for n in (1, 2))
    per_layer = two.parameters - one.parameters
    assert per_layer == 13_633_536
    assert shape.parameters * 4 <= 1e9 < (shape.parameters + per_layer) * 4
    assert lab.lab_shape(1).layers == 1  # never fewer than one layer
    assert lab.lab_shape(1e9, weight_bits=16).layers == 36
    assert shape.tied_embeddings and shape.hidden == 1024 and shape.kv_heads == 4


@pytest.mark.parametrize("bad, error", [(0, ValueError), (-5, ValueError), ("1e9", TypeError)])
def test_lab_shape_refuses_bad_sizes(bad, error):
    with pytest.raises(error, match="weight_bytes"):
        lab.lab_shape(bad)


# -- measuring the machine ----------------------------------------------------------------
def test_bandwidth_measurement_is_positive_finite_and_sane():
    read = lab.measure_bandwidth(16e6, repeats=3, threads=1)
    assert read.work == 976 * 4096 * 4  # whole rows of 4,096 float32 numbers, at most 16 MB
    assert len(read.timing.seconds) == 3 and len(read.runs) == 3
    assert math.isfinite(read.per_second) and 1e8 < read.per_second < 1e13
    assert read.runs.min() <= read.per_second <= read.runs.max()


def test_matmul_measurement_is_positive_finite_and_sane():
    product = lab.measure_matmul_flops(128, repeats=3)
    assert product.work == 2 * 128**3
    assert math.isfinite(product.per_second) and 1e7 < product.per_second < 1e16


@pytest.mark.parametrize("call, name", [
    (lambda: lab.measure_bandwidth(0), "read_bytes"),
    (lambda: lab.measure_bandwidth(1e6, repeats=0), "repeats"),
    (lambda: lab.measure_matmul_flops(0), "size"),
    (lambda: lab.measure_matmul_flops(2.5), "size"),
])
def test_measurements_refuse_bad_sizes(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_time_runs_stops_at_repeats_or_when_enough_time_is_spent(monkeypatch):
    clock = itertools.count()  # every reading of the clock is one second later
    monkeypatch.setattr(lab.time, "perf_counter", lambda: float(next(clock)))
    waits = []
    timing = lab.time_runs(lambda: None, 10, enough=2.5, synchronize=lambda: waits.append(1))
    assert timing.seconds == (1.0, 1.0, 1.0) and len(waits) == 3
    assert lab.time_runs(lambda: None, 2).seconds == (1.0, 1.0)
    assert lab.Timing((3.0, 1.0, 2.0)).median == 2.0


def test_usable_cpus_is_at_most_the_cores_this_process_may_run_on():
    cpus = lab.usable_cpus()
    assert 1 <= cpus <= (os.cpu_count() or 1)


def test_numpy_threads_are_limited_inside_the_context_only():
    from threadpoolctl import threadpool_info

    before = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
    with lab.NUMPY.threads(1):
        assert {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"} == {1}
    assert [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"] == before
    with pytest.raises(ValueError, match="threads"):
        lab.NUMPY.threads(0)


def test_memory_is_positive_and_a_container_limit_lowers_it(tmp_path, monkeypatch):
    physical = lab.machine_memory()
    assert physical > 2**28 and lab.memory_limit() <= physical
    limit = tmp_path / "memory.max"
    limit.write_text("2147483648\n")
    monkeypatch.setattr(lab, "_CONTAINER_LIMITS", (str(limit),))
    assert lab.memory_limit() == min(physical, 2_147_483_648)
    limit.write_text("max\n")  # no limit set
    assert lab.memory_limit() == physical


def test_this_machine_is_a_valid_catalog_entry_with_its_float32_rate_as_peak():
    machine = lab.this_machine(20e9, 400e9, memory_bytes=16e9)
    assert isinstance(machine, sm.GPU) and machine.key == "this-machine"
    assert machine.peak_flops == machine.flops("fp32") == 400e9
    assert machine.memory_bandwidth == 20e9 and machine.memory_bytes == 16e9 and machine.price_per_hour is None
    assert "fp16 figure is the measured fp32 rate" in machine.source
    assert sm.ridge_point(machine.peak_flops, machine.memory_bandwidth) == 20.0
    default = lab.this_machine(1e9, 1e9)
    assert default.memory_bytes == lab.machine_memory() and default.name == "this machine (measured)"
    gpu = lab.this_machine(900e9, 60e12, memory_bytes=24e9, name="a GPU (measured)", measured_format="fp16")
    assert dict(gpu.dense_flops) == {"fp16": 60e12} and gpu.name == "a GPU (measured)"


@pytest.mark.parametrize("arguments, error, name", [
    ((0, 1e9), ValueError, "bandwidth"),
    ((1e9, -1), ValueError, "flops"),
    (("fast", 1e9), TypeError, "bandwidth"),
])
def test_this_machine_refuses_bad_figures(arguments, error, name):
    with pytest.raises(error, match=name):
        lab.this_machine(*arguments, memory_bytes=1e9)
    with pytest.raises(ValueError, match="measured_format"):
        lab.this_machine(1e9, 1e9, memory_bytes=1e9, measured_format="int8")


@pytest.mark.parametrize("device_name, key", [
    ("Tesla T4", "t4"), ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA H200", "h200"), ("NVIDIA A100-SXM4-80GB", "a100-80gb"), ("NVIDIA L4", "l4"),
    ("NVIDIA L40S", "l40s"), ("NVIDIA B200", "b200"), ("AMD Instinct MI300X", "mi300x"),
])
def test_gpu_names_find_their_catalog_entries(device_name, key):
    assert lab.catalog_entry_for(device_name) is sm.CATALOG[key]


def test_unknown_gpus_find_no_entry():
    assert lab.catalog_entry_for("NVIDIA A100-SXM4-40GB") is None  # a different memory, a different bandwidth
    assert lab.catalog_entry_for("NVIDIA GeForce RTX 4090") is None
    with pytest.raises(TypeError, match="device_name"):
        lab.catalog_entry_for(None)


# -- timing and reading the results -----------------------------------------------------------
def test_timing_prefill_and_decode_returns_one_figure_per_length_and_step(small):
    sweep = lab.time_prefill(small, [1, 4, 16], repeats=2, threads=1)
    np.testing.assert_array_equal(sweep.tokens, [1, 4, 16])
    assert sweep.seconds.shape == (3,) and np.all(sweep.seconds > 0)
    np.testing.assert_allclose(sweep.time_per_token, sweep.seconds / [1, 4, 16])
    decode = lab.time_decode(small, cached_tokens=9, steps=4)
    assert decode.cached_tokens == 9 and len(decode.timing.seconds) == 4 and decode.seconds > 0
    assert lab.time_decode(small, cached_tokens=0, steps=1).seconds > 0


def test_gain_stops_where_no_longer_pass_is_more_than_ten_percent_better():
    tokens = [1, 2, 4, 8, 16]
    assert lab.gain_stops(tokens, [8, 4, 2, 1.05, 1.0]) == 8
    assert lab.gain_stops(tokens, [8, 4, 2, 1.0, 1.5]) == 8  # rising again at the end
    assert lab.gain_stops(tokens, [8, 4, 2, 2.5, 1.0]) == 16  # a late drop counts
    assert lab.gain_stops(tokens, [1, 1, 1, 1, 1]) == 1
    assert lab.gain_stops(tokens, [8, 4, 2, 1.3, 1.0], within=0.5) == 8
    with pytest.raises(ValueError, match="equal-length"):
        lab.gain_stops([1, 2], [1.0])
    with pytest.raises(ValueError, match="time_per_token"):
        lab.gain_stops([1, 2], [1.0, -1.0])


def test_bandwidth_fraction_is_bytes_over_seconds_over_bandwidth():
    assert lab.bandwidth_fraction(100, 2, 25) == 2.0
    with pytest.raises(ValueError, match="seconds"):
        lab.bandwidth_fraction(100, 0, 25)


def test_predicted_curve_turns_compute_bound_at_twice_the_ridge_in_32_bits():
    machine = lab.this_machine(10e9, 100e9, memory_bytes=16e9)  # ridge 10 FLOP/byte
    shape = lab.lab_shape(100e6)
    curve = lab.predicted_curve("p", shape, machine, np.arange(1, 65), 128, 32)
    assert curve.knee == 20.0 and not curve.measured and curve.cached_tokens == 128
    passes = sm.step(shape, machine, np.arange(1, 65), weight_bits=32, kv_bits=32, assumptions=lab.MEASURED)
    np.testing.assert_array_equal(curve.time_per_token, passes.time_per_token)
    decode = sm.decode_step(shape, machine, 128, weight_bits=32, kv_bits=32, assumptions=lab.MEASURED)
    assert curve.decode_time == decode.time
    assert lab.predicted_curve("p", shape, machine, np.arange(1, 8), 0, 32).knee is None


def test_the_plate_curve_gives_the_plates_figures():
    plate = lab.predicted_curve("plate", sm.LLAMA_3_8B, sm.H100_SXM, np.arange(1, 4097), 1000, 16, sm.PLATE)
    assert units.ms(plate.time_per_token[1023], 4) == "0.0277 ms"
    assert units.ms(plate.decode_time) == "6.24 ms"
    assert plate.knee == 222.0


def test_measured_curve_marks_where_gains_stop():
    sweep = lab.PrefillSweep(np.array([1, 2, 4, 8]), np.array([1.0, 1.0, 1.1, 2.2]))
    decode = lab.DecodeTiming(5, lab.Timing((1.2, 1.0, 1.1)))
    curve = lab.measured_curve("m", sweep, decode)
    assert curve.knee == 4.0 and curve.decode_time == 1.1 and curve.cached_tokens == 5 and curve.measured
    np.testing.assert_allclose(curve.time_per_token, [1.0, 0.5, 0.275, 0.275])


def test_chart_draws_the_plate_beside_the_measured_machine():
    machine = lab.this_machine(10e9, 100e9, memory_bytes=16e9)
    plate = lab.predicted_curve("plate", sm.LLAMA_3_8B, sm.H100_SXM, np.arange(1, 2049), 1000, 16, sm.PLATE)
    prediction = lab.predicted_curve("prediction", lab.lab_shape(100e6), machine, np.arange(1, 65), 128, 32)
    measured = lab.measured_curve("measured", lab.PrefillSweep(np.array([1, 8, 64]), np.array([0.02, 0.025, 0.2])),
                                  lab.DecodeTiming(128, lab.Timing((0.021,))))
    figure = lab_figures.beside_plate(plate, prediction, measured, "plate", "here")
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", figure)
    assert "arithmetic takes over: 20" in texts and "gains stop: 8" in texts
    assert "◆ measured decode step, 128 cached tokens" in texts and texts.count("tokens per pass") == 2
    assert figure.count("<polyline") == 2 and figure.count('class="webchart-marker') == 3  # a line a panel, three dots
    assert figure._repr_svg_() == figure and "nan" not in figure


# -- how long it runs ------------------------------------------------------------------------
def test_settings_choose_the_mode_asked_unless_the_environment_says_otherwise(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(lab.MODE_VARIABLE, raising=False)
    full = lab.settings("full")
    assert full.mode == "full" and full.reason == "chosen in the notebook" and full.progress
    assert full.weight_bytes == min(1e9, lab.memory_limit() / 4)
    assert full.prompt_tokens[-1] == 4096 and full.cached_tokens == 1000
    quick = lab.settings()
    assert quick.mode == "quick" and quick.prompt_tokens == (1, 2, 4, 8, 16, 32, 64, 128, 256)
    assert not quick.progress and quick.threads == 1
    assert quick.beyond_cache and quick.weight_bytes >= lab.CACHE_MARGIN * quick.last_level_cache
    assert full.threads == lab.usable_cpus()
    monkeypatch.setenv("CI", "true")
    assert lab.settings("full").mode == "quick" and lab.settings("full").reason == "CI is set in the environment"
    monkeypatch.setenv(lab.MODE_VARIABLE, "full")
    assert lab.settings("quick").mode == "full"


def test_mode_settings_ignore_the_environment(monkeypatch):
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv(lab.MODE_VARIABLE, "quick")
    full = lab.mode_settings("full")
    assert full.mode == "full" and full.reason == "asked for"
    assert full.weight_bytes == min(lab.FULL_WEIGHT_CAP, lab.FULL_MEMORY_SHARE * lab.memory_limit())
    with pytest.raises(ValueError, match="mode must be one of"):
        lab.mode_settings("medium")


def test_settings_refuse_unknown_modes(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(lab.MODE_VARIABLE, raising=False)
    with pytest.raises(ValueError, match="mode must be one of"):
        lab.settings("medium")
    monkeypatch.setenv(lab.MODE_VARIABLE, "slow")
    with pytest.raises(ValueError, match="SERVINGMATH_LAB must be one of"):
        lab.settings("quick")


def test_the_lab_runs_without_torch():
    code = "import sys, servingmath.lab; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# -- units the lab prints ----------------------------------------------------------------------
def test_units_for_a_processor():
    assert units.mb(88_092_672) == "88 MB"
    assert units.gb_per_s(6.42e9) == "6.4 GB/s"
    assert units.gbit_per_s(50e9) == "400 Gb/s"  # a network port: bits, not bytes
    assert units.gflops(47.5e9) == "48 GFLOP/s"
    assert units.gflops(989.4e12) == "989,400 GFLOP/s"
    with pytest.raises(ValueError, match="value"):
        units.gb_per_s(-1)


# -- the last-level cache: the lab reads beyond it ------------------------------------------------
def _fake_cpu(tmp_path, caches):
    """A sysfs tree: ``caches`` maps a cpu number to [(level, type, size, shared_cpu_list)]."""
    for cpu, entries in caches.items():
        for number, (level, kind, size, shared) in enumerate(entries):
            index = tmp_path / f"cpu{cpu}" / "cache" / f"index{number}"
            index.mkdir(parents=True)
            (index / "level").write_text(f"{level}\n")
            (index / "type").write_text(f"{kind}\n")
            (index / "size").write_text(f"{size}\n")
            (index / "shared_cpu_list").write_text(f"{shared}\n")
    return tmp_path


def test_last_level_cache_adds_up_the_highest_levels_instances(tmp_path):
    l1 = [(1, "Data", "48K", "0"), (1, "Instruction", "32K", "0")]
    tree = _fake_cpu(tmp_path, {
        0: l1 + [(2, "Unified", "2048K", "0"), (3, "Unified", "32768K", "0-7")],
        1: l1 + [(2, "Unified", "2048K", "1"), (3, "Unified", "32768K", "0-7")],
        8: l1 + [(2, "Unified", "2048K", "8"), (3, "Unified", "32768K", "8-15")],
    })
    assert lab.last_level_cache(tree) == (2 * 32 * 2**20, "sysfs")  # two L3 instances of 32 MiB


def test_last_level_cache_is_assumed_large_where_the_system_does_not_say(tmp_path, monkeypatch):
    import subprocess as sp

    def no_lscpu(*args, **kwargs):
        raise FileNotFoundError("lscpu")

    monkeypatch.setattr(sp, "run", no_lscpu)
    assert lab.last_level_cache(tmp_path) == (lab.ASSUMED_LAST_LEVEL_CACHE, "assumed")
    assert lab.ASSUMED_LAST_LEVEL_CACHE == 512 * 2**20


def test_quick_mode_reads_beyond_the_last_level_cache(monkeypatch):
    monkeypatch.setattr(lab, "last_level_cache", lambda: (300 * 2**20, "sysfs"))
    monkeypatch.setattr(lab, "memory_limit", lambda: 64 * 2**30)
    quick = lab.mode_settings("quick")
    assert quick.weight_bytes == quick.read_bytes == 2 * 300 * 2**20
    assert quick.beyond_cache and quick.shape.layers > 1
    monkeypatch.setattr(lab, "last_level_cache", lambda: (8 * 2**20, "sysfs"))
    small = lab.mode_settings("quick")
    assert (small.weight_bytes, small.read_bytes) == (100e6, 256e6) and small.shape.layers == 1
    assert small.beyond_cache


def test_quick_sweep_reaches_past_the_turn_within_a_few_seconds_of_arithmetic(monkeypatch):
    monkeypatch.setattr(lab, "memory_limit", lambda: 64 * 2**30)
    for cache in (300 * 2**20, lab.ASSUMED_LAST_LEVEL_CACHE):  # this build server's, and the largest assumed
        monkeypatch.setattr(lab, "last_level_cache", lambda: (cache, "sysfs"))
        quick = lab.mode_settings("quick")
        assert quick.beyond_cache and quick.prompt_tokens[:2] == (1, 2)
        # Three times past 2 × the ridge of the catalog's laptop (36 FLOP a byte).
        assert quick.prompt_tokens[-1] >= 3 * 2 * 36
        sweep = sum(sm.forward_pass(quick.shape, n, weight_bits=32, kv_bits=32, attention="full").flops
                    for n in quick.prompt_tokens)
        # One pass over each length: under 3 s on a core doing 100 GFLOP/s; to 1,024 tokens, four times that.
        assert sweep < 300e9, sweep


@pytest.mark.parametrize("text, size", [("307200K", 307200 * 1024), ("32 MiB", 32 * 2**20), ("512", 512)])
def test_cache_sizes_as_the_system_writes_them(text, size):
    assert lab._cache_size(text) == size
    with pytest.raises(ValueError, match="cache size must read like"):
        lab._cache_size("big")


def test_a_decode_step_is_never_above_100_percent_of_its_floor_by_construction():
    """The floor rests on the fastest read seen (the bandwidth test's best run, or the step's own fastest
    where that read faster), so the median step can never beat it, however the runs spread."""
    work = 1e9
    spread_read = lab.Rate(work, lab.Timing((0.5, 0.2, 0.1, 0.3)))     # 2 to 10 GB/s
    assert spread_read.best == 10e9 and spread_read.per_second == 4e9
    for steps in [(0.3, 0.25, 0.4), (0.05, 0.5, 0.08), (0.01, 0.01, 0.01), (1.0,)]:
        decode = lab.DecodeTiming(1, lab.Timing(steps))
        against = lab.against_floor(work, spread_read, decode)
        assert 0 < against.share <= 1
        assert against.floor <= decode.fastest <= decode.seconds
        assert against.step_set_ceiling == (work / min(steps) > spread_read.best)
    # A median-based floor could read 207 %; the best-run one cannot.
    fast = lab.DecodeTiming(1, lab.Timing((0.05, 0.06, 0.07)))
    assert work / spread_read.per_second / fast.seconds > 2
    assert lab.against_floor(work, spread_read, fast).share <= 1
    # Where the step sets the ceiling its floor is its fastest time exactly, not bytes ÷ (bytes ÷ time), which
    # for these figures rounds a hair above it (the lab page's assert once failed on such a run).
    odd_bytes, odd_time = 2407536057.549969, 0.23163567499944332
    assert odd_bytes / (odd_bytes / odd_time) > odd_time
    slow_read = lab.Rate(odd_bytes, lab.Timing((1.0,)))
    one_step = lab.DecodeTiming(1, lab.Timing((odd_time,)))
    assert lab.against_floor(odd_bytes, slow_read, one_step).floor == odd_time
    assert lab.against_floor(odd_bytes, slow_read, one_step).share == 1
    with pytest.raises(ValueError, match="bytes_moved"):
        lab.against_floor(0, spread_read, fast)
    with pytest.raises(TypeError, match="read"):
        lab.against_floor(work, 1e9, fast)
