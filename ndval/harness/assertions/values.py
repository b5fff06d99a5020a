"""Named values a kind produces (a verdict, the bottleneck, a score) and categorical columns.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ndval.harness.assertions.base import (
    AssertionSpec,
    AssertionUsageError,
    EvalContext,
    register_assertion,
    row_label,
)
from ndval.harness.results import AssertionResult, RunResult


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
        evidence = [{"row": row_label(r, self.label, i), self.column: r[self.column], "passed": r[self.column] in self.allowed}
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


#: the start of a refused row's ``not_evaluable`` reason (an ``estimator.perf`` case with ``refused_rows: report``)
REFUSED_PREFIX = "refused by the estimator: "


@register_assertion
class RefusedRowsLe(AssertionSpec):
    """At most ``max`` of the selected rows refused by the estimator (issue 26: "no row refused" is ``max: 0``);
    the evidence lists every refused row with its reason."""

    type: Literal["refused_rows_le"]
    max: int = Field(0, ge=0)
    label: str | None = None

    def evaluate(self, result: RunResult, ctx: EvalContext) -> AssertionResult:
        rows = self.rows(result)
        refused = [{"row": row_label(r, self.label, i), "reason": str(r["not_evaluable"])[len(REFUSED_PREFIX):],
                    "passed": False}
                   for i, r in enumerate(rows) if str(r.get("not_evaluable") or "").startswith(REFUSED_PREFIX)]
        n = len(refused)
        reasons = "; ".join(f"{e['row']}: {str(e['reason'])[:120]}" for e in refused[:10])
        return self.make(self.id or self.type, target="rows refused", observed=n, expected=f"<= {self.max}",
                         margin=self.max - n, passed=n <= self.max, rows=refused,
                         stats={"n": len(rows), "n_refused": n},
                         message=f"{n} of {len(rows)} rows refused" + (f": {reasons}" if refused else ""))
