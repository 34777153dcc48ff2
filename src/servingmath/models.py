"""Transformer shapes, and the parameters counted from them.

A ``Model`` holds only what a Hugging Face ``config.json`` says about the network's
shape. Everything the course needs (parameters, KV-cache bytes per token, the width
of attention) is counted from that shape, never typed in.

``Model.from_hf_config`` reads the configs of the families listed in ``FAMILIES``.
Where a config leaves a key out, the count uses the default that family's
configuration class in Hugging Face ``transformers`` sets; any other ``model_type``
is refused rather than counted wrongly.
"""
from __future__ import annotations

import json
import operator
import os
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np

from . import _check

_WHOLE_AT_LEAST_ONE = ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "experts",
                       "experts_per_token", "norms_per_layer")
_WHOLE_OR_ZERO = ("expert_ffn", "shared_ffn", "dense_layers", "sliding_window", "sliding_layers", "kv_lora_rank",
                  "q_lora_rank", "rope_head_dim", "v_head_dim")
_SWITCHES = ("tied_embeddings", "qkv_bias", "output_bias", "mlp_bias", "shared_expert_gate", "qk_norm", "vision_tower")


_LARGEST = 2**53


def _whole(name, value, minimum):
    """A whole number as a Python int (numpy integers accepted), at least ``minimum``."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a whole number, got {value!r}")
    try:
        whole = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be a whole number, got {value!r}") from None
    if whole < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value!r}")
    if whole > _LARGEST:
        raise ValueError(f"{name} must be at most {_LARGEST:,} (beyond it floats lose whole numbers), got {value!r}")
    return whole


class ContextTooLong(ValueError):
    """A context (a cache, a prompt and its reply) longer than the model reads."""


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer: Llama, Mistral, Qwen, Gemma, Phi-3 and DeepSeek alike.

    Each layer has attention (query, key, value and output projections), a gated
    feed-forward block (gate, up, down) and ``norms_per_layer`` RMSNorm weight vectors.

    Mixtures of experts: ``experts`` > 1 makes the feed-forward block of every layer but
    ``dense_layers`` a set of routed experts, each ``expert_ffn`` wide (0: ``ffn``), of
    which ``experts_per_token`` run for each token, beside ``shared_ffn`` worth of shared
    experts that every token uses (``shared_expert_gate``: Qwen-MoE's one-output gate on them).

    Latent attention (DeepSeek's MLA): ``kv_lora_rank`` > 0 compresses keys and values into
    one vector of that width per token and layer, cached with the ``rope_head_dim`` rotary
    part shared by all heads; queries go through a ``q_lora_rank`` bottleneck (0: none).
    ``head_dim`` is then the query/key head width (rotary part included) and ``v_head_dim``
    the value head width.

    Sliding windows: ``sliding_layers`` of the layers attend to (and cache) at most the last
    ``sliding_window`` tokens.

    ``vision_tower``: the checkpoint also carries an image encoder (Gemma 3 4B and 27B), which the
    counts here leave out; they are of the language model alone.

    ``context_window``: the most tokens (prompt and reply together) the model reads, its
    config's ``max_position_embeddings`` or its family's default. Every model of the catalog
    and every model read from a config has one; the package refuses a longer context
    (``ContextTooLong``). None only for a shape built by hand that states none.
    """

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    tied_embeddings: bool = False
    qkv_bias: bool = False
    output_bias: bool = False
    mlp_bias: bool = False
    experts: int = 1
    experts_per_token: int = 1
    expert_ffn: int = 0
    shared_ffn: int = 0
    shared_expert_gate: bool = False
    dense_layers: int = 0
    norms_per_layer: int = 2
    qk_norm: bool = False
    sliding_window: int = 0
    sliding_layers: int = 0
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    rope_head_dim: int = 0
    v_head_dim: int = 0
    context_window: int | None = None
    vision_tower: bool = False

    def __post_init__(self):
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {self.name!r}")
        for name in _WHOLE_AT_LEAST_ONE:
            object.__setattr__(self, name, _whole(name, getattr(self, name), 1))
        for name in _WHOLE_OR_ZERO:
            object.__setattr__(self, name, _whole(name, getattr(self, name), 0))
        for name in _SWITCHES:
            value = getattr(self, name)
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{name} must be True or False, got {value!r}")
            object.__setattr__(self, name, bool(value))
        if self.context_window is not None:
            object.__setattr__(self, "context_window", _whole("context_window", self.context_window, 1))
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads must divide heads ({self.heads}), got {self.kv_heads!r}")
        if self.experts_per_token > self.experts:
            raise ValueError(
                f"experts_per_token must be at most experts ({self.experts}), got {self.experts_per_token!r}")
        if self.dense_layers > self.layers:
            raise ValueError(f"dense_layers must be at most layers ({self.layers}), got {self.dense_layers!r}")
        if self.sliding_layers > self.layers:
            raise ValueError(f"sliding_layers must be at most layers ({self.layers}), got {self.sliding_layers!r}")
        if self.sliding_layers and not self.sliding_window:
            raise ValueError(f"sliding_window must be set when sliding_layers is, got {self.sliding_window!r}")
        if self.shared_expert_gate and not self.shared_ffn:
            raise ValueError(f"shared_expert_gate needs shared experts (shared_ffn > 0), got {self.shared_ffn!r}")
        if self.rope_head_dim >= self.head_dim and self.kv_lora_rank:
            raise ValueError(f"rope_head_dim must be less than head_dim ({self.head_dim}), got {self.rope_head_dim!r}")
        if (self.q_lora_rank or self.rope_head_dim) and not self.kv_lora_rank:
            raise ValueError(f"q_lora_rank and rope_head_dim belong to latent attention: kv_lora_rank must be set, "
                             f"got {self.kv_lora_rank!r}")

    # -- the context it reads -----------------------------------------------------------
    def check_context(self, tokens, name="context_tokens"):
        """Return ``tokens`` (a number or an array) if none is past the context window;
        otherwise raise ``ContextTooLong`` naming the model, its window and the value."""
        if self.context_window is None:
            return tokens
        if type(tokens) in (int, float):  # the common case, without numpy
            past = tokens > self.context_window
        else:
            past = np.any(np.asarray(tokens) > self.context_window)
        if past:
            largest = np.max(tokens)
            shown = f"{int(largest):,}" if float(largest).is_integer() else f"{float(largest):g}"
            raise ContextTooLong(
                f"{name} must be at most {self.name}'s context window of {self.context_window:,} tokens, "
                f"got {shown}" + ("" if np.ndim(tokens) == 0 else f" (the largest of {np.size(tokens)})"))
        return tokens

    # -- the shape's parts ---------------------------------------------------------------
    @property
    def mixture_of_experts(self) -> bool:
        return self.experts > 1

    @property
    def latent_attention(self) -> bool:
        """True for DeepSeek's multi-head latent attention (MLA)."""
        return self.kv_lora_rank > 0

    @property
    def value_head_dim(self) -> int:
        return self.v_head_dim or self.head_dim

    @property
    def attention_width(self) -> int:
        """Width of the query heads together, heads × head_dim (the ``d`` of attention FLOPs)."""
        return self.heads * self.head_dim

    @property
    def value_width(self) -> int:
        """Width of the value heads together: heads × the value head width (= ``attention_width`` but in MLA)."""
        return self.heads * self.value_head_dim

    @property
    def moe_layers(self) -> int:
        """Layers whose feed-forward block is a mixture of experts."""
        return self.layers - self.dense_layers if self.mixture_of_experts else 0

    @property
    def full_layers(self) -> int:
        """Layers that attend to, and cache, every earlier token."""
        return self.layers - self.sliding_layers

    @property
    def expert_width(self) -> int:
        return self.expert_ffn or self.ffn

    # -- parameters, counted from the shape -------------------------------------------
    def _attention_parameters(self) -> int:
        if self.latent_attention:
            if self.q_lora_rank:  # down to the query latent, its norm, up to every head's query
                q = self.hidden * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * self.attention_width
            else:
                q = self.hidden * self.attention_width
            nope = self.head_dim - self.rope_head_dim
            kv = (self.hidden * (self.kv_lora_rank + self.rope_head_dim) + self.kv_lora_rank
                  + self.kv_lora_rank * self.heads * (nope + self.value_head_dim))
            bias = (self.q_lora_rank + self.kv_lora_rank + self.rope_head_dim) if self.qkv_bias else 0
        else:
            q = self.hidden * self.attention_width
            kv = self.hidden * self.kv_heads * (self.head_dim + self.value_head_dim)
            bias = (self.attention_width + self.kv_heads * (self.head_dim + self.value_head_dim)
                    if self.qkv_bias else 0)
        out = self.value_width * self.hidden + (self.hidden if self.output_bias else 0)
        norms = 2 * self.head_dim if self.qk_norm else 0
        return q + kv + out + bias + norms

    def _ffn_parameters(self, width) -> int:
        """A gated feed-forward block ``width`` wide: gate, up and down projections."""
        bias = (2 * width + self.hidden) if self.mlp_bias else 0
        return 3 * self.hidden * width + bias

    @property
    def expert_parameters(self) -> int:
        """Parameters of one routed expert."""
        return self._ffn_parameters(self.expert_width)

    def _parameters_with(self, experts):
        """Every parameter but the routed experts', plus ``experts`` of them in each mixture layer."""
        per_layer = self._attention_parameters() + self.norms_per_layer * self.hidden
        total = self.layers * per_layer + (self.layers - self.moe_layers) * self._ffn_parameters(self.ffn)
        if self.mixture_of_experts:
            router = self.hidden * self.experts
            shared = (self._ffn_parameters(self.shared_ffn) if self.shared_ffn else 0) + (
                self.hidden if self.shared_expert_gate else 0)
            total += self.moe_layers * (router + shared)
            total = total + self.moe_layers * experts * self.expert_parameters
        tables = 1 if self.tied_embeddings else 2
        return total + tables * self.vocab * self.hidden + self.hidden  # + the final norm

    @property
    def parameters(self) -> int:
        """Every parameter stored: what a pass that touches every expert has to read."""
        return self._parameters_with(self.experts)

    @property
    def active_parameters(self) -> int:
        """Parameters one token computes with (equal to ``parameters`` unless a mixture of experts)."""
        return self._parameters_with(self.experts_per_token)

    def experts_touched(self, tokens):
        """Routed experts a pass of ``tokens`` tokens is expected to use in each mixture layer.

        Routing is taken as uniform and independent: each token picks ``experts_per_token``
        different experts out of ``experts``, all equally likely, so a given expert is missed
        by every token with probability (1 − k/E)^tokens and the expected count is
        E · (1 − (1 − k/E)^tokens). One token uses k experts; a few dozen use them all.
        Real routers are not uniform, so this is a floor on the experts a batch wakes up
        only on average.
        """
        tokens = _check.count("tokens", tokens)
        missed = (1 - self.experts_per_token / self.experts) ** tokens
        return self.experts * (1 - missed)

    def parameters_read(self, tokens):
        """Parameters a pass of ``tokens`` tokens reads: all but the routed experts nobody uses.

        A dense model reads all of them; a mixture of experts reads the experts the tokens
        are expected to route to (``experts_touched``).
        """
        if not self.mixture_of_experts:
            return self.parameters + 0 * _check.count("tokens", tokens)
        return self._parameters_with(self.experts_touched(tokens))

    # -- the KV cache ------------------------------------------------------------------
    @property
    def cache_width(self) -> int:
        """Numbers one token leaves in each layer's cache: a key and a value per KV head,
        or in MLA the compressed latent and the shared rotary key."""
        if self.latent_attention:
            return self.kv_lora_rank + self.rope_head_dim
        return self.kv_heads * (self.head_dim + self.value_head_dim)

    def kv_bytes_per_token(self, kv_bits=16):
        """Bytes one token adds to the cache while every layer keeps it:
        2 × layers × KV heads × head_dim × bytes (layers × latent width × bytes in MLA).
        For the bytes of a whole context (windows included) use ``memory.kv_cache_bytes``."""
        kv_bits = _check.finite("kv_bits", kv_bits, above=0)
        return self.layers * self.cache_width * kv_bits / 8

    # -- from a Hugging Face config -------------------------------------------------
    @classmethod
    def from_hf_config(cls, config, name: str | None = None) -> "Model":
        """Build a Model from a Hugging Face ``config.json``: its dict, or a path to the file
        (or to the folder holding it).

        Keys the config leaves out take the defaults of that family's configuration class
        in ``transformers``; a ``model_type`` outside ``FAMILIES`` is refused.
        """
        config = _read_config(config)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a string or None, got {name!r}")
        model_type = config.get("model_type")
        if not isinstance(model_type, str) or model_type not in FAMILIES:
            raise ValueError(f"model_type {model_type!r} is not supported; supported: {sorted(FAMILIES)}")
        try:
            return FAMILIES[model_type](config, name)
        except TypeError as error:
            raise TypeError(f"config (model_type {model_type!r}) holds a value of the wrong kind: "
                            f"{_in_config_keys(error)}") from None
        except (ValueError, ArithmeticError, KeyError, AttributeError) as error:
            raise ValueError(f"config (model_type {model_type!r}) does not describe a model: "
                             f"{_in_config_keys(error)}") from None


