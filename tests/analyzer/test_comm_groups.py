"""Communication by parallel group (issue 28): a SYNTHETIC multi-group Kineto trace built by hand gives exact
seconds per dimension; layouts and groups that do not fit are reported, the rest of the report still produced."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer import analyze
from analyzer.comm_groups import Layout, LayoutError, dimension_group, dimension_of, parse_layout
from analyzer.dataset import load_dataset
from ndval.harness.cli import main
from tests.analyzer.synthetic_kineto import Kernel, collective, write

LAYOUT = parse_layout("tp=2,dp=2,pp=2")  # world 8; rank 0: tp {0,1}, dp {0,2}, pp {0,4}


def _step() -> list[Kernel]:
    """compute [1000, 3000); tp all-reduce [2500, 3500): 500 µs exposed; dp all-reduce [4000, 4800): 800 µs;
    pp send [5000, 5200): 200 µs; an all-reduce over ranks {0, 3} (fits no dimension): 100 µs."""
    return [Kernel(1000.0, 2000.0), *(Kernel(3600.0 + 10 * i, 5.0) for i in range(8)),
            collective(2500.0, 1000.0, nelems=1024, pg_name="0", pg_ranks=[0, 1]),
            collective(4000.0, 800.0, nelems=1024, pg_name="1", pg_ranks=[0, 2]),
            collective(5000.0, 200.0, coll="send", nelems=1024, pg_name="2", pg_ranks=[0, 4], stream=21),
            collective(6000.0, 100.0, nelems=1024, pg_name="odd", pg_ranks=[0, 3], stream=22)]


@pytest.fixture()
def trace(tmp_path: Path) -> Path:
    return write(tmp_path / "rank0.json.gz", [_step(), _step()], rank=0, world=8)


def test_exact_seconds_per_dimension(trace: Path) -> None:
    a = analyze(load_dataset(trace), layout=LAYOUT)
    cg = a.primary.comm_by_group
    assert cg is not None
    assert cg["per_step_exposed_s"] == [
        {"step": s, "tp": 0.0005, "dp": 0.0008, "pp": 0.0002, "unattributed": 0.0001} for s in (1, 2)]
    dims = {g["name"]: (g["dimension"], g["ranks"]) for g in cg["groups"]}
    assert dims == {"0": ("tp", [0, 1]), "1": ("dp", [0, 2]), "2": ("pp", [0, 4]), "odd": (None, [0, 3])}
    (err,) = cg["errors"]
    assert "group odd (ranks [0, 3]) fits no dimension of --layout" in err
    assert any("fits no dimension" in w for w in a.warnings)
    assert a.primary.overall.verdict.kind  # the rest of the report is produced


def test_without_layout_groups_are_named_not_attributed(trace: Path) -> None:
    cg = analyze(load_dataset(trace)).primary.comm_by_group
    assert cg is not None and {g["name"] for g in cg["groups"]} == {"0", "1", "2", "odd"}
    assert {g["dimension"] for g in cg["groups"]} == {None}


def test_world_size_mismatch_is_reported(trace: Path) -> None:
    cg = analyze(load_dataset(trace), layout=parse_layout("tp=2,dp=2")).primary.comm_by_group
    assert cg is not None and "tp·cp·dp·pp = 4 but" in cg["errors"][0] and "world size 8" in cg["errors"][0]
    assert {g["dimension"] for g in cg["groups"]} == {None}


def test_rank_arithmetic_is_megatrons_order() -> None:
    lay = Layout(tp=2, cp=2, dp=4, ep=2, pp=2)
    assert dimension_group(lay, 0, "tp") == {0, 1} and dimension_group(lay, 0, "cp") == {0, 2}
    assert dimension_group(lay, 0, "dp") == {0, 4, 8, 12} and dimension_group(lay, 0, "ep") == {0, 4}
    assert dimension_group(lay, 8, "ep") == {8, 12} and dimension_group(lay, 0, "pp") == {0, 16}
    assert dimension_of(lay, frozenset({0, 4, 8, 12})) == ["dp"] and dimension_of(lay, frozenset({0, 3})) == []


@pytest.mark.parametrize(("text", "rule"), [
    ("tq=2", "unknown layout entry"), ("tp=0", "positive integer"), ("tp=two", "positive integer"),
    ("dp=3,ep=2", "does not divide"),
])
def test_bad_layout_names_the_rule(text: str, rule: str) -> None:
    with pytest.raises(LayoutError, match=rule):
        parse_layout(text)


def test_cli_layout_error_exits_2(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(trace), "--layout", "tp=2,xp=4"]) == 2
    assert "--layout: 'xp=4': unknown layout entry" in capsys.readouterr().err


def test_cli_prints_groups(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(trace), "--layout", "tp=2,dp=2,pp=2"]) == 0
    out = capsys.readouterr().out
    assert "communication by group (exposed s/step, mean): dp 0.0008, pp 0.0002, tp 0.0005" in out


def test_explain_lays_both_sides(profile_path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The shared 16-rank cluster output beside a run file with tp=8, pp=2 (the example Llama run resized)."""
    example = Path(__file__).resolve().parents[2] / "estimator" / "examples" / "llama3-8b-h100.yaml"
    run = tmp_path / "run16.yaml"
    run.write_text(example.read_text(encoding="utf-8").replace("tp: 2", "tp: 8").replace("dp: 2", "dp: 1")
                   .replace("devices: 8", "devices: 16"), encoding="utf-8")
    assert main(["explain", str(run), str(profile_path("ascend/msinsight-cluster-analysis-output"))]) == 0
    out = capsys.readouterr().out
    lines = {ln.split()[0]: ln.split() for ln in out.splitlines() if ln.startswith(("MP_WAIT", "PP_WAIT"))}
    assert lines["MP_WAIT"][1] == "tp" and float(lines["MP_WAIT"][3]) == pytest.approx(0.1261, abs=1e-4)
    assert lines["PP_WAIT"][1] == "pp" and float(lines["PP_WAIT"][3]) == pytest.approx(0.02052, abs=1e-5)
