"""Numbers as the prose prints them.

Inside the package everything is SI (seconds, bytes, FLOP, dollars). These functions
turn a value into the text a reader sees, at a stated number of digits, and return a
``Shown``: a string whose repr is itself, so that a glued value appears in a page
without quotation marks.
"""
from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

from . import _check


class Shown(str):
    """Text for the page; its repr is the text itself (no quotes when glued)."""

    def __repr__(self):
        return str(self)


def _fixed(value, digits):
    """``value`` at ``digits`` places, a half rounded away from zero as readers round (6.25 -> "6.3"), where
    Python's own format rounds a half to even ("6.2")."""
    digits = int(_check.count("digits", digits))
    return f"{Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP):,.{digits}f}"


def _scaled(value, scale, suffix, digits, prefix=""):
    """One formatter behind them all: ``value ÷ scale`` at ``digits`` places, with a unit."""
    return Shown(prefix + _fixed(_check.finite("value", value) / scale, digits) + suffix)


def _unsigned(value):
    return _check.finite("value", value, minimum=0)


def number(value, digits=0):
    """``1234.5`` -> ``"1,235"``; thousands separated, ``digits`` after the point."""
    return _scaled(value, 1, "", digits)


def seconds(value, digits=2):
    """``1.2424`` -> ``"1.24 s"``."""
    return _scaled(_unsigned(value), 1, " s", digits)


def ms(value, digits=2):
    """Seconds shown in milliseconds: ``0.004794`` -> ``"4.79 ms"``."""
    return _scaled(_unsigned(value), 1e-3, " ms", digits)


def gb(value, digits=2):
    """Bytes shown in decimal gigabytes (1e9), as spec sheets count: ``16.06 GB``."""
    return _scaled(_unsigned(value), 1e9, " GB", digits)


def tb_per_s(value, digits=2):
    """Bytes a second shown in TB/s: ``3.35 TB/s``."""
    return _scaled(_unsigned(value), 1e12, " TB/s", digits)


def mb(value, digits=0):
    """Bytes shown in decimal megabytes (1e6): ``88_092_672`` -> ``"88 MB"``."""
    return Shown(_fixed(_check.finite("value", value, minimum=0) / 1e6, digits) + " MB")


def gb_per_s(value, digits=1):
    """Bytes a second shown in GB/s, the scale of a processor's memory: ``6.4 GB/s``."""
    return Shown(_fixed(_check.finite("value", value, minimum=0) / 1e9, digits) + " GB/s")


def gbit_per_s(value, digits=0):
    """Bytes a second shown in gigabits a second, the scale network ports are sold in: ``50e9`` -> ``"400 Gb/s"``."""
    return Shown(_fixed(_check.finite("value", value, minimum=0) * 8 / 1e9, digits) + " Gb/s")


def gflops(value, digits=0):
    """FLOP/s shown in GFLOP/s, the scale of a processor's arithmetic: ``47 GFLOP/s``."""
    return Shown(_fixed(_check.finite("value", value, minimum=0) / 1e9, digits) + " GFLOP/s")


def tflops(value, digits=0):
    """FLOP/s shown in TFLOP/s: ``989 TFLOP/s``."""
    return _scaled(_unsigned(value), 1e12, " TFLOP/s", digits)


def trillions(value, digits=1):
    """A count in trillions: ``48.2 T``."""
    return _scaled(_unsigned(value), 1e12, " T", digits)


def billions(value, digits=2):
    """A count in billions: ``8.03 billion``."""
    return _scaled(_unsigned(value), 1e9, " billion", digits)


def millions(value, digits=0):
    """A count in millions: ``24 million``."""
    return _scaled(_unsigned(value), 1e6, " million", digits)


def dollars(value, digits=2):
    """``0.12485`` with 3 digits -> ``"$0.125"``."""
    return _scaled(_unsigned(value), 1, "", digits, prefix="$")


def percent(fraction, digits=0):
    """``0.9608`` -> ``"96 %"`` (a fraction shown as a percentage)."""
    return _scaled(_check.finite("fraction", fraction), 0.01, " %", digits)


def times(value, digits=0):
    """A ratio: ``12.05`` -> ``"12×"``."""
    return _scaled(_unsigned(value), 1, "×", digits)


def round_to(value, significant=2):
    """Round to ``significant`` figures, as the prose does for "about" numbers (750,911 -> 750,000)."""
    value = _check.finite("value", value)
    significant = int(_check.count("significant", significant, minimum=1))
    if value == 0:
        return 0.0
    return round(value, significant - 1 - math.floor(math.log10(abs(value))))


def ms_significant(value, significant=3):
    """Seconds in milliseconds to ``significant`` figures, for readouts that span decades:
    ``0.028367`` -> ``"28.4 ms"``, ``0.0000277`` -> ``"0.0277 ms"``, ``0.5620`` -> ``"562 ms"``."""
    return _significant(value, 1e3, "ms", significant)


def us_significant(value, significant=3):
    """Seconds in microseconds to ``significant`` figures: ``0.0000912`` -> ``"91.2 µs"``, ``5.53e-6``
    with 2 figures -> ``"5.5 µs"``."""
    return _significant(value, 1e6, "µs", significant)


def _significant(value, scale, unit, significant):
    value = _check.finite("value", value, minimum=0)
    significant = int(_check.count("significant", significant, minimum=1))
    shown = round_to(value * scale, significant)
    # Digits after the point come from the rounded value, so 9.996 shows as 10.0, not 10.00.
    digits = significant - 1 - (math.floor(math.log10(shown)) if shown else 0)
    return Shown(_fixed(shown, max(0, digits)) + " " + unit)


def kib(value, digits=0):
    """Bytes shown in binary kibibytes (1,024), as a cache's per-token size is often quoted: ``128 KiB``."""
    return _scaled(_unsigned(value), 1024, " KiB", digits)
