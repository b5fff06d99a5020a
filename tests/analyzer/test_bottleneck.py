"""Seed §2 scoring on SYNTHETIC indicator tables: gates, weights, sub-types, evidence rows, verdict."""

from __future__ import annotations

import pytest

from analyzer.bottleneck import (
    COMMUNICATION,
    COMPUTE,
    COPY,
    HOST,
    NONE,
    locate,
    score_comm,
    score_compute,
    score_copy,
    score_host,
)
from analyzer.thresholds import default_thresholds
from tests.analyzer.synthetic import make_indicators

TH = default_thresholds()


def test_host_needs_primary_and_support() -> None:
    # primary only (idle 20 %), no support, host busy low -> gate fails, score 0
    ind = make_indicators(device_idle_pct=20, host_exclusive_pct=10, dispatch_ops_per_step=100,
                          host_exclusive_per_step_us=100, host_busy_pct=20, sync_op_count=0)
    c = score_host(ind, TH)
    assert not c.gate_reached and c.score == 0 and c.not_reached
    # add the support condition: 45 × sev(hostOnly 50 %) + 35 × sev(dispatch 1800) + 20 × sev(busy 60 %)
    ind = make_indicators(device_idle_pct=5, host_exclusive_pct=50, dispatch_ops_per_step=1800,
                          host_exclusive_per_step_us=100, host_busy_pct=60, sync_op_count=0)
    c = score_host(ind, TH)
    sev_only = 0.5 + 0.5 * (50 - 45) / (90 - 45)
    sev_disp = 0.5 + 0.5 * (1800 - 1200) / (2400 - 1200)
    sev_busy = 0.5 + 0.5 * (60 - 45) / (90 - 45)
    assert c.score == pytest.approx(round(45 * sev_only + 35 * sev_disp + 20 * sev_busy, 1))
    assert c.triggered


def test_compute_subtypes() -> None:
    base = {"device_busy_pct": 95, "compute_pct": 80, "comm_exposed_pct": 2}
    assert score_compute(make_indicators(**base, mac_ratio=0.6, mte2_ratio=0.2), TH).subtype == "compute-bound"
    assert score_compute(make_indicators(**base, mac_ratio=0.35, mte2_ratio=0.6), TH).subtype == "memory-bound"
    assert score_compute(make_indicators(**base, mac_ratio=0.1, mte2_ratio=0.2), TH).subtype == "low-efficiency"
    c = score_compute(make_indicators(**base), TH)  # MAC/MTE2 unavailable: no sub-type, conditional note
    assert c.subtype is None and "conditional" in c.summary and c.triggered


def test_comm_needs_both_gates_and_latency_subtype() -> None:
    hidden = make_indicators(comm_pct_of_device=40, comm_exposed_pct=2, comm_overlap_pct=90, comm_duration_median_us=30)
    c = score_comm(hidden, TH)
    assert c.score == 0 and not c.gate_reached  # heavy but hidden
    exposed = make_indicators(comm_pct_of_device=40, comm_exposed_pct=30, comm_overlap_pct=10, comm_duration_median_us=30)
    c = score_comm(exposed, TH)
    # 55 × 1 + 20 × sev(30 us vs <=60, sat 30 -> 1) + 15 × sev(overlap 10 vs <40, sat 20 -> 1)
    assert c.subtype == "latency-bound" and c.score == pytest.approx(90.0)
    # bandwidth-bound, overlap fine: 55 × 1 + 15 × sev(24 MiB vs >= 16, sat 32 -> 0.5 + 0.5 × 8/16 = 0.75)
    # + 15 × 0 (overlap 50 % is not < 40 %) = 66.25
    big = make_indicators(comm_pct_of_device=40, comm_exposed_pct=30, comm_overlap_pct=50,
                          comm_duration_median_us=500, comm_message_median_mb=24)
    c = score_comm(big, TH)
    assert c.subtype == "bandwidth-bound" and c.score == pytest.approx(55 + 15 * 0.75, abs=0.05)  # score has 1 decimal


def test_evidence_rows_carry_threshold_and_unavailable_reason() -> None:
    c = score_compute(make_indicators(device_busy_pct=90, compute_pct=70), TH)
    mac = next(e for e in c.evidence if e.metric == "mac_ratio")
    assert mac.value is None and mac.passed is None and "unavailable" in mac.comparison
    busy = next(e for e in c.evidence if e.metric == "device_busy_pct")
    assert busy.threshold_id == "deviceBusyGate" and busy.threshold == 82 and busy.relation == ">=" and busy.passed
    assert "rationale" in busy.comparison


