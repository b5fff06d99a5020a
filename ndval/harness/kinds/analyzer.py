"""The analyzer kinds: ``analyzer.analysis`` (one profile) and ``analyzer.compare`` (a before/after pair).

Profiles are located through :func:`ndval.harness.paths.profiles_dir` (``$NDVAL_PROFILES_DIR``, default
``../shared/data/profiles``); a case whose profile is absent is *skipped* with the reason
("data not available: ..."), never failed.

Assertions are the registry's generic ones (one implementation each, ``ndval.harness.assertions``):

- ``bottleneck_is`` reads ``values["bottleneck"]`` (the verdict kind of the chosen scope);
- ``score_between`` reads ``values["score.<kind>"]`` (``host`` / ``compute`` / ``communication`` / ``copy``)
  or ``values["score"]`` (the verdict's score);
- ``verdict_equals`` reads any named value: ``comparable``, ``level``, ``check.<id>``,
  ``verdict.<recommendation id>``, ``before.<side field>`` / ``after.<side field>`` (``step_count``,
  ``world_size``, ``device_names``, ``ranks``, ...), ``graph_mode``, ``warnings_expected_present``,
  ``evaluable`` (False: the scope carries too little evidence to be scored), ``cluster_slowest_rank``, ...;
  ``status.<metric id>`` (``improved`` / ``unchanged`` / ``regressed`` / ...); ``score_between`` also
  reads ``improvement.<metric id>``, ``observed.<recommendation id>``, ``threshold.<recommendation id>``;
- ``abs_error_le`` compares the table's ``observed`` and ``expected`` columns row by row; select the
  row with ``where: {id: <row id>}``. Row ids (``analyzer.analysis``): every indicator id of the scope
  (``comm_exposed_us``...), ``step_trace.<step>.<column>`` (per-step breakdown of the checked rank:
  torch_npu Overlap Analysis sums on Ascend, HTA per-step definitions on Kineto), ``hta.<metric>`` (Kineto only: HTA's default window,
  via ``analyzer.breakdown``), ``sync_count.<op>`` (sync-like ops in the scope) and
  ``trace_sync_count.<op>`` (sync-like ops in the whole event table). ``expected`` values come from
  the case's ``params.expected`` (transcribed facts, each with its source in the case). In
  ``analyzer.compare`` the table has one row per compared metric with ``before`` / ``after`` and the
  case's ``expected_before`` / ``expected_after`` columns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from ndval.core import cache
from ndval.harness import paths
from ndval.harness.kinds import KindError, KindParams, RunContext, register_kind
from ndval.harness.results import RunResult

Phase = Literal["prefill", "decode"]


class AnalysisParams(KindParams):
    """``analyzer.analysis``: analyse one profile and expose its verdict, scores and indicators."""

    profile: str = Field(description="profile path relative to the profiles folder ($NDVAL_PROFILES_DIR)")
    scope: str = Field("overall", description="scope whose indicators and verdict are checked")
    rank: int | None = Field(None, description="rank to check (default: the lowest rank of the dataset)")
    phase: Phase | None = Field(None, description="phase override passed to analyze()")
    thresholds: dict[str, Any] | None = Field(None, description="threshold overrides {id: value} for analyze()")
    expected: dict[str, float] = Field(default_factory=dict,
                                       description="row id -> expected value (facts transcribed with their source)")
    expect_warnings: list[str] = Field(default_factory=list,
                                       description="substrings that must each appear in some analysis warning")


class CompareParams(KindParams):
    """``analyzer.compare``: analyse two profiles the same way and compare them (seed §7)."""

    before: str = Field(description="profile before, relative to the profiles folder")
    after: str = Field(description="profile after, relative to the profiles folder")
    phase: Phase | None = None
    thresholds: dict[str, Any] | None = None
    expect_reasons: list[str] = Field(default_factory=list,
                                      description="substrings that must each appear in a comparability reason")
    expected_before: dict[str, float] = Field(default_factory=dict,
                                              description="metric id -> expected before value (transcribed facts)")
    expected_after: dict[str, float] = Field(default_factory=dict,
                                             description="metric id -> expected after value (transcribed facts)")


# ------------------------------------------------------------------------------------------- helpers


def _skip(reason: str) -> None:
    """Skip the case with ``reason`` (the item reports it as skipped, not failed)."""
    import pytest

    pytest.skip(reason)


def resolve_profile(relative: str) -> Path:
    """``profiles_dir() / relative``; skips the case with "data not available" when it is absent."""
    base = paths.profiles_dir()
    path = Path(relative) if Path(relative).is_absolute() else base / relative
    if not base.is_dir():
        _skip(f"data not available: profiles folder {base} is absent (set NDVAL_PROFILES_DIR or NDVAL_SHARED_DIR)")
    if not path.exists():
        _skip(f"data not available: profile {relative!r} not found under {base}")
    return path


@cache.memoize("harness.analysed_profiles", bound=16, key="(profile path, phase, thresholds as JSON)",
               holds="(Dataset, Analysis)")
def _analysed(path: str, phase: str | None, thresholds_json: str) -> tuple[Any, Any]:
    """(Dataset, Analysis) of a profile, cached per process (comparisons reuse analyses)."""
    from analyzer.analysis import analyze
    from analyzer.dataset import load_dataset
    from analyzer.ingest.errors import IngestError

    overrides = json.loads(thresholds_json) if thresholds_json else None
    try:
        dataset = load_dataset(path)
        return dataset, analyze(dataset, thresholds=overrides, phase_override=phase)
    except IngestError as exc:
        raise KindError(f"cannot read profile: {exc}") from None


def analysed(path: Path, phase: str | None, thresholds: dict[str, Any] | None) -> tuple[Any, Any]:
    return _analysed(str(path), phase, json.dumps(thresholds, sort_keys=True) if thresholds else "")


def _finite(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if f == f and abs(f) != float("inf") else None


def _rank_analysis(analysis: Any, rank: int | None) -> Any:
    if rank is None:
        return analysis.primary
    for ra in analysis.ranks:
        if ra.rank == rank:
            return ra
    raise KindError(f"rank {rank} not in the analysis (ranks: {[r.rank for r in analysis.ranks]})")


def _hta_rows(events: Any) -> list[dict[str, Any]]:
    """HTA's temporal breakdown and comm–compute overlap over its default window (``analyzer.breakdown``)."""
    from analyzer import breakdown as bd

    window = bd.hta_window(events)
    k = bd.kineto_breakdown(window[window["side"] == "device"])
    span = k.span_us

    def pct(part_us: float) -> float | None:
        return 100.0 * part_us / span if span > 0 else None

    values = {"gpu_span_us": span, "idle_pct": pct(k.idle_us), "compute_pct": pct(k.compute_us),
              "non_compute_pct": pct(k.busy_us - k.compute_us), "overlap_pct": _finite(k.overlap_pct)}
    units = {"gpu_span_us": "us"}
    return [{"id": f"hta.{n}", "group": "hta", "step": None, "observed": v, "unit": units.get(n, "%")}
            for n, v in values.items()]


