"""What a GPU's memory has to hold while it serves: the weights once, and each user's KV cache.

Three numbers decide whether a model can be served on one GPU:

- the weights, read by every pass: parameters × bits ÷ 8;
- the KV cache: for every user, every layer keeps a key and a value for each token it
  attends to (a sliding-window layer only the last ``window`` tokens; latent attention
  one compressed vector a token);
- what is left of the GPU's memory once a reserve is held back for activations, the
  runtime (the CUDA context, libraries' workspaces) and fragmentation.

``kv_cache_bytes`` is the one place the cache of a context is counted: passes, steps,
charts and pages all call it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import _check, units
from . import engines as _engines
from .hardware import CATALOG, GPU
from .models import ContextTooLong, Model  # noqa: F401  (ContextTooLong: raised through kv_cache_bytes)


class DoesNotFit(ValueError):
    """The weights (and the caches asked for) do not fit the GPU's memory, where the question assumes they do."""

# The share of a GPU's memory held back from weights and cache, for activations and the runtime.
# vLLM lets its engine use ``gpu_memory_utilization`` = 0.9 of the memory by default (a reserve
# of 0.10, activations then coming out of its 0.9), and its users raise it to 0.95 when the
# weights nearly fill the GPU. The course takes that 0.95: a reserve of 5 %. Pass reserve=0.10
# to count as vLLM does out of the box (Llama 3 70B in 16 bits then no longer fits one H200).
RESERVE = 0.05
RESERVE_SOURCES = (
    "https://docs.vllm.ai/en/v0.8.1/serving/engine_args.html",  # --gpu-memory-utilization, default 0.9
    "https://unsloth.ai/docs/basics/inference-and-deployment/vllm-guide/vllm-engine-arguments",  # 0.95 or 0.97
)


def weight_bytes(parameters, weight_bits=16):
    """Bytes of weights: parameters × bits ÷ 8."""
    parameters = _check.number("parameters", parameters, above=0)
    weight_bits = _check.finite("weight_bits", weight_bits, above=0)
    return parameters * weight_bits / 8


def kv_cache_bytes(model: Model, context_tokens, batch=1, kv_bits=16):
    """Bytes of the KV cache of ``batch`` users, each with ``context_tokens`` tokens in it.

    Every full-attention layer holds every token; a sliding-window layer holds at most its
    window (the rolling buffer of W entries in the Mistral 7B paper; transformers keeps the
    W − 1 entries the next token needs besides its own, one token less). Each held token
    costs the model's ``cache_width`` numbers of ``kv_bits`` bits (a key and a value per KV
    head; in latent attention the compressed vector and the shared rotary key). Numbers or
    numpy arrays. A context past the model's window raises ``ContextTooLong``.
    """
    _check.instance("model", model, Model)
    context_tokens = model.check_context(_check.count("context_tokens", context_tokens))
    batch = _check.count("batch", batch)
    kv_bits = _check.finite("kv_bits", kv_bits, above=0)
    held = model.full_layers * context_tokens
    if model.sliding_layers:
        held = held + model.sliding_layers * np.minimum(context_tokens, model.sliding_window)
    return batch * held * model.cache_width * kv_bits / 8


def usable_memory(gpu: GPU, reserve=RESERVE):
    """Bytes of ``gpu`` left for weights and cache once ``reserve`` (a share of its memory) is held back."""
    _check.instance("gpu", gpu, GPU)
    reserve = _check.number("reserve", reserve, minimum=0)
    if np.any(reserve >= 1):
        raise ValueError(f"reserve must be less than 1 (a share of the GPU's memory), got {reserve!r}")
    return gpu.memory_bytes * (1 - reserve)


@dataclass(frozen=True)
class Fit:
    """Whether a model's weights and a batch's KV cache fit one GPU (floats, or arrays when swept)."""

    model: Model
    gpu: GPU
    weight_bytes: object
    cache_bytes: object
    usable_bytes: object
    reserve: object

    @property
    def needed_bytes(self):
        """Weights plus cache."""
        return self.weight_bytes + self.cache_bytes

    @property
    def spare_bytes(self):
        """Usable memory left over (negative when it does not fit)."""
        return self.usable_bytes - self.needed_bytes

    @property
    def fits(self):
        """True where weights and cache fit in the usable memory (an array of them when swept)."""
        answer = np.asarray(self.needed_bytes <= self.usable_bytes)
        return bool(answer) if answer.ndim == 0 else answer

    @property
    def message(self) -> str:
        """One sentence naming the weights, the cache and the memory."""
        if np.ndim(self.needed_bytes) or np.ndim(self.usable_bytes):
            fits = np.asarray(self.fits)
            return (f"{self.model.name} on {self.gpu.name}: {int(fits.sum())} of {fits.size} settings fit "
                    f"(weights {units.gb(self.weight_bytes)} and up to {units.gb(np.max(self.cache_bytes))} of KV cache, "
                    f"against {units.gb(np.min(self.usable_bytes))} usable)")
        verdict = "fits" if self.fits else "does not fit"
        return (f"{self.model.name} {verdict} on one {self.gpu.name}: weights {units.gb(self.weight_bytes)} "
                f"+ KV cache {units.gb(self.cache_bytes)} = {units.gb(self.needed_bytes)}, "
                f"against {units.gb(self.usable_bytes)} usable of the {units.gb(self.gpu.memory_bytes)} it holds "
                f"({self.gpu.memory_bytes / 2**30:.3g} GiB; "
                f"{units.percent(self.reserve)} held back for activations and the runtime)")

    @property
    def summary(self) -> str:
        """The verdict in a few words, for an explorer's readout."""
        if np.ndim(self.needed_bytes) or np.ndim(self.usable_bytes):
            return self.message
        verdict = "fits" if self.fits else "does not fit"
        return (f"{verdict}: weights {units.gb(self.weight_bytes)} + KV cache {units.gb(self.cache_bytes)} "
                f"against {units.gb(self.usable_bytes)} usable")

    def __bool__(self):
        return bool(np.all(self.fits))

    def require(self) -> "Fit":
        """Return this fit if everything fits; otherwise refuse with ``DoesNotFit`` giving ``message``."""
        if not np.all(self.fits):
            raise DoesNotFit(self.message)
        return self


