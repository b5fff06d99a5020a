"""Orchestration: dataset → per rank → per scope: indicators → locate → evidence → root cause → advice → gains.

``analyze(dataset, thresholds=None, phase_override=None) -> Analysis`` (spec §5). Scopes (seed §1): ``overall``
(the whole capture window, read as the dominant phase when phases are known) and ``prefill`` / ``decode``
when found (or the user's phase override). Each scope is analysed on its own; recommendations are then
merged across scopes by id (seed §1). Results are immutable and serialise with ``to_dict()`` (units in
field names, stable keys).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analyzer import (
    advisor,
    breakdown,
    cluster,
    cluster_comm,
    cluster_view,
    comm_groups,
    comm_wait,
    confidence,
    evaluable,
    gains,
    phases,
    plausibility,
    recommend,
    rootcause,
    steptable,
)
from analyzer.bottleneck import NONE, Verdict, locate
from analyzer.dataset import TOTALS_CLUSTER, Dataset, RankData
from analyzer.indicators import (
    IndicatorSet,
    ScopeInput,
    compute_indicators,
    graph_mode_signal,
    in_windows_mask,
)
from analyzer.ingest import events as ev
from analyzer.ingest.dropped import DroppedEvents
from analyzer.ingest.errors import IngestError
from analyzer.thresholds import Thresholds, resolve

SCHEMA_VERSION = 1
#: the communication-wait inputs of a rank: its communication analysis split and its wait from the arrival skew.
WaitInputs = tuple["comm_wait.Split | None", "tuple[float, float] | None"]
OVERALL = "overall"


@dataclass(frozen=True)
class ScopeResult:
    """Everything concluded for one scope of one rank."""

    name: str
    phase: str | None
    windows: tuple[tuple[float, float], ...]
    indicators: IndicatorSet
    verdict: Verdict
    hypotheses: tuple[rootcause.Hypothesis, ...]
    recommendations: tuple[recommend.Recommendation, ...]
    combined_gain: gains.CombinedGain

    def to_dict(self) -> dict[str, Any]:
        """Plain data (stable keys)."""
        return {
            "name": self.name, "phase": self.phase,
            "windows_us": [[round(a, 3), round(b, 3)] for a, b in self.windows],
            "indicators": self.indicators.to_dict(), "verdict": self.verdict.to_dict(),
            "hypotheses": [h.to_dict() for h in self.hypotheses],
            "recommendations": [r.to_dict() for r in self.recommendations],
            "combined_gain": self.combined_gain.to_dict(),
        }


@dataclass(frozen=True)
class RankAnalysis:
    """One rank: phase plan, scopes, merged recommendations, graph-mode signal, warnings."""

    rank: int
    path: str
    plan: phases.PhasePlan
    scopes: dict[str, ScopeResult]
    recommendations: tuple[recommend.Recommendation, ...]
    graph_mode: bool
    graph_mode_reason: str
    step_breakdown: tuple[dict[str, float | None], ...]
    breakdown_source: str
    files: tuple[str, ...]
    totals_source: str
    warnings: tuple[str, ...]
    meta: dict[str, Any]
    capture_sync_counts: dict[str, int]
    #: events left out of the table: ``{"count", "reason", "by_category"}`` (bad ts/dur, event budget).
    dropped_events: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: Kineto only: comm–compute overlap (%) over Holistic Trace Analysis' default window
    #: (``breakdown.hta_window``: the last ProfilerStep dropped), for comparison with HTA; None otherwise.
    hta_window_overlap_pct: float | None = None
    #: seed §8 "how to raise confidence", in the seed's order, each marked as applying or not (analyzer.confidence)
    how_to_raise_confidence: tuple[dict[str, Any], ...] = ()
    #: Kineto only: HTA's temporal breakdown over the same window (``breakdown.hta_window_shares``): GPU span µs,
    #: idle / compute / non-compute % of it — the device activity of a trace even when no verdict is given.
    hta_window_shares: dict[str, float] | None = None
    #: communication by process group and parallel dimension (``comm_groups.CommByGroup.to_dict``); None when the
    #: profile names no group.
    comm_by_group: dict[str, Any] | None = None
    #: operator-level findings beside the verdict (analyzer.advisor), as plain data; None when not run
    advisor: dict[str, Any] | None = None
    #: Kineto only: HTA's idle / launch / kernel-type breakdowns over HTA's and the capture window (analyzer.hta_breakdowns)
    hta_breakdowns: dict[str, Any] | None = None

    @property
    def overall(self) -> ScopeResult:
        """The overall scope."""
        return self.scopes[OVERALL]

    def to_dict(self) -> dict[str, Any]:
        """Plain data (stable keys)."""
        return {
            "rank": self.rank, "path": self.path, "files": list(self.files), "totals_source": self.totals_source,
            "meta": self.meta, "graph_mode": {"detected": self.graph_mode, "reason": self.graph_mode_reason},
            "phases": self.plan.to_dict(), "breakdown_source": self.breakdown_source,
            "capture_sync_counts": dict(sorted(self.capture_sync_counts.items())),
            "step_breakdown_us": [dict(r) for r in self.step_breakdown],
            "step_breakdown_null_reasons": {k: why for k, why in BREAKDOWN_NULL_REASONS.items()
                                            if any(k in r and r[k] is None for r in self.step_breakdown)},
            "scopes": {k: v.to_dict() for k, v in self.scopes.items()},
            "recommendations": [r.to_dict() for r in self.recommendations],
            "warnings": list(self.warnings),
            "how_to_raise_confidence": [dict(s) for s in self.how_to_raise_confidence],
            "dropped_events": dict(self.dropped_events),
            "hta_window_overlap_pct": self.hta_window_overlap_pct,
            "hta_window_shares": self.hta_window_shares,
            "comm_by_group": self.comm_by_group,
            "advisor": self.advisor, "hta_breakdowns": self.hta_breakdowns,
        }


@dataclass(frozen=True)
class Analysis:
    """The result of :func:`analyze`."""

    path: str
    source_format: str
    thresholds: Thresholds
    phase_override: str | None
    ranks: tuple[RankAnalysis, ...]
    cluster: cluster.ClusterSummary | None
    warnings: tuple[str, ...]

    @property
    def primary(self) -> RankAnalysis:
        """The first rank (lowest id)."""
        return self.ranks[0]

    @property
    def verdict(self) -> Verdict:
        """Overall verdict of the first rank."""
        return self.primary.overall.verdict

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready payload (stable field names, units in names)."""
        v = self.verdict
        return {
            "schema_version": SCHEMA_VERSION, "path": self.path, "source_format": self.source_format,
            "phase_override": self.phase_override, "thresholds_origin": self.thresholds.origin,
            "verdict": {"rank": self.primary.rank, "kind": v.kind, "label": v.label, "score": v.score,
                        "subtype": v.subtype, "summary": v.summary,
                        "secondary": list(v.secondary), "selection": v.selection, "evaluable": v.evaluable,
                        "not_evaluable_reasons": list(v.not_evaluable_reasons)},
            "ranks": [r.to_dict() for r in self.ranks],
            "cluster": None if self.cluster is None else self.cluster.to_dict(),
            "warnings": list(self.warnings),
            "thresholds": self.thresholds.to_dict(),
        }


