"""Seed §6: expected gains — derived from this dataset (with basis and assumption) or empirical ranges.

All gains are fractions of step time, reported in percent. Dataset-derived estimates come with a range
``[LOW_FRACTION × estimate, estimate]`` (seed §6.1 states 60 %–100 % for graph mode; ndval applies the same
conservative lower bound to every derived item and says so). Empirical ranges (seed §6.2) are labelled
"empirical range, not derived from this dataset; measure before relying on it".
Combination (seed §6.3): ``conservative = Σ lows``, ``optimistic = min(cap, Σ estimates)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from analyzer.indicators import IndicatorSet

#: lower bound of a derived range as a fraction of the estimate (seed §6.1 graph mode: 60 %–100 %).
LOW_FRACTION = 0.6
#: seed §6.1 coefficients, each the share of the measured overhead an optimisation is assumed to remove.
GRAPH_MODE_FACTOR, GRAPH_MODE_CAP = 0.75, 0.8
SYNC_REMOVAL_FACTOR = 0.8
COMM_OVERLAP_FACTOR = 0.6
COMM_BATCH_FACTOR = 0.7
D2H_ASYNC_FACTOR = 0.7
CONCURRENCY_BONUS_PCT, CONCURRENCY_CAP_PCT = 15.0, 60.0
#: seed §6.2 empirical ranges, percent of step time: id -> (low, high, note).
EMPIRICAL: dict[str, tuple[float, float, str]] = {
    "quantization": (20.0, 45.0, "depends on model structure and operator coverage"),
    "small-op-fusion": (10.0, 30.0, "depends on fusion coverage"),
    "chunked-prefill": (5.0, 25.0, "measure against the real sequence-length distribution"),
    "parallel-strategy": (5.0, 30.0, "strongly depends on model structure and device count"),
}
EMPIRICAL_NOTE = "empirical range, not derived from this dataset; measure before relying on it"
COMBINE_NOTE = ("optimisations overlap and constrain each other: they do not simply add up; "
                "the optimistic total is capped")


@dataclass(frozen=True)
class Gain:
    """One expected gain, percent of step time."""

    id: str
    estimate_pct: float
    low_pct: float
    high_pct: float
    confidence: str
    derived: bool
    basis: str
    assumption: str

    def to_dict(self) -> dict[str, Any]:
        """Plain data (stable keys)."""
        return {"id": self.id, "estimate_pct": round(self.estimate_pct, 2), "low_pct": round(self.low_pct, 2),
                "high_pct": round(self.high_pct, 2), "confidence": self.confidence, "derived": self.derived,
                "basis": self.basis, "assumption": self.assumption}


def _derived(id_: str, fraction: float, basis: str, assumption: str, confidence: str = "medium") -> Gain:
    pct = 100.0 * max(0.0, fraction)
    return Gain(id_, pct, LOW_FRACTION * pct, pct, confidence, True, basis, assumption)


def graph_mode_fraction(host_exclusive_per_step_us: float, avg_step_us: float) -> float:
    """Seed §6.1: ``min(0.8, 0.75 × hostExclusivePerStepUs / avgStepUs)`` — host-exclusive time graph mode removes."""
    return min(GRAPH_MODE_CAP, GRAPH_MODE_FACTOR * host_exclusive_per_step_us / avg_step_us)


def sync_removal_fraction(host_sync_us: float, step_count: int, avg_step_us: float) -> float:
    """Seed §6.1: ``0.8 × (hostSyncUs / stepCount) / avgStepUs`` — sync overhead moved off the critical path."""
    return SYNC_REMOVAL_FACTOR * (host_sync_us / step_count) / avg_step_us


def comm_overlap_fraction(comm_exposed_us: float, step_count: int, avg_step_us: float) -> float:
    """Seed §6.1: ``0.6 × (commExposedUs / stepCount) / avgStepUs`` — 60 % of exposed comm hidden again."""
    return COMM_OVERLAP_FACTOR * (comm_exposed_us / step_count) / avg_step_us


def comm_batch_fraction(comm_us_per_step: float, avg_step_us: float) -> float:
    """Seed §6.1: ``0.7 × commUsPerStep / avgStepUs`` — fixed per-collective cost amortised."""
    return COMM_BATCH_FACTOR * comm_us_per_step / avg_step_us


def d2h_async_fraction(d2h_per_step_us: float, avg_step_us: float) -> float:
    """Seed §6.1: ``0.7 × d2hPerStepUs / avgStepUs`` — copies and their syncs no longer block."""
    return D2H_ASYNC_FACTOR * d2h_per_step_us / avg_step_us


def concurrency_pct(device_busy_pct: float) -> float:
    """Seed §6.1: ``min(60 %, (100 − deviceBusyPct) + 15 %)`` — decode concurrency on an unsaturated device."""
    return min(CONCURRENCY_CAP_PCT, (100.0 - device_busy_pct) + CONCURRENCY_BONUS_PCT)


def derive(gain_id: str, ind: IndicatorSet) -> Gain | None:
    """The gain ``gain_id`` from a scope's indicators (None when its inputs are unavailable)."""
    v = ind.value
    step, steps = v("avg_step_us"), int(v("step_count") or 0)
    if gain_id in EMPIRICAL:
        lo, hi, note = EMPIRICAL[gain_id]
        return Gain(gain_id, (lo + hi) / 2, lo, hi, "low", False, f"{EMPIRICAL_NOTE}: {note}",
                    "seed §6.2 range; the estimate is its midpoint")
    if gain_id == "concurrency":
        busy = v("device_busy_pct")
        if busy is None:
            return None
        pct = concurrency_pct(busy)
        return Gain(gain_id, pct, LOW_FRACTION * pct, pct, "medium", True,
                    f"device busy {busy:.2f} % ⇒ min(60, (100 − {busy:.2f}) + 15) = {pct:.2f} %",
                    "device not saturated and decode limited by weight reads (seed §6.1)")
    if not step or steps <= 0:
        return None
    return _derive_per_step(gain_id, ind, step, steps)


