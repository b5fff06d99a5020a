"""Allure: plugin objects (registered only when on; run files never on xdist workers), the Allure 3
configuration (waived items under "Waived"), the single-file report with history kept between runs, and
that file opened in headless Chromium (skipped with the reason without an Allure 3 command line or a
browser: ``make browser``). The cases are synthetic."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ndval.harness import allure
from ndval.harness.commands import report

from .conftest import synthetic_case

WAIVER = "waiver: {reason: synthetic known failure, owner: qa, expires: 2099-01-01, issue: QA-1}\n"


def _local_allure() -> list[str] | None:
    """An Allure 3 command line that needs no download (``$NDVAL_ALLURE``, node_modules, PATH, npx cache)."""
    cmd = report.allure_command(allow_download=False)
    if cmd is None and shutil.which("npx") and any(Path.home().glob(".npm/_npx/*/node_modules/allure/package.json")):
        cmd = ["npx", "--yes", report.ALLURE_NPM]
    return cmd


def _categories(index: Path) -> dict[str, dict[str, Any]]:
    """Category name -> statistic, read from the data the single-file report embeds."""
    html = index.read_text(encoding="utf-8")
    m = re.search(r'd\("widgets/categories\.json","([^"]*)"\)', html)
    assert m, "no embedded widgets/categories.json in the single-file report"
    nodes = json.loads(base64.b64decode(m.group(1)))["nodes"].values()
    return {n["name"]: n.get("statistic", {}) for n in nodes if n.get("type") == "category"}


class _Recorder:
    def __init__(self) -> None:
        self.names: list[str] = []

    def register(self, plugin: object, name: str) -> None:
        self.names.append(name)


class _Config:
    def __init__(self, worker: bool) -> None:
        self.pluginmanager = _Recorder()
        if worker:
            self.workerinput = {"workerid": "gw0"}


def test_allure_plugins_registered_only_when_on_and_run_files_never_on_workers() -> None:
    off, controller, worker = _Config(False), _Config(False), _Config(True)
    allure.register(off, None)  # type: ignore[arg-type]
    allure.register(controller, "results")  # type: ignore[arg-type]
    allure.register(worker, "results")  # type: ignore[arg-type]
    assert off.pluginmanager.names == []
    assert controller.pluginmanager.names == ["ndval-allure-items", "ndval-allure-run-files"]
    assert worker.pluginmanager.names == ["ndval-allure-items"]


def test_allure3_config_puts_waived_items_in_their_own_category(tmp_path: Path) -> None:
    cfg = allure.allure3_config(tmp_path / "out", tmp_path / "h.jsonl", history_limit=30)
    assert cfg["plugins"]["awesome"]["options"]["singleFile"] is True
    assert cfg["historyPath"] == str(tmp_path / "h.jsonl") and cfg["historyLimit"] == 30
    rules = cfg["categories"]["rules"]
    waived = rules[0]
    assert waived["name"].startswith("Waived") and waived["matchers"] == {
        "statuses": ["skipped"], "labels": {allure.OUTCOME_LABEL: "^waived$"}}
    skipped = next(i for i, r in enumerate(rules) if r["name"].startswith("Skipped"))
    assert skipped > 0  # the plain skip rule comes after Waived (first match wins)
    for rule in rules:  # Allure 3 rejects a rule mixing matchers with the Allure 2 keys
        assert "matchers" in rule and not {"matchedStatuses", "messageRegex"} & set(rule)
        matchers = rule["matchers"] if isinstance(rule["matchers"], list) else [rule["matchers"]]
        assert all("message" not in m and "trace" not in m for m in matchers), rule  # labels, never free text
    assert all("messageRegex" not in c and "traceRegex" not in c for c in allure.CATEGORIES)
    assert "historyPath" not in allure.allure3_config(tmp_path / "out", None)


def test_xdist_workers_label_items_and_the_controller_writes_the_run_files(pytester: pytest.Pytester, cases) -> None:
    cases("recorded/w.case.yaml", synthetic_case("synthetic-waived", lo=0.99, hi=1.01, extra=WAIVER))
    cases("recorded/ok.case.yaml", synthetic_case("synthetic-ok"))
    pytester.runpytest("validation_cases", "-n", "2", "--alluredir", "allure")
    out = pytester.path / "allure"
    outcomes = {}
    for path in out.glob("*-result.json"):
        res = json.loads(path.read_text())
        outcomes[res["name"]] = {lab["value"] for lab in res["labels"] if lab["name"] == allure.OUTCOME_LABEL}
    assert outcomes == {"synthetic case synthetic-waived": {"waived"}, "synthetic case synthetic-ok": {"passed"}}
    assert "gate.verdict=PASS" in (out / "environment.properties").read_text()
    assert (out / "executor.json").is_file() and (out / "categories.json").is_file()


#: a band failure whose title says "golden" (as "Megatron-LM CI golden values" does): filed under the band
BAND_TITLED_GOLDEN = synthetic_case("synthetic-bad", lo=0.99, hi=1.01).replace(
    "title: synthetic case synthetic-bad", "title: synthetic CI golden values")
#: a golden drift (band passes, its golden file tampered with below)
DRIFT = synthetic_case("synthetic-drift") + "golden: true\n"


def _tamper_golden(root: Path) -> None:
    golden = root / "golden" / "recorded" / "drift" / "synthetic-drift.yaml"
    golden.write_text(golden.read_text().replace("estimate_mb: 95", "estimate_mb: 94"))


def test_failed_items_carry_the_kind_of_what_failed(pytester: pytest.Pytester, cases) -> None:
    cases("recorded/bad.case.yaml", BAND_TITLED_GOLDEN)
    cases("recorded/drift.case.yaml", DRIFT)
    cases("recorded/ok.case.yaml", synthetic_case("synthetic-ok"))
    assert pytester.runpytest("validation_cases", "--regen-all-golden", "--cases", "*drift*").ret == 0
    _tamper_golden(pytester.path)
    pytester.runpytest("validation_cases", "--alluredir", "allure")
    kinds = {}
    for path in (pytester.path / "allure").glob("*-result.json"):
        res = json.loads(path.read_text())
        kinds[res["name"]] = [lab["value"] for lab in res["labels"] if lab["name"] == allure.FAILURE_LABEL]
    assert kinds == {"synthetic CI golden values": ["band"], "synthetic case synthetic-drift": ["golden"],
                     "synthetic case synthetic-ok": []}


@pytest.fixture(scope="module")
def allure_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs of synthetic cases (pass, waived, failed), each rendered as one file with a shared history
    (module scope: the report is built once for the checks below; pytest runs in a subprocess)."""
    cmd = _local_allure()
    if cmd is None:
        pytest.skip("no Allure 3 command line without a download (npm install allure@3, or $NDVAL_ALLURE)")
    root = tmp_path_factory.mktemp("allure-project")
    for rel, text in (("w", synthetic_case("synthetic-waived", lo=0.99, hi=1.01, extra=WAIVER)),
                      ("ok", synthetic_case("synthetic-ok")), ("bad", BAND_TITLED_GOLDEN), ("drift", DRIFT)):
        path = root / "validation_cases" / "recorded" / f"{rel}.case.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    history = root / "reports" / report.HISTORY_FILE
    env = {k: v for k, v in os.environ.items() if k not in ("NDVAL_REPORTS_DIR", "PYTEST_ADDOPTS")}
    subprocess.run([sys.executable, "-m", "pytest", "validation_cases", "-p", "no:xdist", "-p", "no:cacheprovider",
                    "--regen-all-golden", "--cases", "*drift*"], cwd=root, env=env, capture_output=True, check=True,
                   timeout=300)
    _tamper_golden(root)
    for run in range(2):
        shutil.rmtree(root / "allure", ignore_errors=True)
        proc = subprocess.run([sys.executable, "-m", "pytest", "validation_cases", "-p", "no:randomly", "-p", "no:xdist",
                               "-p", "no:cacheprovider", "--alluredir", "allure"], cwd=root, env=env,
                              capture_output=True, text=True, check=False, timeout=300)
        assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]  # the unwaived failure
        code, message = report.generate(cmd, root / "allure", root / "reports" / "allure-report", history)
        assert code == 0, message
        assert len(history.read_text().splitlines()) == run + 1  # one history entry per generation: trends
    return root / "reports" / "allure-report" / "index.html"