# The config.json key behind each of Model's fields, for messages about a config.
_CONFIG_KEYS = {
    "layers": "num_hidden_layers", "hidden": "hidden_size", "heads": "num_attention_heads",
    "kv_heads": "num_key_value_heads", "ffn": "intermediate_size", "vocab": "vocab_size",
    "experts_per_token": "num_experts_per_tok", "experts": "num_experts",
    "expert_ffn": "moe_intermediate_size", "dense_layers": "first_k_dense_replace",
    "sliding_layers": "layer_types", "rope_head_dim": "qk_rope_head_dim", "kv_lora_rank": "kv_lora_rank",
    "q_lora_rank": "q_lora_rank", "v_head_dim": "v_head_dim", "context_window": "max_position_embeddings",
}


def _in_config_keys(error) -> str:
    """An error about a Model field, told in the config's own key names."""
    text = str(error)
    for field, key in _CONFIG_KEYS.items():
        text = text.replace(f"at most {field} (", f"at most config[{key!r}] (").replace(
            f"divide {field} (", f"divide config[{key!r}] (")
        if text.startswith(f"{field} must"):
            text = f"config[{key!r}]" + text[len(field):]
    return text


def _switch(key, value):
    """A config's true/false value: a JSON boolean, not a string or a number that looks like one."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ValueError(f"config[{key!r}] must be true or false, got {value!r}")


def _count(key, value, minimum, optional=False):
    """A whole-number config value of at least ``minimum`` (None allowed where ``optional``)."""
    if value is None and optional:
        return None
    return _whole(f"config[{key!r}]", value, minimum)


_LAYER_KINDS = ("sliding_attention", "full_attention")


def _layer_types(values):
    """The config's ``layer_types``, checked: one of each kind per layer."""
    kinds = values.get("layer_types")
    if kinds is None:
        return None
    layers = values["num_hidden_layers"]
    if not isinstance(kinds, (list, tuple)) or len(kinds) != layers or any(k not in _LAYER_KINDS for k in kinds):
        raise ValueError(f"config['layer_types'] must list {layers} entries, each one of {list(_LAYER_KINDS)}, "
                         f"got {kinds!r}")
    return kinds


