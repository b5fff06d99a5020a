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

    def window(self, start_us: float, end_us: float) -> np.ndarray:
        """Indices of the lane's events overlapping ``[start_us, end_us)`` (zero-length events at a
        point inside the window count), in start order."""
        hi = int(np.searchsorted(self.start_us, end_us, side="left"))
        lo = int(np.searchsorted(self.max_end_us, start_us, side="right"))
        if hi <= lo:
            return np.empty(0, dtype=np.int64)
        idx = np.arange(lo, hi, dtype=np.int64)
        s, e = self.start_us[lo:hi], self.end_us[lo:hi]
        return idx[(e > start_us) | (s >= start_us)]


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
    keys = pd.DataFrame({"side": side, "pid": pid, "tid": tid})
    group = keys.groupby(["side", "pid", "tid"], sort=True).indices
    lanes = []
    for i, ((s, p, t), rows) in enumerate(sorted(group.items(), key=lambda kv: (kv[0][0] != "host", kv[0][1:]))):
        order = rows[np.argsort(start[rows], kind="stable")]
        e = end[order]
        lanes.append(Lane(i, str(s), int(p), int(t), _lane_label(str(s), int(p), int(t), str(stream[order[0]])),
                          start[order], e, np.maximum.accumulate(e), name_code[order], cat_code[order], step[order]))
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
    n, c, st = lane.name_code[idx], lane.category_code[idx], lane.step[idx]
    return [{"lane": lane.index, "kind": EVENT, "start_us": round(float(a), 3), "end_us": round(float(b), 3),
             "dur_us": round(float(b - a), 3), "name": rl.names[int(nn)], "category": rl.categories[int(cc)],
             "step": int(ss), "count": 1}
            for a, b, nn, cc, ss in zip(s, e, n, c, st, strict=True)]


def _merged_items(rl: RankLanes, lane: Lane, idx: np.ndarray, start_us: float, end_us: float,
                  buckets: int) -> list[dict[str, Any]]:
    """Events of ``idx`` (start order) merged per time bucket of ``(end - start) / buckets``."""
    if idx.size == 0 or buckets <= 0:
        return []
    s, e = lane.start_us[idx], lane.end_us[idx]
    width = (end_us - start_us) / buckets
    b = np.minimum(((np.maximum(s, start_us) - start_us) / width).astype(np.int64), buckets - 1)
    firsts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])  # b never decreases: runs are buckets
    dur = e - s
    counts = np.diff(np.r_[firsts, idx.size])
    lo, hi = s[firsts], np.maximum.reduceat(e, firsts)
    sums = np.add.reduceat(dur, firsts)
    longest = np.maximum.reduceat(dur, firsts)
    run = np.repeat(np.arange(firsts.size), counts)
    hit = np.flatnonzero(dur == longest[run])
    pick = hit[np.r_[True, run[hit][1:] != run[hit][:-1]]]  # first longest member of each bucket
    names, cats = lane.name_code[idx[pick]], lane.category_code[idx[pick]]
    return [{"lane": lane.index, "kind": MERGED if k > 1 else EVENT, "start_us": round(float(a), 3),
             "end_us": round(float(z), 3), "dur_us": round(float(z - a), 3), "name": rl.names[int(nn)],
             "category": rl.categories[int(cc)], "count": int(k), "sum_dur_us": round(float(sd), 3)}
            for a, z, nn, cc, k, sd in zip(lo, hi, names, cats, counts, sums, strict=True)]


def _lane_items(rl: RankLanes, lane: Lane, idx: np.ndarray, quota: int, start_us: float,
                end_us: float) -> list[dict[str, Any]]:
    """At most ``quota`` items for the lane's events ``idx`` in the window."""
    if idx.size <= quota:
        return _event_items(rl, lane, idx)
    width = (end_us - start_us) / quota
    dur = lane.end_us[idx] - lane.start_us[idx]
    wide = np.flatnonzero(dur >= width)
    keep = wide[np.argsort(-dur[wide], kind="stable")[: quota // 2]] if wide.size else wide
    rest = np.delete(idx, keep)
    items = _event_items(rl, lane, np.sort(idx[keep]))
    return items + _merged_items(rl, lane, rest, start_us, end_us, quota - keep.size)


def query(rl: RankLanes, start_us: float, end_us: float, budget: int) -> dict[str, Any]:
    """The items of ``[start_us, end_us)`` under ``budget`` (see the module docstring)."""
    found = [lane.window(start_us, end_us) for lane in rl.lanes]
    counts = [int(f.size) for f in found]
    total = sum(counts)
    quotas = counts if total <= budget else water_fill(counts, budget)
    items: list[dict[str, Any]] = []
    omitted = []
    for lane, idx, quota in zip(rl.lanes, found, quotas, strict=True):
        if idx.size and quota == 0:
            omitted.append({"lane": lane.index, "events": int(idx.size)})
            continue
        items.extend(_lane_items(rl, lane, idx, quota, start_us, end_us))
    merged = sum(1 for it in items if it["kind"] == MERGED)
    return {
        "events_in_window": total, "items": items, "item_count": len(items), "budget": budget,
        "aggregated": total > len(items), "merged_items": merged,
        "events_merged": sum(it["count"] for it in items if it["kind"] == MERGED),
        "omitted_lanes": omitted, "lane_event_counts": {str(lane.index): c for lane, c in zip(rl.lanes, counts, strict=True)},
    }
