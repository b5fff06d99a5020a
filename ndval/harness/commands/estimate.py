"""``ndval estimate RUN.yaml [--json] [--set key=value ...] [--preset legacy|fixed] [--hardware-overlay FILE]``.

Prints the model's size (``model.params_total``, ``model.params_active``), the per-stage memory
table (MiB) and the step-time parts (``estimator.perf``). ``--model config.json`` replaces the run's
model by a Hugging Face config; ``--from-megatron ARGS`` / ``--from-torchtitan TOML`` (with
``--hardware``, ``--world-size``) take the whole run from a launch file instead of RUN.yaml; with a RUN.yaml,
``--hardware`` / ``--world-size`` / ``--profile`` / ``--vocab-size`` set ``hardware.preset``, ``hardware.devices``,
``profile`` and ``model.vocab_size`` (before ``--set``, which wins).
A bad configuration prints one ``ConfigError`` line on stderr and exits with code 2.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from tabulate import tabulate

from estimator.config import presets
from estimator.config.errors import ConfigError
from estimator.config.loading import read_yaml
from estimator.config.schema import EstimatorConfig, load_config
from estimator.importers import import_hf_config
from estimator.inputs.overlay import apply_overlay
from estimator.inputs.params import param_counts
from estimator.memory import COMPONENTS, MemoryReport, estimate_memory
from estimator.perf.parts import estimate_perf, format_perf_table
from ndval.core.version import ndval_version
from ndval.harness import paths
from ndval.harness.commands.importing import add_source_arguments, imported_run

#: exit code for an invalid configuration
EXIT_CONFIG_ERROR = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the ``estimate`` options."""
    parser.add_argument("config", nargs="?", default=None,
                        help="run configuration (YAML, spec §3); or give --from-megatron / --from-torchtitan")
    parser.add_argument("--model", dest="hf_model", default=None, metavar="CONFIG.json",
                        help="use the model of a Hugging Face config.json instead of the run's model")
    add_source_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON document instead of tables")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
        help="override a field, e.g. --set parallel.tp=2 (repeatable)",
    )
    parser.add_argument(
        "--hardware-overlay", default=None, metavar="OVERLAY.yaml",
        help="device efficiencies replacing the preset's (written by ndval calibrate --from-profile)",
    )
    parser.add_argument(
        "--preset", choices=sorted(presets.PRESETS), default=None,
        help="merge an option preset (legacy: the reference before the fixes; fixed: every fix on)",
    )


def _load(args: argparse.Namespace) -> EstimatorConfig:
    overrides: list[str] = []
    if args.preset:
        overrides += [f"options.{k}={_yaml_scalar(v)}" for k, v in presets.PRESETS[args.preset]().items()]
    overrides += list(args.overrides)
    source: Any = args.config
    run = imported_run(args)
    if run is not None:
        source = run.data
    elif args.config is None:
        raise ConfigError("<arguments>", "give a run configuration (RUN.yaml) or --from-megatron / --from-torchtitan"
                          " / --from-mindformers")
    else:  # the import options on a RUN.yaml: overrides before --set's (which win)
        overrides = [*run_option_overrides(args), *overrides]
    if args.hf_model:
        data = load_config_mapping(source)
        source = {**data, "model": import_hf_config(args.hf_model).data["model"]}
    cfg = load_config(source, overrides or None, base_dir=Path(args.config).parent if args.config else None,
                      ref_dirs=(paths.cases_dir(),))
    if getattr(args, "hardware_overlay", None):
        cfg = apply_overlay(cfg, args.hardware_overlay)
    return cfg


def run_option_overrides(args: argparse.Namespace) -> list[str]:
    """``--hardware``, ``--world-size``, ``--profile`` and ``--vocab-size`` given with a RUN.yaml, as the overrides
    ``hardware.preset``, ``hardware.devices``, ``profile`` and ``model.vocab_size`` (before, they applied to the
    launch-file imports only and were ignored here)."""
    pairs = (("hardware", "hardware.preset"), ("world_size", "hardware.devices"), ("profile", "profile"),
             ("vocab_size", "model.vocab_size"))  # (the order of importing.RUN_OPTIONS)
    return [f"{key}={getattr(args, name)}" for name, key in pairs if getattr(args, name, None) is not None]


