"""More than one GPU: a model split across a group of GPUs joined by a link.

**Tensor parallelism** (Megatron-LM, Shoeybi et al. 2019, section 3): each of N GPUs holds 1/N of
every weight matrix (the attention's heads split among them, the MLP's columns then rows), so a
pass reads 1/N of the weights and does 1/N of the arithmetic on each GPU. Each layer then needs
two all-reduces of the activations in a forward pass, one after the attention block and one after
the MLP (Megatron-LM, section 3 and its figure 4). An
all-reduce of S bytes over N GPUs in a ring takes at best latency + 2(N-1)/N x S / B, B the
one-way bandwidth out of each GPU (NCCL's bus bandwidth: nccl-tests doc/PERFORMANCE.md). The
norms are small and every GPU keeps them whole. The KV cache is split by KV heads: each GPU
keeps the keys and values of its own KV heads, and when N passes the number of KV heads each GPU
keeps one, so every head's cache is held N / KV heads times (vLLM's QKVParallelLinear in
vllm/model_executor/layers/linear.py: ``num_kv_head_replicas = divide(tp_size, total_num_kv_heads)``,
which requires the degree to be a multiple of the KV heads). Latent attention (MLA) caches one
vector a token that no head owns: every GPU keeps all of it.

The step model: the per-GPU pass timed by the roofline (``roofline.pass_time``), then the
all-reduces added after it. Communication is not overlapped with arithmetic: each all-reduce
sits between two blocks that need its result.

**Pipeline parallelism** (GPipe, Huang et al. 2019): the layers in consecutive stages, one
stage a GPU (or a tensor-parallel group); a token's activations go point to point from each stage
to the next. A decode step crosses every stage in turn, so one user's time between tokens is
the sum of the stages; with the batch in m micro-batches the stages work on different ones at
once, and a batch pushed through and drained leaves the pipeline idle a share (p-1)/(m+p-1) of
the time (the bubble). A server's decode steps follow one another: with as many micro-batches in
flight as stages, each stage works on one while the others work on the rest, and the slowest
stage sets the pace. The layers are split as vLLM splits them (``get_pp_indices`` in
vllm/distributed/utils.py): evenly, any left over one each on the stages just before the last;
the first stage holds the input embedding table, the last the final norm and the output head
(with tied embeddings the same matrix, read there as the head). Each stage sends the next its
micro-batch's hidden state and residual (vLLM's ``IntermediateTensors`` in
vllm/model_executor/models/llama.py), hidden x 2 bytes each a token in 16 bits.

Every figure comes from ``passes.forward_pass``, ``memory.kv_cache_bytes``/``weight_bytes`` and
``roofline.pass_time``, shared out among the GPUs here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _check, units
from .hardware import GPU, Interconnect, gpu as _gpu, link as _link, links as _links
from .memory import RESERVE, DoesNotFit, Fit, kv_cache_bytes, usable_memory, weight_bytes
from .models import Model
from .passes import PassCost, forward_pass
from .roofline import Assumptions, PassTime, pass_time

# The step model's default: the spec sheet's peaks reached exactly, no overhead, attention and
# the cache counted (the reality check's floor).
FLOOR = Assumptions(attention="causal", kv_cache=True,
                    label="floor: 100 % of peak, no overhead, causal attention and the cache counted")
ALLREDUCES_PER_LAYER = 2      # after attention, after the MLP (Megatron-LM, section 3)
SENT_PER_TOKEN = 2            # vectors a stage sends the next for each token: the hidden state and the residual
ACTIVATION_BITS = 16          # activations travel in 16 bits, whatever the weights' format


@dataclass(frozen=True)
class GPUGroup:
    """``count`` GPUs of one kind joined by ``link`` (a catalog ``Interconnect``; None for one GPU
    with none). Build one with ``group()``, which checks the link against the GPU."""

    gpu: GPU
    count: int
    link: Interconnect | None

    def __post_init__(self):
        _check.instance("gpu", self.gpu, GPU)
        _check.single("count", _check.count("count", self.count, minimum=1))
        object.__setattr__(self, "count", int(self.count))
        if self.link is not None:
            _check.instance("link", self.link, Interconnect)
        elif self.count > 1:
            raise ValueError(f"link must be given for {self.count} GPUs, got None")
        if self.link is not None and self.link.max_gpus is not None and self.count > self.link.max_gpus:
            raise ValueError(f"count must be at most {self.link.max_gpus} for {self.link.name}, which joins no more, "
                             f"got {self.count}")

    @property
    def name(self) -> str:
        joined = f" over {self.link.name}" if self.link is not None and self.count > 1 else ""
        return f"{self.count} x {self.gpu.name}{joined}"

    @property
    def memory_bytes(self) -> float:
        return self.count * self.gpu.memory_bytes


def group(gpu, count=1, link=None) -> GPUGroup:
    """``count`` GPUs of the kind ``gpu`` (a ``GPU`` or catalog key) joined by ``link`` (a key of
    ``hardware.INTERCONNECTS``; the fastest link the GPU can have if None). A link the GPU cannot
    have, or more GPUs than the link joins, is refused."""
    entry = _gpu(gpu)
    count = _check.single("count", _check.count("count", count, minimum=1))
    if count == 1 and link is None:
        available = _links(entry)
        return GPUGroup(entry, 1, available[0] if available else None)
    return GPUGroup(entry, int(count), _link(entry, link))


def _group(value) -> GPUGroup:
    if isinstance(value, GPUGroup):
        return value
    if isinstance(value, (GPU, str)):
        return group(value, 1)
    raise TypeError(f"group must be a GPUGroup (parallel.group(gpu, count, link)), got {value!r}")


# -- how a model splits ---------------------------------------------------------------------------
def check_tensor_parallel(model: Model, degree) -> int:
    """``degree`` if ``model`` can be split that many ways, else a ValueError naming what it does not divide.

    The query heads must divide evenly among the GPUs, and the MLP's width too. The KV heads either
    divide among them (degree up to the KV heads) or are each copied to degree / KV heads GPUs (past
    the KV heads, which the degree must then be a multiple of): vLLM's QKVParallelLinear.
    """
    _check.instance("model", model, Model)
    degree = int(_check.single("tensor_parallel", _check.count("tensor_parallel", degree, minimum=1)))
    if model.heads % degree:
        raise ValueError(f"tensor_parallel must divide {model.name}'s {model.heads} attention heads, got {degree}")
    if not model.latent_attention:
        if degree <= model.kv_heads and model.kv_heads % degree:
            raise ValueError(f"tensor_parallel must divide {model.name}'s {model.kv_heads} KV heads, got {degree}")
        if degree > model.kv_heads and degree % model.kv_heads:
            raise ValueError(f"tensor_parallel past {model.name}'s {model.kv_heads} KV heads must be a multiple of "
                             f"them (each head copied to the same number of GPUs), got {degree}")
    width = model.expert_width if model.mixture_of_experts else model.ffn
    if width % degree:
        raise ValueError(f"tensor_parallel must divide {model.name}'s MLP width {width}, got {degree}")
    return degree


def kv_copies(model: Model, degree) -> int:
    """How many GPUs hold each KV head's cache: 1 up to the KV heads, degree / KV heads past them,
    and every GPU for latent attention, whose cached vector belongs to no head."""
    degree = check_tensor_parallel(model, degree)
    if model.latent_attention:
        return degree
    return max(1, degree // model.kv_heads)


def kv_share(model: Model, degree) -> float:
    """The share of the whole cache each GPU keeps: copies ÷ degree (1/degree while no head is copied)."""
    return kv_copies(model, degree) / check_tensor_parallel(model, degree)


def replicated_parameters(model: Model) -> int:
    """Parameters every GPU keeps whole under tensor parallelism: the norms' weight vectors."""
    _check.instance("model", model, Model)
    return model.layers * model.norms_per_layer * model.hidden + model.hidden