def analysis_rows(dataset: Any, analysis: Any, scope: str, rank: int | None) -> tuple[list[dict[str, Any]], Any, Any]:
    """The ``analyzer.analysis`` table: indicators, step breakdown, HTA window, sync counts (no expected yet)."""
    ra = _rank_analysis(analysis, rank)
    if scope not in ra.scopes:
        raise KindError(f"scope {scope!r} not in the analysis of rank {ra.rank} (scopes: {sorted(ra.scopes)})")
    sc = ra.scopes[scope]
    rows: list[dict[str, Any]] = []
    for key, ind in sc.indicators.items():
        rows.append({"id": key, "group": "indicator", "step": None, "observed": ind.value, "unit": ind.unit,
                     "reason": ind.reason})
    for rec in ra.step_breakdown:
        step = rec.get("step")
        for col, val in rec.items():
            if col == "step":
                continue
            rows.append({"id": f"step_trace.{step}.{col}", "group": "step_trace", "step": step,
                         "observed": _finite(val), "unit": "%" if col.endswith("_pct") else "us"})
    for name, n in sorted(sc.indicators.sync_counts.items()):
        rows.append({"id": f"sync_count.{name}", "group": "sync_count", "step": None, "observed": float(n), "unit": "ops"})
    for name, n in sorted(ra.capture_sync_counts.items()):
        rows.append({"id": f"trace_sync_count.{name}", "group": "trace_sync_count", "step": None,
                     "observed": float(n), "unit": "ops"})
    events = next((r for r in dataset.ranks if r.rank == ra.rank), dataset.ranks[0]).events
    if dataset.source_format == "kineto" and len(events):
        rows += _hta_rows(events)
    return rows, ra, sc


