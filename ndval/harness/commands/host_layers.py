"""Host time per layer from a profile's own repeated op structure (issue 11, ``ndval calibrate``).

A framework runs a model layer by layer, so on the host thread that launches the kernels the
top-level CPU ops (ops not nested in an earlier op of the same thread) repeat with the layer: the
same names in the same order once per layer. :func:`find_repeats` finds, per host thread, the run
of consecutive identical windows of top-level op names that covers the most ops (period 2..16, at
least 3 repetitions, at least two distinct op names). Each repetition is one *layer*: its host
time runs from the start of its first op to the start of the next repetition's first op (the last
one to the end of its last op), and its launches are the kernel launches (``dispatch`` events named
``*LaunchKernel*``) of the same thread inside that window. :func:`host_layers` reports the layer
pattern, the layers found (every run of the pattern on the thread, e.g. one run per step), host µs per
layer and launches per layer (median, p25, p75) and host µs per launch inside layers; it needs no
module annotations, only the host ops of one thread.

What such a "layer" is depends on the profiled model; ``ndval calibrate`` reports it beside the
per-class kernel fit (it is host time, not a device efficiency, so it is not written into the
overlay's ``efficiency``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

MAX_PERIOD = 16
MIN_REPEATS = 3


@dataclass(frozen=True)
class Repeats:
    """``period`` op names repeated ``count`` times from index ``start`` of a name sequence."""

    start: int
    period: int
    count: int

    @property
    def covered(self) -> int:
        return self.period * self.count


def top_level(ops: Sequence[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """Ops ``(name, start µs, end µs)`` of one thread that no earlier op of the thread contains, by start."""
    out: list[tuple[str, float, float]] = []
    end = -np.inf
    for name, t0, t1 in sorted(ops, key=lambda o: (o[1], -o[2])):
        if t0 >= end:
            out.append((name, t0, t1))
            end = t1
    return out


def _run_length(names: Sequence[str], start: int, period: int) -> int:
    """Consecutive copies of ``names[start:start+period]`` from ``start``."""
    pattern = list(names[start:start + period])
    count = 1
    while list(names[start + count * period:start + (count + 1) * period]) == pattern:
        count += 1
    return count


def find_repeats(names: Sequence[str], max_period: int = MAX_PERIOD, min_repeats: int = MIN_REPEATS) -> Repeats | None:
    """The run of consecutive identical windows covering the most names (ties: the shorter period,
    then the earlier start); windows of one distinct name are ignored. None when no window of
    period 2..``max_period`` repeats ``min_repeats`` times."""
    best: Repeats | None = None
    for period in range(2, max_period + 1):
        i = 0
        while i + period * min_repeats <= len(names):
            if len(set(names[i:i + period])) < 2:
                i += 1
                continue
            count = _run_length(names, i, period)
            if count >= min_repeats and (best is None or period * count > best.covered):
                best = Repeats(i, period, count)
            i += period * (count - 1) + 1 if count > 1 else 1
    return best


def all_runs(names: Sequence[str], pattern: Sequence[str], min_repeats: int = MIN_REPEATS) -> list[Repeats]:
    """Every maximal run of ``pattern`` repeated at least ``min_repeats`` times (left to right, not overlapping)."""
    out, period, i = [], len(pattern), 0
    while i + period <= len(names):
        if list(names[i:i + period]) == list(pattern):
            count = _run_length(names, i, period)
            if count >= min_repeats:
                out.append(Repeats(i, period, count))
            i += period * count
        else:
            i += 1
    return out


def _stats(values: Sequence[float]) -> dict[str, float]:
    a = np.asarray(values, float)
    return {"median": float(np.median(a)), "p25": float(np.percentile(a, 25)), "p75": float(np.percentile(a, 75))}


def layer_windows(ops: Sequence[tuple[str, float, float]], rep: Repeats) -> list[tuple[float, float]]:
    """(start, end) µs of each repetition: first op's start to the next repetition's first op's start
    (the last: to the end of its last op)."""
    starts = [ops[rep.start + k * rep.period][1] for k in range(rep.count)]
    last = ops[rep.start + rep.count * rep.period - 1][2]
    return list(zip(starts, [*starts[1:], last], strict=True))


def thread_layers(ops: Sequence[tuple[str, float, float]], launches: Sequence[float]) -> dict[str, Any] | None:
    """The repeated layer of one thread: ``ops`` its host ops, ``launches`` its launch start times (µs).
    The pattern is :func:`find_repeats`' and every run of it (:func:`all_runs`, e.g. one per step) counts;
    None when nothing repeats or the repetitions launch no kernel."""
    top = top_level(ops)
    names = [name for name, _, _ in top]
    rep = find_repeats(names)
    if rep is None:
        return None
    pattern = names[rep.start:rep.start + rep.period]
    runs = all_runs(names, pattern)
    windows = [w for run in runs for w in layer_windows(top, run)]
    t = np.sort(np.asarray(launches, float))
    counts = [int(np.searchsorted(t, b, "left") - np.searchsorted(t, a, "left")) for a, b in windows]
    host = [b - a for a, b in windows]
    per_launch = [h / c for h, c in zip(host, counts, strict=True) if c]
    if not per_launch:  # repeated host work that launches no kernel is not a layer of the model
        return None
    return {"ops": pattern, "layers": len(windows), "runs": len(runs),
            "host_us_per_layer": _stats(host), "launches_per_layer": _stats(counts),
            "host_us_per_launch": _stats(per_launch)}


def host_layers(events: Any) -> list[dict[str, Any]]:
    """Per host thread with a repeated layer (:func:`thread_layers`), its record with ``thread``, the
    threads covering the most host ops first (e.g. the forward thread and the autograd thread)."""
    out: list[dict[str, Any]] = []
    host = events[events["category"] == "host_op"]
    calls = events[(events["category"] == "dispatch") & events["name"].astype(str).str.contains("LaunchKernel")]
    for tid, group in host.groupby("tid"):
        ops = list(zip(group["name"].astype(str), group["ts_us"].astype(float),
                       (group["ts_us"] + group["dur_us"]).astype(float), strict=True))
        found = thread_layers(ops, calls.loc[calls["tid"] == tid, "ts_us"].astype(float).tolist())
        if found:
            out.append({"thread": int(tid), **found})
    return sorted(out, key=lambda r: -len(r["ops"]) * r["layers"])
