"""Seed §2–§3: score the four bottleneck candidates of one scope and build their evidence rows.

``score = Σ weight × severity(indicator, gate)`` (``analyzer.thresholds.severity``), clamped to 0–100;
the score is evidence strength, not a loss share. A candidate reaches the bar at ``triggerScore``.
The weights (seed §2.1–§2.4) are the ``weight*`` parameters of ``thresholds_default.yaml`` (value, unit,
source and rationale there; overridable like every threshold); this module names them, never retypes them.
Gates are gates: a candidate whose gate condition fails scores 0 and lists the gates not reached.
Nothing here formats numbers into thresholds' text: evidence rows carry the threshold id and value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from analyzer.indicators import IndicatorSet
from analyzer.thresholds import Threshold, Thresholds, passes, severity

HOST = "host"
COMPUTE = "compute"
COMMUNICATION = "communication"
COPY = "copy"
NONE = "none"
KINDS: tuple[str, ...] = (HOST, COMPUTE, COMMUNICATION, COPY)
LABELS: dict[str, str] = {
    HOST: "host dispatch bottleneck",
    COMPUTE: "device compute bottleneck",
    COMMUNICATION: "cross-device communication bottleneck",
    COPY: "data copy (H2D/D2H) bottleneck",
    NONE: "no single dominant bottleneck",
}
#: the communication sub-type of collectives that mostly wait for a peer (``analyzer.comm_wait``).
WAIT_BOUND = "wait-bound"
#: the label of a scope with too little evidence to be scored (``analyzer.evaluable``).
NOT_EVALUABLE_LABEL = "not evaluable"



@dataclass(frozen=True)
class EvidenceRow:
    """Seed §3: one quantified piece of evidence."""

    metric: str
    label: str
    value: float | None
    unit: str
    threshold_id: str | None
    threshold: float | None
    relation: str | None
    comparison: str
    source: str
    passed: bool | None
    basis: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain data (stable keys)."""
        return {
            "metric": self.metric, "label": self.label,
            "value": None if self.value is None else round(self.value, 4), "unit": self.unit,
            "threshold_id": self.threshold_id, "threshold": self.threshold, "relation": self.relation,
            "comparison": self.comparison, "source": self.source, "basis": self.basis, "passed": self.passed,
        }


@dataclass(frozen=True)
class Candidate:
    """One scored bottleneck candidate."""

    kind: str
    score: float
    triggered: bool
    gate_reached: bool
    subtype: str | None
    evidence: tuple[EvidenceRow, ...]
    not_reached: tuple[str, ...]
    summary: str

    @property
    def label(self) -> str:
        """Human label of the kind."""
        return LABELS[self.kind]

    def to_dict(self) -> dict[str, Any]:
        """Plain data (stable keys)."""
        return {
            "kind": self.kind, "label": self.label, "score": self.score, "triggered": self.triggered,
            "gate_reached": self.gate_reached, "subtype": self.subtype, "summary": self.summary,
            "not_reached": list(self.not_reached), "evidence": [e.to_dict() for e in self.evidence],
        }


