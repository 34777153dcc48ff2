"""Each student's own numbers for the graded problems.

The practice notebooks (exercises/) and the worked solutions (solutions/) ask every problem with
fixed numbers, so the method is public. A graded notebook (exercises/graded/) asks the same
problems with numbers of the student's own: the lengths, the model, the GPU, the price and the
bits (and, where a problem runs the serving simulator, a request rate, a token budget or a latency
target from a short list) are drawn from a seed made of the notebook's name and the student's ID, as
PrairieLearn and WeBWorK do. The student enters their ID once, in the setup cell; each problem's cell then shows
that student's numbers and says whose they are. The grader draws the same numbers from the ID on
the roster, never from what the notebook shows, and marks the answer against them.

``sheet(notebook, student_id)`` is what a graded notebook calls; ``numbers(notebook, student_id)``
is the draw itself (a dict); ``TEMPLATES`` lists, by notebook, each problem's statement with
the places its numbers go. A problem not listed keeps its fixed numbers in the graded notebook.

Every draw is a case that can happen: a prompt and reply within the named model's context window,
weights (and caches) that fit the named GPU where the question takes it that they run there
(``sense`` says what is wrong with a draw, and tests run it over a thousand seeds).
"""
from __future__ import annotations

import functools
import hashlib
import math
import random
from dataclasses import dataclass
from typing import Callable

from . import memory, units
from .hardware import CATALOG
from .models import MODELS

RECORD_MIME = "application/vnd.servingmath.variant+json"

# The GPUs a variant may name: those rented by the hour in the data centre (not a laptop, not a T4,
# which cannot hold an 8B model's 16-bit weights with room to spare).
RENTED = ("h100-sxm", "h100-pcie", "h200", "a100-80gb", "l4", "l40s", "mi300x", "b200")
# How a problem calls a GPU when it names it without the maker, as "the H200 has 141 GB" does.
SHORT_NAMES = {"h100-sxm": "H100 SXM", "h100-pcie": "H100 PCIe", "h200": "H200", "a100-80gb": "A100 80 GB",
               "l4": "L4", "l40s": "L40S", "mi300x": "MI300X", "b200": "B200"}


def student_key(student_id) -> str:
    """A student's ID as the seed reads it: its text, trimmed, case ignored."""
    if isinstance(student_id, bool) or not isinstance(student_id, (str, int)):
        raise TypeError(f"student_id must be your student ID as text, such as \"S1001\", got {student_id!r}")
    key = str(student_id).strip().lower()
    if not key:
        raise ValueError("student_id is empty: write your student ID between the quotes in the setup cell")
    return key


def seed(notebook: str, student_id) -> int:
    """The seed of ``student_id``'s variant of ``notebook``: 64 bits of SHA-256 of both.

    For graded work ``student_id`` is the student's ID and the code their instructor gave them,
    ``S1001/7KQ3-M9XD``: the code is a keyed hash of the ID under a key the instructor alone holds
    (``coursegrader.key``), so the seed, and the numbers, of a student's graded ID cannot be drawn
    from this public code and the ID alone. An ID without a code draws practice numbers."""
    digest = hashlib.sha256(f"{notebook}\n{student_key(student_id)}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _nothing(numbers: dict) -> dict:
    return {}


def _sound(numbers: dict) -> list[str]:
    return []


@dataclass(frozen=True)
class Template:
    """A notebook's graded problems: a draw of numbers, and each problem's statement with places for them.

    ``practice`` holds the numbers the practice release and ``solutions/`` ask with: the statement
    filled with them is the solution's own statement, word for word (a test holds the two together,
    and the grader's answer for them to the solution's check). ``derive`` adds what follows from a draw
    (a model's shape, a GPU's figures); ``sense`` says what makes a draw a case that cannot happen.
    A statement's place is ``{name}``; ``{name:a}`` puts "a" or "an" before it, ``{name:A}`` "A" or "An"."""

    draw: Callable[[random.Random], dict]
    statements: dict[str, str]
    practice: dict
    derive: Callable[[dict], dict] = _nothing
    sense: Callable[[dict], list[str]] = _sound


def _steps(rng: random.Random, low: int, high: int, step: int, but: tuple = ()) -> int:
    """A whole number from ``low`` to ``high`` in steps of ``step``, never one of ``but``."""
    if not but:
        return rng.randrange(low, high + 1, step)
    return rng.choice([value for value in range(low, high + 1, step) if value not in but])


@functools.cache
def _stops(explorer: str, control: str) -> tuple:
    """The website's settings of a control of one of the lessons' explorers (``"lesson_1.request"``, ``"prompt_tokens"``),
    at the defaults its page starts it at."""
    from . import explorers

    module, name = explorer.split(".")
    return next(c.options for c in getattr(getattr(explorers, module), name)().site_controls if c.name == control)


def _near(explorer: str, control: str, values) -> tuple:
    """Those of ``values`` within 3 % of a stop of the explorer's control: asked there, a problem's answer would be
    read out at that stop (within a check's 2 %), so a draw keeps off them."""
    stops = _stops(explorer, control)
    return tuple(value for value in values if any(abs(value - stop) <= 0.03 * stop for stop in stops))


def _n(value) -> str:
    """A number as a statement prints it: thousands separated; a price's cents, or no needless decimals."""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.2f}"
    return f"{int(value):,}"


def _decimal(value: float) -> str:
    """A figure with as many decimals as it has, up to three: 2.039, 989.4, 312."""
    return f"{value:,.3f}".rstrip("0").rstrip(".")


def _article(text: str) -> str:
    """ "a" or "an" before ``text`` as it is read aloud: an 800, an 11,000, an 18, a 1,800; an NVIDIA, an AMD."""
    head = text.split(",")[0] if text[:1].isdigit() else text
    if head[:1].isdigit():
        return "an" if head.startswith("8") or head in ("11", "18") else "a"
    return "an" if head[:1].upper() in "AEIOU" or head.startswith("NVIDIA") else "a"


class _Place(str):
    """A value as a statement shows it; formatted with ``a`` or ``A``, it takes its article."""

    def __format__(self, spec: str) -> str:
        if spec == "a":
            return f"{_article(self)} {self}"
        if spec == "A":
            return f"{_article(self).capitalize()} {self}"
        return format(str(self), spec)


def _gpu(key: str) -> str:
    return f'{CATALOG[key].name} (`sm.CATALOG["{key}"]`)'


def _model(key: str) -> str:
    return f'{MODELS[key].name} (`sm.MODELS["{key}"]`)'


def _within(numbers: dict, model_key: str, *lengths: str, plus: int = 0) -> list[str]:
    """Empty if the tokens named (and ``plus`` more, the new token a decode step adds) fit the model's window."""
    model = MODELS[model_key]
    total = sum(numbers[name] for name in lengths) + plus
    named = " + ".join(lengths) + (f" + {plus}" if plus else "")
    return [] if total <= model.context_window else [
        f"{named} = {total:,} tokens is past {model.name}'s window of {model.context_window:,}"]


def _fits(model_key: str, gpu_key: str, bits=16, context=0, batch=1, kv_bits=16) -> list[str]:
    fit = memory.fit(MODELS[model_key], CATALOG[gpu_key], context, batch, weight_bits=bits, kv_bits=kv_bits)
    return [] if fit.fits else [f"{MODELS[model_key].name} does not fit the {CATALOG[gpu_key].name}: {fit.message}"]


# -- Lesson 1, Part 1: passes ---------------------------------------------------------
def _draw_1_1(rng):
    return {"prompt": _steps(rng, 200, 900, 10), "reply": _steps(rng, 300, 2000, 10),
            "report": _steps(rng, 3000, 7000, 100), "summary": _steps(rng, 40, 400, 1),
            "short": _steps(rng, 10, 60, 5), "story": _steps(rng, 1000, 3000, 100),
            "requests": _steps(rng, 5000, 20000, 1000), "day_prompt": _steps(rng, 1000, 4000, 100),
            "day_reply": _steps(rng, 100, 600, 10)}


LESSON_1_PART_1 = Template(
    draw=_draw_1_1,
    practice={"prompt": 800, "reply": 1500, "report": 6000, "summary": 150, "short": 30, "story": 1300,
              "requests": 10_000, "day_prompt": 2000, "day_reply": 300},
    statements={
        "1.1": "Someone sends {prompt:a}-token prompt, and the model answers it with {reply} tokens. Count the "
               "forward passes the model runs for this request.",
        "1.2": "Of the passes in Problem 1.1, how many are decode steps, each carrying one token?",
        "1.3": "{report:A}-token contract goes in, and {summary:a}-token summary comes out. How many forward "
               "passes does the request take?",
        "1.4": "A one-line, {short}-token prompt asks for {story:a}-token story. How many times as many passes "
               "does the story take as the summary of Problem 1.3?",
        "1.5": "In a day, a service answers {requests} requests one after another, each {day_prompt:a}-token "
               "prompt with {day_reply:a}-token reply. How many forward passes does it run in the day?",
        "1.6": "Over that day, how many tokens do all those passes carry into the model? Each pass counts the "
               "tokens it takes in as input.",
    },
    sense=lambda n: (_within(n, "llama-3-8b", "prompt", "reply") + _within(n, "llama-3-8b", "report", "summary")
                     + _within(n, "llama-3-8b", "short", "story")
                     + _within(n, "llama-3-8b", "day_prompt", "day_reply")),
)


# -- Lesson 1, Part 2: the roofline ----------------------------------------------------
def _efficiencies(rng, compute: str, memory_: str) -> dict:
    """The shares of a GPU's peak arithmetic and bandwidth its kernels reach, in per cent, never equal (where
    the two are equal the ridge is the peak ridge every catalog prints)."""
    pairs = [(c, m) for c in range(50, 90, 5) for m in range(60, 100, 5) if c != m]
    drawn = rng.choice(pairs)
    return {compute: drawn[0], memory_: drawn[1]}


WEIGHT_MODELS = ("llama-3-8b", "llama-3.2-1b", "llama-3.2-3b", "mistral-7b", "qwen2-7b", "gemma-7b", "gemma-2-9b",
                 "gemma-2-27b", "phi-3-medium", "mixtral-8x7b", "qwen3-30b-a3b", "llama-3-70b", "qwen2.5-72b", "qwen3-8b")


def _draw_1_2(rng):
    return {"prompt": _steps(rng, 50, 400, 10),
            "model": rng.choice(WEIGHT_MODELS), "bits": rng.choice((16, 8, 6, 5, 4, 3)),
            "ridge_gpu": rng.choice([key for key in RENTED if key != "h100-sxm"]),
            **_efficiencies(rng, "ridge_compute", "ridge_memory"),
            # Off the tokens of Part 2's roofline, which reads out a pass's FLOP per byte at 16, 8 and 4 bits.
            "low_bits": rng.choice((3, 4, 5, 6, 8)),
            "low_prompt": _steps(rng, 20, 400, 5, but=_near("lesson_1.roofline", "tokens", range(20, 401, 5))),
            "turn_gpu": rng.choice([key for key in RENTED if key != "h100-sxm"]),
            **_efficiencies(rng, "turn_compute", "turn_memory"),
            "pace_prompt": _steps(rng, 100, 500, 10)}


def _derive_1_2(n):
    gpu = CATALOG[n["ridge_gpu"]]
    return {"ridge_gpu_tflops": _decimal(gpu.peak_flops / 1e12), "ridge_gpu_tbps": _decimal(gpu.memory_bandwidth / 1e12)}


LESSON_1_PART_2 = Template(
    draw=_draw_1_2,
    practice={"prompt": 120, "model": "llama-3-70b", "bits": 8, "ridge_gpu": "a100-80gb", "ridge_compute": 70,
              "ridge_memory": 90, "low_bits": 4, "low_prompt": 70,
              "turn_gpu": "l4", "turn_compute": 70, "turn_memory": 90, "pace_prompt": 300},
    derive=_derive_1_2,
    statements={
        "2.1": "Llama 3 8B, its weights in 16 bits, still runs on the H100 SXM, but this time the prompt is only "
               "{prompt} tokens long. About how many FLOPs does its prefill pass do for each byte of weights it "
               "reads?",
        "2.2": "What sets the pace of that {prompt}-token prefill: reading memory or doing arithmetic? Answer "
               '`"memory"` or `"compute"`.',
        "2.3": "How many gigabytes do {model_name}'s weights take in {bits} bits? Count a gigabyte as 10⁹ bytes, "
               'as spec sheets do, and take the parameter count from `sm.MODELS["{model}"].parameters`.',
        "2.4": "The {ridge_gpu_named} does {ridge_gpu_tflops} trillion dense 16-bit FLOPs a second and reads "
               "{ridge_gpu_tbps} TB a second at its peaks; its kernels reach {ridge_compute} % of the first and "
               "{ridge_memory} % of the second. At the rates they reach, how many FLOPs can it do in the time it "
               "reads Llama 3 8B's 16-bit weights once? Give the count of FLOPs, not of trillions.",
        "2.5": "Store Llama 3 8B's weights in {low_bits} bits each instead. {low_prompt:A}-token prompt arrives. How "
               "many FLOPs does its prefill pass now do for each byte of weights it reads?",
        "2.6": "On the {turn_gpu_named}, with 16-bit weights, its arithmetic at {turn_compute} % of its peak and its "
               "memory at {turn_memory} % of its bandwidth, what is the shortest prompt, in whole tokens, whose "
               "prefill pass spends longer on arithmetic than on reading the weights?",
        "2.7": 'An NVIDIA L40S (`sm.CATALOG["l40s"]`) runs Llama 3 8B with its weights stored in 8 bits, widened '
               "to 16 bits for the arithmetic, so the GPU computes at its dense 16-bit rate (`peak_flops`), as "
               "throughout the lesson. {pace_prompt:A}-token prompt arrives. Does memory or arithmetic set the "
               'pace of its prefill? Answer `"memory"` or `"compute"`, then try the same prompt with 16-bit '
               'weights. (FP8 arithmetic, `l40s.flops("fp8")`, would put the ridge twice as high; this problem '
               "does not use it.)",
    },
    sense=lambda n: (_within(n, "llama-3-8b", "prompt") + _within(n, "llama-3-8b", "pace_prompt")
                     + _fits("llama-3-8b", "l40s", 8, n["pace_prompt"])
                     + _fits("llama-3-8b", n["turn_gpu"]) + _fits("llama-3-8b", "h100-sxm", n["low_bits"])),
)


