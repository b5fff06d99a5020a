"""Snapshot / diff of ``ndval analyze --json`` over every shared profile sample.

``python benchmarks/snapshot_analysis.py save DIR`` writes one JSON per sample into DIR;
``python benchmarks/snapshot_analysis.py diff BEFORE AFTER`` compares two snapshots: every number equal
within a relative tolerance (1e-9 by default, ``--rtol``), every other value identical. Keys present on
one side only are listed (new fields are reported, not failed, with ``--allow-new``).
Used to show that an ingest/analysis rewrite leaves the analysis unchanged on real data.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROFILES = Path(os.environ.get("NDVAL_PROFILES", ROOT.parent / "shared" / "data" / "profiles"))

#: sample name -> path below the profiles folder (every analysable shared sample).
SAMPLES: dict[str, str] = {
    "ascend-level0": "ascend/msinsight-level0/rank0_ascend_pt",
    "ascend-level1": "ascend/msinsight-level1",
    "ascend-level1-rank0": "ascend/msinsight-level1/rank0_ascend_pt",
    "ascend-single-card": "ascend/msprof-analyze-single-card/trace_view.json",
    "ascend-kernel-details": "ascend/kernel-details-pipeutil-2025",
    "kineto-control": "kineto/hta-trace-diff/control.json.gz",
    "kineto-test": "kineto/hta-trace-diff/test.json.gz",
    "kineto-pair": "kineto/hta-trace-diff",
    "ascend-db-level0": "ascend/msinsight-db-level0",
    "ascend-db-level2": "ascend/msinsight-db-level2",
}


def save(out: Path) -> int:
    """Run ``ndval analyze --json`` on each sample; the exit code and stderr tail go to ``<name>.rc``."""
    out.mkdir(parents=True, exist_ok=True)
    ndval = ROOT / ".venv" / "bin" / "ndval"
    for name, rel in SAMPLES.items():
        target = out / f"{name}.json"
        proc = subprocess.run([str(ndval), "analyze", str(PROFILES / rel), "--json", str(target)],
                              capture_output=True, text=True, check=False)
        (out / f"{name}.rc").write_text(f"{proc.returncode}\n{proc.stderr[-2000:]}")
        print(f"{name}: exit {proc.returncode}")
    return 0


def _diff(a: Any, b: Any, where: str, rtol: float, out: list[str], allow_new: bool) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in b:
                out.append(f"{where}.{k}: missing after")
            elif k not in a:
                if not allow_new:
                    out.append(f"{where}.{k}: new after")
            else:
                _diff(a[k], b[k], f"{where}.{k}", rtol, out, allow_new)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{where}: list length {len(a)} -> {len(b)}")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            _diff(x, y, f"{where}[{i}]", rtol, out, allow_new)
    elif isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        if not math.isclose(float(a), float(b), rel_tol=rtol, abs_tol=1e-9):
            out.append(f"{where}: {a} -> {b}")
    elif a != b:
        out.append(f"{where}: {str(a)[:120]!r} -> {str(b)[:120]!r}")


def diff(before: Path, after: Path, rtol: float, allow_new: bool) -> int:
    """Exit 1 when a sample's analysis differs (printed), 0 otherwise."""
    bad = 0
    for name in SAMPLES:
        a, b = before / f"{name}.json", after / f"{name}.json"
        if not a.exists():
            print(f"{name}: no 'before' analysis (skipped)")
            continue
        if not b.exists():
            print(f"{name}: no 'after' analysis")
            bad += 1
            continue
        found: list[str] = []
        _diff(json.loads(a.read_text()), json.loads(b.read_text()), name, rtol, found, allow_new)
        print(f"{name}: {'identical' if not found else f'{len(found)} differences'}")
        for line in found[:40]:
            print("   ", line)
        bad += bool(found)
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    """CLI entry (see module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("save")
    s.add_argument("out", type=Path)
    d = sub.add_parser("diff")
    d.add_argument("before", type=Path)
    d.add_argument("after", type=Path)
    d.add_argument("--rtol", type=float, default=1e-9)
    d.add_argument("--allow-new", action="store_true")
    args = ap.parse_args(argv)
    if args.cmd == "save":
        return save(args.out)
    return diff(args.before, args.after, args.rtol, args.allow_new)


if __name__ == "__main__":
    sys.exit(main())
