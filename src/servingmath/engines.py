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

import re
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
    def last(self):
        """The last version the row covers ("0.20" for a row until "0.21"); None while it is current."""
        return _previous(self.until) if self.until else None

    @property
    def label(self):
        span = f"{self.since} to {self.last}" if self.until else f"{self.since} on"
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
SGLANG_V03_SERVER_ARGS = "sgl-project/sglang v0.3, python/sglang/srt/server_args.py, ServerArgs"
TRTLLM_BUILD_CONFIG = "NVIDIA/TensorRT-LLM, tensorrt_llm/builder.py, BuildConfig"
TRTLLM_DOC = "https://nvidia.github.io/TensorRT-LLM/performance/performance-tuning-guide/useful-runtime-flags.html"

# V0's budget is a chunk's only with chunked prefill on; off, it is the model's window, at least 2,048 tokens.
V0_BUDGET_SHORT = "with chunked prefill; off: the window, at least 2,048"

_V0 = {
    "block_tokens": Cell("--block-size", 16, "kwon2023paged, section 7.2; " + VLLM_ENGINE_ARGS_DOC),
    "max_running": Cell("--max-num-seqs", 256, VLLM_ENGINE_ARGS_DOC),
    "step_tokens": Cell("--max-num-batched-tokens", 512, VLLM_V0_SCHEDULER_CONFIG,
                        "with --enable-chunked-prefill; without it, max(max_model_len, 2,048), and a "
                        "smaller value is refused (SchedulerConfig._verify_args)", V0_BUDGET_SHORT),
    "chunked_prefill": Cell("--enable-chunked-prefill", False, VLLM_V0_SCHEDULER_CONFIG),
    "mixed_steps": Cell("", False, "vllm-project/vllm v0.6, vllm/core/scheduler.py, Scheduler._schedule_default",
                        "prefill-only steps; with chunked prefill on, prompt pieces join decodes",
                        "on with `--enable-chunked-prefill`"),
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
                         "vllm-project/vllm v0.6.6, vllm/engine/arg_utils.py, EngineArgs.create_engine_config; "
                         "since 0.5.4 (pull request 6666)",
                         "turned on by default for windows longer than this"),
    "chunked_profile_tokens": Cell("--max-num-batched-tokens", 2048,
                                   "vllm-project/vllm v0.6.6, vllm/config.py, SchedulerConfig.__post_init__",
                                   "the pass once prompts are split by default (0.6.4 took 512: the 35,000-token "
                                   "log of vllm-project/vllm issue 10517 peaks at 0.06 GiB of activations)"),
}

# V1 turns chunked prefill on whatever --no-enable-chunked-prefill says: _set_default_args_v1 did to 0.10, and
# 0.11.0's EngineArgs._set_default_args still sets enable_chunked_prefill = True for every model that is not a
# pooling one (vllm/engine/arg_utils.py of the 0.11.0 release). The last version read; later ones are not claimed.
VLLM_V1_CHUNKING_FORCED_LAST = "0.11"

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
                        "17885 (May 2025, version 0.9). From 0.28.0 a tier above: 16,384 under both on cards of "
                        "160 GiB or more (pull request 51726)"),
    "chunked_prefill": Cell("--enable-chunked-prefill", True, "vllm-project/vllm v0.8, vllm/engine/arg_utils.py, "
                            "EngineArgs._set_default_args_v1; vllm-project/vllm, vllm/engine/arg_utils.py, "
                            "EngineArgs._set_default_chunked_prefill_and_prefix_caching_args",
                            f"forced on from 0.8 to {VLLM_V1_CHUNKING_FORCED_LAST} at least, whatever the flag says "
                            "(_set_default_args_v1 to 0.10, _set_default_args in 0.11.0 for every model that is not a "
                            "pooling one); later versions are not claimed here",
                            f"forced on, to {VLLM_V1_CHUNKING_FORCED_LAST} at least"),
    "mixed_steps": Cell("", True, "vllm-project/vllm, vllm/v1/core/sched/scheduler.py, Scheduler.schedule",
                        "one token budget a step, running users first, then waiting prompts"),
    "preemption": Cell("", "recompute", "vllm-project/vllm, vllm/v1/core/sched/scheduler.py, Scheduler._preempt_request",
                       "the newest running request is freed and its tokens computed again, often from the prefix cache"),
    "prefix_caching": Cell("--enable-prefix-caching", True, "vllm-project/vllm, vllm/engine/arg_utils.py, "
                           "EngineArgs._set_default_chunked_prefill_and_prefix_caching_args"),
    "memory_fraction": Cell("--gpu-memory-utilization", 0.9, VLLM_ENGINE_ARGS_DOC,
                            "0.92 from 0.21.0 (vllm-project/vllm pull request 38284)", "0.92 from 0.21"),
    "total_tokens": Cell("", None, "vllm/v1/worker/gpu_worker.py, Worker.determine_available_memory",
                         "what is left of the share after a profiling pass"),
    "graph_estimate_since": Cell("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", "0.21.0",
                                 "vllm-project/vllm pull request 30515; its start-up log: \"CUDA graph memory "
                                 "profiling is enabled (default since v0.21.0)\"",
                                 "before it, the graphs are captured after the cache is allocated, on top of the "
                                 "share (RFC 27951)"),
    "memory_fraction_current": Cell("--gpu-memory-utilization", 0.92,
                                    "vllm-project/vllm, vllm/config/cache.py, CacheConfig.gpu_memory_utilization; "
                                    "pull request 38284 (April 2026), which raised it from 0.9 when it turned the "
                                    "CUDA graphs' estimate on, for version 0.21.0",
                                    "the current source's default, from 0.21.0"),
}

