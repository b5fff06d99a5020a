"""The cluster summary of an analysis: per-rank rows from each rank's overall scope, plus the communication
view (``cluster_comm``: wait vs transfer per rank, slowest links) and the arrival skew of the collectives
(``comm_wait.arrival``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from analyzer import cluster, cluster_comm
from analyzer.comm_wait import Arrival
from analyzer.indicators import IndicatorSet


def cluster_row(ind: IndicatorSet) -> dict[str, float | None]:
    """One rank's row (µs per step) from its overall scope's indicators."""
    steps = ind.value("step_count") or 0

    def per(k: str) -> float | None:
        return None if ind.value(k) is None or steps <= 0 else (ind.value(k) or 0.0) / steps

    idle = None
    if ind.value("device_busy_us") is not None and ind.value("wall_us"):
        idle = (ind.value("wall_us") or 0.0) - (ind.value("device_busy_us") or 0.0)
    return {"step_us": ind.value("avg_step_us"), "compute_us": per("compute_us"), "comm_us": per("comm_us"),
            "comm_exposed_us": per("comm_exposed_us"), "device_idle_us": None if idle is None or steps <= 0 else idle / steps,
            "host_exclusive_us": ind.value("host_exclusive_per_step_us")}


def with_comm(summary: cluster.ClusterSummary, ranks: list[Any], arrival: Arrival | None) -> cluster.ClusterSummary:
    """The cluster summary plus per-rank wait vs transfer, the slowest links and the arrival skew."""
    splits, links, notes = [], [], set()
    for r in ranks:
        split, rank_links, note = cluster_comm.rank_comm(r)
        if split is not None:
            splits.append(split.to_dict())
        links.extend(rank_links)
        if note:
            notes.add(note)
    return replace(summary, comm_split=tuple(splits),
                   slowest_links=tuple(link.to_dict() for link in cluster_comm.slowest_links(links)),
                   comm_note="; ".join(sorted(notes)), arrival=None if arrival is None else arrival.to_dict())


def summarize(rows: dict[int, dict[str, float | None]], ranks: list[Any], spread_gate_pct: float,
              arrival: Arrival | None) -> cluster.ClusterSummary | None:
    """The cluster summary of ≥ 2 ranks (None for one)."""
    summary = cluster.summarize(rows, spread_gate_pct, "overall scope indicators per step (µs/step)")
    return None if summary is None else with_comm(summary, ranks, arrival)
