"""Feedback on a student's answer, for the course's problem notebooks.

``check(answer, expected, ...)`` compares what a student assigned to ``answer`` with the
figure the package computes, and says one of five things:

- ``"right"``: within the problem's tolerance ``rel``;
- ``"slip"``: off by one of the usual slips (bits for bytes, seconds for milliseconds,
  GiB for GB, 16-bit for 8-bit...), which the feedback names, with a hint;
- ``"close"``: a little off, as rounding a figure early can make it;
- ``"wrong"``: none of these, or not a number at all;
- ``"unanswered"``: still ``None``, as the exercise notebooks hand it out.

``submit(answer, label=...)`` is what a graded notebook's check cell calls instead: it
records the answer for the grader and says only whether it is the kind of answer asked
for (a number, a word), never whether it is right, so the cell holds no figure to copy.

In a notebook, each problem's answer belongs to that problem alone. A check or submit
run from a notebook cell clears ``answer`` (sets it to ``None``) once it has read it, so
the next problem's check, run before its own answer cell or with that cell skipped, says
"not answered yet" instead of checking this problem's answer; running the same check
again shows the answer it read last time.

Whatever the student's answer is (text, a list, NaN, a dict...), ``check`` gives
feedback and never raises; only a mistake in the problem itself (an ``expected`` that is
not a number or a word, a negative ``rel``) raises ``TypeError`` or ``ValueError``.

A ``Result`` shows itself as coloured HTML in a notebook and as one line of text
elsewhere. Its display also carries a JSON record under the MIME type ``RECORD_MIME``,
invisible to the reader, which the grader (the ``coursegrader`` package) reads from the executed notebook.
The record holds the answer itself, so the grader can check it again against the
reference solutions rather than trust a check cell that a student may have edited.
"""
from __future__ import annotations

import html
import math
import numbers
import re
import sys
from dataclasses import dataclass
from decimal import Decimal
from typing import Iterable, Mapping

import numpy as np

from . import _check
from .units import percent

RECORD_MIME = "application/vnd.servingmath.check+json"
STATUSES = ("right", "close", "slip", "wrong", "unanswered", "recorded", "invalid")

# An answer this many tolerances away is "close" rather than "wrong".
CLOSE_FACTOR = 5
# rel=0 asks for an exact answer; this leaves room for a float's last digit.
EXACT = 1e-9


@dataclass(frozen=True)
class Slip:
    """A factor a usual mistake multiplies an answer by, and what to look at again."""

    factor: float
    name: str
    hint: str
    # The slip is named only where the problem's units contain one of these words (any, if empty).
    units: tuple[str, ...] = ()

    def applies(self, units: str) -> bool:
        return not self.units or bool(set(self.units) & set(re.findall(r"[A-Za-z]+", units)))


GIB_IN_GB = 2**30 / 1e9  # 1.073741824
BYTE_UNITS = ("GB", "MB", "KB", "kB", "TB", "bytes", "byte")
TIME_UNITS = ("s", "ms", "second", "seconds", "hour", "hours")

SLIPS = (
    Slip(2, "a factor of 2",
         "16-bit weights are 2 bytes each and 8-bit ones 1; a weight does 2 FLOPs (multiply, add) per token; "
         "a spec sheet's sparse figure is twice the dense one."),
    Slip(4, "a factor of 4", "16-bit weights are 4 times the bytes of 4-bit ones."),
    Slip(8, "bits for bytes", "a byte is 8 bits: bytes = bits ÷ 8."),
    Slip(100, "a percentage for a fraction", "96 % is the fraction 0.96."),
    Slip(1000, "a factor of 1,000",
         "milliseconds for seconds (1 s = 1,000 ms), or kilo/mega/giga mixed up."),
    Slip(1024, "a factor of 1,024", "a binary prefix (1 KiB = 1,024 bytes) where the course counts in thousands.",
         BYTE_UNITS),
    Slip(GIB_IN_GB, "GiB for GB",
         f"the course counts decimal gigabytes, 1 GB = 10⁹ bytes; 1 GiB = 2³⁰ bytes = {GIB_IN_GB:.9f} GB, "
         f"about {percent(GIB_IN_GB - 1, 1)} more.", ("GB",)),
    Slip(3600, "hours for seconds", "an hour is 3,600 seconds.", TIME_UNITS),
    Slip(1e6, "a factor of a million", "tokens for millions of tokens, or bytes for megabytes."),
    Slip(1e9, "a factor of a billion", "bytes for gigabytes, or parameters for billions of parameters."),
    Slip(1e12, "a factor of a trillion", "FLOP for TFLOP, or bytes for terabytes."),
)

