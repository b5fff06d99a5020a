"""``ndval ablate RUN.yaml --exp 1..4 --sweep parallel.ep=2,4,8 [--preset legacy|fixed] [--set k=v]``.

Runs the seed's ablations (:mod:`estimator.experiments.ablation`) over the configs of a sweep (cartesian
product of every ``--sweep key=v1,v2,...``) and prints each experiment's direction table.
``--seed-configs`` runs them on the seed's configs A-F instead of a sweep of RUN.yaml.
A bad configuration prints one ``ConfigError`` line on stderr and exits with code 2.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from typing import Any

from tabulate import tabulate

from estimator.config import presets
from estimator.config.errors import ConfigError
from estimator.config.schema import apply_overrides, load_config, parse_override
from estimator.experiments import ablation
from ndval.harness import paths

EXIT_CONFIG_ERROR = 2

#: base option sets of the experiments
BASES = {**presets.PRESETS, "legacy-seconds": ablation.legacy_seconds}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the ``ablate`` options."""
    parser.add_argument("config", nargs="?", help="run configuration (YAML, spec §3)")
    parser.add_argument("--exp", default="1..4", help="experiments: '1..4', '1,3' or '2' (default 1..4)")
    parser.add_argument("--sweep", action="append", default=[], metavar="KEY=V1,V2",
                        help="sweep a field, e.g. parallel.ep=2,4,8 (repeatable: cartesian product)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a field of every config (repeatable)")
    parser.add_argument("--preset", choices=sorted(BASES), default="legacy-seconds",
                        help="base options of the experiments (default legacy-seconds: the reference before the "
                        "fixes with EP priced in seconds; legacy keeps EP in bytes)")
    parser.add_argument("--dp", default="4,8,16", help="EXP-3: the DP degrees to try (default 4,8,16)")
    parser.add_argument("--seed-configs", action="store_true", help="use the seed's configs A-F")


def parse_experiments(text: str) -> list[int]:
    """``"1..4"`` -> [1, 2, 3, 4]; ``"1,3"`` -> [1, 3]; values must lie in 1..4."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if ".." in part:
            lo, hi = part.split("..", 1)
            out += list(range(int(lo), int(hi) + 1))
        elif part:
            out.append(int(part))
    if not out or any(e not in (1, 2, 3, 4) for e in out):
        raise ConfigError("--exp", f"experiments must be in 1..4, got {text!r}")
    return sorted(set(out))


def sweep_configs(base: dict[str, Any], sweeps: list[str]) -> list[ablation.Labeled]:
    """Cartesian product of ``key=v1,v2`` sweeps applied to ``base``, labelled ``key=v,...``."""
    axes = []
    for text in sweeps:
        key, raw = text.split("=", 1) if "=" in text else (text, "")
        values = [parse_override(f"{key}={v}")[1] for v in raw.split(",") if v.strip()]
        if not values:
            raise ConfigError(key, "a sweep needs values: --sweep key=v1,v2")
        axes.append([(key, v) for v in values])
    out = []
    for combo in itertools.product(*axes) if axes else [()]:
        cfg = apply_overrides(base, dict(combo)) if combo else base
        label = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in combo) or "base"
        load_config(cfg)  # validate each point now, naming the bad one
        out.append((label, cfg))
    return out


def _configs(args: argparse.Namespace) -> list[ablation.Labeled]:
    if args.seed_configs:
        from estimator.experiments.seed import SEED_CONFIGS, seed_run

        configs = [(label, seed_run(label)) for label in SEED_CONFIGS]
        return [(lab, apply_overrides(c, args.overrides) if args.overrides else c) for lab, c in configs]
    if not args.config:
        raise ConfigError("config", "give RUN.yaml or --seed-configs")
    base = load_config(args.config, args.overrides or None, ref_dirs=(paths.cases_dir(),)).model_dump(mode="python")
    return sweep_configs(base, args.sweep)


def run(args: argparse.Namespace) -> int:
    """Run the chosen experiments and print their tables; 2 on a configuration error."""
    try:
        exps = parse_experiments(args.exp)
        configs = _configs(args)
        dps = [int(x) for x in args.dp.split(",") if x.strip()]
        base = BASES[args.preset]()
        base.update({k.removeprefix("options."): v for k, v in map(parse_override, args.overrides)
                     if k.startswith("options.")})
        print(f"base options: {args.preset}; configs: {', '.join(label for label, _ in configs)}")
        if 1 in exps:
            print("\nEXP-1  EP_COMM removed from time_sum and pipeline (before) vs present (after): BUBBLE")
            print(ablation.format_rows(ablation.exp1_ep_comm_removed(configs, base)))
        if 2 in exps:
            print("\nEXP-2  DP hack on (before) vs removed (after): BUBBLE")
            print(ablation.format_rows(ablation.exp2_dp_hack_removed(configs, base)))
        if 3 in exps:
            print(f"\nEXP-3  EP fixed, DP varied {dps}: PP_WAIT from one DP to the next")
            for label, cfg in configs:
                print(f"[{label}]")
                skipped = [dp for dp in dps if not ablation.dp_fits_ep(cfg["parallel"], dp)]
                if skipped:
                    print(f"(dp {skipped} left out: ep·etp must divide dp·tp·cp)")
                print(ablation.format_rows(ablation.exp3_dp_varied(cfg, dps, base)))
        if 4 in exps:
            print("\nEXP-4  straggler stage per config")
            print(tabulate(ablation.exp4_straggler(configs, base), headers=ablation.EXP4_HEADERS))
    except ConfigError as exc:
        print(f"ndval ablate: invalid configuration: {exc}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    return 0
