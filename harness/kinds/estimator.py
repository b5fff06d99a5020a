"""Estimator kinds: ``estimator.memory``, ``estimator.perf``, ``estimator.invariance``, ``estimator.ablation``.

Each drives the public estimator API (spec §2 of estimator.md): ``load_config``,
``estimate_memory``, ``estimate_perf``, ``presets``; measured rows become configs through
``estimator.measured.config_from_measured_row`` (the one mapping). The estimator is imported
lazily: when it is missing, ``requires`` says so and the case is reported broken while every
other case still runs.
"""

from __future__ import annotations

import copy
import functools
import importlib
import math
from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field

from harness.kinds import KindError, KindParams, RunContext, register_kind
from harness.results import RunResult

MIB_PER_GIB = 1024.0
MS_PER_S = 1000.0
REAL_PARTS = ("COMP", "DP_WAIT", "MP_WAIT", "EP_WAIT", "CP_WAIT", "PP_WAIT", "TOTAL")


def _estimator(*attrs: str) -> Any:
    try:
        mod = importlib.import_module("estimator")
    except ImportError as exc:
        raise KindError(f"the estimator package is not importable: {exc}") from None
    missing = [a for a in attrs if not hasattr(mod, a)]
    if missing:
        raise KindError(f"the estimator API lacks {', '.join(missing)} (spec §2)")
    return mod


def _requires(*attrs: str) -> Callable[[], str | None]:
    def check() -> str | None:
        try:
            _estimator(*attrs)
        except KindError as exc:
            return str(exc)
        return None

    return check


class EstimatorParams(KindParams):
    """How each row becomes an estimator config: base ``config`` (+ ``set`` and ``row_overrides``) or ``from_measured``."""

    config: dict[str, Any] | None = Field(None, description="estimator config (spec §3); model: {ref: models/x.yaml}")
    from_measured: bool = Field(False, description="each data row is a row of the shared measured CSVs")
    profile: str = Field("megatron", description="framework profile for from_measured rows")
    preset: Literal["legacy", "fixed", "none"] = Field("none", description="estimator.presets merged into options")
    options: dict[str, Any] = Field(default_factory=dict, description="options merged after the preset")
    set: dict[str, Any] = Field(default_factory=dict, description="dotted overrides, e.g. parallel.expert_zero3_sharding")
    row_overrides: dict[str, str] = Field(default_factory=dict, description="{dotted.config.path: data column}")
    label: str = Field("config", description="data column naming each row")
    measured: str | None = Field(None, description="data column with the measurement (copied as measured_<unit>)")
    measured_scale: float = Field(1.0, gt=0, description="multiplier to the kind's unit (GiB->MiB: 1024)")


def _row_label(params: EstimatorParams, row: dict[str, Any], i: int) -> str:
    for key in (params.label, "case_id", "config", "id"):
        if row.get(key) not in (None, ""):
            return str(row[key])
    return f"row{i}"


def build_config(params: EstimatorParams, row: dict[str, Any], ctx: RunContext, extra_options: dict[str, Any] | None = None) -> Any:
    """The validated ``EstimatorConfig`` of one row (ConfigError -> KindError naming the row)."""
    est = _estimator("load_config", "presets", "ConfigError")
    if params.from_measured:
        from estimator.measured import config_from_measured_row

        try:
            base = config_from_measured_row({k: "" if v is None else str(v) for k, v in row.items()}, profile=params.profile)
        except est.ConfigError as exc:
            raise KindError(f"measured row {row.get('case_id')}: column {exc.field}: {exc.rule}") from None
    elif params.config is not None:
        base = copy.deepcopy(params.config)
    else:
        raise KindError("give params.config or params.from_measured: true")
    options = dict(base.get("options") or {})
    if params.preset != "none":
        options |= est.presets.PRESETS[params.preset]()
    options |= params.options | (extra_options or {})
    base["options"] = options
    overrides = dict(params.set)
    for path, col in params.row_overrides.items():
        if col not in row:
            raise KindError(f"row_overrides: column {col!r} not in the data (have {sorted(row)})")
        overrides[path] = row[col]
    try:
        return est.load_config(base, overrides or None, base_dir=ctx.cases_root)
    except est.ConfigError as exc:
        raise KindError(f"config of row {_row_label(params, row, 0)!r}: {exc}") from None