def test_no_single_bottleneck_is_stated() -> None:
    v = locate(make_indicators(device_busy_pct=50, compute_pct=40, device_idle_pct=3, host_exclusive_pct=5,
                               comm_pct_of_device=5, comm_exposed_pct=1, copy_pct=0.5, sync_op_count=0), TH)
    assert v.kind == NONE and "closest" in v.summary


def test_comm_can_be_excluded() -> None:
    v = locate(make_indicators(device_busy_pct=95, compute_pct=90, comm_exposed_pct=0), TH, comm_applicable=False,
               comm_excluded_reason="single card")
    assert v.candidate(COMMUNICATION) is None and v.excluded == {COMMUNICATION: "single card"}
    assert v.kind == COMPUTE


def test_several_triggered_primary_is_largest_time_share() -> None:
    ind = make_indicators(device_idle_pct=30, host_exclusive_pct=20, host_exclusive_per_step_us=5000, host_busy_pct=80,
                          dispatch_ops_per_step=100, comm_pct_of_device=90, comm_exposed_pct=60, comm_overlap_pct=5,
                          sync_op_count=0, copy_pct=0)
    v = locate(ind, TH)
    host, comm = v.candidate(HOST), v.candidate(COMMUNICATION)
    assert host is not None and comm is not None and host.triggered and comm.triggered
    assert host.score > comm.score  # host saturates more terms ...
    assert v.kind == COMMUNICATION and HOST in v.secondary  # ... but exposed comm holds more wall time
    assert v.candidate(COPY) is not None
    # the choice rule is stated in the output, quoting both shares in order
    assert "largest share of wall time" in v.selection and "seed is silent" in v.selection
    assert v.selection.index("comm_exposed_pct = 60.00 %") < v.selection.index("host_exclusive_pct = 20.00 %")
    assert v.to_dict()["selection"] == v.selection and v.selection in v.summary


def test_single_triggered_candidate_needs_no_rule() -> None:
    v = locate(make_indicators(device_busy_pct=95, compute_pct=90, comm_exposed_pct=0), TH)
    assert v.kind == COMPUTE and v.secondary == () and "only candidate" in v.selection
    assert "largest share" not in v.summary


def test_trigger_score_override_flips_verdict() -> None:
    ind = make_indicators(device_busy_pct=83, compute_pct=56, comm_exposed_pct=11.9)  # a marginal compute case
    assert locate(ind, TH).kind == COMPUTE
    assert locate(ind, TH.with_overrides({"deviceBusyGate": 90})).kind == NONE


def test_compute_and_copy_weights() -> None:
    """Seed §2.2 (55 / 25 / 20 / 12) and §2.4 (45 / 12 / 10) written as arithmetic, SYNTHETIC indicators."""
    sev = lambda v, gate, sat: 0.5 + 0.5 * min(1.0, max(0.0, (v - gate) / (sat - gate)))  # noqa: E731
    base = {"device_busy_pct": 90, "compute_pct": 60, "comm_exposed_pct": 9}
    busy_term = 55 * max(sev(90, 82, 164), sev(60, 55, 110))
    low_comm_term = 25 * sev(12 - 9, 0, 6)  # lower gate < 12, saturation 6: mirrored distance
    c = score_compute(make_indicators(**base, mac_ratio=0.6, mte2_ratio=0.1), TH)
    assert c.score == pytest.approx(round(busy_term + low_comm_term + 20 * sev(0.6, 0.45, 0.9), 1))
    c = score_compute(make_indicators(**base, mac_ratio=0.4, mte2_ratio=0.7), TH)
    assert c.score == pytest.approx(round(busy_term + low_comm_term + 12 * sev(0.7, 0.45, 0.9), 1))
    c = score_copy(make_indicators(copy_pct=6, d2h_per_step_us=100, h2d_per_step_us=300, sync_op_count=4,
                                   sync_ops_per_step=0.5), TH)
    assert c.triggered and c.score == pytest.approx(round(45 * sev(6, 4, 8) + 12 * 0.5 + 10 * sev(300, 200, 400), 1))
