"""Measured rows missing a value the estimate needs are *not evaluable*: counted and listed with the
column, never dropped, and the run is not BROKEN INPUT when the other rows pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from ndval.harness import signoff
from ndval.harness.gate import EXIT_PASS
from tests.harness._measured_rows import write_rows_with_gaps

#: three real torchtitan rows (published, ../shared/data/measured); two of them get one cell blanked here
ROWS = ("torchtitan_llama3_h100_202412__t1__8B__FSDP+torch.compile__max_reserved",
        "torchtitan_llama3_h100_202412__t3__8B__FSDP__max_reserved",
        "torchtitan_llama3_h100_202412__t3__8B__FSDP+torch.compile__max_reserved")
BLANKED = {ROWS[1]: "micro_batch_size", ROWS[2]: "seq_length"}

CASE = """\
id: gaps
title: measured rows with unstated cells (two of three blanked from real rows)
kind: estimator.memory
owner: harness-tests
severity: major
source: ../shared/data/measured/memory_cases.csv, two cells blanked by this test
params: {from_measured: true, profile: megatron, preset: fixed, label: case_id}
data: {file: rows.csv}
expect:
  - {type: ratio_within, id: band, estimate: estimate_mb, measured: measured_mb, lo: 0.90, hi: 1.10}
"""


def _write_rows(measured_dir: Path, out: Path) -> None:
    assert write_rows_with_gaps(measured_dir / "memory_cases.csv", out, set(ROWS), None, BLANKED) == len(ROWS)


def test_two_rows_with_gaps_are_listed_and_the_run_passes(pytester: pytest.Pytester, cases, summary,
                                                          measured_dir: Path) -> None:
    path = cases("gaps.case.yaml", CASE)
    _write_rows(measured_dir, path.parent / "rows.csv")
    result = pytester.runpytest("validation_cases")
    assert result.ret == EXIT_PASS, result.stdout.str()[-3000:]
    s = summary()
    listed = {r["row"]: r["reason"] for r in s["not_evaluable"]}
    assert listed == {ROWS[1]: "column micro_batch_size: not stated by the source",
                      ROWS[2]: "column seq_length: not stated by the source"}
    (case,) = s["cases"]
    assert case["status"] == "passed"  # the evaluable row passes; the two gaps do not fail it
    (band,) = case["assertions"]
    assert band["stats"]["n"] == 1 and band["stats"]["n_not_evaluable"] == 2
    title, sections = signoff.build(s, pytester.path / "reports")
    text = signoff.render_markdown(title, sections, "img")
    assert "2 data rows missing a needed value" in text
    assert "column micro_batch_size: not stated by the source" in text and ROWS[1] in text


def test_a_case_whose_only_row_has_a_gap_is_not_evaluable(pytester: pytest.Pytester, cases, summary,
                                                           measured_dir: Path) -> None:
    path = cases("gaps.case.yaml", CASE.replace("data: {file: rows.csv}", "data: {file: rows.csv, per_row: case_id}"))
    _write_rows(measured_dir, path.parent / "rows.csv")
    result = pytester.runpytest("validation_cases")
    assert result.ret == EXIT_PASS, result.stdout.str()[-3000:]
    s = summary()
    assert s["counts"]["not_evaluable"] == 2 and s["counts"]["passed"] == 1
    assert {r["row"] for r in s["not_evaluable"]} == set(BLANKED)
