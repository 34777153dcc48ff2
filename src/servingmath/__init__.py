"""servingmath: the arithmetic of the course *Inference and Serving*.

Each formula lives once, in the module named after its idea:

- ``hardware``: GPUs and their published figures (``CATALOG``, ``H100_SXM``)
- ``models``: transformer shapes and their parameters (``MODELS``, ``LLAMA_3_8B``)
- ``memory``: what a GPU's memory holds: weights, the KV cache (``kv_cache_bytes``), ``fit``, and
  vLLM's own start-up budget (``vllm_cache_tokens``)
- ``passes``: FLOPs and bytes of one forward pass
- ``roofline``: ridge point, and the time of a pass under stated ``Assumptions``
- ``serving``: a request end to end (TTFT, TPOT), batching and cost per million tokens
- ``units``: numbers formatted as the prose prints them
"""
# First: the digest that files lesson 3's kept simulations is taken of the package as imported here.
from . import _kept  # noqa: F401
from .hardware import CATALOG, GPU, H100_SXM, gpu
from .memory import (RESERVE, DoesNotFit, Fit, fit, kv_cache_bytes, max_batch, usable_memory, vllm_budget,
                     vllm_cache_tokens)
from .models import FAMILIES, LLAMA_3_8B, MODELS, ContextTooLong, Model, model
from .passes import arithmetic_intensity, attention_flops, forward_pass, linear_flops, weight_bytes
from .roofline import LESSON, PLATE, Assumptions, attainable_flops, pass_time, ridge_point
from .serving import (batching, cost_per_million_tokens, decode_step, passes_for_request, prefill, request,
                      step, time_per_token_curve, tokens_per_hour)

__version__ = "0.1.0"

__all__ = [
    "CATALOG", "GPU", "H100_SXM", "gpu", "FAMILIES", "LLAMA_3_8B", "MODELS", "ContextTooLong", "Model", "model",
    "RESERVE", "DoesNotFit", "Fit", "fit", "kv_cache_bytes", "max_batch", "usable_memory", "vllm_budget",
    "vllm_cache_tokens",
    "arithmetic_intensity", "attention_flops", "forward_pass", "linear_flops", "weight_bytes",
    "LESSON", "PLATE", "Assumptions", "attainable_flops", "pass_time", "ridge_point",
    "batching", "cost_per_million_tokens", "decode_step", "passes_for_request", "prefill", "request",
    "step", "time_per_token_curve", "tokens_per_hour",
]