OFF_BY_ONE = Slip(1, "off by one", "look again at where the count starts and where it stops.")
SIGN = Slip(-1, "the sign", "the size is right but the sign is flipped.")

# Words that carry no meaning in a one-word answer: "it's memory-bound" means "memory".
FILLER = frozenset({"bound", "limited", "by", "the", "its", "it", "is", "on"})
MAX_SHOWN = 60


@dataclass(frozen=True, repr=False)
class Result:
    """The outcome of one check: what the student sees and what the grader reads."""

    label: str
    status: str
    message: str
    answer: object
    expected: object
    rel: float
    units: str = ""
    slip: str | None = None
    choices: Mapping[str, tuple] | None = None
    slips: Mapping[str, tuple] | None = None

    @property
    def score(self) -> int:
        """1 for a right answer, 0 for anything else."""
        return int(self.status == "right")

    @property
    def record(self) -> dict:
        """The outcome as plain JSON values, for the grader."""
        record = {
            "label": self.label, "status": self.status, "score": self.score, "slip": self.slip,
            "answer": self.answer, "expected": self.expected, "rel": self.rel, "units": self.units,
            "choices": None if self.choices is None else {key: list(value) for key, value in self.choices.items()},
        }
        if self.slips:  # the problem's own slips, so the grader names them too
            record["slips"] = {name: list(entry) for name, entry in self.slips.items()}
        return record

    def __str__(self):
        name = f"[{self.label}] " if self.label else ""
        return f"{name}{_SYMBOLS[self.status]} {_TITLES[self.status]}: {self.message}"

    __repr__ = __str__

    def _repr_html_(self):
        colour, background = _COLOURS[self.status]
        name = f"Problem {html.escape(self.label)} · " if self.label else ""
        return (f'<div class="servingmath-check servingmath-check-{self.status}" style="border-left:4px solid '
                f'{colour};background:{background};color:#1b1b1b;padding:0.4em 0.8em;margin:0.3em 0">'
                f'<strong style="color:{colour}">{_SYMBOLS[self.status]} {name}{_TITLES[self.status]}</strong>'
                f' {html.escape(self.message)}</div>')

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": str(self), "text/html": self._repr_html_(), RECORD_MIME: self.record}


_SYMBOLS = {"right": "✓", "close": "≈", "slip": "⚠", "wrong": "✗", "unanswered": "…", "recorded": "✎",
            "invalid": "✗"}
_TITLES = {"right": "Right", "close": "Close", "slip": "A usual slip", "wrong": "Not yet",
           "unanswered": "Not answered yet", "recorded": "Recorded for grading",
           "invalid": "Not the kind of answer asked for"}
_COLOURS = {"right": ("#2e7d32", "#edf7ee"), "close": ("#8a6d00", "#fff8e1"), "slip": ("#b45309", "#fff3e0"),
            "wrong": ("#b3261e", "#fdeceb"), "unanswered": ("#555555", "#f3f3f3"),
            "recorded": ("#1f4e9e", "#eef3fb"), "invalid": ("#b3261e", "#fdeceb")}

# The answer each label's check last read in this kernel, so that running a check again shows it.
_READ: dict[str, object] = {}