# vLLM pull request 38284 ("Enable CUDAGraph memory profiling by default", slated for 0.21; the start-up log
# says "default since v0.21.0") raised --gpu-memory-utilization from 0.9 to 0.92 in the same change.
_V1_FROM_0_21 = {**_V1, "memory_fraction": Cell(
    "--gpu-memory-utilization", 0.92, "vllm-project/vllm pull request 38284; vllm/config/cache.py, "
    "CacheConfig.gpu_memory_utilization", "0.9 before 0.21.0, raised with the CUDA graphs' estimate",
    "0.9 before 0.21"),
    # Past the last version read as forcing it, the table claims only the default.
    "chunked_prefill": Cell("--enable-chunked-prefill", True, _V1["chunked_prefill"].source, _V1["chunked_prefill"].note,
                            "by default")}

# vLLM pull request 51726 ("[Config] Update default `_max_num_batched_tokens` from 8192 to 16384", merged
# 2026-08-10; first released in 0.28.0, 2026-08-26) adds a tier to get_batch_defaults above the 70 GiB one:
# cards reporting 160 GiB or more take 16,384 tokens a step under `vllm serve` and `LLM(...)` alike, with
# 1,024 sequences as before. The H100 and H200 stay in the 70 GiB tier.
VLLM_LARGE_TIER_SINCE = "0.28"
_V1_FROM_0_28 = {**_V1_FROM_0_21, "step_tokens": Cell(
    "--max-num-batched-tokens", ByCard(((0, {"serve": 2048, "llm": 8192}), (70, {"serve": 8192, "llm": 16384}),
                                        (160, {"serve": 16384, "llm": 16384})), excluded=("a100",)),
    VLLM_ARG_UTILS + " (v0.28.0); pull request 51726", _V1["step_tokens"].note, "16,384 on cards of 160 GiB or more")}

# Version boundaries the pages name, each with where it was read.
VLLM_V1_SHARE_RAISED = "0.21"            # --gpu-memory-utilization 0.9 -> 0.92 (pull request 38284)
VLLM_V0_REMOVED = "0.11"                 # the "vLLM V0" rows end here; SchedulerConfig then has no preemption_mode
# --swap-space did nothing in V1 (num_cpu_blocks is 0; vllm-project/vllm issue 27984) and left EngineArgs in 0.18.0
# (pull request 36216; pull request 48549: "swap_space is deprecated from v0.18.0").
VLLM_SWAP_SPACE_REMOVED = "0.18"
# vLLM pull request 19312 ("[V1] Reuse V0's memory_profiling util for gpu worker memory profiling", opened
# 2025-06-07) stopped V1 counting the CUDA context, and other processes' memory, as its own non-torch memory. First
# released in 0.9.1, as the two releases' source distributions on PyPI show: in 0.9.0,
# vllm/v1/worker/gpu_worker.py's determine_available_memory still takes everything in use outside PyTorch's
# tensors (total less free, less torch's own allocations); in 0.9.1 it measures with vllm.utils.memory_profiling
# from the MemorySnapshot taken at start-up (init_snapshot), as 0.9.2 does.
VLLM_V1_MEMORY_PROFILING_SINCE = "0.9.1"
# The version from which V1 gives the A100 80 GB the small cards' profiling pass again (pull request 17885):
# between pull requests 17073 and 17885 its 80 GB earned it the H100's figures.
VLLM_V1_A100_SMALL_SINCE = "0.9"
# Before that, the large tier went by name: to the H100 and H200 only (pull request 12369, January 2025, whose
# test reads `"h100" in device_name or "h200" in device_name`), then to every card of 70 GiB or more, the A100
# included (pull request 17073, April 2025). The ByCard rule of the rows holds from VLLM_V1_A100_SMALL_SINCE; for
# an earlier V1 release it settles only the cards below 70 GiB and those named here.
VLLM_V1_LARGE_TIER_BY_NAME = ("h100", "h200")
# Until V0 was removed, V1 fell back to V0 on cards of compute capability below 8.0 (vllm/engine/arg_utils.py,
# EngineArgs._is_v1_supported_oracle: `_raise_or_fallback(feature_name="Compute Capability < 8.0")`). The
# catalog's cards below 8.0: the T4 (7.5, https://developer.nvidia.com/cuda-gpus).
VLLM_V1_BELOW_SM80 = ("t4",)
# From 0.22.0 vLLM moved models to Model Runner V2 one family at a time: Qwen3's dense models in 0.22.0 (pull
# request 39337, "Oracle for model runner v2 - qwen3 dense model by default"), more families in 0.23.0 and 0.24.0
# (Llama and Mistral, then DeepSeek-V2, Qwen2-MoE and quantized checkpoints, as those releases' notes read), every
# dense model in 0.25.0 (its release notes: "Model Runner V2 is now the default for all dense models", pull request
# 44443), and most models in 0.29.0. Until after 0.28.0 its profile_cudagraph_memory() was a placeholder returning 0
# (vllm-project/vllm issue 49224; pull request 49233), so nothing was taken out of the share for its graphs; pull
# request 53306 (merged August 2026, fixed forward by 53682 and 53955; the revert proposed in 53644 was closed) made
# it measure them, first released in 0.29.0.
# Which runner a model ran on, and so what was taken out, changed model by model from this release: the budget
# asks for the log's own figure there rather than guess.
VLLM_V1_RUNNER_V2_FIRST = "0.22.0"
# The last release whose Model Runner V2 took no CUDA graph memory out of the share (pull request 53306 came after).
VLLM_V1_RUNNER_V2_UNMEASURED_LAST = "0.28.0"
# On ROCm the CUDA graphs' estimate was skipped from before it became the default: pull request 36720 (March
# 2026, "skipping unreliable cudagraph memory profiling") gated it to is_cuda(); pull request 47366 let ROCm in,
# 48440 (2026-07-12) shut it out again, and 48526 (merged 2026-07-15, "[ROCm] Re-enable cudagraph memory
# profiling") let it back in. The first release cut after 48526: 0.26.0 (27 July 2026; huggingface/trl pull request
# 6569 reads its notes, which carry vLLM pull request 48641, merged after 48526). From 0.21 to then, an AMD card
# captured its graphs on top of the share.
VLLM_V1_ROCM_GRAPH_ESTIMATE_SINCE = "0.26"
# V1's "GPU KV cache size" line: until 0.20 it printed num_blocks // len(kv_cache_groups) × the least block size
# (vllm/v1/core/kv_cache_utils.py; vllm-project/vllm issue 40691 on 0.19.0, with pull requests 38364 and 40694,
# April 2026, which put max_concurrency × max_model_len in its place). For a model with sliding-window layers the
# two differ; the first release that logs the new figure is 0.21.0: from 0.20.0 to 0.21.0 the logged cache of one
# Gemma 4 setup rose about 9.5 times in the same GiB of cache (vllm-project/vllm issue 43308).
VLLM_V1_SIZE_LOG_BY_CONCURRENCY_SINCE = "0.21"

