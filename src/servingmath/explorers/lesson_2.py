"""Lesson 2's ideas: what the KV cache saves, its size, the users whose caches fit, and decode's price
with every cache read."""
from __future__ import annotations

import functools
import math
from dataclasses import replace

import numpy as np

from .. import units
from ..cache import (CACHE_READ, cache_matches_weights_batch, cached_decode, decode_with_and_without_cache,
                     time_with_and_without_cache)
from ..charts import Explorer, Layer, explorer, kit, slider, steps
from ..hardware import CATALOG
from ..memory import RESERVE, fit, kv_cache_bytes, max_batch, weight_bytes
from ..serving import batching
from . import (REFUSE, bits, counted, figures, find_gpu, find_model, gpu_menu, log_ticks, models_menu, ms, price_of,
               price_slider, tokens_text)

SUPERSCRIPTS = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def longest(model, most):
    """The longest context the chart offers: ``most``, or the model's window if shorter."""
    return min(most, find_model(model).context_window)


def inside(tokens, model, spare=0):
    """The lengths in ``tokens`` that, with ``spare`` more, fit the model's window."""
    return tokens[tokens + spare <= find_model(model).context_window]


@explorer
def cache_saving(tokens: int = 3000, gpu: str = "h100-sxm", model: str = "llama-3-8b") -> Explorer:
    """The next decode step's FLOPs with the KV cache and without it, and both steps' times on the GPU."""
    most = longest(model, 32_768) - 1   # the cache a step reads, and the new token, inside the window
    line_tokens = np.unique(np.round(np.geomspace(1, most, 60)).astype(int))
    lines = decode_with_and_without_cache(find_model(model), line_tokens)
    panel = kit.Panel.make((1, most), kit.around(np.min(lines.with_cache.flops), np.max(lines.without_cache.flops)),
                           x_log=True, y_log=True, x_label="tokens already in the sequence",
                           y_label="FLOPs of the next step")
    log_ticks(panel, (1, 32, 1024), lambda f: "10" + f"{math.log10(f):.0f}".translate(SUPERSCRIPTS), 2)

    @functools.lru_cache(maxsize=None)
    def curves(model):
        drawn = inside(line_tokens, model, 1)
        swept = decode_with_and_without_cache(find_model(model), drawn)
        without, with_ = np.asarray(swept.without_cache.flops), np.asarray(swept.with_cache.flops)
        return (panel.line(drawn, without, kit.PREFILL) + panel.line(drawn, with_, kit.DECODE)
                + panel.label(1.5, min(float(without[0]) * 300, panel.y.high / 3), "without the cache", kit.PREFILL)
                + panel.label(most * 0.6, max(float(with_[-1]) * 3, panel.y.low * 3), "with the cache", kit.DECODE, "end"))

    def timed_on(model, gpu, tokens):
        # No time for a step on a GPU that cannot hold the weights and this one conversation's cache.
        fit(find_model(model), find_gpu(gpu), tokens + 1).require()
        return time_with_and_without_cache(find_model(model), find_gpu(gpu), tokens)

    def markers(tokens, gpu, model):
        saving = decode_with_and_without_cache(find_model(model), tokens)
        timed = timed_on(model, gpu, tokens)
        # The panel is scaled to the page's model: another of Jupyter's menu may have a dot past it, left out.
        return ("".join(panel.marker(tokens, flops, colour) for flops, colour in ((saving.without_cache.flops, kit.PREFILL),
                (saving.with_cache.flops, kit.DECODE)) if panel.y.low <= flops <= panel.y.high)
                + kit.text(panel.x.start + 6, panel.y.end + 18, f"a step with the cache: {ms(timed.with_cache.time)}",
                           kit.DECODE, backed=True))

    def readouts(tokens, gpu, model):
        saving = decode_with_and_without_cache(find_model(model), tokens)
        timed = timed_on(model, gpu, tokens)
        bound = {True: "compute-bound", False: "memory-bound"}
        return {"FLOPs without the cache": units.trillions(saving.without_cache.flops, 2),
                "FLOPs with the cache": units.billions(saving.with_cache.flops, 1),
                "times fewer with the cache": units.number(saving.flops_saved),
                "the step without the cache": f"{ms(timed.without_cache.time)}, {bound[timed.without_cache.compute_bound]}",
                "the step with the cache": f"{ms(timed.with_cache.time)}, {bound[timed.with_cache.compute_bound]}"}

    return Explorer("cache_saving", "The next decode step, with the KV cache and without it", [
        slider("tokens", "tokens already in the sequence", steps(1, most, 2, tokens, (1000,)), tokens, tokens_text,
               fine=sorted({1, *range(256, most + 1, 256), *steps(1, most, 2, tokens, (1000,))})),
        gpu_menu(gpu), models_menu(model)],
        readouts, [Layer(("model",), curves), Layer(("tokens", "gpu", "model"), markers)], panel.axes(), panel.bottom,
        CACHE_READ.label, REFUSE)


