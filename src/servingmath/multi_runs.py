"""Published runs on more than one GPU, read from ``data/multi_gpu_runs.yaml``, and the floor
``parallel`` sets beside each.

``load()`` reads and checks the file and returns frozen ``MultiRun`` records in the file's order;
a row with a field missing or malformed, a model or GPU outside the catalogs, a link its GPU
cannot have, or degrees that do not multiply to its GPUs is refused, naming the row and the field.

``floor(run)`` is the least time the course's step model allows for the row's unit of work (one
user's token for a per-user figure, one generated token of a copy of the model for a throughput):
the spec sheet's peaks reached, nothing else counted (``parallel.FLOOR``), the all-reduces of
tensor parallelism added after each pass. Its ``share`` is floor ÷ measured, as in the reality
check: how close the run came to the floor.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

import numpy as np
import yaml

from . import _check, parallel
from . import runs as _runs
from .runs import _DATE
from .hardware import CATALOG, GPU, INTERCONNECTS, Interconnect, link as _link
from .models import MODELS, Model
from .reality import mean_cache, saturated_request
from .roofline import pass_time

DATA = Path(__file__).with_name("data") / "multi_gpu_runs.yaml"

METRICS = {"output_throughput": "tok/s", "decode_rate": "tok/s", "itl_median": "ms", "tpot_median": "ms"}
ARRIVALS = ("all-at-once", "poisson", "fixed-batch", "mlperf-server")
DATASETS = ("random", "sharegpt", "openorca", "short-prompt")
COMPUTE = ("16-bit", "fp8")
_SOURCE_FIELDS = ("title", "url", "commit", "publisher", "source_group", "bib")
_RUN_FIELDS = ("id", "source", "date", "quote", "model", "model_as_published", "precision", "weight_bits",
               "kv_bits", "compute", "gpu", "gpu_as_published", "gpus", "tensor_parallel", "pipeline_parallel",
               "replicas", "interconnect", "interconnect_as_published", "engine", "version", "dataset",
               "prompt_tokens", "reply_tokens", "batch", "arrivals", "metric", "value", "unit", "note")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


@dataclass(frozen=True)
class Source:
    key: str
    title: str
    url: str
    commit: str | None
    publisher: str
    source_group: str
    bib: str


@dataclass(frozen=True)
class MultiRun:
    """One published figure of a run on several GPUs, with its conditions."""

    id: str
    source: Source
    date: str
    quote: str
    model: str
    model_as_published: str
    precision: str
    weight_bits: float
    kv_bits: float | None
    compute: str
    gpu: str
    gpu_as_published: str
    gpus: int
    tensor_parallel: int
    pipeline_parallel: int
    replicas: int
    interconnect: str
    interconnect_as_published: str | None
    engine: str
    version: str
    dataset: str
    prompt_tokens: int | None
    reply_tokens: int | None
    batch: int | None
    arrivals: Mapping
    metric: str
    value: float
    unit: str
    note: str

    @property
    def shape(self) -> Model:
        return MODELS[self.model]

    @property
    def gpu_spec(self) -> GPU:
        return CATALOG[self.gpu]

    @property
    def link(self) -> Interconnect:
        return INTERCONNECTS[self.interconnect]

    @property
    def group(self) -> parallel.GPUGroup:
        """One copy of the model: tensor × pipeline degree GPUs over the row's link."""
        return parallel.group(self.gpu, self.tensor_parallel * self.pipeline_parallel, self.interconnect)

    @property
    def cache_bits(self) -> float:
        """The cache's bits: as stated, else the least the weights' format stores it in (8 for FP8, else 16)."""
        if self.kv_bits is not None:
            return self.kv_bits
        return 8.0 if self.compute == "fp8" else 16.0

    @property
    def measured_time(self) -> float:
        """Seconds for the row's unit of work: one user's token, or one generated token of one copy."""
        if self.metric in ("itl_median", "tpot_median"):
            return self.value * 1e-3
        if self.metric == "decode_rate":
            return 1 / self.value
        return self.replicas / self.value


# The record checks of the one-GPU runs, naming these records in their messages.
_fail = partial(_runs._fail, kind="multi-GPU run")
_whole = partial(_runs._whole, optional=False, kind="multi-GPU run")
_text = partial(_runs._text, kind="multi-GPU run")


def quoted_numbers(quote: str) -> list[float]:
    """Every number in a quote, thousands separators dropped."""
    return [float(match.replace(",", "")) for match in _NUMBER.findall(quote)]


