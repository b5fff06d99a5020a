"""``ndval search RUN.yaml --devices N``: every parallel layout of a cluster, priced and ranked.

Exit codes: 0 at least one layout is feasible; 1 none is (the output lists why, by reason);
2 malformed input (unreadable or invalid run config, unknown dimension, empty space, bad option).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from estimator.config.errors import ConfigError
from estimator.config.schema import EstimatorConfig, load_config
from estimator.config.sections import MAX_INT
from estimator.search import OBJECTIVES, SearchResult, SpaceError, parse_space, search
from estimator.search.report import figure_bytes, format_result, pareto_figure, pareto_html
from estimator.search.space import DEFAULT_SPACE, check_size
from ndval.core.atomic import write_bytes, write_text

EXIT_FOUND, EXIT_NONE_FEASIBLE, EXIT_MALFORMED = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the ``search`` options."""
    parser.add_argument("config", help="base run configuration (YAML): model, train, hardware, options")
    parser.add_argument("--devices", type=int, required=True, help="devices in the cluster (dp is derived)")
    parser.add_argument(
        "--space", action="append", default=[], metavar="DIM=V1,V2",
        help="values of one dimension, repeatable: a config field (parallel.tp=1,2,4,8, "
        "train.micro_batch_size=1,2, recompute.mode=none,full, parallel.vpp=1,2 ...) or "
        "pipeline.split=even,first-last,account; default: " + " ".join(
            f"{k}={','.join(map(str, v))}" for k, v in DEFAULT_SPACE.items()),
    )
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a field of the base config (repeatable)")
    parser.add_argument("--memory-margin-mb", type=float, default=0.0,
                        help="headroom kept free on each device (MiB); layouts above HBM minus it are OOM")
    parser.add_argument("--top", type=int, default=20, metavar="K", help="layouts ranked (default 20)")
    parser.add_argument("--objective", choices=sorted(OBJECTIVES), default="time",
                        help="rank by step time (default), peak memory, or tokens/s")
    parser.add_argument("--json", metavar="OUT", help="write the JSON result to OUT ('-' for stdout)")
    parser.add_argument("--csv", metavar="OUT", help="write every evaluated layout as CSV")
    parser.add_argument("--parquet", metavar="OUT", help="write every evaluated layout as Parquet")
    parser.add_argument("--plot", metavar="PREFIX", help="write the Pareto plot to PREFIX.png and PREFIX.html")
    parser.add_argument("--scalar", action="store_true", help="price layouts one by one (the checking path)")
    parser.add_argument("--dask", action="store_true", help="sweep on a local Dask cluster")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="sweep on a running Dask scheduler")
    parser.add_argument("--workers", type=int, default=None, help="local Dask workers (default: one per core)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _fail(message: str) -> int:
    print(f"ndval search: {message}", file=sys.stderr)
    return EXIT_MALFORMED


def _check_options(args: argparse.Namespace) -> str | None:
    """The first malformed option, in words, or None."""
    if not 1 <= args.devices <= MAX_INT:
        return f"--devices must be a positive integer ≤ 2^53, got {args.devices}"
    if args.top < 1:
        return f"--top must be ≥ 1, got {args.top}"
    if not math.isfinite(args.memory_margin_mb) or args.memory_margin_mb < 0:
        return f"--memory-margin-mb must be a finite number ≥ 0, got {args.memory_margin_mb}"
    if (args.dask or args.scheduler) and (args.csv or args.parquet or args.scalar):
        return "--csv/--parquet/--scalar keep every layout in this process; they cannot run with --dask/--scheduler"
    return None


def _run_search(args: argparse.Namespace, base: EstimatorConfig, space: dict[str, Any]) -> SearchResult:
    if args.dask or args.scheduler:
        from estimator.search.distributed import search_dask

        return search_dask(base, args.devices, space, args.memory_margin_mb, objective=args.objective,
                           top_k=args.top, scheduler=args.scheduler, workers=args.workers)
    return search(base, args.devices, space, args.memory_margin_mb, objective=args.objective,
                  top_k=args.top, keep_rows=bool(args.csv or args.parquet or args.plot),
                  progress=not args.no_progress, batched=not args.scalar)


def _write_outputs(args: argparse.Namespace, result: SearchResult) -> None:
    doc = json.dumps(result.to_dict(), indent=2, allow_nan=False, default=str)
    if args.json == "-":
        print(doc)
    elif args.json:
        write_text(Path(args.json), doc + "\n")
    if args.csv or args.parquet:
        import pandas as pd

        frame = pd.DataFrame(result.rows)
        if args.csv:
            write_text(Path(args.csv), frame.to_csv(index=False))
        if args.parquet:
            write_bytes(Path(args.parquet), frame.to_parquet(index=False))
    if args.plot:
        fig = pareto_figure(result)
        write_bytes(Path(f"{args.plot}.png"), figure_bytes(fig, "png"))
        write_text(Path(f"{args.plot}.html"), pareto_html(result, figure_bytes(fig, "svg")))


def run(args: argparse.Namespace) -> int:
    """Search, print the report (stderr when the JSON goes to stdout), write the outputs."""
    problem = _check_options(args)
    if problem:
        return _fail(problem)
    try:
        space = parse_space(args.space) if args.space else dict(DEFAULT_SPACE)
        check_size(space)
        base = load_config(args.config, args.overrides or None)
    except (SpaceError, ConfigError) as exc:
        return _fail(str(exc))
    try:
        result = _run_search(args, base, space)
    except ImportError as exc:
        return _fail(f"{exc.name} is not installed: pip install 'ndval[dask]' for --dask/--scheduler")
    report = format_result(result)
    print(report, file=sys.stderr if args.json == "-" else sys.stdout)
    try:
        _write_outputs(args, result)
    except OSError as exc:
        return _fail(f"cannot write output {exc.filename}: {exc.strerror}")
    return EXIT_FOUND if result.partial.feasible else EXIT_NONE_FEASIBLE
