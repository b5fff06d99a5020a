"""Column alias table and CSV quirks (SYNTHETIC CSV files written in the test, shaped like real ones)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.ingest.columns import ALIASES, canonical_name, read_csv_table
from analyzer.ingest.errors import IngestError


def test_alias_table_is_one_to_one() -> None:
    for table, cols in ALIASES.items():
        seen = [a for aliases in cols.values() for a in aliases]
        assert len(seen) == len(set(seen)), table
        assert not set(seen) & set(cols), table


@pytest.mark.parametrize(("raw", "canon"), [
    ("Op Name", "Name"), ("OP Type", "Type"), ("Task Type", "Accelerator Core"),
    ("Task Start Time(us)", "Start Time(us)"), ("Task Duration(us)", "Duration(us)"),
    ("Block Num", "Block Dim"), ("Mix Block Num", "Mix Block Dim"), ("\ufeffDevice ID", "Device_id"),
    (" Duration(us)\t", "Duration(us)"),
])
def test_kernel_details_aliases(raw: str, canon: str) -> None:
    assert canonical_name("kernel_details", raw) == canon


def test_native_op_summary_with_crlf_tabs_and_na(tmp_path: Path) -> None:
    """SYNTHETIC msprof op_summary-style header, CRLF, trailing TAB on the epoch start, N/A cells."""
    path = tmp_path / "kernel_details.csv"
    path.write_bytes(
        b"\xef\xbb\xbfDevice_id,Op Name,OP Type,Task Type,Task Start Time(us),Task Duration(us),Block Num\r\n"
        b"0,MatMul_1,MatMul,AI_CORE,1736408883704643.212\t,10.5,24\r\n"
        b"0,hcom_x,N/A,HCCL,1736408883704700.000\t,N/A,N/A\r\n"
    )
    kd = read_csv_table(path, "kernel_details", base_ts_us=1736408883704643)
    assert list(kd.columns) == ["Device_id", "Name", "Type", "Accelerator Core", "Start Time(us)",
                                "Duration(us)", "Block Dim"]
    assert kd["Start Time(us)"].tolist() == pytest.approx([0.212, 57.0], abs=1e-9)
    assert kd["Duration(us)"].isna().tolist() == [False, True]
    assert kd["Type"].isna().tolist() == [False, True]


def test_quoted_newlines_and_triple_quoted_shapes(tmp_path: Path) -> None:
    path = tmp_path / "operator_details.csv"
    path.write_text('Name,Input Shapes,Call Stack,Host Self Duration(us)\n'
                    'aten::mm,"""4,1025""","a.py(1): f;\nb.py(2): g",3.5\n')
    od = read_csv_table(path, "operator_details")
    assert len(od) == 1
    assert od["Input Shapes"].iloc[0] == "4,1025"
    assert od["Call Stack"].iloc[0] == "a.py(1): f;\nb.py(2): g"


def test_missing_required_column_names_file_field_rule(tmp_path: Path) -> None:
    path = tmp_path / "step_trace_time.csv"
    path.write_text("Step,Computing\n50,1.0\n")
    with pytest.raises(IngestError) as info:
        read_csv_table(path, "step_trace_time")
    err = info.value
    assert err.path == path and "Free" in err.field and "required column missing" in err.rule
    assert str(path) in str(err)