# ------------------------------------------------------------------------------------------------- helpers


def _in_windows(df: pd.DataFrame, col: str, windows: tuple[tuple[float, float], ...]) -> pd.DataFrame:
    t = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    mask = in_windows_mask(t, windows)
    return df if mask.all() else df[mask]


def _overlap_sums(events: pd.DataFrame, windows: tuple[tuple[float, float], ...]) -> dict[str, float] | None:
    """Σ Overlap Analysis durations per name over events starting in ``windows`` (analyzer.breakdown)."""
    scoped = _in_windows(events, "ts_us", windows)
    totals = breakdown.ascend_overlap_totals(scoped)
    if totals.empty:
        return None
    return {n: float(totals[n].sum()) if n in totals.columns else 0.0 for n in ev.OVERLAP_NAMES}


def _csv_overlap(st: pd.DataFrame) -> dict[str, float] | None:
    """Σ over steps of the step_trace_time.csv columns (µs) named like the Overlap Analysis events."""
    if any(n not in st.columns for n in ev.OVERLAP_NAMES):
        return None
    return {n: float(pd.to_numeric(st[n], errors="coerce").fillna(0.0).sum()) for n in ev.OVERLAP_NAMES}


def _comm_applicable(rank: RankData, world_size: int | None) -> tuple[bool, str]:
    st, kd = rank.tables.get("step_trace_time"), rank.tables.get("kernel_details")
    has_comm = (bool((rank.events["category"] == ev.COMMUNICATION).any()) or rank.communication is not None
                or (st is not None and "Communication" in st.columns
                    and float(pd.to_numeric(st["Communication"], errors="coerce").fillna(0.0).sum()) > 0)
                or (kd is not None and "Accelerator Core" in kd.columns and bool((kd["Accelerator Core"] == "HCCL").any())))
    if has_comm:
        return True, ""
    if world_size is not None and world_size > 1:
        return True, ""
    return False, ("single card: the capture has no communication events (no HCCL/Communication process, no NCCL "
                   "kernels, no communication.json) — no communication candidate")


