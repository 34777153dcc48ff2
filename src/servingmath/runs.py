"""Published serving runs on one GPU, read from ``data/serving_runs.yaml``.

Each run is one benchmark a publisher printed: the engine and its version, the model, the GPU,
the options the server was started with, the requests (dataset, lengths, how they arrived) and
the figures as printed, with the same figures converted to seconds and to rates a second. The
YAML file's header says what every field means. ``load_runs()`` reads and checks the file and
returns frozen ``Run`` records, in the file's order.

A run is refused, with the run and the field named, when a field is missing or malformed, when
its model or GPU is not in the course's catalogs, when it used more than one GPU, or when a
converted metric does not match the published text it came from.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from . import _data
from .hardware import CATALOG, GPU
from .models import MODELS, Model

DATA = Path(__file__).with_name("data") / "serving_runs.yaml"

ENGINES = ("vllm", "sglang", "tensorrt-llm", "lmdeploy", "tgi")
ARRIVALS = ("all-at-once", "poisson", "concurrency")
DATASETS = ("sharegpt", "random", "synthetic-chat")
PRECISIONS = ("bf16", "fp16", "fp8")
# What a source's throughputs divide their tokens by: the wall time, first request sent to last token
# (vLLM's benchmark_serving, SGLang's bench_serving), or the requests' latencies summed and divided by
# the concurrency, which counts every slot as busy until the end (inference-bench's reaggregate.py).
DURATIONS = ("wall", "latency-sum")

RATES = ("request_throughput", "output_throughput", "total_token_throughput")
LATENCIES = tuple(f"{name}_{stat}" for name in ("ttft", "tpot", "itl", "e2e")
                  for stat in ("mean", "median", "p95", "p99"))
METRICS = RATES + LATENCIES
# A published value's unit and the factor that brings it to seconds or to a rate a second.
UNITS = {"ms": 1e-3, "s": 1.0, "tok/s": 1.0, "req/s": 1.0}
_RATE_UNITS = {"request_throughput": ("req/s",), "output_throughput": ("tok/s",),
               "total_token_throughput": ("tok/s",)}

_SOURCE_FIELDS = ("title", "url", "publisher", "source_group", "bib")
_RUN_FIELDS = ("id", "source", "date", "quote", "model", "hf_id", "precision", "kv_cache_dtype",
               "gpu", "gpu_as_published", "gpu_form_factor_stated", "tensor_parallel", "engine",
               "version", "flags", "flags_as_published", "client", "dataset", "input_len",
               "output_len", "output_cap", "num_prompts", "total_input_tokens",
               "total_output_tokens", "arrivals", "published", "metrics", "published_other", "note")
_VERSION = re.compile(r"^\d+(\.\d+)*((rc|a|b)\d+)?(\.post\d+)?$")
_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")
_PUBLISHED = re.compile(r"^(\d[\d,]*(\.\d+)?) (\S+)$")


@dataclass(frozen=True)
class Source:
    """A document runs are read from, and the publisher it counts for."""

    key: str
    title: str
    url: str
    publisher: str
    source_group: str
    bib: str
    commit: str | None = None
    # The time its throughputs divide by (DURATIONS): the run's wall time, first request sent to last
    # token, as vLLM's and SGLang's benchmarks take it, unless the source says otherwise.
    duration: str = "wall"


@dataclass(frozen=True)
class Arrivals:
    """How the client sent its requests: all at once, Poisson at ``rate`` a second, or a closed
    loop keeping at most ``concurrency`` requests in flight."""

    kind: str
    rate: float | None = None
    concurrency: int | None = None


class CatalogRow:
    """What every published row reads from the course's catalog: its model's shape and its GPU."""

    model: str
    gpu: str

    @property
    def shape(self) -> Model:
        """The model's shape from the course's catalog."""
        return MODELS[self.model]

    @property
    def gpu_spec(self) -> GPU:
        """The GPU from the course's catalog."""
        return CATALOG[self.gpu]


