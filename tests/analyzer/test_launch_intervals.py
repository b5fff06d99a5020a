"""Host time per launch (``analyzer.indicators.launch_intervals``, indicator ``host_us_per_launch``).

Unit tests use SYNTHETIC event tables (hand-made rows in the ``analyzer.ingest.events.SCHEMA`` layout,
quantiles worked by hand); the real-data tests read the HTA trace-diff Kineto samples in place
(skipped when ``../shared/data`` is absent).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analyzer.dataset import load_dataset
from analyzer.indicators import LaunchIntervals, ScopeInput, compute_indicators, launch_intervals
from analyzer.ingest import events as ev

Row = tuple[str, str, str, str, float, int, int, int]  # name, category, side, sub, ts_us, rank, pid, tid


def synthetic_table(rows: list[Row]) -> pd.DataFrame:
    """SYNTHETIC event table with the schema's columns: (name, category, side, sub, ts_us, rank, pid, tid)."""
    df = pd.DataFrame(rows, columns=["name", "category", "side", "sub", "ts_us", "rank", "pid", "tid"])
    df["dur_us"] = 2.0
    df["stream"] = [f"Thread {t}" for t in df["tid"]]
    df["step"], df["corr"], df["bytes"] = -1, -1, np.nan
    return ev.conform(df)


def _launch(ts_us: float, tid: int, rank: int = 0, pid: int = 1) -> Row:
    return ("cudaLaunchKernel", ev.DISPATCH, ev.SIDE_HOST, ev.SUB_LAUNCH, ts_us, rank, pid, tid)


def _two_threads() -> list[Row]:
    """SYNTHETIC: thread 1 launches every 10 µs (0..30), thread 2 every 40 µs (5..125), interleaved.

    Per-thread intervals pooled: [10, 10, 10, 40, 40, 40] -> p25 10, median 25, p75 40 (linear
    interpolation, numpy default: ranks 1.25, 2.5, 3.75). The merged stream 0,5,10,20,30,45,85,125
    would give 5,5,10,10,15,40,40 (median 10): a per-thread implementation must not see that.
    """
    return [_launch(t, tid=1) for t in (0.0, 10.0, 20.0, 30.0)] + [_launch(t, tid=2) for t in (5.0, 45.0, 85.0, 125.0)]


EXPECTED = LaunchIntervals(count=6, threads=2, p25_us=10.0, median_us=25.0, p75_us=40.0)


def test_intervals_are_per_thread_and_pooled() -> None:
    li = launch_intervals(synthetic_table(_two_threads()))
    assert li == EXPECTED
    assert li is not None and li.median_us != 10.0  # not the merged-stream spacing


def test_unsorted_input_gives_the_same_result() -> None:
    rows = _two_threads()
    shuffled = [rows[i] for i in np.random.default_rng(7).permutation(len(rows))]
    assert [r[4] for r in shuffled] != sorted(r[4] for r in shuffled)
    assert launch_intervals(synthetic_table(shuffled)) == EXPECTED
    assert launch_intervals(synthetic_table(rows[::-1])) == EXPECTED


def test_other_dispatch_subs_and_device_rows_are_ignored() -> None:
    noise: list[Row] = [
        ("Enqueue", ev.DISPATCH, ev.SIDE_HOST, ev.SUB_ENQUEUE, 1.0, 0, 1, 1),
        ("Enqueue", ev.DISPATCH, ev.SIDE_HOST, ev.SUB_ENQUEUE, 2.0, 0, 1, 1),
        ("cudaGetDevice", ev.DISPATCH, ev.SIDE_HOST, ev.SUB_RUNTIME, 3.0, 0, 1, 1),
        ("cudaGetDevice", ev.DISPATCH, ev.SIDE_HOST, ev.SUB_RUNTIME, 4.0, 0, 1, 2),
        ("Dequeue@x", ev.DISPATCH, ev.SIDE_HOST, ev.SUB_DEQUEUE, 6.0, 0, 1, 2),
        # a device row labelled like a launch, and host non-dispatch rows with sub launch: none count
        ("cudaLaunchKernel", ev.DISPATCH, ev.SIDE_DEVICE, ev.SUB_LAUNCH, 7.0, 0, 1, 1),
        ("cudaLaunchKernel", ev.DISPATCH, ev.SIDE_DEVICE, ev.SUB_LAUNCH, 8.0, 0, 1, 1),
        ("aten::mm", ev.HOST_OP, ev.SIDE_HOST, ev.SUB_LAUNCH, 9.0, 0, 1, 2),
        ("gemm", ev.COMPUTE, ev.SIDE_DEVICE, "kernel", 11.0, 0, 1, 7),
        ("gemm", ev.COMPUTE, ev.SIDE_DEVICE, "kernel", 12.0, 0, 1, 7),
    ]
    assert launch_intervals(synthetic_table(_two_threads() + noise)) == EXPECTED
    assert launch_intervals(synthetic_table(noise)) is None


