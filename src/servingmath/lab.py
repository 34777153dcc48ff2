"""The lab: measure this machine, then time a small Llama-shaped model on it.

Two measurements give a machine its roofline. Memory bandwidth: the bytes of a float32
matrix far larger than the caches, divided by the time to multiply a vector by it
(every number is read once and used once, so the read sets the time, exactly as in a
decode step). Arithmetic: the FLOPs of a float32 matrix product divided by its time.
``this_machine`` files the two as a catalog-style ``GPU`` entry, so the package's
roofline (``servingmath.serving.step``) predicts passes on it as it does on an H100.

``Decoder`` is a decoder-only transformer with Llama's structure (RMSNorm, rotary
positions, grouped-query attention over a KV cache, SwiGLU) and random weights. Its
shape is a ``servingmath.Model``, so ``forward_pass`` counts the FLOPs and bytes of the
very passes timed here. The same forward code runs on numpy or, through
``servingmath.lab_torch``, on PyTorch: the decoder takes its array operations from an
``ops`` object (``NUMPY`` here).

Every measurement runs on a stated number of threads (``usable_cpus()`` unless told), so
that a library does not start more threads than the cores the process may use.

How long the measurements run is set by a mode, ``"quick"`` (seconds; what CI runs) or
``"full"`` (minutes; a bigger model and longer prompts). ``settings(mode)`` returns the
mode's figures; the environment variable ``SERVINGMATH_LAB`` overrides the mode asked
for, and without it a set ``CI`` variable means quick.
"""
from __future__ import annotations

import dataclasses
import datetime
import math
import os
import re
import statistics
import time
from pathlib import Path
from typing import Callable

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from . import _check
from .hardware import CATALOG, GPU
from .memory import weight_bytes as sm_weight_bytes
from .models import Model
from .roofline import Assumptions
from .serving import decode_step, step

# --- the machine ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Timing:
    """The seconds of each run of one measurement."""

    seconds: tuple

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


@dataclasses.dataclass(frozen=True)
class Rate:
    """Work done (bytes read, or FLOPs) and the timed runs that did it."""

    work: float
    timing: Timing

    @property
    def per_second(self) -> float:
        """The rate reported: work ÷ the median run's seconds."""
        return self.work / self.timing.median

    @property
    def runs(self) -> np.ndarray:
        """The rate of every run, to show how much they spread."""
        return self.work / np.asarray(self.timing.seconds)

    @property
    def best(self) -> float:
        """The fastest run's rate: what the machine demonstrably reaches, so the ceiling a floor rests on.

        A run can be slowed (another program, a page fault, a clock still rising) but not sped up past
        the hardware, so the best run is the nearest to the machine's limit; the median is the typical one.
        """
        return float(self.runs.max())


def time_runs(action: Callable[[], object], repeats, enough=math.inf, synchronize: Callable | None = None) -> Timing:
    """Run ``action`` ``repeats`` times (fewer once ``enough`` seconds are spent, at least once) and time each run.

    ``synchronize`` waits for work queued on an accelerator, so that a run's time
    includes it; numpy needs none.
    """
    repeats = int(_check.count("repeats", repeats, minimum=1))
    enough = _check.number("enough", enough, above=0, allow_inf=True)
    seconds = []
    while len(seconds) < repeats and sum(seconds) < enough:
        start = time.perf_counter()
        action()
        if synchronize is not None:
            synchronize()
        seconds.append(time.perf_counter() - start)
    return Timing(tuple(seconds))


