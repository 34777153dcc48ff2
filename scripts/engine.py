"""llama.cpp on this machine: build it once, write the model, benchmark it, load-test its server.

    python scripts/engine.py build     # make engine: the three programs and the model file, cached
    python scripts/engine.py check     # make engine-check: build if missing, measure, compare, write JSON
    python scripts/engine.py check --record   # the same, and keep the run as the package's fixture

The source is PyPI's llama-cpp-python source distribution at the version and SHA-256 pinned in
servingmath.engine_lab (it carries llama.cpp under vendor/llama.cpp); it is fetched with pip,
checked, unpacked and built under $SERVINGMATH_ENGINE_CACHE (default ~/.cache/servingmath-engine),
outside the repository. Building needs cmake and a C++ compiler; the model file needs numpy and
the gguf-py package from the same source tree (nothing is installed).
"""
from __future__ import annotations

import argparse
import datetime
import fcntl
import hashlib
import http.client
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from servingmath import engine_lab as E  # noqa: E402
from servingmath import lab  # noqa: E402

CACHE = Path(os.environ.get("SERVINGMATH_ENGINE_CACHE", Path.home() / ".cache" / "servingmath-engine"))
SOURCE = CACHE / f"llama_cpp_python-{E.ENGINE_VERSION}" / "vendor" / "llama.cpp"
BUILD = CACHE / f"build-{E.ENGINE_VERSION}"
BIN = BUILD / "bin"
MODEL = CACHE / "engine-model-f16.gguf"
MODEL_F32 = CACHE / "engine-model-f32.gguf"
OUT = ROOT / "_build" / "engine"
# Threads for the engine and for the lab's measurement beside it: one, the case the lab's page explains.
# llama.cpp's threads meet at a barrier after every operation, so on a machine shared with other work
# (the course's own build machine has 2 cores and several other jobs) a step waits for whichever thread
# was descheduled last; one thread runs at the pace of one core, steadily.
THREADS = E.THREADS
# Token ids the replies may not use: <unk>, <s>, </s> and the byte pieces (a lone byte of a
# multi-byte character would make the server hold a streamed token back until the character ends).
BANNED = range(259)


def say(text):
    print(text, flush=True)


def binary(name):
    return BIN / name


def built():
    return all(binary(t).exists() for t in E.TARGETS)


def tools_missing():
    missing = []
    if not shutil.which("cmake"):
        missing.append("cmake (Debian/Ubuntu: apt-get install cmake; macOS: brew install cmake)")
    if not any(shutil.which(c) for c in (os.environ.get("CXX", "c++"), "g++", "clang++")):
        missing.append("a C++ compiler (Debian/Ubuntu: apt-get install g++; macOS: xcode-select --install)")
    return missing


def fetch_source():
    sdist = CACHE / "src" / E.ENGINE_SDIST
    if not sdist.exists():
        say(f"fetching {E.ENGINE_PACKAGE}=={E.ENGINE_VERSION}'s source from PyPI (about 77 MB) ...")
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                        f"{E.ENGINE_PACKAGE}=={E.ENGINE_VERSION}", "-d", str(sdist.parent)], check=True)
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != E.ENGINE_SHA256:
        sys.exit(f"engine: {sdist} has SHA-256 {digest}, not the pinned {E.ENGINE_SHA256}; delete it and retry")
    if not SOURCE.exists():
        with tarfile.open(sdist) as tar:
            tar.extractall(CACHE, filter="data")


