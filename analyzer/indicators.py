"""Seed §3 / spec §3.1: the indicator table of one scope (overall, prefill, decode) of one rank.

Every indicator is a value with a unit, a definition and its source; an indicator whose input is absent is
*unavailable* with the reason (never 0). Scopes are lists of windows ``[start_us, end_us)`` on the rank's
relative clock; events are clipped to the windows. Wall time of a scope = Σ window lengths.

Time shares use the event table (``analyzer.timeline`` interval algebra); on Ascend, when the trace carries
torch_npu's ``Overlap Analysis`` events, Computing / Communication / Communication(Not Overlapped) come from
them — the same numbers ``step_trace_time.csv`` holds (profiling-formats §1.7) — via ``analyzer.breakdown``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from analyzer import flops, timeline
from analyzer.ingest import events as ev
from analyzer.thresholds import default_thresholds
from ndval.core.units import BYTES_PER_MIB

Window = tuple[float, float]

#: host categories whose union is "host busy" (framework ops, dispatch, sync); step/annotation/python frames excluded.
HOST_BUSY_CATEGORIES: tuple[str, ...] = (ev.HOST_OP, ev.DISPATCH, ev.SYNC)
#: host copy calls (synchronous or async copies issued by the host).
HOST_COPY_RE = re.compile(r"memcpy|aten::copy_|aten::_to_copy", re.IGNORECASE)
#: attention kernels / ops (seed §4 compute.prefill-attention-quadratic).
ATTENTION_RE = re.compile(r"attention|flash|\bfia\b|sdpa|paged", re.IGNORECASE)
#: graph replay launches on the host (CUDA graphs, Ascend aclgraph / model execute).
GRAPH_LAUNCH_RE = re.compile(r"GraphLaunch|aclmdlRI?Execute|aclmdlExecute|ModelExecute", re.IGNORECASE)


@dataclass(frozen=True)
class Indicator:
    """One metric of a scope. ``value is None`` ⇔ unavailable, with ``reason``."""

    id: str
    value: float | None
    unit: str
    label: str
    definition: str
    source: str
    group: str
    reason: str = ""
    basis: str = ""

    @property
    def available(self) -> bool:
        """Whether a value was computed."""
        return self.value is not None

    def to_dict(self) -> dict[str, Any]:
        """Plain data (stable keys)."""
        return {
            "id": self.id, "value": None if self.value is None else round(float(self.value), 4),
            "unit": self.unit, "label": self.label, "group": self.group, "available": self.available,
            "definition": self.definition, "source": self.source, "reason": self.reason, "basis": self.basis,
        }


@dataclass(frozen=True)
class IndicatorSet(Mapping[str, Indicator]):
    """The indicator table of one scope, plus the sync-op counts by name."""

    scope: str
    table: dict[str, Indicator]
    sync_counts: dict[str, int] = field(default_factory=dict)
    totals_source: str = ""

    def __getitem__(self, key: str) -> Indicator:
        return self.table[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.table)

    def __len__(self) -> int:
        return len(self.table)

    def value(self, key: str) -> float | None:
        """Value of ``key`` (None when unavailable)."""
        return self.table[key].value

    def to_dict(self) -> dict[str, Any]:
        """Plain data (stable keys)."""
        return {
            "scope": self.scope, "totals_source": self.totals_source,
            "sync_counts": dict(sorted(self.sync_counts.items())),
            "indicators": {k: v.to_dict() for k, v in self.table.items()},
        }


# ---------------------------------------------------------------------------------------------- helpers


def _pct(part: float | None, whole: float | None) -> float | None:
    """``100 × part / whole``; None when either is unavailable or ``whole <= 0``."""
    if part is None or whole is None or whole <= 0:
        return None
    return 100.0 * part / whole


def _per(total: float | None, steps: int) -> float | None:
    """``total / steps``; None when no step is known."""
    if total is None or steps <= 0:
        return None
    return total / steps


def in_windows_mask(t_us: np.ndarray, windows: Sequence[Window]) -> np.ndarray:
    """For each time, whether it lies in one of ``windows`` (merged, half-open): ``timeline.membership``."""
    return timeline.membership(t_us, _windows(windows))


#: columns the indicators read (the scope selects these, so row filters copy nothing else).
SCOPE_COLUMNS: tuple[str, ...] = ("name", "category", "side", "sub", "ts_us", "dur_us", "bytes", "rank", "pid", "tid")
#: columns of the device-work subsets (intervals, copy direction, collective message size).
DEVICE_COLUMNS: tuple[str, ...] = ("category", "sub", "ts_us", "dur_us", "bytes")
#: columns of the host subset (dispatch / sync counts by name, launch intervals per thread).
HOST_COLUMNS: tuple[str, ...] = ("name", "category", "side", "sub", "ts_us", "dur_us", "rank", "pid", "tid")
INTERVAL_COLUMNS: tuple[str, ...] = ("ts_us", "dur_us")


def _rows(df: pd.DataFrame, mask: np.ndarray, columns: Sequence[str]) -> pd.DataFrame:
    """The rows of ``mask``, only ``columns`` (those ``df`` has): the other columns are never copied."""
    return df[[c for c in columns if c in df.columns]][mask]


def _in_windows(df: pd.DataFrame, windows: Sequence[Window]) -> pd.DataFrame:
    """Rows whose start lies in one of ``windows`` (``df`` itself, not a copy, when all do)."""
    mask = in_windows_mask(df["ts_us"].to_numpy(), windows)
    return df if mask.all() else df[mask]


def _clip_union(df: pd.DataFrame, windows: Sequence[Window]) -> timeline.Intervals:
    """Union of ``df``'s intervals, intersected with the scope's windows."""
    return timeline.intersect(timeline.from_events(df), _windows(windows))


def _windows(windows: Sequence[Window]) -> timeline.Intervals:
    arr = np.asarray(windows, dtype="float64").reshape(-1, 2)
    return timeline.union(arr[:, 0], arr[:, 1])


def duration_weighted(df: pd.DataFrame, value_col: str, cores: Sequence[str]) -> tuple[float | None, str]:
    """Duration-weighted mean of ``value_col`` over kernel rows whose ``Accelerator Core`` is in ``cores``.

    ``Σ ratio_i × dur_i / Σ dur_i`` over rows with a numeric ratio (profiling-formats §1.4: ``aic_*`` is 0
    on vector rows, so filter by core first). Returns (value, reason-when-None).
    """
    if value_col not in df.columns:
        return None, f"kernel_details.csv has no {value_col} column (needs Level1+ with aic_metrics=PipeUtilization)"
    if "Accelerator Core" not in df.columns:
        return None, "kernel_details.csv has no Accelerator Core column"
    rows = df[df["Accelerator Core"].isin(cores)]
    vals = pd.to_numeric(rows[value_col], errors="coerce")
    dur = pd.to_numeric(rows["Duration(us)"], errors="coerce")
    ok = vals.notna() & dur.notna() & (dur > 0)
    if not ok.any():
        return None, f"no {'/'.join(cores)} kernel rows with a numeric {value_col}"
    return float((vals[ok] * dur[ok]).sum() / dur[ok].sum()), ""


# ---------------------------------------------------------------------------------------------- builder


class _Builder:
    def __init__(self) -> None:
        self.items: dict[str, Indicator] = {}

    def add(self, id_: str, value: float | None, unit: str, label: str, definition: str, source: str,
            group: str, reason: str = "", basis: str = "") -> None:
        if value is not None and not np.isfinite(value):
            value, reason = None, reason or "not a finite number"
        if value is None and not reason:
            reason = "input missing"
        self.items[id_] = Indicator(id_, None if value is None else float(value), unit, label, definition,
                                    source, group, reason if value is None else "", basis)


@dataclass(frozen=True)
class ScopeInput:
    """What one scope's indicators are computed from."""

    name: str
    windows: tuple[Window, ...]
    step_count: int
    step_source: str
    kernel_details: pd.DataFrame | None = None
    kernel_reason: str = "kernel_details.csv not found"
    overlap: Mapping[str, float] | None = None
    overlap_source: str = ""
    gap_floor_us: float = field(default_factory=lambda: default_thresholds().v("idleGapFloorUs"))
    step_durs_us: tuple[float, ...] = ()
    trace_truncated: bool = False
    #: False for a rank read from tables alone (no trace, no DB): what only the event table counts is unknown
    has_timeline: bool = True
    peak_tflops: float = field(default_factory=lambda: default_thresholds().v("peakTflops"))


