"""PyTorch Kineto trace (``.json`` / ``.json.gz``, ``traceEvents`` wrapper) -> event table + metadata.

Classification follows Holistic Trace Analysis' rules (profiling-formats §3.2-§3.3):

- GPU ``kernel``: communication when the name matches ``^nccl|.*ncclKernel|^hccl`` (sub = collective
  type), else compute (sub ``kernel``); ``gpu_memcpy`` -> memcpy (sub ``H2D``/``D2H``/``D2D``/... from
  ``Memcpy HtoD`` etc.), ``gpu_memset`` -> memset; ``cuda_sync`` -> sync on the device;
  ``gpu_user_annotation`` -> annotation on the device.
- host ``cuda_runtime`` / ``cuda_driver``: sync for ``*Synchronize`` and blocking ``cudaMemcpy``;
  dispatch ``launch`` for kernel / graph launches and async copies / fills; dispatch ``runtime``
  otherwise. ``cpu_op``: ``aten::item`` / ``aten::_local_scalar_dense`` -> sync, else host_op.
  ``ProfilerStep#N`` (``user_annotation`` or ``cpu_op``) -> step; other ``user_annotation`` ->
  annotation; ``python_function`` -> other.

Steps: a host event gets the step whose span contains its start; a device event gets the step of
its launching runtime call (same ``correlation``), else the step containing its start.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import ijson
import numpy as np
import pandas as pd

from analyzer.ingest import events as ev
from analyzer.ingest.ascend import assign_steps
from analyzer.ingest.errors import IngestError
from analyzer.ingest.stream import RawTrace, open_stream, raw_frame, read_trace

COMM_KERNEL_RE = re.compile(r"^nccl|.*ncclKernel|^hccl", re.IGNORECASE)
DEVICE_CATS: frozenset[str] = frozenset({
    "kernel", "gpu_memcpy", "gpu_memset", "cuda_sync", "gpu_user_annotation", "mtia_ccp_events",
})
RUNTIME_CATS: frozenset[str] = frozenset({"cuda_runtime", "cuda_driver"})
SYNC_RUNTIME_RE = re.compile(r"Synchronize|^cudaMemcpy$|^cuMemcpy$|^cudaMemcpy(?:To|From)Symbol$")
LAUNCH_RE = re.compile(
    r"LaunchKernel|^cuLaunch|GraphLaunch|MemcpyAsync|MemsetAsync|^runFunction"
)
SYNC_OPS: frozenset[str] = frozenset({"aten::item", "aten::_local_scalar_dense"})
#: ``Memcpy HtoD (Pinned -> Device)`` -> H2D ...
COPY_KINDS: dict[str, str] = {
    "HtoD": ev.SUB_H2D, "DtoH": ev.SUB_D2H, "DtoD": ev.SUB_D2D, "HtoH": "H2H", "PtoP": "P2P",
}
_STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
#: top-level keys kept in ``RankData.meta``.
META_KEYS: tuple[str, ...] = ("distributedInfo", "deviceProperties")


def _copy_kind(name: str) -> str:
    m = re.search(r"Memcpy (\w+)", name)
    return COPY_KINDS.get(m.group(1), m.group(1)) if m else ""


def classify(frame: pd.DataFrame) -> pd.DataFrame:
    """Add ``category``, ``side``, ``sub``, ``stream`` to the raw columns, in place (see module docstring)."""
    name, cat = frame["name"], frame["cat"]
    n = len(frame)
    category = np.full(n, ev.OTHER, dtype=object)
    sub = np.full(n, "", dtype=object)

    def put(mask: pd.Series, c: str, s: Any = "") -> None:
        m = mask.to_numpy(dtype=bool)
        category[m] = c
        sub[m] = s if isinstance(s, str) else np.asarray(s, dtype=object)[m]

    kernel = cat.eq("kernel")
    is_comm = pd.Series(ev.per_value(name, lambda v: bool(COMM_KERNEL_RE.match(v)), bool), index=frame.index)
    put(kernel, ev.COMPUTE, "kernel")
    coll = ev.per_value(frame["aux"].where(frame["aux"].ne(""), name).where(kernel & is_comm, ""),
                        lambda v: ev.comm_op_type(v) if v else "")
    put(kernel & is_comm, ev.COMMUNICATION, coll)
    put(cat.eq("gpu_memcpy"), ev.MEMCPY, ev.per_value(name.where(cat.eq("gpu_memcpy"), ""), _copy_kind))
    put(cat.eq("gpu_memset"), ev.MEMSET)
    put(cat.eq("cuda_sync"), ev.SYNC, ev.SUB_DEVICE_SYNC)
    put(cat.eq("gpu_user_annotation"), ev.ANNOTATION)
    runtime = cat.isin(RUNTIME_CATS)
    launch = ev.per_value(name, lambda v: bool(LAUNCH_RE.search(v)), bool)
    put(runtime, ev.DISPATCH, ev.choose(launch, ev.SUB_LAUNCH, ev.SUB_RUNTIME))
    sync = pd.Series(ev.per_value(name, lambda v: bool(SYNC_RUNTIME_RE.search(v)), bool), index=frame.index)
    put(runtime & sync, ev.SYNC)
    put(cat.eq("cpu_op"), ev.HOST_OP, "cpu_op")
    put(cat.eq("cpu_op") & name.isin(SYNC_OPS), ev.SYNC)
    put(cat.eq("user_annotation"), ev.ANNOTATION)
    put(cat.eq("python_function"), ev.OTHER, ev.SUB_PYTHON_FUNCTION)
    is_step = pd.Series(ev.per_value(name, lambda v: bool(_STEP_RE.match(v)), bool), index=frame.index)
    put(cat.isin({"cpu_op", "user_annotation"}) & is_step, ev.STEP)

    device = cat.isin(DEVICE_CATS).to_numpy()
    tid = frame["tid"].to_numpy()
    frame["category"] = category
    frame["sub"] = sub
    frame["side"] = ev.choose(device, ev.SIDE_DEVICE, ev.SIDE_HOST)
    frame["stream"] = np.where(device, ev.labels("stream ", tid), ev.labels("thread ", tid))
    return frame


def steps_by_launch(table: pd.DataFrame) -> pd.DataFrame:
    """Device events take the step of their launching host event (same ``corr``) when known (in place)."""
    host = table[(table["side"] == ev.SIDE_HOST) & (table["corr"] >= 0)]
    launch_step = pd.Series(host["step"].to_numpy(), index=host["corr"].to_numpy())
    launch_step = launch_step[~launch_step.index.duplicated(keep="first")]
    device = (table["side"] == ev.SIDE_DEVICE) & (table["corr"] >= 0)
    mapped = table.loc[device, "corr"].map(launch_step)
    known = mapped.notna()
    table.loc[mapped.index[known], "step"] = mapped[known].astype("int64")
    return table


def read_meta(path: Path) -> dict[str, Any]:
    """``distributedInfo`` and ``deviceProperties`` of the trace's top level.

    One streaming pass per key that builds only that value (ijson ``kvitems`` would build the event
    list too). Damage in the file ends a pass silently: the event pass reports it.
    """
    meta: dict[str, Any] = {}
    for key in META_KEYS:
        meta[key] = _read_item(path, key)
    return {k: v for k, v in meta.items() if v is not None}


def _read_item(path: Path, key: str) -> Any:
    fh, counter = open_stream(path)
    try:
        for value in ijson.items(fh, key, use_float=True):
            return value
    except (ijson.JSONError, EOFError, OSError):
        return None
    finally:
        fh.close()
        counter.raw.close()
    return None


def rank_of(meta: dict[str, Any]) -> int | None:
    """``distributedInfo.rank`` (HTA reads the same field), None when absent."""
    info = meta.get("distributedInfo") or {}
    value = info.get("rank") if isinstance(info, dict) else None
    return int(value) if isinstance(value, int | float) else None


def read_kineto_trace(path: Path, rank: int | None = None, progress: bool | None = None,
                      ) -> tuple[pd.DataFrame, RawTrace, dict[str, Any]]:
    """Parse one Kineto trace into (event table, raw trace, top-level metadata)."""
    raw = read_trace(path, progress=progress)
    if raw.layout != "object":
        raise IngestError(path, "<top level>", "a Kineto trace is an object with 'traceEvents'")
    frame = raw_frame(raw)
    if frame.empty and not raw.truncated:
        raise IngestError(path, "traceEvents", "no complete ('X') events: not a Kineto profiler trace")
    meta = read_meta(path)
    found = rank_of(meta)
    if rank is None:
        rank = found if found is not None else ev.UNKNOWN_RANK
    frame["rank"] = rank
    table = steps_by_launch(assign_steps(classify(frame)))
    return ev.conform(table), raw, meta
