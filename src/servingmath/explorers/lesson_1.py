"""Lesson 1's ideas: a request counted in passes, a pass on the roofline, where a request's time goes,
and batching's price."""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import units
from ..charts import Explorer, Layer, explorer, kit, slider, steps
from ..hardware import CATALOG
from ..roofline import LESSON, attainable_flops, ridge_point
from ..serving import batching as batched
from ..serving import compute_bound_batch, request as timed_request, request_passes, step
from ..memory import fit
from ..models import LLAMA_3_8B
from . import (LISTED, REFUSE, bits, clock, counted, figures, find_gpu, find_model, gpu_menu, models_menu, ms,
               plain, price_of, price_slider, tokens_text, windows_at_least)

# A timeline's slots, not to scale: a prefill pass would be thousands of times wider than a decode pass.
_FIRST, _LAST = 12, 3


@explorer
def passes(prompt_tokens: int = 2000, reply_tokens: int = 300) -> Explorer:
    """A request's forward passes in order: one wide prefill pass, then a thin pass per later reply token."""
    slot, top, bar, left = 22.0, 46.0, 46.0, 14.0
    wide = slot * 5
    first = left + wide + 8
    pitch = (kit.WIDTH - kit.RIGHT - first) / (_FIRST + _LAST + 2)

    def prefill(prompt_tokens):
        return (kit.rect(left, top, wide, bar, kit.PREFILL)
                + kit.text(left + wide / 2, top + bar / 2 - 2, units.number(prompt_tokens), "white", "middle",
                           kit.LABEL, bold=True)
                + kit.text(left + wide / 2, top + bar / 2 + 14, "token" if prompt_tokens == 1 else "tokens", "white",
                           "middle")
                + kit.text(left, top - 10, "prefill: 1 pass", kit.PREFILL))

    def decode(reply_tokens):
        n = reply_tokens - 1
        parts = [kit.text(kit.WIDTH / 2, top + bar + 52, "forward passes, in order (widths not to scale)",
                          anchor="middle", size=kit.LABEL), kit.text(left + wide / 2, top + bar + 18, "1", anchor="middle")]
        if not n:
            return "".join(parts) + kit.text(first, top - 10, "decode: no passes", kit.DECODE)
        elided = n > _FIRST + _LAST + 1
        shown = list(range(1, n + 1)) if not elided else [*range(1, _FIRST + 1), *range(n - _LAST + 1, n + 1)]
        xs = [first + (k + (2 if elided and k >= _FIRST else 0)) * pitch for k in range(len(shown))]
        parts += [kit.rect(x, top, pitch * 0.7, bar, kit.DECODE) for x in xs]
        if elided:
            middle = first + (_FIRST + 1) * pitch - pitch * 0.15
            parts += [kit.text(middle, top + bar / 2 + 2, "⋯", kit.DECODE, "middle", 18),
                      kit.text(middle + 8, top + bar + 18, f"{units.number(n - len(shown))} more", kit.DECODE, "end")]
        # Pass numbers of the request: prefill is pass 1, decode pass k is pass k + 1.
        parts.append(kit.text(xs[0] + pitch * 0.35, top + bar + 18, "2", anchor="middle"))
        if len(shown) > 1:
            parts.append(kit.text(xs[-1] + pitch * (0.7 if elided else 0.35), top + bar + 18, units.number(shown[-1] + 1),
                                  anchor="end" if elided else "middle"))
        return "".join(parts) + kit.text(first, top - 10, f"decode: {counted(n, 'pass', 'passes')}, 1 token each",
                                         kit.DECODE)

    def readouts(prompt_tokens, reply_tokens):
        LLAMA_3_8B.check_context(prompt_tokens + reply_tokens)   # the page's model
        found = request_passes(prompt_tokens, reply_tokens)
        return {"forward passes": units.number(found.passes),
                "tokens in the prefill pass": units.number(found.prefill_tokens),
                "decode passes, one token each": units.number(found.decode_passes),
                "share of the tokens that go through in prefill": units.percent(found.prefill_share_of_tokens, 1)}

    return Explorer("passes", "One request, counted in forward passes", [
        slider("prompt_tokens", "tokens in the prompt", steps(1, 8000, 2, prompt_tokens, (20, 200, 500, 2000, 3000)),
               prompt_tokens, tokens_text, fine=range(1, 8001)),
        slider("reply_tokens", "tokens in the reply", steps(1, 2000, 2, reply_tokens, (20, 100, 250, 300, 1000)),
               reply_tokens, tokens_text, fine=range(1, 2001))],
        readouts, [Layer(("prompt_tokens",), prefill), Layer(("reply_tokens",), decode)],
        height=top + bar + 66, refuse=REFUSE)


