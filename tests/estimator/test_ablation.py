"""The ablation module and ``ndval ablate`` (seed EXP-1..EXP-4)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from estimator.config.errors import ConfigError
from estimator.experiments import ablation
from estimator.experiments.seed import seed_run
from ndval.harness.cli import main
from ndval.harness.commands import ablate as cli_ablate


def test_direction() -> None:
    assert ablation.direction(1.0, 2.0) == "up"
    assert ablation.direction(2.0, 1.0) == "down"
    assert ablation.direction(1.0, 1.0 + 1e-15) == "same"


def test_parse_experiments() -> None:
    assert cli_ablate.parse_experiments("1..4") == [1, 2, 3, 4]
    assert cli_ablate.parse_experiments("3,1") == [1, 3]
    with pytest.raises(ConfigError, match="--exp"):
        cli_ablate.parse_experiments("5")


def test_sweep_is_cartesian_and_validated() -> None:
    base = seed_run("A")
    points = cli_ablate.sweep_configs(base, ["parallel.ep=2,4,8", "options.ep_comm_overlap=0,0.5"])
    assert len(points) == 6
    assert points[1][0] == "ep=2, ep_comm_overlap=0.5"
    assert base["parallel"]["ep"] == 2  # the caller's dict is not modified
    with pytest.raises(ConfigError, match=r"parallel\.ep"):
        cli_ablate.sweep_configs(base, ["parallel.ep=3"])


def test_with_options_does_not_mutate() -> None:
    cfg = seed_run("A", options={"ep_comm_overlap": 0.5})
    out = ablation.with_options(cfg, {"ep_comm_overlap": 0.1})
    assert cfg["options"]["ep_comm_overlap"] == 0.5 and out["options"]["ep_comm_overlap"] == 0.1


def test_cli_ablate_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run.yaml"
    run.write_text(yaml.safe_dump(seed_run("B")), encoding="utf-8")
    assert main(["ablate", str(run), "--exp", "1..4", "--sweep", "parallel.ep=2,4,8"]) == 0
    out = capsys.readouterr().out
    for header in ("EXP-1", "EXP-2", "EXP-3", "EXP-4"):
        assert header in out
    assert "ep=8" in out and "direction" in out and "straggler stage" in out


def test_cli_ablate_seed_configs_exp1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ablate", "--seed-configs", "--exp", "1", "--preset", "legacy"]) == 0
    out = capsys.readouterr().out
    rows = {m["config"]: m for m in (_EXP1_ROW.match(line) for line in out.splitlines()) if m}
    assert sorted(rows) == ["A", "B", "C", "D", "E", "F"]
    for label, m in rows.items():
        ep, tp = int(m["ep"]), int(m["tp"])
        before, after = float(m["before"]), float(m["after"])
        assert m["direction"] == "up", label
        # legacy leaves EP_COMM in bytes (seed P4). 1F1B with pp = 2: BUBBLE = (pp − 1) × one micro-batch of
        # the other stage (layers 0-5: layer 0 dense, 5 MoE) over fw + bw + recompute (3 passes). Per MoE
        # layer and pass, seed balanced all-to-all: 2·k·T·(ep−1)/ep·h·2 B, k = 4, T = s·b = 8192, h = 2048.
        ep_bytes = 3 * 5 * 2 * 4 * 8192 * (ep - 1) / ep * 2048 * 2
        assert after - before == pytest.approx(ep_bytes, rel=1e-3), label  # the table prints 4 digits
        # EP removed, the bubble no longer depends on EP: one value per TP
        assert before == float(rows["A" if tp == 1 else "D"]["before"]), label


_EXP1_ROW = re.compile(r"^(?P<config>[A-F])\s+(?P<ep>\d+)\s+(?P<tp>\d+)\s+(?P<dp>\d+)\s+BUBBLE\s+"
                       r"(?P<before>\S+)\s+(?P<after>\S+)\s+(?P<direction>up|down|same)\s")


def test_cli_ablate_bad_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run.yaml"
    run.write_text(yaml.safe_dump(seed_run("B")), encoding="utf-8")
    assert main(["ablate", str(run), "--sweep", "parallel.ep=3"]) == 2
    assert "parallel.ep" in capsys.readouterr().err


def test_exp3_leaves_out_a_dp_invalid_for_the_fixed_ep(capsys: pytest.CaptureFixture[str]) -> None:
    cfg = seed_run("C")  # EP 8, TP 1: dp = 4 gives dp·tp·cp = 4, which ep = 8 does not divide
    assert not ablation.dp_fits_ep(cfg["parallel"], 4) and ablation.dp_fits_ep(cfg["parallel"], 8)
    rows = ablation.exp3_dp_varied(cfg, [4, 8, 16], ablation.legacy_seconds())
    assert [(r.label, r.dp) for r in rows] == [("dp=16", 16)]
    assert main(["ablate", "--seed-configs", "--exp", "3"]) == 0
    out = capsys.readouterr().out
    assert "[C]\n(dp [4] left out" in out and "[B]\nconfig" in out


def test_cli_ablate_prints_one_row_per_config_and_experiment(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ablate", "--seed-configs", "--exp", "1,2,4"]) == 0
    out = capsys.readouterr().out
    exp1, rest = out.split("EXP-2", 1)
    exp2, exp4 = rest.split("EXP-4", 1)
    for table in (exp1, exp2):  # six configs, BUBBLE before/after and its direction
        assert sum(1 for line in table.splitlines() if " BUBBLE " in line) == 6
    assert sum(1 for line in exp4.splitlines() if line[:1] in "ABCDEF" and line.strip()) == 6
