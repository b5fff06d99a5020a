"""Every import / models / estimate-from-a-file command of README "Using it" runs as written (exit 0)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from ndval.harness import cli, paths

README = paths.REPO_ROOT / "README.md"


def _commands() -> list[str]:
    block = README.read_text(encoding="utf-8").split("## Using it", 1)[1].split("\n## ", 1)[0]
    lines = [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.startswith(".venv/bin/ndval ")]
    return [line for line in lines if re.match(r"\.venv/bin/ndval (import|models)\b", line)
            or (" --model " in line and "estimate" in line) or "--from-" in line]


def test_the_readme_shows_one_import_per_source() -> None:
    text = " ".join(_commands())
    for option in ("--hf-config", "--from-megatron", "--from-torchtitan", "--from-mindformers", "estimate", "models"):
        assert option in text, option


@pytest.mark.parametrize("command", _commands())
def test_readme_import_command_runs(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(paths.REPO_ROOT)
    argv = [word.replace("/tmp/", f"{tmp_path}/") for word in shlex.split(command)[1:]]
    assert cli.main(argv) == 0, capsys.readouterr().err