def compute_indicators(events: pd.DataFrame, scope: ScopeInput) -> IndicatorSet:
    """All indicators of one scope (pure: table + scope → typed result)."""
    b = _Builder()
    win = scope.windows
    wall = float(sum(e - s for s, e in win))
    steps = scope.step_count
    scoped = _in_windows(events[[c for c in SCOPE_COLUMNS if c in events.columns]], win)
    is_host = (scoped["side"] == ev.SIDE_HOST).to_numpy()
    category = scoped["category"]
    dev = _rows(scoped, (scoped["side"] == ev.SIDE_DEVICE).to_numpy() & category.isin(ev.DEVICE_WORK).to_numpy(),
                DEVICE_COLUMNS)
    host = _rows(scoped, is_host & category.isin(HOST_BUSY_CATEGORIES).to_numpy(), INTERVAL_COLUMNS)
    dev_category = dev["category"]
    comp = _rows(dev, (dev_category == ev.COMPUTE).to_numpy(), INTERVAL_COLUMNS)
    comm = _rows(dev, (dev_category == ev.COMMUNICATION).to_numpy(), DEVICE_COLUMNS)
    ops = ev.comm_ops(comm)
    copies = _rows(dev, (dev_category == ev.MEMCPY).to_numpy(), DEVICE_COLUMNS)

    dev_u = _clip_union(dev, win)
    host_u = _clip_union(host, win)
    comp_u, comm_u = _clip_union(comp, win), _clip_union(comm, win)
    has_dev, has_host = len(dev) > 0, len(host) > 0
    no_dev = "no device work events in this scope"
    no_host = "no host operator/dispatch events in this scope (Level0 without CANN layer, or device-only trace)"

    b.add("wall_us", wall if wall > 0 else None, "us", "wall time", "Σ scope window lengths", scope.step_source,
          "time", reason="no capture window: the input has no trace events (tables only)")
    b.add("step_count", float(steps), "steps", "steps", "steps in the scope", scope.step_source, "step")
    avg = float(np.mean(scope.step_durs_us)) if scope.step_durs_us else _per(wall, steps)
    b.add("avg_step_us", avg, "us", "average step", "mean step length (steps in the scope)", scope.step_source,
          "step", reason="no step boundaries")

    # -- device busy / compute / communication (Overlap Analysis when present, else interval algebra)
    ov = scope.overlap
    busy_us: float | None
    compute_us: float | None
    comm_us: float | None
    exposed_us: float | None
    if ov is not None:
        busy_us = ov["Computing"] + ov["Communication(Not Overlapped)"]
        compute_us, comm_us, exposed_us = ov["Computing"], ov["Communication"], ov["Communication(Not Overlapped)"]
        src = scope.overlap_source
        basis = (f"Computing {compute_us:.3f} us, Communication {comm_us:.3f} us, Communication(Not Overlapped) "
                 f"{exposed_us:.3f} us, Free {ov.get('Free', float('nan')):.3f} us")
    else:
        busy_us = dev_u.length_us if has_dev else None
        compute_us = comp_u.length_us if has_dev else None
        comm_us = comm_u.length_us if has_dev else None
        exposed_us = (timeline.subtract(comm_u, comp_u)).length_us if has_dev else None
        src, basis = "event table: union of device work intervals (analyzer.timeline)", ""
    b.add("device_busy_us", busy_us, "us", "device busy", "∪ device work (compute ∪ comm ∪ copies)", src, "time", no_dev, basis)
    b.add("device_busy_pct", _pct(busy_us, wall), "%", "device busy", "device busy / wall", src, "time", no_dev, basis)
    idle = None if busy_us is None else max(0.0, wall - busy_us)
    b.add("device_idle_pct", _pct(idle, wall), "%", "device idle", "(wall − device busy) / wall", src, "time", no_dev, basis)
    b.add("compute_us", compute_us, "us", "compute", "∪ compute kernels", src, "time", no_dev, basis)
    b.add("compute_pct", _pct(compute_us, wall), "%", "compute share of wall", "compute / wall", src, "time", no_dev, basis)
    comm_reason = no_dev if not has_dev else ""
    b.add("comm_us", comm_us, "us", "communication", "∪ communication", src, "time", comm_reason, basis)
    b.add("comm_pct_of_device", _pct(comm_us, busy_us), "%", "communication share of device busy",
          "communication / device busy", src, "time", comm_reason or "device busy is 0", basis)
    b.add("comm_exposed_us", exposed_us, "us", "exposed communication",
          "communication not overlapped by compute (comm − comm ∩ compute)", src, "time", comm_reason, basis)
    b.add("comm_exposed_pct", _pct(exposed_us, wall), "%", "exposed communication share of wall",
          "exposed communication / wall", src, "time", comm_reason, basis)
    overlap_pct = None
    if comm_us is not None and exposed_us is not None and comm_us > 0:
        overlap_pct = 100.0 * (comm_us - exposed_us) / comm_us
    b.add("comm_overlap_pct", overlap_pct, "%", "comm–compute overlap",
          "(communication ∩ compute) / communication (HTA definition)", src, "time",
          "no communication in this scope" if comm_us == 0 else comm_reason, basis)

    # -- idle gaps (device-idle segments longer than the floor)
    gaps = timeline.subtract(_windows(win), dev_u) if has_dev and not scope.trace_truncated else None
    _gap_indicators(b, gaps, scope.gap_floor_us)

    # -- host
    host_us = host_u.length_us if has_host else None
    excl = timeline.subtract(host_u, dev_u).length_us if has_host and has_dev else None
    if scope.trace_truncated:  # device events after the damage are lost: host − device is meaningless
        excl, has_dev = None, False
        no_dev = "trace truncated: device events after the damage are missing, host-exclusive time cannot be computed"
    hsrc = "event table: ∪ host_op/dispatch/sync on the host side"
    b.add("host_busy_pct", _pct(host_us, wall), "%", "host busy", "∪ host ops / wall", hsrc, "time", no_host)
    b.add("host_exclusive_us", excl, "us", "host exclusive", "host busy while the device is idle (∪host − ∪device)",
          hsrc, "time", no_host if not has_host else no_dev)
    b.add("host_exclusive_pct", _pct(excl, wall), "%", "host exclusive share of wall", "host exclusive / wall", hsrc,
          "time", no_host if not has_host else no_dev)
    b.add("host_exclusive_per_step_us", _per(excl, steps), "us", "host exclusive per step", "host exclusive / steps",
          hsrc, "step", no_host if excl is None else "no step boundaries")

    # -- copies
    _copy_indicators(b, scoped, copies, win, wall, steps, host_us)

    # -- composition
    b.add("event_count", float(len(scoped)), "events", "events", "rows of the event table in the scope", "event table",
          "composition")
    b.add("device_op_count", float(len(dev)), "ops", "device operators", "device work rows (compute, comm, copies)",
          "event table", "composition")
    b.add("compute_op_count", float(len(comp)), "ops", "compute kernels", "count", "event table", "composition")
    b.add("compute_op_median_us", float(comp["dur_us"].median()) if len(comp) else None, "us",
          "median compute kernel", "median duration of compute kernels", "event table", "composition", no_dev)
    n_attn = int(scoped["name"].str.contains(ATTENTION_RE, na=False).sum())
    b.add("attention_op_count", float(n_attn), "ops", "attention ops", "events whose name matches attention kernels",
          "event table", "composition")
    _comm_op_indicators(b, ops, steps, comm_us, src)

    # -- per-step host dispatch and sync
    sync_counts = _dispatch_and_sync(b, _rows(scoped, is_host, HOST_COLUMNS), wall, steps)

    # -- utilisation
    _util_indicators(b, scope)
    if not scope.has_timeline:  # tables only: 0 dispatches, syncs, copies or collectives would be a made-up count
        b.items.update({k: replace(i, value=None, reason=NO_TIMELINE, basis="") for k, i in b.items.items()
                        if i.source.startswith("event table") and i.available})
    return IndicatorSet(scope.name, b.items, sync_counts, totals_source=src)


