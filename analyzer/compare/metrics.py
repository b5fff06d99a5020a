"""Metric table, directions, the comparison rules record and the per-metric change rules (seed §7.1)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from analyzer.compare.sections import MetricRow
from analyzer.thresholds import Thresholds, default_thresholds
from ndval.core import cache

Direction = Literal["lower_better", "higher_better", "background"]

# --------------------------------------------------------------------------------------------
# The numbers of seed §7, read from the ``compare*`` parameters of ``thresholds_default.yaml``
# (value, unit, source, rationale there; overridable like every threshold)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompareRules:
    """The judgement numbers of the comparison (seed §7), one field per ``compare*`` parameter."""

    #: |relative change| below this is "unchanged" (``compareUnchangedPct``, seed §7.1).
    unchanged_pct: float
    #: floor of the per-recommendation threshold (``compareVerdictFloorPct``, seed §7.2).
    verdict_floor_pct: float
    #: share of the expected gain that must be observed (``compareVerdictGainFactor``, seed §7.2).
    verdict_gain_factor: float
    #: step counts differing by more than this ⇒ not comparable (``compareStepCountTolPct``, seed §7.3).
    step_count_tol_pct: float
    #: prefill/decode shares differing by more than this many points ⇒ not comparable (``comparePhaseMixTolPt``).
    phase_mix_tol_pt: float
    #: capture windows differing by more than this ⇒ flagged (``compareWindowTolPct``, seed §7.3).
    window_tol_pct: float
    #: operators listed as saved and as added (``compareTopOperators``, seed §7.4).
    top_operators: int

    @classmethod
    def from_thresholds(cls, th: Thresholds) -> CompareRules:
        """The rules held by a threshold set's parameters."""
        return cls(
            unchanged_pct=th.v("compareUnchangedPct"), verdict_floor_pct=th.v("compareVerdictFloorPct"),
            verdict_gain_factor=th.v("compareVerdictGainFactor"), step_count_tol_pct=th.v("compareStepCountTolPct"),
            phase_mix_tol_pt=th.v("comparePhaseMixTolPt"), window_tol_pct=th.v("compareWindowTolPct"),
            top_operators=int(th.v("compareTopOperators")),
        )


@cache.memoize("analyzer.default_compare_rules", bound=1, key="()", holds="the bundled comparison rules")
def default_rules() -> CompareRules:
    """The rules of ``thresholds_default.yaml``."""
    return CompareRules.from_thresholds(default_thresholds())


VERDICTS = ("achieved", "partially_achieved", "not_achieved", "not_judgeable")


# --------------------------------------------------------------------------------------------
# Metric table (seed §7.1: 23 metrics, each with a direction)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricSpec:
    """One compared metric: id (unit in the name), label, direction, and where it is read from.

    ``aliases`` are the indicator keys tried, in order, in an analysis' indicator table; the
    first present one is used. ``wall_share`` marks percentages whose denominator is wall clock
    (seed §7.1: shortening the wall clock moves them the "wrong" way; that is warned separately).
    """

    id: str
    label: str
    direction: Direction
    aliases: tuple[str, ...] = ()
    wall_share: bool = False