def _read_config(config) -> dict:
    """The config as a dict: given as one, or read from a ``config.json`` path (or its folder)."""
    if isinstance(config, Mapping):
        return dict(config)
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        try:
            with open(path, encoding="utf-8") as file:
                loaded = json.load(file)
        except OSError as error:
            raise ValueError(f"config must be a dict or the path of a config.json, got {config!r} ({error})") from None
        except json.JSONDecodeError as error:
            raise ValueError(f"config {config!r} is not valid JSON: {error}") from None
        except UnicodeDecodeError as error:
            raise ValueError(f"config {config!r} is not UTF-8 text, as a config.json must be: {error}") from None
        if not isinstance(loaded, dict):
            raise ValueError(f"config {config!r} must hold a JSON object, got {type(loaded).__name__}")
        return loaded
    raise TypeError(f"config must be a dict from config.json or its path, got {config!r}")


# Each family's defaults for the keys the count reads, as its configuration class in
# transformers sets them (LlamaConfig, MistralConfig, ... DeepseekV3Config).
_LLAMA = dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
              num_attention_heads=32, num_key_value_heads=None, head_dim=None, tie_word_embeddings=False,
              attention_bias=False, mlp_bias=False, max_position_embeddings=2048)
_MISTRAL = dict(vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                num_attention_heads=32, num_key_value_heads=8, head_dim=None, tie_word_embeddings=False,
                sliding_window=4096, max_position_embeddings=4096 * 32)
