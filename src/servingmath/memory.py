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
from .hardware import GPU
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
                f"({self.gpu.listed_memory[:-3]} GiB; "
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
