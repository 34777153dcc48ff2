"""Published runs on more than one GPU, read from ``data/multi_gpu_runs.yaml``, and the floor
``parallel`` sets beside each.

``load()`` reads and checks the file and returns frozen ``MultiRun`` records in the file's order;
a row with a field missing or malformed, a model or GPU outside the catalogs, a link its GPU
cannot have, or degrees that do not multiply to its GPUs is refused, naming the row and the field.

``floor(run)`` is the least time the course's step model allows for the row's unit of work (one
user's token for a per-user figure, its first for a TTFT, one generated token of a copy of the model
for a throughput):
the spec sheet's peaks reached, nothing else counted (``parallel.FLOOR``), the all-reduces of
tensor parallelism added after each pass. Its ``share`` is floor ÷ measured, as in the reality
check: how close the run came to the floor.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

import numpy as np

from . import _check, _data, parallel, units
from ._kept import kept_arrays
from .calibration import NO_CLIENT_COSTS, unpaid
from . import runs as _runs
from .runs import _DATE, CatalogRow
from .hardware import CATALOG, INTERCONNECTS, Interconnect, link as _link
from .models import MODELS
from .reality import mean_cache, saturated_copy

DATA = Path(__file__).with_name("data") / "multi_gpu_runs.yaml"

# Each metric with the units a row may give it in; a time's unit with its seconds.
METRICS = {"output_throughput": ("tok/s",), "decode_rate": ("tok/s",), "itl_median": ("ms",),
           "tpot_median": ("ms", "ns"), "ttft_median": ("ms", "ns")}
SECONDS = {"ms": 1e-3, "ns": 1e-9}
TIMES = ("itl_median", "tpot_median", "ttft_median")
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
class MultiRun(CatalogRow):
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
    cache_bits: float = 16.0   # the cache's bits as the floor and the replay take them (``cache_format``)
    cache: str = "16-bit: not stated"   # and why

    @property
    def link(self) -> Interconnect:
        return INTERCONNECTS[self.interconnect]

    @property
    def group(self) -> parallel.GPUGroup:
        """One copy of the model: tensor × pipeline degree GPUs over the row's link."""
        return parallel.group(self.gpu, self.tensor_parallel * self.pipeline_parallel, self.interconnect)

    @property
    def table(self) -> tuple:
        """The table the row is one line of: its source, checkpoint, engine and version."""
        return (self.source.key, self.model_as_published, self.engine, self.version)

    @property
    def kv_cache_dtype(self) -> str | None:
        """The cache's format as published, in the engines' words: "fp8" for a stated 8-bit cache, else None."""
        return "fp8" if self.kv_bits == 8 else None

    @property
    def beyond_16_bit_cache(self) -> bool:
        """True for a saturated row of fixed lengths that passed more output tokens a second than its floor
        allows with a 16-bit cache: a 16-bit cache cannot have done it."""
        if self.metric != "output_throughput" or self.arrivals["kind"] != "all-at-once" or self.batch is not None \
                or self.prompt_tokens is None or self.reply_tokens is None:
            return False
        return self.value > floor(dataclasses.replace(self, cache_bits=16.0)).value

    @property
    def measured_time(self) -> float:
        """Seconds for the row's unit of work: one user's token (its first, for a TTFT), or one generated
        token of one copy."""
        if self.metric in TIMES:
            return self.value * SECONDS[self.unit]
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
    if entry["unit"] not in METRICS[entry["metric"]]:
        _fail(run_id, "unit", entry["unit"], f"one of {METRICS[entry['metric']]} for {entry['metric']}")
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
    return tuple(_with_cache(run, runs) for run in runs)


def _with_cache(run: MultiRun, runs) -> MultiRun:
    """The row with its cache's bits: as published where stated; else as ``calibration.cache_format`` judges
    the row's table (16 bits unless a row of it passed more than a 16-bit cache allows)."""
    from .calibration import cache_format
    if run.kv_bits is not None:
        return dataclasses.replace(run, cache_bits=run.kv_bits, cache=f"{run.kv_bits:g}-bit, as published")
    dtype, said = cache_format(run, runs)
    return dataclasses.replace(run, cache_bits=8.0 if dtype else 16.0, cache=said)