# -- Lesson 1, Part 3: time ------------------------------------------------------------
@functools.cache
def _speed_fits() -> list:
    """(model, GPU) for Problem 3.3: a dense model's 16-bit weights (a step reads them all, as the lesson counts) on a
    rented GPU, other than the H100 SXM, that holds them; not Llama 3 8B, whose speed on every GPU Part 3's explorer
    reads out."""
    return [(model, gpu) for model in WEIGHT_MODELS for gpu in RENTED
            if MODELS[model].experts == 1 and model != "llama-3-8b" and gpu != "h100-sxm" and not _fits(model, gpu)]


# Models bigger than Llama 3 8B, for Problem 3.4.
BIG_MODELS = ("llama-3-70b", "qwen2.5-72b", "gemma-2-27b", "phi-3-medium")


@functools.cache
def _big_model_fits() -> list:
    """(model, bits, GPU) for Problem 3.4: a big model's weights in so many bits, on a rented GPU that holds them."""
    return [(model, bits, gpu) for model in BIG_MODELS for bits in (16, 8, 6, 5, 4) for gpu in RENTED
            if not _fits(model, gpu, bits)]


# A weight of so many bits, in bytes, as the problem says it in words.
BYTES_IN_WORDS = {2: "a quarter of a byte", 3: "three eighths of a byte", 4: "half a byte",
                  5: "five eighths of a byte", 6: "three quarters of a byte", 7: "seven eighths of a byte", 8: "one byte"}


def _draw_1_3(rng):
    speed_model, gpu = rng.choice(_speed_fits())
    big_model, big_bits, big_gpu = rng.choice(_big_model_fits())
    # Off the settings of Part 3's explorer, which times Llama 3 8B's requests at 16, 8 and 4 bits on every GPU.
    bits = [b for b in BYTES_IN_WORDS if b not in _stops("lesson_1.request", "weight_bits")]
    return {"bits": rng.choice(bits), "bits_gpu": rng.choice(RENTED),
            "prompt": _steps(rng, 500, 4000, 100, but=_near("lesson_1.request", "prompt_tokens", range(500, 4001, 100))),
            "speed_model": speed_model, "gpu": gpu,
            "big_model": big_model, "big_bits": big_bits, "big_gpu": big_gpu,
            "request_prompt": _steps(rng, 500, 3000, 100),
            "request_reply": _steps(rng, 100, 1000, 10,
                                    but=_near("lesson_1.request", "reply_tokens", range(100, 1001, 10))),
            # Each speed has one cheapest GPU fast enough: from 128 to 208 tokens a second the H100 SXM and the
            # MI300X, both $3 an hour, would both be right.
            "speed": rng.choice((40, 50, 60, 80, 100, 120, 250))}


LESSON_1_PART_3 = Template(
    draw=_draw_1_3,
    practice={"bits": 6, "bits_gpu": "h100-sxm", "prompt": 2100, "gpu": "mi300x", "speed_model": "mistral-7b",
              "big_model": "llama-3-70b", "big_bits": 16, "big_gpu": "mi300x", "request_prompt": 1000,
              "request_reply": 600, "speed": 100},
    derive=lambda n: {"bits_in_bytes": BYTES_IN_WORDS[n["bits"]]},
    statements={
        "3.1": "Run Llama 3 8B on the {bits_gpu_short}, but store each weight in {bits} bits ({bits_in_bytes}) "
               "rather than 16. What is the most tokens a second that a single reply can get?",
        "3.2": "Back to 16-bit weights on the H100 SXM. {prompt:A}-token prompt arrives. At best, how many "
               "milliseconds pass before the first reply token?",
        "3.3": "Run {speed_model_named}, in 16 bits, on {gpu_named:a}. At best, how many tokens a second does one "
               "user get?",
        "3.4": "{big_model_named}, in {big_bits} bits, runs on one {big_gpu_named}. At best, how many milliseconds "
               "apart do one user's tokens come?",
        "3.5": "Llama 3 8B, 16-bit, on the H100 SXM: {request_prompt:a}-token prompt and {request_reply:a}-token "
               "reply. At best, how many seconds pass from sending the prompt to receiving the last reply token?",
        "3.6": "Which GPU in the catalog rents for the least an hour while holding Llama 3 8B's 16-bit weights "
               "(`sm.memory.fit(model, gpu).fits`) and giving one user at least {speed} tokens a second? Answer "
               'with its catalog key, such as `"h100-sxm"`.',
    },
    sense=lambda n: (_within(n, "llama-3-8b", "prompt") + _within(n, "llama-3-8b", "request_prompt", "request_reply")
                     + _fits(n["speed_model"], n["gpu"]) + _fits(n["big_model"], n["big_gpu"], n["big_bits"])
                     + _one_cheapest(n["speed"])),
)


def _one_cheapest(speed: float) -> list[str]:
    """Empty if one GPU alone rents for the least of those that hold Llama 3 8B's 16-bit weights and give one
    user at least ``speed`` tokens a second (Problem 3.6 has one right answer)."""
    from .serving import decode_step

    model = MODELS["llama-3-8b"]
    fast = [g for g in CATALOG.values() if g.price_per_hour is not None and memory.fit(model, g).fits
            and 1 / decode_step(model, g).time >= speed]
    if not fast:
        return [f"no rented GPU gives one user {speed} tokens a second"]
    cheapest = [g.key for g in fast if g.price_per_hour == min(g.price_per_hour for g in fast)]
    return [] if len(cheapest) == 1 else [f"{' and '.join(cheapest)} rent for the same least price at {speed} "
                                          "tokens a second"]


# -- Lesson 1, Part 4: batching and cost -------------------------------------------------
# Prices of a million tokens Problem 4.5 asks a batch to reach: 2 to 20 cents, in tenths of a cent.
TARGET_COSTS = tuple(tenths / 1000 for tenths in range(20, 201))


def _draw_1_4(rng):
    # Not 8: Part 4's Your turn, whose answer the page's solution prints (folded, so the pages' reading misses it); and
    # off the users of Part 4's explorer, which prices 16-bit batches on every rented GPU.
    return {"users": _steps(rng, 2, 64, 1, but=(8, *_near("lesson_1.batching", "users", range(2, 65)))),
            "gpu": rng.choice([key for key in RENTED if key != "h100-sxm"]),
            "gpu_users": rng.choice((12, 24, 28, 36, 44, 48, 56, 60)), "bits_users": _steps(rng, 10, 64, 1),
            "bits": rng.choice((3, 4, 5, 6, 8)), "target": rng.choice(TARGET_COSTS),
            "flip_gpu": rng.choice([key for key in RENTED if key != "h100-sxm"]),
            **_efficiencies(rng, "flip_compute", "flip_memory"),
            "plate_users": rng.choice((8, 16, 24, 32, 48)), "plate_cache": _steps(rng, 500, 4000, 100),
            "flip_bits": rng.choice((8, 6, 5, 4))}


def _derive_1_4(n):
    from .roofline import PLATE

    return {"h100_price": CATALOG["h100-sxm"].price_per_hour, "gpu_price": CATALOG[n["gpu"]].price_per_hour,
            "target_shown": f"{n['target']:.3f}".removesuffix("0"),
            "plate_compute": _decimal(PLATE.compute_efficiency * 100),
            "plate_memory": _decimal(PLATE.bandwidth_efficiency * 100), "plate_overhead": _decimal(PLATE.overhead * 1e3)}


LESSON_1_PART_4 = Template(
    draw=_draw_1_4,
    practice={"users": 18, "gpu": "h200", "gpu_users": 36, "bits_users": 32, "bits": 4, "target": 0.10,
              "flip_gpu": "a100-80gb", "flip_compute": 65, "flip_memory": 80, "plate_users": 32, "plate_cache": 1000,
              "flip_bits": 8},
    derive=_derive_1_4,
    statements={
        "4.1": "The H100 SXM still rents for ${h100_price} an hour, and now {users} users share every decode pass. "
               "Roughly how many dollars do a million output tokens cost?",
        "4.2": "With those {users} users sharing each pass, how many tokens does the GPU make in an hour? Give the "
               "number of tokens, not of millions.",
        "4.3": "{gpu_named:A} rents for ${gpu_price} an hour. With {gpu_users} users sharing each pass, what does a "
               "million tokens cost on it?",
        "4.4": "Back on the H100 SXM at ${h100_price} an hour with {bits_users} users per pass, store the weights in "
               "{bits} bits. What does a million tokens cost now?",
        "4.5": "On the H100 SXM at ${h100_price} an hour, with 16-bit weights, what is the fewest users per pass "
               "that brings a million tokens to ${target_shown} or less?",
        "4.6": "Count the weights alone, as Example 4.1 does, with the arithmetic at {flip_compute} % of its peak and "
               "memory at {flip_memory} % of its bandwidth. Each user added to a pass then adds "
               "arithmetic but no "
               "bytes, so at some batch size the arithmetic takes longer than the read and every further user "
               "slows each step. On the {flip_gpu_named}, its weights stored in {flip_bits} bits (read at that width, "
               "computed at the 16-bit rate, as throughout the lesson), what is the smallest number of users per "
               "pass at which a decode step is compute-bound?",
        "4.7": "Now count what the lesson left out, with the assumptions of plate XXIII.1 (`sm.PLATE`): the "
               "arithmetic runs at {plate_compute} % of its peak, memory at {plate_memory} % of its peak, each pass "
               "costs {plate_overhead} ms more, and attention and the KV cache are counted. Each of {plate_users} "
               "users has {plate_cache} tokens in its cache. What does a million tokens cost on the H100 SXM at "
               "${h100_price} an hour?",
    },
    sense=lambda n: (_fits("llama-3-8b", n["gpu"]) + _fits("llama-3-8b", n["flip_gpu"], n["flip_bits"])
                     + _fits("llama-3-8b", "h100-sxm", 16, n["plate_cache"] + 1, n["plate_users"])
                     + _within(n, "llama-3-8b", "plate_cache", plus=1)),
)


# -- Plate XXIII.1 -------------------------------------------------------------------------
def _draw_plate_1(rng):
    weight_bits, kv_bits = rng.choice([(weights, kv) for _, weights, kv in PLATE_1_BITS])
    # Another GPU than the practice's, and a batch: one user's step barely moves with its cache.
    users, gpu = rng.choice(_batches_that_fit())
    return {"users": users, "plate_gpu": gpu, "cache": _steps(rng, 1000, 8000, 100),
            "prompt": _steps(rng, 1000, 8000, 100),
            "long_cache": rng.choice(_long_caches(gpu)), "weight_bits": weight_bits, "kv_bits": kv_bits,
            "share_users": _steps(rng, 2, 32, 1),
            # Not 16 bits: the plate's explorer reads out where a 16-bit prefill turns compute-bound on every GPU, and
            # Problem 7's answer would be that readout moved by the ratio of its efficiencies alone.
            "ridge_gpu": rng.choice([key for key in RENTED if key != "h100-sxm"]),
            "ridge_bits": rng.choice((8, 6, 5, 4, 3))}


@functools.cache
def _long_caches(gpu: str) -> list:
    """Plate XXIII.1's long conversation: 10,000 to 120,000 cached tokens, by the thousand, that fit the GPU beside
    Llama 3.1 8B's 16-bit weights."""
    return [tokens for tokens in range(10_000, 120_001, 1000) if not _fits("llama-3.1-8b", gpu, 16, tokens + 1)]


@functools.cache
def _batches_that_fit() -> list:
    """(users, GPU) for plate XXIII.1's batch: 2 to 16 users whose longest caches fit beside the weights, on a GPU
    other than the practice's H100."""
    return [(users, gpu) for users in range(2, 17) for gpu in RENTED if gpu != "h100-sxm"
            and memory.fit(MODELS["llama-3-8b"], CATALOG[gpu], 8001, users).fits]


# Plate XXIII.1 Problem 7's shares of peak arithmetic and bandwidth, in per cent. Not the plate's 60 and 80: the
# plate's explorer reads out where a 16-bit pass turns compute-bound under those, and the answer would be that
# readout scaled by the bits alone.
RIDGE_REACHED = (50, 90)


def _derive_plate_1(n):
    same = n["weight_bits"] == n["kv_bits"]
    return {"short_window": MODELS["llama-3-8b"].context_window, "long_window": MODELS["llama-3.1-8b"].context_window,
            "both_bits": f"both in {n['kv_bits']} bits" if same else
            f"the weights in {n['weight_bits']} bits and the cache in {n['kv_bits']}",
            "ridge_weights": "16-bit weights" if n["ridge_bits"] == 16 else
            f"the weights stored in {n['ridge_bits']} bits and widened to 16 for the arithmetic",
            "ridge_compute": RIDGE_REACHED[0], "ridge_memory": RIDGE_REACHED[1]}


def _outweighs(model_key: str, weight_bits: int, kv_bits: int) -> int:
    """The fewest whole tokens whose cache, read by a decode step, weighs as much as the weights."""
    model = MODELS[model_key]
    return math.ceil(memory.weight_bytes(model.parameters, weight_bits) / model.kv_bytes_per_token(kv_bits))


# The bits of weights and cache for which Llama 3.1 8B's cache outweighs its weights within its window.
PLATE_1_BITS = tuple(("llama-3.1-8b", weights, kv) for weights in (16, 8, 6, 5, 4, 3) for kv in (16, 8, 4)
                     if _outweighs("llama-3.1-8b", weights, kv) <= MODELS["llama-3.1-8b"].context_window)


