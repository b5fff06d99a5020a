"""pytest's selection conventions over case items: ``--lf`` / ``--ff`` / ``--sw`` / ``-k`` / ``-m`` / ``-x``.

Matrix points and data rows are the items' pytest *parameters* (``case[point]``), so the ids pytest's cache
saves parse back to the collected ones. ``ndval validate`` takes the same options directly (no ``--`` needed).
All cases are synthetic (``recorded.results`` over made-up numbers).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from ndval.harness import cli
from ndval.harness.commands import validate

from .conftest import synthetic_case

#: one item per row; rows r2 and r4 miss the band [0.9, 1.1]
PER_ROW = textwrap.dedent("""\
    id: per-row
    title: synthetic per-row case
    kind: recorded.results
    owner: harness-tests
    severity: major
    source: synthetic numbers for the selection tests
    data:
      per_row: config
      inline:
        - {config: r1, estimate_mb: 100, measured_mb: 100}
        - {config: r2, estimate_mb: 150, measured_mb: 100}
        - {config: r3, estimate_mb: 101, measured_mb: 100}
        - {config: r4, estimate_mb: 50, measured_mb: 100}
    expect:
      - {type: ratio_within, id: band, estimate: estimate_mb, measured: measured_mb, lo: 0.9, hi: 1.1}
    """)

def _ids(result: pytest.RunResult, word: str) -> list[str]:
    """The node ids of the report lines starting with ``word`` (``-rA`` short summary)."""
    return sorted(line.split(" ", 1)[1].split(" - ")[0] for line in result.stdout.lines
                  if line.startswith(f"{word} validation_cases/"))


@pytest.fixture
def tree(cases) -> None:
    cases("recorded/rows.case.yaml", PER_ROW)
    cases("recorded/fine.case.yaml", synthetic_case("fine"))
    cases("recorded/offband.case.yaml", synthetic_case("offband", lo=0.99, hi=1.01) + "tags: [slowish]\n")


def test_lf_reruns_exactly_the_failed_rows(pytester: pytest.Pytester, tree) -> None:
    first = pytester.runpytest("validation_cases", "-rA", "-p", "no:randomly")
    first.assert_outcomes(passed=3, failed=3)
    failed = _ids(first, "FAILED")
    assert failed == ["validation_cases/recorded/offband.case.yaml::offband",
                      "validation_cases/recorded/rows.case.yaml::per-row[r2]",
                      "validation_cases/recorded/rows.case.yaml::per-row[r4]"]
    again = pytester.runpytest("validation_cases", "--lf", "-rA", "-p", "no:randomly")
    again.assert_outcomes(failed=3)  # the passed ones are not collected
    assert _ids(again, "FAILED") == failed
    assert "rerun previous 3 failures" in again.stdout.str()
    partial = json.loads((pytester.path / "reports" / "partial" / "summary.json").read_text())
    assert sorted(c["nodeid"] for c in partial["cases"]) == failed


def test_lf_reruns_exactly_the_failed_matrix_point(pytester: pytest.Pytester, cases) -> None:
    # the point id is the item's parameter; the waiver covers point 0 only, so point 1 alone fails
    waiver = ("waiver: {reason: synthetic waiver of one point, owner: qa, expires: 2099-01-01, issue: X-1, "
              "points: [tp_shardable_overhead_mb0]}\n")
    cases("recorded/m.case.yaml", synthetic_case("matrix", lo=0.99, hi=1.01, extra=waiver +
                                                 "matrix:\n  what_if.tp_shardable_overhead_mb: [0, 1]\n"
                                                 "params: {what_if: {safety_buffer_mb: 0, legacy_safety_buffer_mb: 0}}\n"))
    pytester.runpytest("validation_cases", "-p", "no:randomly").assert_outcomes(failed=1, xfailed=1)
    again = pytester.runpytest("validation_cases", "--lf", "-rA", "-p", "no:randomly")
    again.assert_outcomes(failed=1)
    assert _ids(again, "FAILED") == ["validation_cases/recorded/m.case.yaml::matrix[tp_shardable_overhead_mb1]"]


def test_ff_runs_the_failures_first_then_the_rest(pytester: pytest.Pytester, tree) -> None:
    pytester.runpytest("validation_cases", "-p", "no:randomly")
    result = pytester.runpytest("validation_cases", "--ff", "-v", "-p", "no:randomly")
    result.assert_outcomes(passed=3, failed=3)
    order = [ln.split(" ")[0] for ln in result.stdout.lines if ln.startswith("validation_cases/") and "::" in ln]
    assert [o.split("::")[1] for o in order[:3]] == ["offband", "per-row[r2]", "per-row[r4]"]
    assert "rerun previous 3 failures first" in result.stdout.str()


def test_k_selects_a_row_and_m_selects_a_tag(pytester: pytest.Pytester, tree) -> None:
    result = pytester.runpytest("validation_cases", "-k", "r3 or fine", "-rA")
    result.assert_outcomes(passed=2, deselected=4)
    result = pytester.runpytest("validation_cases", "-m", "slowish", "--strict-markers")
    result.assert_outcomes(failed=1, deselected=5)


def test_x_stops_at_the_first_failure_and_the_report_is_partial(pytester: pytest.Pytester, tree) -> None:
    result = pytester.runpytest("validation_cases", "-x", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)  # fine, then offband; the rows never run
    partial = json.loads((pytester.path / "reports" / "partial" / "summary.json").read_text())
    assert "stopped early" in partial["run"]["partial"]
    assert not (pytester.path / "reports" / "summary.json").exists()


def test_sw_resumes_from_the_last_failure(pytester: pytest.Pytester, tree) -> None:
    pytester.runpytest("validation_cases", "--sw", "-p", "no:randomly").assert_outcomes(passed=1, failed=1)
    result = pytester.runpytest("validation_cases", "--sw", "-rA", "-p", "no:randomly")
    # offband still fails: the run stops there again, having skipped the already passed "fine"
    assert _ids(result, "FAILED") == ["validation_cases/recorded/offband.case.yaml::offband"]
    assert "skipping 1 already passed items" in result.stdout.str()


@pytest.mark.parametrize(("argv", "expected"), [
    (["-m", "seed"], ["-m", "seed"]),
    (["-k", "per-row and r2"], ["-k", "per-row and r2"]),
    (["--lf"], ["--lf", "--lfnf", "none"]),
    (["--ff"], ["--ff"]),
    (["-x"], ["-x"]),
    (["--sw"], ["--sw"]),
])
def test_validate_takes_the_selection_options_directly(argv: list[str], expected: list[str]) -> None:
    args = cli.build_parser("validate").parse_args(["validate", *argv, "-n", "0"])
    cmd = validate.pytest_command(args, Path("/r"))
    at = len(cmd) - 1 - cmd[::-1].index(expected[0])  # the last one ("python -m pytest" comes first)
    assert cmd[at:at + len(expected)] == expected
    assert validate.is_subset(args) and "--junitxml=/r/partial/junit.xml" in cmd


def _project(root: Path) -> Path:
    (root / "pyproject.toml").write_text('[tool.ndval]\ncases = "validation_cases"\n', encoding="utf-8")
    return root


def test_validate_runs_them_as_pytest_does(pytester: pytest.Pytester, tree, monkeypatch, capsys) -> None:
    monkeypatch.chdir(_project(pytester.path))
    monkeypatch.setenv("NDVAL_PROJECT_ROOT", str(pytester.path))
    assert cli.main(["validate", "-n", "0", "--no-allure-report", "--", "-p", "no:randomly"]) == 1
    assert cli.main(["validate", "-n", "0", "--no-allure-report", "--lf"]) == 1
    partial = json.loads((pytester.path / "reports" / "partial" / "summary.json").read_text())
    assert sorted(c["case_id"] + str(c["point"] or "") for c in partial["cases"]) == ["offband", "per-rowr2", "per-rowr4"]
    assert cli.main(["validate", "-n", "0", "--no-allure-report", "-m", "slowish"]) == 1
    partial = json.loads((pytester.path / "reports" / "partial" / "summary.json").read_text())
    assert [c["case_id"] for c in partial["cases"]] == ["offband"]
    assert cli.main(["validate", "-n", "0", "--no-allure-report", "-k", "fine"]) == 0
    capsys.readouterr()
    assert cli.main(["validate", "-n", "0", "--no-allure-report", "--cases", "nomatch*"]) == 2
    err = capsys.readouterr().err
    assert "no case matched the selection (--cases nomatch*" in err and "pytest exit" not in err


def test_a_band_set_in_defaults_points_at_the_defaults_line(pytester: pytest.Pytester, cases) -> None:
    cases("recorded/many.case.yaml", textwrap.dedent("""\
        schema_version: 1
        defaults:
          kind: recorded.results
          owner: harness-tests
          severity: major
          source: synthetic numbers
          expect:
            - {type: ratio_within, id: band, estimate: estimate_mb, measured: measured_mb, lo: 0.99, hi: 1.01}
        cases:
          - id: first
            title: synthetic first
            data: {inline: [{config: a, estimate_mb: 90, measured_mb: 100}]}
          - id: second
            title: synthetic second
            data: {inline: [{config: b, estimate_mb: 80, measured_mb: 100}]}
        """))
    result = pytester.runpytest("validation_cases")
    result.assert_outcomes(failed=2)
    # the failure reports only: under CI=true pytest's short summary repeats each whole message (untruncated)
    lines = result.stdout.lines
    summary = next((i for i, ln in enumerate(lines) if "short test summary info" in ln), len(lines))
    table_rows = [ln for ln in lines[:summary] if ln.startswith("FAILED    band")]
    assert len(table_rows) == 2 and all(ln.rstrip().endswith("line 8") for ln in table_rows), table_rows