def _derive_per_step(gain_id: str, ind: IndicatorSet, step: float, steps: int) -> Gain | None:
    v = ind.value
    if gain_id == "graph-mode" and v("host_exclusive_per_step_us") is not None:
        x = v("host_exclusive_per_step_us") or 0.0
        return _derived(gain_id, graph_mode_fraction(x, step),
                        f"host exclusive {x:.1f} us/step of {step:.1f} us/step: min(0.8, 0.75 × {x:.1f} / {step:.1f})",
                        "graph capture removes per-op host dispatch in decode (seed §6.1)")
    if gain_id == "sync-removal" and v("host_sync_us") is not None:
        x = v("host_sync_us") or 0.0
        return _derived(gain_id, sync_removal_fraction(x, steps, step),
                        f"sync-like ops {x:.1f} us over {steps} step(s), step {step:.1f} us: 0.8 × ({x:.1f} / {steps}) / {step:.1f}",
                        "the synchronisation moves off the critical path (seed §6.1)")
    if gain_id == "comm-overlap" and v("comm_exposed_us") is not None:
        x = v("comm_exposed_us") or 0.0
        return _derived(gain_id, comm_overlap_fraction(x, steps, step),
                        f"exposed communication {x:.1f} us over {steps} step(s), step {step:.1f} us: 0.6 × ({x:.1f} / {steps}) / {step:.1f}",
                        "60 % of the exposed communication can be hidden behind compute (seed §6.1)")
    if gain_id == "comm-batch" and v("comm_us_per_step") is not None:
        x = v("comm_us_per_step") or 0.0
        return _derived(gain_id, comm_batch_fraction(x, step),
                        f"communication {x:.1f} us/step of {step:.1f} us/step: 0.7 × {x:.1f} / {step:.1f}",
                        "fixed per-collective cost is amortised by batching / fusing collectives (seed §6.1)")
    if gain_id == "d2h-async" and v("d2h_per_step_us") is not None:
        x = v("d2h_per_step_us") or 0.0
        return _derived(gain_id, d2h_async_fraction(x, step),
                        f"D2H {x:.1f} us/step of {step:.1f} us/step: 0.7 × {x:.1f} / {step:.1f}",
                        "copies and the syncs around them stop blocking the step (seed §6.1)")
    return None


@dataclass(frozen=True)
class CombinedGain:
    """Seed §6.3 combination."""

    conservative_pct: float
    optimistic_pct: float
    cap_pct: float
    items: tuple[str, ...]
    note: str = COMBINE_NOTE

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {"conservative_pct": round(self.conservative_pct, 2), "optimistic_pct": round(self.optimistic_pct, 2),
                "cap_pct": self.cap_pct, "items": list(self.items), "note": self.note}


def combine(gains: Iterable[Gain], cap_pct: float) -> CombinedGain:
    """``conservative = Σ low``, ``optimistic = min(cap, Σ estimate)`` over distinct gain ids (seed §6.3)."""
    unique = {g.id: g for g in gains}
    lows = sum(g.low_pct for g in unique.values())
    est = sum(g.estimate_pct for g in unique.values())
    return CombinedGain(lows, min(cap_pct, est), cap_pct, tuple(sorted(unique)))
