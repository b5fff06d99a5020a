"""Ascend torch_npu DB export reader (``ascend_db``) on the REAL shared DB exports (msinsight Level0 and
Level2, 2 ranks each; skipped when ``../shared`` is absent), and on damaged copies / SYNTHETIC SQLite files
made in tmp for the bad-input cases.

Check values: ``analysis.db`` ``StepTraceTime`` as written by torch_npu (the profiles README table);
the reader recomputes Computing, Communication, Communication(Not Overlapped) and Free from
``ascend_pytorch_profiler_<rank>.db``'s device tasks and must land within 0.1 %.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from analyzer import analyze
from analyzer.dataset import load_dataset
from analyzer.ingest import ascend_db
from analyzer.ingest import events as ev
from analyzer.ingest.errors import IngestError
from ndval.harness.cli import main

#: profiles README, "DB exports" table (µs): computing, communication, comm. not overlapped, free.
README_VALUES = {
    ("msinsight-db-level0", 0): (8843.910, 89880.576, 85881.122, 25900.158),
    ("msinsight-db-level0", 1): (8831.637, 93993.858, 90000.781, 26748.231),
    ("msinsight-db-level2", 0): (8900.456, 94107.521, 90080.699, 25238.587),
    ("msinsight-db-level2", 1): (8926.368, 100357.525, 96293.920, 25228.138),
}
COLUMNS = ("Computing", "Communication", "Communication(Not Overlapped)", "Free")


@pytest.mark.parametrize("export, rank", sorted(README_VALUES))
def test_real_db_recomputed_step_totals_match_analysis_db(profile_path, export: str, rank: int) -> None:
    ds = load_dataset(profile_path(f"ascend/{export}"))
    r = ds.rank(rank)
    assert ds.source_format == "ascend" and f"ascend_pytorch_profiler_{rank}.db" in r.files
    check = ascend_db.step_trace_check(r.events, r.tables["analysis_db.StepTraceTime"])
    for col, expected in zip(COLUMNS, README_VALUES[(export, rank)], strict=True):
        mine, theirs = check[col]
        assert theirs == pytest.approx(expected, abs=1e-3)
        assert mine == pytest.approx(expected, rel=1e-3), col
    assert not any("differs by more than 0.1 %" in w for w in r.warnings)


def test_real_db_event_table_has_every_kind(profile_path) -> None:
    r = load_dataset(profile_path("ascend/msinsight-db-level0/rank0_ascend_pt")).ranks[0]
    counts = r.events["category"].astype(str).value_counts()
    assert counts[ev.COMPUTE] == 187 and counts[ev.STEP] == 1
    assert (ev.comm_ops(r.events)["sub"].astype(str) == "allreduce").sum() == 4
    assert counts[ev.SYNC] >= 27 and counts[ev.DISPATCH] > 0 and counts[ev.MEMCPY] == 24
    assert r.meta["db_schema_version"] == "1.0.0" and r.meta["level"] == "Level0"
    assert list(r.events.columns) == list(ev.COLUMNS)


@pytest.mark.parametrize("export", ["msinsight-db-level0", "msinsight-db-level2"])
def test_real_db_verdict_kind_matches_text_export(profile_path, export: str) -> None:
    """The text export of the same kind of run (msinsight Level0 text; there is no Level2 text
    sample, so Level2 is held to the same kind) names communication."""
    text = analyze(load_dataset(profile_path("ascend/msinsight-level0/rank0_ascend_pt")))
    db = analyze(load_dataset(profile_path(f"ascend/{export}")))
    assert text.verdict.kind == "communication"
    assert {r.scopes["overall"].verdict.kind for r in db.ranks} == {text.verdict.kind}


def test_real_compare_db_against_text_export(profile_path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cmp.json"
    rc = main(["compare", str(profile_path("ascend/msinsight-level0/rank0_ascend_pt")),
               str(profile_path("ascend/msinsight-db-level0/rank0_ascend_pt")), "--json", str(out)])
    assert rc == 0 and out.is_file()
    assert "Traceback" not in capsys.readouterr().err


def _copy_rank(profile_path, tmp_path: Path, export: str = "msinsight-db-level0", rank: int = 0) -> Path:
    dst = tmp_path / f"rank{rank}_ascend_pt"
    shutil.copytree(profile_path(f"ascend/{export}/rank{rank}_ascend_pt"), dst)
    return dst


def _db(rank_dir: Path, rank: int = 0) -> Path:
    return rank_dir / "ASCEND_PROFILER_OUTPUT" / f"ascend_pytorch_profiler_{rank}.db"


def _cli(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(["analyze", str(path)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err


def test_real_truncated_db_is_a_clear_error(profile_path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rank_dir = _copy_rank(profile_path, tmp_path)
    db = _db(rank_dir)
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])
    with pytest.raises(IngestError, match=r"ascend_pytorch_profiler_0\.db"):
        load_dataset(rank_dir)
    rc, err = _cli(rank_dir, capsys)
    assert rc == 2 and "ascend_pytorch_profiler_0.db" in err


def test_corrupted_db_header_is_a_clear_error(profile_path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rank_dir = _copy_rank(profile_path, tmp_path)
    db = _db(rank_dir)
    data = bytearray(db.read_bytes())
    data[:16] = b"garbage garbage!"
    db.write_bytes(bytes(data))
    with pytest.raises(IngestError, match="not an SQLite database"):
        load_dataset(rank_dir)
    assert _cli(rank_dir, capsys)[0] == 2


def _synthetic_db(path: Path, version: str = "1.0.0", tables: tuple[str, ...] = ()) -> None:
    """SYNTHETIC: a torch_npu-like DB with META_DATA and the named (empty) tables only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as con:
        con.execute("create table META_DATA (name TEXT, value TEXT)")
        con.executemany("insert into META_DATA values (?, ?)",
                        [("SCHEMA_VERSION", version), ("SCHEMA_VERSION_MAJOR", version.split(".")[0])])
        for t in tables:
            con.execute(f"create table {t} (id INTEGER)")
    con.close()


