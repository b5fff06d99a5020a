"""The Ascend DB reader never writes beside an export (issue: a WAL-mode export got ``-shm``/``-wal`` files beside
it; on a read-only mount it was "unreadable"; a stale ``-journal`` gave "attempt to write a readonly database"),
and waiver expiry is a UTC date (issue: a waiver expiring today failed in UTC+14 and passed in UTC)."""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from analyzer.ingest import ascend_db

#: SYNTHETIC: a tiny DB with META_DATA only


def _db(path: Path, wal: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    if wal:
        con.execute("pragma journal_mode=wal")
    con.execute("create table META_DATA (name TEXT, value TEXT)")
    con.executemany("insert into META_DATA values (?, ?)", [("SCHEMA_VERSION", "1.0.0")])
    con.commit()
    con.close()
    return path


def _read(path: Path) -> list[tuple[str, str]]:
    with closing(ascend_db.connect(path)) as con:
        return con.execute("select name, value from META_DATA").fetchall()


def test_wal_mode_export_gets_no_side_files(tmp_path: Path) -> None:
    db = _db(tmp_path / "x.db", wal=True)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert _read(db) == [("SCHEMA_VERSION", "1.0.0")]
    assert sorted(p.name for p in tmp_path.iterdir()) == before == ["x.db"]


def test_stale_journal_does_not_need_a_write(tmp_path: Path) -> None:
    db = _db(tmp_path / "x.db")
    (tmp_path / "x.db-journal").write_bytes(b"\0" * 512)  # stale: its header is zeroed
    os.chmod(tmp_path, 0o555)
    try:
        assert _read(db) == [("SCHEMA_VERSION", "1.0.0")]
    finally:
        os.chmod(tmp_path, 0o755)


def test_uncheckpointed_wal_is_read_from_a_copy(tmp_path: Path) -> None:
    """A non-empty -wal holds committed rows immutable mode would miss: they are read (from a copy)."""
    db = tmp_path / "x.db"
    writer = sqlite3.connect(db)
    writer.execute("pragma journal_mode=wal")
    writer.execute("pragma wal_autocheckpoint=0")
    writer.execute("create table META_DATA (name TEXT, value TEXT)")
    writer.execute("insert into META_DATA values ('SCHEMA_VERSION', '1.0.0')")
    writer.commit()
    import shutil

    frozen = tmp_path / "frozen"
    frozen.mkdir()
    shutil.copyfile(db, frozen / "x.db")
    shutil.copyfile(tmp_path / "x.db-wal", frozen / "x.db-wal")
    writer.close()
    before = sorted(p.name for p in frozen.iterdir())
    assert _read(frozen / "x.db") == [("SCHEMA_VERSION", "1.0.0")]
    assert sorted(p.name for p in frozen.iterdir()) == before


def test_read_only_mount(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root")
    src = tmp_path / "src"
    _db(src / "x.db", wal=True)
    ro = tmp_path / "ro"
    ro.mkdir()
    if subprocess.run(["mount", "--bind", "-o", "ro", str(src), str(ro)], capture_output=True, timeout=20).returncode:
        pytest.skip("bind mounts are not allowed here")
    try:
        assert _read(ro / "x.db") == [("SCHEMA_VERSION", "1.0.0")]
    finally:
        subprocess.run(["umount", "-l", str(ro)], capture_output=True, timeout=20)


def test_waiver_expiry_is_a_utc_date(monkeypatch: pytest.MonkeyPatch) -> None:
    from ndval.harness import cases

    monkeypatch.delenv("NDVAL_TODAY", raising=False)
    monkeypatch.setenv("TZ", "Etc/GMT-14")  # UTC+14: the local date is a day ahead of UTC for 14 h a day
    import time

    time.tzset()
    try:
        assert cases.today() == dt.datetime.now(dt.UTC).date()
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
