"""Issue 11 acceptance table: step time against every published source, nothing fitted.

Each row of ``step_time_cases.csv`` (read in place, ``ndval.harness.paths.measured_dir()``) is built with
``estimator.experiments.measured`` and estimated with the default model (``fixed()``: operator roofline on the
hardware preset's sourced efficiencies, host launch bound). The vTrain rows take the host time per
launch the analyzer measures on the A100 Kineto trace (as the validation case does); no number is
fitted on any row judged. Prints source, rows, MAPE, Spearman (pooled; vTrain also the median within
groups of model, GPU count and global batch), the issue's target and whether it is met.

Usage::

    .venv/bin/python benchmarks/step_time_accuracy.py [--json]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import estimator
from estimator.experiments import calibrate
from estimator.experiments.measured import config_from_measured_row
from ndval.harness import paths
from ndval.harness.kinds.estimator.host_cost import measured_host_launch_cost

HOST_TRACE = "kineto/hta-trace-diff/control.json.gz"

#: source -> (MAPE target %, Spearman target or None, within-group target or None), issue 11 (CI and
#: Moonlight: issue 26, 20 %)
TARGETS: dict[str, tuple[float, float | None, float | None]] = {
    "vtrain_single": (15.0, 0.95, 0.8),
    "simumax_b200_v1.2": (15.0, 0.95, None),
    "korthikanti2022_tab5": (10.0, None, None),
    "megatron_ci": (20.0, None, None),
    "mbridge_recompute_moonlight": (20.0, None, None),
}


def _group(row: dict[str, str]) -> str:
    return f"{row['model_name']}|{row['world_size']}|{row['global_batch_size']}"


def evaluate(source: str, rows: list[dict[str, str]], host_us: float | None) -> dict[str, Any]:
    """Accuracy of one source's rows with a measured step time."""
    est, meas, groups = [], [], []
    for row in rows:
        if row["source_id"] != source or not row["measured_step_ms"]:
            continue
        raw = config_from_measured_row(row)
        if host_us is not None:
            raw["options"] = {**raw.get("options", {}), "host_launch_cost_us": host_us}
        est.append(estimator.estimate_perf(estimator.load_config(raw)).total)
        meas.append(float(row["measured_step_ms"]) / 1e3)
        groups.append(_group(row))
    acc = calibrate.accuracy(est, meas, groups)
    mape_t, rho_t, within_t = TARGETS[source]
    met = acc.mape_pct <= mape_t and (rho_t is None or acc.spearman_pooled >= rho_t) and (
        within_t is None or acc.spearman_group_median >= within_t)
    return {"source": source, "host_us_per_launch": host_us, **acc.as_dict(),
            "target": {"mape_pct": mape_t, "spearman": rho_t, "within_group": within_t}, "met": met}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with (paths.measured_dir() / "step_time_cases.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    host = None
    if (paths.profiles_dir() / HOST_TRACE).exists():
        host = float(measured_host_launch_cost(HOST_TRACE)["value_us"])
    results = [evaluate(s, rows, host if s == "vtrain_single" else None) for s in TARGETS]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print("| source | rows | MAPE | Spearman | median within-group | target | met |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        t = r["target"]
        target = f"MAPE ≤ {t['mape_pct']:g} %" + (f", ρ ≥ {t['spearman']}" if t["spearman"] else "") + (
            f", within ≥ {t['within_group']}" if t["within_group"] else "")
        within = f"{r['spearman_group_median']:.3f} ({r['groups']} groups)" if r["groups"] else "—"
        print(f"| {r['source']} | {r['n']} | {r['mape_pct']:.1f} % | {r['spearman_pooled']:.3f} | {within} | {target} "
              f"| {'yes' if r['met'] else 'NO'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