PLATE_XXIII_1 = Template(
    draw=_draw_plate_1,
    practice={"users": 4, "plate_gpu": "h100-sxm", "cache": 6000, "prompt": 6000, "long_cache": 32_000, "weight_bits": 16, "kv_bits": 16,
              "share_users": 4, "ridge_gpu": "h200", "ridge_bits": 6},
    derive=_derive_plate_1,
    statements={
        "1": "{users} users of Llama 3 8B share each decode step on the {plate_gpu_named}, weights and cache in 16 "
             "bits, each with {cache} tokens in the KV cache. How many milliseconds does their next decode step take?",
        "2": "How many tokens a second does each of those users get, one token per decode step?",
        "3": "{prompt:A}-token prompt is prefilled in one pass on the same GPU. How many milliseconds does that pass "
             "take?",
        "4": "The conversation has grown past Llama 3 8B's {short_window}-token window. Llama 3.1 8B "
             '(`sm.MODELS["llama-3.1-8b"]`) has the same shape and reads up to {long_window} tokens: served by it on '
             "the same GPU, the cache now holds {long_cache} tokens. How many milliseconds does one decode step take "
             "now?",
        "5": "In that step over {long_cache} cached tokens, what fraction of all the bytes moved belongs to the KV "
             "cache, read or written? Give a fraction, such as 0.5.",
        "6": "{share_users} users of Llama 3.1 8B share a decode step, each with as many tokens in the cache. What is "
             "the fewest whole tokens each user's cache can hold for the step to read at least as many bytes of cache "
             "as of weights, {both_bits}? Count the caches the step reads, not the new tokens' keys and values it "
             "writes.",
        "7": "Count the pass as the plate does, causal attention and the cache written included, but with kernels "
             "that reach {ridge_compute} % of the GPU's peak arithmetic and {ridge_memory} % of its bandwidth. With "
             "{ridge_weights}, what is the shortest prompt whose prefill pass on the {ridge_gpu_named} is "
             "compute-bound? Compare it with the {ridge_gpu_short}'s ridge as the lesson counts it, where both peaks "
             "are reached in full.",
    },
    sense=lambda n: (_within(n, "llama-3-8b", "cache", plus=1) + _within(n, "llama-3-8b", "prompt")
                     + _within(n, "llama-3.1-8b", "long_cache", plus=1)
                     + _fits("llama-3.1-8b", n["plate_gpu"], 16, n["long_cache"] + 1)
                     + _fits("llama-3-8b", n["ridge_gpu"]) + _fits("llama-3-8b", n["plate_gpu"], 16, n["cache"] + 1, n["users"])
                     + ([] if _outweighs("llama-3.1-8b", n["weight_bits"], n["kv_bits"])
                        <= MODELS["llama-3.1-8b"].context_window
                        else ["Llama 3.1 8B's cache never outweighs its weights within its window"])),
)


# -- Lesson 2, Part 1: what the cache saves ---------------------------------------------
# Models whose every weight works on every token and whose every layer attends to every position before it (no
# experts, no sliding window, no latent cache): a decode step's FLOPs are Part 1's count, 2 a weight a token
# plus 4 × layers × heads × head dim a position attended.
FULL_ATTENTION_MODELS = ("llama-3-8b", "llama-3.2-1b", "llama-3.2-3b", "llama-3-70b", "llama-2-7b", "llama-2-70b",
                         "llama-3.1-405b", "qwen2.5-0.5b", "qwen2.5-7b", "qwen2.5-72b", "qwen3-0.6b", "qwen3-8b",
                         "gemma-2b", "gemma-7b", "deepseek-llm-67b")


def _draw_2_1(rng):
    prompt = _steps(rng, 1000, 6000, 100)
    long_model = rng.choice(FULL_ATTENTION_MODELS)
    return {"context": _steps(rng, 500, 7000, 100), "long_model": long_model,
            "long": _steps(rng, 1000, min(8000, MODELS[long_model].context_window - 1), 100),
            "gpu": rng.choice(RENTED), "clock_context": _steps(rng, 1000, 7000, 100),
            "prompt": prompt, "reply": _steps(rng, 100, min(1000, 8192 - prompt), 10)}


def _derive_2_1(n):
    first = (n["prompt"], n["reply"]) == (2000, 300)   # the request lesson 1 opened with
    return {"steps": n["reply"] - 1, "second": n["prompt"] + 1, "last": n["prompt"] + n["reply"] - 2,
            "request": "Lesson 1's first request" if first else "Your request"}


LESSON_2_PART_1 = Template(
    draw=_draw_2_1,
    practice={"context": 2000, "long_model": "llama-3-8b", "long": 8000, "gpu": "a100-80gb", "clock_context": 4500,
              "prompt": 2000, "reply": 300},
    derive=_derive_2_1,
    statements={
        "1.1": "Llama 3 8B has read {context} tokens. How many times the arithmetic does the next decode step take "
               "without the cache, against the step that uses it?",
        "1.2": "{long_model_named} has read {long} tokens. How many FLOPs does its next decode step take without "
               "the cache? Give the count of FLOPs, not of trillions.",
        "1.3": "And with the cache, after the same {long} tokens: how many FLOPs?",
        "1.4": "On the {gpu_named}, how many milliseconds does Llama 3 8B's decode step after {clock_context} tokens "
               "take without the cache? It reads only the weights; take the slower of its arithmetic and its reading.",
        "1.5": "{request}: {prompt:a}-token prompt and {reply:a}-token reply, so {steps} decode steps, after "
               "{prompt}, {second}, ... {last} tokens. Over all {steps} steps, how many times the arithmetic does "
               "decoding without the cache take, against decoding with it?",
    },
    sense=lambda n: (_within(n, "llama-3-8b", "context", plus=1) + _within(n, n["long_model"], "long", plus=1)
                     + _within(n, "llama-3-8b", "clock_context", plus=1)
                     + _within(n, "llama-3-8b", "prompt", "reply")
                     + _fits("llama-3-8b", n["gpu"], 16, n["clock_context"] + 1)),
)


# -- Lesson 2, Part 2: the cache's size ---------------------------------------------------
# Grouped-query models (several key-value heads, fewer than the query heads), one of each cache size a token (Mistral
# 7B's is Llama 3 8B's: a model of the same shape would only repeat another's answers); and larger models, each with
# a size of its own.
GQA_MODELS = tuple({MODELS[key].kv_bytes_per_token(): key for key in MODELS
                    if 1 < MODELS[key].kv_heads < MODELS[key].heads}.values())
LARGE_MODELS = ("llama-3-70b", "llama-3.1-405b", "mixtral-8x7b", "mixtral-8x22b", "qwen2-57b-a14b", "qwen3-30b-a3b",
                "qwen3-235b-a22b", "gemma-2-27b", "gemma-3-27b", "deepseek-llm-67b", "phi-3-medium")
LATENT_MODELS = ("deepseek-v2", "deepseek-v2-lite", "deepseek-v3")
CACHE_BITS = (16, 8, 4)
# (model, weight bits, cache bits) for which one conversation's cache outweighs the weights within the model's
# window: one of each threshold (8-bit weights over an 8-bit cache cross where 16-bit ones over a 16-bit cache do).
OUTWEIGHED = tuple({_outweighs(key, weight_bits, kv_bits): (key, weight_bits, kv_bits) for key in MODELS
                    for weight_bits in (16, 8, 6, 5, 4, 3) for kv_bits in CACHE_BITS
                    if _outweighs(key, weight_bits, kv_bits) <= MODELS[key].context_window}.values())


def _shape(key: str) -> dict:
    model = MODELS[key]
    return {"layers": model.layers, "kv_heads": model.kv_heads, "head_dim": model.head_dim,
            "rank": model.kv_lora_rank, "rope": model.rope_head_dim}


def _shapes(n: dict, *keys: str) -> dict:
    return {f"{key}_{part}": value for key in keys for part, value in _shape(n[key]).items()}


# A latent-attention model's cache: its shape, and one conversation's megabytes (Part 2's problem 2.5, the plate's 1).
LATENT_CONVERSATION = ("{latent_named} caches, in each of its {latent_layers} layers, one compressed vector of "
                       "{latent_rank} numbers and a {latent_rope}-number key for position, per token. How many "
                       "megabytes (1e6 bytes) does the cache of one {latent_context}-token conversation take at "
                       "{latent_bits} bits?")


def _draw_2_2(rng):
    outweigh, outweigh_bits, outweigh_kv_bits = rng.choice(OUTWEIGHED)
    return {"small": rng.choice(GQA_MODELS), "large": rng.choice(LARGE_MODELS), "latent": rng.choice(LATENT_MODELS),
            "small_bits": rng.choice(CACHE_BITS), "large_bits": rng.choice(CACHE_BITS),
            "latent_bits": rng.choice((16, 8)), "latent_context": _steps(rng, 1000, 16000, 100),
            "mha_context": _steps(rng, 1000, 4000, 100), "outweigh": outweigh, "outweigh_bits": outweigh_bits,
            "outweigh_kv_bits": outweigh_kv_bits, "long_bits": rng.choice((8, 4)),
            "long_context": _steps(rng, 10_000, 130_000, 1000)}


LESSON_2_PART_2 = Template(
    draw=_draw_2_2,
    practice={"small": "qwen3-8b", "large": "llama-3-70b", "latent": "deepseek-v2", "small_bits": 8, "large_bits": 16,
              "latent_bits": 8, "latent_context": 4000, "mha_context": 3000, "outweigh": "llama-3.2-3b",
              "outweigh_bits": 16, "outweigh_kv_bits": 16, "long_bits": 8, "long_context": 40_000},
    derive=lambda n: _shapes(n, "small", "large", "latent"),
    statements={
        "2.1": "{small_named} has {small_layers} layers, {small_kv_heads} key-value heads and a head dim of "
               "{small_head_dim}. How many bytes does each token leave in its cache at {small_bits} bits?",
        "2.2": "{large_named} has {large_layers} layers, {large_kv_heads} key-value heads and a head dim of "
               "{large_head_dim}. How many bytes a token does its cache take at {large_bits} bits?",
        "2.3": 'Llama 2 7B (`sm.MODELS["llama-2-7b"]`) gives each of its 32 query heads its own key-value head. '
               "How many gigabytes (1e9 bytes) is the cache of one {mha_context}-token conversation at 16 bits?",
        "2.4": "At how many tokens does one {outweigh_name} conversation's {outweigh_kv_bits}-bit cache weigh as "
               "much as the model's {outweigh_bits}-bit weights? ({outweigh_name}, "
               '`sm.MODELS["{outweigh}"]`, reads up to {outweigh_window} tokens.)',
        "2.5": LATENT_CONVERSATION,
        "2.6": "Llama 3.1 8B's cache stored in {long_bits} bits: how many gigabytes (1e9 bytes) for one "
               "{long_context}-token conversation?",
    },
    sense=lambda n: (_within(n, "llama-2-7b", "mha_context") + _within(n, "llama-3.1-8b", "long_context")
                     + _within(n, n["latent"], "latent_context")
                     + ([] if _outweighs(n["outweigh"], n["outweigh_bits"], n["outweigh_kv_bits"])
                        <= MODELS[n["outweigh"]].context_window else
                        [f"{MODELS[n['outweigh']].name}'s cache does not outweigh its weights within its window"])),
)


# -- Lesson 2, Part 3: users that fit ------------------------------------------------------
# (model, GPU) where a model's whole window, cached in 16 bits, fits beside its weights at least once.
WINDOW_CASES = tuple((key, gpu) for key in MODELS for gpu in RENTED
                     if memory.max_batch(MODELS[key], CATALOG[gpu], MODELS[key].context_window) >= 1)
# (model, GPU, weight bits) where the weights fit and take a tenth of the usable memory or more (beside smaller
# ones every card leaves nearly all of it): one of each room left (the H100s and the A100 hold the same 80 GB).
ROOM_CASES = tuple({budget.usable_bytes - budget.weight_bytes: (key, gpu, bits)
                    for key in MODELS for gpu in RENTED for bits in (16, 8, 4)
                    for budget in [memory.fit(MODELS[key], CATALOG[gpu], weight_bits=bits)]
                    if budget.fits and budget.weight_bytes >= budget.usable_bytes / 10}.values())


def _draw_2_3(rng):
    # Part 3's explorer reads out Llama 3 8B's room for caches and the users that fit on every GPU, at its lengths:
    # no draw asks for Llama 3 8B's room, or its window, or its users at a length near one of those.
    window_model, window_gpu = rng.choice([case for case in WINDOW_CASES if case[0] != "llama-3-8b"])
    room_model, room_gpu, room_bits = rng.choice([case for case in ROOM_CASES if case[0] != "llama-3-8b"])
    # Not lesson 1's 296 users, whose caches Part 3 prints at 3,000 tokens (a simple ratio from any other length);
    # nor whole thousands of tokens for the users that fit, a simple ratio from the 1,000-token users it prints.
    users = _steps(rng, 100, 400, 4, but=(296,))
    lengths = lambda low, high, *more: _near("lesson_2.users_that_fit", "tokens", range(low, high + 1, 100)) + more
    return {"bits": rng.choice((8, 4)), "bits_context": _steps(rng, 2000, 8000, 100, but=lengths(2000, 8000)),
            "room_model": room_model, "room_gpu": room_gpu, "room_bits": room_bits, "fit_gpu": rng.choice(RENTED),
            "context": _steps(rng, 1000, 6000, 100, but=lengths(1000, 6000, *range(1000, 6001, 1000))),
            "window_model": window_model, "window_gpu": window_gpu,
            "users": users, "users_context": _steps(rng, 1000, 5000, 100),
            "users_intro": f"Say {users:,} users share each decode step.",
            "big_gpu": rng.choice(("h200", "mi300x", "b200")),
            "big_context": _steps(rng, 2000, 8000, 100, but=lengths(2000, 8000))}


def _derive_2_3(n):
    room = CATALOG[n["room_gpu"]]
    # A GDDR6 card counts what ECC leaves to programs (servingmath.hardware); the sheet's figure beside it.
    room_memory = f"{_decimal(room.memory_bytes / 2**30)} GB"
    if room.listed_memory != room_memory:
        room_memory += f" of its {room.listed_memory} left with ECC on"
    return {"room_gpu_memory": room_memory,
            "big_gpu_memory": _decimal(CATALOG[n["big_gpu"]].memory_bytes / 2**30),
            "window_model_window": MODELS[n["window_model"]].context_window}


