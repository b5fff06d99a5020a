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
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Failed:
    """A task of :func:`map_ranks` that raised one of the ``keep_going`` exceptions: its item and the error."""

    item: Any
    error: BaseException

    def line(self) -> str:
        return str(self.error) if str(self.item) in str(self.error) else f"{self.item}: {self.error}"


def split_failed(results: Sequence[R | Failed]) -> tuple[list[R], list[Failed]]:
    """(the results, the failed tasks) of a :func:`map_ranks` run with ``keep_going``."""
    return [r for r in results if not isinstance(r, Failed)], [r for r in results if isinstance(r, Failed)]


def map_ranks(fn: Callable[[T], R], items: Sequence[T], workers: int | None = None, backend: str = "process",
              progress: bool | None = None, label: str = "reading ranks",
              keep_going: tuple[type[BaseException], ...] = ()) -> list[Any]:
    """``[fn(x) for x in items]``, in parallel (see module docstring). An exception of one task is
    raised here, after the pool is shut down; one of ``keep_going`` becomes a :class:`Failed` in its place
    instead (the other tasks still run). ``workers`` is capped at the items and the usable CPUs
    (``--workers 100000`` on a 2-rank folder starts 2 processes, not 100000)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    n = len(items)
    workers = default_workers(n) if workers is None else min(default_workers(n), max(1, int(workers)))
    bar = _Bar(n, label, progress)
    try:
        if backend == "dask":
            return _dask(fn, items, bar)
        if backend == "serial" or workers == 1 or n <= 1:
            out: list[Any] = []
            for x in items:
                try:
                    out.append(fn(x))
                except keep_going as exc:
                    out.append(Failed(x, exc))
                bar.advance()
            return out
        return _pool(fn, items, workers, bar, keep_going)
    finally:
        bar.close()


def _pool(fn: Callable[[T], R], items: Sequence[T], workers: int, bar: _Bar,
          keep_going: tuple[type[BaseException], ...] = ()) -> list[Any]:
    ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    results: list[Any] = [None] * len(items)
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = {pool.submit(fn, x): i for i, x in enumerate(items)}
        for fut in as_completed(futures):
            try:
                results[futures[fut]] = fut.result()
            except keep_going as exc:
                results[futures[fut]] = Failed(items[futures[fut]], exc)
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
