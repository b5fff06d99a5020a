"""The gate rule for lost real-data evidence (issue 13): ``ndval validate`` (what ``make validate`` runs) with
the shared folder pointed at an empty directory fails in CI mode (``NDVAL_REQUIRE_REAL_DATA=1``), exit 2,
naming the items skipped for missing data, and otherwise passes with a notice that says what is missing.

The project's own cases run here against no data at all: nothing under ../shared is read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ndval.harness import paths
from ndval.harness.gate import EXIT_BROKEN_INPUT, EXIT_PASS

DATA_ENV = ("NDVAL_SHARED_DIR", "NDVAL_PROFILES_DIR", "NDVAL_MEASURED_DIR", "NDVAL_REPORTS_DIR", "NDVAL_REQUIRE_REAL_DATA",
            "NDVAL_PROJECT_ROOT")


def _validate(tmp_path: Path, required: bool, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    empty = tmp_path / "empty-shared"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in DATA_ENV and not k.startswith("PYTEST_")}
    env |= {"NDVAL_SHARED_DIR": str(empty), "NDVAL_REQUIRE_REAL_DATA": "1" if required else "0"}
    reports = tmp_path / "reports"
    proc = subprocess.run([sys.executable, "-m", "ndval.harness.cli", "validate", "-n", "0", "--no-allure-report",
                           "--reports", str(reports), *args], cwd=paths.REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=900, check=False)
    partial = reports / "partial" / "summary.json"
    summary = json.loads((partial if partial.is_file() else reports / "summary.json").read_text(encoding="utf-8"))
    return proc, summary


def _rule(summary: dict) -> dict:
    return next(r for r in summary["gate"]["rules"] if r["rule"] == "real data present")


def test_validate_without_shared_data_fails_in_ci_mode_naming_the_lost_items(tmp_path: Path) -> None:
    proc, summary = _validate(tmp_path, required=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode == EXIT_BROKEN_INPUT, out[-3000:]
    rule = _rule(summary)
    skipped = sorted(c["nodeid"] for c in summary["cases"] if c["status"] == "skipped")
    assert rule["status"] == "fail" and sorted(rule["items"]) == skipped and len(skipped) >= 10
    assert any("real_samples_analysis.case.yaml::" in i for i in skipped)  # the analyzer's real profiles
    assert any("measured_memory.case.yaml::" in i for i in skipped)  # the published measurements
    assert "[FAIL] real data present" in out
    for item in rule["items"][:20]:  # the console names them
        assert item in out
    assert "gate verdict: BROKEN INPUT (exit 2)" in out


def test_validate_without_shared_data_passes_with_a_notice_otherwise(tmp_path: Path) -> None:
    proc, summary = _validate(tmp_path, False, "--cases", "analyzer/real_samples_analysis*", "--cases", "recorded/*")
    out = proc.stdout + proc.stderr
    assert proc.returncode == EXIT_PASS, out[-3000:]
    rule = _rule(summary)
    assert rule["status"] == "pass" and rule["actual"] == len(rule["items"]) > 0
    assert f"NOTICE: {rule['actual']} item(s) skipped for missing real data" in out
    assert "NDVAL_REQUIRE_REAL_DATA=1" in out
