"""``ndval analyze``: reports written, clear errors with exit code 2 and no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ndval.harness.cli import main
from tests.analyzer import synthetic as S


def test_writes_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rank_dir = S.write_rank(tmp_path, S.comm_bound_steps())
    out = tmp_path / "out"
    rc = main(["analyze", str(rank_dir), "--json", str(out / "a.json"), "--markdown", str(out / "a.md"),
               "--html", str(out / "a.html")])
    assert rc == 0
    text = capsys.readouterr().out
    assert "communication bottleneck" in text
    assert json.loads((out / "a.json").read_text())["verdict"]["kind"] == "communication"
    assert (out / "a.md").read_text().startswith("# ndval analysis")
    assert "<svg" in (out / "a.html").read_text()


def test_thresholds_and_phase_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rank_dir = S.write_rank(tmp_path, S.comm_bound_steps())
    y = tmp_path / "t.yaml"
    y.write_text("commShareGate: 99.9\n")
    assert main(["analyze", str(rank_dir), "--thresholds", str(y), "--phase", "decode", "--json", str(tmp_path / "o.json")]) == 0
    d = json.loads((tmp_path / "o.json").read_text())
    assert d["verdict"]["kind"] != "communication" and d["phase_override"] == "decode"
    assert d["thresholds"]["commShareGate"]["value"] == 99.9


@pytest.mark.parametrize("case", ["missing", "empty", "not_profile", "bad_csv", "bad_yaml"])
def test_bad_input_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    args = []
    if case == "missing":
        args = [str(tmp_path / "nope")]
    elif case == "empty":
        (tmp_path / "empty").mkdir()
        args = [str(tmp_path / "empty")]
    elif case == "not_profile":
        p = tmp_path / "x.json"
        p.write_text('{"hello": 1}')
        args = [str(p)]
    elif case == "bad_csv":
        d = tmp_path / "r_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
        d.mkdir(parents=True)
        (d / "kernel_details.csv").write_text("Foo,Bar\n1,2\n")
        args = [str(d.parent)]
    else:
        rank_dir = S.write_rank(tmp_path, S.comm_bound_steps())
        y = tmp_path / "t.yaml"
        y.write_text("notAThreshold: 3\n")
        args = [str(rank_dir), "--thresholds", str(y)]
    rc = main(["analyze", *args])
    err = capsys.readouterr().err
    assert rc == 2 and "error:" in err and "Traceback" not in err
