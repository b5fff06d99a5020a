"""Typed records of the comparison payload (seed §7.4): one ``TypedDict`` per section and row.

They are plain dicts at run time (the JSON payload is unchanged), typed for the checker: a section
built or read with a misspelt key or a wrong value type is an error before it is a wrong report.
"""

from __future__ import annotations

from typing import Any, TypedDict


class SideSection(TypedDict):
    """One entry of ``sides`` (``SideSummary.to_dict``)."""

    label: str
    source_format: str | None
    event_count: int | None
    window_us: float | None
    step_count: int | None
    bottleneck: str | None
    totals_source: str | None
    phase_override: str | None
    phase_shares_pct: dict[str, float | None]
    sampled: bool
    files: list[str] | None
    device_names: list[str]
    world_size: int | None
    ranks: list[int]


class MetricRow(TypedDict):
    """One row of ``metrics`` (seed §7.1)."""

    id: str
    label: str
    direction: str
    before: float | None
    after: float | None
    abs_change: float | None
    rel_change_pct: float | None
    improvement_pct: float | None
    status: str


class HeadlineValue(TypedDict):
    """One headline metric before/after."""

    before: float | None
    after: float | None
    improvement_pct: float | None
    status: str


class HeadlineSection(TypedDict):
    """``headline``: the conclusion sentence and the four headline metrics."""

    sentence: str
    comparable: bool
    values: dict[str, HeadlineValue]


class CategoryRow(TypedDict):
    """One row of ``categories`` (device time per event category, seed §7.4)."""

    category: str
    before_us: float | None
    after_us: float | None
    before_share_pct: float | None
    after_share_pct: float | None
    abs_change_us: float
    rel_change_pct: float | None


class OperatorRow(TypedDict):
    """One operator of ``operators.saved`` / ``operators.added`` (seed §7.4)."""

    name: str
    before_total_us: float
    after_total_us: float
    delta_us: float
    before_count: int
    after_count: int
    before_mean_us: float | None
    after_mean_us: float | None


class OperatorSections(TypedDict):
    """``operators``: the operators saving and adding the most device time."""

    saved: list[OperatorRow]
    added: list[OperatorRow]


class ScoreRow(TypedDict):
    """One candidate's score before/after in ``bottleneck.scores``."""

    kind: str
    before: float | None
    after: float | None
    delta: float | None


class BottleneckSection(TypedDict):
    """``bottleneck``: the dominant kind before/after and every candidate's score change."""

    before: str | None
    after: str | None
    changed: bool
    scores: list[ScoreRow]


class TargetRow(TypedDict):
    """One target metric's improvement in a recommendation row."""

    metric: str
    improvement_pct: float | None


class RecommendationRow(TypedDict):
    """One row of ``recommendations`` (seed §7.2 verdict)."""

    id: str
    title: str
    verdict: str
    target_metrics: list[str]
    primary_metric: str | None
    observed_improvement_pct: float | None
    expected_gain_pct: float | None
    threshold_pct: float | None
    threshold_rule: str
    targets: list[TargetRow]
    still_listed_after: bool
    reason: str


class CheckRow(TypedDict):
    """One comparability check (``Check.to_dict``)."""

    id: str
    triggered: bool
    blocking: bool
    reason: str
    before: Any
    after: Any


class ComparabilitySection(TypedDict):
    """``comparability``: the verdict, its level, the fired checks' reasons and every check."""

    comparable: bool
    level: str
    reasons: list[str]
    blocking: list[str]
    flags: list[str]
    checks: list[CheckRow]
