"""Ascend torch_npu **DB export** (``export_type=db``) -> the same event table as the text export.

Files (profiling-formats §1.12): ``ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_<rank>.db`` and
``analysis.db``, both SQLite, read with the standard library's ``sqlite3`` through a read-only URI
(``mode=ro&immutable=1``: nothing is written beside an export, see ``_read_only_uri``). Strings are ids
into ``STRING_IDS``; enum columns are ids into
the ``ENUM_*`` tables; times are integer **ns** (epoch). The schema version (``META_DATA``
``SCHEMA_VERSION_MAJOR``) is checked: an unknown major version is a clear error naming it.

Rows of the event table (categories as in :mod:`analyzer.ingest.events`):

- ``TASK`` ⋈ ``COMPUTE_TASK_INFO`` -> ``compute`` (name = op name, sub = task type); these are
  exactly the tasks torch_npu sums as *Computing* (checked against ``analysis.db`` ``StepTraceTime``
  on the shared Level0/Level2 exports: tasks without compute info, e.g. an ``AI_CORE`` reduce task
  under an allreduce, are not Computing);
- ``TASK`` ⋈ ``COMMUNICATION_TASK_INFO`` -> ``communication`` sub ``hccl_task`` (small HCCL tasks);
- ``COMMUNICATION_OP`` -> one ``communication`` row per collective (sub = op type, bytes = count ×
  sizeof(data type)) on ``Group <i> Communication``;
- other ``TASK`` rows: ``MEMCPY_ASYNC`` -> ``memcpy``, event record/wait -> ``other`` placeholder,
  the rest ``other`` (sub = task type);
- ``PYTORCH_API`` (host): ops -> ``host_op`` (``sync`` for ``aten::item``..., ``step`` for
  ``ProfilerStep#N``), queue -> ``dispatch`` enqueue/dequeue, trace -> ``other`` python_function,
  mstx -> ``annotation``; ``CANN_API`` -> ``dispatch`` named ``AscendCL@``/``Node@``/``Hccl@``/
  ``Runtime@`` + name as in the text export (launch vs runtime by the same rule).

Steps: the ``ProfilerStep#N`` rows of ``PYTORCH_API``, else the ``STEP_TIME`` table.

Native msprof DB (``msprof --type=db``: ``PROF_*/msprof_<ts>.db``, :data:`MSPROF_DB_GLOB`): the same tables
without the framework's — no ``META_DATA`` (no schema version to check) and no ``PYTORCH_API`` (no host ops);
``STRING_IDS``, ``TASK`` and ``COMPUTE_TASK_INFO`` are required (:data:`MSPROF_REQUIRED_TABLES`), and a
``COMMUNICATION_OP`` without ``dataType`` / ``count`` columns gives collectives without a message size.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analyzer.ingest import ascend
from analyzer.ingest import events as ev
from analyzer.ingest.decode import DTYPE_BYTES
from analyzer.ingest.errors import IngestError
from ndval.core.units import NS_PER_US

#: ``META_DATA`` schema major versions this reader knows.
SUPPORTED_MAJOR: frozenset[str] = frozenset({"1"})
#: tables every level writes (Level0 and up); missing one is an error naming it.
REQUIRED_TABLES: tuple[str, ...] = ("META_DATA", "STRING_IDS", "TASK", "COMPUTE_TASK_INFO", "PYTORCH_API")
#: tables by profiler level that are expected; missing one is a warning naming what it disables.
LEVEL_TABLES: dict[str, dict[str, str]] = {
    "Level0": {"COMMUNICATION_OP": "collective ops (communication time)",
               "COMMUNICATION_TASK_INFO": "small HCCL tasks", "CANN_API": "CANN dispatch events",
               "STEP_TIME": "step span without ProfilerStep rows"},
    "Level1": {},
    "Level2": {"TASK_PMU_INFO": "per-task PMU metrics"},
}
#: ``ENUM_API_TYPE`` ids of ``CANN_API``/``PYTORCH_API`` -> name prefix of the text export.
CANN_PREFIX: dict[int, str] = {5000: "Runtime", 5500: "Hccl", 10000: "Node", 15000: "Model", 20000: "AscendCL"}
API_OP, API_QUEUE, API_TRACE, API_MSTX = 50001, 50002, 50003, 50004
DB_GLOB = "ascend_pytorch_profiler*.db"
#: the native msprof DB export and the tables it must hold
MSPROF_DB_GLOB = "msprof_*.db"
MSPROF_REQUIRED_TABLES: tuple[str, ...] = ("STRING_IDS", "TASK", "COMPUTE_TASK_INFO")
#: ``DbRank.schema_version`` of a native msprof DB (it writes no ``META_DATA``)
MSPROF_SCHEMA = "msprof (no META_DATA)"
#: pseudo process ids of the device side (the DB has no trace process table).
PID_HARDWARE, PID_COMM = -10, -11


@dataclass
class DbRank:
    """What one rank's DB export holds, read: the event table, ``base_ts_us`` and side tables."""

    events: pd.DataFrame
    base_ts_us: int
    schema_version: str
    level: str | None
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    session_ns: tuple[int, int] | None = None
    #: the rank the events carry: the caller's, or a native msprof DB's one ``TASK.deviceId`` where it had none
    rank: int = ev.UNKNOWN_RANK


