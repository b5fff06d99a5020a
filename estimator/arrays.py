"""Scalar-or-array helpers: the formulas of the estimator are written once, over numbers that may be
Python scalars (one config, the scalar path) or numpy arrays (one value per layout, the batched
search, :mod:`estimator.search.batched`). Arithmetic already works on both; these helpers cover the
comparisons a formula needs, returning a Python scalar for scalar inputs (outputs stay identical)
and an array otherwise.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar, cast

import numpy as np

#: a number type; an array of layouts passes for it (the formulas are typed for one config)
N = TypeVar("N", int, float)


def is_array(*values: Any) -> bool:
    """True when any of ``values`` is a numpy array."""
    return any(isinstance(v, np.ndarray) for v in values)


def minimum(a: N, b: N) -> N:
    """``min(a, b)`` elementwise (for scalars exactly the builtin: the first of equal values)."""
    if type(a) is np.ndarray or type(b) is np.ndarray:
        return cast(N, np.minimum(a, b))
    return b if b < a else a


def maximum(a: N, b: N) -> N:
    """``max(a, b)`` elementwise (for scalars exactly the builtin: the first of equal values)."""
    if type(a) is np.ndarray or type(b) is np.ndarray:
        return cast(N, np.maximum(a, b))
    return b if b > a else a


def where(condition: Any, a: N, b: N) -> N:
    """``a if condition else b`` elementwise."""
    if type(condition) is np.ndarray or type(a) is np.ndarray or type(b) is np.ndarray:
        return cast(N, np.where(condition, a, b))
    return a if condition else b


def gcd(a: int, b: int) -> int:
    """``math.gcd(a, b)`` elementwise (integers)."""
    if is_array(a, b):
        return cast(int, np.gcd(a, b))
    return math.gcd(a, b)