@explorer
def roofline(tokens: int = 3000, gpu: str = "h100-sxm", weight_bits: int = 16, model: str = "llama-3-8b"):
    """Attainable FLOP/s against FLOP per byte (log-log): the GPU's roof and ridge, and one pass of the model,
    counted as the lesson counts (weights only, every limit reached exactly)."""
    served = find_model(model)
    intensities = np.geomspace(0.3, 1e6, 60)
    lowest = min(attainable_flops(0.3, g.peak_flops, g.memory_bandwidth) for g in CATALOG.values())
    y_low, y_high = kit.around(lowest / 1e12, max(g.peak_flops for g in CATALOG.values()) / 1e12 * 2)
    panel = kit.Panel.make((0.3, 1e6), (y_low, y_high), x_log=True, y_log=True,
                           x_label="FLOP per byte read (arithmetic intensity)", y_label="attainable TFLOP/s")
    panel.x_ticks = [(1, "1"), (100, "100"), (1e4, "10,000"), (1e6, "10⁶")]
    panel.y_ticks = [(t, plain(t)) for t in kit.decades(y_low, y_high)]

    @functools.lru_cache(maxsize=None)
    def one_pass(tokens, gpu, weight_bits):
        # The pass writes its tokens' keys and values: the weights and that cache must fit.
        return step(served, find_gpu(gpu), served.check_context(round(tokens)), weight_bits=weight_bits,
                    assumptions=LESSON, must_fit=True)

    def roof(gpu):
        chosen = find_gpu(gpu)
        ridge = ridge_point(chosen.peak_flops, chosen.memory_bandwidth)
        heights = attainable_flops(intensities, chosen.peak_flops, chosen.memory_bandwidth) / 1e12
        return (panel.shade(0.3, ridge, kit.MEMORY) + panel.shade(ridge, 1e6, kit.COMPUTE)
                + panel.line(intensities, heights, kit.NEUTRAL)
                + panel.vertical(ridge, f"ridge: {units.number(ridge)} FLOP/byte", kit.NEUTRAL, low=True)
                + kit.text(panel.x.start + 5, panel.y.end + 16, "memory-bound", kit.MEMORY, backed=True)
                + kit.text(panel.x.end - 5, panel.y.end + 16, "compute-bound", kit.COMPUTE, "end"))

    def point(tokens, gpu, weight_bits):
        chosen, taken = find_gpu(gpu), one_pass(tokens, gpu, weight_bits)
        height = float(attainable_flops(taken.cost.intensity, chosen.peak_flops, chosen.memory_bandwidth)) / 1e12
        return panel.marker(float(taken.cost.intensity), height, kit.COMPUTE if taken.bound == "compute" else kit.MEMORY, 7)

    def readouts(tokens, gpu, weight_bits):
        chosen, taken = find_gpu(gpu), one_pass(tokens, gpu, weight_bits)
        reached = attainable_flops(taken.cost.intensity, chosen.peak_flops, chosen.memory_bandwidth)
        return {"FLOP per byte": units.number(taken.cost.intensity),
                "ridge of the GPU": f"{units.number(ridge_point(chosen.peak_flops, chosen.memory_bandwidth))} FLOP per byte",
                "the pass is": f"{taken.bound}-bound",
                # Three figures: a laptop's 3.6 TFLOP/s and a decode step's 0.1 are not "4" and "0".
                "FLOP/s it can reach": f"{units.tflops(reached, figures(reached / 1e12, 3))} of "
                                       f"{units.tflops(chosen.peak_flops, figures(chosen.peak_flops / 1e12, 3))}"}

    return Explorer("roofline", f"One pass of {served.name} on the roofline", [
        slider("tokens", "tokens in the pass", steps(1, 8192, 3, tokens, (200, 3000)), tokens, tokens_text,
               fine=steps(1, 8192, 24, tokens, (200, 3000))),
        gpu_menu(gpu), bits("weight_bits", "bits a weight", weight_bits)],
        readouts, [Layer(("gpu",), roof), Layer(("tokens", "gpu", "weight_bits"), point)],
        panel.axes(), panel.bottom, refuse=REFUSE,
        note="Fewer bits here are weight-only quantization: the weights are widened to 16 bits before each "
             "multiply, so the ridge stays put while fewer bits raise a pass's FLOP per byte. FP8 weights and "
             "activations together (W8A8), on a card with an FP8 peak, would also run the multiplies at that peak, "
             "twice the 16-bit one, and move the ridge.")


