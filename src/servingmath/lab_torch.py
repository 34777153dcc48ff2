"""The lab's model in PyTorch: the same forward code and the same weights, on a GPU where there is one.

``servingmath.lab.Decoder`` takes its array operations from an ``ops`` object;
``TorchOps`` supplies them in PyTorch, so ``decoder.on(TorchOps(...))`` is the very model
the numpy lab timed, copied to the device. On a CUDA GPU it runs in float16 (every GPU
in the catalog does 16-bit arithmetic fast, the T4 of Colab's free tier included) and is
predicted against that GPU's catalog entry, or against figures measured here when the
catalog does not know the GPU. On a processor it runs in float32 against the machine
entry the numpy lab measured.

This module needs PyTorch (``pip install torch``); the rest of the package does not.
"""
from __future__ import annotations

import contextlib

import numpy as np
import torch

from . import lab
from .hardware import GPU


class TorchOps:
    """The array operations ``lab.Decoder`` needs, in PyTorch on ``device`` in ``dtype``."""

    def __init__(self, device="cpu", dtype=torch.float32):
        self.device = torch.device(device)
        self.dtype = dtype
        self.weight_bits = torch.finfo(dtype).bits
        self.bytes_per_number = self.weight_bits // 8
        self.name = f"PyTorch {torch.__version__} ({self.device.type}, {str(dtype).removeprefix('torch.')})"

    def asarray(self, array):
        return torch.as_tensor(np.asarray(array), dtype=self.dtype, device=self.device)

    def full(self, shape, value):
        return torch.full(shape, value, dtype=self.dtype, device=self.device)

    def tokens(self, ids):
        return torch.as_tensor(np.asarray(ids), dtype=torch.long, device=self.device)

    def zeros(self, shape):
        return torch.zeros(shape, dtype=self.dtype, device=self.device)

    def arange(self, start, stop):
        return torch.arange(start, stop, device=self.device)

    def concat(self, parts, axis):
        return torch.cat(parts, dim=axis)

    def where(self, condition, value, array):
        return array.masked_fill(condition, value)

    def rms_norm(self, x, weight):
        # Squares of 16-bit activations can overflow: the mean is taken in float32.
        wide = x.float()
        return (wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + lab.NORM_EPS)).to(x.dtype) * weight

    def silu(self, x):
        return torch.nn.functional.silu(x)

    def softmax(self, x):
        return torch.softmax(x, dim=-1, dtype=torch.float32).to(x.dtype)

    def to_numpy(self, x):
        return x.detach().float().cpu().numpy()

    def synchronize(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    @contextlib.contextmanager
    def threads(self, count):
        """A context in which PyTorch's processor operations use ``count`` threads."""
        before = torch.get_num_threads()
        torch.set_num_threads(int(count))
        try:
            yield
        finally:
            torch.set_num_threads(before)


def best_ops() -> TorchOps:
    """float16 on the first CUDA GPU when there is one, else float32 on the processor."""
    if torch.cuda.is_available():
        return TorchOps("cuda", torch.float16)
    return TorchOps("cpu", torch.float32)


def machine_for(ops: TorchOps, processor: GPU, settings: lab.Settings) -> GPU:
    """The entry to predict ``ops``'s passes against.

    A CUDA GPU: its catalog entry, matched by name, or else one measured here in its
    16-bit format. The processor: ``processor``, the entry the numpy lab measured.
    """
    if ops.device.type != "cuda":
        return processor
    name = torch.cuda.get_device_name(ops.device)
    known = lab.catalog_entry_for(name)
    if known is not None:
        return known
    return lab.this_machine(
        lab.measure_bandwidth(settings.read_bytes, settings.measure_repeats, ops).best,
        lab.measure_matmul_flops(settings.matmul_size, settings.measure_repeats, ops).best,
        memory_bytes=torch.cuda.get_device_properties(ops.device).total_memory,
        name=f"{name} (measured)", measured_format="fp16")
