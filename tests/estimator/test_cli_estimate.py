"""``ndval estimate``: tables, JSON, overrides, presets, and ConfigError without a traceback."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

import estimator
from ndval.harness.commands import estimate as cli_estimate

EXAMPLES = Path(estimator.__file__).parent / "examples"


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    cli_estimate.add_arguments(parser)
    return cli_estimate.run(parser.parse_args(argv))


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run([str(EXAMPLES / "deepseek-v3-mini-A.yaml")]) == 0
    out = capsys.readouterr().out
    assert "tp_shardable_overhead" in out and "peak" in out and "on stage 1" in out


def test_json_with_overrides_and_preset(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(EXAMPLES / "deepseek-v3-mini-A.yaml"), "--json", "--preset", "legacy",
            "--set", "parallel.ep=4"]
    assert _run(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    stages = doc["memory"]["stages"]
    assert [s["components"]["tp_shardable_overhead"] for s in stages] == [0.0, 0.0]  # legacy: no overhead
    assert doc["memory"]["peak_mb"] == max(s["total_mb"] for s in stages)


def test_config_error_exit_2_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(EXAMPLES / "deepseek-v3-mini-A.yaml"), "--set", "parallel.tp=3"]
    assert _run(argv) == cli_estimate.EXIT_CONFIG_ERROR
    err = capsys.readouterr().err
    assert "parallel.tp" in err and "must divide model.num_attention_heads" in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_unknown_field_via_subprocess_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text((EXAMPLES / "llama3-8b-h100.yaml").read_text().replace("micro_batch_size", "micro_bach_size"))
    code = (
        "import argparse, sys; from ndval.harness.commands import estimate as cli_estimate; p = argparse.ArgumentParser(); "
        "cli_estimate.add_arguments(p); sys.exit(cli_estimate.run(p.parse_args(sys.argv[1:])))"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(bad)], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "train.micro_bach_size: unknown field (did you mean 'micro_batch_size'?)" in proc.stderr
    assert f"{bad}:" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_bundled_examples_run(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run([str(EXAMPLES / name), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["memory"]["peak_mb"] > 0


#: the issue's invalid configs, as overrides of a bundled example: (overrides, field, rule text)
INVALID = [
    (["parallel.tp=3"], "parallel.tp", "must divide model.num_attention_heads"),
    (["parallel.ep=3", "parallel.dp=48", "hardware.devices=96"], "parallel.ep", "must divide model.num_experts"),
    (["parallel.dp=8"], "parallel", "does not match hardware.devices"),
    (["parallel.tpp=2"], "parallel.tpp", "unknown field (did you mean 'tp'?"),
    (["options.safety_buffer_mb=-1"], "options.safety_buffer_mb", "greater than or equal to 0"),
]


@pytest.mark.parametrize(("overrides", "field", "rule"), INVALID, ids=[i[1] for i in INVALID])
def test_ndval_estimate_invalid_config_one_line_exit_2(
    overrides: list[str], field: str, rule: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the ``ndval`` dispatcher (what the console script calls): one line, no traceback."""
    from ndval.harness.cli import main

    argv = ["estimate", str(EXAMPLES / "deepseek-v3-mini-A.yaml")]
    for item in overrides:
        argv += ["--set", item]
    assert main(argv) == cli_estimate.EXIT_CONFIG_ERROR
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{field}: " in captured.err and rule in captured.err
    assert "Traceback" not in captured.err and captured.err.count("\n") == 1


def test_console_script_entry_point() -> None:
    """The installed ``ndval`` entry (``ndval.harness.cli:main``) exits non-zero without a traceback."""
    proc = subprocess.run(
        [sys.executable, "-m", "ndval.harness.cli", "estimate", str(EXAMPLES / "deepseek-v3-mini-A.yaml"),
         "--set", "options.safety_buffer_mb=-1"],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == cli_estimate.EXIT_CONFIG_ERROR
    assert "options.safety_buffer_mb" in proc.stderr and "Traceback" not in proc.stderr
