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


#: metrics whose per-rank value is measured against the rank's step boundaries (step length, idle = wall − busy)
STEP_BOUNDED = ("step_us", "device_idle_us")


def summarize(rows: dict[int, dict[str, float | None]], ranks: list[Any], spread_gate_pct: float,
              arrival: Arrival | None, step_sources: dict[int, str] | None = None) -> cluster.ClusterSummary | None:
    """The cluster summary of ≥ 2 ranks (None for one).

    ``step_sources`` (rank -> where its steps come from, ``phases.PhasePlan.step_source``): when the ranks' steps
    come from different sources — a rank read from tables alone lays ``step_trace_time.csv``'s steps end to end,
    a traced rank spans its ``ProfilerStep`` markers, which also hold the host time before the first kernel —
    the step-bounded spreads (:data:`STEP_BOUNDED`) are shown but not flagged, and the note says why: a
    difference of definition is not a slow rank."""
    summary = cluster.summarize(rows, spread_gate_pct, "overall scope indicators per step (µs/step)")
    if summary is None:
        return None
    sources = sorted(set((step_sources or {}).values()))
    if len(sources) > 1:
        by_source = "; ".join(f"{src}: rank(s) {', '.join(str(r) for r in sorted(k for k, v in (step_sources or {}).items() if v == src))}"
                              for src in sources)
        spreads = tuple(replace(sp, flagged=False) if sp.metric in STEP_BOUNDED else sp for sp in summary.spreads)
        summary = replace(summary, spreads=spreads, source=f"{summary.source}; steps from different sources "
                          f"({by_source}): the step-time and idle spreads are not flagged")
    return with_comm(summary, ranks, arrival)
