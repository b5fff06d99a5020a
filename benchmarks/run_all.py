"""Run every benchmark script in ``benchmarks/`` one after the other (``make bench``).

Each script prints its own ratios (configurations/s, events/s, peak RSS, accuracy figures); this
runner only sequences them, each in a fresh interpreter so that one script's peak RSS does not
leak into the next, and exits non-zero when any of them fails.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: script -> extra arguments (kept small so `make bench` finishes in a few minutes on 2 cores)
SCRIPTS: dict[str, list[str]] = {
    "bench_estimator.py": ["--seconds", "3"],
    "bench_search.py": ["--dask"],
    # scalar single estimates, this tree vs the commit before the speed work (issue 15), same run
    "bench_scalar.py": [],
    # batched step time (one estimate_perf over arrays per group) vs scalar estimate_perf, same run
    "bench_batched_time.py": [],
    "bench_analyzer.py": ["--copies", "50"],
    "vtrain_accuracy.py": [],
    "step_time_accuracy.py": [],
    "recipe_accuracy.py": [],
    # torchtitan's CP and 2D / AsyncTP tables (not in the shared set) against ndval: a check, no criterion
    "torchtitan_tables.py": [],
    # ndval vs HTA 0.5.0 on 109k / 1M / 2M-event Kineto traces (HTA in its own venv; minutes, not seconds)
    "bench_hta.py": [],
    # a 150 M-event, 35 MiB gzip analysed with --max-events 1,000,000: time and RSS bounded by the budget
    "bench_gzip_bomb.py": [],
    # 64 ranks replicated from the shared Level1 pair, one made slower: parallel read, slowest rank/link
    "bench_cluster.py": [],
    "bench_serve_timeline.py": ["--requests", "100"],
    # ndval validate with the default worker choice vs -n 0 (two full validations, minutes on 2 cores)
    "validate_workers.py": [],
}


def main() -> int:
    failed: list[str] = []
    for script, args in SCRIPTS.items():
        print(f"\n=== {script} {' '.join(args)}", flush=True)
        start_s = time.perf_counter()
        rc = subprocess.call([sys.executable, str(HERE / script), *args])
        print(f"=== {script}: exit {rc} after {time.perf_counter() - start_s:.1f} s", flush=True)
        if rc != 0:
            failed.append(script)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
