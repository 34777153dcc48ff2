"""Serving engines' defaults, by engine and version: one table the simulator, the pages and the
engine tables read.

An engine's settings change between versions, sometimes by the card it runs on and the way it is
started: vLLM's V1 engine sets its token budget a step from the GPU's memory and from whether it
runs as a server (``vllm serve``) or inside a Python program (``LLM(...)``). So a setting is
looked up with the engine, its version, and where they matter the GPU and the entry point:

    >>> from servingmath import engines
    >>> engines.defaults("vllm", "0.9", gpu=H100_SXM).step_tokens
    8192

Each cell of ``TABLE`` says what the setting is called in the engine (``flag``), its default
(``value``; ``None`` where the engine sets it from memory at start-up or it has none), and where
that was read (``source``: a file and function in the engine's repository, or a documentation
page). A setting whose default depends on the card or the entry point holds a ``ByCard`` rule.

Versions: a row covers the versions from its ``since`` up to, not including, its ``until``.
vLLM's V1 engine became the default in 0.8.0 and V0 was removed in 0.11.0; from 0.8 to 0.10 a
version number gives V1, and ``"V0"`` or ``"V1"`` picks the latest row of either engine by name.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .hardware import GPU

GIB = 2**30
# A cell whose default the course has not read from a source: the table names the flag only.
UNSTATED = "unstated"
ENTRIES = ("serve", "llm")          # `vllm serve` (the OpenAI-compatible server), `LLM(...)` in Python
SETTINGS = ("block_tokens", "max_running", "step_tokens", "chunked_prefill", "mixed_steps", "preemption",
            "prefix_caching", "memory_fraction", "total_tokens")
# vLLM's start-up budget, as its rows state it (V0: its profiling pass; V1: when CUDA graphs' memory comes out of
# the share, and the share in the current source). Read by servingmath.memory.vllm_budget; not in the side-by-side
# table, and only in the rows they apply to.
PROFILING = ("profile_min_tokens", "chunked_past", "chunked_profile_tokens", "graph_estimate_since",
             "memory_fraction_current")
# What each setting is, in the course's words (the rows of the wrap-up's table).
MEANINGS = {
    "block_tokens": "tokens a block of cache holds",
    "max_running": "users a step, at most",
    "step_tokens": "token budget a step",
    "chunked_prefill": "a long prompt split over steps",
    "mixed_steps": "prompts and next tokens in one step",
    "preemption": "when the cache is full",
    "prefix_caching": "a shared prompt's cache reused",
    "memory_fraction": "share of memory for weights and cache",
    "total_tokens": "tokens of cache in all",
    "profile_min_tokens": "tokens the start-up pass profiles at the least",
    "chunked_past": "window past which prompts are split by default",
    "chunked_profile_tokens": "tokens the start-up pass profiles once prompts are split",
    "graph_estimate_since": "version from which CUDA graphs' memory comes out of the share",
    "memory_fraction_current": "share of memory in the current source",
}


@dataclass(frozen=True)
class ByCard:
    """A default the engine sets from the card's memory (as CUDA reports it) and the entry point:
    ``tiers`` are (least GiB, {entry: value}) from the smallest card up, the last one the card
    reaches applying; a card whose name holds any of ``excluded`` takes the first tier."""

    tiers: tuple
    excluded: tuple = ()

    def value(self, gpu: GPU, entry: str):
        reported = gpu.cuda_reported_bytes if getattr(gpu, "cuda_reported_bytes", None) else gpu.memory_bytes
        chosen = self.tiers[0][1]
        if not any(word in gpu.name.lower() for word in self.excluded):
            for least, values in self.tiers:
                if reported >= least * GIB:
                    chosen = values
        return chosen[entry]


@dataclass(frozen=True)
class Cell:
    """One setting of one engine version: its name there, its default, and where that was read."""

    flag: str
    value: object
    source: str
    note: str = ""
    short: str = ""       # a few words a table shows beside the default


@dataclass(frozen=True)
class Row:
    """One engine from one version (``since``) to another (``until``, not included; None: still current)."""

    engine: str
    name: str
    since: str
    until: str | None
    cells: dict = field(default_factory=dict)

    @property
    def label(self):
        span = f"{self.since} to {_previous(self.until)}" if self.until else f"{self.since} on"
        return f"{self.name} ({span})"


def _previous(version):
    """The version before ``version``, as far as the table's rows need: "0.11" -> "0.10", "0.8.4" -> "0.8.3"."""
    parts = list(_parse(version))
    parts[-1] -= 1
    return ".".join(str(p) for p in parts)


