"""One forward pass: the arithmetic it does and the bytes it moves.

A pass carries ``new_tokens`` fresh tokens for each of ``batch`` sequences, each
sequence already holding ``cached_tokens`` tokens of keys and values. Every pass
reads every weight once, however many tokens it carries; each weight then does a
multiply and an add (2 FLOPs) for every token.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _check
from .models import Model

ATTENTION_COUNTS = ("causal", "full", "none")


@dataclass(frozen=True)
class PassCost:
    """FLOPs and bytes of one forward pass (floats, or arrays when swept)."""

    tokens: object
    linear_flops: object
    attention_flops: object
    weight_bytes: object
    kv_read_bytes: object
    kv_write_bytes: object

    @property
    def flops(self):
        return self.linear_flops + self.attention_flops

    @property
    def bytes(self):
        return self.weight_bytes + self.kv_read_bytes + self.kv_write_bytes

    @property
    def intensity(self):
        """Arithmetic intensity: FLOPs per byte moved."""
        return arithmetic_intensity(self.flops, self.bytes)


def weight_bytes(parameters, weight_bits=16):
    """Bytes of weights: parameters × bits ÷ 8."""
    parameters = _check.number("parameters", parameters, above=0)
    weight_bits = _check.positive("weight_bits", weight_bits)
    return parameters * weight_bits / 8


def linear_flops(parameters, tokens):
    """2 FLOPs (multiply, add) for each weight and each token in the pass."""
    parameters = _check.number("parameters", parameters, above=0)
    tokens = _check.count("tokens", tokens)
    return 2 * parameters * tokens


def positions_attended(new_tokens, cached_tokens=0, attention="causal"):
    """Σ over the new tokens of the positions each one attends to.

    Causal: the i-th new token (from 1) sees the cache and itself and the i − 1 new
    tokens before it, so the sum is N·C + N(N+1)/2. ``"full"`` lets every new token
    see every position, N·(C + N): the count without the causal mask's halving.
    """
    new_tokens = _check.count("new_tokens", new_tokens)
    cached_tokens = _check.count("cached_tokens", cached_tokens)
    if attention == "causal":
        return new_tokens * cached_tokens + new_tokens * (new_tokens + 1) / 2
    if attention == "full":
        return new_tokens * (cached_tokens + new_tokens)
    if attention == "none":
        return new_tokens * 0.0
    raise ValueError(f"attention must be one of {ATTENTION_COUNTS}, got {attention!r}")


def attention_flops(model: Model, new_tokens, cached_tokens=0, attention="causal"):
    """Scores (Q·Kᵀ) and the weighted sum of values: 2 + 2 FLOPs per width per position."""
    _check.instance("model", model, Model)
    return 4 * model.layers * model.attention_width * positions_attended(new_tokens, cached_tokens, attention)


def forward_pass(model: Model, new_tokens, cached_tokens=0, batch=1, weight_bits=16, kv_bits=16,
                 attention="causal", kv_cache=True) -> PassCost:
    """FLOPs and bytes of one pass over ``batch`` sequences.

    ``attention="none"`` and ``kv_cache=False`` leave out attention among tokens and
    the cache's bytes, as the lesson's first estimates do.
    """
    _check.instance("model", model, Model)
    new_tokens = _check.count("new_tokens", new_tokens, minimum=1)
    cached_tokens = _check.count("cached_tokens", cached_tokens)
    batch = _check.count("batch", batch, minimum=1)
    weight_bits = _check.positive("weight_bits", weight_bits)
    kv_bits = _check.positive("kv_bits", kv_bits)
    if not isinstance(kv_cache, (bool, np.bool_)):
        raise TypeError(f"kv_cache must be True or False, got {kv_cache!r}")
    tokens = batch * new_tokens
    kv_per_token = model.kv_bytes_per_token(kv_bits) if kv_cache else 0.0
    return PassCost(
        tokens=tokens,
        linear_flops=linear_flops(model.active_parameters, tokens),
        attention_flops=batch * attention_flops(model, new_tokens, cached_tokens, attention),
        # Past a handful of tokens every expert is touched, so a pass reads all the weights.
        weight_bytes=weight_bytes(model.parameters, weight_bits),
        kv_read_bytes=batch * cached_tokens * kv_per_token,
        kv_write_bytes=tokens * kv_per_token,
    )


def arithmetic_intensity(flops, bytes_moved):
    """FLOPs per byte moved."""
    flops = _check.number("flops", flops, minimum=0)
    bytes_moved = _check.number("bytes_moved", bytes_moved, above=0)
    return flops / bytes_moved
