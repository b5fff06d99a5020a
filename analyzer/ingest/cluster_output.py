"""msprof-analyze ``cluster_analysis_output`` folder -> plain per-rank data (the dataset builds ranks from it).

``msprof-analyze cluster`` writes, from the rank folders of a run (profiling-formats §2; times µs in the CSV,
ms in the JSON files):

- ``cluster_step_trace_time.csv``: per ``Step`` one row per ``Type = rank`` (``Index`` = the global rank) with
  the columns of a rank's ``step_trace_time.csv`` (Computing, Communication(Not Overlapped), Overlapped,
  Communication, Free, Stage, Bubble, ...), plus ``Type = stage`` rows (one per pipeline stage: maxima over its
  ranks; not read as ranks);
- ``cluster_communication.json``: ``group -> step -> op -> rank -> {Communication Time Info, Communication
  Bandwidth Info}`` (``Total Op Info`` summarises each step); a group is ``p2p`` / ``collective`` or the rank
  tuple ``"(0, 1, ..., 7)"``;
- ``cluster_communication_matrix.json``: ``group -> step -> op -> "src-dst" -> {Transport Type, Transit Size(MB),
  Transit Time(ms), Bandwidth(GB/s)}`` (the layout of a rank's ``communication_matrix.json``);
- ``communication_group.json``: ``{"collective": [[ranks], ...], "p2p": [[ranks], ...]}``.

:func:`read` returns per rank the ``step_trace_time`` rows and a ``communication.json``-shaped dict
(``step -> group -> op -> info``), so the analysis reads a rank of the cluster file like a rank folder. The
step's span is Computing + Communication(Not Overlapped) + Free (= Stage + Bubble).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analyzer.ingest.errors import IngestError

STEP_FILE = "cluster_step_trace_time.csv"
COMM_FILE = "cluster_communication.json"
MATRIX_FILE = "cluster_communication_matrix.json"
GROUP_FILE = "communication_group.json"
FOLDER = "cluster_analysis_output"
SPAN_COLUMNS: tuple[str, ...] = ("Computing", "Communication(Not Overlapped)", "Free")
TOTAL_KEY = "Total Op Info"


@dataclass(frozen=True)
class ClusterOutput:
    """What one ``cluster_analysis_output`` folder says, per global rank."""

    path: Path
    step_rows: dict[int, list[dict[str, Any]]]
    communication: dict[int, dict[str, Any]]
    groups: dict[str, list[list[int]]]
    files: dict[str, Path]
    warnings: list[str] = field(default_factory=list)

    @property
    def ranks(self) -> list[int]:
        """The global ranks with a step row."""
        return sorted(self.step_rows)


def folder_of(p: Path) -> Path | None:
    """The cluster output folder at or directly under ``p`` (None when there is none)."""
    if (p / STEP_FILE).is_file():
        return p
    if (p / FOLDER / STEP_FILE).is_file():
        return p / FOLDER
    return None


def _num(value: str, path: Path, line: int, column: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise IngestError(path, f"line {line}, column {column!r}", f"not a number: {value!r}") from None


def read_step_rows(path: Path) -> dict[int, list[dict[str, Any]]]:
    """``rank -> [row per step]`` of the ``Type = rank`` rows (numbers as floats, ``Step`` kept as written)."""
    out: dict[int, list[dict[str, Any]]] = {}
    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in ("Type", "Index", *SPAN_COLUMNS) if c not in (reader.fieldnames or [])]
        if missing:
            raise IngestError(path, "<header>", f"missing columns {missing}")
        for line, row in enumerate(reader, start=2):
            if (row.get("Type") or "").strip() != "rank":
                continue
            rank = int(_num(row["Index"], path, line, "Index"))
            rec: dict[str, Any] = {"Step": (row.get("Step") or "").strip()}
            for k, v in row.items():
                if k not in ("Type", "Index", "Step") and k is not None and v not in (None, ""):
                    rec[k] = _num(v, path, line, k)
            out.setdefault(rank, []).append(rec)
    if not out:
        raise IngestError(path, "Type", "no 'rank' rows")
    return out


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError) as exc:
        raise IngestError(path, "<file>", f"not readable JSON: {exc}") from None


def per_rank_communication(data: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """``rank -> step -> group -> op -> info`` from ``cluster_communication.json`` (``Total Op Info`` skipped)."""
    out: dict[int, dict[str, Any]] = {}
    for group, steps in data.items():
        for step, ops in (steps or {}).items() if isinstance(steps, dict) else ():
            for op, ranks in (ops or {}).items() if isinstance(ops, dict) else ():
                if op == TOTAL_KEY or not isinstance(ranks, dict):
                    continue
                for rank, info in ranks.items():
                    if str(rank).isdigit() and isinstance(info, dict):
                        out.setdefault(int(rank), {}).setdefault(step, {}).setdefault(group, {})[op] = info
    return out


def read(folder: Path) -> ClusterOutput:
    """Read one cluster output folder (the step CSV is required; the JSON files are optional, each missing one
    is named in ``warnings`` with what it disables)."""
    files = {name: folder / name for name in (STEP_FILE, COMM_FILE, MATRIX_FILE, GROUP_FILE) if (folder / name).is_file()}
    step_rows = read_step_rows(folder / STEP_FILE)
    warnings = [f"{folder / name}: not found — unavailable: {what}" for name, what in (
        (COMM_FILE, "per-rank transit / wait / idle of the collectives (wait-bound sub-type)"),
        (MATRIX_FILE, "per-link bandwidth (slowest link)"), (GROUP_FILE, "communication groups")) if name not in files]
    comm = per_rank_communication(_read_json(files[COMM_FILE])) if COMM_FILE in files else {}
    groups_raw = _read_json(files[GROUP_FILE]) if GROUP_FILE in files else {}
    groups = {str(k): [[int(r) for r in g] for g in v if isinstance(g, list)]
              for k, v in (groups_raw.items() if isinstance(groups_raw, dict) else ()) if isinstance(v, list)}
    no_comm = [r for r in step_rows if r not in comm]
    if comm and no_comm:
        warnings.append(f"{files[COMM_FILE]}: no per-op entry for ranks {no_comm}: their wait / transit split is unavailable")
    return ClusterOutput(folder, step_rows, comm, groups, files, warnings)


def span_us(row: dict[str, Any]) -> float:
    """A step's span (µs): Computing + Communication(Not Overlapped) + Free (= Stage + Bubble)."""
    return float(sum(float(row.get(c, 0.0)) for c in SPAN_COLUMNS))


def cross_check(cluster: ClusterOutput, tables: dict[int, Any], tol_us: float = 0.01) -> list[str]:
    """Compare the cluster file's per-rank step rows with the rank folders' ``step_trace_time`` tables
    (``rank -> DataFrame``): one line saying they agree, or one per disagreeing value."""
    out, checked = [], 0
    for rank, rows in cluster.step_rows.items():
        st = tables.get(rank)
        if st is None or "Step" not in st.columns:
            continue
        by_step = {str(s).strip(): rec for s, rec in zip(st["Step"], st.to_dict("records"), strict=True)}
        for row in rows:
            rec = by_step.get(row["Step"])
            for col in SPAN_COLUMNS:
                if rec is None or col not in rec:
                    continue
                checked += 1
                if abs(float(rec[col]) - float(row[col])) > tol_us:
                    out.append(f"{cluster.files[STEP_FILE]}: rank {rank} step {row['Step']} {col} {row[col]:.3f} µs "
                               f"but the rank folder's step_trace_time.csv says {float(rec[col]):.3f} µs")
    if checked and not out:
        out.append(f"{cluster.files[STEP_FILE]}: agrees with the rank folders' step_trace_time.csv "
                   f"({checked} values within {tol_us} µs)")
    return out
