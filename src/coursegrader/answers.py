"""The expected answer to each graded problem's variant, computed with the package: the grader's alone.

``expected(notebook, label, student_id)`` draws the student's numbers (``servingmath.variants``)
and computes the answer from them as the solution's check does from its fixed numbers
(``servingmath.answers``). The students' notebooks never import this module; the grader does.
"""
from __future__ import annotations

import math

import servingmath as sm
from servingmath import variants
from servingmath import hardware, parallel, replicas
from servingmath.answers import (ANSWERS, H100, L3, L31, _allreduce_bytes, _compared, _in_flight, _room_gb,  # noqa: F401
                                 _send_bytes, _small_steps, _split_4_4, _stages_4_2, _step_4_1, _tokens_held, _trip,
                                 answer)
from servingmath.memory import max_batch


def has_variant(notebook: str, label: str) -> bool:
    return label in ANSWERS.get(notebook, {})


def expected(notebook: str, label: str, student_id):
    """The answer to ``student_id``'s variant of problem ``label``: a number, or a word."""
    value = answer(notebook, label, variants.numbers(notebook, student_id))
    if isinstance(value, str):
        return value
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{notebook} {label} for {student_id!r}: the answer is {value}")
    return value


# -- the problems' own slips, for each student's numbers -----------------------------------
def _binary(gpu, name=None) -> str:
    gb = f"{gpu.memory_bytes / 2**30:g}"
    return f"memory is counted in binary: the {name or gpu.name}'s {gb} GB are {gb} × 2³⁰ bytes, not {gb} × 10⁹."


RESERVE = "hold back 5 % of the memory for the engine first: usable = 0.95 × memory."


def _decimal_named(gpu) -> str:
    gb = f"{gpu.memory_bytes / 2**30:g}"
    return f"{gb} × 10⁹ bytes for the {variants.SHORT_NAMES.get(gpu.key, gpu.name)}'s {gb} GB"


def _batch_slips(model, gpu, context, kv_bits=16, decimal=True, decimal_name="decimal gigabytes for the memory"):
    slips = {}
    if kv_bits != 16:
        size = {8: "1 byte", 4: "half a byte"}.get(kv_bits, f"{kv_bits / 8:g} bytes")
        slips["a 16-bit cache"] = (max_batch(model, gpu, context),
                                   f"the question stores the cache in {kv_bits} bits: {size} a value, not 2.")
    if decimal:
        slips[decimal_name] = (
            max_batch(model, gpu.with_changes(memory_bytes=gpu.memory_bytes / 2**30 * 1e9), context, kv_bits=kv_bits),
            _binary(gpu))
    slips["the reserve forgotten"] = (max_batch(model, gpu, context, kv_bits=kv_bits, reserve=0), RESERVE)
    return slips


def _room_slips(model, gpu, weight_bits):
    """Problem 3.2's slips: the card's memory taken as decimal gigabytes, and the reserve forgotten."""
    decimal = gpu.with_changes(memory_bytes=gpu.memory_bytes / 2**30 * 1e9)
    binary = _binary(gpu, variants.SHORT_NAMES.get(gpu.key, gpu.name))
    return {"decimal gigabytes for the memory": (
                _room_gb(model, decimal, weight_bits=weight_bits),
                f"the card's {binary[:-1]}; only the answer is given in decimal gigabytes."),
            "the reserve forgotten": (_room_gb(model, gpu, weight_bits=weight_bits, reserve=0), RESERVE)}


def _split_slips(n):
    """Lesson 4 Problem 1.1's slips: the all-reduces left out, one a layer, the weights in 16 bits."""
    step = _step_4_1(n)
    found = {"the all-reduces left out": (step.compute.time * 1e3, "add two all-reduces a layer after each GPU's pass."),
             "one all-reduce a layer": ((step.time - step.communication / 2) * 1e3,
                                        "each layer has two: one after the attention, one after the MLP.")}
    if parallel.fit(sm.MODELS["llama-3-70b"], parallel.group("h100-sxm", n["gpus"]), n["context"] + 1, n["users"]).fits:
        # 16-bit weights that would not fit the GPUs name no slip: no step can be timed with them.
        found["16-bit weights"] = (_step_4_1(n, weight_bits=16).time * 1e3, f"the weights are stored in {n['bits']} bits.")
    return found


