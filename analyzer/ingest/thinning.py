"""Event budget of one trace read: keep at most ``max_events`` complete events, in bounded memory.

See :class:`Thinning`; the readers (``ascend.py``, ``kineto.py``) pass one to ``stream.read_trace``.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from analyzer.ingest import events as ev


class EventColumns(Protocol):
    """What a thinning reads and compacts of a streaming buffer (``stream.RawTrace`` is one): the
    per-event columns and the distinct signatures."""

    sig: array[int]
    ts_us: array[float]
    dur_us: array[float]
    corr: array[int]
    bytes: array[float]
    sigs: list[Any]


#: tier of a signature under an event budget: lower = kept first (0 is never dropped).
TierFn = Callable[[Any], np.ndarray]  # called with the reader's own buffer (a stream.RawTrace)


@dataclass
class Thinning:
    """Bounded-memory event budget: keep at most ``max_events`` complete events.

    Every signature has a *tier* (``tier_fn``; lower = needed more by the analysis; tier 0 = step
    markers, never dropped). Events of a tier are thinned by a **stride**: the k-th event of tier t
    (k counted in file order over the whole trace) is kept iff ``k % stride[t] == 0``. Whenever the
    buffer reaches ``cap`` events, or at the end, the lowest-priority tier still holding events has
    its stride doubled (a tier whose stride exceeds its count is dropped whole) until at most
    :attr:`mid_target` (default 2 × ``max_events``; ``cap`` defaults to 3 ×) are kept. Within a tier the survivors are therefore one in ``stride`` of its
    events, evenly spread over the file (trace writers emit each thread/stream in time order). At
    the end the tier being cut keeps exactly what still fits, picked evenly in ``ts`` order, so the
    budget is filled: lower tiers are dropped whole, higher tiers kept whole. Memory stays O(``cap``) rows whatever the trace size (as
    long as the tiers are known, i.e. the process metadata came first; events of a process not yet
    named are kept until it is). ``dropped_by_sig`` counts every dropped event by signature, so
    per-category drop counts are exact.
    """

    max_events: int
    tier_fn: TierFn
    cap: int = 0
    #: the budget was not asked for but derived from the memory this process may use
    #: (``budgets.auto_max_events``).
    auto: bool = False
    stride: dict[int, int] = field(default_factory=dict)
    seen: dict[int, int] = field(default_factory=dict)
    tix: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    done: int = 0
    dropped_by_sig: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    compactions: int = 0
    #: most events ever buffered (the memory bound: never above ``cap``).
    max_buffered: int = 0
    #: tier -> events kept by the final even pick; tier -> events kept in the end.
    picked: dict[int, int] = field(default_factory=dict)
    kept: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.max_events < 0:
            raise ValueError(f"max_events must be >= 0, got {self.max_events}")
        if not self.cap:
            self.cap = max(3 * self.max_events, self.max_events + (1 << 16))

    @property
    def mid_target(self) -> int:
        """Events kept by a compaction while streaming: ``max(max_events, cap − max_events)`` (2×
        the budget by default), so that the tier being cut keeps at least what the final, exact pick
        needs (a power-of-two stride can overshoot by up to 2×) and compactions stay O(1) per event."""
        return max(self.max_events, self.cap - self.max_events)

    @property
    def n_dropped(self) -> int:
        """Events dropped so far."""
        return int(self.dropped_by_sig.sum())

    def compact(self, raw: EventColumns, final: bool = False) -> None:
        """Thin the buffered events of ``raw`` to at most ``max_events`` (in place, see class doc).

        ``final``: the last call (complete metadata): instead of a last stride doubling, the tier
        being cut keeps exactly as many of its survivors as still fit, picked evenly in time
        (evenly spaced in ``ts`` order), so the budget is filled.
        """
        n = len(raw.ts_us)
        self.compactions += 1
        self.max_buffered = max(self.max_buffered, n)
        sig = np.frombuffer(raw.sig, dtype=np.int32).copy() if n else np.empty(0, dtype=np.int32)
        tiers_sig = np.asarray(self.tier_fn(raw), dtype=np.int64)
        tier = tiers_sig[sig] if n else np.empty(0, dtype=np.int64)
        new_tier = tier[self.done:]
        tix_new = np.empty(new_tier.size, dtype=np.int64)
        for t in np.unique(new_tier):
            m = new_tier == t
            cnt = int(m.sum())
            start = self.seen.get(int(t), 0)
            tix_new[m] = np.arange(start, start + cnt, dtype=np.int64)
            self.seen[int(t)] = start + cnt
        tix = np.concatenate([self.tix, tix_new])
        keep = self._keep(tier, tix)
        target = self.max_events if final else self.mid_target
        while int(keep.sum()) > target:
            kept_tiers = [int(t) for t in np.unique(tier[keep]) if t > 0]
            if not kept_tiers:
                break  # only step markers left: the budget cannot be met (reported by the caller)
            t = max(kept_tiers)
            in_t = keep & (tier == t)
            room = target - int(keep.sum()) + int(in_t.sum())
            if final and room > 0:
                rows = np.flatnonzero(in_t)
                ts = np.frombuffer(raw.ts_us, dtype=np.float64)[rows]
                by_time = rows[np.argsort(ts, kind="stable")]
                picked = by_time[ev.sorted_unique(np.linspace(0, rows.size - 1, room).round().astype(np.int64))]
                keep[rows] = False
                keep[picked] = True
                self.picked[t] = int(picked.size)
                break
            stride = self.stride.get(t, 1) * 2
            self.stride[t] = 0 if stride > self.seen.get(t, 0) or room <= 0 else stride  # 0: dropped whole
            keep = self._keep(tier, tix)
        if len(self.dropped_by_sig) < len(raw.sigs):
            self.dropped_by_sig = np.concatenate(
                [self.dropped_by_sig, np.zeros(len(raw.sigs) - len(self.dropped_by_sig), dtype=np.int64)])
        if not keep.all():
            self.dropped_by_sig += np.bincount(sig[~keep], minlength=len(raw.sigs))
            for name, dtype in (("sig", np.int32), ("ts_us", np.float64), ("dur_us", np.float64),
                                ("corr", np.int64), ("bytes", np.float64)):
                buf: array[Any] = getattr(raw, name)
                kept = np.frombuffer(buf, dtype=dtype)[keep].tobytes() if n else b""
                del buf[:]
                buf.frombytes(kept)
        self.tix = tix[keep]
        self.done = len(raw.ts_us)
        if final:
            final_tiers, counts = np.unique(tier[keep], return_counts=True)
            self.kept = {int(t): int(c) for t, c in zip(final_tiers, counts, strict=True)}

    def summary(self, names: dict[int, str]) -> list[str]:
        """``"<tier>: kept k of n"`` for every tier that lost events (after the final compaction)."""
        out = []
        for t in sorted(self.seen):
            seen, kept = self.seen[t], self.kept.get(t, 0)
            if kept < seen:
                out.append(f"{names.get(t, str(t))} kept {kept:,} of {seen:,}" if kept else
                           f"{names.get(t, str(t))} dropped ({seen:,})")
        return out

    def _keep(self, tier: np.ndarray, tix: np.ndarray) -> np.ndarray:
        """Rows kept under the current strides (stride 0 = tier dropped; tier 0 always kept)."""
        if not tier.size:
            return np.ones(0, dtype=bool)
        top = int(tier.max()) + 1
        strides = np.ones(top, dtype=np.int64)
        for t, s in self.stride.items():
            if t < top:
                strides[t] = s
        st = strides[tier]
        keep = np.zeros(tier.size, dtype=bool)
        live = st > 0
        keep[live] = (tix[live] % st[live]) == 0
        keep[tier == 0] = True
        return keep
