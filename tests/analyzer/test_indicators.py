"""Indicators from SYNTHETIC event tables: interval definitions, unavailable-with-reason, duration weighting."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analyzer.indicators import ScopeInput, compute_indicators, duration_weighted, graph_mode_signal
from analyzer.ingest import events as ev
from tests.analyzer.test_phases import table


def scope(**kw) -> ScopeInput:  # type: ignore[no-untyped-def]
    base = dict(name="overall", windows=((0.0, 1000.0),), step_count=2, step_source="synthetic", step_durs_us=(500.0, 500.0))
    return ScopeInput(**{**base, **kw})


def test_time_shares_by_interval_algebra() -> None:
    ev_table = table([
        ("mm", ev.COMPUTE, "device", 0.0, 400.0),
        ("mm2", ev.COMPUTE, "device", 100.0, 100.0),  # nested: union counts it once
        ("allreduce", ev.COMMUNICATION, "device", 300.0, 300.0),  # 100 overlapped, 200 exposed
        ("aten::add", ev.HOST_OP, "host", 600.0, 300.0),  # 200 exclusive (device idle 600..1000 minus nothing)
        ("aten::item", ev.SYNC, "host", 850.0, 100.0),
    ])
    ind = compute_indicators(ev_table, scope())
    assert ind.value("device_busy_us") == pytest.approx(600.0)
    assert ind.value("compute_us") == pytest.approx(400.0)
    assert ind.value("comm_exposed_us") == pytest.approx(200.0)
    assert ind.value("comm_overlap_pct") == pytest.approx(100 * 100 / 300)
    assert ind.value("comm_pct_of_device") == pytest.approx(50.0)
    assert ind.value("host_exclusive_us") == pytest.approx(350.0)  # host ∪ = 600..950, device ends at 600
    assert ind.value("host_exclusive_per_step_us") == pytest.approx(175.0)
    assert ind.value("sync_op_count") == 1 and ind.sync_counts == {"aten::item": 1}


def test_overlap_analysis_numbers_win_and_are_cited() -> None:
    ev_table = table([("mm", ev.COMPUTE, "device", 0.0, 400.0)])
    ov = {"Computing": 300.0, "Communication": 500.0, "Communication(Not Overlapped)": 450.0, "Free": 250.0}
    ind = compute_indicators(ev_table, scope(overlap=ov, overlap_source="Overlap Analysis"))
    assert ind.value("comm_exposed_us") == 450.0 and ind.value("device_busy_us") == 750.0
    assert "Communication(Not Overlapped) 450.000" in ind["comm_exposed_pct"].basis


def test_missing_inputs_are_unavailable_with_reason_never_zero() -> None:
    ev_table = table([("mm", ev.COMPUTE, "device", 0.0, 400.0)])
    ind = compute_indicators(ev_table, scope(kernel_reason="kernel_details.csv not found"))
    for k in ("mac_ratio", "mte2_ratio", "host_busy_pct", "host_exclusive_pct", "comm_duration_median_us",
              "comm_message_median_mb"):
        assert ind.value(k) is None and ind[k].reason, k
    assert ind["mac_ratio"].reason == "kernel_details.csv not found"


def test_tables_only_counts_nothing_as_zero() -> None:
    """No event timeline (a rank read from step_trace_time.csv / kernel_details.csv alone): the empty event table
    must not report 0 dispatches, syncs, copies or collectives; the Overlap Analysis times stay."""
    ov = {"Computing": 300.0, "Communication": 500.0, "Communication(Not Overlapped)": 450.0, "Free": 250.0}
    ind = compute_indicators(table([]), scope(overlap=ov, overlap_source="step_trace_time.csv", has_timeline=False))
    for k in ("dispatch_op_count", "dispatch_ops_per_step", "sync_op_count", "sync_ops_per_step", "host_sync_us",
              "copy_device_us", "comm_op_count", "comm_ops_per_step", "device_op_count", "event_count"):
        assert ind.value(k) is None and "no event timeline" in ind[k].reason, (k, ind[k])
    assert ind.value("comm_exposed_us") == 450.0 and ind.value("comm_us_per_step") == 250.0
    traced = compute_indicators(table([]), scope(overlap=ov, overlap_source="step_trace_time.csv"))
    assert traced.value("sync_ops_per_step") == 0.0 and traced.value("dispatch_op_count") == 0.0


def test_duration_weighted_mac_by_core() -> None:
    kd = pd.DataFrame({"Accelerator Core": ["AI_CORE", "AI_CORE", "AI_VECTOR_CORE", "MIX_AIC"],
                       "Duration(us)": [10.0, 30.0, 100.0, 60.0],
                       "aic_mac_ratio": [0.8, 0.4, 0.0, np.nan]})
    val, reason = duration_weighted(kd, "aic_mac_ratio", ("AI_CORE", "MIX_AIC"))
    assert val == pytest.approx((0.8 * 10 + 0.4 * 30) / 40) and reason == ""
    val, reason = duration_weighted(kd.drop(columns="aic_mac_ratio"), "aic_mac_ratio", ("AI_CORE",))
    assert val is None and "PipeUtilization" in reason


def test_graph_mode_signal() -> None:
    launches = [("AscendCL@aclmdlRIExecuteAsync", ev.DISPATCH, "host", 0.0, 5.0)]
    kernels = [("k", ev.COMPUTE, "device", float(i * 10), 5.0) for i in range(50)]
    detected, reason = graph_mode_signal(table(launches + kernels), 10)
    assert detected and "graph launch" in reason
    eager = [("aclnnAdd", ev.DISPATCH, "host", float(i * 10), 2.0) for i in range(50)]
    assert graph_mode_signal(table(eager + kernels), 10) == (False, "")


def test_sync_counts_list_only_names_that_occur_even_with_a_categorical_name_column() -> None:
    """SYNTHETIC: ``value_counts`` on a categorical lists unused categories with 0; the counts must not."""
    ev_table = table([
        ("aten::item", ev.SYNC, "host", 0.0, 10.0), ("aten::item", ev.SYNC, "host", 20.0, 10.0),
        ("aten::add", ev.HOST_OP, "host", 40.0, 10.0), ("mm", ev.COMPUTE, "device", 0.0, 50.0),
    ])
    ev_table["name"] = ev_table["name"].astype("category")
    ind = compute_indicators(ev_table, scope())
    assert ind.sync_counts == {"aten::item": 2}
    assert ev.name_counts(ev_table[ev_table["category"] == ev.SYNC]) == {"aten::item": 2}


def _copies(subs: list[str]) -> pd.DataFrame:
    """SYNTHETIC device copies of 100 µs each with the given direction ``sub``."""
    rows = table([(f"copy{i}", ev.MEMCPY, "device", 200.0 * i, 100.0) for i in range(len(subs))])
    rows["sub"] = subs
    return rows


def test_copies_without_recorded_direction_make_d2h_h2d_unavailable_not_zero() -> None:
    ind = compute_indicators(_copies([ev.SUB_HOST_DEVICE, ev.SUB_HOST_DEVICE]), scope())
    assert ind.value("host_device_copy_per_step_us") == pytest.approx(100.0)  # 200 µs over 2 steps
    for k in ("d2h_per_step_us", "h2d_per_step_us"):
        assert ind.value(k) is None and "direction not recorded" in ind[k].reason, k
    mixed = compute_indicators(_copies([ev.SUB_D2H, ev.SUB_HOST_DEVICE]), scope())
    assert mixed.value("d2h_per_step_us") == pytest.approx(50.0) and "lower bound" in mixed["d2h_per_step_us"].basis
    directed = compute_indicators(_copies([ev.SUB_D2H, ev.SUB_H2D]), scope())
    assert directed.value("h2d_per_step_us") == pytest.approx(50.0) and directed["h2d_per_step_us"].basis == ""
