"""Lesson 3's ideas and plate XXIII.4: paged memory, continuous batching, a long prompt's stall, load
and latency, and throughput against the time between tokens. Every figure comes from
``servingmath.load`` (the simulator); nothing here times a step."""
from __future__ import annotations

import numpy as np

from .. import engines, load, units
from ..charts import Explorer, Layer, buttons, explorer, kit, menu, slider
from ..simulator import POLICIES
from . import REFUSE, clock, log_ticks, tokens_text

RATES = (2, 5, 10, 20, 40, 60)
# vLLM V1's token budget a step under `vllm serve` on the lesson's H100 (servingmath.engines).
V1_BUDGET = engines.defaults("vllm", "V1", gpu=load.GPU_).step_tokens
POLICY_NAMES = {"static": "static", "continuous": "continuous", "chunked": "chunked prefill"}
POLICY_COLOURS = {"static": kit.NEUTRAL, "continuous": kit.DECODE, "chunked": kit.PREFILL}
SETUP = "Llama 3 8B on an H100 SXM, the plate's assumptions (a step: the longer of its arithmetic and memory times, plus 0.2 ms)"


def rate_text(rate):
    return f"{units.number(rate)} requests/s"


def _bar_row(panel, y, value, colour, words):
    x0 = panel.x.start
    return (kit.rect(x0, y, float(panel.x(value)) - x0, 18, colour)
            + kit.text(x0 + 4, y - 4, words, size=kit.TICK))


@explorer
def paging(rate: float = 10) -> Explorer:
    """Part 1: the most users the same ShareGPT-like traffic keeps running at once, paged and reserved, against
    what the reservations allow; the share of held cache memory holding tokens in the bars' words and readouts."""
    cap = load.Server(load.MODEL, load.GPU_).max_running
    panel = kit.Panel.make((0, cap), (0, 1), kit.TOP + 8, 120, x_label="most users running at once")
    panel.x_ticks = [(v, units.number(v)) for v in (0, 64, 128, 192, 256) if v <= cap]

    def bars(rate):
        seen = load.paged_against_reserved(rate)
        top = panel.y.end + 30
        return (_bar_row(panel, top, seen.paged_peak_users, kit.COMPUTE,
                         f"paged: {units.number(seen.paged_peak_users)} users; {units.percent(seen.paged_share, 1)} holds tokens")
                + _bar_row(panel, top + 60, seen.reserved_peak_users, kit.DECODE,
                           f"reserved: {units.number(seen.reserved_peak_users)} of "
                           f"{units.number(seen.reserved_users)}; {units.percent(seen.reserved_share, 1)} holds tokens"))

    def readouts(rate):
        # Only what the rate moves: the users that fit and the shares holding tokens stay put (the note says so).
        seen = load.paged_against_reserved(rate)
        return {"most users at once, paged / reserved": f"{units.number(seen.paged_peak_users)} / {units.number(seen.reserved_peak_users)}"}

    return Explorer("paging", "Users running at once, paged and reserved", [
        slider("rate", "requests a second", RATES, rate, rate_text)],
        readouts, [Layer(("rate",), bars)], panel.axes(), panel.bottom, refuse=REFUSE, slow=True,
        note="Bars: the most users running at once; reserved: of the users its reservations fit. The users that fit "
             "and the share of held memory that holds tokens stay the same at every rate: a reservation is the same at "
             "any load. Llama 3 8B on an H100 SXM; geometric lengths at ShareGPT's means; reserved: the 8,192-token "
             "window a user (no reply cap sent).")


