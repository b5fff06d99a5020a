"""Kind ``estimator.memory``: per-row peak memory beside the measurement, like for like."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ndval.core.units import BYTES_PER_MIB, MIB_PER_GIB
from ndval.harness import subjects
from ndval.harness.kinds import KindError, RunContext, register_kind
from ndval.harness.kinds.estimator.common import (
    EstimatorParams,
    RowNotEvaluable,
    RowRefused,
    build_config,
    call_subject,
    measured_value,
    not_evaluable_row,
    record_gap,
    requires_api,
    row_label,
)
from ndval.harness.results import RunResult

STATIC = ("params", "optimizer_states", "grads")

def stage_for_rank(report: Any, measured_rank: str) -> Any:
    """The stage a measurement refers to (``estimator.experiments.measured.stage_for_rank``); KindError when absent."""
    from estimator.experiments.measured import stage_for_rank as _stage_for_rank

    try:
        return _stage_for_rank(report, measured_rank)
    except ValueError as exc:
        raise KindError(str(exc)) from None


def estimate_for_measurement(report: Any, measured_kind: str, measured_rank: str) -> tuple[float, str]:
    """(estimate MiB, what it is), like for like (``estimator.experiments.measured.estimate_for_measurement``:
    ``max_reserved`` rows are compared with the stage's reserved estimate)."""
    from estimator.experiments.measured import estimate_for_measurement as _estimate_for_measurement

    stage = stage_for_rank(report, measured_rank)
    kind = (measured_kind or "max_allocated").strip()
    needed = {"allocated_steady": STATIC, "params_optimizer": STATIC, "activations": ("activations",)}.get(kind, ())
    missing = [k for k in needed if k not in stage.components]
    if missing:
        raise KindError(f"measured_kind {kind!r} needs the estimate's components {missing} (stage {stage.stage} "
                        f"has {sorted(stage.components) or 'none'})")
    try:
        return _estimate_for_measurement(report, measured_kind, measured_rank)
    except ValueError as exc:
        raise KindError(str(exc)) from None


def _not_evaluable_row(params: EstimatorParams, row: dict[str, Any], label: str, reason: str) -> dict[str, Any]:
    """A table row for a measured row the estimate cannot be made for (:func:`common.not_evaluable_row`)."""
    measured = (float(row["measured_gib"]) * MIB_PER_GIB
                if params.from_measured and row.get("measured_gib") not in (None, "") else None)
    return not_evaluable_row(params, row, label, reason, {"measured_mb": measured})


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
    compare: Literal["measured", "device"] = Field(
        "measured", description="measured: each row's measurement, like for like; device: each row is a run that "
                                "ran (e.g. a step-time row), so its estimated peak must fit its device: device_mb "
                                "(the hardware's memory), fits_device = peak_mb <= device_mb")


@register_kind("estimator.memory", params=MemoryParams, requires=requires_api("load_config", "estimate_memory", "presets"))
def run_memory(ctx: RunContext[MemoryParams]) -> RunResult:
    """Estimator memory model on N configs: estimate_mb per row beside the measurement (MiB)."""
    params: MemoryParams = ctx.params
    subject = ctx.subject or subjects.resolve(subjects.BUILTIN)
    rows = ctx.rows or [{}]
    table: list[dict[str, Any]] = []
    golden: dict[str, Any] = {}
    notes: list[str] = []
    for i, row in enumerate(rows):
        label = row_label(params, row, i)
        try:
            cfg = build_config(params, row, ctx)
        except RowNotEvaluable as exc:
            record_gap(table, notes, _not_evaluable_row(params, row, label, str(exc)))
            continue
        except RowRefused as exc:  # a run that ran but the estimator refuses: listed (its perf case counts it)
            if params.compare != "device":
                raise
            record_gap(table, notes, _not_evaluable_row(params, row, label, f"refused: {exc}"))
            continue
        report = call_subject(subject.memory, cfg, label, notes)
        out: dict[str, Any] = {"config": label}
        out |= {k: row[k] for k in ("ep", "tp", "dp", "pp", "measured_kind", "measured_rank", "source_id") if k in row}
        if params.compare == "device":
            device_mb = getattr(report, "hbm_mb", None)
            if device_mb is None:
                raise KindError(f"compare: device needs the memory report's hbm_mb (the device's memory); "
                                f"subject {subject.name!r} gives none")
            out["estimate_mb"], out["estimate_of"] = report.peak_mb, "peak over stages"
            out["device_mb"], out["fits_device"] = device_mb, bool(report.peak_mb <= device_mb)
        elif params.from_measured:
            from estimator.experiments.measured import measured_kind_of

            value, what = estimate_for_measurement(report, measured_kind_of(row), row.get("measured_rank", ""))
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