def _take_answer(frame, answer, label):
    """The answer a check works on; from a notebook cell, it also clears ``answer`` there.

    A notebook cell runs at module level in ``__main__``. When such a cell passes its own
    ``answer``, the answer now belongs to ``label``: the cell's ``answer`` is set to
    ``None``, so the next problem's check cannot read it. Called that way again with
    ``answer`` still ``None``, the check works on what it read last time.
    """
    namespace = frame.f_globals
    if (frame.f_code.co_name != "<module>" or namespace.get("__name__") != "__main__"
            or namespace.get("answer", _MISSING) is not answer):
        return answer
    namespace["answer"] = None
    if answer is None:
        return _READ.get(label)
    _READ[label] = answer
    return answer


_MISSING = object()


def submitted(label: str):
    """The answer the check or submit of ``label`` last read in this kernel (``None`` if none)."""
    return _READ.get(_text("label", label))


def check(answer, expected, *, rel=0.02, label="", units="", choices=None, slips=None) -> Result:
    """Compare a student's ``answer`` with ``expected`` and return the feedback.

    ``expected`` is a number, or a word for a categorical answer ("memory", a GPU's
    key). For a number, ``rel`` is the relative tolerance for "right" (0 asks for the
    exact figure, for counts) and ``units`` is how the answer is shown ("ms",
    "tokens a second"). For a word, ``choices`` lists the valid answers, as a list or as
    a dict from each answer to other spellings of it; with choices, any unambiguous
    part of one is accepted ("A100" for "a100-80gb"), and case, hyphens and a trailing
    "bound" never matter.

    ``slips`` names the mistakes of this problem that no single factor describes, as a dict from
    each slip's name to ``(the answer that mistake gives, what to look at again)``: a count of
    users worked out with decimal gigabytes for a binary memory, or with the reserve forgotten.
    """
    label = _text("label", label)
    units = _text("units", units)
    answer = _take_answer(sys._getframe(1), answer, label)
    rel = _check.number("rel", rel, minimum=0, maximum=1)
    slips = _named_slips(slips)
    if not isinstance(rel, float):
        raise TypeError(f"rel must be one number, got {rel!r}")
    answer, expected = _unwrapped(answer), _unwrapped(expected)
    if isinstance(expected, str):
        options = _options(expected, choices)
        return _check_word(answer, str(expected), options, label, rel, units)
    if choices is not None:
        raise TypeError(f"choices go with a word as expected, got expected={expected!r}")
    expected = _check.finite("expected", expected)
    if not isinstance(expected, float):
        raise TypeError(f"expected must be one number or one word, got {expected!r}")
    return _check_number(answer, expected, rel, label, units, slips)


def _named_slips(slips):
    """The problem's own slips, checked: {name: (value, hint)}."""
    if slips is None:
        return {}
    if not isinstance(slips, Mapping):
        raise TypeError(f"slips must be a dict from a slip's name to (its answer, a hint), got {slips!r}")
    named = {}
    for name, entry in slips.items():
        if not isinstance(name, str) or not isinstance(entry, tuple) or len(entry) != 2 \
                or not isinstance(entry[1], str):
            raise TypeError(f"slips must map a name to (its answer, a hint), got {name!r}: {entry!r}")
        named[name] = (_check.finite(f"slips[{name!r}]", entry[0]), entry[1])
    return named


