"""The common event table: one row per complete (``ph == "X"``) event, every source format.

Every reader (``ascend.py`` for the torch_npu text export, ``kineto.py`` for PyTorch Kineto traces)
produces a :class:`pandas.DataFrame` with exactly the columns of :data:`SCHEMA`, in that order and
with those dtypes. Analyses (``timeline``, ``breakdown``, ``indicators``...) consume only this table,
the canonical CSV tables and the parsed ``communication.json``; they never look at raw JSON.

Columns (units in the table below; all times are µs):

============  ========  ==================================================================================
column        dtype     meaning
============  ========  ==================================================================================
``name``      str       event name as written (kernel name, ``aten::mm``, ``ProfilerStep#50``...)
``category``  category  one of :data:`CATEGORIES` (see below)
``side``      category  ``device`` (NPU/GPU timeline) or ``host`` (CPU timeline)
``ts_us``     float64   start, µs, **relative to** ``RankData.base_ts_us`` (exact: see below)
``dur_us``    float64   duration, µs (>= 0; negative or NaN durations are dropped with a warning)
``pid``       int64     process id as in the trace (Ascend: per-process-name pseudo pid; Kineto: device)
``tid``       int64     thread id / stream id as in the trace
``stream``    category  device: stream label (``Stream 3``, ``Group 0 Communication``, ``Plane 2``,
                        Kineto ``stream 7``); host: thread label (``Thread 3096504``)
``rank``      int64     global rank of the capture (``-1`` when unknown)
``step``      int64     ``N`` of the ``ProfilerStep#N`` the event belongs to, ``-1`` when unknown
                        (host events: by start time inside the step span; device events: by the step of
                        the launching host event when a correlation is known, else by start time)
``sub``       category  sub-kind, see :data:`SUB_KINDS`; ``""`` when none
``corr``      int64     correlation / connection id linking host launch and device task (``-1`` none)
``bytes``     float64   bytes moved (memcpy size, collective message size ``count × sizeof(dtype)``);
                        NaN when the trace does not say
============  ========  ==================================================================================

Memory: the readers build the table from typed arrays and write the string columns
(:data:`CATEGORICAL`, ``name`` included) as pandas categoricals (1–2 bytes per row for the codes,
one string per distinct value) — with pyarrow-backed strings a plain ``name`` column would hold
every row's bytes. A categorical's ``value_counts``/``groupby`` can list unused categories with 0:
count names through :func:`name_counts` and group with ``observed=True``. Tables built elsewhere
(tests, synthetic fixtures) may use plain strings everywhere: consumers compare values, never dtypes.

Exact timestamps: Ascend ``trace_view.json`` writes ``ts`` as a **string** of absolute epoch µs with
three decimals (``"1736408883704643.212"``); a float64 keeps only ~0.2 µs there. Readers subtract an
integer base (``RankData.base_ts_us``, an ``int`` of epoch µs, the floor of the earliest ``ts``) with
integer/Decimal arithmetic *before* converting to float, so ``ts_us`` is exact to 1 ns. Kineto
numbers are read as their text (``decode.exact_relative_us``) and handled the same way. Absolute time of a row =
``base_ts_us + ts_us``.

Categories (``category`` column):

- ``compute``: device kernels that compute (AI_CORE, AI_VECTOR_CORE, MIX_*, AI_CPU, DSA, CUDA
  kernels that are not NCCL).
- ``communication``: device-side collective/p2p work. Ascend: the ``HCCL``/``Communication`` process
  (large ops on ``Group * Communication`` threads, small tasks on ``Plane N`` threads) and the HCCL
  tasks on ``Ascend Hardware`` streams (``Notify Wait``, ``Write Value``, ``SDMA``). Kineto: NCCL kernels.
  Use :func:`comm_ops` for one row per collective (excludes the small tasks).
- ``memcpy`` / ``memset``: device copies (``MEMCPY_ASYNC``; ``Memcpy HtoD``...) and fills.
- ``host_op``: framework / CPU operators (``cpu_op``: ``aten::*``, ``aclnn*`` torch ops...).
- ``dispatch``: task-queue ``Enqueue`` / ``Dequeue@*``, CANN ``AscendCL@*`` launches (``aclnn*``,
  ``aclopCompileAndExecute``...), ``Node@launch``, ``Runtime@*``, ``cudaLaunchKernel`` & friends.
- ``sync``: host-side synchronisation: ``aten::item``, ``aten::_local_scalar_dense``,
  ``AscendCL@aclrtSynchronize*``, ``AscendCL@aclrtMemcpy`` (synchronous), ``Runtime@*Synchronize``,
  ``cudaStreamSynchronize``/``cudaDeviceSynchronize``/``cudaEventSynchronize``/``cudaMemcpy``;
  also Kineto GPU-side ``cuda_sync`` events (``side == "device"``, sub ``device_sync``).
- ``step``: ``ProfilerStep#N`` ranges (host).
- ``annotation``: mstx ranges, ``user_annotation`` / ``gpu_user_annotation`` / vLLM scopes.
- ``other``: everything else that is a complete event: Python stack frames (sub ``python_function``),
  device placeholders (``PROFILING_ENABLE``, ``EVENT_RECORD``/``EVENT_WAIT``: sub ``placeholder``),
  and the Ascend ``Overlap Analysis`` events (sub ``overlap_analysis``, names ``Computing``,
  ``Communication``, ``Communication(Not Overlapped)``, ``Free``), which are *derived* by torch_npu and
  must not be unioned with real device work. Counter (``C``), metadata (``M``) and flow (``s``/``f``)
  events are not rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

#: column -> dtype, in table order (the single schema object of the event table).
SCHEMA: dict[str, str] = {
    "name": "object",
    "category": "object",
    "side": "object",
    "ts_us": "float64",
    "dur_us": "float64",
    "pid": "int64",
    "tid": "int64",
    "stream": "object",
    "rank": "int64",
    "step": "int64",
    "sub": "object",
    "corr": "int64",
    "bytes": "float64",
}
COLUMNS: tuple[str, ...] = tuple(SCHEMA)
#: string columns the readers store as pandas categoricals (few distinct values, many rows).
CATEGORICAL: tuple[str, ...] = ("name", "category", "side", "stream", "sub")

#: unit of each numeric column (units in names are the rule; these two are fixed by the schema).
UNITS: dict[str, str] = {"ts_us": "us", "dur_us": "us", "bytes": "bytes"}

# categories
COMPUTE = "compute"
COMMUNICATION = "communication"
MEMCPY = "memcpy"
MEMSET = "memset"
HOST_OP = "host_op"
DISPATCH = "dispatch"
SYNC = "sync"
STEP = "step"
ANNOTATION = "annotation"
OTHER = "other"
CATEGORIES: tuple[str, ...] = (
    COMPUTE, COMMUNICATION, MEMCPY, MEMSET, HOST_OP, DISPATCH, SYNC, STEP, ANNOTATION, OTHER,
)
#: categories that are real device work (the union of these is "device busy").
DEVICE_WORK: tuple[str, ...] = (COMPUTE, COMMUNICATION, MEMCPY, MEMSET)

SIDE_DEVICE = "device"
SIDE_HOST = "host"
UNKNOWN_STEP = -1
UNKNOWN_RANK = -1
NO_CORR = -1

# sub-kinds (``sub`` column)
SUB_H2D = "H2D"
SUB_D2H = "D2H"
SUB_D2D = "D2D"
#: Ascend PCIE_DMA_SQE copy whose direction the trace does not record (host <-> device).
SUB_HOST_DEVICE = "H2D_or_D2H"
#: a small HCCL task (``Plane N`` thread, ``Notify Wait``/``SDMA``/``Write Value`` on a device stream),
#: part of a larger collective; every other communication row is one collective with sub = its op type.
SUB_COMM_TASK = "hccl_task"
SUB_OVERLAP = "overlap_analysis"
SUB_PLACEHOLDER = "placeholder"
SUB_PYTHON_FUNCTION = "python_function"
SUB_DEVICE_SYNC = "device_sync"
#: dispatch sub-kinds: a launch of device work vs any other runtime/API call.
SUB_LAUNCH = "launch"
SUB_ENQUEUE = "enqueue"
SUB_DEQUEUE = "dequeue"
SUB_RUNTIME = "runtime"
#: collective op types used in ``sub`` of communication rows (lower case, no separators).
COMM_OP_TYPES: tuple[str, ...] = (
    "allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "alltoallv",
    "send", "receive", "sendrecv", "batchsendrecv", "scatter", "gather", "barrier", "unknown",
)
SUB_KINDS: dict[str, str] = {
    "memcpy": "H2D | D2H | D2D | H2D_or_D2H | '' (unknown)",
    "communication": "a COMM_OP_TYPES value for one collective, or 'hccl_task' for its small tasks",
    "compute": "accelerator type: AI_CORE, AI_VECTOR_CORE, MIX_AIC, MIX_AIV, AI_CPU, DSA_SQE, kernel...",
    "dispatch": "launch | enqueue | dequeue | runtime",
    "sync": "'' host sync | device_sync (Kineto cuda_sync GPU event)",
    "other": "python_function | placeholder | overlap_analysis | ''",
}
#: names of the Ascend Overlap Analysis threads / events (torch_npu, tid 0..3).
OVERLAP_NAMES: tuple[str, ...] = (
    "Computing", "Communication", "Communication(Not Overlapped)", "Free",
)


def empty_events() -> pd.DataFrame:
    """An event table with no rows and the schema's columns and dtypes."""
    return pd.DataFrame({c: np.array([], dtype=d) for c, d in SCHEMA.items()})


