"""``ndval validate`` with the default worker choice against ``-n 0``, both in one run.

Prints the wall time of each, the worker count the default chose (``ndval.harness.workers``) and the
ratio default / serial; exits 1 when the default is slower than serial by more than ``--slack``
(timing noise on a shared machine). Each run writes its own reports folder under a temporary
directory; the release reports are not touched. A full run takes minutes on 2 cores.

    .venv/bin/python benchmarks/validate_workers.py [--cases GLOB ...] [--slack 0.10]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def timed_validate(reports: Path, extra: list[str]) -> tuple[float, int, str]:
    """(seconds, exit code, the pytest command line printed by validate) of one ``ndval validate``."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "ndval.harness.cli", "validate", "--reports", str(reports), *extra],
                          cwd=REPO, capture_output=True, text=True, check=False)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("running:")), "")
    return time.perf_counter() - t0, proc.returncode, line


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", action="append", default=[], help="only these case globs (default: all)")
    ap.add_argument("--slack", type=float, default=0.10, help="allowed relative slowdown of the default")
    args = ap.parse_args()
    extra = [a for g in args.cases for a in ("--cases", g)]
    with tempfile.TemporaryDirectory(prefix="ndval-bench-") as tmp:
        # the default reads the work of the previous full run: give it one (the serial run) first
        serial_s, serial_rc, _ = timed_validate(Path(tmp) / "r", [*extra, "-n", "0"])
        default_s, default_rc, line = timed_validate(Path(tmp) / "r", extra)
    chosen = line.split(" -n ", 1)[1].split()[0] if " -n " in line else "0 (no xdist)"
    ratio = default_s / serial_s
    print(f"validate -n 0           : {serial_s:7.1f} s (exit {serial_rc})")
    print(f"validate default (-n {chosen}): {default_s:7.1f} s (exit {default_rc})")
    print(f"default / serial        : {ratio:.3f} (slack {1 + args.slack:.2f})")
    return 0 if ratio <= 1 + args.slack and serial_rc == default_rc else 1


if __name__ == "__main__":
    sys.exit(main())
