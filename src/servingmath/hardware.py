"""Accelerators: the few figures a roofline needs, each with where it comes from.

Inside the package every figure is in SI units: FLOP/s, bytes/s, bytes, US dollars
an hour. Memory is the exception in how spec sheets write it: the "80 GB" of an H100
counts binary gigabytes (2^30 bytes), as memory chips are made, so ``memory_bytes``
is the listed figure × 2^30 (nvidia-smi reports 81,559 MiB, 79.6 × 2^30 bytes, on an
H100; the driver keeps the rest) and ``listed_memory`` shows it as the sheet does.
Where the card's own error correction takes part of that memory before any program
sees it (the GDDR6 of the T4, L4 and L40S, with ECC on as the clouds ship them),
``memory_bytes`` is what is left, the total nvidia-smi reports, and the sheet's figure
moves to ``listed_memory_bytes``: so the share the lessons count as usable
(``memory.usable_memory``, 95 %) stays below what CUDA reports on every card whose
report the catalog holds (a test checks the whole catalog).

Peak arithmetic is kept per number format, each the *dense* rate: ``peak_flops``, which
the lessons' arithmetic uses, is the 16-bit one; ``flops("fp8")`` the FP8 one. Spec
sheets often headline a figure that assumes 2:4 structured sparsity, twice the dense
one; it is kept apart, in ``listed_with_sparsity``, so the two cannot be confused.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

import numpy as np

from . import _check


@dataclass(frozen=True)
class GPU:
    """One accelerator as the roofline sees it.

    ``dense_flops`` maps a number format (``"bf16"``, ``"fp16"``, ``"fp8"``, ``"fp32"``)
    to the peak dense FLOP/s in that format. ``price_per_hour`` may be None for a
    machine nobody rents by the hour (a laptop).
    """

    name: str
    dense_flops: Mapping[str, float]
    memory_bandwidth: float
    memory_bytes: float
    price_per_hour: float | None
    source: str
    as_of: str
    price_source: str = "illustrative on-demand rental price; providers differ"
    listed_with_sparsity: float | None = None
    key: str = field(default="", compare=False)
    source_url: str = ""
    # The spec sheet's memory where a program gets less of it: a T4 lists 16 GB of GDDR6, but
    # with ECC on, as in the clouds and Colab, the check bits take a sixteenth, leaving 15 GB
    # (the L4's 24 leave 22.5, the L40S's 48 leave 45); a 16 GB Mac lets its GPU use two
    # thirds (``metal_working_set``).
    listed_memory_bytes: float | None = None
    # The memory CUDA reports for the card (``torch.cuda.mem_get_info``'s total, what vLLM
    # multiplies by ``gpu_memory_utilization``): less than ``memory_bytes``, the driver keeping
    # the rest. None where no published figure was found; ``cuda_reported_source`` says where.
    cuda_reported_bytes: float | None = None
    cuda_reported_source: str = ""

    def __post_init__(self):
        for name in ("name", "source", "as_of", "price_source", "key", "source_url", "cuda_reported_source"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a string, got {getattr(self, name)!r}")
        if not isinstance(self.dense_flops, Mapping):
            raise TypeError(f"dense_flops must map number formats to FLOP/s, such as {{'bf16': 989.4e12}}, "
                            f"got {self.dense_flops!r}")
        if not self.dense_flops:
            raise ValueError(f"dense_flops must name at least one format, got {self.dense_flops!r}")
        for dtype, flops in self.dense_flops.items():
            if not isinstance(dtype, str):
                raise TypeError(f"dense_flops keys must be format names such as 'bf16', got {dtype!r}")
            _check.single(f"dense_flops[{dtype!r}]", _check.positive(f"dense_flops[{dtype!r}]", flops))
        object.__setattr__(self, "dense_flops", MappingProxyType(dict(self.dense_flops)))
        for name in ("memory_bandwidth", "memory_bytes"):
            _check.positive(name, getattr(self, name))
            if np.ndim(getattr(self, name)):
                raise TypeError(f"{name} must be one number, got {getattr(self, name)!r}")
        for name in ("price_per_hour", "listed_with_sparsity", "listed_memory_bytes", "cuda_reported_bytes"):
            if getattr(self, name) is not None:
                _check.positive(name, getattr(self, name))
        if self.cuda_reported_bytes is not None:
            if np.ndim(self.cuda_reported_bytes):
                raise TypeError(f"cuda_reported_bytes must be one number, got {self.cuda_reported_bytes!r}")
            if self.cuda_reported_bytes > self.memory_bytes:
                raise ValueError(f"cuda_reported_bytes must be at most memory_bytes ({self.memory_bytes!r}): CUDA "
                                 f"reports part of the memory, never more, got {self.cuda_reported_bytes!r}")

    def __hash__(self):
        return hash((self.name, self.memory_bandwidth, self.memory_bytes))

    def flops(self, dtype: str = "16-bit") -> float:
        """Peak dense FLOP/s in ``dtype``; ``"16-bit"`` means bf16, or fp16 where bf16 is missing."""
        if not isinstance(dtype, str):
            raise TypeError(f"dtype must be a format name such as 'bf16', got {dtype!r}")
        if dtype == "16-bit":
            for candidate in ("bf16", "fp16"):
                if candidate in self.dense_flops:
                    return self.dense_flops[candidate]
        if dtype not in self.dense_flops:
            raise ValueError(f"dtype must be one of {sorted(self.dense_flops)} for {self.name}, got {dtype!r}")
        return self.dense_flops[dtype]

    @property
    def peak_flops(self) -> float:
        """The dense 16-bit rate the course's arithmetic uses."""
        return self.flops("16-bit")

    @property
    def listed_memory(self) -> str:
        """The memory as the spec sheet lists it: ``"80 GB"`` (binary gigabytes)."""
        listed = self.memory_bytes if self.listed_memory_bytes is None else self.listed_memory_bytes
        return f"{listed / GiB:,.0f} GB"

    def with_changes(self, **changes) -> "GPU":
        """A copy with some figures replaced, for what-if questions."""
        unknown = sorted(set(changes) - set(self.__dataclass_fields__))
        if unknown:
            raise TypeError(f"with_changes got {unknown}, which GPU does not have; "
                            f"it has {sorted(self.__dataclass_fields__)}")
        values = {name: getattr(self, name) for name in self.__dataclass_fields__}
        if "memory_bytes" in changes and "cuda_reported_bytes" not in changes:
            # A card of another size: what CUDA would report for it is not known.
            values.update(cuda_reported_bytes=None, cuda_reported_source="")
        values.update(changes)
        return GPU(**values)


