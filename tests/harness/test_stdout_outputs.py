"""``-`` means standard output for every output option of every command: the document goes to stdout, the
console lines to stderr, and no file is created (no file named ``-`` above all).

Every option of every subcommand whose help offers ``'-'`` must appear in ``CALLS`` below, and every option
that writes a file must offer it (checked over the parsers, so a new output option cannot skip the rule).
Inputs: the shared Kineto samples (skipped when absent), the bundled example run configuration, and a
synthetic summary / Allure result written by a pytester run of a synthetic case.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ndval.harness import cli, paths

from .conftest import synthetic_case

REPO = paths.REPO_ROOT
EXAMPLE = REPO / "estimator" / "examples" / "deepseek-v3-mini-A.yaml"
BEFORE = "kineto/hta-tests/trace_compare/base/base.json.gz"
AFTER = "kineto/hta-tests/trace_compare/test/test.json.gz"
SEARCH = ["search", str(EXAMPLE), "--devices", "16", "--space", "parallel.tp=1,2", "--space", "parallel.pp=1",
          "--no-progress", "--top", "3"]

#: (command, option) -> (argv with {before}/{after}/{summary} placeholders, check of the stdout bytes)
CALLS: dict[tuple[str, str], tuple[list[str], Callable[[bytes], bool]]] = {
    ("analyze", "--json"): (["analyze", "{after}", "--json", "-"], lambda b: "ranks" in json.loads(b)),
    ("analyze", "--markdown"): (["analyze", "{after}", "--markdown", "-"], lambda b: b.lstrip().startswith(b"#")),
    ("analyze", "--html"): (["analyze", "{after}", "--html", "-"], lambda b: b"<html" in b[:500].lower()),
    ("compare", "--json"): (["compare", "{before}", "{after}", "--json", "-"], lambda b: "headline" in json.loads(b)),
    ("compare", "--markdown"): (["compare", "{before}", "{after}", "--markdown", "-"], lambda b: b.lstrip().startswith(b"#")),
    ("compare", "--html"): (["compare", "{before}", "{after}", "--html", "-"], lambda b: b"<html" in b[:500].lower()),
    ("calibrate", "--output"): (["calibrate", "--from-profile", "{after}", "--hardware", "a100-80g", "-o", "-"],
                                lambda b: b"efficiency:" in b),
    ("search", "--json"): ([*SEARCH, "--json", "-"], lambda b: "ndval_version" in json.loads(b)),
    ("search", "--csv"): ([*SEARCH, "--csv", "-"], lambda b: b.count(b"\n") > 1 and b"," in b.splitlines()[0]),
    ("search", "--parquet"): ([*SEARCH, "--parquet", "-"], lambda b: b[:4] == b"PAR1"),
    ("search", "--plot"): ([*SEARCH, "--plot", "-"], lambda b: b"<svg" in b),
    ("signoff", "--out"): (["signoff", "--summary", "{summary}", "--out", "-"],
                           lambda b: b.startswith(b"# ") and b"release sign-off" in b.splitlines()[0]),
    ("signoff", "--html"): (["signoff", "--summary", "{summary}", "--out", "-", "--html", "-"],
                            lambda b: b"<!doctype html>" in b),
    ("report", "--out"): (["report", "--results", "{results}", "--out", "-"], lambda b: b"fake allure report" in b),
    ("import", "--output"): (["import", "--hf-config", str(REPO / "tests" / "data" / "hf_configs" / "qwen3-30b-a3b.json"),
                              "-o", "-"], lambda b: b"model:" in b),
}

#: output options that name a folder or are flags printing to stdout already (not files)
NOT_FILES = {("validate", "--reports"), ("add-case", "--dir"), ("add-case", "--cases-dir")}


def _options(command: str) -> dict[str, str]:
    parser = cli.build_parser(command)
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return {a.option_strings[-1]: (a.help or "") for a in sub.choices[command]._actions if a.option_strings}


def test_every_output_option_takes_dash_and_is_tested() -> None:
    offering = set()
    for command in cli.SUBCOMMANDS:
        for option, help_text in _options(command).items():
            writes = help_text.startswith(("write", "output", "overlay file", "Markdown output", "HTML output"))
            if "'-'" in help_text or "stdout" in help_text:
                offering.add((command, option))
            elif writes and (command, option) not in NOT_FILES:
                pytest.fail(f"ndval {command} {option} writes a file but does not take '-' for stdout")
    assert offering == set(CALLS), offering ^ set(CALLS)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A synthetic summary.json and Allure results (from a direct pytest run of one synthetic case)."""
    root = tmp_path_factory.mktemp("stdout-inputs")
    (root / "validation_cases" / "recorded").mkdir(parents=True)
    (root / "validation_cases" / "recorded" / "s.case.yaml").write_text(synthetic_case("stdout-case"))
    import subprocess

    env = {**os.environ, "PYTEST_ADDOPTS": "-p no:hypothesispytest -p no:randomly -p no:xdist"}
    env.pop("NDVAL_REPORTS_DIR", None)
    subprocess.run([sys.executable, "-m", "pytest", "validation_cases", "-q", "--alluredir=reports/allure-results",
                    "-p", "no:cacheprovider"], cwd=root, env=env, capture_output=True, check=False, timeout=300)
    assert (root / "reports" / "summary.json").is_file()
    return {"summary": str(root / "reports" / "summary.json"), "results": str(root / "reports" / "allure-results")}


