"""``analyzer.compare`` wired to real analyses (real samples via the conftest fixtures; skip when absent)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

import analyzer
import analyzer.compare as cmp
from analyzer.analysis import analyze
from analyzer.dataset import load_dataset
from analyzer.recommend import TEMPLATES


@functools.lru_cache(maxsize=8)
def _side(path: str) -> tuple:
    ds = load_dataset(path)
    return ds, analyze(ds)


def _pair(profile_path, before: str, after: str) -> cmp.Comparison:
    return cmp.compare(_side(str(profile_path(before))), _side(str(profile_path(after))))


def test_every_recommendation_template_has_targets_in_the_metric_table_or_is_not_judgeable():
    for rid in TEMPLATES:
        targets = cmp.targets_for(cmp.RecommendationRef(rid))
        if rid.startswith(cmp.NOT_JUDGEABLE_PREFIXES):
            assert targets == (), rid
        else:
            assert targets, f"{rid} has no target metric"
            assert set(targets) <= set(cmp.METRICS_BY_ID), rid


def test_package_level_compare_is_callable_after_the_submodule_import(profile_path):
    b, a = _side(str(profile_path("ascend/msinsight-level1/rank0_ascend_pt"))), _side(
        str(profile_path("ascend/msinsight-level1/rank1_ascend_pt")))
    assert analyzer.compare(b, a).comparable is True


def test_same_run_two_ranks_is_comparable(profile_path):
    result = _pair(profile_path, "ascend/msinsight-level1/rank0_ascend_pt", "ascend/msinsight-level1/rank1_ascend_pt")
    assert result.comparable is True
    assert result.comparability["blocking"] == []
    assert "rank" in result.comparability["flags"]
    # profiler_info_0.json / profiler_info_1.json are the same artefact
    assert "profiler_info.json" in result.sides["before"]["files"]
    # real numbers are carried: README Level1 rank0 Computing 8873.756 µs
    assert result.metric("compute_us")["before"] == pytest.approx(8873.756, abs=1e-3)
    assert result.operators["saved"] or result.operators["added"]
    # step_trace_time.csv of each rank (one step, 50): Communication(Not Overlapped) 101963.203 -> 96359.047 µs
    exposed = result.metric("comm_exposed_us")
    assert (exposed["before"], exposed["after"]) == pytest.approx((101963.203, 96359.047), abs=1e-3)
    # seed §7.2 by hand on the primary target of each recommendation (lower-better metrics):
    # observed = (before − after) / before; threshold = max(1 %, 0.5 × expected gain); achieved when
    # observed ≥ threshold, partially when 0 < observed < threshold, not achieved when observed ≤ 0
    expected = {
        # sync ops per step 66 -> 66 (same run): 0 % -> not achieved
        "host.remove-sampler-sync": ("sync_ops_per_step", "not_achieved"),
        # 5.50 % < 0.5 × 39.2 %
        "comm.overlap": ("comm_exposed_us", "partially_achieved"),
        # mean idle gap 492.1 -> 526.2 µs: worse on rank 1
        "host.reduce-launch-gaps": ("idle_gap_mean_us", "not_achieved"),
        # issue 28: the wait-bound sub-type's advice has no derivable gain, so the threshold is the 1 % floor;
        # exposed communication 5.50 % lower on rank 1 -> achieved
        "comm.find-late-rank": ("comm_exposed_us", "achieved"),
        "comm.balance-load": ("comm_exposed_us", "achieved"),
        "comm.remove-host-stall": ("comm_exposed_us", "achieved"),
    }
    rows = {r["id"]: r for r in result.recommendations}
    assert set(rows) == set(expected)
    for rid, (metric, verdict) in expected.items():
        m = result.metric(metric)
        observed = 100 * (m["before"] - m["after"]) / m["before"]
        threshold = max(1.0, 0.5 * (rows[rid]["expected_gain_pct"] or 0.0))
        hand = "achieved" if observed >= threshold else "partially_achieved" if observed > 0 else "not_achieved"
        assert rows[rid]["primary_metric"] == metric
        assert rows[rid]["observed_improvement_pct"] == pytest.approx(observed, abs=1e-3)
        assert rows[rid]["threshold_pct"] == pytest.approx(threshold, abs=1e-3)
        assert rows[rid]["verdict"] == hand == verdict, rid
    assert rows["comm.overlap"]["observed_improvement_pct"] == pytest.approx(
        100 * (101963.203 - 96359.047) / 101963.203, abs=1e-3)


def test_level0_vs_level1_is_not_comparable_with_the_file_list(profile_path):
    result = _pair(profile_path, "ascend/msinsight-level0/rank0_ascend_pt", "ascend/msinsight-level1/rank0_ascend_pt")
    assert result.comparable is False
    assert result.comparability["blocking"] == ["file_set"]
    reason = next(r for r in result.comparability["reasons"] if r.startswith("file_set"))
    for name in ("communication.json", "api_statistic.csv", "op_statistic.csv"):
        assert name in reason
    assert "NOT COMPARABLE" in result.headline["sentence"]


def test_unrelated_captures_list_every_blocking_reason(profile_path):
    result = _pair(profile_path, "ascend/msprof-analyze-single-card/trace_view.json",
                   "ascend/msinsight-level0/rank0_ascend_pt")
    assert result.comparable is False
    assert "file_set" in result.comparability["blocking"]
    assert any("only after: " in r and "kernel_details.csv" in r for r in result.comparability["reasons"])
    # (the Kineto pair and the Ascend-vs-Kineto pair are covered end to end in test_compare_cli.py)


def test_threshold_mismatch_between_analyses_is_warned(profile_path):
    path = str(profile_path("ascend/msinsight-level1/rank0_ascend_pt"))
    ds, base = _side(path)
    other = analyze(ds, thresholds={"triggerScore": 50})
    result = cmp.compare((ds, base), (ds, other))
    assert any("different thresholds" in w and "triggerScore" in w for w in result.warnings)


def test_analysis_without_dataset_still_compares_with_a_warning(profile_path):
    _, a = _side(str(profile_path("ascend/msinsight-level1/rank0_ascend_pt")))
    result = cmp.compare(a, a)
    assert result.comparable is True
    assert result.operators == {"saved": [], "added": []}
    assert any("without its dataset" in w for w in result.warnings)


def test_paths_are_accepted(profile_path):
    result = cmp.compare(Path(profile_path("ascend/msinsight-level1/rank0_ascend_pt")),
                         str(profile_path("ascend/msinsight-level1/rank0_ascend_pt")))
    assert result.comparability["level"] == "comparable"
    assert all(r["status"] in ("unchanged", "background", "not_available") for r in result.metrics)


def test_csv_only_dataset_compared_with_itself_is_comparable(profile_path):
    # kernel_details.csv alone (no trace): totals source 'csv' is not a sampled capture (seed §7.3)
    sample = "ascend/kernel-details-pipeutil-2025"
    result = _pair(profile_path, sample, sample)
    assert result.sides["before"]["totals_source"] == "csv"
    assert result.sides["before"]["sampled"] is False
    assert result.comparable is True, result.comparability["reasons"]
    # no trace ⇒ no capture window: reported as not available, never as a 0 µs window
    window = next(r for r in result.metrics if r["id"] == "window_us")
    assert window["status"] == "not_available", window
    assert result.headline["sentence"].startswith("wall clock not comparable"), result.headline


def test_level0_vs_level1_counts_each_collective_once_and_matches_it_by_op(profile_path):
    """The same program captured at level0 and level1 (README: same model and steps). Level1 also writes every
    HCCL hardware task on the ``HCCL`` process' planes (``Notify_Wait``, ``Memcpy``, ``Reduce_Inline``), and both
    levels hold the tasks inside their ``hcom_allReduce`` op rows: the category sum is the ops', once (before:
    217,718 -> 386,166 µs, the tasks counted two and three times). The op names carry a per-run group hash
    (``__868_`` / ``__586_``): the same four collectives are four rows, not four savings and four additions."""
    result = _pair(profile_path, "ascend/msinsight-level0/rank0_ascend_pt", "ascend/msinsight-level1/rank0_ascend_pt")
    comm = next(c for c in result.categories if c["category"] == "communication")
    # Σ dur of the four hcom_allReduce op rows of each trace (level0 72994.4 + 2193.6 + 2489.5 + 7839.3)
    assert (comm["before_us"], comm["after_us"]) == pytest.approx((85516.889, 105991.878), abs=1e-2)
    rows = result.operators["saved"] + result.operators["added"]
    names = {r["name"] for r in rows}
    assert not names & {"Notify Wait", "Notify_Wait", "SDMA", "Memcpy", "Reduce_Inline"}, names
    hcom = [r for r in rows if r["name"].startswith("hcom_")]
    assert sorted(r["name"] for r in hcom) == [f"hcom_allReduce__*_{i}_1" for i in range(4)]
    assert all(r["before_count"] == r["after_count"] == 1 for r in hcom)


def test_comparable_operator_name_strips_only_the_hccl_group_hash():
    assert cmp.comparable_operator_name("hcom_allReduce__868_0_1") == "hcom_allReduce__*_0_1"
    assert cmp.comparable_operator_name("hcom_reduceScatter__12_31_1") == "hcom_reduceScatter__*_31_1"
    for same in ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                 "aclnnMm_MatMulCommon_MatMulV2", "hcom_allReduce_", "Notify Wait"):
        assert cmp.comparable_operator_name(same) == same


def test_a_rank_without_its_trace_is_not_a_capture_with_nothing_dispatched(profile_path, tmp_path):
    """level1 rank0 against itself with trace_view.json removed (tables only). Before: the tables-only side read 0
    dispatches, 0 syncs, 0 copies and no operators, and compare called it 159 -> 0 dispatch ops per step
    'improved' and every operator 'saved'. Now those are not available and the sections stay empty."""
    import shutil

    src = profile_path("ascend/msinsight-level1/rank0_ascend_pt")
    shutil.copytree(src, tmp_path / "rank0_ascend_pt")
    (tmp_path / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").unlink()
    result = cmp.compare(_side(str(src)), _side(str(tmp_path / "rank0_ascend_pt")))
    for mid in ("dispatch_ops_per_step", "sync_ops_per_step", "copy_device_us", "comm_ops_per_step", "event_count"):
        row = next(r for r in result.metrics if r["id"] == mid)
        assert row["after"] is None and row["status"] == "not_available", row
    assert result.operators == {"saved": [], "added": []} and result.categories == []
    assert any("no event timeline" in w for w in result.warnings)
    # the step_trace_time.csv times are still compared: the same capture, Communication(Not Overlapped) unchanged
    exposed = next(r for r in result.metrics if r["id"] == "comm_exposed_us")
    assert exposed["before"] == exposed["after"] == pytest.approx(101963.203, abs=1e-3)