T = 1e12
GB = 1e9
GiB = 2**30  # a spec sheet's memory "GB"

# Bandwidths that vendors round: the exact figure is the memory's bus width × its transfer rate,
# and a floor computed with a rounded-down figure would sit above the true minimum time.
HBM2E_H100_PCIE = 5120 / 8 * 2 * 1593e6   # 2,039 GB/s: 5,120-bit HBM2e at 1,593 MHz (double data rate)
LPDDR5_6400_512_BIT = 512 / 8 * 6400e6     # 409.6 GB/s: Apple's "400 GB/s" (M1 Max)
LPDDR5_6400_1024_BIT = 1024 / 8 * 6400e6   # 819.2 GB/s: Apple's "800 GB/s" (M1 Ultra, M2 Ultra)
LPDDR5_6400_128_BIT = 128 / 8 * 6400e6     # 102.4 GB/s: Apple's "100 GB/s" (M2)
# The four, for a page that says which bandwidths are worked out rather than printed by the vendor.
FROM_THE_MEMORY_BUS = (HBM2E_H100_PCIE, LPDDR5_6400_512_BIT, LPDDR5_6400_1024_BIT, LPDDR5_6400_128_BIT)
# The share of a GDDR6 card's memory left to programs with ECC on: the check bits take a
# sixteenth (NVIDIA's CUDA C++ Best Practices Guide), so 16, 24 and 48 GB show as 15,360,
# 23,040 and 46,080 MiB, less a few the driver keeps.
ECC_LEFT = 15 / 16



def metal_working_set(unified_bytes) -> float:
    """The bytes of a Mac's unified memory its GPU may use: Metal's recommendedMaxWorkingSetSize.

    The GPU shares the machine's memory, but Metal lets it keep only part of it at once, and
    llama.cpp (Ollama's engine) stays within that and logs it at start-up: two thirds of the
    memory up to 32 GB, three quarters above. Its 2023 builds divided by 1024², labelling the
    result "MB" (late in the year "MiB"), so their logs are in MiB: 10,922.67 on a 16 GB M1 MacBook Pro
    (https://github.com/abetlen/llama-cpp-python/issues/687), 21,845.34 on a 32 GB M2 Max
    (https://github.com/ollama/ollama/issues/434), 49,152 on a 64 GB M2 Max
    (https://github.com/ggml-org/llama.cpp/issues/1870), 73,728 on a 96 GB M2 Max
    (https://github.com/ggml-org/llama.cpp/issues/3213). Current builds divide by 10⁶
    (ggml_metal_device_init in ggml/src/ggml-metal/ggml-metal-device.m) and print true
    megabytes: the same two thirds of 16 GB show as 11,453.25 MB.
    """
    unified_bytes = _check.positive("unified_bytes", unified_bytes)
    return unified_bytes * np.where(unified_bytes <= 32 * GiB, 2 / 3, 3 / 4)

