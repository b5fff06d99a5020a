"""``ndval report``: render the Allure 3 report as one self-contained ``index.html`` (npm ``allure``).

The Allure 3 command line is ``$NDVAL_ALLURE`` (a path or a command), else ``node_modules/.bin/allure``
of the project or of ndval's checkout, else an ``allure`` 3.x on ``PATH``, else (``ndval report`` only)
``npx --yes allure@3`` (downloads once from the npm registry). Without Node.js it says what is missing
and exits 2. ``ndval validate`` renders the same report after the run when a local command line is found
(never downloading), and otherwise names the results folder and how to render it.

The configuration ``allurerc.json`` (``ndval.harness.allure.allure3_config``) is written beside the report:
single-file Awesome report (it renders opened as a file; the multi-file report stays blank under
``file://``; its analytics tag is removed, so it makes no request off the machine), ndval's categories (waived items under "Waived"), and for release runs the history file
``reports/allure-history.jsonl``, which the clean-up between runs keeps, so trends show across runs.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ndval.core import atomic, strictjson
from ndval.harness import paths
from ndval.harness.allure import allure3_config

ALLURE_NPM = "allure@3"
HISTORY_FILE = "allure-history.jsonl"
#: generations kept in the history file (each entry holds every test's status: ~0.6 MB for ndval's cases)
HISTORY_LIMIT = 30
GENERATE_TIMEOUT_S = 600
#: the Awesome template's analytics tag (a script fetched from the web): removed, so the report makes no
#: request off the machine and opens offline without a failed request in the console
_ANALYTICS = re.compile(r'<script async src="https://www\.googletagmanager\.com/[^"]*"></script>\s*'
                        r'<script>\s*window\.dataLayer[^<]*</script>')


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default=None, help="allure results (default reports/allure-results)")
    parser.add_argument("--out", default=None, help="output folder (default reports/allure-report; '-': the "
                        "single-file index.html to stdout, no folder and no history written)")
    parser.add_argument("--multi-file", action="store_true",
                        help="the multi-file report (needs an HTTP server to view) instead of one index.html")


def _is_allure3(exe: str) -> bool:
    try:
        proc = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and proc.stdout.strip().startswith("3.")


def allure_command(allow_download: bool = True) -> list[str] | None:
    """How to call Allure 3 here, or None (Node.js missing, or no local command and no download allowed)."""
    if os.environ.get("NDVAL_ALLURE"):
        return shlex.split(os.environ["NDVAL_ALLURE"])
    if not shutil.which("node"):
        return None
    for base in (paths.project_root(), paths.REPO_ROOT):
        local = base / "node_modules" / ".bin" / "allure"
        if local.exists():
            return [str(local)]
    on_path = shutil.which("allure")
    if on_path and _is_allure3(on_path):
        return [on_path]
    if allow_download and shutil.which("npx"):
        return ["npx", "--yes", ALLURE_NPM]
    return None


def missing_message(results: Path) -> str:
    """What to do when no Allure 3 command line is available."""
    missing = "node" if not shutil.which("node") else "an Allure 3 command line"
    return (f"Allure results: {results} (no report rendered: {missing} not found).\n"
            f"  Render them with `ndval report` (Node.js >= 20: npx allure@3), or `npm install allure@3` in the\n"
            f"  project so that `ndval validate` renders reports/allure-report/index.html itself;\n"
            f"  the sign-off report (signoff.html) needs no Node.js.")


def generate(cmd: list[str], results: Path, out: Path, history: Path | None, single_file: bool = True) -> tuple[int, str]:
    """Run ``allure generate`` with ndval's configuration; (exit code, what happened)."""
    out.mkdir(parents=True, exist_ok=True)
    config = allure3_config(out, history, single_file=single_file, history_limit=HISTORY_LIMIT)
    rc_path = out.parent / f"{out.name}.allurerc.json"
    atomic.write_text(rc_path, strictjson.dumps(config, indent=1))
    full = [*cmd, "generate", str(results), "-c", str(rc_path), "-o", str(out)]
    try:
        proc = subprocess.run(full, cwd=out.parent, capture_output=True, text=True, timeout=GENERATE_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 2, f"allure generate could not run ({shlex.join(full)}): {exc}"
    index = out / "index.html"
    if proc.returncode != 0 or not index.is_file():
        tail = (proc.stderr or proc.stdout).strip()[-1500:]
        return proc.returncode or 2, f"allure generate failed (exit {proc.returncode}; {shlex.join(full)}): {tail}"
    html = index.read_text(encoding="utf-8")
    stripped = _ANALYTICS.sub("", html)
    if stripped != html:
        atomic.write_text(index, stripped)
    return 0, f"Allure report: {index}" + (" (one self-contained file)" if single_file else "")


def run(args: argparse.Namespace) -> int:
    reports = paths.reports_dir()
    results = Path(args.results) if args.results else reports / "allure-results"
    to_stdout = atomic.is_stdout(args.out)
    console = sys.stderr if to_stdout else sys.stdout
    if to_stdout and args.multi_file:
        print("ndval report: --out - writes the single-file report; --multi-file needs a folder", file=sys.stderr)
        return 2
    if not results.is_dir() or not any(results.glob("*-result.json")):
        print(f"ndval report: no Allure results in {results}; run `ndval validate` first", file=console)
        return 2
    cmd = allure_command()
    if cmd is None:
        print("ndval report: " + missing_message(results), file=console)
        return 2
    history = reports / HISTORY_FILE if results.resolve() == (reports / "allure-results").resolve() else None
    print("running:", " ".join(cmd), "generate", results, flush=True, file=console)
    if to_stdout:  # rendered in a scratch folder, then streamed; the trend history is left as it was
        with tempfile.TemporaryDirectory(prefix="ndval-allure-") as tmp:
            code, message = generate(cmd, results, Path(tmp) / "allure-report", None)
            if code == 0:
                atomic.write_output(args.out, (Path(tmp) / "allure-report" / "index.html").read_bytes())
                message = "Allure report: stdout (one self-contained file)"
    else:
        out = Path(args.out) if args.out else reports / "allure-report"
        code, message = generate(cmd, results, out, history, single_file=not args.multi_file)
    print(message if code == 0 else f"ndval report: {message}", file=console)
    return code