def test_allure3_single_file_report_shows_waived_and_keeps_history(allure_report: Path) -> None:
    assert sorted(p.name for p in allure_report.parent.iterdir() if p.is_dir()) == []  # one file, no data/ folder
    cats = _categories(allure_report)
    waived = next(v for k, v in cats.items() if k.startswith("Waived"))
    assert waived == {"total": 1, "skipped": 1}
    assert not any(k.startswith("Skipped") for k in cats)  # the waived item is not among the plain skips
    assert cats["Estimate out of band"] == {"total": 1, "failed": 1}  # its title says "golden": not misfiled
    assert cats["Golden drift"] == {"total": 1, "failed": 1}
    assert "googletagmanager" not in allure_report.read_text(encoding="utf-8")  # no request off the machine


def test_allure_single_file_renders_in_chromium(allure_report: Path, page) -> None:
    page.goto(allure_report.as_uri())  # file:// — the multi-file report would stay blank here (CORS)
    page.get_by_text("Categories", exact=False).first.wait_for(timeout=30_000)
    body = page.inner_text("body")
    assert "ndval validation" in body and "Results 4" in body, body[:500]
    page.goto(allure_report.as_uri() + "#categories")
    page.get_by_text("Waived (known issue", exact=False).first.wait_for(timeout=30_000)
    body = page.inner_text("body")
    assert "Estimate out of band" in body and "Golden drift" in body and "Skipped: data not available" not in body
    assert page.problems == []
