"""The plates' workshops: XXIII.1, time per token as a pass grows; XXIII.2, the users whose caches fit
for three designs of attention."""
from __future__ import annotations

import functools
import math
from dataclasses import replace

import numpy as np

from .. import units
from ..cache import WORKSHOP_MODELS, cache_matches_weights_batch
from ..charts import Explorer, Layer, buttons, explorer, kit, slider, steps
from ..hardware import CATALOG
from ..memory import RESERVE, max_batch
from ..roofline import LESSON, PLATE
from ..serving import time_per_token_curve
from ..memory import fit
from . import (REFUSE, bits, counted, find_gpu, find_model, gpu_menu, log_ticks, models_menu, ms, tokens_text,
               windows_at_least)

MOST = 8192   # Llama 3 8B's window: a longer prefill is no case
_LINE = np.unique(np.round(np.geomspace(1, MOST, 48)).astype(int))


@explorer
def workshop(tokens: int = 1024, gpu: str = "h100-sxm", assumptions: str = "plate", model: str = "llama-3-8b",
             cached: int = 1000) -> Explorer:
    """Plate XXIII.1: time per token of one pass against the tokens it carries (log axes), the plate's
    estimate and the lesson's ideal, and a decode step over a cache. In Jupyter the plate's efficiencies,
    overhead, model and cache move too."""
    @functools.lru_cache(maxsize=None)
    def world(assumptions, compute, bandwidth, overhead):
        if assumptions == "lesson":
            return LESSON
        return replace(PLATE, compute_efficiency=compute, bandwidth_efficiency=bandwidth, overhead=overhead,
                       label=f"plate: {units.percent(compute)} compute, {units.percent(bandwidth)} bandwidth, {units.ms(overhead)} a pass")

    @functools.lru_cache(maxsize=None)
    def curve(model, gpu, assumptions, compute, bandwidth, overhead, every=False):
        fit(find_model(model), find_gpu(gpu), MOST).require()
        return time_per_token_curve(find_model(model), find_gpu(gpu), range(1, MOST + 1) if every else _LINE,
                                    world(assumptions, compute, bandwidth, overhead))

    plate = (PLATE.compute_efficiency, PLATE.bandwidth_efficiency, PLATE.overhead)
    gpus = [k for k, g in CATALOG.items() if fit(find_model(model), g, MOST).fits]
    everything = [t for g in gpus for a in ("plate", "lesson") for t in (
        *curve(model, g, a, *plate).time_per_token, curve(model, g, a, *plate).decode_at(cached).time_per_token)]
    low, high = kit.around(min(everything), max(everything) * 3)
    panel = kit.Panel.make((1, MOST), (low, high), height=260, x_log=True, y_log=True, x_label="tokens in the pass",
                           y_label="time per token")
    log_ticks(panel, (1, 16, 256, 4096), lambda t: ms(t, 1), 2)

    def lines(gpu, assumptions, model, cached, compute, bandwidth, overhead):
        chosen = curve(model, gpu, assumptions, compute, bandwidth, overhead)
        other = curve(model, gpu, "lesson" if assumptions == "plate" else "plate", compute, bandwidth, overhead)
        decode = chosen.decode_at(find_model(model).check_context(cached + 1) - 1)
        first = curve(model, gpu, assumptions, compute, bandwidth, overhead, every=True).arithmetic_from
        return (panel.shade(1, first or MOST, kit.MEMORY, 0.10) + (panel.shade(first, MOST, kit.COMPUTE, 0.10) if first else "")
                + panel.line(_LINE, other.time_per_token, kit.NEUTRAL, dashed=True, width=1.5)
                + panel.line(_LINE, chosen.time_per_token, kit.PREFILL)
                + panel.line([1, MOST], [decode.time_per_token] * 2, kit.DECODE, dashed=True, width=1.5)
                + kit.text(panel.x.end - 4, float(panel.y(decode.time_per_token)) - 7,
                           f"decode, {units.number(cached)} cached: {ms(decode.time_per_token)} a token", kit.DECODE, "end",
                           backed=True)
                + (panel.vertical(first, f"compute-bound from {tokens_text(first)}", low=True) if first else ""))

    def taken(tokens, gpu, assumptions, model, compute, bandwidth, overhead):
        find_model(model).check_context(tokens)
        return time_per_token_curve(find_model(model), find_gpu(gpu), [tokens],
                                    world(assumptions, compute, bandwidth, overhead)).passes

    def marker(tokens, gpu, assumptions, model, compute, bandwidth, overhead):
        return panel.marker(tokens, float(taken(tokens, gpu, assumptions, model, compute, bandwidth, overhead)
                                          .time_per_token[0]), kit.PREFILL)

    def readouts(tokens, gpu, assumptions, model, cached, compute, bandwidth, overhead):
        one = taken(tokens, gpu, assumptions, model, compute, bandwidth, overhead)
        first = curve(model, gpu, assumptions, compute, bandwidth, overhead, every=True).arithmetic_from
        return {"time of the pass": ms(float(one.time[0])), "time per token": ms(float(one.time_per_token[0])),
                "FLOP per byte": units.number(float(one.cost.intensity[0])), "what limits it": f"{one.bound[0]}-bound",
                "arithmetic sets the time from": "never" if first is None else tokens_text(first)}

    efficiency = [round(0.05 * k, 2) for k in range(1, 21)]
    return Explorer("workshop", "One pass: time per token", [
        slider("tokens", "tokens in the pass", steps(1, MOST, 3, tokens), tokens, tokens_text, fine=range(1, MOST + 1)),
        gpu_menu(gpu, gpus),
        buttons("assumptions", "assumptions", {"plate": "the plate's: " + PLATE.label.removeprefix("plate: "),
                                               "lesson": "the lesson's ideal: " + LESSON.label.removeprefix("lesson: ")},
                assumptions),
        models_menu(model, windows_at_least(MOST, dense=True)),
        slider("cached", "decode: tokens cached", (0, 1000, 4000, 8000), cached, units.number, range(0, 8001, 250),
               site=False),
        slider("compute", "compute efficiency", efficiency, PLATE.compute_efficiency, units.percent, site=False),
        slider("bandwidth", "bandwidth efficiency", efficiency, PLATE.bandwidth_efficiency, units.percent, site=False),
        slider("overhead", "overhead a pass", [k / 20_000 for k in range(21)], PLATE.overhead, units.ms, site=False)],
        readouts, [Layer(("gpu", "assumptions", "model", "cached", "compute", "bandwidth", "overhead"), lines),
                   Layer(("tokens", "gpu", "assumptions", "model", "compute", "bandwidth", "overhead"), marker)],
        panel.axes(), panel.bottom, refuse=REFUSE,
        note="Blue: the chosen assumptions. Grey dashes: the other ones. Red dashes: one decode step. "
             "Orange: memory sets the time; green: arithmetic does.")


