"""Lesson 3 held to what it claims: a goodput the server keeps up with, the cap that binds it, the
chunk count its example writes, the stall a chunk leaves, and "Your turn" answers the page's
explorers do not show."""
import math
import re
from pathlib import Path

import numpy as np
import pytest

import servingmath as sm
from servingmath import load, simulator
from servingmath.explorers import lesson_3
from servingmath.simulator import ATTAINMENT, Server, simulate
from servingmath.workload import workload

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "chapters" / "lesson-3"


@pytest.fixture(scope="module")
def found():
    return load.capacity(100, ttft=0.5, tpot=0.05)


def test_the_goodput_is_a_rate_the_server_keeps_up_with(found):
    """A run twice as long as the search's still meets the targets at the goodput; a tenth faster it
    does not. (A search on 1,000 requests found about 68 a second, a rate whose queue grows.)"""
    rate, server = found.goodput.rate, found.goodput.server
    longer = 2 * load.GOODPUT_REQUESTS
    assert simulator.at_rate(server, rate, count=longer).attainment(0.5, 0.05) >= ATTAINMENT
    assert simulator.at_rate(server, rate * 1.1, count=longer).attainment(0.5, 0.05) < ATTAINMENT
    short = simulator.goodput(server, 0.5, 0.05, count=1000, steps=10).rate
    assert short > 1.2 * rate       # what a short run flatters, and why the search runs longer


def test_at_the_lessons_targets_the_cap_of_users_a_step_binds_not_the_time_per_token(found):
    run = found.goodput.run
    assert np.nanpercentile(run.tpot, 90) < found.goodput.tpot / 2
    assert run.step_decodes.max() == simulator.MAX_RUNNING
    faster = found.goodput.rate * 1.2
    capped = simulator.at_rate(found.goodput.server, faster, count=load.GOODPUT_REQUESTS)
    lifted = simulator.at_rate(Server(sm.LLAMA_3_8B, sm.H100_SXM, max_running=1024), faster,
                               count=load.GOODPUT_REQUESTS)
    assert capped.attainment(0.5, 0.05) < ATTAINMENT <= lifted.attainment(0.5, 0.05)


def test_tighter_targets_of_part_4s_turn_bind_and_need_more_gpus(found):
    tight = load.capacity(100, ttft=0.2, tpot=0.010)
    assert tight.goodput.rate < 0.8 * found.goodput.rate and tight.gpus > found.gpus
    assert np.nanpercentile(tight.goodput.run.tpot, 90) > 0.8 * 0.010


@pytest.mark.parametrize("prompt", [511, 512, 1023, 4000, 4088, 4089])
def test_a_prompt_goes_through_in_ceil_prompt_over_budget_less_one_steps(prompt):
    """Part 3's example: beside one running user, each step of a 512-token budget carries 511 prompt
    tokens, so ceil(prompt / 511) steps, as the simulator runs it (not ceil((prompt + 1) / 512))."""
    work = workload([0.0, 0.5], [200, prompt], [400, 2])
    run = simulate(Server(sm.LLAMA_3_8B, sm.H100_SXM, "chunked", step_tokens=512), work)
    steps_with_prompt = int((run.step_tokens > run.step_decodes).sum()) - 1   # less the first user's own
    assert steps_with_prompt == math.ceil(prompt / (512 - 1))


def test_a_chunk_bounds_the_stall_however_long_the_prompt():
    seen = [load.prefill_stall(prompt, 512) for prompt in (2000, 4000, 8000)]
    chunked = [s.chunked_gap for s in seen]
    assert max(chunked) < 1.25 * min(chunked)       # four times the prompt: a chunk's step a little longer
    assert seen[-1].whole_gap > 3 * seen[0].whole_gap
    example = seen[1]
    assert 1 < example.chunked_gap / example.usual_gap < 4
    assert example.whole_gap / example.usual_gap > 10


def _turn_cell(page):
    text = (PAGES / page).read_text()
    start = text.index("{solution-start}")
    return text[start:text.index("{solution-end}", start)]


def test_part_2s_turn_asks_a_rate_its_explorer_does_not_offer():
    cell = _turn_cell("part-2-continuous-batching.md")
    rate = int(re.search(r"turn_rate = (\d+)", cell)[1])
    assert 'load.run(turn_rate, policy="static")' in cell
    offered = lesson_3.first_token_wait().controls[0]
    assert rate not in offered.options and offered.fine is None