LESSON_2_PART_3 = Template(
    draw=_draw_2_3,
    practice={"bits": 8, "bits_context": 7000, "room_model": "llama-2-7b", "room_gpu": "l40s", "room_bits": 16,
              "fit_gpu": "h100-sxm", "context": 2300, "window_model": "llama-3.1-8b", "window_gpu": "h100-sxm",
              "users": 296, "users_context": 1400,
              "users_intro": "Lesson 1 found decode turning compute-bound at 296 users.", "big_gpu": "h200",
              "big_context": 7000},
    derive=_derive_2_3,
    statements={
        "3.1": "Store Llama 3 8B's cache in {bits} bits on the H100 SXM, keeping the weights in 16 bits. What is the "
               "largest batch of users with {bits_context} tokens each?",
        "3.2": 'On the {room_gpu_short} (`sm.CATALOG["{room_gpu}"]`, {room_gpu_memory}) with {room_model_name}\'s '
               '{room_bits}-bit weights (`sm.MODELS["{room_model}"]`), how many gigabytes (1e9 bytes) are left for '
               "the caches?",
        "3.3": "How many users of Llama 3 8B, each with {context:a}-token conversation, fit on the {fit_gpu_named}?",
        "3.4": "An engine without paging sets aside the whole window for every user. Serving {window_model_named}, "
               "whose window is {window_model_window} tokens, how many users fit on the {window_gpu_named}?",
        "3.5": "{users_intro} How many gigabytes (1e9 bytes) would {users} users' caches take at {users_context} "
               "tokens each?",
        "3.6": 'The {big_gpu_short} (`sm.CATALOG["{big_gpu}"]`) has {big_gpu_memory} GB. How many Llama 3 8B users '
               "with {big_context} tokens each fit on it?",
    },
    sense=lambda n: (_within(n, "llama-3-8b", "bits_context") + _within(n, "llama-3-8b", "context")
                     + _within(n, "llama-3-8b", "users_context") + _within(n, "llama-3-8b", "big_context")
                     + _fits(n["room_model"], n["room_gpu"], n["room_bits"])
                     + _fits("llama-3-8b", n["fit_gpu"], 16, n["context"])
                     + _fits("llama-3-8b", n["big_gpu"], 16, n["big_context"])
                     + _fits("llama-3-8b", "h100-sxm", 16, n["bits_context"], kv_bits=n["bits"])
                     + _fits(n["window_model"], n["window_gpu"], 16, MODELS[n["window_model"]].context_window)),
)


# -- Lesson 2, Part 4: what the cache costs --------------------------------------------------
def _fitting(rng, users, contexts, gpu="h100-sxm"):
    """Users and a context, drawn again until their caches (and each step's new token) fit beside Llama 3 8B's
    weights on ``gpu``."""
    while True:
        drawn = (_steps(rng, *users), _steps(rng, *contexts))
        if memory.fit(MODELS["llama-3-8b"], CATALOG[gpu], drawn[1] + 1, drawn[0]).fits:
            return drawn


def _draw_2_4(rng):
    # Off the settings of Part 4's explorer, which times and prices batches at 1,000, 3,000 and 8,000 tokens a user
    # (so also off the wrap-up quiz's batches of 3,000 tokens) and reads out where the caches outweigh the weights.
    def off(low, high, step, control="tokens"):
        return low, high, step, _near("lesson_2.cached_batching", control, range(low, high + 1, step))

    drawn = {}
    drawn["users"], drawn["context"] = _fitting(rng, off(4, 21, 1, "users"), off(1000, 6000, 100))
    drawn["step_users"], drawn["step_context"] = _fitting(rng, off(16, 64, 8, "users"), off(2000, 8000, 100))
    drawn["many"], drawn["many_context"] = _fitting(rng, off(64, 160, 8, "users"), off(1000, 4000, 100))
    drawn.update({"match_context": _steps(rng, *off(2000, 8000, 100)), "floor_context": _steps(rng, 1000, 8000, 100),
                  "full_context": _steps(rng, 2000, 8000, 100)})
    return drawn


LESSON_2_PART_4 = Template(
    draw=_draw_2_4,
    practice={"users": 12, "context": 3000, "step_users": 48, "step_context": 4000, "many": 96, "many_context": 3000,
              "match_context": 7000, "floor_context": 5500, "full_context": 8000},
    derive=lambda n: {"h100_price": CATALOG["h100-sxm"].price_per_hour},
    statements={
        "4.1": "The H100 SXM at ${h100_price} an hour, {users} users in each pass, each holding {context} tokens. "
               "About what does a million output tokens cost?",
        "4.2": "{step_users} users, each holding {step_context} tokens: how many milliseconds does one decode step "
               "take?",
        "4.3": "{many} users, each holding {many_context} tokens: how many tokens a second does each user get?",
        "4.4": "With {match_context} tokens a user, at how many users do the caches weigh as much as Llama 3 8B's "
               "weights? (A fraction is fine.)",
        "4.5": "At {floor_context} tokens a user, below what cost of a million tokens can the H100 at "
               "${h100_price} an hour never go, however many users share each step? Leave memory aside, as if any "
               "number of users fit: the answer is the limit the cost approaches, not the cost of the largest batch "
               "that fits. (Each token still costs the reading of its own user's cache.)",
        "4.6": "Fill the H100 with as many {full_context}-token users as fit (Part 3's arithmetic). What does a "
               "million tokens cost?",
    },
    sense=lambda n: (_fits("llama-3-8b", "h100-sxm", 16, n["context"] + 1, n["users"])
                     + _fits("llama-3-8b", "h100-sxm", 16, n["step_context"] + 1, n["step_users"])
                     + _fits("llama-3-8b", "h100-sxm", 16, n["many_context"] + 1, n["many"])
                     + _fits("llama-3-8b", "h100-sxm", 16, n["full_context"] + 1)
                     + sum((_within(n, "llama-3-8b", key, plus=1) for key in (
                         "context", "step_context", "many_context", "floor_context", "full_context")), [])
                     + _within(n, "llama-3-8b", "match_context")),
)


# -- Plate XXIII.2 --------------------------------------------------------------------------
def _draw_plate_2(rng):
    return {"latent": rng.choice(LATENT_MODELS), "latent_bits": rng.choice((16, 8)),
            "latent_context": _steps(rng, 1000, 16000, 100), "gpu": rng.choice(RENTED),
            "mha_context": _steps(rng, 1000, 4000, 100), "lite_context": _steps(rng, 2000, 8000, 100),
            "reserve": rng.choice((0.08, 0.10, 0.12, 0.15, 0.20)), "reserve_context": _steps(rng, 2000, 8000, 100),
            "bits": rng.choice((8, 4)), "bits_context": _steps(rng, 8000, 64_000, 1000)}


PLATE_XXIII_2 = Template(
    draw=_draw_plate_2,
    practice={"latent": "deepseek-v3", "latent_bits": 16, "latent_context": 6000, "gpu": "h100-sxm",
              "mha_context": 3000, "lite_context": 5000, "reserve": 0.10, "reserve_context": 8000, "bits": 8, "bits_context": 20_000},
    derive=lambda n: {**_shapes(n, "latent"), "reserve_percent": f"{n['reserve'] * 100:g} %",
                      "long_window": MODELS["llama-3.1-8b"].context_window},
    statements={
        "1": LATENT_CONVERSATION,
        "2": "How many Llama 2 7B users, with {mha_context} tokens each, fit on the {gpu_named}?",
        "3": "At {lite_context} tokens each, at how many DeepSeek-V2-Lite users do the caches weigh as much as its "
             "weights? (A fraction is fine.)",
        "4": "Hold back {reserve_percent} of the memory instead of 5 %. How many Llama 3 8B users with "
             "{reserve_context} tokens each fit on the H100?",
        "5": 'Llama 3.1 8B (`sm.MODELS["llama-3.1-8b"]`, Llama 3 8B\'s shape reading up to {long_window} tokens) '
             "with {bits:a}-bit cache (16-bit weights): how many users with {bits_context} tokens each fit?",
    },
    sense=lambda n: (_within(n, "llama-2-7b", "mha_context") + _within(n, "deepseek-v2-lite", "lite_context")
                     + _within(n, n["latent"], "latent_context")
                     + _within(n, "llama-3-8b", "reserve_context") + _within(n, "llama-3.1-8b", "bits_context")
                     + _fits("llama-2-7b", n["gpu"], 16, n["mha_context"])
                     + _fits("llama-3.1-8b", "h100-sxm", 16, n["bits_context"], kv_bits=n["bits"])
                     + ([] if memory.max_batch(MODELS["llama-3-8b"], CATALOG["h100-sxm"], n["reserve_context"],
                                               reserve=n["reserve"]) >= 1 else
                        ["no Llama 3 8B user fits the H100 SXM with that reserve"])),
)


# -- Lesson 3: the serving simulator ---------------------------------------------------------
# A simulated run costs a tenth of a second and a goodput search a few seconds, so the problems that
# run the simulator draw their settings from lists of a few dozen to a few hundred: a class shares its runs,
# each run once (and kept, ``servingmath._kept``).
def _draw_3_1(rng):
    cap = rng.choice((512, 768, 1024, 1536, 2048, 4096))
    while True:
        tokens = _steps(rng, 500, 8000, 1)
        if tokens % memory.BLOCK_TOKENS:       # a last block with room to spare
            break
    return {"cap": cap, "prompt": _steps(rng, 50, 900, 1), "reply": _steps(rng, 50, cap - 10, 1),
            "tokens": tokens, "gpu": rng.choice(RENTED), "bits": rng.choice(SERVED_BITS),
            "reserve": rng.choice(RESERVES)}


# Weights as engines serve them (16 bits, 8-bit and 4-bit quantized), and the share of a GPU's memory an engine
# holds back: vLLM's gpu_memory_utilization runs from its default of 0.9 to the 0.97 its users set
# (``memory.RESERVE_SOURCES``).
SERVED_BITS = (16, 8, 4)
RESERVES = tuple(percent / 100 for percent in range(3, 11))


LESSON_3_PART_1 = Template(
    draw=_draw_3_1,
    practice={"cap": 1024, "prompt": 161, "reply": 338, "tokens": 1000, "gpu": "h200", "bits": 16,
              "reserve": memory.RESERVE},
    derive=lambda n: {"block": memory.BLOCK_TOKENS, "held_back": units.percent(n["reserve"]),
                      "window": _n(MODELS["llama-3-8b"].context_window)},
    statements={
        "1.1": "An engine reserves each request's prompt plus a cap of {cap} reply tokens. For a conversation of "
               "{prompt:a}-token prompt and {reply:a}-token reply, what share of its reservation holds tokens, in "
               "per cent?",
        "1.2": "With blocks of {block} tokens, how many blocks does a conversation of {tokens} tokens hold?",
        "1.3": "What share of the room in that conversation's blocks stands empty, in per cent?",
        "1.4": "Llama 3 8B's weights in {bits} bits on the {gpu_named}, {held_back} of its memory held back: how many "
               "whole blocks of {block} tokens of cache fit in what is left?",
        "1.5": "Reserving Llama 3 8B's whole {window}-token window for each user, how many users fit in those blocks?",
        "1.6": "Paged instead, how many users of {prompt} + {reply} tokens fit at their longest?",
    },
    sense=lambda n: (_within(n, "llama-3-8b", "prompt", "cap") + _within(n, "llama-3-8b", "tokens")
                     + ([] if n["reply"] <= n["cap"] else [f"a reply of {n['reply']:,} tokens passes the cap of "
                                                          f"{n['cap']:,}"])
                     + ([] if n["tokens"] % memory.BLOCK_TOKENS else [f"{n['tokens']:,} tokens fill their last block"])
                     + _fits("llama-3-8b", n["gpu"], n["bits"], MODELS["llama-3-8b"].context_window)
                     + ([] if n["reserve"] in RESERVES + (memory.RESERVE,) else [f"a reserve of {n['reserve']!r} is "
                                                                                f"not among {RESERVES}"])),
)

def _off_chart(low: float, high: float, step: float = 1) -> tuple:
    """Request rates from ``low`` to ``high`` in steps of ``step``, none of them a rate the lesson's charts and
    tables run (``load.PLATE_RATES``): every figure the pages print for a rate is at one of those, so a draw
    off them asks for a figure no page prints. (A run of 2,000 requests takes a few hundredths of a second, so
    a class can have many rates.)"""
    from .load import PLATE_RATES

    count = round((high - low) / step) + 1
    return tuple(rate for rate in (round(low + index * step, 6) for index in range(count)) if rate not in PLATE_RATES)


# Request rates the lesson's runs (``load.run``: 2,000 ShareGPT-like requests) are drawn from: static batching's
# queue at rates where its p99 wait still grows; its throughput below saturation; continuous batching's gaps
# below the knee; rates past the knee.
STATIC_RATES = _off_chart(11, 45, 2)
THROUGHPUT_RATES = _off_chart(0.6, 18.4, 0.2)
MEDIAN_RATES = _off_chart(4, 49, 0.5)
# GPUs at least as fast as the lesson's H100 SXM that problems run the server on (static batching's queue; what
# chunking saves, ``SAVING_FROM``): each rate on each a run of its own.
SERVING_GPUS = ("h100-sxm", "h200", "mi300x", "b200")
# The GPUs continuous batching's gaps are asked on, each with the highest of those rates below its knee.
MEDIAN_GPUS = {"h100-sxm": 49, "h200": 49, "mi300x": 49, "b200": 49, "h100-pcie": 34, "a100-80gb": 20}


def _draw_3_2(rng):
    gpu = rng.choice(tuple(MEDIAN_GPUS))
    return {"median_gpu": gpu, "median_rate": rng.choice([rate for rate in MEDIAN_RATES if rate <= MEDIAN_GPUS[gpu]]),
            "rate": rng.choice(STATIC_RATES), "run_gpu": rng.choice(SERVING_GPUS), "a_prompt": _steps(rng, 5, 2000, 1),
            "a_reply": _steps(rng, 20, 1500, 1), "b_prompt": _steps(rng, 500, 4000, 50),
            "static_rate": rng.choice(THROUGHPUT_RATES)}


def _rates_shown(*names):
    """Each rate as a statement shows it: 12, 12.5."""
    return lambda n: {f"{name}_shown": _decimal(n[name]) for name in names}