# Ordered as the course meets them: the lesson's H100 SXM first.
_ENTRIES = [
    GPU(
        key="h100-sxm", source_url="https://www.nvidia.com/en-us/data-center/h100/",
        name="NVIDIA H100 SXM",
        dense_flops={"bf16": 989.4 * T, "fp16": 989.4 * T, "fp8": 1978.9 * T, "fp32": 66.9 * T},
        memory_bandwidth=3.35e12, memory_bytes=80 * GiB, price_per_hour=3.00,
        listed_with_sparsity=1978.9 * T,
        source="NVIDIA H100 Tensor Core GPU datasheet, SXM5 column", as_of="2023-07",
        price_source="the lesson's round rental price",
        cuda_reported_bytes=79.19 * GiB,
        cuda_reported_source=(
            "vLLM start-up log on an H100 80GB HBM3, 2025-03-21: 'total_gpu_memory (79.19GiB)', "
            "https://github.com/kubernetes-sigs/gateway-api-inference-extension/pull/550; vLLM's "
            "profiling logs of 2024-12 and 2025-01 print 79.22GiB on the same card, "
            "https://github.com/vllm-project/vllm/pull/10511, https://github.com/vllm-project/vllm/pull/12126; "
            "PyTorch reports 79.11GiB on an H100 under another driver, https://github.com/vllm-project/vllm/issues/27508"),
    ),
    GPU(
        key="h100-pcie", source_url="https://www.nvidia.com/en-us/data-center/h100/",
        name="NVIDIA H100 PCIe",
        dense_flops={"bf16": 756.5 * T, "fp16": 756.5 * T, "fp8": 1513.0 * T, "fp32": 51.2 * T},
        memory_bandwidth=HBM2E_H100_PCIE, memory_bytes=80 * GiB, price_per_hour=2.40,
        listed_with_sparsity=1513.0 * T,
        source="NVIDIA H100 Tensor Core GPU datasheet, PCIe column; bandwidth: the product brief's "
               "'greater than 2,000 GB/s' (PB-11133-001), exactly 2,039 GB/s from its HBM2e: 5,120 bits at "
               "1,593 MHz, two transfers a cycle (TechPowerUp GPU database)", as_of="2023-07",
        cuda_reported_source=(
            "none found: no published report of the memory CUDA gives this card names where it came from, and "
            "the sheet's 80 GB will not do, since CUDA reports less than the sheet by an amount that varies by "
            "card (79.19 GiB on the H100 SXM)"),
    ),
    GPU(
        key="h200", source_url="https://www.nvidia.com/en-us/data-center/h200/",
        name="NVIDIA H200 SXM",
        dense_flops={"bf16": 989.4 * T, "fp16": 989.4 * T, "fp8": 1978.9 * T, "fp32": 66.9 * T},
        memory_bandwidth=4.8e12, memory_bytes=141 * GiB, price_per_hour=3.80,
        listed_with_sparsity=1978.9 * T,
        source="NVIDIA H200 Tensor Core GPU datasheet, SXM column", as_of="2024-11",
        cuda_reported_bytes=139.81 * GiB,
        cuda_reported_source=(
            "vLLM 0.16.0rc2's environment report and PyTorch's out-of-memory message on 8 H200s, driver 570.148.08, "
            "2026-02: 'GPU: NVIDIA H200 (139.81 GiB)', 'GPU 5 has a total capacity of 139.81 GiB', "
            "https://github.com/vllm-project/vllm/issues/34553 (fixed by pull request 35488)"),
    ),
    GPU(
        key="a100-80gb", source_url="https://www.nvidia.com/en-us/data-center/a100/",
        name="NVIDIA A100 80 GB SXM",
        dense_flops={"bf16": 312 * T, "fp16": 312 * T, "fp32": 19.5 * T},
        memory_bandwidth=2.039e12, memory_bytes=80 * GiB, price_per_hour=1.80,
        listed_with_sparsity=624 * T,
        source="NVIDIA A100 Tensor Core GPU datasheet, 80 GB SXM column", as_of="2021-06",
        cuda_reported_bytes=79.25 * GiB,
        cuda_reported_source=(
            "PyTorch's out-of-memory message on an A100 80 GB, 2025-12: 'GPU 0 has a total capacity of 79.25 GiB', "
            "https://github.com/HiDream-ai/VAREdit/issues/6 (the same 79.25 GiB on an A100 in "
            "https://github.com/levihsu/OOTDiffusion/issues/235); neither names the form factor"),
    ),
    GPU(
        key="a100-80gb-pcie", source_url="https://www.nvidia.com/en-us/data-center/a100/",
        name="NVIDIA A100 80 GB PCIe",
        dense_flops={"bf16": 312 * T, "fp16": 312 * T, "fp32": 19.5 * T},
        memory_bandwidth=1.935e12, memory_bytes=80 * GiB, price_per_hour=None,
        listed_with_sparsity=624 * T,
        source="NVIDIA A100 Tensor Core GPU datasheet, 80 GB PCIe column: 1,935 GB/s, 300 W", as_of="2021-06",
        cuda_reported_bytes=79.25 * GiB,
        cuda_reported_source=(
            "the A100 80 GB's figure, 79.25 GiB in PyTorch's out-of-memory messages "
            "(https://github.com/HiDream-ai/VAREdit/issues/6), which do not name the form factor; the PCIe card "
            "carries the same 80 GB of HBM2e"),
        price_source="not priced: in the catalog for the measurements it ran (the chapter 'Reality check')",
    ),
    GPU(
        key="l4", source_url="https://www.nvidia.com/en-us/data-center/l4/",
        name="NVIDIA L4",
        dense_flops={"bf16": 121 * T, "fp16": 121 * T, "fp8": 242 * T, "fp32": 30.3 * T},
        memory_bandwidth=300e9, memory_bytes=24 * GiB * ECC_LEFT, listed_memory_bytes=24 * GiB, price_per_hour=0.70,
        listed_with_sparsity=242 * T,
        source="NVIDIA L4 Tensor Core GPU datasheet: 24 GB of GDDR6, of which ECC, on in the clouds, keeps a "
               "sixteenth, leaving 23,040 MiB (nvidia-smi reports 23,034 MiB on the clouds' L4s)", as_of="2023-03",
        cuda_reported_bytes=22.03 * GiB,
        cuda_reported_source=(
            "PyTorch's out-of-memory message on an L4, 2025-11: 'GPU 0 has a total capacity of 22.03 GiB', "
            "https://github.com/ArcInstitute/evo2/issues/190; vLLM 0.10.2's start-up log on an L4, 2026-09: "
            "'Free memory on device (21.81/22.03 GiB)', https://github.com/TechBroMoho/quantized-llm-serving "
            "(results/validation/phase3/smoke-20260923T095423Z/vllm/server.log)"),
    ),
    GPU(
        key="l40s", source_url="https://www.nvidia.com/en-us/data-center/l40s/",
        name="NVIDIA L40S",
        dense_flops={"bf16": 362.05 * T, "fp16": 362.05 * T, "fp8": 733 * T, "fp32": 91.6 * T},
        memory_bandwidth=864e9, memory_bytes=48 * GiB * ECC_LEFT, listed_memory_bytes=48 * GiB, price_per_hour=1.40,
        listed_with_sparsity=733 * T,
        source="NVIDIA L40S GPU datasheet: 48 GB of GDDR6, of which ECC, on as the clouds ship it, keeps a "
               "sixteenth, leaving 46,080 MiB (nvidia-smi reports 46,068 MiB on an L40S)", as_of="2023-08",
        cuda_reported_bytes=44.53 * GiB,
        cuda_reported_source=(
            "PyTorch's out-of-memory message on an L40S 48GB, 2025-03: 'GPU 0 has a total capacity of 44.53 GiB', "
            "https://github.com/Wan-Video/Wan2.1/issues/205 (44.42 GiB on 8 L40S under another driver, "
            "https://github.com/stepfun-ai/Step-Video-T2V/issues/8; 44.39 GiB in vLLM 0.10.2's start-up log on an "
            "L40S, 'Free memory on device (43.9/44.39 GiB)', https://github.com/TechBroMoho/quantized-llm-serving "
            "(results/quantization/phase4/sanity-20260923T124020Z/bf16/server.log))"),
    ),
    GPU(
        key="mi300x", source_url="https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html",
        name="AMD Instinct MI300X",
        dense_flops={"bf16": 1307.4 * T, "fp16": 1307.4 * T, "fp8": 2614.9 * T, "fp32": 163.4 * T},
        memory_bandwidth=5.3e12, memory_bytes=192 * GiB, price_per_hour=3.00,
        listed_with_sparsity=2614.9 * T,
        source="AMD Instinct MI300X accelerator datasheet", as_of="2023-12",
        cuda_reported_bytes=191.98 * GiB,
        cuda_reported_source=(
            "PyTorch's out-of-memory message on an AMD Instinct MI300X under ROCm 6.1 (HIP answers PyTorch's "
            "torch.cuda calls, which vLLM reads), 2024-08-28: 'GPU 0 has a total capacity of 191.98 GiB', "
            "https://github.com/vllm-project/vllm/issues/7951"),
    ),
    GPU(
        key="b200", source_url="https://www.nvidia.com/en-us/data-center/dgx-b200/",
        name="NVIDIA B200 (HGX)",
        dense_flops={"bf16": 2250 * T, "fp16": 2250 * T, "fp8": 4500 * T, "fp32": 75 * T},
        memory_bandwidth=8.0e12, memory_bytes=180 * GiB, price_per_hour=6.00,
        listed_with_sparsity=4500 * T,
        source="NVIDIA DGX B200 specifications: 1,440 GB and 64 TB/s across 8 GPUs, so 180 GB and 8 TB/s "
               "each; 2,250 dense BF16 TFLOP/s per GPU, HGX B200 specifications", as_of="2025-03",
        cuda_reported_bytes=178.35 * GiB,
        cuda_reported_source=(
            "PyTorch's out-of-memory message on a B200: 'GPU 0 has a total capacity of 178.35 GiB', "
            "https://github.com/unslothai/unsloth/issues/3411; the same 178.35 from cudaGetDeviceProperties on a B200, "
            "2026-03: 'Total Global Memory: 178.35 GB', https://github.com/pytorch/ao/pull/4002"),
    ),
    GPU(
        key="t4", source_url="https://www.nvidia.com/en-us/data-center/tesla-t4/",
        name="NVIDIA T4",
        dense_flops={"fp16": 65 * T, "fp32": 8.1 * T},
        memory_bandwidth=320e9, memory_bytes=16 * GiB * ECC_LEFT, listed_memory_bytes=16 * GiB, price_per_hour=0.35,
        source="NVIDIA T4 Tensor Core GPU datasheet (the GPU of Colab's free tier): 16 GB of GDDR6, of which "
               "ECC, on in the clouds and Colab, keeps 6.25 % (CUDA C++ Best Practices Guide), leaving "
               "15,360 MiB, as nvidia-smi reports", as_of="2019-03",
        cuda_reported_bytes=14.75 * GiB,
        cuda_reported_source=(
            "PyTorch's out-of-memory message on Colab's T4, 2024-09: 'GPU 0 has a total capacity of 14.75 GiB', "
            "https://github.com/hpcaitech/Open-Sora/issues/697 (14.58 GiB on a server's T4 under another driver, "
            "https://github.com/datawhalechina/self-llm/issues/162)"),
    ),
    GPU(
        key="laptop", source_url="https://www.apple.com/newsroom/2022/06/apple-unveils-m2-with-breakthrough-performance-and-capabilities/",
        name="Laptop (Apple M2, 16 GB)",
        dense_flops={"fp16": 3.6 * T, "fp32": 3.6 * T},
        memory_bandwidth=100e9, memory_bytes=float(metal_working_set(16 * GiB)), listed_memory_bytes=16 * GiB,
        price_per_hour=None,
        source="Apple M2 announcement: 100 GB/s unified memory (Apple's round figure, kept for the lessons' "
               "illustrations; its LPDDR5-6400 on 128 bits gives 102.4, which a floor against a measurement "
               "would use), 3.6 TFLOP/s GPU; of its 16 GB the GPU may use "
               "what Metal's recommendedMaxWorkingSetSize allows, two thirds: 11.45 GB, which llama.cpp prints as "
               "11,453.25 MB (ggml/src/ggml-metal/ggml-metal-device.m, https://github.com/ggml-org/llama.cpp) and "
               "its 2023 builds printed in MiB, 10,922.67 (labelled 'MB' in "
               "https://github.com/abetlen/llama-cpp-python/issues/687)", as_of="2022-06",
        price_source="owned, not rented",
    ),
]

