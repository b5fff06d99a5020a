"""Calibration helpers: split, metrics, one-knob fit (synthetic data), and the fast estimator path."""

from __future__ import annotations

import math

import pytest

import estimator
from estimator.experiments import calibrate
from estimator.experiments.seed import seed_run


def test_split_is_deterministic_and_balanced() -> None:
    ids = [f"case_{i}" for i in range(1000)]
    halves = [calibrate.split_half(c) for c in ids]
    assert halves == [calibrate.split_half(c) for c in ids]
    assert 400 < halves.count("fit") < 600


def test_accuracy_groups_need_three_rows() -> None:
    acc = calibrate.accuracy([1, 2, 3, 1, 2], [1, 2, 3, 2, 1], ["a", "a", "a", "b", "b"])
    assert acc.groups == 1 and acc.spearman_group_median == pytest.approx(1.0)
    # 0, 0, 0, |1−2|/2 = 50 %, |2−1|/1 = 100 % → mean 30 %
    assert acc.mape_pct == pytest.approx(30.0)


def test_accuracy_leaves_constant_groups_out() -> None:
    acc = calibrate.accuracy([1, 1, 1, 1, 2, 3], [1, 2, 3, 3, 2, 1], ["a", "a", "a", "b", "b", "b"])
    assert acc.groups == 1 and acc.spearman_group_median == pytest.approx(-1.0)
    assert not math.isnan(acc.spearman_pooled)


def test_fit_recovers_synthetic_efficiency() -> None:
    # synthetic: time = flops/(peak·eff) + comm with true eff 0.4
    flops = [1.0 + i * 0.7 for i in range(20)]
    comm = [0.1 * (i % 5) for i in range(20)]

    def estimate(i: int, eff: float) -> float:
        return flops[i] / eff + comm[i]

    measured = [estimate(i, 0.4) for i in range(20)]
    assert calibrate.fit_efficiency(estimate, list(range(20)), measured) == pytest.approx(0.4, abs=1e-3)
    cal = calibrate.calibrate_efficiency(estimate, [f"c{i}" for i in range(20)], measured, ["g"] * 20, 5)
    assert cal.fit_rows > 0 and cal.holdout_rows > 0
    assert cal.efficiency == pytest.approx(0.4, abs=1e-3)
    assert cal.holdout.mape_pct < 0.5 and cal.loo_mape_pct < 0.5


def test_empty_half_is_an_error() -> None:
    with pytest.raises(ValueError, match="half"):
        calibrate.calibrate_efficiency(lambda i, e: 1.0, ["c0"], [1.0], ["g"])


def test_efficiency_estimator_equals_estimate_perf() -> None:
    cfgs = [estimator.load_config(seed_run(label)) for label in ("A", "D")]
    fast = calibrate.efficiency_estimator(cfgs)
    for i, cfg in enumerate(cfgs):
        slow = cfg.model_copy(update={"options": cfg.options.model_copy(update={"compute_efficiency": 0.37})})
        assert fast(i, 0.37) == pytest.approx(estimator.estimate_perf(slow).total, rel=1e-12)