def attach_expected(rows: list[dict[str, Any]], expected: dict[str, float]) -> list[dict[str, Any]]:
    """Add the ``expected`` column. A missing ``sync_count.<op>`` / ``trace_sync_count.<op>`` row is an
    observed 0; any other unknown id is a case error naming similar known ids."""
    known = {r["id"] for r in rows}
    for key in expected:
        if key in known:
            continue
        if key.startswith(("sync_count.", "trace_sync_count.")):
            rows.append({"id": key, "group": key.split(".", 1)[0], "step": None, "observed": 0.0, "unit": "ops"})
            continue
        close = sorted(k for k in known if key.split(".")[-1] in k)[:8]
        raise KindError(f"expected: no row {key!r} in this analysis (similar: {close or 'none'}; "
                        f"{len(known)} rows: indicators, step_trace.*, sync_count.*, trace_sync_count.*, hta.*)")
    return [{**r, "expected": expected.get(r["id"])} for r in rows]


def compare_rows(metrics: list[dict[str, Any]], expected_before: dict[str, float],
                 expected_after: dict[str, float]) -> list[dict[str, Any]]:
    """The ``analyzer.compare`` table: one row per compared metric (seed §7.1) with the case's
    ``expected_before`` / ``expected_after`` facts as columns; an unknown metric id is a case error."""
    known = {m["id"] for m in metrics}
    for name, expected in (("expected_before", expected_before), ("expected_after", expected_after)):
        unknown = sorted(set(expected) - known)
        if unknown:
            raise KindError(f"{name}: no metric {unknown} in the comparison (metrics: {sorted(known)})")
    return [{"id": m["id"], "direction": m["direction"], "before": m["before"], "after": m["after"],
             "rel_change_pct": m["rel_change_pct"], "improvement_pct": m["improvement_pct"], "status": m["status"],
             "expected_before": expected_before.get(m["id"]), "expected_after": expected_after.get(m["id"])}
            for m in metrics]


# ----------------------------------------------------------------------------------------------- kinds


