"""Argument checks shared by every public function.

Each check takes the argument's name so the error can say which argument was wrong
and what it got. Numbers and numpy arrays both pass through, so a caller can sweep a
thousand points in one call.
"""
from __future__ import annotations

import math
import numbers

import numpy as np


def number(name, value, *, minimum=None, above=None, maximum=None, integer=False, allow_inf=False):
    """Return ``value`` as a float or a float array after checking it.

    ``minimum`` is inclusive, ``above`` exclusive, ``maximum`` inclusive. Python and numpy
    numbers (integers included) pass; strings, booleans, None, complex numbers, NaN and
    (unless ``allow_inf``, for a limit that may be "none") infinities are refused with the
    argument's name and value.
    """
    if type(value) in (int, float):  # the common case, checked without numpy (ten times faster)
        return _scalar(name, value, minimum, above, maximum, integer, allow_inf)
    if isinstance(value, (bool, np.bool_)) or value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a number or an array of numbers, got {value!r}")
    if isinstance(value, numbers.Number):
        if not isinstance(value, numbers.Real):
            raise TypeError(f"{name} must be a real number, got {value!r}")
        try:
            array = np.asarray(value, dtype=float)
        except (OverflowError, ValueError, TypeError) as error:
            raise ValueError(f"{name} must be a finite number, got {value!r}") from error
    else:
        try:
            array = np.asarray(value)
        except Exception as error:  # ragged lists and the like
            raise TypeError(f"{name} must be a number or an array of numbers, got {value!r}") from error
        if array.dtype.kind not in "iuf":
            raise TypeError(f"{name} must be a number or an array of numbers, got {value!r}")
        if array.dtype.kind in "iu":  # whole and finite already: only the bounds are left to check
            return _bounded(name, value, array.astype(float), minimum, above, maximum)
        array = array.astype(float)
    if np.isnan(array).any():
        raise ValueError(f"{name} must not be NaN, got {value!r}")
    if not allow_inf and np.isinf(array).any():
        raise ValueError(f"{name} must be finite, got {value!r}")
    if integer and not np.all(np.isinf(array) | (array == np.round(array))):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    return _bounded(name, value, array, minimum, above, maximum)


def _scalar(name, value, minimum, above, maximum, integer, allow_inf):
    """``number`` for a plain int or float: the same checks, the same messages."""
    try:
        scalar = float(value)
    except OverflowError as error:
        raise ValueError(f"{name} must be a finite number, got {value!r}") from error
    if math.isnan(scalar):
        raise ValueError(f"{name} must not be NaN, got {value!r}")
    if math.isinf(scalar):
        if not allow_inf:
            raise ValueError(f"{name} must be finite, got {value!r}")
    elif integer and not scalar.is_integer():
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if minimum is not None and scalar < minimum:
        raise ValueError(f"{name} must be at least {minimum:g}, got {value!r}")
    if above is not None and scalar <= above:
        raise ValueError(f"{name} must be greater than {above:g}, got {value!r}")
    if maximum is not None and scalar > maximum:
        raise ValueError(f"{name} must be at most {maximum:g}, got {value!r}")
    return scalar


def _bounded(name, value, array, minimum, above, maximum):
    if minimum is not None and (array < minimum).any():
        raise ValueError(f"{name} must be at least {minimum:g}, got {value!r}")
    if above is not None and (array <= above).any():
        raise ValueError(f"{name} must be greater than {above:g}, got {value!r}")
    if maximum is not None and (array > maximum).any():
        raise ValueError(f"{name} must be at most {maximum:g}, got {value!r}")
    if array.ndim == 0:
        return float(array)
    return array


def positive(name, value):
    return number(name, value, above=0)


def count(name, value, *, minimum=0):
    """A whole number of tokens, layers, users... at least ``minimum``."""
    return number(name, value, minimum=minimum, integer=True)


def fraction(name, value):
    """An efficiency: greater than 0 and at most 1."""
    return number(name, value, above=0, maximum=1)


def finite(name, value, *, minimum=None, above=None):
    """A finite number (every check refuses infinities; the name says what the caller wants)."""
    return number(name, value, minimum=minimum, above=above)


def single(name, value, kind="number"):
    """``value`` unchanged where it is one value, not an array: for settings a sweep cannot take
    (a configuration, a simulated server, one request's lengths)."""
    if type(value) in (int, float):  # the common case, without numpy's ndim (which makes an array of it)
        return value
    if np.ndim(value):
        raise TypeError(f"{name} must be a single {kind}, got {value!r}")
    return value


def instance(name, value, kind):
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__name__}, got {value!r}")
    return value
