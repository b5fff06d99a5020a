"""Before/after comparison of two analyses (seed §7, spec ``analyzer.md`` §4).

Both sides must have gone through the same parsing, thresholds and scoring; this module only
compares numbers. It is built in two layers:

1. **Rules over plain data** — small pure functions: metric directions and the < 1 % "unchanged"
   band (seed §7.1), the per-recommendation verdict with ``threshold = max(1 %, expected gain × 0.5)``
   (seed §7.2), the comparability checks (seed §7.3 plus the spec's hardware / world size / rank
   flags), and the operator / category rankings (seed §7.4). They take a :class:`SideSummary`, a
   plain record that any analysis can be reduced to.
2. **Wiring** — :func:`side_from_analysis` reduces an ``analyzer.analysis.Analysis`` (with its
   ``Dataset`` when given) to a :class:`SideSummary`; :func:`compare` builds the :class:`Comparison`
   with the output sections *sides, headline, metrics, categories, operators, bottleneck,
   recommendations, comparability, warnings*; :func:`render_markdown` / :func:`render_html` render it.
"""

from __future__ import annotations

import html
import json
import math
import re
import sys
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from ndcore import render

Direction = Literal["lower_better", "higher_better", "background"]

# --------------------------------------------------------------------------------------------
# Constants of seed §7 (each with its rationale; the numbers appear nowhere else in this module)
# --------------------------------------------------------------------------------------------

#: |relative change| below this is "unchanged" (seed §7.1: "变化幅度 <1% 记作未变化").
UNCHANGED_PCT = 1.0
#: floor of the per-recommendation threshold (seed §7.2: ``thresholdPct = max(1%, gain × 0.5)``).
VERDICT_FLOOR_PCT = 1.0
#: share of the expected gain that must be observed to call a recommendation achieved (seed §7.2).
VERDICT_GAIN_FACTOR = 0.5
#: step counts differing by more than this (relative to the larger side) ⇒ not comparable (seed §7.3).
STEP_COUNT_TOL_PCT = 15.0
#: prefill/decode wall-clock shares differing by more than this many points ⇒ not comparable (seed §7.3).
PHASE_MIX_TOL_PT = 10.0
#: capture windows differing by more than this (relative to the larger side) ⇒ flagged (seed §7.3).
WINDOW_TOL_PCT = 20.0
#: how many operators to list as saved and as added (seed §7.4: "节省最多的 8 个 + 增加最多的 8 个").
TOP_OPERATORS = 8

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
# Plain data
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OperatorTotal:
    """Total device time and call count of one operator name on one side."""

    total_us: float
    count: int

    @property
    def mean_us(self) -> float | None:
        return self.total_us / self.count if self.count else None


@dataclass(frozen=True)
class RecommendationRef:
    """What the comparison needs of one recommendation: id, expected gain and target metrics."""

    id: str
    title: str = ""
    expected_gain_pct: float | None = None
    target_metrics: tuple[str, ...] = ()


@dataclass
class SideSummary:
    """Everything the comparison reads from one analysis — plain values, no pandas.

    ``metrics`` maps metric ids of :data:`METRICS` to values (``None`` = not available);
    ``categories_us`` is device time per event category; ``phase_shares_pct`` the wall-clock
    share of each phase (``prefill``/``decode``) when known; ``files`` the set of artefact kinds
    found (rank suffixes removed); ``sampled`` whether events were sampled or dropped.
    """

    label: str
    source_format: str | None = None
    metrics: dict[str, float | None] = field(default_factory=dict)
    categories_us: dict[str, float] = field(default_factory=dict)
    operators: dict[str, OperatorTotal] = field(default_factory=dict)
    bottleneck: str | None = None
    scores: dict[str, float] = field(default_factory=dict)
    recommendations: list[RecommendationRef] = field(default_factory=list)
    step_count: int | None = None
    window_us: float | None = None
    phase_shares_pct: dict[str, float] = field(default_factory=dict)
    phase_override: str | None = None
    sampled: bool = False
    sampling_note: str = ""
    files: frozenset[str] | None = None
    totals_source: str | None = None
    device_names: tuple[str, ...] = ()
    world_size: int | None = None
    ranks: tuple[int, ...] = ()
    event_count: int | None = None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The ``sides`` section entry (seed §7.4)."""
        return {
            "label": self.label,
            "source_format": self.source_format,
            "event_count": self.event_count,
            "window_us": _round(self.window_us),
            "step_count": self.step_count,
            "bottleneck": self.bottleneck,
            "totals_source": self.totals_source,
            "phase_override": self.phase_override,
            "phase_shares_pct": {k: _round(v) for k, v in sorted(self.phase_shares_pct.items())},
            "sampled": self.sampled,
            "files": sorted(self.files) if self.files is not None else None,
            "device_names": list(self.device_names),
            "world_size": self.world_size,
            "ranks": list(self.ranks),
        }


# --------------------------------------------------------------------------------------------
# §7.1 metric directions
# --------------------------------------------------------------------------------------------


def _finite(value: Any) -> float | None:
    """``value`` as a finite float, or ``None`` (missing, NaN, inf, not a number)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _round(value: float | None, digits: int = 3) -> float | None:
    """Rounded for the payload; ``-0.0`` becomes ``0.0``."""
    return None if value is None else round(float(value), digits) + 0.0


def relative_change_pct(before: float | None, after: float | None) -> float | None:
    """``(after − before) / |before| × 100``; 0 when both are 0; ``None`` when undefined.

    Undefined when a side is missing, or when ``before`` is 0 and ``after`` is not (seed §7.1
    reports "absolute/relative change": the absolute change is still given by the caller).
    """
    b, a = _finite(before), _finite(after)
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


