"""The analyzer kinds (``analyzer.analysis``, ``analyzer.compare``) and their case files."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from ndval.harness import paths
from ndval.harness.assertions import REGISTRY, EvalContext
from ndval.harness.cases import load_case_file
from ndval.harness.kinds import KindError, RunContext, load_kinds
from ndval.harness.kinds import analyzer as ak
from ndval.harness.results import RunResult
from tests.analyzer.synthetic import SynthStep, host_bound_steps, write_rank

CASES = paths.cases_dir() / "analyzer"


def _ctx(params) -> RunContext:
    return RunContext(case_id="t", params=params, rows=[])


def _assert(spec: dict, result):
    return REGISTRY[spec["type"]].model_validate(spec).evaluate(result, EvalContext())


def test_both_kinds_are_registered_with_strict_params():
    kinds = load_kinds()
    assert {"analyzer.analysis", "analyzer.compare"} <= set(kinds)
    with pytest.raises(ValidationError):
        ak.AnalysisParams(profile="x", unknown_field=1)
    with pytest.raises(ValidationError):
        ak.CompareParams(before="x")


def test_the_four_assertions_are_the_registry_ones():
    # one implementation each: the generic assertions of harness.assertions, no analyzer copies
    for name in ("bottleneck_is", "score_between", "verdict_equals", "abs_error_le"):
        assert REGISTRY[name].__module__.startswith("ndval.harness.assertions.")


def test_absent_profiles_folder_skips_with_data_not_available(monkeypatch, tmp_path):
    monkeypatch.setenv("NDVAL_PROFILES_DIR", str(tmp_path / "absent"))
    with pytest.raises(pytest.skip.Exception, match="data not available: profiles folder"):
        ak.run_analysis(_ctx(ak.AnalysisParams(profile="ascend/msinsight-level1/rank0_ascend_pt")))
    with pytest.raises(pytest.skip.Exception, match="data not available"):
        ak.run_compare(_ctx(ak.CompareParams(before="a", after="b")))


def test_absent_profile_skips_naming_it(monkeypatch, tmp_path):
    monkeypatch.setenv("NDVAL_PROFILES_DIR", str(tmp_path))
    with pytest.raises(pytest.skip.Exception, match=r"'kineto/missing\.json\.gz' not found"):
        ak.run_analysis(_ctx(ak.AnalysisParams(profile="kineto/missing.json.gz")))


def test_unreadable_profile_is_a_kind_error_not_a_skip(monkeypatch, tmp_path):
    (tmp_path / "bad.json").write_text("hello, not json")
    monkeypatch.setenv("NDVAL_PROFILES_DIR", str(tmp_path))
    with pytest.raises(KindError, match=r"cannot read profile: .*bad\.json"):
        ak.run_analysis(_ctx(ak.AnalysisParams(profile="bad.json")))


def test_attach_expected_rules():
    rows = [{"id": "comm_us", "observed": 1.0}]
    out = ak.attach_expected(list(rows), {"comm_us": 2.0, "trace_sync_count.aten::item": 3})
    by_id = {r["id"]: r for r in out}
    assert by_id["comm_us"]["expected"] == 2.0
    assert by_id["trace_sync_count.aten::item"]["observed"] == 0.0  # absent op = observed 0
    with pytest.raises(KindError, match="no row 'comm_usx'"):
        ak.attach_expected(list(rows), {"comm_usx": 1.0})


def test_analysis_kind_on_level1_rank0(profile_path):
    profile_path("ascend/msinsight-level1/rank0_ascend_pt")
    params = ak.AnalysisParams(profile="ascend/msinsight-level1/rank0_ascend_pt",
                               expected={"comm_exposed_us": 101963.203, "compute_us": 8000.0},
                               expect_warnings=["only one step", "a warning nobody writes"])
    result = ak.run_analysis(_ctx(params))
    assert result.values["bottleneck"] == "communication"
    assert _assert({"type": "bottleneck_is", "expected": "communication"}, result).passed
    assert _assert({"type": "score_between", "field": "score.communication", "lo": 40, "hi": 100}, result).passed
    good = {"type": "abs_error_le", "estimate": "observed", "measured": "expected", "max": 0.01,
            "where": {"id": "comm_exposed_us"}}
    assert _assert(good, result).passed
    # the assertions can fail: a wrong transcription (8000 for 8873.756) is caught
    wrong = {**good, "where": {"id": "compute_us"}}
    res = _assert(wrong, result)
    assert not res.passed and res.rows[0]["value"] == pytest.approx(873.756, abs=1e-3)
    assert result.values["warnings_expected_present"] is False
    assert result.values["missing_warnings"] == ["a warning nobody writes"]
    ids = {r["id"] for r in result.table}
    assert {"step_trace.50.Computing", "trace_sync_count.aten::item", "sync_count.aten::item"} <= ids


def test_compare_kind_on_level0_vs_level1(profile_path):
    profile_path("ascend/msinsight-level0/rank0_ascend_pt")
    params = ak.CompareParams(before="ascend/msinsight-level0/rank0_ascend_pt",
                              after="ascend/msinsight-level1/rank0_ascend_pt",
                              expect_reasons=["communication.json"])
    result = ak.run_compare(_ctx(params))
    assert result.values["comparable"] is False
    assert result.values["check.file_set"] is True
    assert result.values["reasons_expected_present"] is True
    assert _assert({"type": "verdict_equals", "field": "comparable", "expected": True}, result).passed is False
    assert any(k.startswith("verdict.") for k in result.values)
    assert {r["id"] for r in result.table} >= {"avg_step_us", "compute_us"}
    assert result.values["before.step_count"] == 1 and result.values["after.step_count"] == 1
    rec = next(k.split(".", 1)[1] for k in result.values if k.startswith("verdict."))
    assert isinstance(result.values[f"threshold.{rec}"], float) and result.values[f"threshold.{rec}"] >= 1.0
    assert f"observed.{rec}" in result.values


def test_compare_rows_carry_expected_facts_and_reject_unknown_metrics():
    metrics = [{"id": "compute_us", "direction": "lower_better", "before": 10.0, "after": 9.0,
                "rel_change_pct": -10.0, "improvement_pct": 10.0, "status": "improved"}]
    rows = ak.compare_rows(metrics, {"compute_us": 10.5}, {})
    assert rows[0]["expected_before"] == 10.5 and rows[0]["expected_after"] is None
    wrong = {"type": "abs_error_le", "estimate": "before", "measured": "expected_before", "max": 0.01,
             "where": {"id": "compute_us"}}
    assert _assert(wrong, RunResult(table=rows, values={}, notes=[])).passed is False  # 0.5 µs off: caught
    with pytest.raises(KindError, match=r"expected_after: no metric \['compute_ms'\]"):
        ak.compare_rows(metrics, {}, {"compute_ms": 1.0})


@pytest.mark.parametrize("name", ["real_samples_analysis.case.yaml", "real_samples_compare.case.yaml"])
def test_case_files_validate(name):
    loaded = load_case_file(CASES / name, paths.cases_dir())
    assert loaded.errors == []
    assert loaded.cases
    for lc in loaded.cases:
        assert lc.case.kind in ("analyzer.analysis", "analyzer.compare")
        assert lc.case.source.strip()


def test_case_files_cover_every_real_sample():
    text = "".join(p.read_text() for p in sorted(Path(CASES).glob("*.case.yaml")))
    for sample in ("msinsight-level0/rank0_ascend_pt", "msinsight-level1/rank0_ascend_pt",
                   "msinsight-level1/rank1_ascend_pt", "msprof-analyze-single-card/trace_view.json",
                   "kernel-details-pipeutil-2025", "hta-trace-diff/control.json.gz", "hta-trace-diff/test.json.gz"):
        assert sample in text, sample


#: the issue's release gate: "the graph-mode change must cut dispatch ops per step by >= 30 % without
#: hurting step time" (docs/compare.md §5), as the assertions a case file would carry
GRAPH_MODE_GATE = [
    {"type": "verdict_equals", "field": "comparable", "expected": True},
    {"type": "score_between", "field": "improvement.dispatch_ops_per_step", "lo": 30, "hi": 100},
    {"type": "column_in", "column": "status", "allowed": ["improved", "unchanged"], "where": {"id": "avg_step_us"}},
]


def test_graph_mode_gate_on_synthetic_eager_and_graph_like_captures(monkeypatch, tmp_path):
    # SYNTHETIC Ascend exports (tests/analyzer/synthetic.py): 1500 -> 300 enqueues per step, same kernels
    graph_like = SynthStep(host_busy_us=1800.0, host_ops=60, enqueues=300, device_offset_us=200.0, kernels=30,
                           kernel_us=50.0, gap_after_us=200.0)
    write_rank(tmp_path / "eager", host_bound_steps(6))
    write_rank(tmp_path / "graph", [graph_like] * 6)
    monkeypatch.setenv("NDVAL_PROFILES_DIR", str(tmp_path))
    forward = ak.run_compare(_ctx(ak.CompareParams(before="eager/rank0_ascend_pt", after="graph/rank0_ascend_pt")))
    assert forward.values["improvement.dispatch_ops_per_step"] == pytest.approx(80.0)
    assert [_assert(spec, forward).passed for spec in GRAPH_MODE_GATE] == [True, True, True]
    # the same gate fails when the change goes the other way (more dispatch ops, slower steps)
    backward = ak.run_compare(_ctx(ak.CompareParams(before="graph/rank0_ascend_pt", after="eager/rank0_ascend_pt")))
    assert [_assert(spec, backward).passed for spec in GRAPH_MODE_GATE] == [True, False, False]
