"""The advisor's inputs restricted to one phase scope, as the rest of the analysis scopes them.

The phase plan (:func:`analyzer.phases.plan_phases`) splits a rank into ``overall`` and, when it finds them,
``prefill`` / ``decode`` windows (merged ``[start, end)`` µs ranges on the event table's clock). A phase's inputs
are the rows that *start* inside its windows, the rule ``analyzer.analysis._scope_input`` applies to the kernel
table and the indicators apply to events:

- ``events``: the event rows the rules read (:func:`relevant_events`, selected once per rank by name, so a phase mask
  runs over a few thousand rows instead of the whole table);
- ``kernels``: ``kernel_details.csv`` rows by ``Start Time(us)`` (relative to the trace base, the event clock),
  only when the rank has a trace (without one the rows cannot be placed: the phase says so);
- ``hccl_tasks`` by ``ts_us − base_ts_us``; ``communication.json`` ops by ``Start Timestamp(us) − base_ts_us``;
  ``freq`` samples by ``ts_us`` (the sample in force at the first window start is kept, its value holds there);
- ``env`` is per process, not per phase: a phase leaves it out (the overall scope has it).

An input present for the rank but empty in a phase becomes None with a note naming the phase, so the rules that
need it say ``not evaluated: no ... in the <phase> windows`` rather than ``evaluated: no finding``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from analyzer.advisor.inputs import AdvisorInput
from analyzer.indicators import in_windows_mask
from analyzer.ingest import events as ev

Windows = tuple[tuple[float, float], ...]
#: name prefixes / names of the event rows the schedule rules read (rules_schedule).
PREFIXES = ("AscendCL@", "Node@launch", "GC ")
LOWER_NAMES = frozenset({"gc", "python gc"})
#: and those of the affinity-API rule (rules_affinity; Ascend captures only).
HOST_API_PREFIXES = ("Optimizer.step#",)
HOST_API_LOWER = ("aten::", "npu::")


def _relevant(name: str) -> bool:
    return name == "Free" or name.startswith(PREFIXES) or name.lower() in LOWER_NAMES


def _relevant_with_api(name: str) -> bool:
    return _relevant(name) or name.startswith(HOST_API_PREFIXES) or name.lower().startswith(HOST_API_LOWER)


def relevant_events(events: pd.DataFrame, host_api: bool = True) -> pd.DataFrame:
    """The rows of ``events`` any advisor rule reads (one name test per distinct name, then one ``take``);
    ``host_api=False`` leaves out the ``aten::`` / ``Optimizer.step#`` calls (only the Ascend-only affinity-API
    rule reads them)."""
    if events.empty:
        return events
    return events.take(np.flatnonzero(ev.matches(events["name"], _relevant_with_api if host_api else _relevant)))


def _mask(t_us: np.ndarray, windows: Windows) -> np.ndarray:
    return in_windows_mask(np.asarray(t_us, dtype="float64"), windows)


def _frame(frame: pd.DataFrame | None, col: str, offset: float, windows: Windows) -> pd.DataFrame | None:
    if frame is None or col not in frame.columns:
        return frame
    t = pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype="float64", na_value=np.nan) - offset
    out = frame[_mask(t, windows)]
    return out if len(out) else None


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def _communication(comm: dict[str, Any] | None, base_ts_us: int, windows: Windows) -> dict[str, Any] | None:
    """``communication.json`` keeping the ops whose ``Start Timestamp(us)`` lies in ``windows``."""
    if not comm:
        return comm
    out: dict[str, Any] = {}
    for step, kinds in comm.items():
        if not isinstance(kinds, dict):
            continue
        for kind, ops in kinds.items():
            if not isinstance(ops, dict):
                continue
            for name, op in ops.items():
                info = op.get("Communication Time Info") if isinstance(op, dict) else None
                ts = _float((info or {}).get("Start Timestamp(us)"))
                if name != "Total Op Info" and np.isfinite(ts) and _mask(np.array([ts - base_ts_us]), windows)[0]:
                    out.setdefault(step, {}).setdefault(kind, {})[name] = op
    return out or None


def _freq(freq: pd.DataFrame | None, windows: Windows) -> pd.DataFrame | None:
    """The samples inside ``windows`` plus the one in force at the first window's start."""
    if freq is None or freq.empty or not windows:
        return freq
    t = freq["ts_us"].to_numpy(dtype="float64")
    keep = _mask(t, windows)
    before = np.flatnonzero(t <= windows[0][0])
    if len(before):
        keep[before[-1]] = True
    out = freq[keep]
    return out if len(out) else None


def scoped(inp: AdvisorInput, name: str, windows: Windows, window_us: float | None,
           kernels_placeable: bool) -> AdvisorInput:
    """``inp`` (the rank's overall inputs, events already :func:`relevant_events`) restricted to phase ``name``."""
    notes = dict(inp.notes)
    where = f"in the {name} windows"
    kernels = _frame(inp.kernels, "Start Time(us)", 0.0, windows) if kernels_placeable else None
    if inp.kernels is not None and kernels is None:
        notes["kernels"] = (f"no kernel_details.csv rows {where}" if kernels_placeable else
                            "kernel_details.csv rows cannot be placed in phase windows without the trace clock")
    hccl = _frame(inp.hccl_tasks, "ts_us", float(inp.base_ts_us), windows)
    if inp.hccl_tasks is not None and hccl is None:
        notes["hccl"] = f"no HCCL tasks {where}"
    comm = _communication(inp.communication, inp.base_ts_us, windows)
    if inp.communication is not None and comm is None:
        notes["communication"] = f"no communication.json ops starting {where}"
    freq = _freq(inp.freq, windows)
    if inp.freq is not None and freq is None:
        notes["freq"] = f"no AI Core Freq samples {where}"
    events = inp.events[_mask(inp.events["ts_us"].to_numpy(), windows)] if len(inp.events) else inp.events
    if events.empty:
        notes["events"] = f"no trace events the rules read {where}"
    notes["env"] = "environment variables are per process, not per phase: see the overall scope"
    return replace(inp, events=events, window_us=window_us, kernels=kernels, hccl_tasks=hccl, communication=comm,
                   env=None, freq=freq, notes=notes, scope=name)
