"""Find the inputs of a profile, read every rank, and return one :class:`Dataset`.

Accepted paths (spec/analyzer.md §1):

- an Ascend rank directory ``*_ascend_pt``, its ``ASCEND_PROFILER_OUTPUT``, or a bare
  ``trace_view.json``;
- a native msprof collection ``PROF_*`` or its ``mindstudio_profiler_output`` (timestamped names mapped,
  :mod:`analyzer.ingest.msprof`; the rank is its ``device_<id>``), or a ``PROF_*`` holding ``msprof_<ts>.db``;
- a parent directory holding one Ascend rank directory per rank (``rank0_ascend_pt``..., or ``PROF_*``);
- a Kineto trace ``.json`` / ``.json.gz`` (a ``traceEvents`` object, or a bare array of Kineto events: a bare
  array is Kineto's or Ascend's by its content, ``kineto.bare_array_shape``), or a directory of them (one per rank).

Missing files are recorded (``RankData.files`` lacks them, ``warnings`` says what that disables); bad files give a
warning when the rest can still be analysed and :class:`IngestError` when nothing can (empty folder, no trace and no
tables, a JSON that is not a profile).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from analyzer.ingest import ascend, ascend_db, cluster_output, excluded, kineto, msprof
from analyzer.ingest import events as ev
from analyzer.ingest.budgets import Budgets
from analyzer.ingest.columns import TABLE_FILES, read_csv_table
from analyzer.ingest.dropped import DroppedEvents
from analyzer.ingest.errors import IngestError
from analyzer.ingest.mixed import mixed_exports
from analyzer.ingest.stream import RawTrace, estimate_complete_events, sniff_layout
from analyzer.parallel import map_ranks
from analyzer.unreadable import RANK_ERRORS, split_judged
from ndval.core.units import BYTES_PER_GIB, GIB_BYTES

OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"
#: what each missing Ascend file disables (for the warning text).
DISABLES: dict[str, str] = {
    "trace_view.json": "event timeline (host/device/sync/dispatch indicators, step breakdowns)",
    "kernel_details.csv": "per-kernel table (MAC/MTE2 ratios, kernel duration statistics)",
    "op_statistic.csv": "operator-type totals cross-check",
    "operator_details.csv": "framework operator table",
    "step_trace_time.csv": "torch_npu's own step breakdown (recomputed from the trace instead)",
    "api_statistic.csv": "CANN API totals (dispatch/sync counts without a trace)",
    "communication.json": "per-collective wait/transit/bandwidth (communication sub-type)",
}


#: a trace larger than this (bytes on disk) read without an event budget gets a memory warning.
LARGE_TRACE_BYTES = 2 * GIB_BYTES
#: peak resident bytes per complete event of a parse + analysis, for that warning's estimate: measured
#: by ``benchmarks/bench_analyzer.py`` (x200 real Level1 trace, 877k rows: see its report); rounded up.
PEAK_BYTES_PER_EVENT = 400

#: ``totals_source`` values (besides the truncation ones): all events kept; host events thinned by
#: the event budget (device timeline complete); device events thinned too.
TOTALS_TRACE = "trace"
TOTALS_HOST_SAMPLED = "trace (event budget: host events sampled; device totals complete)"
TOTALS_DEVICE_SAMPLED_CSV = ("csv (event budget: device events sampled; step time totals from "
                             "step_trace_time.csv)")
#: a rank of an msprof-analyze cluster_analysis_output folder: its step rows are all there is.
TOTALS_CLUSTER = "csv (msprof-analyze cluster_analysis_output: cluster_step_trace_time.csv; no trace)"
TOTALS_DEVICE_SAMPLED = ("trace (event budget: device events sampled and no step_trace_time.csv: device "
                         "totals under-counted)")
#: indicators computed from host events, which a budget thins (their values come from a sample).
HOST_SAMPLED_INDICATORS: tuple[str, ...] = (
    "host_busy_pct", "host_exclusive_us", "host_exclusive_pct", "host_exclusive_per_step_us",
    "dispatch_op_count", "dispatch_ops_per_step", "host_dispatch_us", "sync_op_count", "sync_ops_per_step",
    "capture_sync_counts",
)


@dataclass
class RankData:
    """Everything read for one rank.

    ``events``: the event table (schema in :mod:`analyzer.ingest.events`), ``ts_us`` relative to ``base_ts_us``
    (int, epoch µs). ``tables``: canonical CSV tables keyed ``kernel_details``, ``op_statistic``,
    ``operator_details``, ``step_trace_time``, ``api_statistic`` (µs; epoch ``Start Time(us)`` made relative to
    ``base_ts_us``). ``communication``: parsed ``communication.json`` or None — **times in ms** as in the file.
    ``meta``: ``profiler_info``, ``profiler_metadata``, ``device_id`` (Ascend) / ``distributedInfo``,
    ``deviceProperties`` (Kineto), plus ``level`` when known. ``dropped_events``: :class:`DroppedEvents`
    ``(count, reason)`` with ``.by_category``. ``totals_source``: where time totals come from (``trace`` / ``csv``
    / ``trace (truncated)`` / the ``TOTALS_*`` event-budget values).
    """

    rank: int
    path: Path
    events: pd.DataFrame
    base_ts_us: int = 0
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    communication: dict[str, Any] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    totals_source: str = "trace"
    dropped_events: DroppedEvents = field(default_factory=DroppedEvents)

    @property
    def has_timeline(self) -> bool:
        """Read from an event timeline (trace_view.json, a Kineto trace, a DB), not tables alone: counts are measured."""
        return any(k in ("trace_view.json", "trace") or k.endswith(".db") for k in self.files)

    @property
    def device_complete(self) -> bool:
        """Every device event of the capture is in ``events`` (no truncation, no device sampling)."""
        return self.totals_source in (TOTALS_TRACE, TOTALS_HOST_SAMPLED)


@dataclass
class Dataset:
    """All ranks of one capture; ``warnings`` gathers every rank's warnings (prefixed by rank)."""

    path: Path
    source_format: str
    ranks: list[RankData]
    warnings: list[str] = field(default_factory=list)
    #: ranks of a multi-rank folder that could not be read (one line each: path and reason); not judged
    unreadable: tuple[str, ...] = ()

    def rank(self, rank: int) -> RankData:
        """The :class:`RankData` of global rank ``rank`` (KeyError when absent)."""
        for r in self.ranks:
            if r.rank == rank:
                return r
        raise KeyError(f"rank {rank} not in dataset {self.path} (ranks: {[r.rank for r in self.ranks]})")


