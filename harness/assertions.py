"""The assertion registry: each type is a pydantic model with ``evaluate(result, ctx) -> AssertionResult``.

Types (spec §2): ratio_within, rel_error_le, abs_error_le, mape_le, pearson_r_gt, spearman_rho_gt,
magnitude_within, share_le, monotonic, invariant, verdict_equals, bottleneck_is, score_between,
golden_match. Another module adds a type with ``@register_assertion`` on a subclass of
``AssertionSpec`` whose ``type`` is a ``Literal``; cases can use it as soon as the module is imported
(``harness.kinds`` imports the kind modules, which may register their own assertions).

Row filters: every assertion takes ``where: {column: value | [values]}`` to select table rows.
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Callable
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from harness.results import AssertionResult, RunResult

Severity = Literal["blocker", "major", "minor"]


class AssertionUsageError(Exception):
    """The case asks for something the run result does not have (a column, a value)."""


class EvalContext:
    """What an assertion may need beyond the run result (the golden engine, the case id)."""

    def __init__(self, golden_check: Callable[[RunResult, Any], AssertionResult] | None = None) -> None:
        self.golden_check = golden_check


class AssertionSpec(BaseModel):
    """Fields every assertion has: ``type``, optional ``id``, ``criterion``, ``severity``, ``where``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: str
    id: str | None = Field(None, description="name of this assertion inside the case (default: type#index)")
    criterion: str | None = Field(None, description="acceptance criterion this evidence belongs to, e.g. P1")
    severity: Severity | None = Field(None, description="overrides the case severity for this assertion")
    where: dict[str, Any] = Field(default_factory=dict, description="row filter {column: value or [values]}")
    description: str | None = None

    target_text: ClassVar[str] = ""

    def evaluate(self, result: RunResult, ctx: EvalContext) -> AssertionResult:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- helpers shared by the row-wise types -------------------------------------------------
    def rows(self, result: RunResult) -> list[dict[str, Any]]:
        """Table rows selected by ``where``; an empty selection is a usage error."""
        out = []
        for row in result.table:
            ok = True
            for col, want in self.where.items():
                if col not in row:
                    raise AssertionUsageError(f"where: column {col!r} not in the result table ({sorted(row)})")
                allowed = want if isinstance(want, list) else [want]
                if row[col] not in allowed:
                    ok = False
                    break
            if ok:
                out.append(row)
        if not out:
            raise AssertionUsageError(f"no result rows match where={self.where!r}")
        return out

    def make(self, name: str, **kw: Any) -> AssertionResult:
        return AssertionResult(type=self.type, id=name, criterion=self.criterion, severity=self.severity, **kw)


REGISTRY: dict[str, type[AssertionSpec]] = {}


def register_assertion(cls: type[AssertionSpec]) -> type[AssertionSpec]:
    """Class decorator: register ``cls`` under the literal value of its ``type`` field."""
    literal = cls.model_fields["type"].annotation
    names = getattr(literal, "__args__", ())
    if len(names) != 1:
        raise TypeError(f"{cls.__name__}.type must be a single Literal")
    REGISTRY[names[0]] = cls
    return cls


def _col(rows: list[dict[str, Any]], name: str) -> np.ndarray:
    missing = [r for r in rows if name not in r]
    if missing:
        raise AssertionUsageError(f"column {name!r} not in the result table (have {sorted(rows[0])})")
    try:
        return np.array([np.nan if r[name] is None else float(r[name]) for r in rows], dtype=float)
    except (TypeError, ValueError) as exc:
        raise AssertionUsageError(f"column {name!r} is not numeric: {exc}") from None


def _label(row: dict[str, Any], label: str | None, i: int) -> str:
    if label and label in row:
        return str(row[label])
    for key in ("id", "config", "case_id", "component", "name"):
        if key in row:
            return str(row[key])
    return f"row{i}"


def _fmt(x: float | None) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4g}"