def conform(df: pd.DataFrame) -> pd.DataFrame:
    """Return ``df`` with exactly the schema's columns, in order, cast to the schema's dtypes.

    Raises ``KeyError`` naming the missing columns: a reader that forgets one is a bug.
    """
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise KeyError(f"event table lacks columns {missing}")
    out = df if tuple(df.columns) == COLUMNS else df[list(COLUMNS)]
    casts = {c: d for c, d in SCHEMA.items() if d != "object" and str(out[c].dtype) != d}
    return out.astype(casts) if casts else out


def comm_ops(events: pd.DataFrame) -> pd.DataFrame:
    """Rows that are one collective / p2p op each (communication, not a small HCCL task)."""
    mask = (events["category"] == COMMUNICATION) & (events["sub"] != SUB_COMM_TASK)
    return events[mask]


def name_counts(events: pd.DataFrame) -> dict[str, int]:
    """``{name: rows}`` of ``events``, names that occur only (safe for a categorical ``name`` column,
    whose ``value_counts`` would also list every unused category with 0)."""
    counts = events["name"].value_counts()
    return {str(k): int(v) for k, v in counts[counts > 0].items()}


def device_work(events: pd.DataFrame) -> pd.DataFrame:
    """Device rows that are real work (compute, communication, memcpy, memset)."""
    return events[(events["side"] == SIDE_DEVICE) & events["category"].isin(DEVICE_WORK)]