METRICS: tuple[MetricSpec, ...] = (
    # lower is better
    MetricSpec("avg_step_us", "wall clock per step", "lower_better", ("avg_step_us", "step_avg_us", "avg_step_time_us")),
    MetricSpec("window_us", "capture window", "lower_better", ("window_us", "wall_us", "capture_window_us")),
    MetricSpec("device_idle_pct", "device idle share", "lower_better", ("device_idle_pct", "idle_pct"), wall_share=True),
    MetricSpec("host_exclusive_per_step_us", "host-exclusive time per step", "lower_better",
               ("host_exclusive_per_step_us", "host_exclusive_us_per_step")),
    MetricSpec("host_exclusive_pct", "host-exclusive share", "lower_better", ("host_exclusive_pct", "host_only_pct"),
               wall_share=True),
    MetricSpec("host_busy_pct", "host busy share", "lower_better", ("host_busy_pct",), wall_share=True),
    MetricSpec("host_dispatch_us", "host dispatch time", "lower_better", ("host_dispatch_us", "dispatch_us")),
    MetricSpec("dispatch_ops_per_step", "dispatch ops per step", "lower_better",
               ("dispatch_ops_per_step", "dispatch_per_step")),
    MetricSpec("sync_ops_per_step", "sync ops per step", "lower_better", ("sync_ops_per_step", "sync_per_step")),
    MetricSpec("comm_exposed_us", "communication not overlapped", "lower_better",
               ("comm_exposed_us", "comm_not_overlapped_us")),
    MetricSpec("comm_us_per_step", "communication time per step", "lower_better",
               ("comm_us_per_step", "comm_per_step_us")),
    MetricSpec("copy_device_us", "device copy time", "lower_better", ("copy_device_us", "memcpy_us", "device_copy_us")),
    MetricSpec("d2h_per_step_us", "D2H per step", "lower_better", ("d2h_per_step_us", "d2h_us_per_step")),
    MetricSpec("h2d_per_step_us", "H2D per step", "lower_better", ("h2d_per_step_us", "h2d_us_per_step")),
    MetricSpec("compute_us", "device compute time", "lower_better",
               ("compute_us", "computing_us")),
    MetricSpec("idle_gap_mean_us", "mean idle gap", "lower_better", ("idle_gap_mean_us", "idle_gap_avg_us")),
    MetricSpec("idle_gap_count", "idle gap count", "lower_better", ("idle_gap_count", "idle_gaps")),
    # higher is better
    MetricSpec("device_busy_pct", "device busy share", "higher_better", ("device_busy_pct", "busy_pct"),
               wall_share=True),
    MetricSpec("comm_overlap_pct", "comm–compute overlap", "higher_better", ("comm_overlap_pct", "overlap_pct")),
    # background only (no good/bad judgement)
    MetricSpec("compute_pct", "compute share of wall clock", "background",
               ("compute_pct", "compute_share_pct"), wall_share=True),
    MetricSpec("comm_ops_per_step", "communication ops per step", "background",
               ("comm_ops_per_step",)),
    MetricSpec("event_count", "events", "background", ("event_count", "events")),
    MetricSpec("device_op_count", "device operators", "background", ("device_op_count", "device_ops")),
)
METRICS_BY_ID: dict[str, MetricSpec] = {m.id: m for m in METRICS}

#: headline metrics (seed §7.4): step wall, device busy, host exclusive / step, dispatch ops / step.
HEADLINE_METRICS: tuple[str, ...] = ("avg_step_us", "device_busy_pct", "host_exclusive_per_step_us",
                                     "dispatch_ops_per_step")

#: recommendation id (or id prefix ending in ".") -> the metrics it promises to move, primary first
#: (seed §7.2 ``ADVICE_TARGETS``). A recommendation may also carry its own ``target_metrics``; those
#: win. Ids with no entry and no own targets (e.g. "collect more data") are not judgeable.
ADVICE_TARGETS: dict[str, tuple[str, ...]] = {
    "host.enable-graph-mode": ("dispatch_ops_per_step", "host_exclusive_per_step_us", "avg_step_us"),
    "host.remove-sampler-sync": ("sync_ops_per_step", "host_exclusive_per_step_us", "avg_step_us"),
    "host.async-scheduling": ("host_exclusive_per_step_us", "avg_step_us"),
    "host.reduce-launch-gaps": ("idle_gap_mean_us", "device_idle_pct", "avg_step_us"),
    "host.": ("host_exclusive_per_step_us", "avg_step_us"),
    "compute.chunked-prefill": ("avg_step_us",),
    "compute.quantize": ("compute_us", "avg_step_us"),
    "compute.raise-decode-concurrency": ("device_busy_pct",),
    "compute.fuse-small-ops": ("compute_us", "avg_step_us"),
    "compute.": ("compute_us", "avg_step_us"),
    "comm.overlap": ("comm_exposed_us", "comm_overlap_pct", "avg_step_us"),
    "comm.fuse-or-batch": ("comm_us_per_step", "avg_step_us"),
    "comm.parallel-strategy": ("avg_step_us",),
    "comm.": ("comm_exposed_us", "avg_step_us"),
    "copy.async-d2h": ("d2h_per_step_us", "sync_ops_per_step", "avg_step_us"),
    "copy.keep-resident": ("h2d_per_step_us", "avg_step_us"),
    "copy.": ("copy_device_us", "avg_step_us"),
}
#: recommendation ids that are about collecting data, never judgeable by a metric (seed §7.2).
NOT_JUDGEABLE_PREFIXES: tuple[str, ...] = ("collect.", "measure.", "data.", "verify.")

