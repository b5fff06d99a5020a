"""Seed §6 gain formulas, ranges and the 70 % cap (toy numbers written as arithmetic)."""

from __future__ import annotations

import pytest

from analyzer import gains as g
from tests.analyzer.synthetic import make_indicators


def test_formulas() -> None:
    assert g.graph_mode_fraction(2000.0, 10000.0) == pytest.approx(0.75 * 2000 / 10000)
    assert g.graph_mode_fraction(20000.0, 10000.0) == 0.8  # min(0.8, ...)
    assert g.sync_removal_fraction(3000.0, 3, 10000.0) == pytest.approx(0.8 * 1000 / 10000)
    assert g.comm_overlap_fraction(6000.0, 3, 10000.0) == pytest.approx(0.6 * 2000 / 10000)
    assert g.comm_batch_fraction(1000.0, 10000.0) == pytest.approx(0.7 * 0.1)
    assert g.d2h_async_fraction(500.0, 10000.0) == pytest.approx(0.7 * 0.05)
    assert g.concurrency_pct(90.0) == pytest.approx(25.0)  # (100 - 90) + 15
    assert g.concurrency_pct(10.0) == 60.0  # capped


def test_derived_gain_has_basis_range_and_assumption() -> None:
    ind = make_indicators(avg_step_us=10000.0, step_count=4, host_exclusive_per_step_us=2000.0)
    gain = g.derive("graph-mode", ind)
    assert gain is not None and gain.derived and gain.confidence == "medium"
    assert gain.estimate_pct == pytest.approx(15.0) and gain.low_pct == pytest.approx(9.0)  # 60 %–100 %
    assert "2000.0" in gain.basis and gain.assumption


def test_missing_inputs_give_no_gain_not_zero() -> None:
    assert g.derive("comm-overlap", make_indicators(avg_step_us=1000.0, step_count=2)) is None
    assert g.derive("graph-mode", make_indicators(host_exclusive_per_step_us=5.0)) is None  # no step length


def test_empirical_ranges_are_labelled() -> None:
    q = g.derive("quantization", make_indicators())
    assert q is not None and not q.derived and q.confidence == "low"
    assert (q.low_pct, q.high_pct) == (20.0, 45.0) and "not derived from this dataset" in q.basis


def test_combine_conservative_sum_and_cap() -> None:
    a = g.Gain("a", 40.0, 24.0, 40.0, "medium", True, "", "")
    b = g.Gain("b", 50.0, 30.0, 50.0, "medium", True, "", "")
    c = g.combine([a, b, a], cap_pct=70.0)  # duplicates counted once
    assert c.conservative_pct == pytest.approx(54.0) and c.optimistic_pct == 70.0
    assert "do not simply add up" in c.note


def test_overridden_factors_are_used_and_quoted() -> None:
    """The factors live in thresholds_default.yaml; an override changes the number and the basis text."""
    from analyzer.thresholds import default_thresholds

    th = default_thresholds().with_overrides({"gainGraphModeFactor": 0.5, "gainLowFraction": 0.5})
    ind = make_indicators(avg_step_us=10000.0, step_count=4, host_exclusive_per_step_us=2000.0)
    gain = g.derive("graph-mode", ind, th)
    assert gain is not None and gain.estimate_pct == pytest.approx(10.0) and gain.low_pct == pytest.approx(5.0)
    assert "min(0.8, 0.5 × 2000.0 / 10000.0)" in gain.basis