# ----------------------------------------------------------------------------------- discovery
def _is_kineto_file(p: Path) -> bool:
    return p.is_file() and (p.name.endswith(".json.gz") or (p.suffix == ".json" and p.name != "trace_view.json"))


def _ascend_output_dir(p: Path) -> Path | None:
    """The folder holding the Ascend exports for a rank dir / output dir (or a native msprof collection), else None."""
    if (p / OUTPUT_DIR).is_dir():
        return p / OUTPUT_DIR
    if (native := msprof.output_dir(p)) is not None:  # (a torch_npu rank dir's own output wins)
        return native
    if p.name == OUTPUT_DIR or (p / "trace_view.json").is_file() or any(
        (p / f).is_file() for f in TABLE_FILES
    ) or ascend_db.find_db(p) is not None:
        return p
    return None


def _rank_dirs(parent: Path) -> list[Path]:
    return sorted(d for d in parent.iterdir() if d.is_dir() and _ascend_output_dir(d) is not None)


def _rank_hint(p: Path) -> int | None:
    m = re.search(r"rank[_-]?(\d+)", p.name)
    return ev.checked_rank(int(m.group(1)), f"{p} (folder name)") if m else msprof.rank_hint(p)


# ------------------------------------------------------------------------------------- readers
def load_ascend_rank(path: Path, rank: int | None = None, progress: bool | None = None,
                     strict: bool = False, max_events: int | None = None,
                     large_trace_bytes: int = LARGE_TRACE_BYTES, budgets: Budgets | None = None) -> RankData:
    """Read one Ascend rank (``*_ascend_pt``, ``ASCEND_PROFILER_OUTPUT`` or ``trace_view.json``).

    ``max_events``: event budget for ``trace_view.json`` (see :func:`load_dataset`)."""
    if path.is_file():
        out_dir, rank_dir, trace = path.parent, path.parent, path
    else:
        out_dir = _ascend_output_dir(path) or path
        rank_dir = out_dir.parent if out_dir.name in (OUTPUT_DIR, msprof.MSPROF_DIR) else out_dir
    files: dict[str, Path] = {}
    warnings: list[str] = []
    exports = _export_paths(out_dir, warnings)
    trace = path if path.is_file() else exports["trace_view.json"]
    meta = _ascend_meta(rank_dir, files, warnings)
    info_rank = ascend.rank_from_info(meta.get("profiler_info", {}))
    rank = rank if rank is not None else (info_rank if info_rank is not None else _rank_hint(rank_dir))
    rank = ev.UNKNOWN_RANK if rank is None else rank
    events, base, dropped, totals = ev.empty_events(), 0, DroppedEvents(), "csv"
    db = ascend_db.find_db(out_dir) if not path.is_file() else None
    if db is not None and not trace.is_file():
        return load_db_rank(db, rank_dir, rank, meta, files, warnings)
    if db is not None:
        warnings.append(f"{db}: a DB export beside the text export — the text export (trace_view.json) is read, "
                        "the DB is ignored")
    if trace.is_file():
        files["trace_view.json"] = trace
        warnings.extend(_size_warning(trace, max_events, large_trace_bytes))
        events, raw = ascend.read_trace_view(trace, rank, progress=progress, max_events=max_events,
                                             budgets=budgets)
        base, totals = raw.base_ts_us, TOTALS_TRACE
        warnings.extend(raw.warnings)
        dropped, bad_rows = excluded.dropped_rows(trace, raw, raw.excluded_steps)
        warnings.extend(bad_rows)
        if raw.truncated:
            dropped, totals = DroppedEvents(0, "trace truncated: events after the damage are unknown"), "trace (truncated)"
            if exports["step_trace_time.csv"].is_file():
                totals = "csv (trace truncated: step totals from step_trace_time.csv)"
        dropped, totals = _apply_budget(raw, dropped, totals, exports["step_trace_time.csv"].is_file(),
                                        exports["api_statistic.csv"].is_file(), warnings)
        dev = ascend.device_id(raw)
        if dev is not None:
            meta["device_id"] = dev
    tables = _ascend_tables(exports, base if files.get("trace_view.json") else None, files, warnings, strict)
    communication = None
    comm_path = out_dir / "communication.json"
    if comm_path.is_file():
        files["communication.json"] = comm_path
        try:
            communication = ascend.read_communication(comm_path)
        except IngestError as exc:
            if strict:
                raise
            warnings.append(f"{exc} — file ignored")
    if (out_dir / "communication_matrix.json").is_file():
        files["communication_matrix.json"] = out_dir / "communication_matrix.json"
    for name, what in DISABLES.items():
        if name not in files:
            warnings.append(f"{out_dir}: {name} not found — unavailable: {what}")
    if "trace_view.json" not in files and not tables:
        raise IngestError(path, "<files>", "no trace_view.json and no readable CSV export: not an Ascend profile")
    return RankData(rank=rank, path=rank_dir, events=events, base_ts_us=base, tables=tables,
                    communication=communication, meta=meta, files=files, warnings=warnings,
                    totals_source=totals, dropped_events=dropped)


