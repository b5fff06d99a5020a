"""Honest criteria: only numbers evaluated now can PASS a criterion; recorded numbers are context.

Unit tests use synthetic records; the last test runs ``ndval validate`` over the repository's own
case files that carry seed criteria and reads the criteria table of the sign-off it writes.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ndval.harness import criteria
from ndval.harness.assertions import REGISTRY
from ndval.harness.results import EVALUATED, RECORDED, RunResult

REPO = Path(__file__).resolve().parents[2]


def _record(case_id: str, *assertions: dict, status: str = "passed") -> dict:
    return {"nodeid": f"validation_cases/x.case.yaml::{case_id}", "case_id": case_id, "status": status,
            "criteria": sorted({a["criterion"] for a in assertions}), "assertions": list(assertions)}


def _assertion(aid: str, passed: bool, provenance: str, producer: str, criterion: str = "P3-EP",
               waived: bool = False) -> dict:
    return {"id": aid, "type": "pearson_r_gt", "criterion": criterion, "passed": passed, "waived": waived,
            "evaluable": True, "observed": 0.872, "expected": "> 0.85", "message": "synthetic",
            "provenance": provenance, "producer": producer}


def _row(rows: list[dict], cid: str) -> dict:
    return next(r for r in rows if r["id"] == cid)


def test_a_recorded_number_alone_never_passes_a_criterion():
    cases = [_record("recorded-r", _assertion("ep", True, RECORDED, "reference tool"))]
    row = _row(criteria.seed_criteria_table(cases, None), "P3-EP")
    assert row["status"] == "not evaluable" and row["provenance"] == RECORDED
    assert row["whose"] == "reference tool (recorded); nothing evaluated now"
    assert row["evidence"] == [] and "ep @ recorded-r: meets the rule" in row["context"]
    assert "cannot be correlated" in row["reason"]


def test_evaluated_evidence_decides_and_recorded_is_shown_beside_it():
    cases = [_record("recorded-r", _assertion("ep", True, RECORDED, "reference tool")),
             _record("ndval-r", _assertion("ep-now", False, EVALUATED, "ndval"), status="failed")]
    row = _row(criteria.seed_criteria_table(cases, None), "P3-EP")
    assert row["status"] == "fail" and row["whose"] == "ndval (evaluated now)"
    assert [e["assertion"] for e in row["evidence"]] == ["ep-now"]
    assert row["context"].startswith("recorded by reference tool, shown as context, not evidence")


def test_criterion_status_refuses_recorded_evidence():
    with pytest.raises(ValueError, match="evaluated evidence only"):
        criteria.criterion_status([{"status": "passed", "provenance": RECORDED}])


def test_a_recorded_coefficient_is_recorded_even_inside_an_evaluated_result():
    spec = REGISTRY["pearson_r_gt"].model_validate({"type": "pearson_r_gt", "recorded": "r", "n": 6, "min": 0.5})
    assert spec.provenance_of(RunResult(table=[{"r": 0.9}])) == (RECORDED, "recorded coefficient")
    computed = REGISTRY["pearson_r_gt"].model_validate({"type": "pearson_r_gt", "x": "a", "y": "b", "min": 0.5})
    assert computed.provenance_of(RunResult(producer="team-estimator")) == (EVALUATED, "team-estimator")


def test_int03_names_exactly_what_the_dense_case_toggles():
    case = yaml.safe_load((REPO / "validation_cases/estimator/dense_invariance.case.yaml").read_text())
    a, b = case["params"]["a"], case["params"]["b"]
    toggled = {k for k in a.get("options", {}) if a["options"][k] != b.get("options", {}).get(k)}
    toggled |= {k.rsplit(".", 1)[-1] for k in a.get("set", {}) if a["set"][k] != b.get("set", {}).get(k)}
    assert toggled == set(criteria.INT03_TOGGLES)
    title = _row(criteria.seed_criteria_table([], None), "INT-03")["title"]
    assert all(t in title for t in toggled) and "every fix" not in title


def _criteria_rows(md: str) -> dict[str, dict[str, str]]:
    section = md.split("## 5. Seed acceptance criteria", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("| ")]
    split = [[c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]] for ln in lines]
    header, body = split[0], split[1:]
    return {cells[0]: dict(zip(header, cells, strict=True)) for cells in body}


def test_validate_signoff_has_no_pass_resting_on_a_recorded_number(tmp_path):
    """Every case file carrying a seed criterion, through ``ndval validate``; every PASS row's evidence
    was evaluated now, and each recorded-only criterion says so."""
    seed = re.compile(r"criterion: ({})\b".format("|".join(re.escape(c.id) for c in criteria.SEED_CRITERIA)))
    files = sorted(p.relative_to(REPO / "validation_cases").as_posix()
                   for p in (REPO / "validation_cases").rglob("*.case.yaml") if seed.search(p.read_text()))
    args = [a for f in files for a in ("--cases", f)]
    proc = subprocess.run([sys.executable, "-m", "ndval.harness.cli", "validate", "-n", "0", "--reports", str(tmp_path),
                           *args], cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    out = tmp_path / "partial"  # a --cases selection: a PARTIAL report, the criteria table all the same
    assert not (tmp_path / "signoff.md").exists()
    rows = _criteria_rows((out / "signoff.md").read_text(encoding="utf-8"))
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    by_id = {c["id"]: c for c in summary["criteria"]}
    assert set(rows) == {c.id for c in criteria.SEED_CRITERIA}
    passes = [cid for cid, r in rows.items() if r["status"] == "PASS"]
    assert passes, "no criterion passes at all: the check below would be vacuous"
    for cid in passes:
        assert rows[cid]["whose number"].endswith("(evaluated now)"), rows[cid]
        assert by_id[cid]["provenance"] == EVALUATED and by_id[cid]["evidence"]
        assert all(e["provenance"] == EVALUATED for e in by_id[cid]["evidence"]), by_id[cid]["evidence"]
    # the criteria the seed only reports as the reference tool's recorded Pearson r
    for cid in ("P3", "P3-EP", "P4-TOTAL"):
        assert rows[cid]["status"] == "NOT EVALUABLE" and "(recorded)" in rows[cid]["whose number"], rows[cid]
    # COMP / MP_WAIT: the reference tool's recorded r only meets a rule; nothing there reads PASS
    results = (out / "signoff.md").read_text(encoding="utf-8").split("## 9. Results by case", 1)[1]
    for aid in ("comp", "mp-wait", "ep-wait-not-degraded"):
        line = next(ln for ln in results.splitlines() if "| seed-wait-correlation | recorded.results |" in ln
                    and f"| {aid} |" in ln)
        assert "| RECORDED: MEETS RULE |" in line and "| PASS |" not in line
