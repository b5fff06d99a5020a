"""A sweep partitioned over Dask distributed workers (a local cluster or a running scheduler).

The space is cut along its outer dimensions: each partition fixes one value of each of the first
few dimensions and sweeps the rest, reducing to a bounded :class:`~estimator.search.rank.Partial`
(top K and Pareto set) on its worker. The driver merges partials as they complete, so memory
stays bounded by (partitions in flight) × (top K + front), and the merged result equals a
single-process sweep of the same space (top K and front are exact; counts add).
Dask is an optional dependency (``pip install 'ndval[dask]'``).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from estimator.config.schema import EstimatorConfig
from estimator.search.evaluate import search_base
from estimator.search.grid import check_integer_dims
from estimator.search.rank import OBJECTIVES, Partial
from estimator.search.run import SearchResult, sweep_batched
from estimator.search.space import DEFAULT_SPACE, SPLIT_DIM

#: partitions per worker thread the driver aims for (load balance vs scheduling overhead)
PARTITIONS_PER_THREAD = 4


def partitions(space: Mapping[str, Sequence[Any]], target: int) -> Iterator[dict[str, tuple[Any, ...]]]:
    """Sub-spaces that fix the first dimensions (in the space's order) to one value each, enough
    of them to reach ``target`` partitions (or every outer dimension fixed). Their union is the
    space, they do not overlap, and each keeps every key (so derived rules see the same space)."""
    keys = [k for k in space if k != SPLIT_DIM]
    outer: list[str] = []
    for key in keys:
        if math.prod(len(space[k]) for k in outer) >= target:
            break
        outer.append(key)
    for combo in itertools.product(*(space[k] for k in outer)):
        sub = {k: tuple(v) for k, v in space.items()}
        sub.update({k: (value,) for k, value in zip(outer, combo, strict=True)})
        yield sub


def run_partition(
    base: EstimatorConfig, base_data: dict[str, Any], devices: int, sub: dict[str, tuple[Any, ...]],
    memory_margin_mb: float, objective: str, top_k: int, origin: int = 0,
) -> Partial:
    """Partition ``origin`` swept (batched) on a worker, reduced to its bounded partial."""
    partial = Partial(objective=objective, top_k=top_k, origin=origin)
    return sweep_batched(base, devices, sub, base_data, partial, memory_margin_mb)


def search_dask(
    base: EstimatorConfig, devices: int, space: Mapping[str, Sequence[Any]] | None = None,
    memory_margin_mb: float = 0.0, *, objective: str = "time", top_k: int = 20,
    scheduler: str | None = None, workers: int | None = None, client: Any = None,
) -> SearchResult:
    """Sweep on Dask: ``client`` when given, else a client of ``scheduler`` (an address), else a
    ``LocalCluster`` of ``workers`` processes (default: one per core)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective {objective!r}: known {', '.join(OBJECTIVES)}")
    from distributed import Client, LocalCluster, as_completed

    space = dict(space or DEFAULT_SPACE)
    check_integer_dims(space)
    base_data = search_base(base, space)
    own = None
    if client is None:
        own = Client(scheduler) if scheduler else Client(LocalCluster(n_workers=workers, threads_per_worker=1))
        client = own
    try:
        threads = max(1, sum(client.nthreads().values()))
        start = time.perf_counter()
        base_f, data_f = client.scatter([base, base_data], broadcast=True)
        futures = [
            client.submit(run_partition, base_f, data_f, devices, sub, memory_margin_mb, objective, top_k,
                          origin, pure=False)
            for origin, sub in enumerate(partitions(space, PARTITIONS_PER_THREAD * threads))
        ]
        total = Partial(objective=objective, top_k=top_k)
        for future in as_completed(futures):
            total.merge(future.result())
            future.release()
        return SearchResult(total, time.perf_counter() - start, "dask", devices)
    finally:
        if own is not None:
            cluster = own.cluster
            own.close()
            if cluster is not None:
                cluster.close()