@explorer
def request(model: str = "llama-3-8b", gpu: str = "h100-sxm", weight_bits: int = 16,
            prompt_tokens: int = 3000, reply_tokens: int = 250) -> Explorer:
    """A request's time split into its prefill pass and its decode steps: the bar is the whole reply."""
    @functools.lru_cache(maxsize=None)
    def timed(model, gpu, weight_bits, prompt_tokens, reply_tokens):
        find_model(model).check_context(prompt_tokens + reply_tokens)
        result = timed_request(find_model(model), find_gpu(gpu), prompt_tokens, reply_tokens, weight_bits=weight_bits)
        result.fit.require()
        return result
    panel = kit.Panel.make((0, 1), (0, 1), 40, 56, x_label="share of the whole reply's time")
    panel.x_ticks = [(t, units.percent(t)) for t in (0, 0.25, 0.5, 0.75, 1)]
    width = panel.x.end - panel.x.start

    def bar(model, gpu, weight_bits, prompt_tokens, reply_tokens):
        result = timed(model, gpu, weight_bits, prompt_tokens, reply_tokens)
        # Whole units, so one split is stored once however many settings give it.
        middle = panel.x.start + round(float(result.ttft / result.total_time) * width)
        y, h = panel.y.end, panel.y.start - panel.y.end
        return (kit.rect(panel.x.start, y, middle - panel.x.start, h, kit.PREFILL)
                + kit.rect(middle, y, panel.x.end - middle, h, kit.DECODE, 0.85)
                + kit.text(panel.x.start, y - 8, "prefill", kit.PREFILL, size=kit.LABEL)
                + kit.text(panel.x.end, y - 8, "decode", kit.DECODE, "end", kit.LABEL))

    def readouts(model, gpu, weight_bits, prompt_tokens, reply_tokens):
        result = timed(model, gpu, weight_bits, prompt_tokens, reply_tokens)
        return {"time to first token (TTFT)": f"{ms(result.ttft, 2)}, {result.prefill.bound}-bound",
                "time per output token (TPOT)": f"{ms(result.tpot)}, {result.decode.bound}-bound",
                "tokens a second": units.number(result.tokens_per_second),
                "whole reply": clock(result.total_time),
                "share spent in decode": units.percent(result.decode_share),
                "weights read each pass": f"{units.gb(result.decode.cost.weight_bytes)}; they fit in the GPU's "
                                          f"{CATALOG[gpu].listed_memory}, with the cache"}

    return Explorer("request", "Where a request's time goes", [
        # Lesson 1 counts dense models (every weight read, every weight used), each window holding 8,000 tokens.
        models_menu(model, windows_at_least(8000, dense=True)), gpu_menu(gpu), bits("weight_bits", "bits a weight", weight_bits),
        slider("prompt_tokens", "tokens in the prompt", sorted({1, 20, 100, 200, 500, 1000, 2000, 3000, 6000, prompt_tokens}),
               prompt_tokens, tokens_text, fine=range(1, 6001)),
        slider("reply_tokens", "tokens in the reply", sorted({1, 20, 100, 250, 300, 500, 1000, 2000, reply_tokens}),
               reply_tokens, tokens_text, fine=range(1, 2001))],
        readouts, [Layer(("model", "gpu", "weight_bits", "prompt_tokens", "reply_tokens"), bar),
                   Layer(("model", "gpu"), lambda model, gpu: kit.text(
                       kit.WIDTH / 2, 14, f"{find_model(model).name} on {find_gpu(gpu).name}", anchor="middle"))],
        panel.axes(), panel.bottom, LESSON.label, REFUSE)


