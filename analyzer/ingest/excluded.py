"""Events and steps a trace reader left out for unreadable fields, counted by cause (both trace layouts).

A complete event whose ``ts`` or ``dur`` is not a usable number (NaN, negative, non-numeric, beyond range) is
dropped by the reader (``stream``); so is an array element that does not decode as an event. This module turns
what the reader counted into the rank's :class:`~analyzer.ingest.dropped.DroppedEvents` and its warnings, with
the count per cause (``bad ts``, ``bad dur``, ``invalid UTF-8``, ``not an event``), and names every ``ProfilerStep#N`` marker so
dropped with the cause and the events of its step, which are then in no step (outside the analysed window):

- marker with a bad ``dur`` (its start is known): its step's events are those starting at or after the
  marker's start and before the next readable marker's start;
- marker with a bad ``ts`` (its start is unknown): those between the end of the readable marker of the
  step before it (by step number) and the start of the one after it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analyzer.ingest import events as ev
from analyzer.ingest.dropped import DroppedEvents
from analyzer.ingest.stream import RawTrace

#: causes of an event dropped by the reader, in the order the messages list them.
CAUSES: tuple[str, ...] = ("bad ts", "bad dur", "invalid UTF-8", "not an event")
#: what a bad ts / dur is, for the messages.
WHAT_BAD = "a bad ts/dur is NaN, negative, non-numeric or beyond range"


def excluded_steps(raw: RawTrace, sigs: pd.DataFrame, arrays: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """Per ``ProfilerStep#N`` marker the reader dropped: ``{"marker", "cause", "events", "between"}`` —
    ``events``: the loose events its step held (module docstring); ``between``: for a bad ``ts``, the
    neighbouring readable markers bounding them (``(before, after)``, None where there is none)."""
    is_step_sig = (sigs["category"] == ev.STEP).to_numpy(dtype=bool)
    step_of_sig = ev.step_numbers(sigs["name"].to_numpy(dtype=object), is_step_sig)
    is_step = is_step_sig[arrays["sig"]]
    starts, ends = arrays["ts_us"][is_step], arrays["ts_us"][is_step] + arrays["dur_us"][is_step]
    numbers = step_of_sig[arrays["sig"][is_step]]
    loose = arrays["ts_us"][(arrays["step"] < 0) & ~is_step]
    out: list[dict[str, Any]] = []
    for name, rel in raw.bad_steps:
        if math.isfinite(rel):
            start = rel - raw.shift_us
            later = starts[starts > start]
            lo, hi, between = start, (float(later.min()) if later.size else math.inf), None
        else:
            lo, hi, between = _bounds(_number(name), numbers, starts, ends)
        out.append({"marker": name, "cause": "bad dur" if math.isfinite(rel) else "bad ts",
                    "events": int(((loose >= lo) & (loose < hi)).sum()), "between": between})
    return out


def _number(name: str) -> int | None:
    digits = name.removeprefix("ProfilerStep#")
    return int(digits) if digits.isdigit() and len(digits) < 19 else None


def _bounds(n: int | None, numbers: np.ndarray, starts: np.ndarray,
            ends: np.ndarray) -> tuple[float, float, tuple[str | None, str | None]]:
    """``(lo, hi, (marker before, marker after))``: the span between the readable markers around step ``n``."""
    if n is None or not numbers.size:
        return -math.inf, math.inf, (None, None)
    before, after = numbers < n, numbers > n
    lo = float(ends[before][np.argmax(numbers[before])]) if before.any() else -math.inf
    hi = float(starts[after][np.argmin(numbers[after])]) if after.any() else math.inf
    return lo, hi, (f"ProfilerStep#{int(numbers[before].max())}" if before.any() else None,
                    f"ProfilerStep#{int(numbers[after].min())}" if after.any() else None)


def cause_counts(raw: RawTrace) -> dict[str, int]:
    """Events the reader dropped, by cause (:data:`CAUSES`; zero counts left out)."""
    n_not, n_utf8 = raw.not_events
    bad_dur = raw.n_dropped_bad - raw.n_bad_ts - n_not
    counts = {"bad ts": raw.n_bad_ts, "bad dur": max(bad_dur, 0), "invalid UTF-8": n_utf8, "not an event": n_not - n_utf8}
    return {c: n for c, n in counts.items() if n}


def causes_text(raw: RawTrace) -> str:
    """``bad ts 3, invalid UTF-8 1; a bad ts/dur is ...`` (what a bad ts/dur is, when there is one)."""
    counts = cause_counts(raw)
    text = ", ".join(f"{c} {n:,}" for c, n in counts.items())
    return f"{text}; {WHAT_BAD}" if counts.keys() & {"bad ts", "bad dur"} else text


def none_readable(raw: RawTrace) -> str:
    """Why a trace has no complete event although it has some (``""`` when none was dropped): the count by cause."""
    return f"; all {raw.n_dropped_bad:,} were dropped as unreadable ({causes_text(raw)})" if raw.n_dropped_bad else ""


def _step_text(item: dict[str, Any]) -> str:
    text = (f"step marker {item['marker']}: {item['cause']} — 1 marker and the {item['events']:,} events of its "
            "step excluded")
    before, after = item["between"] or (None, None)
    if item["cause"] == "bad ts":
        span = " and ".join(s for s in (f"after {before}'s end" if before else "",
                                         f"before {after}'s start" if after else "") if s)
        text += f" (its start is unreadable: the events in no step {span or 'anywhere in the trace'})"
    return text


def dropped_rows(path: Path, raw: RawTrace, excluded: list[dict[str, Any]]) -> tuple[DroppedEvents, list[str]]:
    """The rank's ``dropped_events`` and warnings for what the reader dropped (module docstring): one line
    with the count per cause, one per excluded step; ``by_category``: ``unparsed`` (the events dropped),
    ``excluded_step_markers`` and ``events_in_excluded_steps`` when a step marker was among them."""
    if not raw.n_dropped_bad:
        return DroppedEvents(), []
    warnings = [f"{path}: dropped {raw.n_dropped_bad:,} unreadable events ({causes_text(raw)})"]
    steps = [_step_text(item) for item in excluded]
    warnings += [f"{path}: {s}: they are in no step, outside the analysed window" for s in steps]
    by_cat = {"unparsed": raw.n_dropped_bad}
    if excluded:
        by_cat |= {"excluded_step_markers": len(excluded),
                   "events_in_excluded_steps": sum(int(i["events"]) for i in excluded)}
    return DroppedEvents(raw.n_dropped_bad, "; ".join(["bad ts/dur", *steps]), by_cat), warnings