class _RowWise(AssertionSpec):
    """Compare an ``estimate`` column with a ``measured`` column row by row; ``mostly`` = share that must pass."""

    estimate: str
    measured: str
    mostly: float = Field(1.0, ge=0.0, le=1.0)
    label: str | None = Field(None, description="column naming each row in reports")

    def _row_values(self, est: np.ndarray, meas: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _row_ok(self, value: float) -> tuple[bool, float]:  # pragma: no cover
        raise NotImplementedError

    def _expected(self) -> str:  # pragma: no cover
        raise NotImplementedError

    def evaluate(self, result: RunResult, ctx: EvalContext) -> AssertionResult:
        rows = self.rows(result)
        est, meas = _col(rows, self.estimate), _col(rows, self.measured)
        values = self._row_values(est, meas)
        evidence, margins, n_ok = [], [], 0
        for i, (row, e, m, v) in enumerate(zip(rows, est, meas, values, strict=True)):
            ok, margin = (False, -math.inf) if math.isnan(v) else self._row_ok(float(v))
            n_ok += ok
            margins.append(margin)
            evidence.append({"row": _label(row, self.label, i), "estimate": e, "measured": m,
                             "value": v, "passed": ok})
        share = n_ok / len(rows)
        passed = share >= self.mostly - 1e-12
        finite = [float(v) for v in values if not math.isnan(v)]
        stats = {"n": len(rows), "n_passed": n_ok, "share_passed": share}
        if finite:
            stats |= {"min": min(finite), "median": statistics.median(finite), "max": max(finite),
                      "mean": statistics.fmean(finite)}
        bad = [r["row"] for r in evidence if not r["passed"]]
        msg = (f"{n_ok}/{len(rows)} rows within {self._expected()}" +
               (f" (need {self.mostly:.0%}); outside: {', '.join(bad[:10])}" if bad else ""))
        observed = (f"{_fmt(stats.get('min'))}..{_fmt(stats.get('max'))}" if finite else "nan")
        return self.make(self.id or self.type, target=f"{self.target_text}: {self.estimate} vs {self.measured}",
                         observed=observed, expected=self._expected(), margin=min(margins) if margins else None,
                         passed=passed, message=msg, stats=stats, rows=evidence)


@register_assertion
class RatioWithin(_RowWise):
    """estimate / measured within [lo, hi] for each row (e.g. the seed's 0.85–1.10 band)."""

    type: Literal["ratio_within"]
    lo: float = Field(gt=0)
    hi: float = Field(gt=0)
    target_text: ClassVar[str] = "ratio"

    def _row_values(self, est: np.ndarray, meas: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(meas > 0, est / meas, np.nan)

    def _row_ok(self, value: float) -> tuple[bool, float]:
        return self.lo <= value <= self.hi, min(value - self.lo, self.hi - value)

    def _expected(self) -> str:
        return f"[{self.lo:g}, {self.hi:g}]"


class _ErrorAtMost(_RowWise):
    """A signed per-row error whose magnitude must stay ≤ ``max``: margin = max − |error|."""

    max: float = Field(ge=0)

    def _row_ok(self, value: float) -> tuple[bool, float]:
        return abs(value) <= self.max, self.max - abs(value)

    def _expected(self) -> str:
        return f"|err| <= {self.max:g}"


@register_assertion
class RelErrorLe(_ErrorAtMost):
    """|estimate − measured| / measured ≤ max for each row (signed error kept as the row value)."""

    type: Literal["rel_error_le"]
    target_text: ClassVar[str] = "signed relative error"

    def _row_values(self, est: np.ndarray, meas: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(meas != 0, (est - meas) / np.abs(meas), np.nan)


@register_assertion
class AbsErrorLe(_ErrorAtMost):
    """|estimate − measured| ≤ max (in the columns' unit) for each row."""

    type: Literal["abs_error_le"]
    target_text: ClassVar[str] = "signed absolute error"

    def _row_values(self, est: np.ndarray, meas: np.ndarray) -> np.ndarray:
        return est - meas


@register_assertion
class MagnitudeWithin(_RowWise):
    """Order-of-magnitude check: max(e/m, m/e) ≤ factor (seed P4: EP_WAIT within 10× of measured)."""

    type: Literal["magnitude_within"]
    factor: float = Field(10.0, gt=1)
    target_text: ClassVar[str] = "magnitude factor"

    def _row_values(self, est: np.ndarray, meas: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where((meas > 0) & (est > 0), est / meas, np.nan)
            return np.maximum(ratio, 1.0 / ratio)

    def _row_ok(self, value: float) -> tuple[bool, float]:
        return value <= self.factor, self.factor - value

    def _expected(self) -> str:
        return f"within {self.factor:g}x"


@register_assertion
class MapeLe(AssertionSpec):
    """Mean absolute percentage error over the selected rows: mean(|e − m| / m) ≤ max."""

    type: Literal["mape_le"]
    estimate: str
    measured: str
    max: float = Field(ge=0)

    def evaluate(self, result: RunResult, ctx: EvalContext) -> AssertionResult:
        rows = self.rows(result)
        est, meas = _col(rows, self.estimate), _col(rows, self.measured)
        ok = (meas > 0) & ~np.isnan(est)
        if not ok.any():
            return self.make(self.id or self.type, target=f"MAPE {self.estimate} vs {self.measured}",
                             observed=None, expected=f"<= {self.max:g}", margin=None, passed=False,
                             message="no row with a positive measurement and a finite estimate")
        errors = (est[ok] - meas[ok]) / meas[ok]
        mape = float(np.mean(np.abs(errors)))
        stats = {"n": int(ok.sum()), "mape": mape, "mean_signed_error": float(np.mean(errors)),
                 "median_signed_error": float(np.median(errors))}
        return self.make(self.id or self.type, target=f"MAPE {self.estimate} vs {self.measured}",
                         observed=mape, expected=f"<= {self.max:g}", margin=self.max - mape,
                         passed=mape <= self.max, stats=stats,
                         message=f"MAPE {mape:.3f} over {stats['n']} rows (limit {self.max:g}); "
                                 f"mean signed error {stats['mean_signed_error']:+.3f}")


def _fisher_ci(r: float, n: int, se_scale: float = 1.0, level: float = 0.95) -> tuple[float, float] | None:
    """Fisher-z confidence interval of a correlation: tanh(atanh(r) ± z·s/√(n−3)); None when n ≤ 3."""
    from scipy import stats as st

    if n <= 3 or abs(r) >= 1:
        return None
    z = st.norm.ppf(0.5 + level / 2)
    half = z * se_scale / math.sqrt(n - 3)
    return (math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half))


def _r_pvalue(r: float, n: int) -> float | None:
    """Two-sided p-value of r under H0 ρ=0: t = r·√((n−2)/(1−r²)) with n−2 degrees of freedom."""
    from scipy import stats as st

    if n <= 2 or abs(r) >= 1:
        return None
    t = r * math.sqrt((n - 2) / (1 - r * r))
    return float(2 * st.t.sf(abs(t), n - 2))


class _CorrelationGt(AssertionSpec):
    """Correlation greater than ``min``: from columns ``x``/``y`` (pooled, or summarised over ``group_by``
    groups) or ``recorded`` (a fact) with ``n``."""

    x: str | None = None
    y: str | None = None
    recorded: str | None = Field(None, description="column holding a recorded coefficient (one row selected)")
    n: int | None = Field(None, ge=2, description="sample size behind a recorded coefficient")
    min: float = Field(ge=-1, le=1)
    min_n: int = Field(3, ge=2, description="fewest finite pairs (per group with group_by: smaller groups are left out)")
    inclusive: bool = Field(False, description="rule is r >= min (an issue's '≥') instead of r > min")
    group_by: list[str] = Field(default_factory=list, description="coefficient within each group of equal values of "
                                                                   "these columns, summarised by statistic")
    statistic: Literal["median", "mean", "min"] = Field("median", description="summary of the per-group coefficients "
                                                                              "compared with min (with group_by)")

    method: ClassVar[str] = ""

    def _compute(self, x: np.ndarray, y: np.ndarray) -> tuple[float, float, tuple[float, float] | None]:
        raise NotImplementedError  # pragma: no cover

    def _meets(self, r: float) -> bool:
        return r >= self.min if self.inclusive else r > self.min

    def _expected(self) -> str:
        rule = f"{'>=' if self.inclusive else '>'} {self.min:g}"
        return f"{self.statistic} over groups {rule}" if self.group_by else rule

    def _pairs(self, rows: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
        x, y = _col(rows, self.x), _col(rows, self.y)
        keep = ~(np.isnan(x) | np.isnan(y))
        return x[keep], y[keep]

    def evaluate(self, result: RunResult, ctx: EvalContext) -> AssertionResult:
        rows = self.rows(result)
        name = self.id or self.type
        expected = self._expected()
        if self.recorded:
            if self.group_by:
                raise AssertionUsageError("group_by needs x and y columns, not recorded:")
            if len(rows) != 1:
                raise AssertionUsageError(f"recorded: needs exactly one row (where= selected {len(rows)})")
            r = float(_col(rows, self.recorded)[0])
            n = self.n
            p = _r_pvalue(r, n) if n else None
            ci = _fisher_ci(r, n) if n else None
            target = f"recorded {self.method} {self.recorded} ({_label(rows[0], None, 0)})"
        else:
            if not (self.x and self.y):
                raise AssertionUsageError("give x and y columns, or recorded: with n")
            if self.group_by:
                return self._evaluate_grouped(rows, name, expected)
            x, y = self._pairs(rows)
            n = len(x)
            target = f"{self.method}({self.x}, {self.y})"
            if n < self.min_n:
                return self.make(name, target=target, observed=None, expected=expected, margin=None,
                                 passed=False, message=f"needs at least {self.min_n} finite pairs, got {n}",
                                 stats={"n": n})
            if np.ptp(x) == 0 or np.ptp(y) == 0:
                which = self.x if np.ptp(x) == 0 else self.y
                return self.make(name, target=target, observed=None, expected=expected, margin=None,
                                 passed=False, stats={"n": n},
                                 message=f"constant input: every {which} is {x[0] if which == self.x else y[0]:g}; "
                                         f"{self.method} is undefined")
            r, p, ci = self._compute(x, y)
        stats = {"n": n, "r": r, "p_value": p, "ci95": list(ci) if ci else None}
        ci_txt = f", 95% CI [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
        p_txt = f", p={p:.3g}" if p is not None else ""
        return self.make(name, target=target, observed=r, expected=expected, margin=r - self.min,
                         passed=self._meets(r), stats=stats,
                         message=f"{self.method} = {r:.3f} (n={n}{p_txt}{ci_txt}); rule {expected}")

    def _evaluate_grouped(self, rows: list[dict[str, Any]], name: str, expected: str) -> AssertionResult:
        """The coefficient within each ``group_by`` group, summarised by ``statistic`` (median by default).

        A group with fewer than ``min_n`` finite pairs, or constant in x or y (the coefficient is
        undefined), is left out and counted — the rule of ``estimator.calibrate.accuracy``.
        """
        missing = [g for g in self.group_by if any(g not in r for r in rows)]
        if missing:
            raise AssertionUsageError(f"group_by: column(s) {missing} not in the result table (have {sorted(rows[0])})")
        groups: dict[tuple, list[dict[str, Any]]] = {}
        for row in rows:
            groups.setdefault(tuple(row[g] for g in self.group_by), []).append(row)
        target = f"{self.method}({self.x}, {self.y}) within groups of {', '.join(self.group_by)}"
        coeffs, evidence, n_pairs = [], [], 0
        for key, members in sorted(groups.items(), key=lambda kv: str(kv[0])):
            x, y = self._pairs(members)
            label = "/".join(map(str, key))
            n_pairs += len(x)
            if len(x) < self.min_n:
                evidence.append({"group": label, "n": len(x), "r": None, "used": False,
                                 "passed": None, "note": f"left out: fewer than {self.min_n} finite pairs"})
                continue
            if np.ptp(x) == 0 or np.ptp(y) == 0:
                evidence.append({"group": label, "n": len(x), "r": None, "used": False, "passed": None,
                                 "note": f"left out: constant {self.x if np.ptp(x) == 0 else self.y}"})
                continue
            r, p, _ = self._compute(x, y)
            coeffs.append(r)
            evidence.append({"group": label, "n": len(x), "r": r, "p_value": p, "used": True,
                             "passed": self._meets(r)})
        left_out = len(groups) - len(coeffs)
        stats: dict[str, Any] = {"n": n_pairs, "group_by": list(self.group_by), "statistic": self.statistic,
                                 "n_groups": len(coeffs), "n_groups_left_out": left_out}
        if not coeffs:
            return self.make(name, target=target, observed=None, expected=expected, margin=None, passed=False,
                             stats=stats, rows=evidence,
                             message=f"no group of {self.group_by} has {self.min_n}+ finite, non-constant pairs "
                                     f"({len(groups)} group(s))")
        value = {"median": statistics.median, "mean": statistics.fmean, "min": min}[self.statistic](coeffs)
        stats |= {"r": value, "median": statistics.median(coeffs), "mean": statistics.fmean(coeffs),
                  "min": min(coeffs), "max": max(coeffs),
                  "share_groups_meeting_rule": sum(map(self._meets, coeffs)) / len(coeffs)}
        return self.make(name, target=target, observed=value, expected=expected, margin=value - self.min,
                         passed=self._meets(value), stats=stats, rows=evidence,
                         message=f"{self.statistic} {self.method} within {len(coeffs)} groups = {value:.3f} "
                                 f"(per group {stats['min']:.3f}..{stats['max']:.3f}; "
                                 f"{stats['share_groups_meeting_rule']:.0%} of groups meet {self.min:g}; "
                                 f"{left_out} group(s) left out); rule {expected}")


@register_assertion
class PearsonRGt(_CorrelationGt):
    """Pearson r > min (scipy.stats.pearsonr: statistic, p-value, exact 95 % CI)."""

    type: Literal["pearson_r_gt"]
    method: ClassVar[str] = "Pearson r"

    def _compute(self, x: np.ndarray, y: np.ndarray) -> tuple[float, float, tuple[float, float] | None]:
        from scipy import stats as st

        res = st.pearsonr(x, y)
        ci = res.confidence_interval(0.95) if len(x) > 3 else None
        return float(res.statistic), float(res.pvalue), (float(ci.low), float(ci.high)) if ci else None


@register_assertion
class SpearmanRhoGt(_CorrelationGt):
    """Spearman ρ > min, pooled or summarised within ``group_by`` groups (scipy spearmanr).

    CI of the pooled ρ by Fisher z with the Bonett–Wright 1.03 factor.
    """

    type: Literal["spearman_rho_gt"]
    method: ClassVar[str] = "Spearman rho"

    def _compute(self, x: np.ndarray, y: np.ndarray) -> tuple[float, float, tuple[float, float] | None]:
        from scipy import stats as st

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = st.spearmanr(x, y)
        rho = float(res.statistic)
        return rho, float(res.pvalue), _fisher_ci(rho, len(x), se_scale=1.03)


@register_assertion
class ShareLe(AssertionSpec):
    """No part may exceed ``max`` of ``total`` in any row (seed §7: no single component > 90 % of TOTAL)."""

    type: Literal["share_le"]
    parts: list[str] = Field(min_length=1)
    total: str
    max: float = Field(0.9, gt=0, le=1)
    label: str | None = None

    def evaluate(self, result: RunResult, ctx: EvalContext) -> AssertionResult:
        rows = self.rows(result)
        total = _col(rows, self.total)
        worst, evidence, ok_all = -math.inf, [], True
        for part in self.parts:
            values = _col(rows, part)
            for i, (row, v, t) in enumerate(zip(rows, values, total, strict=True)):
                share = float(v / t) if t > 0 else math.nan
                ok = not math.isnan(share) and share <= self.max
                ok_all &= ok
                worst = max(worst, share) if not math.isnan(share) else worst
                evidence.append({"row": _label(row, self.label, i), "part": part, "share": share, "passed": ok})
        bad = [f"{e['row']}:{e['part']}={e['share']:.0%}" for e in evidence if not e["passed"]]
        return self.make(self.id or self.type, target=f"share of {self.total}", observed=worst,
                         expected=f"each part <= {self.max:.0%}", margin=self.max - worst, passed=ok_all,
                         rows=evidence, stats={"max_share": worst},
                         message=f"largest share {worst:.1%}" + (f"; over the limit: {', '.join(bad[:10])}" if bad else ""))


@register_assertion
class Monotonic(AssertionSpec):
    """``y`` monotonic in ``x`` (per ``group_by`` group); with ``exponent`` k also y·x^(−k) constant within rel_tol.

    Seed P2: routed-expert params/OS/grads scale as 1/EP ⇒ ``direction: decreasing, exponent: -1``.
    """

    type: Literal["monotonic"]
    x: str
    y: str
    direction: Literal["increasing", "decreasing"]
    strict: bool = True
    group_by: list[str] = Field(default_factory=list)
    exponent: float | None = None
    rel_tol: float = Field(1e-6, ge=0)

    def evaluate(self, result: RunResult, ctx: EvalContext) -> AssertionResult:
        rows = self.rows(result)
        groups: dict[tuple, list[dict[str, Any]]] = {}
        for row in rows:
            groups.setdefault(tuple(row.get(g) for g in self.group_by), []).append(row)
        evidence, ok_all, worst = [], True, math.inf
        for key, members in sorted(groups.items(), key=lambda kv: str(kv[0])):
            members = sorted(members, key=lambda r: float(r[self.x]))
            xs, ys = _col(members, self.x), _col(members, self.y)
            steps = np.diff(ys) * (1 if self.direction == "increasing" else -1)
            mono = bool(np.all(steps > 0) if self.strict else np.all(steps >= 0))
            scaled_dev = 0.0
            if self.exponent is not None:
                norm = ys * xs ** (-self.exponent)
                scaled_dev = float(np.max(np.abs(norm / norm[0] - 1))) if norm[0] else math.inf
            ok = mono and scaled_dev <= self.rel_tol
            ok_all &= ok
            worst = min(worst, float(steps.min()) if len(steps) else 0.0)
            evidence.append({"group": "/".join(map(str, key)) or "all", "x": xs.tolist(), "y": ys.tolist(),
                             "monotonic": mono, "scaling_deviation": scaled_dev, "passed": ok})
        law = f" and {self.y} ∝ {self.x}^{self.exponent:g} (rel_tol {self.rel_tol:g})" if self.exponent is not None else ""
        bad = [e["group"] for e in evidence if not e["passed"]]
        return self.make(self.id or self.type, target=f"{self.y} vs {self.x}",
                         observed=[e["y"] for e in evidence], expected=f"{'strictly ' if self.strict else ''}{self.direction}{law}",
                         margin=worst, passed=ok_all, rows=evidence,
                         message=("holds in every group" if ok_all else f"violated in group(s) {', '.join(bad)}") +
                                 "; " + "; ".join(f"{e['group']}: {[round(v, 3) for v in e['y']]}" for e in evidence[:6]))


@register_assertion
class Invariant(AssertionSpec):
    """Column ``a`` equals column ``b`` in every row within rel_tol/abs_tol (e.g. dense model: fixes on ≡ off)."""

    type: Literal["invariant"]
    a: str
    b: str
    rel_tol: float = Field(0.0, ge=0)
    abs_tol: float = Field(0.0, ge=0)
    label: str | None = None

    def evaluate(self, result: RunResult, ctx: EvalContext) -> AssertionResult:
        rows = self.rows(result)
        a, b = _col(rows, self.a), _col(rows, self.b)
        diff = np.abs(a - b)
        limit = np.maximum(self.rel_tol * np.abs(b), self.abs_tol)
        ok = diff <= limit
        evidence = [{"row": _label(r, self.label, i), self.a: x, self.b: y, "diff": d, "passed": bool(o)}
                    for i, (r, x, y, d, o) in enumerate(zip(rows, a, b, diff, ok, strict=True))]
        bad = [e["row"] for e in evidence if not e["passed"]]
        return self.make(self.id or self.type, target=f"{self.a} == {self.b}", observed=float(diff.max()),
                         expected=f"|diff| <= max({self.rel_tol:g}·|b|, {self.abs_tol:g})",
                         margin=float(np.min(limit - diff)), passed=bool(ok.all()), rows=evidence,
                         message=f"{int(ok.sum())}/{len(rows)} rows identical within tolerance"
                                 + (f"; differ: {', '.join(bad[:10])}" if bad else ""))


def _value(result: RunResult, field: str) -> Any:
    if field not in result.values:
        raise AssertionUsageError(f"value {field!r} not produced by this kind (have {sorted(result.values)})")
    return result.values[field]


@register_assertion
class VerdictEquals(AssertionSpec):
    """A named verdict (``values[field]``) equals ``expected``."""

    type: Literal["verdict_equals"]
    field: str
    expected: str | int | float | bool

    def evaluate(self, result: RunResult, ctx: EvalContext) -> AssertionResult:
        got = _value(result, self.field)
        return self.make(self.id or self.type, target=self.field, observed=got, expected=repr(self.expected),
                         margin=None, passed=got == self.expected, message=f"{self.field} = {got!r}, expected {self.expected!r}")


@register_assertion
class ColumnIn(AssertionSpec):
    """Every selected row has ``column`` in ``allowed`` (e.g. EXP-1: BUBBLE direction in {up, same})."""

    type: Literal["column_in"]
    column: str
    allowed: list[str | int | float | bool] = Field(min_length=1)
    label: str | None = None

    def evaluate(self, result: RunResult, ctx: EvalContext) -> AssertionResult:
        rows = self.rows(result)
        if any(self.column not in r for r in rows):
            raise AssertionUsageError(f"column {self.column!r} not in the result table (have {sorted(rows[0])})")
        evidence = [{"row": _label(r, self.label, i), self.column: r[self.column], "passed": r[self.column] in self.allowed}
                    for i, r in enumerate(rows)]
        bad = [f"{e['row']}={e[self.column]}" for e in evidence if not e["passed"]]
        counts: dict[str, int] = {}
        for e in evidence:
            counts[str(e[self.column])] = counts.get(str(e[self.column]), 0) + 1
        return self.make(self.id or self.type, target=self.column, observed=counts, expected=f"in {self.allowed}",
                         margin=None, passed=not bad, rows=evidence,
                         message=(f"all {len(rows)} rows in {self.allowed}" if not bad else f"outside {self.allowed}: {', '.join(bad[:10])}")
                                 + f"; counts {counts}")


@register_assertion
class BottleneckIs(AssertionSpec):
    """The reported bottleneck kind (``values[field]``, default ``bottleneck``) is ``expected``."""

    type: Literal["bottleneck_is"]
    expected: str
    field: str = "bottleneck"

    def evaluate(self, result: RunResult, ctx: EvalContext) -> AssertionResult:
        got = _value(result, self.field)
        return self.make(self.id or self.type, target=self.field, observed=got, expected=self.expected,
                         margin=None, passed=got == self.expected, message=f"bottleneck {got!r}, expected {self.expected!r}")


@register_assertion
class ScoreBetween(AssertionSpec):
    """A named score (``values[field]``) within [lo, hi]."""

    type: Literal["score_between"]
    field: str
    lo: float
    hi: float

    def evaluate(self, result: RunResult, ctx: EvalContext) -> AssertionResult:
        got = float(_value(result, self.field))
        return self.make(self.id or self.type, target=self.field, observed=got, expected=f"[{self.lo:g}, {self.hi:g}]",
                         margin=min(got - self.lo, self.hi - got), passed=self.lo <= got <= self.hi,
                         message=f"{self.field} = {got:.4g}, band [{self.lo:g}, {self.hi:g}]")


@register_assertion
class GoldenMatch(AssertionSpec):
    """The kind's golden payload matches ``golden/<case path>/<id>.yaml`` per field (floats: rel/abs; rest exact)."""

    type: Literal["golden_match"]
    rel: float = Field(1e-6, ge=0)
    abs: float = Field(1e-9, ge=0)

    def evaluate(self, result: RunResult, ctx: EvalContext) -> AssertionResult:
        if result.golden is None:
            raise AssertionUsageError("this kind produces no golden payload")
        if ctx.golden_check is None:
            raise AssertionUsageError("golden engine not available in this context")
        res = ctx.golden_check(result, self)
        res.criterion, res.severity = self.criterion, self.severity
        return res


def describe_types() -> dict[str, str]:
    """type -> first docstring line (for ``ndval lint --list`` and the docs)."""
    return {name: (cls.__doc__ or "").strip().splitlines()[0] for name, cls in sorted(REGISTRY.items())}
