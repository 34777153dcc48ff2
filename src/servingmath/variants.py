"""Each student's own numbers for the graded problems.

The practice notebooks (exercises/) and the worked solutions (solutions/) ask every problem with
fixed numbers, so the method is public. A graded notebook (exercises/graded/) asks the same
problems with numbers of the student's own: the lengths, the model, the GPU, the price and the
bits are drawn from a seed made of the notebook's name and the student's ID, as PrairieLearn and
WeBWorK do. The student enters their ID once, in the setup cell; each problem's cell then shows
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

import hashlib
import random
from dataclasses import dataclass
from typing import Callable

from . import memory
from .hardware import CATALOG
from .models import MODELS

RECORD_MIME = "application/vnd.servingmath.variant+json"

# The GPUs a variant may name: those rented by the hour in the data centre (not a laptop, not a T4,
# which cannot hold an 8B model's 16-bit weights with room to spare).
RENTED = ("h100-sxm", "h100-pcie", "h200", "a100-80gb", "l4", "l40s", "mi300x", "b200")
# The windows of the families the variants name, for a package whose models do not yet carry their
# own: Llama 3's 8,192 tokens and Llama 2's 4,096 (max_position_embeddings in Meta's configs), and
# DeepSeek-V2-Lite's 32k (its model card).
_WINDOWS = {"Llama 3 ": 8192, "Llama 2 ": 4096, "DeepSeek-V2-Lite": 32 * 1024}


def window(model) -> int:
    """The most tokens (prompt and reply, or cache) ``model`` reads at once."""
    own = getattr(model, "context_window", None)
    if own:
        return int(own)
    for family, tokens in _WINDOWS.items():
        if model.name.startswith(family):
            return tokens
    raise ValueError(f"model {model.name!r} has no context window the variants know")


def student_key(student_id) -> str:
    """A student's ID as the seed reads it: its text, trimmed, case ignored."""
    if isinstance(student_id, bool) or not isinstance(student_id, (str, int)):
        raise TypeError(f"student_id must be your student ID as text, such as \"S1001\", got {student_id!r}")
    key = str(student_id).strip().lower()
    if not key:
        raise ValueError("student_id is empty: write your student ID between the quotes in the setup cell")
    return key


def seed(notebook: str, student_id) -> int:
    """The seed of ``student_id``'s variant of ``notebook``: 64 bits of SHA-256 of both."""
    digest = hashlib.sha256(f"{notebook}\n{student_key(student_id)}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


@dataclass(frozen=True)
class Template:
    """A notebook's graded problems: a draw of numbers, and each problem's statement with places for them."""

    draw: Callable[[random.Random], dict]
    statements: dict[str, str]
    sense: Callable[[dict], list[str]] = lambda numbers: []


def _steps(rng: random.Random, low: int, high: int, step: int) -> int:
    return rng.randrange(low, high + 1, step)


def _n(value) -> str:
    """A number as a statement prints it: thousands separated, no needless decimals."""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.2f}"
    return f"{int(value):,}"


def _gpu(key: str) -> str:
    return f'{CATALOG[key].name} (`sm.CATALOG["{key}"]`)'


def _model(key: str) -> str:
    return f'{MODELS[key].name} (`sm.MODELS["{key}"]`)'


def _within(numbers: dict, model_key: str, *lengths: str) -> list[str]:
    model = MODELS[model_key]
    total = sum(numbers[name] for name in lengths)
    return [] if total <= window(model) else [
        f"{' + '.join(lengths)} = {total:,} tokens is past {model.name}'s window of {window(model):,}"]


def _fits(model_key: str, gpu_key: str, bits=16, context=0, batch=1) -> list[str]:
    fit = memory.fit(MODELS[model_key], CATALOG[gpu_key], context, batch, weight_bits=bits)
    return [] if fit.fits else [f"{MODELS[model_key].name} does not fit the {CATALOG[gpu_key].name}: {fit.message}"]


