"""vLLM's start-up budget (``memory.vllm_budget``, ``memory.vllm_cache_tokens``) for V0 and V1, against
published start-up logs (``src/servingmath/data/vllm_startup_logs.yaml``).

What is checked here, and how well: the rows marked ``check`` (four V0 logs on an H100 and on an RTX 3090
outside the catalog; three V1 logs of vLLM 0.10.2 on an L40S and an L4) land within ``TOLERANCE`` of the
tokens vLLM logged, at the package's defaults (some of them supplied constants: the data file's header says
which, and the three V1 rows share one vocabulary and one pass, so they do not test the activation model). V1's
defaults by card and the order of its profiling steps are checked against vLLM's source as well.
"""
import math
import re

import numpy as np
import pytest

import servingmath as sm
from servingmath import memory
from servingmath.hardware import CATALOG, GiB
from servingmath.memory import (
    DoesNotFit,
    VLLM_COMPILED_EXTRA_BYTES,
    VLLM_NON_TORCH_BYTES,
    VLLM_NON_TORCH_RANGE,
    VLLM_V1_EARLY_CONTEXT_RANGE,
    VLLM_V1_NON_TORCH_BYTES,
    fit,
    vllm_activation_bytes,
    vllm_budget,
    vllm_cache_tokens,
    vllm_profile_defaults,
    vllm_startup_logs,
    vllm_weight_bytes,
    weight_bytes,
)
from servingmath.models import ContextTooLong

H100 = sm.H100_SXM
LLAMA_3_8B = sm.LLAMA_3_8B
TOLERANCE = 0.05
ROWS = [log for log in vllm_startup_logs() if log.check]
RUNS_VLLM = [gpu for gpu in CATALOG.values() if gpu.cuda_reported_bytes is not None]


# -- the dataset ------------------------------------------------------------------------------
def test_every_row_names_its_source_quotes_its_lines_and_adds_up():
    everything = vllm_startup_logs()
    assert len(everything) >= len(ROWS) >= 7
    for row in everything:
        assert row.source.startswith("https://github.com/") and row.quoted, row.id
        assert row.engine in ("v0", "v1") and row.vllm_version and isinstance(row.flags, dict)
        assert row.model in sm.MODELS
        logged = row.logged
        # Every figure kept from the log appears in the lines quoted from it.
        quoted = " ".join(row.quoted)
        for key in ("total_gib", "share_gib", "kv_cache_gib", "non_torch_gib"):
            if key in logged:
                assert f"{logged[key]:.2f}" in quoted, (row.id, key)
        if "blocks" in logged:
            assert str(logged["blocks"]) in quoted
        if "weights_gib" in logged:
            share = logged["total_gib"] * row.gpu_memory_utilization
            taken = logged["weights_gib"] + logged["non_torch_gib"] + logged["activation_gib"] + logged["kv_cache_gib"]
            assert abs(share - taken) < 0.02, row.id


def test_the_lora_log_is_named_as_such_and_as_compiled():
    lora = [row for row in ROWS if row.flags.get("enable_lora")]
    assert [row.id for row in lora] == ["gaie-pr-550"]
    assert "LoRA" in lora[0].notes and "torch.compile" in lora[0].notes
    # Its deployment passes --compilation-config 3: recorded, so the gap is not put down to LoRA alone.
    assert lora[0].flags["compilation_config"] == 3
    # Its measured peak carries the adapters' buffers: far above the package's, which counts none.
    assert lora[0].budget().activation_bytes / GiB == pytest.approx(0.38, abs=0.005)
    assert lora[0].logged["activation_gib"] == 2.38


def test_the_log_tokens_as_read():
    by_id = {row.id: row for row in ROWS}
    # Pull request 10511 prints no block count: 53.29 GiB in blocks of 16 tokens of 131,072 bytes.
    assert by_id["vllm-pr-10511"].tokens == math.floor(53.29 * GiB / (16 * 131_072)) * 16 == 436_544
    assert by_id["gaie-pr-550"].tokens == 7191 * 16
    # The refused start prints the same count: "maximum number of tokens ... (23648)".
    assert by_id["vllm-issue-10517-29k"].tokens == 23_648


# -- the rows held as checks -----------------------------------------------------------------
@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_each_checked_log_within_the_band(row):
    assert abs(row.error()) < TOLERANCE


def test_the_band_as_the_page_states_it():
    errors = {row.id: row.error() for row in ROWS}
    assert {key: round(100 * value, 1) for key, value in errors.items()} == {
        "vllm-pr-10511": 3.7, "gaie-pr-550": 3.6, "vllm-issue-10517-20k": 2.0, "vllm-issue-10517-29k": 0.3,
        "qls-l40s-qwen3-8b-eager": 0.6, "qls-l40s-qwen3-8b-compiled": 3.4, "qls-l4-qwen3-0.6b-eager": 0.1}
    assert all(value > 0 for value in errors.values())   # every check: high
    # At least three cards and both engines, as the target asks.
    cards = {str(row.card) for row in ROWS}
    assert len(cards) == 4 and {row.engine for row in ROWS} == {"v0", "v1"}
    assert {row.card for row in ROWS if row.engine == "v1"} == {"l40s", "l4"}


