"""Per-recommendation verdict: ``threshold = max(floor, expected gain × factor)`` (seed §7.2; floor and factor
are the ``compareVerdictFloorPct`` / ``compareVerdictGainFactor`` parameters, see :class:`CompareRules`)."""

from __future__ import annotations

from collections.abc import Mapping

from analyzer.compare.metrics import (
    ADVICE_TARGETS,
    METRICS_BY_ID,
    NOT_JUDGEABLE_PREFIXES,
    CompareRules,
    Direction,
    default_rules,
    finite_or_none,
    improvement_pct,
    rounded,
)
from analyzer.compare.records import RecommendationRef
from analyzer.compare.sections import RecommendationRow, TargetRow

# --------------------------------------------------------------------------------------------
# §7.2 recommendation verdicts
# --------------------------------------------------------------------------------------------


def verdict_threshold_pct(expected_gain_pct: float | None, rules: CompareRules | None = None) -> float:
    """``threshold = max(verdict_floor_pct, expected gain × verdict_gain_factor)`` (seed §7.2); a missing gain
    counts as 0."""
    r = rules or default_rules()
    gain = finite_or_none(expected_gain_pct) or 0.0
    return max(r.verdict_floor_pct, gain * r.verdict_gain_factor)


def threshold_rule(rules: CompareRules, gain: str = "expected gain") -> str:
    """The verdict threshold rule in words, with the numbers in use: ``max(1 %, expected gain × 0.5)``."""
    return f"max({rules.verdict_floor_pct:g} %, {gain} × {rules.verdict_gain_factor:g})"


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
                         after: Mapping[str, float | None], still_listed: bool,
                         rules: CompareRules | None = None) -> RecommendationRow:
    """One row of the ``recommendations`` section (seed §7.2).

    ``observed_pct`` is the improvement of the **primary** target (the first target metric that is
    available on both sides and has a direction); every target's improvement is listed too. The
    threshold is written into the row so no reader has to guess what counts as achieved.
    """
    targets = targets_for(rec)
    r = rules or default_rules()
    threshold = verdict_threshold_pct(rec.expected_gain_pct, r)
    per_target: list[TargetRow] = []
    primary: str | None = None
    observed: float | None = None
    for metric_id in targets:
        spec = METRICS_BY_ID.get(metric_id)
        direction: Direction = spec.direction if spec else "lower_better"
        imp = improvement_pct(before.get(metric_id), after.get(metric_id), direction)
        per_target.append(TargetRow(metric=metric_id, improvement_pct=rounded(imp)))
        if primary is None and imp is not None:
            primary, observed = metric_id, imp
    verdict = recommendation_verdict(observed, threshold)
    if not targets:
        reason = "no target metric declared for this recommendation"
    elif observed is None:
        reason = f"none of the target metrics {list(targets)} is available on both sides"
    else:
        reason = (f"{primary} improved by {observed:.2f} % against a threshold of {threshold:.2f} % "
                  f"({threshold_rule(r)})")
    return {
        "id": rec.id,
        "title": rec.title,
        "verdict": verdict,
        "target_metrics": list(targets),
        "primary_metric": primary,
        "observed_improvement_pct": rounded(observed),
        "expected_gain_pct": rounded(finite_or_none(rec.expected_gain_pct)),
        "threshold_pct": rounded(threshold),
        "threshold_rule": threshold_rule(r, "expected_gain_pct"),
        "targets": per_target,
        "still_listed_after": still_listed,
        "reason": reason,
    }