_MIXTRAL = dict(_MISTRAL, sliding_window=None, num_local_experts=8, num_experts_per_tok=2)
_QWEN2 = dict(vocab_size=151936, hidden_size=4096, intermediate_size=22016, num_hidden_layers=32,
              num_attention_heads=32, num_key_value_heads=32, head_dim=None, tie_word_embeddings=False,
              use_sliding_window=False, sliding_window=4096, max_window_layers=28, max_position_embeddings=32768)
_QWEN3 = dict(_QWEN2, head_dim=128, attention_bias=False)
_QWEN2_MOE = dict(_QWEN2, hidden_size=2048, intermediate_size=5632, num_hidden_layers=24, num_attention_heads=16,
                  num_key_value_heads=16, decoder_sparse_step=1, moe_intermediate_size=1408,
                  shared_expert_intermediate_size=5632, num_experts_per_tok=4, num_experts=60, mlp_only_layers=None,
                  max_position_embeddings=8192)
_QWEN3_MOE = dict(_QWEN2, hidden_size=2048, intermediate_size=6144, num_hidden_layers=24, num_attention_heads=32,
                  num_key_value_heads=4, head_dim=None, attention_bias=False, decoder_sparse_step=1,
                  moe_intermediate_size=768, num_experts_per_tok=8, num_experts=128, mlp_only_layers=None)
_GEMMA = dict(vocab_size=256000, hidden_size=3072, intermediate_size=24576, num_hidden_layers=28,
              num_attention_heads=16, num_key_value_heads=16, head_dim=256, tie_word_embeddings=True,
              attention_bias=False, max_position_embeddings=8192)
_GEMMA2 = dict(_GEMMA, hidden_size=2304, intermediate_size=9216, num_hidden_layers=26, num_attention_heads=8,
               num_key_value_heads=4, sliding_window=4096)
_GEMMA3_TEXT = dict(_GEMMA2, vocab_size=262208, sliding_window=4096, sliding_window_pattern=6,
                    max_position_embeddings=131072)
_PHI3 = dict(vocab_size=32064, hidden_size=3072, intermediate_size=8192, num_hidden_layers=32,
             num_attention_heads=32, num_key_value_heads=None, tie_word_embeddings=False, sliding_window=None,
             max_position_embeddings=4096)
_DEEPSEEK_V2 = dict(vocab_size=102400, hidden_size=4096, intermediate_size=11008, moe_intermediate_size=1407,
                    num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32, n_shared_experts=2,
                    n_routed_experts=64, num_experts_per_tok=None, first_k_dense_replace=0,
                    kv_lora_rank=512, q_lora_rank=1536, qk_rope_head_dim=64, v_head_dim=128,
                    qk_nope_head_dim=128, tie_word_embeddings=False, attention_bias=False,
                    max_position_embeddings=2048)
_DEEPSEEK_V3 = dict(_DEEPSEEK_V2, vocab_size=129280, hidden_size=7168, intermediate_size=18432,
                    moe_intermediate_size=2048, num_hidden_layers=61, num_attention_heads=128,
                    num_key_value_heads=128, n_shared_experts=1, n_routed_experts=256, num_experts_per_tok=8,
                    first_k_dense_replace=3, max_position_embeddings=4096)


def _with_defaults(config, defaults):
    """The config's value for each key, or the family's default where the key is absent."""
    return {**defaults, **{key: value for key, value in config.items() if key in defaults or key == "layer_types"}}


def _sliding_layers(values, every_layer):
    """Layers attending through a window: from ``layer_types`` where the config lists them,
    else every layer when the family slides everywhere and a window is set."""
    kinds = _layer_types(values)
    if kinds is not None:
        return sum(1 for kind in kinds if kind == "sliding_attention")
    return values["num_hidden_layers"] if every_layer and values.get("sliding_window") else 0


def _core(values, name, config, **extra):
    for key in ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size"):
        values[key] = _whole(f"config[{key!r}]", values[key], 1)
    for key in ("num_key_value_heads", "head_dim"):
        if values.get(key) is not None:
            values[key] = _whole(f"config[{key!r}]", values[key], 1)
    heads = values["num_attention_heads"]
    if values.get("head_dim") is None and values["hidden_size"] % heads:
        raise ValueError(f"config['hidden_size'] must be a multiple of config['num_attention_heads'] ({heads}) "
                         f"when the config gives no head_dim, got {values['hidden_size']!r}")
    if values.get("sliding_window") is not None:
        _count("sliding_window", values["sliding_window"], 0)
    return dict(
        name=name or config.get("_name_or_path") or config.get("model_type"),
        layers=values["num_hidden_layers"], hidden=values["hidden_size"], heads=heads,
        kv_heads=values.get("num_key_value_heads") or heads,
        head_dim=values.get("head_dim") or values["hidden_size"] // heads,
        ffn=values["intermediate_size"], vocab=values["vocab_size"],
        tied_embeddings=_switch("tie_word_embeddings", values["tie_word_embeddings"]),
        context_window=_whole("config['max_position_embeddings']", values["max_position_embeddings"], 1), **extra)


def _window(values, layers):
    return dict(sliding_window=values.get("sliding_window") or 0, sliding_layers=layers) if layers else {}


def _llama(config, name):
    values = _with_defaults(config, _LLAMA)
    bias = _switch("attention_bias", values["attention_bias"])
    return Model(**_core(values, name, config, qkv_bias=bias, output_bias=bias,
                         mlp_bias=_switch("mlp_bias", values["mlp_bias"])))


def _mistral(config, name, defaults=_MISTRAL):
    values = _with_defaults(config, defaults)
    experts = _count("num_local_experts", values.get("num_local_experts"), 1, optional=True) or 1
    moe = dict(experts=experts, experts_per_token=_count("num_experts_per_tok", values["num_experts_per_tok"], 1)
               ) if experts > 1 else {}
    return Model(**_core(values, name, config, **moe, **_window(values, _sliding_layers(values, True))))


