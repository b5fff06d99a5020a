"""SYNTHETIC Ascend-format fixtures (torch_npu ``trace_view.json`` layout), generated for tests only.

Nothing here is measured data. The generator writes a bare JSON array like the real export: string epoch-µs
``ts`` with three decimals, ``M`` process/thread metadata (``Python``, ``CANN``, ``Ascend Hardware``,
``HCCL``), ``cpu_op`` / ``enqueue`` host events, ``AI_CORE`` device kernels, ``Group 0 Communication``
collectives, optional ``ProfilerStep#N`` markers and mstx-like ``user_annotation`` ranges.
Each step is described by a :class:`SynthStep`; the builders at the bottom give the named fixtures.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BASE_TS_US = 1_736_408_883_000_000  # an epoch-µs base like the real samples (synthetic)
PID_PY, PID_CANN, PID_HW, PID_HCCL = 100, 200, 300, 400
TID_MAIN, TID_STREAM, TID_GROUP = 1, 7, 0


@dataclass(frozen=True)
class SynthStep:
    """One synthetic step: host work from the step start, device kernels after ``device_offset_us``."""

    host_busy_us: float = 500.0
    host_ops: int = 10
    enqueues: int = 10
    device_offset_us: float = 100.0
    kernels: int = 20
    kernel_us: float = 50.0
    kernel_gap_us: float = 1.0
    comm_us: float = 0.0
    gap_after_us: float = 3000.0
    label: str | None = None
    graph_launch: bool = False


def _ts(rel_us: float) -> str:
    whole = int(rel_us // 1)
    frac = rel_us - whole
    return f"{BASE_TS_US + whole}.{round(frac * 1000):03d}"


def _x(name: str, pid: int, tid: int, rel_us: float, dur_us: float, cat: str = "", **args: Any) -> dict[str, Any]:
    ev: dict[str, Any] = {"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": _ts(rel_us), "dur": round(dur_us, 3)}
    if cat:
        ev["cat"] = cat
    if args:
        ev["args"] = args
    return ev


def _meta() -> list[dict[str, Any]]:
    out = []
    for pid, name, label in ((PID_PY, "Python", "CPU"), (PID_CANN, "CANN", "CPU"),
                             (PID_HW, "Ascend Hardware", "NPU 0"), (PID_HCCL, "HCCL", "NPU 0")):
        out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}})
        out.append({"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": label}})
    out.append({"ph": "M", "name": "thread_name", "pid": PID_HCCL, "tid": TID_GROUP, "args": {"name": "Group 0 Communication"}})
    out.append({"ph": "M", "name": "thread_name", "pid": PID_HW, "tid": TID_STREAM, "args": {"name": "Stream 7"}})
    out.append({"ph": "M", "name": "thread_name", "pid": PID_PY, "tid": TID_MAIN, "args": {"name": "Thread 1"}})
    return out


def build_events(steps: list[SynthStep], markers: bool = True, first_step: int = 1) -> list[dict[str, Any]]:
    """The trace_view.json array for ``steps`` (synthetic)."""
    events = _meta()
    t = 1000.0
    for n, s in enumerate(steps, start=first_step):
        start = t
        op_us = s.host_busy_us / max(1, s.host_ops)
        for i in range(s.host_ops):
            events.append(_x(f"aten::op{i % 7}", PID_PY, TID_MAIN, start + i * op_us, op_us * 0.98, "cpu_op"))
        for i in range(s.enqueues):
            events.append(_x("Enqueue", PID_PY, TID_MAIN, start + i * s.host_busy_us / max(1, s.enqueues), 0.5, "enqueue"))
        if s.graph_launch:
            events.append(_x("AscendCL@aclmdlRIExecuteAsync", PID_CANN, TID_MAIN, start, 20.0))
        k0 = start + s.device_offset_us
        for i in range(s.kernels):
            events.append(_x(f"MatMul_{i % 5}", PID_HW, TID_STREAM, k0 + i * (s.kernel_us + s.kernel_gap_us), s.kernel_us,
                             **{"Task Type": "AI_CORE"}))
        dev_end = k0 + s.kernels * (s.kernel_us + s.kernel_gap_us)
        if s.comm_us:
            events.append(_x(f"hcom_allReduce__1_{n}_1", PID_HCCL, TID_GROUP, dev_end, s.comm_us,
                             count=4 << 20, data_type="FP32"))
            dev_end += s.comm_us
        end = max(start + s.host_busy_us, dev_end)
        if markers:
            events.append(_x(f"ProfilerStep#{n}", PID_PY, TID_MAIN, start, end - start + 1.0, "cpu_op"))
        if s.label:
            events.append(_x(f"mstx_{s.label}", PID_PY, TID_MAIN, start, end - start, "user_annotation"))
        t = end + s.gap_after_us
    return events


def write_rank(root: Path, steps: list[SynthStep], markers: bool = True, rank: int = 0) -> Path:
    """Write ``root/rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json`` (synthetic); return the rank dir."""
    rank_dir = root / f"rank{rank}_ascend_pt"
    out = rank_dir / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True, exist_ok=True)
    (out / "trace_view.json").write_text(json.dumps(build_events(steps, markers)), encoding="utf-8")
    (rank_dir / f"profiler_info_{rank}.json").write_text(json.dumps({"rank_id": rank, "synthetic": True}), encoding="utf-8")
    return rank_dir


# ------------------------------------------------------------------------------ named synthetic fixtures

def prefill_decode_steps(n_prefill: int = 3, n_decode: int = 9) -> list[SynthStep]:
    """Two step-length modes: long prefill steps (~20 ms of kernels) and short decode steps (~2.5 ms)."""
    prefill = SynthStep(kernels=100, kernel_us=200.0)
    decode = SynthStep(kernels=50, kernel_us=50.0)
    out = []
    for i in range(n_prefill + n_decode):
        out.append(prefill if i % 4 == 0 and len([s for s in out if s is prefill]) < n_prefill else decode)
    return out


def host_bound_steps(n: int = 6) -> list[SynthStep]:
    """Host-bound: dense host work (1500 dispatches, 9 ms) while the device runs 1.5 ms of kernels per step."""
    return [SynthStep(host_busy_us=9000.0, host_ops=300, enqueues=1500, device_offset_us=7000.0, kernels=30,
                      kernel_us=50.0, gap_after_us=200.0) for _ in range(n)]


def graph_mode_steps(n: int = 6) -> list[SynthStep]:
    """Graph replay: one graph launch and one host op per step, 400 device kernels per step."""
    return [SynthStep(host_busy_us=50.0, host_ops=1, enqueues=1, device_offset_us=60.0, kernels=400, kernel_us=10.0,
                      graph_launch=True, gap_after_us=500.0) for _ in range(n)]


def comm_bound_steps(n: int = 4) -> list[SynthStep]:
    """Communication-bound: 2 ms of compute then a 6 ms exposed all-reduce per step (2-rank-like, synthetic)."""
    return [SynthStep(kernels=40, kernel_us=50.0, comm_us=6000.0, gap_after_us=100.0) for _ in range(n)]


# ------------------------------------------------------------------------------ synthetic indicator tables

#: every indicator id the reasoning reads, with its unit (for hand-built synthetic indicator sets).
INDICATOR_UNITS: dict[str, str] = {
    "wall_us": "us", "step_count": "steps", "avg_step_us": "us", "device_busy_us": "us", "device_busy_pct": "%",
    "device_idle_pct": "%", "compute_us": "us", "compute_pct": "%", "comm_us": "us", "comm_pct_of_device": "%",
    "comm_exposed_us": "us", "comm_exposed_pct": "%", "comm_overlap_pct": "%", "idle_gap_count": "gaps",
    "idle_gap_mean_us": "us", "idle_gap_max_us": "us", "host_busy_pct": "%", "host_exclusive_us": "us",
    "host_exclusive_pct": "%", "host_exclusive_per_step_us": "us", "copy_device_us": "us", "copy_pct": "%",
    "d2h_per_step_us": "us", "h2d_per_step_us": "us", "host_device_copy_per_step_us": "us",
    "host_copy_pct_of_host_busy": "%", "compute_op_count": "ops", "compute_op_median_us": "us",
    "attention_op_count": "ops", "comm_op_count": "ops", "comm_ops_per_step": "ops/step", "comm_us_per_step": "us",
    "comm_duration_median_us": "us", "comm_message_median_mb": "MiB", "dispatch_op_count": "ops",
    "dispatch_ops_per_step": "ops/step", "sync_op_count": "ops", "sync_ops_per_step": "ops/step", "host_sync_us": "us",
    "sync_pct_of_wall": "%", "host_dispatch_us": "us", "event_count": "events", "device_op_count": "ops", "mac_ratio": "ratio", "mte2_ratio": "ratio", "aiv_vec_ratio": "ratio", "aiv_mte2_ratio": "ratio",
}


def make_indicators(scope: str = "overall", **values: float | None) -> Any:
    """A SYNTHETIC IndicatorSet: given values, every other indicator unavailable ("not set in synthetic table")."""
    from analyzer.indicators import Indicator, IndicatorSet

    unknown = set(values) - set(INDICATOR_UNITS)
    if unknown:
        raise KeyError(f"unknown indicator ids {sorted(unknown)}")
    table = {}
    for k, unit in INDICATOR_UNITS.items():
        v = values.get(k)
        table[k] = Indicator(k, None if v is None else float(v), unit, k, "synthetic", "synthetic", "synthetic",
                             "" if v is not None else "not set in synthetic table")
    return IndicatorSet(scope, table)
