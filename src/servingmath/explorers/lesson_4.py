"""Lesson 4: a model split over GPUs (``parallel``), copies behind a router, prefill and decode on GPUs apart."""
from __future__ import annotations

import numpy as np

from .. import disaggregation, engines, load, memory, parallel, replicas, units
from ..charts import Explorer, Layer, buttons, explorer, kit, slider
from ..simulator import ATTAINMENT, ROUTERS
from . import REFUSE, clock, counted, find_model, models_menu, ms
from .lesson_3 import _bar_row, rate_text

GPUS = (1, 2, 4, 8)
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
FINE_BATCHES = tuple(range(1, 257))     # the live explorers' finer steps, BATCHES among them
CACHED = 1000      # tokens each user holds before the step
# The cards and the link between them: H100 SXM on an HGX board's NVSwitch, or H100 PCIe cards on PCIe alone.
MACHINES = {"nvlink": ("h100-sxm", "nvlink4"), "pcie": ("h100-pcie", "pcie5")}
MACHINE_NAMES = {"nvlink": "H100 SXM, NVLink", "pcie": "H100 PCIe, PCIe Gen5"}
MODELS_SHOWN = ("llama-3-70b", "llama-3-8b", "llama-3.2-1b", "qwen3-235b-a22b")


def _group(gpus, link):
    gpu, joined = MACHINES[link]
    return parallel.group(gpu, gpus, joined if gpus > 1 else None)


def _step(gpus, link, batch, model):
    return parallel.tensor_parallel_step(find_model(model), _group(gpus, link), cached_tokens=CACHED, batch=batch)


def _pipeline(gpus, link, batch, micro, model):
    """``gpus`` stages, one a GPU, with ``micro`` micro-batches of ``batch`` users in flight."""
    return parallel.pipeline_parallel_step(find_model(model), _group(gpus, link), gpus, cached_tokens=CACHED,
                                           batch=batch * micro, micro_batches=micro)


def _each(timed, *settings):
    """Each count of GPUs with ``timed(count, *settings)``, or None where the model and the caches do not fit."""
    found = {}
    for gpus in GPUS:
        try:
            found[gpus] = timed(gpus, *settings)
        except memory.DoesNotFit:
            found[gpus] = None
    return found


def _fitting(link, batch, model):
    return _each(_step, link, batch, model)


def _pipelines(link, batch, micro, model):
    return _each(_pipeline, link, batch, micro, model)


def _bars(top, rows, names):
    """One bar a count of GPUs: ``rows`` {count: (the first part's end, the whole) in seconds, or None}."""
    drawn = [row for row in rows.values() if row is not None]
    longest = max(whole for _, whole in drawn) if drawn else 1e-3
    ticks = kit.round_steps(0, longest * 1e3 * 1.05)
    panel = kit.Panel.make((0, max(ticks[-1] / 1e3, longest * 1.05)), (0, 1), top, 220, x_label=names[0])
    panel.x_ticks = [(t / 1e3, units.number(t, 1 if ticks[1] < 1 else 0)) for t in ticks]
    parts = [panel.axes()]
    for k, row in enumerate(rows.values()):
        if row is not None:
            y, start, middle = panel.y.end + 30 + 52 * k, panel.x.start, float(panel.x(row[0]))
            parts.append(kit.rect(start, y, middle - start, 18, kit.PREFILL)
                         + kit.rect(middle, y, float(panel.x(row[1])) - middle, 18, kit.DECODE))
    named, _ = kit.legend(panel.bottom + 14, [(kit.PREFILL, names[1]), (kit.DECODE, names[2])], swatch=True)
    return "".join(parts) + named


def _labels(top, words, chosen):
    """Each bar's words above it, the chosen count of GPUs in bold."""
    return "".join(kit.text(kit.LEFT + 4, top + 26 + 52 * k, f"{counted(count, 'GPU', 'GPUs')}: {said}",
                            bold=count == chosen) for k, (count, said) in enumerate(words.items()))


