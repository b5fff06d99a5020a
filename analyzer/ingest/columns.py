"""Column aliases of the Ascend CSV exports, in ONE table, and the CSV reader that applies them.

Canonical names are the torch_npu text-export names of 2025 (``kernel_details.csv`` Level1
PipeUtilization header; ``Block Dim`` rather than the newer ``Block Num``). Each alias row says where
the other spelling comes from (profiling-formats-and-prior-art.md §1.4-§1.14):

- native msprof ``op_summary_*.csv`` names (``Op Name``, ``OP Type``, ``Task Type``,
  ``Task Start Time(us)``, ``Task Duration(us)``, ``Task Wait Time(us)``), which torch_npu renames;
- newer torch_npu docs: ``Block Num`` / ``Mix Block Num``, ``Device_id`` first;
- case / spacing drift (``Stream Id``, ``Step ID``, ``Device ID``).

Cell quirks handled by :func:`read_csv_table` (all seen in real files): UTF-8 BOM, CRLF line ends,
trailing TABs in ``Start Time(us)`` values, newlines inside quoted fields (``operator_details.csv``),
``N/A`` as null. Time columns are µs (``step_trace_time.csv`` too; only ``communication.json`` is ms).
``Start Time(us)`` (epoch µs with three decimals) is converted exactly to µs relative to the rank's
``base_ts_us`` (see :func:`epoch_us_to_relative`), like the event table's ``ts_us``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analyzer.ingest.errors import IngestError

#: table key -> canonical column -> aliases (other spellings seen in real files or documented).
ALIASES: dict[str, dict[str, tuple[str, ...]]] = {
    "kernel_details": {
        "Device_id": ("Device ID", "Device Id", "device_id"),
        "Step Id": ("Step ID", "Step"),
        "Model ID": ("Model Id",),
        "Task ID": ("Task Id",),
        "Stream ID": ("Stream Id",),
        "Name": ("Op Name",),  # msprof op_summary
        "Type": ("OP Type", "Op Type"),  # msprof op_summary
        "Accelerator Core": ("Task Type",),  # msprof op_summary
        "Start Time(us)": ("Task Start Time(us)",),  # msprof op_summary
        "Duration(us)": ("Task Duration(us)",),  # msprof op_summary
        "Wait Time(us)": ("Task Wait Time(us)",),  # msprof op_summary
        "Block Dim": ("Block Num",),  # newer torch_npu docs
        "Mix Block Dim": ("Mix Block Num",),  # newer torch_npu docs
    },
    "op_statistic": {
        "Device_id": ("Device ID", "Device Id"),
        "OP Type": ("Op Type", "Type"),
        "Core Type": ("Task Type", "Accelerator Core"),
    },
    "operator_details": {},
    "step_trace_time": {
        "Device_id": ("Device ID", "Device Id"),
        "Step": ("Step Id", "Step ID"),
    },
    "api_statistic": {
        "Device_id": ("Device ID", "Device Id"),
        "API Name": ("API name", "Api Name"),
    },
}

#: table key -> columns without which the table is unusable (rule: "required column missing").
REQUIRED: dict[str, tuple[str, ...]] = {
    "kernel_details": ("Name", "Start Time(us)", "Duration(us)"),
    "op_statistic": ("OP Type", "Count", "Total Time(us)"),
    "operator_details": ("Name",),
    "step_trace_time": ("Step", "Computing", "Communication(Not Overlapped)", "Free"),
    "api_statistic": ("API Name", "Time(us)", "Count"),
}

#: columns that stay text; every other column is converted to float64 (``N/A`` -> NaN).
TEXT_COLUMNS: frozenset[str] = frozenset({
    "Device_id", "Name", "Type", "OP State", "Accelerator Core", "HF32 Eligible", "Input Shapes",
    "Input Data Types", "Input Formats", "Output Shapes", "Output Data Types", "Output Formats",
    "Context ID", "OP Type", "Core Type", "Call Stack", "Level", "API Name", "Model Name", "Step",
    "Step Id",
})
#: epoch-µs columns converted exactly to µs relative to the rank base.
EPOCH_COLUMNS: frozenset[str] = frozenset({"Start Time(us)"})
NULL_VALUES: tuple[str, ...] = ("N/A", "NA", "n/a", "")

#: file name (as torch_npu writes it) -> table key.
TABLE_FILES: dict[str, str] = {
    "kernel_details.csv": "kernel_details",
    "op_statistic.csv": "op_statistic",
    "operator_details.csv": "operator_details",
    "step_trace_time.csv": "step_trace_time",
    "api_statistic.csv": "api_statistic",
}


def canonical_name(table: str, column: str) -> str:
    """The canonical spelling of ``column`` in ``table`` (whitespace/BOM stripped, aliases mapped)."""
    col = column.replace("\ufeff", "").strip()
    for canon, aliases in ALIASES.get(table, {}).items():
        if col == canon or col in aliases:
            return canon
    return col


def epoch_us_to_relative(values: pd.Series, base_ts_us: int) -> np.ndarray:
    """Exact ``value - base_ts_us`` (µs, float64) for epoch-µs strings like ``"1736408883704643.212\\t"``.

    The integer part is subtracted as an integer before the fraction is added, so no precision is
    lost to float64's ~0.2 µs resolution at epoch magnitudes (profiling-formats §0.5).
    """
    if values.empty:  # a header-only table: nothing to convert (split(expand=True) has no column 0 then)
        return np.zeros(0, dtype="float64")
    text = values.astype("string").str.strip()
    parts = text.str.split(".", n=1, expand=True)
    whole = pd.to_numeric(parts[0], errors="coerce")
    frac = pd.Series(0.0, index=text.index)
    if parts.shape[1] > 1:
        frac = pd.to_numeric("0." + parts[1].fillna("0"), errors="coerce").fillna(0.0)
    rel = (whole - base_ts_us).astype("float64") + frac.astype("float64")
    return rel.to_numpy(dtype="float64", na_value=np.nan)


def read_csv_table(path: Path, table: str, base_ts_us: int | None = None) -> pd.DataFrame:
    """Read one Ascend CSV export into canonical columns.

    Text columns stay strings (``N/A`` -> missing); other columns become float64; epoch columns
    become µs relative to ``base_ts_us`` when given (else float64 epoch µs, lossy).
    Raises :class:`IngestError` (file, column, rule) when a required column is missing or the file
    is not a CSV.
    """
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise IngestError(path, "<file>", f"not a readable CSV ({exc})") from exc
    names = [canonical_name(table, str(c)) for c in raw.columns]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:  # two headers for one column: which one to read is not ours to guess
        heads = [f"{h!r}" for h, n in zip(raw.columns, names, strict=True) if n in clash]
        raise IngestError(path, ", ".join(clash), f"headers {', '.join(heads)} all name the column "
                          f"{'/'.join(clash)}: keep one of them")
    raw.columns = names
    missing = [c for c in REQUIRED.get(table, ()) if c not in raw.columns]
    if missing:
        raise IngestError(
            path, ", ".join(missing),
            f"required column missing for {table} (found: {', '.join(map(str, raw.columns))})",
        )
    out: dict[str, Any] = {}
    for col in raw.columns:
        cells = raw[col].str.strip()
        if col in EPOCH_COLUMNS and base_ts_us is not None:
            out[col] = epoch_us_to_relative(cells.mask(cells.isin(NULL_VALUES)), base_ts_us)
        elif col in TEXT_COLUMNS:
            # shape cells are written as """4,1025""" -> '"4,1025"' after CSV unquoting: drop the rest
            out[col] = cells.mask(cells.isin(NULL_VALUES)).str.strip('"')
        else:
            out[col] = pd.to_numeric(cells.mask(cells.isin(NULL_VALUES)), errors="coerce")
    return pd.DataFrame(out, index=raw.index)