def load_db_rank(db: Path, rank_dir: Path, rank: int, meta: dict[str, Any], files: dict[str, Path],
                 warnings: list[str]) -> RankData:
    """One rank of a torch_npu DB export (``ascend_db``): the same RankData as the text export;
    ``analysis.db`` totals are kept as ``analysis_db.*`` tables and checked against the recomputation."""
    files[db.name] = db
    data = ascend_db.read_db_rank(db, rank, meta.get("level"))
    rank = data.rank
    warnings.extend(data.warnings)
    meta["db_schema_version"] = data.schema_version
    if (db.parent / "analysis.db").is_file():
        files["analysis.db"] = db.parent / "analysis.db"
    st = data.tables.get("analysis_db.StepTraceTime")
    if st is not None and len(st):
        for col, (mine, theirs) in ascend_db.step_trace_check(data.events, st).items():
            if abs(mine - theirs) > 1e-3 * max(abs(theirs), 1.0):
                warnings.append(f"{files['analysis.db']}: StepTraceTime {col} {theirs:.3f} us, recomputed from "
                                f"{db.name} {mine:.3f} us (differs by more than 0.1 %)")
    return RankData(rank=rank, path=rank_dir, events=data.events, base_ts_us=data.base_ts_us, tables=data.tables,
                    meta=meta, files=files, warnings=warnings, totals_source=TOTALS_TRACE)


