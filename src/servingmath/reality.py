"""Published measurements set against the course's floors.

``data/measurements.yaml`` holds figures that engines, vendors and benchmark threads have
published: a model, its weights' format, the hardware, the software, how many users, the
lengths, and the figure itself. For each, this module computes the *floor*: the time the
course's roofline gives for the same work under the row's own conditions (weights and cache
in their real bits, the row's hardware from the catalog, every figure at 100 % of peak and
no overhead). The floor is a best case, so a real program should take longer; the ratio
floor ÷ measured is the share of peak it reached: bandwidth utilisation (MBU) where memory
sets the floor, FLOP utilisation (MFU) where arithmetic does.

Conventions, the same for every row (the floor counts only what a step cannot avoid):

- a pass reads every weight once at the row's bits a weight, except the input embedding
  table, of which it reads one row for each token it carries (a table tied to the output
  layer is read whole as that layer); its arithmetic is 2 FLOPs a weight a token, the table's
  lookup left out, and the output layer's only for the last new token of each sequence in the
  pass, the one whose next token is drawn (engines compute no logits for the other prompt
  tokens: vLLM's ``logits_indices``, llama.cpp's batches with ``logits`` set on the last
  token only). In a mixture of experts a pass reads the experts of one token only, since
  every token of it may route alike (``Model.parameters_read`` expects uniform routing, which
  real routers can undercut). gpt-fast's published bandwidth follows its own convention, kept
  apart in ``published_share``;
- attention is counted with the causal mask, and the cache's keys and values are read and
  written; a cache whose format the source does not state is counted at 8 bits where the
  arithmetic is FP8 (the least such engines store) and at 16 bits otherwise;
- several GPUs serving one model with tensor parallelism split the weights, the cache (by
  KV heads, at least one head each) and the arithmetic; each GPU reads whole what it multiplies
  whole: the norms always, and the output layer where the row says so (``replicated``). A
  copy held but only sliced (TurboMind's output layer) or looked up (the input table) counts
  as what is read of it.
  The floor is one GPU's time for its share, with no cost for talking to the others;
- a decode step of a request is timed at the request's mean cache length, prompt plus half
  the reply, as ``serving.request`` does; where the engine trims its cache to a context
  window (``context_window``), at the mean of the lengths it really kept. Lengths a source
  leaves out count as zero, which can only lower the floor.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import median
from typing import Mapping

import numpy as np

from . import _check, _data, units
from .hardware import CATALOG, FROM_THE_MEMORY_BUS, GPU, GiB, T
from .models import MODELS, Model
from .passes import forward_pass
from .roofline import Assumptions, pass_time

DATA = Path(__file__).with_name("data") / "measurements.yaml"

# The floor: the spec sheet's peaks reached exactly, no overhead, attention and the cache counted.
FLOOR = Assumptions(attention="causal", kv_cache=True,
                    label="floor: 100 % of peak, no overhead, causal attention and the cache counted")

METRICS = {
    "decode_rate": "tokens a second for one user",
    "itl": "time between one user's tokens",
    "ttft": "time to the first token",
    "prefill_rate": "prompt tokens read a second",
    "output_rate_total": "output tokens a second, all users together",
}
_RATE_METRICS = {"decode_rate", "prefill_rate", "output_rate_total"}
COMPUTE_FORMATS = ("16-bit", "fp8")

# Why a measurement may come in under its floor; anything else is an error in the data.
BEAT_REASONS = {
    "speculative decoding": "a small model drafts tokens and the large one checks several in one pass",
    "quantized weights labelled otherwise": "the weights held fewer bits than the label says",
    "batched total read as per user": "a total over many users was read as one user's rate",
    "weights partly cached": "part of the weights stayed in a cache between steps",
}

# Shapes the package's model list lacks, from each model's published config.json.
_EXTRA_CONFIGS: Mapping[str, Mapping] = {
    "llama-7b": {
        "_name_or_path": "LLaMA 7B", "model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
        "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 32000,
        "tie_word_embeddings": False,
    },
    "llama-2-13b": {
        "_name_or_path": "Llama 2 13B", "model_type": "llama", "num_hidden_layers": 40, "hidden_size": 5120,
        "num_attention_heads": 40, "num_key_value_heads": 40, "intermediate_size": 13824, "vocab_size": 32000,
        "tie_word_embeddings": False,
    },
    "tinyllama-1.1b": {
        "_name_or_path": "TinyLlama 1.1B", "model_type": "llama", "num_hidden_layers": 22, "hidden_size": 2048,
        "num_attention_heads": 32, "num_key_value_heads": 4, "intermediate_size": 5632, "vocab_size": 32000,
        "tie_word_embeddings": False,
    },
}
# Machines that published measurements ran on and the lessons do not offer (their explorers list
# every GPU of the catalog). A floor takes the highest rate a spec lists: for a GeForce card, the
# tensor cores' FP16 rate with FP16 accumulation.
_MEASURED_ON = (
    GPU(key="rtx-4090", name="NVIDIA GeForce RTX 4090",
        source_url="https://waredb.com/processor/nvidia-geforce-rtx-4090",
        dense_flops={"fp16": 330.3 * T}, memory_bandwidth=1008e9, memory_bytes=24 * GiB, price_per_hour=None,
        source="RTX 4090 specifications as spec databases list them: 24 GB of GDDR6X at 1,008 GB/s; FP16 "
               "tensor rate 165.2 TFLOP/s dense with FP32 accumulation, twice that (330.3) with FP16 "
               "accumulation (661 with sparsity in Tom's Hardware's table)",
        as_of="2022-10", price_source="owned, not rented"),
)
MACHINES: Mapping[str, GPU] = {**CATALOG, **{machine.key: machine for machine in _MEASURED_ON}}



# Later releases with the same shape as one the package holds.
_SAME_SHAPE = {"llama-3.1-8b": "llama-3-8b", "llama-3.1-70b": "llama-3-70b", "llama-3.3-70b": "llama-3-70b"}
_EXTRA_MODELS = {key: Model.from_hf_config(config) for key, config in _EXTRA_CONFIGS.items()}
_SAME_SHAPE_NAMES = {"llama-3.1-8b": "Llama 3.1 8B", "llama-3.1-70b": "Llama 3.1 70B", "llama-3.3-70b": "Llama 3.3 70B"}


def model_name(key) -> str:
    """The model's name as the table shows it ("Llama 3.1 8B", not its shape's "Llama 3 8B")."""
    return _SAME_SHAPE_NAMES.get(key) or model_for(key).name


def model_for(key) -> Model:
    """The shape of a model named in the data: the package's own, or one of the few added here."""
    if not isinstance(key, str):
        raise TypeError(f"model must be a model's key such as 'llama-3-8b', got {key!r}")
    if key in MODELS:
        return MODELS[key]
    if key in _SAME_SHAPE:
        return MODELS[_SAME_SHAPE[key]]
    if key in _EXTRA_MODELS:
        return _EXTRA_MODELS[key]
    known = sorted({*MODELS, *_SAME_SHAPE, *_EXTRA_MODELS})
    raise ValueError(f"model must be one of {known}, got {key!r}")