def test_v1_rows_pass_their_version_and_keep_graphs_outside_the_share():
    for row in ROWS:
        if row.engine == "v1":
            budget = row.budget()
            assert row.version == "0.10.2" and budget.version == "0.10.2"
            assert budget.graphs_outside_share and budget.cuda_graph_bytes == 0
            # The profiling pass vLLM logged ("max_num_batched_tokens=2048") is the one the table gives the card.
            assert budget.max_num_batched_tokens == 2048 and "max_num_batched_tokens=2048." in " ".join(row.quoted)
        else:
            assert row.version is None


def test_the_activation_model_beside_v1s_own_figures():
    by_id = {row.id: row for row in ROWS}
    # Eager passes: the model lands within 0.02 GiB of the peak vLLM measured, on both cards.
    for key in ("qls-l40s-qwen3-8b-eager", "qls-l4-qwen3-0.6b-eager"):
        row = by_id[key]
        assert row.budget().activation_bytes / GiB == pytest.approx(row.logged["activation_gib"], abs=0.02), key
    # The small model peaks in the sampler (256 rows of its vocabulary), the 8B model in its layers.
    small = by_id["qls-l4-qwen3-0.6b-eager"].budget()
    assert small.activation_bytes == 256 * small.model.vocab * 14 + 2048 * small.model.hidden * 2
    # Compiled, the same pass peaked 0.66 GiB higher: the eager model counts 3.4 % more; compiled=True adds that
    # difference, read from these two rows (so they do not test it).
    compiled, eager = by_id["qls-l40s-qwen3-8b-compiled"], by_id["qls-l40s-qwen3-8b-eager"]
    assert compiled.budget().activation_bytes == eager.budget().activation_bytes
    difference = compiled.logged["activation_gib"] - eager.logged["activation_gib"]
    assert VLLM_COMPILED_EXTRA_BYTES == pytest.approx(difference * GiB) and round(difference, 2) == 0.66
    assert compiled.error() > eager.error()
    assert compiled.budget(compiled=True).activation_bytes == compiled.budget().activation_bytes + VLLM_COMPILED_EXTRA_BYTES


def test_the_checked_v1_logs_share_one_vocabulary_and_one_pass():
    # What the page says: the V1 checks do not test the activation model, and none is from a large card.
    v1 = [row for row in ROWS if row.engine == "v1"]
    assert {sm.MODELS[row.model].vocab for row in v1} == {151_936}
    assert {(row.budget().max_num_batched_tokens, row.budget().max_num_seqs) for row in v1} == {(2048, 256)}
    large_tier = sm.engines.row("vllm", "V1").cells["max_running"].value.tiers[-1][0]
    assert all(row.gpu.cuda_reported_bytes < large_tier * GiB for row in v1)


def test_v1_on_an_h100_is_a_range_from_eager_to_compiled():
    eager = vllm_budget(LLAMA_3_8B, H100, engine="v1")
    compiled = vllm_budget(LLAMA_3_8B, H100, engine="v1", compiled=True)
    assert (eager.tokens, compiled.tokens) == (446_608, 441_200)
    assert eager.cache_bytes - compiled.cache_bytes == pytest.approx(VLLM_COMPILED_EXTRA_BYTES)
    # The sampler's 14 bytes a logit, fitted at 256 rows, make most of the eager peak at V1's 1,024.
    sampler = 1024 * LLAMA_3_8B.vocab * 14
    assert eager.activation_bytes == pytest.approx(sampler + 8192 * LLAMA_3_8B.hidden * 2) and sampler > 0.9 * \
        eager.activation_bytes
    with pytest.raises(TypeError, match="compiled must be True or False, got 'yes'"):
        vllm_budget(LLAMA_3_8B, H100, engine="v1", compiled="yes")


def test_non_torch_memory_is_the_largest_unknown():
    row = next(row for row in ROWS if row.id == "vllm-pr-10511")
    low, high = VLLM_NON_TORCH_RANGE["v0"]
    assert (low, high) == (0.16 * GiB, 1.79 * GiB) and VLLM_NON_TORCH_BYTES == 0.16 * GiB
    # Each engine's default is read from its own logs: V1's from the V1 rows, V0's from a V0 row.
    assert {row.logged["non_torch_gib"] for row in ROWS if row.engine == "v1"} == {VLLM_V1_NON_TORCH_BYTES / GiB}
    assert VLLM_NON_TORCH_BYTES / GiB in {row.logged.get("non_torch_gib") for row in ROWS if row.engine == "v0"}
    assert vllm_budget(LLAMA_3_8B, H100, engine="v1").non_torch_bytes == VLLM_V1_NON_TORCH_BYTES
    assert vllm_budget(LLAMA_3_8B, H100).non_torch_bytes == VLLM_NON_TORCH_BYTES
    # Each engine's range spans that engine's checked logs that print the figure: no V0 log is below 0.16 GiB.
    for engine in ("v0", "v1"):
        printed = [row.logged["non_torch_gib"] * GiB for row in ROWS if row.engine == engine and "non_torch_gib" in
                   row.logged]
        assert (min(printed), max(printed)) == pytest.approx(VLLM_NON_TORCH_RANGE[engine])
    assert VLLM_NON_TORCH_RANGE["v1"] == (VLLM_V1_NON_TORCH_BYTES,) * 2
    assert vllm_budget(LLAMA_3_8B, H100, non_torch_bytes=low).tokens == vllm_budget(LLAMA_3_8B, H100).tokens
    # With the log's own non-torch figure the count lands within 1 %; the range moves it by 3 %.
    assert abs(row.error(non_torch_bytes=high)) < 0.01
    spread = row.budget().tokens - row.budget(non_torch_bytes=high).tokens
    assert spread == pytest.approx((high - VLLM_NON_TORCH_BYTES) / LLAMA_3_8B.kv_bytes_per_token(), abs=16)


