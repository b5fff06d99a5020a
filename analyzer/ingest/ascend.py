"""Ascend torch_npu text export -> event table, CSV tables, communication.json, metadata.

One rank = one ``*_ascend_pt`` directory (or its ``ASCEND_PROFILER_OUTPUT``, or a bare
``trace_view.json``). Every file is optional; what was found is recorded in ``files`` and what was
missing or bad goes to ``warnings``, never a crash (profiling-formats §1.1-§1.13).

Classification of ``trace_view.json`` complete events into the event-table categories (see
``events.py``): by process name (``Python``, ``Python GC``, ``CANN``, ``Ascend Hardware``,
``HCCL`` — renamed ``Communication`` in newer torch_npu, both accepted — and ``Overlap Analysis``),
then by ``cat`` / ``Task Type`` / name.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analyzer.ingest import events as ev
from analyzer.ingest.budgets import Budgets, auto_max_events
from analyzer.ingest.errors import IngestError
from analyzer.ingest.excluded import excluded_steps, none_readable
from analyzer.ingest.stream import RawTrace, Thinning, event_arrays, read_trace, signature_frame

#: host-process names; every other process is on the device.
HOST_PROCESSES: frozenset[str] = frozenset({"Python", "Python GC", "CANN"})
#: the communication process: ``HCCL`` (older torch_npu) or ``Communication`` (newer).
COMM_PROCESSES: frozenset[str] = frozenset({"HCCL", "Communication"})
OVERLAP_PROCESS = "Overlap Analysis"
HARDWARE_PROCESS = "Ascend Hardware"

#: Ascend Hardware ``Task Type`` values that are compute kernels (``Other``: 2024 torch_npu wrote it
#: for almost every task; treated as compute unless the name says copy / placeholder).
COMPUTE_TASK_TYPES: frozenset[str] = frozenset({
    "AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV", "AI_CPU", "FFTS_PLUS", "DSA_SQE", "Other",
    "AIV_SQE", "AIC_SQE", "",
})
COPY_TASK_TYPES: frozenset[str] = frozenset({"SDMA_SQE", "PCIE_DMA_SQE"})
#: HCCL work executed as device tasks on Ascend Hardware streams (task type == name in real files).
HCCL_DEVICE_TASKS: frozenset[str] = frozenset({"Notify Wait", "Write Value", "SDMA", "Notify Record"})
PLACEHOLDER_TASK_TYPES: frozenset[str] = frozenset({
    "PLACE_HOLDER_SQE", "EVENT_RECORD_SQE", "EVENT_WAIT_SQE",
})
PLACEHOLDER_NAMES: frozenset[str] = frozenset({
    "PROFILING_ENABLE", "PROFILING_DISABLE", "EVENT_RECORD", "EVENT_WAIT",
})
#: host-side synchronising calls (profiling-formats §7 "sync ops").
SYNC_NAMES: frozenset[str] = frozenset({
    "aten::item", "aten::_local_scalar_dense",
    "AscendCL@aclrtSynchronizeStream", "AscendCL@aclrtSynchronizeStreamWithTimeout",
    "AscendCL@aclrtSynchronizeDevice", "AscendCL@aclrtSynchronizeEvent", "AscendCL@aclrtMemcpy",
    "Runtime@StreamSynchronize", "Runtime@DeviceSynchronize", "Runtime@MemCopySync",
})
#: CANN calls that launch device work (dispatch sub ``launch``); other CANN calls are ``runtime``.
_LAUNCH_RE = re.compile(
    r"^(AscendCL@(aclnn|aclop|aclrtMemcpyAsync|aclrtMemsetAsync|aclmdlExecute|aclmdlRI)|Node@launch"
    r"|Runtime@(KernelLaunch|LaunchKernel|MemcpyAsync|StreamLaunch)|Hccl@)"
)
#: ``memcpy direction`` arg -> sub (newer torch_npu writes it on MEMCPY_ASYNC tasks).
COPY_DIRECTIONS: dict[str, str] = {
    "host to device": ev.SUB_H2D, "device to host": ev.SUB_D2H, "device to device": ev.SUB_D2D,
}
_STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")


def classify(frame: pd.DataFrame, raw: RawTrace) -> pd.DataFrame:
    """Add the event-table columns ``category``, ``side``, ``sub``, ``stream`` to a frame with the
    raw columns ``name``, ``cat``, ``pid``, ``tid``, ``task_type``, ``aux`` (in place). The readers
    pass the signature table (one row per distinct combination), not one row per event."""
    pname = _lookup(frame["pid"], raw.process_names)
    labels = _lookup(frame["pid"], raw.process_labels)
    is_host = pname.isin(HOST_PROCESSES) | labels.eq("CPU")
    n = len(frame)
    category = np.full(n, ev.OTHER, dtype=object)
    sub = np.full(n, "", dtype=object)
    name, cat, tt = frame["name"], frame["cat"], frame["task_type"]

    def put(mask: pd.Series, c: str, s: Any = "") -> None:
        m = mask.to_numpy(dtype=bool)
        category[m] = c
        sub[m] = s if isinstance(s, str) else np.asarray(s)[m]

    python = pname.eq("Python")
    put(python & cat.eq("cpu_op"), ev.HOST_OP, "cpu_op")
    put(python & cat.eq("python_function"), ev.OTHER, ev.SUB_PYTHON_FUNCTION)
    put(python & cat.eq("enqueue"), ev.DISPATCH, ev.SUB_ENQUEUE)
    put(python & cat.eq("dequeue"), ev.DISPATCH, ev.SUB_DEQUEUE)
    put(python & (cat.eq("user_annotation") | name.str.startswith("mstx")), ev.ANNOTATION)
    put(python & pd.Series(ev.per_value(name, lambda v: bool(_STEP_RE.match(v)), bool), index=frame.index),
        ev.STEP)
    cann = pname.eq("CANN")
    launch = pd.Series(ev.per_value(name, lambda v: bool(_LAUNCH_RE.match(v)), bool), index=frame.index)
    put(cann, ev.DISPATCH, ev.choose(launch.to_numpy(dtype=bool), ev.SUB_LAUNCH, ev.SUB_RUNTIME))
    put((python | cann) & name.isin(SYNC_NAMES), ev.SYNC)

    hw = pname.eq(HARDWARE_PROCESS)
    put(hw & tt.isin(COMPUTE_TASK_TYPES), ev.COMPUTE, tt)
    put(hw & (tt.isin(PLACEHOLDER_TASK_TYPES) | name.isin(PLACEHOLDER_NAMES)), ev.OTHER, ev.SUB_PLACEHOLDER)
    put(hw & (name.isin(HCCL_DEVICE_TASKS) | tt.isin(HCCL_DEVICE_TASKS)), ev.COMMUNICATION, ev.SUB_COMM_TASK)
    copy = hw & (tt.isin(COPY_TASK_TYPES) | name.eq("MEMCPY_ASYNC"))
    put(copy, ev.MEMCPY, _copy_direction(frame))

    comm = pname.isin(COMM_PROCESSES)
    thread = _thread_names(frame, raw)
    big_op = comm & (thread.str.startswith("Group") | (thread.eq("") & name.str.startswith("hcom")))
    put(comm, ev.COMMUNICATION, ev.SUB_COMM_TASK)
    put(big_op, ev.COMMUNICATION, ev.per_value(name.where(big_op, ""), lambda v: ev.comm_op_type(v) if v else ""))
    put(pname.eq(OVERLAP_PROCESS), ev.OTHER, ev.SUB_OVERLAP)

    host = is_host.to_numpy(dtype=bool)
    tid = frame["tid"].to_numpy()
    stream = np.where(host, ev.labels("Thread ", tid), ev.labels("Stream ", tid))
    named = thread.ne("").to_numpy()
    stream[named] = thread.to_numpy(dtype=object)[named]
    frame["category"] = category
    frame["sub"] = sub
    frame["side"] = ev.choose(host, ev.SIDE_HOST, ev.SIDE_DEVICE)
    frame["stream"] = stream
    return frame


def _thread_names(frame: pd.DataFrame, raw: RawTrace) -> pd.Series:
    """``thread_name`` metadata per row (``""`` when none), one lookup per distinct (pid, tid)."""
    keys = pd.MultiIndex.from_arrays([frame["pid"], frame["tid"]])
    codes, uniq = pd.factorize(keys)
    names = np.array([raw.thread_names.get((int(p), int(t)), "") for p, t in uniq] or [""], dtype=object)
    return pd.Series(names[codes] if len(frame) else names[:0], index=frame.index, dtype=object)


def _lookup(keys: pd.Series, mapping: dict[int, str]) -> pd.Series:
    """``mapping[key]`` per row, ``""`` when absent (vectorized over the unique keys)."""
    uniq, inverse = np.unique(keys.to_numpy(), return_inverse=True)
    values = np.array([mapping.get(int(k), "") for k in uniq] or [""], dtype=object)
    return pd.Series(values[inverse] if len(keys) else values[:0], index=keys.index, dtype=object)


def _copy_direction(frame: pd.DataFrame) -> np.ndarray:
    """Copy sub-kind: the ``memcpy direction`` arg when present, else PCIe DMA = host<->device,
    SDMA = device-to-device (profiling-formats §0.10)."""
    direction = frame["aux"].str.lower().map(COPY_DIRECTIONS)
    by_type = np.where(
        frame["task_type"].eq("PCIE_DMA_SQE"), ev.SUB_HOST_DEVICE,
        np.where(frame["task_type"].eq("SDMA_SQE"), ev.SUB_D2D, ""),
    )
    return np.where(direction.notna(), direction.astype(object), by_type)


def row_steps(sigs: pd.DataFrame, arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Step per event from the classified signature table and the arrays: ``N`` of the ``ProfilerStep#N``
    whose span ``[ts, ts+dur)`` contains the event start, ``-1`` outside every step.

    This is how torch_npu attributes events to steps for ``step_trace_time.csv`` (profiling-formats
    §1.7: Σ dur of events whose ts falls inside the step); the arithmetic is :func:`events.steps_by_time`.
    """
    is_step = (sigs["category"] == ev.STEP).to_numpy(dtype=bool)
    step_of_sig = ev.step_numbers(sigs["name"].to_numpy(dtype=object), is_step)
    sig, ts = arrays["sig"], arrays["ts_us"]
    rows = np.flatnonzero(step_of_sig[sig] >= 0) if len(sig) else np.empty(0, dtype=np.int64)
    return ev.steps_by_time(ts, ts[rows], arrays["dur_us"][rows], step_of_sig[sig[rows]])


