"""Speed figures, measured and printed (not asserted): run with `make bench`.

- a 100,000-point sweep of pass time through the package (target under 20 ms);
- an hour of traffic through lesson 3's simulator on one GPU (target 2 s), and through lesson 4's
  cluster on 8 GPUs, as copies behind one queue and as prefill and decode apart (target a few seconds);
- each explorer: the readouts and the SVG figure recomputed in the kernel after a control
  moves; then, in JupyterLab in headless Chromium, the time from a control's move to the
  next frame with the new figure on screen, median and worst of 20 moves (target under
  50 ms; skipped where Chromium is missing), a setting computed before; for one
  computed the first time (which shows "computing…" over the last figure till drawn), the
  worst time to that notice and to the figure;
- the three charts the website moves without a kernel, built from scratch;
- a clean build of the whole book into a fresh folder, then the same build again after
  one page is touched (what an author waits for after saving a chapter). The book's
  configuration executes every page it reads (`execute_notebooks: force`); Sphinx reads
  only the touched page again, so only that page runs.
- the lab: a decode step's achieved bandwidth as a fraction of the measured bandwidth
  (target at least 0.5).
- each page's first visit (nothing cached) in headless Chromium: the bytes it loads, uncompressed, against
  the browser test's limits, 1.0 MB and 2.0 MB with maths (skipped where Chromium is missing);
- the words of prose a reader sees on each built page, counted by `../shared/tools/prose-words`,
  against the page's budget (skipped, and said so, where the tool is missing).
- each stage of the last `make test`: its wall-clock and processor seconds, the machine's
  load, and its result (``scripts/stages.py``, which times them; `make test` to refresh them).
"""
from __future__ import annotations

import fnmatch
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import servingmath as sm
from servingmath import _kept, charts, lab

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from check_site import toc_files  # noqa: E402
from nbgate import is_notebook  # noqa: E402
import stages  # noqa: E402


def median_seconds(action, repeats=15):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def sweep():
    """Pass time for prompts of 1 to 100,000 tokens: Llama 3.1 8B, whose window holds them all."""
    tokens = np.arange(1, 100_001)
    return sm.step(sm.MODELS["llama-3.1-8b"], sm.H100_SXM, tokens, assumptions=sm.PLATE).time


def site_charts():
    return [charts.find(name)()._repr_html_() for name in ("workshop", "request", "batching")]


def simulated_hour():
    """An hour of traffic at 10 requests a second (36,000 ShareGPT-like requests) through lesson 3's
    simulator: continuous batching, paged memory, Llama 3 8B on an H100 under the plate's assumptions.
    Returns the processor seconds the simulation took (the workload drawn beforehand: on a shared
    machine the wall clock counts other people's work too), the wall-clock seconds, and its steps."""
    from servingmath import simulator, workload
    server = simulator.Server(sm.LLAMA_3_8B, sm.H100_SXM)
    work = workload.poisson_workload(10, 36_000, seed=0, model=sm.LLAMA_3_8B)
    start, wall = time.process_time(), time.perf_counter()
    run = simulator.simulate(server, work)
    return time.process_time() - start, time.perf_counter() - wall, run.steps


def simulated_cluster_hour(disaggregated=False):
    """An hour of traffic at 16 requests a second (57,600 ShareGPT-like requests) on 8 H100s serving Llama 3
    70B in groups of two over NVLink: four copies behind one queue, or two prefill and two decode copies with
    each cache shipped between them. Returns the processor seconds (the workload drawn beforehand), the
    wall-clock seconds, and the steps of every copy together."""
    from servingmath import simulator, workload
    from servingmath.simulator import cluster
    model = sm.MODELS["llama-3-70b"]
    pair = simulator.Server(model, sm.H100_SXM, tensor_parallel=2, link="nvlink4")
    work = workload.poisson_workload(16, 57_600, seed=0, model=model)
    start, wall = time.process_time(), time.perf_counter()
    if disaggregated:
        run = cluster.simulate_disaggregated(pair, pair, work, 2, 2, link="nvlink4")
    else:
        run = cluster.simulate_cluster(pair, work, 4, "one-queue")
    return time.process_time() - start, time.perf_counter() - wall, run.steps