def fit(model: Model, gpu: GPU, context_tokens=0, batch=1, weight_bits=16, kv_bits=16, reserve=RESERVE) -> Fit:
    """Do ``model``'s weights and the KV cache of ``batch`` users at ``context_tokens`` fit ``gpu``?

    ``reserve`` is the share of the GPU's memory held back for activations and the runtime
    (``RESERVE``, 5 %, by default). The answer's ``fits`` says yes or no and its ``message``
    names the weights, the cache and the memory.
    """
    _check.instance("model", model, Model)
    _check.instance("gpu", gpu, GPU)
    weight_bits = _check.finite("weight_bits", weight_bits, above=0)
    usable = usable_memory(gpu, reserve)
    return Fit(
        model=model, gpu=gpu,
        weight_bytes=weight_bytes(model.parameters, weight_bits),
        cache_bytes=kv_cache_bytes(model, context_tokens, batch, kv_bits),
        usable_bytes=usable,
        reserve=_check.number("reserve", reserve, minimum=0),
    )


def max_batch(model: Model, gpu: GPU, context_tokens, weight_bits=16, kv_bits=16, reserve=RESERVE):
    """The most users whose caches of ``context_tokens`` tokens fit beside the weights (0 if the
    weights alone do not fit). ``context_tokens`` must be at least 1: an empty cache takes no room."""
    _check.instance("model", model, Model)
    context_tokens = _check.count("context_tokens", context_tokens, minimum=1)
    weight_bits = _check.finite("weight_bits", weight_bits, above=0)
    room = usable_memory(gpu, reserve) - weight_bytes(model.parameters, weight_bits)
    per_user = kv_cache_bytes(model, context_tokens, 1, kv_bits)
    users = np.floor(np.maximum(room, 0) / per_user)
    # Guard the floor against rounding: the batch found must itself fit, one more must not.
    users = np.where(users * per_user > room, users - 1, users)
    users = np.maximum(users, 0).astype(np.int64)
    return int(users) if users.ndim == 0 else users


# Tokens in one page (block) of the cache: vLLM's default on GPUs (servingmath.engines.TABLE).
BLOCK_TOKENS = _engines.row("vllm", "V0").cells["block_tokens"].value


def max_batch_sharing_prefix(model: Model, gpu: GPU, context_tokens, prefix_tokens, block_tokens=BLOCK_TOKENS,
                             weight_bits=16, kv_bits=16, reserve=RESERVE):
    """The most users, each holding ``context_tokens`` tokens of which the first ``prefix_tokens`` are the same
    for all (a shared system prompt), when the cache of that prefix is kept once for all of them.

    Counted in pages of ``block_tokens`` tokens, as a paged engine holds them: the shared prefix's full
    pages are held once (vLLM's automatic prefix caching hashes each full block with the tokens before it);
    each user holds the pages of the rest, the last one part-empty. Returns 0 if the weights and the shared
    pages alone do not fit. A model with sliding-window layers is refused past its sliding window, where those
    layers no longer hold the prefix at all.
    """
    _check.instance("model", model, Model)
    context_tokens = model.check_context(_check.count("context_tokens", context_tokens, minimum=1))
    prefix_tokens = _check.count("prefix_tokens", prefix_tokens)
    block_tokens = _check.count("block_tokens", block_tokens, minimum=1)
    if np.any(prefix_tokens > context_tokens):
        raise ValueError(f"prefix_tokens must be at most context_tokens ({context_tokens!r}), got {prefix_tokens!r}")
    if model.sliding_layers and np.any(context_tokens > model.sliding_window):
        raise ValueError(f"context_tokens must be at most {model.name}'s sliding window of {model.sliding_window:,} "
                         f"tokens for a shared prefix to be counted (past it, its sliding layers drop the prefix), "
                         f"got {context_tokens!r}")
    weight_bits = _check.finite("weight_bits", weight_bits, above=0)
    per_token = model.kv_bytes_per_token(kv_bits)       # every layer holds every token, up to the window
    shared = np.floor(prefix_tokens / block_tokens) * block_tokens
    paged = np.ceil(context_tokens / block_tokens) * block_tokens
    room = usable_memory(gpu, reserve) - weight_bytes(model.parameters, weight_bits) - shared * per_token
    own = (paged - shared) * per_token
    users = np.floor(np.maximum(room, 0) / own)
    users = np.where(users * own > room, users - 1, users)
    users = np.maximum(users, 0).astype(np.int64)
    return int(users) if users.ndim == 0 else users