@explorer
def first_token_wait(rate: float = 10) -> Explorer:
    """Part 2: time to first token at p50 and p99 under static, continuous and chunked batching, the same
    arrivals for each (log scale)."""
    panel = kit.Panel.make((1e-3, 1e3), (0, 1), kit.TOP + 8, 170, x_log=True, x_label="time to first token (s)")
    panel.x_ticks = [(v, f"{v:g}") for v in (1e-3, 1e-2, 1e-1, 1, 10, 100, 1000)]

    def bars(rate):
        at = load.policies_at(rate)
        parts = []
        for k, policy in enumerate(POLICIES):
            top = panel.y.end + 28 + 50 * k
            row = at[policy]
            parts.append(_bar_row(panel, top, row.ttft_p99, POLICY_COLOURS[policy],
                                  f"{POLICY_NAMES[policy]}: p50 {clock(row.ttft_p50)}, p99 {clock(row.ttft_p99)}"))
            parts.append(kit.rect(float(panel.x(row.ttft_p50)) - 1, top, 2, 18, "white"))
        return "".join(parts)

    def readouts(rate):
        at = load.policies_at(rate)
        shown = {}
        for policy in POLICIES:
            row = at[policy]
            shown[f"{POLICY_NAMES[policy]}: first token p50 / p99"] = f"{clock(row.ttft_p50)} / {clock(row.ttft_p99)}"
        for policy in POLICIES:
            shown[f"{POLICY_NAMES[policy]}: reply tokens a second"] = units.number(at[policy].tokens_per_second)
        return shown

    return Explorer("first_token_wait", "Waiting for the first token, three ways to batch", [
        slider("rate", "requests a second", RATES, rate, rate_text)],
        readouts, [Layer(("rate",), bars)], panel.axes(), panel.bottom, refuse=REFUSE, slow=True,
        note=f"Bars run to p99, the notch in each marks p50. {SETUP}.")


@explorer
def stall(prompt_tokens: int = 4000, step_tokens: int = 512) -> Explorer:
    """Part 3: a user mid-reply when a long prompt arrives: the longest gap between its tokens with the prompt
    prefilled whole, and in chunks of the token budget, against its usual gap."""
    prompts = (500, 1000, 2000, 4000, 8000)
    panel = kit.Panel.make((0, 0.25), (0, 1), kit.TOP + 8, 170, x_label="longest time between the user's tokens (ms)")
    panel.x_ticks = [(v, units.number(v * 1e3)) for v in (0, 0.05, 0.1, 0.15, 0.2, 0.25)]

    def bars(prompt_tokens, step_tokens):
        seen = load.prefill_stall(prompt_tokens, step_tokens)
        top = panel.y.end + 28
        return (_bar_row(panel, top, seen.usual_gap, kit.NEUTRAL, f"no prompt arriving: {clock(seen.usual_gap)}")
                + _bar_row(panel, top + 50, seen.whole_gap, kit.DECODE, f"prefilled whole: {clock(seen.whole_gap)}")
                + _bar_row(panel, top + 100, seen.chunked_gap, kit.PREFILL,
                           f"in chunks of {units.number(step_tokens)}: {clock(seen.chunked_gap)}"))

    def readouts(prompt_tokens, step_tokens):
        seen = load.prefill_stall(prompt_tokens, step_tokens)
        return {"usual time between tokens": clock(seen.usual_gap),
                "longest, prompt prefilled whole": clock(seen.whole_gap),
                "longest, prompt in chunks": clock(seen.chunked_gap),
                "new user's first token, whole / chunked": f"{clock(seen.whole_ttft)} / {clock(seen.chunked_ttft)}"}

    return Explorer("stall", "A long prompt joins a running batch", [
        slider("prompt_tokens", "tokens in the arriving prompt", prompts, prompt_tokens, tokens_text),
        buttons("step_tokens", "token budget a step", {256: "256", 512: "512", 2048: "2,048",
                                                        V1_BUDGET: f"{units.number(V1_BUDGET)} (vLLM V1, H100)"}, step_tokens)],
        readouts, [Layer(("prompt_tokens", "step_tokens"), bars)], panel.axes(), panel.bottom, refuse=REFUSE,
        note=f"{SETUP}.")


