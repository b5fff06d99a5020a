"""Is torch_npu's ``step_trace_time.csv`` fit to supply totals? Its cells must parse and its step totals must
agree with the trace's step markers.

The table supplies the totals when the trace is missing, truncated or thinned (``analysis._csv_overlap``). A
table that contradicts the trace (another run's, in ms, ``"8,873.756"`` or NaN cells) flipped the verdict from
communication to "device compute" without a word. :func:`checked` now names the unparsable cells, compares per
step ``Computing + Communication(Not Overlapped) + Free + Preparing`` (torch_npu's partition of a step: measured
on the shared Level0/Level1 exports within 1.0 % of the ProfilerStep marker) with the marker's duration, and
drops the table from the rank (so nothing reads it) with one warning when it fails either test.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from analyzer.ingest import events as ev

#: the step-time partition of the table (µs) and the relative disagreement with the markers tolerated
PARTITION = ("Computing", "Communication(Not Overlapped)", "Free", "Preparing")
TOLERANCE = 0.10
MAX_NAMED = 5


def unparsable_cells(st: pd.DataFrame) -> list[str]:
    """``column line N 'text'`` for every cell of the numeric columns that is not a finite number (line: CSV
    line, the header being line 1)."""
    out = []
    for col in [c for c in ("Step", *ev.OVERLAP_NAMES, "Preparing") if c in st.columns]:
        values = pd.to_numeric(st[col], errors="coerce")
        bad = ~np.isfinite(values.to_numpy(dtype="float64", na_value=np.nan))
        out += [f"{col} line {i + 2} {str(st[col].iloc[i])!r}" for i in np.flatnonzero(bad)]
    return out


def disagreement(st: pd.DataFrame, steps: Any) -> tuple[float, float, int] | None:
    """(Σ table partition, Σ marker durations, steps compared) over the steps both have; None when none match.
    The partition is taken with and without ``Preparing`` (markers built from the cluster output span the first
    three columns only), whichever is closer to the markers."""
    if any(c not in st.columns for c in PARTITION[:3]) or "Step" not in st.columns:
        return None
    cols = [c for c in PARTITION if c in st.columns]
    table = st[["Step", *cols]].apply(pd.to_numeric, errors="coerce").dropna()
    by_step = {int(s.number): s.dur_us for s in steps if s.number >= 0}
    rows = table[table["Step"].isin(list(by_step))]
    if rows.empty:
        return None
    markers = float(sum(by_step[int(n)] for n in rows["Step"]))
    sums = [float(rows[list(PARTITION[:3])].to_numpy().sum()), float(rows[cols].to_numpy().sum())]
    return min(sums, key=lambda t: abs(t - markers)), markers, len(rows)


def checked(rank: Any, steps: Any) -> tuple[Any, list[str]]:
    """``rank`` without its step_trace_time table when that table fails (see module docstring), and the warning."""
    st = rank.tables.get("step_trace_time")
    if st is None:
        return rank, []
    where = f"rank {rank.rank}: step_trace_time.csv"
    bad = unparsable_cells(st)
    problem = ""
    if bad:
        problem = (f"{len(bad)} cell(s) not a number ({', '.join(bad[:MAX_NAMED])}{' ...' if len(bad) > MAX_NAMED else ''})")
    else:
        d = disagreement(st, steps)
        if d is not None and d[1] > 0 and abs(d[0] - d[1]) / d[1] > TOLERANCE:
            problem = (f"its step totals disagree with the trace's step markers over {d[2]} step(s): "
                       f"Σ({' + '.join(PARTITION)}) = {d[0]:,.1f} vs Σ ProfilerStep = {d[1]:,.1f} µs "
                       f"({100 * (d[0] - d[1]) / d[1]:+.1f} %, tolerance {100 * TOLERANCE:g} %; ms instead of µs, or "
                       "another run's table?)")
    if not problem:
        return rank, []
    tables = {k: v for k, v in rank.tables.items() if k != "step_trace_time"}
    return dataclasses.replace(rank, tables=tables), [f"{where}: {problem}: not used for totals"]
