"""H1: the one output writer never replaces a device, FIFO, stream or symbolic link (issue: "the atomic writer
replaces whatever the output path names": ``search --csv /dev/full`` turned the node into a 14 KB file)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ndval.core import atomic
from tests.faults.conftest import FifoReader


def test_regular_file_replaced_atomically_and_no_temp_left(tmp_path: Path) -> None:
    out = tmp_path / "a.txt"
    out.write_text("old")
    atomic.write_text(out, "new")
    assert out.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]
    assert not atomic.is_streamed(out)


def test_h1_fifo_is_streamed_not_replaced(fifo: Path) -> None:
    reader = FifoReader(fifo)
    atomic.write_text(fifo, "payload\n")
    assert reader.join() == b"payload\n"
    assert stat.S_ISFIFO(fifo.stat().st_mode), "the FIFO was replaced by a regular file"
    assert atomic.is_streamed(fifo)


def test_h1_character_device_written_in_place(null_device: Path) -> None:
    atomic.write_bytes(null_device, b"x" * 14_000)
    assert stat.S_ISCHR(null_device.stat().st_mode), "the device node became a regular file"
    assert [p.name for p in null_device.parent.iterdir()] == ["null"]


def test_h1_full_device_reports_enospc_and_stays_a_device(full_device: Path) -> None:
    with pytest.raises(OSError) as info:
        atomic.write_text(full_device, "{}" * 7000)
    assert info.value.filename == str(full_device)
    assert stat.S_ISCHR(full_device.stat().st_mode)


def test_h1_symlink_followed_to_its_target(tmp_path: Path) -> None:
    target = tmp_path / "real.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    atomic.write_text(link, "new")
    assert link.is_symlink(), "the link was replaced by a file"
    assert target.read_text() == "new"


def test_h1_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "new.txt")
    atomic.write_text(link, "x")
    assert link.is_symlink() and (tmp_path / "new.txt").read_text() == "x"


def test_h1_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(atomic.OutputPathError, match="is a directory"):
        atomic.write_text(tmp_path, "x")


def test_h1_dash_and_dev_stdout_are_the_stream(capfd: pytest.CaptureFixture[str]) -> None:
    assert atomic.is_streamed("-") and atomic.is_streamed("/dev/stdout")
    atomic.write_text("-", "to stdout\n")
    atomic.write_text("/dev/stdout", "again\n")
    assert capfd.readouterr().out == "to stdout\nagain\n"


def test_h1_failed_write_leaves_the_old_file_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "a.txt"
    out.write_text("old")

    def boom(*_a: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic.write_text(out, "new")
    assert out.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_h1_search_csv_into_a_fifo_keeps_the_fifo(fifo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``ndval search CONFIG --devices 8 --csv FIFO`` streams the table into the FIFO."""
    from ndval.harness.cli import main

    reader = FifoReader(fifo)
    config = Path(__file__).parents[2] / "estimator" / "examples" / "llama3-8b-h100.yaml"
    code = main(["search", str(config), "--devices", "8", "--space", "tp=1,2", "--space", "pp=1",
                 "--csv", str(fifo), "--no-progress", "--top", "1"])
    data = reader.join(120)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert code in (0, 1) and data.count(b"\n") >= 1


def test_h1_calibrate_output_directory_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``calibrate -o DIR`` gave a traceback; now exit 2 with one line naming the path."""
    from ndval.harness.commands import calibrate

    out = calibrate._write_overlay(tmp_path, {"efficiency": {}})
    err = capsys.readouterr().err
    assert out == 2 and str(tmp_path) in err and "is a directory" in err and "Traceback" not in err
