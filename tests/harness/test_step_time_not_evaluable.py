"""Step-time rows missing a value the estimate needs are *not evaluable* (the column named, counted
and listed in the summary and the sign-off), never BROKEN INPUT — the same mechanism as the memory
kind (``ndval.harness.kinds.estimator.common.RowNotEvaluable`` / ``not_evaluable_row``; the assertions'
``rows_and_gaps``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ndval.harness import signoff
from ndval.harness.gate import EXIT_PASS
from tests.harness._measured_rows import write_rows_with_gaps

#: the eight real Korthikanti 2022 Table 5 rows (published, ../shared/data/measured); two get one cell blanked here
SOURCE = "korthikanti2022_tab5"
BLANKED = {"korthikanti2022_tab5__175B__full": "micro_batch_size", "korthikanti2022_tab5__1T__seqsel": "tp"}

CASE = """\
id: step-gaps
title: step-time rows with unstated cells (two of eight blanked from real rows)
kind: estimator.perf
owner: harness-tests
severity: major
source: ../shared/data/measured/step_time_cases.csv, two cells blanked by this test
params: {from_measured: true, profile: megatron, preset: fixed, label: case_id}
data: {file: rows.csv}
expect:
  - {type: spearman_rho_gt, id: ranking, x: total_ms, y: measured_step_ms, min: 0.7}
  - {type: mape_le, id: accuracy, estimate: total_ms, measured: measured_step_ms, max: 0.10}
"""


def _write_rows(measured_dir: Path, out: Path, only: set[str] | None = None) -> None:
    write_rows_with_gaps(measured_dir / "step_time_cases.csv", out, only, SOURCE, BLANKED)


def test_gaps_are_listed_and_the_six_other_rows_judged(pytester: pytest.Pytester, cases, summary,
                                                       measured_dir: Path) -> None:
    path = cases("gaps.case.yaml", CASE)
    _write_rows(measured_dir, path.parent / "rows.csv")
    result = pytester.runpytest("validation_cases")
    assert result.ret == EXIT_PASS, result.stdout.str()[-3000:]
    s = summary()
    listed = {r["row"]: r["reason"] for r in s["not_evaluable"]}
    assert listed == {"korthikanti2022_tab5__175B__full": "column micro_batch_size: not stated by the source",
                      "korthikanti2022_tab5__1T__seqsel": "column tp: not stated by the source"}
    (case,) = s["cases"]
    assert case["status"] == "passed"  # the six evaluable rows are judged; the two gaps neither fail nor break it
    by_id = {a["id"]: a for a in case["assertions"]}
    for name in ("ranking", "accuracy"):
        assert by_id[name]["stats"]["n"] == 6 and by_id[name]["stats"]["n_not_evaluable"] == 2
    assert "not evaluable: korthikanti2022_tab5__175B__full: column micro_batch_size" in by_id["accuracy"]["message"]
    title, sections = signoff.build(s, pytester.path / "reports")
    text = signoff.render_markdown(title, sections, "img")
    assert "2 data rows missing a needed value" in text and "column tp: not stated by the source" in text


def test_a_case_of_gaps_only_is_not_evaluable(pytester: pytest.Pytester, cases, summary,
                                              measured_dir: Path) -> None:
    path = cases("gaps.case.yaml", CASE)
    _write_rows(measured_dir, path.parent / "rows.csv", only=set(BLANKED))
    result = pytester.runpytest("validation_cases")
    assert result.ret == EXIT_PASS, result.stdout.str()[-3000:]
    s = summary()
    assert s["counts"]["not_evaluable"] == 1 and s["counts"]["error"] == 0
    assert {r["row"] for r in s["not_evaluable"]} == set(BLANKED)
    (case,) = s["cases"]
    assert all(not a["evaluable"] for a in case["assertions"])