def test_the_pr_10511_setup_as_the_page_shows_it():
    budget = vllm_budget(LLAMA_3_8B, H100)
    assert (budget.engine, budget.max_num_batched_tokens, budget.max_num_seqs) == ("v0", 8192, 256)
    assert budget.tokens == vllm_cache_tokens(LLAMA_3_8B, H100) == 452_576 == budget.blocks * 16
    assert math.floor(budget.max_concurrency) == 55
    # The activation peak is the layers' (0.91 GiB): the sampler's, 0.49 GiB, comes after them.
    assert round(budget.activation_bytes / GiB, 2) == 0.91


# -- how each engine profiles -------------------------------------------------------------------
def test_v0_profiles_the_window_or_2048_tokens():
    assert vllm_profile_defaults(LLAMA_3_8B, H100, "v0") == (8192, 256)
    assert vllm_profile_defaults(sm.MODELS["llama-2-7b"], H100, "v0") == (4096, 256)
    assert vllm_profile_defaults(sm.MODELS["llama-2-7b"], H100, "v0", max_model_len=1024) == (2048, 256)
    # Past 32,768 tokens V0 chunks its prefills and profiles 2,048.
    assert vllm_profile_defaults(sm.MODELS["llama-3.1-8b"], H100, "v0") == (2048, 256)
    assert vllm_profile_defaults(sm.MODELS["llama-3.1-8b"], H100, "v0", max_model_len=20000) == (20000, 256)


def test_v1_profiles_by_the_card():
    # The T4 at 0.11, the first release V1 ran on it; every other card at the budget's V1 without a version.
    def pass_on(gpu):
        version = sm.engines.VLLM_V0_REMOVED if gpu.key in sm.engines.VLLM_V1_BELOW_SM80 else None
        return vllm_profile_defaults(LLAMA_3_8B, gpu, "v1", version=version)
    large = {gpu.key for gpu in RUNS_VLLM if pass_on(gpu) == (8192, 1024)}
    small = {gpu.key for gpu in RUNS_VLLM if pass_on(gpu) == (2048, 256)}
    assert large == {"h100-sxm", "h200", "mi300x", "b200"}
    assert small == {"a100-80gb", "a100-80gb-pcie", "l4", "l40s", "t4"}
    # The A100 reports more than 70 GiB and still takes the smaller defaults (vLLM pull request 17885).
    large_tier = sm.engines.row("vllm", "0.27").cells["step_tokens"].value.tiers[-1][0]
    assert CATALOG["a100-80gb"].cuda_reported_bytes > large_tier * GiB
    # From 0.28 the cards reporting 160 GiB or more profile 16,384 tokens (vLLM pull request 51726).
    later = {gpu.key for gpu in RUNS_VLLM if vllm_profile_defaults(LLAMA_3_8B, gpu, "v1", version="0.28.0") == (16384, 1024)}
    assert later == {"mi300x", "b200"}  # the H200 reports 139.81 GiB: still 8,192
    # Short windows cap the pass at max_num_seqs × max_model_len.
    assert vllm_profile_defaults(LLAMA_3_8B, H100, "v1", max_model_len=4) == (4096, 1024)


def test_the_peak_is_the_larger_of_the_layers_and_the_sampler_not_their_sum():
    tokens, seqs = 8192, 256
    layers = tokens * (3 * LLAMA_3_8B.ffn + 4 * LLAMA_3_8B.hidden) * 2
    sampler = seqs * LLAMA_3_8B.vocab * 14 + tokens * LLAMA_3_8B.hidden * 2
    assert vllm_activation_bytes(LLAMA_3_8B, tokens, seqs) == max(layers, sampler) == layers
    # V1's 1,024 sequences on an H100: the sampler's peak is now the larger.
    sampler_v1 = 1024 * LLAMA_3_8B.vocab * 14 + tokens * LLAMA_3_8B.hidden * 2
    assert vllm_activation_bytes(LLAMA_3_8B, tokens, 1024) == sampler_v1 > layers
    assert vllm_activation_bytes(LLAMA_3_8B, tokens, 1024) < layers + sampler_v1


