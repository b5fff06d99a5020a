"""What the advisor rules read of one rank, gathered once: environment variables, the kernel table, the
HCCL task detail, ``communication.json``, the event table and the analysed window.

- ``env``: ``profiler_metadata.json`` ``ENV_VARIABLES`` (torch_npu writes every variable it knows, ``""`` when
  unset); None when the file is absent (Kineto traces, DB exports without it).
- ``kernels``: ``kernel_details.csv`` (canonical table; ``Start Time(us)`` relative to the trace base).
- ``freq``: the ``AI Core Freq`` counter samples (``ts_us`` relative to the trace base, ``mhz``) of
  ``trace_view.json`` (``C`` events, read in the same pass as the HCCL tasks) or the DB's ``AICORE_FREQ`` table;
  ``rated_freq_mhz``: ``aic_frequency`` of the device info (``info.json.*`` ``DeviceInfo``, as msprof-analyze's
  ``dataset/profiling/device_info.py`` reads it); None when the capture does not say.
- ``hccl_tasks``: one row per HCCL task of the ``HCCL`` / ``Communication`` process of ``trace_view.json``
  (``Memcpy``, ``Reduce_Inline``...; ``Notify*`` kept too), with the collective it belongs to (the last
  ``hcom_*`` op started before it on that process, the grouping msprof-analyze's
  ``dataset/communication/hccl_detail_dataset.py`` uses), ``transport``, ``link``, ``size_bytes``, ``dur_us``. The
  event table keeps no transport / link type, so these few args are read here from the file itself;
  a trace over ``advisorHcclScanMaxMb`` MiB is not scanned (the rules that need it say so).
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from analyzer.thresholds import Thresholds
from ndval.core.units import MIB_BYTES

HCCL_PROCESSES = ("HCCL", "Communication")
HCCL_COLUMNS = ("op", "task", "transport", "link", "size_bytes", "dur_us", "ts_us")


@dataclass
class AdvisorInput:
    """Everything the rules of one rank read (see module docstring); ``notes`` says what could not be read."""

    rank: int
    fmt: str
    events: pd.DataFrame
    window_us: float | None
    base_ts_us: int = 0
    kernels: pd.DataFrame | None = None
    env: dict[str, str] | None = None
    hccl_tasks: pd.DataFrame | None = None
    communication: dict[str, Any] | None = None
    ai_core_num: int | None = None
    aiv_num: int | None = None
    step_count: int = 0
    notes: dict[str, str] = field(default_factory=dict)
    freq: pd.DataFrame | None = None
    rated_freq_mhz: float | None = None
    #: the scope these inputs cover: ``overall`` or a phase (analyzer.advisor.scope)
    scope: str = "overall"


def env_variables(meta: dict[str, Any]) -> dict[str, str] | None:
    """``ENV_VARIABLES`` of ``profiler_metadata.json`` as strings; None without the file or the key."""
    md = meta.get("profiler_metadata")
    env = md.get("ENV_VARIABLES") if isinstance(md, dict) else None
    if not isinstance(env, dict):
        return None
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def core_counts(meta: dict[str, Any]) -> tuple[int | None, int | None]:
    """``(ai_core_num, aiv_num)`` from the capture's device info (``info.json`` keys, also accepted at the top
    level of ``profiler_info``); None when the capture does not say (the shared exports do not)."""
    found: list[int | None] = []
    for key in ("ai_core_num", "aiv_num"):
        value = None
        for src in (meta.get("device_info"), meta.get("profiler_info"), meta):
            if isinstance(src, dict) and str(src.get(key, "")).strip().isdigit():
                value = int(str(src[key]).strip())
                break
        found.append(value)
    return found[0], found[1]


def device_info(rank_path: Path) -> dict[str, Any]:
    """The first ``DeviceInfo`` entry of the capture's ``info.json.*`` (``PROF_*/device_*/`` or the rank folder;
    ``*.done`` markers skipped), as msprof-analyze's ``DeviceInfoParser`` reads it; ``{}`` when there is none."""
    if not rank_path.is_dir():
        return {}
    for pattern in ("info.json.*", "PROF_*/device_*/info.json.*", "*/PROF_*/device_*/info.json.*"):
        for path in sorted(rank_path.glob(pattern)):
            if path.name.endswith("done"):
                continue
            try:
                info = json.loads(path.read_bytes())
            except (ValueError, OSError):
                continue
            devices = info.get("DeviceInfo") if isinstance(info, dict) else None
            if isinstance(devices, list) and devices and isinstance(devices[0], dict):
                return devices[0]
    return {}


def rated_frequency(meta: dict[str, Any]) -> float | None:
    """``aic_frequency`` (MHz) of the device info, None when absent or not a positive number."""
    for src in (meta.get("device_info"), meta.get("profiler_info"), meta):
        value = src.get("aic_frequency") if isinstance(src, dict) else None
        mhz = _number(value)
        if mhz > 0:
            return mhz
    return None


def _pid(event: dict[str, Any]) -> int | str | None:
    """The event's ``pid`` when it is a plain int or string (a hostile trace may put a list there)."""
    pid = event.get("pid")
    return pid if isinstance(pid, int | str) else None


