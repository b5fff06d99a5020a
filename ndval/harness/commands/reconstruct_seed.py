"""``ndval reconstruct-seed``: the seed's run reconstructed from the recorded estimates, INT-01 judged."""

from __future__ import annotations

import argparse
import sys

from estimator.experiments.reconstruct import report_markdown


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def run(args: argparse.Namespace) -> int:
    def progress(what: str) -> None:
        print(f"solving {what}", file=sys.stderr, flush=True)

    print(report_markdown(progress=None if args.quiet else progress))
    return 0