def test_v1_keeps_fewer_tokens_on_an_h100_and_graphs_count_from_0_21():
    v0, v1 = vllm_budget(LLAMA_3_8B, H100), vllm_budget(LLAMA_3_8B, H100, engine="v1")
    assert v1.tokens < v0.tokens and v1.graphs_outside_share and v1.cuda_graph_bytes == 0
    later = vllm_budget(LLAMA_3_8B, H100, 0.9, engine="v1", version="0.21.0")
    assert not later.graphs_outside_share and later.cuda_graph_bytes == memory.VLLM_CUDA_GRAPH_EXAMPLE_BYTES
    assert later.tokens < v1.tokens
    # From 0.21 the share is 0.92 unless told (the engines table's row): V1 then keeps more than V0 at 0.9.
    own_share = vllm_budget(LLAMA_3_8B, H100, engine="v1", version="0.21.0")
    assert own_share.gpu_memory_utilization == 0.92 and own_share.tokens == 456_640 > v0.tokens == 452_576
    mine = vllm_budget(LLAMA_3_8B, H100, 0.9, engine="v1", version="0.27.1", cuda_graph_bytes=1 * GiB)
    assert v1.cache_bytes - mine.cache_bytes == pytest.approx(1 * GiB)
    assert vllm_budget(LLAMA_3_8B, H100, engine="v1", version="0.20.2").graphs_outside_share


def test_v1_reads_each_versions_row_of_the_engines_table():
    # 0.8.0 to 0.8.3 ran 1,024 sequences on every card (vLLM pull request 16158 set 256 back in 0.8.4).
    l4, qwen = CATALOG["l4"], sm.MODELS["qwen3-0.6b"]
    assert vllm_profile_defaults(qwen, l4, "v1", version="0.8.0") == (2048, sm.engines.defaults("vllm", "0.8.0", gpu=l4).max_running) == (2048, 1024)
    assert vllm_profile_defaults(qwen, l4, "v1", version="0.8.4") == (2048, 256)
    # Before 0.9.1 V1 counted the CUDA context as non-torch memory: the L4's, as its logs show it.
    l4_early = VLLM_V1_NON_TORCH_BYTES + VLLM_V1_EARLY_CONTEXT_RANGE[0]
    early = vllm_budget(qwen, l4, 0.85, max_model_len=1024, engine="v1", version="0.8.0", non_torch_bytes=l4_early)
    assert early.max_num_seqs == 1024 and early.tokens < vllm_budget(qwen, l4, 0.85, max_model_len=1024, engine="v1",
                                                                       version="0.8.4", non_torch_bytes=l4_early).tokens
    # The share: the row's, 0.9 before 0.21 and 0.92 from it, unless one is passed.
    for version, share in ((None, 0.9), ("0.8.0", 0.9), ("0.20.1", 0.9), ("0.21.0", 0.92), ("0.28.0", 0.92)):
        moe = sm.MODELS["qwen3-30b-a3b"]          # from 0.22 the graphs' figure is the log's: one is given
        graphs = {"cuda_graph_bytes": 0.5 * GiB} if version == "0.28.0" else {}
        if version == "0.8.0":                    # before 0.9.1 the CUDA context is the caller's to give
            graphs = {"non_torch_bytes": VLLM_V1_NON_TORCH_BYTES + VLLM_V1_EARLY_CONTEXT_RANGE[1]}
        assert vllm_budget(moe, CATALOG["h200"], engine="v1", version=version, **graphs).gpu_memory_utilization == share
        assert sm.engines.defaults("vllm", version or "0.20", gpu=H100).memory_fraction == share
    assert vllm_budget(LLAMA_3_8B, H100, 0.8, engine="v1", version="0.21.0").gpu_memory_utilization == 0.8
    # Before 0.9 the large tier went by name, then took in the A100: only the H100, the H200 and the small
    # cards are counted there; V1 before 0.8 (not the default) and V0 from 0.11 (removed) are refused.
    assert vllm_profile_defaults(LLAMA_3_8B, H100, "v1", version="0.8.0") == (8192, 1024)
    for key in ("a100-80gb", "mi300x", "b200"):
        with pytest.raises(ValueError, match="pull request 17073"):
            vllm_budget(LLAMA_3_8B, CATALOG[key], engine="v1", version="0.8.5")
        assert vllm_budget(LLAMA_3_8B, CATALOG[key], engine="v1", version="0.9.1").tokens > 0
    with pytest.raises(ValueError, match=r"version must be 0\.8 or later for engine='v1'.*'0\.7\.3'"):
        vllm_budget(LLAMA_3_8B, H100, engine="v1", version="0.7.3")
    with pytest.raises(ValueError, match=r"version must be before 0\.11 for engine='v0'.*'0\.11\.0'"):
        vllm_budget(LLAMA_3_8B, H100, engine="v0", version="0.11.0")


