"""Transformer shapes, and the parameters counted from them.

A ``Model`` holds only what a Hugging Face ``config.json`` says about the network's
shape. Everything the course needs (parameters, KV-cache bytes per token, the width
of attention) is counted from that shape, never typed in.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from . import _check


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer of the Llama family (Mistral, Qwen, Mixtral alike).

    Each layer has attention (query, key, value and output projections), a gated
    feed-forward block (gate, up, down: SwiGLU) and two RMSNorm weight vectors.
    ``experts`` > 1 makes the feed-forward block a mixture of experts, of which
    ``experts_per_token`` run for each token.
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

    def __post_init__(self):
        for name in ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab",
                     "experts", "experts_per_token"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be a whole number, got {value!r}")
            _check.count(name, value, minimum=1)
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads must divide heads ({self.heads}), got {self.kv_heads!r}")
        if self.experts_per_token > self.experts:
            raise ValueError(
                f"experts_per_token must be at most experts ({self.experts}), got {self.experts_per_token!r}")

    # -- parameters, counted from the shape -------------------------------------------
    @property
    def attention_width(self) -> int:
        """Width of the query heads together, heads × head_dim (the ``d`` of attention FLOPs)."""
        return self.heads * self.head_dim

    def _attention_parameters(self) -> int:
        q = self.hidden * self.attention_width
        kv = 2 * self.hidden * self.kv_heads * self.head_dim
        out = self.attention_width * self.hidden
        bias = (self.attention_width + 2 * self.kv_heads * self.head_dim) if self.qkv_bias else 0
        bias += self.hidden if self.output_bias else 0
        return q + kv + out + bias

    def _expert_parameters(self) -> int:
        bias = (2 * self.ffn + self.hidden) if self.mlp_bias else 0
        return 3 * self.hidden * self.ffn + bias

    def _layer_parameters(self, experts: int) -> int:
        router = self.hidden * self.experts if self.experts > 1 else 0
        norms = 2 * self.hidden
        return self._attention_parameters() + experts * self._expert_parameters() + router + norms

    def _embedding_parameters(self) -> int:
        tables = 1 if self.tied_embeddings else 2
        return tables * self.vocab * self.hidden + self.hidden  # + the final norm

    @property
    def parameters(self) -> int:
        """Every parameter stored: what a pass has to read from memory."""
        return self.layers * self._layer_parameters(self.experts) + self._embedding_parameters()

    @property
    def active_parameters(self) -> int:
        """Parameters one token computes with (equal to ``parameters`` unless a mixture of experts)."""
        return self.layers * self._layer_parameters(self.experts_per_token) + self._embedding_parameters()

    def kv_bytes_per_token(self, kv_bits=16):
        """Bytes of keys and values one token leaves in the cache: 2 × layers × KV heads × head_dim × bytes."""
        kv_bits = _check.positive("kv_bits", kv_bits)
        return 2 * self.layers * self.kv_heads * self.head_dim * kv_bits / 8

    # -- from a Hugging Face config -------------------------------------------------
    @classmethod
    def from_hf_config(cls, config: Mapping, name: str | None = None) -> "Model":
        """Build a Model from the dict of a Hugging Face ``config.json``.

        Reads the standard keys; ``head_dim`` defaults to hidden ÷ heads, KV heads to
        heads (no grouped-query attention), and Qwen2's query/key/value biases are on
        because its configs leave them implicit.
        """
        if not isinstance(config, Mapping):
            raise TypeError(f"config must be a dict from config.json, got {config!r}")
        required = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size")
        missing = [key for key in required if key not in config]
        if missing:
            raise ValueError(f"config is missing {missing}; got keys {sorted(config)}")
        heads = config["num_attention_heads"]
        hidden = config["hidden_size"]
        head_dim = config.get("head_dim") or hidden // heads
        model_type = config.get("model_type", "")
        attention_bias = bool(config.get("attention_bias", False))
        experts = config.get("num_local_experts") or config.get("num_experts") or 1
        return cls(
            name=name or config.get("_name_or_path") or model_type or "model",
            layers=config["num_hidden_layers"],
            hidden=hidden,
            heads=heads,
            kv_heads=config.get("num_key_value_heads") or heads,
            head_dim=head_dim,
            ffn=config["intermediate_size"],
            vocab=config["vocab_size"],
            tied_embeddings=bool(config.get("tie_word_embeddings", False)),
            qkv_bias=attention_bias or model_type == "qwen2",
            output_bias=attention_bias,
            mlp_bias=bool(config.get("mlp_bias", False)),
            experts=experts,
            experts_per_token=config.get("num_experts_per_tok", 1) if experts > 1 else 1,
        )


# The fields of each model's published config.json that the count needs.
CONFIGS: Mapping[str, Mapping] = MappingProxyType({
    "llama-3-8b": {
        "_name_or_path": "Llama 3 8B", "model_type": "llama", "num_hidden_layers": 32,
        "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "vocab_size": 128256, "tie_word_embeddings": False,
        "attention_bias": False, "mlp_bias": False,
    },
    "llama-3.2-1b": {
        "_name_or_path": "Llama 3.2 1B", "model_type": "llama", "num_hidden_layers": 16,
        "hidden_size": 2048, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
        "intermediate_size": 8192, "vocab_size": 128256, "tie_word_embeddings": True,
        "attention_bias": False, "mlp_bias": False,
    },
    "llama-3-70b": {
        "_name_or_path": "Llama 3 70B", "model_type": "llama", "num_hidden_layers": 80,
        "hidden_size": 8192, "num_attention_heads": 64, "num_key_value_heads": 8,
        "intermediate_size": 28672, "vocab_size": 128256, "tie_word_embeddings": False,
    },
    "mistral-7b": {
        "_name_or_path": "Mistral 7B v0.1", "model_type": "mistral", "num_hidden_layers": 32,
        "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "vocab_size": 32000, "tie_word_embeddings": False,
    },
    "qwen2-7b": {
        "_name_or_path": "Qwen2 7B", "model_type": "qwen2", "num_hidden_layers": 28,
        "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
        "intermediate_size": 18944, "vocab_size": 152064, "tie_word_embeddings": False,
    },
    "mixtral-8x7b": {
        "_name_or_path": "Mixtral 8x7B", "model_type": "mixtral", "num_hidden_layers": 32,
        "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "vocab_size": 32000, "tie_word_embeddings": False,
        "num_local_experts": 8, "num_experts_per_tok": 2,
    },
})

MODELS: Mapping[str, Model] = MappingProxyType(
    {key: Model.from_hf_config(config) for key, config in CONFIGS.items()})
LLAMA_3_8B = MODELS["llama-3-8b"]


def model(key_or_name) -> Model:
    """Look a model up by key (``"llama-3-8b"``) or name (``"Llama 3 8B"``)."""
    if isinstance(key_or_name, Model):
        return key_or_name
    for key, entry in MODELS.items():
        if key_or_name in (key, entry.name):
            return entry
    raise ValueError(f"model must be one of {list(MODELS)}, got {key_or_name!r}")