def _stages(model: Model, stages) -> int:
    stages = int(_check.single("pipeline_parallel", _check.count("pipeline_parallel", stages, minimum=1)))
    if stages > model.layers:
        raise ValueError(f"pipeline_parallel must be at most {model.name}'s {model.layers} layers, got {stages}")
    return stages


def stage_split(model: Model, stages) -> tuple[int, ...]:
    """Layers in each of ``stages`` consecutive stages, first to last, as vLLM splits them (``get_pp_indices``):
    layers ÷ stages each, any left over one more each on the stages just before the last, which holds the head."""
    stages = _stages(model, stages)
    split = [model.layers // stages] * stages
    for k in range(model.layers % stages):
        split[-2 - k] += 1
    return tuple(split)


def stage_layers(model: Model, stages) -> int:
    """Layers in the largest of ``stages`` consecutive stages: ⌈layers ÷ stages⌉."""
    return max(stage_split(model, stages))


def _ends(model: Model) -> tuple[int, int]:
    """Parameters outside the layers: the input embedding table's, counted as the course counts every weight
    (none of its own when tied: the head's matrix, counted there), and the output head's with the final norm's."""
    table = 0 if model.tied_embeddings else model.vocab * model.hidden
    return table, model.vocab * model.hidden + model.hidden


def _stage(split, stage) -> int:
    stage = int(_check.single("stage", _check.count("stage", stage)))
    if stage >= len(split):
        raise ValueError(f"stage must be below the {len(split)} stages (0 the first), got {stage}")
    return stage


def _stage_norms(model: Model, split, stage) -> int:
    """Norm parameters stage ``stage`` of ``split`` keeps whole under tensor parallelism: its layers' and, on the
    last stage, the final norm."""
    return (replicated_parameters(model) - (model.layers - split[stage]) * model.norms_per_layer * model.hidden
            - (0 if stage == len(split) - 1 else model.hidden))


def stage_parameters(model: Model, stages, stage) -> float:
    """Parameters stage ``stage`` (0 the first) of ``stages`` keeps in memory: its layers' share of the layers' own
    (``stage_split``), the input embedding table on the first stage, the output head and final norm on the last.
    With tied embeddings the first and the last stage each keep the matrix (vLLM builds ``embed_tokens`` where
    ``is_first_rank or (tie_word_embeddings and is_last_rank)``); one stage keeps it once."""
    _check.instance("model", model, Model)
    split = stage_split(model, stages)
    stage = _stage(split, stage)
    table, head = _ends(model)
    first, last = stage == 0, stage == len(split) - 1
    matrix = model.vocab * model.hidden
    ends = (matrix if first else 0) + (head if last else 0) - (matrix if model.tied_embeddings and first and last else 0)
    return (model.parameters - table - head) * split[stage] / model.layers + ends


def _degrees(model: Model, grp: GPUGroup, pipeline_parallel) -> tuple[int, int]:
    stages = _stages(model, pipeline_parallel)
    if grp.count % stages:
        raise ValueError(f"pipeline_parallel must divide the group's {grp.count} GPUs, got {stages}")
    return check_tensor_parallel(model, grp.count // stages), stages


def shard(cost: PassCost, model: Model, tensor_parallel, stages=1, stage=0) -> PassCost:
    """One GPU's part of ``cost`` (a whole pass of ``model``) in stage ``stage`` (0 the first) of ``stages``:
    the stage's layers' share of the layers' weights, arithmetic and cache (``stage_split``), the input
    embedding table on the first stage, the output head and final norm on the last (``_ends``); the weights
    but the norms, the arithmetic and the cache then divided among ``tensor_parallel`` GPUs (the cache by
    ``kv_share``), the norms read whole. One stage (the default) is the whole pass."""
    _check.instance("cost", cost, PassCost)
    degree = check_tensor_parallel(model, tensor_parallel)
    split = stage_split(model, stages)
    stage = _stage(split, stage)
    layers = split[stage] / model.layers
    table, head = _ends(model)
    left = (0 if stage == 0 else table) + (0 if stage == len(split) - 1 else head)   # ends another stage holds

    def kept(parameters):
        """The share of ``parameters`` (every weight the pass reads or computes with) this stage holds."""
        return 1 - ((parameters - table - head) * (1 - layers) + left) / parameters

    read = model.parameters_read(cost.tokens)
    norms = _stage_norms(model, split, stage) * (cost.weight_bytes / read)
    weights = cost.weight_bytes * kept(read)
    cache = kv_share(model, degree)
    return PassCost(
        tokens=cost.tokens,
        linear_flops=cost.linear_flops * kept(model.active_parameters) / degree,
        attention_flops=cost.attention_flops / degree * layers,
        weight_bytes=(weights - norms) / degree + norms,
        kv_read_bytes=cost.kv_read_bytes * cache * layers,
        kv_write_bytes=cost.kv_write_bytes * cache * layers,
    )


# -- memory -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GroupFit(Fit):
    """``memory.Fit`` for one GPU of a group: its share of the weights and the cache against its memory (with
    stages, a GPU of the fullest stage's)."""

    group: GPUGroup | None = None
    tensor_parallel: int = 1
    pipeline_parallel: int = 1

    @property
    def message(self) -> str:
        holder = "each GPU" if self.pipeline_parallel == 1 else "each GPU of the fullest stage"
        if np.ndim(self.needed_bytes) or np.ndim(self.usable_bytes):
            fits = np.asarray(self.fits)
            return (f"{self.model.name} on {self.group.name}: {int(fits.sum())} of {fits.size} settings fit "
                    f"({holder} holds weights up to {units.gb(np.max(self.weight_bytes))} and up to "
                    f"{units.gb(np.max(self.cache_bytes))} of KV cache, against {units.gb(np.min(self.usable_bytes))} usable)")
        verdict = "fits" if self.fits else "does not fit"
        return (f"{self.model.name} {verdict} on {self.group.name} (tensor parallel {self.tensor_parallel}, "
                f"pipeline parallel {self.pipeline_parallel}): {holder} holds weights {units.gb(self.weight_bytes)} "
                f"+ KV cache {units.gb(self.cache_bytes)} = {units.gb(self.needed_bytes)}, against "
                f"{units.gb(self.usable_bytes)} usable of the {units.gb(self.gpu.memory_bytes)} it holds "
                f"({units.percent(self.reserve)} held back for activations and the runtime)")


def fit(model: Model, grp, context_tokens=0, batch=1, weight_bits=16, kv_bits=16, reserve=RESERVE,
        pipeline_parallel=1) -> GroupFit:
    """Does each GPU of ``grp`` hold its share of ``model``'s weights and of the KV cache of ``batch``
    users at ``context_tokens``? Tensor parallelism over count ÷ ``pipeline_parallel`` GPUs, the
    layers in ``pipeline_parallel`` stages, each stage checked with what it keeps (``stage_parameters``,
    its layers' share of the cache); the answer is the fullest stage's (weights + cache), at each setting when swept."""
    _check.instance("model", model, Model)
    grp = _group(grp)
    tp, pp = _degrees(model, grp, pipeline_parallel)
    split = stage_split(model, pp)
    cache = kv_cache_bytes(model, context_tokens, batch, kv_bits) * kv_share(model, tp)
    held = [(weight_bytes((stage_parameters(model, pp, s) - _stage_norms(model, split, s)) / tp
                          + _stage_norms(model, split, s), weight_bits), cache * layers / model.layers)
            for s, layers in enumerate(split)]
    totals = [w + c for w, c in held]
    if all(isinstance(total, float) for total in totals):   # one setting: the first fullest stage, as argmax picks
        weights, cache = (float(part) for part in held[totals.index(max(totals))])
    else:
        fullest = np.argmax(np.stack(np.broadcast_arrays(*totals)), axis=0)
        weights, cache = (np.choose(fullest, np.broadcast_arrays(*part)) for part in zip(*held))
        weights, cache = (float(part) if part.ndim == 0 else part for part in (weights, cache))
    return GroupFit(model=model, gpu=grp.gpu, weight_bytes=weights, cache_bytes=cache,
                    usable_bytes=usable_memory(grp.gpu, reserve), reserve=_check.number("reserve", reserve, minimum=0),
                    group=grp, tensor_parallel=tp, pipeline_parallel=pp)


# -- communication ----------------------------------------------------------------------------------
def activation_bytes(model: Model, tokens, activation_bits=ACTIVATION_BITS):
    """Bytes of the activations of ``tokens`` tokens at one layer's output: tokens × hidden × bits ÷ 8."""
    _check.instance("model", model, Model)
    tokens = _check.count("tokens", tokens)
    activation_bits = _check.finite("activation_bits", activation_bits, above=0)
    return tokens * model.hidden * activation_bits / 8


def ring_time(bytes_, gpus, link: Interconnect):
    """The bandwidth part of a ring all-reduce: 2(N−1)/N × bytes ÷ one-way bandwidth, each GPU sending
    and receiving 2(N−1)/N of the message (nccl-tests doc/PERFORMANCE.md). Numbers or numpy arrays."""
    bytes_ = _check.number("bytes", bytes_, minimum=0)
    gpus = _check.count("gpus", gpus, minimum=1)
    _check.instance("link", link, Interconnect)
    return 2 * (gpus - 1) / gpus * bytes_ / link.bandwidth


def allreduce_time(bytes_, gpus, link: Interconnect):
    """A ring all-reduce of ``bytes_`` bytes over ``gpus`` GPUs: the link's latency at that many GPUs
    (``Interconnect.latency_for``) + ``ring_time``; nothing for one GPU. Numbers or numpy arrays."""
    ring = ring_time(bytes_, gpus, link)
    gpus = _check.count("gpus", gpus, minimum=1)
    return np.where(gpus > 1, link.latency_for(gpus) + ring, 0.0) + 0 * ring


def send_time(bytes_, link: Interconnect):
    """A point-to-point send of ``bytes_`` bytes: the link's latency (its small all-reduce's, taken
    for a send) + bytes ÷ one-way bandwidth."""
    bytes_ = _check.number("bytes", bytes_, minimum=0)
    _check.instance("link", link, Interconnect)
    return link.latency + bytes_ / link.bandwidth


# -- a step ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TensorParallelStep:
    """One pass over a tensor-parallel group: each GPU's pass, then the all-reduces (floats or arrays)."""

    group: GPUGroup
    tensor_parallel: int
    cost: PassCost              # one GPU's FLOPs and bytes
    compute: PassTime           # one GPU's pass under the roofline
    allreduces: int             # all-reduces in the pass: 2 a layer (0 on one GPU)
    allreduce_bytes: object     # bytes of each
    allreduce_time: object      # seconds of each

    @property
    def communication(self):
        return self.allreduces * self.allreduce_time

    @property
    def time(self):
        return self.compute.time + self.communication

    @property
    def communication_share(self):
        """The all-reduces' share of the step's time."""
        return self.communication / self.time


def _tensor_step(model, grp, tp, new_tokens, cached_tokens, batch, weight_bits, kv_bits, assumptions,
                 activation_bits, compute="16-bit", stages=1):
    """Each stage's pass (one stage: the whole model) on one of its GPUs, first to last."""
    cost = forward_pass(model, new_tokens, cached_tokens, batch, weight_bits, kv_bits,
                        attention=assumptions.attention, kv_cache=assumptions.kv_cache)
    message = activation_bytes(model, cost.tokens, activation_bits)
    each = allreduce_time(message, tp, grp.link) if tp > 1 else 0.0 * message
    steps = []
    for stage, layers in enumerate(stage_split(model, stages)):
        mine = shard(cost, model, tp, stages, stage)
        timing = pass_time(mine.flops, mine.bytes, grp.gpu.flops(compute), grp.gpu.memory_bandwidth, assumptions)
        steps.append(TensorParallelStep(group=grp, tensor_parallel=tp, cost=mine, compute=timing,
                                        allreduces=ALLREDUCES_PER_LAYER * layers if tp > 1 else 0,
                                        allreduce_bytes=message, allreduce_time=each))
    return tuple(steps)


def _check_fits(model, grp, new_tokens, cached_tokens, batch, weight_bits, kv_bits, reserve, pp):
    new_tokens = _check.count("new_tokens", new_tokens, minimum=1)
    cached_tokens = _check.count("cached_tokens", cached_tokens)
    _check.count("batch", batch, minimum=1)
    _check.finite("weight_bits", weight_bits, above=0)
    _check.finite("kv_bits", kv_bits, above=0)
    answer = fit(model, grp, cached_tokens + new_tokens, batch, weight_bits, kv_bits, reserve, pp)
    fits = answer.fits     # a bool for one setting, read as it is (np.all would first make an array of it); an array when swept
    if not (fits if isinstance(fits, bool) else np.all(fits)):
        raise DoesNotFit(answer.message)


def tensor_parallel_step(model: Model, grp, new_tokens=1, cached_tokens=0, batch=1, weight_bits=16, kv_bits=16,
                         assumptions: Assumptions = FLOOR, activation_bits=ACTIVATION_BITS,
                         reserve=RESERVE, compute="16-bit") -> TensorParallelStep:
    """A pass of ``batch`` sequences, ``new_tokens`` each after ``cached_tokens``, over every GPU of
    ``grp`` in tensor parallelism: each GPU's share timed by the roofline, plus 2 all-reduces a
    layer of the pass's activations. ``compute``: the number format the arithmetic runs in (the
    GPU's peak in it: ``"16-bit"``, ``"fp8"``). A model whose share does not fit each GPU (with the cache
    after the pass) raises ``memory.DoesNotFit``; a degree the model cannot split into, ValueError."""
    _check.instance("model", model, Model)
    grp = _group(grp)
    _check.instance("assumptions", assumptions, Assumptions)
    tp = check_tensor_parallel(model, grp.count)
    _check_fits(model, grp, new_tokens, cached_tokens, batch, weight_bits, kv_bits, reserve, 1)
    return _tensor_step(model, grp, tp, new_tokens, cached_tokens, batch, weight_bits, kv_bits, assumptions,
                        activation_bits, compute)[0]


@dataclass(frozen=True)
class PipelineStep:
    """A pass through ``stages`` stages, the batch in ``micro_batches`` micro-batches."""

    stages: int
    micro_batches: int
    passes: tuple               # each stage's pass over one micro-batch, first to last (a TensorParallelStep each)
    send_bytes: object          # one micro-batch's hidden states and residuals sent from a stage to the next
    send_time: object

    @property
    def stage(self) -> TensorParallelStep:
        """The slowest stage's pass (at its longest, when swept), which sets the pace."""
        return max(self.passes, key=lambda step: np.max(step.time))

    @property
    def slot(self):
        """The slowest stage's turn on one micro-batch: its pass, then its send to the next stage."""
        return np.max([step.time for step in self.passes], axis=0) + self.send_time

    @property
    def token_time(self):
        """One micro-batch through every stage in turn: a user's time between tokens."""
        return sum(step.time for step in self.passes) + (self.stages - 1) * self.send_time

    @property
    def time(self):
        """The whole batch pushed through and drained (GPipe's schedule): one micro-batch through every stage, then
        each of the others a slot of the slowest stage later."""
        return self.token_time + (self.micro_batches - 1) * self.slot

    @property
    def bubble(self):
        """The share of the time each stage waits idle: (p − 1) ÷ (m + p − 1)."""
        return (self.stages - 1) / (self.micro_batches + self.stages - 1)

    @property
    def interval(self):
        """A user's time between tokens when decode steps follow one another (a server's steady state): each
        micro-batch enters the first stage again once its token has left the last, and each stage takes the
        micro-batches in turn, so max(m × slot, token_time). The sampled token's way back to the first stage is
        left out."""
        return np.maximum(self.micro_batches * self.slot, self.token_time)

    @property
    def idle(self):
        """The share of the steady state the slowest stage waits idle: 1 − m × slot ÷ ``interval``, about
        (p − m) ÷ p below p micro-batches in flight and none from p on (the others wait a little more)."""
        return 1 - self.micro_batches * self.slot / self.interval


def pipeline_parallel_step(model: Model, grp, pipeline_parallel, new_tokens=1, cached_tokens=0, batch=1,
                           micro_batches=1, weight_bits=16, kv_bits=16, assumptions: Assumptions = FLOOR,
                           activation_bits=ACTIVATION_BITS, reserve=RESERVE, compute="16-bit") -> PipelineStep:
    """A pass of ``batch`` sequences through ``pipeline_parallel`` stages of consecutive layers, each
    stage count ÷ stages GPUs in tensor parallelism, the batch split into ``micro_batches`` equal parts.
    Each stage is timed with what it holds (``shard``); the slowest sets the pace."""
    _check.instance("model", model, Model)
    grp = _group(grp)
    _check.instance("assumptions", assumptions, Assumptions)
    tp, pp = _degrees(model, grp, pipeline_parallel)
    batch = int(_check.single("batch", _check.count("batch", batch, minimum=1)))
    micro_batches = int(_check.single("micro_batches", _check.count("micro_batches", micro_batches, minimum=1)))
    if batch % micro_batches:
        raise ValueError(f"micro_batches must divide the batch of {batch}, got {micro_batches}")
    if pp > 1 and grp.link is None:
        raise ValueError(f"link must be given for {pp} stages, got None")
    _check_fits(model, grp, new_tokens, cached_tokens, batch, weight_bits, kv_bits, reserve, pp)
    passes = _tensor_step(model, grp, tp, new_tokens, cached_tokens, batch // micro_batches, weight_bits, kv_bits,
                          assumptions, activation_bits, compute, pp)
    sent = SENT_PER_TOKEN * activation_bytes(model, passes[0].cost.tokens, activation_bits)
    return PipelineStep(stages=pp, micro_batches=micro_batches, passes=passes, send_bytes=sent,
                        send_time=send_time(sent, grp.link) if pp > 1 else 0.0 * sent)