@explorer
def load_latency(policy: str = "continuous", rate: float = 10) -> Explorer:
    """Part 4: p99 time to first token and p99 time between tokens as requests arrive faster."""
    rates = np.array(load.PLATE_RATES, dtype=float)
    curves = {p: load.load_curve(p) for p in POLICIES}
    panel = kit.Panel.make((1, 80), (1e-3, 1e2), kit.TOP + 8, 220, x_log=True, y_log=True,
                           x_label="requests a second", y_label="seconds, p99")
    log_ticks(panel, (1, 2, 5, 10, 20, 40, 80), lambda v: f"{v:g}")

    def lines(policy):
        curve = curves[policy]
        return (panel.line(rates, np.clip(curve.ttft_p99, 1e-3, 1e2), kit.PREFILL)
                + panel.line(rates, np.clip(curve.tbt_p99, 1e-3, 1e2), kit.DECODE, dashed=True))

    def marks(policy, rate):
        curve = curves[policy]
        k = int(np.argmin(np.abs(rates - rate)))
        return (panel.marker(rate, float(np.clip(curve.ttft_p99[k], 1e-3, 1e2)), kit.PREFILL)
                + panel.marker(rate, float(np.clip(curve.tbt_p99[k], 1e-3, 1e2)), kit.DECODE))

    def readouts(policy, rate):
        curve = curves[policy]
        k = int(np.argmin(np.abs(rates - rate)))
        return {"time to first token, p50 / p99": f"{clock(curve.ttft_p50[k])} / {clock(curve.ttft_p99[k])}",
                "time between tokens, p50 / p99": f"{clock(curve.tbt_p50[k])} / {clock(curve.tbt_p99[k])}",
                "reply tokens a second": units.number(curve.tokens_per_second[k])}

    return Explorer("load_latency", "Latency as the load grows", [
        menu("policy", "batching", POLICY_NAMES, policy),
        slider("rate", "requests a second", load.PLATE_RATES, rate, rate_text)],
        readouts, [Layer(("policy",), lines), Layer(("policy", "rate"), marks)], panel.axes(), panel.bottom,
        refuse=REFUSE, note=f"Blue: p99 time to first token. Red dashes: p99 time between tokens. {SETUP}; 2,000 requests a rate.")


@explorer
def continuous_batching(rate: float = 10) -> Explorer:
    """Plate XXIII.4: reply tokens a second against p99 time between tokens as the request rate grows, for static
    batching, continuous batching and chunked prefill."""
    rates = np.array(load.PLATE_RATES, dtype=float)
    curves = {p: load.load_curve(p) for p in POLICIES}
    most = max(float(c.tokens_per_second.max()) for c in curves.values())
    highest = max(float(c.tbt_p99.max()) for c in curves.values())
    ticks = kit.round_steps(0, most * 1.05)
    panel = kit.Panel.make((0, highest * 1e3 * 1.1), (0, ticks[-1]), kit.TOP + 8, 230,
                           x_label="p99 time between tokens (ms)", y_label="reply tokens a second")
    panel.x_ticks = [(v, units.number(v)) for v in kit.round_steps(0, highest * 1e3 * 1.05)]
    panel.y_ticks = [(v, units.number(v)) for v in ticks]
    drawn = "".join(panel.line(curves[p].tbt_p99 * 1e3, curves[p].tokens_per_second, POLICY_COLOURS[p]) for p in POLICIES)

    def marks(rate):
        k = int(np.argmin(np.abs(rates - rate)))
        return "".join(panel.marker(curves[p].tbt_p99[k] * 1e3, curves[p].tokens_per_second[k], POLICY_COLOURS[p])
                       for p in POLICIES)

    def readouts(rate):
        k = int(np.argmin(np.abs(rates - rate)))
        return {f"{POLICY_NAMES[p]}": f"{units.number(curves[p].tokens_per_second[k])} tokens/s, "
                                      f"p99 between tokens {clock(curves[p].tbt_p99[k])}, "
                                      f"p99 first token {clock(curves[p].ttft_p99[k])}" for p in POLICIES}

    return Explorer("continuous_batching", "Throughput against the time between tokens", [
        slider("rate", "requests a second", load.PLATE_RATES, rate, rate_text)],
        readouts, [Layer(("rate",), marks)], panel.axes() + drawn, panel.bottom, refuse=REFUSE,
        note="Grey: static batching. Red: continuous. Blue: chunked prefill (512 tokens a step). "
             "Llama 3 8B on an H100 SXM; a step takes the longer of its arithmetic at 60 % of peak and its "
             "memory traffic at 80 % of bandwidth, plus 0.2 ms.")

