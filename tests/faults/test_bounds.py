"""Integers beyond int64 and oversized inputs are clear errors (issue: "tracebacks with exit 1" —
``ProfilerStep#<26 digits>``, ``distributedInfo.rank``, a rank directory name, ``search --devices 2**63``; "hangs" —
a 6.4·10^10-layout ``search`` space ran with no total and Ctrl-C gave a traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analyzer.ingest import events as ev
from analyzer.ingest.kineto import rank_of
from estimator.search.space import SpaceError, check_size
from ndval.harness.cli import main
from tests.analyzer.synthetic import prefill_decode_steps, write_rank

LLAMA = Path(__file__).parents[2] / "estimator" / "examples" / "llama3-8b-h100.yaml"


def test_step_number_beyond_int64_is_a_clear_error() -> None:
    names = np.array(["ProfilerStep#" + "9" * 26], dtype=object)
    with pytest.raises(ValueError, match="beyond int64"):
        ev.step_numbers(names, np.array([True]))


def test_analyze_step_beyond_int64_exits_2_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rank = write_rank(tmp_path, prefill_decode_steps())
    trace = rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    events = json.loads(trace.read_text())
    step = next(e for e in events if str(e.get("name", "")).startswith("ProfilerStep#"))
    step["name"] = "ProfilerStep#" + "9" * 26
    trace.write_text(json.dumps(events))
    assert main(["analyze", str(rank)]) == 2
    err = capsys.readouterr().err
    assert "beyond int64" in err and "Traceback" not in err


@pytest.mark.parametrize("value", [2**70, float("inf")])
def test_distributed_info_rank_beyond_int64(value: float) -> None:
    with pytest.raises(ValueError, match=r"distributedInfo\.rank"):
        rank_of({"distributedInfo": {"rank": value}})


def test_rank_folder_name_beyond_int64(tmp_path: Path) -> None:
    from analyzer.dataset import _rank_hint

    with pytest.raises(ValueError, match="folder name"):
        _rank_hint(tmp_path / ("rank" + "9" * 25 + "_ascend_pt"))


def test_search_devices_beyond_int64_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", str(LLAMA), "--devices", str(2**63)]) == 2
    assert "--devices must be" in capsys.readouterr().err


def test_search_space_beyond_the_bound_is_refused_with_its_size() -> None:
    space = {f"d{i}": tuple(range(200)) for i in range(5)}  # 3.2·10^11 layouts
    with pytest.raises(SpaceError, match=r"3\.2e\+11 layouts.*narrow the widest dimensions"):
        check_size(space)
    check_size({"d": (1, 2)})


def _bomb(path: Path, member_bytes: int) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf, zf.open("xl/worksheets/sheet1.xml", "w") as fh:
        chunk = b"\0" * (1 << 20)
        for _ in range(member_bytes >> 20):
            fh.write(chunk)
    return path


def test_xlsx_zip_bomb_refused_before_reading(tmp_path: Path) -> None:
    """A 4 MB .xlsx that unpacked to ~1 GB ran add-case until killed; the central directory is checked first."""
    from ndval.core.archives import ArchiveError, check_zip

    bomb = _bomb(tmp_path / "bomb.xlsx", 8 << 20)
    assert bomb.stat().st_size < 100_000
    with pytest.raises(ArchiveError, match="compressed"):
        check_zip(bomb, "xlsx workbook")
    with pytest.raises(ArchiveError, match="unpacks to 8 MiB"):
        check_zip(bomb, "xlsx workbook", max_bytes=1 << 20)


def test_add_case_csv_named_xlsx_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "peaks.xlsx"
    src.write_text("config,measured_mb\na,1\n")
    # --model / --profile / --hardware have no default (none fits every team): given, so the file is what fails
    assert main(["add-case", "--from", str(src), "--cases-dir", str(tmp_path / "cases"), "--model",
                 "models/llama3-8b.yaml", "--profile", "megatron", "--hardware", "h100-80g"]) == 2
    err = capsys.readouterr().err
    assert "not a zip file" in err and "Traceback" not in err, err


@pytest.mark.parametrize("value", [str(10**26), str(2**63), "1e400"])
def test_set_train_seq_length_beyond_int64_is_one_error(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``--set train.seq_length=<beyond int64>`` gave a traceback; now exit 2, one line naming the field."""
    assert main(["estimate", str(LLAMA), "--set", f"train.seq_length={value}"]) == 2
    err = capsys.readouterr().err
    assert "train.seq_length" in err and "(value set by an override)" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("field", ["parallel.tp", "hardware.devices", "train.seq_length"])
