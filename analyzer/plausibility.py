"""Plausibility screen of one rank's event table, run before any verdict.

The readers keep every event whose ``ts``/``dur`` parse as numbers; a damaged or hostile trace can still
hold numbers no profiler writes (a ``ts`` of 1e300, a one-event ``dur`` longer than the capture, a step
marker 30,000 years out, every ``dur`` missing). Analysed as they are, such events decide the verdict
silently. :func:`screen_events` sets them aside, counts them by rule, and the analysis states the count in a
warning; the verdict is then reached on what is plausible, or not at all when nothing is.

Rules (each event is tested against all; the first that fails names it):

- ``start outside the physical range``: absolute start ``base_ts_us + ts_us`` not finite or beyond
  ±2**53 µs (≈ year 2255 in epoch µs; beyond it a float64 µs clock has no µs resolution).
- ``start outside the capture window``: start farther than ``WINDOW_MARGIN`` × (the central 98 % span of
  starts, at least ``MIN_SPAN_US``) from that central span.
- ``duration outside the physical range``: ``dur_us`` not finite, or the event would end more than one
  window span, and more than ``MAX_BLOCKING_US``, after the last plausible start. The allowance keeps what a
  real capture can hold: one step longer than the rest of the capture (a cluster file's single step, a step of
  several seconds among short ones) and a collective blocked on a late peer until its watchdog fires (a hang,
  the very thing a verdict should name), while a ``dur`` no clock can reach is still set aside.
- ``every duration zero``: all complete events have ``dur_us == 0`` (the durations are missing: the
  readers read a missing ``dur`` as 0), so no time can be measured.
- ``step marker out of order``: ``ProfilerStep#N`` markers whose numbers do not increase with their start
  (the markers outside the longest increasing run of step numbers); events assigned to such a step lose
  their step (``step = -1``).

Verdict gate (:func:`no_verdict_reason`): when the plausible share of the trace's complete events (those
kept, over those screened plus those the reader could not parse) is below the threshold
``minPlausibleEventPct`` (``thresholds_default.yaml``), the analysis gives no verdict and says why; at or
above it, the verdict is reached on the plausible events, with the warning naming what was set aside.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analyzer.ingest import events as ev
from ndval.core.units import US_PER_S

#: largest plausible |absolute start| in µs (2**53: the float64 µs clock still has 1 µs resolution).
MAX_ABS_TS_US = float(2**53)
#: a start more than this many central spans away from the central 98 % of starts is outside the capture.
WINDOW_MARGIN = 10.0
#: smallest span used for the window rules (1 s), so tiny synthetic or single-step traces are not cut.
MIN_SPAN_US = 1.0 * US_PER_S
#: longest a device task can block on a peer before the communication library's watchdog ends the job: the
#: default HCCL_EXEC_TIMEOUT, 1836 s (CANN 8.0 environment variable reference, "HCCL_EXEC_TIMEOUT": default
#: 1836 on Atlas training / A2 / A3), above PyTorch's ProcessGroupNCCL default of 10 min and its 30 min
#: default_pg_timeout (torch/distributed/constants.py)
MAX_BLOCKING_US = 1836.0 * US_PER_S
STEP_NUMBER_RE = re.compile(r"ProfilerStep#(\d+)")
#: how a verdict withheld by the plausibility gate begins (its summary and warning)
NO_VERDICT = "no verdict"


@dataclass(frozen=True)
class Screen:
    """What :func:`screen_events` kept and set aside (``set_aside``: rule -> event count)."""

    kept: pd.DataFrame
    set_aside: dict[str, int] = field(default_factory=dict)
    total: int = 0

    @property
    def n_set_aside(self) -> int:
        """Events set aside by every rule together."""
        return sum(self.set_aside.values())

    def warning(self, rank: int, path: str) -> str | None:
        """The warning that names how many events were set aside and why (None when none were)."""
        if not self.n_set_aside:
            return None
        rules = ", ".join(f"{n:,} {rule}" for rule, n in self.set_aside.items())
        tail = ("the verdict is reached on the remaining events only" if len(self.kept)
                else "no plausible event remains: no verdict from the trace")
        return (f"rank {rank}: {path}: implausible trace: set aside {self.n_set_aside:,} of {self.total:,} events "
                f"({rules}); {tail}")


def _abs_starts(ts_us: np.ndarray, base_ts_us: float | int) -> np.ndarray:
    try:
        base = float(base_ts_us)
    except OverflowError:
        base = float("inf")
    with np.errstate(over="ignore", invalid="ignore"):
        return ts_us + base


def _central_window(ts_us: np.ndarray) -> tuple[float, float, float]:
    """(lo, hi, span): the central 98 % of starts and its span (≥ MIN_SPAN_US)."""
    lo, hi = (float(q) for q in np.quantile(ts_us, [0.01, 0.99]))
    return lo, hi, max(hi - lo, MIN_SPAN_US)


def _out_of_order_markers(events: pd.DataFrame, candidates: np.ndarray) -> np.ndarray:
    """Mask of step markers outside the longest strictly increasing run of step numbers (by start)."""
    out = np.zeros(len(events), dtype=bool)
    idx = np.flatnonzero(candidates & (events["category"] == ev.STEP).to_numpy(dtype=bool))
    if len(idx) < 2:
        return out
    order = idx[np.argsort(events["ts_us"].to_numpy()[idx], kind="stable")]
    numbers = [int(m.group(1)) if (m := STEP_NUMBER_RE.search(str(n))) else -1
               for n in events["name"].iloc[order].to_numpy()]
    keep = _longest_increasing(numbers)
    out[[i for k, i in enumerate(order) if k not in keep]] = True
    return out


def _longest_increasing(values: list[int]) -> set[int]:
    """Positions of one longest strictly increasing subsequence of ``values`` (patience sort, O(n log n))."""
    tails: list[int] = []
    tail_pos: list[int] = []
    prev = [-1] * len(values)
    for i, v in enumerate(values):
        k = bisect.bisect_left(tails, v)
        if k == len(tails):
            tails.append(v)
            tail_pos.append(i)
        else:
            tails[k], tail_pos[k] = v, i
        prev[i] = tail_pos[k - 1] if k else -1
    keep, i = set(), tail_pos[-1] if tail_pos else -1
    while i >= 0:
        keep.add(i)
        i = prev[i]
    return keep


def screen_events(events: pd.DataFrame, base_ts_us: float | int) -> Screen:
    """Split ``events`` into plausible rows and counts of the rows set aside per rule (module docstring)."""
    n = len(events)
    if not n:
        return Screen(events, {}, 0)
    ts = events["ts_us"].to_numpy(dtype="float64")
    dur = events["dur_us"].to_numpy(dtype="float64")
    bad = np.zeros(n, dtype=bool)
    counts: dict[str, int] = {}

    def mark(rule: str, mask: np.ndarray) -> None:
        new = mask & ~bad
        if new.any():
            counts[rule] = int(new.sum())
            bad[new] = True

    absolute = _abs_starts(ts, base_ts_us)
    mark("start outside the physical range (|ts| > 2**53 µs or not finite)",
         ~(np.isfinite(absolute) & (np.abs(absolute) <= MAX_ABS_TS_US)))
    if (~bad).any():
        lo, hi, span = _central_window(ts[~bad])
        mark("start outside the capture window", (ts < lo - WINDOW_MARGIN * span) | (ts > hi + WINDOW_MARGIN * span))
    if (~bad).any():
        last = float(ts[~bad].max())
        allowance = max(last - float(ts[~bad].min()), MAX_BLOCKING_US)
        with np.errstate(over="ignore", invalid="ignore"):
            mark("duration outside the physical range (ends past the capture)",
                 ~np.isfinite(dur) | (ts + dur > last + allowance))
    if (~bad).any() and not (dur[~bad] > 0).any():
        mark("with no duration (every dur missing or 0)", ~bad)
    out_of_order = _out_of_order_markers(events, ~bad)
    mark("step marker(s) out of order", out_of_order)
    if not bad.any():
        return Screen(events, {}, n)
    kept = events[~bad]
    dropped_steps = {int(m.group(1)) for name in events["name"].to_numpy()[out_of_order]
                     if (m := STEP_NUMBER_RE.search(str(name)))}
    if dropped_steps:
        kept = kept.copy()
        kept.loc[kept["step"].isin(dropped_steps), "step"] = ev.UNKNOWN_STEP
    return Screen(kept.reset_index(drop=True), counts, n)


def plausible_pct(n_kept: int, n_screened: int, n_unparsed: int) -> float:
    """Plausible share of a trace's complete events, in %: ``100 · kept / (screened + unparsed)``.

    ``screened``: rows of the event table given to :func:`screen_events`; ``unparsed``: events the reader
    dropped for a bad ts/dur (NaN, negative, non-numeric, beyond float range). Events left out by an event
    budget are not implausible and are counted in neither. No event at all: 100 (nothing is implausible)."""
    total = n_screened + n_unparsed
    return 100.0 if total <= 0 else 100.0 * n_kept / total


def no_verdict_reason(n_kept: int, n_screened: int, n_unparsed: int, min_pct: float) -> str | None:
    """Why no verdict may be given (None: the plausible share reaches ``min_pct`` %, the verdict stands on it)."""
    pct = plausible_pct(n_kept, n_screened, n_unparsed)
    if pct >= min_pct:
        return None
    return (f"{NO_VERDICT}: only {pct:.1f} % of the trace's events are plausible ({n_kept:,} of "
            f"{n_screened + n_unparsed:,}), below minPlausibleEventPct {min_pct:g} %: what was set aside could "
            "decide any bottleneck")
