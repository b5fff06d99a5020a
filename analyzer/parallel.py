"""Reading many ranks at once: one task per rank on a process pool (or Dask), with a progress bar.

:func:`map_ranks` applies a picklable function to every rank input. Backends:

- ``process`` (default): :class:`concurrent.futures.ProcessPoolExecutor` with ``workers`` processes
  (default: one per CPU, at most one per rank); ranks are independent, so the speed-up is the number
  of cores as long as memory holds ``workers`` ranks at once;
- ``dask``: the same tasks handed to Dask (``dask.delayed``): to a ``distributed`` client when one is
  active (a cluster larger than one machine's memory), else Dask's local process scheduler. Dask is
  optional (``pip install 'ndval[dask]'``); asking for it without it installed is a clear error;
- ``serial``: one after the other in this process (what one rank or ``workers=1`` gets).

Results come back in input order. The progress bar (rich, on stderr) counts finished ranks; it shows
on a terminal when there are several ranks, or when forced with ``progress=True``.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")
BACKENDS: tuple[str, ...] = ("process", "dask", "serial")


def default_workers(n_items: int) -> int:
    """One worker per CPU this process may use, at most one per item."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(n_items, cpus))


def map_ranks(fn: Callable[[T], R], items: Sequence[T], workers: int | None = None, backend: str = "process",
              progress: bool | None = None, label: str = "reading ranks") -> list[R]:
    """``[fn(x) for x in items]``, in parallel (see module docstring). An exception of one task is
    raised here, after the pool is shut down."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    n = len(items)
    workers = default_workers(n) if workers is None else max(1, int(workers))
    bar = _Bar(n, label, progress)
    try:
        if backend == "dask":
            return _dask(fn, items, bar)
        if backend == "serial" or workers == 1 or n <= 1:
            out = []
            for x in items:
                out.append(fn(x))
                bar.advance()
            return out
        return _pool(fn, items, workers, bar)
    finally:
        bar.close()


def _pool(fn: Callable[[T], R], items: Sequence[T], workers: int, bar: _Bar) -> list[R]:
    ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    results: list[Any] = [None] * len(items)
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = {pool.submit(fn, x): i for i, x in enumerate(items)}
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            bar.advance()
    return results


def _dask(fn: Callable[[T], R], items: Sequence[T], bar: _Bar) -> list[R]:
    try:
        import dask
    except ImportError as exc:
        raise RuntimeError("backend 'dask' needs Dask: pip install 'ndval[dask]'") from exc
    tasks = [dask.delayed(fn)(x) for x in items]  # type: ignore[attr-defined]
    try:
        from distributed import default_client

        client: Any = default_client()  # type: ignore[no-untyped-call]
    except (ImportError, ValueError):
        client = None
    if client is not None:
        results = list(client.gather(client.compute(tasks)))
    else:
        results = list(dask.compute(*tasks, scheduler="processes"))  # type: ignore[attr-defined,no-untyped-call]
    for _ in items:
        bar.advance()
    return results


class _Bar:
    """rich progress over ranks on stderr (only when useful, see module docstring)."""

    def __init__(self, total: int, label: str, enabled: bool | None) -> None:
        show = enabled if enabled is not None else (total > 1 and sys.stderr.isatty())
        self.bar: Any = None
        if show:
            from rich.console import Console
            from rich.progress import Progress

            self.bar = Progress(transient=True, console=Console(stderr=True))
            self.task = self.bar.add_task(label, total=total)
            self.bar.start()

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.advance(self.task)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