#: why an event-table indicator is unavailable on a rank read from tables alone
NO_TIMELINE = "no event timeline (tables only: no trace_view.json, Kineto trace or profiler DB): not counted, not 0"


def _gap_indicators(b: _Builder, gaps: timeline.Intervals | None, floor_us: float) -> None:
    src = "event table: scope windows − ∪ device work, segments longer than idleGapFloorUs"
    if gaps is None:
        for k in ("idle_gap_count", "idle_gap_mean_us", "idle_gap_max_us"):
            b.add(k, None, "us" if k.endswith("_us") else "gaps", k.replace("_", " "), "", src, "time",
                  "no device work events")
        return
    lengths = gaps.end_us - gaps.start_us
    lengths = lengths[lengths > floor_us]
    b.add("idle_gap_count", float(len(lengths)), "gaps", "idle segments", "count of idle segments", src, "time")
    b.add("idle_gap_mean_us", float(lengths.mean()) if len(lengths) else 0.0, "us", "mean idle segment",
          "mean length of idle segments", src, "time")
    b.add("idle_gap_max_us", float(lengths.max()) if len(lengths) else 0.0, "us", "longest idle segment",
          "max length of idle segments", src, "time")


def _copy_indicators(b: _Builder, scoped: pd.DataFrame, copies: pd.DataFrame, win: Sequence[Window],
                     wall: float, steps: int, host_us: float | None) -> None:
    src = "event table: device memcpy events (sub = direction)"
    copy_us = (_clip_union(copies, win)).length_us if len(copies) else 0.0
    b.add("copy_device_us", copy_us, "us", "device copies", "∪ device memcpy", src, "time")
    b.add("copy_pct", _pct(copy_us, wall), "%", "device copy share of wall", "device copies / wall", src, "time")
    undirected_us = float(copies.loc[copies["sub"] == ev.SUB_HOST_DEVICE, "dur_us"].sum())
    for sub, key, label in ((ev.SUB_D2H, "d2h_per_step_us", "D2H per step"), (ev.SUB_H2D, "h2d_per_step_us", "H2D per step"),
                            (ev.SUB_HOST_DEVICE, "host_device_copy_per_step_us", "H2D-or-D2H (direction unrecorded) per step")):
        tot = float(copies.loc[copies["sub"] == sub, "dur_us"].sum())
        value, reason, basis = _per(tot, steps), "no step boundaries", ""
        if sub != ev.SUB_HOST_DEVICE and undirected_us > 0:
            if tot == 0:  # all host<->device copies are undirected: 0 would be a claim the trace cannot make
                value, reason = None, (f"copy direction not recorded: {undirected_us:.1f} us of H2D-or-D2H copies "
                                       "(Ascend PCIE DMA tasks) cannot be split into H2D and D2H")
            else:
                basis = f"lower bound: another {undirected_us:.1f} us of copies have no recorded direction"
        b.add(key, value, "us", label, f"Σ {sub} copy durations / steps", src, "step", reason, basis)
    hc = scoped[(scoped["side"] == ev.SIDE_HOST) & scoped["name"].str.contains(HOST_COPY_RE, na=False)]
    hc_us = (_clip_union(hc, win)).length_us if len(hc) else 0.0
    b.add("host_copy_pct_of_host_busy", _pct(hc_us, host_us), "%", "host copy share of host busy",
          "∪ host copy calls (memcpy, aten::copy_) / host busy", "event table: host events by name", "time",
          "no host events in this scope")