TABLE = (
    Row("vllm", "vLLM V0", "0.4", "0.6.5", _V0),
    Row("vllm", "vLLM V0", "0.6.5", VLLM_V0_REMOVED, {**_V0, "step_tokens": Cell(
        "--max-num-batched-tokens", 2048, "vllm-project/vllm pull request 10544 (November 2024), vllm/config.py, "
        "SchedulerConfig", "with --enable-chunked-prefill; without it, max(max_model_len, 2,048)", V0_BUDGET_SHORT),
        "chunked_prefill": Cell("--enable-chunked-prefill", False,
                                "vllm-project/vllm v0.6.6, vllm/engine/arg_utils.py, EngineArgs.create_engine_config",
                                "turned on by itself for windows longer than 32,768 tokens (read at 0.6.6)",
                                "on by itself past a 32,768-token window"),
        "mixed_steps": Cell("", False, "vllm-project/vllm v0.6.6, vllm/core/scheduler.py, Scheduler._schedule_default",
                            "prefill-only steps; with chunked prefill on, prompt pieces join decodes",
                            "on with `--enable-chunked-prefill`, or past a 32,768-token window")}),
    Row("vllm", "vLLM V1", "0.8", "0.8.4", {**_V1, "max_running": Cell(
        "--max-num-seqs", 1024, "vllm-project/vllm pull request 16158, which set 256 back for cards other than "
        "the H100 and H200", "1,024 on every card until version 0.8.4")}),
    Row("vllm", "vLLM V1", "0.8.4", VLLM_V1_SHARE_RAISED, _V1),
    Row("vllm", "vLLM V1", VLLM_V1_SHARE_RAISED, VLLM_LARGE_TIER_SINCE, _V1_FROM_0_21),
    Row("vllm", "vLLM V1", VLLM_LARGE_TIER_SINCE, None, _V1_FROM_0_28),
    Row("sglang", "SGLang 0.3", "0.3", "0.4", {
        "block_tokens": Cell("", 1, SGLANG_V03_SERVER_ARGS, "a token a slot of the pool"),
        "max_running": Cell("--max-running-requests", None, SGLANG_V03_SERVER_ARGS, "set from the cache's size"),
        "step_tokens": Cell("--chunked-prefill-size", 8192, SGLANG_V03_SERVER_ARGS,
                            "the most prompt tokens a prefill step carries, on every card"),
        "chunked_prefill": Cell("--chunked-prefill-size", True, SGLANG_V03_SERVER_ARGS, "-1 turns it off"),
        "mixed_steps": Cell("--enable-mixed-chunk", False, SGLANG_V03_SERVER_ARGS),
        "preemption": Cell("", "recompute", SGLANG_V03_SERVER_ARGS.replace("server_args.py, ServerArgs",
                           "managers/schedule_batch.py, ScheduleBatch.retract_decode")),
        "prefix_caching": Cell("--disable-radix-cache", True, SGLANG_V03_SERVER_ARGS),
        "memory_fraction": Cell("--mem-fraction-static", None, SGLANG_V03_SERVER_ARGS, "set from the card's memory"),
        "total_tokens": Cell("--max-total-tokens", None, SGLANG_V03_SERVER_ARGS, "set from memory"),
    }),
    Row("sglang", "SGLang", "0.4", None, {
        "block_tokens": Cell("--page-size", 1, SGLANG_SERVER_ARGS),
        "max_running": Cell("--max-running-requests", None, SGLANG_SERVER_ARGS, "set from the cache's size"),
        "step_tokens": Cell("--chunked-prefill-size",
                            ByCard(((0, {"serve": 2048, "llm": 2048}), (35, {"serve": 4096, "llm": 4096}),
                                    (60, {"serve": 8192, "llm": 8192}), (160, {"serve": 16384, "llm": 16384}))),
                            SGLANG_SERVER_ARGS + ", _handle_gpu_memory_settings (as of version 0.5, October 2025)",
                            "the most prompt tokens a prefill step carries (a chunk), not a budget for the step; "
                            "2,048 on cards under 35 GiB, 4,096 from 35 GiB, 8,192 from 60 GiB, 16,384 from "
                            "160 GiB (the card's memory as nvidia-smi reports it)", "a prompt's chunk"),
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
        "max_running": Cell("--max-batch-size", "none", TGI_LAUNCHER_DOC, "no cap unless set: tokens cap the batch",
                            "unless set"),
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
        "max_running": Cell("max_batch_size", 2048, TRTLLM_BUILD_CONFIG),
        "step_tokens": Cell("max_num_tokens", 8192, TRTLLM_BUILD_CONFIG, "tokens a step, prompts and next tokens together"),
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
        return "not read"
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


# -- Engines as they run: defaults from the table above, and what they do beside arithmetic ---------

# Kernels a decoder layer launches, one by one, when a step is not replayed as a CUDA graph (norms,
# the query-key-value product, rotary embedding, attention, the output product, the residual add and
# norm, the gate-up product, the activation, the down product, and a few copies), and the processor's
# time to launch one from PyTorch: the course's estimates, stated as such. A captured graph replays
# them all in one launch, which is what vLLM's --enforce-eager and SGLang's --disable-cuda-graph undo.
KERNELS_PER_LAYER = 12
LAUNCH_SECONDS = 15e-6


@dataclass(frozen=True)
class Overheads:
    """What an engine version does beside arithmetic, in seconds, and how near its kernels come to
    the datasheet's peaks. Fitted on the published runs of ``data/serving_runs.yaml`` (see
    ``servingmath.calibration`` for the fit and its leave-one-publisher-out check):

    - ``step_time``: every step, whatever it carries: sampling, the step's synchronisation between
      the processor and the GPU, the fixed part of preparing its inputs. A millisecond or two is
      what profiles of vLLM and SGLang show for a small batch.
    - ``user_time``: every user in a step, on the processor, in series with the GPU: scheduling it,
      building its part of the inputs (positions, block tables). Microseconds to tens of them a user,
      as Python code costs; vLLM's v0.6.0 post measured the GPU idle more than half the time before
      that version moved such work out of the step's way.
    - ``request_time``: each request, once, in the API server (HTTP, chat template, tokenizing),
      one request after another.
    - ``request_latency``: each request, once, on its own: the time its way from the client to the
      engine and back with its first token takes beside the work above, in hops that hold up no other
      request (HTTP, the messages between the API server's process and the engine's). It delays the
      request's every token alike, so it adds to the time to the first token, not to the time per token.
    - ``stream_time``: every token streamed, in the process that turns tokens into text and sends
      them (vLLM V1's API server, SGLang's detokenizer and tokenizer manager, a benchmark's own
      threads), which runs beside the engine's steps: a step delivers its users' tokens no faster
      than that process streams them, so this binds only a step of many users.
    - ``compute_efficiency``, ``bandwidth_efficiency``: the share of the datasheet's dense peak the
      matrix-product kernels reach, and of its memory bandwidth the memory-bound kernels reach.
    """

    step_time: float
    user_time: float
    request_time: float
    compute_efficiency: float
    bandwidth_efficiency: float
    stream_time: float = 0.0
    request_latency: float = 0.0
    fitted_on: str = ""


# No overheads, the datasheet's peaks: today's lesson 3 server, the floor the lessons teach.
IDEAL = Overheads(step_time=0.0, user_time=0.0, request_time=0.0, compute_efficiency=1.0, bandwidth_efficiency=1.0,
                  fitted_on="none: the roofline")

# Each engine's flag for its tensor-parallel degree, under its own name: vLLM's EngineArgs.tensor_parallel_size
# (``--tensor-parallel-size``, vllm/engine/arg_utils.py), SGLang's ServerArgs.tp_size (``--tp-size``,
# python/sglang/srt/server_args.py), TensorRT-LLM's ``--tp`` of trtllm-bench and trtllm-serve
# (tensorrt_llm/bench/benchmark/throughput.py), LMDeploy's ``--tp`` (TurbomindEngineConfig.tp).
TENSOR_PARALLEL_FLAGS = {"vllm": "tensor_parallel_size", "sglang": "tp_size", "tensorrt-llm": "tp", "lmdeploy": "tp"}
# Lesson 4's ideas as two engines' command lines name them: (idea, engine, flags, where they were read). vLLM's
# documentation: "Parallelism and Scaling" (docs/serving/parallelism_scaling.md at commit f948f41e: tensor parallel
# within a node, pipeline parallel across nodes), "Data Parallel Deployment" (docs/serving/data_parallel_deployment.md
# at commit 624b7aff) and "Disaggregated Prefilling (experimental)" (0.9.0: two instances, a KV producer and a KV
# consumer, joined by a connector named in --kv-transfer-config), as references.bib cites them. SGLang's "Server
# Arguments" (docs/advanced_features/server_arguments.md at commit 004813e): --tp-size, --pp-size, --dp-size with
# --load-balance-method, and --disaggregation-mode prefill or decode (transfer backend mooncake by default).
# The lessons run vLLM 0.9.2; each vLLM row names the documentation it was read in, by version or commit, and the
# engine 0.9.2 runs the flag on. In 0.8.x, EngineArgs._is_v1_supported_oracle (vllm/engine/arg_utils.py) falls back to
# V0 on --kv-transfer-config ("No Disaggregated Prefill so far"), and on --pipeline-parallel-size above 1 unless
# the executor is Ray ("PP is supported on V1 with Ray distributed executor, but off for MP distributed executor").
# 0.9.0 shipped V1's KV connectors, NixlConnector among them (ai-dynamo/dynamo pull request 1345: "NixlConnector got
# released in 0.9.0"), so the 0.9.2 the lessons run takes --kv-transfer-config on V1.
SGLANG_DOCS = "docs at commit 004813e"
VLLM_PARALLELISM_DOCS = "docs at commit f948f41e"
VLLM_DATA_PARALLEL_DOCS = "docs at commit 624b7aff"
MULTI_GPU_FLAGS = (
    ("split each layer (Part 1)", "vLLM", ("--tensor-parallel-size",), f"{VLLM_PARALLELISM_DOCS}; V1 engine"),
    ("split the stack (Part 2)", "vLLM", ("--pipeline-parallel-size",),
     f"{VLLM_PARALLELISM_DOCS}; V1 on Ray or multiprocessing by 0.9.1's code"),
    ("copies behind a router (Part 3)", "vLLM", ("--data-parallel-size",), f"{VLLM_DATA_PARALLEL_DOCS}; V1 engine"),
    ("prefill and decode apart (Part 4)", "vLLM", ("--kv-transfer-config",),
     "0.9.0 docs, experimental; V1 from 0.8.5, through its KV-connector API; NixlConnector from 0.9.0"),
    ("split each layer (Part 1)", "SGLang", ("--tp-size",), SGLANG_DOCS),
    ("split the stack (Part 2)", "SGLang", ("--pp-size",), SGLANG_DOCS),
    ("copies behind a router (Part 3)", "SGLang", ("--dp-size", "--load-balance-method"), SGLANG_DOCS),
    ("prefill and decode apart (Part 4)", "SGLang", ("--disaggregation-mode prefill", "--disaggregation-mode decode"),
     SGLANG_DOCS),
)


def multi_gpu_table() -> str:
    """``MULTI_GPU_FLAGS`` as a table: an idea a row, an engine a column, each cell its flags and where they were read."""
    ideas = list(dict.fromkeys(row[0] for row in MULTI_GPU_FLAGS))
    names = list(dict.fromkeys(row[1] for row in MULTI_GPU_FLAGS))
    cell = {(idea, name): ", ".join(f"`{flag}`" for flag in flags) + f" ({read})"
            for idea, name, flags, read in MULTI_GPU_FLAGS}
    lines = ["| idea | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    lines += [f"| {idea} | " + " | ".join(cell[idea, name] for name in names) + " |" for idea in ideas]
    return "\n".join(lines)


# Each engine's flags, under its own names, as ``Engine.server`` takes them.
VLLM_FLAGS = ("max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization", "max_model_len",
              "enable_chunked_prefill", "num_scheduler_steps", "enable_prefix_caching", "enforce_eager",
              "quantization", "kv_cache_dtype", "tensor_parallel_size")
SGLANG_FLAGS = ("chunked_prefill_size", "mem_fraction_static", "max_running_requests", "disable_radix_cache",
                "disable_cuda_graph", "enable_mixed_chunk", "enable_torch_compile", "cuda_graph_max_bs",
                "quantization", "kv_cache_dtype", "context_length", "tp_size")
TRTLLM_FLAGS = ("max_batch_size", "max_num_tokens", "kv_cache_free_gpu_memory_fraction", "enable_chunked_context",
                "backend", "cuda_graph_config", "quantization", "kv_cache_dtype", "max_seq_len", "tp")
LMDEPLOY_FLAGS = ("max_batch_size", "cache_max_entry_count", "max_context_token_num", "cache_chunk_size",
                  "quantization", "tp")
# The versions profiled, each with the group whose overheads it takes (one fit a group).
PROFILED = {
    "vllm": (("0.6", "vllm-v0"), ("0.8", "vllm-v1")),
    "sglang": (("0.3", "sglang"), ("0.4", "sglang"), ("0.5", "sglang")),
    "tensorrt-llm": (("1.0", "tensorrt-llm"),),
    "lmdeploy": (("0.1", "lmdeploy"),),
}
GROUPS = tuple(dict.fromkeys(group for versions in PROFILED.values() for _, group in versions))


def overheads(group: str) -> Overheads:
    """The fitted overheads of a group of engine versions (``GROUPS``), read from the fit's data file."""
    from .calibration import fitted_overheads
    if group not in GROUPS:
        raise ValueError(f"group must be one of {GROUPS}, got {group!r}")
    return fitted_overheads()[group]


@dataclass(frozen=True)
class Engine:
    """One engine at one version, as it runs: ``server(model, gpu, **flags)`` gives a lesson 3 ``Server``
    with the engine's defaults (from ``TABLE``), its flags under its own names, and its overheads.
    ``version`` is the profiled version taken (the latest at or before the one asked, ``asked``)."""

    name: str
    version: str
    asked: str
    group: str
    given: Overheads | None = None

    @property
    def overheads(self) -> Overheads:
        return self.given if self.given is not None else (IDEAL if self.name == "ideal" else overheads(self.group))

    @property
    def flags(self) -> tuple:
        return {"vllm": VLLM_FLAGS, "sglang": SGLANG_FLAGS, "tensorrt-llm": TRTLLM_FLAGS,
                "lmdeploy": LMDEPLOY_FLAGS}.get(self.name, ())

    @property
    def label(self) -> str:
        return "ideal engine" if self.name == "ideal" else f"{self.name} {self.asked}"

    def with_overheads(self, given: Overheads) -> "Engine":
        """The same engine with other overheads (a fit tries them)."""
        if not isinstance(given, Overheads):
            raise TypeError(f"given must be Overheads, got {given!r}")
        return Engine(self.name, self.version, self.asked, self.group, given)

    def server(self, model, gpu, link=None, **flags):
        """A ``simulator.Server`` for ``model`` on ``gpu`` as this engine runs it, with ``flags`` under
        the engine's own names (an unknown flag is an error naming the ones it takes). The ideal engine
        takes the ``Server``'s own fields instead, and adds nothing.

        The engine's tensor-parallel flag (``TENSOR_PARALLEL_FLAGS``: ``tensor_parallel_size``, ``tp_size``,
        ``tp``) splits the model over that many GPUs of the kind ``gpu`` joined by ``link`` (a key or name of
        a link the GPU can have; the fastest the catalog gives it, its NVLink where it has one, if None). A
        degree that does not divide the model's heads, or a model whose share does not fit each GPU, is
        refused naming the flag and its value.

        Flags that change what the simulator cannot see are taken, checked and change nothing: the
        prefix cache (``enable_prefix_caching``, ``disable_radix_cache``: the simulator's requests share
        no prompts), ``enable_torch_compile``, ``cuda_graph_max_bs``, ``backend`` and
        ``cuda_graph_config``, and LMDeploy's cache settings."""
        return _build(self, model, gpu, flags, link)


def engine(name: str, version: str = "") -> Engine:
    """``name`` (``"vllm"``, ``"sglang"``, ``"tensorrt-llm"``, ``"lmdeploy"``, or ``"ideal"``) at
    ``version``: the latest profiled version at or before it. An unknown engine, or a version before
    the first profiled, is an error naming it."""
    if name == "ideal":
        return Engine("ideal", "", str(version), "ideal")
    if name not in PROFILED:
        raise ValueError(f"name must be one of {('ideal',) + tuple(PROFILED)}, got {name!r}")
    if not isinstance(version, str) or not version:
        raise ValueError(f"version must name a release of {name}, such as '{PROFILED[name][-1][0]}', got {version!r}")
    from .runs import version_key
    try:
        wanted = version_key(version.lstrip("v"))
    except ValueError:
        raise ValueError(f"version must be a release such as '0.9.2', got {version!r}") from None
    found = [(v, g) for v, g in PROFILED[name] if _parse(v) <= wanted]
    if not found:
        raise ValueError(f"version {version!r} of {name} is before the first profiled, "
                         f"{PROFILED[name][0][0]}: the profiled versions are "
                         f"{', '.join(v for v, _ in PROFILED[name])}")
    taken, group = found[-1]
    return Engine(name, taken, version, group)


def _flag(engine_, name, value, kind):
    """A flag's value checked: ``kind`` is bool, int, float (a share of memory) or a tuple of strings."""
    if kind is bool:
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False for {engine_.label}, got {value!r}")
    elif kind is int:
        if isinstance(value, bool) or not isinstance(value, int) or value < (-1 if name == "chunked_prefill_size" else 1):
            raise ValueError(f"{name} must be a whole number of at least 1 for {engine_.label}, got {value!r}")
    elif kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
            raise ValueError(f"{name} must be a share of the card's memory between 0 and 1 for {engine_.label}, got {value!r}")
    elif isinstance(kind, tuple) and value not in kind:
        raise ValueError(f"{name} must be one of {kind} for {engine_.label}, got {value!r}")
    return value


# Each flag: what kind of value it takes. Flags that change nothing the simulator models (the prefix
# cache, with no shared prompts in its workloads; torch.compile; the backend's name) are taken and
# checked, and leave the server as it was.
_KINDS = {
    "max_num_seqs": int, "max_num_batched_tokens": int, "gpu_memory_utilization": float, "max_model_len": int,
    "enable_chunked_prefill": bool, "num_scheduler_steps": int, "enable_prefix_caching": bool, "enforce_eager": bool,
    "quantization": (None, "fp8"), "kv_cache_dtype": ("auto", "fp8", "fp8_e4m3", "fp8_e5m2"),
    "chunked_prefill_size": int, "mem_fraction_static": float, "max_running_requests": int,
    "disable_radix_cache": bool, "disable_cuda_graph": bool, "enable_mixed_chunk": bool, "enable_torch_compile": bool,
    "cuda_graph_max_bs": int, "context_length": int,
    "max_batch_size": int, "max_num_tokens": int, "kv_cache_free_gpu_memory_fraction": float,
    "enable_chunked_context": bool, "backend": ("pytorch", "tensorrt"), "cuda_graph_config": object, "max_seq_len": int,
    "cache_max_entry_count": object, "max_context_token_num": int, "cache_chunk_size": object,
    "tensor_parallel_size": int, "tp_size": int, "tp": int,
}


def _build(engine_: Engine, model, gpu, flags, link=None):
    import dataclasses

    from . import parallel
    from .memory import DoesNotFit
    from .models import Model
    from .roofline import Assumptions
    from .simulator import Server
    if not isinstance(model, Model):
        raise TypeError(f"model must be a Model from servingmath.models, got {model!r}")
    if not isinstance(gpu, GPU):
        raise TypeError(f"gpu must be a GPU from servingmath.hardware, got {gpu!r}")
    if engine_.name == "ideal":
        return Server(model, gpu, link=link, **flags)
    unknown = sorted(set(flags) - set(engine_.flags))
    if unknown:
        raise ValueError(f"{unknown[0]} is not a flag of {engine_.label}: it takes {', '.join(engine_.flags)}")
    for name, value in flags.items():
        _flag(engine_, name, value, _KINDS[name])
    tp_flag = TENSOR_PARALLEL_FLAGS[engine_.name]
    degree = flags.get(tp_flag, 1)
    if degree > 1:
        try:
            parallel.check_tensor_parallel(model, degree)
            parallel.group(gpu, degree, link)       # a link the GPU cannot have, or more GPUs than it joins
        except ValueError as error:
            raise ValueError(f"{tp_flag}={degree} is refused for {model.name} on {gpu.name} under {engine_.label}: "
                             f"{error}") from None
    elif link is not None:
        raise ValueError(f"link joins the GPUs {tp_flag} splits the model over: it needs {tp_flag} above 1 for "
                         f"{engine_.label}, got link={link!r}")
    o = engine_.overheads
    # The defaults of the release asked for (0.9.2's, not the profile's 0.8), its numbers without "post3" or "rc1".
    release = re.match(r"\d+(\.\d+)*", engine_.asked or "").group(0) if re.match(r"\d", engine_.asked or "") else engine_.version
    d = defaults(engine_.name, release, gpu=gpu) if engine_.name in ENGINES else None
    window = flags.get("max_model_len", flags.get("context_length", flags.get("max_seq_len")))
    if window is not None:
        model = dataclasses.replace(model, context_window=min(window, model.context_window or window))
    fields = {"memory": "paged", "clock": "phases", "input_table": "looked up", "preemption": "recompute",
              "tensor_parallel": degree, "link": link,
              "assumptions": Assumptions(o.compute_efficiency, o.bandwidth_efficiency, o.step_time,
                                         attention="causal", kv_cache=True, label=engine_.label),
              "user_time": o.user_time, "request_time": o.request_time, "stream_time": o.stream_time,
              "request_latency": o.request_latency}
    eager = flags.get("enforce_eager", False) or flags.get("disable_cuda_graph", False)
    if eager:
        fields["launch_time"] = model.layers * KERNELS_PER_LAYER * LAUNCH_SECONDS
    if flags.get("quantization") == "fp8":
        fields["weight_bits"] = 8
        if "fp8" in gpu.dense_flops:       # FP8 products where the card has them; else weights only (Marlin)
            fields["linear_peak"] = gpu.dense_flops["fp8"]
    if flags.get("kv_cache_dtype", "auto") != "auto":
        fields["kv_bits"] = 8
    if _weights_share(model, gpu, fields) >= 1:
        each = _weights_share(model, gpu, fields) * gpu.memory_bytes
        raise DoesNotFit(f"{tp_flag}={degree} for {engine_.label}: {model.name}'s weights ({each / 1e9:.2f} GB a GPU) "
                         f"do not fit the {gpu.memory_bytes / 1e9:.2f} GB of one {gpu.name}")
    fields.update(_schedule(engine_, d, gpu, model, flags, fields))
    if fields.get("policy") == "continuous":
        fields["step_tokens"] = None if fields.get("step_tokens") is None else max(fields["step_tokens"], model.context_window)
    try:
        return Server(model, gpu, **fields)
    except DoesNotFit as error:
        raise DoesNotFit(f"{tp_flag}={degree} for {engine_.label}: {error}") from None


def _weights_share(model, gpu, fields):
    """The share of each GPU's memory its weights take (its share of them in a tensor-parallel group)."""
    from . import parallel
    group = parallel.group(gpu, fields["tensor_parallel"], fields["link"])
    return float(parallel.fit(model, group, weight_bits=fields.get("weight_bits", 16)).weight_bytes) / gpu.memory_bytes


def _schedule(engine_, d, gpu, model, flags, fields):
    """The server's batching and memory under ``engine_``'s defaults and ``flags``."""
    from .simulator.server import EACH_REPLY
    out = {}
    if engine_.name == "vllm":
        v1 = engine_.group == "vllm-v1"
        steps = flags.get("num_scheduler_steps", 1)
        if steps > 1 and v1:
            raise ValueError(f"num_scheduler_steps is V0's multi-step scheduling, gone in {engine_.label}, got {steps!r}")
        chunked = flags.get("enable_chunked_prefill", d.chunked_prefill)
        from .runs import version_key
        if v1 and version_key(engine_.asked.lstrip("v"))[:2] <= _parse(VLLM_V1_CHUNKING_FORCED_LAST):
            chunked = True      # these V1 versions chunk whatever the flag says
        if "enable_chunked_prefill" not in flags and not v1 and model.context_window > d.chunked_past:
            chunked = True      # V0 splits the prompts of a long window by itself (every profiled V0 version)
        out["policy"] = "chunked" if chunked else "continuous"
        out["mixed_steps"] = bool(chunked) or v1    # V0 runs prompts in steps of their own unless it chunks them
        out["max_running"] = flags.get("max_num_seqs", d.max_running)
        out["step_tokens"] = flags.get("max_num_batched_tokens", d.step_tokens if chunked else None)
        out["reserve"] = 1 - flags.get("gpu_memory_utilization", d.memory_fraction)
        out["block_tokens"] = d.block_tokens
        # Multi-step scheduling: the processor schedules and prepares once for `steps` steps.
        out["user_time"] = fields["user_time"] / steps
        out["admit_every"] = steps           # and a waiting request joins only between such calls
    elif engine_.name == "sglang":
        size = flags.get("chunked_prefill_size", d.step_tokens)
        out["policy"] = "continuous" if size == -1 else "chunked"
        out["step_tokens"] = None if size == -1 else size
        out["mixed_steps"] = flags.get("enable_mixed_chunk", d.mixed_steps)
        # Unset, SGLang sizes its running batch from the cache: memory, not a count, is the cap here.
        out["max_running"] = flags.get("max_running_requests", 4096 if d.max_running is None else d.max_running)
        out["reserve"] = 1 - flags.get("mem_fraction_static", d.memory_fraction or 0.88)
        out["block_tokens"] = d.block_tokens
    elif engine_.name == "tensorrt-llm":
        out["policy"] = "chunked"
        if d.preemption == "GUARANTEED_NO_EVICT":   # the table's capacity_scheduler_policy
            # A request joins only with room for its prompt and all the tokens it asks for (benchmark clients
            # ask for each request's own length), so no one is ever preempted.
            out["memory"], out["max_reply_tokens"] = "reserved", EACH_REPLY
        out["max_running"] = flags.get("max_batch_size", d.max_running)
        out["step_tokens"] = flags.get("max_num_tokens", d.step_tokens)
        # The cache takes its share of what the weights leave: a reserve of the rest of the card.
        share = flags.get("kv_cache_free_gpu_memory_fraction", d.memory_fraction)
        out["reserve"] = (1 - share) * (1 - _weights_share(model, gpu, fields))
        out["block_tokens"] = 32            # tokens_per_block: unstated in the table, 32 taken
    else:   # lmdeploy's TurboMind: continuous batching, prompts whole, the cache set aside at start-up
        out["policy"] = "continuous"
        out["max_running"] = flags.get("max_batch_size", 128)
        out["reserve"] = 0.05
        out["block_tokens"] = 64            # unstated for 0.1: 64 taken; the cache share as vLLM's reserve
    return out