VLLM_ARG_UTILS = "vllm-project/vllm, vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults"
VLLM_V0_SCHEDULER_CONFIG = "vllm-project/vllm v0.5-v0.6, vllm/config.py, SchedulerConfig.__init__"
VLLM_ENGINE_ARGS_DOC = "https://docs.vllm.ai/en/v0.8.1/serving/engine_args.html"
SGLANG_SERVER_ARGS = "sgl-project/sglang, python/sglang/srt/server_args.py, ServerArgs"
TGI_LAUNCHER_DOC = "https://huggingface.co/docs/text-generation-inference/basic_tutorials/launcher"
TRTLLM_DOC = "https://nvidia.github.io/TensorRT-LLM/performance/performance-tuning-guide/useful-runtime-flags.html"

_V0 = {
    "block_tokens": Cell("--block-size", 16, "kwon2023paged, section 7.2; " + VLLM_ENGINE_ARGS_DOC),
    "max_running": Cell("--max-num-seqs", 256, VLLM_ENGINE_ARGS_DOC),
    "step_tokens": Cell("--max-num-batched-tokens", 512, VLLM_V0_SCHEDULER_CONFIG,
                        "with --enable-chunked-prefill; without it, max(max_model_len, 2,048), and a "
                        "smaller value is refused (SchedulerConfig._verify_args)"),
    "chunked_prefill": Cell("--enable-chunked-prefill", False, VLLM_V0_SCHEDULER_CONFIG),
    "mixed_steps": Cell("", False, "vllm-project/vllm v0.6, vllm/core/scheduler.py, Scheduler._schedule_default",
                        "prefill-only steps; with chunked prefill on, prompt pieces join decodes"),
    "preemption": Cell("--preemption-mode", "recompute",
                       "kwon2023paged, section 4.5; vllm/core/scheduler.py, Scheduler._preempt",
                       "swap for groups of several sequences (beam search); --swap-space 4 GiB of host memory",
                       "or swap"),
    "prefix_caching": Cell("--enable-prefix-caching", False, VLLM_ENGINE_ARGS_DOC),
    "memory_fraction": Cell("--gpu-memory-utilization", 0.9, VLLM_ENGINE_ARGS_DOC),
    "total_tokens": Cell("", None, "vllm/worker/worker.py, Worker.determine_num_available_blocks",
                         "what is left of the share after a profiling pass"),
    "profile_min_tokens": Cell("--max-num-batched-tokens", 2048,
                               "vllm-project/vllm v0.6.6, vllm/config.py, SchedulerConfig.__post_init__",
                               "chunked prefill off: max(max_model_len, 2,048) tokens in one pass over "
                               "--max-num-seqs sequences"),
    "chunked_past": Cell("--enable-chunked-prefill", 32_768,
                         "vllm-project/vllm v0.6.6, vllm/engine/arg_utils.py, EngineArgs.create_engine_config",
                         "turned on by default for windows longer than this"),
    "chunked_profile_tokens": Cell("--max-num-batched-tokens", 2048,
                                   "vllm-project/vllm v0.6.6, vllm/config.py, SchedulerConfig.__post_init__",
                                   "the pass once prompts are split by default (0.6.4 took 512: the 35,000-token "
                                   "log of vllm-project/vllm issue 10517 peaks at 0.06 GiB of activations)"),
}