def test_v1_before_pull_request_19312_asks_for_its_non_torch_memory():
    """V1 counted the CUDA context as non-torch memory until 0.9.1, the first release carrying pull request 19312
    (PyPI's 0.9.0 and 0.9.1 sources): the context depends on the card, so an earlier version must say it."""
    assert sm.engines.VLLM_V1_MEMORY_PROFILING_SINCE == "0.9.1"
    l4 = CATALOG["l4"]
    for version in ("0.8.0", "0.8.5", "0.9", "0.9.0"):
        with pytest.raises(ValueError, match=rf"non_torch_bytes must be given for V1 before 0\.9\.1 "
                                             rf"\(version '{re.escape(version)}'\).*pull request 19312.*0\.22 to 0\.49 GiB"):
            vllm_budget(LLAMA_3_8B, l4, engine="v1", version=version, max_model_len=4096)
    # Given, it is the L4's context on top of the later releases' figure: the page's 34,288 tokens against 36,080.
    early = vllm_budget(LLAMA_3_8B, l4, engine="v1", version="0.9.0", max_model_len=4096,
                        non_torch_bytes=VLLM_V1_NON_TORCH_BYTES + VLLM_V1_EARLY_CONTEXT_RANGE[0])
    later = vllm_budget(LLAMA_3_8B, l4, engine="v1", version="0.9.1", max_model_len=4096)
    assert (early.tokens, later.tokens) == (34_288, 36_080)
    assert later.non_torch_bytes == VLLM_V1_NON_TORCH_BYTES == vllm_budget(LLAMA_3_8B, l4, engine="v1",
                                                                           max_model_len=4096).non_torch_bytes
    assert vllm_budget(LLAMA_3_8B, l4, engine="v0", version="0.9.0", max_model_len=4096).non_torch_bytes == \
        VLLM_NON_TORCH_BYTES


def test_v1_on_a_t4_is_refused_until_v0_was_removed():
    # Below compute capability 8.0 vLLM fell back to V0 until 0.11 (EngineArgs._is_v1_supported_oracle).
    t4, small = CATALOG["t4"], sm.MODELS["qwen2.5-0.5b"]
    for version in ("0.8.0", "0.9", "0.10.2"):
        with pytest.raises(ValueError, match="compute capability below 8.0"):
            vllm_budget(small, t4, engine="v1", version=version)
    assert vllm_budget(small, t4, engine="v1", version="0.11.0").tokens > 0
    assert vllm_budget(small, t4, engine="v0").tokens > 0
    # No version stands for releases before 0.21, most of them before 0.11: refused too.
    with pytest.raises(ValueError, match=r"did not run on NVIDIA T4 at version None"):
        vllm_budget(small, t4, engine="v1")


def test_v0_chunks_long_windows_only_on_nvidia_and_without_sliding_layers():
    # EngineArgs.create_engine_config: `is_gpu and not use_sliding_window and ...` past 32,768 tokens.
    gemma = sm.MODELS["gemma-3-4b"]
    assert vllm_profile_defaults(gemma, H100, "v0") == (gemma.context_window, 256)
    assert vllm_profile_defaults(sm.MODELS["llama-3.1-8b"], H100, "v0") == (2048, 256)
    # On ROCm, and for latent-attention models, the rule changed between releases: refused unless the pass is given.
    for model, gpu in ((sm.MODELS["llama-3.1-8b"], CATALOG["mi300x"]), (sm.MODELS["deepseek-v2-lite"], H100)):
        with pytest.raises(ValueError, match="max_model_len .* changed between releases"):
            vllm_budget(model, gpu)
        assert vllm_budget(model, gpu, max_model_len=32768).max_num_batched_tokens == 32768
    given = vllm_budget(sm.MODELS["llama-3.1-8b"], CATALOG["mi300x"], max_num_batched_tokens=131072, max_num_seqs=256)
    assert given.max_num_batched_tokens == 131072


def test_from_0_22_the_graph_memory_must_come_from_the_log():
    # From 0.22.0 vLLM moved models to Model Runner V2 family by family (Qwen3's dense models first, every dense
    # model by 0.25.0), and that runner estimated nothing until after 0.28.0: the log's figure is asked for.
    assert sm.engines.VLLM_V1_RUNNER_V2_FIRST == "0.22.0"
    for model in (LLAMA_3_8B, sm.MODELS["qwen3-8b"], sm.MODELS["qwen3-30b-a3b"]):
        for version in ("0.22.0", "0.25.0", "0.28.0", "0.29.0"):
            with pytest.raises(ValueError, match=r"cuda_graph_bytes must be given for V1 from 0\.22\.0"):
                vllm_budget(model, H100, engine="v1", version=version)
    # The log's 0 (Model Runner V2's placeholder) leaves the graphs on top of the share; a figure comes out of it.
    none = vllm_budget(LLAMA_3_8B, H100, engine="v1", version="0.25.0", cuda_graph_bytes=0)
    some = vllm_budget(LLAMA_3_8B, H100, engine="v1", version="0.29.0", cuda_graph_bytes=0.5 * GiB)
    assert none.graphs_outside_share and none.cuda_graph_bytes == 0
    assert not some.graphs_outside_share and some.cuda_graph_bytes == 0.5 * GiB
    assert none.tokens > some.tokens
    # 0.21.x ran every model on the older runner, which estimated them: the package's example figure.
    for model in (LLAMA_3_8B, sm.MODELS["qwen3-8b"], sm.MODELS["qwen3-30b-a3b"]):
        at_21 = vllm_budget(model, H100, engine="v1", version="0.21.0")
        assert at_21.cuda_graph_bytes == memory.VLLM_CUDA_GRAPH_EXAMPLE_BYTES and not at_21.graphs_outside_share


