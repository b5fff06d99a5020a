"""From an evidence row to the events behind it (the swimlane's "jump to the events").

An evidence row names an indicator (``metric``); each indicator is computed from events of some
categories of the event table (``analyzer.ingest.events``: ``communication`` for ``comm_*``, host
dispatch and operators for ``host_*`` ...). :data:`METRIC_CATEGORIES` maps indicator-id prefixes
to those categories (first match wins); :func:`locate` returns the matching events of the scope's
windows, longest first, and a focus window around the longest one for the swimlane to zoom to.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ndval.service.lanes import RankLanes

DEVICE_WORK = ("compute", "communication", "memcpy", "memset")
#: indicator-id prefix -> event categories it is computed from (first match wins; order matters).
METRIC_CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("host_copy", ("memcpy", "sync")),
    ("host_sync", ("sync",)),
    ("sync_", ("sync",)),
    ("capture_sync", ("sync",)),
    ("host_", ("dispatch", "host_op")),
    ("dispatch_", ("dispatch",)),
    ("comm_", ("communication",)),
    ("compute_", ("compute",)),
    ("attention_", ("compute",)),
    ("mac_ratio", ("compute",)),
    ("mte2_ratio", ("compute",)),
    ("copy_", ("memcpy",)),
    ("d2h_", ("memcpy",)),
    ("h2d_", ("memcpy",)),
    ("device_", DEVICE_WORK),
    ("idle_gap", DEVICE_WORK),
    ("event_count", DEVICE_WORK),
    ("wall_us", ("step",)),
    ("step_count", ("step",)),
    ("avg_step", ("step",)),
)
#: how many events a locate answer lists.
TOP_EVENTS = 10


def categories_of(metric: str) -> tuple[str, ...]:
    """Event categories behind indicator ``metric`` (empty when the map does not know it)."""
    return next((cats for prefix, cats in METRIC_CATEGORIES if metric.startswith(prefix)), ())


def _in_windows(start: np.ndarray, windows: list[tuple[float, float]]) -> np.ndarray:
    if not windows:
        return np.ones(start.size, dtype=bool)
    mask = np.zeros(start.size, dtype=bool)
    for a, b in windows:
        mask |= (start >= a) & (start < b)
    return mask


def locate(rl: RankLanes, metric: str, windows: list[tuple[float, float]]) -> dict[str, Any]:
    """The events of ``metric``'s categories inside ``windows`` (µs, rank-relative): count, the
    longest :data:`TOP_EVENTS`, and ``focus_us``: the longest event padded by half its length
    (or the first window when no event matches)."""
    cats = categories_of(metric)
    codes = {i for i, c in enumerate(rl.categories) if c in cats}
    found: list[tuple[float, float, int, int]] = []  # (dur, start, lane, index)
    count = 0
    for lane in rl.lanes:
        sel = np.flatnonzero(np.isin(lane.category_code, list(codes)) & _in_windows(lane.start_us, windows))
        count += int(sel.size)
        if sel.size:
            dur = lane.end_us[sel] - lane.start_us[sel]
            top = sel[np.argsort(-dur, kind="stable")[:TOP_EVENTS]]
            found += [(float(lane.end_us[i] - lane.start_us[i]), float(lane.start_us[i]), lane.index, int(i))
                      for i in top]
    found.sort(key=lambda t: (-t[0], t[1]))
    events = [{"lane": ln, "start_us": round(s, 3), "end_us": round(s + d, 3), "dur_us": round(d, 3),
               "name": rl.names[int(rl.lanes[ln].name_code[i])], "category": rl.categories[int(rl.lanes[ln].category_code[i])]}
              for d, s, ln, i in found[:TOP_EVENTS]]
    if found:
        a, b = found[0][1], found[0][1] + found[0][0]
        pad = max((b - a) / 2, 1.0)
        focus = [a - pad, b + pad]
    else:
        focus = list(windows[0]) if windows else list(rl.span_us)
    lanes = sorted({ln.index for ln in rl.lanes if np.isin(ln.category_code, list(codes)).any()})
    return {"metric": metric, "categories": list(cats), "event_count": count, "events": events,
            "focus_us": [round(focus[0], 3), round(focus[1], 3)], "lanes": lanes,
            "mapped": bool(cats)}