# --- vLLM's own budget, as its engine works it out at start-up -------------------------------
# vLLM does not hold back a round share. It takes ``gpu_memory_utilization`` of the memory CUDA
# reports for the card (``GPU.cuda_reported_bytes``), loads the weights, runs one profiling pass
# and measures the peak; what is left of its share becomes cache blocks of 16 tokens. Its two
# engines differ in the pass they run and in what they take out of the share besides:
#
# - V0 (the default engine up to 0.7; vllm/worker/worker.py determine_num_available_blocks): with
#   chunked prefill off, one pass of max(max_model_len, 2,048) tokens over max_num_seqs = 256
#   sequences. It turns chunked prefill on by itself for windows past 32,768 tokens, and then profiles
#   2,048, on NVIDIA cards for models without sliding-window layers (EngineArgs.create_engine_config:
#   `is_gpu and not use_sliding_window and ...`); on ROCm and for latent attention the rule changed
#   between releases, and the budget asks for the pass.
# - V1 (the default from 0.8.0, vllm-project/vllm pull request 13726; vllm/v1/worker/gpu_worker.py):
#   chunks by default (always from 0.8 to 0.10), and profiles max_num_batched_tokens, which
#   `vllm serve` sets by the card: 8,192
#   tokens and 1,024 sequences on cards that report 70 GiB or more, the A100 excepted; 2,048 and 256
#   on the others (the A100, L40S, L4, T4); from 0.28.0, 16,384 tokens on cards reporting 160 GiB or
#   more (the MI300X, the B200). It runs the model compiled (torch.compile with CUDA
#   graphs). Before 0.21.0 the graphs are captured after the cache is allocated, on top of the
#   share; from 0.21.0 vLLM subtracts an estimate of their memory first, except on AMD's cards before 0.26,
#   where ROCm skipped the estimate (pull requests 36720, 48440 and 48526). From 0.22.0 models moved family by
#   family to Model Runner V2, which estimated nothing until after 0.28.0 (vllm-project/vllm issue 49224):
#   there the log's own figure is needed (engines.VLLM_V1_RUNNER_V2_FIRST).
#   It fell back to V0 on cards below compute capability 8.0 (the T4) until V0 was removed in 0.11.
#
# Every one of these defaults, with the file and version it was read from, is a cell of
# servingmath.engines.TABLE (the rows "vLLM V0" and "vLLM V1"); the names below read them there.
VLLM_ENGINES = ("v0", "v1")
_V0 = _engines.row("vllm", "V0").cells
_V1 = _engines.row("vllm", "V1").cells
VLLM_V1_DEFAULT_SINCE = next(r.since for r in _engines.TABLE if r.name == "vLLM V1")   # the first V1 row
VLLM_GPU_MEMORY_UTILIZATION = _V0["memory_fraction"].value
# The current source's default; the budget keeps 0.9 unless told: pass it for a recent vLLM.
VLLM_GPU_MEMORY_UTILIZATION_CURRENT = _V1["memory_fraction_current"].value
VLLM_MAX_NUM_SEQS = _V0["max_running"].value
VLLM_V0_MIN_PROFILE_TOKENS = _V0["profile_min_tokens"].value
VLLM_V0_CHUNKED_PAST = _V0["chunked_past"].value             # V0 chunks prefills, and profiles less, past this window
VLLM_V0_CHUNKED_TOKENS = _V0["chunked_profile_tokens"].value
VLLM_CUDA_GRAPH_ESTIMATE_SINCE = _V1["graph_estimate_since"].value
# V1's --max-num-seqs under `vllm serve` on the cards of its largest tier (70 GiB or more, not an A100).
VLLM_V1_MAX_NUM_SEQS_LARGE_CARDS = _V1["max_running"].value.tiers[-1][1]["serve"]
_V1_LARGE_TIER_GIB = _V1["max_running"].value.tiers[-1][0]            # the least GiB of that tier
VLLM_PROFILE_TOKENS = 8192                   # V0's pass for the lesson's model: max(its 8,192-token window, 2,048)
# One published "Estimated CUDA graph memory" (vLLM 0.27.1, each of two GPUs, gpustack/runner pull request 251): 0.36 GiB.
# An example, not a model, and a small one: that start captured graphs only up to a batch of 16
# ("PIECEWISE=16 (largest=16)"), where vLLM's default capture sizes go to batches of hundreds; a default
# single-GPU start of Qwen3 8B (the compiled L40S log of data/vllm_startup_logs.yaml) took 0.56 GiB of graphs,
# so with the default capture sizes the default understates the graphs' memory.
# Read your own log's figure and pass it as cuda_graph_bytes.
VLLM_CUDA_GRAPH_EXAMPLE_BYTES = 0.36 * 2**30
# Memory the profiling pass finds in use outside PyTorch's allocator (the CUDA context's growth,
# cuBLAS workspaces; NCCL's buffers with more than one GPU). It is not the same from one log to the
# next on one card: 0.16 GiB on an H100 in the log of pull request 12126 and of
# gateway-api-inference-extension pull request 550, 1.79 GiB in the log of pull request 10511;
# 0.02 GiB in every V1 log of data/vllm_startup_logs.yaml (vLLM 0.10.2 on an L40S and an L4).
# Unless told, the budget takes the V0 logs' 0.16 GiB for V0 (read from gateway-api-inference-extension
# pull request 550, a compiled start with LoRA) and the V1 logs' 0.02 GiB for V1 (read from the three V1 rows the
# package is checked on, so those checks do not test it); the page states what the range gives.
VLLM_NON_TORCH_BYTES = 0.16 * 2**30
VLLM_V1_NON_TORCH_BYTES = 0.02 * 2**30
# Each engine's range across its published logs: V0's from 0.16 to 1.79 GiB, V1's 0.02 in every one.
VLLM_NON_TORCH_RANGE = {"v0": (0.16 * 2**30, 1.79 * 2**30), "v1": (0.02 * 2**30, 0.02 * 2**30)}
# Before vLLM pull request 19312 (first released in 0.9.1, engines.VLLM_V1_MEMORY_PROFILING_SINCE), V1 counted as
# non-torch memory everything on the card outside PyTorch's tensors, the CUDA context included
# (vllm/v1/worker/gpu_worker.py, determine_available_memory, as pull request 14419 describes it). The V1 logs of
# data/vllm_startup_logs.yaml show that context before loading: 0.22 GiB on the L4 (21.81 of 22.03 GiB free) and
# 0.49 GiB on the L40S (43.9 of 44.39). Those releases' non-torch memory is the 0.02 GiB above plus about that
# much, which depends on the card: the budget asks for it (non_torch_bytes) for an earlier V1 version.
VLLM_V1_EARLY_CONTEXT_RANGE = (0.22 * 2**30, 0.49 * 2**30)
# What compiling adds to the profiling pass's peak: vLLM 0.10.2 on an L40S measured 1.19 GiB for Qwen3 8B compiled
# (torch.compile and CUDA graphs, the default) against 0.53 GiB for the same pass eager (--enforce-eager): the two
# L40S rows of data/vllm_startup_logs.yaml. One pair of logs, one model, one pass of 2,048 tokens: an example, not a
# model of compilation, which no log here measures on a card of 70 GiB or more. ``vllm_budget(compiled=True)`` adds it.
VLLM_COMPILED_EXTRA_BYTES = (1.19 - 0.53) * 2**30
# Bytes the sampler holds for each logit at its peak: an empirical figure, matched to the one log whose peak
# is the sampler's (qls-l4-qwen3-0.6b-eager: 0.52 GiB for 256 rows of 151,936 logits, about 14 a logit), read as the
# 16-bit logits, a 32-bit copy, the probabilities and 32-bit random draws (2 + 4 + 4 + 4). It is not a
# breakdown of vLLM's code: V0 profiles its sampler with top-k and top-p on (ModelRunner.profile_run:
# SamplingParams(top_p=0.99, top_k=vocab_size - 1)), whose PyTorch path also sorts the logits (32-bit
# values, 64-bit indices), and V1's runners differ in what their dummy sampler runs. It was fitted at 256 rows; on
# V1's large cards it is applied at 1,024 rows, where no log checks it and where it makes most of the peak.
VLLM_SAMPLER_BYTES_PER_LOGIT = 14


