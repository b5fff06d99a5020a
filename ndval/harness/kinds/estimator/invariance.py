"""Kind ``estimator.invariance``: the estimator twice (variants a and b), every number side by side."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field

from ndval.harness.kinds import KindParams, RunContext, register_kind
from ndval.harness.kinds.estimator.common import (
    EstimatorParams,
    build_config,
    estimator_api,
    requires_api,
    row_label,
)
from ndval.harness.results import RunResult

Compared = Literal["memory", "perf"]
COMPARED: tuple[Compared, ...] = ("memory", "perf")


class Variant(KindParams):
    preset: Literal["legacy", "fixed", "none"] = "none"
    options: dict[str, Any] = Field(default_factory=dict)
    set: dict[str, Any] = Field(default_factory=dict)


class InvarianceParams(EstimatorParams):
    a: Variant = Field(description="first variant (column a)")
    b: Variant = Field(description="second variant (column b)")
    compare: list[Compared] = Field(default_factory=lambda: list(COMPARED))


def _flatten_results(est: Any, cfg: Any, compare: list[Compared]) -> dict[str, float]:
    out: dict[str, float] = {}
    if "memory" in compare:
        for s in est.estimate_memory(cfg).stages:
            for name, value in s.components.items():
                out[f"stage{s.stage}.{name}_mb"] = float(value)
    if "perf" in compare:
        rep = est.estimate_perf(cfg)
        out |= {f"perf.{k}": float(v) for k, v in rep.real_parts.items()}
        out |= {f"perf.{k}": float(v) for k, v in rep.perf_parts.items()}
    return out


@register_kind("estimator.invariance", params=InvarianceParams,
               requires=requires_api("load_config", "estimate_memory", "estimate_perf", "presets"))
def run_invariance(ctx: RunContext[InvarianceParams]) -> RunResult:
    """The estimator twice (variants a and b); one row per memory component / time part with columns a, b."""
    params: InvarianceParams = ctx.params
    est = estimator_api("estimate_memory", "estimate_perf")
    table: list[dict[str, Any]] = []
    for i, row in enumerate(ctx.rows or [{}]):
        values = []
        for v in (params.a, params.b):
            variant = params.model_copy(update={"preset": v.preset, "options": params.options | v.options,
                                                "set": params.set | v.set})
            values.append(_flatten_results(est, build_config(variant, row, ctx), params.compare))
        label = row_label(params, row, i)
        for key in sorted(set(values[0]) | set(values[1])):
            table.append({"config": label, "item": key, "a": values[0].get(key, math.nan), "b": values[1].get(key, math.nan)})
    return RunResult(table=table, golden=None)
