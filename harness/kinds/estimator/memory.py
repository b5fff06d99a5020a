"""Kind ``estimator.memory``: per-row peak memory beside the measurement, like for like."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from harness import subjects
from harness.kinds import KindError, RunContext, register_kind
from harness.kinds.estimator.common import (
    EstimatorParams,
    build_config,
    measured_value,
    requires_api,
    row_label,
)
from harness.results import RunResult
from ndcore.units import BYTES_PER_MIB, MIB_PER_GIB

STATIC = ("params", "optimizer_states", "grads")


def stage_for_rank(report: Any, measured_rank: str) -> Any:
    """The stage a measurement refers to: ``per_stage:i`` -> stage i, ``last_rank`` -> last stage,
    ``max_over_ranks`` / ``max_over_reported_ranks`` / unstated -> the peak stage (measured README)."""
    rank = (measured_rank or "").strip()
    if rank.startswith("per_stage:"):
        i = int(rank.split(":", 1)[1])
        if i >= len(report.stages):
            raise KindError(f"measured_rank {rank!r} but the estimate has {len(report.stages)} stage(s)")
        return report.stages[i]
    if rank == "last_rank":
        return report.stages[-1]
    return report.stages[report.peak_stage]


def estimate_for_measurement(report: Any, measured_kind: str, measured_rank: str) -> tuple[float, str]:
    """(estimate MiB, what it is) for a measurement of ``measured_kind`` at ``measured_rank``.

    Like for like (measured README): ``max_allocated`` -> stage total (the estimator models
    allocated bytes); ``max_reserved`` -> the same total: the caching allocator's reserve is not
    modelled, so reserved rows are expected to sit above the estimate; ``allocated_steady``
    (after the optimizer step) and ``params_optimizer`` -> params + optimizer states + grads;
    ``activations`` -> the activations component.
    """
    stage = stage_for_rank(report, measured_rank)
    kind = (measured_kind or "max_allocated").strip()
    comp = stage.components
    needed = {"allocated_steady": STATIC, "params_optimizer": STATIC, "activations": ("activations",)}.get(kind, ())
    missing = [k for k in needed if k not in comp]
    if missing:
        raise KindError(f"measured_kind {kind!r} needs the estimate's components {missing} (stage {stage.stage} "
                        f"has {sorted(comp) or 'none'})")
    if kind in ("max_allocated", "max_reserved"):
        return stage.total_mb, f"stage {stage.stage} total"
    if kind in ("allocated_steady", "params_optimizer"):
        return sum(comp[k] for k in STATIC), f"stage {stage.stage} params+optimizer_states+grads"
    if kind == "activations":
        return comp["activations"], f"stage {stage.stage} activations"
    raise KindError(f"unknown measured_kind {kind!r}")


def _routed_static_mb(stage: Any) -> dict[str, float]:
    detail = getattr(stage, "static_detail", None)
    routed = getattr(detail, "routed", None)
    if routed is None:
        return {}
    return {"routed_params_mb": routed.params / BYTES_PER_MIB,
            "routed_optimizer_states_mb": routed.optimizer_states / BYTES_PER_MIB,
            "routed_grads_mb": routed.grads / BYTES_PER_MIB}


class MemoryParams(EstimatorParams):
    stage_columns: bool = Field(True, description="add stage<i>_mb columns")


@register_kind("estimator.memory", params=MemoryParams, requires=requires_api("load_config", "estimate_memory", "presets"))
def run_memory(ctx: RunContext) -> RunResult:
    """Estimator memory model on N configs: estimate_mb per row beside the measurement (MiB)."""
    params: MemoryParams = ctx.params
    subject = ctx.subject or subjects.resolve(subjects.BUILTIN)
    rows = ctx.rows or [{}]
    table, golden, notes = [], {}, []
    for i, row in enumerate(rows):
        cfg = build_config(params, row, ctx)
        try:
            report = subject.memory(cfg)
        except subjects.SubjectError as exc:
            raise KindError(f"row {row_label(params, row, i)!r}: {exc}") from None
        label = row_label(params, row, i)
        notes += [f"{label}: {w}" for w in report.warnings]
        out: dict[str, Any] = {"config": label}
        out |= {k: row[k] for k in ("ep", "tp", "dp", "pp", "measured_kind", "measured_rank", "source_id") if k in row}
        if params.from_measured:
            value, what = estimate_for_measurement(report, row.get("measured_kind", ""), row.get("measured_rank", ""))
            out["estimate_mb"], out["estimate_of"] = value, what
            out["measured_mb"] = float(row["measured_gib"]) * MIB_PER_GIB
        else:
            out["estimate_mb"], out["estimate_of"] = report.peak_mb, "peak over stages"
            measured = measured_value(params, row)
            if measured is not None:
                out["measured_mb"] = measured
        for key in ("recorded_mb", "reference_estimate_mb"):
            if key in row and row[key] not in (None, ""):
                out[key] = float(row[key])
        out["peak_mb"], out["peak_stage"] = report.peak_mb, report.peak_stage
        if params.stage_columns:
            for s in report.stages:
                out[f"stage{s.stage}_mb"] = s.total_mb
        routed = [_routed_static_mb(s) for s in report.stages]
        for key in (routed[0] if routed else {}):
            out[key] = max(r[key] for r in routed)
        table.append(out)
        golden[label] = {k: v for k, v in report.to_dict().items() if k != "warnings"}
    return RunResult(table=table, golden=golden, notes=notes, producer=subject.name)
