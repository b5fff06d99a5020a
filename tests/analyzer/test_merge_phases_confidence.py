"""Seed §1 cross-scope merge, §5 applicable phases ("适用阶段") and §8 "how to raise confidence".

Merge and phase tests use SYNTHETIC recommendations and indicators; the §8 list is checked on the
real Level0 / Level1 captures (skipped with a reason when ../shared/data is absent).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from analyzer import analyze, confidence, load_dataset, report
from analyzer.analysis import _merge_recommendations
from analyzer.bottleneck import locate
from analyzer.recommend import TEMPLATES, Recommendation, applies, recommend
from analyzer.rootcause import infer
from analyzer.thresholds import default_thresholds
from tests.analyzer.synthetic import make_indicators

TH = default_thresholds()


def _rec(rid: str, scope: str, basis: tuple[str, ...], score: float) -> Recommendation:
    """A SYNTHETIC recommendation of one scope."""
    return Recommendation(id=rid, title=rid, kind="host", scopes=(scope,), priority="high", priority_score=score,
                          basis=basis, actions=(), gain=None, validation="", risk="",
                          needs_version_confirmation=False, hypotheses=(f"{rid}.h",))


def _scopes(**recs: list[Recommendation]) -> dict[str, SimpleNamespace]:
    return {name: SimpleNamespace(recommendations=tuple(rs)) for name, rs in recs.items()}


def test_merge_lists_every_scope_in_order_and_keeps_the_most_evidence() -> None:
    scopes = _scopes(
        overall=[_rec("x", "overall", ("a",), 70.0)],
        prefill=[_rec("x", "prefill", ("a", "b", "c"), 60.0), _rec("y", "prefill", ("p",), 90.0)],
        decode=[_rec("x", "decode", ("a", "b"), 80.0)],
    )
    merged = {r.id: r for r in _merge_recommendations(scopes)}
    assert set(merged) == {"x", "y"}
    x = merged["x"]
    # all three scopes, in scope order: truncating the list (first / best scope only) fails here
    assert x.scopes == ("overall", "prefill", "decode")
    # the prefill row has 3 evidence lines, more than decode (2) and overall (1): it is the one kept
    assert x.basis == ("a", "b", "c") and x.priority_score == 60.0
    assert merged["y"].scopes == ("prefill",)
    # sorted by priority score, highest first: y (90) before x (60)
    assert [r.id for r in _merge_recommendations(scopes)] == ["y", "x"]


def test_merge_keeps_the_first_scope_on_equal_evidence_and_the_most_when_it_comes_last() -> None:
    tie = _scopes(overall=[_rec("x", "overall", ("a", "b"), 50.0)], decode=[_rec("x", "decode", ("c", "d"), 99.0)])
    (only,) = _merge_recommendations(tie)
    assert only.basis == ("a", "b") and only.scopes == ("overall", "decode")
    last = _scopes(overall=[_rec("x", "overall", ("a",), 50.0)], decode=[_rec("x", "decode", ("c", "d"), 99.0)])
    (only,) = _merge_recommendations(last)
    assert only.basis == ("c", "d") and only.priority_score == 99.0


def test_applies_reads_the_template_phases() -> None:
    graph = TEMPLATES["host.enable-graph-mode"]  # seed §6.1: graph mode is a decode measure
    assert graph.phases == ("decode", "overall")
    assert applies(graph, "decode", "decode") and not applies(graph, "prefill", "prefill")
    assert applies(graph, "overall", None) and applies(graph, "overall", "decode")
    assert not applies(graph, "overall", "prefill")  # overall read as its dominant phase, prefill
    sync = TEMPLATES["host.remove-sampler-sync"]
    assert all(applies(sync, s, p) for s, p in (("prefill", "prefill"), ("decode", "decode"), ("overall", "prefill")))


def test_recommend_filters_by_phase_and_outputs_the_phases() -> None:
    ind = make_indicators(device_idle_pct=30, host_exclusive_pct=50, dispatch_ops_per_step=1500,
                          host_exclusive_per_step_us=3000, host_busy_pct=90, device_busy_pct=60, sync_op_count=0,
                          avg_step_us=10000, step_count=10)
    v = locate(ind, TH)
    hyps = infer(v, ind, TH, "decode")
    assert "host.eager-python-per-token" in {h.id for h in hyps}
    def ids(scope: str, phase: str | None) -> set[str]:
        return {r.id for r in recommend(scope, v, hyps, ind, phase)}

    assert "host.enable-graph-mode" in ids("decode", "decode") & ids("overall", "decode") & ids("overall", None)
    assert "host.enable-graph-mode" not in ids("prefill", "prefill") | ids("overall", "prefill")
    # a template without a phase restriction stays everywhere
    assert "host.reduce-launch-gaps" not in TEMPLATES or TEMPLATES["host.reduce-launch-gaps"].phases == (
        "prefill", "decode", "overall")
    graph = next(r for r in recommend("decode", v, hyps, ind, "decode") if r.id == "host.enable-graph-mode")
    assert graph.to_dict()["applicable_phases"] == ["decode", "overall"]


def test_confidence_list_is_the_seed_order_with_reasons() -> None:
    facts = confidence.CaptureFacts("low", None, False, ("trace_view.json", "kernel_details.csv"), True, "ascend")
    steps = confidence.raise_confidence(facts)
    assert [s["id"] for s in steps] == ["separate-phases", "pipe-utilisation", "cann-statistics", "comm-statistics",
                                        "controlled-experiment"]
    assert [s["rank"] for s in steps] == [1, 2, 3, 4, 5]
    assert all(s["applies"] for s in steps)
    assert steps[2]["reason"] == "missing: op_statistic.csv, operator_details.csv, step_trace_time.csv"
    assert steps[3]["reason"] == "missing: communication.json, communication_matrix.json"
    full = confidence.CaptureFacts("high", None, True, (*confidence.CANN_TABLES, *confidence.COMM_FILES), False, "ascend")
    assert [s["applies"] for s in confidence.raise_confidence(full)] == [False, False, False, False, True]


@pytest.mark.needs_data
@pytest.mark.parametrize(("sample", "expected"), [
    # Level0 (one rank, README): no PipeUtilization columns, no op_statistic.csv. Level1 (two ranks): MAC/MTE2
    # present, all CANN tables and both communication files kept. Both: phase split inferred (low confidence).
    ("ascend/msinsight-level0", [True, True, True, False, True]),
    ("ascend/msinsight-level1", [True, False, False, False, True]),
])
def test_confidence_list_on_real_captures(profile_path, sample: str, expected: list[bool]) -> None:  # type: ignore[no-untyped-def]
    a = analyze(load_dataset(profile_path(sample)))
    d = a.to_dict()
    steps = d["ranks"][0]["how_to_raise_confidence"]
    assert [s["applies"] for s in steps] == expected
    if expected[2]:
        assert steps[2]["reason"] == "missing: op_statistic.csv"
    md = report.to_markdown(a)
    warnings_part = md.split("## Warnings", 1)[1].split("## Thresholds in effect", 1)[0]
    assert "### How to raise confidence (seed §8" in warnings_part
    assert "1. Capture prefill and decode separately" in warnings_part
    assert ("2. Enable the AI Core metrics (PipeUtilization)" in warnings_part) is expected[1]
    assert "<h3>How to raise confidence" in report.to_html(a)
    # the applicable phases of each recommendation are a column of the report (seed §5 "适用阶段")
    assert "| phases |" in md and "| prefill, decode, overall |" in md