def _engine(engine):
    if not isinstance(engine, str) or engine.lower() not in VLLM_ENGINES:
        raise ValueError(f"engine must be one of {list(VLLM_ENGINES)} (vLLM's V0 or V1 engine), got {engine!r}")
    return engine.lower()


def _version(version):
    """``version`` as a tuple of ints ('0.21.0' -> (0, 21, 0)); None stays None."""
    if version is None:
        return None
    if not isinstance(version, str):
        raise TypeError(f"version must be a vLLM version such as '0.11.0', got {version!r}")
    parts = version.strip().lstrip("v").split(".")
    if not 2 <= len(parts) <= 3 or not all(part.isdigit() for part in parts):
        raise ValueError(f"version must be a vLLM version such as '0.11.0', got {version!r}")
    return tuple(int(part) for part in parts) + (0,) * (3 - len(parts))


def _before(version, boundary):
    """Whether a V1 ``version`` comes before ``boundary``; None (a release before 0.21) does for every boundary past 0.20."""
    if version is None:
        return _version(boundary) >= _version(_engines.VLLM_V1_SHARE_RAISED)
    return _version(version) < _version(boundary)


def _runs_vllm(gpu: GPU):
    """Refuse a machine vLLM's GPU engines do not run on, or whose CUDA figure is not known."""
    if gpu.cuda_reported_bytes is None:
        if "Apple" in gpu.name:
            raise ValueError(f"gpu {gpu.name!r} has no CUDA or ROCm device: vLLM's V0 and V1 engines run on NVIDIA "
                             f"and AMD GPUs, not on Apple's (vllm_budget counts those two engines)")
        why = f" ({gpu.cuda_reported_source})" if gpu.cuda_reported_source else ""
        raise ValueError(f"gpu {gpu.name!r} has no published figure for the memory CUDA reports, which vLLM's "
                         f"budget starts from{why}; cards that have one: "
                         f"{[entry.key for entry in CATALOG.values() if entry.cuda_reported_bytes is not None]}")


def _v1_version(version):
    """The engines table's version for a V1 budget: ``version``, refused before V1 became the default; None
    stands for the last version before the CUDA graphs' estimate (the budget's V1 without a version)."""
    if version is None:
        return _engines._previous(_engines.VLLM_V1_SHARE_RAISED)
    if _version(version) < _version(VLLM_V1_DEFAULT_SINCE):
        raise ValueError(f"version must be {VLLM_V1_DEFAULT_SINCE} or later for engine='v1' (the budget follows V1 "
                         f"from the release that made it the default), got {version!r}")
    return version


def _is_rocm(gpu: GPU):
    return "amd" in gpu.name.lower()


def vllm_profile_defaults(model: Model, gpu: GPU, engine="v0", max_model_len=None, version=None):
    """The profiling pass vLLM runs by default for ``vllm serve``: (max_num_batched_tokens, max_num_seqs).

    V0: max(max_model_len, 2,048) tokens with chunked prefill off. V0 turns chunked prefill on by itself,
    and then profiles 2,048 tokens (0.6.4 and earlier: 512, the engines table's row before 0.6.5; the budget
    follows 0.6.5 on), only for windows past 32,768 tokens on an NVIDIA card and for models
    without sliding-window layers; on AMD's cards (ROCm) and for latent-attention models that rule changed
    between releases, so such a window is refused (pass ``max_num_batched_tokens`` to ``vllm_budget``).

    V1: the engines table's row for ``version`` (``servingmath.engines``; None: a release before 0.21):
    8,192 tokens and 1,024 sequences on cards reporting 70 GiB or more other than the A100, 2,048 and 256
    elsewhere (1,024 sequences on every card before 0.8.4); from 0.28, 16,384 tokens on cards reporting
    160 GiB or more. Before 0.9 the large tier went by the card's name, then took in the A100: for such a
    release only the H100, the H200 and cards below 70 GiB are counted. Both engines then cap the tokens at
    max_num_seqs × max_model_len and the sequences at the tokens, as vLLM does.
    """
    _check.instance("model", model, Model)
    _check.instance("gpu", gpu, GPU)
    engine = _engine(engine)
    _runs_vllm(gpu)
    if max_model_len is None:
        max_model_len = model.context_window
    max_model_len = int(_check.single("max_model_len", _check.count("max_model_len", max_model_len, minimum=1)))
    if engine == "v0":
        seqs = VLLM_MAX_NUM_SEQS
        long_window = max_model_len > VLLM_V0_CHUNKED_PAST
        if long_window and (_is_rocm(gpu) or model.latent_attention):
            reason = "an AMD card" if _is_rocm(gpu) else "a latent-attention model"
            raise ValueError(
                f"max_model_len {max_model_len:,} is past {VLLM_V0_CHUNKED_PAST:,} tokens on {reason} ({model.name} on "
                f"{gpu.name}), where whether V0 turned chunked prefill on by itself changed between releases: pass "
                f"max_num_batched_tokens (the log's pass), or a max_model_len of at most {VLLM_V0_CHUNKED_PAST:,}")
        tokens = (VLLM_V0_CHUNKED_TOKENS if long_window and not model.sliding_layers
                  else max(max_model_len, VLLM_V0_MIN_PROFILE_TOKENS))
    else:
        row = _v1_version(version)
        reported = gpu.cuda_reported_bytes
        if ((version is None or _version(row) < _version(_engines.VLLM_V0_REMOVED))
                and set(gpu.name.lower().split()) & set(_engines.VLLM_V1_BELOW_SM80)):
            given = (f"version None (a release before {VLLM_CUDA_GRAPH_ESTIMATE_SINCE}, most of them before "
                     f"{_engines.VLLM_V0_REMOVED})" if version is None else f"version {version!r}")
            raise ValueError(
                f"engine 'v1' did not run on {gpu.name} at {given}: until V0 was removed in "
                f"{_engines.VLLM_V0_REMOVED}, vLLM fell back to V0 on cards of compute capability below 8.0; pass "
                f"engine='v0', or a version of {_engines.VLLM_V0_REMOVED} or later")
        by_name = any(word in gpu.name.lower() for word in _engines.VLLM_V1_LARGE_TIER_BY_NAME)
        if (_version(row) < _version(_engines.VLLM_V1_A100_SMALL_SINCE) and not by_name
                and reported >= _V1_LARGE_TIER_GIB * 2**30):
            raise ValueError(
                f"version {version!r} of V1 gave {gpu.name} either the small cards' pass or the large one (by name, "
                f"the large tier went to the H100 and H200 only; vLLM pull request 17073 gave it to every card of "
                f"70 GiB or more): pass version {_engines.VLLM_V1_A100_SMALL_SINCE} or later, or "
                f"max_num_batched_tokens and max_num_seqs from the log")
        served = _engines.defaults("vllm", row, gpu=gpu, entry="serve")
        tokens, seqs = served.step_tokens, served.max_running
    tokens = min(seqs * max_model_len, tokens)
    return tokens, min(seqs, tokens)