def test_part_3s_turn_asks_a_budget_its_explorer_does_not_offer():
    budget = int(re.search(r"load\.prefill_stall\(4000, (\d+)\)", _turn_cell("part-3-prefill-meets-decode.md"))[1])
    control = next(c for c in lesson_3.stall().controls if c.name == "step_tokens")
    assert budget not in control.options and control.fine is None
    assert load.prefill_stall(4000, budget).chunked_gap < load.prefill_stall(4000, 512).chunked_gap


def test_paged_memory_holds_more_users_than_the_server_runs_a_step():
    seen = load.paged_against_reserved(10)
    assert seen.paged_users > simulator.MAX_RUNNING > seen.reserved_users


def test_the_wrap_up_reads_its_engine_tables_from_the_one_table_and_names_each_setting_as_the_engine_does():
    from servingmath import engines
    text = (PAGES / "wrap-up.md").read_text()
    # No table typed into the page: both come from servingmath.engines, as the simulator's defaults do.
    assert not [line for line in text.splitlines() if line.startswith("| ") and "`--" in line]
    assert text.count("engines.markdown_table(") == 2
    rows = {}
    for line in engines.markdown_table(sm.H100_SXM).splitlines()[2:]:
        cells = [cell.strip() for cell in line.split("|")[1:-1]]
        rows[cells[0]] = cells[1:]
    v0, v1, sglang, tgi, trt = range(5)
    # TGI's --max-concurrent-requests refuses clients past it; its cap on a step's users is --max-batch-size.
    assert "--max-batch-size" in rows["users a step, at most"][tgi]
    # V0's 512 is a chunk's budget only with chunked prefill on; its default (off) is the window, at least 2,048.
    assert rows["token budget a step"][v0] == \
        "`--max-num-batched-tokens` 512 (with chunked prefill; off: the window, at least 2,048)"
    # On an H100 every V1 version takes 8,192; 0.28 raised it only on cards of 160 GiB or more (pull request 51726).
    assert rows["token budget a step"][v1] == "`--max-num-batched-tokens` 8,192 (16,384 on cards of 160 GiB or more)"
    # V0 mixed prompts with next tokens once chunked prefill was on; the wrap-up shows V1's span from 0.8.4 too.
    assert rows["prompts and next tokens in one step"][v0] == "off (on with `--enable-chunked-prefill`)"
    late_v0 = [line for line in engines.markdown_table(sm.H100_SXM, rows=(("vllm", "V0"),)).splitlines()
               if line.startswith("| prompts and next tokens in one step")]
    assert late_v0 == ["| prompts and next tokens in one step | off (on with `--enable-chunked-prefill`, or past a "
                       "32,768-token window) |"]
    assert '("vllm", "0.20")' in text and '("vllm", "0.27")' in text
    # A default no source was read for says so, not an empty cell.
    assert rows["tokens of cache in all"][trt] == "`max_tokens` not read"
    assert "--enable-mixed-chunk` off" in rows["prompts and next tokens in one step"][sglang]
    assert "enable_chunked_context" in rows["a long prompt split over steps"][trt]
    # vLLM's V1 engine has no swap: the flag is V0's.
    assert "--preemption-mode" in rows["when the cache is full"][v0] and "--" not in rows["when the cache is full"][v1]


def test_past_the_knee_the_first_tokens_wait_is_the_queue_of_the_run_so_far():
    """Part 4 gives the p99 first token at 80 requests a second as the queue after load.REQUESTS
    requests: a run twice as long waits far longer; below the knee it does not."""
    short, long_ = (load.load_curve("continuous", (30, 80), count=n).ttft_p99 for n in (load.REQUESTS, 2 * load.REQUESTS))
    assert long_[1] > 1.5 * short[1]
    assert long_[0] < 1.5 * short[0]


def test_a_server_or_a_request_that_cannot_fit_is_refused_as_does_not_fit():
    """The explorers read DoesNotFit as "does not fit"; the simulator raises it, not a bare ValueError."""
    from servingmath.memory import DoesNotFit
    with pytest.raises(DoesNotFit, match="leave no room"):
        Server(sm.MODELS["llama-3-70b"], sm.CATALOG["l4"])
    tiny = sm.H100_SXM.with_changes(memory_bytes=(sm.LLAMA_3_8B.parameters * 2 + 20.5 * Server(sm.LLAMA_3_8B, sm.H100_SXM).block_bytes) / 0.95)
    with pytest.raises(DoesNotFit, match="blocks of cache alone"):
        simulate(Server(sm.LLAMA_3_8B, tiny), workload([0.0], [400], [200]))