def classify_signatures(raw: RawTrace) -> pd.DataFrame:
    """The signature table of ``raw`` with the event-table classification columns."""
    return classify(signature_frame(raw), raw)


def budget_tiers(raw: RawTrace) -> np.ndarray:
    """Budget tier per signature (``events.tiers``) with the metadata read so far."""
    sigs = classify_signatures(raw)
    return ev.tiers(sigs["category"].to_numpy(dtype=object), sigs["side"].to_numpy(dtype=object))


def read_trace_view(path: Path, rank: int, progress: bool | None = None,
                    max_events: int | None = None, budgets: Budgets | None = None) -> tuple[pd.DataFrame, RawTrace]:
    """Parse one ``trace_view.json`` into the event table (and the raw trace's metadata).

    ``max_events``: event budget (see ``stream.Thinning``; default: ``budgets.auto_max_events``); ``raw.thinning`` then says what was dropped.
    """
    thinning = Thinning(max_events if max_events is not None else auto_max_events(), budget_tiers,
                        auto=max_events is None)
    raw = read_trace(path, progress=progress, thinning=thinning,
                     budgets=budgets or Budgets.for_event_budget(max_events))
    if raw.layout != "array":
        raise IngestError(
            path, "<top level>",
            "an Ascend trace_view.json is a JSON array of events (got an object; Kineto traces go "
            "through the Kineto reader)",
        )
    if raw.n_complete == 0 and not raw.truncated:
        why = none_readable(raw)
        raise IngestError(path, "ph", f"no complete ('X') events{why}" if why else
                          "no complete ('X') events: not a profiler trace")
    sigs = classify_signatures(raw)
    if thinning is not None:
        raw.dropped_by_category = ev.dropped_by_category(sigs, thinning.dropped_by_sig)
    arrays = event_arrays(raw)
    arrays["step"] = row_steps(sigs, arrays)
    raw.excluded_steps = excluded_steps(raw, sigs, arrays)
    return ev.build_table(sigs, arrays, rank), raw