def test_v1_counts_whole_blocks_a_request_as_its_log_does():
    # get_max_concurrency_for_kv_cache_config: blocks ÷ whole blocks a request; from 0.21 the log's tokens are that
    # × max_model_len; before it (and with no version), blocks × 16.
    v1 = vllm_budget(LLAMA_3_8B, H100, 0.9, engine="v1", version="0.21.0", max_model_len=1000)
    assert v1.max_concurrency == v1.blocks / math.ceil(1000 / 16) and v1.tokens == int(v1.blocks / 63 * 1000)
    assert v1.tokens < v1.blocks * 16
    earlier = vllm_budget(LLAMA_3_8B, H100, engine="v1", max_model_len=1000)
    assert earlier.tokens == earlier.blocks * 16 == vllm_budget(LLAMA_3_8B, H100, engine="v1", version="0.20.2",
                                                                max_model_len=1000).tokens
    v0 = vllm_budget(LLAMA_3_8B, H100, max_model_len=1000)
    assert v0.max_concurrency == v0.blocks * 16 / 1000 and v0.tokens == v0.blocks * 16
    # A whole number of blocks: the two counts agree.
    whole = vllm_budget(LLAMA_3_8B, H100, engine="v1")
    assert whole.tokens == whole.blocks * 16


def test_sliding_window_models_as_each_engine_pages_them():
    gemma, mistral = sm.MODELS["gemma-2-9b"], sm.MODELS["mistral-7b"]
    for model in (gemma, mistral):
        v0 = vllm_budget(model, H100)
        assert v0.tokens == v0.blocks * 16           # V0: a page of every block for every layer
        v1 = vllm_budget(model, H100, 0.9, engine="v1", version="0.21.0")
        assert v1.tokens == int(v1.max_concurrency * v1.max_model_len)
    # Mistral 7B: every layer slides over 4,096 tokens, so a 32,768-token request holds 769 blocks and V1 from
    # 0.21 logs far more tokens than its memory holds at full length.
    v1 = vllm_budget(mistral, H100, 0.9, engine="v1", version="0.21.0")
    assert v1._blocks_per_request() == math.ceil((4095 + 8192) / 16) + 1 == 769
    assert v1.tokens > 2.5 * v1.blocks * 16
    # Gemma 2 9B: a full group and a sliding group of 21 layers each; at an 8,192-token window the sliding
    # layers hold the whole request too.
    g1 = vllm_budget(gemma, H100, engine="v1")
    assert g1._layer_groups() == (21, [(8192, False), (8192, True)]) and g1._blocks_per_request() == 512 + 513


# -- every card, both engines -------------------------------------------------------------------
@pytest.mark.parametrize("engine", ["v0", "v1"])
def test_every_catalog_card_computes_or_is_refused_by_name(engine):
    small = sm.MODELS["qwen2.5-0.5b"]
    for gpu in CATALOG.values():
        if gpu.cuda_reported_bytes is None:
            with pytest.raises(ValueError, match=re.escape(gpu.name)):
                vllm_cache_tokens(small, gpu, engine=engine)
        elif engine == "v1" and gpu.key in sm.engines.VLLM_V1_BELOW_SM80:
            with pytest.raises(ValueError, match=re.escape(gpu.name)):
                vllm_cache_tokens(small, gpu, engine=engine)
            assert vllm_budget(small, gpu, engine=engine, version=sm.engines.VLLM_V0_REMOVED).tokens > 0
        else:
            budget = vllm_budget(small, gpu, engine=engine)
            assert 0 < budget.cache_bytes < budget.share_bytes and budget.tokens > small.context_window, gpu.key
    apple = [gpu for gpu in CATALOG.values() if "Apple" in gpu.name]
    with pytest.raises(ValueError, match="not on Apple's"):
        vllm_cache_tokens(small, apple[0], engine=engine)


