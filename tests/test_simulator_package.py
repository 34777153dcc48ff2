"""Lesson 3's simulator as a reader meets it: its pieces, each short, and its figures exactly as before
they were split apart (each pinned here was computed by the single-function simulator it replaced)."""
import ast
from pathlib import Path

import pytest

import servingmath as sm
from servingmath import engines, workload
from servingmath import simulator as S
from servingmath.simulator import schedulers

PACKAGE = Path(S.__file__).parent
M, L4 = sm.LLAMA_3_8B, sm.CATALOG["l4"]

# (case, steps, preemptions, tokens carried, Σ first-token times, Σ finish times): 500 requests arriving at
# 400 a second on an L4, so that paged memory runs out and users are preempted.
PINNED = [
    ('static/paged/recompute', 7408, 0, 248264, 104813.34652709037, 117649.50979298053),
    ('static/paged/swap', 7408, 0, 248264, 104813.34652709037, 117649.50979298053),
    ('static/reserved/recompute', 36301, 0, 248264, 586282.0809744032, 597437.777462864),
    ('continuous/paged/recompute', 2693, 126, 270436, 14387.816870091503, 32819.768103684066),
    ('continuous/paged/swap', 2691, 128, 248264, 14169.691535757604, 32304.28880039856),
    ('continuous/reserved/recompute', 12548, 0, 248264, 181969.73709650367, 193530.02494985375),
    ('chunked/paged/recompute', 2754, 115, 267944, 13726.262907865133, 30321.919383705448),
    ('chunked/paged/swap', 2759, 107, 248264, 13697.225018212404, 30234.07046421597),
    ('chunked/reserved/recompute', 12551, 0, 248264, 181761.46930123886, 193313.3618418349),
    ('chunked/256', 2855, 43, 255920, 15827.34144838695, 31263.11700836991),
    ('vllm 0.6.3, 8 steps a call', 2898, 93, 266806, 18346.732104624974, 34155.612307518706),
    ('vllm 0.9.2, 32 at a time', 6620, 0, 248264, 76141.10192299308, 87524.90815213554),
    ('sglang 0.4', 2931, 206, 287495, 19584.786605569625, 36529.2056351603),
]


def case(name):
    if name == "chunked/256":
        return S.Server(M, L4, policy="chunked", step_tokens=256), None
    if name.startswith("vllm 0.6.3"):
        return engines.engine("vllm", "0.6.3").server(M, L4, num_scheduler_steps=8), None
    if name.startswith("vllm 0.9.2"):
        return engines.engine("vllm", "0.9.2").server(M, L4), 32
    if name == "sglang 0.4":
        return engines.engine("sglang", "0.4").server(M, L4), None
    policy, memory, preemption = name.split("/")
    return S.Server(M, L4, policy=policy, memory=memory, preemption=preemption,
                    swap_bandwidth=25e9 if preemption == "swap" else None,
                    max_reply_tokens=4096 if memory == "reserved" else None), None


@pytest.mark.parametrize("name, steps, preempted, tokens, first, finish", PINNED, ids=[p[0] for p in PINNED])
def test_every_policy_memory_and_engine_serves_as_the_single_function_did(name, steps, preempted, tokens, first, finish):
    server, concurrency = case(name)
    run = S.simulate(server, workload.poisson_workload(400, 500, seed=2, model=M), concurrency=concurrency)
    assert (run.steps, int(run.preemptions.sum()), int(run.step_tokens.sum())) == (steps, preempted, tokens)
    assert float(run.first_token.sum()) == pytest.approx(first, rel=1e-12)
    assert float(run.finish.sum()) == pytest.approx(finish, rel=1e-12)


def test_one_scheduler_per_policy_each_with_one_schedule():
    assert tuple(schedulers.SCHEDULERS) == S.POLICIES
    for scheduler in schedulers.SCHEDULERS.values():
        assert issubclass(scheduler, schedulers.Scheduler) and "schedule" in vars(scheduler)
        assert scheduler.__doc__ and len(scheduler.__doc__) > 100


def test_no_function_of_the_simulator_runs_past_sixty_lines():
    long = [(path.name, node.name, node.end_lineno - node.lineno + 1)
            for path in sorted(PACKAGE.glob("*.py")) for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.FunctionDef) and node.end_lineno - node.lineno + 1 > 60]
    assert long == []
