"""Per-step breakdowns recomputed from the event table.

Ascend: the four step_trace_time.csv values of msinsight Level1 rank 0 (README "Independent check
values": Computing 8873.756, Communication 105991.878, Communication(Not Overlapped) 101963.203,
Free 25744.05 µs) recomputed from the raw device tasks of trace_view.json within 0.1 %.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer import breakdown as bd
from analyzer.dataset import load_dataset
from analyzer.ingest import events as ev

README_L1R0 = {  # ../shared/data/profiles/README.md, Level1 rank0 Step 50, µs
    "computing_us": 8873.756, "communication_us": 105991.878,
    "comm_not_overlapped_us": 101963.203, "free_us": 25744.05,
}
CSV_COLUMNS = {
    "computing_us": "Computing", "communication_us": "Communication",
    "comm_not_overlapped_us": "Communication(Not Overlapped)", "overlapped_us": "Overlapped",
    "free_us": "Free", "stage_us": "Stage", "bubble_us": "Bubble",
}


def test_level1_rank0_equals_readme_within_0_1_pct(profile_path) -> None:
    rank = load_dataset(profile_path("ascend/msinsight-level1/rank0_ascend_pt")).ranks[0]
    (row,) = bd.ascend_step_breakdown(rank.events)
    assert row.step == 50
    for field, expected in README_L1R0.items():
        assert getattr(row, field) == pytest.approx(expected, rel=1e-3), field


@pytest.mark.parametrize("rel", [
    "ascend/msinsight-level1/rank0_ascend_pt", "ascend/msinsight-level1/rank1_ascend_pt",
    "ascend/msinsight-level0/rank0_ascend_pt",
])
def test_every_step_trace_column_matches_the_csv(profile_path, rel: str) -> None:
    rank = load_dataset(profile_path(rel)).ranks[0]
    ours = bd.ascend_step_breakdown(rank.events)
    csv = rank.tables["step_trace_time"]
    assert len(ours) == len(csv)
    for row, (_, ref) in zip(ours, csv.iterrows(), strict=True):
        assert str(row.step) == ref["Step"]
        for field, col in CSV_COLUMNS.items():
            assert getattr(row, field) == pytest.approx(ref[col], rel=1e-3, abs=0.01), (rel, col)


def test_overlap_analysis_sums_are_the_same_numbers(profile_path) -> None:
    """torch_npu's own Overlap Analysis events, summed, give the README values (second route)."""
    rank = load_dataset(profile_path("ascend/msinsight-level1/rank0_ascend_pt")).ranks[0]
    totals = bd.ascend_overlap_totals(rank.events).set_index("step").loc[50]
    assert totals["Computing"] == pytest.approx(8873.756, abs=1e-6)
    assert totals["Communication(Not Overlapped)"] == pytest.approx(101963.203, abs=1e-6)
    assert totals["Free"] == pytest.approx(25744.05, abs=1e-6)


def test_single_card_has_no_communication(profile_path) -> None:
    rank = load_dataset(profile_path("ascend/msprof-analyze-single-card/trace_view.json")).ranks[0]
    (row,) = bd.ascend_step_breakdown(rank.events)
    assert row.communication_us == 0 and row.computing_us > 0
    totals = bd.ascend_overlap_totals(rank.events).iloc[0]
    assert row.computing_us == pytest.approx(totals["Computing"], rel=1e-3)
    assert row.free_us == pytest.approx(totals["Free"], rel=1e-3)


def _synthetic(rows: list[tuple[str, str, float, float]]) -> pd.DataFrame:
    """SYNTHETIC device events (category, sub, ts, dur) in one step."""
    n = len(rows)
    return ev.conform(pd.DataFrame({
        "name": [f"e{i}" if r[0] != "communication" or r[1] == "hccl_task" else "hcom_allReduce_1"
                 for i, r in enumerate(rows)],
        "category": [r[0] for r in rows], "side": ["device"] * n,
        "ts_us": [r[2] for r in rows], "dur_us": [r[3] for r in rows], "pid": [1] * n, "tid": [1] * n,
        "stream": ["s"] * n, "rank": [0] * n, "step": [1] * n, "sub": [r[1] for r in rows],
        "corr": [-1] * n, "bytes": [float("nan")] * n,
    }))


def test_synthetic_ascend_arithmetic() -> None:
    """compute [0,10) [30,40); comm op [5,35) with a task inside; copy [40,50) counts as free.
    computing 20, comm 30, not overlapped 30-10=20, busy [0,40) -> free 0 + copy region not busy."""
    events = _synthetic([
        ("compute", "AI_CORE", 0, 10), ("compute", "AI_CORE", 30, 10),
        ("communication", "allreduce", 5, 30), ("communication", "hccl_task", 6, 50),
        ("memcpy", "D2D", 40, 10),
    ])
    row = bd.ascend_breakdown(events, 1)
    assert (row.computing_us, row.communication_us, row.comm_not_overlapped_us) == (20, 30, 20)
    assert (row.overlapped_us, row.free_us, row.span_us) == (10, 0, 40)


def test_synthetic_kineto_arithmetic() -> None:
    """compute [0,10); nccl [5,25); memcpy [30,40): span 40, busy 35, idle 5, overlap 5/20 = 25 %,
    memcpy share 10/40 = 25 %; memcpy is not compute."""
    events = _synthetic([
        ("compute", "kernel", 0, 10), ("communication", "allreduce", 5, 20), ("memcpy", "H2D", 30, 10),
    ])
    row = bd.kineto_breakdown(events, 1)
    assert (row.span_us, row.busy_us, row.idle_us) == (40, 35, 5)
    assert row.overlap_pct == 25 and row.memcpy_share_pct == 25 and row.exposed_comm_us == 15


def test_kineto_per_step_breakdown_control(profile_path) -> None:
    """control.json.gz: one row per ProfilerStep 1009-1014 with overlap / idle / memcpy share."""
    rank = load_dataset(profile_path("kineto/hta-trace-diff/control.json.gz")).ranks[0]
    frame = bd.to_frame(bd.kineto_step_breakdown(rank.events))
    assert frame["step"].tolist() == list(range(1009, 1015))
    for col in ("overlap_pct", "idle_pct", "memcpy_share_pct"):
        assert frame[col].between(0, 100).all(), col
    assert (frame["communication_us"] > 0).all() and (frame["memcpy_us"] > 0).all()
    assert (frame["busy_us"] <= frame["span_us"]).all()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-2**62, 2**62), max_size=60), st.lists(st.integers(-2**62, 2**62), max_size=60))
def test_sorted_unique_and_in_sorted_equal_numpy(values: list[int], probe: list[int]) -> None:
    """The sort-based helpers used on correlation ids equal ``np.unique`` / ``np.isin`` (any int64)."""
    a = np.array(values, dtype=np.int64)
    u = ev.sorted_unique(a)
    assert np.array_equal(u, np.unique(a))
    b = np.array(probe + values[:5], dtype=np.int64)
    assert np.array_equal(ev.in_sorted(b, u), np.isin(b, a))