def test_threads_are_told_apart_by_rank_and_pid() -> None:
    """SYNTHETIC: the same tid on two ranks (or two pids) is two threads, not one interleaved series."""
    rows = [_launch(t, tid=1, rank=0) for t in (0.0, 10.0, 20.0)] + [_launch(t, tid=1, rank=1) for t in (3.0, 43.0)]
    li = launch_intervals(synthetic_table(rows))
    assert li is not None and (li.count, li.threads) == (3, 2)
    assert li.median_us == 10.0 and li.p75_us == pytest.approx(25.0)  # [10, 10, 40]
    rows = [_launch(t, tid=1, pid=1) for t in (0.0, 10.0)] + [_launch(t, tid=1, pid=2) for t in (5.0, 45.0)]
    li = launch_intervals(synthetic_table(rows))
    assert li is not None and (li.count, li.threads, li.median_us) == (2, 2, 25.0)  # [10, 40]


def test_one_launch_per_thread_is_none() -> None:
    rows = [_launch(0.0, tid=1), _launch(5.0, tid=2), _launch(9.0, tid=3, rank=1)]
    assert launch_intervals(synthetic_table(rows)) is None
    assert launch_intervals(ev.empty_events()) is None
    # one thread with two launches is enough; the single-launch threads add nothing
    li = launch_intervals(synthetic_table([*rows, _launch(12.0, tid=1)]))
    assert li == LaunchIntervals(count=1, threads=1, p25_us=12.0, median_us=12.0, p75_us=12.0)


def _scope() -> ScopeInput:
    return ScopeInput(name="overall", windows=((0.0, 1000.0),), step_count=1, step_source="synthetic",
                      step_durs_us=(1000.0,))


def test_indicator_has_value_and_basis() -> None:
    device: list[Row] = [("gemm", ev.COMPUTE, ev.SIDE_DEVICE, "kernel", 50.0, 0, 0, 7)]
    ind = compute_indicators(synthetic_table(_two_threads() + device), _scope())
    h = ind["host_us_per_launch"]
    assert h.value == pytest.approx(25.0) and h.unit == "us" and h.reason == ""
    assert h.basis == "6 intervals on 2 thread(s); p25 10.0 us, median 25.0 us, p75 40.0 us"


def test_indicator_unavailable_with_reason_without_launches() -> None:
    rows: list[Row] = [("Enqueue", ev.DISPATCH, ev.SIDE_HOST, ev.SUB_ENQUEUE, float(t), 0, 1, 1) for t in (0, 10, 20)]
    rows += [("gemm", ev.COMPUTE, ev.SIDE_DEVICE, "kernel", 50.0, 0, 0, 7), _launch(30.0, tid=1)]
    ind = compute_indicators(synthetic_table(rows), _scope())
    h = ind["host_us_per_launch"]
    assert h.value is None and h.basis == ""
    assert "fewer than two launch calls" in h.reason


# ------------------------------------------------------------------------------------------- real data

@pytest.fixture(scope="module")
def hta_events(profile_path):  # type: ignore[no-untyped-def]
    """Event tables of the two HTA trace-diff Kineto samples (every rank), read once."""

    def events(rel: str) -> pd.DataFrame:
        ds = load_dataset(profile_path(rel))
        return pd.concat([r.events for r in ds.ranks], ignore_index=True)

    return {name: events(f"kineto/hta-trace-diff/{name}.json.gz") for name in ("control", "test")}


def test_real_control_trace(hta_events) -> None:  # type: ignore[no-untyped-def]
    """Measured by the lead on kineto/hta-trace-diff/control.json.gz: median 30 µs, p25 20, p75 43, 9448 intervals."""
    li = launch_intervals(hta_events["control"])
    assert li == LaunchIntervals(count=9448, threads=2, p25_us=20.0, median_us=30.0, p75_us=43.0)


def test_real_test_trace(hta_events) -> None:  # type: ignore[no-untyped-def]
    """kineto/hta-trace-diff/test.json.gz: median 25 µs."""
    li = launch_intervals(hta_events["test"])
    assert li is not None and li.median_us == 25.0 and li.threads == 2
    assert li.p25_us <= li.median_us <= li.p75_us
