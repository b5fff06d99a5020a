"""``ndval report``: render the Allure HTML report with the Allure 3 command line (npm ``allure``).

Uses ``node_modules/.bin/allure`` when present, else ``npx --yes allure@3`` (downloads once from
the npm registry). Without Node.js it says what is missing and exits 2.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path

from harness import paths

ALLURE_NPM = "allure@3"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default=None, help="allure results (default reports/allure-results)")
    parser.add_argument("--out", default=None, help="output folder (default reports/allure-report)")


def allure_command() -> list[str] | None:
    """How to call Allure 3 here, or None when Node.js/npx is missing."""
    for base in (paths.project_root(), paths.REPO_ROOT):
        local = base / "node_modules" / ".bin" / "allure"
        if local.exists() and shutil.which("node"):
            return [str(local)]
    if shutil.which("node") and shutil.which("npx"):
        return ["npx", "--yes", ALLURE_NPM]
    return None


def run(args: argparse.Namespace) -> int:
    reports = paths.reports_dir()
    results = Path(args.results) if args.results else reports / "allure-results"
    out = Path(args.out) if args.out else reports / "allure-report"
    if not results.is_dir() or not any(results.glob("*-result.json")):
        print(f"ndval report: no Allure results in {results}; run `make validate` first")
        return 2
    cmd = allure_command()
    if cmd is None:
        missing = "node" if not shutil.which("node") else "npx"
        print(f"ndval report: Node.js is required for the Allure 3 report but `{missing}` was not found on PATH.\n"
              f"  Install Node.js >= 20 (with npm), then rerun `make report` (it runs `npx allure generate`),\n"
              f"  or `npm install allure@3` in the repository. The raw results are in {results};\n"
              f"  the sign-off report (reports/signoff.html) needs no Node.js.")
        return 2
    full = [*cmd, "generate", str(results), "-o", str(out)]
    print("running:", " ".join(full), flush=True)
    proc = subprocess.run(full, cwd=paths.project_root(), check=False)
    index = out / "index.html"
    if proc.returncode != 0 or not index.is_file():
        print(f"ndval report: allure generate failed (exit {proc.returncode}); no {index}")
        return proc.returncode or 2
    print(f"Allure report: {index}")
    return 0
