"""The server: a model on one GPU and the engine's rules for sharing it, each rule checked as it is set."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _check, engines, parallel
from ..hardware import GPU
from ..memory import RESERVE, DoesNotFit, kv_cache_bytes, usable_memory, weight_bytes
from ..models import Model
from ..roofline import PLATE, Assumptions
from ..workload import context_window

POLICIES = ("static", "continuous", "chunked")
MEMORY = ("paged", "reserved")
# A cap on replies that is each request's own reply (``Server.reservation``).
EACH_REPLY = "each"
PREEMPTION = ("recompute", "swap")
# How a step is timed: "overlap", the larger of its arithmetic's time and its memory traffic's (the
# lessons' roofline, as if every kernel of the step overlapped every other); "phases", as an engine
# runs it, kernel after kernel: the matrix products (the weights read once), the attention over each
# user's cache, each on its own roofline and summed, then the fixed cost and the processor's work.
CLOCKS = ("overlap", "phases")
# Which prompt tokens a step computes logits for: "every token" (the lessons' pass count), or "last of each
# prompt", as llama.cpp does: a prompt's other tokens skip the last layer's feed-forward block and the output
# head (passes.output_parameters). Each prompt must then be read whole, so that its piece ends with its last token.
LOGITS = ("every token", "last of each prompt")
# An untied input table: counted as every other weight (the lessons' convention), or looked up as an engine
# does, a row a token, neither multiplied by nor read whole (the rows, a few kilobytes a token, left out).
INPUT_TABLE = ("counted", "looked up")
# The lesson's server takes vLLM V0's defaults of versions 0.4 to 0.6.4 (servingmath.engines, where
# each is sourced): blocks of 16 tokens, at most 256 sequences a step (--max-num-seqs; V1 allows
# 1,024 on a card of 70 GiB or more other than the A100, such as the H100), and, with chunked prefill
# on, at most 512 tokens a step (--max-num-batched-tokens; V0 took 2,048 from 0.6.5, and V1 takes
# 8,192 under `vllm serve` on such a card). Part 4 shows that the 256 is what caps the goodput, and
# sets V1's caps beside it.
ENGINE = engines.defaults("vllm", "0.6")
BLOCK_TOKENS = ENGINE.block_tokens
MAX_RUNNING = ENGINE.max_running
CHUNK_TOKENS = ENGINE.step_tokens


def _choice(name, value, allowed):
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def _whole(name, value, minimum):
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a single whole number, got {value!r}")
    _check.single(name, value, "whole number")
    return int(_check.count(name, value, minimum=minimum))


@dataclass(frozen=True)
class Server:
    """A model on one GPU (or a tensor-parallel group of them), and the engine's rules for sharing it (see
    ``servingmath.simulator``'s docstring)."""

    model: Model
    gpu: GPU
    policy: str = "continuous"
    memory: str = "paged"
    assumptions: Assumptions = PLATE
    block_tokens: int = BLOCK_TOKENS
    max_running: int = MAX_RUNNING
    step_tokens: int | None = None
    preemption: str = "recompute"
    swap_bandwidth: float | None = None
    max_reply_tokens: int | str | None = None
    weight_bits: float = 16
    kv_bits: float = 16
    reserve: float = RESERVE
    # What a named engine adds (servingmath.engines; the defaults are the ideal engine the lessons teach):
    clock: str = "overlap"
    user_time: float = 0.0
    request_time: float = 0.0
    request_latency: float = 0.0
    stream_time: float = 0.0
    launch_time: float = 0.0
    linear_peak: float | None = None
    admit_every: int = 1
    mixed_steps: bool = True
    # Measured step times in place of the pass model: a callable (decodes, tokens, prompts) -> seconds,
    # given each step's next tokens, all its tokens and the prompts it starts (see engine_lab.StepTable).
    step_time: object = None
    logits: str = "every token"
    input_table: str = "counted"
    # A tensor-parallel group (parallel.py): ``tensor_parallel`` GPUs of the kind ``gpu`` joined by ``link``
    # (a key or name of a link the GPU can have; its fastest if None), each holding its share of the weights
    # and the cache, each step followed by the all-reduces Megatron-LM's split needs.
    tensor_parallel: int = 1
    link: object = None

    def __post_init__(self):
        _check.instance("model", self.model, Model)
        if self.step_time is not None and not callable(self.step_time):
            raise TypeError(f"step_time must be None or a callable (decodes, tokens, prompts) -> seconds, "
                            f"got {self.step_time!r}")
        _check.instance("gpu", self.gpu, GPU)
        for name, allowed in (("policy", POLICIES), ("memory", MEMORY), ("clock", CLOCKS), ("input_table", INPUT_TABLE)):
            _choice(name, getattr(self, name), allowed)
        _check.instance("assumptions", self.assumptions, Assumptions)
        _whole("block_tokens", self.block_tokens, 1)
        _whole("max_running", self.max_running, 1)
        if self.step_tokens is not None:
            _whole("step_tokens", self.step_tokens, 1)
            if self.policy == "static":
                raise ValueError(f"step_tokens does not apply to policy='static' (a batch's prompts are read "
                                 f"in one step), got step_tokens={self.step_tokens!r}")
            if self.policy == "continuous" and self.step_tokens < self.window:
                raise ValueError(f"step_tokens must be at least {self.model.name}'s window of {self.window:,} tokens "
                                 f"under policy='continuous', which reads a prompt whole in one step, got "
                                 f"step_tokens={self.step_tokens!r}: use policy='chunked' to split prompts")
        _choice("preemption", self.preemption, PREEMPTION)
        if self.preemption == "swap":
            if self.swap_bandwidth is None:
                raise ValueError("swap_bandwidth (bytes a second between the GPU and the host) is needed "
                                 "when preemption is 'swap', got None")
            _check.positive("swap_bandwidth", _check.single("swap_bandwidth", self.swap_bandwidth))
        elif self.swap_bandwidth is not None:
            _check.positive("swap_bandwidth", self.swap_bandwidth)
        if self.max_reply_tokens == EACH_REPLY:
            if self.memory != "reserved":
                raise ValueError(f"max_reply_tokens={EACH_REPLY!r} sets what reserved memory holds back, got it with "
                                 f"memory={self.memory!r}")
        elif self.max_reply_tokens is not None:
            longest = _whole("max_reply_tokens", self.max_reply_tokens, 1)
            if longest >= self.window:
                raise ValueError(f"max_reply_tokens must leave room for a prompt in {self.model.name}'s window "
                                 f"of {self.window:,} tokens, got {self.max_reply_tokens!r}")
        for name in ("weight_bits", "kv_bits"):
            _check.finite(name, _check.single(name, getattr(self, name)), above=0)
        if _choice("logits", self.logits, LOGITS) != LOGITS[0] and self.policy == "chunked":
            raise ValueError(f"logits={self.logits!r} needs each prompt read whole in one step, so a policy other "
                             f"than 'chunked', got policy={self.policy!r}")
        for name in ("user_time", "request_time", "request_latency", "stream_time", "launch_time"):
            _check.finite(name, _check.single(name, getattr(self, name)), minimum=0)
        _whole("admit_every", self.admit_every, 1)
        if self.linear_peak is not None:
            _check.positive("linear_peak", _check.single("linear_peak", self.linear_peak))
        if not isinstance(self.mixed_steps, bool):
            raise TypeError(f"mixed_steps must be True or False, got {self.mixed_steps!r}")
        if self.clock == "overlap" and (self.user_time or self.stream_time or self.launch_time
                                        or self.linear_peak is not None or not self.mixed_steps):
            raise ValueError("user_time, stream_time, launch_time, linear_peak and mixed_steps=False are a step timed by its "
                             f"phases: they need clock='phases', got clock={self.clock!r}")
        self._check_group()
        usable_memory(self.gpu, _check.single("reserve", self.reserve))
        if self.cache_room <= 0 or self.cache_blocks < 1:
            raise DoesNotFit(f"{self.model.name}'s weights ({self.gpu_weight_bytes / 1e9:.2f} GB a GPU) "
                             f"leave no room for a block of cache on {self.gpus} "
                             f"(reserve {self.reserve!r}): the server cannot run")

    def _check_group(self):
        degree = _whole("tensor_parallel", self.tensor_parallel, 1)
        if degree > 1:
            parallel.check_tensor_parallel(self.model, degree)
            parallel.group(self.gpu, degree, self.link)      # a link the GPU cannot have, or too many GPUs for it
        elif self.link is not None:
            raise ValueError(f"link joins the GPUs of a tensor-parallel group: it needs tensor_parallel above 1, "
                             f"got link={self.link!r} with tensor_parallel={self.tensor_parallel!r}")

    @property
    def gpus(self) -> str:
        """The GPUs the server runs on, in words."""
        return f"one {self.gpu.name}" if self.tensor_parallel == 1 else self.group.name

    @property
    def group(self):
        """The tensor-parallel group (``parallel.GPUGroup``) of ``tensor_parallel`` GPUs over ``link``."""
        return parallel.group(self.gpu, self.tensor_parallel, self.link)

    @property
    def gpu_weight_bytes(self) -> float:
        """Bytes of weights each GPU holds: all of them on one GPU; in a group, 1/``tensor_parallel`` of every
        matrix and the norms whole (``parallel.fit``'s count)."""
        if self.tensor_parallel == 1:
            return weight_bytes(self.model.parameters, self.weight_bits)
        whole = parallel.replicated_parameters(self.model)
        return weight_bytes((self.model.parameters - whole) / self.tensor_parallel + whole, self.weight_bits)

    @property
    def kv_share(self) -> float:
        """The share of each token's cache one GPU keeps (``parallel.kv_share``; 1 on one GPU)."""
        return 1.0 if self.tensor_parallel == 1 else parallel.kv_share(self.model, self.tensor_parallel)

    @property
    def window(self) -> int:
        """The model's context window: no conversation may hold more tokens."""
        return context_window(self.model)

    @property
    def token_budget(self):
        """Tokens a step may carry: ``step_tokens``, else the chunked default, else one window's worth
        of prompt a step (continuous) or no limit (static)."""
        if self.step_tokens is not None:
            return int(self.step_tokens)
        if self.policy == "chunked":
            return CHUNK_TOKENS
        if self.policy == "continuous":
            return self.window
        return None

    @property
    def cache_room(self) -> float:
        """Bytes left for caches on each GPU once its weights and the reserve are out (lesson 2's budget)."""
        return usable_memory(self.gpu, self.reserve) - self.gpu_weight_bytes

    @property
    def block_bytes(self) -> float:
        """Bytes of one block: the cache of ``block_tokens`` tokens."""
        return float(kv_cache_bytes(self.model, self.block_tokens, 1, self.kv_bits))

    @property
    def cache_blocks(self) -> int:
        """Blocks the cache room holds."""
        return int(self.cache_room // (self.block_bytes * self.kv_share))

    def blocks(self, tokens):
        """Blocks that hold ``tokens`` tokens of cache."""
        tokens = _check.count("tokens", tokens)
        return np.ceil(np.asarray(tokens) / self.block_tokens).astype(np.int64)

    def reservation(self, prompt_tokens, reply_tokens=None):
        """Tokens set aside for a request under reserved memory: its prompt and the longest reply it may
        write (``max_reply_tokens``, the cap a client sends), never past the model's window. With no cap,
        a reply may run to the window, so the window is reserved (the vLLM paper's Orca (Max)). With
        ``max_reply_tokens="each"``, each request's cap is its own reply (``reply_tokens``), as benchmark
        clients send it: the vLLM paper's Orca (Oracle), and TensorRT-LLM's admission of a request only
        with room to finish it."""
        prompt_tokens = _check.count("prompt_tokens", prompt_tokens, minimum=1)
        if self.max_reply_tokens == EACH_REPLY:
            if reply_tokens is None:
                raise ValueError(f"reply_tokens are needed: max_reply_tokens is {EACH_REPLY!r}, got None")
            longest = prompt_tokens + _check.count("reply_tokens", reply_tokens, minimum=1)
        else:
            longest = prompt_tokens + (self.window if self.max_reply_tokens is None else self.max_reply_tokens)
        return np.minimum(longest, self.window).astype(np.int64)