# --- Machines of published measurements (the chapter "Reality check") ----------------------
# Apple's GPUs: Apple publishes their memory bandwidth but no peak arithmetic rate, so the
# 16-bit slot holds a third party's FP32 estimate (Apple's GPUs run FP16 no faster than FP32).
# The chapter uses these machines only for decode steps of one user, which are memory-bound by
# a factor of five or more, so an error in the estimate cannot move their floor; a test checks it.
# The lessons' explorers offer them too, where a prefill is compute-bound and its time, its ridge
# and its share of the peak move with the estimate: the GPU menus of those that use the peak say so
# (``ESTIMATED_PEAKS``); those that show memory alone do not.
ESTIMATED_PEAKS = ("m1-max", "m1-ultra", "m2-ultra")
ESTIMATED_PEAK = "peak: a third party's FP32 estimate"
_ENTRIES += [
    GPU(
        key="m1-max", name="Apple M1 Max (32-core GPU)",
        source_url="https://www.apple.com/newsroom/2021/10/introducing-m1-pro-and-m1-max-the-most-powerful-chips-apple-has-ever-built/",
        dense_flops={"fp16": 10.4 * T, "fp32": 10.4 * T},
        memory_bandwidth=LPDDR5_6400_512_BIT, memory_bytes=float(metal_working_set(64 * GiB)), listed_memory_bytes=64 * GiB, price_per_hour=None,
        source="Apple Newsroom, 'Introducing M1 Pro and M1 Max', 18 Oct 2021: "
               "400 GB/s (exactly 409.6: LPDDR5-6400 on a 512-bit bus, AnandTech's M1 Max review), up to 64 GB; GPU rate: Notebookcheck's estimate, 10.4 TFLOP/s FP32, not Apple's",
        as_of="2021-10", price_source="owned, not rented",
    ),
    GPU(
        key="m1-ultra", name="Apple M1 Ultra (64-core GPU)",
        source_url="https://www.apple.com/newsroom/2022/03/apple-unveils-m1-ultra-the-worlds-most-powerful-chip-for-a-personal-computer/",
        dense_flops={"fp16": 21.2 * T, "fp32": 21.2 * T},
        memory_bandwidth=LPDDR5_6400_1024_BIT, memory_bytes=float(metal_working_set(128 * GiB)), listed_memory_bytes=128 * GiB, price_per_hour=None,
        source="Apple Newsroom, 'Apple unveils M1 Ultra', 8 Mar 2022: "
               "800 GB/s (exactly 819.2: two M1 Max's LPDDR5-6400, 1,024 bits), up to 128 GB; GPU rate: CPU-Monkey's estimate, 21.2 TFLOP/s FP32 "
               "(https://www.cpu-monkey.com/en/cpu-apple_m1_ultra_64_gpu), not Apple's",
        as_of="2022-03", price_source="owned, not rented",
    ),
    GPU(
        key="m2-ultra", name="Apple M2 Ultra (76-core GPU)",
        source_url="https://www.apple.com/newsroom/2023/06/apple-introduces-m2-ultra/",
        dense_flops={"fp16": 27.2 * T, "fp32": 27.2 * T},
        memory_bandwidth=LPDDR5_6400_1024_BIT, memory_bytes=float(metal_working_set(192 * GiB)), listed_memory_bytes=192 * GiB, price_per_hour=None,
        source="Apple Newsroom, 'Apple introduces M2 Ultra', 5 Jun 2023: 800 GB/s (exactly 819.2: LPDDR5-6400 on a 1,024-bit bus), up to 192 GB; "
               "GPU rate: the commonly reported estimate of about 27 TFLOP/s FP32, not Apple's",
        as_of="2023-06", price_source="owned, not rented",
    ),
]