# -- the data ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Source:
    key: str
    title: str
    url: str
    publisher: str


@dataclass(frozen=True)
class Measurement:
    """One published figure and the conditions it was measured under (see the data file's header)."""

    id: str
    source: Source
    date: str
    kind: str
    model: str
    weights: str
    weight_bits: float
    kv_bits: float | None
    compute: str
    hardware: str
    gpus: int
    software: str
    version: str
    batch: int | None
    prompt_tokens: int | None
    reply_tokens: int | None
    metric: str
    value: float
    unit: str
    note: str
    published_bandwidth: float | None = None
    beats_floor: Mapping | None = field(default=None, compare=False)
    published_bandwidth_counts: str | None = None   # what gpt-fast's bandwidth column divides: BANDWIDTH_COUNTS
    context_window: int | None = None   # the engine's context, past which it drops the older half of its cache
    replicated: tuple = ()              # parts every GPU reads whole, besides the norms: REPLICABLE
    main_branch_value: float | None = None   # a pull request's row: the main branch's figure at the time
    prompt_text: str | None = None      # the prompt, where the source gives it and not its length
    sampling: str | None = None         # "greedy" or how the tokens were sampled, where it matters
    drafted_tokens: int | None = None   # speculative decoding: tokens drafted for each pass of the large model
    value_digits: int | None = None     # decimals as published, where the last are zeros a number drops (62.50)

    @property
    def pull_request(self) -> bool:
        """A figure measured on a pull request's branch, not on the engine's main branch."""
        return self.main_branch_value is not None

    @property
    def precision(self) -> str:
        """The weights' width, for comparing like with like: 16-bit, 8-bit, or 4- to 5-bit."""
        if self.weight_bits >= 16:
            return "16-bit"
        return "8-bit" if self.weight_bits >= 8 else "4- to 5-bit"

    @property
    def shape(self) -> Model:
        return model_for(self.model)

    @property
    def gpu(self) -> GPU:
        return MACHINES[self.hardware]

    @property
    def cache_bits(self) -> float:
        """The cache's bits: as stated, else 8 where the arithmetic is FP8 and 16 otherwise."""
        if self.kv_bits is not None:
            return self.kv_bits
        return 8 if self.compute == "fp8" else 16

    @property
    def peak_flops(self) -> float:
        """FLOP/s of all the row's GPUs together, in the format its arithmetic runs on."""
        rate = self.gpu.flops("fp8") if self.compute == "fp8" else self.gpu.peak_flops
        return rate * self.gpus

    @property
    def bandwidth(self) -> float:
        """Bytes a second of all the row's GPUs together."""
        return self.gpu.memory_bandwidth * self.gpus

    @property
    def hardware_label(self) -> str:
        """The hardware as a row's note names it: ``2 × NVIDIA H100 SXM``, ``Apple M2 Ultra``.

        The catalog's GPU core count is left out: the floor needs only the chip's bandwidth, alike
        for all of its GPU options, and not every source says which it ran on.
        """
        name = chip_name(self.gpu)
        return name if self.gpus == 1 else f"{self.gpus} × {name}"

    @property
    def hardware_short(self) -> str:
        """The hardware as the table's narrow column shows it: ``8 × A100 80 GB SXM``, ``M2 Ultra``."""
        name = re.sub(r"^(NVIDIA|Apple|AMD) | \(.*\)$", "", self.gpu.name)
        return name if self.gpus == 1 else f"{self.gpus} × {name}"

    @property
    def measured_time(self) -> float:
        """Seconds for the row's unit of work: a token (rates, ITL) or the whole prompt (TTFT)."""
        if self.metric in ("itl", "ttft"):
            return self.value / 1e3
        if self.metric == "prefill_rate":
            return self.prompt_tokens / self.value
        return 1 / self.value

    @property
    def unit_of_work(self) -> str:
        return {"ttft": "the prompt", "prefill_rate": "the prompt",
                "output_rate_total": "an output token"}.get(self.metric, "a token")

    @property
    def lengths(self) -> str:
        """Prompt → reply as the table shows them; a dash where the source does not say."""
        def shown(tokens):
            return "—" if tokens is None else units.number(tokens)
        kept = "" if self.context_window is None else f" (a {units.number(self.context_window)}-token context)"
        return f"{shown(self.prompt_tokens)} → {shown(self.reply_tokens)}{kept}"

    @property
    def published(self) -> str:
        """The figure as the table shows it, with the digits it was published with: ``93.89 tok/s``."""
        digits = _decimals(self.value) if self.value_digits is None else self.value_digits
        shown = {"decode_rate": "tok/s", "prefill_rate": "tok/s prefill", "output_rate_total": "tok/s in all",
                 "itl": "ms ITL", "ttft": "ms TTFT"}[self.metric]
        figure = f"{units.number(self.value, digits)} {shown}"
        if self.pull_request:
            figure += f" (pull request; main branch {units.number(self.main_branch_value, digits)})"
        return figure

    @property
    def users(self) -> str:
        return "saturated" if self.batch is None else units.number(self.batch)


