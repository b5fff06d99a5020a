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
from dataclasses import dataclass
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


@dataclass(frozen=True)
class _Rows:
    """The columns the breakdowns read, as arrays, computed once per event table (a trace holds millions of rows:
    names are classified once per distinct name, no sub-table is copied)."""

    ts: np.ndarray
    end: np.ndarray
    dur: np.ndarray
    tid: np.ndarray
    corr: np.ndarray
    device: np.ndarray
    kernel: np.ndarray
    launch: np.ndarray
    ktype: np.ndarray
    rt_corr: np.ndarray
    rt_ts: np.ndarray

    @classmethod
    def of(cls, events: pd.DataFrame) -> _Rows:
        ts = events["ts_us"].to_numpy(dtype="float64")
        dur = events["dur_us"].to_numpy(dtype="float64")
        corr = events["corr"].to_numpy(dtype="int64")
        device = (events["side"] == ev.SIDE_DEVICE).to_numpy(dtype=bool)
        kernel = device & events["category"].isin(KERNEL_CATEGORIES).to_numpy(dtype=bool) \
            & (events["sub"] != "device_sync").to_numpy(dtype=bool)
        host_corr = ~device & (corr >= 0)
        launch = host_corr & ev.matches(events["name"], lambda v: v in LAUNCH_NAMES)
        hc = np.flatnonzero(host_corr)
        order = hc[np.argsort(corr[hc], kind="stable")]
        rt_corr, first = np.unique(corr[order], return_index=True)
        ktype = ev.per_value(events["name"], _type_code, np.int64)
        return cls(ts, ts + dur, dur, events["tid"].to_numpy(dtype="int64"), corr, device, kernel, launch, ktype,
                   rt_corr, ts[order[first]])

    def runtime_start(self, rows: np.ndarray) -> np.ndarray:
        """Start of the host row (launch call) of each of ``rows``' correlation ids; NaN when none."""
        if not len(self.rt_corr):
            return np.full(len(rows), np.nan)
        c = self.corr[rows]
        pos = np.clip(np.searchsorted(self.rt_corr, c), 0, len(self.rt_corr) - 1)
        return np.where((c >= 0) & (self.rt_corr[pos] == c), self.rt_ts[pos], np.nan)


def _type_code(name: str) -> int:
    t = kernel_type(name)
    return -1 if t is None else TYPES.index(t)


def idle_breakdown(events: pd.DataFrame, th: Thresholds, rows: _Rows | None = None,
                   keep: np.ndarray | None = None) -> list[dict[str, Any]]:
    """Per stream: host wait / kernel wait / other idle µs and % (module docstring), with gap counts; ``keep``
    restricts to a window's rows."""
    r = rows or _Rows.of(events)
    sel = np.flatnonzero(r.kernel if keep is None else r.kernel & keep)
    if not len(sel):
        return []
    sel = sel[np.lexsort((r.ts[sel], r.tid[sel]))]
    tid, ts, end = r.tid[sel], r.ts[sel], r.end[sel]
    same = np.concatenate([[False], tid[1:] == tid[:-1]])
    prev_end = np.where(same, np.concatenate([[np.nan], end[:-1]]), np.nan)
    gap = ts - prev_end
    host = r.runtime_start(sel) > prev_end
    kernel = ~host & (gap < th.v("htaKernelWaitUs"))
    other = ~host & ~kernel & np.isfinite(gap)
    streams, inv = np.unique(tid, return_inverse=True)
    out = []
    sums = {name: np.bincount(inv, weights=np.where(m, gap, 0.0), minlength=len(streams))
            for name, m in (("host_wait", host), ("kernel_wait", kernel), ("other", other))}
    counts = {name: np.bincount(inv, weights=m.astype(float), minlength=len(streams))
              for name, m in (("host_wait", host), ("kernel_wait", kernel), ("other", other))}
    for i, stream in enumerate(streams):
        total = float(sum(sums[n][i] for n in sums))
        row: dict[str, Any] = {"stream": int(stream)}
        for name in sums:
            us = float(sums[name][i])
            row[f"{name}_us"] = round(us, 3)
            row[f"{name}_pct"] = round(100.0 * us / total, 3) if total else None
        row.update({f"{n}_gaps": int(counts[n][i]) for n in counts})
        row["idle_us"] = round(total, 3)
        out.append(row)
    return out


