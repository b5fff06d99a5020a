"""``ndval explain RUN.yaml PROFILE [--hardware-overlay OVERLAY.yaml]``: an estimate and a profile side by side.

Per operator class (the names of :mod:`analyzer.kernel_classes`, which the step-time model uses too):
the estimate's seconds per step on its straggler stage — ``m ×`` the class's device time per
micro-batch (all passes) for ``gemm`` / ``attention`` / ``elementwise``, the optimizer step, the
TP/EP/CP collectives ``× m`` plus DP, the exposed host time and the pipeline bubble — beside the
profile's kernel time per step of the same class (first rank; kernel time / steps captured). The
ratio shows which class the model over- or under-counts for this run. Then the wait components: the
estimate's MP / CP / EP / DP / PP waits beside the profile's exposed communication seconds per step of the
same dimension (the profile's communication groups attributed by the run file's layout,
:mod:`analyzer.comm_groups`; a layout whose world size does not match the profile's ranks is reported and
leaves the groups unattributed). The two must describe the same run for the comparison to mean anything;
explain checks only the world size.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ndval.core.units import S_PER_US

EXIT_BAD_INPUT = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the ``explain`` options."""
    parser.add_argument("config", help="run configuration (YAML, spec §3)")
    parser.add_argument("profile", help="profiler output of that run (Ascend or Kineto)")
    parser.add_argument("--hardware-overlay", default=None, metavar="OVERLAY.yaml",
                        help="device efficiencies replacing the preset's (ndval calibrate --from-profile)")
    parser.add_argument("--json", action="store_true", help="print a JSON document instead of the tables")


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
        out[k.kernel_class] = out.get(k.kernel_class, 0.0) + k.dur_us * S_PER_US / steps
    return out


def measured_waits(profile: Path, parallel: Any, source: str) -> tuple[dict[str, float], dict[str, Any] | None, list[str]]:
    """Exposed communication seconds per step per dimension of the profile's first rank, the groups attributed by
    the run's layout (``analyzer.comm_groups``); the analysis warnings about the layout come back too."""
    from analyzer import analyze, load_dataset
    from analyzer.comm_groups import Layout, validated

    layout = validated(Layout(tp=parallel.tp, pp=parallel.pp, dp=parallel.dp, ep=parallel.ep, cp=parallel.cp,
                              source=source))
    analysis = analyze(load_dataset(profile), layout=layout)
    cg = analysis.primary.comm_by_group
    errors = list(cg["errors"]) if cg else [f"{profile}: the profile names no communication group"]
    return (dict(cg["mean_exposed_s_per_step"]) if cg else {}), cg, errors


def wait_rows(real_parts: dict[str, float], measured: dict[str, float]) -> list[list[Any]]:
    """``[part, dimension, estimate s/step, measured exposed s/step]`` per wait component (MP = tp)."""
    from analyzer.comm_groups import WAIT_PART

    rows = [[part, dim, real_parts.get(part), measured.get(dim)] for dim, part in WAIT_PART.items()]
    rows += [["—", k, None, v] for k, v in measured.items() if k not in WAIT_PART]  # ambiguous / unattributed
    return rows


def run(args: argparse.Namespace) -> int:
    """Estimate, read the profile, print both per class and per wait component; 2 on bad input."""
    from tabulate import tabulate

    from analyzer.comm_groups import LayoutError
    from analyzer.ingest.errors import IngestError
    from estimator.config.errors import ConfigError
    from estimator.config.schema import load_config
    from estimator.inputs.overlay import apply_overlay
    from estimator.perf.parts import estimate_perf
    from ndval.core import strictjson
    from ndval.harness.commands.calibrate import profile_kernels

    try:
        cfg = load_config(args.config)
        if args.hardware_overlay:
            cfg = apply_overlay(cfg, args.hardware_overlay)
        report = estimate_perf(cfg)
        measured, groups, wait_notes = measured_waits(Path(args.profile), cfg.parallel, str(args.config))
    except (ConfigError, OSError, ValueError, IngestError, LayoutError) as exc:
        print(f"ndval explain: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        kernels, meta = profile_kernels(Path(args.profile))
        est, prof = estimate_by_class(report), profile_by_class(kernels, int(meta["steps"]))
    except (OSError, ValueError) as exc:  # a profile without kernels (a cluster output) still has its waits
        meta, est, prof = {"steps": None}, estimate_by_class(report), {}
        wait_notes.append(f"{args.profile}: per-class kernel times unavailable ({exc})")
    classes = [*est, *(c for c in prof if c not in est)]
    rows = [[c, est.get(c), prof.get(c), (est[c] / prof[c]) if est.get(c) and prof.get(c) else None] for c in classes]
    waits = wait_rows(report.real_parts, measured)
    if args.json:
        print(strictjson.dumps({"config": args.config, "profile": args.profile, "steps_in_profile": meta["steps"],
                          "estimate_total_s": report.total, "estimate_s_per_step": est, "profile_s_per_step": prof,
                          "waits": [{"part": w[0], "dimension": w[1], "estimate_s_per_step": w[2],
                                     "measured_exposed_s_per_step": w[3]} for w in waits],
                          "comm_by_group": groups, "notes": wait_notes}, indent=2))
        return 0
    print(f"estimate {args.config}: TOTAL {report.total:.4g} s/step (straggler stage {report.straggler_stage}, "
          f"m = {report.num_micro_batches}); profile {args.profile}: {meta['steps']} step(s), first rank")
    print(tabulate(rows, headers=["class", "estimate s/step", "profile s/step", "estimate/profile"], floatfmt=".4g",
                   missingval="—"))
    print("\nwaits: the estimate's wait components beside the profile's exposed communication per parallel dimension "
          "(PP_WAIT also holds the pipeline bubble; the profile side is the exposed p2p communication only)")
    print(tabulate(waits, headers=["part", "dimension", "estimate s/step", "measured exposed s/step"], floatfmt=".4g",
                   missingval="—"))
    for note in wait_notes:
        print(f"note: {note}", file=sys.stderr)
    return 0