def _allreduce_slips(n):
    """Lesson 4 Problem 1.3's slips: the latency left out, the listed bandwidth of both directions."""
    link, size, count = hardware.link(n["ar_gpu"], n["ar_link"]), _allreduce_bytes(n), n["ar_count"]
    right = parallel.allreduce_time(size, count, link)
    return {"the latency left out": ((right - link.latency) * 1e6, "every all-reduce pays the link's fixed cost first."),
            "the listed bandwidth of both directions": (
                (link.latency + 2 * (count - 1) / count * size / (2 * link.bandwidth)) * 1e6,
                "a spec sheet's figure adds both directions; a ring sends at the one-way rate.")}



def _stage_slips(n):
    """Lesson 4 Problem 2.1's slips: the sends left out, one stage's pass, the weights in 16 bits."""
    step = _stages_4_2(n)
    found = {"the sends left out": ((step.token_time - (step.stages - 1) * step.send_time) * 1e3,
                                    "a token's activations cross every border between stages."),
             "one stage's pass": (step.stage.time * 1e3, "the token goes through every stage in turn.")}
    if parallel.fit(sm.MODELS["llama-3-70b"], parallel.group("h100-sxm", n["stages"], n["link"]), n["context"] + 1,
                    n["users"], pipeline_parallel=n["stages"]).fits:
        found["16-bit weights"] = (_stages_4_2(n, weight_bits=16).token_time * 1e3,
                                   f"the weights are stored in {n['bits']} bits.")
    return found


def _send_slips(n):
    """Lesson 4 Problem 2.3's slips: the latency left out; the residual left out, or the listed bandwidth of both
    directions, which halve the time past the latency alike."""
    link, size = hardware.link(n["send_gpu"], n["send_link"]), _send_bytes(n)
    return {"the latency left out": (size / link.bandwidth * 1e6, "every send pays the link's fixed cost first."),
            "the residual left out, or both directions' bandwidth": ((link.latency + size / (2 * link.bandwidth)) * 1e6,
                                                        "a send goes one way, at the one-way rate, and carries each "
                                                        "token's residual with its hidden state.")}