def _mixtral(config, name):
    return _mistral(config, name, _MIXTRAL)


def _qwen_window(values):
    if values.get("layer_types") is not None:
        return _window(values, _sliding_layers(values, False))
    if not _switch("use_sliding_window", values["use_sliding_window"]) or not values.get("sliding_window"):
        return {}
    layers = max(0, values["num_hidden_layers"] - values["max_window_layers"])
    return _window(values, layers)


def _qwen_moe(values):
    """Mixture-of-experts keys shared by Qwen2-MoE and Qwen3-MoE: a layer is sparse unless listed in
    ``mlp_only_layers`` or off the ``decoder_sparse_step``."""
    experts = _count("num_experts", values["num_experts"], 0, optional=True) or 0
    if experts <= 1:
        return {}
    only = values["mlp_only_layers"]
    if only is not None and (not isinstance(only, (list, tuple)) or not all(isinstance(i, int) for i in only)):
        raise ValueError(f"config['mlp_only_layers'] must list layer numbers, got {only!r}")
    dense_only = set(only or [])
    step = _count("decoder_sparse_step", values["decoder_sparse_step"], 1)
    _count("moe_intermediate_size", values["moe_intermediate_size"], 1)
    sparse = sum(1 for layer in range(values["num_hidden_layers"])
                 if layer not in dense_only and (layer + 1) % step == 0)
    shared = _count("shared_expert_intermediate_size", values.get("shared_expert_intermediate_size"), 0,
                    optional=True) or 0
    return dict(experts=experts, experts_per_token=values["num_experts_per_tok"],
                expert_ffn=values["moe_intermediate_size"], dense_layers=values["num_hidden_layers"] - sparse,
                shared_ffn=shared, shared_expert_gate=bool(shared))


def _qwen2(config, name, defaults=_QWEN2):
    values = _with_defaults(config, defaults)
    return Model(**_core(values, name, config, qkv_bias=True, **_qwen_window(values)))


def _qwen2_moe(config, name):
    values = _with_defaults(config, _QWEN2_MOE)
    return Model(**_core(values, name, config, qkv_bias=True, **_qwen_moe(values), **_qwen_window(values)))


def _qwen3(config, name, defaults=_QWEN3):
    values = _with_defaults(config, defaults)
    bias = _switch("attention_bias", values["attention_bias"])
    moe = _qwen_moe(values) if "num_experts" in defaults else {}
    return Model(**_core(values, name, config, qkv_bias=bias, output_bias=bias, qk_norm=True, **moe,
                         **_qwen_window(values)))


def _qwen3_moe(config, name):
    return _qwen3(config, name, _QWEN3_MOE)


def _gemma(config, name):
    values = _with_defaults(config, _GEMMA)
    bias = _switch("attention_bias", values["attention_bias"])
    return Model(**_core(values, name, config, qkv_bias=bias, output_bias=bias))


def _gemma2(config, name):
    values = _with_defaults(config, _GEMMA2)
    bias = _switch("attention_bias", values["attention_bias"])
    if values.get("layer_types") is not None:
        sliding = _sliding_layers(values, False)
    else:  # every other layer, starting with the first
        sliding = (values["num_hidden_layers"] + 1) // 2 if values.get("sliding_window") else 0
    return Model(**_core(values, name, config, qkv_bias=bias, output_bias=bias, norms_per_layer=4,
                         **_window(values, sliding)))


def _gemma3_text(config, name, vision_tower=False):
    values = _with_defaults(config, _GEMMA3_TEXT)
    bias = _switch("attention_bias", values["attention_bias"])
    if values.get("layer_types") is not None:
        sliding = _sliding_layers(values, False)
    elif values.get("sliding_window"):  # all but every ``pattern``-th layer slide
        pattern = _count("sliding_window_pattern",
                         config.get("_sliding_window_pattern") or values["sliding_window_pattern"], 1)
        sliding = values["num_hidden_layers"] - values["num_hidden_layers"] // pattern
    else:
        sliding = 0
    return Model(**_core(values, name, config, qkv_bias=bias, output_bias=bias, norms_per_layer=4, qk_norm=True,
                         vision_tower=vision_tower, **_window(values, sliding)))


def _gemma3(config, name):
    """Gemma 3's multimodal config nests the language model's keys under ``text_config``;
    the count is of that language model (the vision tower is left out)."""
    text = config.get("text_config") or {}
    if not isinstance(text, Mapping):
        raise TypeError(f"config['text_config'] must be a dict, got {text!r}")
    # Absent keys (the whole text_config, or its model_type) take Gemma3TextConfig's defaults.
    inner = {"model_type": "gemma3_text", **text,
             "_name_or_path": config.get("_name_or_path") or config.get("model_type")}
    return _gemma3_text(inner, name, vision_tower=True)


def _phi3(config, name):
    values = _with_defaults(config, _PHI3)
    return Model(**_core(values, name, config, **_window(values, _sliding_layers(values, True))))


