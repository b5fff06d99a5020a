"""Every YAML read through the alias- and depth-limited loader; YAML 1.2 scalars for ``--set``; configuration
inputs must be regular files (issue: "hangs" — a 400-byte thresholds YAML of nested aliases grew to 1.7 GB;
``estimate /dev/zero`` or a FIFO read until killed; "silent wrong answers" — ``--set parallel.tp=010`` / ``true`` /
``1:0`` became 8, 1 and 60; "tracebacks" — ``--set x=[[…5000 deep]]`` a RecursionError; a golden that is a folder)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from estimator.config.errors import ConfigError
from estimator.config.loading import parse_override
from ndval.core.yamlsrc import CaseError, parse_text

REPO = Path(__file__).parents[2]
LLAMA = REPO / "estimator" / "examples" / "llama3-8b-h100.yaml"
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(8))


@pytest.mark.parametrize(("raw", "value"), [("010", 10), ("1:0", "1:0"), ("yes", "yes"), ("true", True),
                                            ("0o17", 15), ("0x10", 16), ("2", 2), ("1.5", 1.5), ("on", "on")])
def test_set_values_are_yaml_1_2_scalars(raw: str, value: object) -> None:
    """``--set parallel.tp=010`` was octal 8, ``1:0`` sexagesimal 60, ``yes`` true (YAML 1.1)."""
    assert parse_override(f"parallel.tp={raw}") == ("parallel.tp", value)


def test_set_deep_nesting_is_a_clear_error_not_a_recursion_error() -> None:
    with pytest.raises(ConfigError, match="nested deeper than"):
        parse_override("x=" + "[" * 5000 + "]" * 5000)


def test_set_alias_bomb_is_refused() -> None:
    flow = "{" + LAUGHS.replace("\n", ", ").rstrip(", ") + "}"
    with pytest.raises(ConfigError, match="aliases are expanded"):
        parse_override("x=" + flow)


def test_thresholds_nested_aliases_refused_fast(tmp_path: Path) -> None:
    """``analyze --thresholds`` with a ~400-byte alias bomb: one clear error within a second, not 1.7 GB."""
    from analyzer.thresholds import ThresholdError, load_overrides

    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(LAUGHS)
    t0 = time.perf_counter()
    with pytest.raises(ThresholdError, match="aliases are expanded"):
        load_overrides(bomb)
    assert time.perf_counter() - t0 < 5


def test_overlay_nested_aliases_refused(tmp_path: Path) -> None:
    from estimator.inputs.overlay import read_overlay

    bomb = tmp_path / "overlay.yaml"
    bomb.write_text(LAUGHS)
    with pytest.raises(ConfigError, match="aliases are expanded"):
        read_overlay(bomb)


def test_parse_text_limits_and_safe_tags() -> None:
    with pytest.raises(CaseError, match="invalid value"):
        parse_text("x: !!python/name:os.system")
    with pytest.raises(CaseError, match="nested deeper"):
        parse_text("[" * 100 + "]" * 100)


def _estimate(path: Path, timeout_s: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ndval.harness.cli", "estimate", str(path)], capture_output=True,
                          text=True, timeout=timeout_s, check=False, cwd=REPO)


def test_estimate_fifo_config_is_refused_without_hanging(fifo: Path) -> None:
    """A FIFO config was read until killed (no writer ever comes here: a hang would hit the timeout)."""
    proc = _estimate(fifo)
    assert proc.returncode == 2, proc.stderr
    assert "FIFO" in proc.stderr and "Traceback" not in proc.stderr


def test_estimate_character_device_config_is_refused(null_device: Path) -> None:
    """``estimate /dev/zero`` read forever; a device node (made under tmp) is refused up front."""
    proc = _estimate(null_device)
    assert proc.returncode == 2 and "device" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_golden_that_is_a_folder_breaks_one_item_in_one_line(pytester: pytest.Pytester) -> None:
    from tests.faults.test_golden_collisions import _case, _write

    case = _write(pytester.path, "recorded/g.case.yaml", _case("solo"))
    (pytester.path / "golden" / "recorded" / "g" / "solo.yaml").mkdir(parents=True)
    result = pytester.runpytest("validation_cases", "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "1 broken" in out and "is a folder, not a regular file" in out and "IsADirectoryError" not in out, out[-3000:]
    assert case.is_file()


def _interrupted(code: str) -> str:
    """Run ``code`` on the Llama example, SIGINT it once it prints ``ready`` (inside the command), and return its
    stderr after asserting exit 130."""
    proc = subprocess.Popen([sys.executable, "-c", code, str(LLAMA)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    return err


def test_sigint_stops_a_long_estimate_cleanly(tmp_path: Path) -> None:
    """Every long command stops cleanly on SIGINT: one line, exit 130, no KeyboardInterrupt traceback."""
    code = textwrap.dedent("""\
        import sys, time
        from ndval.harness import cli
        from ndval.harness.commands import estimate
        estimate.run = lambda args: (print("ready", flush=True), time.sleep(60))
        sys.exit(cli.main(["estimate", sys.argv[1]]))
        """)
    err = _interrupted(code)
    assert "interrupted" in err and "Traceback" not in err, err


def test_sigint_stops_a_long_search_cleanly() -> None:
    """A long ``search`` (the issue: Ctrl-C gave a traceback) stops on SIGINT in the middle of its sweep: one line,
    exit 130. The pricing of each layout is slowed (the real sweep loop, the real command otherwise)."""
    code = textwrap.dedent("""\
        import sys, time
        from estimator.search import run
        from ndval.harness import cli
        real = run.evaluate
        def slow(*args, **kwargs):
            print("ready", flush=True)
            time.sleep(0.5)
            return real(*args, **kwargs)
        run.evaluate = slow
        sys.exit(cli.main(["search", sys.argv[1], "--devices", "8", "--scalar", "--no-progress"]))
        """)
    err = _interrupted(code)
    assert "ndval search: interrupted (SIGINT)" in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) <= 2, err


@pytest.mark.parametrize("option", ["--hf-config", "--from-megatron", "--from-torchtitan", "--from-mindformers"])
def test_import_from_a_fifo_is_refused_without_hanging(option: str, fifo: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """``ndval import --hf-config FIFO`` read until killed (the importers read any path); now exit 2, one line."""
    from ndval.harness.cli import main

    assert main(["import", option, str(fifo)]) == 2
    err = capsys.readouterr().err
    assert str(fifo) in err and ("is a FIFO" in err or "not a regular file" in err) and "Traceback" not in err, err


def test_add_case_from_a_fifo_names_it_not_not_found(fifo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ndval.harness.cli import main

    assert main(["add-case", "--from", str(fifo), "--cases-dir", str(fifo.parent / "cases"), "--model",
                 "models/llama3-8b.yaml", "--profile", "megatron", "--hardware", "h100-80g"]) == 2
    err = capsys.readouterr().err
    assert "is not a regular file" in err and "not found" not in err, err
