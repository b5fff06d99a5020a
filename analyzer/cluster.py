"""Multi-rank view: slowest rank by step time and by each time component, spread max vs mean.

Input is one row of plain numbers per rank (µs). A rank is flagged when its value exceeds the mean over
ranks by more than ``clusterSpreadPct`` (msprof-analyze's slow-rank rule, 5 %). With one rank there is
no cluster view.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Spread:
    """One metric across ranks."""

    metric: str
    slowest_rank: int
    max_us: float
    mean_us: float
    min_us: float
    spread_pct: float
    flagged: bool

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {"metric": self.metric, "slowest_rank": self.slowest_rank, "max_us": round(self.max_us, 3),
                "mean_us": round(self.mean_us, 3), "min_us": round(self.min_us, 3),
                "spread_pct": round(self.spread_pct, 3), "flagged": self.flagged}


@dataclass(frozen=True)
class ClusterSummary:
    """Per-rank components and the spread of each."""

    ranks: tuple[int, ...]
    per_rank: dict[int, dict[str, float | None]]
    spreads: tuple[Spread, ...]
    spread_gate_pct: float
    source: str
    #: communication of the cluster (``cluster_comm``): per-rank wait vs transfer, slowest links.
    comm_split: tuple[dict[str, Any], ...] = ()
    slowest_links: tuple[dict[str, Any], ...] = ()
    comm_note: str = ""
    top: int = field(default=5)
    #: arrival skew of the collectives across ranks (``comm_wait.Arrival.to_dict``), None when not measured.
    arrival: dict[str, Any] | None = None
    #: ranks of the folder that could not be read (path and reason each): not in ``ranks``, not judged
    unreadable: tuple[str, ...] = ()

    def slowest_ranks(self, metric: str = "step_us") -> list[tuple[int, float]]:
        """``(rank, value)`` of the ``top`` ranks with the largest ``metric``, slowest first."""
        vals = [(r, float(v)) for r, row in self.per_rank.items() if (v := row.get(metric)) is not None]
        return sorted(vals, key=lambda x: (-x[1], x[0]))[:self.top]

    @property
    def slowest_rank(self) -> int | None:
        """Slowest rank by step time."""
        s = self.spread("step_us")
        return s.slowest_rank if s else None

    def spread(self, metric: str) -> Spread | None:
        """The spread of ``metric`` (None when no rank has it)."""
        return next((s for s in self.spreads if s.metric == metric), None)

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {"ranks": list(self.ranks), "slowest_rank_by_step_time": self.slowest_rank,
                "spread_gate_pct": self.spread_gate_pct, "source": self.source,
                "per_rank": {str(k): {m: None if v is None else round(v, 3) for m, v in row.items()}
                             for k, row in self.per_rank.items()},
                "spreads": [s.to_dict() for s in self.spreads],
                "slowest_ranks": [{"rank": r, "step_us": round(v, 3)} for r, v in self.slowest_ranks()],
                "slowest_links": list(self.slowest_links), "comm_split": list(self.comm_split),
                "comm_note": self.comm_note, "arrival_skew": self.arrival, "ranks_judged": len(self.ranks),
                "ranks_unreadable": list(self.unreadable)}


def spread_pct(values: np.ndarray) -> float:
    """``100 × (max − mean) / mean`` (0 when the mean is 0)."""
    mean = float(values.mean())
    return 0.0 if mean == 0 else 100.0 * (float(values.max()) - mean) / mean


def summarize(per_rank: Mapping[int, Mapping[str, float | None]], spread_gate_pct: float, source: str) -> ClusterSummary | None:
    """Cluster summary of ≥ 2 ranks; metrics missing on some rank are compared over the ranks that have them."""
    if len(per_rank) < 2:
        return None
    metrics = sorted({m for row in per_rank.values() for m in row}, key=lambda m: (m != "step_us", m))
    spreads = []
    for m in metrics:
        pairs = [(r, row[m]) for r, row in per_rank.items() if row.get(m) is not None]
        if len(pairs) < 2:
            continue
        vals = np.array([float(v) for _, v in pairs if v is not None])
        slow = pairs[int(np.argmax(vals))][0]
        sp = spread_pct(vals)
        spreads.append(Spread(m, slow, float(vals.max()), float(vals.mean()), float(vals.min()), sp, sp > spread_gate_pct))
    return ClusterSummary(tuple(sorted(per_rank)), {k: dict(v) for k, v in per_rank.items()}, tuple(spreads),
                          spread_gate_pct, source)