CATALOG: Mapping[str, GPU] = MappingProxyType({gpu.key: gpu for gpu in _ENTRIES})
H100_SXM = CATALOG["h100-sxm"]


def gpu(key_or_name: str) -> GPU:
    """Look a GPU up by its catalog key (``"h100-sxm"``) or its full name."""
    if isinstance(key_or_name, GPU):
        return key_or_name
    if not isinstance(key_or_name, str):
        raise TypeError(f"gpu must be a GPU or one of {list(CATALOG)}, got {key_or_name!r}")
    for entry in _ENTRIES:
        if key_or_name in (entry.key, entry.name):
            return entry
    raise ValueError(f"gpu must be one of {list(CATALOG)}, got {key_or_name!r}")


def catalog_rows():
    """The catalog as rows of plain values, for a table (units as the prose shows them)."""
    from .roofline import ridge_point

    return [
        {
            "GPU": entry.name,
            "dense 16-bit TFLOP/s": entry.peak_flops / T,
            "bandwidth TB/s": entry.memory_bandwidth / 1e12,
            "memory GB": entry.memory_bytes / GiB,
            "ridge FLOP/byte": ridge_point(entry.peak_flops, entry.memory_bandwidth),
            "$ an hour": entry.price_per_hour,
            "source": f"{entry.source} ({entry.as_of}), {entry.source_url}",
        }
        for entry in _ENTRIES
    ]


def catalog_markdown(ridge=True) -> str:
    """The catalog as a Markdown table, figures rounded as the prose shows them, then each
    machine's sources as a numbered list (the table's last column points into it).

    ``ridge=False`` leaves out the ridge column, for a page that asks the reader to work it out."""
    from . import units

    if not isinstance(ridge, (bool, np.bool_)):
        raise TypeError(f"ridge must be True or False, got {ridge!r}")

    def cell(value, show):
        return "—" if value is None else show(value)

    lines = [
        "| GPU | dense 16-bit | bandwidth | memory |" + (" ridge (FLOP/byte) |" if ridge else "")
        + " rent an hour | source |",
        "|---|--:|--:|--:|" + ("--:|" if ridge else "") + "--:|--:|",
    ]
    sources = []
    for number, (row, entry) in enumerate(zip(catalog_rows(), _ENTRIES), start=1):
        lines.append(
            f"| {row['GPU']} | {units.tflops(entry.peak_flops, 1 if entry.peak_flops < 10e12 else 0)} | {units.tb_per_s(entry.memory_bandwidth)} "
            f"| {entry.listed_memory} |" + (f" {units.number(row['ridge FLOP/byte'])} |" if ridge else "")
            + f" {cell(entry.price_per_hour, units.dollars)} | {number} |")
        sources.append(f"{number}. {entry.name}: {entry.source} ({entry.as_of}), <{entry.source_url}>; "
                       f"price: {entry.price_source}.")
    ecc = [entry for entry in _ENTRIES if entry.listed_memory_bytes is not None
           and entry.memory_bytes == entry.listed_memory_bytes * ECC_LEFT]
    names = [entry.name.removeprefix("NVIDIA ") for entry in ecc]
    note = (f"Memory as the spec sheets list it, in gigabytes of 2^30 bytes: the H100's {H100_SXM.listed_memory} "
            f"hold {units.gb(H100_SXM.memory_bytes)} in the 10^9-byte gigabytes the course uses elsewhere. "
            f"On the {', '.join(names[:-1])} and {names[-1]}, error correction (on as the clouds run them) keeps a "
            f"sixteenth of it, and the course counts the rest.")
    return "\n".join(lines) + "\n\n" + note + "\n\nSources:\n\n" + "\n".join(sources)


