"""Per-step time breakdowns computed from the event table with :mod:`analyzer.timeline`.

Two families, one per source format, both pure functions (event table -> typed records):

1. **Ascend step breakdown** (:func:`ascend_step_breakdown`): the columns of torch_npu's
   ``step_trace_time.csv`` recomputed from the device tasks of ``trace_view.json``
   (profiling-formats §1.7, verified on msinsight level1 rank0):

   - ``computing_us``      = |∪ compute tasks|  (AI_CORE, AI_VECTOR_CORE, MIX_*, AI_CPU, DSA...)
   - ``communication_us``  = |∪ collective ops| (the ``Group * Communication`` ops of the HCCL /
     Communication process; small HCCL tasks only when no op row exists)
   - ``comm_not_overlapped_us`` = |∪comm \\ ∪compute|;  ``overlapped_us`` = comm - not overlapped
   - ``free_us``           = span(∪compute ∪ ∪comm) - |∪compute ∪ ∪comm|  (copies count as free,
     as in torch_npu)
   - ``bubble_us``         = Σ dur of ``hcom_receive*`` ops; ``stage_us`` = span - bubble.

   A step's device events are those whose start lies in its ``ProfilerStep#N`` span. The Overlap
   Analysis events that torch_npu itself writes are summed separately by
   :func:`ascend_overlap_totals` (an independent check: the same numbers by another route).

2. **Kineto step breakdown** (:func:`kineto_step_breakdown`, HTA definitions, profiling-formats
   §3.1-§3.2): per step, over the GPU events launched in that step (streams pooled):

   - ``span_us`` = last end - first start; ``busy_us`` = |∪ GPU work|; ``idle_us`` = span - busy
   - ``compute_us`` = |∪ compute kernels| (memcpy / memset are *not* compute)
   - ``communication_us`` = |∪ NCCL kernels|; ``overlap_us`` = |∪compute ∩ ∪comm|;
     ``overlap_pct`` = 100 · overlap / communication (HTA ``get_comm_comp_overlap``)
   - ``exposed_comm_us`` = |∪comm \\ ∪compute|; ``memcpy_us`` / ``memset_us`` = |∪copies|, |∪fills|,
     ``memcpy_share_pct`` = 100 · memcpy / span.

   :func:`hta_window` reproduces HTA's default trace window (the last ProfilerStep and everything
   launched after its start are dropped), and :func:`comm_compute_overlap` the whole-window ratio
   (:func:`hta_window_overlap_pct`: both at once, without building the window table).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from analyzer import timeline as tl
from analyzer.ingest import events as ev


@dataclass(frozen=True)
class AscendStepBreakdown:
    """One row of a recomputed ``step_trace_time.csv`` (all µs)."""

    step: int
    computing_us: float
    communication_us: float
    comm_not_overlapped_us: float
    overlapped_us: float
    free_us: float
    stage_us: float
    bubble_us: float
    span_us: float


@dataclass(frozen=True)
class KinetoStepBreakdown:
    """Per-step GPU time breakdown, HTA definitions (µs and %)."""

    step: int
    span_us: float
    busy_us: float
    idle_us: float
    compute_us: float
    communication_us: float
    overlap_us: float
    exposed_comm_us: float
    memcpy_us: float
    memset_us: float

    @property
    def overlap_pct(self) -> float:
        """100 · |compute ∩ comm| / |comm|; NaN when there is no communication."""
        return 100.0 * self.overlap_us / self.communication_us if self.communication_us > 0 else float("nan")

    @property
    def idle_pct(self) -> float:
        """100 · idle / span."""
        return 100.0 * self.idle_us / self.span_us if self.span_us > 0 else float("nan")

    @property
    def memcpy_share_pct(self) -> float:
        """100 · |∪memcpy| / span."""
        return 100.0 * self.memcpy_us / self.span_us if self.span_us > 0 else float("nan")


#: the columns the breakdowns read (selected before any row filter, so filters copy only these).
BREAKDOWN_COLUMNS: tuple[str, ...] = ("name", "category", "sub", "ts_us", "dur_us", "step")


def _device(events: pd.DataFrame) -> pd.DataFrame:
    cols = [c for c in BREAKDOWN_COLUMNS if c in events.columns]
    return events.loc[(events["side"] == ev.SIDE_DEVICE).to_numpy(), cols]


def by_step(rows: pd.DataFrame, steps: list[int]) -> list[pd.DataFrame]:
    """``rows`` of each step in ``steps`` (file order kept within a step): one stable sort of the
    step column and a binary search per step — O(n log n) for all steps, instead of one full filter
    per step (O(steps × n))."""
    step_col = rows["step"].to_numpy()
    order = np.argsort(step_col, kind="stable")
    sorted_steps = step_col[order]
    lo = np.searchsorted(sorted_steps, steps, side="left")
    hi = np.searchsorted(sorted_steps, steps, side="right")
    return [rows.iloc[order[a:b]] for a, b in zip(lo, hi, strict=True)]


def comm_op_rows(events: pd.DataFrame) -> pd.DataFrame:
    """Collective-op rows; the small HCCL tasks stand in only when a trace has no op rows."""
    comm = events[events["category"] == ev.COMMUNICATION]
    return ev.without_nested_comm_tasks(comm)


def ascend_breakdown(device_events: pd.DataFrame, step: int = ev.UNKNOWN_STEP) -> AscendStepBreakdown:
    """The step_trace_time columns for one set of device events (see module docstring)."""
    compute = tl.from_events(device_events[device_events["category"] == ev.COMPUTE])
    comm_rows = comm_op_rows(device_events)
    comm = tl.from_events(comm_rows)
    busy = tl.merge(compute, comm)
    not_overlapped = tl.exclusive_us(comm, compute)
    bubble = float(comm_rows.loc[comm_rows["name"].str.startswith("hcom_receive"), "dur_us"].sum())
    return AscendStepBreakdown(
        step=step, computing_us=compute.length_us, communication_us=comm.length_us,
        comm_not_overlapped_us=not_overlapped, overlapped_us=comm.length_us - not_overlapped,
        free_us=busy.span_us - busy.length_us, stage_us=busy.span_us - bubble, bubble_us=bubble,
        span_us=busy.span_us,
    )


def ascend_step_breakdown(events: pd.DataFrame) -> list[AscendStepBreakdown]:
    """One :class:`AscendStepBreakdown` per ``ProfilerStep``; one row with step ``-1`` when the
    trace has no steps (like torch_npu's single empty-``Step`` row)."""
    dev = _device(events)
    steps = sorted(int(s) for s in events.loc[events["category"] == ev.STEP, "step"].unique())
    if not steps:
        return [ascend_breakdown(dev)]
    return [ascend_breakdown(part, s) for part, s in zip(by_step(dev, steps), steps, strict=True)]


def ascend_overlap_totals(events: pd.DataFrame) -> pd.DataFrame:
    """Σ dur of torch_npu's ``Overlap Analysis`` events per step and name (µs).

    Columns: ``step`` and one per :data:`events.OVERLAP_NAMES` present. Empty when the trace has no
    Overlap Analysis process.
    """
    ov = events[(events["category"] == ev.OTHER) & (events["sub"] == ev.SUB_OVERLAP)]
    if ov.empty:
        return pd.DataFrame(columns=["step", *ev.OVERLAP_NAMES])
    table = ov.pivot_table(index="step", columns="name", values="dur_us", aggfunc="sum", fill_value=0.0,
                           observed=True)
    return table.reset_index().rename_axis(columns=None)


#: device-work category -> code in :class:`_WorkArrays` (every other row: -1).
_WORK_CODES: dict[str, int] = {ev.COMPUTE: 0, ev.COMMUNICATION: 1, ev.MEMCPY: 2, ev.MEMSET: 3}


@dataclass(frozen=True)
class _WorkArrays:
    """The device-work rows of an event table as plain arrays (start, end = start + dur, category
    code, step): selected once, then sliced per step without touching the table again."""

    ts_us: np.ndarray
    end_us: np.ndarray
    code: np.ndarray
    step: np.ndarray

    @classmethod
    def of(cls, device_events: pd.DataFrame, rows: np.ndarray | None = None) -> _WorkArrays:
        """The work rows of ``device_events`` (only its rows at positions ``rows`` when given)."""
        code = _work_codes(device_events["category"])
        work = code >= 0 if rows is None else rows[code[rows] >= 0]
        ts = device_events["ts_us"].to_numpy(dtype=np.float64)[work]
        step = (device_events["step"].to_numpy()[work] if "step" in device_events.columns
                else np.full(ts.size, ev.UNKNOWN_STEP))
        return cls(ts, ts + device_events["dur_us"].to_numpy(dtype=np.float64)[work], code[work], step)

    def union(self, rows: np.ndarray | slice, code: int | None = None) -> tl.Intervals:
        """∪ of the rows ``rows`` (of category ``code`` when given)."""
        ts, end = self.ts_us[rows], self.end_us[rows]
        if code is not None:
            sel = self.code[rows] == code
            ts, end = ts[sel], end[sel]
        return tl.union(ts, end)


def _work_codes(cat: pd.Series) -> np.ndarray:
    """:data:`_WORK_CODES` per row (-1 for rows that are not device work); one lookup per category."""
    if isinstance(cat.dtype, pd.CategoricalDtype):
        per_cat = np.array([_WORK_CODES.get(c, -1) for c in cat.cat.categories] + [-1], dtype=np.int8)
        return per_cat[cat.cat.codes.to_numpy()]  # code -1 (missing) picks the trailing -1
    return np.array([_WORK_CODES.get(c, -1) for c in cat], dtype=np.int8)


def _breakdown_of(work: _WorkArrays, rows: np.ndarray | slice, step: int) -> KinetoStepBreakdown:
    busy = work.union(rows)
    compute = work.union(rows, _WORK_CODES[ev.COMPUTE])
    comm = work.union(rows, _WORK_CODES[ev.COMMUNICATION])
    overlap = tl.overlap_us(compute, comm)
    return KinetoStepBreakdown(
        step=step, span_us=busy.span_us, busy_us=busy.length_us, idle_us=busy.span_us - busy.length_us,
        compute_us=compute.length_us, communication_us=comm.length_us, overlap_us=overlap,
        exposed_comm_us=comm.length_us - overlap,
        memcpy_us=work.union(rows, _WORK_CODES[ev.MEMCPY]).length_us,
        memset_us=work.union(rows, _WORK_CODES[ev.MEMSET]).length_us,
    )


def kineto_breakdown(device_events: pd.DataFrame, step: int = ev.UNKNOWN_STEP) -> KinetoStepBreakdown:
    """GPU time breakdown of one set of device events (see module docstring)."""
    return _breakdown_of(_WorkArrays.of(device_events), slice(None), step)


def kineto_step_breakdown(events: pd.DataFrame) -> list[KinetoStepBreakdown]:
    """One :class:`KinetoStepBreakdown` per ProfilerStep (device events by launching step).

    The device-work rows are turned into arrays once and grouped by one stable sort of their step
    (file order kept within a step) and a binary search per step: O(n log n) for all steps."""
    dev = _device(events)
    steps = sorted(int(s) for s in events.loc[events["category"] == ev.STEP, "step"].unique())
    work = _WorkArrays.of(dev)
    if not steps:
        return [_breakdown_of(work, slice(None), ev.UNKNOWN_STEP)]
    order = np.argsort(work.step, kind="stable")
    sorted_steps = work.step[order]
    lo = np.searchsorted(sorted_steps, steps, side="left")
    hi = np.searchsorted(sorted_steps, steps, side="right")
    return [_breakdown_of(work, order[a:b], s) for a, b, s in zip(lo, hi, steps, strict=True)]


def hta_window(events: pd.DataFrame, include_last_step: bool = False) -> pd.DataFrame:
    """HTA's default analysis window (``Trace._filter_irrelevant_gpu_kernels``, HTA 0.5.0).

    Host events are kept when they start before the last ``ProfilerStep`` starts (with
    ``include_last_step``: before it ends); device events are kept when their launching host event
    (same ``corr``) is kept. With fewer than two steps HTA keeps the last step too; so do we.
    """
    keep_host, keep_dev = _hta_window_masks(events, include_last_step)
    ts = events["ts_us"].to_numpy(dtype=np.float64)
    rows = np.concatenate([np.flatnonzero(keep_host), np.flatnonzero(keep_dev)])  # host rows, then device rows
    return events.take(rows[np.argsort(ts[rows], kind="stable")])


def hta_window_masks(events: pd.DataFrame, include_last_step: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(host rows kept, device rows kept)`` of :func:`hta_window` as boolean masks (no table is built)."""
    return _hta_window_masks(events, include_last_step)


def _hta_window_masks(events: pd.DataFrame, include_last_step: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(host rows kept, device rows kept)`` of :func:`hta_window`, as boolean masks."""
    is_step = (events["category"] == ev.STEP).to_numpy(dtype=bool)
    is_host = (events["side"] == ev.SIDE_HOST).to_numpy(dtype=bool)
    ts = events["ts_us"].to_numpy(dtype=np.float64)
    if is_step.sum() < 2:
        include_last_step = True
    keep_host = is_host
    if is_step.any():
        step_rows = np.flatnonzero(is_step)
        last = step_rows[int(np.argmax(ts[step_rows]))]
        limit = float(ts[last] + events["dur_us"].to_numpy(dtype=np.float64)[last]) if include_last_step \
            else float(ts[last])
        keep_host = is_host & ((ts <= limit) if include_last_step else (ts < limit))
    corr = events["corr"].to_numpy()
    launched = ev.sorted_unique(corr[keep_host & (corr >= 0)])
    keep_dev = (events["side"] == ev.SIDE_DEVICE).to_numpy(dtype=bool) & ev.in_sorted(corr, launched)
    return keep_host, keep_dev


def hta_window_overlap_pct(events: pd.DataFrame) -> float:
    """``comm_compute_overlap(hta_window(events))``, from the window's device rows as arrays (the
    window table is not built: the union of intervals does not depend on row order)."""
    _, keep_dev = _hta_window_masks(events, False)
    return _breakdown_of(_WorkArrays.of(events, np.flatnonzero(keep_dev)), slice(None), ev.UNKNOWN_STEP).overlap_pct


def comm_compute_overlap(events: pd.DataFrame) -> float:
    """HTA comm-compute overlap, %: 100 · |∪compute ∩ ∪comm| / |∪comm| over the given events.

    Compute = compute kernels only (memcpy / memset excluded), GPU streams pooled. Pass
    ``hta_window(events)`` to reproduce HTA's default window. NaN without communication.
    """
    return kineto_breakdown(_device(events)).overlap_pct


def to_frame(rows: list[AscendStepBreakdown] | list[KinetoStepBreakdown]) -> pd.DataFrame:
    """Records -> DataFrame (Kineto rows also get the ``*_pct`` properties as columns)."""
    frame = pd.DataFrame([asdict(r) for r in rows])
    if rows and isinstance(rows[0], KinetoStepBreakdown):
        for prop in ("overlap_pct", "idle_pct", "memcpy_share_pct"):
            frame[prop] = np.array([getattr(r, prop) for r in rows], dtype=np.float64)
    return frame


def hta_window_shares(events: pd.DataFrame) -> dict[str, float] | None:
    """HTA's temporal breakdown over its default window: ``{"gpu_span_us", "idle_pct", "compute_pct",
    "non_compute_pct"}`` (shares of the GPU span; non-compute = busy − compute: copies, fills, communication
    not under compute). With fewer than two ProfilerSteps there is no step to drop and every device row is
    kept (measured: HTA's shares on the MTIA traces of ``kineto/hta-tests`` are those of all their device
    events, many of which have no launching host event). None without device work."""
    _, keep_dev = _hta_window_masks(events, False)
    if int((events["category"] == ev.STEP).sum()) < 2:
        keep_dev = (events["side"] == ev.SIDE_DEVICE).to_numpy(dtype=bool)
    b = _breakdown_of(_WorkArrays.of(events, np.flatnonzero(keep_dev)), slice(None), ev.UNKNOWN_STEP)
    if b.span_us <= 0:
        return None
    return {"gpu_span_us": b.span_us, "idle_pct": 100.0 * b.idle_us / b.span_us,
            "compute_pct": 100.0 * b.compute_us / b.span_us,
            "non_compute_pct": 100.0 * (b.busy_us - b.compute_us) / b.span_us}
