"""Step-time accuracy on the vTrain single-node measurements (Megatron GPT on A100, full recompute).

Reads ``step_time_cases.csv`` rows with ``source_id == vtrain_single`` (in place, from
``harness.paths.measured_dir()``), builds each config with ``estimator.measured``, fits ONE global
compute efficiency on the hash-selected ``fit`` half (``estimator.calibrate.split_half``) and prints
Spearman (pooled and median within groups of model, GPU count and global batch) and MAPE on the
held-out half, plus leave-one-out MAPE on the fit half, and how many rows the host kernel-launch
bound (``options.host_launch_overhead``, on by default) changes at the fitted efficiency. Usage::

    .venv/bin/python benchmarks/vtrain_accuracy.py [--json]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from estimator import calibrate
from estimator.config import load_config
from estimator.measured import config_from_measured_row
from harness import paths

SOURCE_ID = "vtrain_single"


def load_rows(measured_dir: Path | None = None) -> list[dict[str, str]]:
    """The vTrain single-node rows of ``step_time_cases.csv``."""
    path = (measured_dir or paths.measured_dir()) / "step_time_cases.csv"
    with path.open(newline="", encoding="utf-8") as f:
        return [r for r in csv.DictReader(f) if r["source_id"] == SOURCE_ID]


def group_key(row: dict[str, str]) -> str:
    """Rows a strategy search ranks against each other: same model, GPU count and global batch."""
    return f"{row['model_name']}|{row['world_size']}|{row['global_batch_size']}"


def evaluate(rows: list[dict[str, str]], loo_subsample: int = 20) -> calibrate.Calibration:
    """Calibrate one efficiency on the fit half and report the held-out accuracy."""
    cfgs = [load_config(config_from_measured_row(r)) for r in rows]
    estimate = calibrate.efficiency_estimator(cfgs)
    measured_s = [float(r["measured_step_ms"]) / 1e3 for r in rows]
    return calibrate.calibrate_efficiency(
        estimate, [r["case_id"] for r in rows], measured_s, [group_key(r) for r in rows], loo_subsample
    )


def host_bound_rows(rows: list[dict[str, str]], efficiency: float) -> int:
    """Rows whose TOTAL at ``efficiency`` changes when the host launch bound is switched off."""
    cfgs = [load_config(config_from_measured_row(r)) for r in rows]
    off = [c.model_copy(update={"options": c.options.model_copy(update={"host_launch_overhead": False})})
           for c in cfgs]
    with_host, without = calibrate.efficiency_estimator(cfgs), calibrate.efficiency_estimator(off)
    return sum(1 for i in range(len(cfgs)) if with_host(i, efficiency) != without(i, efficiency))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = load_rows()
    cal = evaluate(rows)
    bound = host_bound_rows(rows, cal.efficiency)
    doc = {
        "rows_fit": cal.fit_rows, "rows_holdout": cal.holdout_rows, "compute_efficiency": cal.efficiency,
        "fit": cal.fit.as_dict(), "holdout": cal.holdout.as_dict(),
        "holdout_uncalibrated_eff_1.0": cal.uncalibrated_holdout.as_dict(), "loo_mape_pct_fit_half": cal.loo_mape_pct,
        "rows_changed_by_host_launch_bound": bound,
    }
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"vTrain single-node: {cal.fit_rows} fit rows, {cal.holdout_rows} held-out rows")
    print(f"fitted compute_efficiency = {cal.efficiency:.4f} (fit half only)")
    for name, acc in (("fit", cal.fit), ("holdout", cal.holdout), ("holdout @eff=1.0", cal.uncalibrated_holdout)):
        print(f"{name:>17}: n={acc.n} Spearman pooled {acc.spearman_pooled:.3f}, median within "
              f"{acc.groups} groups {acc.spearman_group_median:.3f}, MAPE {acc.mape_pct:.1f} %, "
              f"median est/meas {acc.median_ratio:.3f}")
    print(f"leave-one-out MAPE on the fit half: {cal.loo_mape_pct:.1f} %")
    print(f"rows whose TOTAL the host kernel-launch bound changes at the fitted efficiency: {bound} of {len(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
