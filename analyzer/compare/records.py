"""Plain records a side of a comparison is reduced to (any analysis can be)."""

from __future__ import annotations

from dataclasses import dataclass, field

from analyzer.compare.metrics import rounded
from analyzer.compare.sections import SideSection

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
    #: (advisor finding id, phase, subject) -> share of the phase window % (analyzer.compare.findings)
    findings: dict[tuple[str, str, str], float | None] = field(default_factory=dict)

    def to_dict(self) -> SideSection:
        """The ``sides`` section entry (seed §7.4)."""
        return SideSection(
            label=self.label,
            source_format=self.source_format,
            event_count=self.event_count,
            window_us=rounded(self.window_us),
            step_count=self.step_count,
            bottleneck=self.bottleneck,
            totals_source=self.totals_source,
            phase_override=self.phase_override,
            phase_shares_pct={k: rounded(v) for k, v in sorted(self.phase_shares_pct.items())},
            sampled=self.sampled,
            files=sorted(self.files) if self.files is not None else None,
            device_names=list(self.device_names),
            world_size=self.world_size,
            ranks=list(self.ranks),
        )