def connect(path: Path) -> sqlite3.Connection:
    """Read-only connection; IngestError naming the file when it is not a readable SQLite DB."""
    if not path.is_file():
        raise IngestError(path, "<file>", "does not exist")
    with open(path, "rb") as fh:
        if fh.read(16) != b"SQLite format 3\x00":
            raise IngestError(path, "<file>", "not an SQLite database (bad header: corrupted or not a DB export)")
    try:
        con = sqlite3.connect(_read_only_uri(path), uri=True)
        con.execute("select count(*) from sqlite_master").fetchone()
    except sqlite3.Error as exc:
        raise IngestError(path, "<file>", f"unreadable SQLite database ({exc})") from exc
    return con


def _read_only_uri(path: Path) -> str:
    """The URI that opens ``path`` without writing anything beside it.

    ``mode=ro`` alone still creates ``-shm``/``-wal`` for a WAL-mode export, fails on a read-only mount and
    with a stale ``-journal`` ("attempt to write a readonly database"); ``immutable=1`` tells SQLite the file
    cannot change, so it takes no lock and opens no side file. A non-empty ``-wal`` beside the export holds
    committed pages immutable mode would not see: then the database and its log are copied into a temporary
    folder (removed at exit) and that copy is opened instead.
    """
    wal = path.with_name(path.name + "-wal")
    if wal.is_file() and wal.stat().st_size > 0:
        import atexit
        import shutil
        import tempfile

        tmp = Path(tempfile.mkdtemp(prefix="ndval-db-"))
        atexit.register(shutil.rmtree, tmp, True)
        shutil.copyfile(path, tmp / path.name)
        shutil.copyfile(wal, tmp / wal.name)
        return f"{(tmp / path.name).as_uri()}?mode=ro"
    return f"{path.resolve().as_uri()}?mode=ro&immutable=1"