LESSON_3_PART_2 = Template(
    draw=_draw_3_2,
    practice={"rate": 4, "a_prompt": 10, "a_reply": 60, "b_prompt": 1800, "median_rate": 17, "static_rate": 14,
              "median_gpu": "h100-sxm", "run_gpu": "h100-sxm"},
    derive=_rates_shown("static_rate", "median_rate"),
    statements={
        "2.1": "Run the simulator at {rate} requests a second (`load.run`, static batching), Llama 3 8B on the "
               "{run_gpu_named}. What is the p99 time to first token, in seconds?",
        "2.2": "A, as in Example 2.1, is alone on the GPU under the plate's assumptions; here it has {a_prompt:a}-token "
               "prompt and {a_reply:a}-token reply. When, in milliseconds after it arrives, is its last token made?",
        "2.3": "B ({b_prompt}-token prompt) arrives 1 ms after A. Under continuous batching, when does B's first token "
               "come, in milliseconds after time 0?",
        "2.4": "With Llama 3 8B on the {median_gpu_named} at {median_rate_shown} requests a second under continuous "
               "batching, what is the p99 time between tokens, in milliseconds?",
        "2.5": "At {static_rate_shown} requests a second under static batching, how many reply tokens a second does the "
               "server make?",
    },
    sense=lambda n: (_within(n, "llama-3-8b", "a_prompt", "a_reply") + _within(n, "llama-3-8b", "b_prompt", plus=5)
                     + [f"{name} = {n[name]} is not among the rates {rates}" for name, rates in (
                         ("rate", STATIC_RATES + (4,)), ("median_rate", MEDIAN_RATES),
                         ("static_rate", THROUGHPUT_RATES + (14,))) if n[name] not in rates]
                     + ([] if n["median_rate"] <= MEDIAN_GPUS.get(n["median_gpu"], 0) else [
                         f"{n['median_rate']} requests a second is past the knee on the {n['median_gpu']}"])),
)

# Token budgets a step for chunked prefill: 128 to 2,048 tokens, in steps of 32.
BUDGETS = tuple(range(128, 2049, 32))


def _draw_3_3(rng):
    prompt = _steps(rng, 3000, 7000, 100)
    return {"prompt": prompt, "budget": rng.choice(BUDGETS), "steps_budget": rng.choice(BUDGETS),
            "steps_prompt": _steps(rng, 1000, 8000, 100), "whole_prompt": _steps(rng, 1000, prompt - 500, 100),
            "swap_tokens": _steps(rng, 100, 8000, 10), "gpu": rng.choice(RENTED)}


def _derive_3_3(n):
    from .load import SWAP_BANDWIDTH

    return {"link": _decimal(SWAP_BANDWIDTH / 1e9)}


LESSON_3_PART_3 = Template(
    draw=_draw_3_3,
    practice={"prompt": 4000, "budget": 256, "steps_budget": 512, "steps_prompt": 3000, "whole_prompt": 2100,
              "swap_tokens": 500, "gpu": "h100-sxm"},
    derive=_derive_3_3,
    statements={
        "3.1": "On the {gpu_named}, {prompt:a}-token prompt joins a running user with a budget of {budget} tokens a "
               "step. How long, in milliseconds, is the running user's longest gap between tokens?",
        "3.2": "On the same GPU, with one user decoding and a budget of {steps_budget} tokens a step, the user's next "
               "token takes one token of each step. How long, in milliseconds, does {steps_prompt:a}-token prompt "
               "take to its first token?",
        "3.3": "Prefilled whole on the same GPU, how long does {whole_prompt:a}-token prompt stall the running user, "
               "in milliseconds?",
        "3.4": "How many megabytes (1e6 bytes) must be copied to swap out a user holding {swap_tokens} tokens of "
               "Llama 3 8B's 16-bit cache?",
        "3.5": "At the lesson's host link of {link} GB/s, how many milliseconds does that copy take one way?",
    },
    # The running user of ``load.prefill_stall`` holds 600 tokens; the prompt joins it, with a reply of 2.
    sense=lambda n: (_within(n, "llama-3-8b", "prompt", plus=2) + _within(n, "llama-3-8b", "whole_prompt", plus=2)
                     + _within(n, "llama-3-8b", "steps_prompt", plus=1) + _within(n, "llama-3-8b", "swap_tokens")
                     + _fits("llama-3-8b", n["gpu"], 16, MODELS["llama-3-8b"].context_window)
                     + ([] if n["whole_prompt"] < n["prompt"] else ["the whole prompt is not the shorter"])
                     + [f"{name} = {n[name]} is not among the budgets {BUDGETS}" for name in ("budget", "steps_budget")
                        if n[name] not in BUDGETS]),
)

# Latency targets (time to first token, seconds; time per later token, seconds) a goodput is found for: 0.2 s, and
# 6.75 to 13 ms a token in eighths of a millisecond, where the time per token binds (a looser one binds on the
# engine's 256 users a step, within 2 % of the page's goodput; a tighter one leaves a few requests a second).
TARGETS = tuple((0.2, tpot / 8e3) for tpot in range(54, 105))
# Rates past the knee of continuous batching on the lesson's server (off the chart's rates).
KNEE_RATES = _off_chart(60.5, 79.5, 0.5)


def _draw_3_4(rng):
    ttft, tpot = rng.choice(TARGETS)
    good_ttft, good_tpot = rng.choice(TARGETS)
    return {"ttft": ttft, "tpot": tpot, "rate": _steps(rng, 100, 3000, 10),
            "good_ttft": good_ttft, "good_tpot": good_tpot, "many": _steps(rng, 200, 5000, 100),
            "price": rng.choice(PRICES), "knee_rate": rng.choice(KNEE_RATES)}


# An H100's price an hour, in dollars: $1.50 to $6.00, in steps of 5 cents.
PRICES = tuple(cents / 100 for cents in range(150, 601, 5))


def _derive_3_4(n):
    return {"knee_rate_shown": _decimal(n["knee_rate"]),
            "ttft_s": _decimal(n["ttft"]), "tpot_ms": _decimal(n["tpot"] * 1e3),
            "good_ttft_s": _decimal(n["good_ttft"]), "good_tpot_ms": _decimal(n["good_tpot"] * 1e3)}


LESSON_3_PART_4 = Template(
    draw=_draw_3_4,
    practice={"ttft": 0.2, "tpot": 0.010, "rate": 150, "good_ttft": 0.2, "good_tpot": 0.012, "many": 1000, "price": 3,
              "knee_rate": 70},
    derive=_derive_3_4,
    statements={
        "4.1": "With targets of {ttft_s} s to the first token and {tpot_ms} ms a token after it, how many H100s do "
               "{rate} requests a second need?",
        "4.2": "What is one H100's goodput with targets of {good_ttft_s} s and {good_tpot_ms} ms, in requests a second?",
        "4.3": "At the same targets, how many H100s do {many} requests a second need?",
        "4.4": "At that goodput and ${price} an hour, what does a million reply tokens cost, in dollars?",
        "4.5": "Under continuous batching at {knee_rate_shown} requests a second, what is the p99 time to first token, in "
               "seconds?",
    },
    sense=lambda n: ([f"targets {pair} are not among {TARGETS}" for pair in ((n["ttft"], n["tpot"]),
                                                                          (n["good_ttft"], n["good_tpot"]))
                      if pair not in TARGETS]
                     + ([] if n["knee_rate"] in KNEE_RATES + (70,) else [f"{n['knee_rate']} is not past the knee"])),
)

# The plate's runs are those of its chart, at ``load.PLATE_RATES``; a limit is read off the chart's line, straight
# between two of them, where the line rises (milliseconds): each limit gives its own rate.
TTFT_LIMITS_MS = tuple(limit / 2 for limit in range(59, 84))     # 29.5 to 41.5 ms, below the knee's jump
TBT_LIMITS_MS = tuple(limit / 2 for limit in range(14, 57))      # 7 to 28 ms


# Rates for the plate's problems 3 to 5, between the chart's: a student runs the server (``load.run``) there. Chunked
# prefill's throughput below its ceiling; static batching's queue; what chunking saves, from the rate where it saves
# half a millisecond or more on each GPU (below it, a long prompt seldom meets a crowd and the two policies are even).
CHUNKED_RATES = _off_chart(2, 58, 0.25)
STATIC_QUEUE_RATES = _off_chart(3, 79, 2)
PLATE_4_RATES = _off_chart(30, 99, 0.5)
SAVING_FROM = {"h100-sxm": 30, "h200": 35, "mi300x": 40, "b200": 65}


def _draw_plate_4(rng):
    return {"ttft_limit": rng.choice(TTFT_LIMITS_MS), "tbt_limit": rng.choice(TBT_LIMITS_MS),
            "chunked_rate": rng.choice(CHUNKED_RATES), "static_rate": rng.choice(STATIC_QUEUE_RATES),
            "static_gpu": rng.choice(SERVING_GPUS), **_saving(rng)}


def _saving(rng):
    gpu = rng.choice(tuple(SAVING_FROM))
    return {"saving_gpu": gpu, "saving_rate": rng.choice([rate for rate in PLATE_4_RATES if rate >= SAVING_FROM[gpu]])}


def _plate_rates(n):
    from .load import PLATE_RATES

    return [f"{name} = {n[name]} is not a rate the problem runs" for name, rates in (
        ("chunked_rate", CHUNKED_RATES), ("static_rate", STATIC_QUEUE_RATES + (12,)), ("saving_rate", PLATE_4_RATES))
        if n[name] not in rates + PLATE_RATES] + (
        [] if n["saving_rate"] >= SAVING_FROM.get(n["saving_gpu"], math.inf) else
        [f"chunking saves little at {n['saving_rate']} requests a second on the {n['saving_gpu']}"])


PLATE_XXIII_4 = Template(
    draw=_draw_plate_4,
    practice={"ttft_limit": 35, "tbt_limit": 18, "chunked_rate": 80, "static_rate": 12, "saving_rate": 30,
              "static_gpu": "h100-sxm", "saving_gpu": "h100-sxm"},
    derive=lambda n: {"ttft_limit_ms": _decimal(n["ttft_limit"]), "tbt_limit_ms": _decimal(n["tbt_limit"]),
                      **_rates_shown("chunked_rate", "saving_rate")(n)},
    statements={
        "1": "Draw continuous batching's p99 time to first token as the chart does, straight between the plate's rates "
             "(`load.PLATE_RATES`). At what rate, in requests a second, does the line first reach {ttft_limit_ms} ms?",
        "2": "Drawn the same way, at what rate does continuous batching's p99 time between tokens first reach "
             "{tbt_limit_ms} ms?",
        "3": "At {chunked_rate_shown} requests a second, how many tokens a second does chunked prefill make?",
        "4": "With Llama 3 8B on the {static_gpu_named} at {static_rate} requests a second, what is static batching's "
             "p99 time to first token, in seconds?",
        "5": "With Llama 3 8B on the {saving_gpu_named} at {saving_rate_shown} requests a second, how many milliseconds "
             "does chunked prefill take off continuous batching's p99 time between tokens?",
    },
    sense=lambda n: (_plate_rates(n) + [f"{n[name]} ms is not a listed limit" for name, listed in (
        ("ttft_limit", TTFT_LIMITS_MS), ("tbt_limit", TBT_LIMITS_MS)) if n[name] not in listed]),
)

# -- Lesson 4, Part 1: tensor parallelism ----------------------------------------------------------
def _group_fits(model_key: str, gpu_key: str, count: int, link=None, context=0, batch=1, bits=16) -> list[str]:
    """Empty if ``count`` GPUs of ``gpu_key`` can split the model (its heads) and hold their shares of its weights and
    the caches; else what is wrong."""
    from . import parallel

    try:
        grp = parallel.group(gpu_key, count, link)
        found = parallel.fit(MODELS[model_key], grp, context, batch, weight_bits=bits)
    except ValueError as error:
        return [str(error)]
    return [] if found.fits else [found.message]


SPLIT_MODELS = ("llama-3-70b", "qwen2.5-72b", "llama-2-70b", "deepseek-llm-67b", "mixtral-8x7b", "mixtral-8x22b",
                "gemma-2-27b", "gemma-3-27b", "qwen3-30b-a3b", "qwen2-57b-a14b", "llama-3.1-405b", "qwen3-235b-a22b",
                "phi-3-medium", "llama-3-8b", "qwen3-8b", "gemma-2-9b", "qwen2.5-7b", "gemma-7b")
# (GPU, link, counts) a server joins: the HGX boards' NVSwitch, H100 PCIe cards on PCIe or a two-card bridge, L40S on PCIe.
LINKED = (("h100-sxm", "nvlink4", (2, 4, 8)), ("h200", "nvlink4", (2, 4, 8)), ("b200", "nvlink5", (2, 4, 8)),
          ("a100-80gb", "nvlink3", (2, 4, 8)), ("h100-pcie", "pcie5", (2, 4, 8)),
          ("h100-pcie", "nvlink-bridge-h100", (2,)), ("l40s", "pcie4", (4, 8)))
LINK_NAMES = {"nvlink4": "NVLink", "nvlink5": "NVLink", "nvlink3": "NVLink", "pcie5": "PCIe Gen5", "pcie4": "PCIe Gen4",
              "nvlink-bridge-h100": "an NVLink bridge", "infiniband-ndr": "InfiniBand NDR",
              "infiniband-hdr": "InfiniBand HDR", "roce-400g": "RoCE"}
SMALL_MODELS = ("llama-3.2-1b", "llama-3.2-3b", "qwen3-0.6b", "qwen2.5-0.5b", "gemma-2-2b", "gemma-3-1b", "llama-3-8b",
                "qwen3-8b", "mistral-7b", "qwen2.5-7b", "gemma-2-9b")


# Cards sold for PCIe slots, and the PCIe generation that joins them.
CARD_LINKS = {"h100-pcie": "pcie5", "a100-80gb-pcie": "pcie4", "l40s": "pcie4"}
CARDS = tuple(CARD_LINKS)
# The tokens cached a user on Parts 1 and 2 and in their explorers: no draw of either part uses it, so no graded
# answer can be read off a page's step or an explorer's readout.
CACHED_SHOWN = 1000
# The lessons whose pages print caches a token: lesson 2 teaches them, Lesson 4's Part 1 prints Llama 3 70B's.
KV_PAGES = ("lesson-2", "lesson-4")
# The bits Problem 1.4 draws for its cache.
KV_BITS = (16, 8)


@functools.cache
def kv_shown() -> frozenset:
    """Every figure in bytes that the ``KV_PAGES`` print, as a reader sees them (``data/leaks.yaml``)."""
    from .leaks import figures

    return frozenset(value * size for lesson in KV_PAGES for text in _seen()["lessons"][lesson].values()
                     for value, kind, size, *_ in figures(text) if kind == "bytes")