def load(path=DATA) -> tuple[MultiRun, ...]:
    """Every run in ``data/multi_gpu_runs.yaml`` (or ``path``), checked (parsed once for each content: ``_data.rows``)."""
    return _data.rows(path, parse)


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

    @property
    def value(self) -> float:
        """The floor in the row's own unit: the most tokens a second, or the fewest milliseconds a token."""
        return self.run.value / self.share if self.run.unit == "tok/s" else self.run.value * self.share


def _saturated(run: MultiRun, prompt, reply) -> tuple[float, float]:
    """One generated token of a copy that batches without limit (``reality.saturated_copy`` over the row's
    split and link), and the all-reduces' part of it."""
    time, ring = saturated_copy(run.shape, run.gpu_spec, run.compute, run.weight_bits, run.cache_bits, prompt, reply,
                                run.tensor_parallel, run.interconnect)
    return time / reply, ring / reply


def floor(run: MultiRun) -> Floor:
    """The row's floor. A TTFT: one pass over the prompt (one token where it is not fixed). Per-user
    figures (decode_rate, itl, tpot): one decode step of ``batch`` users
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
    if run.metric == "ttft_median":
        prompt = run.prompt_tokens or 1
        step = parallel.tensor_parallel_step(run.shape, run.group, prompt, 0, 1, run.weight_bits, run.cache_bits,
                                             compute=run.compute)
        return Floor(run, float(step.time), float(step.communication), f"one prompt of {prompt} tokens")
    cache = mean_cache(run.prompt_tokens, run.reply_tokens) if fixed else 0
    batch = run.batch or 1
    step = parallel.tensor_parallel_step(run.shape, run.group, 1, cache, batch, run.weight_bits, run.cache_bits,
                                         compute=run.compute)
    per = 1 / batch if run.metric == "output_throughput" else 1.0
    basis = f"decode step of {batch} over {cache} cached tokens"
    return Floor(run, float(step.time) * per, float(step.communication) * per, basis)


def floors(runs=None) -> list[Floor]:
    return [floor(run) for run in (load() if runs is None else runs)]


# -- the prediction by engine profile ---------------------------------------------------------------
# Each row is replayed by the profile of its engine (``engines.engine``), whose overheads were fitted on
# one-GPU runs only (``calibration``), and nothing here is fitted. Where the row's publisher has one-GPU runs
# in that fit too, the row takes the fit made without them (``calibration.held_out_overheads``), so that no
# publisher's own runs set the costs its rows are judged by; NVIDIA ran MLPerf's rows (``RAN_BY``).
# A row that names no release takes the profile given here: MLPerf's harness and the TensorRT-LLM overview
# run TensorRT-LLM, whose one profile is 1.0. gpt-fast has no profile: its rows keep their floor alone.
RELEASES = {"MLPerf Inference v4.1 submission (NVIDIA's harness)": "1.0",
            "performance overview of the v1.0 documentation": "1.0"}
RAN_BY = {"mlcommons": "nvidia"}
# The flags each source started its engine with, under the engine's own names, by (source, engine, arrivals):
# SGLang's benchmark_vllm_060/README.md starts SGLang with --disable-radix-cache (and --mem-frac 0.88 offline;
# at TP 4 its default is 0.85, the README says) and vLLM with --num-scheduler-steps 10 --max_model_len 4096;
# NVIDIA's MLPerf configs (closed/NVIDIA/configs/llama2-70b/{Server,Offline}/__init__.py at the rows' commit)
# set gpu_batch_size, the most sequences an engine runs at once: 1,024 and 896 for the H100's copies, 896 and
# 806 for the H200's, and their shared base (closed/NVIDIA/configs/llama2-70b/__init__.py) 4,096 tokens a step,
# max_num_tokens. Everything else is the engine's default (``engines.TABLE``).
FLAGS = {
    ("mlperf-v41-h100", "tensorrt-llm", "mlperf-server"): {"max_batch_size": 1024, "max_num_tokens": 4096},
    ("mlperf-v41-h100", "tensorrt-llm", "all-at-once"): {"max_batch_size": 896, "max_num_tokens": 4096},
    ("mlperf-v41-h200", "tensorrt-llm", "mlperf-server"): {"max_batch_size": 896, "max_num_tokens": 4096},
    ("mlperf-v41-h200", "tensorrt-llm", "all-at-once"): {"max_batch_size": 806, "max_num_tokens": 4096},
    ("sglang-vllm060", "sglang", "poisson"): {"disable_radix_cache": True, "mem_fraction_static": 0.85},
    ("sglang-vllm060", "sglang", "all-at-once"): {"disable_radix_cache": True, "mem_fraction_static": 0.88},
    ("sglang-vllm060", "vllm", "poisson"): {"num_scheduler_steps": 10, "max_model_len": 4096},
    ("sglang-vllm060", "vllm", "all-at-once"): {"num_scheduler_steps": 10, "max_model_len": 4096},
}
# Sources whose client calls the engine in its own process, with no API server in between, and takes token
# ids back without turning them into text (no streaming process: ``engines.Overheads.stream_time``): MLPerf's
# LoadGen harness, trtllm-bench (as calibration.IN_PROCESS_CLIENTS), LMDeploy's profile_generation.py: none of
# ``calibration.NO_CLIENT_COSTS`` is paid.
IN_PROCESS = ("mlperf-v41-h100", "mlperf-v41-h200", "trtllm-perf", "lmdeploy-a100")
# How MLPerf's server rows share their Poisson stream among the copies (simulator.ROUTERS): an assumption,
# as NVIDIA's harness does not say how it spreads requests over its copies.
ROUTER = "least-loaded"
# The least a server run of MLPerf may last: ten minutes (mlcommons/inference, mlperf.conf,
# ``*.Server.min_duration = 600000``, in milliseconds). NVIDIA's rows ran longer (``duration``).
MLPERF_LEAST_SECONDS = 600
_PRINTED_LINE = re.compile(r"^\s*([^:\n]*[A-Za-z][^:\n]*?)\s*:\s*([\d.]+)\s*$", re.M)


def printed(run: MultiRun) -> dict:
    """The figures the row's quote prints, by their names in lower case: a report's "name : value" lines,
    or the columns of a table's last row (asterisks of bold dropped)."""
    _check.instance("run", run, MultiRun)
    found = {name.lower(): float(value) for name, value in _PRINTED_LINE.findall(run.quote)}
    rows = [line for line in run.quote.splitlines() if line.startswith("|") and not set(line) <= set("|- ")]
    if len(rows) >= 2:
        head = [cell.strip().lower() for cell in rows[0].strip("|").split("|")]
        last = [cell.strip().strip("*") for cell in rows[-1].strip("|").split("|")]
        for name, cell in zip(head, last):
            if _NUMBER.fullmatch(cell):
                found[name] = float(cell.replace(",", ""))
    return found