def build_seconds(out: str) -> float:
    start = time.perf_counter()
    subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT), "--path-output", out,
                    "-W", "-n", "--keep-going", "-q"], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def page_to_touch() -> Path:
    """The first chapter that runs code (the landing page when no chapter does)."""
    pages = [ROOT / f"{name}.md" for name in toc_files()]
    return next((page for page in pages[1:] if page.is_file() and is_notebook(page)), pages[0])


def decode_bandwidth_fraction(rounds=3, threads=1):
    """Bytes a lab decode step moves ÷ its time, over the bandwidth measured just before it (median of rounds).

    A model of about 250 MB, several times a processor's caches, on one thread as the lab's
    quick mode runs; measuring the two in turn, round after round, keeps a busy moment
    from falling on only one of them.
    """
    decoder = lab.Decoder.random(lab.lab_shape(260e6))
    cached = 128
    moved = sm.forward_pass(decoder.shape, 1, cached, weight_bits=32, kv_bits=32, attention="full").bytes
    fractions = []
    for _ in range(rounds):
        bandwidth = lab.measure_bandwidth(256e6, repeats=5, threads=threads).per_second
        decode = lab.time_decode(decoder, cached, steps=9, threads=threads)
        fractions.append(lab.bandwidth_fraction(moved, decode.seconds, bandwidth))
    return statistics.median(fractions)


PROSE_WORDS = ROOT.parent / "shared" / "tools" / "prose-words"
# Words of prose a reader sees, at most, on each kind of page (shell-style patterns over page names).
PROSE_BUDGETS = {"index": 600, "chapters/lesson-*/part-*": 1000, "chapters/lesson-*/wrap-up": 1800,
                 "chapters/plates/*": 1400, "chapters/lab/*": 1800, "chapters/reality-check": 1800,
                 "chapters/reality-check-engines": 1400, "chapters/reality-check-multi-gpu": 1600}


def prose_budget(page: str):
    """The budget of a page named as in `_toc.yml` (None for pages without one)."""
    return next((words for pattern, words in PROSE_BUDGETS.items() if fnmatch.fnmatchcase(page, pattern)), None)


def prose_word_counts(html_dir: Path):
    """(page, words, budget) for every page of the table of contents, from the built HTML."""
    pages = [(name, Path(html_dir) / f"{name}.html") for name in toc_files()]
    found = subprocess.run([sys.executable, str(PROSE_WORDS), *(str(path) for _, path in pages if path.is_file())],
                           check=True, capture_output=True, text=True).stdout.split("\n")
    words = {Path(path).resolve(): int(count) for count, path in (line.split(" ", 1) for line in found if line)}
    return [(name, words[path.resolve()], prose_budget(name)) for name, path in pages if path.resolve() in words]


def print_prose_words(html_dir: Path):
    if not PROSE_WORDS.is_file():
        print(f"words of prose: skipped, {PROSE_WORDS} not found")
        return
    for page, words, budget in prose_word_counts(html_dir):
        limit = "no budget" if budget is None else f"budget {budget:,}" + (" OVER" if words > budget else "")
        print(f"words of prose, {page}: {words:,} ({limit})")


def print_page_weights(html_dir: Path):
    """Each page's first visit in headless Chromium (nothing cached): the bytes it loads, uncompressed, against
    the browser test's limits (1.0 MB, 2.0 MB with maths); where there is no Chromium, says so."""
    sys.path.insert(0, str(ROOT / "tests" / "browser"))
    from browser import CHROMIUM, Chromium
    from site_checks import WEIGHT_LIMITS, first_visit, serve

    if not CHROMIUM.exists():
        print(f"page weights: skipped, {CHROMIUM} not found")
        return
    chromium = Chromium()
    try:
        with serve(html_dir) as origin:
            for page in toc_files():
                seen = first_visit(chromium, f"{origin}{page}.html")
                limit = WEIGHT_LIMITS[seen["maths"]]
                print(f"first visit, {page}: {seen['bytes'] / 1e6:.2f} MB in {seen['requests']} requests "
                      f"({'with' if seen['maths'] else 'no'} maths, limit {limit / 1e6:.1f} MB"
                      f"{', OVER' if seen['bytes'] > limit else ''})")
    finally:
        chromium.close()


