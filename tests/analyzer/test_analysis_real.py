"""Acceptance on the REAL samples in ../shared/data/profiles (skipped with a reason when absent).

Expected numbers are transcribed from ../shared/data/profiles/README.md ("Independent check values").
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from analyzer import analyze, load_dataset, report

L1_RANK0 = "ascend/msinsight-level1/rank0_ascend_pt"
# README: Level1 rank0, Step 50, step_trace_time.csv (µs)
STEP_TRACE = {"Computing": 8873.756, "Communication": 105991.878, "Communication(Not Overlapped)": 101963.203,
              "Free": 25744.05}
# README: sync ops in the Level1 trace
SYNC_COUNTS = {"aten::item": 27, "aten::_local_scalar_dense": 27, "AscendCL@aclrtSynchronizeStreamWithTimeout": 7,
               "AscendCL@aclrtMemcpy": 5, "AscendCL@aclrtSynchronizeDevice": 1}

PathOf = Callable[[str], Path]


@pytest.fixture(scope="module")
def level1(profile_path: PathOf):  # type: ignore[no-untyped-def]
    return analyze(load_dataset(profile_path(L1_RANK0)))


def test_level1_verdict_is_communication_with_step_trace_evidence(level1) -> None:  # type: ignore[no-untyped-def]
    v = level1.verdict
    assert v.kind == "communication" and v.score >= 40
    comm = v.candidate("communication")
    rows = {e.metric: e for e in comm.evidence}
    for metric in ("comm_pct_of_device", "comm_exposed_pct"):
        assert rows[metric].passed
        for name, value in STEP_TRACE.items():
            assert f"{name} {value:.3f} us" in rows[metric].basis
    ind = level1.primary.overall.indicators
    assert ind.value("comm_us") == pytest.approx(STEP_TRACE["Communication"], rel=1e-3)
    assert ind.value("comm_exposed_us") == pytest.approx(STEP_TRACE["Communication(Not Overlapped)"], rel=1e-3)
    assert ind.value("compute_us") == pytest.approx(STEP_TRACE["Computing"], rel=1e-3)


def test_level1_host_and_comm_both_trigger_and_the_choice_is_stated(level1) -> None:  # type: ignore[no-untyped-def]
    """Host (100) and communication (85) both reach triggerScore on Level1; the verdict goes to the one with
    the largest share of wall time (ndval rule; the seed is silent) and the JSON/Markdown say so."""
    v = level1.verdict
    host, comm = v.candidate("host"), v.candidate("communication")
    assert host.triggered and comm.triggered and host.score > comm.score
    assert v.kind == "communication" and v.secondary == ("host",)
    d = level1.to_dict()["verdict"]
    assert d["secondary"] == ["host"] and "largest share of wall time" in d["selection"]
    assert "comm_exposed_pct = 65.37 %" in d["selection"] and "host_exclusive_pct = 24.71 %" in d["selection"]
    assert d["selection"] in report.to_markdown(level1)


def test_level1_sync_counts_equal_readme(level1) -> None:  # type: ignore[no-untyped-def]
    assert level1.primary.capture_sync_counts == SYNC_COUNTS


def test_level1_mac_mte2_are_duration_weighted_from_kernel_details(level1, profiles_dir: Path) -> None:  # type: ignore[no-untyped-def]
    raw = pd.read_csv(profiles_dir / L1_RANK0 / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", dtype=str)
    raw.columns = [c.strip() for c in raw.columns]
    cube = raw[raw["Accelerator Core"].str.strip().isin(["AI_CORE", "MIX_AIC"])]
    dur = pd.to_numeric(cube["Duration(us)"], errors="coerce")
    ind = level1.primary.overall.indicators
    for col, key in (("aic_mac_ratio", "mac_ratio"), ("aic_mte2_ratio", "mte2_ratio")):
        r = pd.to_numeric(cube[col], errors="coerce")
        ok = r.notna() & dur.notna()
        expected = float((r[ok] * dur[ok]).sum() / dur[ok].sum())
        assert ind.value(key) == pytest.approx(expected, rel=1e-9)
        assert ind.value(key) != pytest.approx(float(r[ok].mean()), rel=1e-3)  # not the plain mean


def test_level1_threshold_override_flips_comm_gate(profile_path: PathOf, tmp_path: Path) -> None:
    ds = load_dataset(profile_path(L1_RANK0))
    y = tmp_path / "t.yaml"
    y.write_text("commExposedGate: 80\n")  # exposed comm is ~65 % of the step: gate no longer reached
    a = analyze(ds, thresholds=y)
    assert a.verdict.kind != "communication" and not a.verdict.candidate("communication").gate_reached


def test_level0_runs_with_unavailable_level1_indicators(profile_path: PathOf) -> None:
    a = analyze(load_dataset(profile_path("ascend/msinsight-level0/rank0_ascend_pt")))
    ind = a.primary.overall.indicators
    for k in ("mac_ratio", "mte2_ratio", "aiv_vec_ratio", "aiv_mte2_ratio"):
        assert ind.value(k) is None and "PipeUtilization" in ind[k].reason
    d = a.to_dict()["ranks"][0]["scopes"]["overall"]["indicators"]["indicators"]
    assert d["mac_ratio"]["value"] is None and d["mac_ratio"]["available"] is False
    assert any("Level0 capture" in w for w in a.warnings)
    assert "Level0" in ind["sync_op_count"].basis  # CANN-level syncs invisible: said, not counted as 0


def test_level1_parent_gives_per_rank_results_and_cluster_summary(profile_path: PathOf) -> None:
    a = analyze(load_dataset(profile_path("ascend/msinsight-level1")))
    assert [r.rank for r in a.ranks] == [0, 1]
    assert all(r.overall.verdict.kind for r in a.ranks)
    c = a.cluster
    assert c is not None and c.slowest_rank in (0, 1)
    steps = {r.rank: r.overall.indicators.value("avg_step_us") for r in a.ranks}
    assert c.slowest_rank == max(steps, key=lambda k: steps[k])
    # one step (50) per rank; step_trace_time.csv of rank 0 / rank 1 (µs): Computing, Communication,
    # Communication(Not Overlapped). With two ranks, (max − mean) / mean = (max − min) / (max + min).
    csv_values = {"compute_us": (8873.756, 8878.295), "comm_us": (105991.878, 100375.286),
                  "comm_exposed_us": (101963.203, 96359.047)}
    for metric, (r0, r1) in csv_values.items():
        s = c.spread(metric)
        assert s is not None and (s.max_us, s.min_us) == pytest.approx((max(r0, r1), min(r0, r1)), abs=1e-3)
        assert s.slowest_rank == (0 if r0 > r1 else 1)
        assert s.spread_pct == pytest.approx(100 * abs(r0 - r1) / (r0 + r1), rel=1e-6)
        assert s.flagged is False  # 0.03 %, 2.7 %, 2.8 %: all below clusterSpreadPct (> 5 %)
    for metric in ("step_us", "device_idle_us"):  # no CSV column: the same two-rank identity on the indicators
        s = c.spread(metric)
        assert s is not None
        assert s.spread_pct == pytest.approx(100 * (s.max_us - s.min_us) / (s.max_us + s.min_us), rel=1e-9)
        assert s.mean_us == pytest.approx((s.max_us + s.min_us) / 2, rel=1e-12)


def test_single_card_trace_alone(profile_path: PathOf) -> None:
    a = analyze(load_dataset(profile_path("ascend/msprof-analyze-single-card/trace_view.json")))
    ov = a.primary.overall
    assert ov.verdict.candidate("communication") is None and "single card" in ov.verdict.excluded["communication"]
    ind = ov.indicators
    assert ind.value("dispatch_op_count") > 0 and "enqueue" in ind["dispatch_op_count"].source
    counts = a.primary.capture_sync_counts
    assert counts.get("aten::item", 0) > 0 and any(k.startswith("AscendCL@aclrtSynchronize") for k in counts)
    assert ind.value("host_busy_pct") is not None and ind.value("host_exclusive_pct") is not None


def test_kineto_steps_and_graph_mode(profile_path: PathOf) -> None:
    control = analyze(load_dataset(profile_path("kineto/hta-trace-diff/control.json.gz")))
    assert [s.number for s in control.primary.plan.steps] == list(range(1009, 1015))
    assert not control.primary.graph_mode
    rows = control.primary.step_breakdown  # per-step overlap, idle and memcpy share (HTA definitions)
    assert [r["step"] for r in rows] == list(range(1009, 1015))
    assert all({"overlap_pct", "idle_pct", "memcpy_share_pct"} <= set(r) for r in rows)
    test = analyze(load_dataset(profile_path("kineto/hta-trace-diff/test.json.gz")))
    assert test.primary.graph_mode and "cudaGraphLaunch" in test.primary.graph_mode_reason


def _copy_outputs(src: Path, dst: Path, names: list[str], cut_trace_at: float | None = None) -> Path:
    out = dst / "r_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    for n in names:
        (out / n).write_bytes((src / n).read_bytes())
    if cut_trace_at is not None:
        data = (src / "trace_view.json").read_bytes()
        (out / "trace_view.json").write_bytes(data[: int(len(data) * cut_trace_at)])
    return out.parent


def test_csv_only_rank_uses_step_trace_totals(profile_path: PathOf, tmp_path: Path) -> None:
    src = profile_path(L1_RANK0) / "ASCEND_PROFILER_OUTPUT"
    a = analyze(load_dataset(_copy_outputs(src, tmp_path, ["step_trace_time.csv", "kernel_details.csv"])))
    ind = a.primary.overall.indicators
    assert ind.value("comm_exposed_us") == pytest.approx(STEP_TRACE["Communication(Not Overlapped)"])
    assert "step_trace_time.csv" in ind.totals_source and a.verdict.kind == "communication"
    assert ind.value("host_busy_pct") is None and ind["host_busy_pct"].reason  # no trace: unavailable, not 0


def test_truncated_trace_with_csv_keeps_csv_totals(profile_path: PathOf, tmp_path: Path) -> None:
    src = profile_path(L1_RANK0) / "ASCEND_PROFILER_OUTPUT"
    a = analyze(load_dataset(_copy_outputs(src, tmp_path, ["step_trace_time.csv"], cut_trace_at=0.6)))
    ind = a.primary.overall.indicators
    assert a.verdict.kind == "communication"
    assert ind.value("host_exclusive_pct") is None and "truncated" in ind["host_exclusive_pct"].reason
    assert any("truncated" in w and "trace_view.json" in w for w in a.warnings)


def test_level1_copies_without_direction_are_not_reported_as_zero_d2h(level1) -> None:  # type: ignore[no-untyped-def]
    """The Ascend trace's PCIE DMA copies carry no direction: D2H/H2D per step are unavailable, not 0."""
    ind = level1.primary.overall.indicators
    assert ind.value("host_device_copy_per_step_us") > 0
    for k in ("d2h_per_step_us", "h2d_per_step_us"):
        assert ind.value(k) is None and "direction not recorded" in ind[k].reason, k
