"""Strategy-search throughput on DeepSeek-V3 671B (memory + step time), 1,024 devices.

Three measurements, each checked against the one-by-one (``--scalar``) path in the same run:

- ``search``: the sweep of docs/search.md (tp × pp with uneven splits × vpp × ep × micro-batch ×
  recompute, ~1,100 layouts) batched and one by one: wall time of each and the same top 20;
- ``throughput``: a large space (the array fields tp, ep, etp, cp, micro-batch and global batch vary
  inside each pipeline structure) batched, in layouts/s, against the scalar path's layouts/s on a
  random sample of the same space (the whole space one by one would take an hour); the sampled
  layouts' scalar outcomes (reason, peak MiB, step time) must equal the batched ones;
- ``--dask-10m``: a sweep of ≥ 10 million layouts (adds sequence lengths) on a Dask LocalCluster of
  ``--workers`` processes: wall time, peak RSS of each worker (psutil, sampled in the worker), and
  its top K against an exact single-process run over the subspace spanned by the top K's values.

    .venv/bin/python benchmarks/bench_search.py [--dask] [--dask-10m] [--workers 2] [--top 20] [--sample 1500]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import estimator  # noqa: E402
from estimator import search  # noqa: E402
from estimator.search.evaluate import Candidate, evaluate, search_base  # noqa: E402
from estimator.search.space import Layout, layouts  # noqa: E402

EXAMPLE = ROOT / "estimator" / "examples" / "deepseek-v3-671b-h100.yaml"
DEVICES = 1024
SPACE: dict[str, tuple[Any, ...]] = {
    "parallel.tp": (1, 2, 4, 8), "parallel.pp": (1, 2, 4, 8, 16), "parallel.vpp": (1, 2),
    "parallel.ep": (8, 16, 32, 64), "train.micro_batch_size": (1, 2), "recompute.mode": ("full", "selective"),
}
BIG_SPACE: dict[str, tuple[Any, ...]] = {
    "parallel.tp": (1, 2, 4, 8), "parallel.pp": (4, 8, 16), "parallel.vpp": (1, 2),
    "parallel.ep": (1, 2, 4, 8, 16, 32, 64, 128, 256), "parallel.etp": (1, 2, 4, 8), "parallel.cp": (1, 2, 4, 8),
    "train.micro_batch_size": (1, 2, 4, 8), "train.global_batch_size": (1024, 2048, 4096, 8192, 16384),
    "recompute.mode": ("full", "selective"),
}
#: the 10-million-layout space: BIG_SPACE widened (tp and etp to 16, micro-batch to 16, ten global
#: batches, five sequence lengths, three recompute modes, pp 1-16)
SPACE_10M: dict[str, tuple[Any, ...]] = {
    **BIG_SPACE, "parallel.tp": (1, 2, 4, 8, 16), "parallel.pp": (1, 2, 4, 8, 16),
    "parallel.etp": (1, 2, 4, 8, 16), "train.micro_batch_size": (1, 2, 4, 8, 16),
    "train.global_batch_size": (512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 16384),
    "train.seq_length": (2048, 4096, 8192, 16384, 32768), "recompute.mode": ("none", "selective", "full"),
}


def strip(cands: Sequence[Candidate]) -> list[dict[str, Any]]:
    """Candidates without their memory path (batched and scalar differ there by construction)."""
    return [{k: v for k, v in c.to_dict().items() if k != "path"} for c in cands]


def timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def bench_search(base: estimator.EstimatorConfig, top: int) -> bool:
    """The docs/search.md sweep: batched and scalar wall time, same top K."""
    scalar, wall_s = timed(search.search, base, DEVICES, SPACE, top_k=top, batched=False)
    fast, wall_b = timed(search.search, base, DEVICES, SPACE, top_k=top)
    same = strip(fast.ranked) == strip(scalar.ranked) and fast.rejected == scalar.rejected
    p = fast.partial
    print(f"search (docs/search.md space, {p.evaluated} layouts, {p.feasible} feasible): batched {wall_b:.2f} s "
          f"({p.evaluated / wall_b:,.0f} layouts/s), scalar {wall_s:.2f} s ({p.evaluated / wall_s:,.0f} layouts/s), "
          f"ratio {wall_s / wall_b:.1f}x; same top {top} and rejections: {same}; under 2 s: {wall_b < 2}")
    return same


def _sample(base: estimator.EstimatorConfig, space: Mapping[str, Sequence[Any]], n: int, seed: int) -> list[Layout]:
    """``n`` random layouts of ``space``: a random point (one value per dimension), then one of its
    splits, as :func:`layouts` gives them (points whose device count does not divide are drawn again)."""
    rng = random.Random(seed)
    chosen: list[Layout] = []
    while len(chosen) < n:
        point = {k: (rng.choice(v),) for k, v in space.items()}
        found = [p for p in layouts(base, DEVICES, point) if isinstance(p, Layout)]
        if found:
            chosen.append(rng.choice(found))
    return chosen


def bench_throughput(base: estimator.EstimatorConfig, top: int, sample: int) -> bool:
    """Batched layouts/s over BIG_SPACE against scalar layouts/s on a random sample of it; each of
    the batched top K equals a direct scalar estimate."""
    fast, wall_b = timed(search.search, base, DEVICES, BIG_SPACE, top_k=top)
    p = fast.partial
    rate_b = p.evaluated / wall_b
    data = search_base(base, BIG_SPACE)
    points = _sample(base, BIG_SPACE, sample, 15)
    outcomes, wall_s = timed(lambda: [evaluate(data, point) for point in points])
    rate_s = len(points) / wall_s
    direct = all(_direct_equal(base, BIG_SPACE, c) for c in fast.ranked)
    print(f"throughput (DS-V3 671B memory + step time, {p.evaluated:,} layouts, {p.feasible:,} feasible): batched "
          f"{wall_b:.2f} s = {rate_b:,.0f} layouts/s; scalar on {len(points):,} random layouts of the space "
          f"({sum(isinstance(o, Candidate) for o in outcomes)} feasible) {wall_s:.2f} s = {rate_s:,.0f} layouts/s; "
          f"ratio {rate_b / rate_s:.1f}x; top {top} equal direct estimates: {direct}; "
          f"≥ 100,000 layouts/s: {rate_b >= 1e5}; ≥ 20x: {rate_b / rate_s >= 20}")
    return direct


def bench_dask(base: estimator.EstimatorConfig, top: int, workers: int) -> bool:
    """The docs/search.md sweep on a LocalCluster (start-up included): the same result as one process."""
    from estimator.search.distributed import search_dask

    single = search.search(base, DEVICES, SPACE, top_k=top)
    spread, wall = timed(search_dask, base, DEVICES, SPACE, top_k=top, workers=workers)
    same = ([c.to_dict() for c in spread.ranked] == [c.to_dict() for c in single.ranked]
            and spread.rejected == single.rejected and spread.partial.examples == single.partial.examples)
    print(f"dask, docs/search.md space ({workers} workers, cluster start included): {wall:.2f} s; "
          f"same top {top}, rejections and examples as one process: {same}")
    return same


def _worker_peak_rss() -> int:
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024  # Linux: KiB


def bench_dask_10m(base: estimator.EstimatorConfig, top: int, workers: int) -> bool:
    """≥ 10M layouts on a LocalCluster: wall, peak RSS per worker, top K against an exact subspace run."""
    from distributed import Client, LocalCluster

    from estimator.search.distributed import search_dask

    total = sum(1 for _ in layouts(base, DEVICES, {**SPACE_10M, "train.micro_batch_size": (1,),
                                                   "train.global_batch_size": (1024,)}))
    total *= len(SPACE_10M["train.micro_batch_size"]) * len(SPACE_10M["train.global_batch_size"])
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit="2GiB") as cluster, Client(cluster) as client:
        start = time.perf_counter()
        spread = search_dask(base, DEVICES, SPACE_10M, top_k=top, client=client)
        wall = time.perf_counter() - start
        rss = client.run(_worker_peak_rss)
    p = spread.partial
    sub = {k: tuple(v for v in values if any(c.overrides.get(k) == v for c in spread.ranked))
           for k, values in SPACE_10M.items()}
    exact = search.search(base, DEVICES, sub, top_k=top)
    same = strip(exact.ranked) == strip(spread.ranked)
    direct = all(_direct_equal(base, SPACE_10M, c) for c in spread.ranked)
    # a larger exact check: the partition of the winner (its tp and pp, every other value) swept in one
    # process; the Dask top K inside it must be the head of that run's ranking
    best = spread.ranked[0].overrides
    part = {**SPACE_10M, "parallel.tp": (best["parallel.tp"],), "parallel.pp": (best["parallel.pp"],)}
    whole = search.search(base, DEVICES, part, top_k=top)
    inside = [c for c in spread.ranked if all(c.overrides[k] == v[0] for k, v in part.items() if len(v) == 1)]
    head = strip(inside) == strip(whole.ranked[:len(inside)])
    print(f"dask 10M ({workers} workers): {p.evaluated:,} layouts (enumerated {total:,}), {p.feasible:,} feasible, "
          f"wall {wall:.1f} s = {p.evaluated / wall:,.0f} layouts/s; peak RSS per worker "
          f"{', '.join(f'{v / 2**20:.0f} MiB' for v in rss.values())} (< 1 GiB: {max(rss.values()) < 2**30}); "
          f"top {top} equal to an exact single-process run over the {math.prod(len(v) for v in sub.values()):,}-point "
          f"subspace of its values: {same}; its {len(inside)} layouts in the winner's partition (tp, pp fixed, "
          f"{whole.partial.evaluated:,} layouts) are that partition's exact top {len(inside)}: {head}; "
          f"each ranked layout equals a direct estimate: {direct}")
    return same and head and direct and p.evaluated == total and max(rss.values()) < 2**30


def _direct_equal(base: estimator.EstimatorConfig, space: Mapping[str, Any], c: Candidate) -> bool:
    cfg = estimator.load_config(search_base(base, space), c.overrides)
    return c.peak_mb == estimator.estimate_memory(cfg).peak_mb and c.total_s == estimator.estimate_perf(cfg).total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dask", action="store_true", help="also sweep the docs/search.md space on a LocalCluster")
    ap.add_argument("--dask-10m", action="store_true", help="also sweep ≥ 10 million layouts on a LocalCluster")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--sample", type=int, default=1500, help="layouts priced one by one for the scalar rate")
    args = ap.parse_args()
    base = estimator.load_config(EXAMPLE)
    ok = bench_search(base, args.top)
    ok = bench_throughput(base, args.top, args.sample) and ok
    if args.dask:
        ok = bench_dask(base, args.top, args.workers) and ok
    if args.dask_10m:
        ok = bench_dask_10m(base, args.top, args.workers) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