# --- Interconnects: the links between GPUs (lesson 4, "More than one GPU") --------------------
# Convention: ``bandwidth`` is bytes a second ONE WAY, out of one GPU. NVIDIA's sheets list the
# sum of both directions (an H100 SXM's "900 GB/s" of NVLink is 450 GB/s each way; NCCL's
# maintainer: "900 GB/s is the sum of both directions, at the wire speed",
# https://github.com/NVIDIA/nccl/issues/1442). An all-reduce's ring sends and receives at once,
# each direction at the one-way rate, and NCCL's bus bandwidth ("busbw") is that one-way figure
# ("The measurement is of a unidirectional bandwidth", nccl-tests doc/PERFORMANCE.md), so the
# all-reduce formula, latency + 2(N-1)/N x bytes / bandwidth, takes the one-way rate. A floor
# uses the line rate: NCCL reaches about 370 of the H100's 450 GB/s ("With the protocol
# overhead (~20%) NCCL can get an effective NVLink bandwidth of 370GB/s",
# https://github.com/NVIDIA/nccl-tests/issues/212).
#
# ``latency`` is the time of an all-reduce too small for bandwidth to matter, as measured with
# nccl-tests, over 2 GPUs for a link within a server; it stands for every message's fixed cost on
# that link, and the course reuses it for 4 and 8 GPUs, though a ring's grows with them (NCCL's
# Ring on one channel of a DGX A100 took 10 us over 2 GPUs and 33.7 us over 8,
# https://github.com/NVIDIA/nccl-tests/issues/123; 8
# RTX 4090 on PCIe: 42.14 us for 8 bytes, https://github.com/NVIDIA/nccl/issues/1530). Each
# figure is one measurement, not a floor: it depends on the NCCL version, the algorithm and CUDA
# graphs, and an engine's own all-reduce can beat it (vLLM runs its custom all-reduce on NVLink
# and on two PCIe GPUs that reach each other's memory: "if self.world_size == 2 or
# self.fully_connected", vllm/distributed/device_communicators/custom_all_reduce.py).
NVLINK_LATENCY = 6e-6    # 2 H100 SXM, NCCL 2.20.5, NVLSTree, CUDA graphs, 128 B to 64 KiB: "approximately 6us"
NVLINK_LATENCY_SOURCE = ("nccl-tests all_reduce_perf on an HGX 8x H100, 2 GPUs, NCCL 2.20.5 with CUDA graphs, "
                         "NVLSTree: 'When I run with 2 GPUs the latency is approximately 6us', "
                         "https://github.com/NVIDIA/nccl/issues/1259")
PCIE_LATENCY = 20.36e-6  # 2 Tesla T4 on PCIe Gen3 (through the CPUs: SYS), an 8-byte all-reduce, no CUDA graphs
PCIE_LATENCY_SOURCE = ("nccl-tests all_reduce_perf -b 8 -e 128M -f 2 -g 2 on 2 Tesla T4 joined by PCIe only "
                       "(nvidia-smi topo: SYS), NCCL 2.8.3: '8 2 float sum 20.36' us (out of place), "
                       "https://github.com/NVIDIA/nccl/issues/428")
# A ring's fixed cost grows with the GPUs in it (nccl-tests issue 123); over PCIe it is measured at 8 GPUs too.
PCIE_LATENCY_8 = 43.47e-6  # 8 GeForce RTX 4090 on PCIe, an 8-byte all-reduce, 200 iterations
PCIE_LATENCY_8_SOURCE = ("nccl-tests all_reduce_perf -g 8 -b 8 -e 128M -f 2 -n 200 on 8 GeForce RTX 4090 joined by "
                         "PCIe, 2024-12-02: '8 2 float sum -1 43.47' us (out of place), "
                         "https://github.com/NVIDIA/nccl/issues/1530")
NETWORK_LATENCY = 47.54e-6  # 2 nodes, 16 H20, ConnectX-7 InfiniBand NDR, a 4-byte all-reduce
NETWORK_LATENCY_SOURCE = ("nccl-tests all_reduce_perf over 2 nodes of 8 H20 with 16 ConnectX-7 (InfiniBand NDR), "
                          "NCCL 2.21.5: 47.54 us for 4 bytes (out of place), https://github.com/NVIDIA/nccl/issues/1244")


