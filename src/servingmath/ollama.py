"""Reading the timings ``ollama run MODEL --verbose`` prints after each reply.

Ollama reports the two phases of a request under its own names: "prompt eval" is
prefill, "eval" is decode. ``parse_verbose`` reads the block a reader pastes;
``compare`` sets its two rates side by side and against the ceiling the lesson
derives, memory bandwidth ÷ model bytes. A paste that cannot be read raises a
ValueError whose message says what is missing, so a notebook can show it as advice.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import _check, units
from .serving import decode_ceiling

# Each label as Ollama prints it, the attribute it fills, and how its value is written.
FIELDS = {
    "total duration": ("total_duration", "duration"),
    "load duration": ("load_duration", "duration"),
    "prompt eval count": ("prompt_eval_count", "count"),
    "prompt eval duration": ("prompt_eval_duration", "duration"),
    "prompt eval rate": ("prompt_eval_rate", "rate"),
    "eval count": ("eval_count", "count"),
    "eval duration": ("eval_duration", "duration"),
    "eval rate": ("eval_rate", "rate"),
}
# Without these two there is nothing to compare.
REQUIRED = ("prompt eval rate", "eval rate")

# What the lesson's experiment has to know about Ollama's versions, each from its source.
# Ollama's older runner, which serves llama3.2, timed only the last batch of a prompt until
# pull request #12742 (merged October 2025, first released in v0.12.7), so earlier versions
# overstate the prompt eval rate of any prompt longer than one batch.
FULL_PROMPT_TIMING_FROM = "0.12.7"
# The context Ollama keeps unless told otherwise (num_ctx): 2,048 tokens until v0.6.7 (commit
# 44b466e, April 2025), 4,096 since; from v0.15.5 (February 2026; commit 0334ffa) 4,096 on machines with under
# 24 GiB of GPU memory, 32,768 up to 48 GiB and 262,144 above. A longer prompt is cut to fit,
# with a warning in the server's log only ("truncating input prompt").
DEFAULT_CONTEXT_SMALL_MACHINES = 4096
SMALL_MACHINE_GPU_MEMORY = 24 * 2**30   # bytes: below it, v0.15.5 and later keep the 4,096 default
TIERED_CONTEXT_FROM = "0.15.5"          # pull request #13946: before it, 4,096 on every machine
# The context the lesson asks for before pasting an article of a few thousand tokens.
ARTICLE_CONTEXT = 8192

# Tokens llama.cpp takes into one pass of a prompt: Ollama's default batch (num_batch).
BATCH = 512


def graph_bytes(model, context, batch=BATCH):
    """The working buffer Ollama sets aside for a Llama-family model run whole on the GPU with flash
    attention off, as its estimate counts it (fs/ggml/ggml.go, GraphSize, the "llama" case's
    fullOffload): 4 bytes × batch × (1 + 4 × embedding + context × (1 + heads)), or the output
    layer's 4 × batch × (embedding + vocab) where that is larger. The context term is the batch's
    attention scores held whole, one per head and position, and one row more."""
    from .models import Model

    _check.instance("model", model, Model)
    context = _check.count("context", context, minimum=1)
    batch = _check.count("batch", batch, minimum=1)
    embedding, heads, vocab = model.hidden, model.heads, model.vocab
    return max(4 * batch * (1 + 4 * embedding + context * (1 + heads)), 4 * batch * (embedding + vocab))


HOW_TO_PASTE = ("paste every line Ollama prints after a reply when run with --verbose, "
                "from 'total duration:' to 'eval rate:'")

_LINE = re.compile(r"^\s*(?P<label>[A-Za-z][A-Za-z ]*?)\s*:\s*(?P<value>.*?)\s*$")
# Go prints durations as runs of number-and-unit: 850µs, 32.51ms, 1.234567s, 2m3.5s, 1h0m2s.
_SECONDS_PER_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_UNITS = "|".join(sorted(_SECONDS_PER_UNIT, key=len, reverse=True))  # "ms" is tried before "m" and "s"
_DURATION_PART = re.compile(rf"(\d+(?:\.\d*)?|\.\d+)({_UNITS})")
_DURATION = re.compile(rf"(?:{_DURATION_PART.pattern})+")
_RATE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*tokens?/s")
_COUNT = re.compile(r"(\d+)(?:\s*token(?:\(s\)|s)?)?")


def parse_duration(text):
    """Seconds in a duration as Go prints it: ``"32.51ms"`` -> 0.03251, ``"2m3.5s"`` -> 123.5."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a duration such as '32.51ms', got {text!r}")
    written = text.strip()
    if not _DURATION.fullmatch(written):
        raise ValueError(f"text must be a duration with its unit, such as '32.51ms' or '1m2.5s', got {text!r}")
    return sum(float(number) * _SECONDS_PER_UNIT[unit] for number, unit in _DURATION_PART.findall(written))