def _measured_value(params: EstimatorParams, row: dict[str, Any]) -> float | None:
    if not params.measured:
        return None
    raw = row.get(params.measured)
    if raw in (None, ""):
        return None
    return float(raw) * params.measured_scale


# -- memory ---------------------------------------------------------------------------------------

def stage_for_rank(report: Any, measured_rank: str) -> Any:
    """The stage a measurement refers to (``estimator.measured.stage_for_rank``); KindError when absent."""
    from estimator.measured import stage_for_rank as _stage_for_rank

    try:
        return _stage_for_rank(report, measured_rank)
    except ValueError as exc:
        raise KindError(str(exc)) from None


def estimate_for_measurement(report: Any, measured_kind: str, measured_rank: str) -> tuple[float, str]:
    """(estimate MiB, what it is), like for like (``estimator.measured.estimate_for_measurement``)."""
    from estimator.measured import estimate_for_measurement as _estimate_for_measurement

    try:
        return _estimate_for_measurement(report, measured_kind, measured_rank)
    except ValueError as exc:
        raise KindError(str(exc)) from None


def _routed_static_mb(stage: Any) -> dict[str, float]:
    detail = getattr(stage, "static_detail", None)
    routed = getattr(detail, "routed", None)
    if routed is None:
        return {}
    mib = 1024.0 * 1024.0
    return {"routed_params_mb": routed.params / mib, "routed_optimizer_states_mb": routed.optimizer_states / mib,
            "routed_grads_mb": routed.grads / mib}


class MemoryParams(EstimatorParams):
    stage_columns: bool = Field(True, description="add stage<i>_mb columns")


@register_kind("estimator.memory", params=MemoryParams, requires=_requires("load_config", "estimate_memory", "presets"))
def run_memory(ctx: RunContext) -> RunResult:
    """Estimator memory model on N configs: estimate_mb per row beside the measurement (MiB)."""
    params: MemoryParams = ctx.params
    est = _estimator("estimate_memory")
    rows = ctx.rows or [{}]
    table, golden, notes = [], {}, []
    for i, row in enumerate(rows):
        cfg = build_config(params, row, ctx)
        report = est.estimate_memory(cfg)
        label = _row_label(params, row, i)
        notes += [f"{label}: {w}" for w in report.warnings]
        out: dict[str, Any] = {"config": label}
        out |= {k: row[k] for k in ("ep", "tp", "dp", "pp", "measured_kind", "measured_rank", "source_id") if k in row}
        if params.from_measured:
            value, what = estimate_for_measurement(report, row.get("measured_kind", ""), row.get("measured_rank", ""))
            out["estimate_mb"], out["estimate_of"] = value, what
            out["measured_mb"] = float(row["measured_gib"]) * MIB_PER_GIB
        else:
            out["estimate_mb"], out["estimate_of"] = report.peak_mb, "peak over stages"
            measured = _measured_value(params, row)
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
    return RunResult(table=table, golden=golden, notes=notes)


# -- perf -----------------------------------------------------------------------------------------

class CalibrateSpec(KindParams):
    """A declared calibration step (issue 3: at most one global compute efficiency, fitted on half of the rows).

    Calls ``estimator.calibrate.calibrate_efficiency`` (the one implementation): the halves are
    ``estimator.calibrate.split_half`` of each row's ``id_column`` (parity of the first SHA-256
    byte, independent of row order); the efficiency minimising Σ(log est − log meas)² over the
    ``fit`` half is applied to every row, and each row is marked ``half: fit | holdout`` so the
    assertions can be evaluated on the held-out half (``where: {half: holdout}``).
    """

    fit: Literal["compute_efficiency"] = Field(description="the one global knob fitted (options.compute_efficiency)")
    split: Literal["half"] = Field("half", description="estimator.calibrate.split_half of id_column")
    fit_on: Literal["fit"] = Field("fit", description="the half the knob is fitted on; figures are reported on the other "
                                                     "(not `on:` — YAML 1.1 reads a bare on as true)")
    id_column: str = Field("case_id", description="data column hashed to choose each row's half")
    group_by: list[str] = Field(default_factory=list, description="data columns of the within-group Spearman "
                                                                  "that estimator.calibrate reports per half")
    loo_subsample: int = Field(10, ge=1, description="rows of the fit half refitted leave-one-out (LOO MAPE)")


