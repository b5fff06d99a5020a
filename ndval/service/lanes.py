"""Swimlane index of one rank and window queries under an item budget.

One lane per host thread and per device stream (``side``, ``pid``, ``tid`` of the event table,
labelled with its ``stream`` column). Each lane keeps its events sorted by start, with the running
maximum of their ends, so the events overlapping a window ``[s, e)`` are found with two binary
searches: ``start < e`` (``searchsorted`` on the starts) and ``running max end > s``
(``searchsorted`` on the running maximum, which never decreases), then an exact mask.

Budget rule (the answer never holds more than ``budget`` items):

- when the window holds at most ``budget`` events, they are returned as they are (``kind = event``);
- otherwise each lane gets a quota by water-filling (lanes with few events keep all of them; the rest
  share what is left equally); a lane over its quota keeps its longest events as they are when they
  are at least one bucket wide (at most half the quota), and merges the others per time bucket of
  ``(e - s) / buckets`` (``kind = merged``: start of the first, end of the last, ``count`` of events
  merged, ``sum_dur_us``, and name/category of the longest member);
- when more lanes hold events than the budget has items, the lanes with the fewest events are kept
  first and the others are listed in ``omitted_lanes`` with their event counts.

Everything is numpy over the lane's arrays: O(log n) to find the window, O(k) in the events found.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

#: item kinds of a timeline answer.
EVENT = "event"
MERGED = "merged"


@dataclass(frozen=True)
class Lane:
    """The events of one host thread or device stream, sorted by start (times in µs, rank-relative)."""

    index: int
    side: str
    pid: int
    tid: int
    label: str
    start_us: np.ndarray
    end_us: np.ndarray
    max_end_us: np.ndarray
    dur_us: np.ndarray
    name_code: np.ndarray
    category_code: np.ndarray
    step: np.ndarray

    @property
    def count(self) -> int:
        """Events in the lane."""
        return int(self.start_us.size)

    def describe(self) -> dict[str, Any]:
        """Plain data of the lane (no events)."""
        return {"index": self.index, "side": self.side, "pid": self.pid, "tid": self.tid, "label": self.label,
                "events": self.count}

    def window(self, start_us: float, end_us: float) -> Found:
        """The lane's events overlapping ``[start_us, end_us)`` (zero-length events at a point inside the
        window count): those starting before the window and still running (``prefix``, indices) and the
        contiguous run ``[first, stop)`` starting inside it."""
        stop = int(np.searchsorted(self.start_us, end_us, side="left"))
        lo = int(np.searchsorted(self.max_end_us, start_us, side="right"))
        first = max(lo, min(stop, int(np.searchsorted(self.start_us, start_us, side="left"))))
        prefix = lo + np.flatnonzero(self.end_us[lo:first] > start_us) if first > lo else _NO_INDEX
        return Found(prefix, first, max(first, stop))


_NO_INDEX = np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class Found:
    """Events of one lane in a window: ``prefix`` (indices, started before it) + ``first:stop`` (a slice)."""

    prefix: np.ndarray
    first: int
    stop: int

    @property
    def count(self) -> int:
        """Events found."""
        return int(self.prefix.size) + self.stop - self.first

    def indices(self) -> np.ndarray:
        """All indices, in start order (only for small answers)."""
        return np.concatenate([self.prefix, np.arange(self.first, self.stop, dtype=np.int64)])


@dataclass(frozen=True)
class RankLanes:
    """All lanes of one rank plus the string tables their codes point into."""

    rank: int
    base_ts_us: int
    lanes: tuple[Lane, ...]
    names: tuple[str, ...]
    categories: tuple[str, ...]
    span_us: tuple[float, float]

    @property
    def event_count(self) -> int:
        """Events over all lanes."""
        return sum(lane.count for lane in self.lanes)


def _codes(column: pd.Series) -> tuple[np.ndarray, tuple[str, ...]]:
    """Integer codes and the string table of a (categorical or plain) column."""
    cat = column if isinstance(column.dtype, pd.CategoricalDtype) else column.astype("category")
    return cat.cat.codes.to_numpy(dtype=np.int32), tuple(str(c) for c in cat.cat.categories)


def _lane_label(side: str, pid: int, tid: int, stream: str) -> str:
    """``host · Thread 3096`` / ``device · Stream 7`` (pid added when the stream label does not say it)."""
    what = stream or (f"thread {tid}" if side == "host" else f"stream {tid}")
    return f"{side} · {what} · pid {pid}"


def build_rank_lanes(rank: int, events: pd.DataFrame, base_ts_us: int = 0) -> RankLanes:
    """Index the event table of one rank (columns of ``analyzer.ingest.events``) into lanes."""
    if events.empty:
        return RankLanes(rank, int(base_ts_us), (), (), (), (0.0, 0.0))
    name_code, names = _codes(events["name"])
    cat_code, categories = _codes(events["category"])
    start = events["ts_us"].to_numpy(dtype=np.float64)
    end = start + np.maximum(events["dur_us"].to_numpy(dtype=np.float64), 0.0)
    side = events["side"].astype(str).to_numpy()
    stream = events["stream"].astype(str).to_numpy()
    pid = events["pid"].to_numpy(dtype=np.int64)
    tid = events["tid"].to_numpy(dtype=np.int64)
    step = events["step"].to_numpy(dtype=np.int64)
    device_first = (side != "host").astype(np.int64)  # host lanes first, then by pid, tid; events by start
    order_all = np.lexsort((start, tid, pid, device_first))
    keys = np.stack([device_first[order_all], pid[order_all], tid[order_all]])
    bounds = np.r_[0, np.flatnonzero(np.any(keys[:, 1:] != keys[:, :-1], axis=0)) + 1, start.size]
    lanes = []
    for i, (lo, hi) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)):
        order = order_all[lo:hi]
        e = end[order]
        sd, p, t = str(side[order[0]]), int(pid[order[0]]), int(tid[order[0]])
        lanes.append(Lane(i, sd, p, t, _lane_label(sd, p, t, str(stream[order[0]])),
                          start[order], e, np.maximum.accumulate(e), e - start[order], name_code[order],
                          cat_code[order], step[order]))
    return RankLanes(rank, int(base_ts_us), tuple(lanes), names, categories,
                     (float(start.min()), float(end.max())))


def water_fill(counts: list[int], budget: int) -> list[int]:
    """Quotas ``q_i <= counts_i`` with ``Σ q_i <= budget``: smallest lanes first, each taking
    ``min(count, remaining // lanes left)``; a lane whose share is 0 gets 0 (it is omitted)."""
    quotas = [0] * len(counts)
    remaining, left = budget, len(counts)
    for i in sorted(range(len(counts)), key=lambda k: counts[k]):
        share = remaining // left if left else 0
        quotas[i] = min(counts[i], share)
        remaining -= quotas[i]
        left -= 1
    return quotas


def _event_items(rl: RankLanes, lane: Lane, idx: np.ndarray) -> list[dict[str, Any]]:
    """Real events as items."""
    s, e = lane.start_us[idx], lane.end_us[idx]
    cols = zip(np.round(s, 3).tolist(), np.round(e, 3).tolist(), np.round(e - s, 3).tolist(),
               lane.name_code[idx].tolist(), lane.category_code[idx].tolist(), lane.step[idx].tolist(), strict=True)
    return [{"lane": lane.index, "kind": EVENT, "start_us": a, "end_us": b, "dur_us": d, "name": rl.names[n],
             "category": rl.categories[c], "step": st, "count": 1} for a, b, d, n, c, st in cols]


def _merged_items(rl: RankLanes, lane: Lane, rows: np.ndarray | slice, start_us: float, end_us: float,
                  buckets: int) -> list[dict[str, Any]]:
    """Events ``rows`` (start order; any that started before the window fall in the first bucket)
    merged per time bucket of ``(end - start) / buckets``: bucket bounds by binary search on the sorted
    starts, then ``reduceat`` per bucket for the last end, the summed and the longest duration."""
    s, e, dur = lane.start_us[rows], lane.end_us[rows], lane.dur_us[rows]
    if s.size == 0 or buckets <= 0:
        return []
    edges = start_us + (end_us - start_us) / buckets * np.arange(1, buckets)
    bounds = np.r_[0, np.searchsorted(s, edges, side="left"), s.size]  # O(k log n): s is sorted
    firsts = bounds[:-1][bounds[:-1] < bounds[1:]]
    counts = np.diff(np.r_[firsts, s.size])
    hi = np.maximum.reduceat(e, firsts)
    sums = np.add.reduceat(dur, firsts)
    longest = np.maximum.reduceat(dur, firsts)
    hit = np.flatnonzero(dur == np.repeat(longest, counts))
    bucket_of_hit = np.searchsorted(firsts, hit, side="right") - 1
    pick = hit[np.r_[True, bucket_of_hit[1:] != bucket_of_hit[:-1]]]  # first longest member of each bucket
    codes = rows.start + pick if isinstance(rows, slice) else rows[pick]
    cols = zip(np.round(s[firsts], 3).tolist(), np.round(hi, 3).tolist(), np.round(hi - s[firsts], 3).tolist(),
               lane.name_code[codes].tolist(), lane.category_code[codes].tolist(), counts.tolist(),
               np.round(sums, 3).tolist(), strict=True)
    return [{"lane": lane.index, "kind": MERGED if k > 1 else EVENT, "start_us": a, "end_us": z, "dur_us": d,
             "name": rl.names[n], "category": rl.categories[c], "count": k, "sum_dur_us": sd}
            for a, z, d, n, c, k, sd in cols]


def _lane_items(rl: RankLanes, lane: Lane, found: Found, quota: int, start_us: float,
                end_us: float) -> list[dict[str, Any]]:
    """At most ``quota`` items for the lane's events in the window: all of them when they fit; else the
    longest events at least one bucket wide (at most half the quota; events that started before the
    window count among them) as they are, and the others merged per bucket."""
    if found.count <= quota:
        return _event_items(rl, lane, found.indices())
    width = (end_us - start_us) / quota
    run = slice(found.first, found.stop)
    wide = np.concatenate([found.prefix, found.first + np.flatnonzero(lane.dur_us[run] >= width)])
    wide_dur = lane.dur_us[wide]
    n_keep = min(quota // 2, wide.size)
    keep = wide[np.argsort(-wide_dur, kind="stable")[:n_keep]] if n_keep else _NO_INDEX
    rest: np.ndarray | slice = run
    if keep.size:
        mask = np.ones(found.stop - found.first, dtype=bool)
        inside = keep[keep >= found.first] - found.first
        mask[inside] = False
        rest = found.first + np.flatnonzero(mask)
    leftover = np.setdiff1d(found.prefix, keep)  # started before the window, not kept: merged into bucket 0
    items = _event_items(rl, lane, np.sort(keep))
    if leftover.size:
        tail = np.arange(rest.start, rest.stop) if isinstance(rest, slice) else rest
        rest = np.concatenate([leftover, tail])
    return items + _merged_items(rl, lane, rest, start_us, end_us, quota - keep.size)


def query(rl: RankLanes, start_us: float, end_us: float, budget: int) -> dict[str, Any]:
    """The items of ``[start_us, end_us)`` under ``budget`` (see the module docstring)."""
    found = [lane.window(start_us, end_us) for lane in rl.lanes]
    counts = [f.count for f in found]
    total = sum(counts)
    quotas = counts if total <= budget else water_fill(counts, budget)
    items: list[dict[str, Any]] = []
    omitted = []
    for lane, f, quota in zip(rl.lanes, found, quotas, strict=True):
        if f.count and quota == 0:
            omitted.append({"lane": lane.index, "events": f.count})
            continue
        if f.count:
            items.extend(_lane_items(rl, lane, f, quota, start_us, end_us))
    merged = [it["count"] for it in items if it["kind"] == MERGED]
    return {
        "events_in_window": total, "items": items, "item_count": len(items), "budget": budget,
        "aggregated": total > len(items), "merged_items": len(merged), "events_merged": sum(merged),
        "omitted_lanes": omitted, "lane_event_counts": {str(lane.index): c for lane, c in zip(rl.lanes, counts, strict=True)},
    }
