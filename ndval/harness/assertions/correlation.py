"""Correlation of two columns (Pearson r, Spearman rho), pooled or within groups, or a recorded
coefficient; with n, p-value and a 95 % confidence interval; constant input fails clearly.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ndval.core import stats as ndstats
from ndval.harness.assertions.base import (
    AssertionSpec,
    AssertionUsageError,
    EvalContext,
    column,
    register_assertion,
    row_label,
)
from ndval.harness.results import RECORDED, AssertionResult, RunResult


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
    stat: ClassVar[ndstats.Method]

    def _compute(self, x: np.ndarray, y: np.ndarray) -> tuple[float, float | None, tuple[float, float] | None]:
        c = ndstats.correlation(self.stat, x, y)
        return c.r, c.p_value, c.ci95

    def provenance_of(self, result: RunResult) -> tuple[str, str]:
        """A ``recorded:`` coefficient is another tool's number even when the kind computed the rest."""
        prov, producer = super().provenance_of(result)
        if self.recorded and prov != RECORDED:
            return RECORDED, "recorded coefficient"
        return prov, producer

    def _meets(self, r: float) -> bool:
        return r >= self.min if self.inclusive else r > self.min

    def _expected(self) -> str:
        rule = f"{'>=' if self.inclusive else '>'} {self.min:g}"
        return f"{self.statistic} over groups {rule}" if self.group_by else rule

    def _columns(self) -> tuple[str, str]:
        """The x and y column names (evaluate checks both are given before any use)."""
        if not (self.x and self.y):
            raise AssertionUsageError("give x and y columns, or recorded: with n")
        return self.x, self.y

    def _pairs(self, rows: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
        xs, ys = self._columns()
        x, y = column(rows, xs), column(rows, ys)
        keep = ~(np.isnan(x) | np.isnan(y))
        return x[keep], y[keep]

    def evaluate(self, result: RunResult, ctx: EvalContext) -> AssertionResult:
        rows, gaps = self.rows_and_gaps(result)
        name = self.id or self.type
        expected = self._expected()
        if not rows:  # every row lacks a value the estimate needs: nothing to judge
            return self.gaps_result(gaps, f"{self.method}({self.x}, {self.y})", expected)
        res = self._evaluate_rows(rows, name, expected)
        if gaps:  # listed beside the evidence, counted in the stats (harness.summary lists them)
            res.rows = [*res.rows, *gaps]
            res.stats = {**(res.stats or {}), "n_not_evaluable": len(gaps)}
        return res

    def _evaluate_rows(self, rows: list[dict[str, Any]], name: str, expected: str) -> AssertionResult:
        if self.recorded:
            if self.group_by:
                raise AssertionUsageError("group_by needs x and y columns, not recorded:")
            if len(rows) != 1:
                raise AssertionUsageError(f"recorded: needs exactly one row (where= selected {len(rows)})")
            r = float(column(rows, self.recorded)[0])
            n = self.n
            p = ndstats.r_pvalue(r, n) if n else None
            ci = ndstats.fisher_ci(r, n) if n else None
            target = f"recorded {self.method} {self.recorded} ({row_label(rows[0], None, 0)})"
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
            if ndstats.is_constant(x) or ndstats.is_constant(y):
                which = self.x if ndstats.is_constant(x) else self.y
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
        undefined), is left out and counted — ``ndval.core.stats.grouped``, as in ``estimator.experiments.calibrate.accuracy``.
        """
        missing = [g for g in self.group_by if any(g not in r for r in rows)]
        if missing:
            raise AssertionUsageError(f"group_by: column(s) {missing} not in the result table (have {sorted(rows[0])})")
        keys = [tuple(row[g] for g in self.group_by) for row in rows]
        target = f"{self.method}({self.x}, {self.y}) within groups of {', '.join(self.group_by)}"
        xs, ys = self._columns()
        per_group = ndstats.grouped(self.stat, column(rows, xs), column(rows, ys), keys, self.min_n)
        names = {"constant x": f"constant {self.x}", "constant y": f"constant {self.y}"}
        evidence: list[dict[str, Any]] = []
        for g in per_group:
            label = "/".join(str(k) for k in g.key) if isinstance(g.key, tuple) else str(g.key)
            if g.r is None:
                evidence.append({"group": label, "n": g.n, "r": None, "used": False, "passed": None,
                                 "note": f"left out: {names.get(g.left_out or '', g.left_out)}"})
            else:
                evidence.append({"group": label, "n": g.n, "r": g.r, "p_value": g.p_value, "used": True,
                                 "passed": self._meets(g.r)})
        coeffs = [g.r for g in per_group if g.r is not None]
        n_pairs = sum(g.n for g in per_group)
        left_out = len(per_group) - len(coeffs)
        stats: dict[str, Any] = {"n": n_pairs, "group_by": list(self.group_by), "statistic": self.statistic,
                                 "n_groups": len(coeffs), "n_groups_left_out": left_out}
        if not coeffs:
            return self.make(name, target=target, observed=None, expected=expected, margin=None, passed=False,
                             stats=stats, rows=evidence,
                             message=f"no group of {self.group_by} has {self.min_n}+ finite, non-constant pairs "
                                     f"({len(per_group)} group(s))")
        value = ndstats.summarise(per_group, self.statistic)
        stats |= {"r": value, "median": ndstats.summarise(per_group, "median"),
                  "mean": ndstats.summarise(per_group, "mean"),
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
    stat: ClassVar[ndstats.Method] = "pearson"


@register_assertion
class SpearmanRhoGt(_CorrelationGt):
    """Spearman ρ > min, pooled or summarised within ``group_by`` groups (scipy spearmanr).

    CI of the pooled ρ by Fisher z with the Bonett–Wright 1.03 factor.
    """

    type: Literal["spearman_rho_gt"]
    method: ClassVar[str] = "Spearman rho"
    stat: ClassVar[ndstats.Method] = "spearman"
