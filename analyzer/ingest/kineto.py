"""PyTorch Kineto trace (``.json`` / ``.json.gz``, ``traceEvents`` wrapper) -> event table + metadata.

Classification follows Holistic Trace Analysis' rules (profiling-formats §3.2-§3.3):

- device kernels in every spelling the traces use (:data:`KERNEL_CATS`: CUDA / ROCm / Triton ``kernel``,
  the older Kineto ``Kernel``; Meta MTIA ``mtia_ccp_events``): communication when the name matches
  ``^nccl|.*ncclKernel|^hccl|^rccl`` (sub = collective type), else compute (sub ``kernel``); an MTIA
  ``dma_request`` is a device copy (memcpy, direction unknown: HTA counts it as memory, not compute);
  ``gpu_memcpy`` / ``Memcpy`` -> memcpy (sub ``H2D``/``D2H``/``D2D``/... from ``Memcpy HtoD`` etc.),
  ``gpu_memset`` / ``Memset`` -> memset; ``cuda_sync`` -> sync on the device;
  ``gpu_user_annotation`` -> annotation on the device.
- host runtime calls (:data:`RUNTIME_CATS`: ``cuda_runtime`` / ``cuda_driver``, the older ``Runtime``,
  ``mtia_runtime``): sync for ``*Synchronize`` / ``synchronize*`` and blocking ``cudaMemcpy``;
  dispatch ``launch`` for kernel / graph launches and async copies / fills; dispatch ``runtime``
  otherwise. ``cpu_op``: ``aten::item`` / ``aten::_local_scalar_dense`` -> sync, else host_op.
  ``ProfilerStep#N`` (``user_annotation`` or ``cpu_op``) -> step; other ``user_annotation`` ->
  annotation; ``python_function`` -> other.
- a category of complete events the reader does not know (:data:`KNOWN_CATS`) is kept as ``other`` on the
  host and counted: :func:`unknown_categories` (the dataset reports it with its counts).

Steps: a host event gets the step whose span contains its start; a device event gets the step of
its launching runtime call (same ``correlation``), else the step containing its start.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analyzer.ingest import events as ev
from analyzer.ingest.ascend import row_steps
from analyzer.ingest.budgets import Budgets, auto_max_events
from analyzer.ingest.errors import IngestError
from analyzer.ingest.excluded import excluded_steps, none_readable
from analyzer.ingest.framing import read_all
from analyzer.ingest.stream import RawTrace, Thinning, event_arrays, read_trace, signature_frame, sniff_layout

COMM_KERNEL_RE = re.compile(r"^nccl|.*ncclKernel|^hccl|^rccl", re.IGNORECASE)
#: device kernel categories: CUDA / ROCm / Triton (``kernel``), older Kineto (``Kernel``), Meta MTIA
#: (``mtia_ccp_events``: HTA 0.5.0 reads these as GPU kernels too).
KERNEL_CATS: frozenset[str] = frozenset({"kernel", "Kernel", "mtia_ccp_events"})
MEMCPY_CATS: frozenset[str] = frozenset({"gpu_memcpy", "Memcpy"})
MEMSET_CATS: frozenset[str] = frozenset({"gpu_memset", "Memset"})
DEVICE_CATS: frozenset[str] = KERNEL_CATS | MEMCPY_CATS | MEMSET_CATS | {"cuda_sync", "gpu_user_annotation"}
RUNTIME_CATS: frozenset[str] = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "mtia_runtime"})
#: host categories read as what they are (besides the runtime ones).
HOST_CATS: frozenset[str] = frozenset({"cpu_op", "user_annotation", "python_function", "Operator"})
#: categories of complete events that carry no work to classify (the profiler's own span markers).
INERT_CATS: frozenset[str] = frozenset({"Trace", "cpu_instant_event", ""})
KNOWN_CATS: frozenset[str] = DEVICE_CATS | RUNTIME_CATS | HOST_CATS | INERT_CATS
#: an MTIA device copy (``mtia_ccp_events`` ``dma_request``: args ``direction`` / ``size``).
MTIA_DMA_RE = re.compile(r"^dma_")
SYNC_RUNTIME_RE = re.compile(r"Synchronize|^synchronize|^cudaMemcpy$|^cuMemcpy$|^cudaMemcpy(?:To|From)Symbol$")
LAUNCH_RE = re.compile(
    r"LaunchKernel|^cuLaunch|GraphLaunch|MemcpyAsync|MemsetAsync|^runFunction"
)
SYNC_OPS: frozenset[str] = frozenset({"aten::item", "aten::_local_scalar_dense"})
#: ``Memcpy HtoD (Pinned -> Device)`` -> H2D ...
COPY_KINDS: dict[str, str] = {
    "HtoD": ev.SUB_H2D, "DtoH": ev.SUB_D2H, "DtoD": ev.SUB_D2D, "HtoH": "H2H", "PtoP": "P2P",
}
_STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
#: ``meta`` key of :func:`group_rows` (the dataset moves it to ``RankData.tables``).
GROUP_ROWS_KEY = "comm_groups"
#: top-level keys kept in ``RankData.meta``.
META_KEYS: tuple[str, ...] = ("distributedInfo", "deviceProperties")


def _copy_kind(name: str) -> str:
    m = re.search(r"Memcpy (\w+)", name)
    return COPY_KINDS.get(m.group(1), m.group(1)) if m else ""


def classify(frame: pd.DataFrame) -> pd.DataFrame:
    """Add ``category``, ``side``, ``sub``, ``stream`` to the raw columns, in place (see module docstring).

    The reader passes the signature table (one row per distinct pid/tid/name/cat/args), not the events."""
    name, cat = frame["name"], frame["cat"]
    n = len(frame)
    category = np.full(n, ev.OTHER, dtype=object)
    sub = np.full(n, "", dtype=object)

    def put(mask: pd.Series, c: str, s: Any = "") -> None:
        m = mask.to_numpy(dtype=bool)
        category[m] = c
        sub[m] = s if isinstance(s, str) else np.asarray(s, dtype=object)[m]

    kernel = cat.isin(KERNEL_CATS)
    is_comm = pd.Series(ev.per_value(name, lambda v: bool(COMM_KERNEL_RE.match(v)), bool), index=frame.index)
    put(kernel, ev.COMPUTE, "kernel")
    coll = ev.per_value(frame["aux"].where(frame["aux"].ne(""), name).where(kernel & is_comm, ""),
                        lambda v: ev.comm_op_type(v) if v else "")
    put(kernel & is_comm, ev.COMMUNICATION, coll)
    put(kernel & pd.Series(ev.matches(name, lambda v: bool(MTIA_DMA_RE.match(v))), index=frame.index)
        & cat.eq("mtia_ccp_events"), ev.MEMCPY)
    memcpy = cat.isin(MEMCPY_CATS)
    put(memcpy, ev.MEMCPY, ev.per_value(name.where(memcpy, ""), _copy_kind))
    put(cat.isin(MEMSET_CATS), ev.MEMSET)
    put(cat.eq("cuda_sync"), ev.SYNC, ev.SUB_DEVICE_SYNC)
    put(cat.eq("gpu_user_annotation"), ev.ANNOTATION)
    runtime = cat.isin(RUNTIME_CATS)
    launch = ev.per_value(name, lambda v: bool(LAUNCH_RE.search(v)), bool)
    put(runtime, ev.DISPATCH, ev.choose(launch, ev.SUB_LAUNCH, ev.SUB_RUNTIME))
    sync = pd.Series(ev.per_value(name, lambda v: bool(SYNC_RUNTIME_RE.search(v)), bool), index=frame.index)
    put(runtime & sync, ev.SYNC)
    op = cat.isin({"cpu_op", "Operator"})
    put(op, ev.HOST_OP, "cpu_op")
    put(op & name.isin(SYNC_OPS), ev.SYNC)
    put(cat.eq("user_annotation"), ev.ANNOTATION)
    put(cat.eq("python_function"), ev.OTHER, ev.SUB_PYTHON_FUNCTION)
    is_step = pd.Series(ev.per_value(name, lambda v: bool(_STEP_RE.match(v)), bool), index=frame.index)
    put(cat.isin({"cpu_op", "Operator", "user_annotation"}) & is_step, ev.STEP)

    device = cat.isin(DEVICE_CATS).to_numpy()
    tid = frame["tid"].to_numpy()
    frame["category"] = category
    frame["sub"] = sub
    frame["side"] = ev.choose(device, ev.SIDE_DEVICE, ev.SIDE_HOST)
    frame["stream"] = np.where(device, ev.labels("stream ", tid), ev.labels("thread ", tid))
    return frame


def unknown_categories(sigs: pd.DataFrame, sig_rows: np.ndarray) -> dict[str, int]:
    """``{cat: complete events}`` of the categories the reader does not know (:data:`KNOWN_CATS`);
    ``sig_rows``: the row id -> signature id array of the event table."""
    cats = sigs["cat"].to_numpy(dtype=object)
    unknown = np.array([str(c) not in KNOWN_CATS for c in cats], dtype=bool)
    if not unknown.any():
        return {}
    counts = np.bincount(np.asarray(sig_rows, dtype=np.int64), minlength=len(cats))[:len(cats)]
    out: dict[str, int] = {}
    for c, n in zip(cats[unknown], counts[unknown], strict=True):
        if n:
            out[str(c)] = out.get(str(c), 0) + int(n)
    return dict(sorted(out.items()))


#: how much of a bare-array trace is sniffed for its shape (:func:`bare_array_shape`).
SNIFF_BYTES = 4 << 20
_CAT_RE = re.compile(rb'"cat"\s*:\s*"([^"\\]{1,64})"')
#: args keys Kineto writes and an Ascend ``trace_view.json`` does not (launch correlation, op id).
_KINETO_ARGS_RE = re.compile(rb'"(correlation|External id)"\s*:')
#: what only an Ascend ``trace_view.json`` (torch_npu / msprof export) holds: its process names, the
#: ``Task Type`` arg of Ascend Hardware tasks, its host -> device flow and task-queue categories.
_ASCEND_RE = re.compile(rb'"(Ascend Hardware|CANN|AscendCL|Overlap Analysis|Task Type)"')
ASCEND_CATS: frozenset[str] = frozenset({"async_npu", "HostToDevice", "async_task_queue", "enqueue", "dequeue"})


def bare_array_shape(path: Path) -> tuple[str, list[str]]:
    """``("kineto" | "ascend", evidence)`` of a trace that is a bare JSON array of events (the Trace Event
    Format's "JSON Array Format", which Kineto events may come in as well as Ascend's ``trace_view.json``).

    Rule, on the first :data:`SNIFF_BYTES` (decompressed): Ascend when it holds an Ascend marker (an Ascend
    process name, ``Task Type`` args, a category of :data:`ASCEND_CATS`); else Kineto when it holds a Kineto
    one (a CUDA / ROCm / MTIA device or runtime category of :data:`DEVICE_CATS` / :data:`RUNTIME_CATS`, or
    ``correlation`` / ``External id`` args); else Ascend (the layout's reader since before). ``evidence``:
    the markers found, for the messages."""
    head = read_all(path, SNIFF_BYTES)
    cats = {c.decode("utf-8", "replace") for c in _CAT_RE.findall(head)}
    ascend = sorted({m.decode() for m in _ASCEND_RE.findall(head)} | (cats & ASCEND_CATS))
    if ascend:
        return "ascend", ascend
    kin = sorted(cats & (DEVICE_CATS | RUNTIME_CATS)) + [f"args {k.decode()!r}" for k in
                                                         sorted(set(_KINETO_ARGS_RE.findall(head)))]
    return ("kineto", kin) if kin else ("ascend", [])


def group_rows(sigs: pd.DataFrame, arrays: dict[str, np.ndarray]) -> pd.DataFrame | None:
    """The events whose args name their process group (NCCL ``Process Group Name`` / ``Process Group Ranks`` /
    ``Ranks``: the signature's ``task_type`` field, ``decode.process_group_key``): ``ts_us``, ``dur_us``,
    ``step``, ``group`` (``name|ranks``), ``name``, ``cat`` — None when no event names one."""
    key = sigs["task_type"].to_numpy(dtype=object)
    has = np.array([bool(k) for k in key], dtype=bool)
    if not has.any():
        return None
    rows = np.flatnonzero(has[arrays["sig"]])
    sig = arrays["sig"][rows]
    return pd.DataFrame({"ts_us": arrays["ts_us"][rows], "dur_us": arrays["dur_us"][rows], "step": arrays["step"][rows],
                         "group": key[sig], "name": sigs["name"].to_numpy(dtype=object)[sig],
                         "cat": sigs["cat"].to_numpy(dtype=object)[sig]})


def accelerator(sigs: pd.DataFrame) -> str:
    """``mtia`` when the trace has Meta MTIA device events, else ``gpu`` (CUDA / ROCm)."""
    return "mtia" if bool(sigs["cat"].eq("mtia_ccp_events").any()) else "gpu"


def launch_steps(device: np.ndarray, corr: np.ndarray, step: np.ndarray) -> np.ndarray:
    """``step`` with every device row that has a correlation id set to the step of the first host
    row with that id (arrays; ``step`` is modified and returned)."""
    host = ~device & (corr >= 0)
    uniq, first = np.unique(corr[host], return_index=True)
    if not uniq.size:
        return step
    launch_step = step[host][first]
    dev_rows = np.flatnonzero(device & (corr >= 0))
    pos = np.minimum(np.searchsorted(uniq, corr[dev_rows]), uniq.size - 1)
    found = uniq[pos] == corr[dev_rows]
    step[dev_rows[found]] = launch_step[pos[found]]
    return step


def classify_signatures(raw: RawTrace) -> pd.DataFrame:
    """The signature table of ``raw`` with the event-table classification columns."""
    return classify(signature_frame(raw))


def budget_tiers(raw: RawTrace) -> np.ndarray:
    """Budget tier per signature (``events.tiers``)."""
    sigs = classify_signatures(raw)
    return ev.tiers(sigs["category"].to_numpy(dtype=object), sigs["side"].to_numpy(dtype=object))


def read_meta(raw: RawTrace) -> dict[str, Any]:
    """``distributedInfo`` and ``deviceProperties`` of the trace's top level (read in the event pass)."""
    return {k: raw.top[k] for k in META_KEYS if raw.top.get(k) is not None}


def rank_of(meta: dict[str, Any]) -> int | None:
    """``distributedInfo.rank`` (HTA reads the same field), None when absent."""
    info = meta.get("distributedInfo") or {}
    value = info.get("rank") if isinstance(info, dict) else None
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"distributedInfo.rank is {value}, not a rank id")
    return ev.checked_rank(int(value), "distributedInfo.rank") if isinstance(value, int | float) else None


def read_kineto_trace(path: Path, rank: int | None = None, progress: bool | None = None,
                      max_events: int | None = None,
                      budgets: Budgets | None = None) -> tuple[pd.DataFrame, RawTrace, dict[str, Any]]:
    """Parse one Kineto trace into (event table, raw trace, top-level metadata).

    ``max_events``: event budget (see ``stream.Thinning``; default: ``budgets.auto_max_events``); ``raw.thinning`` then says what was dropped.
    ``budgets``: ingest budgets (default: ``Budgets.for_event_budget(max_events)``).
    """
    thinning = Thinning(max_events if max_events is not None else auto_max_events(), budget_tiers,
                        auto=max_events is None)
    shape, evidence = bare_array_shape(path) if sniff_layout(path) == "array" else ("object", [])
    if shape == "ascend":
        raise IngestError(path, "<top level>", "a JSON array without Kineto events ("
                          + (f"Ascend markers: {', '.join(evidence)}" if evidence else "no Kineto category or args")
                          + "): a Kineto trace is an object with 'traceEvents' or an array of Kineto events")
    raw = read_trace(path, progress=progress, thinning=thinning,
                     budgets=budgets or Budgets.for_event_budget(max_events), kineto=True)
    if shape == "kineto":
        raw.warnings.append(f"{path}: a bare JSON array of events (the Trace Event Format's JSON Array Format) read as "
                            f"Kineto events by its content ({', '.join(evidence)}); that form carries no "
                            "distributedInfo or deviceProperties")
    if raw.n_complete == 0 and not raw.truncated:
        why = none_readable(raw)
        raise IngestError(path, "traceEvents", f"no complete ('X') events{why}" if why else
                          "no complete ('X') events: not a Kineto profiler trace")
    meta = read_meta(raw)
    found = rank_of(meta)
    if rank is None:
        rank = found if found is not None else ev.UNKNOWN_RANK
    sigs = classify_signatures(raw)
    if thinning is not None:
        raw.dropped_by_category = ev.dropped_by_category(sigs, thinning.dropped_by_sig)
    arrays = event_arrays(raw)
    unknown = unknown_categories(sigs, arrays["sig"])
    if unknown:
        meta["unknown_categories"] = unknown
    meta["accelerator"] = accelerator(sigs)
    device_sig = (sigs["side"] == ev.SIDE_DEVICE).to_numpy(dtype=bool)
    arrays["step"] = launch_steps(device_sig[arrays["sig"]], arrays["corr"], row_steps(sigs, arrays))
    raw.excluded_steps = excluded_steps(raw, sigs, arrays)
    groups = group_rows(sigs, arrays)
    if groups is not None:
        meta[GROUP_ROWS_KEY] = groups
    return ev.build_table(sigs, arrays, rank), raw, meta