def submit(answer, *, label, units="", choices=None) -> Result:
    """Record ``answer`` for the grader without saying whether it is right.

    A graded notebook's check cell calls this in place of ``check``, so it holds no
    figure a student could copy. The feedback says only whether the answer is the kind
    the problem asks for: one number (``choices=None``) or one of ``choices`` (words).
    The grader checks the recorded answer against the solutions, which it alone holds.
    """
    label = _text("label", label)
    units = _text("units", units)
    answer = _take_answer(sys._getframe(1), answer, label)
    answer = _unwrapped(answer)
    options = None if choices is None else _options(None, choices)

    def result(status, message, shown_answer):
        return Result(label, status, message, shown_answer, None, 0.0, units, None,
                      None if options is None else options)

    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return result("unanswered", "set `answer = ...` in the cell above, run it, then run this cell again.", None)
    if options is None:
        value, problem = _as_number(answer)
        if problem:  # a GPU or a model given as itself is kept as its key, for a grader that asks a word
            word = _word_of(answer)
            return result("invalid", problem + " Nothing is recorded yet.", _recordable(answer if word is None else word))
        return result("recorded", f"{_show(value, units)}. Run this cell again whenever you change the answer.",
                      value)
    listed = ", ".join(f'"{key}"' for key in options)
    text = _word_of(answer)
    if text is None:
        return result("invalid", f"that is of type {type(answer).__name__}; the answer is one of {listed}, in quotes.",
                      _recordable(answer))
    matches = _matching(text, options, partial=True)
    shown = _clip(repr(text))
    if len(matches) > 1:
        return result("invalid", f"{shown} fits more than one answer ({', '.join(matches)}): say which.", text)
    if not matches:
        return result("invalid", f"{shown} is none of the answers this problem takes: answer one of {listed}.", text)
    return result("recorded", f"{shown}. Run this cell again whenever you change the answer.", text)


# -- numbers -------------------------------------------------------------------------
def _check_number(answer, expected, rel, label, units, slips=None):
    def result(status, message, shown_answer, slip=None):
        return Result(label, status, message, shown_answer, expected, rel, units, slip, None, slips or None)

    if answer is None:
        return result("unanswered", "set `answer = ...` in the cell above, run it, then run this cell again.", None)
    value, problem = _as_number(answer)
    if problem:
        return result("wrong", problem, _recordable(answer))
    shown = _show(value, units)
    tolerance = max(rel, EXACT)
    if _near(value, expected, tolerance):
        precise = _show(expected, units)
        exact = "" if precise == shown else f" (the package's figure: {precise})"
        return result("right", f"{shown}{exact}.", value)
    for name, (slipped, hint) in (slips or {}).items():
        if not _near(slipped, expected, tolerance) and _near(value, slipped, tolerance):
            return result("slip", f"{shown} is what {name} gives. {hint}", value, name)
    slip = _slip(value, expected, tolerance, units)
    if slip is not None:
        if slip is OFF_BY_ONE:
            message = f"{shown} is one away from the answer: {slip.hint}"
        elif slip is SIGN:
            message = f"{shown}: {slip.hint}"
        else:
            size = "larger" if abs(value) > abs(expected) else "smaller"
            hint = slip.hint
            if slip.name == "GiB for GB" and size == "larger":
                hint = (f"you may have multiplied by {GIB_IN_GB:.3f} where you should divide: 1 GiB = 2³⁰ bytes is "
                        f"{GIB_IN_GB:.9f} GB, so a figure in GB is the larger one; the course counts decimal "
                        f"gigabytes, 1 GB = 10⁹ bytes.")
            elif slip.name == "GiB for GB":
                hint = (f"you may have given gibibytes: divide bytes by 10⁹, not by 2³⁰. 1 GiB = 2³⁰ bytes = "
                        f"{GIB_IN_GB:.9f} GB, about {percent(GIB_IN_GB - 1, 1)} more; the course counts "
                        f"decimal gigabytes.")
            message = (f"{shown} is {_show(slip.factor, '')} times {size} than the answer. "
                       f"Off by {slip.name}? {hint}")
        return result("slip", message, value, slip.name)
    if _close(value, expected, rel):
        direction = "high" if value > expected else "low"
        if rel > 0:
            message = (f"{shown} is a little {direction}: within {_percent(CLOSE_FACTOR * rel)} of the answer but "
                       f"not within {_percent(rel)}. Did you round a figure early, or use another GPU figure?")
        else:
            message = f"{shown} is a little {direction}: the answer is a whole number; round with care."
        return result("close", message, value)
    return result("wrong", f"{shown} is not it. Work through the steps of the part again, units included.", value)


