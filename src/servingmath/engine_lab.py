"""A real serving engine on the reader's machine: llama.cpp's server, set beside the course's models.

llama.cpp (the engine Ollama started from) is built from the source PyPI's ``llama-cpp-python``
distribution carries (``scripts/engine.py`` builds it); this module holds what the course computes
around it:

- ``ENGINE_MODEL``: a Llama-shaped model small enough for a laptop's processor, and
  ``write_gguf``, which writes it with random F16 weights and a synthetic vocabulary (byte pieces and
  filler) as a GGUF file the engine loads. The engine runs the same kernels on random weights as on
  trained ones; only the text is noise, and timing does not read the text.
- readers of what the engine prints: ``llama-bench`` and ``llama-batched-bench`` (their JSON lines)
  and ``llama-server``'s ``/completion`` replies (its ``timings``);
- the three predictions set beside each measurement: the floor (lesson 3's simulator with the
  ideal engine on the lab's measured bandwidth and FLOP/s), the single-stream rates (the same
  simulator at the efficiencies ``llama-bench`` shows for one stream), and the profiled steps
  (the engine's own step times by batch size, ``StepTable``, timed by the simulator's scheduler).

Everything here reads recorded output, so the comparison runs on a machine with no compiler.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import _check
from .hardware import GPU
from .lab import this_machine
from .models import Model
from .passes import forward_pass
from .roofline import Assumptions, pass_time
from .simulator import Server, percentile, simulate
from .workload import workload

# The engine: llama.cpp as vendored in this release of llama-cpp-python's source distribution.
ENGINE_PACKAGE = "llama-cpp-python"
ENGINE_VERSION = "0.3.36"
ENGINE_SDIST = "llama_cpp_python-0.3.36.tar.gz"
ENGINE_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
# The upstream llama.cpp commit that release vendors (its changelog: "update llama.cpp to
# ggml-org/llama.cpp@0c1e57098"), and that commit's date. The build number llama.cpp's programs print
# from the source distribution (1) counts the commits of its shallow copy, not upstream's builds.
ENGINE_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
ENGINE_COMMIT_DATE = "2026-10-01"
TARGETS = ("llama-server", "llama-bench", "llama-batched-bench")
# The processor's own kernels on every system: on macOS Metal and Accelerate are on by default, and the
# engine would run on the GPU against the processor's floor.
CMAKE_FLAGS = ("-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF",
               "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_OPENSSL=OFF",
               "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DGGML_METAL=OFF", "-DGGML_BLAS=OFF",
               "-DGGML_ACCELERATE=OFF")

# The model: Llama's layout (grouped-query attention, gated feed-forward block, RMSNorm), 8 layers of
# width 1,024, its 8,192-token vocabulary shared by the input table and the output projection, so that
# every weight forward_pass counts is one a pass reads. The window is the GGUF's context length.
ENGINE_MODEL = Model("engine model (random weights)", layers=8, hidden=1024, heads=16, kv_heads=4,
                     head_dim=64, ffn=2816, vocab=8192, tied_embeddings=True, context_window=4096)
ROPE_BASE = 10_000.0
NORM_EPS = 1e-5
# The load test's requests: prompts of random token ids, a fixed reply length (the end-of-text token
# ignored), all sent at once; the server runs `slots` of them at a time, so a request waits for a slot.
PROMPT_TOKENS = 128
REPLY_TOKENS = 64
CONCURRENCY = (1, 2, 4, 8)
REQUESTS_PER_SLOT = 3
# Threads the engine runs on (and jobs its build runs, unless JOBS says more): llama.cpp's threads meet after
# every operation, so on a machine shared with other work one thread runs steadiest, and the lab's page
# explains the one-thread case.
THREADS = 1
BENCH_PROMPTS = (64, 128, 512)
BATCHES = (1, 2, 4, 8)
FIXTURE = Path(__file__).parent / "data" / "engine_run.json"
COLUMNS = ("test", "setting", "metric", "measured", "prediction", "simulated", "ratio")
PREDICTIONS = ("floor", "single-stream", "profiled")
# The profiled prediction's targets at 2, 4 and 8 users: time between tokens and output rate within
# TBT_TARGET of the measured, time to first token within TTFT_TARGET (``check_targets``).
TBT_TARGET = 0.25
TTFT_TARGET = 0.35
# The floor: the ideal engine, every FLOP at the measured rate and every byte at the measured bandwidth,
# with attention among tokens and the cache's reads and writes counted, and nothing else.
FLOOR = Assumptions(attention="causal", kv_cache=True, label="ideal engine: 100 % of the lab's rates, no overhead")


def requests_for(slots) -> int:
    """Requests the load test sends at concurrency ``slots``: a few waves of them."""
    return int(_check.count("slots", slots, minimum=1)) * REQUESTS_PER_SLOT


# ---------------------------------------------------------------------------------------------
# The model file
# ---------------------------------------------------------------------------------------------

def vocabulary(size):
    """A synthetic SentencePiece-style vocabulary: <unk>, <s>, </s>, the 256 byte pieces, then filler.

    Returns (pieces, scores, kinds) with GGUF's token kinds (1 normal, 2 unknown, 3 control, 6 byte).
    """
    size = int(_check.count("size", size, minimum=259 + 1))
    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    kinds = [2, 3, 3] + [6] * 256
    filler = size - len(pieces)
    pieces += [f"\u2581w{i}" for i in range(filler)]
    kinds += [1] * filler
    scores = [0.0] * 259 + [-float(i) for i in range(filler)]
    return pieces, scores, kinds


def gguf_tensors(model: Model = ENGINE_MODEL, seed=0, dtype=np.float16):
    """(name, array) for each of the model's tensors, as llama.cpp names them: weights in ``dtype``
    (F16 unless told; numpy's shape is (out, in)), float32 norm vectors. Random normal, scale 0.02."""
    _check.instance("model", model, Model)
    if model.mixture_of_experts or not model.tied_embeddings:
        raise ValueError(f"model must be a dense model with a tied output table, got {model.name!r}")
    rng = np.random.default_rng(seed)
    d, kv = model.hidden, model.kv_heads * model.head_dim
    q = model.heads * model.head_dim

    def weight(rows, cols):
        return (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(dtype)

    def norm():
        return np.ones(d, dtype=np.float32)

    yield "token_embd.weight", weight(model.vocab, d)
    for i in range(model.layers):
        yield f"blk.{i}.attn_norm.weight", norm()
        yield f"blk.{i}.attn_q.weight", weight(q, d)
        yield f"blk.{i}.attn_k.weight", weight(kv, d)
        yield f"blk.{i}.attn_v.weight", weight(kv, d)
        yield f"blk.{i}.attn_output.weight", weight(d, q)
        yield f"blk.{i}.ffn_norm.weight", norm()
        yield f"blk.{i}.ffn_gate.weight", weight(model.ffn, d)
        yield f"blk.{i}.ffn_up.weight", weight(model.ffn, d)
        yield f"blk.{i}.ffn_down.weight", weight(d, model.ffn)
    yield "output_norm.weight", norm()


def write_gguf(path, model: Model = ENGINE_MODEL, seed=0, gguf=None, f32=False):
    """Write ``model`` with random weights as a GGUF file at ``path``, in F16 (F32 if ``f32``); needs
    the ``gguf`` package, passed as ``gguf`` or imported. Returns the number of parameters written."""
    if gguf is None:
        import gguf  # noqa: PLC0415  (llama.cpp's own gguf-py, from the pinned source)
    path = Path(path)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(model.name)
    writer.add_context_length(model.context_window)
    writer.add_embedding_length(model.hidden)
    writer.add_block_count(model.layers)
    writer.add_feed_forward_length(model.ffn)
    writer.add_head_count(model.heads)
    writer.add_head_count_kv(model.kv_heads)
    writer.add_rope_dimension_count(model.head_dim)
    writer.add_rope_freq_base(ROPE_BASE)
    writer.add_layer_norm_rms_eps(NORM_EPS)
    writer.add_vocab_size(model.vocab)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32 if f32 else gguf.LlamaFileType.MOSTLY_F16)
    pieces, scores, kinds = vocabulary(model.vocab)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(pieces)
    writer.add_token_scores(scores)
    writer.add_token_types(kinds)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(False)
    count = 0
    for name, array in gguf_tensors(model, seed, np.float32 if f32 else np.float16):
        writer.add_tensor(name, array)
        count += array.size
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return count


# ---------------------------------------------------------------------------------------------
# Reading the engine's output
# ---------------------------------------------------------------------------------------------

def json_lines(text, what):
    """The JSON objects of a tool's JSON-lines output (other lines skipped); none found is an error."""
    if not isinstance(text, str):
        raise TypeError(f"{what} output must be text, got {type(text).__name__}")
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            rows.append(json.loads(line))
    if not rows:
        raise ValueError(f"{what} output holds no JSON lines (run it with its JSON-lines output on), "
                         f"got {text[:80]!r}")
    return rows


def parse_bench(text):
    """``llama-bench -o jsonl``: one row a test, {prompt, generated, tokens_per_second (the best of its
    repeats), mean, spread, threads, build}."""
    rows = []
    for row in json_lines(text, "llama-bench"):
        # The best of the repeats: on a machine shared with other work, the run least disturbed.
        best = max(row.get("samples_ts") or [row["avg_ts"]])
        rows.append({"prompt": int(row["n_prompt"]), "generated": int(row["n_gen"]),
                     "tokens_per_second": float(best), "mean": float(row["avg_ts"]), "spread": float(row["stddev_ts"]),
                     "threads": int(row["n_threads"]), "build": f"{row.get('build_number')} ({row.get('build_commit')})",
                     "type": row.get("model_type", "")})
    return rows


def parse_batched(text):
    """``llama-batched-bench --output-format jsonl``: one row a batch size, with its prompt phase
    (``pp`` tokens for each of ``batch`` sequences, ``t_pp`` seconds) and its decode phase (``tg``
    steps, each a next token for every sequence, ``t_tg`` seconds); a setting run more than once keeps
    its quickest phases."""
    best = {}
    for row in json_lines(text, "llama-batched-bench"):
        key = (int(row["pp"]), int(row["tg"]), int(row["pl"]))
        seen = best.setdefault(key, {"prompt": key[0], "generated": key[1], "batch": key[2],
                                     "prompt_seconds": math.inf, "decode_seconds": math.inf,
                                     "threads": int(row["n_threads"])})
        # A setting run more than once keeps its quickest phases: the runs least disturbed.
        seen["prompt_seconds"] = min(seen["prompt_seconds"], float(row["t_pp"]))
        seen["decode_seconds"] = min(seen["decode_seconds"], float(row["t_tg"]))
    return list(best.values())


@dataclass(frozen=True)
class RequestTiming:
    """One request as the client saw it (seconds from the load test's start) and as the server timed it."""

    sent: float
    token_times: tuple           # arrival of each streamed token at the client
    prompt_ms: float             # the server's timings: prompt_ms, predicted_ms, predicted_per_token_ms
    predicted_ms: float
    predicted_per_token_ms: float
    predicted_n: int

    @property
    def ttft(self):
        return self.token_times[0] - self.sent

    @property
    def gaps(self):
        return np.diff(self.token_times)


def request_from(record) -> RequestTiming:
    timings = record["timings"]
    return RequestTiming(float(record["sent"]), tuple(float(t) for t in record["token_times"]),
                         float(timings["prompt_ms"]), float(timings["predicted_ms"]),
                         float(timings["predicted_per_token_ms"]), int(timings["predicted_n"]))


def load_summary(records):
    """A load test's figures from its requests: TTFT and time between tokens (p50, p99; the longest gap as
    ``tbt_max``), output tokens a second."""
    requests = [r if isinstance(r, RequestTiming) else request_from(r) for r in records]
    if not requests:
        raise ValueError("records must hold at least one request, got none")
    ttft = [r.ttft for r in requests]
    gaps = np.concatenate([r.gaps for r in requests])
    tokens = sum(len(r.token_times) for r in requests)
    span = max(r.token_times[-1] for r in requests) - min(r.sent for r in requests)
    return {"ttft_p50": percentile(ttft, 50), "ttft_p99": percentile(ttft, 99),
            "tbt_p50": percentile(gaps, 50), "tbt_p99": percentile(gaps, 99), "tbt_max": float(gaps.max()),
            "tokens_per_second": tokens / span,
            "server_prompt_ms": float(np.median([r.prompt_ms for r in requests])),
            "server_per_token_ms": float(np.median([r.predicted_per_token_ms for r in requests]))}


# ---------------------------------------------------------------------------------------------
# The predictions
# ---------------------------------------------------------------------------------------------

def machine(run) -> GPU:
    """The lab's entry for the machine the run was recorded on: its measured bandwidth and FLOP/s (the best
    of the lab's runs, ``lab.Rate.best``, taken by ``make engine-check`` with the engine's threads)."""
    lab = run["machine"]
    return this_machine(lab["bandwidth"], lab["flops"], memory_bytes=lab["memory_bytes"], name=lab["name"])


def floor_rates(run, model: Model = ENGINE_MODEL):
    """The floor's prefill and decode rates for each ``llama-bench`` row: the ideal engine (the
    roofline at 100 %, no overhead) on the lab's measured bandwidth and FLOP/s. A prompt is charged
    as llama.cpp computes it: only its last token's logits are asked for (``forward_pass``'s ``outputs``)."""
    gpu = machine(run)
    out = []
    for row in parse_bench(run["llama_bench"]):
        if row["generated"] == 0:
            cost = forward_pass(model, row["prompt"], 0, outputs=1)
            seconds = float(pass_time(cost.flops, cost.bytes, gpu.peak_flops, gpu.memory_bandwidth, FLOOR).time)
            out.append(("prefill", row["prompt"], row["tokens_per_second"], row["prompt"] / seconds))
        else:
            # llama-bench's decode test starts from an empty cache and makes n_gen tokens.
            out.append(("decode", row["generated"], row["tokens_per_second"],
                        decode_floor_rate(run, row["generated"], model=model)))
    return out


def decode_floor_rate(run, made, cached=0, weight_bits=16, model: Model = ENGINE_MODEL):
    """The floor's tokens a second for one stream making ``made`` tokens one at a time after ``cached``
    ones, its weights stored in ``weight_bits``."""
    gpu = machine(run)
    seconds = sum(float(pass_time(c.flops, c.bytes, gpu.peak_flops, gpu.memory_bandwidth, FLOOR).time)
                  for c in (forward_pass(model, 1, cached + k, weight_bits=weight_bits) for k in range(made)))
    return made / seconds


def decode_runs(run):
    """The runs of one stream's decode on one thread, each beside its floor: (run, tokens a second, the
    floor's). ``llama-bench``'s decode row and the probe's F16 row are the same test (64 tokens from an
    empty cache), run twice; ``llama-batched-bench`` at batch 1 makes its tokens after its prompt."""
    bench = next(r for r in parse_bench(run["llama_bench"]) if r["generated"] > 0)
    one = min(parse_batched(run["batched_bench"]), key=lambda r: r["batch"])
    if one["batch"] != 1:
        raise ValueError(f"batched_bench must hold a run at batch 1, got batches from {one['batch']}")
    floor = decode_floor_rate(run, bench["generated"])
    return [("llama-bench", bench["tokens_per_second"], floor),
            ("llama-bench again", float(run["decode_probe"]["f16, 1 thread"]), floor),
            ("llama-batched-bench, batch 1", one["generated"] / one["decode_seconds"],
             decode_floor_rate(run, one["generated"], one["prompt"]))]


def decode_share(run):
    """Decode's rate at one stream as a share of the floor's: the median of ``decode_runs``' shares."""
    return float(np.median([rate / floor for _, rate, floor in decode_runs(run)]))


def single_stream_assumptions(run) -> Assumptions:
    """The efficiencies one stream reaches: the longest prompt's prefill rate as a share of the
    floor's (compute), decode's share of the floor (``decode_share``, bandwidth)."""
    rates = floor_rates(run)
    prefill = max((r for r in rates if r[0] == "prefill"), key=lambda r: r[1])
    return Assumptions(compute_efficiency=min(1.0, prefill[2] / prefill[3]),
                       bandwidth_efficiency=min(1.0, decode_share(run)), overhead=0.0,
                       attention="causal", kv_cache=True, label="llama-bench, one stream")


@dataclass(frozen=True)
class StepTable:
    """Measured step times, for ``simulator.Server(step_time=...)``.

    ``batches`` and ``decode`` give a decode step's seconds with that many next tokens
    (``llama-batched-bench``'s decode phase, per step), interpolated between them and carried on in
    a straight line past the last; ``prefill_per_token`` is a prompt token's seconds in a step that
    reads prompts, every token of such a step costing it (llama.cpp puts prompts and next tokens in
    one batch); ``per_token`` is the server's own cost for each token it sends (sampling, the reply's
    chunk), ``per_request`` its cost to start a request; both measured at concurrency 1.
    """

    batches: tuple
    decode: tuple
    prefill_per_token: float
    per_token: float = 0.0
    per_request: float = 0.0

    def decode_step(self, decodes):
        b, t = np.asarray(self.batches, float), np.asarray(self.decode, float)
        if decodes <= b[-1]:
            return float(np.interp(decodes, b, t))
        slope = (t[-1] - t[-2]) / (b[-1] - b[-2])
        return float(t[-1] + slope * (decodes - b[-1]))

    def __call__(self, decodes, tokens, prompts):
        if tokens > decodes:
            engine = tokens * self.prefill_per_token
        else:
            engine = self.decode_step(decodes)
        return engine + self.per_token * decodes + self.per_request * prompts


def step_table(run, per_token=0.0, per_request=0.0) -> StepTable:
    """The engine's step times from ``llama-batched-bench`` (batch 1, 2, 4, 8)."""
    rows = sorted(parse_batched(run["batched_bench"]), key=lambda r: r["batch"])
    one = rows[0]
    return StepTable(tuple(r["batch"] for r in rows), tuple(r["decode_seconds"] / r["generated"] for r in rows),
                     one["prompt_seconds"] / one["prompt"], per_token, per_request)


def load_workload(slots, sent=None, prompt=PROMPT_TOKENS, reply=REPLY_TOKENS):
    """The load test's requests: ``requests_for(slots)`` of them, sent at once. ``sent`` gives each
    one's measured send time (seconds from the test's start): the client's threads send them a
    few milliseconds apart, so the server admits the first alone; None sends all at 0."""
    n = requests_for(slots)
    arrivals = np.zeros(n) if sent is None else np.sort(np.asarray(sent, float)) - min(sent)
    if len(arrivals) != n:
        raise ValueError(f"sent must hold {n} send times for concurrency {slots}, got {len(arrivals)}")
    return workload(arrivals, np.full(n, prompt), np.full(n, reply), label=f"{n} requests at once")


def server_for(run, slots, assumptions=FLOOR, step_time=None) -> Server:
    """Lesson 3's server as llama-server runs: ``slots`` users at a time (its --parallel), each
    prompt read whole in the step that admits it beside everyone's next token, only its last token's
    logits computed."""
    return Server(ENGINE_MODEL, machine(run), policy="continuous", max_running=int(slots),
                  assumptions=assumptions, step_time=step_time, logits="last of each prompt")


def simulated(server, slots, sent=None):
    s = simulate(server, load_workload(slots, sent)).summary()
    return {k: s[k] for k in ("ttft_p50", "ttft_p99", "tbt_p50", "tbt_p99", "tokens_per_second")}


def server_cost_parts(run):
    """What ``server_costs`` is made of, before a request's cost is held at 0: (a token's cost beyond its
    decode step, at least 0; the median time from a free slot to the first token, ``times_from_free_slot``;
    that time less the prompt's step and a token's cost, which may fall below 0)."""
    measured = load_summary(run["load"]["1"])
    table = step_table(run)
    per_token = max(0.0, measured["tbt_p50"] - table.decode_step(1))
    started = float(np.median(times_from_free_slot(run["load"]["1"])))
    return per_token, started, started - (PROMPT_TOKENS * table.prefill_per_token + per_token)


def server_costs(run):
    """The server's own costs, from the load test at concurrency 1 set against the benches: a token's
    cost beyond its decode step (the median time between tokens), and a request's beyond its prompt's
    step and a token's cost (the median over the requests of ``times_from_free_slot``); each at least 0."""
    per_token, _, per_request = server_cost_parts(run)
    return per_token, max(0.0, per_request)


def times_from_free_slot(records):
    """Each request of a one-slot load test timed from when it found the slot free (its send, or the last
    token of the reply served before it) to its first token, in the order served."""
    served = sorted((request_from(r) for r in records), key=lambda r: r.token_times[0])
    free = [-math.inf] + [r.token_times[-1] for r in served[:-1]]
    return [r.token_times[0] - max(r.sent, f) for r, f in zip(served, free)]


def compare(run):
    """Every measured figure beside the three predictions: a list of rows with ``COLUMNS``."""
    rows = []
    single = single_stream_assumptions(run)
    for phase, length, measured, floor in floor_rates(run):
        metric = "prefill tokens/s" if phase == "prefill" else "decode tokens/s"
        setting = f"{length} tokens" if phase == "prefill" else f"{length} tokens made"
        rows.append(_row("llama-bench", setting, metric, measured, "floor", floor))
    table = step_table(run, *server_costs(run))
    for slots in CONCURRENCY:
        records = run["load"][str(slots)]
        measured = load_summary(records)
        sent = [r["sent"] for r in records]  # the same arrivals as the test's
        sims = {"floor": simulated(server_for(run, slots), slots, sent),
                "single-stream": simulated(server_for(run, slots, single), slots, sent),
                "profiled": simulated(server_for(run, slots, step_time=table), slots, sent)}
        for metric in ("ttft_p50", "ttft_p99", "tbt_p50", "tbt_p99", "tokens_per_second"):
            for name in PREDICTIONS:
                rows.append(_row("llama-server", f"concurrency {slots}", metric, measured[metric], name,
                                 sims[name][metric]))
    return rows


def _row(test, setting, metric, measured, prediction, value):
    return dict(zip(COLUMNS, (test, setting, metric, float(measured), prediction, float(value),
                              float(measured) / float(value) if value else math.nan)))


def check_targets(rows, tbt=TBT_TARGET, ttft=TTFT_TARGET, slots=(2, 4, 8)):
    """The profiled prediction's misses past the targets: time between tokens and output tokens a
    second within ``tbt`` and time to first token within ``ttft`` of the measured, at ``slots``."""
    misses = []
    for r in rows:
        if r["prediction"] != "profiled" or r["setting"] not in {f"concurrency {s}" for s in slots}:
            continue
        if r["metric"].endswith("_p99"):
            continue
        allowed = ttft if r["metric"].startswith("ttft") else tbt
        error = r["simulated"] / r["measured"] - 1
        if abs(error) > allowed:
            misses.append((r["setting"], r["metric"], error))
    return misses


def load_run(path=None):
    """A recorded run (the committed fixture unless ``path`` is given)."""
    return json.loads(Path(path or FIXTURE).read_text())


def live_or_recorded(live_path=None):
    """The run a page shows: the live one ``make engine-check`` wrote at ``live_path`` where there is
    one, else the recorded fixture. Returns (run, live)."""
    if live_path is not None and Path(live_path).exists():
        return load_run(live_path), True
    return load_run(), False


def batched_steps(run):
    """(batch, seconds a decode step, next tokens a second, FLOP/s the step's weights do) for each
    ``llama-batched-bench`` row: the engine's own decode steps."""
    flops_per_token = 2 * ENGINE_MODEL.parameters
    out = []
    for r in sorted(parse_batched(run["batched_bench"]), key=lambda r: r["batch"]):
        step = r["decode_seconds"] / r["generated"]
        out.append((r["batch"], step, r["batch"] / step, flops_per_token * r["batch"] / step))
    return out


def batched_runs(run, batch):
    """Next tokens a second at ``batch`` sequences in each run of ``llama-batched-bench``, in order."""
    batch = int(_check.count("batch", batch, minimum=1))
    rates = [int(r["pl"]) * int(r["tg"]) / float(r["t_tg"]) for r in json_lines(run["batched_bench"], "llama-batched-bench")
             if int(r["pl"]) == batch]
    if not rates:
        raise ValueError(f"batch must be one of the batches llama-batched-bench ran, got {batch}")
    return rates


def first_served(records):
    """The request a load test served first: the one whose first token came first (the server's log
    prints its timings first)."""
    return min(records, key=lambda r: r["token_times"][0])


def ollama_lines(timings):
    """One reply's server timings in the layout ``ollama run --verbose`` prints: prompt eval (the
    prefill: ``prompt_n`` tokens in ``prompt_ms``) and eval (the decode: ``predicted_n`` tokens in
    ``predicted_ms``), each rate its count over its duration, as Ollama computes them (the server's own
    ``predicted_per_second`` counts only the tokens after the first). ``servingmath.ollama.parse_verbose``
    reads them back."""
    def duration(ms):  # as Go prints a duration: 230.5ms, 1.1002s
        value, unit = (ms / 1e3, "s") if ms >= 1e3 else (ms, "ms")
        return f"{value:.6f}".rstrip("0").rstrip(".") + unit
    return "\n".join([
        f"prompt eval count:    {int(timings['prompt_n'])} token(s)",
        f"prompt eval duration: {duration(float(timings['prompt_ms']))}",
        f"prompt eval rate:     {int(timings['prompt_n']) / float(timings['prompt_ms']) * 1e3:.2f} tokens/s",
        f"eval count:           {int(timings['predicted_n'])} token(s)",
        f"eval duration:        {duration(float(timings['predicted_ms']))}",
        f"eval rate:            {int(timings['predicted_n']) / float(timings['predicted_ms']) * 1e3:.2f} tokens/s"])
