"""``ndval explain RUN.yaml PROFILE [--hardware-overlay OVERLAY.yaml]``: an estimate and a profile side by side.

Per operator class (the names of :mod:`analyzer.kernel_classes`, which the step-time model uses too):
the estimate's seconds per step on its straggler stage — ``m ×`` the class's device time per
micro-batch (all passes) for ``gemm`` / ``attention`` / ``elementwise``, the optimizer step, the
TP/EP/CP collectives ``× m`` plus DP, the exposed host time and the pipeline bubble — beside the
profile's kernel time per step of the same class (first rank; kernel time / steps captured). The
ratio shows which class the model over- or under-counts for this run. The two must describe the same
run for the comparison to mean anything; explain does not check that.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

EXIT_BAD_INPUT = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the ``explain`` options."""
    parser.add_argument("config", help="run configuration (YAML, spec §3)")
    parser.add_argument("profile", help="profiler output of that run (Ascend or Kineto)")
    parser.add_argument("--hardware-overlay", default=None, metavar="OVERLAY.yaml",
                        help="device efficiencies replacing the preset's (ndval calibrate --from-profile)")
    parser.add_argument("--json", action="store_true", help="print a JSON document instead of the table")


def estimate_by_class(report: Any) -> dict[str, float]:
    """Seconds per step per class on the straggler stage of a :class:`PerfReport` (see the module docstring)."""
    s = report.stages[report.straggler_stage]
    m = report.num_micro_batches
    out = {cls: m * s.by_class.get(cls, 0.0) for cls in ("gemm", "attention", "elementwise")}
    out["optimizer"] = s.optimizer
    out["collective"] = m * (s.mp_comm + s.ep_comm + s.cp_comm) + s.dp_comm + report.perf_parts["PP_COMM"]
    out["exposed host"] = m * sum(s.exposed_host())
    out["bubble"] = report.perf_parts["BUBBLE"]
    return out


def profile_by_class(kernels: list[Any], steps: int) -> dict[str, float]:
    """Kernel seconds per step per class."""
    out: dict[str, float] = {}
    for k in kernels:
        out[k.kernel_class] = out.get(k.kernel_class, 0.0) + k.dur_us * 1e-6 / steps
    return out


def run(args: argparse.Namespace) -> int:
    """Estimate, read the profile, print both per class; 2 on bad input."""
    import json

    from tabulate import tabulate

    from estimator.config.errors import ConfigError
    from estimator.config.schema import load_config
    from estimator.inputs.overlay import apply_overlay
    from estimator.perf.parts import estimate_perf
    from ndval.harness import paths
    from ndval.harness.commands.calibrate import profile_kernels

    try:
        cfg = load_config(args.config, ref_dirs=(paths.cases_dir(),))
        if args.hardware_overlay:
            cfg = apply_overlay(cfg, args.hardware_overlay)
        report = estimate_perf(cfg)
        kernels, meta = profile_kernels(Path(args.profile))
    except (ConfigError, OSError, ValueError) as exc:
        print(f"ndval explain: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    est, prof = estimate_by_class(report), profile_by_class(kernels, int(meta["steps"]))
    classes = [*est, *(c for c in prof if c not in est)]
    rows = [[c, est.get(c), prof.get(c), (est[c] / prof[c]) if est.get(c) and prof.get(c) else None] for c in classes]
    if args.json:
        print(json.dumps({"config": args.config, "profile": args.profile, "steps_in_profile": meta["steps"],
                          "estimate_total_s": report.total, "estimate_s_per_step": est, "profile_s_per_step": prof},
                         indent=2))
        return 0
    print(f"estimate {args.config}: TOTAL {report.total:.4g} s/step (straggler stage {report.straggler_stage}, "
          f"m = {report.num_micro_batches}); profile {args.profile}: {meta['steps']} step(s), first rank")
    print(tabulate(rows, headers=["class", "estimate s/step", "profile s/step", "estimate/profile"], floatfmt=".4g",
                   missingval="—"))
    return 0