# -- Lesson 1, Part 1: passes ---------------------------------------------------------
def _draw_1_1(rng):
    return {"prompt": _steps(rng, 200, 900, 10), "reply": _steps(rng, 300, 2000, 10),
            "report": _steps(rng, 3000, 7000, 100), "summary": _steps(rng, 50, 300, 10),
            "short": _steps(rng, 10, 60, 5), "story": _steps(rng, 1000, 3000, 100),
            "requests": _steps(rng, 5000, 20000, 1000), "day_prompt": _steps(rng, 1000, 4000, 100),
            "day_reply": _steps(rng, 100, 600, 10)}


LESSON_1_PART_1 = Template(
    draw=_draw_1_1,
    statements={
        "1.1": "Someone sends a {prompt}-token prompt to Llama 3 8B, and it answers with {reply} tokens. "
               "Count the forward passes the model runs for this request.",
        "1.2": "Of the passes in Problem 1.1 (a {prompt}-token prompt, a {reply}-token reply), how many are "
               "decode steps, each carrying one token?",
        "1.3": "A {report}-token report goes in, and a {summary}-token summary comes out. How many forward "
               "passes does the request take?",
        "1.4": "A one-line, {short}-token prompt asks for a {story}-token story. How many times as many passes "
               "does the story take as the summary of Problem 1.3?",
        "1.5": "In a day, a service answers {requests} requests one after another, each a {day_prompt}-token "
               "prompt with a {day_reply}-token reply. How many forward passes does it run in the day?",
        "1.6": "Over that day ({requests} requests, each a {day_prompt}-token prompt and a {day_reply}-token "
               "reply), how many tokens do all those passes carry into the model? Each pass counts the tokens "
               "it takes in as input.",
    },
    sense=lambda n: (_within(n, "llama-3-8b", "prompt", "reply") + _within(n, "llama-3-8b", "report", "summary")
                     + _within(n, "llama-3-8b", "short", "story")
                     + _within(n, "llama-3-8b", "day_prompt", "day_reply")),
)


# -- Lesson 1, Part 2: the roofline ----------------------------------------------------
WEIGHT_MODELS = ("llama-3-8b", "llama-3.2-3b", "mistral-7b", "qwen2-7b", "gemma-7b", "llama-3-70b")


def _draw_1_2(rng):
    return {"prompt": _steps(rng, 50, 400, 10), "model": rng.choice(WEIGHT_MODELS), "bits": rng.choice((16, 8)),
            "ridge_gpu": rng.choice([key for key in RENTED if key != "h100-sxm"]), "decode_bits": rng.choice((3, 4, 5, 6, 8)),
            "turn_gpu": rng.choice([key for key in RENTED if key != "h100-sxm"]),
            "pace_gpu": rng.choice(RENTED), "pace_prompt": _steps(rng, 20, 500, 10), "pace_bits": rng.choice((16, 8))}


LESSON_1_PART_2 = Template(
    draw=_draw_1_2,
    statements={
        "2.1": "Llama 3 8B, its weights in 16 bits, runs on the H100 SXM, and the prompt is {prompt} tokens "
               "long. About how many FLOPs does its prefill pass do for each byte of weights it reads?",
        "2.2": "What sets the pace of that {prompt}-token prefill: reading memory or doing arithmetic? Answer "
               '`"memory"` or `"compute"`.',
        "2.3": "How many gigabytes do the weights of {model_named} take in {bits} bits? Count a gigabyte as "
               "10⁹ bytes, as spec sheets do, and take the parameter count from the model's `parameters`.",
        "2.4": "How many FLOPs can the {ridge_gpu_named} do in the time it reads one byte? Take its peak and its "
               "bandwidth from the catalog.",
        "2.5": "Store Llama 3 8B's weights in {decode_bits} bits each instead, on the H100 SXM. How many FLOPs does "
               "one decode step for one user now do for each byte of weights it reads?",
        "2.6": "On the {turn_gpu_named}, with Llama 3 8B's weights in 16 bits, what is the shortest prompt, in "
               "whole tokens, whose prefill pass spends longer on arithmetic than on reading the weights?",
        "2.7": "The {pace_gpu_named} runs Llama 3 8B with its weights in {pace_bits} bits. A {pace_prompt}-token "
               'prompt arrives. Does memory or arithmetic set the pace of its prefill? Answer `"memory"` or '
               '`"compute"`.',
    },
    sense=lambda n: (_within(n, "llama-3-8b", "prompt") + _within(n, "llama-3-8b", "pace_prompt")
                     + _fits("llama-3-8b", n["pace_gpu"], n["pace_bits"], n["pace_prompt"])
                     + _fits("llama-3-8b", n["turn_gpu"]) + _fits("llama-3-8b", "h100-sxm", n["decode_bits"])),
)