def without_nested_comm_tasks(events: pd.DataFrame) -> pd.DataFrame:
    """``events`` without the small HCCL tasks (``sub`` :data:`SUB_COMM_TASK`) when collective-op rows are
    present; unchanged when the trace has tasks only (they then stand in for the collectives).

    A task runs inside its collective (the op row's span covers it), and torch_npu level1 also writes every
    hardware task a second time on the ``HCCL`` process' ``Plane N`` threads (``Notify Wait`` as
    ``Notify_Wait``, ``SDMA`` as ``Memcpy`` / ``Reduce_Inline``, same start and duration): a sum of durations
    over op and task rows counts the same device time two or three times. Unions of intervals are not
    affected; sums are.
    """
    comm = (events["category"] == COMMUNICATION).to_numpy()
    task = comm & (events["sub"] == SUB_COMM_TASK).to_numpy()
    if not (comm & ~task).any():
        return events
    return events[~task]


# longest names first so "alltoallv" wins over "alltoall" and "reducescatter" over "reduce".
_COMM_TYPE_RE = re.compile(
    "(" + "|".join(sorted((t for t in COMM_OP_TYPES if t != "unknown"), key=len, reverse=True)) + ")"
)


def comm_op_type(name: str) -> str:
    """Collective type from an op / kernel name, lower case (a :data:`COMM_OP_TYPES` value).

    ``hcom_allReduce__586_0_1`` -> ``allreduce``; ``ncclKernel_SendRecv_RING_SIMPLE...`` ->
    ``sendrecv``; ``ncclDevKernel_ReduceScatter_...`` -> ``reducescatter``; otherwise ``unknown``.
    """
    key = name.lower().replace("_", "").replace("-", "")
    found = _COMM_TYPE_RE.search(key.removeprefix("hcom").removeprefix("ncclkernel").removeprefix("nccldevkernel"))
    return found.group(1) if found else "unknown"