def _run(entry, sources) -> MultiRun:
    run_id = entry.get("id") if isinstance(entry, dict) else None
    if not isinstance(entry, dict):
        raise ValueError(f"each run must be a mapping of fields, got {entry!r}")
    missing = [name for name in _RUN_FIELDS if name not in entry]
    extra = sorted(set(entry) - set(_RUN_FIELDS))
    if missing or extra:
        _fail(run_id, "its fields", sorted(entry), f"exactly {list(_RUN_FIELDS)} (missing {missing}, "
                                                         f"unknown {extra})")
    _text(run_id, "id", run_id)
    if entry["source"] not in sources:
        _fail(run_id, "source", entry["source"], f"one of {sorted(sources)}")
    if not isinstance(entry["date"], str) or not _DATE.match(entry["date"]):
        _fail(run_id, "date", entry["date"], "YYYY, YYYY-MM or YYYY-MM-DD as a string")
    for name in ("quote", "model_as_published", "precision", "gpu_as_published", "engine", "version", "note"):
        _text(run_id, name, entry[name])
    _text(run_id, "interconnect_as_published", entry["interconnect_as_published"], optional=True)
    if entry["model"] not in MODELS:
        _fail(run_id, "model", entry["model"], "a key of servingmath.models.MODELS")
    if entry["gpu"] not in CATALOG:
        _fail(run_id, "gpu", entry["gpu"], "a key of servingmath.hardware.CATALOG")
    if entry["interconnect"] not in INTERCONNECTS:
        _fail(run_id, "interconnect", entry["interconnect"], "a key of servingmath.hardware.INTERCONNECTS")
    try:
        _link(entry["gpu"], entry["interconnect"])
    except ValueError as error:
        _fail(run_id, "interconnect", entry["interconnect"], f"a link its GPU can have ({error})")
    for name in ("weight_bits",):
        if isinstance(entry[name], bool) or not isinstance(entry[name], (int, float)) or entry[name] <= 0:
            _fail(run_id, name, entry[name], "a positive number")
    if entry["kv_bits"] is not None and (isinstance(entry["kv_bits"], bool) or not isinstance(entry["kv_bits"], (int, float))
                                         or entry["kv_bits"] <= 0):
        _fail(run_id, "kv_bits", entry["kv_bits"], "a positive number or null")
    if entry["compute"] not in COMPUTE:
        _fail(run_id, "compute", entry["compute"], f"one of {COMPUTE}")
    gpus = _whole(run_id, "gpus", entry["gpus"], minimum=2)
    tp = _whole(run_id, "tensor_parallel", entry["tensor_parallel"])
    pp = _whole(run_id, "pipeline_parallel", entry["pipeline_parallel"])
    replicas = _whole(run_id, "replicas", entry["replicas"])
    if tp * pp * replicas != gpus:
        _fail(run_id, "gpus", gpus, f"replicas × tensor_parallel × pipeline_parallel = {replicas * tp * pp}")
    try:
        parallel.check_tensor_parallel(MODELS[entry["model"]], tp)
    except ValueError as error:
        _fail(run_id, "tensor_parallel", tp, f"a degree the model splits into ({error})")
    if entry["dataset"] not in DATASETS:
        _fail(run_id, "dataset", entry["dataset"], f"one of {DATASETS}")
    prompt = _whole(run_id, "prompt_tokens", entry["prompt_tokens"], optional=True)
    reply = _whole(run_id, "reply_tokens", entry["reply_tokens"], optional=True)
    batch = _whole(run_id, "batch", entry["batch"], optional=True)
    arrivals = entry["arrivals"]
    if not isinstance(arrivals, dict) or set(arrivals) != {"kind", "rate", "concurrency"} \
            or arrivals["kind"] not in ARRIVALS:
        _fail(run_id, "arrivals", arrivals, f"{{kind: one of {ARRIVALS}, rate, concurrency}}")
    if arrivals["kind"] in ("poisson", "mlperf-server") and not isinstance(arrivals["rate"], (int, float)):
        _fail(run_id, "arrivals.rate", arrivals["rate"], "requests a second for arrivals at a rate")
    if entry["metric"] not in METRICS:
        _fail(run_id, "metric", entry["metric"], f"one of {sorted(METRICS)}")
    if entry["unit"] != METRICS[entry["metric"]]:
        _fail(run_id, "unit", entry["unit"], f"{METRICS[entry['metric']]!r} for {entry['metric']}")
    value = entry["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        _fail(run_id, "value", value, "a positive number")
    if not any(np.isclose(value, number, rtol=0, atol=1e-9) for number in quoted_numbers(entry["quote"])):
        _fail(run_id, "value", value, "a number printed in its quote")
    if entry["metric"] in ("decode_rate",) and batch != 1:
        _fail(run_id, "batch", batch, "1 for a decode_rate (one user's tokens a second)")
    return MultiRun(
        id=run_id, source=sources[entry["source"]], date=entry["date"], quote=entry["quote"], model=entry["model"],
        model_as_published=entry["model_as_published"], precision=entry["precision"],
        weight_bits=float(entry["weight_bits"]),
        kv_bits=None if entry["kv_bits"] is None else float(entry["kv_bits"]), compute=entry["compute"],
        gpu=entry["gpu"], gpu_as_published=entry["gpu_as_published"], gpus=gpus, tensor_parallel=tp,
        pipeline_parallel=pp, replicas=replicas, interconnect=entry["interconnect"],
        interconnect_as_published=entry["interconnect_as_published"], engine=entry["engine"],
        version=str(entry["version"]), dataset=entry["dataset"], prompt_tokens=prompt, reply_tokens=reply,
        batch=batch, arrivals=MappingProxyType(dict(arrivals)), metric=entry["metric"], value=float(value),
        unit=entry["unit"], note=entry["note"])


def parse(document) -> tuple[MultiRun, ...]:
    """Check a parsed YAML document and return its runs."""
    if not isinstance(document, dict) or set(document) != {"sources", "runs"}:
        raise ValueError(f"the document must have exactly 'sources' and 'runs', got {document!r:.80}")
    sources = {}
    for key, entry in document["sources"].items():
        if not isinstance(entry, dict) or set(entry) != set(_SOURCE_FIELDS):
            raise ValueError(f"source {key!r} must have exactly {list(_SOURCE_FIELDS)}, got {entry!r}")
        for name in ("title", "url", "publisher", "source_group", "bib"):
            _text(key, name, entry[name])
        sources[key] = Source(key=key, **entry)
    runs = tuple(_run(entry, sources) for entry in document["runs"])
    ids = [run.id for run in runs]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"run ids must be unique, got {duplicates} more than once")
    return runs