# -- Lesson 1, Part 3: time ------------------------------------------------------------
BIG_MODEL_GPUS = ("mi300x", "b200", "h200")


def _draw_1_3(rng):
    return {"bits": rng.choice((3, 4, 5, 6, 8)), "prompt": _steps(rng, 500, 4000, 100), "gpu": rng.choice(RENTED),
            "big_gpu": rng.choice(BIG_MODEL_GPUS), "request_prompt": _steps(rng, 500, 3000, 100),
            "request_reply": _steps(rng, 100, 1000, 50), "speed": rng.choice((40, 60, 80, 100, 120, 150))}


LESSON_1_PART_3 = Template(
    draw=_draw_1_3,
    statements={
        "3.1": "Keep Llama 3 8B on the H100 SXM, but store each weight in {bits} bits. What is the most tokens a "
               "second that a single reply can get?",
        "3.2": "Llama 3 8B with 16-bit weights on the H100 SXM. A {prompt}-token prompt arrives. At best, how many "
               "milliseconds pass before the first reply token?",
        "3.3": "Move Llama 3 8B, in 16 bits, to the {gpu_named}. At best, how many tokens a second does one "
               "user get?",
        "3.4": 'Llama 3 70B (`sm.MODELS["llama-3-70b"]`), in 16 bits, runs on one {big_gpu_named}. At best, how '
               "many milliseconds apart do one user's tokens come?",
        "3.5": "Llama 3 8B, 16-bit, on the H100 SXM: a {request_prompt}-token prompt and a {request_reply}-token "
               "reply. At best, how many seconds pass from sending the prompt to receiving the last reply token?",
        "3.6": "Which GPU in the catalog, of those that hold Llama 3 8B's 16-bit weights, rents for the least an "
               "hour while still giving one user at least {speed} tokens a second? Answer with its catalog key, "
               'such as `"h100-sxm"`.',
    },
    sense=lambda n: (_within(n, "llama-3-8b", "prompt") + _within(n, "llama-3-8b", "request_prompt", "request_reply")
                     + _fits("llama-3-8b", n["gpu"]) + _fits("llama-3-70b", n["big_gpu"])),
)


# -- Lesson 1, Part 4: batching and cost -------------------------------------------------
def _draw_1_4(rng):
    return {"price": _steps(rng, 200, 400, 10) / 100, "users": rng.choice((4, 6, 8, 10, 12, 16)),
            "gpu": rng.choice([key for key in RENTED if key != "h100-sxm"]), "gpu_users": rng.choice((16, 24, 32, 48)),
            "bits_users": rng.choice((16, 24, 32, 48)), "bits": rng.choice((4, 8)),
            "target": rng.choice((0.08, 0.10, 0.12, 0.15, 0.20)),
            "plate_users": rng.choice((8, 16, 24, 32, 48)), "plate_cache": _steps(rng, 500, 4000, 100)}