@dataclass(frozen=True)
class Interconnect:
    """A link between GPUs as an all-reduce sees it.

    ``bandwidth``: bytes a second one way out of each GPU; ``listed``: the figure as the source
    prints it; ``max_gpus``: the most GPUs the link joins into one group (2 for a bridge, 8 for
    the NVSwitch of an HGX board), None where the link sets no such limit; ``scope``: ``"node"``
    (GPUs in one server) or ``"network"`` (servers joined by NICs, one NIC a GPU).
    """

    key: str
    name: str
    kind: str
    bandwidth: float
    listed: str
    latency: float
    latency_source: str
    source: str
    source_url: str
    max_gpus: int | None = None
    scope: str = "node"
    more_gpus_latency: tuple = ()

    KINDS = ("nvlink", "pcie", "network")

    def __post_init__(self):
        for name in ("key", "name", "kind", "listed", "latency_source", "source", "source_url", "scope"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a string, got {getattr(self, name)!r}")
        if self.kind not in self.KINDS:
            raise ValueError(f"kind must be one of {self.KINDS}, got {self.kind!r}")
        if self.scope not in ("node", "network"):
            raise ValueError(f"scope must be 'node' or 'network', got {self.scope!r}")
        for name in ("bandwidth", "latency"):
            _check.single(name, _check.positive(name, getattr(self, name)))
        if self.max_gpus is not None:
            _check.single("max_gpus", _check.count("max_gpus", self.max_gpus, minimum=2))
        counts = [gpus for gpus, _ in self.more_gpus_latency]
        if counts != sorted(set(counts)) or any(gpus <= 2 or seconds <= self.latency
                                                for gpus, seconds in self.more_gpus_latency):
            raise ValueError("more_gpus_latency must be (gpus, seconds) pairs above 2 GPUs, by growing count, each "
                             f"above the 2-GPU latency ({self.latency!r}), got {self.more_gpus_latency!r}")

    def latency_for(self, gpus):
        """The fixed cost of an all-reduce over ``gpus`` GPUs: ``latency`` (measured on 2), and where the
        link was also measured on more (``more_gpus_latency``), a straight line between the measured counts,
        held at the largest one's beyond it. Numbers or numpy arrays."""
        counts = [2] + [count for count, _ in self.more_gpus_latency]
        seconds = [self.latency] + [value for _, value in self.more_gpus_latency]
        return np.interp(gpus, counts, seconds)


# No bridged pair's figure is catalogued; the NVSwitch's is borrowed, though NVLSTree needs the switch.
_BRIDGE_LATENCY = ("no bridged pair's figure catalogued; the H100 SXM's NVLink all-reduce latency is taken, though "
                   "it was measured with NVLSTree, which needs an NVSwitch that a bridged pair lacks: "
                   + NVLINK_LATENCY_SOURCE)
_PCIE_SPEC = "PCI Express Base Specification: 16 GT/s a lane (Gen4), 32 GT/s (Gen5), 16 lanes"
_LINKS = [
    Interconnect(
        key="nvlink4", name="NVLink 4 (NVSwitch, HGX H100/H200 8-GPU)", kind="nvlink",
        bandwidth=450e9, listed="900 GB/s GPU-to-GPU, both directions together", max_gpus=8,
        latency=NVLINK_LATENCY, latency_source=NVLINK_LATENCY_SOURCE,
        source="NVIDIA H100 and H200 Tensor Core GPU datasheets, SXM columns: 'NVIDIA NVLink: 900GB/s'; "
               "NVLink and NVSwitch page: 18 links of fourth-generation NVLink a GPU; HGX boards join 8 GPUs "
               "through NVSwitch",
        source_url="https://www.nvidia.com/en-us/data-center/nvlink/"),
    Interconnect(
        key="nvlink3", name="NVLink 3 (NVSwitch, HGX A100 8-GPU)", kind="nvlink",
        bandwidth=300e9, listed="600 GB/s GPU-to-GPU, both directions together", max_gpus=8,
        latency=NVLINK_LATENCY,
        latency_source="no A100 figure catalogued; the H100's NVLink all-reduce latency is taken: " + NVLINK_LATENCY_SOURCE,
        source="NVIDIA A100 Tensor Core GPU datasheet, SXM columns: 'NVIDIA NVLink: 600GB/s' "
               "(12 third-generation links); HGX A100 joins 8 GPUs through NVSwitch",
        source_url="https://www.nvidia.com/en-us/data-center/a100/"),
    Interconnect(
        key="nvlink5", name="NVLink 5 (NVSwitch, HGX B200 8-GPU)", kind="nvlink",
        bandwidth=900e9, listed="1.8 TB/s GPU-to-GPU, both directions together", max_gpus=8,
        latency=NVLINK_LATENCY,
        latency_source="no B200 figure catalogued; the H100's NVLink all-reduce latency is taken: " + NVLINK_LATENCY_SOURCE,
        source="NVIDIA DGX B200 and HGX B200 specifications: fifth-generation NVLink, 1.8 TB/s a GPU "
               "(14.4 TB/s over 8 GPUs)",
        source_url="https://www.nvidia.com/en-us/data-center/hgx/"),
    Interconnect(
        key="nvlink-bridge-h100", name="NVLink bridge (two H100 PCIe)", kind="nvlink",
        bandwidth=300e9, listed="600 GB/s between the two cards, both directions together", max_gpus=2,
        latency=NVLINK_LATENCY, latency_source=_BRIDGE_LATENCY,
        source="NVIDIA H100 datasheet, PCIe column: 'NVLink: 600GB/s'; H100 PCIe product brief "
               "(PB-11133-001): an NVLink bridge joins two cards",
        source_url="https://www.nvidia.com/en-us/data-center/h100/"),
    Interconnect(
        key="nvlink-bridge-a100", name="NVLink bridge (two A100 PCIe)", kind="nvlink",
        bandwidth=300e9, listed="600 GB/s between the two cards, both directions together", max_gpus=2,
        latency=NVLINK_LATENCY, latency_source=_BRIDGE_LATENCY,
        source="NVIDIA A100 Tensor Core GPU datasheet, 80 GB PCIe column: 'NVIDIA NVLink Bridge for 2 GPUs: 600GB/s'",
        source_url="https://www.nvidia.com/en-us/data-center/a100/"),
    Interconnect(
        key="pcie3", name="PCIe Gen3 x16", kind="pcie",
        bandwidth=16e9, listed="32 GB/s, both directions together",
        latency=PCIE_LATENCY, latency_source=PCIE_LATENCY_SOURCE + '; at 8 GPUs, ' + PCIE_LATENCY_8_SOURCE,
        more_gpus_latency=((8, PCIE_LATENCY_8),),
        source=_PCIE_SPEC.replace("16 GT/s a lane (Gen4), 32 GT/s (Gen5)", "8 GT/s a lane (Gen3)")
        + ": 16 GB/s each way; NVIDIA T4 datasheet: 'PCIe Gen3 x16', 32 GB/s",
        source_url="https://www.nvidia.com/en-us/data-center/tesla-t4/"),
    Interconnect(
        key="pcie4", name="PCIe Gen4 x16", kind="pcie",
        bandwidth=32e9, listed="64 GB/s, both directions together",
        latency=PCIE_LATENCY, latency_source=PCIE_LATENCY_SOURCE + '; at 8 GPUs, ' + PCIE_LATENCY_8_SOURCE,
        more_gpus_latency=((8, PCIE_LATENCY_8),),
        source=_PCIE_SPEC + ": 32 GB/s each way at Gen4 before the 128b/130b encoding (31.5 after it); "
               "NVIDIA L4, L40S and A100 datasheets: 'PCIe Gen4 x16: 64GB/s'",
        source_url="https://www.nvidia.com/en-us/data-center/l40s/"),
    Interconnect(
        key="pcie5", name="PCIe Gen5 x16", kind="pcie",
        bandwidth=64e9, listed="128 GB/s, both directions together",
        latency=PCIE_LATENCY, latency_source=PCIE_LATENCY_SOURCE + '; at 8 GPUs, ' + PCIE_LATENCY_8_SOURCE,
        more_gpus_latency=((8, PCIE_LATENCY_8),),
        source=_PCIE_SPEC + ": 64 GB/s each way at Gen5 before the 128b/130b encoding; "
               "NVIDIA H100 and H200 datasheets: 'PCIe Gen5: 128GB/s'",
        source_url="https://www.nvidia.com/en-us/data-center/h100/"),
    Interconnect(
        key="infiniband-hdr", name="InfiniBand HDR, 200 Gb/s a GPU (ConnectX-6)", kind="network", scope="network",
        bandwidth=25e9, listed="200 Gb/s a port, each way",
        latency=NETWORK_LATENCY,
        latency_source="measured over NDR; the same fixed cost is taken for HDR: " + NETWORK_LATENCY_SOURCE,
        source="NVIDIA DGX A100 user guide: eight single-port ConnectX-6 VPI, 200 Gb/s HDR InfiniBand, one a GPU",
        source_url="https://docs.nvidia.com/dgx/dgxa100-user-guide/introduction-to-dgxa100.html"),
    Interconnect(
        key="infiniband-ndr", name="InfiniBand NDR, 400 Gb/s a GPU (ConnectX-7)", kind="network", scope="network",
        bandwidth=50e9, listed="400 Gb/s a port, each way",
        latency=NETWORK_LATENCY, latency_source=NETWORK_LATENCY_SOURCE,
        source="NVIDIA DGX H100/H200 user guide: eight single-port ConnectX-7 VPI, up to 400 Gb/s "
               "InfiniBand/Ethernet, one a GPU (DGX B200 the same)",
        source_url="https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html"),
    Interconnect(
        key="roce-400g", name="RoCE, 400 Gb/s Ethernet a GPU (ConnectX-7)", kind="network", scope="network",
        bandwidth=50e9, listed="400 Gb/s a port, each way",
        latency=NETWORK_LATENCY,
        latency_source="measured over InfiniBand NDR on the same ConnectX-7; taken for RoCE: " + NETWORK_LATENCY_SOURCE,
        source="NVIDIA ConnectX-7 (the DGX H100's NICs run InfiniBand or Ethernet): 400 Gb/s a port",
        source_url="https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html"),
]
INTERCONNECTS: Mapping[str, Interconnect] = MappingProxyType({entry.key: entry for entry in _LINKS})

# The links each GPU of the catalog can have, the fastest between GPUs of one server first (the
# one a group takes unless told). Absent: the T4's, L4's and L40S's NVLink (none; the L40S
# datasheet lists 'NVLink support: No'), every link of the Macs (one chip each), and every link
# of the MI300X: its eight GPUs form a full mesh of Infinity Fabric links, 128 GB/s both ways
# each (seven a GPU), so what a group of them can push depends on how many it holds, which one
# bandwidth figure cannot say; a group of MI300X is refused rather than timed over PCIe.
GPU_LINKS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "h100-sxm": ("nvlink4", "pcie5", "infiniband-ndr", "roce-400g"),
    "h200": ("nvlink4", "pcie5", "infiniband-ndr", "roce-400g"),
    "b200": ("nvlink5", "pcie5", "infiniband-ndr", "roce-400g"),
    "a100-80gb": ("nvlink3", "pcie4", "infiniband-hdr"),
    "h100-pcie": ("nvlink-bridge-h100", "pcie5", "infiniband-ndr", "roce-400g"),
    "a100-80gb-pcie": ("nvlink-bridge-a100", "pcie4", "infiniband-hdr"),
    "l40s": ("pcie4",),
    "l4": ("pcie4",),
    "t4": ("pcie3",),
})


