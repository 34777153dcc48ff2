"""Lesson 3's figures (servingmath.load): what each part and plate XXIII.4 show, from the simulator."""
import math

import numpy as np
import pytest

import servingmath as sm
from servingmath import load, serving
from servingmath import simulator as S


def test_paged_memory_holds_tokens_where_reserved_holds_empty_room():
    seen = load.paged_against_reserved(40, count=800)
    assert seen.paged_share > 0.95 > 0.1 > seen.reserved_share
    assert seen.paged_users > 10 * seen.reserved_users
    # Reserving Llama 3 8B's whole window caps the running batch at what the reservations allow.
    assert seen.reserved_peak_users <= seen.reserved_users < seen.paged_peak_users


def test_static_batching_makes_arrivals_wait_where_continuous_admits_them_at_the_next_step():
    at = load.policies_at(10, count=800)
    assert at["static"].ttft_p99 > 50 * at["continuous"].ttft_p99
    assert at["continuous"].tokens_per_second >= at["static"].tokens_per_second


def test_a_long_prompt_stalls_a_running_user_for_its_whole_prefill_unless_chunked():
    stall = load.prefill_stall(4000, 512)
    prefill = serving.prefill(sm.LLAMA_3_8B, sm.H100_SXM, 4000, assumptions=sm.PLATE).time
    assert stall.whole_gap > prefill > 4 * stall.chunked_gap
    assert stall.chunked_gap > stall.usual_gap
    assert stall.chunked_ttft > stall.whole_ttft
    with pytest.raises(ValueError, match="step_tokens must be at least 2"):
        load.prefill_stall(100, 1)


def test_running_out_of_memory_preempts_and_costs_time_either_way():
    seen = load.preemption()
    assert seen.recompute.preemptions > 0 and seen.swap.preemptions > 0 and seen.roomy.preemptions == 0
    for way in (seen.recompute, seen.swap):
        assert way.ttft_p99 > 100 * seen.roomy.ttft_p99
        assert way.tokens_per_second < seen.roomy.tokens_per_second


def test_load_curves_rise_in_throughput_and_chunking_caps_the_tail_of_time_between_tokens():
    rates = (2, 10, 40, 80)
    continuous = load.load_curve("continuous", rates, count=800)
    chunked = load.load_curve("chunked", rates, count=800)
    assert np.all(np.diff(continuous.tokens_per_second) > 0)
    assert chunked.tbt_p99[-1] < continuous.tbt_p99[-1]
    assert np.all(chunked.tbt_p99 < S.StepClock(S.Server(sm.LLAMA_3_8B, sm.H100_SXM)).time([], [(512, 0)]) * 2)
    with pytest.raises(ValueError, match="policy must be one of"):
        load.load_curve("eager")


def test_capacity_counts_gpus_and_prices_a_million_tokens_at_the_target():
    seen = load.capacity(100, ttft=0.5, tpot=0.05, count=300)
    assert seen.gpus == math.ceil(100 / seen.goodput.rate)
    assert seen.ideal_cost_per_million == pytest.approx(0.12484858905472637)
    assert seen.cost_per_million == pytest.approx(
        3.0 / (seen.goodput.rate * seen.goodput.mean_reply * 3600 / 1e6))
    with pytest.raises(ValueError, match="rate must be greater than 0"):
        load.capacity(0)


def test_a_named_engine_serves_fewer_requests_at_the_target_than_the_floor_with_its_caps():
    vllm = sm.engines.engine(*load.ENGINE)
    seen = load.engine_capacity(vllm, count=300)
    floor = load.capacity_as(*load.ENGINE, count=300)
    server = seen.goodput.server
    assert server.assumptions.label == "vllm 0.9.2" and server.user_time > 0 and server.clock == "phases"
    assert (server.max_running, server.step_tokens) == (floor.goodput.server.max_running,
                                                       floor.goodput.server.step_tokens) == (1024, 8192)
    assert 0 < seen.goodput.rate < floor.goodput.rate and seen.cost_per_million > floor.cost_per_million
    assert seen.gpus == math.ceil(100 / seen.goodput.rate)
    # The engine's own flags change its server; the ideal engine is load.run's server, on the same requests.
    assert load.engine_capacity(vllm, count=300, max_num_seqs=64).goodput.server.max_running == 64
    assert load.engine_run(sm.engines.engine("ideal"), 12, count=300).summary() == load.run(12, count=300).summary()
    with pytest.raises(TypeError, match="engine_ must be an engine profile"):
        load.engine_capacity(("vllm", "0.9.2"))
    with pytest.raises(ValueError, match="max_num_sequences is not a flag"):
        load.engine_run(vllm, 12, count=300, max_num_sequences=64)
    with pytest.raises(ValueError, match="rate must be greater than 0"):
        load.engine_run(vllm, 0)


def test_part_threes_roomy_server_is_part_twos_run_of_the_same_requests():
    seen = load.preemption()
    assert seen.roomy == load.policies_at(10)["continuous"]
    assert len(load.run(10).workload) == load.REQUESTS


def test_swapping_reads_the_cards_host_link_from_the_catalog():
    # The H100 SXM's link to its host is PCIe Gen5 x16, 64 GB/s each way; the course assumes half of it reached.
    from servingmath import hardware
    assert load.swap_link().key == "pcie5" and load.swap_link() in hardware.links(load.GPU_)
    assert load.SWAP_BANDWIDTH == load.SWAP_REACHED * load.swap_link().bandwidth == 32e9
    assert load.swap_link(hardware.CATALOG["a100-80gb"]).key == "pcie4"