@functools.cache
def kv_cases() -> tuple:
    """(model, GPUs) for Problem 1.4: the model splits that many ways and its 16-bit weights fit that many H100 SXM.
    Left out: models with latent attention, since the part teaches only a cache kept per KV head; models whose cache
    a token, in any of ``KV_BITS``, the pages print (``kv_shown``), since a share of it is one division away; cases
    whose share a GPU, in any of ``KV_BITS``, is the practice's answer, half or twice it (Gemma 2B's one KV head
    gives the practice's share on any count of GPUs). Models with the same cache a token and KV heads give the same
    answer on as many GPUs: the first stands for the rest, so that no answer is drawn more often for being shared."""
    from . import parallel

    def shares(key, gpus, bits_drawn=KV_BITS):
        model = MODELS[key]
        return {model.kv_bytes_per_token(bits) * parallel.kv_share(model, gpus) for bits in bits_drawn}

    practice = LESSON_4_PART_1.practice
    (practice_share,) = shares(practice["kv_model"], practice["kv_gpus"], (practice["kv_bits"],))
    near_practice = {practice_share / 2, practice_share, practice_share * 2}
    found = {}
    for key, model in MODELS.items():
        if model.latent_attention or not kv_shown().isdisjoint(model.kv_bytes_per_token(bits) for bits in KV_BITS):
            continue
        for gpus in (2, 4, 8):
            if not _group_fits(key, "h100-sxm", gpus) and near_practice.isdisjoint(shares(key, gpus)):
                found.setdefault((model.kv_bytes_per_token(16), model.kv_heads, gpus), (key, gpus))
    return tuple(found.values())
# Batches of Problems 1.3 and 2.3: above the explorers' largest (``explorers.lesson_4.BATCHES``), whose readouts of
# all the all-reduces or sends are the answer times a count.
SHOWN_BATCH = 256


@functools.cache
def _splits() -> list:
    """(model, bits, GPUs) for Problem 1.2: a model whose weights in so many bits split that many ways over H100 SXM.
    The Part 1 explorer's models are left out: its readout (and Example 1.1's table) prints their 16-bit shares, and
    a share in 8 bits is the 16-bit share on twice the GPUs."""
    from .explorers.lesson_4 import MODELS_SHOWN

    return [(key, bits, parts) for key in SPLIT_MODELS if key not in MODELS_SHOWN for bits in (16, 8)
            for parts in (2, 4, 8) if not _group_fits(key, "h100-sxm", parts, bits=bits)]


def _draw_4_1(rng):
    drawn = {"bits": rng.choice((16, 8, 4)), "gpus": rng.choice((2, 4, 8))}
    while True:
        drawn.update(users=_steps(rng, 1, 64, 1), context=_steps(rng, 500, 8000, 100, but=(CACHED_SHOWN,)))
        if not _group_fits("llama-3-70b", "h100-sxm", drawn["gpus"], "nvlink4", drawn["context"] + 1, drawn["users"],
                           drawn["bits"]):
            break
    split = rng.choice(_splits())
    gpu, link, counts = rng.choice(LINKED)
    kv = rng.choice(kv_cases())
    return {**drawn, "split": split[0], "split_bits": split[1], "parts": split[2], "ar_gpu": gpu, "ar_link": link,
            "ar_count": rng.choice(counts), "ar_batch": _steps(rng, SHOWN_BATCH + 32, 2048, 32),
            "kv_model": kv[0], "kv_gpus": kv[1], "kv_bits": rng.choice(KV_BITS), **_small_case(rng)}


def _small_case(rng) -> dict:
    """A small model, a card and users whose caches fit one card, drawn again until they do."""
    while True:
        drawn = {"small": rng.choice(SMALL_MODELS), "small_context": _steps(rng, 200, 8000, 50, but=(CACHED_SHOWN,)),
                 "small_users": _steps(rng, 2, 128, 1), "card": rng.choice(CARDS), "cards": rng.choice((2, 4, 8))}
        if not (_group_fits(drawn["small"], drawn["card"], 1, context=drawn["small_context"] + 1,
                            batch=drawn["small_users"])
                or _group_fits(drawn["small"], drawn["card"], drawn["cards"], CARD_LINKS[drawn["card"]])):
            return drawn


LESSON_4_PART_1 = Template(
    draw=_draw_4_1,
    practice={"bits": 8, "gpus": 4, "users": 16, "context": 2000, "split": "mixtral-8x7b", "split_bits": 16, "parts": 4,
              "ar_gpu": "h100-sxm", "ar_link": "nvlink4", "ar_count": 8, "ar_batch": 384, "kv_model": "gemma-2b",
              "kv_gpus": 8, "kv_bits": 16, "small": "gemma-2-2b", "small_context": 2000, "small_users": 2,
              "card": "h100-pcie", "cards": 2},
    derive=lambda n: {"ar_link_name": LINK_NAMES[n["ar_link"]], "card_link": CARD_LINKS[n["card"]],
                      "card_link_name": LINK_NAMES[CARD_LINKS[n["card"]]],
                      # a sliding window's layers keep a token only while it is within the window
                      "kv_token": "token a user holds" + (", while it is within every layer's sliding window"
                                                          if MODELS[n["kv_model"]].sliding_layers else "")},
    statements={
        "1.1": "Store Llama 3 70B's weights in {bits} bits, its KV cache in 16, on {gpus} H100 SXM joined by NVLink. "
               "{users} users each have {context} tokens cached. How many milliseconds does a decode step take?",
        "1.2": '{split_name} (`sm.MODELS["{split}"]`) in {split_bits} bits is split over {parts} GPUs. How many gigabytes '
               "(1e9 bytes) of weights does each GPU hold? The norms' weight vectors are small and every GPU keeps them "
               "whole.",
        "1.3": '{ar_count} {ar_gpu_short} joined by {ar_link_name} (`hardware.link("{ar_gpu}", "{ar_link}")`) all-reduce '
               "the output of one block of Llama 3 70B for a batch of {ar_batch} users, one new token each, in 16 bits. "
               "The all-reduce's fixed cost among {ar_count} GPUs is the link's `.latency_for({ar_count})`. "
               "How many microseconds does the all-reduce take?",
        "1.4": '{kv_model_name} (`sm.MODELS["{kv_model}"]`) is split over {kv_gpus} GPUs. How many bytes of '
               "{kv_bits}-bit KV cache does each GPU keep for every {kv_token}?",
        "1.5": '{small_name} (`sm.MODELS["{small}"]`) runs on {card_short} cards (`sm.CATALOG["{card}"]`), '
               "{small_users} users each with {small_context} tokens cached. How many times as long as on one card is "
               'a decode step on {cards} cards joined by {card_link_name} alone (`"{card_link}"`)? Below 1, more cards are '
               "faster.",
    },
    sense=lambda n: (_group_fits("llama-3-70b", "h100-sxm", n["gpus"], "nvlink4", n["context"] + 1, n["users"], n["bits"])
                     + _within(n, "llama-3-70b", "context", plus=1)
                     + _group_fits(n["split"], "h100-sxm", n["parts"], bits=n["split_bits"])
                     + _group_fits("llama-3-70b", n["ar_gpu"], n["ar_count"], n["ar_link"], 1, n["ar_batch"])
                     + _group_fits(n["kv_model"], "h100-sxm", n["kv_gpus"])
                     + _group_fits(n["small"], n["card"], 1, context=n["small_context"] + 1, batch=n["small_users"])
                     + _group_fits(n["small"], n["card"], n["cards"], CARD_LINKS[n["card"]], n["small_context"] + 1,
                                   n["small_users"])
                     + _within(n, n["small"], "small_context", plus=1)),
)

# -- Lesson 4, Part 2: pipeline parallelism --------------------------------------------------------
def _stages_fit(model_key: str, gpu_key: str, stages: int, link=None, context=0, batch=1, bits=16) -> list[str]:
    """Empty if ``stages`` GPUs of ``gpu_key``, one stage each, hold their layers' weights and caches; else what is wrong."""
    from . import parallel

    try:
        found = parallel.fit(MODELS[model_key], parallel.group(gpu_key, stages, link), context, batch, weight_bits=bits,
                             pipeline_parallel=stages)
    except ValueError as error:
        return [str(error)]
    return [] if found.fits else [found.message]


# Stages in one server (NVLink) or one a server (InfiniBand); links between the stages a send crosses.
STAGE_LINKS = ("nvlink4", "infiniband-ndr", "roce-400g")
SEND_LINKS = (("h100-sxm", "nvlink4"), ("h200", "nvlink4"), ("b200", "nvlink5"), ("a100-80gb", "nvlink3"),
              ("h100-pcie", "pcie5"), ("l40s", "pcie4"), ("h100-sxm", "infiniband-ndr"), ("a100-80gb", "infiniband-hdr"),
              ("h100-sxm", "roce-400g"))
SEND_MODELS = ("llama-3-70b", "llama-3-8b", "qwen2.5-72b", "mixtral-8x22b", "llama-3.1-405b", "gemma-2-27b", "qwen3-8b")
# (GPU, link, counts) a tensor split and as many stages can both use: Part 1's servers.
COMPARED = tuple(row for row in LINKED if row[1] != "nvlink-bridge-h100")


# How far each of Problem 2.2's slips must land from its answer, so that the check, whose tolerance is 2 %, can say
# which slip it was instead of marking it right.
SLIP_APART = 0.04


def _stage_slips_apart(key, bits, parts) -> bool:
    """Whether Problem 2.2's two slips (the weights shared out evenly; the most layers without table or head) both
    land at least ``SLIP_APART`` from the fullest stage's weights."""
    from . import parallel

    model = MODELS[key]
    held = parallel.fit(model, parallel.group("h100-sxm", parts), weight_bits=bits, pipeline_parallel=parts).weight_bytes
    whole = memory.weight_bytes(model.parameters, bits)
    slips = (whole / parts, whole * parallel.stage_layers(model, parts) / model.layers)
    return all(abs(slip - held) >= SLIP_APART * held for slip in slips)


@functools.cache
def _stage_splits() -> list:
    """(model, bits, stages) for Problem 2.2: a model whose layers do not divide into so many stages, its weights in so
    many bits held by that many H100 SXM, each slip far enough from the answer to be told apart; none with tied
    embeddings, whose one matrix both end stages keep."""
    return [(key, bits, parts) for key in SPLIT_MODELS for bits in (16, 8, 4) for parts in (2, 3, 4, 5, 6, 8)
            if MODELS[key].layers % parts and not MODELS[key].tied_embeddings
            and not _stages_fit(key, "h100-sxm", parts, bits=bits) and _stage_slips_apart(key, bits, parts)]


@functools.cache
def _sends() -> list:
    """(model, GPU, link) for Problem 2.3: a model that eight such GPUs hold as stages."""
    return [(key, gpu, link) for key in SEND_MODELS for gpu, link in SEND_LINKS if not _stages_fit(key, gpu, 8, link)]


def _draw_4_2(rng):
    drawn = {"bits": rng.choice((16, 8, 4)), "stages": rng.choice((2, 4, 8)), "link": rng.choice(STAGE_LINKS)}
    while True:
        drawn.update(users=_steps(rng, 1, 128, 1), context=_steps(rng, 200, 8000, 50, but=(CACHED_SHOWN,)))
        if not _stages_fit("llama-3-70b", "h100-sxm", drawn["stages"], drawn["link"], drawn["context"] + 1,
                           drawn["users"], drawn["bits"]):
            break
    split = rng.choice(_stage_splits())
    send = rng.choice(_sends())
    return {**drawn, "split": split[0], "split_bits": split[1], "parts": split[2], "send_model": send[0],
            "send_gpu": send[1], "send_link": send[2], "send_users": _steps(rng, SHOWN_BATCH + 32, 2048, 32),
            **_flight_case(rng), **_compared_case(rng)}


def _flight_case(rng) -> dict:
    """Micro-batches of Llama 3 70B in flight on H100 SXM stages, drawn again until their caches fit."""
    while True:
        drawn = {"flight_stages": rng.choice((2, 4, 8)), "flight_micro": rng.randint(2, 8),
                 "flight_users": _steps(rng, 1, 64, 1),
                 "flight_context": _steps(rng, 500, 4000, 100, but=(CACHED_SHOWN,))}
        if not _stages_fit("llama-3-70b", "h100-sxm", drawn["flight_stages"], None, drawn["flight_context"] + 1,
                           drawn["flight_micro"] * drawn["flight_users"]):
            return drawn


# Models for Problem 2.5: each splits 2 and 4 ways (heads and KV heads), all but Qwen2.5-7B (28 heads) 8 ways too;
# a draw whose split does not divide is drawn again.
COMPARED_MODELS = ("llama-3-70b", "qwen2.5-72b", "llama-3-8b", "qwen3-8b", "mixtral-8x7b", "qwen2.5-7b")


def _compared_case(rng) -> dict:
    """A model's users on Part 1's servers, split or in stages, drawn again until both hold their caches."""
    while True:
        gpu, link, counts = rng.choice(COMPARED)
        drawn = {"cmp_model": rng.choice(COMPARED_MODELS), "cmp_gpu": gpu, "cmp_link": link,
                 "cmp_gpus": rng.choice(counts), "cmp_per": _steps(rng, 1, 64, 1),
                 "cmp_context": _steps(rng, 200, 8000, 50, but=(CACHED_SHOWN,))}
        users, model = drawn["cmp_gpus"] * drawn["cmp_per"], drawn["cmp_model"]
        if not (_stages_fit(model, gpu, drawn["cmp_gpus"], link, drawn["cmp_context"] + 1, users)
                or _group_fits(model, gpu, drawn["cmp_gpus"], link, drawn["cmp_context"] + 1, users)
                or drawn["cmp_context"] + 1 > MODELS[model].context_window):
            return drawn


