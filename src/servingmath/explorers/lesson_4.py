"""Lesson 4's ideas: a model split across GPUs (``parallel``); prefill and decode apart (``disaggregation``)."""
from __future__ import annotations

import numpy as np

from .. import disaggregation, memory, parallel, units
from ..charts import Explorer, Layer, buttons, explorer, kit, slider
from ..simulator import ATTAINMENT
from . import REFUSE, counted, find_model, models_menu, ms

GPUS = (1, 2, 4, 8)
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
CACHED = 1000      # tokens each user holds before the step
# The cards and the link between them: H100 SXM on an HGX board's NVSwitch, or H100 PCIe cards on PCIe alone.
MACHINES = {"nvlink": ("h100-sxm", "nvlink4"), "pcie": ("h100-pcie", "pcie5")}
MACHINE_NAMES = {"nvlink": "H100 SXM, NVLink", "pcie": "H100 PCIe, PCIe Gen5"}
MODELS_SHOWN = ("llama-3-70b", "llama-3-8b", "llama-3.2-1b", "qwen3-235b-a22b")


def _step(gpus, link, batch, model):
    gpu, joined = MACHINES[link]
    grp = parallel.group(gpu, gpus, joined if gpus > 1 else None)
    return parallel.tensor_parallel_step(find_model(model), grp, cached_tokens=CACHED, batch=batch)


def _fitting(link, batch, model):
    """Each count of GPUs with its step, or None where the model and the caches do not fit."""
    found = {}
    for gpus in GPUS:
        try:
            found[gpus] = _step(gpus, link, batch, model)
        except memory.DoesNotFit:
            found[gpus] = None
    return found


@explorer
def tensor_parallel(gpus: int = 4, link: str = "nvlink", batch: int = 1, model: str = "llama-3-70b") -> Explorer:
    """Part 1: one decode step on 1, 2, 4 and 8 GPUs, each GPU's own pass and the all-reduces, for the chosen cards,
    link, batch and model; the chosen count of GPUs read out."""
    top = kit.TOP + 8

    def bars(link, batch, model):
        steps = _fitting(link, batch, model)
        longest = max(s.time for s in steps.values() if s is not None) if any(steps.values()) else 1e-3
        ticks = kit.round_steps(0, longest * 1e3 * 1.05)
        panel = kit.Panel.make((0, max(ticks[-1] / 1e3, longest * 1.05)), (0, 1), top, 220, x_label="one decode step (ms)")
        panel.x_ticks = [(t / 1e3, units.number(t, 1 if ticks[1] < 1 else 0)) for t in ticks]
        parts = [panel.axes()]
        for k, (gpus, s) in enumerate(steps.items()):
            y = panel.y.end + 30 + 52 * k
            if s is None:
                continue
            start, middle = panel.x.start, float(panel.x(s.compute.time))
            parts.append(kit.rect(start, y, middle - start, 18, kit.PREFILL)
                         + kit.rect(middle, y, float(panel.x(s.time)) - middle, 18, kit.DECODE))
        named, _ = kit.legend(panel.bottom + 14, [(kit.PREFILL, "each GPU's own pass"), (kit.DECODE, "the all-reduces")],
                              swatch=True)
        return "".join(parts) + named

    def labels(gpus, link, batch, model):
        steps = _fitting(link, batch, model)
        parts = []
        for k, (count, s) in enumerate(steps.items()):
            y = top + 30 + 52 * k
            words = (f"{counted(count, 'GPU', 'GPUs')}: " + (f"{ms(s.time)}, all-reduces {units.percent(s.communication_share)}"
                                                              if s is not None else "does not fit"))
            parts.append(kit.text(kit.LEFT + 4, y - 4, words, bold=count == gpus))
        return "".join(parts)

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
        slider("batch", "users in the batch", BATCHES, batch, lambda b: counted(b, "user", "users"), fine=tuple(range(1, 257))),
        models_menu(model, MODELS_SHOWN, site=True)],
        readouts, [Layer(("link", "batch", "model"), bars), Layer(("gpus", "link", "batch", "model"), labels)],
        "", top + 220 + kit.BOTTOM + 50, refuse=REFUSE,
        note=f"Each user holds {units.number(CACHED)} tokens; 16-bit weights and caches; each GPU's pass at the spec "
             "sheet's peaks, the all-reduces after it (2 a layer, each link at its one-way line rate, half the listed figure), "
             "not overlapped; NVLink's latency is measured on two GPUs, PCIe's on two and eight, four's between.")


# -- Part 4: prefill and decode apart --------------------------------------------------------------
SPLIT_RATES = (4, 6, 8, 10, 12, 16, 20, 24, 32, 40)      # requests a second reaching the four GPUs
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
            met[key] = {layout.name: disaggregation.run(layout, rate, lengths, link, SPLIT_REQUESTS).attainment(
                SPLIT_TTFT, tpot) for layout in disaggregation.layouts(4)}
        return met[key]

    def bars(rate, lengths, tpot, link):
        panel = kit.Panel.make((0, 1), (0, 1), top, height, x_label="requests within both targets")
        panel.x_ticks = [(t, units.percent(t)) for t in (0, 0.25, 0.5, 0.75, 1)]
        parts = [panel.axes(), panel.line([ATTAINMENT] * 2, [0, 1], kit.NEUTRAL, dashed=True)]
        for k, (name, share) in enumerate(shares(rate, lengths, tpot, link).items()):
            y = panel.y.end + 30 + 46 * k
            parts.append(kit.rect(panel.x.start, y, float(panel.x(share)) - panel.x.start, 16,
                                  kit.DECODE if k else kit.PREFILL)
                         + kit.text(kit.LEFT + 4, y - 4, f"{name}: {units.percent(share)}"))
        return "".join(parts)

    def readouts(rate, lengths, tpot, link):
        found = shares(rate, lengths, tpot, link)
        trip = disaggregation.run(disaggregation.Layout(1, 3), rate, lengths, link, SPLIT_REQUESTS).transfer
        return {**{f"met, {name}": units.percent(share) for name, share in found.items()},
                "each cache's trip, median": ms(float(np.median(trip)))}

    return Explorer("disaggregated", "Prefill and decode on GPUs of their own", [
        slider("rate", "requests a second, all four GPUs", SPLIT_RATES, rate, lambda r: f"{r} a second",
               fine=tuple(range(2, 49))),
        buttons("lengths", "prompts", LENGTH_NAMES, lengths),
        buttons("tpot", "time per token target", {0.015: "15 ms", 0.02: "20 ms"}, tpot),
        buttons("link", "link for the caches", LINK_NAMES, link, site=False)],
        readouts, [Layer(("rate", "lengths", "tpot", "link"), bars)], "", top + height + kit.BOTTOM + 20, slow=True,
        note=f"Grey dashed: {units.percent(ATTAINMENT)}. Blue: colocated; red: split. Llama 3 8B on four H100 SXM, vLLM "
             f"0.9.2's profile; {units.number(SPLIT_REQUESTS)} requests a run, arriving at random; first token within "
             f"{units.ms(SPLIT_TTFT, 0)}; each cache shipped whole once its prompt is read, not overlapped with it.")
