"""Lesson 3's server: many users sharing one GPU, step by step.

A ``Server`` is a model on a GPU with an engine's rules: how it holds each user's cache
(``memory``: ``"paged"``, blocks of ``block_tokens`` handed out as the cache grows, or
``"reserved"``, each user's prompt plus the longest reply it may write, ``max_reply_tokens``,
set aside on arrival and never more than the model's window), how it forms each step's batch
(``policy``), and what it does when memory runs out (``preemption``):

- ``"static"`` (request-level scheduling, as Orca's section 2.2 describes the systems before it):
  a batch is formed only when the GPU is idle, from the requests waiting, and runs until every
  request in it is done. A user whose reply ends early keeps its place and its memory until the
  batch ends; no one joins and no one is preempted mid-batch. So that no one need be, a batch takes
  in only the requests whose conversations, at their full length, fit the free memory (each
  reply's length known in advance, as the vLLM paper's Orca (Oracle) knows it; under reserved
  memory, their reservations). Its empty places cost no arithmetic here, and each token is timed
  as it is made, as if streamed (Orca's systems returned a request only when its batch ended);
- ``"continuous"`` (iteration-level scheduling with selective batching, Orca's design): at every
  step, waiting requests join as memory allows, and a joining prompt is prefilled whole in the same
  step as everyone else's next token. ``step_tokens`` caps the prompt tokens a step takes in; it
  may not be less than the model's window, since an unsplit prompt must fit one step (vLLM's V0
  engine refuses such a budget too). Not every engine mixes the two: vLLM's V0 engine ran a step of
  prompts alone, and SGLang does unless started with ``--enable-mixed-chunk``;
- ``"chunked"`` (Sarathi-Serve; vLLM's V1 engine): every step carries at most ``step_tokens``
  tokens, each running user's next token first, then pieces of the waiting prompts in the room left.

When a growing cache finds no free block, the latest user admitted is preempted: its
cache is dropped and later rebuilt by a prefill of everything it has so far
(``"recompute"``), or copied to the host's memory and back (``"swap"``, at
``swap_bandwidth`` bytes a second each way; the host's memory is taken as unlimited).

The defaults are vLLM V0's caps up to version 0.6.4 (``engines.defaults("vllm", "0.6")``): blocks of
16 tokens, at most 256 users a step, and 512 tokens a step once prompts are chunked. Only the caps:
the default ``"continuous"`` policy schedules as Orca does, a prompt in the same step as the next
tokens, where V0's default scheduler ran steps of prompts alone.

``simulate(server, workload)`` runs the requests through it. Each step's time is the
package's own pass model: the step's FLOPs and bytes are the sums of what
``passes.forward_pass`` counts for each user's tokens (prompt pieces and next tokens, each
over its own cache), with the weights read once for the whole step, and
``roofline.pass_time`` turns them into seconds under the server's ``assumptions``: the larger
of the arithmetic's time and the memory traffic's, as if the two overlapped perfectly, plus the
fixed cost a pass. As everywhere in the course, every weight counts two FLOPs a token, the input
embedding's too though a token only looks up its row (6.5 % of Llama 3 8B's weights), so a
compute-bound step runs about that much long. To run an hour of traffic in about a second, the simulator reads those counts
from tables the package computes once for every server alike in what times a step (``StepClock``, ``clock.clock_of``); ``StepClock.check`` and the
tests set them against ``forward_pass`` and ``pass_time`` directly.

A named engine (``engines.engine(name, version).server(model, gpu, **flags)``) times a step as
the engine runs it, kernel after kernel (``clock="phases"``, ``StepClock.phases``): the matrix
products with the weights read once, then the attention over each user's cache, each phase on its
own roofline and the phases summed, not overlapped; then the fixed cost a step
(``assumptions.overhead``), the processor's scheduling and input preparation for each user in the
step (``user_time``), and, where the step is not captured as a CUDA graph, the wait for its kernel
launches (``launch_time``). The process that turns tokens into text and streams them runs beside the
steps, ``stream_time`` a token: a step of many users lasts at least its users × ``stream_time``. An
engine looks up its tokens' rows of an untied input table (``input_table="looked up"``) where the
lessons count the table as every other weight. The API server's work on each request (``request_time``: HTTP, the chat
template, tokenizing) delays the request before the engine sees it, one request after another, and
each request's own way to the engine and back (``request_latency``: the hops between processes, which
hold up no other request) delays all its tokens alike;
``admit_every`` runs the steps in calls of that many (vLLM V0's multi-step scheduling): waiting
requests join only between calls, and each call streams its tokens together. With the defaults (``clock="overlap"`` and no overheads) the server is the ideal engine
the lessons teach, and plate XXIII.1's single pass keeps its own model (``serving.prefill``).

``simulate(server, work, concurrency=C)`` keeps at most C requests in flight, each sent when one
finishes and timed from then, as ``--max-concurrency`` does; ``Simulation.benchmark()`` gives the
figures vLLM's ``benchmark_serving`` prints, computed as it computes them.

A server given ``step_time`` (a callable of the step's next tokens, all its tokens and the prompts it
starts) takes each step's seconds from it instead: measured step times, as a profiler records them
for a real engine (``engine_lab.StepTable``, from llama.cpp's ``llama-batched-bench``), timed by the
same scheduler. ``logits="last of each prompt"`` charges each prompt as llama.cpp computes it: only its
last token passes through the last layer's feed-forward block and the output head
(``passes.output_parameters``).

The same workload and server always give the same result.

The package reads as an engine does, in the shape of nano-vllm's ``nanovllm/engine``: ``requests`` (a
request's state), ``blocks`` (the block manager, paged or reserved), ``schedulers`` (one class per policy,
each with one ``schedule()``), ``clock`` (``StepClock``, a step's time), ``client`` (the benchmark's client
and the API server), ``results`` (``Simulation`` and ``Benchmark``), ``server`` (``Server``) and
``goodput`` (a run at a rate, goodput, the users that fit). ``simulate`` below ties them: a loop of
schedule, time, postprocess (``loop``'s ``Engine``). ``cluster`` runs several engines side by side: copies
of a server behind a router, and prefill and decode on servers of their own (lesson 4).

A server may be a tensor-parallel group (``tensor_parallel`` GPUs over ``link``, as ``parallel.py`` splits
a model): each GPU holds its share of the weights and the cache, does its share of each step's arithmetic,
and each step then waits for two all-reduces a layer of its activations.
"""
from __future__ import annotations