LESSON_4_PART_2 = Template(
    draw=_draw_4_2,
    practice={"bits": 8, "stages": 4, "link": "infiniband-ndr", "users": 32, "context": 2000, "split": "deepseek-llm-67b",
              "split_bits": 16, "parts": 8, "send_gpu": "h100-sxm", "send_link": "infiniband-ndr",
              "send_model": "llama-3-70b", "send_users": 32, "flight_stages": 4, "flight_micro": 4, "flight_users": 48,
              "flight_context": 1500, "cmp_model": "llama-3-70b", "cmp_gpu": "h100-pcie", "cmp_link": "pcie5", "cmp_gpus": 4, "cmp_per": 16,
              "cmp_context": 2000},
    derive=lambda n: {"link_name": LINK_NAMES[n["link"]], "send_link_name": LINK_NAMES[n["send_link"]],
                      "cmp_link_name": LINK_NAMES[n["cmp_link"]], "split_layers": MODELS[n["split"]].layers,
                      "cmp_users": n["cmp_gpus"] * n["cmp_per"]},
    statements={
        "2.1": "Cut Llama 3 70B into {stages} stages on {stages} H100 SXM joined by {link_name} (`\"{link}\"`), its "
               "weights in {bits} bits (the table and head too) and its KV cache in 16. One micro-batch of {users} users, each with {context} "
               "tokens cached, goes through. How many milliseconds pass between two of a user's tokens?",
        "2.2": '{split_name} (`sm.MODELS["{split}"]`), its {split_layers} layers, every weight in {split_bits} bits (the table and head too), is cut into '
               "{parts} stages of consecutive layers, one a GPU, as vLLM cuts it: where they do not divide evenly, the "
               "stages just before the last take one layer more each. The first stage also holds the input embedding "
               "table, the last the final norm and the output head. How many gigabytes (1e9 bytes) of weights does the "
               "fullest GPU hold? Count each layer's weights as an equal share of all the layers'.",
        "2.3": '{send_model_name} (`sm.MODELS["{send_model}"]`) runs as stages on {send_gpu_short} joined by '
               '{send_link_name} (`hardware.link("{send_gpu}", "{send_link}")`). How many microseconds does a stage '
               "take to send the next the hidden states and residuals of a micro-batch of {send_users} users, one new "
               "token each, in 16 bits?",
        "2.4": "{flight_stages} H100 SXM joined by NVLink hold Llama 3 70B in 16 bits as {flight_stages} stages. "
               "{flight_micro} micro-batches of {flight_users} users, each user with {flight_context} tokens cached, "
               "are in flight; each micro-batch starts its next token as soon as its last leaves the final stage. How "
               "many tokens a second do all the users get together?",
        "2.5": '{cmp_users} users of {cmp_model_name} (`sm.MODELS["{cmp_model}"]`), each with {cmp_context} tokens '
               "cached, run on {cmp_gpus} "
               "{cmp_gpu_short} joined by {cmp_link_name} (`\"{cmp_link}\"`). How many times as long as under "
               "{cmp_gpus:a}-way tensor split is a user's time between tokens when the GPUs are {cmp_gpus} stages "
               "instead, the users in {cmp_gpus} micro-batches of {cmp_per} in flight?",
    },
    sense=lambda n: (_stages_fit("llama-3-70b", "h100-sxm", n["stages"], n["link"], n["context"] + 1, n["users"],
                                 n["bits"])
                     + _within(n, "llama-3-70b", "context", plus=1)
                     + _stages_fit(n["split"], "h100-sxm", n["parts"], bits=n["split_bits"])
                     + _stages_fit(n["send_model"], n["send_gpu"], 8, n["send_link"])
                     + _stages_fit("llama-3-70b", "h100-sxm", n["flight_stages"], None, n["flight_context"] + 1,
                                   n["flight_micro"] * n["flight_users"])
                     + _stages_fit(n["cmp_model"], n["cmp_gpu"], n["cmp_gpus"], n["cmp_link"], n["cmp_context"] + 1,
                                   n["cmp_gpus"] * n["cmp_per"])
                     + _group_fits(n["cmp_model"], n["cmp_gpu"], n["cmp_gpus"], n["cmp_link"], n["cmp_context"] + 1,
                                   n["cmp_gpus"] * n["cmp_per"])),
)


# Part 3's runs (``replicas``): each a few tenths of a second, so the settings come from short lists and a class
# shares its runs. None is a setting the page or its explorer shows (four L4s; eight L4s at 18 a second;
# Llama 3 70B on H100s at 4 or 24 a second).
ROUTED_COPIES = (2, 3, 5, 6)
ROUTED_EACH = (2.3, 2.4, 2.5, 2.6)          # requests a second for each copy: near the knee and past it
# At 2.3 a copy (three, five or six copies to the fewest in flight) the profile preempts no one: the draws start at 2.4.
PREEMPTED_EACH = (2.4, 2.5, 2.6, 2.7, 2.8, 2.9)
ROUTER_NAMES = {"round-robin": "dealt in turn", "least-loaded": "to the copy with the fewest in flight",
                "one-queue": "behind one queue"}
# Rates with cuts whose tails the pages do not give away (at 14 and 16 a second every cut's is), differing from
# one another by more than the check's half a per cent but for a few pairs.
CUT_RATES = (2, 3, 5, 6, 8, 10, 12, 18, 20, 22, 26, 28, 30, 32)
CUT_DEGREES = (2, 4, 8)     # GPUs a copy, of eight
TBT_MODELS, TBT_GPUS, TBT_RATES = ("llama-3-70b", "qwen2.5-72b"), ("h200", "a100-80gb", "b200"), (3, 4, 5, 6, 7, 8)


@functools.cache
def _cuts(models: tuple, gpus: tuple) -> tuple:
    """(model, GPU, GPUs a copy) where vLLM 0.9.2 serves the model on a group of that many: its cache holds at least
    one request of the model's whole window, without which vLLM V1 refuses to start at its default length."""
    from . import replicas
    found = []
    for key in models:
        for gpu in gpus:
            for degree in CUT_DEGREES:
                try:
                    copy = replicas.server(key, gpu, degree)
                except ValueError:
                    continue
                if copy.cache_blocks * copy.block_tokens >= MODELS[key].context_window:
                    found.append((key, gpu, degree))
    return tuple(found)


def _copies(count: int) -> str:
    """``count`` copies in words: "1 copy", "4 copies"."""
    return f"{count} {'copy' if count == 1 else 'copies'}"


def _draw_4_3(rng):
    routed = {"copies": rng.choice(ROUTED_COPIES), "each": rng.choice(ROUTED_EACH),
              "router": rng.choice(tuple(ROUTER_NAMES))}
    held = rng.choice(_cuts(tuple(key for key in SPLIT_MODELS if key != "llama-3-70b"), TBT_GPUS + ("h100-sxm",)))
    timed = rng.choice(_cuts(TBT_MODELS, TBT_GPUS))
    return {**routed, "held_model": held[0], "held_gpu": held[1], "held_degree": held[2],
            "cut_rate": rng.choice(CUT_RATES), "cut_degree": rng.choice(CUT_DEGREES), "tbt_model": timed[0], "tbt_gpu": timed[1], "tbt_degree": timed[2],
            "tbt_rate": rng.choice(TBT_RATES), "pre_copies": rng.choice(ROUTED_COPIES),
            "pre_each": rng.choice(PREEMPTED_EACH), "pre_router": rng.choice(("round-robin", "least-loaded"))}