def _decimals(value: float) -> int:
    """The decimals a number is written with, trailing zeros dropped: 62.5 → 1, 28312.0 → 0."""
    return 0 if float(value).is_integer() else len(repr(float(value)).split(".")[1])


_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")
_FIELDS = ("id", "source", "date", "kind", "model", "weights", "weight_bits", "kv_bits", "compute", "hardware",
           "gpus", "software", "version", "batch", "prompt_tokens", "reply_tokens", "metric", "value", "unit",
           "note")
_OPTIONAL = ("published_bandwidth", "beats_floor", "published_bandwidth_counts", "context_window", "replicated",
             "main_branch_value", "prompt_text", "sampling", "drafted_tokens", "value_digits")
# What a published bandwidth column divides by the time of a token.
BANDWIDTH_COUNTS = ("every weight", "every weight but the input embedding table")
# What a tensor-parallel engine may read whole on every GPU, besides the norms (which all of them do).
REPLICABLE = ("output layer",)
# What a published figure may be, per metric: (lowest, highest) in the unit it is published in.
VALUE_RANGES = {
    "decode_rate": (0.1, 5_000),       # tokens/s for one user
    "itl": (0.1, 10_000),              # ms
    "ttft": (1, 600_000),              # ms
    "prefill_rate": (1, 1_000_000),    # tokens/s
    "output_rate_total": (1, 10_000_000),  # tokens/s
}


def _row_error(row_id, name, value, wanted):
    return ValueError(f"measurement {row_id!r}: {name} must be {wanted}, got {value!r}")


def _whole(row_id, name, value, minimum, optional=False):
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _row_error(row_id, name, value, f"a whole number of at least {minimum}" + (" or null" if optional else ""))
    return value


def _text(row_id, name, value):
    if not isinstance(value, str) or not value.strip():
        raise _row_error(row_id, name, value, "non-empty text")
    return " ".join(value.split())