def load(path=DATA) -> tuple[MultiRun, ...]:
    with open(path, encoding="utf-8") as handle:
        return parse(yaml.safe_load(handle))


# -- the floor ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Floor:
    """A run beside the least time ``parallel``'s step model allows for its unit of work."""

    run: MultiRun
    time: float              # seconds, at the floor
    communication: float     # seconds of it spent in all-reduces
    basis: str               # what the floor counted

    @property
    def share(self) -> float:
        """Floor ÷ measured: 1 would be a run at the spec sheet's peaks with nothing else spent."""
        return self.time / self.run.measured_time


def _saturated(run: MultiRun, prompt, reply) -> tuple[float, float]:
    """One generated token of a copy that batches without limit: each GPU's share of a request's
    arithmetic and cache traffic, weights' reads shared away, and the bandwidth part of the
    all-reduces of every token of the request (their latency shared away too), per reply token."""
    model, grp, tp = run.shape, run.group, run.tensor_parallel
    flops, moved = saturated_request(model, run.weight_bits, run.cache_bits, prompt, reply)
    timing = pass_time(flops / tp, moved * parallel.kv_share(model, tp), grp.gpu.flops(run.compute),
                       grp.gpu.memory_bandwidth, parallel.FLOOR)
    message = parallel.activation_bytes(model, prompt + reply)
    ring = float(parallel.ring_time(message, tp, grp.link)) * parallel.ALLREDUCES_PER_LAYER * model.layers
    return (float(timing.time) + ring) / reply, ring / reply


def floor(run: MultiRun) -> Floor:
    """The row's floor. Per-user figures (decode_rate, itl, tpot): one decode step of ``batch`` users
    (one where the batch is not fixed) over the mean cache (prompt + half the reply; empty where the
    lengths are not fixed), ``parallel.tensor_parallel_step``. Throughputs with a fixed batch: that
    step ÷ the batch. Throughputs of a saturated server: ``_saturated``, with a 1-token reply and no
    prompt where the lengths are not fixed (each token's own arithmetic, the least any request costs)."""
    _check.instance("run", run, MultiRun)
    if run.pipeline_parallel != 1:
        raise ValueError(f"run must be tensor-parallel only for this floor, got pipeline_parallel "
                         f"{run.pipeline_parallel} in {run.id!r}")
    fixed = run.prompt_tokens is not None and run.reply_tokens is not None
    if run.metric == "output_throughput" and run.batch is None:
        prompt, reply = (run.prompt_tokens, run.reply_tokens) if fixed else (0, 1)
        time, ring = _saturated(run, prompt, reply)
        basis = "saturated copy, " + (f"{prompt} + {reply} tokens" if fixed else "lengths not fixed: each token's own work")
        return Floor(run, time, ring, basis)
    cache = mean_cache(run.prompt_tokens, run.reply_tokens) if fixed else 0
    batch = run.batch or 1
    step = parallel.tensor_parallel_step(run.shape, run.group, 1, cache, batch, run.weight_bits, run.cache_bits,
                                         compute=run.compute)
    per = 1 / batch if run.metric == "output_throughput" else 1.0
    basis = f"decode step of {batch} over {cache} cached tokens"
    return Floor(run, float(step.time) * per, float(step.communication) * per, basis)


def floors(runs=None) -> list[Floor]:
    return [floor(run) for run in (load() if runs is None else runs)]
