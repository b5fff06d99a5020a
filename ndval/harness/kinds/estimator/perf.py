"""Kind ``estimator.perf``: the step-time model per row, optionally after a declared calibration step."""

from __future__ import annotations

import importlib
import math
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import Field

from ndval.core.units import MS_PER_S
from ndval.harness import subjects
from ndval.harness.assertions.values import REFUSED_PREFIX
from ndval.harness.kinds import KindError, KindParams, RunContext, register_kind
from ndval.harness.kinds.estimator import host_cost
from ndval.harness.kinds.estimator.common import (
    EstimatorParams,
    RowNotEvaluable,
    RowRefused,
    build_config,
    call_subject,
    estimator_api,
    measured_value,
    not_evaluable_row,
    record_gap,
    requires_api,
    row_label,
)
from ndval.harness.results import RunResult

#: the step-time components, one list for the kind and the subjects' ``step_time`` schema
REAL_PARTS = subjects.STEP_TIME_PARTS


class CalibrateSpec(KindParams):
    """A declared calibration step (issue 3: at most one global compute efficiency, fitted on half of the rows).

    Calls ``estimator.experiments.calibrate.calibrate_efficiency`` (the one implementation): the halves are
    ``estimator.experiments.calibrate.split_half`` of each row's ``id_column`` (parity of the first SHA-256
    byte, independent of row order); the efficiency minimising Σ(log est − log meas)² over the
    ``fit`` half is applied to every row, and each row is marked ``half: fit | holdout`` so the
    assertions can be evaluated on the held-out half (``where: {half: holdout}``).
    """

    fit: Literal["compute_efficiency"] = Field(description="the one global knob fitted (options.compute_efficiency)")
    split: Literal["half"] = Field("half", description="estimator.experiments.calibrate.split_half of id_column")
    fit_on: Literal["fit"] = Field("fit", description="the half the knob is fitted on; figures are reported on the other "
                                                     "(not `on:` — YAML 1.1 reads a bare on as true)")
    id_column: str = Field("case_id", description="data column hashed to choose each row's half")
    group_by: list[str] = Field(default_factory=list, description="data columns of the within-group Spearman "
                                                                  "that estimator.experiments.calibrate reports per half")
    loo_subsample: int = Field(10, ge=1, description="rows of the fit half refitted leave-one-out (LOO MAPE)")


class PerfParams(EstimatorParams):
    """``estimator.perf`` params: the row configs, optional calibration, data columns kept in the table."""

    calibrate: CalibrateSpec | None = Field(None, description="fit one global knob on half the rows first")
    host_launch_cost_from: str | None = Field(
        None, description="profile (relative to the profiles folder) whose measured host time per launch (analyzer "
                          "indicator host_us_per_launch) sets options.host_launch_cost_us on every row (before any "
                          "fit): measured on independent data, not fitted; the case skips when the profile is absent")
    hardware_overlay_from: str | None = Field(
        None, description="hardware overlay (estimator.inputs.overlay: written by ndval calibrate --from-profile, or "
                          "committed with its source), relative to the cases folder; its efficiencies replace the "
                          "preset's on every row (before any fit); an overlay naming another hardware than a row's "
                          "is an error")
    keep_columns: list[str] = Field(default_factory=list, description="data columns copied into the result table "
                                                                      "(e.g. for group_by in assertions)")
    step_from_throughput: bool = Field(
        False, description="a measured row without measured_step_ms is judged against GBS·seq/(tokens/s/GPU·GPUs) "
                           "from its notes (estimator.experiments.recipe_notes.throughput_step_ms)")
    refused_rows: Literal["error", "report"] = Field(
        "error", description="a row the estimator refuses (ConfigError): the case is broken (error), or the row is "
                             "listed as refused with its reason (report; count them with refused_rows_le)")