def device_id(raw: RawTrace) -> int | None:
    """NPU id from ``process_labels`` ``"NPU <id>"`` (``"NPU"`` alone -> None)."""
    for label in raw.process_labels.values():
        m = re.match(r"^NPU\s+(\d+)$", label.strip())
        if m:
            return int(m.group(1))
    return None


def read_json_file(path: Path) -> Any:
    """A small JSON file (metadata, communication.json), with a clear error when it is not JSON."""
    try:
        with open(path, encoding="utf-8-sig") as fh:
            return json.load(fh)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise IngestError(path, "<file>", f"not valid JSON ({exc})") from exc
    except RecursionError:
        raise IngestError(path, "<file>", "JSON nested too deeply to read") from None


def read_communication(path: Path) -> dict[str, Any]:
    """``communication.json`` as written: ``{step: {collective|p2p: {op@group: {...}}}}``.

    Units are the file's: ``Elapse Time(ms)``, ``Transit Time(ms)``, ``Wait Time(ms)``... are **ms**,
    ``Transit Size(MB)`` MB, ``Start Timestamp(us)`` epoch µs. The ``Total Op Info`` entries are
    kept; skip them when iterating ops. Per-op volume = SDMA + RDMA (SDMA already = HCCS + PCIE).
    """
    data = read_json_file(path)
    if not isinstance(data, dict):
        raise IngestError(path, "<top level>", "communication.json must be an object keyed by step")
    return data


def rank_from_info(info: dict[str, Any]) -> int | None:
    """``rank_id`` of ``profiler_info*.json`` (``-1`` or absent -> None)."""
    value = info.get("rank_id")
    if isinstance(value, int) and value >= 0:
        return ev.checked_rank(value, "profiler_info rank_id")
    return None