def _comm_op_indicators(b: _Builder, ops: pd.DataFrame, steps: int, comm_us: float | None, comm_src: str) -> None:
    src = "event table: one row per collective (analyzer.ingest.events.comm_ops)"
    none = "no communication ops in this scope"
    b.add("comm_op_count", float(len(ops)), "ops", "collectives", "count", src, "composition")
    b.add("comm_ops_per_step", _per(float(len(ops)), steps), "ops/step", "collectives per step", "count / steps", src,
          "step", "no step boundaries")
    b.add("comm_us_per_step", _per(comm_us, steps), "us", "communication per step", "communication / steps", comm_src,
          "step", "no step boundaries" if comm_us is not None else "no device events")
    b.add("comm_duration_median_us", float(ops["dur_us"].median()) if len(ops) else None, "us",
          "median collective duration", "median duration of collectives", src, "composition", none)
    sizes = ops["bytes"].dropna()
    b.add("comm_message_median_mb", float(sizes.median()) / BYTES_PER_MIB if len(sizes) else None, "MiB",
          "median message size", "median count × sizeof(dtype) of collectives", src, "composition",
          none if not len(ops) else "collectives carry no message size in their args (Ascend: needs Level1 HCCL op args)")


@dataclass(frozen=True)
class LaunchIntervals:
    """Host time between consecutive device launches of one thread, pooled over threads (µs)."""

    count: int  # intervals pooled
    threads: int  # threads that launched at least twice
    p25_us: float
    median_us: float
    p75_us: float


