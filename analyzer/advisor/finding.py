"""One advisor finding and how findings are ranked.

A finding is what one rule concluded on one rank: the rule's table entry (inputs, thresholds, source,
recommendation with its verification step and risk, applicable phases), the evidence rows that name the
operators / groups / variables / steps, the time they account for and its share of the analysed window,
and an expected gain where the seed's gain model applies (seed §6; :mod:`analyzer.gains`).

Ranking (``rank_findings``): by share of the window, the rule msprof-analyze uses for its priority colours
(``advisor/analyzer/base_analyzer.py`` ``get_priority_by_time_ratio``: high when the affected time is
≥ ``advisorHighSharePct`` of the step, medium when ≥ ``advisorMediumSharePct``, else low); findings whose
time is not measurable (an environment variable) rank by their expected gain, then last. The seed's four
bottleneck kinds are not touched: findings sit beside the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from analyzer.gains import Gain
from analyzer.thresholds import Thresholds

HIGH, MEDIUM, LOW = "high", "medium", "low"


@dataclass(frozen=True)
class Rule:
    """A rule's table entry: what it reads, which thresholds it applies, where they come from, what to do."""

    id: str
    title: str
    category: str
    inputs: tuple[str, ...]
    thresholds: tuple[str, ...]
    source: str
    recommendation: str
    verification: str
    risk: str
    phases: tuple[str, ...] = ("overall", "prefill", "decode")
    #: the evidence column naming what a row is about (``ndval compare`` matches findings by rule, phase and
    #: this subject); None: the finding is about the capture as a whole
    subject: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data (stable keys)."""
        return {"id": self.id, "title": self.title, "category": self.category, "inputs": list(self.inputs),
                "thresholds": list(self.thresholds), "source": self.source, "recommendation": self.recommendation,
                "verification": self.verification, "risk": self.risk, "applicable_phases": list(self.phases),
                "subject_column": self.subject}


@dataclass(frozen=True)
class Finding:
    """What one rule found: summary, evidence rows, affected time (µs, None when not a time) and its share."""

    rule: Rule
    summary: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    time_us: float | None = None
    share_pct: float | None = None
    gain: Gain | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        """The rule id (one finding per rule and rank)."""
        return self.rule.id

    def subjects(self) -> list[str]:
        """The distinct values of the rule's subject column, in row order (``[]`` without one)."""
        if self.rule.subject is None or self.rule.subject not in self.columns:
            return []
        i = self.columns.index(self.rule.subject)
        return list(dict.fromkeys(str(_plain(r[i])) for r in self.rows))

    def severity(self, th: Thresholds) -> str:
        """high / medium / low by share of the window (msprof-analyze's time-ratio priority)."""
        if self.share_pct is None:
            return LOW
        if self.share_pct >= th.v("advisorHighSharePct"):
            return HIGH
        return MEDIUM if self.share_pct >= th.v("advisorMediumSharePct") else LOW

    def to_dict(self, th: Thresholds) -> dict[str, Any]:
        """Plain data (stable keys); ``rows`` are lists of plain values under ``columns``."""
        return {
            "id": self.id, "title": self.rule.title, "category": self.rule.category, "summary": self.summary,
            "severity": self.severity(th), "time_us": None if self.time_us is None else round(self.time_us, 3),
            "share_pct": None if self.share_pct is None else round(self.share_pct, 3),
            "columns": list(self.columns), "rows": [[_plain(v) for v in r] for r in self.rows],
            "subjects": self.subjects(),
            "expected_gain": None if self.gain is None else self.gain.to_dict(), "rule": self.rule.to_dict(),
            **({"extra": self.extra} if self.extra else {}),
        }


def _plain(v: Any) -> Any:
    if isinstance(v, float):
        return round(v, 4)
    if hasattr(v, "item"):
        return _plain(v.item())
    return v


def with_share(finding: Finding, window_us: float | None) -> Finding:
    """``finding`` with ``share_pct = 100 · time_us / window_us`` (None when either is unknown)."""
    if finding.time_us is None or not window_us or window_us <= 0:
        return finding
    return Finding(finding.rule, finding.summary, finding.columns, finding.rows, finding.time_us,
                   100.0 * finding.time_us / window_us, finding.gain, finding.extra)


def rank_findings(findings: list[Finding]) -> list[Finding]:
    """Largest share first; then those with an expected gain (largest first); then the rest by id."""
    def key(f: Finding) -> tuple[int, float, str]:
        if f.share_pct is not None:
            return (0, -f.share_pct, f.id)
        if f.gain is not None:
            return (1, -f.gain.estimate_pct, f.id)
        return (2, 0.0, f.id)
    return sorted(findings, key=key)