LESSON_1_PART_4 = Template(
    draw=_draw_1_4,
    statements={
        "4.1": "The H100 SXM rents for ${price:.2f} an hour, and {users} users share every decode pass of Llama 3 "
               "8B in 16 bits. Roughly how many dollars do a million output tokens cost?",
        "4.2": "With those {users} users sharing each pass, how many tokens does the GPU make in an hour? Give the "
               "number of tokens, not of millions.",
        "4.3": "The {gpu_named} rents for its catalog price an hour. With {gpu_users} users of Llama 3 8B in 16 bits "
               "sharing each pass, what does a million tokens cost on it?",
        "4.4": "Back on the H100 SXM at ${price:.2f} an hour with {bits_users} users per pass, store the weights in "
               "{bits} bits. What does a million tokens cost now?",
        "4.5": "On the H100 SXM at ${price:.2f} an hour, with 16-bit weights, what is the fewest users per pass that "
               "brings a million tokens to ${target:.2f} or less?",
        "4.6": "On the {gpu_named} with Llama 3 8B's weights in 16 bits, what is the smallest number of users per "
               "pass at which a decode step is compute-bound?",
        "4.7": "Count what the lesson left out, with the assumptions of plate XXIII.1 (`sm.PLATE`). Each of "
               "{plate_users} users has {plate_cache} tokens in its cache. What does a million tokens cost on "
               "the H100 SXM at ${price:.2f} an hour?",
    },
    sense=lambda n: (_fits("llama-3-8b", n["gpu"]) + _fits("llama-3-8b", "h100-sxm", 16, n["plate_cache"],
                                                           n["plate_users"])
                     + _within(n, "llama-3-8b", "plate_cache")),
)


# -- Plate XXIII.1 -------------------------------------------------------------------------
def _draw_plate_1(rng):
    return {"cache": _steps(rng, 200, 3000, 100), "prompt": _steps(rng, 256, 4096, 128),
            "long_cache": _steps(rng, 4000, 8000, 100), "gpu": rng.choice(("h100-sxm", "h200", "a100-80gb", "l40s"))}


PLATE_XXIII_1 = Template(
    draw=_draw_plate_1,
    statements={
        "1": "One user of Llama 3 8B on the {gpu_named}, weights and cache in 16 bits, has {cache} tokens in the KV "
             "cache. Under the plate's assumptions (`sm.PLATE`), how many milliseconds does the next decode "
             "step take?",
        "2": "How many tokens a second does that user get, one token per decode step?",
        "3": "On the same GPU, a {prompt}-token prompt is prefilled in one pass. How many milliseconds does that "
             "pass take for each prompt token?",
        "4": "The conversation has grown, and the cache now holds {long_cache} tokens. How many milliseconds "
             "does one decode step take now?",
        "5": "In that step over {long_cache} cached tokens, what fraction of all the bytes moved belongs to the KV "
             "cache, read or written? Give a fraction, such as 0.5.",
        "7": "Under the plate's assumptions, what is the shortest prompt whose prefill pass on the {gpu_named} "
             "is compute-bound?",
    },
    sense=lambda n: (_within(n, "llama-3-8b", "cache") + _within(n, "llama-3-8b", "prompt")
                     + _within(n, "llama-3-8b", "long_cache") + _fits("llama-3-8b", n["gpu"], 16, n["long_cache"])),
)

# -- Lesson 2, Part 1: what the cache saves ---------------------------------------------
def _draw_2_1(rng):
    prompt = _steps(rng, 1000, 6000, 100)
    reply = _steps(rng, 100, min(1000, 8192 - prompt), 10)
    return {"context": _steps(rng, 500, 7000, 100), "long": _steps(rng, 4000, 8000, 100),
            "gpu": rng.choice(RENTED), "clock_context": _steps(rng, 1000, 7000, 100),
            "prompt": prompt, "reply": reply, "steps": reply - 1, "second": prompt + 1, "last": prompt + reply - 2}