def measured_host_launch_cost(relative: str) -> dict[str, Any]:
    """The host µs per launch measured by the analyzer on a real profile, with its record.

    ``analyzer.indicators.launch_intervals`` over every rank of the profile (median start-to-start
    interval of consecutive launch calls of one host thread). This is the one place estimator and
    analyzer meet for it (ARCHITECTURE: they do not import each other). Skips the case when the
    profile is absent; a profile is read once per process.
    """
    from harness.kinds.analyzer import resolve_profile

    return dict(_host_launch_record(str(resolve_profile(relative)), relative))


@functools.lru_cache(maxsize=8)
def _host_launch_record(path: str, relative: str) -> dict[str, Any]:
    import pandas as pd

    from analyzer.dataset import load_dataset
    from analyzer.indicators import launch_intervals
    from analyzer.ingest.errors import IngestError

    try:
        ds = load_dataset(path)
    except IngestError as exc:
        raise KindError(f"host_launch_cost_from: {relative}: {exc}") from None
    li = launch_intervals(pd.concat([r.events for r in ds.ranks], ignore_index=True))
    if li is None:
        raise KindError(f"host_launch_cost_from: {relative}: no host thread launches twice (no runtime-layer "
                        "launch events in the profile), nothing to measure")
    return {"value_us": li.median_us, "p25_us": li.p25_us, "p75_us": li.p75_us, "intervals": li.count,
            "threads": li.threads, "profile": relative,
            "method": "analyzer.indicators.launch_intervals: median start-to-start interval of consecutive launch "
                      "calls of one host thread, pooled over threads and ranks"}


class PerfParams(EstimatorParams):
    """``estimator.perf`` params: the row configs, optional calibration, data columns kept in the table."""

    calibrate: CalibrateSpec | None = Field(None, description="fit one global knob on half the rows first")
    host_launch_cost_from: str | None = Field(
        None, description="profile (relative to the profiles folder) whose measured host time per launch (analyzer "
                          "indicator host_us_per_launch) sets options.host_launch_cost_us on every row (before any "
                          "fit): measured on independent data, not fitted; the case skips when the profile is absent")
    keep_columns: list[str] = Field(default_factory=list, description="data columns copied into the result table "
                                                                      "(e.g. for group_by in assertions)")


def _measured_step_ms(params: EstimatorParams, row: dict[str, Any]) -> float | None:
    if params.from_measured and row.get("measured_step_ms") not in (None, ""):
        return float(row["measured_step_ms"])
    return _measured_value(params, row)