def launch_intervals(events: pd.DataFrame) -> LaunchIntervals | None:
    """Start-to-start intervals of consecutive launch calls (``category == dispatch``, ``sub == launch``:
    ``cudaLaunchKernel``, ``cudaMemcpyAsync``, ``aclnn*`` ...) on the same host thread, pooled.

    ``Δ_i = ts_{i+1} − ts_i`` per ``(rank, pid, tid)`` in time order: everything the host does per launched
    device op in eager mode (Python, framework dispatch, the launch call itself, allocator), which is
    what bounds a pass from below when device kernels are short (``estimator`` option
    ``host_launch_cost_us``). The median is robust to the few long waits (synchronisations,
    step boundaries) in the series. None when no thread launched twice.
    """
    launch = events[(events["side"] == ev.SIDE_HOST) & (events["category"] == ev.DISPATCH)
                    & (events["sub"] == ev.SUB_LAUNCH)]
    parts: list[np.ndarray] = []
    for _, g in launch.groupby(["rank", "pid", "tid"], sort=False, observed=True):
        if len(g) >= 2:
            parts.append(np.diff(np.sort(g["ts_us"].to_numpy(dtype=float))))
    if not parts:
        return None
    d = np.concatenate(parts)
    p25, p50, p75 = np.percentile(d, [25, 50, 75])
    return LaunchIntervals(len(d), len(parts), float(p25), float(p50), float(p75))


