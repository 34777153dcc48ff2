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
from .memory import kv_cache_bytes, weight_bytes
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


def linear_flops(parameters, tokens):
    """2 FLOPs (multiply, add) for each weight and each token in the pass."""
    parameters = _check.number("parameters", parameters, above=0)
    tokens = _check.count("tokens", tokens)
    return 2 * parameters * tokens


def positions_attended(new_tokens, cached_tokens=0, attention="causal", window=None):
    """Σ over the new tokens of the positions each one attends to.

    Causal: the i-th new token (from 1) sees the cache and itself and the i − 1 new
    tokens before it, so the sum is N·C + N(N+1)/2. ``"full"`` lets every new token
    see every position, N·(C + N): the count without the causal mask's halving.
    A ``window`` (a sliding-window layer) caps what each token sees at that many positions.
    """
    new_tokens = _check.count("new_tokens", new_tokens)
    cached_tokens = _check.count("cached_tokens", cached_tokens)
    if window is not None:
        window = _check.count("window", window, minimum=1)
    if attention == "causal":
        if window is None:
            return new_tokens * cached_tokens + new_tokens * (new_tokens + 1) / 2

        def seen_by_first(n):  # Σ_{p=1..n} min(p, window)
            return np.where(n <= window, n * (n + 1) / 2, window * (window + 1) / 2 + (n - window) * window)

        return seen_by_first(cached_tokens + new_tokens) - seen_by_first(cached_tokens)
    if attention == "full":
        seen = cached_tokens + new_tokens
        return new_tokens * (seen if window is None else np.minimum(seen, window))
    if attention == "none":
        return new_tokens * 0.0
    raise ValueError(f"attention must be one of {ATTENTION_COUNTS}, got {attention!r}")


def attention_flops_per_position(model: Model) -> int:
    """FLOPs one new token spends in one layer on one position it attends to: the score (a dot
    product, 2 FLOPs a number) and the weighted value (2 a number), in every query head.

    Keys and values per KV head: 2 × (heads × head_dim + heads × value head width), which is
    4 × heads × head_dim when the widths match. Latent attention (MLA) is counted in the form
    DeepSeek-V2 describes for inference, with the key and value up-projections absorbed into
    the query and output projections (which ``linear_flops`` counts with the other weights): every
    head scores against the cached latent and rotary key, 2 × (latent + rotary) FLOPs, and sums
    the latents, 2 × latent. That is 278,528 a position for DeepSeek-V2's 128 heads, against
    81,920 for scores and sums at the per-head widths, which would need every cached latent
    expanded into per-head keys and values first. Prompts are counted the same way, though vLLM's MLA
    prefill does expand the latents (one up-projection a token, then attention at the per-head widths):
    for a long prompt the count here is then up to 3.4 times the attention FLOPs vLLM spends.
    """
    _check.instance("model", model, Model)
    if model.latent_attention:
        return model.heads * (2 * model.cache_width + 2 * model.kv_lora_rank)
    return 2 * (model.attention_width + model.value_width)


def attention_flops(model: Model, new_tokens, cached_tokens=0, attention="causal"):
    """Scores and the weighted sum of values (``attention_flops_per_position``) for each position
    each new token attends to, in every layer: 4 · layers · heads × head_dim per position when
    the widths match. Sliding-window layers attend to at most their window."""
    _check.instance("model", model, Model)
    model.check_context(_check.count("cached_tokens", cached_tokens) + _check.count("new_tokens", new_tokens),
                        "cached_tokens + new_tokens")
    per_position = attention_flops_per_position(model)
    positions = model.full_layers * positions_attended(new_tokens, cached_tokens, attention)
    if model.sliding_layers:
        positions = positions + model.sliding_layers * positions_attended(
            new_tokens, cached_tokens, attention, window=model.sliding_window)
    return per_position * positions


def _shown(value):
    value = np.asarray(value)
    return f"{value.item():g}" if value.ndim == 0 else repr(value.tolist())


def output_parameters(model: Model) -> int:
    """Parameters only a token whose next-token scores (logits) are asked for goes through: the last
    layer's feed-forward block and the output head. llama.cpp keeps only those tokens' rows after the
    last layer's attention (``inp_out_ids`` in ``src/models/llama.cpp``), so a prompt asking for its last
    token's logits sends its other tokens through every weight but these. Dense models only."""
    _check.instance("model", model, Model)
    if model.mixture_of_experts:
        raise ValueError(f"model must be dense (a mixture of experts routes its last layer's tokens), "
                         f"got {model.name!r}")
    return model._ffn_parameters(model.ffn) + model.vocab * model.hidden


def forward_pass(model: Model, new_tokens, cached_tokens=0, batch=1, weight_bits=16, kv_bits=16,
                 attention="causal", kv_cache=True, outputs=None) -> PassCost:
    """FLOPs and bytes of one pass over ``batch`` sequences.

    The pass reads the weights its tokens use (every weight, in a dense model; in a mixture
    of experts the experts its tokens are expected to route to, ``Model.parameters_read``),
    computes with the active parameters, reads the cache of ``cached_tokens`` tokens for
    every sequence (``memory.kv_cache_bytes``) and writes the new tokens' keys and values.
    ``attention="none"`` and ``kv_cache=False`` leave out attention among tokens and
    the cache's bytes, as the lesson's first estimates do. A context past the model's window
    (``cached_tokens + new_tokens``) raises ``models.ContextTooLong``. ``outputs`` (None: every new
    token) is how many of each sequence's new tokens have their logits computed; the others skip the
    ``output_parameters``, as in llama.cpp, where a prompt asks for its last token's logits only.
    """
    _check.instance("model", model, Model)
    new_tokens = _check.count("new_tokens", new_tokens, minimum=1)
    cached_tokens = _check.count("cached_tokens", cached_tokens)
    batch = _check.count("batch", batch, minimum=1)
    weight_bits = _check.finite("weight_bits", weight_bits, above=0)
    kv_bits = _check.finite("kv_bits", kv_bits, above=0)
    model.check_context(cached_tokens + new_tokens, "cached_tokens + new_tokens (the context after the pass)")
    if not isinstance(kv_cache, (bool, np.bool_)):
        raise TypeError(f"kv_cache must be True or False, got {kv_cache!r}")
    tokens = batch * new_tokens
    skipped = 0.0
    if outputs is not None:
        outputs = _check.count("outputs", outputs, minimum=1)
        if np.any(outputs > new_tokens):
            raise ValueError(f"outputs must be at most new_tokens ({_shown(new_tokens)}), got {_shown(outputs)}")
        skipped = linear_flops(output_parameters(model), batch * (new_tokens - outputs))
    return PassCost(
        tokens=tokens,
        linear_flops=linear_flops(model.active_parameters, tokens) - skipped,
        attention_flops=batch * attention_flops(model, new_tokens, cached_tokens, attention),
        weight_bytes=weight_bytes(model.parameters_read(tokens), weight_bits),
        kv_read_bytes=kv_cache_bytes(model, cached_tokens, batch, kv_bits) if kv_cache else 0.0 * (tokens + cached_tokens),
        kv_write_bytes=tokens * model.kv_bytes_per_token(kv_bits) if kv_cache else 0.0 * (tokens + cached_tokens),
    )


def arithmetic_intensity(flops, bytes_moved):
    """FLOPs per byte moved."""
    flops = _check.number("flops", flops, minimum=0)
    bytes_moved = _check.number("bytes_moved", bytes_moved, above=0)
    return flops / bytes_moved
