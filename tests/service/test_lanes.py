"""Swimlane index and budgeted window queries (SYNTHETIC event tables, checked against brute force)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ndval.service.lanes import EVENT, MERGED, build_rank_lanes, query, water_fill


def synthetic_events(n: int, lanes: int, seed: int, span_us: float = 1e6) -> pd.DataFrame:
    """SYNTHETIC: ``n`` random events over ``lanes`` lanes (half host, half device), some nested, some zero-length."""
    rng = np.random.default_rng(seed)
    lane = rng.integers(0, lanes, n)
    ts = rng.uniform(0, span_us, n)
    dur = rng.exponential(span_us / max(n, 1) * 5, n)
    dur[rng.random(n) < 0.05] = 0.0
    dur[rng.random(n) < 0.01] *= 500  # a few long ones spanning many buckets
    return pd.DataFrame({
        "name": [f"op{k % 7}" for k in range(n)], "category": np.where(lane % 2, "compute", "host_op"),
        "side": np.where(lane % 2, "device", "host"), "ts_us": ts, "dur_us": dur, "pid": 1, "tid": lane,
        "stream": [f"lane {x}" for x in lane], "rank": 0, "step": -1, "sub": "", "corr": -1, "bytes": np.nan,
    })


def brute_force(events: pd.DataFrame, start: float, end: float) -> pd.DataFrame:
    """Rows overlapping ``[start, end)`` (zero-length rows at a point inside count)."""
    s = events["ts_us"]
    e = s + events["dur_us"]
    return events[(s < end) & ((e > start) | (s >= start))]


@pytest.mark.parametrize("seed", range(6))
def test_every_answer_within_budget_and_counts_conserved(seed: int) -> None:
    ev = synthetic_events(20_000, lanes=12, seed=seed)
    rl = build_rank_lanes(0, ev)
    rng = np.random.default_rng(100 + seed)
    for _ in range(25):
        a, b = np.sort(rng.uniform(-1e5, 1.1e6, 2))
        budget = int(rng.choice([1, 5, 11, 50, 300, 2000, 50_000]))
        ans = query(rl, float(a), float(b), budget)
        expected = len(brute_force(ev, a, b))
        assert ans["item_count"] == len(ans["items"]) <= budget
        assert ans["events_in_window"] == expected
        omitted = sum(o["events"] for o in ans["omitted_lanes"])
        assert sum(it["count"] for it in ans["items"]) + omitted == expected
        if expected <= budget:
            assert all(it["kind"] == EVENT for it in ans["items"]) and not ans["aggregated"]


def test_window_under_budget_returns_the_real_events() -> None:
    ev = synthetic_events(50_000, lanes=8, seed=7)
    rl = build_rank_lanes(0, ev)
    start, end = 400_000.0, 401_000.0  # 1 ms
    ans = query(rl, start, end, 2000)
    truth = brute_force(ev, start, end)
    assert 0 < len(truth) <= 2000 and ans["merged_items"] == 0
    got = sorted((round(it["start_us"], 3), round(it["dur_us"], 3), it["name"]) for it in ans["items"])
    want = sorted((round(s, 3), round(d, 3), n) for s, d, n in zip(truth["ts_us"], truth["dur_us"], truth["name"], strict=True))
    assert got == want


def test_over_budget_merges_per_bucket_and_keeps_wide_events() -> None:
    ev = synthetic_events(30_000, lanes=4, seed=3)
    rl = build_rank_lanes(0, ev)
    ans = query(rl, 0.0, 1e6, 400)
    assert ans["aggregated"] and ans["merged_items"] > 0
    merged = [it for it in ans["items"] if it["kind"] == MERGED]
    assert all(it["count"] > 1 and it["sum_dur_us"] >= 0 and it["end_us"] >= it["start_us"] for it in merged)
    assert ans["events_merged"] == sum(it["count"] for it in merged)
    per_lane = pd.Series([it["lane"] for it in ans["items"]]).value_counts()
    assert per_lane.max() <= 100  # 400 items shared by 4 busy lanes


def test_more_busy_lanes_than_budget_omits_lanes_and_says_so() -> None:
    ev = synthetic_events(5_000, lanes=30, seed=5)
    ans = query(build_rank_lanes(0, ev), 0.0, 1e6, 10)
    assert ans["item_count"] <= 10
    assert len(ans["omitted_lanes"]) >= 20 and all(o["events"] > 0 for o in ans["omitted_lanes"])


def test_water_fill_gives_small_lanes_everything_and_shares_the_rest() -> None:
    assert water_fill([3, 1000, 1000], 103) == [3, 50, 50]
    assert water_fill([5, 5], 100) == [5, 5]
    assert sum(water_fill([7, 9, 11, 13], 5)) <= 5


def test_lanes_one_per_thread_and_stream_host_first() -> None:
    ev = synthetic_events(1_000, lanes=6, seed=1)
    rl = build_rank_lanes(0, ev)
    assert [ln.side for ln in rl.lanes] == ["host"] * 3 + ["device"] * 3
    assert sum(ln.count for ln in rl.lanes) == len(ev)
    for ln in rl.lanes:
        assert np.all(np.diff(ln.start_us) >= 0) and np.all(np.diff(ln.max_end_us) >= 0)


def test_empty_table_gives_no_lanes() -> None:
    rl = build_rank_lanes(0, synthetic_events(0, lanes=1, seed=0))
    assert rl.lanes == () and query(rl, 0.0, 1.0, 10)["item_count"] == 0
