"""Wrong-typed and NULL cells of a DB export (issue: NULL ``endNs`` or text ``size`` gave a TypeError traceback;
text in 20 % of ``TASK.startNs`` dropped 110 events while ``dropped_events`` said 0; an emptied ``STRING_IDS`` turned
66 sync ops into 0 without a warning). Each case edits a copy of the shared Level0 DB export."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from analyzer.dataset import load_dataset
from ndval.harness.cli import main


def _copy(profile_path, tmp_path: Path) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    dst = tmp_path / "rank0_ascend_pt"
    shutil.copytree(profile_path("ascend/msinsight-db-level0/rank0_ascend_pt"), dst)
    return dst, dst / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db"


def _edit(db: Path, *sql: str) -> None:
    con = sqlite3.connect(db)
    for s in sql:
        con.execute(s)
    con.commit()
    con.close()


def test_text_start_ns_is_counted_as_dropped(profile_path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rank_dir, db = _copy(profile_path, tmp_path)
    _edit(db, "update TASK set startNs = 'abc' where rowid % 5 = 0")
    ds = load_dataset(rank_dir)
    said = [w for w in ds.warnings if "startNs/endNs is NULL, not an integer" in w]
    assert said and "dropped" in said[0]


@pytest.mark.parametrize("sql", ["update PYTORCH_API set endNs = NULL where rowid % 7 = 0",
                                 "update PYTORCH_API set globalTid = 'x' where rowid % 7 = 0"])
def test_null_and_text_cells_give_no_traceback(profile_path, tmp_path: Path, sql: str,  # type: ignore[no-untyped-def]
                                               capsys: pytest.CaptureFixture[str]) -> None:
    rank_dir, db = _copy(profile_path, tmp_path)
    _edit(db, sql)
    assert main(["analyze", str(rank_dir)]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_text_size_gives_no_traceback(profile_path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rank_dir, db = _copy(profile_path, tmp_path)
    con = sqlite3.connect(db)
    has = con.execute("select count(*) from sqlite_master where name = 'COMMUNICATION_TASK_INFO'").fetchone()[0]
    con.close()
    if not has:
        pytest.skip("this export has no COMMUNICATION_TASK_INFO table")
    _edit(db, "update COMMUNICATION_TASK_INFO set size = 'big'")
    assert len(load_dataset(rank_dir).ranks) == 1


def test_empty_string_ids_is_a_warning(profile_path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rank_dir, db = _copy(profile_path, tmp_path)
    _edit(db, "delete from STRING_IDS")
    ds = load_dataset(rank_dir)
    assert any("STRING_IDS is empty" in w for w in ds.warnings)


def test_two_headers_for_one_canonical_column_is_one_error(tmp_path: Path) -> None:
    """Two headers mapping to one canonical column gave an AttributeError traceback."""
    from analyzer.ingest.columns import canonical_name, read_csv_table
    from analyzer.ingest.errors import IngestError

    aliases = ["Duration(us)", "Task Duration(us)"]
    assert {canonical_name("kernel_details", h) for h in aliases} == {"Duration(us)"}
    csv = tmp_path / "kernel_details.csv"
    csv.write_text(f"Name,{aliases[0]},{aliases[1]}\nk,1,2\n")
    with pytest.raises(IngestError, match="all name the column"):
        read_csv_table(csv, "kernel_details")