def _dispatch_and_sync(b: _Builder, host: pd.DataFrame, wall: float, steps: int) -> dict[str, int]:
    """Dispatch and sync indicators from the scope's host rows."""
    disp = host[host["category"] == ev.DISPATCH]
    enq, launch = disp[disp["sub"] == ev.SUB_ENQUEUE], disp[disp["sub"] == ev.SUB_LAUNCH]
    li = launch_intervals(launch)
    b.add("host_us_per_launch", li.median_us if li else None, "us", "host time per launch",
          "median start-to-start interval of consecutive launch calls of one host thread (pooled over threads)",
          "event table: category dispatch, sub launch", "step",
          "fewer than two launch calls on any host thread (no runtime layer in the trace)",
          basis=(f"{li.count} intervals on {li.threads} thread(s); p25 {li.p25_us:.1f} us, median "
                 f"{li.median_us:.1f} us, p75 {li.p75_us:.1f} us") if li else "")
    if len(enq):
        n, src = len(enq), "event table: task-queue enqueue events"
    elif len(launch):
        n, src = len(launch), "event table: device launch calls (aclnn / cudaLaunchKernel ...)"
    else:
        n, src = int((host["category"] == ev.HOST_OP).sum()), "event table: host operator events (no dispatch layer in the trace)"
    b.add("dispatch_op_count", float(n), "ops", "dispatched ops", "count", src, "step")
    b.add("host_dispatch_us", timeline.from_events(disp).length_us if len(disp) else None, "us", "host dispatch time",
          "|∪ dispatch events| (task queue, CANN / CUDA runtime launches)", "event table: category dispatch", "time",
          "no dispatch-layer events in the trace (Level0 without CANN, or no task queue)")
    b.add("dispatch_ops_per_step", _per(float(n), steps), "ops/step", "dispatched ops per step", "count / steps", src,
          "step", "no step boundaries")
    sync = host[host["category"] == ev.SYNC]
    counts = ev.name_counts(sync)
    sync_us = timeline.from_events(sync).length_us  # union: item ⊃ _local_scalar_dense ⊃ aclrtMemcpy nest
    ssrc = "event table: host sync-like ops (aten::item, _local_scalar_dense, *Synchronize*, sync memcpy)"
    runtime_layer = bool((disp["sub"].isin((ev.SUB_LAUNCH, ev.SUB_RUNTIME))).any())
    sbasis = "" if runtime_layer else ("no runtime-layer events in the trace (e.g. Level0 without CANN): "
                                       "AscendCL/CUDA synchronize calls are invisible, only framework sync ops counted")
    b.add("sync_op_count", float(len(sync)), "ops", "sync-like ops", "count", ssrc, "step", basis=sbasis)
    b.add("sync_ops_per_step", _per(float(len(sync)), steps), "ops/step", "sync-like ops per step", "count / steps",
          ssrc, "step", "no step boundaries")
    b.add("host_sync_us", sync_us, "us", "sync-like op time", "|∪ sync-like op intervals|", ssrc, "time")
    b.add("sync_pct_of_wall", _pct(sync_us, wall), "%", "sync-like op share of wall", "|∪ sync-like ops| / wall", ssrc, "time")
    return counts


