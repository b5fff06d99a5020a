"""``ndval signoff``: render the release sign-off report (Markdown + HTML) from a summary.json."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ndval.harness import paths, signoff


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--summary", default=None, help="summary.json (default reports/summary.json)")
    parser.add_argument("--out", default=None, help="Markdown output (default reports/signoff.md; .html beside it)")


def run(args: argparse.Namespace) -> int:
    reports = paths.reports_dir()
    src = Path(args.summary) if args.summary else reports / "summary.json"
    if not src.is_file():
        print(f"ndval signoff: {src} not found; run `ndval validate` first")
        return 2
    summary = json.loads(src.read_text(encoding="utf-8"))
    md, html = signoff.write(summary, Path(args.out) if args.out else reports / "signoff.md", src.parent)
    print(f"sign-off: {md}\n          {html}\ngate verdict: {summary['gate']['verdict']}")
    return 0