FAKE_ALLURE = """\
import sys
from pathlib import Path
out = Path(sys.argv[sys.argv.index("-o") + 1])
out.mkdir(parents=True, exist_ok=True)
(out / "index.html").write_text("<html>fake allure report</html>")
"""


@pytest.mark.parametrize(("command", "option"), sorted(CALLS))
def test_dash_writes_stdout_and_no_file(command: str, option: str, inputs: dict[str, str], profiles_dir: Path,
                                        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    argv, check = CALLS[(command, option)]
    values = {**inputs, "before": str(profiles_dir / BEFORE), "after": str(profiles_dir / AFTER)}
    if not Path(values["after"]).exists():
        pytest.skip(f"profile sample {AFTER} not available")
    fake = tmp_path.parent / f"{tmp_path.name}-fake_allure.py"
    fake.write_text(FAKE_ALLURE)
    monkeypatch.setenv("NDVAL_ALLURE", f"{sys.executable} {fake}")
    monkeypatch.setenv("NDVAL_REPORTS_DIR", str(tmp_path / "reports"))
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    before = {p for p in tmp_path.rglob("*")}
    rc = cli.main([a.format(**values) for a in argv])
    out, err = capfdbinary.readouterr()
    assert rc == 0, err.decode()[-2000:]
    assert check(out), out[:300]
    created = {p for p in tmp_path.rglob("*")} - before
    assert not created, sorted(map(str, created))
    assert not (work / "-").exists() and not (REPO / "-").exists()


def test_validate_refuses_dash_for_its_reports_folder(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["validate", "--reports", "-"]) == 2
    assert "--reports names a folder" in capsys.readouterr().err


def test_estimate_json_carries_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    from ndval.core.version import ndval_version

    assert cli.main(["estimate", str(EXAMPLE), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ndval_version"] == ndval_version()


def test_estimate_finds_model_ref_in_the_projects_cases_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A run file outside the cases tree names ``models/team.yaml``, which lives in the project's own cases
    folder (``[tool.ndval] cases``), not beside the run file nor in ndval's bundled cases."""
    import yaml

    (tmp_path / "pyproject.toml").write_text('[tool.ndval]\ncases = "checks"\n')
    bundled = yaml.safe_load((REPO / "validation_cases" / "models" / "deepseek-v3-mini.yaml").read_text())
    (tmp_path / "checks" / "models").mkdir(parents=True)
    model = bundled.get("model", bundled)
    (tmp_path / "checks" / "models" / "team.yaml").write_text(yaml.safe_dump({**model, "name": "team-model"}))
    run = yaml.safe_load(EXAMPLE.read_text())
    run["model"] = {"ref": "models/team.yaml"}
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "run.yaml").write_text(yaml.safe_dump(run))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NDVAL_PROJECT_ROOT", raising=False)
    assert cli.main(["estimate", "runs/run.yaml"]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith("team-model:")


def test_run_options_apply_to_a_run_file(capsys: pytest.CaptureFixture[str]) -> None:
    """``--hardware`` / ``--world-size`` with a RUN.yaml set ``hardware.preset`` / ``hardware.devices`` (they had
    been read by the launch-file imports only, and ignored here); an unknown preset names ``hardware.preset``."""
    run = REPO / "estimator" / "examples" / "llama3-8b-h100.yaml"
    assert cli.main(["estimate", str(run), "--hardware", "h800", "--world-size", "16", "--set", "parallel.dp=4"]) == 0
    assert "tp=2 pp=2 dp=4 cp=1 ep=1, hardware h800" in capsys.readouterr().out  # 16 devices: 2·2·4
    assert cli.main(["estimate", str(run), "--hardware", "gh200"]) == 2
    assert "hardware.preset: unknown preset 'gh200'" in capsys.readouterr().err


def test_import_of_a_model_refuses_run_options(capsys: pytest.CaptureFixture[str]) -> None:
    config = REPO / "tests" / "data" / "hf_configs" / "llama3-8b.json"
    assert cli.main(["import", "--hf-config", str(config), "--hardware", "h100-80g"]) == 2
    assert "--hardware describe a run" in capsys.readouterr().err