def test_synthetic_db_without_its_level_tables_names_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rank_dir = tmp_path / "rank0_ascend_pt"
    _synthetic_db(_db(rank_dir), tables=("STRING_IDS",))
    with pytest.raises(IngestError, match=r"TASK, COMPUTE_TASK_INFO, PYTORCH_API.*required table missing"):
        load_dataset(rank_dir)
    rc, err = _cli(rank_dir, capsys)
    assert rc == 2 and "required table missing" in err


def test_synthetic_db_unknown_major_version_is_named(tmp_path: Path) -> None:
    rank_dir = tmp_path / "rank0_ascend_pt"
    _synthetic_db(_db(rank_dir), version="7.2.0")
    with pytest.raises(IngestError, match=r"unknown schema major version 7 \(SCHEMA_VERSION 7\.2\.0\)"):
        load_dataset(rank_dir)


def test_real_level2_db_missing_pmu_table_is_a_warning(profile_path, tmp_path: Path) -> None:
    rank_dir = _copy_rank(profile_path, tmp_path, "msinsight-db-level2")
    with sqlite3.connect(_db(rank_dir)) as con:
        con.execute("drop table TASK_PMU_INFO")
    con.close()
    r = load_dataset(rank_dir).ranks[0]
    assert any("TASK_PMU_INFO missing for Level2" in w for w in r.warnings)


def test_real_folder_mixing_db_and_text_of_different_runs_warns(profile_path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "mixed"
    root.mkdir()
    shutil.copytree(profile_path("ascend/msinsight-level1/rank0_ascend_pt"), root / "rank0_ascend_pt")
    shutil.copytree(profile_path("ascend/msinsight-db-level0/rank1_ascend_pt"), root / "rank1_ascend_pt")
    ds = load_dataset(root)
    text = " | ".join(ds.warnings)
    assert "ranks mix DB exports" in text and "ascend_pytorch_profiler_1.db" in text
    assert "different runs" in text
    rc, _ = _cli(root, capsys)
    assert rc in (0, 1)


def test_real_db_stripped_to_the_native_msprof_schema(profile_path, tmp_path: Path) -> None:
    """The real Level0 rank-0 DB with what a native ``msprof --type=db`` export lacks removed (META_DATA,
    PYTORCH_API, COMMUNICATION_OP's dataType / count) and renamed ``msprof_<ts>.db`` in a PROF folder: it is
    read, its device Computing is the torch_npu DB's (README: 8843.910 µs), collectives keep no message size, and
    the rank is the tasks' one ``deviceId`` (0)."""
    prof = tmp_path / "PROF_000001_20240101120000_x"
    prof.mkdir()
    db = prof / "msprof_20240101120000.db"
    shutil.copy(_db(profile_path("ascend/msinsight-db-level0/rank0_ascend_pt")), db)
    with sqlite3.connect(db) as con:
        con.execute("drop table META_DATA")
        con.execute("drop table PYTORCH_API")
        con.execute("alter table COMMUNICATION_OP drop column dataType")
        con.execute("alter table COMMUNICATION_OP drop column count")
    con.close()
    ds = load_dataset(prof)
    rank = ds.ranks[0]
    assert rank.meta["db_schema_version"] == ascend_db.MSPROF_SCHEMA and rank.files[db.name] == db
    assert rank.rank == 0  # the folder names no rank: the tasks' one deviceId
    comm = rank.events[(rank.events["category"] == ev.COMMUNICATION) & (rank.events["pid"] == ascend_db.PID_COMM)]
    assert len(comm) and comm["bytes"].isna().all()
    from analyzer import breakdown

    rows = breakdown.to_frame(breakdown.ascend_step_breakdown(rank.events))
    assert float(rows["computing_us"].sum()) == pytest.approx(README_VALUES[("msinsight-db-level0", 0)][0], rel=1e-3)


def test_synthetic_native_msprof_db_without_its_tables_names_them(tmp_path: Path) -> None:
    """SYNTHETIC: an ``msprof_*.db`` needs STRING_IDS, TASK and COMPUTE_TASK_INFO (not META_DATA)."""
    db = tmp_path / "PROF_1" / "msprof_1.db"
    db.parent.mkdir()
    with sqlite3.connect(db) as con:
        con.execute("create table STRING_IDS (id INTEGER, value TEXT)")
    con.close()
    with pytest.raises(IngestError, match=r"TASK, COMPUTE_TASK_INFO.*required table missing for a native msprof"):
        load_dataset(db.parent)