# --------------------------------------------------------------------------------------------
# §7.1 metric directions
# --------------------------------------------------------------------------------------------


def finite_or_none(value: Any) -> float | None:
    """``value`` as a finite float, or ``None`` (missing, NaN, inf, not a number)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def rounded(value: float | None, digits: int = 3) -> float | None:
    """Rounded for the payload; ``-0.0`` becomes ``0.0``."""
    return None if value is None else round(float(value), digits) + 0.0


def relative_change_pct(before: float | None, after: float | None) -> float | None:
    """``(after − before) / |before| × 100``; 0 when both are 0; ``None`` when undefined.

    Undefined when a side is missing, or when ``before`` is 0 and ``after`` is not (seed §7.1
    reports "absolute/relative change": the absolute change is still given by the caller).
    """
    b, a = finite_or_none(before), finite_or_none(after)
    if b is None or a is None:
        return None
    if b == 0.0:
        return 0.0 if a == 0.0 else None
    return (a - b) / abs(b) * 100.0


def improvement_pct(before: float | None, after: float | None, direction: Direction) -> float | None:
    """Relative change folded into the "better" direction (seed §7.2 ``observedPct``).

    lower-better: ``−change``; higher-better: ``+change``; background: ``None`` (no judgement).
    """
    if direction == "background":
        return None
    change = relative_change_pct(before, after)
    if change is None:
        return None
    return -change if direction == "lower_better" else change


def metric_status(before: float | None, after: float | None, direction: Direction,
                  rules: CompareRules | None = None) -> str:
    """``improved`` / ``regressed`` / ``unchanged`` (|change| < ``rules.unchanged_pct``) / ``background`` /
    ``not_available``.

    Seed §7.1. When ``before`` is 0 and ``after`` is not, the relative change is undefined and
    the sign of the absolute change decides.
    """
    b, a = finite_or_none(before), finite_or_none(after)
    if b is None or a is None:
        return "not_available"
    if direction == "background":
        return "background"
    change = relative_change_pct(b, a)
    if change is None:  # before == 0, after != 0
        better = (a < b) if direction == "lower_better" else (a > b)
        return "improved" if better else "regressed"
    if abs(change) < (rules or default_rules()).unchanged_pct:
        return "unchanged"
    gain = -change if direction == "lower_better" else change
    return "improved" if gain > 0 else "regressed"


def compare_metric(spec: MetricSpec, before: float | None, after: float | None,
                   rules: CompareRules | None = None) -> MetricRow:
    """One row of the ``metrics`` section: before, after, absolute / relative change, improvement, status."""
    b, a = finite_or_none(before), finite_or_none(after)
    return {
        "id": spec.id,
        "label": spec.label,
        "direction": spec.direction,
        "before": rounded(b),
        "after": rounded(a),
        "abs_change": rounded(a - b) if a is not None and b is not None else None,
        "rel_change_pct": rounded(relative_change_pct(b, a)),
        "improvement_pct": rounded(improvement_pct(b, a, spec.direction)),
        "status": metric_status(b, a, spec.direction, rules),
    }


def share_reversal_warnings(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Warn about wall-share metrics that moved the "wrong" way while the wall clock shrank.

    Seed §7.1: shares have wall clock as denominator, so a faster run can raise e.g. the
    device-idle share although less idle time was spent; such reversals are flagged, and the
    reader is told to judge by the absolute µs values.
    """
    by_id = {r["id"]: r for r in rows}
    wall = next((by_id[k] for k in ("avg_step_us", "window_us") if by_id.get(k, {}).get("status") == "improved"),
                None)
    if wall is None:
        return []
    out = []
    for row in rows:
        spec = METRICS_BY_ID.get(row["id"])
        if spec is None or not spec.wall_share or row["status"] != "regressed":
            continue
        out.append(
            f"{spec.label} ({spec.id}) moved the wrong way ({row['before']} -> {row['after']}) while "
            f"{wall['label']} improved by {wall['improvement_pct']} %: its denominator is wall clock, "
            f"judge by the absolute µs metrics"
        )
    return out