LESSON_2_PART_1 = Template(
    draw=_draw_2_1,
    statements={
        "1.1": "Llama 3 8B has read {context} tokens. How many times the arithmetic does the next decode step take "
               "without the cache, against the step that uses it?",
        "1.2": "After {long} tokens, how many FLOPs does Llama 3 8B's next decode step take without the cache? Give "
               "the count of FLOPs, not of trillions.",
        "1.3": "And with the cache, after the same {long} tokens: how many FLOPs?",
        "1.4": "On the {gpu_named}, how many milliseconds does Llama 3 8B's decode step after {clock_context} tokens "
               "take without the cache? It reads only the weights; take the slower of its arithmetic and its reading.",
        "1.5": "A request of a {prompt}-token prompt and a {reply}-token reply makes {steps} decode steps, after "
               "{prompt}, {second}, ... {last} tokens. Over all {steps} steps, how many times the arithmetic does "
               "decoding without the cache take, against decoding with it?",
    },
    sense=lambda n: (_within(n, "llama-3-8b", "context") + _within(n, "llama-3-8b", "long")
                     + _within(n, "llama-3-8b", "prompt", "reply") + _fits("llama-3-8b", n["gpu"], 16,
                                                                            n["clock_context"])),
)


# -- Lesson 2, Part 2: the cache's size ---------------------------------------------------
GQA_MODELS = ("qwen2-7b", "llama-3-8b", "llama-3.2-3b", "qwen2.5-7b", "mistral-7b", "gemma-7b")
LARGE_MODELS = ("llama-3-70b", "qwen2.5-72b", "llama-2-70b", "llama-3.1-405b")
LATENT_MODELS = ("deepseek-v2", "deepseek-v2-lite", "deepseek-v3")


def _shape(key: str) -> dict:
    model = MODELS[key]
    return {"layers": model.layers, "kv_heads": model.kv_heads, "head_dim": model.head_dim,
            "rank": model.kv_lora_rank, "rope": model.rope_head_dim}


def _draw_2_2(rng):
    small, large, latent = rng.choice(GQA_MODELS), rng.choice(LARGE_MODELS), rng.choice(LATENT_MODELS)
    drawn = {"small": small, "large": large, "latent": latent, "mha_context": _steps(rng, 1000, 4000, 100),
             "latent_bits": rng.choice((16, 8)), "bits": rng.choice((8, 4)), "context": _steps(rng, 2000, 8000, 100),
             "small_bits": rng.choice((16, 8)), "large_bits": rng.choice((16, 8, 4))}
    drawn.update({f"small_{key}": value for key, value in _shape(small).items()})
    drawn.update({f"large_{key}": value for key, value in _shape(large).items()})
    drawn.update({f"latent_{key}": value for key, value in _shape(latent).items()})
    return drawn


LESSON_2_PART_2 = Template(
    draw=_draw_2_2,
    statements={
        "2.1": "{small_named} has {small_layers} layers, {small_kv_heads} key-value heads and a head dim of "
               "{small_head_dim}. How many bytes does each token leave in its cache at {small_bits} bits?",
        "2.2": "{large_named} has {large_layers} layers, {large_kv_heads} key-value heads and a head dim of "
               "{large_head_dim}. How many bytes a token does its cache take at {large_bits} bits?",
        "2.3": 'Llama 2 7B (`sm.MODELS["llama-2-7b"]`) gives each of its 32 query heads its own key-value head. '
               "How many gigabytes (1e9 bytes) is the cache of one {mha_context}-token conversation at 16 bits?",
        "2.5": "{latent_named} caches, in each of its {latent_layers} layers, one compressed vector of {latent_rank} "
               "numbers and a {latent_rope}-number key for position, per token. How many bytes a token at "
               "{latent_bits} bits?",
        "2.6": "Llama 3 8B's cache stored in {bits} bits: how many gigabytes (1e9 bytes) for one {context}-token "
               "conversation?",
    },
    sense=lambda n: _within(n, "llama-2-7b", "mha_context") + _within(n, "llama-3-8b", "context"),
)


# -- Lesson 2, Part 3: users that fit ------------------------------------------------------
def _draw_2_3(rng):
    return {"bits": rng.choice((8, 4)), "bits_context": _steps(rng, 2000, 8000, 100),
            "gpu": rng.choice(RENTED), "context": _steps(rng, 1000, 6000, 100),
            "window_gpu": rng.choice(RENTED), "window_bits": rng.choice((16, 8)),
            "users": _steps(rng, 100, 400, 4), "users_context": _steps(rng, 1000, 5000, 100),
            "big_gpu": rng.choice(("h200", "mi300x", "b200")), "big_context": _steps(rng, 2000, 8000, 100)}


