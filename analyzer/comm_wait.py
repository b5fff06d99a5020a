"""Communication that waits: how much of a scope's communication time moves no bytes.

The seed's communication sub-types (§2.3) are latency-bound (short collectives) and bandwidth-bound (large
messages). A collective can also be long because it *waits*: for a peer rank that arrives later (a slow
rank, load imbalance, a host stall before the collective). The wait share is measured, never assumed:

- **Ascend** — ``communication.json`` (or ``analysis.db`` ``CommAnalyzerTime``): per op ``Elapse = Transit +
  Wait + Idle`` (ms; profiling-formats §1.8). Transit moves bytes; Wait is HCCL's notify wait for the peer;
  Idle is the rest of the op's elapse, in which no byte moves either. ``comm_wait_pct`` = 100 · (Wait + Idle)
  / Elapse over the rank's ops. The HCCL ``Notify Wait`` tasks of the trace are summed as a second, event-level
  view (``comm_notify_wait_us``).
- **Kineto** — a collective whose message size is known (NCCL ``In msg nelems`` × dtype, ``bytes``) needs at
  least ``factor × bytes / link bandwidth`` (``commLinkBandwidthGBps``; ``factor`` = the ring algorithm's
  traffic per byte in the limit of many ranks: 2 for all-reduce, 1 otherwise, so the transfer time is an
  upper bound and the wait share a lower bound); the rest of its duration is waiting:
  ``comm_wait_pct`` = 100 · Σ max(0, dur − transfer) / Σ dur. With several ranks, the **arrival skew** of
  each collective (the k-th collective of a type on every rank, absolute start times) says who waits for
  whom: a rank that starts a collective before the last one to arrive waits ``last start − own start`` (at
  most the collective's duration); that measured wait replaces the bandwidth estimate.

Gate: ``commWaitBoundPct`` (``thresholds_default.yaml``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analyzer.indicators import Indicator, IndicatorSet
from analyzer.ingest import events as ev

US_PER_MS = 1000.0
#: traffic per message byte of a ring collective in the limit of many ranks (upper bound of the transfer).
RING_FACTOR: dict[str, float] = {"allreduce": 2.0}
NOTIFY_WAIT = "Notify Wait"


@dataclass(frozen=True)
class Split:
    """Transit / wait / idle of a rank's collectives (µs), as the profiler's communication analysis gives them."""

    transfer_us: float
    wait_us: float
    idle_us: float
    elapse_us: float
    source: str


@dataclass(frozen=True)
class Arrival:
    """Arrival skew of the collectives seen on every rank (Kineto, ≥ 2 ranks; absolute start times)."""

    matched: int
    skew_median_us: float
    skew_max_us: float
    last_arrivals: dict[int, int]
    wait_us: dict[int, float]
    comm_us: dict[int, float]

    @property
    def late_rank(self) -> int:
        """The rank that arrives last most often."""
        return max(sorted(self.last_arrivals), key=lambda r: self.last_arrivals[r])

    def to_dict(self) -> dict[str, Any]:
        """Plain data (stable keys)."""
        return {"matched_collectives": self.matched, "skew_median_us": round(self.skew_median_us, 3),
                "skew_max_us": round(self.skew_max_us, 3), "late_rank": self.late_rank,
                "last_arrivals": {str(k): v for k, v in sorted(self.last_arrivals.items())},
                "wait_us": {str(k): round(v, 3) for k, v in sorted(self.wait_us.items())}}


def _ind(key: str, value: float | None, unit: str, label: str, definition: str, source: str, reason: str = "",
         basis: str = "") -> Indicator:
    return Indicator(key, value, unit, label, definition, source, "comm", reason if value is None else "", basis)


def transfer_us(op_type: str, nbytes: float, link_gbps: float) -> float:
    """Least transfer time of one collective (µs): ``factor × bytes / (link GB/s × 1e3)`` (bytes/µs = 1e-3 GB/s)."""
    return RING_FACTOR.get(op_type, 1.0) * nbytes / (link_gbps * 1e3)


def bandwidth_wait(ops: pd.DataFrame, link_gbps: float) -> tuple[float, float, int] | None:
    """``(wait µs, duration µs, collectives)`` over the collectives of ``ops`` whose bytes are known."""
    b = ops["bytes"].to_numpy(dtype=np.float64)
    ok = np.isfinite(b) & (b > 0)
    if not ok.any() or link_gbps <= 0:
        return None
    dur = ops["dur_us"].to_numpy(dtype=np.float64)[ok]
    need = np.array([transfer_us(str(t), x, link_gbps) for t, x in zip(ops["sub"].to_numpy()[ok], b[ok], strict=True)])
    return float(np.maximum(0.0, dur - need).sum()), float(dur.sum()), int(ok.sum())


def arrival(ranks: Sequence[Any]) -> Arrival | None:
    """Arrival skew over the device collectives of ``ranks`` (``RankData``; ≥ 2 ranks with communication):
    the k-th collective of each type is matched across the ranks that all have the same count of it."""
    per_rank: dict[int, pd.DataFrame] = {}
    for r in ranks:
        ops = ev.comm_ops(r.events)
        ops = ops[(ops["side"] == ev.SIDE_DEVICE).to_numpy()]
        if len(ops):
            per_rank[r.rank] = pd.DataFrame({"sub": ops["sub"].astype(str).to_numpy(),
                                             "start": ops["ts_us"].to_numpy(dtype=np.float64) + float(r.base_ts_us),
                                             "dur": ops["dur_us"].to_numpy(dtype=np.float64)}).sort_values("start")
    if len(per_rank) < 2:
        return None
    ids = sorted(per_rank)
    wait = dict.fromkeys(ids, 0.0)
    comm = {k: float(v["dur"].sum()) for k, v in per_rank.items()}
    last = dict.fromkeys(ids, 0)
    skews: list[float] = []
    for op_type in sorted(set.intersection(*(set(v["sub"]) for v in per_rank.values()))):
        lists = {k: v[v["sub"] == op_type] for k, v in per_rank.items()}
        if len({len(v) for v in lists.values()}) != 1:
            continue  # the ranks did not run the same collectives of this type: not matchable
        starts = np.array([lists[k]["start"].to_numpy() for k in ids])
        durs = np.array([lists[k]["dur"].to_numpy() for k in ids])
        latest = starts.max(axis=0)
        skews.extend((latest - starts.min(axis=0)).tolist())
        for i, k in enumerate(ids):
            wait[k] += float(np.minimum(latest - starts[i], durs[i]).sum())
        for j in np.argmax(starts, axis=0):
            last[ids[int(j)]] += 1
    if not skews:
        return None
    arr = np.array(skews)
    return Arrival(len(skews), float(np.median(arr)), float(arr.max()), last, wait, comm)


def _ascend_rows(split: Split) -> dict[str, Indicator]:
    src = f"{split.source}: Communication Time Info of every op (Elapse = Transit + Wait + Idle)"
    basis = (f"transit {split.transfer_us / US_PER_MS:.3f} ms, wait {split.wait_us / US_PER_MS:.3f} ms, "
             f"idle {split.idle_us / US_PER_MS:.3f} ms of elapse {split.elapse_us / US_PER_MS:.3f} ms")
    pct = 100.0 * (split.wait_us + split.idle_us) / split.elapse_us if split.elapse_us > 0 else None
    return {
        "comm_wait_pct": _ind("comm_wait_pct", pct, "%", "communication time moving no bytes",
                              "(wait + idle) / elapse of the collectives", src, "no collective elapse", basis),
        "comm_transfer_us": _ind("comm_transfer_us", split.transfer_us, "us", "communication transit",
                                 "Σ Transit Time", src, basis=basis),
        "comm_peer_wait_us": _ind("comm_peer_wait_us", split.wait_us, "us", "communication waiting for the peer",
                                  "Σ Wait Time (notify wait)", src, basis=basis),
        "comm_idle_us": _ind("comm_idle_us", split.idle_us, "us", "communication idle",
                             "Σ Idle Time (elapse − transit − wait)", src, basis=basis),
    }


def _kineto_rows(ops: pd.DataFrame, link_gbps: float, rank_arrival: tuple[float, float] | None) -> dict[str, Indicator]:
    if rank_arrival is not None:
        wait, total = rank_arrival
        src = "arrival skew across ranks: Σ min(last rank's start − own start, duration) of the matched collectives"
        pct = 100.0 * wait / total if total > 0 else None
        basis = f"waited {wait:.1f} us of {total:.1f} us of collectives for the last rank to arrive"
        return {"comm_wait_pct": _ind("comm_wait_pct", pct, "%", "communication time moving no bytes",
                                      "time waiting for the last rank / collective time", src, "no collectives", basis),
                "comm_peer_wait_us": _ind("comm_peer_wait_us", wait, "us", "communication waiting for the peer",
                                          "Σ wait for the last rank", src, basis=basis)}
    got = bandwidth_wait(ops, link_gbps)
    src = f"event table: collective duration vs factor × bytes / commLinkBandwidthGBps ({link_gbps:g} GB/s)"
    if got is None:
        why = "no collectives in this scope" if not len(ops) else "collectives carry no message size in their args"
        return {"comm_wait_pct": _ind("comm_wait_pct", None, "%", "communication time moving no bytes",
                                      "(duration − transfer at link bandwidth) / duration", src, why)}
    wait, total, n = got
    basis = f"{n} collectives with a message size: {total:.1f} us, of which {wait:.1f} us beyond their transfer time"
    return {"comm_wait_pct": _ind("comm_wait_pct", 100.0 * wait / total if total > 0 else None, "%",
                                  "communication time moving no bytes", "(duration − transfer at link bandwidth) / duration",
                                  src, "collectives of zero duration", basis),
            "comm_peer_wait_us": _ind("comm_peer_wait_us", wait, "us", "communication beyond its transfer time",
                                      "Σ max(0, duration − transfer)", src, basis=basis)}


def wait_indicators(scoped: pd.DataFrame, split: Split | None, link_gbps: float,
                    rank_arrival: tuple[float, float] | None = None) -> dict[str, Indicator]:
    """The wait indicators of one scope (``scoped``: its events; ``split``: the rank's communication analysis)."""
    dev = scoped[(scoped["side"] == ev.SIDE_DEVICE).to_numpy()] if len(scoped) else scoped
    notify = dev[((dev["category"] == ev.COMMUNICATION) & (dev["name"] == NOTIFY_WAIT)).to_numpy()] if len(dev) else dev
    out = _ascend_rows(split) if split is not None else _kineto_rows(ev.comm_ops(dev) if len(dev) else dev, link_gbps,
                                                                      rank_arrival)
    n_notify = float(notify["dur_us"].sum()) if len(notify) else None
    out["comm_notify_wait_us"] = _ind("comm_notify_wait_us", n_notify, "us", "HCCL Notify Wait tasks",
                                      "Σ duration of the HCCL 'Notify Wait' device tasks", "event table",
                                      "no HCCL Notify Wait tasks in this scope")
    return out


def split_of(comm: Mapping[str, Any] | None) -> Split | None:
    """A :class:`Split` from a ``cluster_comm.CommSplit`` (duck-typed) or None."""
    if comm is None:
        return None
    return Split(comm["transfer_us"], comm["wait_us"], comm["idle_us"], comm["elapse_us"], comm["source"])


def extend(ind: IndicatorSet, extra: Mapping[str, Indicator]) -> IndicatorSet:
    """``ind`` with the ``extra`` indicators added (a new set)."""
    return IndicatorSet(ind.scope, {**ind.table, **extra}, ind.sync_counts, ind.totals_source)
