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

import numpy as np

from . import _check, units
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
                f"({self.gpu.memory_bytes / 2**30:,.0f} GiB; "
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


# Tokens in one page (block) of the cache: vLLM's default on GPUs.
BLOCK_TOKENS = 16


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
# of ``max_num_batched_tokens`` tokens (and its sampler over ``max_num_seqs`` sequences), and
# measures the peak; what is left of its share becomes cache blocks of 16 tokens.
# The count follows vLLM's V0 engine, versions 0.6 to 0.8, whose start-up logs it matches
# (cache.VLLM_LOG_LLAMA_3_8B, cache.VLLM_LOG_LLAMA_2_7B). Its defaults there: gpu_memory_utilization
# 0.9, max_num_seqs 256, and with chunked prefill off a profiling pass of max(max_model_len, 2,048)
# tokens (8,192 for Llama 3 8B). The course models the rest of what vLLM measures (``vllm_budget``'s
# docstring), each piece with its source.
VLLM_MODELLED_VERSIONS = "0.6 to 0.8"
VLLM_GPU_MEMORY_UTILIZATION = 0.9
VLLM_MAX_NUM_SEQS = 256
# The profiling pass the functions below take unless told: V0's default for the lesson's model (its
# window, 8,192 tokens, with chunked prefill off). Another model's default pass differs: Llama 2 7B's
# log profiled 4,096 tokens, and a long window can turn chunked prefill on; pass the log's own figure.
VLLM_PROFILE_TOKENS = 8192
# Later versions take more out of the same share, so they allocate fewer tokens than this count:
# - the V1 engine, on cards of 70 GiB or more other than the A100 (the H100 and H200 among them),
#   defaults to max_num_seqs 1,024 for the API server (pull requests 12369 and 16158 of
#   vllm-project/vllm; pass max_num_seqs=1024 to count its sampler's larger profiling pass);
# - from version 0.21.0, vLLM also takes an estimate of its CUDA graphs' memory out of the share
#   (its log: "CUDA graph memory profiling is enabled (default since v0.21.0)"; pull request 30515
#   added it, off by default), which this count leaves out: read "Estimated CUDA graph memory" in the log.
VLLM_V1_MAX_NUM_SEQS_LARGE_CARDS = 1024
VLLM_CUDA_GRAPH_ESTIMATE_SINCE = "0.21.0"
# Memory the profiling pass finds in use outside PyTorch's allocator (the CUDA context's growth,
# cuBLAS and NCCL workspaces): 0.16 GiB in vLLM's own logs on one H100
# (https://github.com/vllm-project/vllm/pull/12126, and the log of cache.VLLM_LOG_LLAMA_2_7B).
VLLM_NON_TORCH_BYTES = 0.16 * 2**30
# Copies of the sampler's 32-bit logits alive at its peak: the logits, their probabilities and
# their log-probabilities.
VLLM_SAMPLER_COPIES = 3


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

    The pass carries ``max_num_batched_tokens`` tokens through the model, one layer at a time,
    so the peak is one layer's widest moment, in 16 bits: the feed-forward block's gate-and-up
    output (2 × its width) beside the activated product (1 × its width), and about four
    hidden-wide tensors (the residual stream, the normed input, attention's output, the
    layer's output). A mixture of experts counts the experts each token runs, plus its shared
    ones. Then the sampler: ``max_num_seqs`` rows of 32-bit logits over the vocabulary,
    ``VLLM_SAMPLER_COPIES`` of them at once. The peak is the sum of the two:

        tokens × (3 × FFN width + 4 × hidden) × 2 + max_num_seqs × vocab × 4 × 3  bytes.

    A model, calibrated against published logs (tests/test_vllm_budget.py); vLLM measures
    the real figure on the card. Llama 3 8B at 8,192 tokens: 1.27 GiB (vLLM's log: 1.26 GiB).
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
    layer = tokens * (3 * ffn + 4 * model.hidden) * 2
    sampler = seqs * model.vocab * 4 * VLLM_SAMPLER_COPIES
    return float(layer + sampler)


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

    @property
    def share_bytes(self) -> float:
        """The engine's share: ``gpu_memory_utilization`` of the memory CUDA reports."""
        return self.gpu_memory_utilization * self.total_bytes

    @property
    def cache_bytes(self) -> float:
        """What is left of the share for the KV cache (negative when nothing is)."""
        return self.share_bytes - self.weight_bytes - self.activation_bytes - self.non_torch_bytes

    @property
    def blocks(self) -> int:
        """Whole cache blocks of ``block_tokens`` tokens that fit in ``cache_bytes`` (vLLM's '# GPU blocks')."""
        return max(int(self.cache_bytes // (self.block_tokens * self.bytes_per_token)), 0)

    @property
    def tokens(self) -> int:
        """Tokens the cache holds: blocks × tokens a block (vLLM's 'GPU KV cache size')."""
        return self.blocks * self.block_tokens

    @property
    def max_concurrency(self) -> float:
        """Requests of ``max_model_len`` tokens the cache holds at once (vLLM's 'Maximum concurrency')."""
        return self.tokens / self.max_model_len


def vllm_budget(model: Model, gpu: GPU, gpu_memory_utilization=VLLM_GPU_MEMORY_UTILIZATION,
                max_num_batched_tokens=VLLM_PROFILE_TOKENS, weight_bits=16, kv_bits=16, max_num_seqs=VLLM_MAX_NUM_SEQS,
                max_model_len=None) -> VllmBudget:
    """vLLM's start-up arithmetic for ``model`` on one ``gpu``: its share, and the cache left in it,
    as vLLM's V0 engine (versions 0.6 to 0.8, ``VLLM_MODELLED_VERSIONS``) worked it out at its defaults
    for Llama 3 8B (for another model, pass the profiling pass its engine ran: ``VLLM_PROFILE_TOKENS``).
    Later versions take more out of the share (a larger sampler pass on H100-class cards, and from
    0.21.0 their CUDA graphs' memory): see ``VLLM_V1_MAX_NUM_SEQS_LARGE_CARDS``.

    The share is ``gpu_memory_utilization`` of the memory CUDA reports for the card
    (``gpu.cuda_reported_bytes``, refused where the catalog has no published figure). Out of
    it come, in order:

    - the weights, as vLLM loads them (``vllm_weight_bytes``: below 16 bits, the embedding
      table and the output head stay in 16);
    - the activation peak of the profiling pass of ``max_num_batched_tokens`` tokens and its
      sampler over ``max_num_seqs`` sequences (``vllm_activation_bytes``, a model);
    - non-torch memory, ``VLLM_NON_TORCH_BYTES``.

    What is left is cut into blocks of 16 tokens of ``kv_bits``-bit cache. ``max_model_len``
    (default: the model's window, past which it raises ``ContextTooLong``) only sets
    ``max_concurrency``; like vLLM, the budget refuses to start (``DoesNotFit``) when the cache
    cannot hold one request that long, or when nothing is left for a cache at all. Models with
    sliding-window layers are refused: vLLM pages their caches in groups this count leaves out.
    """
    _check.instance("model", model, Model)
    _check.instance("gpu", gpu, GPU)
    utilization = _check.fraction("gpu_memory_utilization", _check.single("gpu_memory_utilization",
                                                                          gpu_memory_utilization))
    kv_bits = _check.single("kv_bits", _check.finite("kv_bits", kv_bits, above=0))
    if gpu.cuda_reported_bytes is None:
        raise ValueError(f"gpu {gpu.name!r} has no published figure for the memory CUDA reports, which vLLM's "
                         f"budget starts from; cards that have one: "
                         f"{[entry.key for entry in CATALOG.values() if entry.cuda_reported_bytes is not None]}")
    if model.sliding_layers:
        raise ValueError(f"model {model.name!r} has {model.sliding_layers} sliding-window layers "
                         f"({model.sliding_window:,} tokens), whose cache vLLM pages apart from the full layers'; "
                         f"vllm_budget counts models whose every layer keeps every token")
    window = model.context_window
    if max_model_len is None:
        if window is None:
            raise ValueError(f"max_model_len must be given for {model.name!r}, which states no context window")
        max_model_len = window
    max_model_len = model.check_context(_check.count("max_model_len", max_model_len, minimum=1), "max_model_len")
    max_model_len = int(_check.single("max_model_len", max_model_len, "whole number"))
    activation = vllm_activation_bytes(model, max_num_batched_tokens, max_num_seqs)
    budget = VllmBudget(
        model=model, gpu=gpu, gpu_memory_utilization=float(utilization),
        max_num_batched_tokens=int(max_num_batched_tokens), max_model_len=int(max_model_len),
        total_bytes=float(gpu.cuda_reported_bytes), weight_bytes=float(vllm_weight_bytes(model, weight_bits)),
        activation_bytes=activation, non_torch_bytes=VLLM_NON_TORCH_BYTES,
        bytes_per_token=float(model.kv_bytes_per_token(kv_bits)))
    gib = 2**30
    if budget.blocks == 0:
        raise DoesNotFit(
            f"{model.name} leaves vLLM no cache on one {gpu.name}: weights {budget.weight_bytes / gib:.2f} GiB, "
            f"activations {budget.activation_bytes / gib:.2f} GiB and non-torch memory "
            f"{budget.non_torch_bytes / gib:.2f} GiB against a share of {budget.share_bytes / gib:.2f} GiB "
            f"({utilization:g} of {budget.total_bytes / gib:.2f} GiB)")
    if budget.tokens < max_model_len:
        raise DoesNotFit(
            f"vLLM would not start {model.name} on one {gpu.name}: max_model_len ({max_model_len:,}) is more than "
            f"the {budget.tokens:,} tokens its cache holds; lower max_model_len or raise gpu_memory_utilization")
    return budget


def vllm_cache_tokens(model: Model, gpu: GPU, gpu_memory_utilization=VLLM_GPU_MEMORY_UTILIZATION,
                      max_num_batched_tokens=VLLM_PROFILE_TOKENS, weight_bits=16, **options) -> int:
    """The KV-cache tokens vLLM allocates at start-up for ``model`` on one ``gpu`` (its log's
    'GPU KV cache size', in versions 0.6 to 0.8): ``vllm_budget(...).tokens``; the budget also gives the blocks, the
    share and each piece taken out of it. ``options``: ``kv_bits``, ``max_num_seqs``, ``max_model_len``."""
    return vllm_budget(model, gpu, gpu_memory_utilization, max_num_batched_tokens, weight_bits, **options).tokens
