"""Serving engines' defaults by engine and version (servingmath.engines): one table, each cell sourced."""
import pytest

import servingmath as sm
from servingmath import engines as E


def test_vllm_v1_sets_its_batch_from_the_card_and_the_entry_point():
    h100, a100, l4 = sm.CATALOG["h100-sxm"], sm.CATALOG["a100-80gb"], sm.CATALOG["l4"]
    served = E.defaults("vllm", "0.9", gpu=h100)
    assert (served.max_running, served.step_tokens, served.chunked_prefill) == (1024, 8192, True)
    assert E.defaults("vllm", "0.9", gpu=h100, entry="llm").step_tokens == 16384
    # The A100 80 GB passes 70 GiB but is excluded by name; the L4 is under it.
    for card in (a100, l4):
        assert (E.defaults("vllm", "0.10", gpu=card).max_running, E.defaults("vllm", "0.10", gpu=card).step_tokens) == (256, 2048)
        assert E.defaults("vllm", "0.10", gpu=card, entry="llm").step_tokens == 8192


def test_every_card_in_the_catalog_gets_a_value_from_every_engine():
    for key in sm.CATALOG:
        gpu = sm.CATALOG[key]
        for engine, version in (("vllm", "V0"), ("vllm", "V1"), ("sglang", "0.5"), ("tgi", "3.0"), ("tensorrt-llm", "1.0")):
            found = E.defaults(engine, version, gpu=gpu)
            assert set(E.SETTINGS) <= set(found.values) <= set(E.SETTINGS) | set(E.PROFILING)
            assert all(found.source(s) for s in found.values)


def test_versions_pick_their_engine():
    assert E.defaults("vllm", "0.6.3").label == "vLLM V0 (0.4 to 0.6.4)"
    assert E.defaults("vllm", "0.6.3").step_tokens == 512 and E.defaults("vllm", "0.6").chunked_prefill is False
    assert E.row("vllm", "0.8.0").name == "vLLM V1"          # V1 is the default from 0.8
    assert E.row("vllm", "0.11.0").name == "vLLM V1"         # V0 is gone from 0.11
    assert E.row("vllm", "V0").label == "vLLM V0 (0.6.5 to 0.10)"
    assert E.defaults("vllm", "0.6.4").step_tokens == 512 and E.defaults("vllm", "0.7").step_tokens == 2048 and E.defaults("vllm", "V0").step_tokens == 2048
    assert E.defaults("sglang", "0.5.2", gpu=sm.H100_SXM).mixed_steps is False
    assert E.defaults("sglang", "0.5.2", gpu=sm.CATALOG["b200"]).step_tokens == 16384


def test_bad_lookups_are_refused_clearly():
    with pytest.raises(ValueError, match="engine must be one of"):
        E.defaults("llamacpp", "1.0")
    with pytest.raises(ValueError, match="version must be one the table covers for vllm"):
        E.defaults("vllm", "0.3")
    with pytest.raises(ValueError, match="gpu is needed"):
        E.defaults("vllm", "V1")
    with pytest.raises(ValueError, match="entry must be one of"):
        E.defaults("vllm", "V0", entry="cli")
    with pytest.raises(TypeError, match="version must be a string"):
        E.defaults("vllm", 0.9)


def test_the_table_names_each_engines_flags():
    text = E.markdown_table(sm.H100_SXM)
    for flag in ("--max-num-seqs", "--max-num-batched-tokens", "--chunked-prefill-size", "--enable-mixed-chunk",
                 "--max-running-requests", "--mem-fraction-static", "--max-batch-size", "--max-batch-prefill-tokens",
                 "--cuda-memory-fraction", "--max-batch-total-tokens", "capacity_scheduler_policy"):
        assert f"`{flag}`" in text
    assert "`--max-num-batched-tokens` 8,192" in text and "`--max-num-batched-tokens` 512" in text


