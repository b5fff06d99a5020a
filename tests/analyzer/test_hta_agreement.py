"""Agreement with an independent tool: Holistic Trace Analysis 0.5.0 on the TraceDiff pair.

HTA's numbers are transcribed from ../shared/data/profiles/README.md (TraceAnalysis defaults: last
ProfilerStep and anything launched after it dropped; GPU streams pooled; memcpy/memset not compute).
The acceptance bar is 1 percentage point on the overlap; span / idle / compute are checked too.
"""

from __future__ import annotations

import pytest

from analyzer import analyze, report
from analyzer import breakdown as bd
from analyzer.dataset import load_dataset
from analyzer.ingest import events as ev

HTA = {  # trace: (rank, GPU span µs, idle %, compute %, non-compute %, overlap %)
    "control": (3, 383_404, 16.20, 61.23, 22.57, 47.03),
    "test": (1, 628_371, 7.47, 68.31, 24.23, 68.80),
}


@pytest.mark.parametrize("trace", sorted(HTA))
def test_comm_compute_overlap_agrees_with_hta(profile_path, trace: str) -> None:
    rank_id, span, idle, compute, noncompute, overlap = HTA[trace]
    rank = load_dataset(profile_path(f"kineto/hta-trace-diff/{trace}.json.gz")).ranks[0]
    assert rank.rank == rank_id
    window = bd.hta_window(rank.events)
    kept = sorted(window.loc[window["category"] == ev.STEP, "step"])
    assert kept == list(range(1009, 1014))  # HTA "steps kept 1009-1013"
    assert bd.comm_compute_overlap(window) == pytest.approx(overlap, abs=1.0)
    assert bd.hta_window_overlap_pct(rank.events) == bd.comm_compute_overlap(window)  # the analysis' route
    gpu = bd.kineto_breakdown(window[window["side"] == ev.SIDE_DEVICE])
    assert gpu.span_us == pytest.approx(span, rel=1e-3)
    assert gpu.idle_pct == pytest.approx(idle, abs=1.0)
    assert 100 * gpu.compute_us / gpu.span_us == pytest.approx(compute, abs=1.0)
    assert 100 * (gpu.busy_us - gpu.compute_us) / gpu.span_us == pytest.approx(noncompute, abs=1.0)


@pytest.mark.parametrize("trace", sorted(HTA))
def test_analysis_output_reports_the_hta_window_overlap(profile_path, trace: str) -> None:
    """The same number reaches the user: ``hta_window_overlap_pct`` in the JSON and the Markdown."""
    a = analyze(load_dataset(profile_path(f"kineto/hta-trace-diff/{trace}.json.gz")))
    pct = a.to_dict()["ranks"][0]["hta_window_overlap_pct"]
    assert pct == pytest.approx(HTA[trace][-1], abs=1.0)
    assert f"default window (last ProfilerStep dropped): {pct:.2f} %" in report.to_markdown(a)
