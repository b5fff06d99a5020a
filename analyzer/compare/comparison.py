"""Category and operator changes and the :class:`Comparison` of two sides (seed §7.4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from analyzer.compare.comparability import bottleneck_change, comparability_checks, comparability_summary
from analyzer.compare.findings import finding_changes
from analyzer.compare.metrics import (
    HEADLINE_METRICS,
    METRICS,
    VERDICTS,
    CompareRules,
    compare_metric,
    default_rules,
    relative_change_pct,
    rounded,
    share_reversal_warnings,
)
from analyzer.compare.records import OperatorTotal, SideSummary
from analyzer.compare.sections import (
    BottleneckSection,
    CategoryRow,
    ComparabilitySection,
    HeadlineSection,
    HeadlineValue,
    MetricRow,
    OperatorRow,
    OperatorSections,
    RecommendationRow,
    SideSection,
)
from analyzer.compare.verdicts import judge_recommendation
from ndval.core import strictjson

# --------------------------------------------------------------------------------------------
# §7.4 categories, operators, bottleneck
# --------------------------------------------------------------------------------------------


def category_changes(before: Mapping[str, float], after: Mapping[str, float]) -> list[CategoryRow]:
    """Per category: µs before/after, share of the side's category total before/after, absolute
    change; sorted by |change| descending (seed §7.4)."""
    total_b = sum(before.values()) or 0.0
    total_a = sum(after.values()) or 0.0
    rows: list[CategoryRow] = []
    for cat in sorted(set(before) | set(after)):
        b, a = float(before.get(cat, 0.0)), float(after.get(cat, 0.0))
        rows.append(CategoryRow(
            category=cat,
            before_us=rounded(b),
            after_us=rounded(a),
            before_share_pct=rounded(b / total_b * 100.0) if total_b else None,
            after_share_pct=rounded(a / total_a * 100.0) if total_a else None,
            abs_change_us=_r3(a - b),
            rel_change_pct=rounded(relative_change_pct(b, a)),
        ))
    rows.sort(key=lambda r: (-abs(r["abs_change_us"]), r["category"]))
    return rows


def operator_changes(before: Mapping[str, OperatorTotal], after: Mapping[str, OperatorTotal],
                     top_n: int | None = None) -> OperatorSections:
    """The ``top_n`` operators that saved the most device time and the ``top_n`` that added the most,
    each with totals, counts and means on both sides (seed §7.4; default ``compareTopOperators``).
    Ties are broken by name."""
    top_n = default_rules().top_operators if top_n is None else top_n
    empty = OperatorTotal(0.0, 0)
    rows: list[OperatorRow] = []
    for name in set(before) | set(after):
        b, a = before.get(name, empty), after.get(name, empty)
        rows.append(OperatorRow(
            name=name,
            before_total_us=_r3(b.total_us),
            after_total_us=_r3(a.total_us),
            delta_us=_r3(a.total_us - b.total_us),
            before_count=b.count,
            after_count=a.count,
            before_mean_us=rounded(b.mean_us),
            after_mean_us=rounded(a.mean_us),
        ))
    saved = sorted((r for r in rows if r["delta_us"] < 0), key=lambda r: (r["delta_us"], r["name"]))[:top_n]
    added = sorted((r for r in rows if r["delta_us"] > 0), key=lambda r: (-r["delta_us"], r["name"]))[:top_n]
    return OperatorSections(saved=saved, added=added)


def _r3(value: float) -> float:
    """:func:`rounded` of a value that is always there (the same rounding, never ``None``)."""
    return round(float(value), 3) + 0.0




# --------------------------------------------------------------------------------------------
# The comparison
# --------------------------------------------------------------------------------------------


@dataclass
class Comparison:
    """A before/after comparison; ``to_dict()`` gives the seed §7.4 sections with stable names."""

    sides: dict[str, SideSection]
    headline: HeadlineSection
    metrics: list[MetricRow]
    categories: list[CategoryRow]
    operators: OperatorSections
    bottleneck: BottleneckSection
    recommendations: list[RecommendationRow]
    comparability: ComparabilitySection
    warnings: list[str]
    #: the seed §7 numbers the comparison was judged with (not a payload section)
    rules: CompareRules = field(default_factory=default_rules)
    #: advisor findings before vs after (analyzer.compare.findings): resolved / new / persists
    findings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def comparable(self) -> bool:
        return bool(self.comparability["comparable"])

    def verdict_of(self, recommendation_id: str) -> str | None:
        """The verdict of one recommendation, or ``None`` when it was not in the before analysis."""
        for row in self.recommendations:
            if row["id"] == recommendation_id:
                return row["verdict"]
        return None

    def metric(self, metric_id: str) -> MetricRow | None:
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
            "findings": self.findings,
            "comparability": self.comparability,
            "warnings": self.warnings,
        }

    def to_json(self, indent: int = 2) -> str:
        return strictjson.dumps(self.to_dict(), indent=indent, default=str)


def _headline(metrics: Sequence[MetricRow], comparability: ComparabilitySection,
              bottleneck: BottleneckSection, recs: Sequence[RecommendationRow]) -> HeadlineSection:
    """The conclusion sentence plus the four headline metrics before/after (seed §7.4)."""
    by_id = {r["id"]: r for r in metrics}
    values = {m: HeadlineValue(before=by_id[m]["before"], after=by_id[m]["after"],
                               improvement_pct=by_id[m]["improvement_pct"], status=by_id[m]["status"])
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
    return HeadlineSection(sentence="; ".join(parts) + ".", comparable=comparability["comparable"], values=values)


def compare_sides(before: SideSummary, after: SideSummary, rules: CompareRules | None = None) -> Comparison:
    """Compare two :class:`SideSummary` records (seed §7): every rule of this module, one payload
    (``rules``: the seed §7 numbers, default ``thresholds_default.yaml``)."""
    rules = rules or default_rules()
    metric_rows = [compare_metric(spec, before.metrics.get(spec.id), after.metrics.get(spec.id), rules)
                   for spec in METRICS]
    after_ids = {r.id for r in after.recommendations}
    rec_rows = [judge_recommendation(r, before.metrics, after.metrics, r.id in after_ids, rules)
                for r in before.recommendations]
    checks = comparability_checks(before, after, rules)
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
    # a side without an event table (no dataset, tables only) has no operator or category totals: against the
    # other side's, each would read as all of its time removed (or added)
    tables = before.event_count is not None and after.event_count is not None
    return Comparison(
        sides={"before": before.to_dict(), "after": after.to_dict()},
        headline=_headline(metric_rows, comparability, bottleneck, rec_rows),
        metrics=metric_rows,
        categories=category_changes(before.categories_us, after.categories_us) if tables else [],
        operators=(operator_changes(before.operators, after.operators, rules.top_operators) if tables
                   else OperatorSections(saved=[], added=[])),
        bottleneck=bottleneck,
        recommendations=rec_rows,
        comparability=comparability,
        warnings=warnings,
        rules=rules,
        findings=finding_changes(before.findings, after.findings),
    )