def vllm_weight_bytes(model: Model, weight_bits=16):
    """Bytes of weights as vLLM loads a checkpoint of ``weight_bits`` bits.

    At 16 bits and above, every parameter at that width. Below 16 (FP8, INT8, the 4-bit AWQ and
    GPTQ formats) the quantised checkpoints keep the embedding table and the output head in
    16 bits (one table when the model ties them); every other parameter takes ``weight_bits``.
    """
    _check.instance("model", model, Model)
    weight_bits = _check.finite("weight_bits", weight_bits, above=0)
    _check.single("weight_bits", weight_bits)
    if weight_bits >= 16:
        return weight_bytes(model.parameters, weight_bits)
    tables = (1 if model.tied_embeddings else 2) * model.vocab * model.hidden
    return weight_bytes(model.parameters - tables, weight_bits) + weight_bytes(tables, 16)


def vllm_activation_bytes(model: Model, max_num_batched_tokens=VLLM_PROFILE_TOKENS, max_num_seqs=VLLM_MAX_NUM_SEQS):
    """The course's model of the activation peak vLLM measures in its profiling pass.

    vLLM runs the pass in two steps, one after the other (V1: ``GPUModelRunner.profile_run`` calls
    ``_dummy_run`` and then ``_dummy_sampler_run``; V0 runs the model and then its sampler), and
    records the highest memory PyTorch held at any moment. So the peak is the larger of the two:

    - the layers, one at a time: the feed-forward block's gate-and-up output (2 × its width) beside
      the activated product (1 × its width), and about four hidden-wide tensors, in 16 bits, for
      each of ``max_num_batched_tokens`` tokens (a mixture of experts: the experts a token runs,
      plus its shared ones);
    - the sampler, over ``max_num_seqs`` rows of the vocabulary at ``VLLM_SAMPLER_BYTES_PER_LOGIT``
      bytes a logit (an empirical figure, matched to one log), while the pass's 16-bit output states are
      still held:

        max(tokens × (3 × FFN width + 4 × hidden) × 2,  seqs × vocab × 14 + tokens × hidden × 2)  bytes.

    A model; vLLM measures the real figure on the card.
    """
    _check.instance("model", model, Model)
    tokens = _check.count("max_num_batched_tokens", max_num_batched_tokens, minimum=1)
    seqs = _check.count("max_num_seqs", max_num_seqs, minimum=1)
    for name, value in (("max_num_batched_tokens", tokens), ("max_num_seqs", seqs)):
        _check.single(name, value, "whole number")
    if model.mixture_of_experts:
        ffn = max(model.ffn if model.dense_layers else 0,
                  model.experts_per_token * model.expert_width + model.shared_ffn)
    else:
        ffn = model.ffn
    layers = tokens * (3 * ffn + 4 * model.hidden) * 2
    sampler = seqs * model.vocab * VLLM_SAMPLER_BYTES_PER_LOGIT + tokens * model.hidden * 2
    return float(max(layers, sampler))