_find_gpu = gpu


def links(gpu) -> tuple[Interconnect, ...]:
    """Every link ``gpu`` (a ``GPU``, catalog key or name) can have, fastest first; an empty tuple
    for a machine with none."""
    entry = _find_gpu(gpu)
    return tuple(INTERCONNECTS[key] for key in GPU_LINKS.get(entry.key, ()))


def link(gpu, key_or_name=None) -> Interconnect:
    """The link ``key_or_name`` (a key of ``INTERCONNECTS`` or a link's name) between GPUs of the
    kind ``gpu``; the fastest in a server if None. A link the GPU cannot have is refused, naming both."""
    entry = _find_gpu(gpu)
    available = links(entry)
    if not available:
        raise ValueError(f"{entry.name} has no link to other GPUs in the catalog, got gpu={entry.key!r}")
    if key_or_name is None:
        return available[0]
    if isinstance(key_or_name, Interconnect):
        key_or_name = key_or_name.key
    if not isinstance(key_or_name, str):
        raise TypeError(f"link must be one of {[l.key for l in available]} for {entry.name}, got {key_or_name!r}")
    for candidate in available:
        if key_or_name in (candidate.key, candidate.name):
            return candidate
    raise ValueError(f"link must be one of {[l.key for l in available]} for {entry.name}: "
                     f"{entry.name} cannot have {key_or_name!r}")