def test_the_cuda_figures_are_sourced_and_below_the_sheet():
    assert {gpu.key for gpu in RUNS_VLLM} == {"h100-sxm", "h200", "a100-80gb", "a100-80gb-pcie", "l4", "l40s", "mi300x",
                                              "b200", "t4"}
    for gpu in RUNS_VLLM:
        assert gpu.cuda_reported_bytes < gpu.memory_bytes and "https://" in gpu.cuda_reported_source
    assert [round(gpu.cuda_reported_bytes / GiB, 2) for gpu in RUNS_VLLM] == [79.19, 139.81, 79.25, 79.25, 22.03, 44.53,
                                                                             191.98, 178.35, 14.75]
    # No published figure found for these: refused by name (test_every_catalog_card_computes_or_is_refused_by_name).
    refused = {gpu.key for gpu in CATALOG.values() if gpu.cuda_reported_bytes is None and "Apple" not in gpu.name}
    assert refused == {"h100-pcie"}
    # The refusal says why: no sourced figure, and the sheet's will not do.
    with pytest.raises(ValueError, match=r"H100 PCIe.*none found: no published report .* names where it came from"):
        vllm_budget(sm.MODELS["qwen2.5-0.5b"], CATALOG["h100-pcie"])


@pytest.mark.parametrize("key", ["gemma-3-4b", "gemma-3-27b"])
def test_multimodal_checkpoints_are_refused_by_name(key):
    # Gemma 3 4B and 27B carry a vision tower vLLM loads and profiles; the budget counts the language model alone.
    model = sm.MODELS[key]
    assert model.vision_tower and not sm.MODELS["gemma-3-1b"].vision_tower
    with pytest.raises(ValueError, match=rf"model '{re.escape(model.name)}' is a multimodal checkpoint"):
        vllm_budget(model, H100)
    with pytest.raises(ValueError, match="multimodal"):
        vllm_cache_tokens(model, H100, engine="v1")


def test_more_share_more_cache_and_a_bigger_profile_pass_less():
    shares = [vllm_cache_tokens(LLAMA_3_8B, H100, u) for u in (0.5, 0.7, 0.9, 0.95, 1.0)]
    assert shares == sorted(shares) and len(set(shares)) == len(shares)
    passes = [vllm_cache_tokens(LLAMA_3_8B, H100, max_num_batched_tokens=t) for t in (2048, 8192, 32768)]
    assert passes == sorted(passes, reverse=True) and len(set(passes)) == len(passes)
    assert vllm_cache_tokens(LLAMA_3_8B, H100, kv_bits=8) > 1.9 * vllm_cache_tokens(LLAMA_3_8B, H100)


def test_eight_bit_checkpoints_keep_the_embeddings_and_head_in_16_bits():
    tables = 2 * LLAMA_3_8B.vocab * LLAMA_3_8B.hidden
    assert vllm_weight_bytes(LLAMA_3_8B, 8) == (LLAMA_3_8B.parameters - tables) + 2 * tables
    assert vllm_weight_bytes(LLAMA_3_8B, 16) == weight_bytes(LLAMA_3_8B.parameters, 16)
    assert vllm_cache_tokens(LLAMA_3_8B, H100, weight_bits=8) > vllm_cache_tokens(LLAMA_3_8B, H100)


def test_vllm_holds_fewer_tokens_than_the_lessons_reserve_for_every_model_that_fits():
    counted = 0
    for model in sm.MODELS.values():
        lesson = fit(model, H100)
        if not lesson.fits or model.vision_tower:
            continue
        try:
            tokens = vllm_budget(model, H100, max_model_len=min(model.context_window, 4096)).blocks * 16
        except DoesNotFit:
            continue
        assert tokens < (lesson.usable_bytes - lesson.weight_bytes) / model.kv_bytes_per_token(), model.name
        counted += 1
    assert counted >= 10


# -- what it refuses ---------------------------------------------------------------------------
@pytest.mark.parametrize("utilization", [0, -0.1, 1.01, 2, float("nan")])
def test_utilization_outside_zero_to_one_is_refused_by_name(utilization):
    with pytest.raises(ValueError, match=rf"^gpu_memory_utilization must .*, got {re.escape(repr(utilization))}$"):
        vllm_cache_tokens(LLAMA_3_8B, H100, utilization)


@pytest.mark.parametrize("engine", ["v2", "V0.5", "", None, 1])
def test_an_unknown_engine_is_refused_by_name(engine):
    with pytest.raises(ValueError, match=rf"^engine must be one of \['v0', 'v1'\].*got {re.escape(repr(engine))}$"):
        vllm_cache_tokens(LLAMA_3_8B, H100, engine=engine)


@pytest.mark.parametrize("version", ["latest", "0", "1.2.3.4", "v0.x"])
def test_a_malformed_version_is_refused_by_name(version):
    with pytest.raises(ValueError, match=rf"version must be .*got {re.escape(repr(version))}"):
        vllm_budget(LLAMA_3_8B, H100, engine="v1", version=version)


def test_graph_memory_where_vllm_takes_none_out_is_refused():
    with pytest.raises(ValueError, match="cuda_graph_bytes"):
        vllm_budget(LLAMA_3_8B, H100, engine="v0", cuda_graph_bytes=GiB)
    with pytest.raises(ValueError, match="cuda_graph_bytes"):
        vllm_budget(LLAMA_3_8B, H100, engine="v1", version="0.11.0", cuda_graph_bytes=GiB)
    with pytest.raises(ValueError, match="non_torch_bytes"):
        vllm_budget(LLAMA_3_8B, H100, non_torch_bytes=-1)