# A problem whose solution names slips of its own: the same slips, for the student's numbers.
SLIPS = {
    ("lesson-2-part-3", "3.2"): lambda n: _room_slips(sm.MODELS[n["room_model"]], sm.CATALOG[n["room_gpu"]],
                                                      n["room_bits"]),
    ("lesson-2-part-3", "3.1"): lambda n: _batch_slips(L3, H100, n["bits_context"], n["bits"]),
    ("lesson-2-part-3", "3.3"): lambda n: _batch_slips(L3, sm.CATALOG[n["fit_gpu"]], n["context"]),
    ("lesson-2-part-3", "3.6"): lambda n: _batch_slips(L3, sm.CATALOG[n["big_gpu"]], n["big_context"],
                                                       decimal_name=_decimal_named(sm.CATALOG[n["big_gpu"]])),
    ("plate-xxiii-2", "2"): lambda n: _batch_slips(sm.MODELS["llama-2-7b"], sm.CATALOG[n["gpu"]], n["mha_context"]),
    ("plate-xxiii-2", "5"): lambda n: _batch_slips(L31, H100, n["bits_context"], n["bits"], decimal=False),
    ("lesson-4-part-1", "1.1"): lambda n: _split_slips(n),
    ("lesson-4-part-1", "1.2"): lambda n: {"the whole model on each GPU": (
        sm.weight_bytes(sm.MODELS[n["split"]].parameters, n["split_bits"]) / 1e9,
        "each GPU holds 1/N of every weight matrix.")},
    ("lesson-4-part-1", "1.3"): lambda n: _allreduce_slips(n),
    ("lesson-4-part-1", "1.4"): lambda n: {"the cache split evenly among the GPUs": (
        sm.MODELS[n["kv_model"]].kv_bytes_per_token(n["kv_bits"]) / n["kv_gpus"],
        "with fewer KV heads than GPUs, each head is kept on more than one.")},
    ("lesson-4-part-1", "1.5"): lambda n: (lambda one, more: {
        "the all-reduces left out": (more.compute.time / one.time, "more cards pay two all-reduces a layer over PCIe."),
        "one card against two": (one.time / more.time, "the question asks the cards' step over one card's.")})(
        *_small_steps(n)),
    ("lesson-4-part-2", "2.1"): lambda n: _stage_slips(n),
    ("lesson-4-part-2", "2.2"): lambda n: (lambda model: {
        "the layers shared out evenly": (sm.weight_bytes(model.parameters, n["split_bits"]) / n["parts"] / 1e9,
                                         "a stage holds whole layers, and the end stages the table or the head."),
        "the most layers, no table or head": (
            sm.weight_bytes(model.parameters, n["split_bits"]) * parallel.stage_layers(model, n["parts"]) / model.layers
            / 1e9, "the first stage also holds the input table, the last the output head.")})(sm.MODELS[n["split"]]),
    ("lesson-4-part-2", "2.3"): lambda n: _send_slips(n),
    ("lesson-4-part-2", "2.4"): lambda n: (lambda step, users: {
        "one micro-batch's users": (n["flight_users"] / step.interval, "every micro-batch in flight gets a token each turn."),
        "the batch pushed through and drained": (users / step.time,
                                                 "decode steps follow one another: the pipeline need not drain.")})(
        _in_flight(n), n["flight_micro"] * n["flight_users"]),
    ("lesson-4-part-2", "2.5"): lambda n: (lambda split, staged: {
        "the split against the stages": (split.time / staged.interval,
                                         "the question asks the stages' time over the split's."),
        "the all-reduces left out": (staged.interval / split.compute.time,
                                     "the split pays two all-reduces a layer over the link.")})(*_compared(n)),
    ("lesson-4-part-3", "3.1"): lambda n: {"dealt in turn": (
        replicas.routed(round(n["copies"] * n["each"], 6), n["copies"], "round-robin").ttft_p99,
        "the requests go behind the router the problem names, not dealt in turn.")} if n["router"] != "round-robin" else {},
    ("lesson-4-part-3", "3.2"): lambda n: {"one copy's cache": (
        _tokens_held(n["held_model"], n["held_gpu"], n["held_degree"]) / (8 // n["held_degree"]),
        "add up every copy's cache.")},
    ("lesson-4-part-3", "3.3"): lambda n: (lambda cuts: {
        f"copies of {other} GPUs": (cuts[other].run.ttft_p99 * 1e3,
                                    f"the problem cuts the eight GPUs into copies of {n['cut_degree']}.")
        for other in cuts if other != n["cut_degree"]})(replicas.layouts(n["cut_rate"])),
    ("lesson-4-part-4", "4.1"): lambda n: (lambda trip, link: {"the latency left out": (
        (trip - link.latency) * 1e3, "every trip pays the link's fixed cost first.")})(
        *_trip(n["t_model"], n["t_prompt"], n["t_link"])),
    ("lesson-4-part-4", "4.3"): lambda n: (lambda p, rate: {"the faster stage's rate": (
        max(p * n["p_rate"], (n["pool"] - p) * n["d_rate"]), "the slower stage sets the pool's pace.")})(*_split_4_4(n)),
    ("lesson-4-part-4", "4.4"): lambda n: (lambda p, rate: {
        "the whole pool against one GPU": (rate / n["colo_rate"], "divide the pool's rate by its GPUs, both stages."),
        "the decode GPUs alone": (rate / (n["pool"] - p) / n["colo_rate"],
                                  "the prefill GPUs are part of the pool too.")})(*_split_4_4(n)),
    ("lesson-4-part-4", "4.5"): lambda n: (lambda trip, link: {"the listed bandwidth of both directions": (
        100 * (link.latency + (trip - link.latency) / 2) / (n["s_ttft"] / 1e3),
        "a spec sheet's figure adds both directions; a trip goes one way.")})(
        *_trip(n["s_model"], n["s_prompt"], n["s_link"])),
}


def slips(notebook: str, label: str, student_id) -> dict | None:
    """The named slips of ``student_id``'s variant of problem ``label`` ({name: [value, hint]}), or None."""
    named = SLIPS.get((notebook, label))
    if named is None:
        return None
    right = expected(notebook, label, student_id)
    # A slip that lands on the right answer (a small count) names nothing: it is left out.
    return {name: [float(value), hint] for name, (value, hint) in named(variants.numbers(notebook, student_id)).items()
            if value != right} or None
