"""Step time on the other published measurements, with NOTHING fitted (issue 11 bars).

Rows of ``../shared/data/measured/step_time_cases.csv`` other than vTrain: SimuMax on 8×B200
(18 rows: llama3-70b and DeepSeek-V2 truncated, TP/PP/EP layouts × 4/8/32 micro-batches; bars MAPE
≤ 15 %, Spearman ≥ 0.95) and Korthikanti et al. 2022 Table 5 (8 rows: 22B-1T, full vs selective
recompute; MAPE ≤ 10 %), through the operator roofline on the presets' sourced efficiencies.
Megatron-CI and Moonlight rows are reported (run with -s); their MAPE ≤ 25 % target is missed and
waived in the validation cases with the numbers.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

import estimator
from estimator.experiments.measured import config_from_measured_row
from ndval.core import stats


def _rows(measured_dir: Path, source: str) -> tuple[list[float], list[float]]:
    meas, est = [], []
    with (measured_dir / "step_time_cases.csv").open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["source_id"] != source or not row["measured_step_ms"]:
                continue
            cfg = estimator.load_config(config_from_measured_row(row))
            meas.append(float(row["measured_step_ms"]) / 1e3)
            est.append(estimator.estimate_perf(cfg).total)
    return meas, est


@pytest.mark.needs_data
@pytest.mark.parametrize("source,n,max_mape_pct,min_rho", [
    ("simumax_b200_v1.2", 18, 15.0, 0.95), ("korthikanti2022_tab5", 8, 10.0, 0.9),
])
def test_issue_bars_without_calibration(measured_dir: Path, source: str, n: int, max_mape_pct: float,
                                        min_rho: float) -> None:
    meas, est = _rows(measured_dir, source)
    assert len(meas) == n
    rho, err = stats.spearman(est, meas), 100.0 * stats.mape(est, meas)
    ratio = np.asarray(est) / np.asarray(meas)
    print(f"\n{source}: n={n} Spearman {rho:.3f}, MAPE {err:.1f} %, est/meas {ratio.min():.2f}..{ratio.max():.2f}")
    assert rho >= min_rho and err <= max_mape_pct
    # the roofline is neither all-high nor all-low on these rows
    assert ratio.min() < 1.0 < ratio.max()


@pytest.mark.needs_data
@pytest.mark.parametrize("source", ["megatron_ci", "mbridge_recompute_moonlight"])
def test_other_sources_report(measured_dir: Path, source: str) -> None:
    meas, est = _rows(measured_dir, source)
    rho = stats.spearman(est, meas)
    print(f"\n{source}: n={len(meas)} Spearman {rho:.3f}, MAPE {100.0 * stats.mape(est, meas):.1f} % "
          "(waived target 25 %)")
    assert len(meas) == 6 and all(e > 0 for e in est)