def explorer_timings():
    """For each explorer: the readouts after a value change, and the figure redrawn after it."""
    sys.path.insert(0, str(ROOT / "tests" / "jupyterlab"))
    import labdriver

    for name in labdriver.EXPLORER_NAMES:
        made = charts.find(name)()
        setting = made.setting({})
        yield name, median_seconds(lambda: made.readouts_at(**setting), 9), median_seconds(lambda: made.svg_at(**setting), 9)


def redraws_in_jupyterlab(moves=20):
    """Each explorer in JupyterLab in Chromium: seconds from a move to its new figure on screen, ``moves`` moves."""
    sys.path.insert(0, str(ROOT / "tests" / "jupyterlab"))
    import labdriver

    if not labdriver.CHROMIUM.exists():
        print(f"redraws in JupyterLab: skipped, {labdriver.CHROMIUM} not found")
        return
    with labdriver.lab_browser() as lab:
        for name, moved in labdriver.redraw_times(lab, moves).items():
            # A setting computed before is a redraw; one computed the first time shows "computing…" first.
            times = [shown for shown, _, computed in moved if not computed]
            print(f"{name} in JupyterLab, move to new figure on screen: median "
                  f"{statistics.median(times) * 1e3:.0f} ms, worst {max(times) * 1e3:.0f} ms "
                  f"of {len(times)} moves (target < 50 ms; from the input on a control already focused)", end="")
            first = [(shown, noticed) for shown, noticed, computed in moved if computed]
            print(f"; {len(first)} settings computed the first time: 'computing…' on screen after at worst "
                  f"{max(n for _, n in first) * 1e3:.0f} ms, the figure after at worst "
                  f"{max(s for s, _ in first) * 1e3:.0f} ms" if first else "")
    # Browser, server and kernel each wait for a processor on a busy machine: the worst moves say how busy.
    print(f"  (load average over the last minute: {os.getloadavg()[0]:.1f} on {os.cpu_count()} processors)")


def main():
    # Every simulation computed here, in JupyterLab's kernels too: the figures time the work, not a read from disk.
    os.environ.pop(_kept.FOLDER_VARIABLE, None)
    stages.show()  # the last `make test`, stage by stage, first: it takes no time to print
    assert sweep().shape == (100_000,)
    print(f"sweep of pass time, 100,000 points: {median_seconds(sweep) * 1e3:.2f} ms (target < 20 ms)")
    seconds, wall, steps = simulated_hour()
    print(f"an hour at 10 requests/s (36,000 requests, {steps:,} steps) simulated: {seconds:.2f} s of one "
          f"processor, {wall:.2f} s on the clock (target <= 2 s)")
    for disaggregated, layout in ((False, "4 copies of 2 GPUs behind one queue"),
                                  (True, "2 prefill and 2 decode copies of 2 GPUs, caches over NVLink")):
        seconds, wall, steps = simulated_cluster_hour(disaggregated)
        print(f"an hour at 16 requests/s (57,600 requests) on 8 H100s, Llama 3 70B, {layout} ({steps:,} steps) "
              f"simulated: {seconds:.2f} s of one processor, {wall:.2f} s on the clock (target a few seconds)")
    for name, readouts, figure in explorer_timings():
        print(f"{name}: readouts {readouts * 1e3:.1f} ms after a change, SVG figure {figure * 1e3:.1f} ms (in the kernel)")
    redraws_in_jupyterlab()
    print(f"the three website charts: {median_seconds(site_charts, repeats=5) * 1e3:.0f} ms")
    with tempfile.TemporaryDirectory() as out:
        print(f"clean book build ({len(toc_files())} pages): {build_seconds(out):.1f} s")
        page = page_to_touch()
        os.utime(page)
        print(f"the book again after touching {page.relative_to(ROOT)}: {build_seconds(out):.1f} s")
        print_prose_words(Path(out) / "_build" / "html")
        print_page_weights(Path(out) / "_build" / "html")
    fraction = decode_bandwidth_fraction()
    print(f"lab decode step, achieved bandwidth / measured bandwidth: {fraction:.2f} (target at least 0.5)")


if __name__ == "__main__":
    main()
