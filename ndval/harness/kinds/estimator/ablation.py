"""Kind ``estimator.experiments.ablation``: the seed's ablations EXP-1..EXP-4 as a direction table."""

from __future__ import annotations

import importlib
from typing import Any, Literal

from pydantic import Field

from ndval.harness.kinds import KindError, KindParams, RunContext, register_kind
from ndval.harness.kinds.estimator.common import (
    EstimatorParams,
    build_config,
    estimator_api,
    requires_api,
    row_label,
)
from ndval.harness.results import RunResult

Experiment = Literal["EXP-1", "EXP-2", "EXP-3", "EXP-4"]
EXPERIMENTS: tuple[Experiment, ...] = ("EXP-1", "EXP-2", "EXP-3", "EXP-4")


class Exp3(KindParams):
    config: str = Field(description="label of the data row whose EP stays fixed")
    dps: list[int] = Field(min_length=2, description="DP degrees to step through (world size follows)")


class AblationParams(EstimatorParams):
    base: Literal["legacy_seconds", "legacy", "fixed"] = Field(
        "legacy_seconds", description="options the experiments start from (estimator.experiments.ablation.legacy_seconds: "
                                      "the reference before the fixes with EP priced in seconds)")
    experiments: list[Experiment] = Field(default_factory=lambda: list(EXPERIMENTS))
    exp3: Exp3 | None = None


def _ablation_rows(name: str, rows: list[Any]) -> list[dict[str, Any]]:
    keys = ["config", "ep", "tp", "dp", "metric", "before", "after", "direction", "straggler_before", "straggler_after"]
    return [{"experiment": name, **dict(zip(keys, r.as_list(), strict=True))} for r in rows]


@register_kind("estimator.experiments.ablation", params=AblationParams, requires=requires_api("load_config", "estimate_perf"))
def run_ablation(ctx: RunContext[AblationParams]) -> RunResult:
    """The seed's ablations EXP-1..EXP-4 (estimator.experiments.ablation): a direction table, one row per experiment × config."""
    try:
        ablation = importlib.import_module("estimator.experiments.ablation")
    except ImportError as exc:
        raise KindError(f"estimator.experiments.ablation is not importable: {exc}") from None
    est = estimator_api("presets")
    params: AblationParams = ctx.params
    labeled = [(row_label(params, r, i), build_config(params, r, ctx).model_dump(mode="python"))
               for i, r in enumerate(ctx.rows or [{}])]
    base = ablation.legacy_seconds() if params.base == "legacy_seconds" else est.presets.PRESETS[params.base]()
    table: list[dict[str, Any]] = []
    if "EXP-1" in params.experiments:
        table += _ablation_rows("EXP-1", ablation.exp1_ep_comm_removed(labeled, base))
    if "EXP-2" in params.experiments:
        table += _ablation_rows("EXP-2", ablation.exp2_dp_hack_removed(labeled, base))
    if "EXP-3" in params.experiments:
        if params.exp3 is None:
            raise KindError("EXP-3 needs params.exp3: {config: <label>, dps: [...]}")
        cfg = dict(labeled).get(params.exp3.config)
        if cfg is None:
            raise KindError(f"exp3.config {params.exp3.config!r} is not a data row label")
        table += _ablation_rows("EXP-3", ablation.exp3_dp_varied(cfg, params.exp3.dps, base))
    if "EXP-4" in params.experiments:
        for label, ep, tp, dp, straggler, times in ablation.exp4_straggler(labeled, base):
            table.append({"experiment": "EXP-4", "config": label, "ep": ep, "tp": tp, "dp": dp,
                          "metric": "straggler stage", "straggler_before": straggler, "stage_times": times})
    return RunResult(table=table, golden={"rows": table})