def duration(run: MultiRun) -> float:
    """Seconds an MLPerf server row sent its Poisson stream: the ``min_duration (ms)`` its summary prints
    (so that the replies still running when the stream stops do not set the rate)."""
    figures = printed(run)
    if run.arrivals["kind"] != "mlperf-server" or "min_duration (ms)" not in figures:
        raise ValueError(f"run must be an MLPerf server row whose quote prints its min_duration, got {run.id!r}")
    return figures["min_duration (ms)"] / 1e3


def _requests_per_second(run: MultiRun):
    figures = printed(run)
    return next((figures[name] for name in ("completed samples per second", "samples per second",
                                             "request throughput") if name in figures), None)


def _mean_reply(run: MultiRun):
    """Output tokens ÷ requests where the row prints both rates, else None."""
    rate = _requests_per_second(run)
    tokens = printed(run).get("completed tokens per second") if run.metric != "output_throughput" else run.value
    return None if rate is None or tokens is None else tokens / rate


def published_in_flight(run: MultiRun) -> float:
    """Sequences a copy held at once, on average, by Little's law: completed requests a second × their mean
    latency, as the row's summary prints them, ÷ the copies."""
    figures = printed(run)
    if "mean latency (ns)" not in figures or _requests_per_second(run) is None:
        raise ValueError(f"run must print its completed samples a second and mean latency, got {run.id!r}")
    return _requests_per_second(run) * figures["mean latency (ns)"] * 1e-9 / run.replicas