def calibrate_rows(params: PerfParams, rows: list[dict[str, Any]], ctx: RunContext,
                   host: dict[str, Any] | None = None) -> tuple[float, list[str], dict[str, Any]]:
    """(fitted efficiency, each row's half, the calibration record) through ``estimator.calibrate``;
    ``host`` (a :func:`measured_host_launch_cost` record, not fitted) sets the host cost of every row."""
    fixed = host_options(host)
    try:
        calibrate = importlib.import_module("estimator.calibrate")
    except ImportError as exc:
        raise KindError(f"estimator.calibrate is not importable: {exc}") from None
    spec = params.calibrate
    assert spec is not None
    missing = [c for c in (spec.id_column, *spec.group_by) if any(c not in r for r in rows)]
    if missing:
        raise KindError(f"calibrate: column(s) {missing} not in the data (have {sorted(rows[0]) if rows else []})")
    halves = [calibrate.split_half(str(r[spec.id_column])) for r in rows]
    used = [i for i, r in enumerate(rows) if (_measured_step_ms(params, r) or 0.0) > 0]
    cfgs = [build_config(params, rows[i], ctx, fixed) for i in used]
    estimate = calibrate.efficiency_estimator(cfgs)
    ids = [str(rows[i][spec.id_column]) for i in used]
    measured_s = [_measured_step_ms(params, rows[i]) / MS_PER_S for i in used]
    groups = ["|".join(str(rows[i][c]) for c in spec.group_by) for i in used]
    try:
        cal = calibrate.calibrate_efficiency(estimate, ids, measured_s, groups, spec.loo_subsample)
    except ValueError as exc:
        raise KindError(f"calibrate: {exc}") from None
    record = {
        "fitted": spec.fit, "value": cal.efficiency, "bounds": [calibrate.EFF_MIN, calibrate.EFF_MAX],
        "method": "estimator.calibrate.calibrate_efficiency: least squares of log(est) - log(meas) on the fit half "
                  f"(bounded Brent); halves by estimator.calibrate.split_half({spec.id_column})",
        "rows_fit": cal.fit_rows, "rows_holdout": cal.holdout_rows, "rows_unmeasured": len(rows) - len(used),
        "group_by": list(spec.group_by), "fit": cal.fit.as_dict(), "holdout": cal.holdout.as_dict(),
        "holdout_at_peak": cal.uncalibrated_holdout.as_dict(), "loo_mape_pct_fit_half": cal.loo_mape_pct,
        "loo_subsample": spec.loo_subsample,
        "host_launch_cost": host or HOST_DEFAULT,
    }
    return cal.efficiency, halves, record


#: what the records say when no measured host cost is given
HOST_DEFAULT = "profile default (estimator.profiles.HOST_LAUNCH_COST)"


def host_options(host: dict[str, Any] | None) -> dict[str, Any]:
    """Estimator options of a measured host cost record (empty: the profile default applies)."""
    return {"host_launch_cost_us": host["value_us"]} if host else {}


@register_kind("estimator.perf", params=PerfParams, requires=_requires("load_config", "estimate_perf", "presets"))
def run_perf(ctx: RunContext) -> RunResult:
    """Estimator step-time model on N configs: RealParts (s) per row, TOTAL in ms beside measured step ms.

    With ``calibrate``: one global compute efficiency is fitted on the ``fit`` half first
    (``estimator.calibrate``) and every row is estimated with it; ``half`` marks each row and
    ``total_at_peak_ms`` keeps the uncalibrated TOTAL (efficiency 1.0) beside it.
    """
    params: PerfParams = ctx.params
    est = _estimator("estimate_perf")
    rows = ctx.rows or [{}]
    values: dict[str, Any] = {}
    halves: list[str | None] = [None] * len(rows)
    host = measured_host_launch_cost(params.host_launch_cost_from) if params.host_launch_cost_from else None
    extra: dict[str, Any] = host_options(host)
    if host is not None:
        values["host_launch_cost"] = host
    if params.calibrate is not None:
        eff, halves, record = calibrate_rows(params, rows, ctx, host)
        extra[params.calibrate.fit] = eff
        values |= {params.calibrate.fit: eff, "calibration": record}
    table, golden = [], {}
    for i, row in enumerate(rows):
        cfg = build_config(params, row, ctx, extra)
        report = est.estimate_perf(cfg)
        label = _row_label(params, row, i)
        out: dict[str, Any] = {"config": label}
        out |= {k: row[k] for k in ("ep", "tp", "dp", "pp", "source_id") if k in row}
        for col in params.keep_columns:
            if col not in row:
                raise KindError(f"keep_columns: column {col!r} not in the data (have {sorted(row)})")
            out[col] = row[col]
        for part in REAL_PARTS:
            out[f"{part}_s"] = float(report.real_parts[part])
        out["total_ms"] = out["TOTAL_s"] * MS_PER_S
        if halves[i] is not None:
            out["half"] = halves[i]
            at_peak = build_config(params, row, ctx, extra | {"compute_efficiency": 1.0})
            out["total_at_peak_ms"] = float(est.estimate_perf(at_peak).real_parts["TOTAL"]) * MS_PER_S
        out["straggler_stage"] = report.straggler_stage
        if params.from_measured and row.get("measured_step_ms") not in (None, ""):
            out["measured_step_ms"] = float(row["measured_step_ms"])
        measured = _measured_value(params, row)
        if measured is not None:
            out["measured"] = measured
        table.append(out)
        golden[label] = {"real_parts": dict(report.real_parts), "perf_parts": dict(report.perf_parts),
                         "stage_times_s": list(report.stage_times_s), "straggler_stage": report.straggler_stage,
                         "unit": report.unit}
    finite = [r for r in table if math.isfinite(r["total_ms"])]
    values["n_finite"] = len(finite)
    notes = []
    if params.calibrate is not None:
        cal = values["calibration"]
        notes.append(f"calibration: {cal['fitted']} = {cal['value']:.4f} fitted on {cal['rows_fit']} rows "
                     f"(fit half), figures on {cal['rows_holdout']} held-out rows")
    return RunResult(table=table, golden=golden, values=values, notes=notes)