@dataclass(frozen=True)
class VerboseTimings:
    """What Ollama printed after one reply, in SI units: seconds, tokens, tokens a second.

    The two rates are always there; a line Ollama left out (it skips zeros) is None.
    """

    prompt_eval_rate: float
    eval_rate: float
    prompt_eval_count: int | None = None
    prompt_eval_duration: float | None = None
    eval_count: int | None = None
    eval_duration: float | None = None
    total_duration: float | None = None
    load_duration: float | None = None


def _read_value(label, kind, value):
    if kind == "duration":
        try:
            return parse_duration(value)
        except ValueError:
            raise ValueError(f"'{label}' must be a duration with its unit, such as '32.51ms' or '1m2.5s', "
                             f"got {value!r}") from None
    pattern = _RATE if kind == "rate" else _COUNT
    found = pattern.fullmatch(value)
    if not found:
        example = "'45.12 tokens/s'" if kind == "rate" else "'26 token(s)'"
        raise ValueError(f"'{label}' must be a number with its unit, such as {example}, got {value!r}")
    return float(found.group(1)) if kind == "rate" else int(found.group(1))


def parse_verbose(text) -> VerboseTimings:
    """Read the timing block of ``ollama run --verbose`` from pasted text.

    Lines that are not timings (the reply itself, the ``>>>`` prompt) are skipped, so
    the reader may paste generously. The block of a single reply is expected: a label
    seen twice means two replies were pasted together, and is refused.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be the text Ollama printed, as a string; got {text!r}")
    if not text.strip():
        raise ValueError(f"text is empty: {HOW_TO_PASTE}")
    values = {}
    for line in text.splitlines():
        found = _LINE.match(line)
        if not found:
            continue
        label = " ".join(found.group("label").lower().split())
        if label not in FIELDS:
            continue
        if label in values:
            raise ValueError(f"text holds more than one '{label}' line: paste the timings of one reply at a time")
        attribute, kind = FIELDS[label]
        values[label] = (attribute, _read_value(label, kind, found.group("value")))
    missing = [label for label in REQUIRED if label not in values]
    if missing:
        names = " or ".join(f"'{label}:'" for label in missing)
        raise ValueError(f"text has no {names} line: {HOW_TO_PASTE}")
    return VerboseTimings(**dict(values.values()))


@dataclass(frozen=True)
class Comparison:
    """One reply's two rates, set against each other and against bandwidth ÷ model bytes."""

    timings: VerboseTimings
    memory_bandwidth: float
    model_bytes: float

    @property
    def prefill_rate(self):
        """Prompt tokens read a second (Ollama's prompt eval rate)."""
        return self.timings.prompt_eval_rate

    @property
    def decode_rate(self):
        """Reply tokens written a second (Ollama's eval rate)."""
        return self.timings.eval_rate

    @property
    def prefill_over_decode(self):
        """How many times faster the prompt was read than the reply was written."""
        return self.prefill_rate / self.decode_rate

    @property
    def ceiling(self):
        """The most tokens a second decode could reach: memory bandwidth ÷ model bytes."""
        return decode_ceiling(self.memory_bandwidth, self.model_bytes)

    @property
    def share_of_ceiling(self):
        """The decode rate as a fraction of the ceiling."""
        return self.decode_rate / self.ceiling

    @property
    def prefill_share_of_time(self):
        """Of the time spent on the two phases, the fraction spent reading the prompt (None without durations)."""
        prompt, reply = self.timings.prompt_eval_duration, self.timings.eval_duration
        if prompt is None or reply is None:
            return None
        return prompt / (prompt + reply)

    def lines(self) -> list[str]:
        """The comparison as the notebook prints it, one finding a line."""
        rate = _tokens_a_second
        shown = [
            f"prefill (prompt eval rate): {rate(self.prefill_rate)}",
            f"decode (eval rate): {rate(self.decode_rate)}",
            f"prefill read {units.times(self.prefill_over_decode)} as many tokens a second as decode wrote",
        ]
        if self.prefill_share_of_time is not None:
            shown.append(f"time reading the prompt: {units.percent(self.prefill_share_of_time)} "
                         f"of the two phases together")
        shown += [
            f"decode ceiling: {units.gb(self.memory_bandwidth, 0)}/s ÷ {units.gb(self.model_bytes)} "
            f"= {rate(self.ceiling)}",
            f"decode reached {units.percent(self.share_of_ceiling)} of the ceiling",
        ]
        return shown

    def __str__(self):
        return "\n".join(self.lines())


