"""Batched step time against the scalar path, in one run: DeepSeek-V3 671B layouts of a 1,024-GPU space
(tp, pp, vpp, ep, micro-batch, recompute) grouped as the batched search groups them (equal but for
the array fields), each group priced by one :func:`estimator.search.batched_time.batch_step_time`
call, against :func:`estimator.estimate_perf` per layout on the same layouts. Configs are loaded
before timing; both sides are CPU time (``time.process_time``), best of ``--rounds``. Prints layouts/s
of both, the ratio, the group sizes and the load average (numbers are noisy on a shared machine).
Also checks that both sides give the same TOTAL (max relative difference printed). Not a test.

    .venv/bin/python benchmarks/bench_batched_time.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import estimator  # noqa: E402
from estimator.search.batched import array_config, group_columns, group_key  # noqa: E402
from estimator.search.batched_time import batch_step_time  # noqa: E402
from estimator.search.evaluate import Rejection, load_layout, search_base  # noqa: E402
from estimator.search.space import Layout, layouts  # noqa: E402

EXAMPLE = ROOT / "estimator" / "examples" / "deepseek-v3-671b-h100.yaml"
DEVICES = 1024
SPACE: dict[str, tuple[Any, ...]] = {
    "parallel.tp": (1, 2, 4, 8), "parallel.pp": (4, 8, 16), "parallel.vpp": (1, 2),
    "parallel.ep": (8, 16, 32, 64), "train.micro_batch_size": (1, 2, 4), "recompute.mode": ("full", "selective"),
}


def groups() -> list[tuple[estimator.EstimatorConfig, dict[str, np.ndarray], list[estimator.EstimatorConfig]]]:
    """(representative, array columns, configs) per batched group of the valid layouts of :data:`SPACE`."""
    base = estimator.load_config(EXAMPLE)
    data = search_base(base, SPACE)
    keyed: dict[tuple[Any, ...], list[estimator.EstimatorConfig]] = {}
    for layout in layouts(base, DEVICES, SPACE):
        if not isinstance(layout, Layout):
            continue
        cfg = load_layout(data, layout)
        if isinstance(cfg, Rejection):
            continue
        key = group_key(layout)
        keyed.setdefault(key, []).append(cfg)
    out = []
    for cfgs in keyed.values():
        columns = group_columns(cfgs)
        if columns is None:
            raise SystemExit("a batched group sets an array field on some layouts only")
        out.append((cfgs[0], columns, cfgs))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    grouped = groups()
    n = sum(len(cfgs) for _, _, cfgs in grouped)
    batched_s, scalar_s = [], []
    worst, unbatched = 0.0, 0
    for _ in range(args.rounds):
        start = time.process_time()
        results = [batch_step_time(array_config(rep, columns), len(cfgs)) for rep, columns, cfgs in grouped]
        batched_s.append(time.process_time() - start)
        start = time.process_time()
        scalar = [[estimator.estimate_perf(c).total for c in cfgs] for _, _, cfgs in grouped]
        scalar_s.append(time.process_time() - start)
    for result, totals in zip(results, scalar, strict=True):
        if result is None:
            unbatched += len(totals)
            continue
        want = np.array(totals)
        worst = max(worst, float(np.max(np.abs(result.total_s - want) / np.abs(want))))
    sizes = [len(cfgs) for _, _, cfgs in grouped]
    b, s = n / min(batched_s), n / min(scalar_s)
    print(f"DeepSeek-V3 671B, {DEVICES} GPUs: {n} layouts in {len(grouped)} groups (size {min(sizes)}-{max(sizes)}, "
          f"mean {n / len(grouped):.0f}); {unbatched} not batchable")
    print(f"step time batched {b:,.0f} layouts/s, scalar estimate_perf {s:,.0f} layouts/s: {b / s:.1f}x "
          f"(best of {args.rounds}, CPU time); max |rel diff| of TOTAL {worst:.1e}; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
