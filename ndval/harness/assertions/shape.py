"""The shape of a result table: no part over a share of the total, monotonic scaling, two columns
invariant.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import Field

from ndval.harness.assertions.base import AssertionSpec, EvalContext, column, register_assertion, row_label
from ndval.harness.results import AssertionResult, RunResult


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
        total = column(rows, self.total)
        worst, evidence, ok_all = -math.inf, [], True
        for part in self.parts:
            values = column(rows, part)
            for i, (row, v, t) in enumerate(zip(rows, values, total, strict=True)):
                share = float(v / t) if t > 0 else math.nan
                ok = not math.isnan(share) and share <= self.max
                ok_all &= ok
                worst = max(worst, share) if not math.isnan(share) else worst
                evidence.append({"row": row_label(row, self.label, i), "part": part, "share": share, "passed": ok})
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
        groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for row in rows:
            groups.setdefault(tuple(row.get(g) for g in self.group_by), []).append(row)
        evidence, ok_all, worst = [], True, math.inf
        for key, members in sorted(groups.items(), key=lambda kv: str(kv[0])):
            members = sorted(members, key=lambda r: float(r[self.x]))
            xs, ys = column(members, self.x), column(members, self.y)
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
        a, b = column(rows, self.a), column(rows, self.b)
        diff = np.abs(a - b)
        limit = np.maximum(self.rel_tol * np.abs(b), self.abs_tol)
        ok = diff <= limit
        evidence = [{"row": row_label(r, self.label, i), self.a: x, self.b: y, "diff": d, "passed": bool(o)}
                    for i, (r, x, y, d, o) in enumerate(zip(rows, a, b, diff, ok, strict=True))]
        bad = [e["row"] for e in evidence if not e["passed"]]
        return self.make(self.id or self.type, target=f"{self.a} == {self.b}", observed=float(diff.max()),
                         expected=f"|diff| <= max({self.rel_tol:g}·|b|, {self.abs_tol:g})",
                         margin=float(np.min(limit - diff)), passed=bool(ok.all()), rows=evidence,
                         message=f"{int(ok.sum())}/{len(rows)} rows identical within tolerance"
                                 + (f"; differ: {', '.join(bad[:10])}" if bad else ""))