@explorer
def batching(users: int = 32, gpu: str = "h100-sxm", model: str = "llama-3-8b") -> Explorer:
    """Cost of a million tokens and each user's tokens a second against users per pass, at the GPU's rental
    price. Past the compute-bound point every extra user slows every step."""
    served = find_model(model)
    users_steps = steps(1, 1024, 3, users, (8, 32))
    priced = [k for k, g in CATALOG.items() if g.price_per_hour is not None and fit(served, g).fits]
    sweeps = {k: batched(served, CATALOG[k], np.array(users_steps)) for k in priced}
    fine_users = steps(1, 1024, 6, users, (8, 32))
    turns = {k: compute_bound_batch(served, CATALOG[k]) for k in priced}
    costs = np.concatenate([np.atleast_1d(s.cost_per_million_tokens) for s in sweeps.values()])
    rates = np.concatenate([np.atleast_1d(s.tokens_per_second_per_user) for s in sweeps.values()])
    low, high = kit.around(costs.min(), costs.max())
    cost = kit.Panel.make((1, 1024), (low, high), kit.TOP + 8, 160, True, True, "users per pass",
                          "$ a million tokens", show_x=False)
    rate_ticks = kit.round_steps(0, rates.max() * 1.05)
    rate = kit.Panel.make((1, 1024), (0, rate_ticks[-1] * 1.1), kit.TOP + 186, 130, True, False, "users per pass",
                          "user's tokens/s")
    cost.x_ticks = rate.x_ticks = [(u, units.number(u)) for u in (1, 4, 16, 64, 256, 1024)]
    cost.y_ticks = [(c, units.dollars(c, figures(c, 1))) for c in kit.decades(low, high)]
    rate.y_ticks = [(r, units.number(r)) for r in rate_ticks]

    def at(users, gpu, price):
        return batched(served, CATALOG[gpu], users, price_per_hour=price_of(price))

    def curves(gpu, price):
        sweep, turn = sweeps[gpu] if price == LISTED else at(np.array(users_steps), gpu, price), turns[gpu]
        parts = (cost.line(users_steps, sweep.cost_per_million_tokens, kit.DECODE)
                 + rate.line(users_steps, np.broadcast_to(sweep.tokens_per_second_per_user, len(users_steps)),
                             kit.PREFILL, dashed=True))
        if turn is not None and turn <= 1024:
            parts += cost.vertical(turn, f"compute-bound from {counted(turn, 'user', 'users')}") + rate.vertical(turn, low=True)
        return parts

    def markers(users, gpu, price):
        chosen, x = at(users, gpu, price), float(cost.x(users))
        return (f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{cost.y.end}" y2="{rate.y.start}" stroke="currentColor" '
                f'stroke-opacity="0.5"/>' + cost.marker(users, chosen.cost_per_million_tokens, kit.DECODE)
                + rate.marker(users, chosen.tokens_per_second_per_user, kit.PREFILL))

    def readouts(users, gpu, price):
        chosen = at(users, gpu, price)
        # Tokens an hour to two figures, as the lesson says them; dollars to at least a tenth of a cent.
        return {"tokens an hour": units.millions(chosen.tokens_per_hour, 2),
                "cost per million tokens": units.dollars(chosen.cost_per_million_tokens,
                                                         max(3, figures(chosen.cost_per_million_tokens, 3))),
                "each user's tokens a second": units.number(chosen.tokens_per_second_per_user),
                "one decode step": f"{units.ms(chosen.step_time)}, {chosen.decode.bound}-bound",
                "arithmetic becomes the limit at": "never" if turns[gpu] is None else counted(turns[gpu], "user", "users"),
                "the GPU's price": f"{units.dollars(chosen.price_per_hour)} an hour"}

    return Explorer("batching", f"Decode for many users at once: {served.name}", [
        slider("users", "users per pass", users_steps, users, lambda n: counted(n, "user", "users"),
               fine=fine_users), gpu_menu(gpu, priced, priced=True),
        price_slider()],
        readouts, [Layer(("gpu", "price"), curves), Layer(("users", "gpu", "price"), markers)],
        cost.axes() + rate.axes(), rate.bottom, refuse=REFUSE,
        note="Red: the cost of a million tokens. Blue dashes: each user's tokens a second. " + LESSON.label)