_V1 = {
    "block_tokens": Cell("--block-size", 16, "vllm-project/vllm, vllm/platforms/cuda.py, check_and_update_config"),
    "max_running": Cell("--max-num-seqs", ByCard(((0, {"serve": 256, "llm": 256}), (70, {"serve": 1024, "llm": 1024})),
                                                 excluded=("a100",)), VLLM_ARG_UTILS,
                        "1,024 on cards of 70 GiB or more other than the A100, 256 on the rest since pull request "
                        "16158 (April 2025, version 0.8.4); 1,024 on every card before it"),
    "step_tokens": Cell("--max-num-batched-tokens", ByCard(((0, {"serve": 2048, "llm": 8192}), (70, {"serve": 8192, "llm": 16384})),
                                                           excluded=("a100",)), VLLM_ARG_UTILS,
                        "8,192 under `vllm serve` and 16,384 under `LLM(...)` on cards of 70 GiB or more other "
                        "than the A100; 2,048 and 8,192 on the rest. Before that rule: the large figures on the "
                        "H100 and H200 by name (pull request 12369, January 2025), on every card of 70 GiB or more "
                        "from pull request 17073 (April 2025), the A100 set back to the small ones by pull request "
                        "17885 (May 2025, version 0.9). Pull request 51726 (August 2026) raises the large cards' "
                        "8,192 to 16,384; the first version with it was not read"),
    "chunked_prefill": Cell("", True, "vllm-project/vllm, vllm/engine/arg_utils.py, "
                            "EngineArgs._set_default_chunked_prefill_and_prefix_caching_args",
                            "always on; --enable-chunked-prefill is V0's"),
    "mixed_steps": Cell("", True, "vllm-project/vllm, vllm/v1/core/sched/scheduler.py, Scheduler.schedule",
                        "one token budget a step, running users first, then waiting prompts"),
    "preemption": Cell("", "recompute", "vllm-project/vllm, vllm/v1/core/sched/scheduler.py, Scheduler._preempt_request",
                       "the newest running request is freed and its tokens computed again, often from the prefix cache"),
    "prefix_caching": Cell("--enable-prefix-caching", True, "vllm-project/vllm, vllm/engine/arg_utils.py, "
                           "EngineArgs._set_default_chunked_prefill_and_prefix_caching_args"),
    "memory_fraction": Cell("--gpu-memory-utilization", 0.9, VLLM_ENGINE_ARGS_DOC),
    "total_tokens": Cell("", None, "vllm/v1/worker/gpu_worker.py, Worker.determine_available_memory",
                         "what is left of the share after a profiling pass"),
    "graph_estimate_since": Cell("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", "0.21.0",
                                 "vllm-project/vllm pull request 30515; its start-up log: \"CUDA graph memory "
                                 "profiling is enabled (default since v0.21.0)\"",
                                 "before it, the graphs are captured after the cache is allocated, on top of the "
                                 "share (RFC 27951)"),
    "memory_fraction_current": Cell("--gpu-memory-utilization", 0.92,
                                    "vllm-project/vllm, vllm/config/cache.py, CacheConfig.gpu_memory_utilization",
                                    "the current source's default; the version that raised it from 0.9 "
                                    "was not read"),
}

# The version from which V1 gives the A100 80 GB the small cards' profiling pass again (pull request 17885):
# between pull requests 17073 and 17885 its 80 GB earned it the H100's figures.
VLLM_V1_A100_SMALL_SINCE = "0.9"

