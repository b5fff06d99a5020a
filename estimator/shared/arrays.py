"""Scalar-or-array helpers: the formulas of the estimator are written once, over numbers that may be
Python scalars (one config, the scalar path) or numpy arrays (one value per layout, the batched
search, :mod:`estimator.search.batched`). Arithmetic already works on both; these helpers cover the
comparisons a formula needs, returning a Python scalar for scalar inputs (outputs stay identical)
and an array otherwise.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import numpy as np

#: the numpy array type, typed ``Any`` so that ``type(x) is ARRAY`` type-checks on a number (a fast
#: single-value test for the scalar path's hot formulas)
ARRAY: Any = np.ndarray
#: a number type; an array of layouts passes for it (the formulas are typed for one config)
N = TypeVar("N", int, float)


def is_array(*values: Any) -> bool:
    """True when any of ``values`` is a numpy array."""
    for v in values:  # noqa: SIM110  # a loop: twice as fast as any() on the scalar path
        if type(v) is np.ndarray:
            return True
    return False


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


def as_float(x: float) -> float:
    """``float(x)`` elementwise (an array becomes float64)."""
    if is_array(x):
        return cast(float, np.asarray(x, dtype=np.float64))
    return float(x)


def any_true(condition: Any) -> bool:
    """``bool(condition)`` for a scalar; True when any element is true for an array."""
    if type(condition) is np.ndarray:
        return bool(condition.any())
    return bool(condition)


def all_true(condition: Any) -> bool:
    """``bool(condition)`` for a scalar; True when every element is true for an array."""
    if type(condition) is np.ndarray:
        return bool(condition.all())
    return bool(condition)


def max_of(values: Sequence[N]) -> N:
    """``max(values)`` elementwise over a sequence (for scalars exactly the builtin)."""
    if is_array(*values):
        return cast(N, functools.reduce(np.maximum, cast(Sequence[Any], values)))
    return max(values)


#: choices numpy's ``choose`` takes at once (NPY_MAXARGS of numpy 1.x)
CHOOSE_MAX = 32


def pick(index: int, values: Sequence[N]) -> N:
    """``values[index]`` elementwise: for an array of indices, row ``r`` takes ``values[index[r]][r]``."""
    if not is_array(index):
        return values[index]
    if len(values) <= CHOOSE_MAX:
        return cast(N, np.choose(index, values))
    n = np.size(index)
    rows = np.stack([np.broadcast_to(np.asarray(v, dtype=np.float64), (n,)) for v in values])
    return cast(N, rows[index, np.arange(n)])


def divide_or_nan(num: float, den: float) -> float:
    """``num / den`` where ``den > 0``, NaN elsewhere (no division by zero is evaluated)."""
    if not is_array(num, den):
        return num / den if den > 0 else float("nan")
    num_b, den_b = np.broadcast_arrays(np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64))
    out = np.full(num_b.shape, np.nan)
    np.divide(num_b, den_b, out=out, where=den_b > 0)
    return cast(float, out)


def unique_rows(*columns: Any) -> tuple[list[np.ndarray], np.ndarray]:
    """The distinct rows of ``columns`` (numbers or arrays over the same layouts): one array per column
    holding each distinct combination once, and for each layout the index of its combination (so
    ``reduced[j][inverse]`` gives column ``j`` back). Vectorised: each column is coded by its
    distinct values and the codes combined into one integer per layout."""
    full = np.broadcast_arrays(*(np.asarray(c) for c in columns))
    code = np.zeros(full[0].shape, dtype=np.int64)
    radix = 1
    for c in full:
        if c.ndim and np.all(c == c.flat[0]):  # the same in every layout: no digit
            continue
        values, index = np.unique(c, return_inverse=True)
        if radix * len(values) >= 2**62:  # re-code to < number of layouts: no overflow
            code, radix = np.unique(code, return_inverse=True)[1].reshape(code.shape), code.size
        code, radix = code * len(values) + index.reshape(c.shape), radix * len(values)
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    return [c.reshape(-1)[first] for c in full], inverse.reshape(-1)


def per_unique(fn: Callable[..., tuple[float, ...]], *args: Any) -> tuple[Any, ...]:
    """``fn(*args)`` for scalar arguments; for arrays (one value per layout), ``fn`` called once per
    distinct combination of the arguments' values (as Python ``int``/``bool``/``float``,
    :func:`unique_rows`) and each returned number spread to its layouts. For formulas over a few
    small degrees (kernel counts by tp, cp, ep) whose rules are tables, not arithmetic."""
    if not any(type(a) is np.ndarray for a in args):
        return fn(*args)
    reduced, inverse = unique_rows(*args)
    rows = zip(*(c.tolist() for c in reduced), strict=True)
    results = np.array([fn(*row) for row in rows], dtype=np.float64)
    spread = results[inverse]
    return tuple(spread[:, j] for j in range(spread.shape[1]))