LESSON_2_PART_3 = Template(
    draw=_draw_2_3,
    statements={
        "3.1": "Store Llama 3 8B's cache in {bits} bits on the H100 SXM, keeping the weights in 16 bits. What is the "
               "largest batch of users with {bits_context} tokens each?",
        "3.2": "On the {gpu_named} with Llama 3 8B's 16-bit weights, how many gigabytes (1e9 bytes) are left for "
               "the caches?",
        "3.3": "How many users of Llama 3 8B, each with a {context}-token conversation, fit on the {gpu_named}?",
        "3.4": "An engine without paging sets aside Llama 3 8B's whole window, {window} tokens, for every user, "
               "its cache in {window_bits} bits. How many users fit on the {window_gpu_named}?",
        "3.5": "How many gigabytes (1e9 bytes) would {users} users' Llama 3 8B caches take at {users_context} "
               "tokens each, in 16 bits?",
        "3.6": "How many Llama 3 8B users with {big_context} tokens each fit on the {big_gpu_named}?",
    },
    sense=lambda n: (_within(n, "llama-3-8b", "bits_context") + _within(n, "llama-3-8b", "context")
                     + _within(n, "llama-3-8b", "users_context") + _within(n, "llama-3-8b", "big_context")
                     + _fits("llama-3-8b", n["gpu"], 16, n["context"]) + _fits("llama-3-8b", n["window_gpu"], 16,
                                                                               8192)),
)


# -- Lesson 2, Part 4: what the cache costs --------------------------------------------------
def _fitting(rng, users, contexts, gpu="h100-sxm"):
    """Users and a context, drawn again until their caches fit beside Llama 3 8B's weights on ``gpu``."""
    while True:
        drawn = (_steps(rng, *users), _steps(rng, *contexts))
        if memory.fit(MODELS["llama-3-8b"], CATALOG[gpu], drawn[1], drawn[0]).fits:
            return drawn


def _draw_2_4(rng):
    drawn = {"price": _steps(rng, 200, 400, 10) / 100}
    drawn["users"], drawn["context"] = _fitting(rng, (4, 16, 1), (1000, 6000, 100))
    drawn["step_users"], drawn["step_context"] = _fitting(rng, (16, 64, 8), (2000, 8000, 100))
    drawn["many"], drawn["many_context"] = _fitting(rng, (64, 160, 8), (1000, 4000, 100))
    drawn.update({"match_context": _steps(rng, 2000, 8000, 100), "floor_context": _steps(rng, 1000, 8000, 100),
                  "full_context": _steps(rng, 2000, 8000, 100)})
    return drawn


LESSON_2_PART_4 = Template(
    draw=_draw_2_4,
    statements={
        "4.1": "The H100 SXM at ${price:.2f} an hour runs Llama 3 8B, {users} users in each pass, each holding "
               "{context} tokens. About what does a million output tokens cost?",
        "4.2": "{step_users} users, each holding {step_context} tokens: how many milliseconds does one decode step "
               "take?",
        "4.3": "{many} users, each holding {many_context} tokens: how many tokens a second does each user get?",
        "4.4": "With {match_context} tokens a user, at how many users do the caches weigh as much as Llama 3 8B's "
               "weights? (A fraction is fine.)",
        "4.5": "At {floor_context} tokens a user, however many users share each step, below what cost of a million "
               "tokens can the H100 at ${price:.2f} an hour never go? (Each token still costs the reading of its "
               "own user's cache.)",
        "4.6": "Fill the H100 with as many {full_context}-token users as fit. At ${price:.2f} an hour, what does a "
               "million tokens cost?",
    },
    sense=lambda n: (_fits("llama-3-8b", "h100-sxm", 16, n["context"], n["users"])
                     + _fits("llama-3-8b", "h100-sxm", 16, n["step_context"], n["step_users"])
                     + _fits("llama-3-8b", "h100-sxm", 16, n["many_context"], n["many"])
                     + sum((_within(n, "llama-3-8b", key) for key in ("context", "step_context", "many_context",
                                                                      "match_context", "floor_context",
                                                                      "full_context")), [])),
)