def choose(mask: np.ndarray, if_true: str, if_false: str) -> np.ndarray:
    """Object array of two *shared* string objects (``np.where`` on strings would make a fresh
    string per row: ~50 bytes each on a multi-million-row table)."""
    out = np.full(len(mask), if_false, dtype=object)
    out[np.asarray(mask, dtype=bool)] = if_true
    return out


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """The distinct values of an integer array, ascending (``np.unique(values)``): one sort and a
    neighbour test. numpy 2.3+ ``np.unique`` without ``return_*`` takes a hash path that was
    measured 80x slower than this on 750k distinct int64 (1.8 s vs 0.02 s, numpy 2.4.6)."""
    s = np.sort(np.asarray(values).ravel())
    if s.size < 2:
        return s
    keep = np.empty(s.size, dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def in_sorted(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Per value, whether it is in ``sorted_set`` (ascending, distinct): a binary search per value
    (``np.isin`` sorts or hashes both arrays; this one only searches)."""
    values = np.asarray(values)
    if not sorted_set.size:
        return np.zeros(values.shape, dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_set, values), sorted_set.size - 1)
    return np.asarray(sorted_set[pos] == values)


def labels(prefix: str, ids: np.ndarray) -> np.ndarray:
    """``prefix + str(id)`` per row, one string object per distinct id."""
    uniq, inverse = np.unique(np.asarray(ids), return_inverse=True)
    names = np.array([f"{prefix}{u}" for u in uniq], dtype=object)
    return names[inverse] if len(ids) else np.empty(0, dtype=object)


def per_value(values: pd.Series, fn: Callable[[str], Any], dtype: Any = object) -> np.ndarray:
    """``fn(v)`` for every row, evaluated once per distinct value (traces repeat a few thousand
    names millions of times, so string work per row would dominate)."""
    codes, uniq = pd.factorize(values, use_na_sentinel=False)
    results = np.array([fn(str(u)) for u in uniq], dtype=dtype)
    return results[codes] if len(values) else np.empty(0, dtype=dtype)


def matches(values: pd.Series, test: Callable[[str], bool]) -> np.ndarray:
    """Boolean per row of ``test(name)``, evaluated once per distinct value (a categorical ``name``
    column is never converted to one string per row)."""
    return per_value(values, test, bool)


# ------------------------------------------------------------------------ columnar table building
#: budget tiers (lower = kept first; see ``analyzer.ingest.stream.Thinning``): step markers are never
#: dropped; every device row (the device timeline the time totals come from); host sync ops and
#: annotations (sync counts, phase scopes); dispatch; host operators; other host detail.
TIER_STEP, TIER_DEVICE, TIER_HOST_SYNC, TIER_DISPATCH, TIER_HOST_OP, TIER_HOST_OTHER = range(6)
TIER_NAMES: dict[int, str] = {
    TIER_STEP: "step markers", TIER_DEVICE: "device events", TIER_HOST_SYNC: "host sync ops and annotations",
    TIER_DISPATCH: "host dispatch", TIER_HOST_OP: "host operators", TIER_HOST_OTHER: "other host detail",
}


def tiers(category: np.ndarray, side: np.ndarray) -> np.ndarray:
    """Budget tier per row from ``category`` and ``side`` (see :data:`TIER_NAMES`)."""
    category = np.asarray(category, dtype=object)
    device = np.asarray(side, dtype=object) == SIDE_DEVICE
    out = np.full(len(category), TIER_HOST_OTHER, dtype=np.int64)
    out[category == HOST_OP] = TIER_HOST_OP
    out[category == DISPATCH] = TIER_DISPATCH
    out[(category == SYNC) | (category == ANNOTATION)] = TIER_HOST_SYNC
    out[device] = TIER_DEVICE
    out[category == STEP] = TIER_STEP
    return out


def dropped_by_category(sigs: pd.DataFrame, dropped_by_sig: np.ndarray) -> dict[str, int]:
    """Σ dropped events per ``category`` of their signature (classified signature table)."""
    if not len(dropped_by_sig) or not dropped_by_sig.any():
        return {}
    counts = pd.Series(dropped_by_sig[:len(sigs)], index=sigs["category"].to_numpy(dtype=object)).groupby(level=0).sum()
    return {str(k): int(v) for k, v in counts.items() if v > 0}


def _small_codes(codes: np.ndarray, n_categories: int) -> np.ndarray:
    if n_categories < 2**7:
        return codes.astype(np.int8)
    if n_categories < 2**15:
        return codes.astype(np.int16)
    return codes.astype(np.int32)


def categorical(per_sig: np.ndarray, sig: np.ndarray) -> pd.Categorical:
    """Broadcast one value per signature to the rows (``sig`` = signature id per row) as a
    categorical: sorted categories, int8/int16 codes (no string object per row)."""
    codes, uniq = pd.factorize(pd.Series(per_sig, dtype=object), sort=True)
    codes = _small_codes(codes, len(uniq))
    return pd.Categorical.from_codes(codes[sig], categories=pd.Index(uniq, dtype=object))


def steps_by_time(ts_us: np.ndarray, step_ts_us: np.ndarray, step_dur_us: np.ndarray,
                  step_no: np.ndarray) -> np.ndarray:
    """``N`` of the ``ProfilerStep#N`` span ``[ts, ts + dur)`` containing each start, ``-1`` outside.

    torch_npu attributes events to steps this way for ``step_trace_time.csv`` (profiling-formats
    §1.7); steps do not overlap.
    """
    result = np.full(len(ts_us), UNKNOWN_STEP, dtype=np.int64)
    if not len(step_ts_us):
        return result
    order = np.argsort(step_ts_us, kind="stable")
    starts, ends, nos = step_ts_us[order], step_ts_us[order] + step_dur_us[order], step_no[order]
    idx = np.searchsorted(starts, ts_us, side="right") - 1
    ok = idx >= 0
    ok[ok] = ts_us[ok] < ends[idx[ok]]
    result[ok] = nos[idx[ok]]
    return result


_STEP_NAME_RE = re.compile(r"^ProfilerStep#(\d+)$")
#: the largest step number an int64 step column holds
MAX_STEP = 2**63 - 1


def checked_rank(value: int, where: str) -> int:
    """``value`` as a rank id; ``ValueError`` naming ``where`` when it is beyond int64 (the rank column's type)."""
    if not -(2**63) <= value <= MAX_STEP:
        raise ValueError(f"{where}: rank {value} is beyond int64 (a rank id is a small non-negative integer)")
    return value


def step_numbers(names: np.ndarray, is_step: np.ndarray) -> np.ndarray:
    """``N`` of ``ProfilerStep#N`` per signature where ``is_step``, else ``-1``."""
    out = np.full(len(names), UNKNOWN_STEP, dtype=np.int64)
    for i in np.flatnonzero(np.asarray(is_step, dtype=bool)):
        m = _STEP_NAME_RE.match(str(names[i]))
        if m:
            n = int(m.group(1))
            if n > MAX_STEP:  # 26 digits: an OverflowError deep in numpy otherwise
                raise ValueError(f"step marker {names[i]!r}: step number beyond int64 (at most {MAX_STEP})")
            out[i] = n
    return out


def build_table(sigs: pd.DataFrame, arrays: dict[str, np.ndarray], rank: int) -> pd.DataFrame:
    """The event table from a classified signature table and the per-event arrays.

    ``sigs``: one row per signature with ``name``, ``pid``, ``tid``, ``category``, ``side``,
    ``stream``, ``sub``; ``arrays``: ``sig`` (row -> signature), ``ts_us``, ``dur_us``, ``corr``,
    ``bytes`` and ``step``. Strings become categoricals (:data:`CATEGORICAL`); no per-row Python
    object is created.
    """
    sig = arrays["sig"]
    n = len(sig)
    cols: dict[str, Any] = {
        "name": categorical(sigs["name"].to_numpy(dtype=object), sig),
        "category": categorical(sigs["category"].to_numpy(dtype=object), sig),
        "side": categorical(sigs["side"].to_numpy(dtype=object), sig),
        "ts_us": arrays["ts_us"],
        "dur_us": arrays["dur_us"],
        "pid": sigs["pid"].to_numpy(dtype=np.int64)[sig],
        "tid": sigs["tid"].to_numpy(dtype=np.int64)[sig],
        "stream": categorical(sigs["stream"].to_numpy(dtype=object), sig),
        "rank": np.full(n, rank, dtype=np.int64),
        "step": arrays["step"],
        "sub": categorical(sigs["sub"].to_numpy(dtype=object), sig),
        "corr": arrays["corr"],
        "bytes": arrays["bytes"],
    }
    return pd.DataFrame(cols, copy=False)
