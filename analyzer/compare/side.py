"""Wiring: an ``Analysis`` (with its ``Dataset``) reduced to a :class:`SideSummary`, and :func:`compare`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from analyzer.compare.comparison import Comparison, compare_sides
from analyzer.compare.findings import finding_shares
from analyzer.compare.metrics import METRICS, CompareRules, default_rules
from analyzer.compare.records import OperatorTotal, RecommendationRef, SideSummary

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

    The seed §7 numbers (:class:`CompareRules`) come from ``thresholds`` when given, else from the
    thresholds the before analysis used, else from ``thresholds_default.yaml``.
    """
    b = as_side(before, "before", thresholds, phase_override)
    a = as_side(after, "after", thresholds, phase_override)
    result = compare_sides(b, a, _rules(thresholds, before))
    th_b, th_a = _thresholds_of(before), _thresholds_of(after)
    if th_b is not None and th_a is not None and th_b != th_a:
        changed = sorted(k for k in set(th_b) | set(th_a) if th_b.get(k) != th_a.get(k))
        result.warnings.insert(0, "the two analyses used different thresholds (" + ", ".join(changed[:10])
                               + "): scores and recommendations are not on the same scale")
    return result


def _rules(thresholds: Any, before: Any) -> CompareRules:
    from analyzer.thresholds import Thresholds, resolve

    if thresholds is not None:
        return CompareRules.from_thresholds(resolve(thresholds))
    analysis = before[1] if isinstance(before, tuple) else before
    th = getattr(analysis, "thresholds", None)
    return CompareRules.from_thresholds(th) if isinstance(th, Thresholds) else default_rules()


def _thresholds_of(obj: Any) -> dict[str, Any] | None:
    analysis = obj[1] if isinstance(obj, tuple) else obj
    th = getattr(analysis, "thresholds", None)
    if th is None or not hasattr(th, "to_dict"):
        return None
    if hasattr(th, "all_values"):
        return dict(th.all_values())
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
        if rank.has_timeline:
            reading = read_event_table(rank.events)
            categories, operators = reading["categories_us"], reading["operators"]
            event_count = reading["event_count"]
            metrics["event_count"] = float(event_count)
            metrics["device_op_count"] = float(reading["device_op_count"])
            metrics["host_dispatch_us"] = reading["host_dispatch_us"]
        else:
            warnings.append(f"{analysis.path}: rank {rank.rank} has no event timeline (tables only) — event counts, "
                            "operator and category totals are not available, not 0")
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
        findings=finding_shares(getattr(primary, "advisor", None)),
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


#: an HCCL collective's op name, ``hcom_<type>__<group>_<index>_<n>``: the group part is a per-run hash
#: (``hcom_allReduce__868_0_1`` and ``hcom_allReduce__586_0_1`` are the same op of the same program captured
#: twice: msinsight-level0 / -level1), the index the op's place in its group
_HCCL_OP_NAME = re.compile(r"^(hcom_[A-Za-z]+)__\d+_(\d+_\d+)$")


def comparable_operator_name(name: str) -> str:
    """The key under which an operator is matched across two captures: the name itself, except an HCCL
    collective's per-run group hash, which is replaced by ``*`` (``hcom_allReduce__868_0_1`` ->
    ``hcom_allReduce__*_0_1``), so the same collective of two runs is one row, not a saving and an addition."""
    m = _HCCL_OP_NAME.match(name)
    return f"{m.group(1)}__*_{m.group(2)}" if m else name


def read_event_table(events: Any) -> dict[str, Any]:
    """Totals the comparison needs from one rank's event table (schema ``analyzer.ingest.events``).

    - ``categories_us``: Σ ``dur_us`` of device work per category (compute, communication, memcpy,
      memset) — summed durations, the seed's "大类耗时"; communication counts each collective once
      (its HCCL tasks only where the trace has no op rows: ``events.without_nested_comm_tasks``);
    - ``operators``: Σ ``dur_us`` and count of the same rows per :func:`comparable_operator_name`;
    - ``host_dispatch_us``: length of the union of host ``dispatch`` events (``analyzer.timeline``);
    - ``event_count`` / ``device_op_count``: rows, and device work rows.
    """
    from analyzer import timeline
    from analyzer.ingest import events as ev

    dev = ev.without_nested_comm_tasks(ev.device_work(events))
    categories = {str(k): float(v) for k, v in dev.groupby("category", observed=True)["dur_us"].sum().items()}
    names = dev["name"].astype(str).map(comparable_operator_name)
    grouped = dev["dur_us"].groupby(names.to_numpy()).agg(["sum", "count"])
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
