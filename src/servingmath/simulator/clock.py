"""A step's time: the package's pass model read through tables built once for a server."""
from __future__ import annotations

import numpy as np

from .. import _check, parallel
from ..memory import kv_cache_bytes, weight_bytes
from ..passes import PassCost, attention_flops, forward_pass, linear_flops, output_parameters
from ..roofline import pass_time
from .server import Server


class StepClock:
    """The time of one step, read from the package's pass model through tables built once.

    A step carries, for each user, some new tokens over that user's cache. Its FLOPs are
    2 × active parameters for each token (``passes.linear_flops``) plus each user's
    attention (``passes.attention_flops``); its bytes are the weights, read once
    (``memory.weight_bytes`` of ``Model.parameters_read``), plus each user's cache read
    (``memory.kv_cache_bytes``) and the new tokens' keys and values written. The tables
    hold those functions' values for every cache length up to the model's window; the
    step's time is ``roofline.pass_time`` of the sums.
    """

    def __init__(self, server: Server):
        _check.instance("server", server, Server)
        model, gpu, assumptions = server.model, server.gpu, server.assumptions
        self.server = server
        window = server.window
        lengths = np.arange(window + 1)
        counted = assumptions.kv_cache
        # In a tensor-parallel group each GPU does 1/N of the arithmetic and keeps its share of the cache
        # (``parallel.shard``): the tables below are one GPU's.
        degree, share = server.tensor_parallel, server.kv_share
        self.per_flop = float(pass_time(1.0, 0.0, gpu.peak_flops, gpu.memory_bandwidth, assumptions).compute_time)
        if degree > 1:
            self.per_flop /= degree
        self.per_byte = float(pass_time(0.0, 1.0, gpu.peak_flops, gpu.memory_bandwidth, assumptions).memory_time)
        self.overhead = float(assumptions.overhead)
        # Parameters of an untied input table a step neither multiplies by nor reads (server.input_table).
        self.input_table = float(model.vocab * model.hidden) \
            if server.input_table == "looked up" and not model.tied_embeddings else 0.0
        self.flops_per_token = float(linear_flops(model.active_parameters - self.input_table, 1))
        # FLOPs a prompt token whose logits nobody asks for skips (server.logits): every piece is a whole
        # prompt, so each step computes logits for its next tokens and one token of each piece.
        self.skipped_per_token = float(linear_flops(output_parameters(model), 1)) \
            if server.logits == "last of each prompt" else 0.0
        self.write_per_token = float(model.kv_bytes_per_token(server.kv_bits)) * share if counted else 0.0
        self.read = (kv_cache_bytes(model, lengths, 1, server.kv_bits) * share if counted
                     else np.zeros(window + 1)).astype(float)
        self.communication_fixed, self.communication_per_token = _communication(server)
        self.attention_mode = assumptions.attention
        # Attention of a whole prompt of each length: a piece of n tokens after c cached ones is
        # A[c + n] − A[c] when counted causally (or not at all), as passes.positions_attended sums it.
        self.prompt_attention = np.asarray(attention_flops(model, lengths, 0, assumptions.attention), dtype=float) \
            if assumptions.attention != "none" else np.zeros(window + 1)
        self.telescopes = assumptions.attention in ("causal", "none")
        decode_attention = np.diff(self.prompt_attention) if self.telescopes else np.asarray(
            attention_flops(model, 1, lengths[:-1], assumptions.attention), dtype=float)
        self.decode_attention = decode_attention
        # Where each user's decode costs grow in a straight line with the cache (every full-attention
        # model), a step's sums follow from the number of users and their total cache.
        c = lengths[:-1].astype(float)
        self.attention_base = float(decode_attention[0])
        self.attention_slope = float(decode_attention[1] - decode_attention[0]) if window > 1 else 0.0
        self.read_slope = float(self.read[1] - self.read[0])
        self.linear = bool(np.allclose(decode_attention, self.attention_base + self.attention_slope * c, rtol=1e-12, atol=0)
                           and np.allclose(self.read[:-1], self.read[0] + self.read_slope * c, rtol=1e-12, atol=0)
                           and self.read[0] == 0)
        self._weights = {}
        self.decode_only_by_users = {}   # decode_only's functions, by users: the loop looks here at every run of steps
        self._decode_steps = {}   # decode_step's functions, by (users, mixed)
        self._dense = not model.mixture_of_experts
        # A step timed by its phases (server.clock == "phases"): the matrix products run at
        # ``linear_peak`` where one is set (8-bit weights on a card with an 8-bit peak).
        self.phased = server.clock == "phases"
        # Measured step times in place of the pass model (Server.step_time), as a profiler records them.
        self.measured = server.step_time
        self.per_linear_flop = self.per_flop if server.linear_peak is None else \
            float(pass_time(1.0, 0.0, server.linear_peak, gpu.memory_bandwidth, assumptions).compute_time) / degree
        self.user_time = float(server.user_time)
        self.stream_time = float(server.stream_time)
        self.launch_time = float(server.launch_time)

    def weights(self, tokens):
        """Bytes of weights a step of ``tokens`` tokens reads (every weight once, in a dense model)."""
        key = 1 if self._dense else tokens
        found = self._weights.get(key)
        if found is None:
            model, degree = self.server.model, self.server.tensor_parallel
            found = float(weight_bytes(model.parameters_read(key) - self.input_table, self.server.weight_bits))
            if degree > 1:     # each GPU reads 1/N of every matrix and the norms whole (parallel.shard)
                whole = float(weight_bytes(parallel.replicated_parameters(model), self.server.weight_bits))
                found = (found - whole) / degree + whole
            self._weights[key] = found
        return found

    def piece(self, new, cached):
        """(FLOPs of attention, bytes of cache read) for ``new`` prompt tokens after ``cached`` ones."""
        if self.telescopes:
            attention = self.prompt_attention[cached + new] - self.prompt_attention[cached]
        else:
            attention = float(attention_flops(self.server.model, new, cached, self.attention_mode))
        return float(attention), float(self.read[cached])

    def time(self, decode_caches=(), pieces=()):
        """Seconds of one step: a next token for users holding ``decode_caches`` tokens each, and
        prompt ``pieces`` as (new tokens, cached tokens) pairs."""
        decode_caches = [int(c) for c in decode_caches]
        pieces = [(int(n), int(c)) for n, c in pieces]
        tokens = len(decode_caches) + sum(n for n, _ in pieces)
        if tokens == 0:
            raise ValueError("a step must carry at least one token, got none")
        if self.phased:
            return sum(self.phases(decode_caches, pieces).values())
        flops = self.linear_flops(tokens, len(decode_caches), len(pieces)) + sum(
            self.decode_attention[c] for c in decode_caches)
        moved = self.weights(tokens) + self.write_per_token * tokens + sum(self.read[c] for c in decode_caches)
        for n, c in pieces:
            attention, read = self.piece(n, c)
            flops += attention
            moved += read
        return max(flops * self.per_flop, moved * self.per_byte) + self.overhead + self.communication(tokens)

    def linear_flops(self, tokens, users, pieces):
        """FLOPs of a step's matrix products: ``tokens`` through the weights, less what the prompt tokens
        whose logits are not asked for skip (``server.logits``), ``users`` next tokens and ``pieces`` prompts."""
        return self.flops_per_token * tokens - self.skipped_per_token * (tokens - users - pieces)

    def communication(self, tokens):
        """Seconds of a step's all-reduces in a tensor-parallel group (none on one GPU)."""
        return self.communication_fixed + self.communication_per_token * tokens

    def phases(self, decode_caches=(), pieces=()):
        """Seconds of each phase of a step timed as an engine runs it, kernel after kernel (their sum is
        the step): ``matrix products`` (every token through the weights, the weights read once, the new
        keys and values written), ``decode attention`` (each running user's next token over its cache,
        one memory-bound pass), ``prompt attention`` (each prompt piece over itself and its cache), each
        on its own roofline; ``launch wait`` (time the processor takes to launch the kernels beyond the
        time they run, where the step is not captured as a CUDA graph); ``fixed`` (the server's
        ``assumptions.overhead``: the sampler and the step's synchronisation); ``processor`` (the
        engine's scheduling and input preparation, ``user_time`` for each user in the step); in a
        tensor-parallel group, ``all-reduces`` (``communication``)."""
        decode_caches = [int(c) for c in decode_caches]
        pieces = [(int(n), int(c)) for n, c in pieces]
        tokens = len(decode_caches) + sum(n for n, _ in pieces)
        matrix = max(self.linear_flops(tokens, len(decode_caches), len(pieces)) * self.per_linear_flop,
                     (self.weights(tokens) + self.write_per_token * tokens) * self.per_byte)
        decode = max(sum(self.decode_attention[c] for c in decode_caches) * self.per_flop,
                     sum(self.read[c] for c in decode_caches) * self.per_byte)
        prompt = 0.0
        for n, c in pieces:
            attention, read = self.piece(n, c)
            prompt += max(attention * self.per_flop, read * self.per_byte)
        gpu = matrix + decode + prompt
        streamed = len(decode_caches) + len(pieces)
        phases = {"matrix products": matrix, "decode attention": decode, "prompt attention": prompt,
                  "launch wait": max(0.0, self.launch_time - gpu), "fixed": self.overhead,
                  "processor": self.user_time * streamed}
        if self.server.tensor_parallel > 1:
            phases["all-reduces"] = self.communication(tokens)
        phases["streaming wait"] = max(0.0, self.stream_time * streamed - sum(phases.values()))
        return phases

    def check(self, decode_caches=(), pieces=()):
        """The same step's time straight from ``passes.forward_pass`` and ``roofline.pass_time`` (in a
        tensor-parallel group, one GPU's share by ``parallel.shard`` and the all-reduces added)."""
        server = self.server
        if server.tensor_parallel > 1:
            return self._check_group(decode_caches, pieces)
        flops = moved = 0.0
        users = [(1, int(c)) for c in decode_caches] + [(int(n), int(c)) for n, c in pieces]
        outputs = 1 if server.logits == "last of each prompt" else None
        for n, c in users:
            cost = forward_pass(server.model, n, c, 1, server.weight_bits, server.kv_bits,
                                attention=server.assumptions.attention, kv_cache=server.assumptions.kv_cache,
                                outputs=outputs)
            flops += cost.flops
            moved += cost.bytes - cost.weight_bytes
        tokens = sum(n for n, _ in users)
        moved += weight_bytes(server.model.parameters_read(tokens), server.weight_bits)
        return float(pass_time(flops, moved, server.gpu.peak_flops, server.gpu.memory_bandwidth,
                               server.assumptions).time)

    def _check_group(self, decode_caches, pieces):
        server, model = self.server, self.server.model
        users = [(1, int(c)) for c in decode_caches] + [(int(n), int(c)) for n, c in pieces]
        outputs = 1 if server.logits == "last of each prompt" else None
        costs = [forward_pass(model, n, c, 1, server.weight_bits, server.kv_bits,
                              attention=server.assumptions.attention, kv_cache=server.assumptions.kv_cache,
                              outputs=outputs)
                 for n, c in users]
        tokens = sum(n for n, _ in users)
        whole = PassCost(tokens, sum(c.linear_flops for c in costs), sum(c.attention_flops for c in costs),
                         weight_bytes(model.parameters_read(tokens), server.weight_bits),
                         sum(c.kv_read_bytes for c in costs), sum(c.kv_write_bytes for c in costs))
        mine = parallel.shard(whole, model, server.tensor_parallel)
        allreduces = parallel.ALLREDUCES_PER_LAYER * model.layers * parallel.allreduce_time(
            parallel.activation_bytes(model, tokens), server.tensor_parallel, server.group.link)
        return float(pass_time(mine.flops, mine.bytes, server.gpu.peak_flops, server.gpu.memory_bandwidth,
                               server.assumptions).time + allreduces)

    # -- The simulator's loop reads these: the same arithmetic as ``time`` and ``phases``, from its running sums.

    def decode_only(self, users):
        """For a model whose decode costs grow in a straight line with the cache (``linear``), the time of
        a step of ``users`` next tokens and nothing else, as a function of the users' total cache. Made once for each
        count of users."""
        found = self.decode_only_by_users.get(users)
        if found is not None:
            return found
        if self.measured is not None:
            measured = self.measured

            def seconds(cached):
                return measured(users, users, 0)
        else:
            per_flop, per_byte, overhead = self.per_flop, self.per_byte, self.overhead + self.communication(users)
            slope, read_slope = self.attention_slope, self.read_slope
            weights_read = self.weights(users) + self.write_per_token * users
            if self.phased:
                matrix = max(self.flops_per_token * users * self.per_linear_flop, weights_read * per_byte)
                attention_fixed = self.attention_base * users * per_flop
                launch, fixed = self.launch_time, overhead + self.user_time * users
                streamed = self.stream_time * users

                def seconds(cached):
                    step = slope * cached * per_flop + attention_fixed
                    memory_time = read_slope * cached * per_byte
                    step = (memory_time if memory_time > step else step) + matrix
                    step = (launch if step < launch else step) + fixed
                    return streamed if streamed > step else step
            else:
                flops_fixed = (self.flops_per_token + self.attention_base) * users

                def seconds(cached):
                    step = (flops_fixed + slope * cached) * per_flop
                    memory_time = (weights_read + read_slope * cached) * per_byte
                    return (memory_time if memory_time > step else step) + overhead
        self.decode_only_by_users[users] = seconds
        return seconds

    def decode_step(self, users, mixed=True):
        """``step``'s time for a step of ``users`` next tokens and nothing else, as a function of the users'
        total cache (a ``linear`` clock's), the terms the cache does not change summed once, in ``step``'s own
        order, so that each step's time is ``step``'s to the last bit. Made once for each count of users."""
        found = self._decode_steps.get((users, mixed))
        if found is not None:
            return found
        if self.measured is not None:
            constant = self.measured(users, users, 0) + 0.0

            def seconds(cached):
                return constant
        elif not self.linear:
            raise ValueError(f"decode_step needs a clock whose decode costs grow in a straight line with the cache; "
                             f"{self.server.model.name}'s do not")
        elif self.phased:
            matrix = max(self.linear_flops(users, users, 0) * self.per_linear_flop,
                         (self.weights(users) + self.write_per_token * users) * self.per_byte)
            base, slope, read_slope = self.attention_base * users, self.attention_slope, self.read_slope
            per_flop, per_byte, launch = self.per_flop, self.per_byte, self.launch_time
            fixed = self.overhead + self.communication(users) + self.user_time * users
            streamed = self.stream_time * users

            def seconds(cached):
                step = matrix + max((base + slope * cached) * per_flop, read_slope * cached * per_byte)
                if step < launch:
                    step = launch
                step += fixed
                return (streamed if streamed > step else step) + 0.0
        else:
            flops = self.linear_flops(users, users, 0) + self.attention_base * users
            moved = self.weights(users) + self.write_per_token * users
            slope, read_slope, per_flop, per_byte = self.attention_slope, self.read_slope, self.per_flop, self.per_byte
            fixed = self.overhead + self.communication(users) + 0.0

            def seconds(cached):
                step = (flops + slope * cached) * per_flop
                memory_time = (moved + read_slope * cached) * per_byte
                return (memory_time if memory_time > step else step) + fixed
        self._decode_steps[(users, mixed)] = seconds
        return seconds

    def step(self, tokens, users, cached, caches, pieces, waited=0.0, mixed=True):
        """Seconds of a step of ``tokens`` tokens: ``users`` next tokens over caches of ``cached`` tokens in
        all (each cache listed by ``caches()``, read only where costs are not linear in the cache), prompt
        ``pieces`` as (request, new tokens, cached tokens), and ``waited`` seconds of copies to and from
        the host. ``mixed`` False runs a step of prompts and next tokens as two (``phased_step``)."""
        if self.measured is not None:      # the prompts it starts: pieces with nothing cached before them
            return self.measured(users, tokens, sum(1 for piece in pieces if piece[2] == 0)) + waited
        if self.phased:
            return self.phased_step(tokens, users, cached, caches, pieces, mixed) + waited
        matrix = self.linear_flops(tokens, users, len(pieces))
        if self.linear:
            flops = matrix + self.attention_base * users + self.attention_slope * cached
            moved = self.weights(tokens) + self.write_per_token * tokens + self.read_slope * cached
        else:
            flops = matrix
            moved = self.weights(tokens) + self.write_per_token * tokens
            for c in caches():
                flops += self.decode_attention[c]
                moved += self.read[c]
        for _, new, past in pieces:
            attention, cache_read = self.piece(new, past)
            flops += attention
            moved += cache_read
        step = flops * self.per_flop
        memory_time = moved * self.per_byte
        if memory_time > step:
            step = memory_time
        return step + (self.overhead + self.communication(tokens) + waited)

    def phased_step(self, tokens, users, cached, caches, pieces, mixed=True):
        """A step's seconds timed by its phases (``phases``), from the loop's running sums. Where prompts
        and next tokens may not share a step (``mixed`` False: SGLang without --enable-mixed-chunk, vLLM
        V0 without chunked prefill), a step that has both is run as two, the prompts' then the next
        tokens', each with its own weights read and fixed costs; the users decoding wait through both."""
        if not mixed and users and pieces:
            return (self.phased_step(tokens - users, 0, 0, tuple, pieces)
                    + self.phased_step(users, users, cached, caches, ()))
        step = max(self.linear_flops(tokens, users, len(pieces)) * self.per_linear_flop,
                   (self.weights(tokens) + self.write_per_token * tokens) * self.per_byte)
        if self.linear:
            attention = self.attention_base * users + self.attention_slope * cached
            cache_read = self.read_slope * cached
        else:
            attention = cache_read = 0.0
            for c in caches():
                attention += self.decode_attention[c]
                cache_read += self.read[c]
        step += max(attention * self.per_flop, cache_read * self.per_byte)
        for _, new, past in pieces:
            attention, read = self.piece(new, past)
            step += max(attention * self.per_flop, read * self.per_byte)
        if step < self.launch_time:
            step = self.launch_time
        step += self.overhead + self.communication(tokens) + self.user_time * (users + len(pieces))
        streamed = self.stream_time * (users + len(pieces))   # the streaming process, beside the steps
        return streamed if streamed > step else step

    def copy_time(self, lengths, bandwidth):
        """Seconds to copy caches of these ``lengths`` between the GPU and the host, one after another."""
        waited = 0.0
        for length in lengths:
            waited += self.read[length] / bandwidth
        return waited