def lengths(run: MultiRun, runs=None):
    """(fixed (prompt, reply) or None, a ``LengthDistribution`` or None, words saying where they come from):
    the row's own lengths where it fixed them; else ShareGPT's mean prompt (kwon2023paged) and a reply whose
    mean is output tokens ÷ requests, as the row prints them, or as another row of the same source and set
    prints them (``runs``: the rows to look in, ``load()`` if None); ShareGPT's mean reply where none does."""
    from .workload import SHAREGPT, LengthDistribution
    _check.instance("run", run, MultiRun)
    if run.prompt_tokens is not None and run.reply_tokens is not None:
        return (run.prompt_tokens, run.reply_tokens), None, f"fixed, {run.prompt_tokens:,} in, {run.reply_tokens:,} out"
    reply = _mean_reply(run)
    if reply is not None:
        return None, LengthDistribution("replay", SHAREGPT.mean_prompt, reply), \
            f"ShareGPT's mean prompt, a mean reply of {reply:.0f} from the printed rates"
    same = [other for other in (load() if runs is None else runs)
            if (other.source.key, other.dataset) == (run.source.key, run.dataset) and _mean_reply(other) is not None]
    if same:
        reply = _mean_reply(same[0])
        return None, LengthDistribution("replay", SHAREGPT.mean_prompt, reply), \
            f"ShareGPT's mean prompt, a mean reply of {reply:.0f} from {same[0].id}'s printed rates"
    return None, SHAREGPT, "ShareGPT's means"


@dataclass(frozen=True)
class Prediction:
    """A row as its engine's profile predicts it: the engine, the flags it was started with, the row's
    metric in the row's unit (``value``), where the lengths came from, the requests simulated, which fit the
    overheads come from, the median step's tokens and next tokens, and the sequences a copy held at once
    on average (Little's law over the replay)."""

    run: MultiRun
    engine: object
    flags: Mapping
    value: float
    lengths: str
    requests: int
    fit: str
    step_tokens: float
    step_decodes: float
    in_flight: float

    @property
    def ratio(self) -> float:
        """Published ÷ predicted: above 1, a rate beat the prediction, or a time was longer."""
        return self.run.value / self.value

    @property
    def one_gpu_bias(self) -> float | None:
        """``one_gpu_bias`` of the row."""
        return one_gpu_bias(self.run)

    @property
    def allreduce_gap(self) -> float:
        """For a time between one user's tokens: the seconds more each all-reduce of a step would have to take
        for the prediction to match the run, once the prediction is scaled by the bias the same publisher's
        one-GPU rows show (``one_gpu_bias``; 1 where there are none): (published − predicted × bias) ÷ a
        step's all-reduces (two a layer)."""
        if self.run.metric not in ("itl_median", "tpot_median"):
            raise ValueError(f"allreduce_gap needs a time between tokens, got {self.run.metric!r} in {self.run.id!r}")
        scale = SECONDS[self.run.unit]
        return (self.run.value - self.value * (self.one_gpu_bias or 1.0)) * scale / (
            parallel.ALLREDUCES_PER_LAYER * self.run.shape.layers)


def one_gpu_bias(run: MultiRun) -> float | None:
    """For a time between one user's tokens: published ÷ predicted TPOT, by the fit without their publisher
    (``calibration.checks``), of the one-GPU rows of the same source, engine and arrival rate; None where
    there are none. It is what the profile misses on one GPU, before any GPU is added."""
    from .calibration import checks
    _check.instance("run", run, MultiRun)
    if run.metric not in ("itl_median", "tpot_median"):
        return None
    same = [c.held_out["tpot"] for c in checks()
            if (c.run.source.key, c.run.engine, c.run.arrivals.kind, c.run.arrivals.rate) ==
            (run.source.key, run.engine, run.arrivals["kind"], run.arrivals["rate"]) and c.held_out["tpot"]]
    return float(np.median(same)) if same else None


