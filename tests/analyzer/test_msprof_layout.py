"""Native msprof output (``PROF_*/mindstudio_profiler_output``, analyzer.ingest.msprof).

The collections here are built in ``tmp_path`` from the shared real torch_npu Level1 export, its files renamed
to msprof's timestamped names (the timeline keeps ``trace_view.json``'s process layout, as msprof's does); the
op_summary header test is synthetic (CANN's documented column names)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analyzer import breakdown
from analyzer.dataset import load_dataset
from analyzer.ingest import msprof
from analyzer.ingest.columns import read_csv_table

L1 = "ascend/msinsight-level1"
TS = "20240101120000"


def _collection(root: Path, rank_out: Path, device: int, *extra: str) -> Path:
    """A ``PROF_*`` folder holding ``rank_out``'s timeline and kernel table under msprof's names."""
    prof = root / f"PROF_00000{device}_{TS}_x"
    out = prof / msprof.MSPROF_DIR
    out.mkdir(parents=True)
    (prof / f"device_{device}").mkdir()
    shutil.copy(rank_out / "trace_view.json", out / f"msprof_{TS}.json")
    shutil.copy(rank_out / "kernel_details.csv", out / f"op_summary_{TS}.csv")
    for name in extra:
        (out / name).write_text("x\n")
    return prof


def _computing(ds: Any) -> pd.Series:
    rows = breakdown.to_frame(breakdown.ascend_step_breakdown(ds.ranks[0].events))
    return rows[["computing_us", "communication_us", "comm_not_overlapped_us", "free_us"]].sum()


def test_a_collection_reads_as_its_torch_npu_export(tmp_path: Path, profile_path: Callable[[str], Path]) -> None:
    """The PROF folder and its mindstudio_profiler_output both load; the step breakdown equals the torch_npu
    export's (Computing 8873.756 µs, Communication 105991.878 µs: shared README check values); the rank is the
    collection's device id; the kernel table is read from op_summary_*.csv."""
    src = profile_path(f"{L1}/rank0_ascend_pt") / "ASCEND_PROFILER_OUTPUT"
    prof = _collection(tmp_path, src, 3)
    reference = load_dataset(src)
    for path in (prof, prof / msprof.MSPROF_DIR):
        ds = load_dataset(path)
        assert ds.source_format == "ascend" and ds.ranks[0].rank == 3
        pd.testing.assert_series_equal(_computing(ds), _computing(reference))
        assert _computing(ds)["computing_us"] == pytest.approx(8873.756, abs=0.01)  # (the README rounds)
        assert "kernel_details" in ds.ranks[0].tables
        assert ds.ranks[0].files["kernel_details.csv"].name == f"op_summary_{TS}.csv"


def test_a_parent_of_collections_is_one_rank_each(tmp_path: Path, profile_path: Callable[[str], Path]) -> None:
    for device in (0, 1):
        _collection(tmp_path, profile_path(f"{L1}/rank{device}_ascend_pt") / "ASCEND_PROFILER_OUTPUT", device)
    ds = load_dataset(tmp_path, workers=1, backend="serial")
    assert sorted(r.rank for r in ds.ranks) == [0, 1]


def test_unread_files_are_named(tmp_path: Path, profile_path: Callable[[str], Path]) -> None:
    """A second timeline slice and the graph-mode step trace are not read, and the warnings say so."""
    src = profile_path(f"{L1}/rank0_ascend_pt") / "ASCEND_PROFILER_OUTPUT"
    prof = _collection(tmp_path, src, 0, f"step_trace_{TS}.csv")
    shutil.copy(src / "trace_view.json", prof / msprof.MSPROF_DIR / f"msprof_slice_1_{TS}.json")
    warnings = load_dataset(prof).ranks[0].warnings
    assert any(f"not read: msprof_slice_1_{TS}.json" in w for w in warnings)
    assert any(f"step_trace_{TS}.csv: not read (graph-mode iteration trace" in w for w in warnings)


def test_op_summary_columns_are_kernel_details_columns(tmp_path: Path) -> None:
    """SYNTHETIC: CANN's documented op_summary header reads into the canonical kernel_details names."""
    csv = tmp_path / f"op_summary_{TS}.csv"
    csv.write_text("Device_id,Model ID,Task ID,Stream ID,Op Name,OP Type,OP State,Task Type,Task Start Time(us),"
                   "Task Duration(us),Task Wait Time(us),Block Dim\n"
                   "0,4294967295,1,2,MatMul_1,MatMul,static,AI_CORE,1700000000000000.000\t,12.5,0.5,24\n")
    table = read_csv_table(csv, "kernel_details")
    assert {"Name", "Type", "Accelerator Core", "Duration(us)", "Wait Time(us)"} <= set(table.columns)
    assert table["Duration(us)"].iloc[0] == 12.5 and table["Name"].iloc[0] == "MatMul_1"


def test_a_torch_npu_rank_dir_reads_its_own_output_first(tmp_path: Path,
                                                         profile_path: Callable[[str], Path]) -> None:
    """A ``*_ascend_pt`` folder with a ``mindstudio_profiler_output`` beside its ``ASCEND_PROFILER_OUTPUT``: the
    torch_npu export is read."""
    rank_dir = tmp_path / "rank0_ascend_pt"
    shutil.copytree(profile_path(f"{L1}/rank0_ascend_pt"), rank_dir)
    (rank_dir / msprof.MSPROF_DIR).mkdir()
    files = load_dataset(rank_dir).ranks[0].files
    assert files["trace_view.json"].parent.name == "ASCEND_PROFILER_OUTPUT"
