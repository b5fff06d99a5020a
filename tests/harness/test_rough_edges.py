"""The rough edges a new user hit, each pinned by a test that failed on the earlier behaviour.

Cases are synthetic (``recorded.results`` / made-up numbers) unless they read the shared data.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from argparse import Namespace
from pathlib import Path

import pytest

from ndval.harness import cli, paths, signoff
from ndval.harness.commands import validate
from ndval.harness.summary import git_info
from ndval.harness.workers import choose_workers

from .conftest import synthetic_case

REPO = paths.REPO_ROOT


def _readme_commands(word: str) -> list[list[str]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    lines = [ln.split("  #", 1)[0].strip() for ln in text.splitlines() if ln.startswith(f".venv/bin/ndval {word} ")]
    return [shlex.split(ln)[1:] for ln in lines]


def test_every_readme_estimate_example_runs(capsys) -> None:
    examples = _readme_commands("estimate")
    assert len(examples) >= 2
    for argv in examples:
        assert cli.main(argv) == 0, (argv, capsys.readouterr().err)


def test_version_and_plain_help(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0 and re.match(r"ndval \d+\.\d+", capsys.readouterr().out)
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert "``" not in out and "exit codes:" in out
    assert set(cli.EXIT_CODES) == set(cli.SUBCOMMANDS)  # every command documents its codes (docs table too)
    with pytest.raises(SystemExit):
        cli.main(["validate", "--help"])
    assert "exit codes: 0 gate passed" in capsys.readouterr().out


def test_tags_select_with_dash_m(pytester: pytest.Pytester, cases) -> None:
    cases("recorded/a.case.yaml", synthetic_case("tagged") + "tags: [seed]\n")
    cases("recorded/b.case.yaml", synthetic_case("untagged"))
    result = pytester.runpytest("validation_cases", "-m", "seed", "--strict-markers")
    result.assert_outcomes(passed=1)
    assert "1 deselected" in result.stdout.str()


def test_lf_reruns_only_the_failures(pytester: pytest.Pytester, cases) -> None:
    cases("recorded/ok.case.yaml", synthetic_case("fine"))
    cases("recorded/bad.case.yaml", synthetic_case("offband", lo=0.99, hi=1.01))
    pytester.runpytest("validation_cases").assert_outcomes(passed=1, failed=1)
    result = pytester.runpytest("validation_cases", "--lf")
    result.assert_outcomes(failed=1)
    partial = json.loads((pytester.path / "reports" / "partial" / "summary.json").read_text())
    assert "--lf" in partial["run"]["partial"] and [c["case_id"] for c in partial["cases"]] == ["offband"]


def test_validate_accepts_lf_and_keeps_the_cache() -> None:
    args = cli.build_parser("validate").parse_args(["validate", "--lf", "-n", "0"])
    cmd = validate.pytest_command(args, Path("/r"))
    assert "--lf" in cmd and "no:cacheprovider" not in cmd
    assert validate.is_subset(args) and "--junitxml=/r/partial/junit.xml" in cmd


def test_subset_signoff_is_marked_partial() -> None:
    summary = json.loads(json.dumps(_minimal_summary(partial="1 item(s) deselected (-k/-m/--lf/--deselect)")))
    title, sections = signoff.build(summary, Path("/nonexistent"))
    assert title.startswith("ndval PARTIAL run — not a release sign-off")
    assert "PARTIAL: this run covers part of the cases only" in sections[0].blocks[0]
    title, _ = signoff.build(_minimal_summary(partial=None), Path("/nonexistent"))
    assert title.startswith("ndval release sign-off")


def _minimal_summary(partial: str | None) -> dict:
    return {"provenance": {"git": {"sha": "0" * 40, "dirty": False, "untracked": []}, "python": "3", "platform": "x",
                           "packages": {}},
            "gate": {"verdict": "PASS", "exit_code": 0, "rules": []},
            "counts": {"items": 0, "passed": 0, "failed": 0, "waived": 0, "error": 0, "skipped": 0,
                       "collection_errors": 0},
            "run": {"partial": partial, "argv": []}, "cases": [], "case_files": {}, "criteria": [],
            "statistics": [], "regressions": None, "golden": {"drift": [], "unused": []}, "waivers": [],
            "collection_errors": []}


def test_untracked_cases_make_the_tree_dirty(tmp_path: Path) -> None:
    def git(*a: str) -> None:
        subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init")
    cases_dir = tmp_path / "validation_cases"
    cases_dir.mkdir()
    assert git_info(tmp_path, (cases_dir,))["dirty"] is False
    (cases_dir / "new.case.yaml").write_text("id: x\n")
    info = git_info(tmp_path, (cases_dir,))
    assert info["dirty"] is True and info["untracked"] == ["validation_cases/new.case.yaml"]


def test_golden_mismatch_prints_a_diff(pytester: pytest.Pytester, cases) -> None:
    cases("recorded/g.case.yaml", synthetic_case("gold") + "golden: true\n")
    assert pytester.runpytest("validation_cases", "--regen-all-golden").ret == 0
    golden = pytester.path / "golden" / "recorded" / "g" / "gold.yaml"
    golden.write_text(golden.read_text().replace("estimate_mb: 95", "estimate_mb: 94"))
    result = pytester.runpytest("validation_cases")
    result.stdout.fnmatch_lines(["*golden diff (expected -> obtained):*", "*-*estimate_mb: 94*", "*+*estimate_mb: 95*"])


def test_junit_message_is_the_reason_and_classname_has_no_suffix(pytester: pytest.Pytester, cases) -> None:
    cases("recorded/bad.case.yaml", synthetic_case("offband", lo=0.99, hi=1.01))
    pytester.runpytest("validation_cases", "--junitxml=reports/junit.xml")
    (case,) = ET.parse(pytester.path / "reports" / "junit.xml").getroot().iter("testcase")
    assert case.get("classname") == "validation_cases.recorded.bad"
    message = case.find("failure").get("message")
    assert message.startswith("band: 0/2 rows within [0.99, 1.01]"), message


def test_analyze_json_to_stdout_and_warnings_to_stderr(profile_path) -> None:
    profile = profile_path("ascend/msinsight-level1/rank0_ascend_pt")
    proc = subprocess.run([sys.executable, "-m", "ndval.harness.cli", "analyze", str(profile), "--json", "-"], cwd=REPO,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(proc.stdout)  # stdout is the JSON document and nothing else
    assert data["path"] and not (REPO / "-").exists()
    assert "ndval analyze" in proc.stderr
    assert all(f"warning: {w}" in proc.stderr for w in data["warnings"])


@pytest.mark.parametrize(("cpus", "work_s", "expected"), [
    (2, 500.0, 0),      # two cores: measured slower with xdist (54.7 s vs 33.5 s serial) -> serial
    (2, None, 0),
    (16, 20.0, 0),      # little work: a worker would not pay for its start
    (16, 95.0, 3),      # one worker per 30 s of work
    (16, 10_000.0, 8),  # at most half the cores
    (8, None, 4),
])
def test_worker_choice_by_amount_of_work(cpus: int, work_s: float | None, expected: int) -> None:
    assert choose_workers(cpus, work_s) == expected


def test_validate_auto_workers_is_serial_on_two_cores(monkeypatch) -> None:
    monkeypatch.setattr(validate, "usable_cpus", lambda: 2)
    args = Namespace(workers="auto")
    assert validate.workers(args, Path("/nonexistent")) == 0


def test_a_waived_point_is_drawn_as_waived(monkeypatch) -> None:
    from ndval.harness import plots

    seen: list[dict] = []
    monkeypatch.setattr(signoff, "estimate_vs_measured_png", lambda rows, title, band, *labels: seen.extend(rows) or None)
    summary = _minimal_summary(partial=None)
    rows = [{"row": "a", "estimate": 1.0, "measured": 1.0, "passed": True},
            {"row": "b", "estimate": 2.0, "measured": 1.0, "passed": False}]
    summary["cases"] = [{"file": "f", "case_id": "c", "nodeid": "f::c", "point": None, "assertions": [
        {"type": "ratio_within", "id": "band", "rows": rows, "waived": True, "expected": "[0.9, 1.1]", "target": "t"}]}]
    signoff._plots(summary)
    assert [plots.point_state(r) for r in seen] == ["in", "waived"]
    assert plots.point_state({"passed": False}) == "out"


def test_signoff_css_keeps_words_whole_and_long_ids_breakable() -> None:
    # the browser checks (tests/harness/test_signoff_browser.py) measure the page; this pins the rules: no
    # letter-by-letter wrapping ("W AI VE D"), long ids wrap after their separators
    from ndval.core.render import breakable

    assert "overflow-wrap:anywhere" not in signoff._CSS and "max-width:100%" in signoff._CSS
    assert str(breakable("WAIVED")) == "WAIVED"
    assert str(breakable("a/b_c::d[e]")) == "a/b_c::d[e]"  # short: left alone
    assert str(breakable("validation_cases/x.case.yaml")) == "validation_<wbr>cases/<wbr>x.<wbr>case.<wbr>yaml"