def _deepseek(config, name, defaults):
    values = _with_defaults(config, defaults)
    experts = _count("n_routed_experts", values["n_routed_experts"], 0, optional=True) or 1
    _count("kv_lora_rank", values["kv_lora_rank"], 1)
    _count("q_lora_rank", values["q_lora_rank"], 1, optional=True)   # None: no query bottleneck; 0 is not one
    _count("v_head_dim", values["v_head_dim"], 1)
    _count("qk_rope_head_dim", values["qk_rope_head_dim"], 0)
    _count("qk_nope_head_dim", values["qk_nope_head_dim"], 0)
    moe = {}
    if experts > 1:
        _count("moe_intermediate_size", values["moe_intermediate_size"], 1)
        _count("first_k_dense_replace", values["first_k_dense_replace"], 0)
        if not values["num_experts_per_tok"]:
            raise ValueError(f"config must give num_experts_per_tok for its {experts} routed experts, "
                             f"got {values['num_experts_per_tok']!r}")
        # transformers makes every layer from first_k_dense_replace on a mixture of experts
        sparse = max(0, values["num_hidden_layers"] - values["first_k_dense_replace"])
        moe = dict(experts=experts, experts_per_token=values["num_experts_per_tok"],
                   expert_ffn=values["moe_intermediate_size"], dense_layers=values["num_hidden_layers"] - sparse,
                   shared_ffn=(values["n_shared_experts"] or 0) * values["moe_intermediate_size"])
    bias = _switch("attention_bias", values["attention_bias"])
    core = _core(values, name, config, qkv_bias=bias, output_bias=bias, **moe,
                 kv_lora_rank=values["kv_lora_rank"], q_lora_rank=values["q_lora_rank"] or 0,
                 rope_head_dim=values["qk_rope_head_dim"], v_head_dim=values["v_head_dim"])
    core["head_dim"] = values["qk_nope_head_dim"] + values["qk_rope_head_dim"]
    core["kv_heads"] = core["heads"]
    return Model(**core)


def _deepseek_v2(config, name):
    return _deepseek(config, name, _DEEPSEEK_V2)


def _deepseek_v3(config, name):
    return _deepseek(config, name, _DEEPSEEK_V3)


# The model types ``from_hf_config`` reads. Llama 2, 3, 3.1, 3.2 and 3.3 are all "llama";
# Qwen2.5 is "qwen2"; Gemma 3's text-only checkpoints are "gemma3_text", its multimodal ones "gemma3".
FAMILIES: Mapping[str, object] = MappingProxyType({
    "llama": _llama, "mistral": _mistral, "mixtral": _mixtral,
    "qwen2": _qwen2, "qwen2_moe": _qwen2_moe, "qwen3": _qwen3, "qwen3_moe": _qwen3_moe,
    "gemma": _gemma, "gemma2": _gemma2, "gemma3": _gemma3, "gemma3_text": _gemma3_text,
    "phi3": _phi3, "deepseek_v2": _deepseek_v2, "deepseek_v3": _deepseek_v3,
})


