"""Seed §6: expected gains — derived from this dataset (with basis and assumption) or empirical ranges.

All gains are fractions of step time, reported in percent. Dataset-derived estimates come with a range
``[gainLowFraction × estimate, estimate]`` (seed §6.1 states it for graph mode; ndval applies the same
conservative lower bound to every derived item and says so). The seed §6.1 coefficients are the ``gain*``
parameters of ``thresholds_default.yaml`` (value, unit, source, rationale; overridable like every threshold):
each formula below names its parameters and the basis text quotes the values used. Empirical ranges (seed §6.2) are labelled
"empirical range, not derived from this dataset; measure before relying on it".
Combination (seed §6.3): ``conservative = Σ lows``, ``optimistic = min(cap, Σ estimates)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from analyzer.indicators import IndicatorSet
from analyzer.thresholds import Thresholds, default_thresholds

#: seed §6.2 empirical ranges: id -> (low parameter, high parameter, note); the range, percent of step time,
#: is in ``thresholds_default.yaml``.
EMPIRICAL: dict[str, tuple[str, str, str]] = {
    "quantization": ("empiricalQuantizationLowPct", "empiricalQuantizationHighPct",
                     "depends on model structure and operator coverage"),
    "small-op-fusion": ("empiricalSmallOpFusionLowPct", "empiricalSmallOpFusionHighPct", "depends on fusion coverage"),
    "chunked-prefill": ("empiricalChunkedPrefillLowPct", "empiricalChunkedPrefillHighPct",
                        "measure against the real sequence-length distribution"),
    "parallel-strategy": ("empiricalParallelStrategyLowPct", "empiricalParallelStrategyHighPct",
                          "strongly depends on model structure and device count"),
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


def _derived(id_: str, fraction: float, basis: str, assumption: str, th: Thresholds) -> Gain:
    pct = 100.0 * max(0.0, fraction)
    return Gain(id_, pct, th.v("gainLowFraction") * pct, pct, "medium", True, basis, assumption)


def graph_mode_fraction(host_exclusive_per_step_us: float, avg_step_us: float, th: Thresholds | None = None) -> float:
    """Seed §6.1: ``min(gainGraphModeCap, gainGraphModeFactor × hostExclusivePerStepUs / avgStepUs)`` —
    the host-exclusive time graph mode removes (``th``: parameters, default ``thresholds_default.yaml``)."""
    th = th or default_thresholds()
    return min(th.v("gainGraphModeCap"), th.v("gainGraphModeFactor") * host_exclusive_per_step_us / avg_step_us)


def sync_removal_fraction(host_sync_us: float, step_count: int, avg_step_us: float, th: Thresholds | None = None) -> float:
    """Seed §6.1: ``gainSyncRemovalFactor × (hostSyncUs / stepCount) / avgStepUs`` — sync overhead moved off
    the critical path."""
    th = th or default_thresholds()
    return th.v("gainSyncRemovalFactor") * (host_sync_us / step_count) / avg_step_us


def comm_overlap_fraction(comm_exposed_us: float, step_count: int, avg_step_us: float,
                          th: Thresholds | None = None) -> float:
    """Seed §6.1: ``gainCommOverlapFactor × (commExposedUs / stepCount) / avgStepUs`` — that share of the
    exposed communication hidden again."""
    th = th or default_thresholds()
    return th.v("gainCommOverlapFactor") * (comm_exposed_us / step_count) / avg_step_us


def comm_batch_fraction(comm_us_per_step: float, avg_step_us: float, th: Thresholds | None = None) -> float:
    """Seed §6.1: ``gainCommBatchFactor × commUsPerStep / avgStepUs`` — fixed per-collective cost amortised."""
    th = th or default_thresholds()
    return th.v("gainCommBatchFactor") * comm_us_per_step / avg_step_us


def d2h_async_fraction(d2h_per_step_us: float, avg_step_us: float, th: Thresholds | None = None) -> float:
    """Seed §6.1: ``gainD2hAsyncFactor × d2hPerStepUs / avgStepUs`` — copies and their syncs no longer block."""
    th = th or default_thresholds()
    return th.v("gainD2hAsyncFactor") * d2h_per_step_us / avg_step_us


def concurrency_pct(device_busy_pct: float, th: Thresholds | None = None) -> float:
    """Seed §6.1: ``min(gainConcurrencyCapPct, (100 − deviceBusyPct) + gainConcurrencyBonusPct)`` — decode
    concurrency on an unsaturated device."""
    th = th or default_thresholds()
    return min(th.v("gainConcurrencyCapPct"), (100.0 - device_busy_pct) + th.v("gainConcurrencyBonusPct"))


def derive(gain_id: str, ind: IndicatorSet, th: Thresholds | None = None) -> Gain | None:
    """The gain ``gain_id`` from a scope's indicators (None when its inputs are unavailable); ``th``: the
    parameters (default ``thresholds_default.yaml``)."""
    th = th or default_thresholds()
    v = ind.value
    step, steps = v("avg_step_us"), int(v("step_count") or 0)
    if gain_id in EMPIRICAL:
        low_id, high_id, note = EMPIRICAL[gain_id]
        lo, hi = th.v(low_id), th.v(high_id)
        return Gain(gain_id, (lo + hi) / 2, lo, hi, "low", False, f"{EMPIRICAL_NOTE}: {note}",
                    "seed §6.2 range; the estimate is its midpoint")
    if gain_id == "concurrency":
        busy = v("device_busy_pct")
        if busy is None:
            return None
        pct = concurrency_pct(busy, th)
        cap, bonus = _g(th, "gainConcurrencyCapPct"), _g(th, "gainConcurrencyBonusPct")
        return Gain(gain_id, pct, th.v("gainLowFraction") * pct, pct, "medium", True,
                    f"device busy {busy:.2f} % ⇒ min({cap}, (100 − {busy:.2f}) + {bonus}) = {pct:.2f} %",
                    "device not saturated and decode limited by weight reads (seed §6.1)")
    if not step or steps <= 0:
        return None
    return _derive_per_step(gain_id, ind, step, steps, th)


def _g(th: Thresholds, key: str) -> str:
    """A parameter as quoted in a basis text (``0.75``, ``60``)."""
    return f"{th.v(key):g}"


def _derive_per_step(gain_id: str, ind: IndicatorSet, step: float, steps: int, th: Thresholds) -> Gain | None:
    v = ind.value
    if gain_id == "graph-mode" and v("host_exclusive_per_step_us") is not None:
        x = v("host_exclusive_per_step_us") or 0.0
        cap, k = _g(th, "gainGraphModeCap"), _g(th, "gainGraphModeFactor")
        return _derived(gain_id, graph_mode_fraction(x, step, th),
                        f"host exclusive {x:.1f} us/step of {step:.1f} us/step: min({cap}, {k} × {x:.1f} / {step:.1f})",
                        "graph capture removes per-op host dispatch in decode (seed §6.1)", th)
    if gain_id == "sync-removal" and v("host_sync_us") is not None:
        x, k = v("host_sync_us") or 0.0, _g(th, "gainSyncRemovalFactor")
        return _derived(gain_id, sync_removal_fraction(x, steps, step, th),
                        f"sync-like ops {x:.1f} us over {steps} step(s), step {step:.1f} us: {k} × ({x:.1f} / {steps}) / {step:.1f}",
                        "the synchronisation moves off the critical path (seed §6.1)", th)
    if gain_id == "comm-overlap" and v("comm_exposed_us") is not None:
        x, f = v("comm_exposed_us") or 0.0, th.v("gainCommOverlapFactor")
        return _derived(gain_id, comm_overlap_fraction(x, steps, step, th),
                        f"exposed communication {x:.1f} us over {steps} step(s), step {step:.1f} us: {f:g} × ({x:.1f} / {steps}) / {step:.1f}",
                        f"{100.0 * f:g} % of the exposed communication can be hidden behind compute (seed §6.1)", th)
    if gain_id == "comm-batch" and v("comm_us_per_step") is not None:
        x, k = v("comm_us_per_step") or 0.0, _g(th, "gainCommBatchFactor")
        return _derived(gain_id, comm_batch_fraction(x, step, th),
                        f"communication {x:.1f} us/step of {step:.1f} us/step: {k} × {x:.1f} / {step:.1f}",
                        "fixed per-collective cost is amortised by batching / fusing collectives (seed §6.1)", th)
    if gain_id == "d2h-async" and v("d2h_per_step_us") is not None:
        x, k = v("d2h_per_step_us") or 0.0, _g(th, "gainD2hAsyncFactor")
        return _derived(gain_id, d2h_async_fraction(x, step, th),
                        f"D2H {x:.1f} us/step of {step:.1f} us/step: {k} × {x:.1f} / {step:.1f}",
                        "copies and the syncs around them stop blocking the step (seed §6.1)", th)
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