def _world_size(rank: RankData, n_ranks: int) -> int | None:
    dist = rank.meta.get("distributedInfo") or {}
    if isinstance(dist, dict) and dist.get("world_size"):
        return int(dist["world_size"])
    return n_ranks if n_ranks > 1 else None


def _records(frame: pd.DataFrame) -> tuple[dict[str, float | None], ...]:  # step stays an int
    """DataFrame rows as plain-float dicts (JSON-ready: a non-finite ratio — ``overlap_pct`` of a step with no
    communication, a share of a zero span — is None; :data:`BREAKDOWN_NULL_REASONS` says why)."""
    return tuple({str(k): int(v) if k == "step" else (float(v) if np.isfinite(v) else None) for k, v in row.items()}
                 for row in frame.to_dict("records"))


#: why a step-breakdown ratio can be null (``RankAnalysis.to_dict()["step_breakdown_null_reasons"]``).
BREAKDOWN_NULL_REASONS: dict[str, str] = {
    "overlap_pct": "the step has no communication: overlap / communication is undefined",
    "idle_pct": "the step has no device span: idle / span is undefined",
    "memcpy_share_pct": "the step has no device span: memcpy / span is undefined",
}


def _step_breakdown(rank: RankData, fmt: str) -> tuple[tuple[dict[str, float | None], ...], str]:
    if rank.events.empty:
        return (), "no trace"
    st = rank.tables.get("step_trace_time")
    cluster_rows = rank.totals_source == TOTALS_CLUSTER  # a cluster_analysis_output rank: the table is all there is
    if not rank.device_complete and (rank.dropped_events[0] or cluster_rows) and st is not None \
            and "Step" in st.columns and _csv_overlap(st) is not None:  # device events thinned: torch_npu's table
        rows = st[["Step", *ev.OVERLAP_NAMES]].copy()
        rows["Step"] = pd.to_numeric(rows["Step"], errors="coerce")
        rows = rows.dropna(subset=["Step"]).rename(columns={"Step": "step"})
        rows[list(ev.OVERLAP_NAMES)] = rows[list(ev.OVERLAP_NAMES)].apply(pd.to_numeric, errors="coerce").fillna(0.0)
        return _records(rows), f"step_trace_time.csv (totals source: {rank.totals_source})"
    if fmt == "ascend":
        ov = breakdown.ascend_overlap_totals(rank.events)
        if not ov.empty:
            return _records(ov), "torch_npu Overlap Analysis events (= step_trace_time.csv)"
        rows = breakdown.to_frame(breakdown.ascend_step_breakdown(rank.events))
        return _records(rows), "recomputed from device tasks (analyzer.breakdown)"
    rows = breakdown.to_frame(breakdown.kineto_step_breakdown(rank.events))
    return _records(rows), "Kineto GPU events per ProfilerStep (HTA definitions, analyzer.breakdown)"


