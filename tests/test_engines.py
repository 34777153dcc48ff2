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
    assert (v1.graph_estimate_since, v1.memory_fraction, v1.memory_fraction_current) == ("0.21.0", 0.9, 0.92)
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
    assert E.row("vllm", "V1").label == "vLLM V1 (0.8.4 on)"


def test_v1_became_vllm_s_default_at_its_first_row():
    # The budget dates V1 from the table's first V1 row, not from the latest one.
    assert sm.memory.VLLM_V1_DEFAULT_SINCE == "0.8" == E.row("vllm", "0.8").since


def test_v1s_profiling_pass_is_bounded_by_version_on_the_a100():
    """V1 gave the small cards' pass to the A100 by name until pull request 17073 went by memory, and again from
    pull request 17885 (version 0.9): the page states the A100's figures from that version, read from here."""
    from servingmath import engines
    first_v1, latest_v1 = engines.row("vllm", "0.8").since, engines.row("vllm", "V1").since
    assert engines._parse(first_v1) < engines._parse(latest_v1) < engines._parse(engines.VLLM_V1_A100_SMALL_SINCE)
    note = engines.row("vllm", "V1").cells["step_tokens"].note
    assert all(pr in note for pr in ("12369", "17073", "17885")) and engines.VLLM_V1_A100_SMALL_SINCE in note
    # The memory share: 0.9 in every vLLM row the course models, 0.92 only as the current source's.
    assert {r.cells["memory_fraction"].value for r in engines.TABLE if r.engine == "vllm"} == {0.9}
    assert engines.row("vllm", "V1").cells["memory_fraction_current"].value == 0.92