# The fields of each model's published config.json that the count needs.
CONFIGS: Mapping[str, Mapping] = MappingProxyType({
    "llama-3-8b": {
        "_name_or_path": "Llama 3 8B", "model_type": "llama", "max_position_embeddings": 8192, "num_hidden_layers": 32,
        "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "vocab_size": 128256, "tie_word_embeddings": False,
        "attention_bias": False, "mlp_bias": False,
    },
    "llama-3.2-1b": {
        "_name_or_path": "Llama 3.2 1B", "model_type": "llama", "max_position_embeddings": 131072, "num_hidden_layers": 16,
        "hidden_size": 2048, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
        "intermediate_size": 8192, "vocab_size": 128256, "tie_word_embeddings": True,
        "attention_bias": False, "mlp_bias": False,
    },
    "llama-3-70b": {
        "_name_or_path": "Llama 3 70B", "model_type": "llama", "max_position_embeddings": 8192, "num_hidden_layers": 80,
        "hidden_size": 8192, "num_attention_heads": 64, "num_key_value_heads": 8,
        "intermediate_size": 28672, "vocab_size": 128256, "tie_word_embeddings": False,
    },
    "mistral-7b": {
        "_name_or_path": "Mistral 7B v0.1", "model_type": "mistral", "max_position_embeddings": 32768, "num_hidden_layers": 32,
        "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "vocab_size": 32000, "tie_word_embeddings": False,
    },
    "qwen2-7b": {
        "_name_or_path": "Qwen2 7B", "model_type": "qwen2", "max_position_embeddings": 131072, "num_hidden_layers": 28,
        "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
        "intermediate_size": 18944, "vocab_size": 152064, "tie_word_embeddings": False,
    },
    "mixtral-8x7b": {
        "_name_or_path": "Mixtral 8x7B", "model_type": "mixtral", "max_position_embeddings": 32768, "num_hidden_layers": 32,
        "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "vocab_size": 32000, "tie_word_embeddings": False,
        "num_local_experts": 8, "num_experts_per_tok": 2,
    },
    # -- the families from_hf_config reads, one or two published checkpoints each --------
    "llama-2-7b": {
        "_name_or_path": "Llama 2 7B", "model_type": "llama", "max_position_embeddings": 4096, "num_hidden_layers": 32, "hidden_size": 4096,
        "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 32000,
        "tie_word_embeddings": False,
    },
    "llama-2-70b": {
        "_name_or_path": "Llama 2 70B", "model_type": "llama", "max_position_embeddings": 4096, "num_hidden_layers": 80, "hidden_size": 8192,
        "num_attention_heads": 64, "num_key_value_heads": 8, "intermediate_size": 28672, "vocab_size": 32000,
        "tie_word_embeddings": False,
    },
    "llama-3.1-8b": {
        "_name_or_path": "Llama 3.1 8B", "model_type": "llama", "max_position_embeddings": 131072,
        "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "vocab_size": 128256, "tie_word_embeddings": False,
        "attention_bias": False, "mlp_bias": False,
    },
    "llama-3.1-405b": {
        "_name_or_path": "Llama 3.1 405B", "model_type": "llama", "max_position_embeddings": 131072, "num_hidden_layers": 126, "hidden_size": 16384,
        "num_attention_heads": 128, "num_key_value_heads": 8, "intermediate_size": 53248, "vocab_size": 128256,
        "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
    },
    "llama-3.2-3b": {
        "_name_or_path": "Llama 3.2 3B", "model_type": "llama", "max_position_embeddings": 131072, "num_hidden_layers": 28, "hidden_size": 3072,
        "num_attention_heads": 24, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 8192,
        "vocab_size": 128256, "tie_word_embeddings": True, "attention_bias": False, "mlp_bias": False,
    },
    "llama-3.3-70b": {
        "_name_or_path": "Llama 3.3 70B", "model_type": "llama", "max_position_embeddings": 131072, "num_hidden_layers": 80, "hidden_size": 8192,
        "num_attention_heads": 64, "num_key_value_heads": 8, "intermediate_size": 28672, "vocab_size": 128256,
        "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
    },
    "mistral-7b-v0.3": {
        "_name_or_path": "Mistral 7B v0.3", "model_type": "mistral", "max_position_embeddings": 32768, "num_hidden_layers": 32, "hidden_size": 4096,
        "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32768,
        "tie_word_embeddings": False, "sliding_window": None,
    },
    "mixtral-8x22b": {
        "_name_or_path": "Mixtral 8x22B", "model_type": "mixtral", "max_position_embeddings": 65536, "num_hidden_layers": 56, "hidden_size": 6144,
        "num_attention_heads": 48, "num_key_value_heads": 8, "intermediate_size": 16384, "vocab_size": 32768,
        "tie_word_embeddings": False, "num_local_experts": 8, "num_experts_per_tok": 2, "sliding_window": None,
    },
    "qwen2.5-0.5b": {
        "_name_or_path": "Qwen2.5 0.5B", "model_type": "qwen2", "max_position_embeddings": 32768, "num_hidden_layers": 24, "hidden_size": 896,
        "num_attention_heads": 14, "num_key_value_heads": 2, "intermediate_size": 4864, "vocab_size": 151936,
        "tie_word_embeddings": True, "use_sliding_window": False, "sliding_window": 32768, "max_window_layers": 21,
    },
    "qwen2.5-7b": {
        "_name_or_path": "Qwen2.5 7B", "model_type": "qwen2", "max_position_embeddings": 131072, "num_hidden_layers": 28, "hidden_size": 3584,
        "num_attention_heads": 28, "num_key_value_heads": 4, "intermediate_size": 18944, "vocab_size": 152064,
        "tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": 131072, "max_window_layers": 28,
    },
    "qwen2.5-72b": {
        "_name_or_path": "Qwen2.5 72B", "model_type": "qwen2", "max_position_embeddings": 131072, "num_hidden_layers": 80, "hidden_size": 8192,
        "num_attention_heads": 64, "num_key_value_heads": 8, "intermediate_size": 29568, "vocab_size": 152064,
        "tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": 131072, "max_window_layers": 80,
    },
    "qwen3-0.6b": {
        "_name_or_path": "Qwen3 0.6B", "model_type": "qwen3", "max_position_embeddings": 40960, "num_hidden_layers": 28, "hidden_size": 1024,
        "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072,
        "vocab_size": 151936, "tie_word_embeddings": True, "attention_bias": False, "use_sliding_window": False,
    },
    "qwen3-8b": {
        "_name_or_path": "Qwen3 8B", "model_type": "qwen3", "max_position_embeddings": 40960, "num_hidden_layers": 36, "hidden_size": 4096,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 12288,
        "vocab_size": 151936, "tie_word_embeddings": False, "attention_bias": False, "use_sliding_window": False,
    },
    "qwen1.5-moe-a2.7b": {
        "_name_or_path": "Qwen1.5-MoE-A2.7B", "model_type": "qwen2_moe", "max_position_embeddings": 8192, "num_hidden_layers": 24,
        "hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 5632,
        "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "num_experts": 60,
        "num_experts_per_tok": 4, "decoder_sparse_step": 1, "vocab_size": 151936, "tie_word_embeddings": False,
    },
    "qwen2-57b-a14b": {
        "_name_or_path": "Qwen2-57B-A14B", "model_type": "qwen2_moe", "max_position_embeddings": 131072, "num_hidden_layers": 28, "hidden_size": 3584,
        "num_attention_heads": 28, "num_key_value_heads": 4, "intermediate_size": 18944,
        "moe_intermediate_size": 2560, "shared_expert_intermediate_size": 20480, "num_experts": 64,
        "num_experts_per_tok": 8, "decoder_sparse_step": 1, "vocab_size": 151936, "tie_word_embeddings": False,
    },
    "qwen3-30b-a3b": {
        "_name_or_path": "Qwen3-30B-A3B", "model_type": "qwen3_moe", "max_position_embeddings": 40960, "num_hidden_layers": 48, "hidden_size": 2048,
        "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144,
        "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1,
        "mlp_only_layers": [], "vocab_size": 151936, "tie_word_embeddings": False,
    },
    "qwen3-235b-a22b": {
        "_name_or_path": "Qwen3-235B-A22B", "model_type": "qwen3_moe", "max_position_embeddings": 40960, "num_hidden_layers": 94, "hidden_size": 4096,
        "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 12288,
        "moe_intermediate_size": 1536, "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1,
        "mlp_only_layers": [], "vocab_size": 151936, "tie_word_embeddings": False,
    },
    "gemma-2b": {
        "_name_or_path": "Gemma 2B", "model_type": "gemma", "max_position_embeddings": 8192, "num_hidden_layers": 18, "hidden_size": 2048,
        "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256, "intermediate_size": 16384,
        "vocab_size": 256000,
    },
    "gemma-7b": {
        "_name_or_path": "Gemma 7B", "model_type": "gemma", "max_position_embeddings": 8192, "num_hidden_layers": 28, "hidden_size": 3072,
        "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 256, "intermediate_size": 24576,
        "vocab_size": 256000,
    },
    "gemma-2-2b": {
        "_name_or_path": "Gemma 2 2B", "model_type": "gemma2", "max_position_embeddings": 8192, "num_hidden_layers": 26, "hidden_size": 2304,
        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "intermediate_size": 9216,
        "vocab_size": 256000, "sliding_window": 4096,
    },
    "gemma-2-9b": {
        "_name_or_path": "Gemma 2 9B", "model_type": "gemma2", "max_position_embeddings": 8192, "num_hidden_layers": 42, "hidden_size": 3584,
        "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256, "intermediate_size": 14336,
        "vocab_size": 256000, "sliding_window": 4096,
    },
    "gemma-2-27b": {
        "_name_or_path": "Gemma 2 27B", "model_type": "gemma2", "max_position_embeddings": 8192, "num_hidden_layers": 46, "hidden_size": 4608,
        "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128, "intermediate_size": 36864,
        "vocab_size": 256000, "sliding_window": 4096,
    },
    "gemma-3-1b": {
        "_name_or_path": "Gemma 3 1B", "model_type": "gemma3_text", "max_position_embeddings": 32768, "num_hidden_layers": 26, "hidden_size": 1152,
        "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "intermediate_size": 6912,
        "vocab_size": 262144, "sliding_window": 512, "sliding_window_pattern": 6,
    },
    "gemma-3-4b": {  # multimodal: the language model's keys nested, the rest left to Gemma3TextConfig
        "_name_or_path": "Gemma 3 4B", "model_type": "gemma3",
        "text_config": {"model_type": "gemma3_text", "hidden_size": 2560, "intermediate_size": 10240,
                        "num_hidden_layers": 34, "sliding_window": 1024},
    },
    "gemma-3-27b": {
        "_name_or_path": "Gemma 3 27B", "model_type": "gemma3",
        "text_config": {"model_type": "gemma3_text", "head_dim": 128, "hidden_size": 5376,
                        "intermediate_size": 21504, "num_attention_heads": 32, "num_hidden_layers": 62,
                        "num_key_value_heads": 16, "sliding_window": 1024},
    },
    "phi-3-mini": {
        "_name_or_path": "Phi-3 mini 4K", "model_type": "phi3", "max_position_embeddings": 4096, "num_hidden_layers": 32, "hidden_size": 3072,
        "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 8192, "vocab_size": 32064,
        "tie_word_embeddings": False, "sliding_window": 2047,
    },
    "phi-3-medium": {
        "_name_or_path": "Phi-3 medium 4K", "model_type": "phi3", "max_position_embeddings": 4096, "num_hidden_layers": 40, "hidden_size": 5120,
        "num_attention_heads": 40, "num_key_value_heads": 10, "intermediate_size": 17920, "vocab_size": 32064,
        "tie_word_embeddings": False, "sliding_window": 2047,
    },
    "deepseek-llm-67b": {  # DeepSeek LLM 67B (arXiv:2401.02954, Table 2): the dense model DeepSeek-V2 is set against
        "_name_or_path": "DeepSeek LLM 67B", "model_type": "llama", "max_position_embeddings": 4096,
        "num_hidden_layers": 95, "hidden_size": 8192, "num_attention_heads": 64, "num_key_value_heads": 8,
        "intermediate_size": 22016, "vocab_size": 102400, "tie_word_embeddings": False,
    },
    "deepseek-v2-lite": {
        "_name_or_path": "DeepSeek-V2-Lite", "model_type": "deepseek_v2", "max_position_embeddings": 163840, "num_hidden_layers": 27,
        "hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 10944,
        "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
        "first_k_dense_replace": 1, "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": None,
        "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "vocab_size": 102400,
        "tie_word_embeddings": False,
    },
    "deepseek-v2": {
        "_name_or_path": "DeepSeek-V2", "model_type": "deepseek_v2", "max_position_embeddings": 163840, "num_hidden_layers": 60, "hidden_size": 5120,
        "num_attention_heads": 128, "num_key_value_heads": 128, "intermediate_size": 12288,
        "moe_intermediate_size": 1536, "n_routed_experts": 160, "n_shared_experts": 2, "num_experts_per_tok": 6,
        "first_k_dense_replace": 1, "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": 1536,
        "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "vocab_size": 102400,
        "tie_word_embeddings": False,
    },
    "deepseek-v3": {
        "_name_or_path": "DeepSeek-V3", "model_type": "deepseek_v3", "max_position_embeddings": 163840, "num_hidden_layers": 61, "hidden_size": 7168,
        "num_attention_heads": 128, "num_key_value_heads": 128, "intermediate_size": 18432,
        "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
        "first_k_dense_replace": 3, "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": 1536,
        "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "vocab_size": 129280,
        "tie_word_embeddings": False,
    },
})

MODELS: Mapping[str, Model] = MappingProxyType(
    {key: Model.from_hf_config(config) for key, config in CONFIGS.items()})
LLAMA_3_8B = MODELS["llama-3-8b"]
# Llama 3 8B's shape with a 131,072-token window: the model to name where a context is past 8,192 tokens.
LLAMA_3_1_8B = MODELS["llama-3.1-8b"]


def model(key_or_name) -> Model:
    """Look a model up by key (``"llama-3-8b"``) or name (``"Llama 3 8B"``)."""
    if isinstance(key_or_name, Model):
        return key_or_name
    if not isinstance(key_or_name, str):
        raise TypeError(f"model must be a Model or one of {list(MODELS)}, got {key_or_name!r}")
    for key, entry in MODELS.items():
        if key_or_name in (key, entry.name):
            return entry
    raise ValueError(f"model must be one of {list(MODELS)}, got {key_or_name!r}")
