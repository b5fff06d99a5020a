"""Bad input: a clear IngestError (file, field, rule) or a warning, never a traceback from deep inside.

The truncated trace is generated in a tmp dir from the real Level1 trace (cut at 60 % of its bytes);
everything else is SYNTHETIC and written by the test.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from analyzer import breakdown as bd
from analyzer.dataset import load_dataset
from analyzer.ingest.errors import IngestError

L1R0 = "ascend/msinsight-level1/rank0_ascend_pt"


def test_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(IngestError) as info:
        load_dataset(tmp_path)
    assert info.value.path == tmp_path and "no profile found" in info.value.rule


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="does not exist"):
        load_dataset(tmp_path / "nope")


@pytest.mark.parametrize("text", ['{"model": "llama", "layers": 32}', "[1, 2, 3]", '{"traceEvents": []}'])
def test_non_profile_json(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(IngestError) as info:
        load_dataset(path)
    assert info.value.path == path and "not" in info.value.rule


def test_not_json_at_all(tmp_path: Path) -> None:
    path = tmp_path / "trace_view.json"
    path.write_text("hello, world")
    with pytest.raises(IngestError, match="not JSON"):
        load_dataset(path)


def test_empty_trace_file(tmp_path: Path) -> None:
    path = tmp_path / "trace_view.json"
    path.write_text("")
    with pytest.raises(IngestError, match="empty file"):
        load_dataset(path)


def _copy_rank(profile_path, tmp_path: Path) -> Path:
    dst = tmp_path / "rank0_ascend_pt"
    shutil.copytree(profile_path(L1R0), dst)
    return dst


def test_truncated_trace_view_at_60_pct(profile_path, tmp_path: Path) -> None:
    """Cut at 60 % of the bytes: the valid head is analysed, the warning names file and count kept."""
    rank_dir = _copy_rank(profile_path, tmp_path)
    trace = rank_dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    data = trace.read_bytes()
    trace.write_bytes(data[: int(len(data) * 0.6)])
    ds = load_dataset(rank_dir)
    rank = ds.ranks[0]
    (warning,) = [w for w in ds.warnings if "truncated" in w]
    kept = len(rank.events)
    assert str(trace) in warning and f"kept {kept} complete events" in warning
    assert 1000 < kept < 4384  # the full trace has 4384 complete events
    assert rank.totals_source.startswith("csv (trace truncated")  # step_trace_time.csv is present
    assert "kernel_details" in rank.tables  # the CSVs are still read
    bd.ascend_step_breakdown(rank.events)  # the breakdown still runs on what was kept


def test_truncated_gzip_kineto(profile_path, tmp_path: Path) -> None:
    data = profile_path("kineto/hta-trace-diff/control.json.gz").read_bytes()
    path = tmp_path / "control.json.gz"
    path.write_bytes(data[: int(len(data) * 0.6)])
    ds = load_dataset(path)
    (warning,) = [w for w in ds.warnings if "truncated" in w]
    assert str(path) in warning and f"kept {len(ds.ranks[0].events)} complete events" in warning


def test_csv_with_missing_columns_warns_and_is_skipped(profile_path, tmp_path: Path) -> None:
    rank_dir = _copy_rank(profile_path, tmp_path)
    csv = rank_dir / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    csv.write_text("Step Id,Name\n50,MatMul\n")
    ds = load_dataset(rank_dir)
    assert "kernel_details" not in ds.ranks[0].tables
    (warning,) = [w for w in ds.warnings if "kernel_details.csv:" in w]
    assert "Start Time(us), Duration(us)" in warning and "required column missing" in warning
    with pytest.raises(IngestError) as info:
        load_dataset(rank_dir, strict=True)
    assert info.value.path == csv


def test_nan_and_negative_durations_are_dropped_with_a_warning(tmp_path: Path) -> None:
    """SYNTHETIC trace: one good event, one negative dur, one NaN dur, one bad ts."""
    path = tmp_path / "trace_view.json"
    path.write_text(
        '[{"ph":"X","name":"a","pid":1,"tid":1,"ts":"100.5","dur":1},'
        '{"ph":"X","name":"b","pid":1,"tid":1,"ts":"101.5","dur":-3},'
        '{"ph":"X","name":"c","pid":1,"tid":1,"ts":"102.5","dur":NaN},'
        '{"ph":"X","name":"d","pid":1,"tid":1,"ts":"soon","dur":2}]'
    )
    ds = load_dataset(path)
    assert ds.ranks[0].events["name"].tolist() == ["a"]
    assert ds.ranks[0].dropped_events == (3, "bad ts/dur")
    assert any("dropped 3 unreadable events (bad ts 1, bad dur 2;" in w for w in ds.warnings), ds.warnings


def test_gzip_ascend_trace_is_read(profile_path, tmp_path: Path) -> None:
    """gzip is sniffed by magic bytes, not by name."""
    src = profile_path(L1R0) / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    path = tmp_path / "trace_view.json"
    path.write_bytes(gzip.compress(src.read_bytes()))
    assert len(load_dataset(path).ranks[0].events) == 4384
