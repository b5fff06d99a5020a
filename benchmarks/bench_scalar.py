"""Scalar-path speed: single estimates (load_config + estimate_memory + estimate_perf) per second on a
fixed set of DeepSeek-V3 671B and Llama 3 8B configs, this tree against a baseline commit, in one run.

The baseline's ``estimator``/``ndcore`` packages are exported with ``git archive`` into a temporary
folder; each side is timed in its own subprocess, alternately, ``--rounds`` times, on the same
configs (the bundled examples and the layouts of a search space over each; the config dicts are
built before timing). Prints estimates/s of both and the ratio (median over rounds). Not a test.
``--instructions`` counts instead the CPU instructions per estimate of each side under valgrind's
callgrind (a run with the estimates minus one without, divided by their number), with
``PYTHONHASHSEED=0`` (string hashes otherwise move the count by a few % from run to run) and
``OPENBLAS_NUM_THREADS=1`` (idle BLAS threads spin under valgrind: ±3 % on the same tree otherwise): slow
(minutes), but the same on a loaded machine.

    .venv/bin/python benchmarks/bench_scalar.py [--baseline b1f4e33] [--rounds 3] [--instructions]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: the commit before the scalar speed work (issue 15, step 1)
DEFAULT_BASELINE = "b1f4e33"
SPACES: dict[str, tuple[int, dict[str, tuple[Any, ...]]]] = {
    "deepseek-v3-671b-h100.yaml": (1024, {
        "parallel.tp": (1, 2, 4, 8), "parallel.pp": (1, 2, 4, 8, 16), "parallel.vpp": (1, 2),
        "parallel.ep": (8, 64), "recompute.mode": ("full", "selective"),
    }),
    "llama3-8b-h100.yaml": (64, {
        "parallel.tp": (1, 2, 4, 8), "parallel.pp": (1, 2, 4, 8), "parallel.vpp": (1, 2),
        "recompute.mode": ("none", "selective", "full"),
    }),
}


def worker(src: str, repeat: int, only: str | None = None) -> dict[str, Any]:
    """Time the estimates with the ``estimator`` package found in ``src`` (run in a subprocess); with
    ``only``, that example's jobs alone, returning their number."""
    sys.path.insert(0, src)
    import estimator
    from estimator.search.evaluate import search_base
    from estimator.search.space import Layout, layouts

    jobs: list[tuple[str, Any, Any]] = []
    for name, (devices, space) in SPACES.items():
        if only not in (None, name):
            continue
        base = estimator.load_config(ROOT / "estimator" / "examples" / name)
        data = search_base(base, space)
        jobs.append((name, base.model_dump(mode="python"), None))
        jobs += [(name, data, p.as_dict()) for p in layouts(base, devices, space) if isinstance(p, Layout)]
    valid = []
    for job in jobs:
        try:
            estimator.load_config(job[1], job[2])
            valid.append(job)
        except estimator.ConfigError:
            pass
    times: dict[str, float] = {name: 0.0 for name in SPACES}
    counts: dict[str, int] = {name: 0 for name in SPACES}
    for _ in range(repeat):
        for name, data, overrides in valid:
            start = time.process_time()
            cfg = estimator.load_config(data, overrides)
            estimator.estimate_memory(cfg)
            estimator.estimate_perf(cfg)
            times[name] += time.process_time() - start
            counts[name] += 1
    if only is not None:
        return {"jobs": sum(job[0] == only for job in valid)}
    return {name: counts[name] / times[name] for name in SPACES}


def _export(rev: str, dest: Path) -> None:
    # the base package was the top-level ``ndcore`` before it moved to ``ndval/core``: take what the revision has
    listed = subprocess.run(["git", "ls-tree", "--name-only", rev, "ndcore", "ndval"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    base = ["ndval/__init__.py", "ndval/core"] if "ndval" in listed else ["ndcore"]
    archive = subprocess.run(["git", "archive", "--format=tar", rev, "estimator", *base, "validation_cases/models"],
                             cwd=ROOT, capture_output=True, check=True).stdout
    tar_path = dest / "src.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(dest, filter="data")


def _run(src: Path, repeat: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--worker", str(src), "--repeat", str(repeat)],
                         capture_output=True, text=True, check=True).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def instructions(src: Path, name: str) -> float:
    """CPU instructions per estimate of ``name``'s jobs with the package in ``src`` (callgrind)."""
    counts = []
    for repeat in (0, 1):
        run = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                              __file__, "--worker", str(src), "--repeat", str(repeat), "--only", name],
                             capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"})
        found = re.search(r"Collected : (\d+)", run.stderr)
        assert found, run.stderr[-2000:]
        counts.append(int(found.group(1)))
    jobs = json.loads(run.stdout.strip().splitlines()[-1])["jobs"]
    return (counts[1] - counts[0]) / jobs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default=DEFAULT_BASELINE)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--worker")
    ap.add_argument("--only")
    ap.add_argument("--instructions", action="store_true", help="count instructions (valgrind) instead of timing")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.repeat, args.only)))
        return 0
    if args.instructions and not shutil.which("valgrind"):
        print("--instructions needs valgrind on PATH", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        _export(args.baseline, Path(tmp))
        if args.instructions:
            for name in SPACES:
                old, new = instructions(Path(tmp), name), instructions(ROOT, name)
                print(f"{name}: baseline {args.baseline} {old / 1e6:.2f}M instructions/estimate, this tree "
                      f"{new / 1e6:.2f}M; ratio {old / new:.2f}x (callgrind)")
            return 0
        rounds = [(_run(Path(tmp), args.repeat), _run(ROOT, args.repeat)) for _ in range(args.rounds)]
    for name in SPACES:
        old, new = (max(r[side][name] for r in rounds) for side in (0, 1))
        ratios = [r[1][name] / r[0][name] for r in rounds]
        print(f"{name}: baseline {args.baseline} {old:,.0f} estimates/s, this tree {new:,.0f} estimates/s "
              f"(best of {args.rounds} alternating rounds); ratio of bests {new / old:.2f}x, "
              f"per-round ratios median {statistics.median(ratios):.2f}x (min {min(ratios):.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