def _tokens_a_second(value):
    return f"{units.number(value)} tokens/s"


def compare(text, memory_bandwidth, model_bytes) -> Comparison:
    """Read Ollama's timings and set them against this machine's ceiling.

    ``memory_bandwidth`` is the machine's, in bytes a second (its spec sheet);
    ``model_bytes`` the model's size in bytes, as ``ollama list`` shows it (1.3 GB is
    1.3e9), since that is what each decode step reads.
    """
    memory_bandwidth = _check.positive("memory_bandwidth", memory_bandwidth)
    model_bytes = _check.positive("model_bytes", model_bytes)
    timings = parse_verbose(text)
    for label in REQUIRED:
        attribute = FIELDS[label][0]
        if getattr(timings, attribute) <= 0:
            raise ValueError(f"'{label}' must be above 0 tokens/s to compare, got {getattr(timings, attribute)!r}")
    return Comparison(timings, memory_bandwidth, model_bytes)


# Example outputs in Ollama's exact format, for llama3.2:1b (1.3 GB in `ollama list`) on
# a laptop with 100 GB/s of memory bandwidth: illustrative figures, not measurements.
EXAMPLES = {
    "a short question": """\
>>> Why is the sky blue?
Sunlight is scattered by the air, and blue light is scattered the most, so the sky looks blue.

total duration:       2.847035125s
load duration:        24.318ms
prompt eval count:    32 token(s)
prompt eval duration: 98.716ms
prompt eval rate:     324.16 tokens/s
eval count:           174 token(s)
eval duration:        2.71875s
eval rate:            64.00 tokens/s
""",
    "a long article to summarise": """\
total duration:       4.355622541s
load duration:        21.107ms
prompt eval count:    3412 token(s)
prompt eval duration: 3.588712s
prompt eval rate:     950.76 tokens/s
eval count:           46 token(s)
eval duration:        741.203ms
eval rate:            62.06 tokens/s
""",
    "a 500-word story": """\
total duration:       11.343291708s
load duration:        19.874ms
prompt eval count:    37 token(s)
prompt eval duration: 104.13ms
prompt eval rate:     355.33 tokens/s
eval count:           689 token(s)
eval duration:        11.213414s
eval rate:            61.44 tokens/s
""",
}