def build():
    if built():
        say(f"engine: llama.cpp from {E.ENGINE_PACKAGE} {E.ENGINE_VERSION} already built in {BIN}")
        return
    missing = tools_missing()
    if missing:
        sys.exit("engine: building llama.cpp needs " + " and ".join(missing) + ".\n"
                 "Without them the lab's page shows the recorded run instead of a live one.")
    fetch_source()
    lock = open(CACHE / "build.lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        say("engine: another build is under way here; waiting for it to finish")
        fcntl.flock(lock, fcntl.LOCK_EX)
        if built():
            return
    jobs = os.environ.get("JOBS", str(THREADS))
    say(f"engine: building {', '.join(E.TARGETS)} from {E.ENGINE_PACKAGE} {E.ENGINE_VERSION} into {BUILD}\n"
        f"        once only: about 15 minutes of processor on a 2-core machine ({jobs} jobs, at low priority)")
    start = time.time()
    nice = ["nice", "-n", "19"] if shutil.which("nice") else []
    subprocess.run(nice + ["cmake", "-S", str(SOURCE), "-B", str(BUILD), *E.CMAKE_FLAGS], check=True)
    subprocess.run(nice + ["cmake", "--build", str(BUILD), "-j", jobs, "--target", *E.TARGETS], check=True)
    say(f"engine: built in {(time.time() - start) / 60:.1f} minutes")


def gguf_module():
    sys.path.insert(0, str(SOURCE / "gguf-py"))
    import gguf  # noqa: PLC0415
    return gguf


def write_model():
    if MODEL.exists():
        return
    fetch_source()
    say(f"engine: writing {MODEL.name}: {E.ENGINE_MODEL.name}, {E.ENGINE_MODEL.parameters:,} parameters in F16")
    E.write_gguf(MODEL.with_suffix(".tmp"), gguf=gguf_module())
    MODEL.with_suffix(".tmp").rename(MODEL)


def write_f32_model():
    if MODEL_F32.exists():
        return
    E.write_gguf(MODEL_F32.with_suffix(".tmp"), gguf=gguf_module(), f32=True)
    MODEL_F32.with_suffix(".tmp").rename(MODEL_F32)


def run(cmd, timeout):
    say("  $ " + " ".join(str(c) for c in cmd))
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    if done.returncode:
        sys.exit(f"engine: {cmd[0]} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return done.stdout


def bench():
    prompts = ",".join(str(p) for p in E.BENCH_PROMPTS)
    out = run([binary("llama-bench"), "-m", MODEL, "-p", prompts, "-n", "64", "-t", THREADS, "-r", "3",
               "-o", "jsonl"], 600)
    return out


def batched():
    batches = ",".join(str(b) for b in E.BATCHES)
    return "".join(run([binary("llama-batched-bench"), "-m", MODEL, "-c", "4096", "-b", "2048", "-ub", "512",
                "-npp", E.PROMPT_TOKENS, "-ntg", "32", "-npl", batches, "-t", THREADS,
                "--output-format", "jsonl"], 600) for _ in range(3))  # three times: the quickest of each is kept


def decode_probe():
    """Decode alone, in F16 on one thread and on two (or THREADS), and in F32 on one: what sets
    decode's share of the floor."""
    write_f32_model()
    probe = {}
    more = max(2, THREADS)
    for name, model, threads in (("f16", MODEL, 1), ("f16", MODEL, more), ("f32", MODEL_F32, 1)):
        out = run([binary("llama-bench"), "-m", model, "-p", "0", "-n", "64", "-t", threads, "-r", "3",
                   "-o", "jsonl"], 300)
        row = E.parse_bench(out)[0]
        probe[f"{name}, {threads} thread{'s' if threads > 1 else ''}"] = row["tokens_per_second"]
    return probe


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_request(port, prompt, start, out, index):
    body = json.dumps({"prompt": prompt, "n_predict": E.REPLY_TOKENS, "ignore_eos": True, "stream": True,
                       "cache_prompt": False, "return_tokens": True,
                       "logit_bias": [[t, False] for t in BANNED]})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    sent = time.perf_counter() - start
    conn.request("POST", "/completion", body, {"Content-Type": "application/json"})
    reply = conn.getresponse()
    times, timings = [], None
    for raw in reply:
        line = raw.decode().strip()
        if not line.startswith("data: "):
            continue
        now = time.perf_counter() - start
        chunk = json.loads(line[6:])
        times += [now] * len(chunk.get("tokens") or [])
        if chunk.get("stop"):
            timings = chunk.get("timings")
    conn.close()
    out[index] = {"sent": sent, "token_times": times, "timings": timings}


def load_test(slots, log):
    port = free_port()
    cmd = [binary("llama-server"), "-m", MODEL, "--host", "127.0.0.1", "--port", port, "-c", 4096,
           "--parallel", slots, "-t", THREADS, "-b", 2048, "-ub", 512, "--cache-ram", 0]
    say("  $ " + " ".join(str(c) for c in cmd))
    server = subprocess.Popen([str(c) for c in cmd], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/health")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                pass
            if time.time() > deadline or server.poll() is not None:
                sys.exit(f"engine: llama-server did not come up (see {log.name})")
            time.sleep(0.2)
        import numpy as np  # noqa: PLC0415
        rng = np.random.default_rng(slots)
        n = E.requests_for(slots)
        prompts = [rng.integers(259, E.ENGINE_MODEL.vocab, E.PROMPT_TOKENS).tolist() for _ in range(n)]
        out = [None] * n
        start = time.perf_counter()
        threads = [threading.Thread(target=one_request, args=(port, p, start, out, i)) for i, p in enumerate(prompts)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        if any(o is None or o["timings"] is None for o in out):
            sys.exit(f"engine: a request at concurrency {slots} got no complete reply (see {log.name})")
        return out
    finally:
        server.terminate()
        server.wait(timeout=30)


def slot_lines(path):
    keep = ("prompt eval time", "       eval time", "      total time")
    return [line.rstrip() for line in Path(path).read_text(errors="replace").splitlines()
            if any(k in line for k in keep)][:3]


def cpu_name():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def check(record):
    build()
    write_model()
    OUT.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()[0]
    say("engine: the lab's measurement of this machine (numpy float32: a read, a matrix product)")
    # The floor rests on the best run, as the lab's page takes it (Rate.best); the median is kept beside it.
    read, multiply = lab.measure_bandwidth(threads=THREADS), lab.measure_matmul_flops(threads=THREADS)
    say(f"  {read.best / 1e9:.1f} GB/s, {multiply.best / 1e9:.1f} GFLOP/s (best of {len(read.runs)} and "
        f"{len(multiply.runs)} runs; medians {read.per_second / 1e9:.1f} and {multiply.per_second / 1e9:.1f})")
    say("engine: llama-bench (prefill and decode, one stream)")
    bench_out = bench()
    say("engine: llama-batched-bench (decode steps at batch 1, 2, 4, 8)")
    batched_out = batched()
    say("engine: what sets decode's share of the floor (threads, F16 against F32)")
    probe = decode_probe()
    load, lines = {}, []
    for slots in E.CONCURRENCY:
        say(f"engine: load test, concurrency {slots}: {E.requests_for(slots)} requests of "
            f"{E.PROMPT_TOKENS} prompt tokens and {E.REPLY_TOKENS} reply tokens, all sent at once")
        with open(OUT / f"server-{slots}.log", "w") as log:
            load[str(slots)] = load_test(slots, log)
        if slots == 1:
            lines = slot_lines(OUT / "server-1.log")
    bench_rows = E.parse_bench(bench_out)
    the_run = {
        "recorded": {"machine": f"{cpu_name()}, {THREADS} thread{'s' if THREADS > 1 else ''} used, {platform.system()}",
                     "date": datetime.date.today().isoformat(),
                     "engine": f"llama.cpp from {E.ENGINE_PACKAGE} {E.ENGINE_VERSION} (sdist SHA-256 {E.ENGINE_SHA256[:12]}...)",
                     "build": bench_rows[0]["build"], "threads": THREADS,
                     "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
                     "cpus": os.cpu_count(), "arch": platform.machine()},
        "machine": {"bandwidth": read.best, "flops": multiply.best, "memory_bytes": lab.machine_memory(),
                    "name": f"{cpu_name()} (measured)", "runs": len(read.runs),
                    "bandwidth_median": read.per_second, "flops_median": multiply.per_second},
        "llama_bench": bench_out, "batched_bench": batched_out, "decode_probe": probe,
        "load": load, "server_log": lines,
    }
    (OUT / "run.json").write_text(json.dumps(the_run, indent=1))
    rows = E.compare(the_run)
    (OUT / "engine-check.json").write_text(json.dumps(rows, indent=1))
    print_table(rows)
    misses = E.check_targets(rows)
    say(f"engine: decode alone: {', '.join(f'{k} {v:.1f} tokens/s' for k, v in probe.items())}")
    if misses:
        say("engine: the profiled prediction misses its targets at: " +
            "; ".join(f"{s} {m} {e:+.0%}" for s, m, e in misses))
    else:
        say("engine: the profiled prediction is within its targets at concurrency 2, 4 and 8")
    if record:
        E.FIXTURE.write_text(json.dumps(the_run, indent=1) + "\n")
        say(f"engine: recorded as {E.FIXTURE.relative_to(ROOT)}")
    say(f"engine: wrote {OUT / 'engine-check.json'} and {OUT / 'run.json'}")
    if misses:
        sys.exit("engine: targets missed (on a machine busy with other work, run it again when it is idle)")


def print_table(rows):
    say(f"{'test':<13}{'setting':<16}{'metric':<19}{'measured':>10}  {'prediction':<14}{'simulated':>10}{'ratio':>7}")
    for r in rows:
        say(f"{r['test']:<13}{r['setting']:<16}{r['metric']:<19}{r['measured']:>10.4g}  {r['prediction']:<14}"
            f"{r['simulated']:>10.4g}{r['ratio']:>7.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("build", "check"))
    parser.add_argument("--record", action="store_true", help="keep the run as the package's fixture")
    args = parser.parse_args()
    if args.what == "build":
        build()
        write_model()
        say(f"engine: model at {MODEL}")
    else:
        check(args.record)


if __name__ == "__main__":
    main()
