"""Step-time accuracy against real measurements: vTrain single-node rows (Megatron GPT on A100,
activation checkpointing), ``../shared/data/measured/step_time_cases.csv``.

One global compute efficiency is fitted on the hash-selected half of the rows
(``calibrate.split_half``); Spearman and MAPE are reported on the other half (run with ``-s`` to
see the figures; ``benchmarks/vtrain_accuracy.py`` prints them too).

Two settings of the host time per kernel launch, neither fitted to these rows:

* the profile default (5 µs, the sourced CUDA launch-call time): the bound binds on no row and the
  ranking bars are missed (pooled 0.754, within-group 0.333) — kept as strict xfails;
* measured on a real eager-PyTorch A100 profile by the analyzer (median interval between consecutive
  launches of one host thread, 30.0 µs on ``kineto/hta-trace-diff/control.json.gz``): with nothing
  fitted (efficiency 1.0) the held-out half meets both bars; with the efficiency fitted the
  within-group bar holds and the pooled bar is missed (0.881, strict xfail). See
  docs/step-time-accuracy.md §3.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Any

import pytest

from estimator import calibrate

_SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "vtrain_accuracy.py"


def _module() -> Any:
    spec = importlib.util.spec_from_file_location("vtrain_accuracy", _SCRIPT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _show(title: str, cal: calibrate.Calibration) -> None:
    h, u = cal.holdout, cal.uncalibrated_holdout
    print(f"\nvTrain ({title}): eff {cal.efficiency:.4f} fitted on {cal.fit_rows} rows; held-out {h.n} rows: "
          f"Spearman pooled {h.spearman_pooled:.3f}, median within {h.groups} groups {h.spearman_group_median:.3f}, "
          f"MAPE {h.mape_pct:.1f} %; at eff 1.0: {u.spearman_pooled:.3f} / {u.spearman_group_median:.3f}; "
          f"LOO MAPE (fit half) {cal.loo_mape_pct:.1f} %")


@pytest.fixture(scope="module")
def rows(measured_dir: Path) -> list[dict[str, str]]:
    out = _module().load_rows(measured_dir)
    assert len(out) == 1440
    return out


@pytest.fixture(scope="module")
def result(rows: list[dict[str, str]]) -> calibrate.Calibration:
    cal = _module().evaluate(rows, loo_subsample=10)
    _show("profile default host cost, 5 us", cal)
    return cal


@pytest.fixture(scope="module")
def host_record(profile_path: Any) -> dict[str, Any]:
    mod = _module()
    profile_path(mod.HOST_TRACE)  # skips with the reason when the profile is absent
    record = mod.measured_host_cost(mod.HOST_TRACE)
    assert record is not None
    return record


@pytest.fixture(scope="module")
def measured(rows: list[dict[str, str]], host_record: dict[str, Any]) -> calibrate.Calibration:
    cal = _module().evaluate(rows, loo_subsample=10, host_launch_cost_us=host_record["value_us"])
    _show(f"host cost measured on the A100 trace, {host_record['value_us']:.1f} us", cal)
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
@pytest.mark.xfail(strict=True, reason="profile default host cost (5 us, launch call only): held-out pooled Spearman "
                   "0.754 < 0.9; the bound binds on no row")
def test_vtrain_spearman_pooled_bar_profile_default(result: calibrate.Calibration) -> None:
    assert result.holdout.spearman_pooled >= 0.9


@pytest.mark.needs_data
@pytest.mark.xfail(strict=True, reason="profile default host cost (5 us): held-out median within-group Spearman "
                   "0.333 < 0.6; the per-layer, per-micro-batch cost of these runs is ~11-16x the launch-call time")
def test_vtrain_spearman_within_group_bar_profile_default(result: calibrate.Calibration) -> None:
    assert result.holdout.spearman_group_median >= 0.6


@pytest.mark.needs_data
def test_measured_host_cost_is_the_analyzer_measurement(host_record: dict[str, Any]) -> None:
    # median interval between consecutive launches of one host thread, A100 Kineto trace (2 threads)
    assert host_record["value_us"] == pytest.approx(30.0)
    assert host_record["p25_us"] <= host_record["value_us"] <= host_record["p75_us"]
    assert host_record["threads"] == 2 and host_record["intervals"] > 9000


@pytest.mark.needs_data
def test_vtrain_bars_met_with_measured_host_cost_and_nothing_fitted(measured: calibrate.Calibration) -> None:
    # zero fitted knobs (efficiency 1.0), judged on the held-out half: both issue bars
    acc = measured.uncalibrated_holdout
    assert acc.spearman_pooled >= 0.9
    assert acc.spearman_group_median >= 0.6


@pytest.mark.needs_data
def test_vtrain_measured_host_cost_fitted_efficiency(measured: calibrate.Calibration,
                                                     result: calibrate.Calibration) -> None:
    # the fitted efficiency (one knob, fit half) with the measured host cost: the within-group bar
    # holds on the held-out half, the ranking beats the launch-call-only default, MAPE falls
    h = measured.holdout
    assert h.spearman_group_median >= 0.6
    assert h.spearman_pooled > result.holdout.spearman_pooled
    assert h.mape_pct < result.holdout.mape_pct


@pytest.mark.needs_data
@pytest.mark.xfail(strict=True, reason="measured host cost (30 us) with the efficiency fitted on the fit half: "
                   "held-out pooled Spearman 0.881 < 0.9 (the fitted efficiency absorbs per-layer cost the kernel "
                   "count does not explain); nothing fitted: 0.968")
def test_vtrain_spearman_pooled_bar_measured_host_fitted(measured: calibrate.Calibration) -> None:
    assert measured.holdout.spearman_pooled >= 0.9


@pytest.mark.needs_data
def test_vtrain_configs_carry_the_host_launch_bound(rows: list[dict[str, str]]) -> None:
    # the evaluation runs with the host term on (default = fixed()), counted kernels > 0, and with the
    # unfused attention of vTrain's GPT layer (a source fact, estimator.measured.SOURCE_FACTS)
    from estimator.config import load_config
    from estimator.measured import config_from_measured_row
    from estimator.perf.parts import stage_costs

    cfg = load_config(config_from_measured_row(rows[0]))
    assert cfg.options.host_launch_overhead and cfg.profile == "megatron"
    assert cfg.train.flash_attention is False
    assert "gpt_modeling.py" in cfg.model.source_facts["train.flash_attention"]
    assert all(s.kernels_fw > 0 and s.host_fw > 0 for s in stage_costs(cfg))
