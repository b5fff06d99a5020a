"""The ndval subcommands of the harness: add-case, lint, schema, signoff, report (synthetic inputs)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
import yaml

from ndval.core.yamlsrc import load_located
from ndval.harness import cli, paths
from ndval.harness.cases import case_json_schema, iter_case_files
from ndval.harness.gate import EXIT_BROKEN_INPUT, EXIT_PASS

#: a synthetic spreadsheet: made-up configs of the bundled scaled-down DeepSeek-V3 model
SYNTHETIC_ROWS = [("syn-a", 2, 1, 16, 2, 10000.0), ("syn-b", 4, 2, 8, 2, 6000.0)]


#: what a scaffold must be told (no default fits every team)
MODEL_ARGS = ["--model", "models/deepseek-v3-mini.yaml", "--profile", "sapp-nd", "--hardware", "ascend-910b"]


def test_add_case_has_no_team_default_and_lists_valid_values(tmp_path: Path, capsys) -> None:
    src = _csv(tmp_path / "peaks.csv", "config,ep,tp,dp,pp,measured_peak_mb")
    with pytest.raises(SystemExit) as info:
        cli.main(["add-case", "--from", str(src)])
    assert info.value.code == 2 and "--model" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["add-case", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "models/llama3-8b.yaml" in text and "fsdp2" in text and "h100-80g" in text
    root = _tree(tmp_path)
    assert cli.main(["add-case", "--from", str(src), "--cases-dir", str(root), "--model", "models/deepseek-v3-mini.yaml",
                     "--profile", "megatron", "--hardware", "tpu-v9"]) == EXIT_BROKEN_INPUT
    assert "valid: " in capsys.readouterr().err


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "validation_cases"
    (root / "models").mkdir(parents=True)
    shutil.copyfile(paths.REPO_ROOT / "validation_cases" / "models" / "deepseek-v3-mini.yaml",
                    root / "models" / "deepseek-v3-mini.yaml")
    return root


def _csv(path: Path, header: str) -> Path:
    lines = [header] + [",".join(map(str, r)) for r in SYNTHETIC_ROWS]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _xlsx(path: Path, header: list[str]) -> Path:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.append(header)
    for r in SYNTHETIC_ROWS:
        ws.append(list(r))
    wb.save(path)
    return path


@pytest.mark.parametrize("kind", ["csv", "xlsx"])
def test_add_case_scaffolds_a_case_that_lints_and_runs(kind: str, tmp_path: Path, pytester: pytest.Pytester, capsys) -> None:
    root = _tree(pytester.path)
    header = ["Config ID", "EP", "TP", "DP", "PP", "Measured Peak (MB)"]
    src = _csv(tmp_path / "synthetic_peaks.csv", ",".join(header)) if kind == "csv" else _xlsx(tmp_path / "synthetic_peaks.xlsx", header)
    rc = cli.main(["add-case", "--from", str(src), "--cases-dir", str(root), "--owner", "qa", *MODEL_ARGS])
    out = capsys.readouterr().out
    assert rc == EXIT_PASS, out
    case = root / "estimator" / "synthetic_peaks.case.yaml"
    assert case.is_file() and (root / "estimator" / src.name).is_file()
    assert f"lint: {len(SYNTHETIC_ROWS)} item(s) valid, 0 error(s)" in out and "sha256:" in out  # one per row
    assert "per_row: config" in out and "waiver.points" in out
    assert yaml.safe_load(case.read_text(encoding="utf-8"))["data"]["per_row"] == "config"
    assert cli.main(["lint", str(root)]) == EXIT_PASS
    result = pytester.runpytest("validation_cases")
    outcomes = result.parseoutcomes()
    n_items = outcomes.get("passed", 0) + outcomes.get("failed", 0)
    assert n_items == len(SYNTHETIC_ROWS) and "errors" not in outcomes, result.stdout.str()


def test_add_case_names_a_missing_or_misspelt_column(tmp_path: Path, capsys) -> None:
    root = _tree(tmp_path)
    src = _csv(tmp_path / "bad.csv", "config,ep,tpp,dp,pp,measured_peak_mb")
    assert cli.main(["add-case", "--from", str(src), "--cases-dir", str(root), *MODEL_ARGS]) == EXIT_BROKEN_INPUT
    err = capsys.readouterr().err
    assert "missing column 'tp'" in err and "did you mean 'tpp'?" in err
    src = _csv(tmp_path / "bad2.csv", "config,ep,tp,dp,pp,peak")
    assert cli.main(["add-case", "--from", str(src), "--cases-dir", str(root), *MODEL_ARGS]) == EXIT_BROKEN_INPUT
    assert "missing column 'measured_mb'" in capsys.readouterr().err


def test_schema_validates_every_bundled_case(capsys) -> None:
    # jsonschema is a dev extra (jsonschema>=4): a missing one is an error here, not a skip
    assert cli.main(["schema"]) == EXIT_PASS
    schema = json.loads(capsys.readouterr().out)
    assert schema == json.loads(json.dumps(case_json_schema(), default=str))
    validator = jsonschema.Draft202012Validator(schema)
    files = iter_case_files(paths.cases_dir())
    assert files, "no bundled cases"
    n_cases = 0
    for f in files:
        data = json.loads(json.dumps(load_located(f, paths.cases_dir()).data, default=str))
        errors = sorted(validator.iter_errors(data), key=str)
        assert not errors, f"{f}: {errors[0].message}"
        n_cases += len(data["cases"]) if "cases" in data else 1
    assert n_cases >= len(files)
    # the declared calibration step is part of the schema: a misspelt knob is rejected
    vtrain = json.loads(json.dumps(load_located(paths.cases_dir() / "estimator" / "measured_step_time.case.yaml",
                                                paths.cases_dir()).data, default=str))
    case = next(c for c in vtrain["cases"] if c["id"] == "step-vtrain")
    assert case["params"]["calibrate"]["fit"] == "compute_efficiency"
    case["params"]["calibrate"]["fit"] = "efficiency"
    assert list(validator.iter_errors(vtrain))
    bad = {"id": "x", "title": "t", "kind": "recorded.results", "owner": "o", "severity": "fatal", "source": "s",
           "expect": [{"type": "ratio_within", "estimate": "e", "measured": "m", "lo": 1, "hi": 2}]}
    assert list(validator.iter_errors(bad))


def test_lint_accepts_every_bundled_case(capsys) -> None:
    assert cli.main(["lint"]) == EXIT_PASS, capsys.readouterr().out


def test_report_says_what_is_missing_without_node(monkeypatch, tmp_path: Path, capsys) -> None:
    (tmp_path / "allure-results").mkdir()
    (tmp_path / "allure-results" / "x-result.json").write_text("{}")
    monkeypatch.setenv("NDVAL_REPORTS_DIR", str(tmp_path))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.delenv("NDVAL_ALLURE", raising=False)
    assert cli.main(["report"]) == EXIT_BROKEN_INPUT
    out = capsys.readouterr().out
    assert "node not found" in out and "ndval report" in out and "signoff.html" in out


def test_signoff_command_renders_from_a_summary(pytester: pytest.Pytester, cases, tmp_path: Path, capsys) -> None:
    from .conftest import synthetic_case

    cases("recorded/s.case.yaml", synthetic_case("synthetic-signoff"))
    pytester.runpytest("validation_cases")
    out = tmp_path / "so.md"
    assert cli.main(["signoff", "--summary", str(pytester.path / "reports" / "summary.json"), "--out", str(out)]) == 0
    text = out.read_text()
    # every section of spec §6
    for section in ("Release identity and provenance", "Environment", "Scope", "## 4. Gate", "Seed acceptance criteria",
                    "Per-criterion statistics", "Plots", "Regressions against the baseline", "Golden drift",
                    "Waivers and known issues", "Artifacts", "How to reproduce", "Approval"):
        assert section in text, section
    assert "| summary.json |" in text or "summary.json" in text.split("## 14. Artifacts", 1)[1]
    assert out.with_suffix(".html").read_text().startswith("<!doctype html>")


def _allure_available() -> bool:
    """Node.js present and the Allure 3 CLI already installed locally or in the npx cache (no download in tests)."""
    if not shutil.which("node"):
        return False
    if (paths.REPO_ROOT / "node_modules" / ".bin" / "allure").exists():
        return True
    return any(Path.home().glob(".npm/_npx/*/node_modules/allure/package.json"))


@pytest.mark.skipif(not _allure_available(), reason="Node.js or a cached Allure 3 CLI (npm 'allure') not available")
def test_report_renders_allure_html(pytester: pytest.Pytester, cases, monkeypatch, capsys) -> None:
    from .conftest import synthetic_case

    cases("recorded/a.case.yaml", synthetic_case("synthetic-allure-html"))
    pytester.runpytest("validation_cases", "--alluredir", "reports/allure-results")
    monkeypatch.setenv("NDVAL_REPORTS_DIR", str(pytester.path / "reports"))
    assert cli.main(["report"]) == EXIT_PASS, capsys.readouterr().out
    index = (pytester.path / "reports" / "allure-report" / "index.html").read_text(encoding="utf-8")
    assert "<html" in index.lower() and "allure" in index.lower()


def test_validate_holds_a_lock_on_its_reports_folder(tmp_path: Path) -> None:
    import fcntl

    from ndval.harness.commands.validate import reports_lock

    # a second run on the same folder would wait here
    with reports_lock(tmp_path), (tmp_path / ".validate.lock").open("a+") as other, pytest.raises(BlockingIOError):
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with (tmp_path / ".validate.lock").open("a+") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released after the run