# -- Plate XXIII.2 --------------------------------------------------------------------------
def _draw_plate_2(rng):
    latent = rng.choice(LATENT_MODELS)
    drawn = {"latent": latent, "latent_bits": rng.choice((16, 8)), "gpu": rng.choice(RENTED),
             "mha_context": _steps(rng, 1000, 4000, 100), "lite_context": _steps(rng, 2000, 8000, 100),
             "reserve": rng.choice((0.08, 0.10, 0.12, 0.15)), "reserve_context": _steps(rng, 2000, 8000, 100),
             "bits": rng.choice((8, 4)), "bits_context": _steps(rng, 2000, 8000, 100)}
    drawn.update({f"latent_{key}": value for key, value in _shape(latent).items()})
    return drawn


PLATE_XXIII_2 = Template(
    draw=_draw_plate_2,
    statements={
        "1": "{latent_named} caches, in each of its {latent_layers} layers, one compressed vector of {latent_rank} "
             "numbers and a {latent_rope}-number key for position, per token. How many bytes a token at "
             "{latent_bits} bits?",
        "2": "How many Llama 2 7B users, with {mha_context} tokens each, fit on the {gpu_named}, weights and cache "
             "in 16 bits?",
        "3": "At {lite_context} tokens each, at how many DeepSeek-V2-Lite users do the caches weigh as much as its "
             "weights? (A fraction is fine.)",
        "4": "Hold back {reserve_percent} of the H100 SXM's memory instead of 5 %. How many Llama 3 8B users with "
             "{reserve_context} tokens each fit?",
        "5": "Llama 3 8B with a {bits}-bit cache (16-bit weights) on the H100 SXM: how many users with "
             "{bits_context} tokens each fit?",
    },
    sense=lambda n: (_within(n, "llama-2-7b", "mha_context") + _within(n, "deepseek-v2-lite", "lite_context")
                     + _within(n, "llama-3-8b", "reserve_context") + _within(n, "llama-3-8b", "bits_context")
                     + _fits("llama-2-7b", n["gpu"], 16, n["mha_context"])),
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
}


def numbers(notebook: str, student_id) -> dict:
    """The numbers of ``student_id``'s variant of ``notebook`` (KeyError names a notebook with none)."""
    if notebook not in TEMPLATES:
        raise KeyError(f"notebook {notebook!r} has no variants; those with variants: {sorted(TEMPLATES)}")
    drawn = TEMPLATES[notebook].draw(random.Random(seed(notebook, student_id)))
    if "reserve" in drawn:
        drawn["reserve_percent"] = f"{drawn['reserve'] * 100:g} %"
    if notebook == "lesson-2-part-3":
        drawn["window"] = window(MODELS["llama-3-8b"])
    for key in [key for key, value in drawn.items() if isinstance(value, str) and value in CATALOG]:
        drawn[f"{key}_named"] = _gpu(drawn[key])
    for key in [key for key, value in drawn.items() if isinstance(value, str) and value in MODELS]:
        drawn[f"{key}_named"] = _model(drawn[key])
    return drawn


def statement(notebook: str, label: str, student_id) -> str:
    """Problem ``label`` of ``notebook`` as ``student_id`` is asked it (Markdown)."""
    drawn = numbers(notebook, student_id)
    shown = {key: _n(value) if isinstance(value, int) and not isinstance(value, bool) else value
             for key, value in drawn.items()}
    return TEMPLATES[notebook].statements[label].format(**shown)


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
        return f"The problems below show the numbers of student **{self.key}**'s variant of this notebook."


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
