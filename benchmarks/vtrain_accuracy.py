"""Step-time accuracy on the vTrain single-node measurements (Megatron GPT on A100, full recompute).

First, all 1440 rows with nothing fitted (the operator roofline on the A100 preset's sourced
efficiencies, ``estimator.inputs.hardware``); then the declared calibration step below.

Reads ``step_time_cases.csv`` rows with ``source_id == vtrain_single`` (in place, from
``ndval.harness.paths.measured_dir()``), builds each config with ``estimator.experiments.measured``, fits ONE global
compute efficiency on the hash-selected ``fit`` half (``estimator.experiments.calibrate.split_half``) and prints
Spearman (pooled and median within groups of model, GPU count and global batch) and MAPE on the
held-out half, plus leave-one-out MAPE on the fit half.

Two settings of the host time per kernel launch (``options.host_launch_cost_us``), neither fitted:

* ``profile default``: the sourced CUDA launch-call time (5 µs, ``estimator.inputs.profiles``);
* ``measured``: the analyzer's median interval between consecutive launches of one host thread on a
  real eager-PyTorch profile (``--host-trace``, default the A100 Kineto trace
  ``kineto/hta-trace-diff/control.json.gz`` under the profiles folder), with its p25 / p75 and
  another trace's median as a sensitivity check (``--sensitivity``).

Usage::

    .venv/bin/python benchmarks/vtrain_accuracy.py [--json] [--sensitivity] [--host-trace REL]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from estimator.config.schema import EstimatorConfig, load_config
from estimator.experiments import calibrate
from estimator.experiments.measured import config_from_measured_row
from ndval.harness import paths
from ndval.harness.kinds.estimator.host_cost import measured_host_launch_cost

SOURCE_ID = "vtrain_single"


def load_rows(measured_dir: Path | None = None) -> list[dict[str, str]]:
    """The vTrain single-node rows of ``step_time_cases.csv``."""
    path = (measured_dir or paths.measured_dir()) / "step_time_cases.csv"
    with path.open(newline="", encoding="utf-8") as f:
        return [r for r in csv.DictReader(f) if r["source_id"] == SOURCE_ID]


def group_key(row: dict[str, str]) -> str:
    """Rows a strategy search ranks against each other: same model, GPU count and global batch."""
    return f"{row['model_name']}|{row['world_size']}|{row['global_batch_size']}"


#: the A100 eager-PyTorch profile whose host time per launch is measured (relative to the profiles folder)
HOST_TRACE = "kineto/hta-trace-diff/control.json.gz"
#: a second real trace (V100, same software family) for the sensitivity check
OTHER_TRACE = "kineto/hta-trace-diff/test.json.gz"


def measured_host_cost(relative: str = HOST_TRACE) -> dict[str, Any] | None:
    """The analyzer's host µs per launch on ``relative`` (harness bridge), None when the profile is absent."""
    if not (paths.profiles_dir() / relative).exists():
        return None
    return measured_host_launch_cost(relative)


def configs(rows: list[dict[str, str]], host_launch_cost_us: float | None = None) -> list[EstimatorConfig]:
    """Each row's config (``estimator.experiments.measured``); ``host_launch_cost_us`` is merged into its options
    for every row (None: the profile default)."""
    out = []
    for r in rows:
        cfg = config_from_measured_row(r)
        if host_launch_cost_us is not None:
            cfg["options"] = {**cfg.get("options", {}), "host_launch_cost_us": host_launch_cost_us}
        out.append(load_config(cfg))
    return out


def evaluate(rows: list[dict[str, str]], loo_subsample: int = 20, host_launch_cost_us: float | None = None,
             cfgs: list[EstimatorConfig] | None = None) -> calibrate.Calibration:
    """Calibrate one efficiency on the fit half and report the held-out accuracy.

    ``host_launch_cost_us``: fixed host µs per launch for every row (None: the profile default);
    ``cfgs``: the rows' configs when already built with :func:`configs`.
    """
    estimate = calibrate.efficiency_estimator(cfgs or configs(rows, host_launch_cost_us))
    measured_s = [float(r["measured_step_ms"]) / 1e3 for r in rows]
    return calibrate.calibrate_efficiency(
        estimate, [r["case_id"] for r in rows], measured_s, [group_key(r) for r in rows], loo_subsample
    )