def metric_status(before: float | None, after: float | None, direction: Direction) -> str:
    """``improved`` / ``regressed`` / ``unchanged`` (|change| < 1 %) / ``background`` / ``not_available``.

    Seed §7.1. When ``before`` is 0 and ``after`` is not, the relative change is undefined and
    the sign of the absolute change decides.
    """
    b, a = _finite(before), _finite(after)
    if b is None or a is None:
        return "not_available"
    if direction == "background":
        return "background"
    change = relative_change_pct(b, a)
    if change is None:  # before == 0, after != 0
        better = (a < b) if direction == "lower_better" else (a > b)
        return "improved" if better else "regressed"
    if abs(change) < UNCHANGED_PCT:
        return "unchanged"
    gain = -change if direction == "lower_better" else change
    return "improved" if gain > 0 else "regressed"


def compare_metric(spec: MetricSpec, before: float | None, after: float | None) -> dict[str, Any]:
    """One row of the ``metrics`` section: before, after, absolute / relative change, improvement, status."""
    b, a = _finite(before), _finite(after)
    return {
        "id": spec.id,
        "label": spec.label,
        "direction": spec.direction,
        "before": _round(b),
        "after": _round(a),
        "abs_change": _round(a - b) if a is not None and b is not None else None,
        "rel_change_pct": _round(relative_change_pct(b, a)),
        "improvement_pct": _round(improvement_pct(b, a, spec.direction)),
        "status": metric_status(b, a, spec.direction),
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


# --------------------------------------------------------------------------------------------
# §7.2 recommendation verdicts
# --------------------------------------------------------------------------------------------


def verdict_threshold_pct(expected_gain_pct: float | None) -> float:
    """``threshold = max(1 %, expected gain × 0.5)`` (seed §7.2); a missing gain counts as 0."""
    gain = _finite(expected_gain_pct) or 0.0
    return max(VERDICT_FLOOR_PCT, gain * VERDICT_GAIN_FACTOR)


def recommendation_verdict(observed_pct: float | None, threshold_pct: float) -> str:
    """Seed §7.2: observed ≥ threshold → achieved; 0 < observed < threshold → partially achieved;
    observed ≤ 0 → not achieved; no observable target metric → not judgeable."""
    if observed_pct is None:
        return "not_judgeable"
    if observed_pct >= threshold_pct:
        return "achieved"
    if observed_pct > 0:
        return "partially_achieved"
    return "not_achieved"


def targets_for(rec: RecommendationRef) -> tuple[str, ...]:
    """Target metrics of a recommendation: its own ``target_metrics``, else :data:`ADVICE_TARGETS`
    by exact id, else by the longest matching id prefix; data-collection advice has none."""
    if rec.target_metrics:
        return tuple(rec.target_metrics)
    if rec.id.startswith(NOT_JUDGEABLE_PREFIXES):
        return ()
    if rec.id in ADVICE_TARGETS:
        return ADVICE_TARGETS[rec.id]
    prefixes = [p for p in ADVICE_TARGETS if p.endswith(".") and rec.id.startswith(p)]
    return ADVICE_TARGETS[max(prefixes, key=len)] if prefixes else ()


def judge_recommendation(rec: RecommendationRef, before: Mapping[str, float | None],
                         after: Mapping[str, float | None], still_listed: bool) -> dict[str, Any]:
    """One row of the ``recommendations`` section (seed §7.2).

    ``observed_pct`` is the improvement of the **primary** target (the first target metric that is
    available on both sides and has a direction); every target's improvement is listed too. The
    threshold is written into the row so no reader has to guess what counts as achieved.
    """
    targets = targets_for(rec)
    threshold = verdict_threshold_pct(rec.expected_gain_pct)
    per_target = []
    primary: str | None = None
    observed: float | None = None
    for metric_id in targets:
        spec = METRICS_BY_ID.get(metric_id)
        direction: Direction = spec.direction if spec else "lower_better"
        imp = improvement_pct(before.get(metric_id), after.get(metric_id), direction)
        per_target.append({"metric": metric_id, "improvement_pct": _round(imp)})
        if primary is None and imp is not None:
            primary, observed = metric_id, imp
    verdict = recommendation_verdict(observed, threshold)
    if not targets:
        reason = "no target metric declared for this recommendation"
    elif observed is None:
        reason = f"none of the target metrics {list(targets)} is available on both sides"
    else:
        reason = (f"{primary} improved by {observed:.2f} % against a threshold of {threshold:.2f} % "
                  f"(max({VERDICT_FLOOR_PCT:g} %, expected gain × {VERDICT_GAIN_FACTOR:g}))")
    return {
        "id": rec.id,
        "title": rec.title,
        "verdict": verdict,
        "target_metrics": list(targets),
        "primary_metric": primary,
        "observed_improvement_pct": _round(observed),
        "expected_gain_pct": _round(_finite(rec.expected_gain_pct)),
        "threshold_pct": _round(threshold),
        "threshold_rule": f"max({VERDICT_FLOOR_PCT:g} %, expected_gain_pct × {VERDICT_GAIN_FACTOR:g})",
        "targets": per_target,
        "still_listed_after": still_listed,
        "reason": reason,
    }


# --------------------------------------------------------------------------------------------
# §7.3 comparability checks
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One comparability check: whether it fired, whether it blocks comparability, and why."""

    id: str
    triggered: bool
    blocking: bool
    reason: str
    before: Any = None
    after: Any = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _rel_diff_pct(a: float, b: float) -> float:
    """``|a − b| / max(|a|, |b|) × 100`` — symmetric, so swapping the sides gives the same answer."""
    denom = max(abs(a), abs(b))
    return 0.0 if denom == 0 else abs(a - b) / denom * 100.0


def _relative_check(check_id: str, what: str, before: float | None, after: float | None, tol_pct: float,
                    blocking: bool, unit: str = "") -> Check:
    """Fires when ``|a − b| / max(|a|, |b|) × 100 > tol_pct`` (symmetric); a side unknown ⇒ not checked.

    Reasons read ``<what>s <b> vs <a> differ by <d> % (> tol %)`` with values rounded to integers.
    """
    b, a = _finite(before), _finite(after)
    if b is None or a is None:
        return Check(check_id, False, blocking, f"{what} unknown on a side; not checked", before, after)
    diff = _rel_diff_pct(b, a)
    fired = diff > tol_pct
    return Check(check_id, fired, blocking,
                 f"{what}s {b:.0f}{unit} vs {a:.0f}{unit} differ by {diff:.1f} % "
                 f"({'>' if fired else '≤'} {tol_pct:g} %)", before, after)


def check_step_count(before: int | None, after: int | None) -> Check:
    """Seed §7.3: step counts differing by > 15 % (of the larger side) ⇒ not comparable (window and
    share metrics lose comparability even though per-step metrics are normalised)."""
    return _relative_check("step_count", "step count", before, after, STEP_COUNT_TOL_PCT, blocking=True)


def check_phase_mix(before: Mapping[str, float], after: Mapping[str, float]) -> Check:
    """Seed §7.3: the prefill/decode wall-clock shares differ by > 10 points ⇒ not comparable
    (an "improvement" may only be a different workload mix)."""
    phases = sorted(set(before) | set(after))
    if not phases:
        return Check("phase_mix", False, True, "no phase split on either side; not checked", {}, {})
    diffs = {p: abs(float(before.get(p, 0.0)) - float(after.get(p, 0.0))) for p in phases}
    worst = max(diffs, key=lambda p: diffs[p])
    fired = diffs[worst] > PHASE_MIX_TOL_PT
    return Check("phase_mix", fired, True,
                 f"largest phase share change: {worst} {diffs[worst]:.1f} pt "
                 f"({'>' if fired else '≤'} {PHASE_MIX_TOL_PT:g} pt)", dict(before), dict(after))


def check_phase_override(before: str | None, after: str | None) -> Check:
    """Seed §7.3: the two sides were analysed under different phase overrides ⇒ not comparable."""
    fired = before != after
    reason = (f"phase override differs: {before!r} vs {after!r}" if fired
              else f"same phase override ({before!r})")
    return Check("phase_override", fired, True, reason, before, after)


def check_sampling(before: bool, after: bool, before_note: str = "", after_note: str = "") -> Check:
    """Seed §7.3: either side's trace was sampled (or events dropped) ⇒ not comparable (totals come
    from a different source and the timeline fidelity differs)."""
    fired = bool(before or after)
    if fired:
        which = [n for n, s, note in (("before", before, before_note), ("after", after, after_note)) if s]
        notes = "; ".join(f"{n}: {note}" for n, s, note in (("before", before, before_note),
                                                              ("after", after, after_note)) if s and note)
        reason = f"sampled/dropped events on {' and '.join(which)}" + (f" ({notes})" if notes else "")
    else:
        reason = "no side sampled"
    return Check("sampling", fired, True, reason, before, after)


def check_file_set(before: frozenset[str] | None, after: frozenset[str] | None,
                   before_format: str | None = None, after_format: str | None = None) -> Check:
    """Seed §7.3: the two sides hold different artefact sets ⇒ not comparable (a missing table
    makes its indicators incomparable). Different source formats (Ascend export vs Kineto trace)
    are different artefact sets by definition and say so."""
    if before_format and after_format and before_format != after_format:
        return Check("file_set", True, True,
                     f"different source formats ({before_format} vs {after_format}): different artefact sets "
                     f"({', '.join(sorted(before or ())) or '?'} vs {', '.join(sorted(after or ())) or '?'})",
                     sorted(before or ()), sorted(after or ()))
    if before is None or after is None:
        return Check("file_set", False, True, "file set unknown on a side; not checked",
                     sorted(before or ()), sorted(after or ()))
    if before == after:
        return Check("file_set", False, True, f"same {len(before)} artefacts", sorted(before), sorted(after))
    only_b, only_a = sorted(before - after), sorted(after - before)
    parts = []
    if only_b:
        parts.append(f"only before: {', '.join(only_b)}")
    if only_a:
        parts.append(f"only after: {', '.join(only_a)}")
    return Check("file_set", True, True, "different artefact sets (" + "; ".join(parts) + ")",
                 sorted(before), sorted(after))


def check_totals_source(before: str | None, after: str | None) -> Check:
    """Seed §7.3: totals come from different sources (trace vs CANN statistics tables) ⇒ not comparable."""
    fired = before != after
    reason = (f"totals source differs: {before!r} vs {after!r}" if fired
              else f"same totals source ({before!r})")
    return Check("totals_source", fired, True, reason, before, after)


def check_bottleneck(before: str | None, after: str | None) -> Check:
    """Seed §7.3 (flag only): the dominant bottleneck kind changed — the optimisation may have moved
    the bottleneck, or the workload changed; confirm the capture conditions."""
    fired = before != after
    reason = (f"dominant bottleneck changed: {before or 'none'} -> {after or 'none'}" if fired
              else f"same dominant bottleneck ({before or 'none'})")
    return Check("bottleneck_change", fired, False, reason, before, after)


def check_window(before: float | None, after: float | None) -> Check:
    """Seed §7.3 (flag only): capture windows differ by > 20 % — share metrics change denominator,
    judge by absolute µs."""
    return _relative_check("window", "capture window", before, after, WINDOW_TOL_PCT, blocking=False, unit=" µs")


def _set_flag(check_id: str, what: str, before: Iterable[Any], after: Iterable[Any],
              show: Any = str, blocking: bool = False) -> Check:
    """A check on two sets (spec §4): fires when both are known and differ (``blocking`` as given).

    Reasons read ``different <what>: <before> vs <after>`` / ``same <what> (<before>)``; ``show``
    formats one sorted list.
    """
    b, a = sorted(set(before)), sorted(set(after))
    if not b or not a:
        return Check(check_id, False, False, f"{what} unknown on a side; not checked", b, a)
    fired = b != a
    reason = f"different {what}: {show(b)} vs {show(a)}" if fired else f"same {what} ({show(b)})"
    return Check(check_id, fired, blocking, reason, b, a)


def check_hardware(before: Sequence[str], after: Sequence[str]) -> Check:
    """Spec §4: the sides were captured on different device models (Kineto ``deviceProperties[].name``,
    Ascend ``profiler_info`` / trace metadata). Blocking: a before/after change across hardware is not
    the effect of an optimisation (HTA's TraceDiff pair, A100 vs V100, must read "not comparable")."""
    return _set_flag("hardware", "hardware", before, after, show=", ".join, blocking=True)


def check_world_size(before: int | None, after: int | None) -> Check:
    """Spec §4: different world sizes (Kineto ``distributedInfo.world_size``, Ascend communication
    groups / rank count). Blocking: another world size is another workload (communication volume and
    per-rank work change), not an optimisation of the same one."""
    if before is None or after is None:
        return Check("world_size", False, True, "world size unknown on a side; not checked", before, after)
    fired = before != after
    reason = f"different world size: {before} vs {after}" if fired else f"same world size ({before})"
    return Check("world_size", fired, True, reason, before, after)


def check_rank(before: Sequence[int], after: Sequence[int]) -> Check:
    """Spec §4 (flag only): the sides are different ranks (fine for a rank-vs-rank comparison of one
    run; worth knowing for a before/after claim)."""
    return _set_flag("rank", "ranks", before, after)


def comparability_checks(before: SideSummary, after: SideSummary) -> list[Check]:
    """Every check of seed §7.3 in its order (the first six block), then the spec's hardware and
    world-size checks (blocking) and the rank flag."""
    return [
        check_step_count(before.step_count, after.step_count),
        check_phase_mix(before.phase_shares_pct, after.phase_shares_pct),
        check_phase_override(before.phase_override, after.phase_override),
        check_sampling(before.sampled, after.sampled, before.sampling_note, after.sampling_note),
        check_file_set(before.files, after.files, before.source_format, after.source_format),
        check_totals_source(before.totals_source, after.totals_source),
        check_bottleneck(before.bottleneck, after.bottleneck),
        check_window(before.window_us, after.window_us),
        check_hardware(before.device_names, after.device_names),
        check_world_size(before.world_size, after.world_size),
        check_rank(before.ranks, after.ranks),
    ]


def comparability_summary(checks: Sequence[Check]) -> dict[str, Any]:
    """``comparable`` = no blocking check fired; ``level`` = ``comparable`` / ``comparable_with_caveats``
    / ``not_comparable``; ``reasons`` = every fired check's reason (blocking ones first)."""
    blocking = [c for c in checks if c.triggered and c.blocking]
    flags = [c for c in checks if c.triggered and not c.blocking]
    comparable = not blocking
    level = "not_comparable" if blocking else ("comparable_with_caveats" if flags else "comparable")
    return {
        "comparable": comparable,
        "level": level,
        "reasons": [f"{c.id}: {c.reason}" for c in blocking + flags],
        "blocking": [c.id for c in blocking],
        "flags": [c.id for c in flags],
        "checks": [c.to_dict() for c in checks],
    }


# --------------------------------------------------------------------------------------------
# §7.4 categories, operators, bottleneck
# --------------------------------------------------------------------------------------------


def category_changes(before: Mapping[str, float], after: Mapping[str, float]) -> list[dict[str, Any]]:
    """Per category: µs before/after, share of the side's category total before/after, absolute
    change; sorted by |change| descending (seed §7.4)."""
    total_b = sum(before.values()) or 0.0
    total_a = sum(after.values()) or 0.0
    rows = []
    for cat in sorted(set(before) | set(after)):
        b, a = float(before.get(cat, 0.0)), float(after.get(cat, 0.0))
        rows.append({
            "category": cat,
            "before_us": _round(b),
            "after_us": _round(a),
            "before_share_pct": _round(b / total_b * 100.0) if total_b else None,
            "after_share_pct": _round(a / total_a * 100.0) if total_a else None,
            "abs_change_us": _round(a - b),
            "rel_change_pct": _round(relative_change_pct(b, a)),
        })
    rows.sort(key=lambda r: (-abs(r["abs_change_us"]), r["category"]))
    return rows


def operator_changes(before: Mapping[str, OperatorTotal], after: Mapping[str, OperatorTotal],
                     top_n: int = TOP_OPERATORS) -> dict[str, list[dict[str, Any]]]:
    """The ``top_n`` operators that saved the most device time and the ``top_n`` that added the most,
    each with totals, counts and means on both sides (seed §7.4). Ties are broken by name."""
    empty = OperatorTotal(0.0, 0)
    rows = []
    for name in set(before) | set(after):
        b, a = before.get(name, empty), after.get(name, empty)
        rows.append({
            "name": name,
            "before_total_us": _round(b.total_us),
            "after_total_us": _round(a.total_us),
            "delta_us": _round(a.total_us - b.total_us),
            "before_count": b.count,
            "after_count": a.count,
            "before_mean_us": _round(b.mean_us),
            "after_mean_us": _round(a.mean_us),
        })
    saved = sorted((r for r in rows if r["delta_us"] < 0), key=lambda r: (r["delta_us"], r["name"]))[:top_n]
    added = sorted((r for r in rows if r["delta_us"] > 0), key=lambda r: (-r["delta_us"], r["name"]))[:top_n]
    return {"saved": saved, "added": added}


def bottleneck_change(before: SideSummary, after: SideSummary) -> dict[str, Any]:
    """Whether the dominant bottleneck changed and how each candidate's score moved (seed §7.4)."""
    kinds = sorted(set(before.scores) | set(after.scores))
    scores = []
    for k in kinds:
        b, a = _finite(before.scores.get(k)), _finite(after.scores.get(k))
        scores.append({"kind": k, "before": _round(b), "after": _round(a),
                       "delta": _round(a - b) if a is not None and b is not None else None})
    return {"before": before.bottleneck, "after": after.bottleneck,
            "changed": before.bottleneck != after.bottleneck, "scores": scores}


# --------------------------------------------------------------------------------------------
# The comparison
# --------------------------------------------------------------------------------------------


@dataclass
class Comparison:
    """A before/after comparison; ``to_dict()`` gives the seed §7.4 sections with stable names."""

    sides: dict[str, dict[str, Any]]
    headline: dict[str, Any]
    metrics: list[dict[str, Any]]
    categories: list[dict[str, Any]]
    operators: dict[str, list[dict[str, Any]]]
    bottleneck: dict[str, Any]
    recommendations: list[dict[str, Any]]
    comparability: dict[str, Any]
    warnings: list[str]

    @property
    def comparable(self) -> bool:
        return bool(self.comparability["comparable"])

    def verdict_of(self, recommendation_id: str) -> str | None:
        """The verdict of one recommendation, or ``None`` when it was not in the before analysis."""
        for row in self.recommendations:
            if row["id"] == recommendation_id:
                return row["verdict"]
        return None

    def metric(self, metric_id: str) -> dict[str, Any] | None:
        for row in self.metrics:
            if row["id"] == metric_id:
                return row
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "sides": self.sides,
            "headline": self.headline,
            "metrics": self.metrics,
            "categories": self.categories,
            "operators": self.operators,
            "bottleneck": self.bottleneck,
            "recommendations": self.recommendations,
            "comparability": self.comparability,
            "warnings": self.warnings,
        }

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, default=str)


