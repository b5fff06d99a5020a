"""HTA 0.5.0's idle, launch and kernel-type breakdowns on the shared Kineto pair (integer-µs timestamps).

HTA's numbers, recorded with HolisticTraceAnalysis 0.5.0 (``benchmarks/.hta-venv``, 2026-12-01)::

    a = TraceAnalysis(trace_dir=<dir with the one trace>); rank = sorted(a.t.traces)[0]
    a.get_idle_time_breakdown(ranks=[rank], visualize=False, show_idle_interval_stats=True)
    df = a.get_cuda_kernel_launch_stats(ranks=[rank], visualize=False)[rank]
    a.get_gpu_kernel_breakdown(visualize=False)[0]

Idle µs per stream (host wait, kernel wait, other), launch counts (rows; gpu_duration < cpu_duration;
cpu_duration > 50; launch_delay > 100; launch_delay median), kernel-type µs.
"""

from __future__ import annotations

import pytest

from analyzer import hta_breakdowns as hb
from analyzer.breakdown import hta_window
from analyzer.dataset import load_dataset
from analyzer.thresholds import default_thresholds

IDLE = {"control": {21: (237710, 71, 0), 20: (346996, 621, 7470), 7: (102154, 14226, 32183), 22: (271786, 1253, 0)},
        "test": {16: (422925, 829, 0), 7: (2960, 42372, 41756), 15: (348483, 138, 38936), 14: (520794, 1087, 14536)}}
LAUNCH = {"control": (7875, 3067, 25, 5111, 614.0), "test": (8310, 4615, 65, 8142, 41628.0)}
KTYPES = {"control": {"COMPUTATION": 151685, "COMMUNICATION": 69110, "COMPUTATION overlapping COMMUNICATION": 55152,
                      "COMPUTATION overlapping MEMORY": 20762, "MEMORY": 16328,
                      "COMPUTATION overlapping COMMUNICATION overlapping MEMORY": 7161,
                      "COMMUNICATION overlapping MEMORY": 1087},
          "test": {"COMPUTATION": 267839, "COMPUTATION overlapping COMMUNICATION": 129148, "MEMORY": 92887,
                   "COMMUNICATION": 53846, "COMPUTATION overlapping MEMORY": 30501, "COMMUNICATION overlapping MEMORY": 5512,
                   "COMPUTATION overlapping COMMUNICATION overlapping MEMORY": 1728}}


@pytest.fixture(scope="module", params=sorted(IDLE))
def window(request, profile_path):
    rank = load_dataset(profile_path(f"kineto/hta-trace-diff/{request.param}.json.gz")).ranks[0]
    return request.param, hta_window(rank.events)


def test_idle_breakdown_within_half_a_point_of_hta(window) -> None:
    trace, events = window
    got = {s["stream"]: s for s in hb.idle_breakdown(events, default_thresholds())}
    assert set(got) == set(IDLE[trace])
    for stream, parts in IDLE[trace].items():
        total = sum(parts)
        for name, us in zip(("host_wait", "kernel_wait", "other"), parts, strict=True):
            assert got[stream][f"{name}_pct"] == pytest.approx(100.0 * us / total, abs=0.5)
            assert got[stream][f"{name}_us"] == pytest.approx(us, abs=1.0)


def test_launch_counts_equal_hta(window) -> None:
    trace, events = window
    stats = hb.launch_stats(events, default_thresholds(), None)
    assert stats is not None
    n, short, runtime, delay, median = LAUNCH[trace]
    assert (stats["launches"], stats["short_kernels"], stats["runtime_outliers"], stats["launch_delay_outliers"]) == \
        (n, short, runtime, delay)
    assert stats["launch_delay_us"]["p50"] == pytest.approx(median)


def test_kernel_types_equal_hta(window) -> None:
    trace, events = window
    got = {r["kernel_type"]: r["time_us"] for r in hb.kernel_type_breakdown(events)}
    assert got == pytest.approx(KTYPES[trace], abs=1.0)
