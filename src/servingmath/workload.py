"""What a server is asked to do: when requests arrive, and how long their prompts and replies are.

A ``Workload`` is three arrays of equal length, in order of arrival: each request's arrival
time in seconds, its prompt tokens and its reply tokens. It is made

- from arrivals (``poisson_arrivals``: a Poisson stream at a rate, or a given list of times)
  and lengths (``LengthDistribution.draw``: a stated distribution, or ``fixed``);
- or read whole from a trace (``read_trace``: a CSV file of ``arrival,prompt,reply`` rows).

Every random draw takes a ``seed``: the same seed gives the same workload.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import _check
from .models import Model

from .models import ContextTooLong


def context_window(model: Model) -> int:
    """The most tokens ``model`` holds in one conversation (``Model.context_window``)."""
    _check.instance("model", model, Model)
    if model.context_window is None:
        raise ValueError(f"model must have a context window to serve conversations, got {model.name} without one")
    return int(model.context_window)


def _rng(seed):
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise TypeError(f"seed must be a whole number at least 0, got {seed!r}")
    return np.random.Generator(np.random.PCG64(int(seed)))


def _whole_array(name, values, minimum):
    array = np.atleast_1d(_check.count(name, values, minimum=minimum))
    if array.ndim != 1:
        raise ValueError(f"{name} must be a flat list of numbers, got {values!r}")
    return array.astype(np.int64)


@dataclass(frozen=True)
class LengthDistribution:
    """Prompt and reply lengths drawn independently, each geometric (at least one token) with a stated mean.

    The geometric law is the course's choice of shape, the simplest with only a mean to
    set: most requests short, a few long. The means are the source's.
    """

    name: str
    mean_prompt: float
    mean_reply: float
    source: str = ""

    def __post_init__(self):
        _check.number("mean_prompt", self.mean_prompt, minimum=1)
        _check.number("mean_reply", self.mean_reply, minimum=1)

    def draw(self, count, seed=0, longest=None):
        """``count`` (prompt, reply) pairs as two integer arrays; ``longest`` caps prompt + reply
        (a model's window): a pair past it is drawn again."""
        count = int(_check.count("count", count))
        if longest is not None:
            longest = int(_check.count("longest", longest, minimum=2))
        rng = _rng(seed)
        prompts = rng.geometric(1 / self.mean_prompt, count)
        replies = rng.geometric(1 / self.mean_reply, count)
        if longest is not None:
            over = prompts + replies > longest
            while over.any():
                prompts[over] = rng.geometric(1 / self.mean_prompt, int(over.sum()))
                replies[over] = rng.geometric(1 / self.mean_reply, int(over.sum()))
                over = prompts + replies > longest
        return prompts.astype(np.int64), replies.astype(np.int64)


# Kwon et al. 2023 (PagedAttention), figure 11: the mean lengths, in tokens, of the two datasets
# vLLM was measured on ("input (mean: 161.31)", "output (mean: 337.99)"; Alpaca 19.31 and 58.45).
SHAREGPT = LengthDistribution("ShareGPT", 161.31, 337.99, "kwon2023paged, figure 11")
ALPACA = LengthDistribution("Alpaca", 19.31, 58.45, "kwon2023paged, figure 11")


def poisson_arrivals(rate, count, seed=0):
    """``count`` arrival times, in seconds from 0, of a Poisson stream of ``rate`` requests a second:
    the gaps between them are exponential with mean 1 ÷ rate."""
    rate = _check.single("rate", _check.number("rate", rate, above=0))
    count = int(_check.count("count", count))
    return np.cumsum(_rng(seed).exponential(1 / rate, count))


@dataclass(frozen=True)
class Workload:
    """Requests in order of arrival: ``arrival`` (seconds), ``prompt`` and ``reply`` (tokens)."""

    arrival: np.ndarray
    prompt: np.ndarray
    reply: np.ndarray
    label: str = ""

    def __len__(self):
        return len(self.arrival)

    @property
    def duration(self):
        """Seconds from time 0 to the last arrival."""
        return float(self.arrival[-1]) if len(self) else 0.0

    def check_window(self, model: Model):
        """Refuse any request whose prompt and reply together run past ``model``'s context window."""
        window = context_window(model)
        longest = self.prompt + self.reply
        if len(self) and longest.max() > window:
            i = int(np.argmax(longest))
            raise ContextTooLong(
                f"request {i} holds {int(longest[i]):,} tokens (prompt {int(self.prompt[i]):,} + reply "
                f"{int(self.reply[i]):,}), past {model.name}'s context window of {window:,} tokens")
        return self


def workload(arrival, prompt, reply, label=""):
    """A workload from arrays: arrival times (seconds, not decreasing) and whole prompt and reply lengths."""
    arrival = np.atleast_1d(_check.number("arrival", arrival, minimum=0)).astype(float)
    prompt = _whole_array("prompt", prompt, 1)
    reply = _whole_array("reply", reply, 1)
    if arrival.ndim != 1:
        raise ValueError(f"arrival must be a flat list of times, got {arrival!r}")
    if not (len(arrival) == len(prompt) == len(reply)):
        raise ValueError(f"arrival, prompt and reply must be as long as each other, got "
                         f"{len(arrival)}, {len(prompt)} and {len(reply)}")
    if len(arrival) == 0:
        raise ValueError("arrival must hold at least one request, got none")
    if np.any(np.diff(arrival) < 0):
        raise ValueError(f"arrival must not go backwards (requests in order of arrival), got {arrival!r}")
    if not isinstance(label, str):
        raise TypeError(f"label must be a string, got {label!r}")
    for array in (arrival, prompt, reply):
        array.setflags(write=False)
    return Workload(arrival, prompt, reply, label)


def poisson_workload(rate, count, lengths: LengthDistribution = SHAREGPT, seed=0, model: Model | None = None):
    """``count`` requests arriving as a Poisson stream of ``rate`` a second, their lengths drawn from
    ``lengths``; with ``model``, every request is drawn to fit the model's context window."""
    _check.instance("lengths", lengths, LengthDistribution)
    longest = None
    if model is not None:
        longest = context_window(model)
    arrival = poisson_arrivals(rate, count, seed)
    prompt, reply = lengths.draw(count, seed + 1 if isinstance(seed, (int, np.integer)) else seed, longest)
    made = workload(arrival, prompt, reply, f"{lengths.name}, {rate:g} a second")
    return made.check_window(model) if model is not None else made


def read_trace(path):
    """A workload read from a CSV file with a header row ``arrival,prompt,reply`` (seconds, tokens, tokens)."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a file name, got {path!r}")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path must name a CSV file, got {str(path)!r}: no such file")
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        wanted = {"arrival", "prompt", "reply"}
        if reader.fieldnames is None or not wanted <= set(reader.fieldnames):
            raise ValueError(f"path {str(path)!r} must have the columns arrival, prompt and reply, "
                             f"got {reader.fieldnames!r}")
        rows = list(reader)
    columns = {}
    for name, kind in (("arrival", float), ("prompt", float), ("reply", float)):
        values = []
        for line, row in enumerate(rows, start=2):
            try:
                values.append(kind(row[name]))
            except (TypeError, ValueError) as error:
                raise ValueError(f"path {str(path)!r} line {line}: {name} must be a number, "
                                 f"got {row[name]!r}") from error
        columns[name] = values
    return workload(columns["arrival"], columns["prompt"], columns["reply"], label=path.name)