def profile(run: MultiRun):
    """The engine profile that replays ``run`` (``engines.engine``), or None for an engine with none: its
    overheads from the fit without the runs of the row's publisher where that fit exists."""
    return _profile(run)[0]


def _profile(run: MultiRun):
    from . import engines
    from .calibration import held_out_overheads
    _check.instance("run", run, MultiRun)
    if run.engine not in engines.PROFILED:
        return None, None
    found = engines.engine(run.engine, RELEASES.get(run.version, run.version))
    publisher = RAN_BY.get(run.source.source_group, run.source.source_group)
    held = held_out_overheads(publisher)
    if held is None:
        return found, "every one-GPU run"
    return found.with_overheads(held[found.group]), f"the one-GPU runs but {publisher}'s"


# Each replay, kept in the process; the figure each row reads off it is kept on disk too (``_kept``), as the book's
# page and the tests replay the same rows.
_REPLAYED: dict = {}


def predict(run: MultiRun, requests=None, seed=0, runs=None) -> Prediction | None:
    """The row simulated as it was run, by its engine's profile (None where its engine has none): one copy
    of the model split over the row's tensor-parallel degree and link; requests all at once (as many as the
    run printed that it sent where its lengths are drawn, as ``calibration.replay`` sends them; else at least
    four times what a copy runs at once, so that its steady state sets the rate, and no more than the run
    printed that it sent), at the row's Poisson rate, or a fixed batch run to its end; MLPerf's server rows as Poisson
    arrivals at the row's rate for the row's ``duration``, shared among its copies by ``ROUTER``. A throughput
    counts every copy; a per-user figure is one user's. ``runs``: the rows ``lengths`` looks in. Rows run
    under the same conditions share one simulation."""
    from . import engines
    from .calibration import REPLAY_REQUESTS
    found, fit = _profile(run)
    if found is None:
        return None
    flags = dict(FLAGS.get((run.source.key, run.engine, run.arrivals["kind"]), {}))
    flags[engines.TENSOR_PARALLEL_FLAGS[run.engine]] = run.tensor_parallel
    if run.compute == "fp8" or run.weight_bits == 8:
        flags["quantization"] = "fp8"
    if run.cache_bits == 8:
        flags["kv_cache_dtype"] = "fp8"
    server = found.server(run.shape, run.gpu_spec, link=run.interconnect if run.tensor_parallel > 1 else None, **flags)
    if run.source.key in IN_PROCESS:
        server = unpaid(server, NO_CLIENT_COSTS)
    kind = run.arrivals["kind"]
    requests = REPLAY_REQUESTS if requests is None else int(_check.count("requests", requests, minimum=1))
    fixed, dist, said = lengths(run, runs)
    sent = printed(run).get("num prompts")
    if kind == "fixed-batch":
        count = run.batch or 1
    elif kind == "all-at-once" and fixed is None and sent is not None:
        count = int(sent)            # drawn lengths: the last, longest requests' share of the run depends on how many came before
    elif kind == "all-at-once":      # at most the requests the run printed that it sent
        count = int(min(max(requests, 4 * server.max_running), np.inf if sent is None else sent))
    elif kind == "mlperf-server":
        count = max(requests, round(run.arrivals["rate"] * duration(run)))
    else:
        count = requests
    key = (server, kind, run.arrivals["rate"], run.replicas, count, seed, fixed,
           None if dist is None else (dist.mean_prompt, dist.mean_reply))
    stem = run.metric.replace("_median", "_p50") if run.metric in TIMES else "output_throughput"
    replayed = {name: array.item() for name, array in kept_arrays(
        "run", ("replay", ROUTER, stem) + key, lambda: _replay(key, stem, run, server, kind, count, seed, fixed, dist)
    ).items()}
    if run.metric in TIMES:
        value = replayed["figure"] / SECONDS[run.unit]
    else:
        value = {"output_throughput": replayed["figure"] * replayed["copies"], "decode_rate": replayed["figure"]}[run.metric]
    return Prediction(run, found, MappingProxyType(flags), float(value), said, count, fit, replayed["tokens"],
                      replayed["decodes"], replayed["held"])