def parse(document) -> tuple[Measurement, ...]:
    """Check and read the data file's contents (a dict with ``sources`` and ``measurements``)."""
    if not isinstance(document, Mapping) or set(document) != {"sources", "measurements"}:
        raise ValueError(f"document must hold 'sources' and 'measurements', got {document!r:.200}")
    sources = {}
    for key, entry in document["sources"].items():
        if not isinstance(entry, Mapping) or set(entry) != {"title", "url", "publisher"}:
            raise ValueError(f"source {key!r} must have a title, a url and a publisher, got {entry!r}")
        if not str(entry["url"]).startswith("https://"):
            raise ValueError(f"source {key!r}: url must start with https://, got {entry['url']!r}")
        sources[key] = Source(key, _text(key, "title", entry["title"]), entry["url"],
                              _text(key, "publisher", entry["publisher"]))
    rows, seen = [], set()
    for raw in document["measurements"]:
        row_id = raw.get("id") if isinstance(raw, Mapping) else None
        if not isinstance(row_id, str) or not row_id:
            raise ValueError(f"every measurement needs an id, got {raw!r:.200}")
        missing = [name for name in _FIELDS if name not in raw]
        unknown = sorted(set(raw) - set(_FIELDS) - set(_OPTIONAL))
        if missing or unknown:
            raise ValueError(f"measurement {row_id!r}: missing {missing}, unknown {unknown}")
        if row_id in seen:
            raise ValueError(f"measurement ids must be unique, got {row_id!r} twice")
        seen.add(row_id)
        if raw["source"] not in sources:
            raise _row_error(row_id, "source", raw["source"], f"one of {sorted(sources)}")
        if not isinstance(raw["date"], str) or not _DATE.match(raw["date"]):
            raise _row_error(row_id, "date", raw["date"], "a date written YYYY, YYYY-MM or YYYY-MM-DD, in quotes")
        model_for(raw["model"])
        if raw["hardware"] not in MACHINES:
            raise _row_error(row_id, "hardware", raw["hardware"], f"a catalog key, one of {list(MACHINES)}")
        if raw["metric"] not in METRICS:
            raise _row_error(row_id, "metric", raw["metric"], f"one of {sorted(METRICS)}")
        if raw["compute"] not in COMPUTE_FORMATS:
            raise _row_error(row_id, "compute", raw["compute"], f"one of {COMPUTE_FORMATS}")
        weight_bits = raw["weight_bits"]
        if isinstance(weight_bits, bool) or not isinstance(weight_bits, (int, float)) or not 1 <= weight_bits <= 32:
            raise _row_error(row_id, "weight_bits", weight_bits, "a number of bits from 1 to 32")
        kv_bits = raw["kv_bits"]
        if kv_bits is not None and (isinstance(kv_bits, bool) or not isinstance(kv_bits, (int, float))
                                    or not 2 <= kv_bits <= 32):
            raise _row_error(row_id, "kv_bits", kv_bits, "a number of bits from 2 to 32, or null")
        value = raw["value"]
        low, high = VALUE_RANGES[raw["metric"]]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise _row_error(row_id, "value", value, f"a number from {low:g} to {high:g} for {raw['metric']}")
        unit = _text(row_id, "unit", raw["unit"])
        wanted_unit = "ms" if raw["metric"] in ("itl", "ttft") else "tokens/s"
        if not unit.startswith(wanted_unit) and not (wanted_unit == "tokens/s" and "tokens/s" in unit):
            raise _row_error(row_id, "unit", unit, f"in {wanted_unit} for {raw['metric']}")
        batch = _whole(row_id, "batch", raw["batch"], 1, optional=True)
        prompt = _whole(row_id, "prompt_tokens", raw["prompt_tokens"], 0, optional=True)
        reply = _whole(row_id, "reply_tokens", raw["reply_tokens"], 1, optional=True)
        if raw["metric"] in ("ttft", "prefill_rate") and (not prompt or batch != 1):
            raise _row_error(row_id, "prompt_tokens", prompt, f"stated, for one user, for {raw['metric']}")
        if batch is None and (raw["metric"] != "output_rate_total" or prompt is None or reply is None):
            raise _row_error(row_id, "batch", batch, "stated, except for a saturated server's total with its lengths")
        if raw["metric"] == "decode_rate" and batch != 1:
            raise _row_error(row_id, "batch", batch, "1 for a rate per user (use itl for many users)")
        published = raw.get("published_bandwidth")
        if published is not None and (isinstance(published, bool) or not isinstance(published, (int, float))
                                      or published <= 0):
            raise _row_error(row_id, "published_bandwidth", published, "a positive number of GB/s, or null")
        if published is not None and raw["gpus"] != 1:
            # A share divides it by every GPU's bandwidth; gpt-fast's tensor-parallel column is one GPU's.
            raise _row_error(row_id, "published_bandwidth", published,
                             "null for several GPUs (a source's figure for one GPU goes in the note)")
        beats = raw.get("beats_floor")
        if beats is not None and (not isinstance(beats, Mapping) or beats.get("reason") not in BEAT_REASONS
                                  or not str(beats.get("note", "")).strip()):
            raise _row_error(row_id, "beats_floor", beats, f"a reason from {sorted(BEAT_REASONS)} and a note")
        counts = raw.get("published_bandwidth_counts")
        if (published is None) != (counts is None) or (counts is not None and counts not in BANDWIDTH_COUNTS):
            raise _row_error(row_id, "published_bandwidth_counts", counts,
                             f"one of {BANDWIDTH_COUNTS} where published_bandwidth is given, else absent")
        window = _whole(row_id, "context_window", raw.get("context_window"), 2, optional=True)
        if window is not None and (prompt is None or reply is None or prompt >= window):
            raise _row_error(row_id, "context_window", window, "larger than the stated prompt, with a stated reply")
        replicated = raw.get("replicated", [])
        if not isinstance(replicated, list) or any(part not in REPLICABLE for part in replicated) or (
                replicated and raw["gpus"] == 1):
            raise _row_error(row_id, "replicated", replicated, f"a list of parts from {REPLICABLE}, for several GPUs")
        main_value = raw.get("main_branch_value")
        if main_value is not None and (isinstance(main_value, bool) or not isinstance(main_value, (int, float))
                                       or not low <= main_value <= high):
            raise _row_error(row_id, "main_branch_value", main_value, f"a number from {low:g} to {high:g}, or absent")
        drafted = _whole(row_id, "drafted_tokens", raw.get("drafted_tokens"), 1, optional=True)
        value_digits = _whole(row_id, "value_digits", raw.get("value_digits"), 0, optional=True)
        if value_digits is not None and not _decimals(value) < value_digits <= 6:
            raise _row_error(row_id, "value_digits", value_digits,
                             f"more decimals than the value shows ({_decimals(value)}), and at most 6, or absent")
        prompt_text, sampling = raw.get("prompt_text"), raw.get("sampling")
        rows.append(Measurement(
            id=row_id, source=sources[raw["source"]], date=raw["date"], kind=_text(row_id, "kind", raw["kind"]),
            model=raw["model"], weights=_text(row_id, "weights", raw["weights"]), weight_bits=float(weight_bits),
            kv_bits=None if kv_bits is None else float(kv_bits), compute=raw["compute"], hardware=raw["hardware"],
            gpus=_whole(row_id, "gpus", raw["gpus"], 1), software=_text(row_id, "software", raw["software"]),
            version=_text(row_id, "version", raw["version"]), batch=batch, prompt_tokens=prompt, reply_tokens=reply,
            metric=raw["metric"], value=float(value), unit=unit, note=_text(row_id, "note", raw["note"]),
            published_bandwidth=None if published is None else float(published),
            beats_floor=None if beats is None else dict(beats), published_bandwidth_counts=counts,
            context_window=window, replicated=tuple(replicated),
            main_branch_value=None if main_value is None else float(main_value),
            prompt_text=None if prompt_text is None else _text(row_id, "prompt_text", prompt_text),
            sampling=None if sampling is None else _text(row_id, "sampling", sampling), drafted_tokens=drafted,
            value_digits=value_digits,
        ))
    return tuple(rows)


