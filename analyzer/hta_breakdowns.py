"""Holistic Trace Analysis' per-stream breakdowns on Kineto traces: idle time (host wait / kernel wait / other),
kernel launch statistics and the kernel-type breakdown — HTA 0.5.0's definitions, over two windows.

Windows: ``hta`` is HTA's default (``TraceAnalysis``: the last ProfilerStep and what it launched dropped,
:func:`analyzer.breakdown.hta_window`); ``capture`` is ndval's (every event of the trace). Both are reported,
named, so a reader comparing with HTA takes ``hta``.

Definitions (HTA 0.5.0, cited by file):

- **idle** (``hta/analyzers/breakdown_analysis.py`` ``_analyze_idle_time_for_stream``): a stream's kernels
  (kernel / memcpy / memset rows, ``cuda_sync`` excluded) sorted by start; each gap = start − end of the previous
  kernel (negative when they overlap; HTA sums it as is). *Host wait*: the kernel's runtime (launch) call started
  after the previous kernel ended; *kernel wait*: otherwise, and the gap is under ``htaKernelWaitUs``
  (``consecutive_kernel_delay``, 30 µs); *other*: the rest. Shares are of the stream's summed idle time.
- **launch** (``hta/analyzers/cuda_kernel_analysis.py`` ``cuda_kernel_launch_stats``): each cudaLaunchKernel /
  cudaLaunchKernelExC / cudaMemcpyAsync / cudaMemsetAsync (and MTIA ``runFunction``) call joined with the GPU
  rows of its correlation id; delay = GPU start − (CPU start + CPU duration), clipped at 0. *Short*: GPU duration
  under the CPU call's; runtime outliers over ``htaRuntimeCutoffUs``; delay outliers over ``htaLaunchDelayCutoffUs``.
- **kernel types** (``breakdown_analysis.py`` ``_get_gpu_kernel_type_time``, ``hta/utils/utils.py``): each GPU row
  is COMMUNICATION (``^nccl.*Kernel``), MEMORY (``^Memcpy|^Memset|^dma``) or COMPUTATION (neither, and no
  ``Sync`` / ``Memcpy`` / ``Memset`` in the name); each type's intervals are merged and the time is split by
  which set of types is running.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from analyzer import breakdown
from analyzer.ingest import events as ev
from analyzer.thresholds import Thresholds

LAUNCH_NAMES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync",
                "runFunction - job_prep_and_submit_for_execution")
KERNEL_CATEGORIES = (ev.COMPUTE, ev.COMMUNICATION, ev.MEMCPY, ev.MEMSET)
COMM_RE = re.compile(r"^nccl.*Kernel")
MEMORY_RE = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")
NOT_COMPUTE_RE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")
TYPES = ("COMPUTATION", "COMMUNICATION", "MEMORY")


def _runtime_start(events: pd.DataFrame) -> pd.Series:
    """Start (µs) of the host row of each correlation id (the launch call)."""
    host = events[(events["side"] == ev.SIDE_HOST) & (events["corr"] >= 0)]
    return host.groupby("corr")["ts_us"].first()


def idle_breakdown(events: pd.DataFrame, th: Thresholds) -> list[dict[str, Any]]:
    """Per stream: host wait / kernel wait / other idle µs and % (module docstring), with gap counts."""
    dev = events[(events["side"] == ev.SIDE_DEVICE) & events["category"].isin(KERNEL_CATEGORIES)
                 & (events["sub"] != "device_sync")]
    if dev.empty:
        return []
    runtime = _runtime_start(events)
    out = []
    for stream, k in dev.groupby("tid", sort=True):
        k = k.sort_values("ts_us", kind="stable")
        ts, end = k["ts_us"].to_numpy(dtype="float64"), (k["ts_us"] + k["dur_us"]).to_numpy(dtype="float64")
        prev_end = np.concatenate([[np.nan], end[:-1]])
        gap = ts - prev_end
        rt = k["corr"].map(runtime).to_numpy(dtype="float64")
        host = rt > prev_end
        kernel = ~host & (gap < th.v("htaKernelWaitUs"))
        other = ~host & ~kernel & np.isfinite(gap)
        parts = {"host_wait": np.nansum(gap[host]), "kernel_wait": np.nansum(gap[kernel]), "other": np.nansum(gap[other])}
        total = float(sum(parts.values()))
        row: dict[str, Any] = {"stream": int(str(stream))}
        for name, us in parts.items():
            row[f"{name}_us"] = round(float(us), 3)
            row[f"{name}_pct"] = round(100.0 * float(us) / float(total), 3) if total else None
        row.update({"host_wait_gaps": int(host.sum()), "kernel_wait_gaps": int(kernel.sum()),
                    "other_gaps": int(other.sum()), "idle_us": round(float(total), 3)})
        out.append(row)
    return out


def launch_stats(events: pd.DataFrame, th: Thresholds, window_us: float | None) -> dict[str, Any] | None:
    """HTA's launch table summarised: counts, short kernels (and their share of the window), outliers, delay
    quantiles (µs). None without launch calls."""
    host = events[(events["side"] == ev.SIDE_HOST) & (events["corr"] >= 0)
                  & ev.matches(events["name"], lambda v: v in LAUNCH_NAMES)]
    dev = events[(events["side"] == ev.SIDE_DEVICE) & (events["corr"] >= 0)]
    if host.empty or dev.empty:
        return None
    j = host[["corr", "ts_us", "dur_us"]].merge(dev[["corr", "ts_us", "dur_us"]], on="corr", suffixes=("_cpu", "_gpu"))
    if j.empty:
        return None
    delay = np.clip((j["ts_us_gpu"] - j["ts_us_cpu"] - j["dur_us_cpu"]).to_numpy(dtype="float64"), 0.0, None)
    short = (j["dur_us_gpu"] < j["dur_us_cpu"]).to_numpy()
    short_us = float(j["dur_us_gpu"].to_numpy()[short].sum())
    q = np.quantile(delay, [0.5, 0.9, 0.99])
    return {
        "launches": len(j), "short_kernels": int(short.sum()), "short_kernel_us": round(short_us, 3),
        "short_kernel_share_pct": round(100.0 * short_us / window_us, 3) if window_us else None,
        "runtime_outliers": int((j["dur_us_cpu"] > th.v("htaRuntimeCutoffUs")).sum()),
        "launch_delay_outliers": int((delay > th.v("htaLaunchDelayCutoffUs")).sum()),
        "launch_delay_us": {"p50": round(float(q[0]), 3), "p90": round(float(q[1]), 3), "p99": round(float(q[2]), 3),
                            "max": round(float(delay.max()), 3), "mean": round(float(delay.mean()), 3)},
    }


def kernel_type(name: str) -> str | None:
    """HTA's kernel type of a GPU row's name (None: OTHER, not counted)."""
    if COMM_RE.match(name):
        return "COMMUNICATION"
    if MEMORY_RE.match(name):
        return "MEMORY"
    return None if NOT_COMPUTE_RE.match(name) else "COMPUTATION"


def _merged(ts: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(ts, kind="stable")
    ts, end = ts[order], end[order]
    run_end = np.maximum.accumulate(end)
    new = np.concatenate([[True], ts[1:] > run_end[:-1]])
    starts = ts[new]
    ends = np.maximum.reduceat(end, np.flatnonzero(new))
    return starts, ends


def kernel_type_breakdown(events: pd.DataFrame) -> list[dict[str, Any]]:
    """Time (µs, %) per set of running kernel types, e.g. ``COMPUTATION overlapping COMMUNICATION``."""
    dev = events[events["side"] == ev.SIDE_DEVICE]
    if dev.empty:
        return []
    names = dev["name"].astype(str)
    kinds = names.map({n: kernel_type(n) for n in names.unique()})
    bounds, deltas = [], []
    for bit, t in enumerate(TYPES):
        sel = (kinds == t).to_numpy()
        if not sel.any():
            continue
        s, e = _merged(dev["ts_us"].to_numpy(dtype="float64")[sel], (dev["ts_us"] + dev["dur_us"]).to_numpy(dtype="float64")[sel])
        bounds += [s, e]
        deltas += [np.full(len(s), 1 << bit), np.full(len(e), -(1 << bit))]
    if not bounds:
        return []
    t_all, d_all = np.concatenate(bounds), np.concatenate(deltas)
    order = np.lexsort((d_all, t_all))
    t_all, running = t_all[order], np.cumsum(d_all[order])
    seg = np.diff(t_all)
    out = pd.Series(seg, index=running[:-1]).groupby(level=0).sum()
    out = out[out.index > 0]
    total = float(out.sum())
    rows = [{"kernel_type": " overlapping ".join(t for b, t in enumerate(TYPES) if int(str(m)) & (1 << b)),
             "time_us": round(float(us), 3), "pct": round(100.0 * float(us) / total, 3) if total else None}
            for m, us in out.items()]
    return sorted(rows, key=lambda r: -r["time_us"])


def breakdowns(events: pd.DataFrame, th: Thresholds) -> dict[str, Any] | None:
    """The three breakdowns over HTA's window and over the capture (None without device rows)."""
    if events.empty or not (events["side"] == ev.SIDE_DEVICE).any():
        return None
    out: dict[str, Any] = {"definitions": "HolisticTraceAnalysis 0.5.0 (analyzer.hta_breakdowns)"}
    for label, frame in (("hta", breakdown.hta_window(events)), ("capture", events)):
        dev = frame[frame["side"] == ev.SIDE_DEVICE]
        span = float((dev["ts_us"] + dev["dur_us"]).max() - dev["ts_us"].min()) if len(dev) else None
        out[label] = {"gpu_span_us": None if span is None else round(span, 3), "idle_by_stream": idle_breakdown(frame, th),
                      "launch": launch_stats(frame, th, span), "kernel_types": kernel_type_breakdown(frame)}
    out["windows"] = {"hta": "HTA's default: the last ProfilerStep and what it launched dropped",
                      "capture": "ndval's: every event of the trace"}
    return out