def _scope_input(name: str, windows: tuple[tuple[float, float], ...], rank: RankData, plan: phases.PhasePlan,
                 th: Thresholds, fmt: str) -> ScopeInput:
    starts = np.array([s.start_us for s in plan.steps], dtype="float64")
    steps = [s for s, ok in zip(plan.steps, in_windows_mask(starts, windows), strict=True) if ok]
    kd = rank.tables.get("kernel_details")
    kreason = ("Kineto traces carry no pipe-utilisation metrics (Ascend kernel_details.csv PipeUtilization only)"
               if fmt == "kineto" else "kernel_details.csv not found")
    if kd is not None and "Start Time(us)" in kd.columns and rank.files.get("trace_view.json") and name != OVERALL:
        kd = _in_windows(kd, "Start Time(us)", windows)
    elif kd is not None and name != OVERALL:
        kreason = "kernel_details.csv rows cannot be placed in phase windows without the trace clock"
        kd = None
    overlap = _overlap_sums(rank.events, windows)
    overlap_source = "torch_npu Overlap Analysis events (= step_trace_time.csv columns), analyzer.breakdown"
    st = rank.tables.get("step_trace_time")
    if name == OVERALL and st is not None and (rank.events.empty or not rank.device_complete):
        overlap = _csv_overlap(st)
        overlap_source = f"step_trace_time.csv (the trace is {'missing' if rank.events.empty else rank.totals_source})"
    return ScopeInput(
        name=name, windows=windows, step_count=len(steps), step_source=plan.step_source, kernel_details=kd,
        kernel_reason=kreason, overlap=overlap, overlap_source=overlap_source,
        gap_floor_us=th.v("idleGapFloorUs"), step_durs_us=tuple(s.dur_us for s in steps), peak_tflops=th.v("peakTflops"),
        trace_truncated=not rank.device_complete and not rank.events.empty, has_timeline=rank.has_timeline,
    )


def _analyze_scope(name: str, phase: str | None, windows: tuple[tuple[float, float], ...], rank: RankData,
                   plan: phases.PhasePlan, th: Thresholds, comm_ok: tuple[bool, str], fmt: str,
                   no_verdict: str | None = None, wait: WaitInputs = (None, None)) -> ScopeResult:
    """One scope; ``no_verdict`` (the plausibility gate's reason) withholds the verdict: kind ``none``, the
    candidates' scores kept as context, the reason as its summary."""
    sin = _scope_input(name, windows, rank, plan, th, fmt)
    ind = compute_indicators(rank.events, sin)
    overall = name == OVERALL  # the communication analysis and the arrival skew cover the whole capture
    ind = comm_wait.extend(ind, comm_wait.wait_indicators(
        _in_windows(rank.events, "ts_us", windows), wait[0] if overall else None, th.v("commLinkBandwidthGBps"),
        wait[1] if overall else None))
    verdict = locate(ind, th, comm_applicable=comm_ok[0], comm_excluded_reason=comm_ok[1])
    if no_verdict:
        verdict = replace(verdict, kind=NONE, subtype=None, secondary=(), summary=no_verdict, selection="")
    ev_ok = evaluable.assess(ind, th, accelerator(rank, fmt), sin.overlap is not None)
    if not ev_ok.evaluable:  # evidence before verdict: no score, no candidates, no advice; indicators kept
        verdict = replace(verdict, kind=NONE, score=0.0, subtype=None, candidates=(), secondary=(),
                          summary=ev_ok.summary, selection="", evaluable=False, not_evaluable_reasons=ev_ok.reasons)
        return ScopeResult(name, phase, windows, ind, verdict, (), (), gains.combine((), th.v("optimisticCapPct")))
    hyps = rootcause.infer(verdict, ind, th, phase)
    recs = recommend.recommend(name, verdict, hyps, ind, phase, th)
    combined = gains.combine((r.gain for r in recs if r.gain is not None), th.v("optimisticCapPct"))
    return ScopeResult(name, phase, windows, ind, verdict, hyps, recs, combined)


