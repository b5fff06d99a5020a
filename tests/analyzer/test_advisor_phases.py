"""Advisor findings scoped by phase (analyzer.advisor.scope, analyzer.advisor.attach) on synthetic inputs
(labelled synthetic): two phases, a rule that fires in one and not the other, a phase with no rows for a rule,
and ``ndval compare`` matching findings by rule + phase + subject."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pandas as pd

from analyzer.advisor import advise, attach, render, scope
from analyzer.compare.findings import finding_changes, finding_shares
from analyzer.thresholds import default_thresholds
from tests.analyzer.test_advisor_rules import RMS, events, host, inp, kernels

TH = default_thresholds()
PREFILL_W, DECODE_W = ((0.0, 4000.0),), ((4000.0, 8000.0),)


def two_phase_input() -> Any:
    """Synthetic: an rms-norm call sequence and a 2 ms GC pause in prefill (0-4000 µs), plain calls in decode
    (4000-8000 µs); one AICPU kernel in decode only."""
    rows = [*host(RMS, t0=100.0), ("GC", "host", 500.0, 2000.0), *host(["aten::empty", "aten::to"] * 3, t0=4100.0)]
    kd = kernels([{"Accelerator Core": "AI_CPU", "Type": "Unique", "Start Time(us)": 4500.0, "Duration(us)": 400.0}])
    return inp(events=scope.relevant_events(events(rows)), kernels=kd, env={"HCCL_ALGO": "ring"}, window_us=8000.0)


def test_a_rule_fires_in_one_phase_and_not_the_other() -> None:
    full = two_phase_input()
    pre = advise(scope.scoped(full, "prefill", PREFILL_W, 4000.0, True), TH)
    dec = advise(scope.scoped(full, "decode", DECODE_W, 4000.0, True), TH)
    assert {f.id for f in pre.findings} == {"advisor.affinity-api", "advisor.gc"}
    assert {f.id for f in dec.findings} == {"advisor.aicpu"}
    assert dec.quiet["advisor.affinity-api"] == "evaluated: no finding"
    assert pre.quiet["advisor.aicpu"] == "not evaluated: no kernel_details.csv rows in the prefill windows"
    gc = next(f for f in pre.findings if f.id == "advisor.gc")
    assert gc.share_pct == 50.0  # 2000 µs of the 4000 µs prefill phase
    aicpu = dec.findings[0]
    assert aicpu.share_pct == 10.0  # 400 µs of the 4000 µs decode phase


def test_overall_keeps_the_whole_capture_and_ranks_by_its_window() -> None:
    rep = advise(two_phase_input(), TH)
    assert [f.id for f in rep.findings][:2] == ["advisor.gc", "advisor.aicpu"]  # 25 %, 5 % of the 8000 µs capture
    assert "advisor.env-variables" in {f.id for f in rep.findings}
    pre = advise(scope.scoped(two_phase_input(), "prefill", PREFILL_W, 4000.0, True), TH)
    assert pre.quiet["advisor.env-variables"].startswith("not evaluated: environment variables are per process")


def test_a_phase_without_trace_rows_or_placeable_kernels_says_so() -> None:
    full = two_phase_input()
    empty = advise(scope.scoped(full, "decode", ((9000.0, 9500.0),), 1000.0, True), TH)
    assert empty.quiet["advisor.gc"] == "not evaluated: no trace events the rules read in the decode windows"
    unplaced = advise(scope.scoped(full, "decode", DECODE_W, 4000.0, False), TH)
    assert unplaced.quiet["advisor.aicpu"].startswith("not evaluated: kernel_details.csv rows cannot be placed")


def test_communication_and_hccl_rows_are_scoped_by_their_start() -> None:
    comm = {"s": {"collective": {"a@g": {"Communication Time Info": {"Start Timestamp(us)": 1_000_100.0}},
                                 "b@g": {"Communication Time Info": {"Start Timestamp(us)": 1_002_000.0}},
                                 "Total Op Info": {}}}}
    hccl = pd.DataFrame({"op": ["x", "y"], "ts_us": [1_000_500.0, 1_001_500.0]})
    full = inp(events=events([]), communication=comm, hccl_tasks=hccl, base_ts_us=1_000_000)
    pre = scope.scoped(full, "prefill", ((0.0, 1000.0),), 1000.0, True)
    assert list(pre.communication["s"]["collective"]) == ["a@g"] and pre.hccl_tasks["op"].tolist() == ["x"]
    dec = scope.scoped(full, "decode", ((3000.0, 4000.0),), 1000.0, True)
    assert dec.communication is None and dec.notes["communication"].endswith("in the decode windows")


@dataclass(frozen=True)
class FakeRankAnalysis:
    """Synthetic stand-in for ``analyzer.analysis.RankAnalysis`` (the fields ``attach`` reads and sets)."""

    scopes: dict[str, Any]
    advisor: dict[str, Any] | None = None
    hta_breakdowns: dict[str, Any] | None = None


def fake_rank_analysis() -> tuple[Any, Any]:
    """Synthetic RankAnalysis / RankData stand-ins with overall + prefill + decode scopes."""
    def sc(windows: tuple[tuple[float, float], ...], wall: float, phase: str) -> Any:
        return SimpleNamespace(windows=windows, phase=phase, indicators=SimpleNamespace(value=lambda _k: wall))
    full = two_phase_input()
    ra = FakeRankAnalysis(scopes={"overall": sc(((0.0, 8000.0),), 8000.0, "decode"),
                                 "prefill": sc(PREFILL_W, 4000.0, "prefill"), "decode": sc(DECODE_W, 4000.0, "decode")})
    rank = SimpleNamespace(rank=0, files={}, meta={"profiler_metadata": {"ENV_VARIABLES": full.env}}, events=full.events,
                           tables={"kernel_details": full.kernels}, communication=None, base_ts_us=0,
                           path=SimpleNamespace(is_dir=lambda: False))
    return ra, rank


def test_attach_reports_every_phase_and_the_renderers_show_it() -> None:
    ra, rank = fake_rank_analysis()
    payload = attach(ra, rank, TH, "ascend", "overall").advisor
    assert set(payload["phases"]) == {"prefill", "decode"}
    pre, dec = payload["phases"]["prefill"], payload["phases"]["decode"]
    assert [f["scope"] for f in pre["findings"]] == ["prefill"] * len(pre["findings"])
    assert {f["id"] for f in pre["findings"]} == {"advisor.gc", "advisor.affinity-api"}
    assert {f["id"] for f in dec["findings"]} == {"advisor.aicpu"}
    md = "\n".join(render.markdown({"advisor": payload}))
    assert "#### Phase `decode` (1 window(s), 4000.0 µs)" in md and "`advisor.aicpu` in `decode`" in md
    assert "Phase prefill" in render.html_section({"advisor": payload})


def test_compare_matches_by_rule_phase_and_subject() -> None:
    ra, rank = fake_rank_analysis()
    before = attach(ra, rank, TH, "ascend", "overall").advisor
    rank.tables = {"kernel_details": None}  # after: the AICPU kernel is gone
    after = attach(ra, rank, TH, "ascend", "overall").advisor
    rows = {(r["id"], r["phase"], r["subject"]): r["verdict"]
            for r in finding_changes(finding_shares(before), finding_shares(after))}
    assert rows[("advisor.aicpu", "decode", "Unique")] == "resolved"
    assert rows[("advisor.aicpu", "overall", "Unique")] == "resolved"
    assert rows[("advisor.gc", "prefill", "—")] == "persists"
    assert rows[("advisor.affinity-api", "prefill", "torch_npu.npu_rms_norm")] == "persists"
    assert ("advisor.affinity-api", "decode", "torch_npu.npu_rms_norm") not in rows