TABLE = (
    Row("vllm", "vLLM V0", "0.4", "0.6.5", _V0),
    Row("vllm", "vLLM V0", "0.6.5", "0.11", {**_V0, "step_tokens": Cell(
        "--max-num-batched-tokens", 2048, "vllm-project/vllm pull request 10544 (November 2024), vllm/config.py, "
        "SchedulerConfig", "with --enable-chunked-prefill; without it, max(max_model_len, 2,048)")}),
    Row("vllm", "vLLM V1", "0.8", "0.8.4", {**_V1, "max_running": Cell(
        "--max-num-seqs", 1024, "vllm-project/vllm pull request 16158, which set 256 back for cards other than "
        "the H100 and H200", "1,024 on every card until version 0.8.4")}),
    Row("vllm", "vLLM V1", "0.8.4", None, _V1),
    Row("sglang", "SGLang", "0.4", None, {
        "block_tokens": Cell("--page-size", 1, SGLANG_SERVER_ARGS),
        "max_running": Cell("--max-running-requests", None, SGLANG_SERVER_ARGS, "set from the cache's size"),
        "step_tokens": Cell("--chunked-prefill-size",
                            ByCard(((0, {"serve": 2048, "llm": 2048}), (35, {"serve": 8192, "llm": 8192}),
                                    (160, {"serve": 16384, "llm": 16384}))),
                            SGLANG_SERVER_ARGS + ", _handle_gpu_memory_settings",
                            "the most prompt tokens a prefill step carries (a chunk), not a budget for the step; "
                            "2,048 on cards under 35 GiB, 8,192 up to 160 GiB, 16,384 above", "a prompt's chunk"),
        "chunked_prefill": Cell("", True, SGLANG_SERVER_ARGS, "--chunked-prefill-size -1 turns it off",
                                "`--chunked-prefill-size -1` turns it off"),
        "mixed_steps": Cell("--enable-mixed-chunk", False, SGLANG_SERVER_ARGS,
                            "prefill steps and decode steps apart unless --enable-mixed-chunk"),
        "preemption": Cell("", "recompute", "sgl-project/sglang, python/sglang/srt/managers/schedule_batch.py, "
                           "ScheduleBatch.retract_decode", "retracts running requests to the queue and recomputes them"),
        "prefix_caching": Cell("", True, SGLANG_SERVER_ARGS, "the radix cache, on unless disabled",
                               "unless `--disable-radix-cache`"),
        "memory_fraction": Cell("--mem-fraction-static", None, SGLANG_SERVER_ARGS,
                                "set from the card's memory (0.88 where it is unknown)"),
        "total_tokens": Cell("--max-total-tokens", None, SGLANG_SERVER_ARGS, "set from memory"),
    }),
    Row("tgi", "TGI v3", "3.0", None, {
        "block_tokens": Cell("", UNSTATED, TGI_LAUNCHER_DOC, "paged by the attention kernels"),
        "max_running": Cell("--max-batch-size", UNSTATED, TGI_LAUNCHER_DOC, "no cap unless set: tokens cap the batch",
                            "no cap unless set"),
        "step_tokens": Cell("--max-batch-prefill-tokens", UNSTATED, TGI_LAUNCHER_DOC,
                            "prompt tokens a step; v3 chunks a longer prompt", "prompt tokens"),
        "chunked_prefill": Cell("", True, "https://huggingface.co/docs/text-generation-inference/conceptual/chunking"),
        "mixed_steps": Cell("", UNSTATED, TGI_LAUNCHER_DOC),
        "preemption": Cell("", UNSTATED, TGI_LAUNCHER_DOC),
        "prefix_caching": Cell("", True, "https://huggingface.co/docs/text-generation-inference/conceptual/chunking"),
        "memory_fraction": Cell("--cuda-memory-fraction", 1.0, TGI_LAUNCHER_DOC),
        "total_tokens": Cell("--max-batch-total-tokens", None, TGI_LAUNCHER_DOC, "inferred from memory"),
    }),
    Row("tensorrt-llm", "TensorRT-LLM", "0.12", None, {
        "block_tokens": Cell("tokens_per_block", UNSTATED, TRTLLM_DOC),
        "max_running": Cell("max_batch_size", UNSTATED, TRTLLM_DOC),
        "step_tokens": Cell("max_num_tokens", UNSTATED, TRTLLM_DOC),
        "chunked_prefill": Cell("enable_chunked_context", False, TRTLLM_DOC),
        "mixed_steps": Cell("", True, TRTLLM_DOC, "in-flight batching: context and generation requests in one step"),
        "preemption": Cell("capacity_scheduler_policy", "GUARANTEED_NO_EVICT", TRTLLM_DOC,
                           "GUARANTEED_NO_EVICT, the default, admits a request only if it can finish; "
                           "MAX_UTILIZATION pauses requests when the cache runs out"),
        "prefix_caching": Cell("enable_block_reuse", UNSTATED, TRTLLM_DOC),
        "memory_fraction": Cell("kv_cache_free_gpu_memory_fraction", 0.9, TRTLLM_DOC,
                                "of the memory left after the weights, for the cache", "of what the weights leave"),
        "total_tokens": Cell("max_tokens", UNSTATED, TRTLLM_DOC),
    }),
)
ENGINES = tuple(dict.fromkeys(row.engine for row in TABLE))