@dataclass(frozen=True)
class Run(CatalogRow):
    """One published benchmark run on one GPU. Times are in seconds, rates per second."""

    id: str
    source: Source
    date: str
    quote: str
    model: str
    hf_id: str | None
    precision: str
    kv_cache_dtype: str | None
    gpu: str
    gpu_as_published: str
    gpu_form_factor_stated: bool
    tensor_parallel: int
    engine: str
    version: str
    flags: Mapping[str, Any]
    flags_as_published: str | None
    client: str
    dataset: str
    input_len: int | None
    output_len: int | None
    output_cap: int | None
    num_prompts: int | None
    total_input_tokens: int | None
    total_output_tokens: int | None
    arrivals: Arrivals
    published: Mapping[str, str]
    metrics: Mapping[str, float]
    published_other: Mapping[str, str]
    note: str | None

    @property
    def source_group(self) -> str:
        return self.source.source_group

    @property
    def version_key(self) -> tuple[int, ...]:
        """The version as numbers for ordering: "0.5.3.post3" -> (0, 5, 3)."""
        return version_key(self.version)

    def has(self, *names: str) -> bool:
        """Whether every named metric was published for this run."""
        return all(name in self.metrics for name in names)

    @property
    def table(self) -> tuple:
        """The table the run is one line of: its source, checkpoint, engine and version."""
        return (self.source.key, self.hf_id, self.engine, self.version)

    @property
    def beyond_16_bit_cache(self) -> bool:
        """True for a saturated run of fixed lengths that passed more output tokens a second than a 16-bit
        cache lets any server pass on its card (``reality.saturated_output_rate``): a 16-bit cache cannot
        have done it."""
        from .reality import saturated_output_rate
        if not (self.input_len and self.output_len and self.arrivals.kind == "all-at-once"
                and self.has("output_throughput")):
            return False
        weight_bits = 8 if self.precision == "fp8" else 16
        return self.metrics["output_throughput"] > saturated_output_rate(
            self.shape, self.gpu_spec, self.precision, weight_bits, 16, self.input_len, self.output_len)


def version_key(version: str) -> tuple[int, ...]:
    """A release's leading numbers, for ordering versions ("1.2.0rc1" -> (1, 2, 0))."""
    if not isinstance(version, str) or not _VERSION.match(version):
        raise ValueError(f"version must look like '0.6.0' or '1.2.0rc1', got {version!r}")
    return tuple(int(part) for part in re.match(r"^[\d.]+\d", version).group(0).split("."))


def published_value(text: str) -> tuple[float, str]:
    """A published figure "28,312 tok/s" as (28312.0, "tok/s")."""
    match = _PUBLISHED.match(text) if isinstance(text, str) else None
    if not match or match.group(3) not in UNITS:
        raise ValueError(f"a published figure must be a number and one of {list(UNITS)}, got {text!r}")
    return float(match.group(1).replace(",", "")), match.group(3)


# A record's checks, shared with the multi-GPU runs (``kind`` names the record in the message).
def _fail(run_id, name, value, wanted, kind="serving run"):
    raise ValueError(f"{kind} {run_id!r}: {name} must be {wanted}, got {value!r}")


def _whole(run_id, name, value, optional=True, minimum=1, kind="serving run"):
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        _fail(run_id, name, value, f"a whole number of at least {minimum}" + (" or null" if optional else ""), kind)
    return value


def _text(run_id, name, value, optional=False, kind="serving run"):
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        _fail(run_id, name, value, "a non-empty string" + (" or null" if optional else ""), kind)
    return value


def _arrivals(run_id, value) -> Arrivals:
    if not isinstance(value, dict) or set(value) != {"kind", "rate", "concurrency"}:
        _fail(run_id, "arrivals", value, "a mapping of kind, rate and concurrency")
    kind, rate, concurrency = value["kind"], value["rate"], value["concurrency"]
    if kind not in ARRIVALS:
        _fail(run_id, "arrivals.kind", kind, f"one of {list(ARRIVALS)}")
    if kind == "poisson":
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate < math.inf:
            _fail(run_id, "arrivals.rate", rate, "a finite number of requests a second above 0 for Poisson arrivals")
    elif rate is not None:
        _fail(run_id, "arrivals.rate", rate, f"null for {kind} arrivals")
    if kind == "concurrency":
        _whole(run_id, "arrivals.concurrency", concurrency, optional=False)
    elif concurrency is not None:
        _fail(run_id, "arrivals.concurrency", concurrency, f"null for {kind} arrivals")
    return Arrivals(kind, None if rate is None else float(rate), concurrency)