@explorer
def kv_workshop(tokens: int = 4000, gpu: str = "h100-sxm", kv_bits: int = 16, weight_bits: int = 16,
                reserve: float = RESERVE) -> Explorer:
    """Plate XXIII.2: the most users whose caches fit beside each of three models' weights (solid), and the
    batch whose caches weigh as much as the weights (dashed), against the tokens each user holds."""
    chosen = [find_model(key) for key in WORKSHOP_MODELS]
    colours = dict(zip((m.name for m in chosen), (kit.PREFILL, kit.DECODE, kit.COMPUTE)))
    most = min([32_768] + [m.context_window for m in chosen])   # inside every model's window
    lengths = np.array(steps(256, most, 2, tokens, [t for t in (1000, 4000, 8000, 32_000) if t <= most]))
    gpus = [k for k, g in CATALOG.items() if all(max_batch(m, g, 256) > 0 for m in chosen)]
    every = [max_batch(m, CATALOG[g], 256, 4, 4, 0) for m in chosen for g in gpus] + \
        [cache_matches_weights_batch(m, t, 16, b) for m in chosen for t in (256, most) for b in (16, 4)]
    panel = kit.Panel.make((256, most), kit.around(min(min(every), 1), max(every)), height=260, x_log=True,
                           y_log=True, x_label="tokens each user holds", y_label="users")
    log_ticks(panel, [t for t in (256, 1024, 4096, 16_384) if t <= most])

    def fits(m, gpu, t, weight_bits, kv_bits, reserve):
        return np.maximum(max_batch(m, find_gpu(gpu), t, weight_bits, kv_bits, reserve), 0.5)

    def lines(gpu, kv_bits, weight_bits, reserve):
        return "".join(panel.line(lengths, fits(m, gpu, lengths, weight_bits, kv_bits, reserve), colours[m.name])
                       + panel.line(lengths, cache_matches_weights_batch(m, lengths, weight_bits, kv_bits),
                                    colours[m.name], dashed=True, width=1.5)
                       + panel.label(290, panel.y.low * 5.5 / 2.2 ** k, m.name, colours[m.name])
                       for k, m in enumerate(chosen))

    def markers(tokens, gpu, kv_bits, weight_bits, reserve):
        return "".join(panel.marker(tokens, float(fits(m, gpu, tokens, weight_bits, kv_bits, reserve)), colours[m.name])
                       for m in chosen)

    def readouts(tokens, gpu, kv_bits, weight_bits, reserve):
        shown = {}
        for m in chosen:
            users = max_batch(m, find_gpu(gpu), tokens, weight_bits, kv_bits, reserve)
            crossing = cache_matches_weights_batch(m, tokens, weight_bits, kv_bits)
            shown[f"{m.name}: users that fit"] = (f"{units.number(users)}; caches outweigh the weights from "
                                                  f"{counted(math.floor(crossing) + 1, 'user', 'users')}")
        return shown

    return Explorer("kv_workshop", "Users whose caches fit on one GPU, three designs of attention", [
        slider("tokens", "tokens each user holds", lengths, tokens, tokens_text,
               fine=sorted({*lengths.tolist(), *range(256, most + 1, 256)})),
        gpu_menu(gpu, gpus, peak=False), bits("kv_bits", "bits a cached value", kv_bits),
        bits("weight_bits", "bits a weight", weight_bits, site=False),
        slider("reserve", "memory held back", [k / 100 for k in range(21)], reserve, units.percent, site=False)],
        readouts, [Layer(("gpu", "kv_bits", "weight_bits", "reserve"), lines),
                   Layer(("tokens", "gpu", "kv_bits", "weight_bits", "reserve"), markers)],
        panel.axes(), panel.bottom, refuse=REFUSE,
        note=f"Solid: users that fit; dashed: their caches weigh as much as the weights. Memory held back: "
             f"{units.percent(reserve)} on the website.")