def _parse(version):
    if not isinstance(version, str):
        raise TypeError(f"version must be a string such as '0.9.2', got {version!r}")
    try:
        return tuple(int(part) for part in version.strip().lstrip("v").split("."))
    except ValueError:
        raise ValueError(f"version must be numbers separated by dots, such as '0.9.2', got {version!r}") from None


def row(engine: str, version: str) -> Row:
    """The table's row for ``engine`` at ``version`` (for vLLM, ``"V0"`` or ``"V1"`` also name a row)."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    rows = [r for r in TABLE if r.engine == engine]
    if isinstance(version, str) and version.upper() in ("V0", "V1") and engine == "vllm":
        return [r for r in rows if r.name.endswith(version.upper())][-1]     # the latest of that engine
    wanted = _parse(version)
    found = [r for r in rows if _parse(r.since) <= wanted and (r.until is None or wanted < _parse(r.until))]
    if not found:
        raise ValueError(f"version must be one the table covers for {engine} "
                         f"({', '.join(r.label for r in rows)}), got {version!r}")
    return max(found, key=lambda r: _parse(r.since))      # 0.8 to 0.10: V1, the default there


@dataclass(frozen=True)
class Defaults:
    """An engine version's defaults on one card and entry point: each setting of ``SETTINGS`` as an
    attribute, and ``cells`` with each one's flag and source."""

    row: Row
    gpu: GPU | None
    entry: str
    values: dict

    def __getattr__(self, name):
        values = self.__dict__.get("values", {})
        if name in values:
            return values[name]
        raise AttributeError(name)

    @property
    def label(self):
        return self.row.label

    @property
    def cells(self):
        return self.row.cells

    def flag(self, setting):
        return self.row.cells[setting].flag

    def source(self, setting):
        return self.row.cells[setting].source


def defaults(engine: str, version: str, gpu: GPU | None = None, entry: str = "serve") -> Defaults:
    """``engine``'s defaults at ``version``, on ``gpu``, started as ``entry`` (``"serve"``, the
    OpenAI-compatible server, or ``"llm"``, the engine inside a Python program). A setting that depends
    on the card needs ``gpu``; asked without one, it is an error."""
    found = row(engine, version)
    if entry not in ENTRIES:
        raise ValueError(f"entry must be one of {ENTRIES}, got {entry!r}")
    if gpu is not None and not isinstance(gpu, GPU):
        raise TypeError(f"gpu must be a GPU from servingmath.hardware, got {gpu!r}")
    values = {}
    for name, cell in found.cells.items():
        value = cell.value
        if isinstance(value, ByCard):
            if gpu is None:
                raise ValueError(f"gpu is needed: {found.label}'s {cell.flag or name} depends on the card, got None")
            value = value.value(gpu, entry)
        values[name] = value
    return Defaults(found, gpu, entry, values)


def shown(value) -> str:
    """A default as a table shows it."""
    if value is None:
        return "set at start-up"
    if value == UNSTATED:
        return ""
    if value is True:
        return "on"
    if value is False:
        return "off"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def markdown_table(gpu: GPU, rows=(("vllm", "0.6"), ("vllm", "V1"), ("sglang", "0.4"), ("tgi", "3.0"),
                                    ("tensorrt-llm", "0.12")), settings=SETTINGS, entry="serve") -> str:
    """The engines' settings side by side, flag and default in each cell, on ``gpu``."""
    found = [defaults(engine, version, gpu, entry) for engine, version in rows]
    head = "| setting | " + " | ".join(d.label for d in found) + " |"
    lines = [head, "|---" * (len(found) + 1) + "|"]
    for setting in settings:
        cells = []
        for d in found:
            cell = d.cells[setting]
            value = getattr(d, setting)
            text = " ".join(part for part in (f"`{cell.flag}`" if cell.flag else "", shown(value),
                                              f"({cell.short})" if cell.short else "") if part)
            cells.append(text or "–")
        lines.append(f"| {MEANINGS[setting]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