def unfitted(rows: list[dict[str, str]], cfgs: list[EstimatorConfig]) -> calibrate.Accuracy:
    """Accuracy on all rows with nothing fitted (the preset's sourced efficiencies, ``compute_efficiency`` 1.0)."""
    estimate = calibrate.efficiency_estimator(cfgs)
    measured_s = [float(r["measured_step_ms"]) / 1e3 for r in rows]
    return calibrate.accuracy([estimate(i, 1.0) for i in range(len(rows))], measured_s, [group_key(r) for r in rows])


def host_bound_rows(cfgs: list[EstimatorConfig], efficiency: float) -> int:
    """Configs whose TOTAL at ``efficiency`` changes when the host launch bound is switched off."""
    off = [c.model_copy(update={"options": c.options.model_copy(update={"host_launch_overhead": False})})
           for c in cfgs]
    with_host, without = calibrate.efficiency_estimator(cfgs), calibrate.efficiency_estimator(off)
    return sum(1 for i in range(len(cfgs)) if with_host(i, efficiency) != without(i, efficiency))


def _summary(cal: calibrate.Calibration, bound: int) -> dict[str, Any]:
    return {
        "rows_fit": cal.fit_rows, "rows_holdout": cal.holdout_rows, "compute_efficiency": cal.efficiency,
        "fit": cal.fit.as_dict(), "holdout": cal.holdout.as_dict(),
        "holdout_uncalibrated_eff_1.0": cal.uncalibrated_holdout.as_dict(), "loo_mape_pct_fit_half": cal.loo_mape_pct,
        "rows_changed_by_host_launch_bound": bound,
    }


def _print(title: str, cal: calibrate.Calibration, bound: int, n_rows: int) -> None:
    print(f"\n== {title}")
    print(f"fitted compute_efficiency = {cal.efficiency:.4f} ({cal.fit_rows} fit rows; figures on {cal.holdout_rows} "
          "held-out rows)")
    for name, acc in (("fit", cal.fit), ("holdout", cal.holdout), ("holdout @eff=1.0", cal.uncalibrated_holdout)):
        print(f"{name:>17}: n={acc.n} Spearman pooled {acc.spearman_pooled:.3f}, median within "
              f"{acc.groups} groups {acc.spearman_group_median:.3f}, MAPE {acc.mape_pct:.1f} %, "
              f"median est/meas {acc.median_ratio:.3f}")
    print(f"leave-one-out MAPE on the fit half: {cal.loo_mape_pct:.1f} %")
    print(f"rows whose TOTAL the host launch bound changes at the fitted efficiency: {bound} of {n_rows}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--host-trace", default=HOST_TRACE, help="profile (relative to the profiles folder) whose "
                        "measured host time per launch is used (default %(default)s)")
    parser.add_argument("--sensitivity", action="store_true",
                        help="also run at the trace's p25 / p75 and at the other trace's median")
    args = parser.parse_args(argv)
    rows = load_rows()
    runs: dict[str, tuple[float | None, dict[str, Any] | None]] = {"profile default": (None, None)}
    host = measured_host_cost(args.host_trace)
    if host is None:
        print(f"host trace {args.host_trace!r} not found under {paths.profiles_dir()}: measured setting skipped",
              file=sys.stderr)
    else:
        runs[f"measured on {args.host_trace}"] = (host["value_us"], host)
        if args.sensitivity:
            runs["sensitivity: trace p25"] = (host["p25_us"], None)
            runs["sensitivity: trace p75"] = (host["p75_us"], None)
            other = measured_host_cost(OTHER_TRACE)
            if other is not None:
                runs[f"sensitivity: median of {OTHER_TRACE}"] = (other["value_us"], other)
    doc: dict[str, Any] = {}
    for title, (cost, record) in runs.items():
        cfgs = configs(rows, cost)
        plain = unfitted(rows, cfgs)
        cal = evaluate(rows, cfgs=cfgs)
        bound = host_bound_rows(cfgs, cal.efficiency)
        doc[title] = _summary(cal, bound) | {"host_launch_cost_us": cost, "host_measurement": record,
                                             "all_rows_nothing_fitted": plain.as_dict()}
        if not args.json:
            label = "profile default (5 us)" if cost is None else f"{title}: {cost:.1f} us per launch"
            print(f"\n== all {plain.n} rows, nothing fitted, host {label}: Spearman pooled {plain.spearman_pooled:.3f}, "
                  f"median within {plain.groups} groups {plain.spearman_group_median:.3f}, MAPE {plain.mape_pct:.1f} %, "
                  f"median est/meas {plain.median_ratio:.3f}")
            _print(f"host time per launch: {label}", cal, bound, len(rows))
    if args.json:
        print(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