def _args(event: dict[str, Any]) -> dict[str, Any]:
    args = event.get("args")
    return args if isinstance(args, dict) else {}


def _number(value: Any) -> float:
    """A numeric field of an event, 0.0 when missing or not a finite number (the row is kept, the value unknown)."""
    try:
        out = float(value or 0)
    except (TypeError, ValueError):
        return 0.0
    return out if math.isfinite(out) else 0.0


def _hccl_pids(trace: list[Any]) -> set[int | str]:
    return {pid for e in trace if isinstance(e, dict) and e.get("ph") == "M" and e.get("name") == "process_name"
            and _args(e).get("name") in HCCL_PROCESSES and (pid := _pid(e)) is not None}


FREQ_NAME = "AI Core Freq"


def freq_from_trace(trace: Any, base_ts_us: int) -> pd.DataFrame:
    """``(ts_us, mhz)`` rows of the ``AI Core Freq`` counter events (``ph: C``, ``args.MHz``), time order."""
    events = trace if isinstance(trace, list) else trace.get("traceEvents", []) if isinstance(trace, dict) else []
    rows = [(_number(e.get("ts")) - base_ts_us, _number(_args(e).get("MHz"))) for e in events
            if isinstance(e, dict) and e.get("ph") == "C" and e.get("name") == FREQ_NAME] if isinstance(events, list) else []
    return pd.DataFrame(rows, columns=["ts_us", "mhz"]).sort_values("ts_us", kind="stable").reset_index(drop=True)


def freq_from_db(db_path: Path | None, base_ts_us: int) -> pd.DataFrame | None:
    """The DB export's ``AICORE_FREQ`` (``timestampNs``, ``freq`` MHz) as ``(ts_us, mhz)``; None without the table."""
    if db_path is None or not db_path.is_file():
        return None
    try:
        with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as con:
            if not _has_table(con, "AICORE_FREQ"):
                return None
            rows = con.execute("SELECT timestampNs / 1000.0, freq FROM AICORE_FREQ ORDER BY timestampNs").fetchall()
    except sqlite3.Error:
        return None
    frame = pd.DataFrame(rows, columns=["ts_us", "mhz"])
    frame["ts_us"] -= base_ts_us
    return frame if len(frame) else None


def hccl_tasks_from_trace(trace: Any) -> pd.DataFrame:
    """HCCL task rows (:data:`HCCL_COLUMNS`) of a parsed ``trace_view.json`` array (module docstring)."""
    events = trace if isinstance(trace, list) else trace.get("traceEvents", []) if isinstance(trace, dict) else []
    pids = _hccl_pids(events)
    if not isinstance(events, list):
        events = []
    rows = [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and _pid(e) in pids]
    rows.sort(key=lambda e: _number(e.get("ts")))
    out: list[tuple[Any, ...]] = []
    op = ""
    for e in rows:
        name, args = str(e.get("name", "")), _args(e)
        if name.startswith("hcom"):
            op = name
            continue
        out.append((op, name, str(args.get("transport type", "")), str(args.get("link type", "")),
                    _number(args.get("size(Byte)")), _number(e.get("dur")), _number(e.get("ts"))))
    return pd.DataFrame(out, columns=list(HCCL_COLUMNS))


def read_hccl_tasks(trace_path: Path | None, th: Thresholds,
                    base_ts_us: int = 0) -> tuple[pd.DataFrame | None, str, pd.DataFrame | None]:
    """:func:`hccl_tasks_from_trace` and :func:`freq_from_trace` of ``trace_path`` (one parse); ``(None, why,
    None)`` when absent, too large or unreadable; the frequency frame is None when the trace has no samples."""
    if trace_path is None or not trace_path.is_file():
        return None, "no trace_view.json (HCCL task detail)", None
    size_mb = trace_path.stat().st_size / MIB_BYTES
    if size_mb > th.v("advisorHcclScanMaxMb"):
        return None, f"{trace_path}: {size_mb:.0f} MiB, over advisorHcclScanMaxMb: HCCL task detail not scanned", None
    try:
        trace = json.loads(trace_path.read_bytes())
    except (ValueError, OSError) as exc:
        return None, f"{trace_path}: HCCL task detail unreadable ({exc})", None
    frame, freq = hccl_tasks_from_trace(trace), freq_from_trace(trace, base_ts_us)
    freq_or_none = freq if len(freq) else None
    if len(frame):
        return frame, "", freq_or_none
    return None, f"{trace_path}: no HCCL / Communication process tasks", freq_or_none


_DB_TASKS = """
SELECT so.value, st.value, tt.name, lt.name, ci.size, (t.endNs - t.startNs) / 1000.0, t.startNs / 1000.0
FROM COMMUNICATION_TASK_INFO ci
JOIN TASK t ON ci.globalTaskId = t.globalTaskId
JOIN COMMUNICATION_OP o ON ci.opId = o.opId
JOIN STRING_IDS so ON o.opName = so.id
JOIN STRING_IDS st ON ci.taskType = st.id
LEFT JOIN ENUM_HCCL_TRANSPORT_TYPE tt ON ci.transportType = tt.id
LEFT JOIN ENUM_HCCL_LINK_TYPE lt ON ci.linkType = lt.id
ORDER BY t.startNs
"""