# A server's settings that time a step (the rest schedule: policy, memory, blocks, budgets, caps, preemption):
# servers alike in these, and in the link a tensor-parallel group resolves to (a GPU's key, which its equality leaves
# out, picks its default link), share one clock (``clock_of``), whose tables and functions read no other.
TIMED = ("model", "gpu", "assumptions", "weight_bits", "kv_bits", "clock", "user_time", "stream_time", "launch_time",
         "linear_peak", "logits", "input_table", "tensor_parallel", "link")
# Clocks kept: each holds a few arrays as long as its model's window.
CLOCKS_KEPT = 16
_clocks: dict = {}


def clock_of(server: Server) -> StepClock:
    """A step clock for ``server``, shared by every server alike in what times a step (``TIMED``): its tables and the
    functions it makes for each count of users depend on those settings alone. Its ``server`` is the one it was made
    for, which may differ from ``server`` in how it schedules. A server timed by measured step times (``step_time``, a
    function that may answer differently from one run to the next) or with a setting that cannot be a key gets a clock
    of its own."""
    if server.step_time is not None:
        return StepClock(server)
    try:
        key = (*(getattr(server, name) for name in TIMED), server.group.link if server.tensor_parallel > 1 else None)
        found = _clocks.get(key)
    except TypeError:     # a setting that cannot be hashed
        return StepClock(server)
    if found is None:
        if len(_clocks) >= CLOCKS_KEPT:
            del _clocks[next(iter(_clocks))]      # the oldest
        found = _clocks[key] = StepClock(server)
    return found


def _communication(server: Server):
    """(seconds a step, seconds a token) of a tensor-parallel group's all-reduces, none on one GPU: two a layer
    of the step's activations (Megatron-LM; parallel.allreduce_time), the link's latency for each, and a
    ring's time that grows with the step's tokens."""
    degree = server.tensor_parallel
    if degree == 1:
        return 0.0, 0.0
    group, allreduces = server.group, parallel.ALLREDUCES_PER_LAYER * server.model.layers
    return (allreduces * float(group.link.latency_for(degree)),
            allreduces * float(parallel.ring_time(parallel.activation_bytes(server.model, 1), degree, group.link)))


def _phased_step(clock: StepClock, tokens, d, sum_c, decoding, cur_len, pieces, mixed=True):
    """``StepClock.phased_step`` for ``d`` users decoding (``decoding``, each ``cur_len(i)`` tokens cached)."""
    return clock.phased_step(tokens, d, sum_c, lambda: [cur_len(i) for i in decoding], pieces, mixed)