@pytest.mark.parametrize("tokens", [0, -8192])
def test_a_profile_pass_of_no_tokens_is_refused_by_name(tokens):
    with pytest.raises(ValueError, match=rf"max_num_batched_tokens.*{tokens}"):
        vllm_cache_tokens(LLAMA_3_8B, H100, max_num_batched_tokens=tokens)


def test_non_numbers_and_arrays_are_refused():
    with pytest.raises(TypeError, match="gpu_memory_utilization"):
        vllm_cache_tokens(LLAMA_3_8B, H100, "0.9")
    with pytest.raises(TypeError, match="gpu_memory_utilization"):
        vllm_cache_tokens(LLAMA_3_8B, H100, np.array([0.8, 0.9]))
    with pytest.raises(TypeError, match="model"):
        vllm_cache_tokens("llama-3-8b", H100)
    with pytest.raises(TypeError, match="refuse"):
        vllm_budget(LLAMA_3_8B, H100, refuse="no")


def test_a_max_model_len_past_the_window_is_refused():
    with pytest.raises(ContextTooLong, match=r"max_model_len"):
        vllm_budget(LLAMA_3_8B, H100, max_model_len=9000)
    with pytest.raises(ValueError, match="max_model_len"):
        vllm_budget(LLAMA_3_8B, H100, max_model_len=0)


def test_what_vllm_would_refuse_to_start_is_refused():
    with pytest.raises(DoesNotFit, match="no cache"):
        vllm_budget(sm.MODELS["llama-3-70b"], H100)
    long_model = sm.MODELS["llama-3.1-8b"]
    with pytest.raises(DoesNotFit, match=r"max_model_len \(131,072\)"):
        vllm_budget(long_model, H100, 0.3)
    assert vllm_budget(long_model, H100, 0.3, max_model_len=8192).tokens > 8192
    refused = vllm_budget(long_model, H100, 0.3, refuse=False)
    assert refused.max_concurrency < 1 < refused.blocks


def test_a_card_of_another_size_forgets_the_cuda_figure():
    assert H100.with_changes(memory_bytes=80e9).cuda_reported_bytes is None
    with pytest.raises(ValueError, match="cuda_reported_bytes"):
        H100.with_changes(cuda_reported_bytes=81 * GiB)


def test_v1_before_0_21_logs_blocks_over_groups_for_sliding_window_models():
    # kv_cache_utils until 0.20: num_blocks // len(kv_cache_groups) × block size (vLLM issue 40691, on 0.19.0).
    mistral, gemma = sm.MODELS["mistral-7b"], sm.MODELS["gemma-3-1b"]
    for version in (None, "0.19.0", "0.20.2"):
        old = vllm_budget(mistral, H100, engine="v1", version=version)
        assert (old.blocks, old.tokens) == (29_110, 465_760)
    assert vllm_cache_tokens(mistral, H100, engine="v1") == 465_760
    g = vllm_budget(gemma, H100, engine="v1")
    assert g.tokens == g.blocks // len(g._layer_groups()[1]) * 16 == 2_466_800
    # From 0.21 the line prints concurrency × max_model_len, well above it for a sliding model.
    assert vllm_budget(mistral, H100, 0.9, engine="v1", version="0.21.0").tokens > 2.5 * 465_760
    # Every layer full: one group, so the old line is the blocks × 16.
    llama = vllm_budget(LLAMA_3_8B, H100, engine="v1")
    assert llama.tokens == llama.blocks * 16


def test_v1_on_rocm_takes_no_graph_estimate_until_0_26():
    # ROCm skipped the CUDA graphs' estimate until vLLM pull request 48526, first released in 0.26.0.
    mi300x, moe = CATALOG["mi300x"], sm.MODELS["qwen3-30b-a3b"]
    assert sm.engines.VLLM_V1_ROCM_GRAPH_ESTIMATE_SINCE == "0.26"
    for version in ("0.21.0", "0.24.0", "0.25.1"):
        for model in (LLAMA_3_8B, moe):
            amd = vllm_budget(model, mi300x, engine="v1", version=version)
            assert amd.cuda_graph_bytes == 0 and amd.graphs_outside_share
        with pytest.raises(ValueError, match=r"cuda_graph_bytes .*0\.26 on an AMD card.*AMD Instinct"):
            vllm_budget(moe, mi300x, engine="v1", version=version, cuda_graph_bytes=GiB)
    assert vllm_budget(LLAMA_3_8B, mi300x, engine="v1", version="0.21").tokens == 1_309_648
    later = vllm_budget(moe, mi300x, engine="v1", version="0.26.0", cuda_graph_bytes=memory.VLLM_CUDA_GRAPH_EXAMPLE_BYTES)
    assert later.cuda_graph_bytes == memory.VLLM_CUDA_GRAPH_EXAMPLE_BYTES and not later.graphs_outside_share
    # An NVIDIA card of the same tier estimates them from 0.21.
    assert vllm_budget(moe, CATALOG["h200"], engine="v1", version="0.21.0").cuda_graph_bytes > 0