def _replay(key, stem, run: MultiRun, server, kind, count, seed, fixed, dist) -> dict:
    """``run`` replayed on ``server`` (once a process for each ``key``): the benchmark's figure ``stem``, the copies
    its throughput counts, the median step's tokens and sequences, and the requests held at once."""
    from .simulator import simulate, simulate_cluster
    from .workload import workload

    if key not in _REPLAYED:
        if fixed is not None:
            prompt, reply = np.full(count, fixed[0]), np.full(count, fixed[1])
        else:
            prompt, reply = dist.draw(count, seed, longest=server.window)
        if kind in ("poisson", "mlperf-server"):
            arrival = np.cumsum(np.random.default_rng(seed).exponential(1 / run.arrivals["rate"], count))
            arrival -= arrival[0]
        else:
            arrival = np.zeros(count)
        work = workload(arrival, prompt, reply, run.id)
        if kind == "mlperf-server":
            sim, copies = simulate_cluster(server, work, run.replicas, ROUTER), 1
        else:
            sim, copies = simulate(server, work), run.replicas
        bench = sim.benchmark()
        held = float(np.mean(bench.e2els)) * bench.request_throughput / (run.replicas if copies == 1 else 1)
        _REPLAYED[key] = (bench, copies, float(np.median(sim.step_tokens)), float(np.median(sim.step_decodes)), held)
    bench, copies, tokens, decodes, held = _REPLAYED[key]
    return {name: np.array(value) for name, value in {"figure": getattr(bench, stem), "copies": copies, "tokens": tokens,
                                                      "decodes": decodes, "held": held}.items()}


def predictions(runs=None, requests=None) -> list:
    """``predict`` for every row (None where its engine has no profile)."""
    runs = load() if runs is None else list(runs)
    return [predict(run, requests, runs=runs) for run in runs]


def step_bound(found: Prediction) -> str:
    """"compute" or "memory": what sets the time of the replay's median step at the floor, taken as that
    many tokens each over the row's mean cache (``parallel.tensor_parallel_step``)."""
    _check.instance("found", found, Prediction)
    run = found.run
    step = parallel.tensor_parallel_step(run.shape, run.group, 1, mean_cache(run.prompt_tokens, run.reply_tokens),
                                         max(1, round(found.step_tokens)), run.weight_bits, run.cache_bits,
                                         compute=run.compute)
    return str(step.compute.bound)


# The band a prediction is judged within: published ÷ predicted from 0.75 to 1.25, as the engines' page
# judges the one-GPU runs the fit never saw; and a wider one, 0.5 to 1.5.
BAND, WIDE_BAND = (0.75, 1.25), (0.5, 1.5)
# A replay whose median step carries fewer sequences than this is a small batch: a few users' tokens timed.
SMALL_BATCH = 32


def slower(found: Prediction) -> float:
    """How many times as long as predicted the row's unit of work took: published ÷ predicted for a time,
    predicted ÷ published for a rate."""
    _check.instance("found", found, Prediction)
    return found.ratio if found.run.metric in TIMES else 1 / found.ratio


def small_batch(found: Prediction) -> bool:
    """True for a per-user figure whose replay's median step carries fewer than ``SMALL_BATCH`` sequences."""
    _check.instance("found", found, Prediction)
    return found.run.metric in ("decode_rate", "itl_median", "tpot_median") and found.step_decodes < SMALL_BATCH


@dataclass(frozen=True)
class Summary:
    """Published ÷ predicted over the rows predicted: how many, the share within ``BAND`` and ``WIDE_BAND``,
    the lowest and highest, the median of the output throughputs; and for the per-user figures at a small
    batch (``small_batch``), how many, over how many engines, and the least and most times as long as
    predicted their tokens took (``slower``)."""

    rows: int
    within: float
    within_wide: float
    lowest: float
    highest: float
    throughput_median: float
    small_rows: int
    small_engines: int
    small_slower: tuple
    unpredicted: int