@explorer
def cache_size(tokens: int = 8000, kv_bits: int = 16, model: str = "llama-3-8b") -> Explorer:
    """One conversation's KV cache against its length for the model's shape with full multi-head, its own
    and multi-query attention; the weights as a line."""
    def shapes(model):
        """The three designs on the model's layers; a latent-attention model caches no key-value heads to
        regroup, so only its own design is drawn."""
        served = find_model(model)
        if served.latent_attention:
            return {"as published": served}
        return {"multi-head": replace(served, kv_heads=served.heads), "as published": served,
                "multi-query": replace(served, kv_heads=1)}

    def colour(name):
        return colours[("multi-head", "as published", "multi-query").index(name)]

    colours = (kit.DECODE, kit.PREFILL, kit.COMPUTE)
    most = longest(model, 131_072)   # a conversation inside the model's window
    every = [kv_cache_bytes(s, t, kv_bits=b) for s in shapes(model).values() for t in (256, most) for b in (16, 4)]
    panel = kit.Panel.make((256, most), kit.around(min(every), max(every + [weight_bytes(find_model(model).parameters)])),
                           x_log=True, y_log=True, x_label="tokens in the conversation", y_label="KV cache")
    log_ticks(panel, [t for t in (256, 1024, 4096, 16_384, 65_536) if t <= most], lambda b: units.gb(b, figures(b / 1e9, 1)))
    panel.y_ticks = panel.y_ticks[1::2]

    def lines(kv_bits, model):
        weights, ends = weight_bytes(find_model(model).parameters), inside(np.array([256, most]), model)
        parts = [panel.line([256, most], [weights] * 2, kit.NEUTRAL, dashed=True, width=1.5),
                 panel.label(300, min(weights * 1.5, panel.y.high / 1.6), f"the weights, {units.gb(weights)}"
                             + ("" if weights < panel.y.high else ", above"), kit.NEUTRAL, backed=True)]
        parts += [panel.line(ends, kv_cache_bytes(shape, ends, kv_bits=kv_bits), colour(name))
                  for name, shape in shapes(model).items()]
        # The designs named under the chart, where no line can run through their names.
        return "".join(parts) + kit.legend(panel.bottom + 14, [(colour(name), name) for name in shapes(model)], True)[0]

    def markers(tokens, kv_bits, model):
        return "".join(panel.marker(tokens, kv_cache_bytes(shape, tokens, kv_bits=kv_bits), colour(name))
                       for name, shape in shapes(model).items())

    def readouts(tokens, kv_bits, model):
        served = find_model(model)
        drawn = shapes(model)
        shown = {name: (units.gb(kv_cache_bytes(drawn[name], tokens, kv_bits=kv_bits)) if name in drawn
                        else "no key-value heads: latent attention")
                 for name in ("multi-head", "as published", "multi-query")}
        shown["as published, as a share of the weights"] = units.percent(
            kv_cache_bytes(served, tokens, kv_bits=kv_bits) / weight_bytes(served.parameters), 1)
        design = (f"one latent of {units.number(served.cache_width)} numbers a layer" if served.latent_attention
                  else counted(served.kv_heads, 'KV head', 'KV heads'))
        shown["cache a token, as published"] = f"{units.number(kv_cache_bytes(served, 1, kv_bits=kv_bits))} bytes, {design}"
        return shown

    return Explorer("cache_size", "The KV cache of one conversation", [
        slider("tokens", "tokens in the conversation", steps(256, most, 2, tokens, (8000,)), tokens, tokens_text,
               fine=sorted({*range(256, most + 1, 256), tokens})),
        bits("kv_bits", "bits a cached value", kv_bits), models_menu(model)],
        readouts, [Layer(("kv_bits", "model"), lines), Layer(("tokens", "kv_bits", "model"), markers)],
        panel.axes(), panel.bottom + 14 + 18 * 3, "The same layers and head dim; only the key-value heads differ. "
                                                  "16-bit weights.",
        REFUSE)