def read_case_overlay(params: PerfParams, ctx: RunContext) -> Any:
    """The :class:`estimator.inputs.overlay.Overlay` named by ``params.hardware_overlay_from`` (None without one);
    a relative path is taken from the cases folder. A bad overlay is a KindError naming file and field."""
    if not params.hardware_overlay_from:
        return None
    from estimator.config.errors import ConfigError
    from estimator.inputs.overlay import read_overlay

    path = Path(params.hardware_overlay_from)
    if not path.is_absolute() and ctx.cases_root is not None:
        path = ctx.cases_root / path
    try:
        return read_overlay(path)
    except ConfigError as exc:
        raise KindError(f"hardware_overlay_from: {exc}") from None


def row_config(params: PerfParams, row: dict[str, Any], ctx: RunContext, extra: dict[str, Any],
               overlay: Any = None) -> Any:
    """:func:`build_config` of one row with the case's overlay (if any) applied to its hardware."""
    cfg = build_config(params, row, ctx, extra)
    if overlay is None:
        return cfg
    from estimator.config.errors import ConfigError
    from estimator.inputs.hardware import resolve_preset_name
    from estimator.inputs.overlay import overlay_config

    if overlay.hardware and resolve_preset_name(overlay.hardware) != resolve_preset_name(cfg.hardware.name):
        raise KindError(f"hardware_overlay_from: {overlay.file}: measured on {overlay.hardware!r}, row "
                        f"{row_label(params, row, 0)!r} runs on {cfg.hardware.name!r}")
    try:
        return overlay_config(cfg, overlay)
    except ConfigError as exc:
        raise KindError(f"hardware_overlay_from: {exc}") from None


def overlay_record(name: str, overlay: Any) -> dict[str, Any]:
    """What the sign-off shows of an applied overlay: ``name`` (as the case gives it), hardware, the
    fields it sets and their sources."""
    return {"file": name, "hardware": overlay.hardware, "source": overlay.source, "fields": overlay.fields(),
            "values": overlay.values(), "sources": overlay.sources()}


def _stated_step_ms(params: EstimatorParams, row: dict[str, Any]) -> float | None:
    """A measured row's ``measured_step_ms`` (None when not a measured row or the cell is empty); with
    ``step_from_throughput`` the step derived from a throughput-only row's tokens/s/GPU."""
    if params.from_measured and row.get("measured_step_ms") not in (None, ""):
        return float(row["measured_step_ms"])
    if params.from_measured and isinstance(params, PerfParams) and params.step_from_throughput:
        from estimator.experiments.recipe_notes import throughput_step_ms

        return throughput_step_ms({k: "" if v is None else str(v) for k, v in row.items()})
    return None


def _measured_step_ms(params: EstimatorParams, row: dict[str, Any]) -> float | None:
    """The step time a row is judged against: its stated ``measured_step_ms``, else its ``measured`` value."""
    stated = _stated_step_ms(params, row)
    return stated if stated is not None else measured_value(params, row)


