"""Ascend torch_npu text export -> event table: real msinsight / msprof-analyze samples.

Expected values are transcribed from ../shared/data/profiles/README.md (sources named per test).
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from analyzer.dataset import load_dataset
from analyzer.ingest import events as ev

L1 = "ascend/msinsight-level1"
L1R0 = f"{L1}/rank0_ascend_pt"
L0R0 = "ascend/msinsight-level0/rank0_ascend_pt"
SINGLE = "ascend/msprof-analyze-single-card/trace_view.json"


@pytest.fixture(scope="module")
def level1(profile_path):
    return load_dataset(profile_path(L1R0))


def test_event_table_follows_the_schema(level1) -> None:
    table = level1.ranks[0].events
    assert tuple(table.columns) == ev.COLUMNS
    assert set(table["category"]) <= set(ev.CATEGORIES)
    assert set(table["side"]) <= {ev.SIDE_DEVICE, ev.SIDE_HOST}
    assert (table["dur_us"] >= 0).all()
    assert str(table["ts_us"].dtype) == "float64"


def test_event_table_is_columnar(level1) -> None:
    """Low-cardinality strings are categoricals, numbers typed: the table's own bytes per row stay small
    (the strings' objects are shared: 1 per distinct name)."""
    table = level1.ranks[0].events
    for col in ev.CATEGORICAL:
        assert isinstance(table[col].dtype, pd.CategoricalDtype), col
        assert table[col].cat.codes.dtype.itemsize <= 2, col
    per_row = table.memory_usage(index=False, deep=False).sum() / len(table)
    assert per_row <= 80, per_row  # 8 numeric columns × 8 B + name pointer + 4 codes
    assert table["name"].nunique() == 761  # distinct names of the real Level1 rank-0 trace (counted)


def test_sync_op_counts_equal_the_readme(level1) -> None:
    """README: 27 aten::item, 27 aten::_local_scalar_dense, 7 aclrtSynchronizeStreamWithTimeout,
    5 aclrtMemcpy, 1 aclrtSynchronizeDevice in the Level1 trace."""
    sync = level1.ranks[0].events.query("category == 'sync'")
    counts = ev.name_counts(sync)
    assert counts == {
        "aten::item": 27, "aten::_local_scalar_dense": 27,
        "AscendCL@aclrtSynchronizeStreamWithTimeout": 7, "AscendCL@aclrtMemcpy": 5,
        "AscendCL@aclrtSynchronizeDevice": 1,
    }


def test_hccl_process_is_communication(level1) -> None:
    """The four hcom_allReduce ops of rank 0 (trace ``Group 0 Communication``) are collectives;
    the first lasts 79089.52 µs (profiling-formats §1.8: Elapse 79.0895 ms)."""
    ops = ev.comm_ops(level1.ranks[0].events).sort_values("ts_us")
    assert list(ops["sub"]) == ["allreduce"] * 4
    assert ops["dur_us"].iloc[0] == pytest.approx(79089.52, abs=0.01)
    assert ops["bytes"].iloc[0] == 4097000 * 4  # count × sizeof(FP32)
    assert set(ops["stream"]) == {"Group 0 Communication"}


def test_string_timestamps_are_exact(level1, profiles_dir: Path) -> None:
    """base + ts_us reproduces the trace's decimal string to the ns (float64 alone would not)."""
    rank = level1.ranks[0]
    with open(profiles_dir / L1R0 / "ASCEND_PROFILER_OUTPUT" / "trace_view.json") as fh:
        first = next(e for e in json.load(fh) if e.get("name") == "Computing" and e.get("ph") == "X")
    table = rank.events
    row = table[(table["sub"] == ev.SUB_OVERLAP) & (table["name"] == "Computing")].sort_values("ts_us").iloc[0]
    assert Decimal(rank.base_ts_us) + Decimal(repr(float(row["ts_us"]))).quantize(Decimal("0.001")) == Decimal(first["ts"])


def test_kernel_details_share_the_trace_clock(level1) -> None:
    """kernel_details ``Start Time(us)`` (trailing TAB, CRLF) lands exactly on the trace's first kernel."""
    rank = level1.ranks[0]
    kd = rank.tables["kernel_details"]
    compute = rank.events.query("category == 'compute'").sort_values("ts_us")
    assert kd["Start Time(us)"].min() == pytest.approx(compute["ts_us"].iloc[0], abs=1e-6)
    assert kd["aic_mac_ratio"].dtype == "float64"
    assert len(kd) == 191  # profiling-formats §5: 191 rows in the Level1 kernel_details


def test_step_trace_stage_is_a_number_in_us(level1) -> None:
    stt = level1.ranks[0].tables["step_trace_time"]
    assert stt["Stage"].iloc[0] == pytest.approx(136581.0)
    assert stt["Step"].iloc[0] == "50"


def test_operator_details_quoted_newlines(level1) -> None:
    """Call stacks with newlines inside quotes stay one row each."""
    od = level1.ranks[0].tables["operator_details"]
    assert od["Call Stack"].str.contains("\n").any()
    assert od["Name"].notna().all()


def test_steps_and_meta(level1) -> None:
    rank = level1.ranks[0]
    assert rank.rank == 0
    assert rank.meta["level"] == "Level1"
    assert sorted(rank.events.loc[rank.events["category"] == "step", "step"]) == [50]
    assert rank.communication is not None and "step50" in rank.communication
    assert rank.totals_source == "trace"


def test_multi_rank_parent(profile_path) -> None:
    ds = load_dataset(profile_path(L1))
    assert ds.source_format == "ascend"
    assert [r.rank for r in ds.ranks] == [0, 1]
    assert all(len(r.events) > 4000 for r in ds.ranks)


def test_ascend_profiler_output_dir_is_the_same_rank(profile_path, level1) -> None:
    """The three accepted entry points (rank dir, its ASCEND_PROFILER_OUTPUT, the parent) read the same events."""
    inner = load_dataset(profile_path(L1R0) / "ASCEND_PROFILER_OUTPUT")
    (rank,) = inner.ranks
    assert rank.rank == 0 and len(rank.events) == len(level1.ranks[0].events) == 4384
    assert set(rank.tables) == set(level1.ranks[0].tables)


def test_level0_has_no_cann_layer_and_na_cores(profile_path) -> None:
    """Level0: 8-column kernel_details with N/A Type / Accelerator Core; no CANN dispatch events."""
    rank = load_dataset(profile_path(L0R0)).ranks[0]
    kd = rank.tables["kernel_details"]
    assert list(kd.columns) == ["Step Id", "Name", "Type", "Accelerator Core", "Start Time(us)",
                                "Duration(us)", "Wait Time(us)", "Block Dim"]
    assert kd["Accelerator Core"].isna().sum() > 0
    assert (rank.events.query("category == 'dispatch'")["sub"] != ev.SUB_LAUNCH).all()
    assert "op_statistic" not in rank.tables and any("op_statistic.csv not found" in w for w in rank.warnings)


def test_single_card_trace_alone(profile_path) -> None:
    """msprof-analyze single card: no HCCL, task-queue enqueue/dequeue, aclrtSynchronizeStream."""
    ds = load_dataset(profile_path(SINGLE))
    table = ds.ranks[0].events
    assert (table["category"] == ev.COMMUNICATION).sum() == 0
    assert (table["sub"] == ev.SUB_ENQUEUE).sum() > 100
    assert (table["name"] == "AscendCL@aclrtSynchronizeStream").sum() > 0
    assert ds.ranks[0].tables == {}
    assert any("kernel_details.csv not found" in w for w in ds.warnings)


def test_new_communication_process_name(tmp_path: Path) -> None:
    """SYNTHETIC 4-event trace: newer torch_npu names the HCCL process ``Communication``."""
    trace = [
        {"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "Communication"}},
        {"ph": "M", "name": "process_labels", "pid": 7, "args": {"labels": "NPU 3"}},
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 0, "args": {"name": "Group 1 Communication"}},
        {"ph": "X", "name": "hcom_allGather__1_1", "pid": 7, "tid": 0, "ts": "1736408883704643.212",
         "dur": 12.5, "args": {"count": 10, "data_type": "FP16"}},
    ]
    path = tmp_path / "trace_view.json"
    path.write_text(json.dumps(trace))
    rank = load_dataset(path).ranks[0]
    row = rank.events.iloc[0]
    assert (row["category"], row["sub"], row["side"], row["bytes"]) == ("communication", "allgather", "device", 20.0)
    assert rank.meta["device_id"] == 3
    assert rank.base_ts_us == 1736408883704643 and row["ts_us"] == pytest.approx(0.212, abs=1e-9)


def test_forced_progress_bar_goes_to_stderr(profile_path, capsys) -> None:
    """progress=True shows a rich bar on stderr (normally only for big files on a terminal)."""
    ds = load_dataset(profile_path(SINGLE), progress=True)
    assert len(ds.ranks[0].events) > 0
    assert capsys.readouterr().out == ""