@explorer
def users_that_fit(tokens: int = 8000, gpu: str = "h100-sxm", kv_bits: int = 16, model: str = "llama-3-8b",
                   weight_bits: int = 16) -> Explorer:
    """The most users whose caches fit beside the weights on one GPU, against the tokens each holds."""
    most = longest(model, 131_072)   # a conversation inside the model's window
    lengths = np.array(steps(256, most, 2, tokens, [t for t in (1000, 8000, 32_000) if t <= most]))
    high = max(max_batch(find_model(model), g, 256, weight_bits=4, kv_bits=4) for g in CATALOG.values())
    panel = kit.Panel.make((256, most), kit.around(0.5, max(high, 10)), x_log=True, y_log=True,
                           x_label="tokens each user holds", y_label="users that fit")
    log_ticks(panel, [t for t in (256, 1024, 4096, 16_384, 65_536) if t <= most])
    colours = {16: kit.PREFILL, 8: kit.COMPUTE, 4: kit.EXTRA}

    def count(model, gpu, t, weight_bits, kv_bits):
        return np.maximum(max_batch(find_model(model), find_gpu(gpu), t, weight_bits, kv_bits), 0.5)

    def lines(gpu, model, weight_bits):
        drawn = inside(lengths, model)
        return "".join(panel.line(drawn, count(model, gpu, drawn, weight_bits, b), colour, width=2.5 if b == 16 else 1.8)
                       for b, colour in colours.items())

    def marker(tokens, gpu, kv_bits, model, weight_bits):
        return panel.marker(tokens, count(model, gpu, tokens, weight_bits, kv_bits), colours[kv_bits])

    def readouts(tokens, gpu, kv_bits, model, weight_bits):
        served, chosen = find_model(model), find_gpu(gpu)
        budget = fit(served, chosen, weight_bits=weight_bits)
        budget.require()   # weights that do not fit leave no batch to count: the setting reads "does not fit"
        return {"room for caches": units.gb(max(budget.usable_bytes - budget.weight_bytes, 0)),
                "cache a user": units.gb(kv_cache_bytes(served, tokens, kv_bits=kv_bits)),
                "users that fit": units.number(max_batch(served, chosen, tokens, weight_bits, kv_bits))}

    return Explorer("users_that_fit", "Users whose caches fit on one GPU", [
        slider("tokens", "tokens each user holds", lengths, tokens, tokens_text,
               fine=sorted({*range(256, most + 1, 256), *lengths.tolist()})),
        gpu_menu(gpu, [k for k, g in CATALOG.items() if max_batch(find_model(model), g, 256) > 0], peak=False),
        bits("kv_bits", "bits a cached value", kv_bits), models_menu(model),
        bits("weight_bits", "bits a weight", weight_bits)],
        readouts, [Layer(("gpu", "model", "weight_bits"), lines),
                   Layer(("tokens", "gpu", "kv_bits", "model", "weight_bits"), marker)],
        # The lines lie too close together to be named on the panel: their names in a row under it.
        panel.axes() + "".join(kit.text(kit.LEFT + 130 * k, panel.bottom + 6, f"{b}-bit cache", colour)
                               for k, (b, colour) in enumerate(colours.items())), panel.bottom + 14,
        f"{units.percent(RESERVE)} of the memory held back.", REFUSE)


