"""Comparability checks (seed §7.3 plus the spec's hardware / world size / rank flags) and the
bottleneck change between the sides."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from analyzer.compare.metrics import (
    CompareRules,
    default_rules,
    finite_or_none,
    rounded,
)
from analyzer.compare.records import SideSummary
from analyzer.compare.sections import BottleneckSection, CheckRow, ComparabilitySection, ScoreRow

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

    def to_dict(self) -> CheckRow:
        return CheckRow(id=self.id, triggered=self.triggered, blocking=self.blocking, reason=self.reason,
                        before=self.before, after=self.after)


def _rel_diff_pct(a: float, b: float) -> float:
    """``|a − b| / max(|a|, |b|) × 100`` — symmetric, so swapping the sides gives the same answer."""
    denom = max(abs(a), abs(b))
    return 0.0 if denom == 0 else abs(a - b) / denom * 100.0


def _relative_check(check_id: str, what: str, before: float | None, after: float | None, tol_pct: float,
                    blocking: bool, unit: str = "") -> Check:
    """Fires when ``|a − b| / max(|a|, |b|) × 100 > tol_pct`` (symmetric); a side unknown ⇒ not checked.

    Reasons read ``<what>s <b> vs <a> differ by <d> % (> tol %)`` with values rounded to integers.
    """
    b, a = finite_or_none(before), finite_or_none(after)
    if b is None or a is None:
        return Check(check_id, False, blocking, f"{what} unknown on a side; not checked", before, after)
    diff = _rel_diff_pct(b, a)
    fired = diff > tol_pct
    return Check(check_id, fired, blocking,
                 f"{what}s {b:.0f}{unit} vs {a:.0f}{unit} differ by {diff:.1f} % "
                 f"({'>' if fired else '≤'} {tol_pct:g} %)", before, after)


def check_step_count(before: int | None, after: int | None, rules: CompareRules | None = None) -> Check:
    """Seed §7.3: step counts differing by > ``step_count_tol_pct`` (of the larger side) ⇒ not comparable (window and
    share metrics lose comparability even though per-step metrics are normalised)."""
    return _relative_check("step_count", "step count", before, after,
                           (rules or default_rules()).step_count_tol_pct, blocking=True)


def check_phase_mix(before: Mapping[str, float], after: Mapping[str, float],
                    rules: CompareRules | None = None) -> Check:
    """Seed §7.3: the prefill/decode wall-clock shares differ by > ``phase_mix_tol_pt`` points ⇒ not comparable
    (an "improvement" may only be a different workload mix)."""
    phases = sorted(set(before) | set(after))
    if not phases:
        return Check("phase_mix", False, True, "no phase split on either side; not checked", {}, {})
    diffs = {p: abs(float(before.get(p, 0.0)) - float(after.get(p, 0.0))) for p in phases}
    worst = max(diffs, key=lambda p: diffs[p])
    tol = (rules or default_rules()).phase_mix_tol_pt
    fired = diffs[worst] > tol
    return Check("phase_mix", fired, True,
                 f"largest phase share change: {worst} {diffs[worst]:.1f} pt "
                 f"({'>' if fired else '≤'} {tol:g} pt)", dict(before), dict(after))


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


def check_window(before: float | None, after: float | None, rules: CompareRules | None = None) -> Check:
    """Seed §7.3 (flag only): capture windows differ by > ``window_tol_pct`` — share metrics change denominator,
    judge by absolute µs."""
    return _relative_check("window", "capture window", before, after,
                           (rules or default_rules()).window_tol_pct, blocking=False, unit=" µs")


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


def comparability_checks(before: SideSummary, after: SideSummary, rules: CompareRules | None = None) -> list[Check]:
    """Every check of seed §7.3 in its order (the first six block), then the spec's hardware and
    world-size checks (blocking) and the rank flag."""
    return [
        check_step_count(before.step_count, after.step_count, rules),
        check_phase_mix(before.phase_shares_pct, after.phase_shares_pct, rules),
        check_phase_override(before.phase_override, after.phase_override),
        check_sampling(before.sampled, after.sampled, before.sampling_note, after.sampling_note),
        check_file_set(before.files, after.files, before.source_format, after.source_format),
        check_totals_source(before.totals_source, after.totals_source),
        check_bottleneck(before.bottleneck, after.bottleneck),
        check_window(before.window_us, after.window_us, rules),
        check_hardware(before.device_names, after.device_names),
        check_world_size(before.world_size, after.world_size),
        check_rank(before.ranks, after.ranks),
    ]


def comparability_summary(checks: Sequence[Check]) -> ComparabilitySection:
    """``comparable`` = no blocking check fired; ``level`` = ``comparable`` / ``comparable_with_caveats``
    / ``not_comparable``; ``reasons`` = every fired check's reason (blocking ones first)."""
    blocking = [c for c in checks if c.triggered and c.blocking]
    flags = [c for c in checks if c.triggered and not c.blocking]
    comparable = not blocking
    level = "not_comparable" if blocking else ("comparable_with_caveats" if flags else "comparable")
    return ComparabilitySection(
        comparable=comparable,
        level=level,
        reasons=[f"{c.id}: {c.reason}" for c in blocking + flags],
        blocking=[c.id for c in blocking],
        flags=[c.id for c in flags],
        checks=[c.to_dict() for c in checks],
    )



def bottleneck_change(before: SideSummary, after: SideSummary) -> BottleneckSection:
    """Whether the dominant bottleneck changed and how each candidate's score moved (seed §7.4)."""
    kinds = sorted(set(before.scores) | set(after.scores))
    scores: list[ScoreRow] = []
    for k in kinds:
        b, a = finite_or_none(before.scores.get(k)), finite_or_none(after.scores.get(k))
        scores.append(ScoreRow(kind=k, before=rounded(b), after=rounded(a),
                               delta=rounded(a - b) if a is not None and b is not None else None))
    return BottleneckSection(before=before.bottleneck, after=after.bottleneck,
                             changed=before.bottleneck != after.bottleneck, scores=scores)