def load(path=DATA) -> tuple[Measurement, ...]:
    """Read and check the measurements file (parsed once for each content: ``_data.rows``)."""
    return _data.rows(path, parse)


# -- the floor ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Floor:
    """A measurement beside the best case the roofline allows for the same work."""

    measurement: Measurement
    time: float          # seconds for the row's unit of work, at the floor
    flops: float         # one GPU's FLOPs for that work (all of them where the row has one GPU)
    bytes: float         # one GPU's bytes moved for it
    bound: str           # "memory" or "compute": which limit sets the floor

    @property
    def share(self) -> float:
        """Floor ÷ measured: the share of peak bandwidth (or FLOP/s) the measurement implies."""
        return self.time / self.measurement.measured_time

    @property
    def share_name(self) -> str:
        return "MBU" if self.bound == "memory" else "MFU"

    @property
    def beats(self) -> bool:
        """Faster than the floor: impossible as labelled unless something explains it."""
        return self.share > 1

    @property
    def explained(self) -> bool:
        return self.measurement.beats_floor is not None

    @property
    def published_share(self) -> float | None:
        """The source's own achieved bandwidth ÷ the hardware's, where the source prints one."""
        if self.measurement.published_bandwidth is None:
            return None
        return self.measurement.published_bandwidth * 1e9 / self.measurement.bandwidth


def mean_cache(prompt_tokens, reply_tokens) -> int:
    """A request's mean cache length over its decode steps: prompt + half the reply (unstated lengths count 0)."""
    return (prompt_tokens or 0) + (reply_tokens or 0) // 2


def cache_lengths(prompt_tokens, reply_tokens, context_window) -> np.ndarray:
    """The cache each decode step reads when the engine keeps at most ``context_window`` tokens.

    llama.cpp's context shift: a step that would pass the window first drops the older half of
    what it holds after the first token (n_keep is 0 by default), then carries on. Step i reads
    the cache the tokens before it left.
    """
    prompt_tokens = _check.count("prompt_tokens", prompt_tokens)
    reply_tokens = _check.count("reply_tokens", reply_tokens, minimum=1)
    context_window = _check.count("context_window", context_window, minimum=2)
    if prompt_tokens >= context_window:
        raise ValueError(f"prompt_tokens must be below context_window ({context_window}), got {prompt_tokens}")
    held, lengths = int(prompt_tokens), []
    for _ in range(int(reply_tokens)):
        if held + 1 > context_window:
            held -= (held - 1) // 2
        lengths.append(held)
        held += 1
    return np.array(lengths)


def logit_flops(model: Model, tokens):
    """The output layer's arithmetic for ``tokens`` tokens: 2 FLOPs a weight of its vocab × hidden."""
    _check.instance("model", model, Model)
    return 2 * model.vocab * model.hidden * _check.count("tokens", tokens)


def step_cost(model: Model, new_tokens, cached_tokens, batch, weight_bits, kv_bits, gpus=1, replicated=()):
    """FLOPs and bytes one GPU cannot avoid in a pass: ``forward_pass`` less the input table but its rows read,
    and less the output layer's arithmetic on every new token but each sequence's last.

    The input embedding table (a model whose output layer is not tied to it) is looked up,
    not multiplied: a pass reads one row for each token it carries and does no arithmetic
    with it. The output layer turns only the last new token of each of the ``batch`` sequences
    into logits (``logit_flops``); its weights are read whole all the same. A mixture of experts reads one token's experts, however many tokens the pass carries. Over ``gpus`` GPUs in tensor parallelism, each takes its share of the weights,
    the arithmetic and the cache (split by KV heads, one head each at the least), and reads
    whole what every GPU multiplies whole: the norms, and the parts named in ``replicated``.
    ``cached_tokens`` may be an array of lengths (one per step); the costs are their mean.
    """
    _check.instance("model", model, Model)
    gpus = _check.count("gpus", gpus, minimum=1)
    unknown = [part for part in replicated if part not in REPLICABLE]
    if unknown:
        raise ValueError(f"replicated must name parts from {REPLICABLE}, got {list(replicated)!r}")
    cost = forward_pass(model, new_tokens, cached_tokens, batch, weight_bits, kv_bits, attention="causal")
    tokens = batch * new_tokens
    table = 0 if model.tied_embeddings else model.vocab * model.hidden
    rows_read = min(tokens, model.vocab) * model.hidden if table else 0
    weight_bytes = cost.weight_bytes - (table - rows_read) * weight_bits / 8
    if model.mixture_of_experts:   # the least a pass can read: every token routed to one token's experts
        weight_bytes -= (model.parameters_read(tokens) - model.parameters_read(1)) * weight_bits / 8
    flops = cost.flops - 2 * table * tokens - logit_flops(model, tokens - batch)
    cache = cost.kv_read_bytes + cost.kv_write_bytes
    if gpus > 1:
        whole = model.layers * model.norms_per_layer * model.hidden + model.hidden
        whole_flops = 0
        if "output layer" in replicated:
            whole += model.vocab * model.hidden
            whole_flops = logit_flops(model, batch)
        whole_bytes = whole * weight_bits / 8
        weight_bytes = (weight_bytes - whole_bytes) / gpus + whole_bytes
        flops = (flops - whole_flops) / gpus + whole_flops
        cache = cache * max(1 / gpus, 1 / model.kv_heads)
    return float(np.mean(flops)), float(np.mean(weight_bytes + cache))