@explorer
def cached_batching(users: int = 32, tokens: int = 3000, kv_bits: int = 16, gpu: str = "h100-sxm",
                    model: str = "llama-3-8b") -> Explorer:
    """The cost of a million tokens against users per pass, every user's cache read each step, ending where
    memory is full; lesson 1's weights-only line dashed."""
    served = find_model(model)
    batches = np.array(steps(1, 1024, 2, users, (8, 32, 41)))
    priced = [k for k, g in CATALOG.items() if g.price_per_hour is not None and max_batch(served, g, 1000) > 0]
    lengths = [t for t in (1000, 3000, 8000, 32_000) if t < served.context_window]   # a step inside the window
    every = [batching(served, CATALOG[g], batches).cost_per_million_tokens for g in priced] + [
        cached_decode(served, CATALOG[g], batches, lengths[-1], kv_bits=8).cost_per_million_tokens for g in priced]
    panel = kit.Panel.make((1, 1024), kit.around(np.min(every), np.max(every)), x_log=True, y_log=True,
                           x_label="users per pass", y_label="$ a million tokens")
    log_ticks(panel, (1, 8, 64, 512), lambda c: units.dollars(c, figures(c, 1)))

    def lines(tokens, kv_bits, gpu, price):
        chosen, cost = find_gpu(gpu), price_of(price)
        wall = max_batch(served, chosen, tokens, kv_bits=kv_bits)
        lesson_1 = np.asarray(batching(served, chosen, batches, price_per_hour=cost).cost_per_million_tokens)
        parts = [panel.line(batches, lesson_1, kit.NEUTRAL, dashed=True, width=1.5),
                 panel.label(1.3, float(lesson_1[0]) * 0.012, "weights only (lesson 1)", kit.NEUTRAL, backed=True)]
        if wall >= 1:   # the line runs on to the last batch that fits, between the slider's stops
            inside = np.append(batches[batches < wall], min(wall, 1024))
            parts.append(panel.line(inside, cached_decode(served, chosen, inside, tokens, cost,
                                                          kv_bits=kv_bits).cost_per_million_tokens, kit.DECODE))
        if wall < 1024:
            parts.append(panel.vertical(max(wall, 1), f"memory full: {counted(wall, 'user', 'users')}", kit.MEMORY))
        return "".join(parts)

    def marker(users, tokens, kv_bits, gpu, price):
        step = cached_decode(served, find_gpu(gpu), users, tokens, price_of(price), kv_bits=kv_bits)
        return panel.marker(users, step.cost_per_million_tokens, kit.DECODE)

    def readouts(users, tokens, kv_bits, gpu, price):
        chosen, cost = find_gpu(gpu), price_of(price)
        now = cached_decode(served, chosen, users, tokens, cost, kv_bits=kv_bits)
        wall = max_batch(served, chosen, tokens, kv_bits=kv_bits)
        return {"one decode step": f"{ms(now.step_time)}, {now.decode.bound}-bound",
                "each user's tokens a second": units.number(now.tokens_per_second_per_user),
                "cost per million tokens": units.dollars(now.cost_per_million_tokens, 3),
                "without the caches (lesson 1)": units.dollars(
                    batching(served, chosen, users, price_per_hour=cost).cost_per_million_tokens, 3),
                "caches weigh as much as the weights at":
                    counted(round(cache_matches_weights_batch(served, tokens, kv_bits=kv_bits)), "user", "users"),
                "users that fit": units.number(wall) + ("" if users <= wall else ": this batch does not fit")}

    return Explorer("cached_batching", f"Decode with every user's cache read: {served.name}", [
        slider("users", "users per pass", batches, users, lambda n: counted(n, "user", "users"),
               fine=steps(1, 4096, 6, users, (41,))),
        slider("tokens", "tokens each user holds", lengths, tokens, tokens_text,
               fine=sorted({*lengths, *range(256, served.context_window, 256)})),
        bits("kv_bits", "bits a cached value", kv_bits, (16, 8)), gpu_menu(gpu, priced, priced=True), price_slider()],
        readouts, [Layer(("tokens", "kv_bits", "gpu", "price"), lines),
                   Layer(("users", "tokens", "kv_bits", "gpu", "price"), marker)],
        panel.axes(), panel.bottom, f"Red: the weights and every user's cache read each step. {CACHE_READ.label}", REFUSE)