def measure_bandwidth(read_bytes=256e6, repeats=5, ops=None, threads=None) -> Rate:
    """Bytes a second this machine reads from memory, streaming over ``read_bytes`` of float32.

    The pass multiplies a vector by a matrix of that size: each number is read once and
    does one multiply-add, far too little arithmetic to keep the processor busy, so the
    time is the time to read. It is the read a decode step makes of each weight matrix.
    ``threads`` (all usable cores if None) is how many threads the library may use.
    """
    ops = NUMPY if ops is None else ops
    read_bytes = _check.number("read_bytes", read_bytes, above=0)
    columns = 4096
    rows = max(1, int(read_bytes // (ops.bytes_per_number * columns)))
    matrix = ops.full((rows, columns), 1.0)
    vector = ops.full((rows,), 1.0)

    def read():
        return vector @ matrix

    with ops.threads(_thread_count(threads)):
        read()  # the first run maps the pages and wakes the threads: not timed
        timing = time_runs(read, repeats, synchronize=ops.synchronize)
    return Rate(rows * columns * ops.bytes_per_number, timing)


def measure_matmul_flops(size=1024, repeats=5, ops=None, threads=None) -> Rate:
    """FLOP/s of a ``size`` × ``size`` matrix product: 2 × size³ FLOPs (a multiply and an add each)."""
    ops = NUMPY if ops is None else ops
    size = int(_check.count("size", size, minimum=1))
    rng = np.random.default_rng(0)
    left = ops.asarray(rng.standard_normal((size, size), dtype=np.float32))
    right = ops.asarray(rng.standard_normal((size, size), dtype=np.float32))

    def multiply():
        return left @ right

    with ops.threads(_thread_count(threads)):
        multiply()
        timing = time_runs(multiply, repeats, synchronize=ops.synchronize)
    return Rate(2 * size**3, timing)


def machine_memory() -> int:
    """Bytes of main memory: from ``os.sysconf`` where the system has it, else psutil."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # Windows has no sysconf
        import psutil

        return psutil.virtual_memory().total


_CONTAINER_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def memory_limit() -> int:
    """Bytes this process may use: the machine's memory, or a container's limit where lower (Binder's is 2 GB)."""
    limit = machine_memory()
    for path in _CONTAINER_LIMITS:
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            limit = min(limit, int(text))
    return limit


# Where the operating system does not say how large the last-level cache is, the lab assumes
# one as large as the largest on common servers (AMD EPYC 9005: up to 512 MB of L3), so that
# what it reads is sure to come from memory and not from the cache.
ASSUMED_LAST_LEVEL_CACHE = 512 * 2**20
# The lab reads at least this many times the last-level cache, so that almost nothing it reads
# is still there from the step before.
CACHE_MARGIN = 2
_CPU_DIR = Path("/sys/devices/system/cpu")


def _cache_size(text) -> int:
    """``"307200K"`` (sysfs) or ``"32 MiB"`` → bytes."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(?:i?B)?\s*", text)
    if not match:
        raise ValueError(f"cache size must read like 307200K or 32 MiB, got {text!r}")
    return int(match.group(1)) * 1024 ** " KMG".index(match.group(2) or " ")


def last_level_cache(cpu_dir=_CPU_DIR) -> tuple[int, str]:
    """Bytes of this machine's last-level cache, every instance of it together, and where that came from.

    Linux's sysfs lists each processor's caches (level, size, the processors sharing it);
    the highest level's distinct instances are added up. Without sysfs, ``lscpu``'s total;
    without either, ``ASSUMED_LAST_LEVEL_CACHE``.
    """
    instances: dict[str, tuple[int, int]] = {}
    for index in sorted(Path(cpu_dir).glob("cpu[0-9]*/cache/index[0-9]*")):
        try:
            level = int((index / "level").read_text())
            if (index / "type").read_text().strip() == "Instruction":
                continue
            size = _cache_size((index / "size").read_text())
            shared = (index / "shared_cpu_list").read_text().strip()
        except (OSError, ValueError):
            continue
        instances[f"{level}:{shared}"] = (level, size)
    if instances:
        top = max(level for level, _ in instances.values())
        return sum(size for level, size in instances.values() if level == top), "sysfs"
    try:
        import subprocess

        listing = subprocess.run(["lscpu", "-B"], capture_output=True, text=True, timeout=5).stdout
        sizes = {int(level): int(size) for level, size in re.findall(r"^L(\d)\w? cache:\s+(\d+)", listing, re.M)}
        if sizes:
            return sizes[max(sizes)], "lscpu"
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    return ASSUMED_LAST_LEVEL_CACHE, "assumed"


def usable_cpus() -> int:
    """Processor cores this process may use: those it may run on, fewer where a container's quota says so.

    A library left to itself starts a thread for every core it sees; in a container
    allowed one core of a large machine (Binder, say) those threads queue for that one
    core and every short operation waits for them.
    """
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        if quota != "max":
            cpus = min(cpus, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass
    return cpus


def _thread_count(threads):
    return usable_cpus() if threads is None else threads


def this_machine(bandwidth, flops, memory_bytes=None, name=None, measured_format="fp32") -> GPU:
    """A catalog-style entry for the machine measured: its bandwidth, its FLOP/s, its memory.

    The course's roofline reads ``peak_flops``, the 16-bit rate. On a processor the lab's
    model computes in float32, so the rate its passes can reach is the float32 one: the
    entry files the rate measured in ``measured_format`` under ``"fp16"`` too, which makes
    ``peak_flops`` the rate this model actually runs at.
    """
    bandwidth = _check.positive("bandwidth", bandwidth)
    flops = _check.positive("flops", flops)
    if measured_format not in ("fp32", "fp16"):
        raise ValueError(f"measured_format must be 'fp32' or 'fp16', got {measured_format!r}")
    memory_bytes = machine_memory() if memory_bytes is None else memory_bytes
    standing_in = ("" if measured_format == "fp16" else
                   "; the fp16 figure is the measured fp32 rate, the format the lab's model computes in")
    return GPU(
        key="this-machine",
        name=name or "this machine (measured)",
        dense_flops={measured_format: flops, "fp16": flops},
        memory_bandwidth=bandwidth,
        memory_bytes=memory_bytes,
        price_per_hour=None,
        source=f"measured by servingmath.lab: vector-matrix reads and {measured_format} matrix products, "
               f"the figures passed in (the lab passes each test's best run){standing_in}",
        as_of=datetime.date.today().isoformat(),
        price_source="owned, not rented",
    )


# GPU names as drivers report them, to catalog keys. Each rule is a set of words that
# must all appear in the name; the first rule that matches wins.
_GPU_NAME_RULES = (
    ({"H100", "PCIe"}, "h100-pcie"),
    ({"H100", "HBM3"}, "h100-sxm"),
    ({"H200"}, "h200"),
    ({"A100", "SXM4", "80GB"}, "a100-80gb"),
    ({"A100", "PCIe", "80GB"}, "a100-80gb-pcie"),
    ({"L40S"}, "l40s"),
    ({"L4"}, "l4"),
    ({"B200"}, "b200"),
    ({"MI300X"}, "mi300x"),
    ({"T4"}, "t4"),
)


def catalog_entry_for(device_name) -> GPU | None:
    """The catalog entry for a GPU name such as ``torch.cuda.get_device_name()`` reports, or None."""
    if not isinstance(device_name, str):
        raise TypeError(f"device_name must be a string, got {device_name!r}")
    words = set(re.split(r"[^A-Za-z0-9]+", device_name))
    for needed, key in _GPU_NAME_RULES:
        if needed <= words:
            return CATALOG[key]
    return None


# --- the model ----------------------------------------------------------------------------

# The lab model's width: Llama's proportions at a size a laptop multiplies quickly.
# Its depth is chosen from the memory to fill (``lab_shape``).
WIDTH = dict(hidden=1024, heads=16, kv_heads=4, head_dim=64, ffn=3584, vocab=8192)
ROPE_BASE = 500_000.0  # Llama 3's rotary base
NORM_EPS = 1e-5
QUERY_CHUNK = 256  # queries attended at once, so a long prompt's scores never fill memory


def lab_shape(weight_bytes, weight_bits=32) -> Model:
    """The deepest lab model whose weights fit in ``weight_bytes`` (one layer at the least).

    Input and output share one embedding table (tied), so every weight a pass counts
    is one the pass reads: the table is read whole as the output projection.
    """
    weight_bytes = _check.positive("weight_bytes", weight_bytes)
    weight_bits = _check.positive("weight_bits", weight_bits)
    one, two = (Model("lab model", layers=n, tied_embeddings=True, **WIDTH) for n in (1, 2))
    per_layer = two.parameters - one.parameters
    outside_layers = one.parameters - per_layer
    layers = max(1, int((weight_bytes * 8 / weight_bits - outside_layers) // per_layer))
    return Model(f"lab model, {layers} layer{'s' if layers > 1 else ''}", layers=layers,
                 tied_embeddings=True, **WIDTH)


class NumpyOps:
    """The array operations the decoder needs, in numpy float32."""

    name = "numpy (float32)"
    bytes_per_number = 4
    weight_bits = 32

    def asarray(self, array):
        return np.asarray(array, dtype=np.float32)

    def full(self, shape, value):
        return np.full(shape, value, dtype=np.float32)

    def tokens(self, ids):
        return np.asarray(ids, dtype=np.int64)

    def zeros(self, shape):
        return np.zeros(shape, dtype=np.float32)

    def arange(self, start, stop):
        return np.arange(start, stop)

    def concat(self, parts, axis):
        return np.concatenate(parts, axis=axis)

    def where(self, condition, value, array):
        return np.where(condition, np.float32(value), array)

    def rms_norm(self, x, weight):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + NORM_EPS) * weight

    def silu(self, x):
        # x · sigmoid(x), with sigmoid written through tanh so large inputs cannot overflow.
        return x * (0.5 * (1 + np.tanh(0.5 * x)))

    def softmax(self, x):
        shifted = np.exp(x - x.max(axis=-1, keepdims=True))
        return shifted / shifted.sum(axis=-1, keepdims=True)

    def to_numpy(self, x):
        return np.asarray(x)

    def synchronize(self):
        return None

    def threads(self, count):
        """A context in which numpy's matrix library uses ``count`` threads."""
        return threadpool_limits(limits=int(_check.count("threads", count, minimum=1)), user_api="blas")


NUMPY = NumpyOps()


class KVCache:
    """Keys and values of every position so far, one (KV heads × capacity × head_dim) array each per layer."""

    def __init__(self, shape: Model, capacity, ops):
        self.capacity = int(_check.count("capacity", capacity, minimum=1))
        size = (shape.kv_heads, self.capacity, shape.head_dim)
        self.keys = [ops.zeros(size) for _ in range(shape.layers)]
        self.values = [ops.zeros(size) for _ in range(shape.layers)]
        self.length = 0


def _layer_names(layer):
    return {part: f"layers.{layer}.{part}"
            for part in ("attention_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w_gate", "w_up", "w_down")}


class Decoder:
    """A Llama-structured decoder: ``forward(tokens, cache)`` runs one pass and returns every new position's logits."""

    def __init__(self, shape: Model, weights: dict, ops=None):
        self.shape = _check.instance("shape", shape, Model)
        self.weights = weights
        self.ops = NUMPY if ops is None else ops

    @classmethod
    def random(cls, shape: Model, seed=0) -> "Decoder":
        """Random float32 weights of ``shape``: timing depends on the sizes, not on the values.

        Each matrix has variance 1/(inputs), so activations stay near 1 through the layers.
        The numbers are uniform, not normal: numpy draws uniform float32 numbers in under
        half the time, and the lab's model has hundreds of millions of them.
        """
        _check.instance("shape", shape, Model)
        if not shape.tied_embeddings or shape.qkv_bias or shape.output_bias or shape.mlp_bias or shape.experts > 1:
            raise ValueError(f"shape must be a dense Llama shape with tied embeddings and no biases, got {shape!r}")
        rng = np.random.default_rng(seed)

        def matrix(rows, columns, fan_in=None):
            # Uniform on [-0.5, 0.5) has variance 1/12: scaled by √12/√(inputs), 1/(inputs).
            values = rng.random((rows, columns), dtype=np.float32)
            values -= np.float32(0.5)
            values *= np.float32(math.sqrt(12 / (fan_in or rows)))
            return values

        kv_width = shape.kv_heads * shape.head_dim
        # The table is also the output projection, whose inputs are the hidden width.
        weights = {"embedding": matrix(shape.vocab, shape.hidden, shape.hidden)}
        for layer in range(shape.layers):
            names = _layer_names(layer)
            weights[names["attention_norm"]] = np.ones(shape.hidden, dtype=np.float32)
            weights[names["wq"]] = matrix(shape.hidden, shape.attention_width)
            weights[names["wk"]] = matrix(shape.hidden, kv_width)
            weights[names["wv"]] = matrix(shape.hidden, kv_width)
            weights[names["wo"]] = matrix(shape.attention_width, shape.hidden)
            weights[names["ffn_norm"]] = np.ones(shape.hidden, dtype=np.float32)
            weights[names["w_gate"]] = matrix(shape.hidden, shape.ffn)
            weights[names["w_up"]] = matrix(shape.hidden, shape.ffn)
            weights[names["w_down"]] = matrix(shape.ffn, shape.hidden)
        weights["norm"] = np.ones(shape.hidden, dtype=np.float32)
        return cls(shape, weights)

    def on(self, ops) -> "Decoder":
        """The same model, its weights copied into another backend (``lab_torch.TorchOps``)."""
        return Decoder(self.shape, {name: ops.asarray(self.ops.to_numpy(w)) for name, w in self.weights.items()}, ops)

    @property
    def parameters(self) -> int:
        """Numbers stored in the weights, counted from the arrays themselves."""
        return sum(int(np.prod(tuple(w.shape))) for w in self.weights.values())

    def new_cache(self, capacity) -> KVCache:
        return KVCache(self.shape, capacity, self.ops)

    def forward(self, tokens, cache: KVCache):
        """One forward pass over ``tokens`` (token ids) after the ``cache.length`` positions cached."""
        ops, shape, weights = self.ops, self.shape, self.weights
        new = len(tokens)
        start, end = cache.length, cache.length + new
        if new < 1 or end > cache.capacity:
            raise ValueError(f"tokens must number 1 to {cache.capacity - start} for this cache, got {new}")
        cos, sin = self._rotary(start, end)
        x = weights["embedding"][ops.tokens(tokens)]
        for layer in range(shape.layers):
            w = {part: weights[name] for part, name in _layer_names(layer).items()}
            h = ops.rms_norm(x, w["attention_norm"])
            queries = _rotate((h @ w["wq"]).reshape(new, shape.heads, shape.head_dim), cos, sin, ops)
            keys = _rotate((h @ w["wk"]).reshape(new, shape.kv_heads, shape.head_dim), cos, sin, ops)
            values = (h @ w["wv"]).reshape(new, shape.kv_heads, shape.head_dim)
            cache.keys[layer][:, start:end] = keys.swapaxes(0, 1)
            cache.values[layer][:, start:end] = values.swapaxes(0, 1)
            attended = self._attend(queries, cache.keys[layer][:, :end], cache.values[layer][:, :end], start)
            x = x + attended @ w["wo"]
            h = ops.rms_norm(x, w["ffn_norm"])
            x = x + (ops.silu(h @ w["w_gate"]) * (h @ w["w_up"])) @ w["w_down"]
        cache.length = end
        return ops.rms_norm(x, weights["norm"]) @ weights["embedding"].T

    def _rotary(self, start, end):
        """Cosines and sines of each position's rotation angles, shaped to broadcast over heads."""
        half = self.shape.head_dim // 2
        frequencies = ROPE_BASE ** (-np.arange(half) / half)
        angles = np.arange(start, end)[:, None] * frequencies[None, :]
        return self.ops.asarray(np.cos(angles)[:, None, :]), self.ops.asarray(np.sin(angles)[:, None, :])

    def _attend(self, queries, keys, values, start):
        """Grouped-query attention of the new positions over every cached one, causally masked.

        Scores are computed for all cached positions and the future ones set to −∞, so
        the work done is the full count, not the causal half.
        """
        ops, shape = self.ops, self.shape
        new, group = queries.shape[0], shape.heads // shape.kv_heads
        # Query heads that share a key/value head sit side by side: (KV heads, group, new, head_dim).
        queries = queries.swapaxes(0, 1).reshape(shape.kv_heads, group, new, shape.head_dim)
        keys_t, values = keys[:, None].swapaxes(-1, -2), values[:, None]
        seen = ops.arange(0, keys.shape[1])
        scale = 1 / math.sqrt(shape.head_dim)
        parts = []
        for first in range(0, new, QUERY_CHUNK):
            chunk = queries[:, :, first:first + QUERY_CHUNK]
            positions = ops.arange(start + first, start + first + chunk.shape[2])
            scores = ops.where(seen[None, :] > positions[:, None], -math.inf, (chunk @ keys_t) * scale)
            parts.append(ops.softmax(scores) @ values)
        attended = parts[0] if len(parts) == 1 else ops.concat(parts, axis=2)
        return attended.reshape(shape.heads, new, shape.head_dim).swapaxes(0, 1).reshape(new, shape.attention_width)


def _rotate(x, cos, sin, ops):
    """Rotary positions: turn each pair (first half, second half) of a head by its position's angle."""
    half = x.shape[-1] // 2
    first, second = x[..., :half], x[..., half:]
    return ops.concat([first * cos - second * sin, second * cos + first * sin], axis=-1)


# --- timing the passes -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PrefillSweep:
    """The median time of one pass over each prompt length, nothing cached."""

    tokens: np.ndarray
    seconds: np.ndarray

    @property
    def time_per_token(self):
        return self.seconds / self.tokens


@dataclasses.dataclass(frozen=True)
class DecodeTiming:
    """Decode steps, one new token each over ``cached_tokens`` cached ones."""

    cached_tokens: int
    timing: Timing

    @property
    def seconds(self) -> float:
        return self.timing.median

    @property
    def fastest(self) -> float:
        """The quickest step's seconds."""
        return min(self.timing.seconds)


@dataclasses.dataclass(frozen=True)
class AgainstFloor:
    """A decode step timed against the floor its bytes set: bytes ÷ the fastest read this machine showed.

    The ceiling is the best run of the bandwidth test, or the step's own fastest run where that read
    its bytes faster still (the test then fell short of the machine, and the step proves more). So the
    floor is never above the fastest step, and ``share``, the floor over the median step, is at most
    100 % by construction.
    """

    bytes_moved: float
    read: Rate
    decode: DecodeTiming

    @property
    def tested_bandwidth(self) -> float:
        return self.read.best

    @property
    def step_bandwidth(self) -> float:
        """The bytes a second of the fastest step."""
        return self.bytes_moved / self.decode.fastest

    @property
    def ceiling(self) -> float:
        return max(self.tested_bandwidth, self.step_bandwidth)

    @property
    def step_set_ceiling(self) -> bool:
        """True where the step read faster than every run of the bandwidth test."""
        return self.step_bandwidth > self.tested_bandwidth

    @property
    def floor(self) -> float:
        # Where the step set the ceiling, its floor is its own fastest time, exactly: bytes ÷ (bytes ÷ time)
        # can round a hair above the time it came from.
        return self.decode.fastest if self.step_set_ceiling else self.bytes_moved / self.tested_bandwidth

    @property
    def share(self) -> float:
        return self.floor / self.decode.seconds


def against_floor(bytes_moved, read: Rate, decode: DecodeTiming) -> AgainstFloor:
    """``decode`` against the floor of reading ``bytes_moved`` at the best bandwidth ``read`` or the step showed."""
    bytes_moved = _check.positive("bytes_moved", bytes_moved)
    _check.instance("read", read, Rate)
    _check.instance("decode", decode, DecodeTiming)
    return AgainstFloor(float(bytes_moved), read, decode)


def _prompt(decoder, length, seed=1):
    return np.random.default_rng(seed).integers(0, decoder.shape.vocab, int(length))


def time_prefill(decoder: Decoder, prompt_tokens, repeats=3, enough=1.0, progress=False, threads=None) -> PrefillSweep:
    """Time one pass over the first N tokens of a prompt for each N in ``prompt_tokens``, on ``threads`` threads."""
    _check.instance("decoder", decoder, Decoder)
    lengths = [int(n) for n in np.atleast_1d(_check.count("prompt_tokens", prompt_tokens, minimum=1))]
    prompt = _prompt(decoder, max(lengths))
    cache = decoder.new_cache(max(lengths))
    medians = []
    with decoder.ops.threads(_thread_count(threads)):
        decoder.forward(prompt[:1], cache)  # wakes the threads and the first pages: not timed
        for length in tqdm(lengths, desc="prefill passes", disable=not progress, leave=False):
            def one_pass():
                cache.length = 0
                decoder.forward(prompt[:length], cache)
            medians.append(time_runs(one_pass, repeats, enough, decoder.ops.synchronize).median)
    return PrefillSweep(np.array(lengths), np.array(medians))


def time_decode(decoder: Decoder, cached_tokens, steps=9, progress=False, threads=None) -> DecodeTiming:
    """Time ``steps`` decode steps, each one token over the same ``cached_tokens`` positions, on ``threads`` threads."""
    _check.instance("decoder", decoder, Decoder)
    cached_tokens = int(_check.count("cached_tokens", cached_tokens))
    steps = int(_check.count("steps", steps, minimum=1))
    prompt = _prompt(decoder, cached_tokens + 1)
    cache = decoder.new_cache(cached_tokens + 1)

    def one_step():
        cache.length = cached_tokens
        decoder.forward(prompt[cached_tokens:], cache)

    seconds = []
    with decoder.ops.threads(_thread_count(threads)):
        if cached_tokens:
            decoder.forward(prompt[:cached_tokens], cache)  # fills the cache: not timed
        one_step()
        for _ in tqdm(range(steps), desc="decode steps", disable=not progress, leave=False):
            seconds += time_runs(one_step, 1, synchronize=decoder.ops.synchronize).seconds
    return DecodeTiming(cached_tokens, Timing(tuple(seconds)))


# The roofline with this machine's measured rates as its ceilings: they are what it
# demonstrably reaches, so no further efficiency. Attention is counted in full, as the
# lab's decoder computes it, and the cache is read and written.
MEASURED = Assumptions(attention="full", kv_cache=True,
                       label="measured rates as ceilings, attention counted in full, cache counted")


def bandwidth_fraction(bytes_moved, seconds, bandwidth):
    """Bytes a pass moved ÷ its seconds, as a fraction of ``bandwidth``: how near it ran to the memory ceiling."""
    bytes_moved = _check.positive("bytes_moved", bytes_moved)
    seconds = _check.positive("seconds", seconds)
    return bytes_moved / seconds / _check.positive("bandwidth", bandwidth)


# A longer pass counts as a gain only if it is more than this much cheaper per token.
GAIN_WITHIN = 0.1


def gain_stops(tokens, time_per_token, within=GAIN_WITHIN):
    """Tokens per pass past which time per token stops falling.

    The first length whose time per token is within ``within`` (10 %) of the best
    achieved at that length or any longer one: longer passes gain no more than that.
    """
    tokens = np.asarray(_check.count("tokens", tokens, minimum=1), dtype=float)
    time_per_token = np.asarray(_check.positive("time_per_token", time_per_token), dtype=float)
    within = _check.number("within", within, minimum=0)
    if tokens.shape != time_per_token.shape or tokens.ndim != 1:
        raise ValueError(f"tokens and time_per_token must be equal-length lists, got {tokens!r} and {time_per_token!r}")
    best_from_here = np.minimum.accumulate(time_per_token[::-1])[::-1]
    return int(tokens[np.argmax(time_per_token <= (1 + within) * best_from_here)])


# --- what the chart draws -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Curve:
    """Time per token against tokens per pass, and a decode step beside it, for one chart."""

    label: str
    tokens: np.ndarray
    time_per_token: np.ndarray
    decode_time: float
    cached_tokens: int
    knee: float | None
    knee_label: str
    measured: bool


def predicted_curve(label, shape: Model, machine: GPU, tokens, cached_tokens, weight_bits,
                    assumptions: Assumptions = MEASURED) -> Curve:
    """The roofline's prediction for ``shape`` on ``machine``: ``serving.step`` over ``tokens``, and a
    ``serving.decode_step`` over ``cached_tokens``, the cache kept in the weights' format.

    The knee is the first length at which arithmetic, not memory, sets the time.
    """
    tokens = np.asarray(_check.count("tokens", tokens, minimum=1))
    passes = step(shape, machine, tokens, weight_bits=weight_bits, kv_bits=weight_bits, assumptions=assumptions)
    decode = decode_step(shape, machine, cached_tokens, weight_bits=weight_bits, kv_bits=weight_bits,
                         assumptions=assumptions)
    compute_bound = np.asarray(passes.timing.compute_bound)
    knee = float(tokens[np.argmax(compute_bound)]) if compute_bound.any() else None
    return Curve(label, tokens, np.asarray(passes.time_per_token), float(decode.time), int(cached_tokens),
                 knee, "arithmetic takes over", measured=False)


def measured_curve(label, sweep: PrefillSweep, decode: DecodeTiming) -> Curve:
    """Measured passes; the knee is where prefill stops gaining (``gain_stops``)."""
    return Curve(label, sweep.tokens, sweep.time_per_token, decode.seconds, decode.cached_tokens,
                 float(gain_stops(sweep.tokens, sweep.time_per_token)), "gains stop", measured=True)


# --- how long the lab runs -----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Settings:
    """The sizes and repeats of one run of the lab.

    ``repeats`` times each pass (fewer once ``enough`` seconds are spent on one length),
    ``measure_repeats`` each measurement of the machine, which are short.
    """

    mode: str
    reason: str
    weight_bytes: float
    prompt_tokens: tuple
    cached_tokens: int
    decode_steps: int
    repeats: int
    measure_repeats: int
    enough: float
    read_bytes: float
    matmul_size: int
    progress: bool
    threads: int
    last_level_cache: float = 0.0   # bytes, as ``last_level_cache()`` found them
    cache_source: str = "not looked up"

    @property
    def shape(self) -> Model:
        return lab_shape(self.weight_bytes)

    @property
    def beyond_cache(self) -> bool:
        """The model's weights and the bandwidth test's matrix both larger than the last-level cache."""
        return min(sm_weight_bytes(self.shape.parameters, 32), self.read_bytes) > self.last_level_cache


MODE_VARIABLE = "SERVINGMATH_LAB"
MODES = ("quick", "full")


# Full mode's model: about a gigabyte of weights, but never more than a quarter of the
# memory this process may use, so that Binder's small allowance is enough.
FULL_WEIGHT_CAP = 1e9
FULL_MEMORY_SHARE = 0.25

# Quick mode's longest prompt. In float32 a core turns compute-bound at twice its ridge, a
# few to a few tens of tokens, and numpy's thin products keep gaining a little longer (on
# the machine that builds the course, until 128 tokens); 256 reaches past both. Longer
# prompts cost more than they show: a pass does two FLOPs a parameter a token, the model
# is at least twice the last-level cache, and each doubling of the longest prompt doubles
# the sweep's arithmetic (up to 1,024 tokens it took over a minute on one core). For the
# same reason quick mode repeats a pass only while it has spent under a quarter second
# on that length: the long passes run once.
QUICK_LONGEST_PROMPT = 256


def _doublings(longest):
    """1, 2, 4, … up to ``longest`` tokens."""
    return tuple(2**k for k in range(int(longest).bit_length()))


def mode_settings(mode) -> Settings:
    """The sizes of ``mode``, ``"quick"`` or ``"full"``, whatever the environment says.

    Quick runs on one core, so that a shared machine (a build server, Binder) gives steady
    figures; full uses every core this process may use.
    """
    cache, source = last_level_cache()
    beyond = CACHE_MARGIN * cache
    room = FULL_MEMORY_SHARE * memory_limit()
    if mode == "quick":
        return Settings("quick", "asked for", weight_bytes=min(max(100e6, beyond), room),
                        prompt_tokens=_doublings(QUICK_LONGEST_PROMPT), cached_tokens=128, decode_steps=7, repeats=3,
                        measure_repeats=9, enough=0.25, read_bytes=min(max(256e6, beyond), room), matmul_size=1024,
                        progress=False, threads=1, last_level_cache=cache, cache_source=source)
    if mode == "full":
        return Settings("full", "asked for", weight_bytes=min(FULL_WEIGHT_CAP, room),
                        prompt_tokens=_doublings(4096), cached_tokens=1000, decode_steps=21,
                        repeats=5, measure_repeats=15, enough=3.0, read_bytes=min(max(512e6, beyond), room),
                        matmul_size=2048, progress=True, threads=usable_cpus(), last_level_cache=cache,
                        cache_source=source)
    raise ValueError(f"mode must be one of {MODES}, got {mode!r}")


def settings(mode="quick") -> Settings:
    """The lab's sizes for ``mode``; ``SERVINGMATH_LAB`` in the environment overrides it, and ``CI`` means quick."""
    forced = os.environ.get(MODE_VARIABLE)
    if forced:
        if forced not in MODES:
            raise ValueError(f"{MODE_VARIABLE} must be one of {MODES}, got {forced!r}")
        chosen, reason = forced, f"{MODE_VARIABLE}={forced} in the environment"
    elif os.environ.get("CI"):
        chosen, reason = "quick", "CI is set in the environment"
    else:
        chosen, reason = mode, "chosen in the notebook"
    return dataclasses.replace(mode_settings(chosen), reason=reason)