@dataclass(frozen=True)
class VllmBudget:
    """How vLLM shares out one GPU at start-up (bytes), and the cache it allocates."""

    model: Model
    gpu: GPU
    gpu_memory_utilization: float
    max_num_batched_tokens: int
    max_model_len: int
    total_bytes: float
    weight_bytes: float
    activation_bytes: float
    non_torch_bytes: float
    bytes_per_token: float
    block_tokens: int = BLOCK_TOKENS
    engine: str = "v0"
    max_num_seqs: int = VLLM_MAX_NUM_SEQS
    version: str | None = None
    # CUDA graphs' memory taken out of the share (V1 from 0.21.0), and their memory on top of it (earlier V1).
    cuda_graph_bytes: float = 0.0
    graphs_outside_share: bool = False

    @property
    def share_bytes(self) -> float:
        """The engine's share: ``gpu_memory_utilization`` of the memory CUDA reports."""
        return self.gpu_memory_utilization * self.total_bytes

    @property
    def cache_bytes(self) -> float:
        """What is left of the share for the KV cache (negative when nothing is)."""
        return (self.share_bytes - self.weight_bytes - self.activation_bytes - self.non_torch_bytes
                - self.cuda_graph_bytes)

    def _layer_groups(self):
        """V1's groups of layers: (layers a group, [(tokens a request holds in a group, whether it slides)]).

        vLLM's hybrid allocator gives each group as many layers as the rarer kind has, and splits the
        other kind into groups of that size; a sliding group holds the last window − 1 tokens and the
        step's new ones, never more than max_model_len (SlidingWindowSpec.max_memory_usage_bytes).

        The grouping is the hybrid allocator's, which came in pieces through 2025 (vllm-project/vllm pull request
        14097 dropped blocks outside the window for all-sliding models but kept mixed ones as full attention); the
        first release that holds it for mixed models is not settled here. Before it, and with
        --disable-hybrid-kv-cache-manager, V1 gives every layer a full-length cache, as V0 does."""
        model = self.model
        window_tokens = min(model.sliding_window - 1 + self.max_num_batched_tokens, self.max_model_len)
        if not model.sliding_layers:
            return model.layers, [(self.max_model_len, False)]
        if not model.full_layers:
            return model.layers, [(window_tokens, True)]
        size = min(model.full_layers, model.sliding_layers)
        full = -(-model.full_layers // size)
        sliding = -(-model.sliding_layers // size)
        return size, [(self.max_model_len, False)] * full + [(window_tokens, True)] * sliding

    @property
    def blocks(self) -> int:
        """Cache blocks vLLM allocates (its '# GPU blocks'): in V0 and for V1's models whose every layer
        keeps every token, pages of ``block_tokens`` tokens across all layers; for V1's models with
        sliding-window layers, pages across one group of layers (its hybrid allocator)."""
        if self.engine == "v1" and self.model.sliding_layers:
            size, _ = self._layer_groups()
            page = self.block_tokens * self.bytes_per_token / self.model.layers * size
        else:
            page = self.block_tokens * self.bytes_per_token
        return max(int(self.cache_bytes // page), 0)

    def _blocks_per_request(self) -> int:
        """Blocks one request of max_model_len tokens takes across V1's groups: a sliding group one more than its
        tokens need, since its window need not start at a block's edge."""
        _, groups = self._layer_groups()
        return sum(-(-held // self.block_tokens) + (1 if slides else 0) for held, slides in groups)

    @property
    def max_concurrency(self) -> float:
        """Requests of ``max_model_len`` tokens the cache holds at once (vLLM's 'Maximum concurrency'): V1 divides
        the blocks by the blocks one request takes, whole blocks in each group
        (kv_cache_utils.get_max_concurrency_for_kv_cache_config); V0 the tokens by max_model_len."""
        if self.engine == "v1":
            return self.blocks / self._blocks_per_request()
        return self.blocks * self.block_tokens / self.max_model_len

    @property
    def tokens(self) -> int:
        """The cache's size in tokens as vLLM logs it ('GPU KV cache size'): in V0, blocks × tokens a block; in V1
        before 0.21 (and with no version), the blocks over the number of groups of layers × tokens a block, as those
        releases printed it; in V1 from 0.21, the concurrency × max_model_len (the two agree when max_model_len is a
        whole number of blocks and no layer slides)."""
        if self.engine == "v1" and not _before(self.version, _engines.VLLM_V1_SIZE_LOG_BY_CONCURRENCY_SINCE):
            return int(self.max_concurrency * self.max_model_len)
        if self.engine == "v1":
            return self.blocks // len(self._layer_groups()[1]) * self.block_tokens
        return self.blocks * self.block_tokens


def vllm_budget(model: Model, gpu: GPU, gpu_memory_utilization=None,
                max_num_batched_tokens=None, weight_bits=16, kv_bits=16, max_num_seqs=None,
                max_model_len=None, *, engine="v0", version=None, non_torch_bytes=None,
                cuda_graph_bytes=None, compiled=False, refuse=True) -> VllmBudget:
    """vLLM's start-up arithmetic for ``model`` on one ``gpu``: its share, and the cache left in it.

    ``engine``: ``"v0"`` (the engine of versions up to 0.7, removed in 0.11) or ``"v1"`` (the default from
    0.8.0); the count is checked on published logs of both (``vllm_startup_logs``). ``version``: for V1, the
    release whose defaults apply, read from the engines table (``servingmath.engines``); None stands for a
    release from 0.8.4 to 0.20 (refused on the T4, where V1 ran only from 0.11). ``max_num_batched_tokens`` and
    ``max_num_seqs`` default to the profiling pass that engine runs under ``vllm serve`` on this card
    (``vllm_profile_defaults``).

    The share is ``gpu_memory_utilization`` (default: the engines table's for that engine and version, 0.9,
    or 0.92 for V1 from 0.21) of the memory CUDA reports for the card (``gpu.cuda_reported_bytes``, refused
    where the catalog has no published figure, and for Apple's GPUs, which vLLM's engines do not run on).
    Out of it come, in order:

    - the weights, as vLLM loads them (``vllm_weight_bytes``);
    - the activation peak of the profiling pass (``vllm_activation_bytes``, a model of an eager pass: the
      larger of the layers' peak and the sampler's, which vLLM reaches one after the other). V1 runs compiled
      by default, and its compiled passes peak higher: ``compiled=True`` adds ``VLLM_COMPILED_EXTRA_BYTES``,
      what one compiled log measured above its eager twin (an example, not a model); the two bound V1's count;
    - non-torch memory, ``non_torch_bytes`` (default: ``VLLM_NON_TORCH_BYTES`` for V0 and
      ``VLLM_V1_NON_TORCH_BYTES`` for V1, each read from that engine's logs; ``VLLM_NON_TORCH_RANGE[engine]`` spans
      that engine's logs). V1 releases before 0.9.1 (``engines.VLLM_V1_MEMORY_PROFILING_SINCE``, the first to
      carry vLLM pull request 19312) also counted the CUDA context as non-torch memory
      (``VLLM_V1_EARLY_CONTEXT_RANGE``, which depends on the card): for such a ``version`` the budget refuses
      to guess, and ``non_torch_bytes`` must be given (``VLLM_V1_NON_TORCH_BYTES`` plus your card's context);
      without a version it takes the later releases' figure;
    - for V1 from 0.21.0, its estimate of CUDA graphs' memory, ``cuda_graph_bytes`` (default
      ``VLLM_CUDA_GRAPH_EXAMPLE_BYTES``, one log's figure from a start that captured graphs only up to a batch
      of 16, so likely low beside vLLM's default capture sizes: read your own log's). Earlier V1 versions capture
      the graphs after the cache is allocated, on top of the share: the budget says so
      (``graphs_outside_share``) and takes nothing out. So do AMD's cards (ROCm) before 0.26, which skipped the
      estimate until vLLM pull request 48526. From 0.22.0 (``engines.VLLM_V1_RUNNER_V2_FIRST``) vLLM moved models
      to Model Runner V2 family by family, and that runner estimated nothing until after 0.28.0: which a model
      ran on is not a rule the package can state, so ``cuda_graph_bytes`` must be given (the log's figure; 0
      where a release up to 0.28.0 prints none, which leaves the graphs on top of the share).

    What is left is cut into blocks of 16 tokens of ``kv_bits``-bit cache. A model with sliding-window
    layers: V0 gives every layer a page of every block (its sliding layers reuse theirs); V1 groups
    the layers by kind and a request holds only a window's worth of pages in a sliding group, so from 0.21 it
    logs more tokens than the memory would hold at full length; before 0.21 it logged the blocks over the
    number of groups × 16 (``VllmBudget.tokens``). ``max_model_len`` defaults to the
    model's window (past which it raises ``ContextTooLong``); like vLLM, the budget refuses to start
    (``DoesNotFit``) when the cache cannot hold one request that long, or nothing is left for a cache
    (``refuse=False`` returns the budget all the same, to set beside the log of a start vLLM refused).
    A multimodal checkpoint (``model.vision_tower``: Gemma 3 4B and 27B) is refused: vLLM loads its vision
    tower and profiles its image encoder, neither of which the budget counts.
    """
    _check.instance("model", model, Model)
    _check.instance("gpu", gpu, GPU)
    if model.vision_tower:
        raise ValueError(f"model {model.name!r} is a multimodal checkpoint: vLLM loads its vision tower and profiles "
                         f"its image encoder at start-up, which vllm_budget does not count (it counts the language "
                         f"model alone); read the cache size from vLLM's log")
    engine = _engine(engine)
    if compiled is not True and compiled is not False:
        raise TypeError(f"compiled must be True or False, got {compiled!r}")
    parsed = _version(version)
    if engine == "v0" and parsed is not None and parsed >= _version(_engines.VLLM_V0_REMOVED):
        raise ValueError(f"version must be before {_engines.VLLM_V0_REMOVED} for engine='v0' (vLLM removed V0 "
                         f"there), got {version!r}")
    row = _v1_version(version) if engine == "v1" else None
    if gpu_memory_utilization is None:
        gpu_memory_utilization = (VLLM_GPU_MEMORY_UTILIZATION if row is None
                                  else _engines.defaults("vllm", row, gpu=gpu).memory_fraction)
    utilization = _check.fraction("gpu_memory_utilization", _check.single("gpu_memory_utilization",
                                                                          gpu_memory_utilization))
    kv_bits = _check.single("kv_bits", _check.finite("kv_bits", kv_bits, above=0))
    _runs_vllm(gpu)
    window = model.context_window
    if max_model_len is None:
        if window is None:
            raise ValueError(f"max_model_len must be given for {model.name!r}, which states no context window")
        max_model_len = window
    max_model_len = model.check_context(_check.count("max_model_len", max_model_len, minimum=1), "max_model_len")
    max_model_len = int(_check.single("max_model_len", max_model_len, "whole number"))
    if max_num_batched_tokens is None or max_num_seqs is None:
        default_tokens, default_seqs = vllm_profile_defaults(model, gpu, engine, max_model_len, version)
    tokens = default_tokens if max_num_batched_tokens is None else max_num_batched_tokens
    seqs = default_seqs if max_num_seqs is None else max_num_seqs
    if non_torch_bytes is None:
        if engine == "v1" and parsed is not None and parsed < _version(_engines.VLLM_V1_MEMORY_PROFILING_SINCE):
            low, high = VLLM_V1_EARLY_CONTEXT_RANGE
            raise ValueError(
                f"non_torch_bytes must be given for V1 before {_engines.VLLM_V1_MEMORY_PROFILING_SINCE} (version "
                f"{version!r}): until vLLM pull request 19312 V1 counted the CUDA context as non-torch memory, "
                f"{low / 2**30:.2f} to {high / 2**30:.2f} GiB in the logs, by card; pass "
                f"VLLM_V1_NON_TORCH_BYTES plus your card's context")
        non_torch_bytes = VLLM_V1_NON_TORCH_BYTES if engine == "v1" else VLLM_NON_TORCH_BYTES
    non_torch = float(_check.single("non_torch_bytes", _check.number("non_torch_bytes", non_torch_bytes, minimum=0)))
    activation = vllm_activation_bytes(model, tokens, seqs) + (VLLM_COMPILED_EXTRA_BYTES if compiled else 0.0)
    graphs, outside, estimated = 0.0, False, False
    if engine == "v1":
        at = _version(row)
        if at < _version(VLLM_CUDA_GRAPH_ESTIMATE_SINCE) or (
                _is_rocm(gpu) and at < _version(_engines.VLLM_V1_ROCM_GRAPH_ESTIMATE_SINCE)):
            outside = True          # no estimate: before 0.21, and on ROCm until vLLM pull request 48526 (0.26)
        elif at >= _version(_engines.VLLM_V1_RUNNER_V2_FIRST) and cuda_graph_bytes is None:
            raise ValueError(
                f"cuda_graph_bytes must be given for V1 from {_engines.VLLM_V1_RUNNER_V2_FIRST} (version {version!r}, "
                f"{model.name}): from that release vLLM moved models to Model Runner V2 family by family, which took "
                f"no CUDA graph memory out of the share until after {_engines.VLLM_V1_RUNNER_V2_UNMEASURED_LAST}; "
                f"pass the log's 'Estimated CUDA graph memory' (0 where a release up to "
                f"{_engines.VLLM_V1_RUNNER_V2_UNMEASURED_LAST} prints none)")
        else:
            estimated = True
            graphs = VLLM_CUDA_GRAPH_EXAMPLE_BYTES if cuda_graph_bytes is None else float(
                _check.single("cuda_graph_bytes", _check.number("cuda_graph_bytes", cuda_graph_bytes, minimum=0)))
            outside = graphs == 0   # an estimate of nothing: the graphs, captured later, land on top of the share
    if cuda_graph_bytes is not None and not estimated:
        raise ValueError(f"cuda_graph_bytes is taken out of the share only by V1 from version "
                         f"{VLLM_CUDA_GRAPH_ESTIMATE_SINCE} ({_engines.VLLM_V1_ROCM_GRAPH_ESTIMATE_SINCE} on an AMD card) "
                         f"(engine={engine!r}, version={version!r}, gpu={gpu.name!r}), got {cuda_graph_bytes!r}")
    budget = VllmBudget(
        model=model, gpu=gpu, gpu_memory_utilization=float(utilization),
        max_num_batched_tokens=int(tokens), max_model_len=int(max_model_len),
        total_bytes=float(gpu.cuda_reported_bytes), weight_bytes=float(vllm_weight_bytes(model, weight_bits)),
        activation_bytes=activation, non_torch_bytes=non_torch,
        bytes_per_token=float(model.kv_bytes_per_token(kv_bits)), engine=engine, max_num_seqs=int(seqs),
        version=version, cuda_graph_bytes=graphs, graphs_outside_share=outside)
    if refuse is not True and refuse is not False:
        raise TypeError(f"refuse must be True or False, got {refuse!r}")
    gib = 2**30
    if not refuse:
        return budget
    if budget.blocks == 0:
        raise DoesNotFit(
            f"{model.name} leaves vLLM ({engine.upper()}) no cache on one {gpu.name}: weights "
            f"{budget.weight_bytes / gib:.2f} GiB, activations {budget.activation_bytes / gib:.2f} GiB, non-torch "
            f"memory {budget.non_torch_bytes / gib:.2f} GiB and CUDA graphs {budget.cuda_graph_bytes / gib:.2f} GiB "
            f"against a share of {budget.share_bytes / gib:.2f} GiB "
            f"({utilization:g} of {budget.total_bytes / gib:.2f} GiB)")
    if budget.max_concurrency < 1:
        raise DoesNotFit(
            f"vLLM ({engine.upper()}) would not start {model.name} on one {gpu.name}: its cache holds "
            f"{budget.max_concurrency:.2f} requests of max_model_len ({max_model_len:,}) tokens; lower max_model_len "
            f"or raise gpu_memory_utilization")
    return budget


def vllm_cache_tokens(model: Model, gpu: GPU, gpu_memory_utilization=None,
                      max_num_batched_tokens=None, weight_bits=16, **options) -> int:
    """The KV-cache tokens vLLM reports at start-up for ``model`` on one ``gpu`` (its log's 'GPU KV cache
    size' as that version printed it, or '# GPU blocks' × 16): ``vllm_budget(...).tokens``. ``options``: ``engine`` ("v0" or "v1"),
    ``version``, ``kv_bits``, ``max_num_seqs``, ``max_model_len``, ``non_torch_bytes``, ``cuda_graph_bytes``,
    ``compiled``."""
    return vllm_budget(model, gpu, gpu_memory_utilization, max_num_batched_tokens, weight_bits, **options).tokens


# --- Published start-up logs, set beside the budget ----------------------------------------------
VLLM_LOGS = Path(__file__).with_name("data") / "vllm_startup_logs.yaml"


@dataclass(frozen=True)
class VllmLog:
    """One published vLLM start-up log (a row of ``data/vllm_startup_logs.yaml``)."""

    id: str
    source: str
    date: str
    quoted: tuple
    model: str
    card: object          # a catalog key, or {"name", "cuda_gib"} for a card outside the catalog
    vllm_version: str
    engine: str
    flags: dict
    gpu_memory_utilization: float
    max_model_len: int
    logged: dict
    notes: str
    check: bool

    @property
    def gpu(self) -> GPU:
        """The log's card: the catalog's, or, outside the catalog, one carrying the log's own CUDA figure."""
        from .hardware import gpu as find_gpu

        if isinstance(self.card, str):
            return find_gpu(self.card)
        return CATALOG["h100-sxm"].with_changes(
            key="", name=self.card["name"], memory_bytes=self.card["cuda_gib"] * 2**30,
            cuda_reported_bytes=self.card["cuda_gib"] * 2**30, cuda_reported_source=self.source)

    @property
    def version(self):
        """vLLM's version as the budget takes it ('0.10.2'), or None where the row names no release."""
        try:
            _version(self.vllm_version)
        except ValueError:
            return None
        return self.vllm_version

    @property
    def tokens(self) -> int:
        """The cache tokens the log reports: its blocks × 16, or, where it prints only the cache's GiB, the whole
        blocks of its model's 16-bit cache that fit in them."""
        from .models import MODELS

        if "blocks" in self.logged:
            return self.logged["blocks"] * BLOCK_TOKENS
        block_bytes = BLOCK_TOKENS * MODELS[self.model].kv_bytes_per_token()
        return int(self.logged["kv_cache_gib"] * 2**30 // block_bytes) * BLOCK_TOKENS

    def budget(self, **options) -> VllmBudget:
        """``vllm_budget`` at the log's model, card, engine, utilisation and max_model_len (its other defaults unless
        ``options`` say otherwise), not refusing where vLLM itself refused after counting."""
        from .models import MODELS

        options = {"version": self.version, **options} if self.engine == "v1" else options
        return vllm_budget(MODELS[self.model], self.gpu, self.gpu_memory_utilization,
                           max_model_len=self.max_model_len, engine=self.engine, refuse=False, **options)

    def error(self, **options) -> float:
        """How far the budget's tokens land from the log's, as a fraction of the log's (positive: the package
        counts more)."""
        return self.budget(**options).tokens / self.tokens - 1


def vllm_startup_logs():
    """Every row of ``data/vllm_startup_logs.yaml`` as a ``VllmLog``; those held as checks have ``check`` set."""
    import yaml

    with open(VLLM_LOGS, encoding="utf-8") as handle:
        rows = yaml.safe_load(handle)["logs"]
    logs = []
    for row in rows:
        fields = {key: value for key, value in row.items() if key != "gpu"}
        logs.append(VllmLog(**{**fields, "quoted": tuple(row["quoted"]), "card": row["gpu"]}))
    return logs


def vllm_log(log_id) -> VllmLog:
    """The row of ``data/vllm_startup_logs.yaml`` whose ``id`` is ``log_id`` (such as ``"vllm-pr-10511"``)."""
    if not isinstance(log_id, str):
        raise TypeError(f"log_id must be the id of a published vLLM log (a string), got {log_id!r}")
    logs = {log.id: log for log in vllm_startup_logs()}
    if log_id not in logs:
        raise ValueError(f"log_id must be one of {sorted(logs)}, got {log_id!r}")
    return logs[log_id]
