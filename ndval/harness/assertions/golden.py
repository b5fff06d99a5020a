"""The kind's golden payload against its golden file (the engine is ``ndval.harness.golden``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ndval.harness.assertions.base import AssertionSpec, AssertionUsageError, EvalContext, register_assertion
from ndval.harness.results import AssertionResult, RunResult


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
