"""Row-wise accuracy of an estimate column against a measured column: ratio band, relative and
absolute error, order of magnitude, and the mean absolute percentage error over the rows.
"""

from __future__ import annotations

import math
import statistics
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from ndval.core import stats as ndstats
from ndval.harness.assertions.base import (
    AssertionSpec,
    EvalContext,
    column,
    fmt,
    register_assertion,
    row_label,
)
from ndval.harness.results import AssertionResult, RunResult


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
        rows, gaps = self.rows_and_gaps(result, self.label)
        if not rows:  # every row lacks a value the estimate needs: nothing to judge
            return self.gaps_result(gaps, f"{self.target_text}: {self.estimate} vs {self.measured}", self._expected())
        est, meas = column(rows, self.estimate), column(rows, self.measured)
        values = self._row_values(est, meas)
        evidence, margins, n_ok = [], [], 0
        for i, (row, e, m, v) in enumerate(zip(rows, est, meas, values, strict=True)):
            ok, margin = (False, -math.inf) if math.isnan(v) else self._row_ok(float(v))
            n_ok += ok
            margins.append(margin)
            evidence.append({"row": row_label(row, self.label, i), "estimate": e, "measured": m,
                             "value": v, "passed": ok})
        share = n_ok / len(rows)
        passed = share >= self.mostly - 1e-12
        finite = [float(v) for v in values if not math.isnan(v)]
        stats = {"n": len(rows), "n_passed": n_ok, "share_passed": share, "n_not_evaluable": len(gaps)}
        if finite:
            stats |= {"min": min(finite), "median": statistics.median(finite), "max": max(finite),
                      "mean": statistics.fmean(finite)}
        bad = [r["row"] for r in evidence if not r["passed"]]
        msg = (f"{n_ok}/{len(rows)} rows within {self._expected()}" +
               (f" (need {self.mostly:.0%}); outside: {', '.join(bad[:10])}" if bad else "") +
               (f"; not evaluable: {'; '.join(g['row'] + ': ' + g['not_evaluable'] for g in gaps)}" if gaps else ""))
        observed = (f"{fmt(stats.get('min'))}..{fmt(stats.get('max'))}" if finite else "nan")
        return self.make(self.id or self.type, target=f"{self.target_text}: {self.estimate} vs {self.measured}",
                         observed=observed, expected=self._expected(), margin=min(margins) if margins else None,
                         passed=passed, message=msg, stats=stats, rows=evidence + gaps)


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
        diff: np.ndarray = est - meas
        return diff


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
        rows, gaps = self.rows_and_gaps(result)
        target = f"MAPE {self.estimate} vs {self.measured}"
        if not rows:  # every row lacks a value the estimate needs: nothing to judge
            return self.gaps_result(gaps, target, f"<= {self.max:g}")
        est, meas = column(rows, self.estimate), column(rows, self.measured)
        ok = (meas > 0) & ~np.isnan(est)
        gap_text = f"; not evaluable: {'; '.join(g['row'] + ': ' + g['not_evaluable'] for g in gaps)}" if gaps else ""
        if not ok.any():
            return self.make(self.id or self.type, target=target,
                             observed=None, expected=f"<= {self.max:g}", margin=None, passed=False,
                             message="no row with a positive measurement and a finite estimate" + gap_text, rows=gaps)
        errors = (est[ok] - meas[ok]) / meas[ok]
        mape = ndstats.mape(est[ok], meas[ok])
        stats = {"n": int(ok.sum()), "mape": mape, "mean_signed_error": float(np.mean(errors)),
                 "median_signed_error": float(np.median(errors))}
        if gaps:
            stats["n_not_evaluable"] = len(gaps)
        return self.make(self.id or self.type, target=target,
                         observed=mape, expected=f"<= {self.max:g}", margin=self.max - mape,
                         passed=mape <= self.max, stats=stats,
                         message=f"MAPE {mape:.3f} over {stats['n']} rows (limit {self.max:g}); "
                                 f"mean signed error {stats['mean_signed_error']:+.3f}" + gap_text, rows=gaps)
