"""What every estimator kind shares: the lazily imported estimator API and one row -> one config.

The estimator is imported lazily: when it is missing, ``requires`` says so and the case is
reported broken while every other case still runs. Measured rows become configs through
``estimator.experiments.measured.config_from_measured_row`` (the one mapping).
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from pydantic import Field

from ndval.harness import subjects
from ndval.harness.kinds import KindError, KindParams, RunContext

Report = TypeVar("Report")


def estimator_api(*attrs: str) -> Any:
    try:
        mod = importlib.import_module("estimator")
    except ImportError as exc:
        raise KindError(f"the estimator package is not importable: {exc}") from None
    missing = [a for a in attrs if not hasattr(mod, a)]
    if missing:
        raise KindError(f"the estimator API lacks {', '.join(missing)} (spec §2)")
    return mod


def requires_api(*attrs: str) -> Callable[[], str | None]:
    def check() -> str | None:
        try:
            estimator_api(*attrs)
        except KindError as exc:
            return str(exc)
        return None

    return check


class EstimatorParams(KindParams):
    """How each row becomes an estimator config: base ``config`` (+ ``set`` and ``row_overrides``) or ``from_measured``."""

    config: dict[str, Any] | None = Field(None, description="estimator config (spec §3); model: {ref: models/x.yaml}")
    from_measured: bool = Field(False, description="each data row is a row of the shared measured CSVs")
    profile: str = Field("megatron", description="framework profile for from_measured rows")
    preset: Literal["legacy", "fixed", "none"] = Field("none", description="estimator.config.presets merged into options")
    options: dict[str, Any] = Field(default_factory=dict, description="options merged after the preset")
    set: dict[str, Any] = Field(default_factory=dict, description="dotted overrides, e.g. parallel.expert_zero3_sharding")
    row_overrides: dict[str, str] = Field(default_factory=dict, description="{dotted.config.path: data column}")
    label: str = Field("config", description="data column naming each row")
    measured: str | None = Field(None, description="data column with the measurement (copied as measured_<unit>)")
    measured_scale: float = Field(1.0, gt=0, description="multiplier to the kind's unit (GiB->MiB: 1024)")


class RowNotEvaluable(KindError):
    """A measured row lacks a value the estimate needs: the source did not state it (not a broken input)."""


class RowRefused(KindError):
    """The estimator refuses a row's configuration (a ConfigError: a feature it does not model, a layout
    it does not accept); a case with ``refused_rows: report`` lists it instead of failing as broken."""


def not_evaluable_row(params: EstimatorParams, row: dict[str, Any], label: str, reason: str,
                      measured: dict[str, float | None]) -> dict[str, Any]:
    """The table row of a measured row the estimate cannot be made for: ``not_evaluable`` = the reason
    (e.g. ``column micro_batch_size: not stated by the source``), the row's layout columns and the
    measurement columns ``measured`` (name -> value; the estimate columns are absent). Assertions leave
    such rows out and list them; the summary and the sign-off count them (``ndval.harness.summary``)."""
    out: dict[str, Any] = {"config": label, "not_evaluable": reason}
    out |= {k: row[k] for k in ("ep", "tp", "dp", "pp", "measured_kind", "measured_rank", "source_id") if k in row}
    return out | {k: v for k, v in measured.items() if v is not None}


def record_gap(table: list[dict[str, Any]], notes: list[str], gap_row: dict[str, Any]) -> None:
    """Count and list a not-evaluable row (:func:`not_evaluable_row`): never dropped silently."""
    table.append(gap_row)
    notes.append(f"{gap_row['config']}: not evaluable - {gap_row['not_evaluable']}")


def call_subject(task: Callable[[Any], Report], cfg: Any, label: str, notes: list[str]) -> Report:
    """``task(cfg)`` (a subject's memory or step-time task) for row ``label``: a subject failure becomes
    a KindError naming the row; the report's warnings are added to ``notes``, prefixed by the row."""
    try:
        report = task(cfg)
    except subjects.SubjectError as exc:
        raise KindError(f"row {label!r}: {exc}") from None
    notes += [f"{label}: {w}" for w in getattr(report, "warnings", ())]
    return report


def row_label(params: EstimatorParams, row: dict[str, Any], i: int) -> str:
    for key in (params.label, "case_id", "config", "id"):
        if row.get(key) not in (None, ""):
            return str(row[key])
    return f"row{i}"


def build_config(params: EstimatorParams, row: dict[str, Any], ctx: RunContext, extra_options: dict[str, Any] | None = None) -> Any:
    """The validated ``EstimatorConfig`` of one row (ConfigError -> KindError naming the row)."""
    est = estimator_api("load_config", "presets", "ConfigError")
    if params.from_measured:
        from estimator.experiments.measured import NotStated, config_from_measured_row

        try:
            base = config_from_measured_row({k: "" if v is None else str(v) for k, v in row.items()}, profile=params.profile)
        except NotStated as exc:
            raise RowNotEvaluable(f"column {exc.field}: not stated by the source") from None
        except est.ConfigError as exc:
            raise RowRefused(f"measured row {row.get('case_id')}: column {exc.field}: {exc.rule}") from None
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
        raise RowRefused(f"config of row {row_label(params, row, 0)!r}: {exc}") from None


def measured_value(params: EstimatorParams, row: dict[str, Any]) -> float | None:
    if not params.measured:
        return None
    raw = row.get(params.measured)
    if raw in (None, ""):
        return None
    return float(raw) * params.measured_scale