def accelerator(rank: RankData, fmt: str) -> str:
    """The accelerator of a rank: the reader's ``meta["accelerator"]``, else ``npu`` (Ascend) / ``gpu``."""
    return str(rank.meta.get("accelerator") or ("npu" if fmt == "ascend" else "gpu"))


def _merge_recommendations(scopes: dict[str, ScopeResult]) -> tuple[recommend.Recommendation, ...]:
    """Seed §1: merge by id across scopes, keep the one with the most evidence, list every scope."""
    best: dict[str, recommend.Recommendation] = {}
    where: dict[str, list[str]] = {}
    for sname, sc in scopes.items():
        for r in sc.recommendations:
            where.setdefault(r.id, []).append(sname)
            if r.id not in best or len(r.basis) > len(best[r.id].basis):
                best[r.id] = r
    merged = [recommend.Recommendation(**{**r.__dict__, "scopes": tuple(where[r.id])}) for r in best.values()]
    return tuple(sorted(merged, key=lambda r: -r.priority_score))


def _boundary_warnings(plan: phases.PhasePlan, scopes: dict[str, ScopeResult], rank: RankData,
                       graph: tuple[bool, str]) -> list[str]:
    """Seed §8 confidence and boundary statements."""
    out = [f"rank {rank.rank}: {n}" for n in plan.notes]
    if plan.confidence == "low":
        out.append(f"rank {rank.rank}: phase split has low confidence — {plan.reason}")
    if graph[0]:
        out.append(f"rank {rank.rank}: graph mode detected — {graph[1]}; host-dispatch indicators under-count the "
                   "real launches, so a missing host bottleneck is NOT evidence that there is none")
    if rank.totals_source != "trace" or rank.dropped_events[0]:
        out.append(f"rank {rank.rank}: totals source is '{rank.totals_source}'"
                   + (f"; {rank.dropped_events[0]} events dropped ({rank.dropped_events[1]})" if rank.dropped_events[0] else ""))
    has_cann = bool(len(rank.events)) and bool(
        ev.matches(rank.events["name"], lambda v: v.startswith(("AscendCL@", "Runtime@", "Node@"))).any())
    if rank.meta.get("level") == "Level0" and not has_cann:
        out.append(f"rank {rank.rank}: Level0 capture — no CANN layer: runtime-level dispatch and synchronize calls are "
                   "not in the trace and pipe-utilisation metrics are absent (re-capture at Level1 for them)")
    ov = scopes[OVERALL].indicators
    if not ov["mac_ratio"].available:
        out.append(f"rank {rank.rank}: MAC/MTE2 utilisation unavailable ({ov['mac_ratio'].reason}); compute- vs "
                   "memory-bound can only be stated conditionally")
    util = ov.value("matmul_flops_utilisation_pct")
    if util is not None and util > 100.0:
        out.append(f"rank {rank.rank}: matmul throughput {ov.value('matmul_tflops'):.1f} TFLOPS is {util:.0f} % of "
                   "peakTflops: the peak is set for another chip or precision, or the kernel shapes were misread (seed §9)")
    if all(s.verdict.kind == NONE and not s.verdict.summary.startswith(plausibility.NO_VERDICT) for s in scopes.values()):
        out.append(f"rank {rank.rank}: no scope reaches the trigger score — only closeness and missing evidence are given")
    return out