def load_config_mapping(source: Any) -> dict[str, Any]:
    """The run mapping of ``source`` (a YAML path or a mapping), its ``model: {ref:}`` left as written."""
    if isinstance(source, dict):
        return source
    return read_yaml(Path(source))[0]


def _yaml_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def format_memory_table(report: MemoryReport) -> str:
    """Per-stage components and totals (MiB), the peak marked."""
    headers = ["stage", *COMPONENTS, "total_mb"]
    rows = []
    for s in report.stages:
        mark = " *" if s.stage == report.peak_stage else ""
        rows.append([f"{s.stage}{mark}", *(round(s.components[c], 1) for c in COMPONENTS), round(s.total_mb, 1)])
    table = tabulate(rows, headers=headers, tablefmt="simple", floatfmt=".1f")
    fit = "fits" if report.fits else "DOES NOT FIT"
    lines = [
        table,
        f"peak {report.peak_mb:.1f} MiB on stage {report.peak_stage} ({report.profile}); "
        f"device {report.hbm_mb:.0f} MiB: {fit}",
    ]
    lines += [f"warning: {w}" for w in report.warnings]
    return "\n".join(lines)


def non_finite_fields(doc: Any, path: str = "") -> list[str]:
    """Dotted paths of every NaN/±inf float inside ``doc`` (mappings and lists walked)."""
    if isinstance(doc, float):
        return [] if math.isfinite(doc) else [path or "<root>"]
    if isinstance(doc, dict):
        return [p for k, v in doc.items() for p in non_finite_fields(v, f"{path}.{k}" if path else str(k))]
    if isinstance(doc, list | tuple):
        return [p for i, v in enumerate(doc) for p in non_finite_fields(v, f"{path}[{i}]")]
    return []


def run(args: argparse.Namespace) -> int:
    """Estimate and print; 2 on a configuration error."""
    try:
        cfg = _load(args)
        memory = estimate_memory(cfg)
        perf = estimate_perf(cfg)
    except ConfigError as exc:
        print(f"ndval estimate: invalid configuration: {exc}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    from estimator.config.rules import stated_rules

    reported = {*memory.warnings, *perf.warnings}  # printed with the tables (text) or in the document (--json)
    for note in stated_rules(cfg):
        if note not in reported:
            print(f"ndval estimate: note: {note}", file=sys.stderr)
    size = param_counts(cfg.model)
    if args.json:
        doc: dict[str, Any] = {"ndval_version": ndval_version(), "config": str(args.config or args.from_megatron or args.from_torchtitan
                                             or args.from_mindformers),
                               "model": {"name": cfg.model.name, **size.to_dict()},
                               "memory": memory.to_dict(), "perf": perf.to_dict()}
        bad = non_finite_fields(doc)
        if bad:  # strict JSON has no NaN/Infinity: say which numbers overflowed instead of printing them
            print(f"ndval estimate: {args.config}: the estimate is not finite at {', '.join(bad[:5])}"
                  f"{' ...' if len(bad) > 5 else ''} (the configuration's sizes overflow a float)", file=sys.stderr)
            return EXIT_CONFIG_ERROR
        print(json.dumps(doc, indent=2, default=str, allow_nan=False))
        return 0
    print(f"{cfg.model.name}: profile {cfg.profile}, tp={cfg.parallel.tp} pp={cfg.parallel.pp} "
          f"dp={cfg.parallel.dp} cp={cfg.parallel.cp} ep={cfg.parallel.ep}, hardware {cfg.hardware.name}")
    print(f"model.params_total {size.total:,}; model.params_active {size.active:,} per token "
          f"(embedding and output layer as the model defines them{', tied' if cfg.model.tied_embeddings else ''})")
    print(format_memory_table(memory))
    print()
    print(format_perf_table(replace(perf, warnings=[w for w in perf.warnings if w not in memory.warnings])))
    return 0