@explorer
def tensor_parallel(gpus: int = 4, link: str = "nvlink", batch: int = 1, model: str = "llama-3-70b") -> Explorer:
    """Part 1: one decode step on 1, 2, 4 and 8 GPUs, each GPU's own pass and the all-reduces, for the chosen cards,
    link, batch and model; the chosen count of GPUs read out."""
    top = kit.TOP + 8

    def bars(link, batch, model):
        rows = {n: s and (s.compute.time, s.time) for n, s in _fitting(link, batch, model).items()}
        return _bars(top, rows, ("one decode step (ms)", "each GPU's own pass", "the all-reduces"))

    def labels(gpus, link, batch, model):
        return _labels(top, {n: f"{ms(s.time)}, all-reduces {units.percent(s.communication_share)}" if s else
                             "does not fit" for n, s in _fitting(link, batch, model).items()}, gpus)

    def readouts(gpus, link, batch, model):
        s = _step(gpus, link, batch, model)
        served = find_model(model)
        grp = s.group
        held = parallel.fit(served, grp, CACHED + 1, batch)
        copies = parallel.kv_copies(served, gpus)
        heads = (f"each of {counted(served.kv_heads, 'KV head', 'KV heads')} on {counted(copies, 'GPU', 'GPUs')}"
                 if copies > 1 else f"{units.number(served.kv_heads * parallel.kv_share(served, gpus))} of "
                 f"{units.number(served.kv_heads)} KV heads")
        return {"a decode step": ms(s.time),
                "of it, the all-reduces": f"{ms(s.communication)}, {units.percent(s.communication_share)}",
                "tokens a second, each user": units.number(1 / s.time),
                "each GPU holds": f"weights {units.gb(held.weight_bytes)}, caches {units.gb(held.cache_bytes)}",
                "each GPU's cache": heads}

    return Explorer("tensor_parallel", "A decode step split across GPUs", [
        buttons("gpus", "GPUs", {g: str(g) for g in GPUS}, gpus),
        buttons("link", "cards and link", MACHINE_NAMES, link),
        slider("batch", "users in the batch", BATCHES, batch, lambda b: counted(b, "user", "users"), fine=FINE_BATCHES),
        models_menu(model, MODELS_SHOWN, site=True)],
        readouts, [Layer(("link", "batch", "model"), bars), Layer(("gpus", "link", "batch", "model"), labels)],
        "", top + 220 + kit.BOTTOM + 50, refuse=REFUSE,
        note=f"Each user holds {units.number(CACHED)} tokens; 16-bit weights and caches; each GPU's pass at the spec "
             "sheet's peaks, the all-reduces after it (2 a layer, each link at its one-way line rate, half the listed figure), "
             "not overlapped; NVLink's latency is measured on two GPUs, PCIe's on two and eight, four's between.")


@explorer
def pipeline_parallel(gpus: int = 4, link: str = "nvlink", batch: int = 1, micro: int = 1,
                      model: str = "llama-3-70b") -> Explorer:
    """Part 2: the time between a user's tokens over 1, 2, 4 and 8 stages, the stages' passes and the sends, with
    ``micro`` micro-batches of ``batch`` users in flight; the chosen count of stages read out."""
    top = kit.TOP + 8

    def bars(link, batch, micro, model):
        rows = {n: s and (s.interval - (s.stages - 1) * s.send_time, s.interval)
                for n, s in _pipelines(link, batch, micro, model).items()}
        return _bars(top, rows, ("between a user's tokens (ms)", "the stages' passes, and waits for a turn", "the sends"))

    def labels(gpus, link, batch, micro, model):
        return _labels(top, {n: f"{ms(s.interval)}, idle {units.percent(s.idle)}" if s else "does not fit"
                             for n, s in _pipelines(link, batch, micro, model).items()}, gpus)

    def readouts(gpus, link, batch, micro, model):
        s = _pipeline(gpus, link, batch, micro, model)
        held = parallel.fit(find_model(model), s.stage.group, CACHED + 1, batch * micro, pipeline_parallel=gpus)
        return {"between a user's tokens": ms(s.interval), "of it, the sends": ms((s.stages - 1) * s.send_time),
                "tokens a second, all users": units.number(batch * micro / s.interval),
                "busiest GPU idle": units.percent(s.idle),
                "the fullest GPU holds": f"weights {units.gb(held.weight_bytes)}, caches {units.gb(held.cache_bytes)}"}

    return Explorer("pipeline_parallel", "A decode step through stages of layers", [
        buttons("gpus", "GPUs, one stage each", {g: str(g) for g in GPUS}, gpus),
        buttons("link", "cards and link", MACHINE_NAMES, link),
        slider("batch", "users in a micro-batch", BATCHES, batch, lambda b: counted(b, "user", "users"), fine=FINE_BATCHES),
        buttons("micro", "micro-batches in flight", {m: str(m) for m in GPUS}, micro),
        models_menu(model, MODELS_SHOWN)],
        readouts, [Layer(("link", "batch", "micro", "model"), bars), Layer(("gpus", "link", "batch", "micro", "model"), labels)],
        "", top + 220 + kit.BOTTOM + 50, refuse=REFUSE,
        note=f"Each user holds {units.number(CACHED)} tokens; 16-bit weights and caches; each stage's pass at the spec "
             "sheet's peaks, the ends placed as vLLM places Llama's: the first reading the whole input table (the course counts every weight as read), the last "
             "the output head (a tied one counted once, there), then its send; a micro-batch starts again once its token "
             "leaves the last stage (its way back left out); each send is charged a small two-GPU all-reduce's latency and its bytes.")


ROUTER_RATES = (4, 6, 7, 8, 9, 10)
ROUTER_NAMES = {"round-robin": "in turn", "least-loaded": "fewest in flight", "one-queue": "one queue"}