def summary(found=None) -> Summary:
    """``Summary`` of ``found`` (``predictions()`` if None; the rows without a profile counted apart)."""
    found = predictions() if found is None else list(found)
    made = [p for p in found if p is not None]
    if not made:
        raise ValueError("found must hold at least one prediction, got none")
    ratios = np.array([p.ratio for p in made])
    rates = [p.ratio for p in made if p.run.metric == "output_throughput"]
    small = [p for p in made if small_batch(p)]
    times = [slower(p) for p in small]
    return Summary(len(made), float(np.mean((ratios >= BAND[0]) & (ratios <= BAND[1]))),
                   float(np.mean((ratios >= WIDE_BAND[0]) & (ratios <= WIDE_BAND[1]))), float(ratios.min()),
                   float(ratios.max()), float(np.median(rates)) if rates else float("nan"), len(small),
                   len({p.run.engine for p in small}), (min(times), max(times)) if times else (float("nan"),) * 2,
                   len(found) - len(made))


# How the table names a version that is not a release.
VERSIONS_SHOWN = {"MLPerf Inference v4.1 submission (NVIDIA's harness)": "in MLPerf v4.1",
                  "performance overview of the v1.0 documentation": "1.0", "README as of its Llama 3.1 tables": ""}


def _engine_shown(run: MultiRun) -> str:
    from .calibration import ENGINE_NAMES
    version = VERSIONS_SHOWN.get(run.version, run.version)
    return f"{ENGINE_NAMES.get(run.engine, run.engine)} {version}".strip()


def _sent(run: MultiRun) -> str:
    a = run.arrivals
    if a["kind"] == "fixed-batch":
        return f"a batch of {run.batch}"
    if a["kind"] == "all-at-once":
        return "all at once"
    if a["kind"] == "mlperf-server":
        return f"{a['rate']:g} a second for {duration(run) / 60:.0f} min"
    return f"{a['rate']:g} a second"


def _lengths_shown(run: MultiRun) -> str:
    if run.prompt_tokens is not None and run.reply_tokens is not None:
        return f"{run.prompt_tokens:,} in, {run.reply_tokens:,} out"
    return {"sharegpt": "ShareGPT", "openorca": "OpenOrca"}.get(run.dataset, run.dataset)


def _shown(value, unit) -> str:
    """A rate in tokens a second; a time in milliseconds, whatever its unit."""
    if unit == "tok/s":
        return f"{value:,.0f} tok/s" if value >= 100 else f"{value:.1f} tok/s"
    return f"{value * SECONDS[unit] * 1e3:.1f} ms"


def markdown_table(runs=None, found=None) -> str:
    """Every row of ``runs`` as a table: what was run, the published figure, its floor (``floor``) and the
    share of it the run reached, the prediction by the engine's profile (``found``, as ``predictions(runs)``
    gives it; a dash where the engine has none), and published ÷ predicted."""
    runs = load() if runs is None else list(runs)
    found = predictions(runs) if found is None else list(found)
    if len(found) != len(runs):
        raise ValueError(f"found must hold one prediction (or None) a run, {len(runs)}, got {len(found)}")
    what = {"output_throughput": "output", "decode_rate": "one user", "itl_median": "ITL median",
            "tpot_median": "TPOT median", "ttft_median": "TTFT median"}
    lines = ["| engine | model, GPUs | split | lengths | requests | figure | published | floor | share of floor "
             "| predicted | published ÷ predicted |", "|---|---|---|---|---|---|--:|--:|--:|--:|--:|"]
    for run, made in zip(runs, found):
        lower = floor(run)
        split = f"TP {run.tensor_parallel}" + (f" × {run.replicas} copies" if run.replicas > 1 else "")
        predicted, ratio = ("–", "–") if made is None else (_shown(made.value, run.unit), f"{made.ratio:.2f}")
        lines.append(f"| {_engine_shown(run)} | {run.shape.name}, {run.gpus} × "
                     f"{run.gpu_spec.name} | {split} | {_lengths_shown(run)} | {_sent(run)} | {what[run.metric]} | "
                     f"{_shown(run.value, run.unit)} | {_shown(lower.value, run.unit)} | {units.percent(lower.share)} | "
                     f"{predicted} | {ratio} |")
    return "\n".join(lines)
