"""``ndval schema``: print the JSON Schema of a case file (for editors and CI lint)."""

from __future__ import annotations

import argparse

from ndval.core import strictjson
from ndval.harness.cases import case_json_schema


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--indent", type=int, default=2)


def run(args: argparse.Namespace) -> int:
    print(strictjson.dumps(case_json_schema(), indent=args.indent, sort_keys=True, default=str))
    return 0