LESSON_4_PART_3 = Template(
    draw=_draw_4_3,
    practice={"copies": 6, "each": 2.5, "router": "least-loaded", "held_model": "qwen2.5-72b", "held_gpu": "h100-sxm",
              "held_degree": 4, "cut_rate": 18, "cut_degree": 4, "tbt_model": "llama-3-70b", "tbt_gpu": "h200", "tbt_degree": 4,
              "tbt_rate": 5, "pre_copies": 5, "pre_each": 2.5, "pre_router": "round-robin"},
    derive=lambda n: {"rate": _decimal(n["copies"] * n["each"]), "router_way": ROUTER_NAMES[n["router"]],
                      "pre_rate": _decimal(n["pre_copies"] * n["pre_each"]), "pre_way": ROUTER_NAMES[n["pre_router"]],
                      "held_copies": _copies(8 // n["held_degree"]), "cut_copies": _copies(8 // n["cut_degree"]),
                      "tbt_copies": _copies(8 // n["tbt_degree"])},
    statements={
        "3.1": "{copies} copies of Llama 3 8B, one on each L4, with lesson 3's profile of vLLM 0.9.2 (`replicas.server()`), take 4,000 "
               "ShareGPT-like requests arriving at {rate} a second in all (`simulator.poisson_requests(server, {rate}, "
               "4000)`), {router_way} (`\"{router}\"`). What is the p99 time to first token, in seconds?",
        "3.2": '{held_model_name} (`"{held_model}"`) in 16 bits runs on eight {held_gpu_short} (`"{held_gpu}"`) as '
               "{held_copies} of {held_degree} GPUs each, with lesson 3's profile of vLLM 0.9.2. How many tokens of "
               "cache, as the simulator sizes it, do all the copies hold together?",
        "3.3": "Eight H100 SXM serve Llama 3 70B as {cut_copies} of {cut_degree} GPUs behind one queue, 4,000 "
               "requests at {cut_rate} a second. What is the p99 time to first token, in milliseconds?",
        "3.4": '{tbt_model_name} (`"{tbt_model}"`) runs on eight {tbt_gpu_short} (`"{tbt_gpu}"`) as {tbt_copies} '
               "of {tbt_degree} GPUs behind one queue, 4,000 requests at {tbt_rate} a second. What is the median time "
               "between tokens, in milliseconds?",
        "3.5": "{pre_copies} copies of Llama 3 8B on L4s, as in Problem 3.1, take 4,000 such requests arriving at "
               '{pre_rate} a second in all, {pre_way} (`"{pre_router}"`). How many preemptions are there over the run '
               "(a run's `.summary()[\"preemptions\"]`)?",
    },
)


# -- Lesson 4, Part 4: prefill and decode apart ----------------------------------------------------
# An H100 SXM's links a cache can cross, as a statement names them.
TRIP_LINKS = {"nvlink4": "NVLink", "pcie5": "PCIe Gen5", "infiniband-ndr": "InfiniBand NDR",
              "roce-400g": "a 400 Gb/s RoCE port"}
# Models whose cache of a prompt is KV bytes a token × its tokens (no layer keeps only a sliding window) and that fit
# one H100 SXM, so that a cache can cross "between two H100 SXM GPUs".
TRIP_MODELS = ("llama-3-8b", "qwen2.5-7b", "qwen3-8b", "llama-3.2-3b", "llama-3.2-1b")
# Models that fit one GPU of PREFILL_GPUS in 16 bits, for a prefill GPU's rate.
PREFILL_MODELS = ("llama-3-8b", "qwen2.5-7b", "mistral-7b", "gemma-2-9b", "qwen3-8b", "llama-3.2-3b", "llama-3.2-1b")
PREFILL_GPUS = ("h100-sxm", "h200", "a100-80gb", "l40s", "b200")
# Models with long windows, whose long prompts' caches a slow link takes a while to carry; each runs on LONG_GROUP
# H100 SXM joined by NVLink, which hold it.
LONG_MODELS = ("llama-3.3-70b", "qwen2.5-72b", "mixtral-8x7b")
LONG_GROUP = 4
SLOW_LINKS = ("pcie5", "infiniband-ndr", "roce-400g")


@functools.lru_cache(maxsize=1024)
def long_prefill(model: str, prompt: int) -> float:
    """Seconds of ``prompt`` tokens' prefill of ``model`` on LONG_GROUP H100 SXM, timed as Part 1 times a step."""
    from . import parallel
    group = parallel.group(CATALOG["h100-sxm"], LONG_GROUP, "nvlink4")
    return parallel.tensor_parallel_step(MODELS[model], group, new_tokens=prompt).time


def _long_draw(rng, long):
    """A first-token target in milliseconds and a prompt whose prefill alone, on the group, stays under it."""
    while True:
        ttft = _steps(rng, 200, 1000, 50)
        prompts = [p for p in range(4000, min(64000, MODELS[long].context_window - 1) + 1, 1000)
                   if long_prefill(long, p) < ttft / 1e3]
        if prompts:
            return ttft, rng.choice(prompts)


# The cases Part 4 works itself, each drawn again: Llama 3 8B's 2,000-token prompt (its trip over NVLink and over a
# 400 Gb/s port, its prefill on an H100 SXM) and the Your turn's 12,000 tokens of Llama 3.3 70B, whatever the target
# and the link: the page prints that trip, and a percentage of any target is one division from it.
PAGE_TRIP = ("llama-3-8b", 2000)
PAGE_PREFILL = ("llama-3-8b", "h100-sxm", 2000)
PAGE_SLOW = ("llama-3.3-70b", 12000)


def _page_cases(n: dict) -> list[str]:
    """What a draw shares with a case Part 4 works, whose answer the page prints or one division from one."""
    found = []
    if (n["t_model"], n["t_prompt"]) == PAGE_TRIP:
        found.append(f"4.1's {n['t_model']} at {n['t_prompt']:,} tokens is the page's trip")
    if (n["pf_model"], n["pf_gpu"], n["pf_prompt"]) == PAGE_PREFILL:
        found.append(f"4.2's {n['pf_model']} on {n['pf_gpu']} at {n['pf_prompt']:,} tokens is the page's prefill")
    if (n["s_model"], n["s_prompt"]) == PAGE_SLOW:
        found.append(f"4.5's {n['s_model']} at {n['s_prompt']:,} tokens is the Your turn's trip")
    return found


def _split_rates(n: dict) -> list[str]:
    """A GPU doing both phases finishes fewer requests a second than one doing either alone, at the same targets."""
    most = min(n["p_rate"], n["d_rate"])
    return [] if n["colo_rate"] < most else [
        f"colo_rate {n['colo_rate']} is not below min(p_rate, d_rate) = {most}"]


def _draw_4_4(rng):
    trip, long = rng.choice(TRIP_MODELS), rng.choice(LONG_MODELS)
    prefill = rng.choice(PREFILL_MODELS)
    ttft, prompt = _long_draw(rng, long)
    drawn = {"t_model": trip, "t_prompt": _steps(rng, 500, min(32000, MODELS[trip].context_window - 1), 500),
             "t_link": rng.choice(tuple(TRIP_LINKS)),
             "pf_model": prefill, "pf_gpu": rng.choice(PREFILL_GPUS),
             "pf_prompt": _steps(rng, 500, min(8000, MODELS[prefill].context_window), 100),
             "p_rate": _steps(rng, 8, 60, 1) / 2, "d_rate": _steps(rng, 2, 24, 1) / 2,
             "pool": rng.choice((4, 6, 8, 10, 12, 16))}
    # In tenths, from 0.5 to just below the slower of the two stages' GPUs.
    drawn["colo_rate"] = _steps(rng, 5, round(10 * min(drawn["p_rate"], drawn["d_rate"])) - 1, 1) / 10
    drawn.update(s_model=long, s_prompt=prompt, s_link=rng.choice(SLOW_LINKS), s_ttft=ttft)
    while (drawn["t_model"], drawn["t_prompt"]) == PAGE_TRIP:
        drawn["t_prompt"] = _steps(rng, 500, min(32000, MODELS[trip].context_window - 1), 500)
    while (drawn["pf_model"], drawn["pf_gpu"], drawn["pf_prompt"]) == PAGE_PREFILL:
        drawn["pf_prompt"] = _steps(rng, 500, min(8000, MODELS[prefill].context_window), 100)
    while (drawn["s_model"], drawn["s_prompt"]) == PAGE_SLOW:
        drawn["s_ttft"], drawn["s_prompt"] = _long_draw(rng, long)
    return drawn


LESSON_4_PART_4 = Template(
    draw=_draw_4_4,
    practice={"t_model": "qwen3-8b", "t_prompt": 6000, "t_link": "pcie5", "pf_model": "mistral-7b",
              "pf_gpu": "a100-80gb", "pf_prompt": 3000, "p_rate": 11.0, "d_rate": 4.0, "pool": 8, "colo_rate": 2.3,
              "s_model": "llama-3.3-70b", "s_prompt": 7000, "s_link": "pcie5", "s_ttft": 600},
    derive=lambda n: {"t_link_name": TRIP_LINKS[n["t_link"]], "s_link_name": TRIP_LINKS[n["s_link"]],
                      "long_group": LONG_GROUP,
                      **{f"{name}_text": _decimal(n[name]) for name in ("p_rate", "d_rate", "colo_rate")}},
    statements={
        "4.1": "{t_model_named}'s cache of a {t_prompt}-token prompt, in 16 bits, crosses {t_link_name} "
               '(`hardware.link("h100-sxm", "{t_link}")`) between two H100 SXM GPUs. How many milliseconds does it take?',
        "4.2": "One {pf_gpu_named} reads prompts of {pf_prompt} tokens of {pf_model_named} one at a time, each in one "
               "pass timed as the lesson times a prefill, attention counted (`parallel.tensor_parallel_step(model, "
               "parallel.group(gpu), new_tokens=tokens)`). How many prompts a second does it read?",
        "4.3": "Each prefill GPU reads {p_rate_text} prompts a second and each decode GPU finishes {d_rate_text} replies "
               "a second within the targets; the slower stage sets the pool's pace. Split {pool} GPUs between the two "
               "stages so that the pool serves the most: how many requests a second does it serve?",
        "4.4": "At the same targets, one GPU doing both phases serves {colo_rate_text} requests a second. How many times "
               "as many requests a second does each GPU of the pool of Problem 4.3 serve?",
        "4.5": "{s_model_named} runs on {long_group} H100 SXM joined by NVLink, whose prefill of a {s_prompt}-token prompt "
               "meets a {s_ttft} ms first-token target. Its cache of that prompt, in 16 bits, crosses {s_link_name} "
               '(`hardware.link("h100-sxm", "{s_link}")`), all of it through that link. What percentage of the target '
               "does the trip take?",
    },
    sense=lambda n: (_within(n, n["t_model"], "t_prompt") + _within(n, n["pf_model"], "pf_prompt")
                     + _within(n, n["s_model"], "s_prompt") + _fits(n["pf_model"], n["pf_gpu"])
                     + _split_rates(n) + _page_cases(n)),
)

TEMPLATES: dict[str, Template] = {
    "lesson-1-part-1": LESSON_1_PART_1,
    "lesson-1-part-2": LESSON_1_PART_2,
    "lesson-1-part-3": LESSON_1_PART_3,
    "lesson-1-part-4": LESSON_1_PART_4,
    "plate-xxiii-1": PLATE_XXIII_1,
    "lesson-2-part-1": LESSON_2_PART_1,
    "lesson-2-part-2": LESSON_2_PART_2,
    "lesson-2-part-3": LESSON_2_PART_3,
    "lesson-2-part-4": LESSON_2_PART_4,
    "plate-xxiii-2": PLATE_XXIII_2,
    "lesson-3-part-1": LESSON_3_PART_1,
    "lesson-3-part-2": LESSON_3_PART_2,
    "lesson-3-part-3": LESSON_3_PART_3,
    "lesson-3-part-4": LESSON_3_PART_4,
    "lesson-4-part-1": LESSON_4_PART_1,
    "lesson-4-part-2": LESSON_4_PART_2,
    "lesson-4-part-3": LESSON_4_PART_3,
    "lesson-4-part-4": LESSON_4_PART_4,
    "plate-xxiii-4": PLATE_XXIII_4,
}


def _complete(notebook: str, drawn: dict) -> dict:
    """``drawn`` with what follows from it: the template's own, and each GPU's and model's names and figures."""
    drawn = {**drawn, **TEMPLATES[notebook].derive(drawn)}
    for key in [key for key, value in drawn.items() if isinstance(value, str) and value in CATALOG]:
        drawn[f"{key}_named"] = _gpu(drawn[key])
        drawn[f"{key}_short"] = SHORT_NAMES.get(drawn[key], CATALOG[drawn[key]].name)
    for key in [key for key, value in drawn.items() if isinstance(value, str) and value in MODELS]:
        drawn[f"{key}_named"] = _model(drawn[key])
        drawn[f"{key}_name"] = MODELS[drawn[key]].name
        drawn[f"{key}_window"] = MODELS[drawn[key]].context_window
    return drawn


def practice(notebook: str) -> dict:
    """The numbers the practice release and ``solutions/`` ask ``notebook``'s templated problems with."""
    if notebook not in TEMPLATES:
        raise KeyError(f"notebook {notebook!r} has no variants; those with variants: {sorted(TEMPLATES)}")
    return _complete(notebook, dict(TEMPLATES[notebook].practice))


def numbers(notebook: str, student_id) -> dict:
    """The numbers of ``student_id``'s variant of ``notebook`` (KeyError names a notebook with none).

    The seed's generator draws again while a draw would give some problem the practice's answer, or an answer
    the lesson's pages give away (``given_away``): the first draw that does neither is the student's."""
    if notebook not in TEMPLATES:
        raise KeyError(f"notebook {notebook!r} has no variants; those with variants: {sorted(TEMPLATES)}")
    return dict(_numbers(notebook, student_key(student_id)))


# A draw that gives some problem away is drawn again, up to this many times.
DRAWS = 100


# Kept for a class of a thousand in every notebook, with room for more notebooks: the grader and the tests ask for each
# student's numbers again, notebook after notebook, and a cache that held fewer would drop each before it was asked
# for again (tests/test_variants.py holds it to the class).
@functools.lru_cache(maxsize=64 * 1024)
def _numbers(notebook: str, key: str) -> tuple:
    rng = random.Random(seed(notebook, key))
    tried = []
    for _ in range(DRAWS):
        drawn = _complete(notebook, TEMPLATES[notebook].draw(rng))
        # The statements above are read only for a draw the pages and the practice leave clean (the cheaper test),
        # and a draw is dropped at its first problem given away, the answers already known looked at first: a
        # lesson 3 answer is a run of the simulator, and most draws are dropped.
        if not (given_away(notebook, drawn, first_only=True, stated=False) or given_away(notebook, drawn, first_only=True)):
            return tuple(drawn.items())
        tried.append(drawn)
    # None clean: some problem gives its answer away in every draw (its answers are few); the first draw that
    # never repeats the practice's answer and gives away least else (tests/test_answer_leak.py lists what is
    # still given away).
    found = []
    for drawn in tried:
        entries = given_away(notebook, drawn, stated=False) or given_away(notebook, drawn)
        found.append(({entry.split(":")[0] for entry in entries},
                      sum(entry.endswith("the practice's answer") for entry in entries), drawn))
    always = set.intersection(*(labels for labels, _, _ in found))
    return tuple(min(found, key=lambda entry: (entry[1], len(entry[0] - always)))[2].items())


@functools.cache
def _seen() -> dict:
    """The lessons' pages as a reader sees them and each problem's check (``scripts/pages_seen.py`` writes it)."""
    import json
    from pathlib import Path

    return json.loads((Path(__file__).with_name("data") / "leaks.yaml").read_text(encoding="utf-8"))


@functools.cache
def _printed(lesson: str):
    from .leaks import Printed

    return Printed(_seen()["lessons"][lesson])


@functools.cache
def _above(notebook: str, label: str):
    from .leaks import Printed

    return Printed({"the notebook above": _seen()["checks"][notebook][label]["above"]})


@functools.lru_cache(maxsize=65536)
def _on_pages(lesson: str, answer: float, rel: float, units: str) -> bool:
    printed = _printed(lesson)
    return bool(printed.direct(answer, rel, units) or printed.one_step(answer, rel, units))


def given_away(notebook: str, drawn: dict, first_only: bool = False, stated: bool = True) -> list[str]:
    """Each problem of ``notebook`` whose answer, for the numbers ``drawn``, is the practice's (within its check's
    tolerance) or is given away by the lesson's pages or the notebook's fixed text above it (``servingmath.leaks``);
    words (which bound, which GPU) are a few for everyone and are not held to it. The figures of the student's own
    statements above a problem are held to it too, unless ``stated`` is false."""
    from . import answers

    found, shown = [], []
    labels = list(TEMPLATES[notebook].statements)
    if first_only and not stated:   # any order finds whether one is given away: the known answers first
        labels.sort(key=lambda label: not answers.known(notebook, label, drawn))
    for label in labels:
        ours = answers.answer(notebook, label, drawn)
        why = _verdict(notebook, label, ours) or (stated and shown and _stated_above(notebook, label, ours,
                                                                                  "\n".join(shown)))
        if why:
            found.append(f"{label}: {why}")
            if first_only:
                break
        if stated:
            shown.append(fill(notebook, label, drawn))
    return found


@functools.lru_cache(maxsize=65536)
def _stated_above(notebook: str, label: str, ours, text: str) -> str:
    """Why the statements above ``label``, with the student's own numbers (``text``), give ``ours`` away, or nothing."""
    from .leaks import Printed

    if isinstance(ours, str):
        return ""
    check = _seen()["checks"][notebook][label]
    return "given away by the statements above" if Printed({"the statements above": text}).direct(
        ours, check["rel"], check["units"]) else ""


@functools.lru_cache(maxsize=None)
def _verdict(notebook: str, label: str, ours) -> str:
    """Why the answer ``ours`` to ``label`` gives it away, or nothing."""
    from . import answers

    theirs = answers.answer(notebook, label, practice(notebook))
    if isinstance(ours, str):
        return ""
    check = _seen()["checks"][notebook][label]
    rel, units = check["rel"], check["units"]
    if abs(ours - theirs) <= max(rel, 1e-9) * abs(theirs):
        return "the practice's answer"
    if _on_pages(_seen()["lesson_of"][notebook], ours, rel, units) or _above(notebook, label).direct(ours, rel, units):
        return "given away by the pages"
    return ""


def _placed(value) -> _Place:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _Place(_n(value))
    return _Place(value)


def fill(notebook: str, label: str, drawn: dict) -> str:
    """Problem ``label`` of ``notebook`` with the numbers ``drawn`` (Markdown)."""
    return TEMPLATES[notebook].statements[label].format_map({key: _placed(value) for key, value in drawn.items()})


def statement(notebook: str, label: str, student_id) -> str:
    """Problem ``label`` of ``notebook`` as ``student_id`` is asked it (Markdown)."""
    return fill(notebook, label, numbers(notebook, student_id))


class Sheet:
    """One student's numbers for one graded notebook, shown problem by problem."""

    def __init__(self, notebook: str, student_id):
        if notebook not in TEMPLATES:
            raise KeyError(f"notebook {notebook!r} has no variants; those with variants: {sorted(TEMPLATES)}")
        self.notebook = notebook
        self.student_id = student_id
        self.problem = ""
        try:
            self.key = student_key(student_id)
        except (TypeError, ValueError) as error:
            self.key, self.problem = None, str(error)

    def show(self, label: str):
        """Display problem ``label`` with this student's numbers, saying whose variant it is."""
        from IPython.display import display

        display(_Shown(self, label))

    def text(self, label: str) -> str:
        if self.key is None:
            return f"**Your numbers are not shown yet:** {self.problem}, then run the setup cell and this cell again."
        return (f"*Student {self.student_id.strip() if isinstance(self.student_id, str) else self.student_id}'s "
                f"numbers:* {statement(self.notebook, label, self.student_id)}")

    def _repr_markdown_(self):
        if self.key is None:
            return f"**Enter your student ID:** {self.problem}."
        shown = f"The problems below show the numbers of student **{self.key}**'s variant of this notebook."
        if "/" not in self.key:
            # A graded ID is the ID, a slash and the code the instructor gave (made with a key only they hold).
            shown += (" These are practice numbers, drawn from your ID alone: for graded work, enter your ID with "
                      "the code your instructor gave you, as `S1001/7KQ3-M9XD`.")
        return shown

    def __repr__(self):
        return self._repr_markdown_().replace("**", "").replace("`", "")


class _Shown:
    def __init__(self, sheet: Sheet, label: str):
        self.sheet, self.label = sheet, label

    def _repr_mimebundle_(self, include=None, exclude=None):
        record = {"notebook": self.sheet.notebook, "label": self.label, "student_id": self.sheet.key}
        text = self.sheet.text(self.label)
        return {"text/markdown": text, "text/plain": text, RECORD_MIME: record}


def sheet(notebook: str, student_id) -> Sheet:
    """What a graded notebook's setup cell makes from the student's ID: ``sheet.show(label)`` shows a problem."""
    return Sheet(notebook, student_id)


def sense(notebook: str, drawn: dict) -> list[str]:
    """What makes a draw a case that cannot happen (an empty list if none)."""
    return TEMPLATES[notebook].sense(drawn)
