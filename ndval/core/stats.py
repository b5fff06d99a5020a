"""The statistics every part of ndval shares: MAPE, Pearson and Spearman (pooled and grouped).

One rule for input a coefficient cannot be computed on: with fewer than two pairs, or when
either side is constant (every value equal), a correlation is **undefined** and the functions
return NaN (never raise, never guess 0 or 1). Callers that must explain why (an assertion naming the
constant column) test :func:`is_constant` themselves; grouped summaries leave such groups out and
count them.
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as st

Method = Literal["pearson", "spearman"]
#: Bonett–Wright (2000) standard-error factor of Spearman's ρ in the Fisher-z interval
SPEARMAN_SE_SCALE = 1.03


def _floats(values: ArrayLike) -> np.ndarray:
    return np.asarray(values, dtype=float)


def mape(estimated: ArrayLike, measured: ArrayLike) -> float:
    """Mean absolute percentage error as a fraction: ``mean(|est − meas| / meas)``.

    Every measurement must be positive (select rows first); raises ``ValueError`` on empty input
    or a measurement ≤ 0. Multiply by 100 for percent.
    """
    e, m = _floats(estimated), _floats(measured)
    if m.size == 0:
        raise ValueError("mape: no pairs")
    if not np.all(m > 0):
        raise ValueError("mape: every measured value must be > 0")
    return float(np.mean(np.abs(e - m) / m))


def is_constant(values: ArrayLike) -> bool:
    """True when every value is equal (a correlation with this side is undefined)."""
    v = _floats(values)
    return bool(v.size == 0 or np.ptp(v) == 0)


def undefined(x: ArrayLike, y: ArrayLike) -> bool:
    """True when a correlation of ``x`` and ``y`` is undefined: fewer than 2 pairs or a constant side."""
    return len(_floats(x)) < 2 or is_constant(x) or is_constant(y)


@dataclass(frozen=True)
class Correlation:
    """A coefficient with its two-sided p-value and 95 % interval (None when not computable)."""

    r: float
    p_value: float | None
    ci95: tuple[float, float] | None
    n: int


def fisher_ci(r: float, n: int, se_scale: float = 1.0, level: float = 0.95) -> tuple[float, float] | None:
    """Fisher-z interval of a correlation: ``tanh(atanh(r) ± z·s/√(n−3))``; None when n ≤ 3 or |r| = 1."""
    if n <= 3 or abs(r) >= 1:
        return None
    z = st.norm.ppf(0.5 + level / 2)
    half = z * se_scale / math.sqrt(n - 3)
    return (math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half))


def r_pvalue(r: float, n: int) -> float | None:
    """Two-sided p-value of r under H0 ρ=0: ``t = r·√((n−2)/(1−r²))``, n−2 degrees of freedom."""
    if n <= 2 or abs(r) >= 1:
        return None
    t = r * math.sqrt((n - 2) / (1 - r * r))
    return float(2 * st.t.sf(abs(t), n - 2))


def correlation(method: Method, x: ArrayLike, y: ArrayLike) -> Correlation:
    """Pearson r (scipy ``pearsonr``, exact 95 % CI) or Spearman ρ (scipy ``spearmanr``, average ranks,
    Fisher-z CI with the Bonett–Wright factor). ``r`` is NaN when :func:`undefined`."""
    xs, ys = _floats(x), _floats(y)
    n = len(xs)
    if undefined(xs, ys):
        return Correlation(float("nan"), None, None, n)
    if method == "pearson":
        res = st.pearsonr(xs, ys)
        ci = res.confidence_interval(0.95) if n > 3 else None
        return Correlation(float(res.statistic), float(res.pvalue), (float(ci.low), float(ci.high)) if ci else None, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = st.spearmanr(xs, ys)
    rho = float(res.statistic)
    return Correlation(rho, float(res.pvalue), fisher_ci(rho, n, se_scale=SPEARMAN_SE_SCALE), n)


def pearson(x: ArrayLike, y: ArrayLike) -> float:
    """Pearson r of ``x`` and ``y``; NaN when undefined (module rule)."""
    return correlation("pearson", x, y).r


def spearman(x: ArrayLike, y: ArrayLike) -> float:
    """Spearman ρ of ``x`` and ``y`` (average ranks for ties); NaN when undefined (module rule)."""
    return correlation("spearman", x, y).r


@dataclass(frozen=True)
class GroupCorrelation:
    """The coefficient within one group, or why the group was left out (``r`` None then)."""

    key: Hashable
    n: int
    r: float | None
    p_value: float | None
    left_out: str | None


def grouped(method: Method, x: ArrayLike, y: ArrayLike, groups: Sequence[Hashable],
            min_n: int = 3) -> list[GroupCorrelation]:
    """The coefficient within each group of equal ``groups`` keys, groups in ``str(key)`` order.

    NaN pairs are dropped first. A group with fewer than ``min_n`` finite pairs, or constant in x or
    y, is left out with the reason (its coefficient is undefined); summarise the rest with
    :func:`summarise` (median by default).
    """
    xs, ys = _floats(x), _floats(y)
    members: dict[Hashable, list[int]] = {}
    for i, key in enumerate(groups):
        members.setdefault(key, []).append(i)
    out = []
    for key, idx in sorted(members.items(), key=lambda kv: str(kv[0])):
        gx, gy = xs[idx], ys[idx]
        keep = ~(np.isnan(gx) | np.isnan(gy))
        gx, gy = gx[keep], gy[keep]
        if len(gx) < min_n:
            out.append(GroupCorrelation(key, len(gx), None, None, f"fewer than {min_n} finite pairs"))
        elif is_constant(gx) or is_constant(gy):
            out.append(GroupCorrelation(key, len(gx), None, None, "constant " + ("x" if is_constant(gx) else "y")))
        else:
            c = correlation(method, gx, gy)
            out.append(GroupCorrelation(key, len(gx), c.r, c.p_value, None))
    return out


Summary = Literal["median", "mean", "min"]


def summarise(per_group: Sequence[GroupCorrelation], statistic: Summary = "median") -> float:
    """``statistic`` of the coefficients of the groups not left out; NaN when none is left."""
    coeffs = [g.r for g in per_group if g.r is not None]
    if not coeffs:
        return float("nan")
    summaries: dict[str, Callable[[list[float]], float]] = {"median": statistics.median, "mean": statistics.fmean,
                                                            "min": min}
    return float(summaries[statistic](coeffs))
