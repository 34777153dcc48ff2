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
# 400 a second on an L4, so that paged memory runs out and users are preempted. The three named engines'
# rows move with their fitted costs (data/engine_fit.json) and were recomputed when the fit was run again, and
# when the prompts of an engine that keeps them apart got their first token at the end of their own step.
PINNED = [
    ('static/paged/recompute', 8738, 0, 248264, 129747.58649182151, 142199.61920890745),
    ('static/paged/swap', 8738, 0, 248264, 129747.58649182151, 142199.61920890745),
    ('static/reserved/recompute', 40655, 0, 248264, 655308.5287523848, 666427.8697226548),
    ('continuous/paged/recompute', 2903, 177, 280267, 18965.189428433525, 36632.036577083694),
    ('continuous/paged/swap', 2904, 173, 248264, 18457.286287137755, 35680.9253059284),
    ('continuous/reserved/recompute', 14779, 0, 248264, 220090.3284797821, 231540.17771568417),
    ('chunked/paged/recompute', 2947, 139, 272848, 17774.508879951467, 33622.78340585632),
    ('chunked/paged/swap', 2947, 142, 248264, 17666.978843276185, 33448.64798800771),
    ('chunked/reserved/recompute', 14783, 0, 248264, 219881.68692275326, 231323.65015284612),
    ('chunked/256', 3041, 95, 263542, 18991.284401696812, 33979.18709491922),
    ('vllm 0.6.3, 8 steps a call', 3283, 155, 276800, 25575.27149775127, 42358.06161992969),
    ('vllm 0.9.2, 32 at a time', 6619, 0, 248264, 82364.65051843788, 94750.21213455751),
    ('sglang 0.4', 3478, 279, 298052, 28195.090098710407, 45259.21584768254),
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