def _as_number(answer):
    """(value, None) for an answer that is one real number, or (None, what is wrong with it)."""
    if isinstance(answer, (bool, np.bool_)):
        return None, f"{answer} is a yes or no; the answer is a number."
    if isinstance(answer, (str, np.str_)):
        return _number_from_text(str(answer))
    if isinstance(answer, (bytes, bytearray)):
        return None, "that is of type bytes; the answer is a number."
    if isinstance(answer, complex):
        return None, f"{_clip(_safe_repr(answer))} is a complex number; the answer is a real one."
    if isinstance(answer, (numbers.Real, Decimal)):
        try:
            value = float(answer)
        except (OverflowError, ValueError, TypeError):  # 10**400, Decimal('sNaN')
            return None, f"{_clip(_safe_repr(answer))} cannot be read as a number this size."
        return _finite(value)
    kind = type(answer).__name__
    if isinstance(answer, (list, tuple, set, frozenset, dict, np.ndarray)):
        return None, f"that is of type {kind}; the answer is one number. Pick the one the question asks for."
    return None, f"that is of type {kind} ({_clip(_safe_repr(answer))}); the answer is one number."


_NUMBER = re.compile(r"[-+]?(?:\d[\d,_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _number_from_text(text):
    """Read a number a student typed as text: "1,000", "$0.50", "6.24 ms"."""
    stripped = text.strip().lstrip("~≈$ ").replace("about", "").strip().lstrip("$ ")
    match = _NUMBER.match(stripped)
    if not match:
        if not stripped:
            return None, "that is empty text; the answer is a number, such as 1000 or 4.79."
        return None, f"{_clip(repr(text))} is text; the answer is a number, such as 1000 or 4.79."
    try:
        value = float(match.group().replace(",", "").replace("_", ""))
    except ValueError:
        return None, f"{_clip(repr(text))} is text; the answer is a number, such as 1000 or 4.79."
    return _finite(value)


def _finite(value):
    if math.isnan(value):
        return None, "that is NaN (not a number): a step divided zero by zero or used a missing value."
    if math.isinf(value):
        return None, "that is infinite: a step divided by zero, or a number grew too large."
    return value, None


def _near(value, target, tolerance):
    return abs(value - target) <= tolerance * abs(target) if target else abs(value) <= tolerance


def _slip(value, expected, tolerance, units=""):
    if expected == 0 or value == 0:
        return None
    if _near(value, -expected, tolerance):
        return SIGN
    if expected == round(expected) and value == round(value) and abs(expected) >= 2 and abs(value - expected) == 1:
        return OFF_BY_ONE
    ratio = abs(value / expected)
    candidates = [(abs(ratio * divisor / slip.factor - 1), slip)
                  for slip in SLIPS if slip.applies(units)
                  for divisor in (1, slip.factor ** 2)]  # too large, or too small by the factor
    distance, slip = min(candidates, key=lambda pair: pair[0])
    return slip if distance <= tolerance else None


def _close(value, expected, rel):
    if rel > 0:
        return _near(value, expected, CLOSE_FACTOR * rel)
    return expected == round(expected) and abs(value - expected) < 1


def _show(value, units):
    """A number as the feedback prints it: thousands separated, about four significant figures."""
    if value == round(value) and abs(value) < 1e15:
        text = f"{int(round(value)):,}"
    elif 1e-4 <= abs(value) < 1e15:
        digits = max(0, 3 - math.floor(math.log10(abs(value))))
        text = f"{value:,.{digits}f}"
        if digits:  # only decimals lose their trailing zeros: 6,000 stays 6,000
            text = text.rstrip("0").rstrip(".")
    else:
        text = f"{value:.4g}"
    return f"{text} {units}" if units else text


def _percent(fraction):
    return percent(fraction, 0 if fraction * 100 == round(fraction * 100) else 1)


# -- words ---------------------------------------------------------------------------
def _options(expected, choices) -> dict[str, tuple]:
    """Each valid answer mapped to its other spellings; the expected one must be among them."""
    if choices is None:
        return {expected: ()}
    if isinstance(choices, Mapping):
        options = {}
        for key, spellings in choices.items():
            if isinstance(spellings, str) or not isinstance(spellings, Iterable):
                raise TypeError(f"choices must map each answer to a list of spellings, got {choices!r}")
            options[_text("choices", key)] = tuple(_text("choices", spelling) for spelling in spellings)
    elif isinstance(choices, Iterable) and not isinstance(choices, str):
        options = {_text("choices", key): () for key in choices}
    else:
        raise TypeError(f"choices must be a list of words or a dict of spellings, got {choices!r}")
    if expected is not None and expected not in options:
        raise ValueError(f"expected must be one of the choices {sorted(options)}, got {expected!r}")
    return options


def _check_word(answer, expected, options, label, rel, units):
    def result(status, message, shown_answer):
        recorded = None if len(options) == 1 and not options[expected] else options
        return Result(label, status, message, shown_answer, expected, rel, units, None, recorded)

    if answer is None:
        return result("unanswered", "set `answer = ...` in the cell above, run it, then run this cell again.", None)
    text = _word_of(answer)
    listed = ", ".join(f'"{key}"' for key in options)
    if text is None:
        what = "one of " + listed if len(options) > 1 else "a word"
        return result("wrong", f"that is of type {type(answer).__name__}; the answer is {what}, in quotes.",
                      _recordable(answer))
    if not text.strip():
        return result("unanswered", "the answer is still empty text: write it between the quotes.", text)
    matches = _matching(text, options, partial=len(options) > 1)
    shown = _clip(repr(text))
    if matches == [expected]:
        return result("right", f"{shown}.", text)
    if len(matches) > 1:
        return result("wrong", f"{shown} fits more than one answer ({', '.join(matches)}): say which.", text)
    hint = "look again at the part." if matches or len(options) == 1 else f"answer one of {listed}."
    return result("wrong", f"{shown} is not it: {hint}", text)


def _word_of(answer):
    """The text of a word answer: a string, or a catalog entry's key (a GPU, a model)."""
    if isinstance(answer, (str, np.str_)):
        return str(answer)
    if isinstance(answer, (dict, type)):
        return None
    from .models import MODELS  # a model given as itself: its key in the course's list
    key = next((key for key, model in MODELS.items() if model is answer), None)
    if key is not None:
        return key
    for attribute in ("key", "name"):
        try:
            value = getattr(answer, attribute, None)
        except Exception:  # a student's own class whose attribute raises
            value = None
        if isinstance(value, str) and value:
            return value
    return None


def _words(text):
    text = text.lower().replace("'", "").replace("’", "")
    return tuple(word for word in re.findall(r"[a-z]+|[0-9]+(?:\.[0-9]+)?", text) if word not in FILLER)


def _matching(text, options, partial):
    """The options the text names: exactly, or (with several options) as an unambiguous part."""
    said = _words(text)
    if not said:
        return []
    spelled = {key: [_words(key), *(_words(spelling) for spelling in spellings)] for key, spellings in options.items()}
    exact = [key for key, forms in spelled.items() if said in forms]
    if exact or not partial or len("".join(said)) < 3:  # a lone "a" names nothing
        return exact
    return [key for key, forms in spelled.items() if any(set(said) <= set(form) for form in forms)]


# -- shared --------------------------------------------------------------------------
def _unwrapped(value):
    """A numpy array of one element as the value it holds (what ``np.sum`` and a one-item slice return)."""
    if isinstance(value, np.ndarray) and value.size == 1:
        try:
            return value.item()
        except Exception:  # an exotic dtype: leave it to be told it is no number
            return value
    return value


def _text(name, value):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be text, got {value!r}")
    return str(value)


def _clip(text):
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN - 1] + "…"


def _recordable(answer):
    """The answer as a JSON value for the record: a number, text, or a short description."""
    if answer is None or isinstance(answer, str):
        return None if answer is None else _clip(str(answer))
    return {"type": type(answer).__name__, "repr": _clip(_safe_repr(answer))}


def _safe_repr(answer):
    try:
        return repr(answer)
    except Exception:  # a student's own class with a broken __repr__
        return f"<{type(answer).__name__}>"