from .. import _check
from ..memory import RESERVE, DoesNotFit  # noqa: F401
from ..workload import Workload
from .blocks import BlockManager  # noqa: F401
from .client import _Client, _sent
from .clock import StepClock, _phased_step  # noqa: F401
from .cluster import ROUTERS, ClusterSimulation, simulate_cluster, simulate_disaggregated, transfer_time  # noqa: F401
from .goodput import (ATTAINMENT, GOODPUT_REQUESTS, Goodput, _searched_run, at_rate, goodput,  # noqa: F401
                      goodput_at, poisson_requests, users_that_fit)
from .loop import Engine, _decode_steps  # noqa: F401
from .results import (SIMULATION_ARRAYS, Benchmark, RequestRecord, Simulation, StepLog, arrays_of,  # noqa: F401
                      percentile, percentiles)
from .schedulers import SCHEDULERS, Chunked, Continuous, Scheduler, Static  # noqa: F401
from .server import (BLOCK_TOKENS, CHUNK_TOKENS, CLOCKS, ENGINE, MAX_RUNNING, MEMORY, POLICIES,  # noqa: F401
                     PREEMPTION, Server, _choice, _whole)


def simulate(server: Server, work: Workload, concurrency=None) -> Simulation:
    """Serve ``work`` on ``server`` and record every step and every request (see the package's docstring).
    With ``concurrency``, at most that many requests are in flight, each sent when one finishes (or at
    its own time, if later) and timed from when it is sent, as ``--max-concurrency`` does."""
    _check.instance("server", server, Server)
    _check.instance("work", work, Workload)
    if concurrency is not None:
        concurrency = _whole("concurrency", concurrency, 1)
    work.check_window(server.model)
    client = None
    if concurrency is not None or server.request_time or server.request_latency:
        client = _Client(work, concurrency, server.request_time, server.request_latency)
    arrival = work.arrival.tolist() if client is None else client.entry   # when each request reaches the engine
    engine = Engine(server, SCHEDULERS[server.policy](server, work, arrival, client))
    engine.run(total=len(work))
    return engine.log.simulation(server, work if client is None else _sent(work, client), engine.scheduler.requests,
                                 engine.scheduler.runs)

