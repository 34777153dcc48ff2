"""Speed targets, measured and printed (not asserted): run with `make bench`.

- a 100,000-point sweep of pass time through the package (target under 20 ms);
- a clean build of the whole book (`jupyter-book build` into a fresh folder).
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import servingmath as sm

ROOT = Path(__file__).resolve().parent.parent


def median_seconds(action, repeats=15):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def sweep():
    tokens = np.arange(1, 100_001)
    return sm.step(sm.LLAMA_3_8B, sm.H100_SXM, tokens, assumptions=sm.PLATE).time


def clean_book_build():
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT), "--path-output", out,
                        "-W", "-n", "--keep-going", "-q"], check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start


def main():
    assert sweep().shape == (100_000,)
    print(f"sweep of pass time, 100,000 points: {median_seconds(sweep) * 1e3:.2f} ms (target < 20 ms)")
    print(f"clean book build: {clean_book_build():.1f} s")


if __name__ == "__main__":
    main()
