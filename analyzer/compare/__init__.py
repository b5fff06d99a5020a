"""Before/after comparison of two analyses (seed §7, spec ``analyzer.md`` §4).

Both sides must have gone through the same parsing, thresholds and scoring; this package only
compares numbers. It is built in two layers:

1. **Rules over plain data** — small pure functions: metric directions and the "unchanged"
   band (:mod:`.metrics`, seed §7.1), the per-recommendation verdict with
   ``threshold = max(floor, expected gain × factor)`` (:mod:`.verdicts`, seed §7.2), the comparability
   checks (:mod:`.comparability`, seed §7.3 plus the spec's hardware / world size / rank flags), and
   the operator / category rankings (:mod:`.comparison`, seed §7.4). They take a
   :class:`SideSummary` (:mod:`.records`), a plain record that any analysis can be reduced to. Every
   number of seed §7 is a ``compare*`` parameter of ``thresholds_default.yaml``, carried as one
   :class:`CompareRules` record.
2. **Wiring** — :func:`side_from_analysis` (:mod:`.side`) reduces an ``analyzer.analysis.Analysis``
   (with its ``Dataset`` when given) to a :class:`SideSummary`; :func:`compare` builds the
   :class:`Comparison` with the output sections *sides, headline, metrics, categories, operators,
   bottleneck, recommendations, comparability, warnings*; :mod:`.render` renders one table model of
   it twice, :func:`render_markdown` and :func:`render_html`.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from analyzer.compare.comparability import (
    Check,
    bottleneck_change,
    check_bottleneck,
    check_file_set,
    check_hardware,
    check_phase_mix,
    check_phase_override,
    check_rank,
    check_sampling,
    check_step_count,
    check_totals_source,
    check_window,
    check_world_size,
    comparability_checks,
    comparability_summary,
)
from analyzer.compare.comparison import (
    Comparison,
    category_changes,
    compare_sides,
    operator_changes,
)
from analyzer.compare.metrics import (
    ADVICE_TARGETS,
    HEADLINE_METRICS,
    METRICS,
    METRICS_BY_ID,
    NOT_JUDGEABLE_PREFIXES,
    VERDICTS,
    CompareRules,
    MetricSpec,
    compare_metric,
    default_rules,
    finite_or_none,
    improvement_pct,
    metric_status,
    relative_change_pct,
    rounded,
    share_reversal_warnings,
)
from analyzer.compare.records import (
    OperatorTotal,
    RecommendationRef,
    SideSummary,
)
from analyzer.compare.render import (
    render_html,
    render_markdown,
)
from analyzer.compare.side import (
    UNSAMPLED_TOTALS_SOURCES,
    as_side,
    comparable_operator_name,
    compare,
    hardware_of,
    is_sampled_totals,
    normalise_file_kind,
    read_event_table,
    side_from_analysis,
)
from analyzer.compare.verdicts import (
    judge_recommendation,
    recommendation_verdict,
    targets_for,
    verdict_threshold_pct,
)

__all__ = [
    "ADVICE_TARGETS",
    "HEADLINE_METRICS",
    "METRICS",
    "METRICS_BY_ID",
    "NOT_JUDGEABLE_PREFIXES",
    "UNSAMPLED_TOTALS_SOURCES",
    "VERDICTS",
    "Check",
    "CompareRules",
    "Comparison",
    "MetricSpec",
    "OperatorTotal",
    "RecommendationRef",
    "SideSummary",
    "as_side",
    "bottleneck_change",
    "category_changes",
    "check_bottleneck",
    "check_file_set",
    "check_hardware",
    "check_phase_mix",
    "check_phase_override",
    "check_rank",
    "check_sampling",
    "check_step_count",
    "check_totals_source",
    "check_window",
    "check_world_size",
    "comparability_checks",
    "comparability_summary",
    "comparable_operator_name",
    "compare",
    "compare_metric",
    "compare_sides",
    "default_rules",
    "finite_or_none",
    "hardware_of",
    "improvement_pct",
    "is_sampled_totals",
    "judge_recommendation",
    "metric_status",
    "normalise_file_kind",
    "operator_changes",
    "read_event_table",
    "recommendation_verdict",
    "relative_change_pct",
    "render_html",
    "render_markdown",
    "rounded",
    "share_reversal_warnings",
    "side_from_analysis",
    "targets_for",
    "verdict_threshold_pct",
]


class _CallableModule(types.ModuleType):
    """Importing ``analyzer.compare`` rebinds the package attribute ``analyzer.compare`` from the
    re-exported function to this package; forwarding calls keeps ``analyzer.compare(before, after)``
    working either way (spec §5: ``analyzer.compare(before, after) -> Comparison``)."""

    def __call__(self, before: Any, after: Any, **kwargs: Any) -> Comparison:
        return compare(before, after, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