def test_vllm_start_up_budget_defaults_are_cells_of_the_table():
    v0, v1 = E.defaults("vllm", "V0"), E.defaults("vllm", "V1", gpu=sm.H100_SXM)
    assert (v0.profile_min_tokens, v0.chunked_past, v0.chunked_profile_tokens, v0.max_running) == (2048, 32768, 2048, 256)
    assert (v1.graph_estimate_since, v1.memory_fraction, v1.memory_fraction_current) == ("0.21.0", 0.92, 0.92)
    # The budget reads them from here: one place for each default.
    assert sm.memory.VLLM_V0_CHUNKED_PAST == v0.chunked_past and sm.memory.VLLM_MAX_NUM_SEQS == v0.max_running
    assert sm.memory.VLLM_CUDA_GRAPH_ESTIMATE_SINCE == v1.graph_estimate_since
    for key in sm.CATALOG:
        gpu = sm.CATALOG[key]
        if gpu.cuda_reported_bytes is not None:
            served = E.defaults("vllm", "V1", gpu=gpu)
            assert sm.memory.vllm_profile_defaults(sm.LLAMA_3_8B, gpu, "v1") == (served.step_tokens, served.max_running)
    assert "profile_min_tokens" not in E.markdown_table(sm.H100_SXM)


def test_vllm_v1_took_1024_users_a_step_on_every_card_until_0_8_4():
    a100 = sm.CATALOG["a100-80gb"]
    assert E.defaults("vllm", "0.8.2", gpu=a100).max_running == 1024
    assert E.defaults("vllm", "0.8.4", gpu=a100).max_running == 256
    assert E.row("vllm", "0.8.2").label == "vLLM V1 (0.8 to 0.8.3)"
    assert E.row("vllm", "0.20").label == "vLLM V1 (0.8.4 to 0.20)"
    assert E.row("vllm", "V1").label == "vLLM V1 (0.21 on)"


def test_vllm_raised_its_memory_share_with_the_cuda_graphs_estimate():
    # Pull request 38284 turned the CUDA graphs' estimate on and raised the share from 0.9 to 0.92 in one change.
    before = E.defaults("vllm", "0.20", gpu=sm.H100_SXM).memory_fraction
    after = E.defaults("vllm", "V1", gpu=sm.H100_SXM)
    assert (before, after.memory_fraction) == (0.9, 0.92) == (sm.memory.VLLM_GPU_MEMORY_UTILIZATION, after.memory_fraction_current)
    assert E.row("vllm", "V1").since == after.graph_estimate_since.rsplit(".0", 1)[0]
    for version in ("0.6", "V0", "0.8", "0.8.4"):
        assert E.defaults("vllm", version, gpu=sm.H100_SXM).memory_fraction == 0.9


def test_vllm_v0_budget_is_named_with_chunking_and_without():
    # With chunked prefill off (V0's default) the budget is the window, at least 2,048: the table says so beside it.
    text = E.markdown_table(sm.H100_SXM, rows=(("vllm", "0.6"), ("vllm", "V0")))
    row = next(line for line in text.splitlines() if line.startswith(f"| {E.MEANINGS['step_tokens']} |"))
    assert row.count("off: the window, at least 2,048") == 2
    chunked = next(line for line in text.splitlines() if line.startswith(f"| {E.MEANINGS['chunked_prefill']} |"))
    assert "32,768" in chunked


def test_sglang_chunk_follows_the_card_s_memory_in_four_tiers():
    rule = E.row("sglang", "0.5").cells["step_tokens"].value
    assert [least for least, _ in rule.tiers] == [0, 35, 60, 160]
    assert [values["serve"] for _, values in rule.tiers] == [2048, 4096, 8192, 16384]
    assert E.defaults("sglang", "0.5", gpu=sm.H100_SXM).step_tokens == 8192
    assert E.defaults("sglang", "0.5", gpu=sm.CATALOG["l40s"]).step_tokens == 4096
    assert E.defaults("sglang", "0.5", gpu=sm.CATALOG["l4"]).step_tokens == 2048


def test_v1_became_vllm_s_default_at_its_first_row():
    # The budget dates V1 from the table's first V1 row, not from the latest one.
    assert sm.memory.VLLM_V1_DEFAULT_SINCE == "0.8" == E.row("vllm", "0.8").since


def test_vllm_version_boundaries_the_pages_name_agree_with_the_rows():
    assert E.row("vllm", "V0").until == E.VLLM_V0_REMOVED
    assert E._parse(E.VLLM_V1_CHUNKING_FORCED_LAST) < E._parse(E.VLLM_V0_REMOVED) < E._parse(E.VLLM_SWAP_SPACE_REMOVED)
    assert E.row("vllm", E.VLLM_V1_CHUNKING_FORCED_LAST).name == "vLLM V1"
    assert E.defaults("vllm", "V1", gpu=sm.H100_SXM).chunked_prefill is True