@explorer
def routers(rate: float = 9) -> Explorer:
    """Part 3: time to first token at p50 and p99 on four copies behind each router, the same arrivals for each
    (log scale)."""
    panel = kit.Panel.make((1e-2, 1e3), (0, 1), kit.TOP + 8, 170, x_log=True, x_label="time to first token (s)")
    panel.x_ticks = [(v, f"{v:g}") for v in (1e-2, 1e-1, 1, 10, 100, 1000)]

    def bars(rate):
        at, parts = replicas.routers(rate), []
        for k, (router, colour) in enumerate(zip(ROUTERS, (kit.NEUTRAL, kit.EXTRA, kit.TEAL))):
            top, row = panel.y.end + 28 + 50 * k, at[router]
            parts += [_bar_row(panel, top, row.ttft_p99, colour,
                               f"{ROUTER_NAMES[router]}: p50 {clock(row.ttft_p50)}, p99 {clock(row.ttft_p99)}"),
                      kit.rect(float(panel.x(row.ttft_p50)) - 1, top, 2, 18, "white")]
        return "".join(parts)

    def readouts(rate):
        at = replicas.routers(rate)
        return {**{f"{ROUTER_NAMES[r]}: first token p50 / p99": f"{clock(at[r].ttft_p50)} / {clock(at[r].ttft_p99)}"
                   for r in ROUTERS},
                **{f"{ROUTER_NAMES[r]}: preemptions": units.number(at[r].preemptions) for r in ROUTERS}}

    copy = replicas.server()
    return Explorer("routers", "Four copies, three routers", [
        slider("rate", "requests a second, all four together", ROUTER_RATES, rate, rate_text)],
        readouts, [Layer(("rate",), bars)], panel.axes(), panel.bottom, refuse=REFUSE, slow=True,
        note=f"Bars run to p99, the notch in each marks p50. Four copies of {copy.model.name} on one {copy.gpu.name} "
             f"each, vLLM {replicas.ENGINE[1]}'s profile; {units.number(replicas.REQUESTS)} ShareGPT-like requests, "
             "sharing no prompts, so no router here can use a cached prefix.")


# -- Part 4: prefill and decode apart --------------------------------------------------------------
SPLIT_RATES = (4, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128)   # to where ShareGPT's at 20 ms fail colocated
SPLIT_REQUESTS = 1000      # each run's: half a search's, so that a move redraws in about a second
SPLIT_TTFT = 0.4
LENGTH_NAMES = {"long": "long prompts", "sharegpt": "ShareGPT's"}
LINK_NAMES = {"nvlink4": "NVLink", "roce-400g": "RoCE, 400 Gb/s"}


@explorer
def disaggregated(rate: int = 8, lengths: str = "long", tpot: float = 0.015, link: str = "nvlink4") -> Explorer:
    """Part 4: the share of requests each layout of four H100s serves within both targets at the chosen rate."""
    top, height = kit.TOP + 8, 200
    met = {}

    def shares(rate, lengths, tpot, link):
        key = (rate, lengths, tpot, link)
        if key not in met:
            met[key] = {layout.name: disaggregation.attainment(layout, rate, SPLIT_TTFT, tpot, lengths, link,
                                                               SPLIT_REQUESTS) for layout in disaggregation.layouts(4)}
        return met[key]

    def bars(rate, lengths, tpot, link):
        panel = kit.Panel.make((0, 1), (0, 1), top, height, x_label="requests within both targets")
        panel.x_ticks = [(t, units.percent(t)) for t in (0, 0.25, 0.5, 0.75, 1)]
        parts = [panel.axes(), panel.line([ATTAINMENT] * 2, [0, 1], kit.NEUTRAL, dashed=True)]
        for k, (name, share) in enumerate(shares(rate, lengths, tpot, link).items()):
            y = panel.y.end + 30 + 46 * k
            parts.append(kit.rect(panel.x.start, y, float(panel.x(share)) - panel.x.start, 16,
                                  kit.TEAL if k else kit.EXTRA)
                         + kit.text(kit.LEFT + 4, y - 4, f"{name}: {units.percent(share)}"))
        return "".join(parts)

    def readouts(rate, lengths, tpot, link):
        found = shares(rate, lengths, tpot, link)
        trip = disaggregation.transfers(lengths, link, SPLIT_REQUESTS)
        return {**{f"met, {name}": units.percent(share) for name, share in found.items()},
                "trip, 1 prefill + 3 decode, median": ms(float(np.median(trip)))}

    return Explorer("disaggregated", "Prefill and decode on GPUs of their own", [
        slider("rate", "requests a second, all four GPUs", SPLIT_RATES, rate, lambda r: f"{r} a second",
               fine=tuple(range(2, 129))),
        buttons("lengths", "prompts", LENGTH_NAMES, lengths),
        buttons("tpot", "time per token target", {0.015: "15 ms", 0.02: "20 ms"}, tpot),
        buttons("link", "link for the caches", LINK_NAMES, link, site=False)],
        readouts, [Layer(("rate", "lengths", "tpot", "link"), bars)], "", top + height + kit.BOTTOM + 20, slow=True,
        note=f"Grey dashed: {units.percent(ATTAINMENT)}. Purple: colocated; teal: split. Llama 3 8B, four H100 SXM, vLLM "
             f"{engines.engine(*load.ENGINE).asked}'s profile, its default {units.number(disaggregation.server().step_tokens)}-token steps (not Part 4's tuned "
             f"ones); {units.number(SPLIT_REQUESTS)} requests a run at random; first token within {units.ms(SPLIT_TTFT, 0)}.")