def _screened(rank: RankData, th: Thresholds) -> tuple[RankData, list[str], str | None]:
    """``rank`` with its implausible events set aside (:mod:`analyzer.plausibility`), the warnings saying so, and
    the reason to withhold the verdict (None: the plausible share reaches ``minPlausibleEventPct``).

    Raises ``IngestError`` when nothing is left to analyse: no plausible event and no table (a file
    holding just ``{`` is then refused like one holding ``{"traceEvents": []}``)."""
    screen = plausibility.screen_events(rank.events, rank.base_ts_us)
    trace = rank.files.get("trace") or rank.files.get("trace_view.json") or rank.path
    if screen.kept.empty and not rank.tables and rank.communication is None:
        why = (f"all {screen.total:,} events are implausible ({', '.join(screen.set_aside)})" if screen.total
               else "no complete event (ph 'X') and no table to analyse")
        raise IngestError(trace, "traceEvents", why)
    unparsed = rank.dropped_events.by_category.get("unparsed", 0)
    no_verdict = plausibility.no_verdict_reason(len(screen.kept), screen.total, unparsed, th.v("minPlausibleEventPct"))
    gate = [f"rank {rank.rank}: {trace}: {no_verdict}"] if no_verdict else []
    warning = screen.warning(rank.rank, str(trace))
    if warning is None:
        return rank, gate, no_verdict
    by_cat = {**rank.dropped_events.by_category, "implausible": screen.n_set_aside}
    reason = "; ".join(r for r in (rank.dropped_events.reason, "implausible ts/dur or step order") if r)
    dropped = DroppedEvents(rank.dropped_events.count + screen.n_set_aside, reason, by_cat)
    return dataclasses.replace(rank, events=screen.kept, dropped_events=dropped), [warning, *gate], no_verdict


def analyze_rank(rank: RankData, th: Thresholds, fmt: str, phase_override: str | None = None,
                 n_ranks: int = 1, arrival: comm_wait.Arrival | None = None,
                 layout: comm_groups.Layout | None = None) -> RankAnalysis:
    """All scopes of one rank (its implausible events set aside first, with a warning); ``arrival``: the
    collectives' arrival skew across the dataset's ranks (``comm_wait.arrival``); ``layout``: the run's parallel
    layout, to attribute the communication groups to dimensions (``comm_groups``)."""
    rank, screen_warnings, no_verdict = _screened(rank, th)
    plan = phases.plan_phases(rank.events, th, rank.tables.get("step_trace_time"), phase_override)
    rank, table_warnings = steptable.checked(rank, plan.steps)
    screen_warnings = screen_warnings + table_warnings
    world = _world_size(rank, n_ranks)
    comm_ok = _comm_applicable(rank, world)
    split = cluster_comm.rank_comm(rank)[0]
    rank_arrival = ((arrival.wait_us[rank.rank], arrival.comm_us[rank.rank])
                    if arrival is not None and rank.rank in arrival.wait_us else None)
    wait: WaitInputs = (None if split is None else comm_wait.split_of(split.to_dict()), rank_arrival)
    dominant = plan.dominant
    scopes: dict[str, ScopeResult] = {}
    for name, windows in plan.scopes.items():
        phase = dominant if name == OVERALL else name
        scopes[name] = _analyze_scope(name, phase, windows, rank, plan, th, comm_ok, fmt, no_verdict, wait)
    graph = graph_mode_signal(rank.events, th.v("graphKernelsPerLaunch")) if not rank.events.empty else (False, "")
    host_thinned = sorted(set(getattr(rank.dropped_events, "by_category", {})) & {ev.HOST_OP, ev.DISPATCH, ev.SYNC})
    graph_note = []
    if graph[0] and host_thinned:  # kernels per launch is meaningless once the budget thinned the launches
        graph = (False, "")
        graph_note = [f"rank {rank.rank}: graph-mode detection skipped: the event budget thinned the host "
                      f"{', '.join(host_thinned)} events it counts"]
    sb, sb_src = _step_breakdown(rank, fmt)
    by_group = comm_groups.of_rank(rank, layout, world)
    warnings = (screen_warnings + _boundary_warnings(plan, scopes, rank, graph) + graph_note
                + [f"rank {rank.rank}: {e}" for e in (by_group.errors if by_group else ())])
    meta: dict[str, Any] = {k: rank.meta[k] for k in ("level", "device_id", "unknown_categories", "accelerator")
                            if k in rank.meta}
    ra = RankAnalysis(rank.rank, str(rank.path), plan, scopes, _merge_recommendations(scopes), graph[0], graph[1],
                        sb, sb_src, tuple(sorted(rank.files)), rank.totals_source, tuple(warnings), meta,
                        capture_sync_counts(rank.events), _dropped_dict(rank.dropped_events), _hta_overlap(rank, fmt),
                        confidence.raise_confidence(confidence.CaptureFacts(
                            plan.confidence, plan.override, scopes[OVERALL].indicators["mac_ratio"].available,
                            tuple(rank.files), (world or 1) > 1, fmt)), _hta_shares(rank, fmt),
                        None if by_group is None else by_group.to_dict())
    attached: RankAnalysis = advisor.attach(ra, rank, th, fmt, OVERALL)
    return attached



