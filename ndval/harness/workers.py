"""How many pytest-xdist workers ``ndval validate`` starts by default: chosen by the amount of work.

Each worker is a fresh process that imports the estimator and analyzer and rebuilds the caches
the cases share (a profile read once per process serves several cases), so parallelism only
pays when the work per worker outweighs that start and the machine has cores to spare. Measured
on a 2-core machine (``benchmarks/validate_workers.py``): ``-n auto`` took 54.7 s against 33.5 s
serial for the full validation, so on two cores or fewer the default is serial.

The work is the previous run's per-item ``duration_s`` in ``summary.json``; without one it is
unknown and the default stays conservative.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

#: serial seconds of case work one extra worker must get to pay for its start and its own caches
WORK_PER_WORKER_S = 30.0
#: at or below this many usable cores xdist only competes with itself
SERIAL_AT_OR_BELOW_CPUS = 2


def usable_cpus() -> int:
    """Cores this process may run on (affinity-aware)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def previous_work_s(summary_path: Path) -> float | None:
    """Sum of the per-item durations of the last full run (None when there is none to read)."""
    try:
        data = json.loads(summary_path.read_text(encoding="utf-8"))
        return float(sum(c.get("duration_s") or 0.0 for c in data["cases"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def choose_workers(cpus: int, work_s: float | None) -> int:
    """0 (serial, no xdist) or the worker count: at most ``cpus // 2`` workers (each case loads data
    and computes; half the cores leaves room for the controller and I/O) and one per
    ``WORK_PER_WORKER_S`` of work; fewer than two workers is serial."""
    if cpus <= SERIAL_AT_OR_BELOW_CPUS:
        return 0
    by_work = (cpus // 2) if work_s is None else int(work_s // WORK_PER_WORKER_S)
    n = min(cpus // 2, by_work)
    return n if n >= 2 else 0