def query(con: sqlite3.Connection, path: Path, table: str, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of ``sql``; IngestError naming the file and table when SQLite cannot read them
    (a truncated or corrupted file fails here, not at open)."""
    try:
        return con.execute(sql, args).fetchall()
    except sqlite3.Error as exc:
        raise IngestError(path, table, f"cannot read table ({exc}): truncated or corrupted DB") from exc


def tables_of(con: sqlite3.Connection, path: Path) -> set[str]:
    return {r[0] for r in query(con, path, "sqlite_master", "select name from sqlite_master where type='table'")}


def schema_version(con: sqlite3.Connection, path: Path) -> str:
    """``META_DATA`` ``SCHEMA_VERSION``; IngestError when missing or of an unknown major version."""
    meta = dict(query(con, path, "META_DATA", "select name, value from META_DATA"))
    version = str(meta.get("SCHEMA_VERSION", "") or "")
    major = str(meta.get("SCHEMA_VERSION_MAJOR", version.split(".")[0] if version else "") or "")
    if not major:
        raise IngestError(path, "META_DATA.SCHEMA_VERSION", "no schema version: not a torch_npu DB export")
    if major not in SUPPORTED_MAJOR:
        raise IngestError(path, "META_DATA.SCHEMA_VERSION_MAJOR",
                          f"unknown schema major version {major} (SCHEMA_VERSION {version or '?'}); "
                          f"this reader knows major {', '.join(sorted(SUPPORTED_MAJOR))}")
    return version or major


def check_tables(present: set[str], path: Path, level: str | None,
                 required: tuple[str, ...] = REQUIRED_TABLES, kind: str | None = None) -> list[str]:
    """IngestError for a missing ``required`` table (``kind``: the export named in it, default the level or
    torch_npu); warnings for the level's expected tables."""
    missing = [t for t in required if t not in present]
    if missing:
        raise IngestError(path, ", ".join(missing),
                          f"required table missing for a {kind or level or 'torch_npu'} DB export "
                          f"(found: {', '.join(sorted(present)) or 'none'})")
    warnings = []
    order = list(LEVEL_TABLES)
    upto = order[:order.index(level) + 1] if level in LEVEL_TABLES else order[:1]
    for lvl in upto:
        for table, what in LEVEL_TABLES[lvl].items():
            if table not in present:
                warnings.append(f"{path}: table {table} missing for {lvl} — unavailable: {what}")
    return warnings


def read_db_rank(db: Path, rank: int, level: str | None = None) -> DbRank:
    """Read ``ascend_pytorch_profiler_<rank>.db`` (and ``analysis.db`` beside it) into a :class:`DbRank`."""
    native = db.name.startswith("msprof_")
    with closing(connect(db)) as con:
        present = tables_of(con, db)
        if native:
            version = MSPROF_SCHEMA
            warnings = check_tables(present, db, None, MSPROF_REQUIRED_TABLES, kind="native msprof")
        else:
            version, warnings = schema_version(con, db), check_tables(present, db, level)
        if native and rank == ev.UNKNOWN_RANK:  # (the folder said nothing: the tasks' one device, if one)
            ids = query(con, db, "TASK", "select distinct deviceId from TASK")
            if len(ids) == 1 and isinstance(ids[0][0], int):
                rank = ids[0][0]
        strings = dict(query(con, db, "STRING_IDS", "select id, value from STRING_IDS"))
        frames = [_tasks(con, db, strings, present), _comm_ops(con, db, strings, present),
                  _pytorch_api(con, db, strings) if "PYTORCH_API" in present else _frame([], _ROW),
                  _cann_api(con, db, strings, present)]
        session = None
        if "SESSION_TIME_INFO" in present:
            row = query(con, db, "SESSION_TIME_INFO", "select startTimeNs, endTimeNs from SESSION_TIME_INFO")
            session = (row[0][0], row[0][1]) if row and isinstance(row[0][0], int) and isinstance(row[0][1], int) \
                else None
        raw = pd.concat([f for f in frames if len(f)], ignore_index=True) if any(len(f) for f in frames) else None
        if raw is None or not len(raw):
            raise IngestError(db, "TASK, PYTORCH_API", "no events in the DB export")
        if not bool((raw["category"] == ev.STEP).any()) and "STEP_TIME" in present:
            raw = pd.concat([raw, _step_time(con, db)], ignore_index=True)
        warnings += _string_warnings(db, strings, raw)
    events, base, bad = _table(raw, rank)
    if bad:  # counted by table, never dropped silently
        warnings.append(f"{db}: dropped {sum(bad.values())} events whose startNs/endNs is NULL, not an integer or "
                        f"ends before it starts ({', '.join(f'{k} {n}' for k, n in sorted(bad.items()))})")
    out = DbRank(events=events, base_ts_us=base, schema_version=version, level=level, warnings=warnings,
                 session_ns=session, rank=rank)
    analysis = db.parent / "analysis.db"
    if analysis.is_file():
        out.tables.update(read_analysis_db(analysis, out.warnings))
    return out


def _frame(rows: list[tuple[Any, ...]], cols: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame.from_records(rows, columns=list(cols))


_ROW = ("start_ns", "end_ns", "name", "category", "sub", "pid", "tid", "stream", "corr", "bytes")


def _tasks(con: sqlite3.Connection, db: Path, strings: dict[int, str], present: set[str]) -> pd.DataFrame:
    comm_join = ("left join COMMUNICATION_TASK_INFO m on m.globalTaskId = t.globalTaskId"
                 if "COMMUNICATION_TASK_INFO" in present else "")
    comm_cols = "m.globalTaskId, m.taskType, m.planeId, m.size" if comm_join else "NULL, NULL, NULL, NULL"
    rows = query(con, db, "TASK", f"""
        select t.startNs, t.endNs, t.taskType, t.streamId, t.connectionId, c.globalTaskId, c.name, c.taskType,
               {comm_cols}
        from TASK t left join COMPUTE_TASK_INFO c on c.globalTaskId = t.globalTaskId {comm_join}""")
    out = []
    for s, e, ttype, stream, conn, cid, cname, ctype, mid, mtype, _plane, size in rows:
        task_type = strings.get(ttype, str(ttype))
        label = f"Stream {stream}"
        if cid is not None:
            sub = strings.get(ctype, "") if ctype is not None else ""
            sub = task_type if sub in ("", "N/A") else sub
            out.append((s, e, strings.get(cname, task_type), ev.COMPUTE, sub, PID_HARDWARE, stream, label, conn, np.nan))
        elif mid is not None:
            name = strings.get(mtype, task_type) if mtype is not None else task_type
            out.append((s, e, name, ev.COMMUNICATION, ev.SUB_COMM_TASK, PID_HARDWARE, stream, label, conn,
                        _bytes(size)))
        elif task_type == "MEMCPY_ASYNC" or task_type in ascend.COPY_TASK_TYPES:
            out.append((s, e, task_type, ev.MEMCPY, "", PID_HARDWARE, stream, label, conn, np.nan))
        elif task_type in ascend.PLACEHOLDER_NAMES or task_type in ascend.PLACEHOLDER_TASK_TYPES:
            out.append((s, e, task_type, ev.OTHER, ev.SUB_PLACEHOLDER, PID_HARDWARE, stream, label, conn, np.nan))
        else:
            out.append((s, e, task_type, ev.OTHER, task_type, PID_HARDWARE, stream, label, conn, np.nan))
    return _frame(out, _ROW)


def _comm_ops(con: sqlite3.Connection, db: Path, strings: dict[int, str], present: set[str]) -> pd.DataFrame:
    if "COMMUNICATION_OP" not in present:
        return _frame([], _ROW)
    dtypes = _enum(con, db, "ENUM_HCCL_DATA_TYPE", present)
    cols = {r[1] for r in query(con, db, "COMMUNICATION_OP", "pragma table_info(COMMUNICATION_OP)")}
    sized = "dataType, count" if {"dataType", "count"} <= cols else "NULL, NULL"  # (a native msprof DB: none)
    rows = query(con, db, "COMMUNICATION_OP",
                 f"select startNs, endNs, opName, groupName, connectionId, {sized} from COMMUNICATION_OP")
    groups: dict[Any, int] = {}
    out = []
    for s, e, op, group, conn, dtype, count in rows:
        name = strings.get(op, str(op))
        gi = groups.setdefault(group, len(groups))
        width = DTYPE_BYTES.get(str(dtypes.get(dtype, "")).lower())
        nbytes = float(count) * width if width is not None and count is not None else np.nan
        out.append((s, e, name, ev.COMMUNICATION, ev.comm_op_type(name), PID_COMM, gi, f"Group {gi} Communication",
                    conn, nbytes))
    return _frame(out, _ROW)


def _enum(con: sqlite3.Connection, db: Path, table: str, present: set[str]) -> dict[int, str]:
    return dict(query(con, db, table, f"select id, name from {table}")) if table in present else {}


def _pytorch_api(con: sqlite3.Connection, db: Path, strings: dict[int, str]) -> pd.DataFrame:
    rows = query(con, db, "PYTORCH_API", "select startNs, endNs, globalTid, connectionId, name, type from PYTORCH_API")
    out = []
    for s, e, gtid, conn, name_id, kind in rows:
        name = strings.get(name_id, str(name_id))
        if kind == API_QUEUE:
            cat, sub = ev.DISPATCH, ev.SUB_DEQUEUE if name.startswith("Dequeue") else ev.SUB_ENQUEUE
        elif kind == API_TRACE:
            cat, sub = ev.OTHER, ev.SUB_PYTHON_FUNCTION
        elif kind == API_MSTX:
            cat, sub = ev.ANNOTATION, ""
        elif name in ascend.SYNC_NAMES:
            cat, sub = ev.SYNC, ""
        elif ascend._STEP_RE.match(name):
            cat, sub = ev.STEP, ""
        else:
            cat, sub = ev.HOST_OP, "cpu_op"
        gtid = _int(gtid)
        tid = gtid & 0xFFFFFFFF if gtid is not None else -1
        out.append((s, e, name, cat, sub, gtid >> 32 if gtid is not None else -1, tid,
                    f"Thread {tid}", conn if conn is not None else -1, np.nan))
    return _frame(out, _ROW)


def _cann_api(con: sqlite3.Connection, db: Path, strings: dict[int, str], present: set[str]) -> pd.DataFrame:
    if "CANN_API" not in present:
        return _frame([], _ROW)
    rows = query(con, db, "CANN_API", "select startNs, endNs, type, globalTid, connectionId, name from CANN_API")
    out = []
    for s, e, kind, gtid, conn, name_id in rows:
        name = f"{CANN_PREFIX.get(kind, str(kind))}@{strings.get(name_id, str(name_id))}"
        if name in ascend.SYNC_NAMES:
            cat, sub = ev.SYNC, ""
        else:
            cat, sub = ev.DISPATCH, ev.SUB_LAUNCH if ascend._LAUNCH_RE.match(name) else ev.SUB_RUNTIME
        gtid = _int(gtid)
        tid = gtid & 0xFFFFFFFF if gtid is not None else -1
        out.append((s, e, name, cat, sub, gtid >> 32 if gtid is not None else -1, tid, f"Thread {tid}",
                    conn if conn is not None else -1, np.nan))
    return _frame(out, _ROW)


def _step_time(con: sqlite3.Connection, db: Path) -> pd.DataFrame:
    rows = query(con, db, "STEP_TIME", "select id, startNs, endNs from STEP_TIME")
    return _frame([(s, e, f"ProfilerStep#{i}", ev.STEP, "", -1, -1, "Thread -1", -1, np.nan) for i, s, e in rows
                   if s is not None and e is not None], _ROW)


def _int(value: Any) -> int | None:
    """An integer cell (``globalTid``), None for NULL or a wrong-typed cell (text)."""
    return value if isinstance(value, int) else None


def _bytes(value: Any) -> float:
    """A size cell in bytes; NaN for NULL, text or a negative number."""
    return float(value) if isinstance(value, int | float) and value >= 0 else np.nan


def _string_warnings(db: Path, strings: dict[int, str], raw: pd.DataFrame) -> list[str]:
    """A warning when ``STRING_IDS`` is empty: names are then ids, so sync ops and steps go unrecognised."""
    if strings or raw is None or not len(raw):
        return []
    return [f"{db}: table STRING_IDS is empty: every name is shown as its id, so sync ops, step markers and "
            "operator names cannot be recognised (a damaged or partial export)"]


def _table(raw: pd.DataFrame, rank: int) -> tuple[pd.DataFrame, int, dict[str, int]]:
    """Event table (schema of ``events.py``) from the ns rows: ``ts_us`` exact relative to the base
    (integer ns arithmetic before the float division); and the rows dropped for bad times, by category."""
    start = pd.to_numeric(raw["start_ns"], errors="coerce")
    end = pd.to_numeric(raw["end_ns"], errors="coerce")
    ok = start.notna() & end.notna() & (end >= start) & (start.abs() < 2**62) & (end.abs() < 2**62)
    bad = {str(k): int(n) for k, n in raw.loc[~ok, "category"].value_counts().items()}
    raw, start, end = raw[ok], start[ok].astype("int64"), end[ok].astype("int64")
    base_us = int(start.min()) // int(NS_PER_US) if len(start) else 0
    rel_ns = (start - base_us * int(NS_PER_US)).to_numpy(dtype=np.int64)
    df = pd.DataFrame({
        "name": raw["name"].astype(str).to_numpy(dtype=object), "category": raw["category"].to_numpy(dtype=object),
        "side": np.where(raw["pid"].isin([PID_HARDWARE, PID_COMM]), ev.SIDE_DEVICE, ev.SIDE_HOST).astype(object),
        "ts_us": rel_ns / NS_PER_US, "dur_us": (end - start).to_numpy(dtype=np.int64) / NS_PER_US,
        "pid": raw["pid"].to_numpy(dtype=np.int64), "tid": pd.to_numeric(raw["tid"]).to_numpy(dtype=np.int64),
        "stream": raw["stream"].to_numpy(dtype=object), "rank": np.full(len(raw), rank, dtype=np.int64),
        "step": np.full(len(raw), ev.UNKNOWN_STEP, dtype=np.int64), "sub": raw["sub"].astype(str).to_numpy(dtype=object),
        "corr": pd.to_numeric(raw["corr"], errors="coerce").fillna(-1).to_numpy(dtype=np.int64),
        "bytes": pd.to_numeric(raw["bytes"], errors="coerce").to_numpy(dtype=np.float64),
    })
    df = df.sort_values("ts_us", kind="stable").reset_index(drop=True)
    steps = df[df["category"] == ev.STEP]
    numbers = ev.step_numbers(steps["name"].to_numpy(dtype=object), np.ones(len(steps), dtype=bool))
    df["step"] = ev.steps_by_time(df["ts_us"].to_numpy(), steps["ts_us"].to_numpy(), steps["dur_us"].to_numpy(), numbers)
    return ev.conform(df), base_us, bad


#: ``analysis.db`` tables read (torch_npu's own totals; times µs in ``StepTraceTime``, ms in CommAnalyzer*).
ANALYSIS_TABLES: tuple[str, ...] = ("StepTraceTime", "CommAnalyzerTime", "CommAnalyzerBandwidth", "CommAnalyzerMatrix")


def read_analysis_db(path: Path, warnings: list[str]) -> dict[str, pd.DataFrame]:
    """``analysis.db`` tables as ``analysis_db.<table>`` frames (kept apart from the CSV tables so the
    analysis recomputes rather than copies them); a damaged file is a warning naming it."""
    out: dict[str, pd.DataFrame] = {}
    try:
        with closing(connect(path)) as con:
            present = tables_of(con, path)
            for table in ANALYSIS_TABLES:
                if table in present:
                    cur = con.execute(f"select * from {table}")
                    out[f"analysis_db.{table}"] = pd.DataFrame.from_records(
                        cur.fetchall(), columns=[d[0] for d in cur.description])
    except (IngestError, sqlite3.Error) as exc:
        warnings.append(f"{path}: analysis.db ignored ({exc})")
    return out


def find_db(out_dir: Path) -> Path | None:
    """The rank DB of an output folder (``ascend_pytorch_profiler_<rank>.db``, else a native ``msprof_<ts>.db``),
    None when absent."""
    found = sorted(out_dir.glob(DB_GLOB)) or sorted(out_dir.glob(MSPROF_DB_GLOB))
    return found[0] if found else None


def step_trace_check(events: pd.DataFrame, step_trace: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """``{column: (recomputed, analysis.db)}`` over all steps for Computing, Communication,
    Communication(Not Overlapped) and Free (µs): the DB reader's self-check (see module docstring)."""
    from analyzer import breakdown

    rows = breakdown.to_frame(breakdown.ascend_step_breakdown(events))
    pairs = {"Computing": ("computing_us", "computing"), "Communication": ("communication_us", "communication"),
             "Communication(Not Overlapped)": ("comm_not_overlapped_us", "communication_not_overlapped"),
             "Free": ("free_us", "free")}
    return {k: (float(rows[a].sum()) if a in rows else 0.0, float(pd.to_numeric(step_trace[b]).sum()))
            for k, (a, b) in pairs.items() if b in step_trace.columns}
