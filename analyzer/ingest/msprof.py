"""Native msprof output (``PROF_*/mindstudio_profiler_output``) as the torch_npu text export's files.

CANN's ``msprof`` (the profiler of offline inference, MindIE and plain CANN programs) writes one
``PROF_<n>_<timestamp>_<id>`` folder per collection; its ``mindstudio_profiler_output`` holds the same
kinds of export as torch_npu's ``ASCEND_PROFILER_OUTPUT``, each name suffixed with the collection
timestamp (profiling-formats-and-prior-art.md §1.14): ``msprof_<ts>.json`` is the timeline in
``trace_view.json``'s process layout, ``op_summary_<ts>.csv`` the per-task table torch_npu renames
``kernel_details.csv`` (its columns are aliased in :mod:`analyzer.ingest.columns`), ``op_statistic_<ts>.csv``
and ``api_statistic_<ts>.csv`` the same tables. ``step_trace_<ts>.csv`` (graph mode: FP start, BP end,
iteration time) has other columns than torch_npu's ``step_trace_time.csv`` and is not read, nor are
``communication_statistic_*`` and ``msprof_tx_*``; each is named in a warning.

:func:`export_files` maps a folder's files to the canonical names the rank reader uses. Where a pattern
matches several files (a long collection split into ``msprof_slice_<i>_<ts>.json``), the first in name order
is read and a warning names the others: nothing is dropped silently.
"""

from __future__ import annotations

import re
from pathlib import Path

#: the folder of a ``PROF_*`` collection that holds the exports
MSPROF_DIR = "mindstudio_profiler_output"
#: canonical (torch_npu) file name -> the msprof file pattern that stands for it
EXPORTS: dict[str, str] = {
    "trace_view.json": "msprof_*.json",
    "kernel_details.csv": "op_summary_*.csv",
    "op_statistic.csv": "op_statistic_*.csv",
    "api_statistic.csv": "api_statistic_*.csv",
}
#: msprof files with no torch_npu counterpart here -> why they are not read
NOT_READ: dict[str, str] = {
    "step_trace_*.csv": "graph-mode iteration trace (FP/BP/iteration columns), not torch_npu's step_trace_time.csv",
    "communication_statistic_*.csv": "per-op-type communication totals (the timeline's HCCL events are read)",
    "msprof_tx_*.csv": "msproftx markers (the timeline's annotations are read)",
}


def output_dir(p: Path) -> Path | None:
    """``p`` itself when it is a ``mindstudio_profiler_output`` folder, its child of that name when ``p`` is a
    ``PROF_*`` collection, else None."""
    if p.name == MSPROF_DIR and p.is_dir():
        return p
    if (p / MSPROF_DIR).is_dir():
        return p / MSPROF_DIR
    return None


def export_files(out_dir: Path, warnings: list[str]) -> dict[str, Path]:
    """Canonical file name -> the file of ``out_dir`` that stands for it (:data:`EXPORTS`); several matches of
    one pattern: the first read, the others named in ``warnings``; :data:`NOT_READ` files named too."""
    found: dict[str, Path] = {}
    for canonical, pattern in EXPORTS.items():
        matches = sorted(f for f in out_dir.glob(pattern) if f.is_file() and not f.name.startswith("msprof_tx_"))
        if not matches:
            continue
        found[canonical] = matches[0]
        if len(matches) > 1:
            rest = ", ".join(f.name for f in matches[1:])
            warnings.append(f"{out_dir}: {len(matches)} files match {pattern}: {matches[0].name} is read as "
                            f"{canonical}; not read: {rest}")
    for pattern, why in NOT_READ.items():
        for f in sorted(out_dir.glob(pattern)):
            warnings.append(f"{f}: not read ({why})")
    return found


def rank_hint(collection: Path) -> int | None:
    """The device id of a ``PROF_*`` collection with exactly one ``device_<id>`` folder, else None."""
    ids = [int(m.group(1)) for d in collection.glob("device_*") if d.is_dir()
           and (m := re.fullmatch(r"device_(\d+)", d.name))]
    return ids[0] if len(ids) == 1 else None