def _headline(metrics: Sequence[Mapping[str, Any]], comparability: Mapping[str, Any],
              bottleneck: Mapping[str, Any], recs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The conclusion sentence plus the four headline metrics before/after (seed §7.4)."""
    by_id = {r["id"]: r for r in metrics}
    values = {m: {k: by_id[m][k] for k in ("before", "after", "improvement_pct", "status")}
              for m in HEADLINE_METRICS if m in by_id}
    step = by_id.get("avg_step_us")
    if step is None or step["status"] == "not_available":
        step = by_id.get("window_us")
    parts: list[str] = []
    if step and step["status"] != "not_available":
        if step["status"] == "unchanged":
            parts.append(f"{step['label']} unchanged ({step['before']} -> {step['after']} µs)")
        else:
            parts.append(f"{step['label']} {step['status']} by {abs(step['improvement_pct'] or 0):.1f} % "
                         f"({step['before']} -> {step['after']} µs)")
    else:
        parts.append("wall clock not comparable (not available on both sides)")
    if bottleneck["changed"]:
        parts.append(f"bottleneck {bottleneck['before'] or 'none'} -> {bottleneck['after'] or 'none'}")
    else:
        parts.append(f"bottleneck still {bottleneck['before'] or 'none'}")
    if recs:
        counts = {v: sum(1 for r in recs if r["verdict"] == v) for v in VERDICTS}
        parts.append("recommendations: " + ", ".join(f"{n} {v.replace('_', ' ')}" for v, n in counts.items() if n))
    if comparability["comparable"]:
        if comparability["flags"]:
            parts.append("comparable with caveats (" + ", ".join(comparability["flags"]) + ")")
    else:
        parts.append("NOT COMPARABLE (" + ", ".join(comparability["blocking"]) + "): "
                     "differences may be a different workload, not an optimisation")
    return {"sentence": "; ".join(parts) + ".", "comparable": comparability["comparable"], "values": values}


def compare_sides(before: SideSummary, after: SideSummary) -> Comparison:
    """Compare two :class:`SideSummary` records (seed §7): every rule of this module, one payload."""
    metric_rows = [compare_metric(spec, before.metrics.get(spec.id), after.metrics.get(spec.id))
                   for spec in METRICS]
    after_ids = {r.id for r in after.recommendations}
    rec_rows = [judge_recommendation(r, before.metrics, after.metrics, r.id in after_ids)
                for r in before.recommendations]
    checks = comparability_checks(before, after)
    comparability = comparability_summary(checks)
    bottleneck = bottleneck_change(before, after)
    warnings: list[str] = []
    warnings += [f"not comparable — {r}" for r in comparability["reasons"] if r.split(":")[0] in
                 comparability["blocking"]]
    warnings += [f"flag — {r}" for r in comparability["reasons"] if r.split(":")[0] in comparability["flags"]]
    warnings += share_reversal_warnings(metric_rows)
    new_after = sorted(after_ids - {r.id for r in before.recommendations})
    if new_after:
        warnings.append("recommendations listed only after: " + ", ".join(new_after))
    for name, side in (("before", before), ("after", after)):
        warnings += [f"{name}: {w}" for w in side.warnings]
    return Comparison(
        sides={"before": before.to_dict(), "after": after.to_dict()},
        headline=_headline(metric_rows, comparability, bottleneck, rec_rows),
        metrics=metric_rows,
        categories=category_changes(before.categories_us, after.categories_us),
        operators=operator_changes(before.operators, after.operators),
        bottleneck=bottleneck,
        recommendations=rec_rows,
        comparability=comparability,
        warnings=warnings,
    )


# --------------------------------------------------------------------------------------------
# Wiring: Analysis -> SideSummary
# --------------------------------------------------------------------------------------------

_RANK_SUFFIX = re.compile(r"_\d+(?=\.json$)")


def normalise_file_kind(name: str) -> str:
    """Artefact kind of a file name, rank suffix removed: ``profiler_info_1.json`` -> ``profiler_info.json``.

    Two ranks of one run hold ``profiler_info_0.json`` and ``profiler_info_1.json``: the same artefact.
    """
    return _RANK_SUFFIX.sub("", name)


def compare(before: Any, after: Any, *, thresholds: Any = None, phase_override: str | None = None) -> Comparison:
    """Compare two profiles (seed §7): the same parsing, thresholds and scoring on both sides.

    Each side may be a path, a ``Dataset`` (analysed here with ``thresholds`` / ``phase_override``,
    identical for both sides), a ``(Dataset, Analysis)`` pair, an ``Analysis`` alone (then the
    operator/category sections and the hardware/world-size checks have less to work with, and a
    warning says so) or a :class:`SideSummary`.
    """
    b = as_side(before, "before", thresholds, phase_override)
    a = as_side(after, "after", thresholds, phase_override)
    result = compare_sides(b, a)
    th_b, th_a = _thresholds_of(before), _thresholds_of(after)
    if th_b is not None and th_a is not None and th_b != th_a:
        changed = sorted(k for k in set(th_b) | set(th_a) if th_b.get(k) != th_a.get(k))
        result.warnings.insert(0, "the two analyses used different thresholds (" + ", ".join(changed[:10])
                               + "): scores and recommendations are not on the same scale")
    return result


def _thresholds_of(obj: Any) -> dict[str, Any] | None:
    analysis = obj[1] if isinstance(obj, tuple) else obj
    th = getattr(analysis, "thresholds", None)
    if th is None or not hasattr(th, "to_dict"):
        return None
    return {k: v.get("value", v) if isinstance(v, dict) else v for k, v in th.to_dict().items()}


def as_side(obj: Any, default_label: str, thresholds: Any = None, phase_override: str | None = None) -> SideSummary:
    """Reduce a path / ``Dataset`` / ``(Dataset, Analysis)`` / ``Analysis`` / :class:`SideSummary` to a side."""
    if isinstance(obj, SideSummary):
        return obj
    from analyzer.analysis import Analysis, analyze
    from analyzer.dataset import Dataset, load_dataset

    if isinstance(obj, str | Path):
        obj = load_dataset(obj)
    if isinstance(obj, Dataset):
        return side_from_analysis(analyze(obj, thresholds=thresholds, phase_override=phase_override), obj)
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], Dataset) and isinstance(obj[1], Analysis):
        return side_from_analysis(obj[1], obj[0])
    if isinstance(obj, Analysis):
        return side_from_analysis(obj, None)
    raise TypeError(f"cannot compare a {type(obj).__name__} as the {default_label} side: expected a path, "
                    "Dataset, (Dataset, Analysis), Analysis or SideSummary")


def _side_label(path: str) -> str:
    """Last two path components (``msinsight-level1/rank0_ascend_pt``) — enough to tell sides apart."""
    parts = Path(path).parts
    return "/".join(parts[-2:]) if len(parts) >= 2 else path


def side_from_analysis(analysis: Any, dataset: Any = None) -> SideSummary:
    """Read one side from an ``analyzer.analysis.Analysis`` (and its ``Dataset`` when given).

    Metrics come from the primary rank's overall scope indicators (seed §7: the same indicator table
    the analysis scored); event count, device-op count, host dispatch time, category totals and
    per-operator totals come from the primary rank's event table; hardware and world size from the
    dataset's metadata (Kineto ``deviceProperties`` / ``distributedInfo``).
    """
    primary = analysis.primary
    overall = primary.overall
    ind = overall.indicators
    warnings: list[str] = []
    metrics: dict[str, float | None] = {}
    for spec in METRICS:
        metrics[spec.id] = next((ind.value(k) for k in spec.aliases if k in ind and ind.value(k) is not None), None)
    step_count = ind.value("step_count") if "step_count" in ind else None
    window_us = ind.value("wall_us") if "wall_us" in ind else None
    metrics["window_us"] = window_us
    categories: dict[str, float] = {}
    operators: dict[str, OperatorTotal] = {}
    device_names: tuple[str, ...] = ()
    world_size: int | None = None
    sampled = any(is_sampled_totals(r.totals_source) for r in analysis.ranks)
    sampling_note = "; ".join(f"rank {r.rank}: totals source '{r.totals_source}'" for r in analysis.ranks
                              if is_sampled_totals(r.totals_source))
    event_count: int | None = None
    if dataset is not None:
        rank = next((r for r in dataset.ranks if r.rank == primary.rank), dataset.ranks[0])
        reading = read_event_table(rank.events)
        categories, operators = reading["categories_us"], reading["operators"]
        event_count = reading["event_count"]
        metrics["event_count"] = float(event_count)
        metrics["device_op_count"] = float(reading["device_op_count"])
        metrics["host_dispatch_us"] = reading["host_dispatch_us"]
        device_names, world_size = hardware_of(rank.meta)
        if world_size is None and len(dataset.ranks) > 1:
            world_size = len(dataset.ranks)
        dropped = [(r.rank, r.dropped_events) for r in dataset.ranks if r.dropped_events[0]]
        if dropped:
            sampled = True
            sampling_note = "; ".join(filter(None, [sampling_note] + [
                f"rank {k}: {n} events dropped ({why})" for k, (n, why) in dropped]))
    else:
        warnings.append(f"{analysis.path}: compared without its dataset — event counts, operator and category "
                        "totals, hardware and world size are not available")
    if len(analysis.ranks) > 1:
        warnings.append(f"{analysis.path}: {len(analysis.ranks)} ranks — metrics are those of rank {primary.rank}")
    verdict = analysis.verdict
    recs = [RecommendationRef(r.id, r.title, None if r.gain is None else float(r.gain.estimate_pct))
            for r in primary.recommendations]
    files = frozenset(normalise_file_kind(f) for r in analysis.ranks for f in r.files)
    return SideSummary(
        label=_side_label(analysis.path),
        source_format=analysis.source_format,
        metrics=metrics,
        categories_us=categories,
        operators=operators,
        bottleneck=verdict.kind,
        scores={c.kind: float(c.score) for c in verdict.candidates},
        recommendations=recs,
        step_count=None if step_count is None else int(step_count),
        window_us=window_us,
        phase_shares_pct=dict(primary.plan.phase_share_pct()),
        phase_override=analysis.phase_override,
        sampled=sampled,
        sampling_note=sampling_note,
        files=files,
        totals_source=primary.totals_source,
        device_names=device_names,
        world_size=world_size,
        ranks=tuple(sorted(r.rank for r in analysis.ranks if r.rank >= 0)),
        event_count=event_count,
        warnings=warnings,
    )


#: totals sources of a capture read in full (``analyzer.dataset``): the whole trace, or no trace at all
#: (CSV tables only) — neither is sampled.
UNSAMPLED_TOTALS_SOURCES: tuple[str, ...] = ("trace", "csv")


def is_sampled_totals(totals_source: str) -> bool:
    """Seed §7.3 "采样": a side is sampled when its totals do not come from a fully read capture —
    an event budget thinned the trace or the trace was truncated (``analyzer.dataset`` ``TOTALS_*``
    values and ``trace (truncated)``). A CSV-only dataset (no trace) is not sampled: two such sides
    stay comparable, and a trace-vs-CSV pair is caught by the totals-source check instead."""
    return totals_source not in UNSAMPLED_TOTALS_SOURCES


def read_event_table(events: Any) -> dict[str, Any]:
    """Totals the comparison needs from one rank's event table (schema ``analyzer.ingest.events``).

    - ``categories_us``: Σ ``dur_us`` of device work per category (compute, communication, memcpy,
      memset) — summed durations, the seed's "大类耗时";
    - ``operators``: Σ ``dur_us`` and count of device work per event name;
    - ``host_dispatch_us``: length of the union of host ``dispatch`` events (``analyzer.timeline``);
    - ``event_count`` / ``device_op_count``: rows, and device work rows.
    """
    from analyzer import timeline
    from analyzer.ingest import events as ev

    dev = ev.device_work(events)
    categories = {str(k): float(v) for k, v in dev.groupby("category", observed=True)["dur_us"].sum().items()}
    grouped = dev.groupby("name", observed=True)["dur_us"].agg(["sum", "count"])
    operators = {str(n): OperatorTotal(float(row["sum"]), int(row["count"])) for n, row in grouped.iterrows()}
    disp = events[(events["side"] == ev.SIDE_HOST) & (events["category"] == ev.DISPATCH)]
    host_dispatch_us = timeline.from_events(disp).length_us if len(disp) else None
    return {"categories_us": categories, "operators": operators, "host_dispatch_us": host_dispatch_us,
            "event_count": len(events), "device_op_count": len(dev)}


def hardware_of(meta: Mapping[str, Any]) -> tuple[tuple[str, ...], int | None]:
    """(device model names, world size) from a rank's metadata.

    Kineto: ``deviceProperties[].name`` (every GPU listed on the node) and ``distributedInfo.world_size``;
    Ascend ``profiler_info`` carries neither in the samples we have, so both stay unknown there unless
    the ingest put ``device_name`` / ``world_size`` into ``meta``.
    """
    names: set[str] = set()
    for dev in meta.get("deviceProperties") or []:
        if isinstance(dev, Mapping) and dev.get("name"):
            names.add(str(dev["name"]))
    if meta.get("device_name"):
        names.add(str(meta["device_name"]))
    world: int | None = None
    dist = meta.get("distributedInfo") or {}
    raw = dist.get("world_size") if isinstance(dist, Mapping) else None
    raw = raw if raw is not None else meta.get("world_size")
    try:
        world = int(raw) if raw is not None else None
    except (TypeError, ValueError):
        world = None
    return tuple(sorted(names)), world


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:,.3f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:,.0f}"
    return str(v)


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    return render.markdown_table(headers, rows, _fmt)


def render_markdown(comparison: Comparison) -> str:
    """Human report of a comparison in Markdown, one section per seed §7.4 output section."""
    d = comparison.to_dict()
    out = ["# Before/after comparison", "", f"**{d['headline']['sentence']}**", ""]
    comp = d["comparability"]
    out += ["## Comparability", "",
            f"- comparable: **{str(comp['comparable']).lower()}** (level `{comp['level']}`)"]
    out += [f"- {r}" for r in comp["reasons"]] or ["- no check fired"]
    out += ["", "## Sides", ""]
    keys = ["label", "source_format", "event_count", "window_us", "step_count", "bottleneck", "totals_source",
            "phase_override", "sampled", "device_names", "world_size", "ranks"]
    out.append(_table(["", "before", "after"],
                      [[k, _fmt(d["sides"]["before"].get(k)), _fmt(d["sides"]["after"].get(k))] for k in keys]))
    out += ["", "## Metrics", ""]
    out.append(_table(["metric", "direction", "before", "after", "abs change", "rel change %", "improvement %",
                       "status"],
                      [[r["id"], r["direction"], r["before"], r["after"], r["abs_change"], r["rel_change_pct"],
                        r["improvement_pct"], r["status"]] for r in d["metrics"]]))
    out += ["", "## Categories (device time)", ""]
    out.append(_table(["category", "before µs", "after µs", "before %", "after %", "change µs"],
                      [[r["category"], r["before_us"], r["after_us"], r["before_share_pct"], r["after_share_pct"],
                        r["abs_change_us"]] for r in d["categories"]]))
    for key, title in (("saved", "Operators that saved the most time"), ("added", "Operators that added the most time")):
        out += ["", f"## {title}", ""]
        rows = d["operators"][key]
        out.append(_table(["operator", "before µs", "after µs", "delta µs", "before n", "after n",
                           "before mean µs", "after mean µs"],
                          [[r["name"], r["before_total_us"], r["after_total_us"], r["delta_us"], r["before_count"],
                            r["after_count"], r["before_mean_us"], r["after_mean_us"]] for r in rows])
                   if rows else "none")
    b = d["bottleneck"]
    out += ["", "## Bottleneck", "",
            f"{b['before'] or 'none'} -> {b['after'] or 'none'} ({'changed' if b['changed'] else 'unchanged'})", ""]
    out.append(_table(["kind", "before", "after", "delta"],
                      [[s["kind"], s["before"], s["after"], s["delta"]] for s in b["scores"]]))
    out += ["", "## Recommendations", ""]
    out.append(_table(["id", "verdict", "primary metric", "observed %", "expected gain %", "threshold %",
                       "still listed after"],
                      [[r["id"], r["verdict"], r["primary_metric"], r["observed_improvement_pct"],
                        r["expected_gain_pct"], r["threshold_pct"], r["still_listed_after"]]
                       for r in d["recommendations"]]) if d["recommendations"] else "none in the before analysis")
    out += ["", "Threshold rule: `max(1 %, expected gain × 0.5)` (seed §7.2).", "", "## Warnings", ""]
    out += [f"- {w}" for w in d["warnings"]] or ["none"]
    return "\n".join(out) + "\n"


def render_html(comparison: Comparison) -> str:
    """Self-contained HTML page of a comparison (the Markdown sections as HTML tables, no scripts)."""
    d = comparison.to_dict()

    def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
        return render.html_table(headers, rows, _fmt)

    comp = d["comparability"]
    colour = {"comparable": "#1a7f37", "comparable_with_caveats": "#9a6700", "not_comparable": "#cf222e"}
    status_rows = [[r["id"], r["direction"], r["before"], r["after"], r["rel_change_pct"], r["improvement_pct"],
                    r["status"]] for r in d["metrics"]]
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>ndval compare</title><style>"
        "body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}"
        "table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;"
        "text-align:right}td:first-child,th:first-child{text-align:left}</style></head><body>",
        "<h1>Before/after comparison</h1>",
        f"<p><strong>{html.escape(d['headline']['sentence'])}</strong></p>",
        f"<h2>Comparability</h2><p style='color:{colour[comp['level']]}'>comparable: "
        f"<strong>{str(comp['comparable']).lower()}</strong> ({html.escape(comp['level'])})</p><ul>"
        + "".join(f"<li>{html.escape(r)}</li>" for r in comp["reasons"]) + "</ul>",
        "<h2>Sides</h2>" + table(["", "before", "after"],
                                 [[k, d["sides"]["before"].get(k), d["sides"]["after"].get(k)]
                                  for k in ("label", "source_format", "event_count", "window_us", "step_count",
                                            "bottleneck", "totals_source", "device_names", "world_size", "ranks")]),
        "<h2>Metrics</h2>" + table(["metric", "direction", "before", "after", "rel change %", "improvement %",
                                    "status"], status_rows),
        "<h2>Categories</h2>" + table(["category", "before µs", "after µs", "before %", "after %", "change µs"],
                                      [[r["category"], r["before_us"], r["after_us"], r["before_share_pct"],
                                        r["after_share_pct"], r["abs_change_us"]] for r in d["categories"]]),
    ]
    for key in ("saved", "added"):
        parts.append(f"<h2>Operators {key}</h2>" + table(
            ["operator", "before µs", "after µs", "delta µs", "before mean µs", "after mean µs"],
            [[r["name"], r["before_total_us"], r["after_total_us"], r["delta_us"], r["before_mean_us"],
              r["after_mean_us"]] for r in d["operators"][key]]))
    b = d["bottleneck"]
    parts.append(f"<h2>Bottleneck</h2><p>{html.escape(str(b['before']))} → {html.escape(str(b['after']))}</p>"
                 + table(["kind", "before", "after", "delta"],
                         [[s["kind"], s["before"], s["after"], s["delta"]] for s in b["scores"]]))
    parts.append("<h2>Recommendations</h2>" + table(
        ["id", "verdict", "primary metric", "observed %", "expected gain %", "threshold %", "still listed after"],
        [[r["id"], r["verdict"], r["primary_metric"], r["observed_improvement_pct"], r["expected_gain_pct"],
          r["threshold_pct"], r["still_listed_after"]] for r in d["recommendations"]]))
    parts.append("<h2>Warnings</h2><ul>" + "".join(f"<li>{html.escape(w)}</li>" for w in d["warnings"]) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)


# --------------------------------------------------------------------------------------------
# ``analyzer.compare`` is both this module and the public function (spec §5)
# --------------------------------------------------------------------------------------------


class _CallableModule(types.ModuleType):
    """Importing ``analyzer.compare`` rebinds the package attribute ``analyzer.compare`` from the
    re-exported function to this module; forwarding calls keeps ``analyzer.compare(before, after)``
    working either way (spec §5: ``analyzer.compare(before, after) -> Comparison``)."""

    def __call__(self, before: Any, after: Any, **kwargs: Any) -> Comparison:
        return compare(before, after, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