def saturated_request(model: Model, weight_bits, kv_bits, prompt_tokens, reply_tokens):
    """FLOPs and bytes one request costs a server that batches without limit.

    With enough users in every pass, the weights' read is shared until it costs nothing per
    request; what is left is each token's arithmetic (the prompt's and the reply's, attention
    with the causal mask, the input table's lookup left out, the output layer only for the
    tokens a logit is drawn from, one for each reply token) and each
    decode step's read of that request's own cache, plus the cache written once for every token.
    """
    prompt_tokens = _check.count("prompt_tokens", prompt_tokens)
    reply_tokens = _check.count("reply_tokens", reply_tokens, minimum=1)
    tokens = prompt_tokens + reply_tokens
    whole = forward_pass(model, tokens, 0, 1, weight_bits, kv_bits, attention="causal")
    lookup = 0 if model.tied_embeddings else 2 * model.vocab * model.hidden * tokens
    cache_reads = reply_tokens * prompt_tokens + reply_tokens * (reply_tokens - 1) / 2
    # The pass above carries prompt + reply tokens; a logit is drawn once for each reply token.
    return (whole.flops - lookup - logit_flops(model, tokens - reply_tokens),
            (cache_reads + tokens) * model.kv_bytes_per_token(kv_bits))


def saturated_copy(model: Model, gpu: GPU, compute: str, weight_bits, kv_bits, prompt_tokens, reply_tokens,
                   tensor_parallel=1, link=None) -> tuple[float, float]:
    """Seconds one request of these lengths costs at least, and the seconds of them spent in all-reduces, on a
    copy of ``model`` that batches without limit: on one ``gpu``, or split over ``tensor_parallel`` of them
    joined by ``link`` (a key of the catalog's links; the card's fastest if None). Each GPU does its share of
    the request's arithmetic and cache traffic (``saturated_request``) at the peaks; a split copy adds the
    bandwidth part of the all-reduces of every token (their latency, like the weights' reads, shared away)."""
    from . import parallel
    tp = parallel.check_tensor_parallel(model, tensor_parallel)
    flops, moved = saturated_request(model, weight_bits, kv_bits, prompt_tokens, reply_tokens)
    timing = pass_time(flops / tp, moved * parallel.kv_share(model, tp), gpu.flops(compute), gpu.memory_bandwidth,
                       FLOOR)
    ring = 0.0
    if tp > 1:
        message = parallel.activation_bytes(model, prompt_tokens + reply_tokens)
        ring = float(parallel.ring_time(message, tp, parallel.group(gpu, tp, link).link)) * \
            parallel.ALLREDUCES_PER_LAYER * model.layers
    return float(timing.time) + ring, ring


def saturated_output_rate(model: Model, gpu: GPU, compute: str, weight_bits, kv_bits, prompt_tokens,
                          reply_tokens, tensor_parallel=1, link=None) -> float:
    """Output tokens a second that no server passes on one ``gpu`` (or a copy split over ``tensor_parallel``
    of them, over ``link``) with every request of these lengths, however many users it batches: the
    roofline's best case for ``saturated_request`` (``saturated_copy``)."""
    return reply_tokens / saturated_copy(model, gpu, compute, weight_bits, kv_bits, prompt_tokens, reply_tokens,
                                         tensor_parallel, link)[0]


def _decode_cache(m: Measurement):
    if m.context_window is not None:
        return cache_lengths(m.prompt_tokens, m.reply_tokens, m.context_window)
    return mean_cache(m.prompt_tokens, m.reply_tokens)


def floor(measurement: Measurement) -> Floor:
    """The roofline's best case for the row's unit of work, under the row's own conditions.

    FLOPs and bytes are one GPU's (all of them, for a single GPU), set against one GPU's peaks.
    """
    _check.instance("measurement", measurement, Measurement)
    m = measurement
    model = m.shape
    peak = m.peak_flops / m.gpus
    bandwidth = m.bandwidth / m.gpus
    if m.metric == "output_rate_total" and m.batch is None:
        flops, moved = saturated_request(model, m.weight_bits, m.cache_bits, m.prompt_tokens, m.reply_tokens)
        flops, moved = flops / m.gpus, moved / m.gpus
        timing = pass_time(flops, moved, peak, bandwidth, FLOOR)
        per_token = 1 / m.reply_tokens
        return Floor(m, float(timing.time) * per_token, flops * per_token, moved * per_token, timing.bound)
    if m.metric in ("ttft", "prefill_rate"):
        flops, moved = step_cost(model, m.prompt_tokens, 0, 1, m.weight_bits, m.cache_bits, m.gpus, m.replicated)
        share_per = 1.0
    else:  # a decode step: decode_rate, itl, or a total over a stated number of users
        flops, moved = step_cost(model, 1, _decode_cache(m), m.batch, m.weight_bits, m.cache_bits, m.gpus,
                                 m.replicated)
        share_per = 1 / m.batch if m.metric == "output_rate_total" else 1.0
    timing = pass_time(flops, moved, peak, bandwidth, FLOOR)
    return Floor(m, float(timing.time) * share_per, flops * share_per, moved * share_per, timing.bound)