def calibrate_rows(params: PerfParams, rows: list[dict[str, Any]], ctx: RunContext,
                   host: dict[str, Any] | None = None, overlay: Any = None) -> tuple[float, list[str], dict[str, Any]]:
    """(fitted efficiency, each row's half, the calibration record) through ``estimator.experiments.calibrate``;
    ``host`` (a :func:`measured_host_launch_cost` record, not fitted) sets the host cost of every row and
    ``overlay`` (:func:`read_case_overlay`) its hardware efficiencies."""
    fixed = host_cost.host_options(host)
    try:
        calibrate = importlib.import_module("estimator.experiments.calibrate")
    except ImportError as exc:
        raise KindError(f"estimator.experiments.calibrate is not importable: {exc}") from None
    spec = params.calibrate
    assert spec is not None
    missing = [c for c in (spec.id_column, *spec.group_by) if any(c not in r for r in rows)]
    if missing:
        raise KindError(f"calibrate: column(s) {missing} not in the data (have {sorted(rows[0]) if rows else []})")
    halves = [calibrate.split_half(str(r[spec.id_column])) for r in rows]
    built = {i: _config_or_gap(params, r, ctx, fixed, overlay) for i, r in enumerate(rows)
             if (_measured_step_ms(params, r) or 0.0) > 0}
    used = [i for i, cfg in built.items() if not isinstance(cfg, str)]  # not-evaluable rows are not fitted on
    cfgs = [built[i] for i in used]
    estimate = calibrate.efficiency_estimator(cfgs)
    ids = [str(rows[i][spec.id_column]) for i in used]
    measured_s = [(_measured_step_ms(params, rows[i]) or 0.0) / MS_PER_S for i in used]  # used: all > 0
    groups = ["|".join(str(rows[i][c]) for c in spec.group_by) for i in used]
    try:
        cal = calibrate.calibrate_efficiency(estimate, ids, measured_s, groups, spec.loo_subsample)
    except ValueError as exc:
        raise KindError(f"calibrate: {exc}") from None
    record = {
        "fitted": spec.fit, "value": cal.efficiency, "bounds": [calibrate.EFF_MIN, calibrate.EFF_MAX],
        "method": "estimator.experiments.calibrate.calibrate_efficiency: least squares of log(est) - log(meas) on the fit half "
                  f"(bounded Brent); halves by estimator.experiments.calibrate.split_half({spec.id_column})",
        "rows_fit": cal.fit_rows, "rows_holdout": cal.holdout_rows, "rows_unmeasured": len(rows) - len(built),
        "group_by": list(spec.group_by), "fit": cal.fit.as_dict(), "holdout": cal.holdout.as_dict(),
        "holdout_at_peak": cal.uncalibrated_holdout.as_dict(), "loo_mape_pct_fit_half": cal.loo_mape_pct,
        "loo_subsample": spec.loo_subsample,
        "host_launch_cost": host or host_cost.HOST_DEFAULT,
    }
    if len(built) > len(used):
        record["rows_not_evaluable"] = len(built) - len(used)
    return cal.efficiency, halves, record


def _config_or_gap(params: PerfParams, row: dict[str, Any], ctx: RunContext, extra: dict[str, Any],
                   overlay: Any) -> Any:
    """The row's config, or the reason it is not evaluable (a str: a value the estimate needs is not stated)."""
    try:
        return row_config(params, row, ctx, extra, overlay)
    except RowNotEvaluable as exc:
        return str(exc)
    except RowRefused as exc:
        if params.refused_rows != "report":
            raise
        return f"{REFUSED_PREFIX}{exc}"


def _measured_columns(params: PerfParams, row: dict[str, Any]) -> dict[str, float | None]:
    """The measurement columns of a row's table entry (``measured_step_ms`` for measured rows, ``measured``)."""
    return {"measured_step_ms": _stated_step_ms(params, row), "measured": measured_value(params, row)}


def _table_row(params: PerfParams, row: dict[str, Any], label: str, report: Any,
               fit_columns: dict[str, Any]) -> dict[str, Any]:
    """One result row: layout and kept columns, RealParts (s), TOTAL (ms), the calibration's
    ``fit_columns`` (half, TOTAL at peak), straggler, the measurement."""
    out: dict[str, Any] = {"config": label}
    out |= {k: row[k] for k in ("ep", "tp", "dp", "pp", "source_id") if k in row}
    for col in params.keep_columns:
        if col not in row:
            raise KindError(f"keep_columns: column {col!r} not in the data (have {sorted(row)})")
        out[col] = row[col]
    for part in REAL_PARTS:
        if part in report.real_parts:  # a subject's results may give TOTAL only
            out[f"{part}_s"] = float(report.real_parts[part])
    out["total_ms"] = out["TOTAL_s"] * MS_PER_S
    out |= fit_columns
    out["straggler_stage"] = report.straggler_stage
    return out | {k: v for k, v in _measured_columns(params, row).items() if v is not None}


