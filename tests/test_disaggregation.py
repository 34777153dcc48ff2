"""Lesson 4 Part 4's package: layouts of a pool, their runs and goodput, and the split of GPUs between the stages."""
import math

import numpy as np
import pytest

from servingmath import disaggregation as D
from servingmath import hardware, memory, parallel, simulator
from servingmath.simulator import cluster
from servingmath.simulator.goodput import highest_rate
from servingmath.workload import poisson_workload


def test_layouts_are_the_gpus_colocated_then_every_split_fewest_prefill_first():
    found = D.layouts(4)
    assert [layout.name for layout in found] == ["4 colocated", "1 prefill + 3 decode", "2 prefill + 2 decode",
                                                "3 prefill + 1 decode"]
    assert all(layout.gpus == 4 for layout in found) and found[0].colocated and not found[1].colocated


@pytest.mark.parametrize("call, message", [
    (lambda: D.Layout(-1, 3), "prefill must be at least 0"),
    (lambda: D.Layout(1, 0), "decode must be at least 1"),
    (lambda: D.layouts(1), "gpus must be at least 2"),
    (lambda: D.run(D.Layout(1, 1), 4, "alpaca"), r"lengths must be one of \['long', 'sharegpt'\], got 'alpaca'"),
    (lambda: D.run(D.Layout(1, 1), 0), "rate"),
    (lambda: D.attainment(D.Layout(1, 1), -2, 0.4, 0.015), "rate"),
    (lambda: D.attainment(D.Layout(1, 1), 2, 0.4, 0.015, "short"), "lengths"),
    (lambda: D.transfers("long", "pcie9"), "pcie9"),
    (lambda: D.attainment(D.Layout(1, 1), 2, 0, 0.015), "ttft"),
    (lambda: D.goodput((1, 3), 0.4, 0.015), "layout"),
    (lambda: D.goodput(D.Layout(1, 3), 0, 0.015), "ttft"),
    (lambda: D.best_split(0, 3, 4), "prefill_rate"),
    (lambda: D.best_split(10, 3, 1), "gpus must be at least 2"),
    (lambda: D.Layout(0, 4, 0), "budget must be at least 1"),
    (lambda: D.Layout(0, 4, 256.5), "budget"),
    (lambda: D.server(-8), "budget must be at least 1"),
    (lambda: D.tuned(0, 0.4, 0.015), "gpus must be at least 1"),
    (lambda: D.decode_cost(-1), "cached must be at least 0"),
    (lambda: D.decode_users(D.Layout(0, 4), 8), "layout must split prefill from decode, got '4 colocated'"),
])
def test_bad_input_is_refused_naming_the_argument(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


def test_a_run_is_the_simulators_cluster_or_disaggregated_run_of_the_same_requests():
    work = poisson_workload(6, 200, D.LONG, 0, model=D.load.MODEL)
    split = D.run(D.Layout(1, 2), 6, "long", "roce-400g", 200)
    direct = cluster.simulate_disaggregated(D.server(), D.server(), work, 1, 2, "roce-400g")
    assert np.array_equal(split.ttft, direct.ttft) and np.array_equal(split.transfer, direct.transfer)
    colocated = D.run(D.Layout(0, 2), 6, "long", count=200)
    assert np.array_equal(colocated.ttft, cluster.simulate_cluster(D.server(), work, 2).ttft)
    # Each cache's trip is the link's latency plus its bytes over the link's bandwidth.
    link = hardware.link(D.load.GPU_, "roce-400g")
    assert math.isclose(split.transfer[0], parallel.send_time(memory.kv_cache_bytes(D.load.MODEL, work.prompt[0]), link))


def test_a_layouts_attainment_and_trips_are_its_runs_to_the_last_bit():
    for layout, rate, lengths, link in ((D.Layout(1, 2), 6, "long", "roce-400g"), (D.Layout(0, 3, 512), 9.5, "sharegpt",
                                                                              "nvlink4")):
        run = D.run(layout, rate, lengths, link, 300)
        for ttft, tpot in ((0.4, 0.015), (0.2, 0.05), (1.0, 0.01)):
            assert D.attainment(layout, rate, ttft, tpot, lengths, link, 300) == run.attainment(ttft, tpot)
    # A colocated pool sends no cache: its run is the same over every link.
    assert D.attainment(D.Layout(0, 3, 512), 9.5, 0.4, 0.015, "sharegpt", "roce-400g", 300) == D.run(
        D.Layout(0, 3, 512), 9.5, "sharegpt", "nvlink4", 300).attainment(0.4, 0.015)
    # A split's trips, at any budget and rate.
    trips = D.transfers("long", "roce-400g", 300)
    for split in (D.run(D.Layout(2, 2, 256), 7, "long", "roce-400g", 300), D.run(D.Layout(1, 3), 13, "long", "roce-400g", 300)):
        assert trips.dtype == split.transfer.dtype and np.array_equal(trips, split.transfer) and trips.min() > 0
    assert not np.array_equal(trips, D.transfers("long", "nvlink4", 300))


def test_goodput_is_the_highest_rate_whose_run_meets_the_targets():
    layout = D.Layout(1, 1)
    found = D.goodput(layout, 0.4, 0.02, "long", count=300)
    assert found > 0
    rate, _ = highest_rate(lambda r: (D.run(layout, r, "long", "nvlink4", 300).attainment(0.4, 0.02)
                                      >= simulator.ATTAINMENT, None), D.STEPS)
    assert found == rate


def test_the_best_split_is_the_one_whose_slower_stage_serves_most():
    # 10 prompts a second on a prefill GPU, 3 replies a second on a decode GPU, 8 GPUs: 2 prefill serve
    # min(20, 18) = 18, 3 prefill min(30, 15) = 15, 1 prefill min(10, 21) = 10.
    assert D.best_split(10, 3, 8) == (2, 18)
    assert D.best_split(3, 3, 4) == (2, 6)
    # A tie goes to the fewest prefill GPUs: 1 gives min(2, 4) = 2, 2 gives min(4, 2) = 2.
    assert D.best_split(2, 2, 3) == (1, 2)


def test_a_budget_sets_every_gpus_token_budget_and_lowers_the_users_a_step_to_match():
    assert D.server().step_tokens == 8192 and D.server().max_running == 1024      # vLLM 0.9.2 under `vllm serve`
    small = D.server(256)
    # vLLM refuses max_num_batched_tokens below max_num_seqs: a 256-token budget takes at most 256 users a step.
    assert (small.step_tokens, small.max_running, small.policy) == (256, 256, "chunked")
    assert D.server(4096).max_running == 1024
    layout = D.Layout(0, 2, 256)
    assert layout.name == "2 colocated, 256-token steps" and D.Layout(1, 3, 1024).name == "1 prefill + 3 decode, 1,024-token steps"
    work = poisson_workload(6, 200, D.LONG, 0, model=D.load.MODEL)
    assert np.array_equal(D.run(layout, 6, count=200).ttft, cluster.simulate_cluster(small, work, 2).ttft)


def test_tuned_is_the_colocated_budget_whose_goodput_is_highest(monkeypatch):
    found = {128: 1.0, 256: 5.0, 512: 5.0, 1024: 3.0, 2048: 2.0, 4096: 2.0, 8192: 1.5}
    monkeypatch.setattr(D, "goodput", lambda layout, ttft, tpot, lengths: found[layout.budget])
    assert D.tuned(4, 0.4, 0.015) == (D.Layout(0, 4, 256), 5.0)     # a tie goes to the smaller budget
    assert set(found) == set(D.BUDGETS) and max(D.BUDGETS) == D.server().step_tokens


def test_the_decode_floor_and_each_users_cost_rebuild_the_step_the_simulator_times():
    from servingmath.simulator.clock import StepClock

    floor, each = D.decode_cost()
    clock = StepClock(D.server())
    prompt, reply = D.mean_lengths()
    cached = round(prompt + reply / 2)
    for users in (1, 5, 20):
        assert math.isclose(floor + users * each, clock.time([cached] * users), rel_tol=1e-9)
    # The floor is the profile's fixed cost and one read of the weights, before any user's attention.
    parts = clock.phases([cached])
    assert math.isclose(floor, parts["fixed"] + parts["matrix products"], rel_tol=1e-3)
    assert isinstance(floor, float) and isinstance(each, float)


def test_the_runs_mean_lengths_are_their_requests_cut_to_the_window():
    """The long prompts' runs: the geometric tail cut to Llama 3 8B's window, so the mean prompt falls below the
    nominal 2,000; the same requests at every rate."""
    from servingmath import load

    prompt, reply = D.mean_lengths()
    at_twelve = poisson_workload(12.0, D.REQUESTS, D.LONG, 0, model=load.MODEL)
    assert (prompt, reply) == (float(np.mean(at_twelve.prompt)), float(np.mean(at_twelve.reply)))
    assert prompt < D.LONG.mean_prompt and reply <= D.LONG.mean_reply
    assert (round(prompt), round(reply)) == (1814, 198)
    assert D.mean_lengths("long") == D.mean_lengths() and D.mean_lengths("sharegpt")[0] < prompt
    with pytest.raises(ValueError, match="lengths must be one of"):
        D.mean_lengths("chat")


def test_the_best_split_beats_the_default_budget_over_every_link_an_h100_has_and_the_others_lose():
    """Part 4's long prompts at its targets: two prefill and two decode GPUs serve the most, more than four colocated
    at the engine's default budget whichever link of an H100 SXM carries the caches (the trip costs little on each).
    One prefill GPU cannot feed three decode GPUs, whose steps run far fewer users than the target allows, and one
    decode GPU caps three prefill GPUs: both serve less than the colocated GPUs."""
    colocated = D.goodput(D.Layout(0, 4), 0.4, 0.015, "long")
    found = {layout: D.goodput(layout, 0.4, 0.015, "long") for layout in D.layouts(4)[1:]}
    assert max(found, key=found.get) == D.Layout(2, 2)
    for link in hardware.links("h100-sxm"):
        assert D.goodput(D.Layout(2, 2), 0.4, 0.015, "long", link.key) > colocated, link.key
    assert max(found[D.Layout(1, 3)], found[D.Layout(3, 1)]) < colocated
    floor, each = D.decode_cost()
    most = (0.015 - floor) // each
    assert D.decode_users(D.Layout(1, 3), found[D.Layout(1, 3)]) < D.decode_users(D.Layout(2, 2), found[D.Layout(2, 2)]) < most


def test_the_users_a_decode_gpu_runs_is_the_median_of_its_steps():
    layout = D.Layout(1, 3)
    found = D.run(layout, 8, "long", "nvlink4")
    decoding = found.step_decodes[found.step_decodes > 0]
    assert D.decode_users(layout, 8) == float(np.median(decoding)) and decoding.size > 0


# -- DistServe's first example ---------------------------------------------------------------------------------
def test_the_published_example_reads_as_its_sources_state_it():
    example = D.published()
    assert dict(example.figures) == {"colocated": 1.6, "prefill": 5.6, "decode": 10.0, "split": 3.3}
    # the paper's own arithmetic: two prefill GPUs feed one decode GPU, the slower stage sets the rate
    assert example.split_total == min(2 * example.figures["prefill"], example.figures["decode"])
    assert round(example.split_total / 3, 1) == example.figures["split"]
    assert (example.prompt, example.reply, example.ttft, example.tpot) == (512, 64, 0.4, 0.04)
    assert example.gpu is hardware.CATALOG["a100-80gb"]
    assert example.sources["blog"]["commit"] in example.sources["blog"]["url"]


def test_the_stand_in_has_the_shape_of_opt_13b_and_the_same_cache_a_token():
    example = D.published()
    stand_in = example.model
    assert (stand_in.layers, stand_in.hidden, stand_in.heads, stand_in.kv_heads) == (40, 5120, 40, 40)
    # OPT-13B's cache: keys and values for 40 layers of width 5,120, two bytes each
    assert memory.kv_cache_bytes(stand_in, 1) == 2 * 40 * 5120 * 2
    assert 0 < D.feed_forward_excess(example) < 0.02
    assert 12.9e9 < stand_in.parameters < 13.1e9


@pytest.mark.parametrize("field, value, message", [
    ("figures", {"colocated": "1.7", "prefill": "5.6", "decode": "10", "split": "3.3"},
     "figures.colocated must appear in paper_quote as published, got '1.7'"),
    ("ttft", 0.5, "blog_quote must state 'TTFT as 0.5 second'"),
    ("reply_tokens", 32, "blog_quote must state 'output length 32'"),
    ("arrivals", "uniform", "blog_quote must state 'Uniform arrival'"),
])
def test_a_data_file_whose_figures_or_conditions_leave_their_sources_is_refused(tmp_path, field, value, message):
    import yaml
    data = yaml.safe_load(D.PUBLISHED.read_text(encoding="utf-8"))
    data["example"][field] = value
    path = tmp_path / "runs.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        D.published(path)


def test_the_example_replayed_keeps_the_papers_order_and_its_gain_with_the_v0_profile():
    example = D.published()
    found = {version: {stage: D.example_goodput(example, (name, version), stage) for stage in D.STAGES}
             for name, version in D.EXAMPLE_ENGINES}
    for rates in found.values():
        # as published: each phase alone beats a GPU doing both, and so does the split, per GPU
        assert min(rates["prefill"], rates["decode"], rates["split"]) > rates["colocated"]
        # the split's rate is its slower stage's, as in the paper's arithmetic, within the search's resolution
        assert 3 * rates["split"] <= min(2 * rates["prefill"], rates["decode"]) * 1.05
    v0, v1 = (found[version] for _, version in D.EXAMPLE_ENGINES)
    published_gain = example.figures["split"] / example.figures["colocated"]
    # the V0 profile's gain lies within a fifth of the paper's (1.72 against 2.06 at the last fit)
    assert abs(v0["split"] / v0["colocated"] / published_gain - 1) < 0.2
    assert v1["split"] / v1["colocated"] < v0["split"] / v0["colocated"]


@pytest.mark.parametrize("call, message", [
    (lambda: D.example_goodput(D.published(), ("vllm", "0.6"), "both"), "stage must be one of"),
    (lambda: D.example_goodput("distserve", ("vllm", "0.6"), "split"), "example"),
    (lambda: D.feed_forward_excess(None), "example"),
])
def test_the_examples_bad_input_is_refused_naming_the_argument(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


def test_the_server_takes_other_costs_to_show_what_a_result_rests_on():
    base = D.server()
    assert D.server(user_time=91e-6).user_time == 91e-6 and D.server(stream_time=0.0).stream_time == 0.0
    assert D.server(user_time=None, stream_time=None) == base and base.user_time != 91e-6
    with pytest.raises(ValueError, match="user_time"):
        D.server(user_time=-1.0)