def _figures(run_id, published, metrics):
    """Check the converted metrics against the published text, figure by figure."""
    if not isinstance(published, dict) or not published:
        _fail(run_id, "published", published, "a non-empty mapping of metric to printed figure")
    if not isinstance(metrics, dict) or set(metrics) != set(published):
        _fail(run_id, "metrics", metrics, f"the same metrics as published ({sorted(published)})")
    for name, text in published.items():
        if name not in METRICS:
            _fail(run_id, "published", name, f"one of {list(METRICS)}")
        try:
            number, unit = published_value(text)
        except ValueError as error:
            raise ValueError(f"serving run {run_id!r}: published.{name}: {error}") from None
        if unit not in _RATE_UNITS.get(name, ("ms", "s")):
            _fail(run_id, f"published.{name}", text, f"in {' or '.join(_RATE_UNITS.get(name, ('ms', 's')))}")
        value = metrics[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
            _fail(run_id, f"metrics.{name}", value, "a finite number above 0")
        if not math.isclose(value, number * UNITS[unit], rel_tol=1e-9):
            _fail(run_id, f"metrics.{name}", value, f"{text} converted ({number * UNITS[unit]!r})")
    return MappingProxyType(dict(published)), MappingProxyType({k: float(v) for k, v in metrics.items()})


def number_text(text: str) -> str:
    """The number of a published figure as it was printed ("28,312 tok/s" -> "28,312")."""
    published_value(text)
    return text.split(" ")[0]


def _source(key, entry) -> Source:
    if not isinstance(entry, dict):
        raise ValueError(f"source {key!r} must be a mapping, got {entry!r}")
    for name in _SOURCE_FIELDS:
        if not isinstance(entry.get(name), str) or not entry[name].strip():
            raise ValueError(f"source {key!r}: {name} must be a non-empty string, got {entry.get(name)!r}")
    if not entry["url"].startswith("https://"):
        raise ValueError(f"source {key!r}: url must start with https://, got {entry['url']!r}")
    duration = entry.get("duration", "wall")
    if duration not in DURATIONS:
        raise ValueError(f"source {key!r}: duration must be one of {DURATIONS}, got {duration!r}")
    return Source(key, entry["title"], entry["url"], entry["publisher"], entry["source_group"],
                  entry["bib"], entry.get("commit"), duration)


def _run(entry, sources) -> Run:
    if not isinstance(entry, dict):
        raise ValueError(f"a serving run must be a mapping, got {entry!r}")
    run_id = entry.get("id")
    if not isinstance(run_id, str) or not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", run_id):
        raise ValueError(f"a serving run's id must be lower-case letters, digits, dots and dashes, got {run_id!r}")
    missing = [name for name in _RUN_FIELDS if name not in entry]
    extra = sorted(set(entry) - set(_RUN_FIELDS))
    if missing or extra:
        raise ValueError(f"serving run {run_id!r}: missing fields {missing}, unknown fields {extra}")
    e = entry
    if e["source"] not in sources:
        _fail(run_id, "source", e["source"], f"one of {sorted(sources)}")
    if not isinstance(e["date"], str) or not _DATE.match(e["date"]):
        _fail(run_id, "date", e["date"], "a string YYYY, YYYY-MM or YYYY-MM-DD")
    if e["model"] not in MODELS:
        _fail(run_id, "model", e["model"], f"a key of servingmath.models.MODELS ({list(MODELS)})")
    if e["gpu"] not in CATALOG:
        _fail(run_id, "gpu", e["gpu"], f"a key of servingmath.hardware.CATALOG ({list(CATALOG)})")
    if e["tensor_parallel"] != 1 or isinstance(e["tensor_parallel"], bool):
        _fail(run_id, "tensor_parallel", e["tensor_parallel"], "1 (runs here are served by one GPU)")
    if not isinstance(e["gpu_form_factor_stated"], bool):
        _fail(run_id, "gpu_form_factor_stated", e["gpu_form_factor_stated"], "true or false")
    if not e["gpu_form_factor_stated"] and "SXM" not in (e["note"] or ""):
        _fail(run_id, "note", e["note"], "a note saying which card was taken where the form factor is not stated")
    for name, allowed in (("engine", ENGINES), ("dataset", DATASETS), ("precision", PRECISIONS)):
        if e[name] not in allowed:
            _fail(run_id, name, e[name], f"one of {list(allowed)}")
    if not isinstance(e["version"], str) or not _VERSION.match(e["version"]):
        _fail(run_id, "version", e["version"], "a release as the source states it, like '0.6.0' or '1.2.0rc1'")
    for name in ("flags", "published_other"):
        if not isinstance(e[name], dict):
            _fail(run_id, name, e[name], "a mapping")
    for label, text in e["published_other"].items():
        _text(run_id, f"published_other[{label!r}]", text)
    for name in ("input_len", "output_len", "output_cap", "num_prompts", "total_input_tokens", "total_output_tokens"):
        _whole(run_id, name, e[name])
    published, metrics = _figures(run_id, e["published"], e["metrics"])
    if sources[e["source"]].duration == "latency-sum" and (e["arrivals"] or {}).get("kind") != "concurrency":
        _fail(run_id, "arrivals", e["arrivals"], "a closed loop (kind: concurrency), since its source divides "
              "by the summed latencies over the concurrency")
    quote = _text(run_id, "quote", e["quote"])
    printed = [number_text(text) for text in published.values()] + [str(v) for v in e["published_other"].values()]
    for number in printed:
        if not re.search(rf"(?<![\d.]){re.escape(number)}(?!\d)", quote):
            _fail(run_id, "quote", quote[:60] + "...", f"text containing the published figure {number!r}")
    return Run(
        id=run_id, source=sources[e["source"]], date=e["date"], quote=quote,
        model=e["model"], hf_id=_text(run_id, "hf_id", e["hf_id"], optional=True), precision=e["precision"],
        kv_cache_dtype=_text(run_id, "kv_cache_dtype", e["kv_cache_dtype"], optional=True), gpu=e["gpu"],
        gpu_as_published=_text(run_id, "gpu_as_published", e["gpu_as_published"]),
        gpu_form_factor_stated=e["gpu_form_factor_stated"], tensor_parallel=1, engine=e["engine"],
        version=e["version"], flags=MappingProxyType(dict(e["flags"])),
        flags_as_published=_text(run_id, "flags_as_published", e["flags_as_published"], optional=True),
        client=_text(run_id, "client", e["client"]), dataset=e["dataset"], input_len=e["input_len"],
        output_len=e["output_len"], output_cap=e["output_cap"], num_prompts=e["num_prompts"],
        total_input_tokens=e["total_input_tokens"], total_output_tokens=e["total_output_tokens"],
        arrivals=_arrivals(run_id, e["arrivals"]), published=published, metrics=metrics,
        published_other=MappingProxyType(dict(e["published_other"])),
        note=_text(run_id, "note", e["note"], optional=True))


def parse(document) -> tuple[Run, ...]:
    """Runs from the YAML document's ``sources`` and ``runs``, checked; ids must be unique."""
    if not isinstance(document, dict) or not isinstance(document.get("sources"), dict) \
            or not isinstance(document.get("runs"), list):
        raise ValueError("the serving runs document must have a 'sources' mapping and a 'runs' list")
    sources = {key: _source(key, entry) for key, entry in document["sources"].items()}
    runs = tuple(_run(entry, sources) for entry in document["runs"])
    seen = set()
    for run in runs:
        if run.id in seen:
            raise ValueError(f"serving run id {run.id!r} appears more than once")
        seen.add(run.id)
    return runs


def load_runs(path=DATA) -> tuple[Run, ...]:
    """Every published serving run in ``data/serving_runs.yaml`` (or ``path``), checked (parsed once for each content: ``_data.rows``)."""
    return _data.rows(path, parse)


def by_source_group(runs) -> dict[str, tuple[Run, ...]]:
    """Runs grouped by publisher, for a fit that holds one publisher out at a time."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run.source_group, []).append(run)
    return {group: tuple(members) for group, members in groups.items()}