def _golden(report: Any) -> dict[str, Any]:
    return {"real_parts": dict(report.real_parts), "perf_parts": dict(report.perf_parts),
            "stage_times_s": list(report.stage_times_s), "straggler_stage": report.straggler_stage,
            "unit": report.unit}


@register_kind("estimator.perf", params=PerfParams, requires=requires_api("load_config", "estimate_perf", "presets"))
def run_perf(ctx: RunContext[PerfParams]) -> RunResult:
    """Estimator step-time model on N configs: RealParts (s) per row, TOTAL in ms beside measured step ms.

    With ``calibrate``: one global compute efficiency is fitted on the ``fit`` half first
    (``estimator.experiments.calibrate``) and every row is estimated with it; ``half`` marks each row and
    ``total_at_peak_ms`` keeps the uncalibrated TOTAL (efficiency 1.0) beside it. With
    ``hardware_overlay_from`` every row's hardware efficiencies come from that overlay. A measured row
    lacking a value the estimate needs is a *not evaluable* row (the column named, counted and listed),
    never broken input.
    """
    params: PerfParams = ctx.params
    est = estimator_api("estimate_perf")
    subject = ctx.subject or subjects.resolve(subjects.BUILTIN)
    if not subject.builtin and (params.calibrate is not None or params.host_launch_cost_from):
        pytest.skip(f"subject {subject.name!r}: this case's calibrate / host_launch_cost_from steps set knobs of "
                    "ndval's own model (use --subject ndval)")
    rows = ctx.rows or [{}]
    values: dict[str, Any] = {}
    halves: list[str | None] = [None] * len(rows)
    host = host_cost.measured_host_launch_cost(params.host_launch_cost_from) if params.host_launch_cost_from else None
    extra: dict[str, Any] = host_cost.host_options(host)
    if host is not None:
        values["host_launch_cost"] = host
    overlay = read_case_overlay(params, ctx)
    if overlay is not None:
        values["hardware_overlay"] = overlay_record(str(params.hardware_overlay_from), overlay)
    if params.calibrate is not None:
        eff, fitted_halves, record = calibrate_rows(params, rows, ctx, host, overlay)
        halves = list(fitted_halves)
        extra[params.calibrate.fit] = eff
        values |= {params.calibrate.fit: eff, "calibration": record}
    table: list[dict[str, Any]] = []
    golden: dict[str, Any] = {}
    notes: list[str] = []
    for i, row in enumerate(rows):
        label = row_label(params, row, i)
        cfg = _config_or_gap(params, row, ctx, extra, overlay)
        if isinstance(cfg, str):
            record_gap(table, notes, not_evaluable_row(params, row, label, cfg, _measured_columns(params, row)))
            continue
        report = call_subject(subject.step_time, cfg, label, notes)
        fit_columns: dict[str, Any] = {}
        if halves[i] is not None:
            at_peak = row_config(params, row, ctx, extra | {"compute_efficiency": 1.0}, overlay)
            fit_columns = {"half": halves[i],
                           "total_at_peak_ms": float(est.estimate_perf(at_peak).real_parts["TOTAL"]) * MS_PER_S}
        table.append(_table_row(params, row, label, report, fit_columns))
        golden[label] = _golden(report)
    values["n_finite"] = sum(1 for r in table if math.isfinite(r.get("total_ms", math.nan)))
    gaps = sum(1 for r in table if r.get("not_evaluable"))
    if gaps:
        values["n_not_evaluable"] = gaps
    if params.calibrate is not None:
        cal = values["calibration"]
        notes.append(f"calibration: {cal['fitted']} = {cal['value']:.4f} fitted on {cal['rows_fit']} rows "
                     f"(fit half), figures on {cal['rows_holdout']} held-out rows")
    return RunResult(table=table, golden=golden, values=values, notes=notes, producer=subject.name)