@register_kind("analyzer.analysis", params=AnalysisParams)
def run_analysis(ctx: RunContext[AnalysisParams]) -> RunResult:
    """Analyse one real profile: bottleneck, scores, indicators vs transcribed facts, expected warnings."""
    p: AnalysisParams = ctx.params
    path = resolve_profile(p.profile)
    dataset, analysis = analysed(path, p.phase, p.thresholds)
    rows, ra, sc = analysis_rows(dataset, analysis, p.scope, p.rank)
    rows = attach_expected(rows, p.expected)
    verdict = sc.verdict
    warnings = list(analysis.warnings)
    missing = [w for w in p.expect_warnings if not any(w in have for have in warnings)]
    values: dict[str, Any] = {
        "bottleneck": verdict.kind,
        "subtype": verdict.subtype,
        "evaluable": bool(verdict.evaluable),
        "cluster_slowest_rank": None if analysis.cluster is None else analysis.cluster.slowest_rank,
        "score": float(verdict.score),
        "rank": ra.rank,
        "scope": p.scope,
        "source_format": analysis.source_format,
        "totals_source": ra.totals_source,
        "graph_mode": bool(ra.graph_mode),
        "step_count": sc.indicators.value("step_count") if "step_count" in sc.indicators else None,
        "recommendations": [r.id for r in ra.recommendations],
        "excluded": dict(verdict.excluded),
        "warnings_expected_present": not missing,
        "missing_warnings": missing,
        "warning_count": len(warnings),
    }
    for cand in verdict.candidates:
        values[f"score.{cand.kind}"] = float(cand.score)
        values[f"triggered.{cand.kind}"] = bool(cand.triggered)
    for kind in verdict.excluded:
        values[f"triggered.{kind}"] = False
    for kind in (*(c.kind for c in verdict.candidates), *verdict.excluded):
        values[f"excluded.{kind}"] = kind in verdict.excluded
    for rec in ra.recommendations:
        values[f"recommended.{rec.id}"] = True
    notes = [f"profile: {path}", f"verdict: {verdict.kind} ({verdict.score:.1f}) — {verdict.summary}"]
    notes += [f"warning: {w}" for w in warnings[:20]]
    if missing:
        notes.append(f"expected warnings not found: {missing}")
    return RunResult(table=rows, values=values, notes=notes)


@register_kind("analyzer.compare", params=CompareParams)
def run_compare(ctx: RunContext[CompareParams]) -> RunResult:
    """Compare two real profiles (seed §7): comparability with reasons, verdicts, metric changes."""
    from analyzer.compare import compare

    p: CompareParams = ctx.params
    before_path, after_path = resolve_profile(p.before), resolve_profile(p.after)
    before = analysed(before_path, p.phase, p.thresholds)
    after = analysed(after_path, p.phase, p.thresholds)
    result = compare(before, after)
    d = result.to_dict()
    comp = d["comparability"]
    missing = [s for s in p.expect_reasons if not any(s in r for r in comp["reasons"])]
    values: dict[str, Any] = {
        "comparable": comp["comparable"],
        "level": comp["level"],
        "blocking": ",".join(comp["blocking"]),
        "flags": ",".join(comp["flags"]),
        "reasons": comp["reasons"],
        "reasons_expected_present": not missing,
        "missing_reasons": missing,
        "headline": d["headline"]["sentence"],
        "bottleneck_before": d["bottleneck"]["before"],
        "bottleneck_after": d["bottleneck"]["after"],
        "bottleneck_changed": d["bottleneck"]["changed"],
    }
    for side in ("before", "after"):
        for key in ("step_count", "window_us", "world_size", "totals_source", "bottleneck"):
            values[f"{side}.{key}"] = d["sides"][side][key]
        values[f"{side}.device_names"] = ",".join(d["sides"][side]["device_names"])
        values[f"{side}.ranks"] = ",".join(str(r) for r in d["sides"][side]["ranks"])
    for metric in d["metrics"]:
        values[f"improvement.{metric['id']}"] = metric["improvement_pct"]
        values[f"status.{metric['id']}"] = metric["status"]
    for check in comp["checks"]:
        values[f"check.{check['id']}"] = bool(check["triggered"])
    for rec in d["recommendations"]:
        values[f"verdict.{rec['id']}"] = rec["verdict"]
        values[f"threshold.{rec['id']}"] = rec["threshold_pct"]
        values[f"observed.{rec['id']}"] = rec["observed_improvement_pct"]
    table = compare_rows(d["metrics"], p.expected_before, p.expected_after)
    notes = [f"before: {before_path}", f"after: {after_path}", d["headline"]["sentence"]]
    notes += [f"comparability: {r}" for r in comp["reasons"]]
    notes += [f"warning: {w}" for w in d["warnings"][:20]]
    return RunResult(table=table, values=values, notes=notes)