# -- invariance -----------------------------------------------------------------------------------

class Variant(KindParams):
    preset: Literal["legacy", "fixed", "none"] = "none"
    options: dict[str, Any] = Field(default_factory=dict)
    set: dict[str, Any] = Field(default_factory=dict)


class InvarianceParams(EstimatorParams):
    a: Variant = Field(description="first variant (column a)")
    b: Variant = Field(description="second variant (column b)")
    compare: list[Literal["memory", "perf"]] = Field(default_factory=lambda: ["memory", "perf"])


def _flatten_results(est: Any, cfg: Any, compare: list[str]) -> dict[str, float]:
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
               requires=_requires("load_config", "estimate_memory", "estimate_perf", "presets"))
def run_invariance(ctx: RunContext) -> RunResult:
    """The estimator twice (variants a and b); one row per memory component / time part with columns a, b."""
    params: InvarianceParams = ctx.params
    est = _estimator("estimate_memory", "estimate_perf")
    table: list[dict[str, Any]] = []
    for i, row in enumerate(ctx.rows or [{}]):
        values = []
        for v in (params.a, params.b):
            variant = params.model_copy(update={"preset": v.preset, "options": params.options | v.options,
                                                "set": params.set | v.set})
            values.append(_flatten_results(est, build_config(variant, row, ctx), params.compare))
        label = _row_label(params, row, i)
        for key in sorted(set(values[0]) | set(values[1])):
            table.append({"config": label, "item": key, "a": values[0].get(key, math.nan), "b": values[1].get(key, math.nan)})
    return RunResult(table=table, golden=None)


# -- ablation -------------------------------------------------------------------------------------

class Exp3(KindParams):
    config: str = Field(description="label of the data row whose EP stays fixed")
    dps: list[int] = Field(min_length=2, description="DP degrees to step through (world size follows)")


class AblationParams(EstimatorParams):
    base: Literal["legacy_seconds", "legacy", "fixed"] = Field(
        "legacy_seconds", description="options the experiments start from (estimator.ablation.legacy_seconds: "
                                      "the reference before the fixes with EP priced in seconds)")
    experiments: list[Literal["EXP-1", "EXP-2", "EXP-3", "EXP-4"]] = Field(
        default_factory=lambda: ["EXP-1", "EXP-2", "EXP-3", "EXP-4"])
    exp3: Exp3 | None = None


def _ablation_rows(name: str, rows: list[Any]) -> list[dict[str, Any]]:
    keys = ["config", "ep", "tp", "dp", "metric", "before", "after", "direction", "straggler_before", "straggler_after"]
    return [{"experiment": name, **dict(zip(keys, r.as_list(), strict=True))} for r in rows]


@register_kind("estimator.ablation", params=AblationParams, requires=_requires("load_config", "estimate_perf"))
def run_ablation(ctx: RunContext) -> RunResult:
    """The seed's ablations EXP-1..EXP-4 (estimator.ablation): a direction table, one row per experiment × config."""
    try:
        ablation = importlib.import_module("estimator.ablation")
    except ImportError as exc:
        raise KindError(f"estimator.ablation is not importable: {exc}") from None
    est = _estimator("presets")
    params: AblationParams = ctx.params
    labeled = [(_row_label(params, r, i), build_config(params, r, ctx).model_dump(mode="python"))
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