@dataclass(frozen=True)
class PromptsAmongSteps:
    """A many-user decode row's floor with the other users' prompts counted (``prompts_among_steps``)."""

    measurement: Measurement
    prompt_tokens_a_step: float   # prompt tokens the server must prefill for each decode step, on average
    mixed: float                  # seconds: each step carries its share of the prompts in the same pass
    apart: float                  # seconds: the prompts run in passes of their own, between the steps

    @property
    def shares(self) -> tuple[float, float]:
        """Floor ÷ measured, mixed and apart: the range the row's share lies in once prompts are counted."""
        return self.mixed / self.measurement.measured_time, self.apart / self.measurement.measured_time


def prompts_among_steps(measurement: Measurement) -> PromptsAmongSteps:
    """A decode row of ``batch`` users whose requests keep arriving: its floor with their prompts counted.

    ``floor`` times the decode step alone. But while each of the users writes its reply, new
    requests take their places, and their prompts must be read too: batch × prompt ÷ reply prompt
    tokens for every decode step, on average. Mixed into the steps (chunked prefill), a step's
    floor is the slower limit of the decode's and the prompts' work together (their prompts' keys
    and values written, the weights read once); run apart, the prompts' own passes add their time.
    An engine does one or the other, or something between, so the share lies between the two.
    """
    _check.instance("measurement", measurement, Measurement)
    m = measurement
    if m.metric != "itl" or m.batch is None or m.batch < 2 or not m.prompt_tokens or not m.reply_tokens:
        raise ValueError(f"measurement must time the steps of several users with stated lengths (metric 'itl', "
                         f"batch above 1, prompt and reply tokens), got {m.id!r}")
    model, peak, bandwidth = m.shape, m.peak_flops / m.gpus, m.bandwidth / m.gpus
    per_step = m.batch / m.reply_tokens          # requests arriving for each decode step
    decode = step_cost(model, 1, _decode_cache(m), m.batch, m.weight_bits, m.cache_bits, m.gpus, m.replicated)
    prompt = step_cost(model, m.prompt_tokens, 0, 1, m.weight_bits, m.cache_bits, m.gpus, m.replicated)
    one = step_cost(model, 1, 0, 1, m.weight_bits, m.cache_bits, m.gpus, m.replicated)
    mixed = pass_time(decode[0] + per_step * prompt[0], decode[1] + per_step * (prompt[1] - one[1]),
                      peak, bandwidth, FLOOR).time
    apart = (pass_time(*decode, peak, bandwidth, FLOOR).time
             + per_step * pass_time(*prompt, peak, bandwidth, FLOOR).time)
    return PromptsAmongSteps(m, per_step * m.prompt_tokens, float(mixed), float(apart))


def prompts_left_out(floor_: Floor) -> PromptsAmongSteps | None:
    """The row's floor with the other users' prompts counted, where its floor leaves them out (a decode
    row of several users with stated lengths, whose finished requests are replaced); None elsewhere."""
    m = floor_.measurement
    if m.metric != "itl" or m.batch is None or m.batch < 2 or not m.prompt_tokens or not m.reply_tokens:
        return None
    return prompts_among_steps(m)


def counted_range(among: PromptsAmongSteps) -> str:
    """The share of a row once its users' prompts are counted, mixed into the steps to run apart: ``34 % to 58 %``."""
    return " to ".join(dict.fromkeys(units.percent(share) for share in among.shares))


def prompts_counted_note(floor_: Floor) -> str:
    """``, or 34 % to 58 % with the other users' prompts counted`` for a row whose floor leaves them out; else ``""``."""
    among = prompts_left_out(floor_)
    return "" if among is None else f", or {counted_range(among)} with the other users' prompts counted"


def floors(measurements=None) -> list[Floor]:
    """Every row's floor (the data file's rows unless others are given)."""
    return [floor(m) for m in (load() if measurements is None else measurements)]


def unexplained(floors_) -> list[Floor]:
    """Rows faster than their floor with no reason given: errors in the data, or in the floor."""
    return [f for f in floors_ if f.beats and not f.explained]


def check_explained(floors_):
    """Raise a ValueError naming every row that beats its floor without an explanation, and every
    explanation whose row does not beat its floor."""
    wrong = [f"{f.measurement.id} reaches {units.percent(f.share)} of its floor with no explanation"
             for f in unexplained(floors_)]
    wrong += [f"{f.measurement.id} gives a reason for beating its floor but reaches only {units.percent(f.share)}"
              for f in floors_ if f.explained and not f.beats]
    if wrong:
        raise ValueError("measurements: " + "; ".join(wrong))
    return floors_


@dataclass(frozen=True)
class Group:
    """Rows alike in what they measure: one kind of system, one width of weights, one share (MBU or MFU)."""

    kind: str
    precision: str
    share_name: str
    shares: tuple

    @property
    def rows(self) -> int:
        return len(self.shares)

    @property
    def median(self) -> float:
        return median(self.shares)

    @property
    def highest(self) -> float:
        return max(self.shares)


def groups(floors_, minimum=1) -> list[Group]:
    """Medians compared like with like: rows grouped by kind, precision and MBU or MFU.

    Rows that beat their floor are left out; groups with fewer than ``minimum`` rows too. Sorted
    by kind, then precision (16-bit first), then MBU before MFU.
    """
    minimum = _check.count("minimum", minimum, minimum=1)
    found: dict[tuple, list[float]] = {}
    for f in floors_:
        if not f.beats:
            m = f.measurement
            found.setdefault((m.kind, m.precision, f.share_name), []).append(f.share)
    order = {"16-bit": 0, "8-bit": 1, "4- to 5-bit": 2}
    keys = sorted(found, key=lambda key: (key[0], order[key[1]], key[2]))
    return [Group(*key, tuple(found[key])) for key in keys if len(found[key]) >= minimum]


