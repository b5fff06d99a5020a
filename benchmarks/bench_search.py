"""Strategy-search throughput: layouts per second of ``ndval search`` on DeepSeek-V3 671B, 1,024 devices.

The sweep covers tp × pp (uneven first/last and embedding/loss splits) × vpp × ep × micro-batch ×
recompute, priced in this process one by one (``--scalar`` path) and with batched memory
(:mod:`estimator.search.batched`; step time still per layout) and, with ``--dask``, on a local Dask
cluster of ``--workers`` processes; it prints layouts/s of each and checks that both give the
same top K. Not a timed test.

    .venv/bin/python benchmarks/bench_search.py [--dask] [--workers 2] [--top 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import estimator  # noqa: E402
from estimator import search  # noqa: E402

EXAMPLE = ROOT / "estimator" / "examples" / "deepseek-v3-671b-h100.yaml"
SPACE = {
    "parallel.tp": (1, 2, 4, 8), "parallel.pp": (1, 2, 4, 8, 16), "parallel.vpp": (1, 2),
    "parallel.ep": (8, 16, 32, 64), "train.micro_batch_size": (1, 2), "recompute.mode": ("full", "selective"),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dask", action="store_true", help="also sweep on a local Dask cluster")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args()
    base = estimator.load_config(EXAMPLE)
    start = time.perf_counter()
    scalar = search.search(base, 1024, SPACE, top_k=args.top, batched=False)
    wall_s = time.perf_counter() - start
    start = time.perf_counter()
    single = search.search(base, 1024, SPACE, top_k=args.top)
    wall = time.perf_counter() - start
    p = single.partial
    paths = {c.path for c in single.ranked}
    print(f"scalar: {p.evaluated} layouts in {wall_s:.2f} s = {p.evaluated / wall_s:,.0f} layouts/s")
    print(f"batched memory ({single.path}; top {args.top} memory paths {sorted(paths)}): {p.evaluated} layouts "
          f"({p.feasible} feasible) in {wall:.2f} s = {p.evaluated / wall:,.0f} layouts/s; ratio {wall_s / wall:.2f}x")
    def strip(r: search.SearchResult) -> list[dict[str, object]]:
        return [{k: v for k, v in c.to_dict().items() if k != "path"} for c in r.ranked]

    same_top = strip(single) == strip(scalar)
    print(f"  same top {args.top} as scalar: {same_top}; rejected by reason: {single.rejected}")
    if not same_top:
        return 1
    if args.dask:
        from estimator.search.distributed import search_dask

        start = time.perf_counter()
        spread = search_dask(base, 1024, SPACE, top_k=args.top, workers=args.workers)
        wall_d = time.perf_counter() - start
        same = [c.to_dict() for c in spread.ranked] == [c.to_dict() for c in single.ranked]
        print(f"dask ({args.workers} workers, cluster start included): {wall_d:.2f} s = "
              f"{p.evaluated / wall_d:,.0f} layouts/s; ratio to scalar {wall / wall_d:.2f}x; same top {args.top}: {same}")
        if not same:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