def _util_indicators(b: _Builder, scope: ScopeInput) -> None:
    kd = scope.kernel_details
    src = "kernel_details.csv PipeUtilization columns, duration-weighted by Duration(us)"
    specs = (("mac_ratio", "aic_mac_ratio", ("AI_CORE", "MIX_AIC"), "cube MAC ratio"),
             ("mte2_ratio", "aic_mte2_ratio", ("AI_CORE", "MIX_AIC"), "cube MTE2 ratio"),
             ("aiv_vec_ratio", "aiv_vec_ratio", ("AI_VECTOR_CORE", "MIX_AIV"), "vector VEC ratio"),
             ("aiv_mte2_ratio", "aiv_mte2_ratio", ("AI_VECTOR_CORE", "MIX_AIV"), "vector MTE2 ratio"))
    for key, col, cores, label in specs:
        if kd is None:
            val, reason = None, scope.kernel_reason
        else:
            val, reason = duration_weighted(kd, col, cores)
        b.add(key, val, "ratio", label, f"Σ {col}·dur / Σ dur over {'/'.join(cores)} rows", src, "utilisation", reason)
    tflops, why = flops.matmul_tflops(kd)
    why = scope.kernel_reason if kd is None else why
    fsrc = "kernel_details.csv matmul rows: FLOPs = 2·numel(A)·N from Input/Output Shapes (analyzer.flops)"
    b.add("matmul_tflops", tflops, "TFLOPS", "matmul throughput", "Σ FLOPs / Σ Duration(us)", fsrc, "utilisation", why)
    b.add("matmul_flops_utilisation_pct", flops.utilisation_pct(tflops, scope.peak_tflops), "%",
          "matmul FLOPs utilisation", f"100 · matmul_tflops / peakTflops ({scope.peak_tflops:g})", fsrc,
          "utilisation", why)


def graph_mode_signal(events: pd.DataFrame, kernels_per_launch_gate: float) -> tuple[bool, str]:
    """Spec §2: detect graph-mode captures (most device work launched by graph replay, invisible to host dispatch).

    Signals: host graph-launch calls (``cudaGraphLaunch``, ``aclmdlRIExecute``...); or device kernels per
    host dispatch/launch event ≥ ``kernels_per_launch_gate``. Returns (detected, reason).
    """
    host = (events["side"] == ev.SIDE_HOST).to_numpy(dtype=bool)  # masks and counts: no row is copied
    category = events["category"]
    n_dev = int(((events["side"] == ev.SIDE_DEVICE) & (category == ev.COMPUTE)).sum())
    graph = np.flatnonzero(host & ev.matches(events["name"], lambda v: bool(GRAPH_LAUNCH_RE.search(v))))
    if graph.size:
        return True, (f"{graph.size} graph launch call(s) on the host ({events['name'].iloc[graph[0]]}): device work "
                      "replayed from a captured graph is invisible to host dispatch metrics")
    n_launch = int((host & (category == ev.DISPATCH).to_numpy(dtype=bool)).sum())
    if n_launch == 0:
        n_launch = int((host & (category == ev.HOST_OP).to_numpy(dtype=bool)).sum())
    if n_dev and n_launch == 0:
        return True, f"{n_dev} device kernels but no host operator or launch events in the trace"
    if n_launch and n_dev / n_launch >= kernels_per_launch_gate:
        return True, (f"{n_dev} device kernels for {n_launch} host dispatch events "
                      f"({n_dev / n_launch:.1f} per launch ≥ graphKernelsPerLaunch {kernels_per_launch_gate:g})")
    return False, ""
