"""Seed §5 recommendations: selection by hypothesis id, priority formula, version flags, gains attached."""

from __future__ import annotations

import pytest

from analyzer.bottleneck import locate
from analyzer.recommend import BY_HYPOTHESIS, TEMPLATES, priority_score, recommend
from analyzer.rootcause import LIBRARY, infer
from analyzer.thresholds import default_thresholds
from tests.analyzer.synthetic import make_indicators

TH = default_thresholds()


def test_priority_formula() -> None:
    assert priority_score("high", 80.0, 30.0) == pytest.approx(60 + 32 + 12)
    assert priority_score("low", 200.0, 200.0) == pytest.approx(20 + 40 + 20)  # both terms capped
    assert priority_score("medium", 50.0, None) == pytest.approx(40 + 20)


def test_every_hypothesis_maps_to_templates() -> None:
    for spec in LIBRARY:
        assert spec.id in BY_HYPOTHESIS and all(r in TEMPLATES for r in BY_HYPOTHESIS[spec.id])


def test_decode_host_bound_gets_graph_mode_with_version_flag_and_gain() -> None:
    ind = make_indicators(device_idle_pct=30, host_exclusive_pct=50, dispatch_ops_per_step=1500,
                          host_exclusive_per_step_us=3000, host_busy_pct=90, device_busy_pct=60, sync_op_count=0,
                          avg_step_us=10000, step_count=10)
    v = locate(ind, TH)
    recs = recommend("decode", v, infer(v, ind, TH, "decode"), ind)
    graph = next(r for r in recs if r.id == "host.enable-graph-mode")
    assert graph.needs_version_confirmation and graph.gain is not None
    assert graph.gain.estimate_pct == pytest.approx(100 * 0.75 * 3000 / 10000)
    assert graph.priority_score == pytest.approx(priority_score("high", v.score, graph.gain.estimate_pct))
    assert [r.priority_score for r in recs] == sorted((r.priority_score for r in recs), reverse=True)
    assert graph.to_dict()["version_note"].startswith("needs version confirmation")