def _hta_overlap(rank: RankData, fmt: str) -> float | None:
    """Comm–compute overlap over HTA's default window (Kineto traces with communication only)."""
    if fmt != "kineto" or rank.events.empty:
        return None
    pct = breakdown.hta_window_overlap_pct(rank.events)
    return round(pct, 4) if np.isfinite(pct) else None


def _hta_shares(rank: RankData, fmt: str) -> dict[str, float] | None:
    """HTA's idle / compute / non-compute shares of the GPU span (Kineto traces with device work only)."""
    if fmt != "kineto" or rank.events.empty:
        return None
    shares = breakdown.hta_window_shares(rank.events)
    return None if shares is None else {k: round(v, 4) for k, v in shares.items()}


def _dropped_dict(dropped: Any) -> dict[str, Any]:
    """``RankData.dropped_events`` as plain data (a ``DroppedEvents`` or a bare ``(count, reason)``)."""
    if hasattr(dropped, "to_dict"):
        return dict(dropped.to_dict())
    count, reason = dropped
    return {"count": int(count), "reason": str(reason), "by_category": {}}


def capture_sync_counts(events: pd.DataFrame) -> dict[str, int]:
    """Host sync-like ops by name over the whole capture (not only the analysed steps)."""
    sync = events[(events["side"] == ev.SIDE_HOST) & (events["category"] == ev.SYNC)]
    return ev.name_counts(sync)


def analyze(dataset: Dataset, thresholds: Thresholds | dict[str, Any] | str | Path | None = None,
            phase_override: str | None = None, layout: comm_groups.Layout | None = None) -> Analysis:
    """Analyse every rank of ``dataset``; add a cluster summary when there are ≥ 2 ranks (``layout``: the run's
    parallel layout, see :mod:`analyzer.comm_groups`)."""
    th = resolve(thresholds)
    if phase_override is not None and phase_override not in phases.PHASES:
        raise ValueError(f"phase_override must be one of {phases.PHASES}, got {phase_override!r}")
    arrival = comm_wait.arrival(dataset.ranks) if dataset.source_format == "kineto" else None
    ranks = tuple(analyze_rank(r, th, dataset.source_format, phase_override, len(dataset.ranks), arrival, layout)
                  for r in dataset.ranks)
    summary = cluster_view.summarize({ra.rank: cluster_view.cluster_row(ra.overall.indicators) for ra in ranks},
                                     dataset.ranks, th.v("clusterSpreadPct"), arrival,
                                     {ra.rank: ra.plan.step_source for ra in ranks})
    if summary is not None:
        summary = replace(summary, unreadable=dataset.unreadable)
    warnings = list(dataset.warnings) + [w for ra in ranks for w in ra.warnings]
    return Analysis(str(dataset.path), dataset.source_format, th, phase_override, ranks, summary, tuple(warnings))
