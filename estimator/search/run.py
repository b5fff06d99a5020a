"""Running a sweep in this process: enumerate the layouts, price each, reduce to a bounded result.

Rows of every evaluated layout are kept only when asked (``keep_rows``, for CSV/Parquet output);
otherwise memory stays bounded by ``top_k`` and the Pareto front whatever the size of the space.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any

from estimator.config.schema import EstimatorConfig
from estimator.search.evaluate import Candidate, evaluate, row_of, search_base
from estimator.search.grid import Grid, check_integer_dims
from estimator.search.price import KeptRow, Pricing
from estimator.search.rank import OBJECTIVES, Partial
from estimator.search.space import DEFAULT_SPACE, Layout, SkippedLayout, layouts, space_size

if TYPE_CHECKING:
    from rich.progress import Progress

#: layouts priced between two progress updates / partial reductions (scalar path)
CHUNK = 256


@dataclass
class SearchResult:
    """The outcome of a sweep: counts, rejections by reason, the top K, the Pareto front."""

    partial: Partial
    elapsed_s: float = 0.0
    path: str = "scalar"
    devices: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ranked(self) -> list[Candidate]:
        return self.partial.ranked

    @property
    def pareto(self) -> list[Candidate]:
        return self.partial.pareto

    @property
    def rejected(self) -> dict[str, int]:
        return dict(self.partial.rejected.most_common())

    @property
    def configs_per_s(self) -> float:
        return self.partial.evaluated / self.elapsed_s if self.elapsed_s > 0 else float("nan")

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``ndval search --json`` (see docs/search.md)."""
        p = self.partial
        return {
            "devices": self.devices,
            "objective": p.objective,
            "evaluated": p.evaluated,
            "feasible": p.feasible,
            "rejected": self.rejected,
            "rejected_examples": dict(p.examples),
            "ranked": [c.to_dict() for c in p.ranked],
            "pareto": [c.to_dict() for c in p.pareto],
            "configs_per_s": self.configs_per_s,
            "elapsed_s": self.elapsed_s,
            "path": self.path,
        }


def sweep(
    base_data: Mapping[str, Any], points: Iterable[Layout | SkippedLayout], partial: Partial,
    memory_margin_mb: float = 0.0, on_chunk: Callable[[int], None] | None = None,
    rows: list[dict[str, Any]] | None = None,
) -> Partial:
    """Price ``points`` one by one (the checking path, ``--scalar``), chunk by chunk into
    ``partial`` (``on_chunk(n)`` after each chunk)."""
    it = iter(points)
    while chunk := list(islice(it, CHUNK)):
        outcomes = [evaluate(base_data, layout, memory_margin_mb) for layout in chunk]
        partial.add(outcomes)
        if rows is not None:
            rows.extend(row_of(o) for o in outcomes)
        if on_chunk:
            on_chunk(len(chunk))
    return partial


def sweep_batched(
    base: EstimatorConfig, devices: int, space: Mapping[str, Sequence[Any]], base_data: Mapping[str, Any],
    partial: Partial, memory_margin_mb: float = 0.0, on_chunk: Callable[[int], None] | None = None,
    rows: list[dict[str, Any]] | None = None,
) -> Partial:
    """Price the layouts of ``space`` as arrays (:mod:`estimator.search.price`) into ``partial``;
    ``rows``, when given, receives every layout's row in sweep order."""
    kept: list[KeptRow] | None = [] if rows is not None else None
    pricing = Pricing(Grid(base, devices, space), base_data, partial, memory_margin_mb, kept)
    for piece in pricing.grid.blocks():
        pricing.price(piece)
        if on_chunk:
            on_chunk(len(piece))
    if rows is not None and kept is not None:
        rows.extend(row for _, row in sorted(kept, key=lambda pr: pr[0]))
    return partial


def search(
    base: EstimatorConfig, devices: int, space: Mapping[str, Sequence[Any]] | None = None,
    memory_margin_mb: float = 0.0, *, objective: str = "time", top_k: int | None = 20,
    keep_rows: bool = False, progress: bool = False, batched: bool = True,
) -> SearchResult:
    """Rank the layouts of ``space`` (default :data:`DEFAULT_SPACE`) on ``devices`` devices.

    The global batch of ``base`` is held fixed; a layout whose peak exceeds device memory minus
    ``memory_margin_mb`` is rejected as OOM. ``top_k=None`` keeps every feasible layout ranked.
    ``batched=False`` prices every layout one by one (the checking path, ``--scalar``).
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective {objective!r}: known {', '.join(OBJECTIVES)}")
    space = dict(space or DEFAULT_SPACE)
    check_integer_dims(space)
    base_data = search_base(base, space)
    partial = Partial(objective=objective, top_k=top_k if top_k is not None else sys.maxsize)
    rows: list[dict[str, Any]] | None = [] if keep_rows else None
    start = time.perf_counter()
    def count() -> int | None:
        return sum(1 for _ in layouts(base, devices, space)) if space_size(space) <= 10**6 else None

    with _progress(count, progress) as advance:
        if batched:
            sweep_batched(base, devices, space, base_data, partial, memory_margin_mb, advance, rows)
        else:
            sweep(base_data, layouts(base, devices, space), partial, memory_margin_mb, advance, rows)
    path = "batched" if batched else "scalar"
    return SearchResult(partial, time.perf_counter() - start, path, devices, rows or [])


class _progress:
    """A rich progress bar on stderr (only when asked and stderr is a terminal); yields ``advance``.
    ``count`` gives the bar's total and is called only when the bar is shown."""

    def __init__(self, count: Callable[[], int | None], enabled: bool) -> None:
        self.count, self.enabled = count, enabled and sys.stderr.isatty()
        self.bar: Progress | None = None

    def __enter__(self) -> Callable[[int], None]:
        if not self.enabled:
            return lambda n: None
        from rich.console import Console
        from rich.progress import Progress

        bar = self.bar = Progress(console=Console(stderr=True), transient=True)
        bar.start()
        task = bar.add_task("pricing layouts", total=self.count())
        return lambda n: bar.advance(task, n)

    def __exit__(self, *exc: object) -> None:
        if self.bar:
            self.bar.stop()