def launch_stats(events: pd.DataFrame, th: Thresholds, window_us: float | None, rows: _Rows | None = None,
                 keep: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, Any] | None:
    """HTA's launch table summarised: counts, short kernels (and their share of the window), outliers, delay
    quantiles (µs). None without launch calls. ``keep``: (host rows, device rows) of a window."""
    r = rows or _Rows.of(events)
    cpu = np.flatnonzero(r.launch if keep is None else r.launch & keep[0])
    gpu = np.flatnonzero(r.device & (r.corr >= 0) if keep is None else r.device & (r.corr >= 0) & keep[1])
    if not len(cpu) or not len(gpu):
        return None
    gpu = gpu[np.argsort(r.corr[gpu], kind="stable")]
    lo = np.searchsorted(r.corr[gpu], r.corr[cpu], "left")
    hi = np.searchsorted(r.corr[gpu], r.corr[cpu], "right")
    n = hi - lo
    if not n.sum():
        return None
    c = np.repeat(cpu, n)
    offsets = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)  # 0..n-1 within each launch's range
    g = gpu[np.repeat(lo, n) + offsets]
    delay = np.clip(r.ts[g] - r.ts[c] - r.dur[c], 0.0, None)
    short = r.dur[g] < r.dur[c]
    short_us = float(r.dur[g][short].sum())
    q = np.quantile(delay, [0.5, 0.9, 0.99])
    return {
        "launches": len(c), "short_kernels": int(short.sum()), "short_kernel_us": round(short_us, 3),
        "short_kernel_share_pct": round(100.0 * short_us / window_us, 3) if window_us else None,
        "runtime_outliers": int((r.dur[c] > th.v("htaRuntimeCutoffUs")).sum()),
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
    return ts[new], np.maximum.reduceat(end, np.flatnonzero(new))


def kernel_type_breakdown(events: pd.DataFrame, rows: _Rows | None = None,
                          keep: np.ndarray | None = None) -> list[dict[str, Any]]:
    """Time (µs, %) per set of running kernel types, e.g. ``COMPUTATION overlapping COMMUNICATION``."""
    r = rows or _Rows.of(events)
    dev = r.device if keep is None else r.device & keep
    bounds, deltas = [], []
    for bit in range(len(TYPES)):
        sel = dev & (r.ktype == bit)
        if not sel.any():
            continue
        s, e = _merged(r.ts[sel], r.end[sel])
        bounds += [s, e]
        deltas += [np.full(len(s), 1 << bit), np.full(len(e), -(1 << bit))]
    if not bounds:
        return []
    t_all, d_all = np.concatenate(bounds), np.concatenate(deltas)
    order = np.lexsort((d_all, t_all))
    t_all, running = t_all[order], np.cumsum(d_all[order])
    seg = np.bincount(running[:-1], weights=np.diff(t_all), minlength=1 << len(TYPES))
    total = float(seg[1:].sum())
    out = [{"kernel_type": " overlapping ".join(t for b, t in enumerate(TYPES) if m & (1 << b)),
            "time_us": round(float(seg[m]), 3), "pct": round(100.0 * float(seg[m]) / total, 3) if total else None}
           for m in range(1, len(seg)) if seg[m] > 0]
    return sorted(out, key=lambda x: -x["time_us"])


def breakdowns(events: pd.DataFrame, th: Thresholds) -> dict[str, Any] | None:
    """The three breakdowns over HTA's window and over the capture (None without device rows)."""
    if events.empty or not (events["side"] == ev.SIDE_DEVICE).any():
        return None
    rows = _Rows.of(events)
    keep_host, keep_dev = breakdown.hta_window_masks(events)
    out: dict[str, Any] = {"definitions": "HolisticTraceAnalysis 0.5.0 (analyzer.hta_breakdowns)"}
    windows = (("hta", keep_host | keep_dev, (keep_host, keep_dev)), ("capture", None, None))
    for label, keep, split in windows:
        dev = rows.device if keep is None else rows.device & keep
        span = float(rows.end[dev].max() - rows.ts[dev].min()) if dev.any() else None
        out[label] = {"gpu_span_us": None if span is None else round(span, 3),
                      "idle_by_stream": idle_breakdown(events, th, rows, keep),
                      "launch": launch_stats(events, th, span, rows, split),
                      "kernel_types": kernel_type_breakdown(events, rows, keep)}
    out["windows"] = {"hta": "HTA's default: the last ProfilerStep and what it launched dropped",
                      "capture": "ndval's: every event of the trace"}
    return out
