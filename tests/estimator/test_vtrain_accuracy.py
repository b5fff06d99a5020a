"""Step-time accuracy against real measurements: vTrain single-node rows (Megatron GPT on A100,
activation checkpointing), ``../shared/data/measured/step_time_cases.csv``.

One global compute efficiency is fitted on the hash-selected half of the rows
(``calibrate.split_half``); Spearman and MAPE are reported on the other half (run with ``-s`` to
see the figures; ``benchmarks/vtrain_accuracy.py`` prints them too). The issue's bars (pooled
Spearman ≥ 0.9, median within-group Spearman ≥ 0.6) are asserted as strict xfails: the model
misses them, see docs/step-time-accuracy.md. The sourced host kernel-launch bound (5 µs per launch,
on by default) binds on none of these rows: the measured per-layer, per-micro-batch excess is
~11-16× larger than the launch time of the counted kernels.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

from estimator import calibrate

_SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "vtrain_accuracy.py"


def _module():
    spec = importlib.util.spec_from_file_location("vtrain_accuracy", _SCRIPT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def result(measured_dir: Path) -> calibrate.Calibration:
    mod = _module()
    rows = mod.load_rows(measured_dir)
    assert len(rows) == 1440
    cal = mod.evaluate(rows, loo_subsample=10)
    h = cal.holdout
    print(f"\nvTrain: eff {cal.efficiency:.4f} fitted on {cal.fit_rows} rows; held-out {h.n} rows: Spearman "
          f"pooled {h.spearman_pooled:.3f}, median within {h.groups} groups {h.spearman_group_median:.3f}, "
          f"MAPE {h.mape_pct:.1f} %; LOO MAPE (fit half) {cal.loo_mape_pct:.1f} %")
    return cal


@pytest.mark.needs_data
def test_vtrain_calibration_reports_figures(result: calibrate.Calibration) -> None:
    assert result.fit_rows + result.holdout_rows == 1440
    assert calibrate.EFF_MIN < result.efficiency < calibrate.EFF_MAX
    for acc in (result.fit, result.holdout):
        assert all(math.isfinite(v) for v in acc.as_dict().values())
    # the one fitted knob transfers to the unseen half: its median est/meas is within 20 %
    assert 0.8 <= result.holdout.median_ratio <= 1.25
    # and it beats the uncalibrated raw peak on MAPE
    assert result.holdout.mape_pct < result.uncalibrated_holdout.mape_pct


@pytest.mark.needs_data
@pytest.mark.xfail(strict=True, reason="held-out pooled Spearman is 0.754 (< 0.9) with the sourced host launch bound on "
                   "(it binds on no row): see docs/step-time-accuracy.md")
def test_vtrain_spearman_pooled_bar(result: calibrate.Calibration) -> None:
    assert result.holdout.spearman_pooled >= 0.9


@pytest.mark.needs_data
@pytest.mark.xfail(strict=True, reason="held-out median within-group Spearman is 0.333 (< 0.6): the per-layer, "
                   "per-micro-batch fixed cost (~2.7-3.5 ms) is ~11-16x the sourced kernel-launch host time of the "
                   "counted kernels (5 us x ~45 kernels), so the host bound never binds")
def test_vtrain_spearman_within_group_bar(result: calibrate.Calibration) -> None:
    assert result.holdout.spearman_group_median >= 0.6


@pytest.mark.needs_data
def test_vtrain_configs_carry_the_host_launch_bound(measured_dir: Path) -> None:
    # the evaluation above runs with the sourced host term on (default = fixed()), counted kernels > 0
    from estimator.config import load_config
    from estimator.measured import config_from_measured_row
    from estimator.perf.parts import stage_costs

    row = _module().load_rows(measured_dir)[0]
    cfg = load_config(config_from_measured_row(row))
    assert cfg.options.host_launch_overhead and cfg.profile == "megatron"
    assert all(s.kernels_fw > 0 and s.host_fw > 0 for s in stage_costs(cfg))