@dataclass(frozen=True)
class Verdict:
    """The scope's conclusion: the top triggered candidate, or ``none``."""

    kind: str
    score: float
    subtype: str | None
    candidates: tuple[Candidate, ...]
    secondary: tuple[str, ...]
    excluded: dict[str, str] = field(default_factory=dict)
    summary: str = ""
    selection: str = ""
    #: False when the scope carries too little evidence to be scored (``analyzer.evaluable``): no candidates then.
    evaluable: bool = True
    not_evaluable_reasons: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """Human label of the verdict."""
        return LABELS[self.kind] if self.evaluable else NOT_EVALUABLE_LABEL

    def candidate(self, kind: str) -> Candidate | None:
        """The candidate of ``kind`` (None when excluded)."""
        return next((c for c in self.candidates if c.kind == kind), None)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (stable keys)."""
        return {
            "kind": self.kind, "label": self.label, "score": self.score, "subtype": self.subtype,
            "secondary": list(self.secondary), "excluded": dict(self.excluded), "summary": self.summary,
            "selection": self.selection, "candidates": [c.to_dict() for c in self.candidates],
            "evaluable": self.evaluable, "not_evaluable_reasons": list(self.not_evaluable_reasons),
        }


class _Rows:
    """Collects evidence rows and not-reached gates for one candidate."""

    def __init__(self, ind: IndicatorSet, th: Thresholds) -> None:
        self.ind, self.th = ind, th
        self.rows: list[EvidenceRow] = []
        self.missing: list[str] = []

    def gate(self, metric: str, threshold_id: str, *, required: bool = True) -> bool:
        """Add a gated row; return whether it passed."""
        i, t = self.ind[metric], self.th[threshold_id]
        ok = passes(i.value, t)
        self.rows.append(EvidenceRow(
            metric=metric, label=i.label, value=i.value, unit=i.unit, threshold_id=threshold_id,
            threshold=t.value, relation=t.relation, comparison=_compare(i.value, i.unit, i.reason, t),
            source=i.source, passed=ok if i.available else None, basis=i.basis,
        ))
        if not ok and required:
            shown = "unavailable" if not i.available else f"{i.value:.2f} {i.unit}"
            self.missing.append(f"{metric} = {shown}: gate {threshold_id} ({t.describe()}) not reached")
        return ok

    def info(self, metric: str, comparison: str = "") -> None:
        """Add an ungated context row."""
        i = self.ind[metric]
        text = comparison or (f"measured {i.value:.2f} {i.unit}" if i.available else f"unavailable: {i.reason}")
        self.rows.append(EvidenceRow(
            metric=metric, label=i.label, value=i.value, unit=i.unit, threshold_id=None, threshold=None,
            relation=None, comparison=text, source=i.source, passed=None, basis=i.basis,
        ))

    def sev(self, metric: str, threshold_id: str) -> float:
        return severity(self.ind[metric].value, self.th[threshold_id])


def _compare(value: float | None, unit: str, reason: str, t: Threshold) -> str:
    if value is None:
        return f"unavailable ({reason}); gate {t.id} {t.describe()} — rationale: {t.rationale}"
    verdict = "reached" if passes(value, t) else "not reached"
    return f"{value:.2f} {unit} vs {t.id} {t.describe()}: {verdict} — rationale: {t.rationale}"


def _clamp_score(x: float) -> float:
    return round(min(100.0, max(0.0, x)), 1)


def _finish(kind: str, score: float, gate: bool, subtype: str | None, rows: _Rows, th: Thresholds,
            summary: str) -> Candidate:
    s = _clamp_score(score if gate else 0.0)
    return Candidate(kind=kind, score=s, triggered=gate and passes(s, th["triggerScore"]), gate_reached=gate,
                     subtype=subtype, evidence=tuple(rows.rows), not_reached=tuple(rows.missing), summary=summary)


def score_host(ind: IndicatorSet, th: Thresholds) -> Candidate:
    """Seed §2.1: primary (host-exclusive or device-idle) AND (support (dispatch or exclusive/step) OR host busy).

    ``weightHostPrimary × max(sev hostOnly, sev idle) + weightHostSupport × max(sev dispatch, sev exclusive/step)
    + weightHostBusy × sev hostBusy``.
    """
    r = _Rows(ind, th)
    p1, p2 = r.gate("host_exclusive_pct", "hostOnlyGate"), r.gate("device_idle_pct", "deviceIdleSupport")
    s1, s2 = r.gate("dispatch_ops_per_step", "dispatchPerStep"), r.gate("host_exclusive_per_step_us", "hostExclusivePerStepUs")
    busy = r.gate("host_busy_pct", "hostBusyGate", required=False)
    r.info("sync_op_count", _sync_text(ind))
    gate = (p1 or p2) and (s1 or s2 or busy)
    score = (th.v("weightHostPrimary") * max(r.sev("host_exclusive_pct", "hostOnlyGate"), r.sev("device_idle_pct", "deviceIdleSupport"))
             + th.v("weightHostSupport") * max(r.sev("dispatch_ops_per_step", "dispatchPerStep"),
                                    r.sev("host_exclusive_per_step_us", "hostExclusivePerStepUs"))
             + th.v("weightHostBusy") * r.sev("host_busy_pct", "hostBusyGate"))
    summary = ("host-exclusive time and device idle point at host dispatch" if gate
               else "host gates not reached: needs (host-exclusive or device-idle) and (dispatch/step or exclusive/step or host busy)")
    return _finish(HOST, score, gate, None, r, th, summary)


def _sync_text(ind: IndicatorSet) -> str:
    n, us, per = ind.value("sync_op_count"), ind.value("host_sync_us"), ind.value("sync_ops_per_step")
    if n is None:
        return f"unavailable: {ind['sync_op_count'].reason}"
    per_text = "n/a" if per is None else f"{per:.2f}"
    return f"{n:.0f} sync-like ops ({per_text} per step), {us or 0.0:.1f} us in total"


def score_compute(ind: IndicatorSet, th: Thresholds) -> Candidate:
    """Seed §2.2: gate = device busy AND compute share.

    ``weightComputeBusy × max(sev busy, sev share) + weightComputeCommLow × sev(exposed comm low)`` plus the
    sub-type term: MAC ≥ gate → compute-bound (+weightComputeBound × sev); else MTE2 ≥ gate → memory-bound
    (+weightMemoryBound × sev);
    else MAC < low gate → low-efficiency (no points); none → no sub-type (seed: avoid over-reading).
    """
    r = _Rows(ind, th)
    g1, g2 = r.gate("device_busy_pct", "deviceBusyGate"), r.gate("compute_pct", "computeShareGate")
    r.gate("comm_exposed_pct", "commExposedLow", required=False)
    mac_ok = r.gate("mac_ratio", "macRatioComputeBound", required=False)
    mte_ok = r.gate("mte2_ratio", "mte2RatioMemoryBound", required=False)
    low_ok = r.gate("mac_ratio", "lowUtilizationGate", required=False)
    gate = g1 and g2
    score = (th.v("weightComputeBusy") * max(r.sev("device_busy_pct", "deviceBusyGate"), r.sev("compute_pct", "computeShareGate"))
             + th.v("weightComputeCommLow") * r.sev("comm_exposed_pct", "commExposedLow"))
    subtype: str | None = None
    if mac_ok:
        subtype, score = "compute-bound", score + th.v("weightComputeBound") * r.sev("mac_ratio", "macRatioComputeBound")
    elif mte_ok:
        subtype, score = "memory-bound", score + th.v("weightMemoryBound") * r.sev("mte2_ratio", "mte2RatioMemoryBound")
    elif low_ok:
        subtype = "low-efficiency"
    summary = "device busy and compute-dominated" if gate else "compute gates not reached: needs device busy and compute share"
    if gate and not ind["mac_ratio"].available:
        summary += "; MAC/MTE2 unavailable, so compute- vs memory-bound is only conditional"
    return _finish(COMPUTE, score, gate, subtype if gate else None, r, th, summary)


def score_comm(ind: IndicatorSet, th: Thresholds) -> Candidate:
    """Seed §2.3: gate = comm share of device AND exposed comm (both must hold).

    ``weightCommShare × max(sev share, sev exposed)`` + wait/synchronisation-bound (most of the communication
    moves no bytes, ``comm_wait_pct`` ≥ gate, +weightCommWait × sev; ndval, issue 28) or latency-bound (median duration ≤ gate,
    +weightCommLatency × sev) or bandwidth-bound (median message ≥ gate, +weightCommBandwidth × sev)
    + ``weightCommOverlap × sev(overlap below commOverlapLow)``.
    """
    r = _Rows(ind, th)
    g1, g2 = r.gate("comm_pct_of_device", "commShareGate"), r.gate("comm_exposed_pct", "commExposedGate")
    wait = "comm_wait_pct" in ind and r.gate("comm_wait_pct", "commWaitBoundPct", required=False)
    for metric in ("comm_peer_wait_us", "comm_idle_us", "comm_transfer_us", "comm_notify_wait_us"):
        if metric in ind and ind[metric].available:
            r.info(metric)
    lat = r.gate("comm_duration_median_us", "commLatencyBoundUs", required=False)
    bw = r.gate("comm_message_median_mb", "commBandwidthBoundMb", required=False)
    r.gate("comm_overlap_pct", "commOverlapLow", required=False)
    r.info("comm_us_per_step")
    r.info("comm_ops_per_step")
    gate = g1 and g2
    score = th.v("weightCommShare") * max(r.sev("comm_pct_of_device", "commShareGate"), r.sev("comm_exposed_pct", "commExposedGate"))
    subtype: str | None = None
    if wait:
        subtype, score = WAIT_BOUND, score + th.v("weightCommWait") * r.sev("comm_wait_pct", "commWaitBoundPct")
    elif lat:
        subtype, score = "latency-bound", score + th.v("weightCommLatency") * r.sev("comm_duration_median_us", "commLatencyBoundUs")
    elif bw:
        subtype, score = "bandwidth-bound", score + th.v("weightCommBandwidth") * r.sev("comm_message_median_mb", "commBandwidthBoundMb")
    score += th.v("weightCommOverlap") * r.sev("comm_overlap_pct", "commOverlapLow")
    summary = ("communication is a large, exposed share of the step" if gate
               else "communication gates not reached: needs both comm share of device and exposed comm (heavy but hidden otherwise)")
    return _finish(COMMUNICATION, score, gate, subtype if gate else None, r, th, summary)


def score_copy(ind: IndicatorSet, th: Thresholds) -> Candidate:
    """Seed §2.4: gate = any of device copy share, host copy share of host busy, D2H per step.

    ``weightCopyShare × max(sevs) + weightCopySync × min(1, sync ops per step)`` (when sync ops exist)
    ``+ weightCopyH2d × sev(H2D/step)``.
    """
    r = _Rows(ind, th)
    g = [r.gate("copy_pct", "copyShareGate"), r.gate("host_copy_pct_of_host_busy", "hostCopyShareGate"),
         r.gate("d2h_per_step_us", "d2hPerStepUs")]
    r.gate("h2d_per_step_us", "h2dPerStepUs", required=False)
    r.info("sync_op_count", _sync_text(ind))
    gate = any(g)
    score = th.v("weightCopyShare") * max(r.sev("copy_pct", "copyShareGate"),
                               r.sev("host_copy_pct_of_host_busy", "hostCopyShareGate"),
                               r.sev("d2h_per_step_us", "d2hPerStepUs"))
    n, per = ind.value("sync_op_count"), ind.value("sync_ops_per_step")
    if n and per is not None:
        score += th.v("weightCopySync") * min(1.0, per)
    score += th.v("weightCopyH2d") * r.sev("h2d_per_step_us", "h2dPerStepUs")
    summary = "copies take a visible share" if gate else "copy gates not reached"
    return _finish(COPY, score, gate, None, r, th, summary)


#: the indicator measuring the share of wall time each kind of bottleneck holds on the critical path.
SHARE_INDICATOR: dict[str, str] = {
    HOST: "host_exclusive_pct", COMPUTE: "compute_pct", COMMUNICATION: "comm_exposed_pct", COPY: "copy_pct",
}


def attributed_share_pct(kind: str, ind: IndicatorSet) -> float | None:
    """Share of wall time (%) the candidate's own time component takes (see :data:`SHARE_INDICATOR`).

    Used only to order candidates that are *all* triggered: the seed says the score is evidence strength,
    not a loss share, and leaves open which of several triggered candidates is the primary one; ndval names
    the one holding the most wall time (host-exclusive, compute, exposed communication, device copies), and
    lists the others as secondary. Ties or unavailable shares fall back to the score.
    """
    return ind.value(SHARE_INDICATOR[kind])


def locate(ind: IndicatorSet, th: Thresholds, *, comm_applicable: bool = True,
           comm_excluded_reason: str = "") -> Verdict:
    """Score every candidate; verdict = the triggered candidate holding the most wall time (ties: score),
    else ``none`` with the closest candidate and its missing gates (never invent a bottleneck)."""
    cands = [score_host(ind, th), score_compute(ind, th)]
    excluded: dict[str, str] = {}
    if comm_applicable:
        cands.append(score_comm(ind, th))
    else:
        excluded[COMMUNICATION] = comm_excluded_reason or "not applicable"
    cands.append(score_copy(ind, th))
    cands.sort(key=lambda c: -c.score)
    triggered = [c for c in cands if c.triggered]
    if not triggered:
        best = cands[0]
        summary = (f"no candidate reaches triggerScore {th.v('triggerScore'):g}; closest is {best.kind} "
                   f"at {best.score:.1f} — missing: " + "; ".join(best.not_reached[:3]))
        return Verdict(NONE, best.score, None, tuple(cands), (), excluded, summary)
    triggered.sort(key=lambda c: (-(attributed_share_pct(c.kind, ind) or -1.0), -c.score))
    top = triggered[0]
    selection = selection_text(triggered, ind)
    summary = (f"{LABELS[top.kind]} (score {top.score:.1f}{', ' + top.subtype if top.subtype else ''}): {top.summary}"
               + (f". {selection}" if len(triggered) > 1 else ""))
    return Verdict(top.kind, top.score, top.subtype, tuple(cands), tuple(c.kind for c in triggered[1:]),
                   excluded, summary, selection)


def selection_text(triggered: list[Candidate], ind: IndicatorSet) -> str:
    """Why the first of ``triggered`` (already ordered) is the verdict, quoting each candidate's time share."""
    if len(triggered) == 1:
        return f"{triggered[0].kind} is the only candidate reaching triggerScore"

    def share(c: Candidate) -> str:
        pct = attributed_share_pct(c.kind, ind)
        shown = "unavailable" if pct is None else f"{pct:.2f} %"
        return f"{c.kind} {SHARE_INDICATOR[c.kind]} = {shown} (score {c.score:.1f})"

    return ("several candidates triggered; the verdict is the one holding the largest share of wall time "
            "(ndval rule, the seed is silent; ties: score): " + " > ".join(share(c) for c in triggered)
            + "; the others are listed as secondary")
