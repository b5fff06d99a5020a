"""``ndval signoff``: render the release sign-off report (Markdown + HTML) from a summary.json."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ndval.core.atomic import is_stdout
from ndval.harness import paths, signoff


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--summary", default=None, help="summary.json (default reports/summary.json)")
    parser.add_argument("--out", default=None, help="Markdown output (default reports/signoff.md; .html beside it; "
                        "'-': to stdout, plots inline, no HTML unless --html)")
    parser.add_argument("--html", default=None, metavar="OUT",
                        help="HTML output (default: beside the Markdown; '-': to stdout)")


def run(args: argparse.Namespace) -> int:
    reports = paths.reports_dir()
    src = Path(args.summary) if args.summary else reports / "summary.json"
    if not src.is_file():
        print(f"ndval signoff: {src} not found; run `ndval validate` first")
        return 2
    summary = json.loads(src.read_text(encoding="utf-8"))
    md_out = args.out or reports / "signoff.md"
    md, html = signoff.write(summary, md_out, src.parent, args.html)
    console = sys.stderr if is_stdout(md_out) or is_stdout(args.html) else sys.stdout
    where = md + (f"\n          {html}" if html else "")
    print(f"sign-off: {where}\ngate verdict: {summary['gate']['verdict']}", file=console)
    return 0
