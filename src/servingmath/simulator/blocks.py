"""The block manager: the cache memory left beside the weights, counted in blocks.

Under paged memory (vLLM's PagedAttention; nano-vllm's ``nanovllm/engine/block_manager.py``) a request
holds the blocks of the tokens it has cached, and takes one more each time its cache fills the last:
a user decoding from a cache of ``length`` tokens at step ``s`` needs a new block at every step ``t``
with ``t - s + length`` a multiple of the block size, so users are counted by ``(s - length)`` modulo the
block size and a step's new blocks are read from one entry (``due``). Under reserved memory a request
holds, from its admission to its end, the blocks of its prompt and the longest reply it may write.
Admission under paged memory leaves a watermark of 1 % of the blocks free while anyone runs, as vLLM's
scheduler does, so that the users already running have room to grow.
"""
from __future__ import annotations

import numpy as np

from ..memory import DoesNotFit
from ..workload import Workload
from .requests import Request
from .server import EACH_REPLY, Server


class BlockManager:
    """Blocks free and blocks due: what admission, growth and preemption read and change."""

    def __init__(self, server: Server, work: Workload):
        self.block_tokens = server.block_tokens
        self.total = self.free = server.cache_blocks
        self.paged = server.memory == "paged"
        self.watermark = max(1, self.total // 100) if self.paged else 0
        self.per_step = [0] * self.block_tokens   # decoding users by the step (mod block size) each next needs a block
        if self.paged:
            self.reserved = None
            alone = server.blocks(work.prompt + work.reply)
        else:
            if server.max_reply_tokens not in (None, EACH_REPLY) and work.reply.max() > server.max_reply_tokens:
                i = int(np.argmax(work.reply))
                raise ValueError(f"max_reply_tokens must cover every reply: request {i} writes "
                                 f"{int(work.reply[i]):,} tokens, got max_reply_tokens={server.max_reply_tokens!r}")
            self.reserved = server.blocks(server.reservation(work.prompt, work.reply)).tolist()
            alone = np.asarray(self.reserved)
        if alone.max() > self.total:
            i = int(np.argmax(alone))
            raise DoesNotFit(f"request {i} needs {int(alone[i]):,} blocks of cache alone, more than the "
                             f"{self.total:,} that fit beside {server.model.name}'s weights on {server.gpus}")

    def of(self, tokens):
        """Blocks that hold ``tokens`` tokens."""
        return -(-tokens // self.block_tokens)

    def to_admit(self, r: Request):
        """Blocks ``r`` takes on admission: its next prefill's (paged) or its reservation's."""
        return self.of(r.need_tokens) if self.paged else self.reserved[r.index]

    def held_by(self, r: Request, length):
        """Blocks ``r`` holds with ``length`` tokens cached."""
        return self.of(length) if self.paged else r.held

    def fits(self, blocks, anyone_running):
        """Whether ``blocks`` more may be taken, leaving the watermark free while anyone runs."""
        return blocks + (self.watermark if anyone_running else 0) <= self.free

    def track(self, offset, change):
        """A decoding user whose cache fills a block at steps ``offset`` modulo the block size comes or goes."""
        if self.paged:
            self.per_step[offset % self.block_tokens] += change

    def grows(self, r: Request, step):
        """Whether decoding ``r``'s cache takes a new block in ``step``."""
        return (r.start_step - r.start_len) % self.block_tokens == step % self.block_tokens

    def due(self, step):
        """New blocks the users decoding need for ``step``."""
        return self.per_step[step % self.block_tokens] if self.paged else 0

    def held_tokens(self):
        """Tokens' worth of cache memory held."""
        return (self.total - self.free) * self.block_tokens