def _ascend_meta(rank_dir: Path, files: dict[str, Path], warnings: list[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    infos = sorted(rank_dir.glob("profiler_info*.json"))
    for key, candidates in (("profiler_info", infos), ("profiler_metadata", [rank_dir / "profiler_metadata.json"])):
        for p in candidates:
            if p.is_file():
                files[p.name] = p
                try:
                    value = ascend.read_json_file(p)
                except IngestError as exc:
                    warnings.append(f"{exc} — file ignored")
                    break
                if isinstance(value, dict):
                    meta[key] = value
                else:
                    warnings.append(f"{p}: <file>: top level is a JSON {type(value).__name__}, expected an object "
                                    "— file ignored")
                break
    level = _nested(meta, "profiler_info", "config", "experimental_config", "_profiler_level")
    if level:
        meta["level"] = level
    return meta


def _nested(data: Any, *keys: str) -> Any:
    """``data[k1][k2]...`` or None when a level is missing or not a mapping."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _export_paths(out_dir: Path, warnings: list[str]) -> dict[str, Path]:
    """Export name -> its path in ``out_dir``; a native msprof folder's timestamped files stand for them
    (:func:`analyzer.ingest.msprof.export_files`)."""
    paths = {name: out_dir / name for name in ("trace_view.json", *TABLE_FILES)}
    if out_dir.name == msprof.MSPROF_DIR:
        paths.update(msprof.export_files(out_dir, warnings))
    return paths


def _ascend_tables(exports: dict[str, Path], base: int | None, files: dict[str, Path], warnings: list[str],
                   strict: bool) -> dict[str, pd.DataFrame]:
    tables: dict[str, pd.DataFrame] = {}
    for fname, key in TABLE_FILES.items():
        p = exports[fname]
        if not p.is_file():
            continue
        files[fname] = p
        try:
            tables[key] = read_csv_table(p, key, base_ts_us=base)
        except IngestError as exc:
            if strict:
                raise
            warnings.append(f"{exc} — table ignored")
            continue
        if tables[key].empty:
            del tables[key]
            warnings.append(f"{p}: header only, no rows — table ignored")
    return tables


def load_kineto_rank(path: Path, rank: int | None = None, progress: bool | None = None,
                     max_events: int | None = None, large_trace_bytes: int = LARGE_TRACE_BYTES,
                     budgets: Budgets | None = None) -> RankData:
    """Read one Kineto trace file (``max_events``: event budget, see :func:`load_dataset`)."""
    size_warnings = _size_warning(path, max_events, large_trace_bytes)
    events, raw, meta = kineto.read_kineto_trace(path, rank=rank, progress=progress, max_events=max_events,
                                                 budgets=budgets)
    warnings = size_warnings + list(raw.warnings)
    r = int(events["rank"].iloc[0]) if len(events) else (rank if rank is not None else ev.UNKNOWN_RANK)
    if kineto.rank_of(meta) is None and rank is None:
        warnings.append(f"{path}: distributedInfo.rank absent — rank unknown (-1)")
    if meta.get("unknown_categories"):
        listed = ", ".join(f"{c!r} {n:,}" for c, n in meta["unknown_categories"].items())
        warnings.append(f"{path}: event categories the reader does not know, kept as 'other' host events and not "
                        f"read as device work: {listed}")
    dropped, bad_rows = excluded.dropped_rows(path, raw, raw.excluded_steps)
    warnings.extend(bad_rows)
    totals = "trace (truncated)" if raw.truncated else TOTALS_TRACE
    dropped, totals = _apply_budget(raw, dropped, totals, False, False, warnings)
    groups = meta.pop(kineto.GROUP_ROWS_KEY, None)
    return RankData(rank=r, path=path, events=events, base_ts_us=raw.base_ts_us, meta=meta,
                    tables={} if groups is None else {kineto.GROUP_ROWS_KEY: groups},
                    files={"trace": path}, warnings=warnings, totals_source=totals, dropped_events=dropped)


# ----------------------------------------------------------------------------------- event budget
def estimated_peak_bytes(n_events: int) -> int:
    """Peak memory of reading + analysing ``n_events`` complete events: ``n × PEAK_BYTES_PER_EVENT``
    (a measured constant, see its comment)."""
    return int(n_events) * PEAK_BYTES_PER_EVENT


def _size_warning(trace: Path, max_events: int | None, large_trace_bytes: int) -> list[str]:
    """A warning with the estimated memory when a big trace is read without an event budget."""
    size = trace.stat().st_size
    if max_events is not None or size <= large_trace_bytes:
        return []
    n = estimate_complete_events(trace)
    return [f"{trace}: {size / BYTES_PER_GIB:.1f} GiB trace read without an event budget: ~{n:,} complete events "
            f"(estimated from the first 8 MiB), ~{estimated_peak_bytes(n) / BYTES_PER_GIB:.1f} GiB of memory estimated "
            f"({PEAK_BYTES_PER_EVENT} B/event measured); pass max_events (ndval analyze --max-events N) to bound it"]


def _apply_budget(raw: RawTrace, dropped: DroppedEvents, totals: str, has_step_csv: bool, has_api_csv: bool,
                  warnings: list[str]) -> tuple[DroppedEvents, str]:
    """Fold what the event budget dropped into ``dropped`` / ``totals`` and warn (see ``stream.Thinning``)."""
    th = raw.thinning
    if th is None or not th.n_dropped:
        return dropped, totals
    n_budget = th.n_dropped
    by_cat = dict(dropped.by_category)
    for k, v in raw.dropped_by_category.items():
        by_cat[k] = by_cat.get(k, 0) + v
    thinned = th.summary(ev.TIER_NAMES)
    n_seen = raw.n_complete
    auto = " (automatic: what fits the memory this process may use; --max-events sets it)" if th.auto else ""
    reason = (f"event budget max_events={th.max_events:,}{auto}: kept {n_seen - n_budget:,} of {n_seen:,} complete events; "
              + ", ".join(thinned) + " (thinned evenly in time, lower tiers dropped first)")
    reason = f"{dropped.reason}; {reason}" if dropped.count or dropped.reason else reason
    device_dropped = any(th.kept.get(t, 0) < th.seen.get(t, 0) for t in (ev.TIER_STEP, ev.TIER_DEVICE))
    if totals == TOTALS_TRACE:
        if device_dropped:
            totals = TOTALS_DEVICE_SAMPLED_CSV if has_step_csv else TOTALS_DEVICE_SAMPLED
        else:
            totals = TOTALS_HOST_SAMPLED
    per_cat = ", ".join(f"{k} {v:,}" for k, v in sorted(raw.dropped_by_category.items()))
    text = (f"{raw.path}: event budget{auto}: dropped {n_budget:,} of {n_seen:,} complete events ({per_cat}); "
            f"{', '.join(thinned)}. Totals source: '{totals}'. Host-side indicators "
            f"({', '.join(HOST_SAMPLED_INDICATORS)}) come from the kept sample and are under-counted")
    if has_api_csv:
        text += "; api_statistic.csv holds the complete CANN API call counts"
    if device_dropped:
        text += ("; device events were thinned too: the step time breakdown comes from step_trace_time.csv"
                 if has_step_csv else "; device events were thinned too: device time totals are under-counted")
    if n_seen - n_budget > th.max_events:
        text += f"; the budget is below the {n_seen - n_budget:,} step markers kept, which are never dropped"
    warnings.append(text)
    return DroppedEvents(dropped.count + n_budget, reason, by_cat), totals


def load_dataset(path: str | Path, progress: bool | None = None, strict: bool = False,
                 ranks: list[int] | None = None, max_events: int | None = None,
                 large_trace_bytes: int = LARGE_TRACE_BYTES, budgets: Budgets | None = None,
                 workers: int | None = None, backend: str = "process") -> Dataset:
    """Read a profile (see module docstring for accepted layouts).

    ``progress``: force the progress bar on/off (default: only for big files on a terminal).
    ``strict``: raise :class:`IngestError` on a bad CSV instead of warning and skipping it.
    ``ranks``: read only these ranks of a multi-rank parent.
    ``max_events``: event budget **per rank** (complete trace events kept in the table; default no
    budget). Beyond it, step markers and device events are kept first and host-side detail is
    thinned evenly over the trace (``stream.Thinning``); ``dropped_events`` counts what was dropped
    per category, ``totals_source`` says where totals then come from, and a warning says it.
    ``budgets``: ingest budgets per trace (nesting depth, event size, events read, decompressed size;
    default ``Budgets.for_event_budget(max_events)``, see :mod:`analyzer.ingest.budgets`).
    ``workers`` / ``backend``: a folder of several ranks is read in parallel, one task per rank
    (:func:`analyzer.parallel.map_ranks`: process pool by default, ``"dask"``, or ``"serial"``).
    ``large_trace_bytes``: without a budget, a trace file larger than this gets a warning with the
    estimated memory (default :data:`LARGE_TRACE_BYTES`).
    """
    if max_events is not None and (not isinstance(max_events, int) or max_events < 0):
        raise ValueError(f"max_events must be a non-negative integer or None, got {max_events!r}")
    p = Path(path)
    if not p.exists():
        raise IngestError(p, "<path>", "does not exist")
    if not (p.is_file() or p.is_dir()):  # a FIFO or device would be read until killed
        raise IngestError(p, "<path>", "is a FIFO, device or socket, not a profile file or folder")
    opts: dict[str, Any] = {"progress": progress, "max_events": max_events, "large_trace_bytes": large_trace_bytes,
                            "budgets": budgets}
    if p.is_file():
        array = p.name.endswith((".json", ".json.gz")) and sniff_layout(p) == "array"
        if array and kineto.bare_array_shape(p)[0] == "kineto":  # content decides, not the name
            return _finish(p, "kineto", [load_kineto_rank(p, **opts)])
        if p.name == "trace_view.json" or (array and p.suffix == ".json"):
            return _finish(p, "ascend", [load_ascend_rank(p, strict=strict, **opts)])
        if _is_kineto_file(p):
            return _finish(p, "kineto", [load_kineto_rank(p, **opts)])
        raise IngestError(p, "<file>", "not a profile: expected trace_view.json, *.json or *.json.gz")
    if _ascend_output_dir(p) is not None:
        return _finish(p, "ascend", [load_ascend_rank(p, strict=strict, **opts)])
    rank_dirs, cluster_dir = _rank_dirs(p), cluster_output.folder_of(p)
    if cluster_dir is not None and not rank_dirs:
        return load_cluster_output(cluster_dir, ranks)
    opts = dict(opts, progress=False)  # one bar over the ranks, none per file
    if rank_dirs:
        wanted = [d for d in rank_dirs if ranks is None or _rank_hint(d) in ranks or _rank_hint(d) is None]
        rds = map_ranks(partial(load_ascend_rank, strict=strict, **opts), wanted, workers, backend, progress,
                        label="reading Ascend ranks", keep_going=RANK_ERRORS)
        ds = _finish(p, "ascend", [r for r in rds if ranks is None or not hasattr(r, "rank") or r.rank in ranks])
        if cluster_dir is not None:  # both: the rank folders are read, the cluster file checked against them
            ds.warnings.extend(cluster_output.cross_check(cluster_output.read(cluster_dir), {
                r.rank: r.tables["step_trace_time"] for r in ds.ranks if "step_trace_time" in r.tables}))
        return ds
    traces = sorted(f for f in p.iterdir() if _is_kineto_file(f))
    if traces:
        rds = map_ranks(partial(load_kineto_rank, **opts), traces, workers, backend, progress,
                        label="reading Kineto traces", keep_going=RANK_ERRORS)
        return _finish(p, "kineto", [r for r in rds if ranks is None or not hasattr(r, "rank") or r.rank in ranks])
    raise IngestError(
        p, "<folder>",
        "no profile found: expected an *_ascend_pt dir (ASCEND_PROFILER_OUTPUT/trace_view.json or CSVs), an msprof "
        "PROF_* collection, a parent of such dirs, or Kineto *.json / *.json.gz traces",
    )


def _cluster_rank(c: cluster_output.ClusterOutput, rank: int, first: bool) -> RankData:
    """One rank of a cluster output: its step rows as ``step_trace_time``, one ``ProfilerStep`` marker per step
    spanning Computing + Communication(Not Overlapped) + Free (steps back to back: the file has no clock), its
    per-op communication as ``communication``; the first rank carries the link matrix."""
    rows = c.step_rows[rank]
    spans = [cluster_output.span_us(r) for r in rows]
    starts = [sum(spans[:i]) for i in range(len(spans))]
    numbers = [int(r["Step"]) if str(r["Step"]).isdigit() else i for i, r in enumerate(rows)]
    events = ev.conform(pd.DataFrame({
        "name": [f"ProfilerStep#{n}" for n in numbers], "category": ev.STEP, "side": ev.SIDE_HOST, "ts_us": starts,
        "dur_us": spans, "pid": 0, "tid": 0, "stream": "", "rank": rank, "step": numbers, "sub": "",
        "corr": ev.NO_CORR, "bytes": float("nan")}))
    st = pd.DataFrame(rows).assign(Step=numbers)
    files = {cluster_output.STEP_FILE: c.files[cluster_output.STEP_FILE]}
    if first and cluster_output.MATRIX_FILE in c.files:
        files["communication_matrix.json"] = c.files[cluster_output.MATRIX_FILE]
    return RankData(rank=rank, path=c.path, events=events, tables={"step_trace_time": st},
                    communication=c.communication.get(rank), meta={"cluster_output": str(c.path)}, files=files,
                    totals_source=TOTALS_CLUSTER)


def load_cluster_output(folder: Path, ranks: list[int] | None = None) -> Dataset:
    """A ``cluster_analysis_output`` folder (no rank folders) as a dataset of its ranks (``analyzer.ingest.cluster_output``)."""
    c = cluster_output.read(folder)
    wanted = [r for r in c.ranks if ranks is None or r in ranks]
    ds = _finish(folder, "ascend", [_cluster_rank(c, r, i == 0) for i, r in enumerate(wanted)])
    ds.warnings.extend(c.warnings)
    return ds


def _finish(path: Path, fmt: str, results: list[Any]) -> Dataset:
    """The dataset of the readable ranks; unreadable ones are named (all unreadable: the first one's error)."""
    rds, lines = split_judged(results)
    rds.sort(key=lambda r: r.rank)
    warnings = [f"rank {r.rank}: {w}" for r in rds for w in r.warnings]
    seen = [r.rank for r in rds if r.rank != ev.UNKNOWN_RANK]
    if len(seen) != len(set(seen)):
        warnings.append(f"{path}: duplicate rank ids {seen}")
    warnings.extend(mixed_exports(path, rds))
    unreadable = tuple(lines)
    if unreadable:
        warnings.insert(0, f"{path}: {len(unreadable)} of {len(results)} ranks unreadable, not judged (the other "
                        f"{len(rds)} analysed): " + "; ".join(unreadable))
    return Dataset(path=path, source_format=fmt, ranks=rds, warnings=warnings, unreadable=unreadable)