def read_hccl_tasks_db(db_path: Path | None) -> tuple[pd.DataFrame | None, str]:
    """:data:`HCCL_COLUMNS` rows of a torch_npu DB export (``COMMUNICATION_TASK_INFO`` joined with ``TASK`` for
    times, ``COMMUNICATION_OP`` for the collective, ``STRING_IDS`` / ``ENUM_HCCL_*`` for names); ``(None, why)``
    when the tables are absent or empty."""
    if db_path is None or not db_path.is_file():
        return None, "no trace_view.json or DB export (HCCL task detail)"
    try:
        with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as con:
            rows = con.execute(_DB_TASKS).fetchall()
    except sqlite3.Error as exc:
        return None, f"{db_path}: HCCL task tables unreadable ({exc})"
    frame = pd.DataFrame(rows, columns=list(HCCL_COLUMNS)).fillna({"transport": "", "link": ""})
    return (frame, "") if len(frame) else (None, f"{db_path}: COMMUNICATION_TASK_INFO is empty")


_DB_KERNELS = """
SELECT ci.globalTaskId, sn.value, so.value, stt.value, t.startNs, t.endNs, ci.blockDim, ci.mixBlockDim,
       sis.value, sos.value, sit.value, sot.value
FROM COMPUTE_TASK_INFO ci
JOIN TASK t ON ci.globalTaskId = t.globalTaskId
LEFT JOIN STRING_IDS sn ON ci.name = sn.id LEFT JOIN STRING_IDS so ON ci.opType = so.id
LEFT JOIN STRING_IDS stt ON ci.taskType = stt.id LEFT JOIN STRING_IDS sis ON ci.inputShapes = sis.id
LEFT JOIN STRING_IDS sos ON ci.outputShapes = sos.id LEFT JOIN STRING_IDS sit ON ci.inputDataTypes = sit.id
LEFT JOIN STRING_IDS sot ON ci.outputDataTypes = sot.id
"""
_DB_COMM_OPS = "SELECT s.value, o.startNs, o.endNs FROM COMMUNICATION_OP o JOIN STRING_IDS s ON o.opName = s.id"
_DB_PMU = "SELECT p.globalTaskId, s.value, p.value FROM TASK_PMU_INFO p JOIN STRING_IDS s ON p.name = s.id"
_KD_COLUMNS = ("Name", "Type", "Accelerator Core", "start_ns", "end_ns", "Block Dim", "Mix Block Dim", "Input Shapes",
               "Output Shapes", "Input Data Types", "Output Data Types")


def _pmu_name(name: str) -> str:
    """A ``TASK_PMU_INFO`` metric as the ``kernel_details.csv`` column it corresponds to."""
    if name == "aic_total_time":
        return "aicore_time(us)"
    if name == "aiv_total_time":
        return "aiv_time(us)"
    return f"{name}(us)" if name.endswith("_time") else name


def kernels_from_db(db_path: Path, base_ts_us: int) -> tuple[pd.DataFrame | None, str]:
    """A ``kernel_details.csv``-shaped table of a torch_npu DB export: ``COMPUTE_TASK_INFO`` + ``TASK`` (times,
    ``Start Time(us)`` relative to ``base_ts_us``) + ``TASK_PMU_INFO`` pivoted to the ratio / time columns, plus
    one ``HCCL`` row per ``COMMUNICATION_OP`` (kernel_details.csv lists the collectives too)."""
    try:
        with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as con:
            tasks = con.execute(_DB_KERNELS).fetchall()
            comm = con.execute(_DB_COMM_OPS).fetchall()
            pmu = con.execute(_DB_PMU).fetchall() if _has_table(con, "TASK_PMU_INFO") else []
    except sqlite3.Error as exc:
        return None, f"{db_path}: compute task tables unreadable ({exc})"
    if not tasks:
        return None, f"{db_path}: COMPUTE_TASK_INFO is empty"
    kd = pd.DataFrame([t[1:] for t in tasks], columns=list(_KD_COLUMNS), index=[t[0] for t in tasks])
    if pmu:
        wide = pd.DataFrame(pmu, columns=["task", "metric", "value"]).pivot_table(
            index="task", columns="metric", values="value", aggfunc="first")
        kd = kd.join(wide.rename(columns=_pmu_name))
    hccl = pd.DataFrame([(n, "hcom", "HCCL", a, b) for n, a, b in comm],
                        columns=["Name", "Type", "Accelerator Core", "start_ns", "end_ns"])
    kd = pd.concat([kd, hccl], ignore_index=True)
    kd["Start Time(us)"] = kd["start_ns"] / 1000.0 - base_ts_us
    kd["Duration(us)"] = (kd["end_ns"] - kd["start_ns"]) / 1000.0
    return kd.drop(columns=["start_ns", "end_ns"]).sort_values("Start Time(us)", kind="stable").reset_index(drop=True), ""


def _has_table(con: sqlite3.Connection, name: str) -> bool:
    return con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None