def kinds(floors_) -> dict[str, int]:
    """Each kind of system and how many rows it has, in the order the rows first name them."""
    counted: dict[str, int] = {}
    for f in floors_:
        counted[f.measurement.kind] = counted.get(f.measurement.kind, 0) + 1
    return counted


def chip_name(gpu: GPU) -> str:
    """A machine's catalog name without the GPU core count it gives in brackets: ``Apple M2 Ultra``."""
    return re.sub(r" \(.*\)$", "", gpu.name)


def hardware(floors_) -> dict[str, str]:
    """Each machine the rows ran on, catalog key to name, in the order the rows first name them.

    Rows on several of one GPU share its entry: the chart filters by the kind of chip.
    """
    return {f.measurement.hardware: chip_name(f.measurement.gpu) for f in floors_}


def as_misread(measurement: Measurement, **changes) -> Measurement:
    """The same figure read under other conditions (fewer users, more bits...), to see what a misreading implies."""
    _check.instance("measurement", measurement, Measurement)
    changes.setdefault("beats_floor", None)
    return replace(measurement, **changes)


def gptfast_bytes(model: Model, weight_bits, counts="every weight but the input embedding table") -> float:
    """Bytes gpt-fast counts per token for its bandwidth column.

    From 2024-05-09 its generate.py counts every weight but the input embedding table; before,
    every weight (``counts="every weight"``). Either way it is a convention for its column, not
    the course's floor, which counts one row of the table for each token.
    """
    _check.instance("model", model, Model)
    weight_bits = _check.positive("weight_bits", weight_bits)
    if counts not in BANDWIDTH_COUNTS:
        raise ValueError(f"counts must be one of {BANDWIDTH_COUNTS}, got {counts!r}")
    table = 0 if counts == "every weight" else model.vocab * model.hidden
    return (model.parameters - table) * weight_bits / 8


# -- points from elsewhere: the lab, the reader's Ollama run -------------------------------------
@dataclass(frozen=True)
class Point:
    """A measurement that is not in the data file but goes on the same chart."""

    label: str
    floor_time: float
    measured_time: float
    marker: str = "*"

    @property
    def share(self):
        return self.floor_time / self.measured_time


def ollama_point(comparison, label="your Ollama run") -> Point:
    """A decode rate from ``ollama.compare``: floor = model bytes ÷ bandwidth, measured = 1 ÷ eval rate."""
    return Point(label, 1 / comparison.ceiling, 1 / comparison.decode_rate, marker="D")


# -- the table and the chart ---------------------------------------------------------------------
def table_markdown(floors_) -> str:
    """The rows as a Markdown table (numbers as the prose shows them), then the sources as a numbered list."""
    order = list(dict.fromkeys(f.measurement.source.key for f in floors_))
    lines = ["| model | weights | bits | hardware | users | prompt → reply | published | floor | share | source |",
             "|---|---|--:|---|--:|--:|--:|--:|--:|--:|"]
    counted = []
    for f in floors_:
        m = f.measurement
        bits = units.number(m.weight_bits, 2).rstrip("0").rstrip(".")
        mark = " ‡" if f.beats else ""
        among = prompts_left_out(f)
        if among is not None:
            mark += " §"
            counted.append(f"{model_name(m.model)} on {m.hardware_short} with {m.users} users, {counted_range(among)}")
        lines.append(
            f"| {model_name(m.model)} | {m.weights} | {bits} | {m.hardware_short} | {m.users} | {m.lengths} "
            f"| {m.published} | {units.ms_significant(f.time)} | {units.percent(f.share)} {f.share_name}{mark} "
            f"| {order.index(m.source.key) + 1} |")
    first = {}
    for f in floors_:
        first.setdefault(f.measurement.source.key, f.measurement)
    sources = [f"{number}. [{first[key].source.title}]({first[key].source.url}), {first[key].source.publisher}: "
               f"{first[key].software}." for number, key in enumerate(order, start=1)]
    worked_out = {}   # the machines whose vendor prints only a round bandwidth, by the figure their memory's bus gives
    for f in floors_:
        if f.measurement.gpu.memory_bandwidth in FROM_THE_MEMORY_BUS:
            chip = f.measurement.hardware_short.split(" × ")[-1]
            worked_out.setdefault(f.measurement.gpu.memory_bandwidth, set()).add(chip)
    exact = ("" if not worked_out else
             "; a floor takes each machine's bandwidth from its data sheet or, where the vendor prints only a "
             "round figure, works it out from the memory's bus width and transfer rate: " + "; ".join(
                 f"{units.gb_per_s(bandwidth, 1 if bandwidth < 1e12 else 0)} for the {' and the '.join(sorted(names))}"
                 for bandwidth, names in sorted(worked_out.items())))
    left_out = ("" if not counted else
                "; § marks a row of many users whose floor leaves out the prompts of the requests that replace "
                "finished ones: counted, mixed into the steps or run apart, its share is " + "; ".join(counted))
    return ("\n".join(lines) + "\n\nThe floor is for one token, or for the whole prompt where the figure is a "
            "TTFT; ‡ marks a row faster than its floor, whose reason is in the data file" + left_out + exact
            + ".\n\nSources:\n\n" + "\n".join(sources))


SHARE_GUIDES = (0.5, 0.1)  # dotted lines on the chart: a dot on one ran at that share of peak
