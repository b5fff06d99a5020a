"""Strategy search: enumerate parallel layouts of a fixed world size, drop the invalid and the ones
that do not fit in device memory, rank the rest by estimated step time (TOTAL).

Each candidate is validated by the config schema (spec §3 rules), priced by ``estimate_memory``
and ``estimate_perf``; the result keeps why every rejected candidate was dropped (#734's "filter
reasons"). The sweep is a plain loop: one candidate costs a few milliseconds (see
``benchmarks/bench_estimator.py``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from estimator.config import EstimatorConfig, load_config
from estimator.errors import ConfigError
from estimator.memory import estimate_memory
from estimator.perf.parts import estimate_perf

#: degrees tried per dimension when the caller does not give them
DEFAULT_SPACE: dict[str, Sequence[Any]] = {
    "parallel.tp": (1, 2, 4, 8),
    "parallel.pp": (1, 2, 4, 8),
    "parallel.ep": (1, 2, 4, 8),
    "recompute.mode": ("none", "selective", "full"),
}


@dataclass(frozen=True)
class Candidate:
    """One evaluated layout: the overrides that define it, its peak memory and step time."""

    overrides: dict[str, Any]
    peak_mb: float
    total_s: float
    tokens_per_s: float
    mfu: float


@dataclass
class SearchResult:
    """Ranked feasible candidates (fastest first) and the rejected ones with their reason."""

    ranked: list[Candidate] = field(default_factory=list)
    rejected: list[tuple[dict[str, Any], str]] = field(default_factory=list)


def layouts(world_size: int, space: dict[str, Sequence[Any]]) -> Iterable[dict[str, Any]]:
    """Every combination of ``space`` with ``parallel.dp = world/(tp·pp·cp)`` when that is an integer."""
    keys = list(space)
    for combo in itertools.product(*(space[k] for k in keys)):
        point = dict(zip(keys, combo, strict=True))
        denom = point.get("parallel.tp", 1) * point.get("parallel.pp", 1) * point.get("parallel.cp", 1)
        if world_size % denom:
            continue
        point["parallel.dp"] = world_size // denom
        yield point


def search(
    base: EstimatorConfig | dict[str, Any], world_size: int, space: dict[str, Sequence[Any]] | None = None,
    memory_margin_mb: float = 0.0,
) -> SearchResult:
    """Rank the layouts of ``space`` (default :data:`DEFAULT_SPACE`) on ``world_size`` devices.

    ``train.global_batch_size`` of ``base`` is kept when given, so each layout gets its own number
    of micro-batches; a layout whose peak exceeds device memory minus ``memory_margin_mb`` is
    rejected as OOM.
    """
    data = base.model_dump(mode="python") if isinstance(base, EstimatorConfig) else dict(base)
    if data.get("train", {}).get("global_batch_size") is not None:
        data["train"] = {k: v for k, v in data["train"].items() if k != "num_micro_batches"}
    result = SearchResult()
    for point in layouts(world_size, space or DEFAULT_SPACE):
        overrides = {**point, "hardware.devices": world_size}
        try:
            cfg = load_config(data, overrides)
        except ConfigError as exc:
            result.rejected.append((point, f"invalid: {exc}"))
            continue
        mem = estimate_memory(cfg)
        if mem.peak_mb > cfg.hardware.hbm_mb - memory_margin_mb:
            result.rejected.append((point, f"OOM: peak {mem.peak_mb:.0f} MiB > {cfg.hardware.hbm_mb:.0f} MiB"))
            continue
        perf = estimate_perf(cfg)
        result.ranked.append(Candidate(point, mem.peak_mb, perf.total, perf.tokens_per_s, perf.mfu))
    result.ranked.sort(key=lambda c: c.total_s)
    return result
