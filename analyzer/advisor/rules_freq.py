"""AI-Core frequency drop: operators that ran below the rated AI-Core frequency.

Source: msprof-analyze 26.2.0 ``msprof_analyze/advisor/analyzer/computation/ai_core_freq/ai_core_freq_checker.py``
(``decrease_freq_ratio = Σ (max_freq − f) / (max_freq · n)`` over an operator name's calls, reported when
``≥ frequency_threshold`` of ``config/config.ini``, 0.05), with ``max_freq`` = ``aic_frequency`` of the device info
(``dataset/profiling/device_info.py``) and the frequency of one call = the lowest ``AI Core Freq`` sample in force
during it (``dataset/timeline_op_collector/timeline_op_collector.py`` ``FrequencyCollector.get_op_frequency``).

Here a call's samples are those whose interval ``[ts_i, ts_{i+1})`` overlaps ``[start, end]`` (msprof-analyze's
walk also counts samples that ended before the call started, once); calls that start before the first sample
have no frequency and are left out. The calls are the compute rows of the kernel table (AI_CORE, AI_VECTOR_CORE,
MIX_AIC, MIX_AIV).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analyzer.advisor import kernels as K
from analyzer.advisor.finding import Finding, Rule
from analyzer.advisor.inputs import AdvisorInput
from analyzer.thresholds import Thresholds, passes

FREQ = Rule(
    "advisor.aicore-freq", "Operators running below the rated AI-Core frequency", "computation",
    ("kernel_details.csv (or the DB's COMPUTE_TASK_INFO + TASK): Name, Accelerator Core, Start Time(us), Duration(us)",
     "trace_view.json 'AI Core Freq' counter (args.MHz) or the DB's AICORE_FREQ",
     "info.json.* DeviceInfo aic_frequency (rated MHz)"),
    ("advisorFreqDropRatio", "advisorTopGroups"),
    "msprof-analyze 26.2.0 advisor/analyzer/computation/ai_core_freq/ai_core_freq_checker.py, config/config.ini "
    "frequency_threshold",
    "Check the device's power and thermal state (npu-smi info: power, temperature, AI-Core frequency) and the "
    "power-saving / frequency policy; spread load across devices if one throttles",
    "Re-capture: the listed operators' samples sit at the rated frequency and their duration falls",
    "Raising power limits or disabling power saving affects the whole node's power budget and cooling", subject="op")
COMPUTE_CORES = ("AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV")


def call_frequency(start_us: np.ndarray, end_us: np.ndarray, sample_ts_us: np.ndarray,
                   sample_mhz: np.ndarray) -> np.ndarray:
    """Per call, the lowest sample in force during ``[start, end]`` (NaN before the first sample): the samples
    ``i0 .. i1`` with ``i0`` the one in force at ``start`` and ``i1`` the last one starting at or before ``end``."""
    i0 = np.searchsorted(sample_ts_us, start_us, side="right") - 1
    i1 = np.searchsorted(sample_ts_us, end_us, side="right") - 1
    out = np.full(len(start_us), np.nan)
    ok = i0 >= 0
    if not ok.any():
        return out
    a, b = i0[ok], np.maximum(i1[ok], i0[ok]) + 1
    padded = np.append(sample_mhz.astype("float64"), np.inf)  # reduceat needs every end index in range
    pairs = np.column_stack([a, b]).ravel()
    out[ok] = np.minimum.reduceat(padded, pairs)[::2]
    return out


def drop_ratio(freq_mhz: np.ndarray, rated_mhz: float) -> float:
    """``Σ (rated − f) / (rated · n)`` (ai_core_freq_checker.py)."""
    return float(np.sum(rated_mhz - freq_mhz) / (rated_mhz * len(freq_mhz)))


def aicore_freq(inp: AdvisorInput, th: Thresholds) -> Finding | None:
    """Operator names whose calls' frequency drop ratio reaches ``advisorFreqDropRatio``; evidence: calls, total
    duration and its share of the compute time, drop ratio, mean / max / min frequency."""
    kd, fr, rated = inp.kernels, inp.freq, inp.rated_freq_mhz
    if kd is None or fr is None or fr.empty or not rated:
        return None
    compute = K.text(kd, "Accelerator Core").isin(COMPUTE_CORES).to_numpy()
    start, dur = K.numeric(kd, "Start Time(us)")[compute], np.nan_to_num(K.numeric(kd, "Duration(us)"))[compute]
    f = call_frequency(start, start + dur, fr["ts_us"].to_numpy(dtype="float64"), fr["mhz"].to_numpy(dtype="float64"))
    calls = pd.DataFrame({"name": K.text(kd, "Name")[compute].to_numpy(), "dur": dur, "f": f}).dropna(subset=["f"])
    if calls.empty:
        return None
    total = float(dur.sum()) or 1.0
    rows = []
    for name, g in calls.groupby("name", sort=False):
        ratio = drop_ratio(g["f"].to_numpy(), rated)
        if passes(ratio, th["advisorFreqDropRatio"]):
            d = float(g["dur"].sum())
            rows.append((name, len(g), d, round(100.0 * d / total, 3), round(100.0 * ratio, 2),
                         round(float(g["f"].mean()), 2), float(g["f"].max()), float(g["f"].min())))
    if not rows:
        return None
    rows.sort(key=lambda r: (-float(r[2]), -float(r[4])))  # msprof-analyze: total duration, then drop ratio
    return Finding(FREQ, f"{len(rows)} operator(s) ran ≥ {100 * th.v('advisorFreqDropRatio'):g} % below the rated "
                   f"{rated:g} MHz", ("op", "calls", "dur_us", "compute_share_pct", "freq_drop_pct", "mean_mhz",
                                      "max_mhz", "min_mhz"),
                   tuple(rows[: int(th.v("advisorTopGroups"))]), sum(float(r[2]) for r in rows))


RULES = ((FREQ, aicore_freq),)