def test_set_boolean_for_a_number_field_is_refused(field: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``--set parallel.tp=true`` silently became tp 1 (pydantic reads a boolean as an int): now refused."""
    argv = ["estimate", str(LLAMA), "--set", f"{field}=true", "--set", "parallel.dp=4"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{field}: Value error, must be a number; got true (a boolean)" in err, err


@pytest.mark.parametrize("text", [f"hostOnlyGate: {10**29}", f"bimodalMinSteps: {2**64}",
                                  f"thresholds: {{hostOnlyGate: {{value: 50, saturation: {10**30}}}}}"])
def test_thresholds_integer_beyond_int64_is_read_as_a_number(tmp_path: Path, text: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A threshold integer beyond int64 gave a traceback; it is a finite number, read as one (no traceback)."""
    from analyzer.thresholds import resolve

    path = tmp_path / "th.yaml"
    path.write_text(text + "\n")
    key = text.split(":")[0] if not text.startswith("thresholds") else "hostOnlyGate"
    assert resolve(path)[key].value >= 50
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "name": "ProfilerStep#1", "ts": 0, "dur": 1000, "pid": 1, "tid": 1, "cat": "user_annotation"},
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 10, "dur": 30, "pid": 0, "tid": 7}]}))  # SYNTHETIC
    assert main(["analyze", str(trace), "--thresholds", str(path)]) in (0, 1)
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("port", ["70000", "-1", str(2**64)])
def test_serve_port_out_of_range_exits_2(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``serve --port 70000`` (or beyond int64) gave a traceback; now the usage error, exit 2, before binding."""
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--port", port])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --port: {port} is outside 0..65535" in err and "Traceback" not in err


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_table_rows_bounded_before_reading(tmp_path: Path, suffix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A data table beyond the row bound is one error naming the file (SYNTHETIC tables; the bound lowered to 5)."""
    import pandas as pd

    from ndval.harness import cases

    monkeypatch.setattr(cases, "MAX_TABLE_ROWS", 5)
    path = tmp_path / f"t{suffix}"
    frame = pd.DataFrame({"config": [f"c{i}" for i in range(6)], "measured_mb": range(6)})
    frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path)
    with pytest.raises(ValueError, match=r"t\.(csv|parquet): (more than 5 rows|6 rows, more than 5)"):
        cases.read_table(path, None)
    frame.head(5).to_csv(path, index=False) if suffix == ".csv" else frame.head(5).to_parquet(path)
    assert len(cases.read_table(path, None)) == 5


def test_parquet_declaring_more_data_than_the_bound_is_refused_from_its_footer(tmp_path: Path) -> None:
    """A small compressed Parquet file declaring more column data than the bound is refused before it is read."""
    import pandas as pd

    from ndval.core.archives import ArchiveError, check_parquet

    path = tmp_path / "zeros.parquet"  # SYNTHETIC: ~3 MB of pages compressed to a few KB
    pd.DataFrame({"x": ["a" * 100] * 30_000}).to_parquet(path, use_dictionary=False, compression="zstd")
    assert path.stat().st_size < 100_000
    with pytest.raises(ArchiveError, match=r"zeros\.parquet: the Parquet pages unpack to \d+ MiB, more than 1 MiB"):
        check_parquet(path, max_rows=10**6, max_bytes=1 << 20)
    (tmp_path / "not.parquet").write_text("config,measured_mb\n")
    with pytest.raises(ArchiveError, match="not a readable Parquet file"):
        check_parquet(tmp_path / "not.parquet", max_rows=10)


@pytest.mark.parametrize("value", [str(2**70), "abc", "-3"])
def test_validate_workers_beyond_int64_or_not_a_count_is_the_usage_error(value: str,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """``validate -n 2**70`` gave an xdist OverflowError traceback and ``-n abc`` a ValueError one: now exit 2."""
    with pytest.raises(SystemExit) as exc:
        main(["validate", f"-n={value}"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument -n/--workers" in err and "is not auto, no or a worker count" in err and "Traceback" not in err


def test_validate_workers_capped_at_the_usable_cpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``validate -n 300`` would fork 300 xdist workers; capped at the usable CPUs, said on stderr."""
    import argparse

    from ndval.harness.commands import validate
    from ndval.harness.workers import usable_cpus

    assert validate.workers(argparse.Namespace(workers="300"), tmp_path) == min(300, usable_cpus())
    assert f"-n 300 capped at the {usable_cpus()} usable CPUs" in capsys.readouterr().err
    assert validate.workers(argparse.Namespace(workers="1"), tmp_path) == 1
