"""Unit tests of the seed §7 comparison rules over plain data (synthetic inputs only)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import analyzer.compare as cmp
from analyzer.compare import OperatorTotal, RecommendationRef
from tests.analyzer.compare_synthetic import SYNTHETIC_EXPECTED_VERDICTS, synthetic_pair

# ---------------------------------------------------------------- §7.1 metric directions


def test_metric_table_has_the_seed_23_metrics_with_directions():
    assert len(cmp.METRICS) == 23
    counts = {d: sum(1 for m in cmp.METRICS if m.direction == d)
              for d in ("lower_better", "higher_better", "background")}
    assert counts == {"lower_better": 17, "higher_better": 2, "background": 4}
    assert len({m.id for m in cmp.METRICS}) == 23


@pytest.mark.parametrize(
    ("before", "after", "direction", "status"),
    [
        (100.0, 90.0, "lower_better", "improved"),
        (100.0, 110.0, "lower_better", "regressed"),
        (100.0, 110.0, "higher_better", "improved"),
        (100.0, 90.0, "higher_better", "regressed"),
        (100.0, 100.99, "lower_better", "unchanged"),  # 0.99 % < 1 %
        (100.0, 99.01, "higher_better", "unchanged"),
        (100.0, 101.0, "lower_better", "regressed"),  # exactly 1 % is a change
        (100.0, 50.0, "background", "background"),
        (None, 50.0, "lower_better", "not_available"),
        (float("nan"), 50.0, "lower_better", "not_available"),
        (0.0, 0.0, "lower_better", "unchanged"),
        (0.0, 5.0, "lower_better", "regressed"),  # relative change undefined: sign decides
        (0.0, 5.0, "higher_better", "improved"),
    ],
)
def test_metric_status(before, after, direction, status):
    assert cmp.metric_status(before, after, direction) == status


def test_improvement_folds_direction_and_background_has_none():
    assert cmp.improvement_pct(200.0, 150.0, "lower_better") == pytest.approx(25.0)
    assert cmp.improvement_pct(40.0, 50.0, "higher_better") == pytest.approx(25.0)
    assert cmp.improvement_pct(40.0, 50.0, "background") is None
    assert cmp.relative_change_pct(0.0, 3.0) is None


def test_share_reversal_is_warned_when_wall_clock_shrinks():
    rows = [
        cmp.compare_metric(cmp.METRICS_BY_ID["avg_step_us"], 10_000.0, 8_000.0),
        cmp.compare_metric(cmp.METRICS_BY_ID["device_idle_pct"], 10.0, 12.0),  # share up, wall down
        cmp.compare_metric(cmp.METRICS_BY_ID["idle_gap_mean_us"], 10.0, 12.0),  # absolute: not a share
    ]
    warnings = cmp.share_reversal_warnings(rows)
    assert len(warnings) == 1 and "device_idle_pct" in warnings[0]
    rows[0] = cmp.compare_metric(cmp.METRICS_BY_ID["avg_step_us"], 10_000.0, 10_000.0)
    assert cmp.share_reversal_warnings(rows) == []


# ---------------------------------------------------------------- §7.2 verdicts


@pytest.mark.parametrize(
    ("gain", "threshold"),
    [(None, 1.0), (0.0, 1.0), (1.0, 1.0), (2.0, 1.0), (2.5, 1.25), (37.5, 18.75), (70.0, 35.0)],
)
def test_threshold_is_max_of_one_pct_and_half_the_gain(gain, threshold):
    assert cmp.verdict_threshold_pct(gain) == pytest.approx(threshold)


@pytest.mark.parametrize(
    ("observed", "threshold", "verdict"),
    [
        (18.75, 18.75, "achieved"),  # boundary: observed == threshold
        (30.0, 18.75, "achieved"),
        (18.74, 18.75, "partially_achieved"),
        (0.001, 1.0, "partially_achieved"),
        (0.0, 1.0, "not_achieved"),  # boundary: observed == 0
        (-5.0, 1.0, "not_achieved"),
        (None, 1.0, "not_judgeable"),
    ],
)
def test_each_verdict_branch(observed, threshold, verdict):
    assert cmp.recommendation_verdict(observed, threshold) == verdict


def test_targets_lookup_order():
    own = RecommendationRef("host.whatever", target_metrics=("sync_ops_per_step",))
    assert cmp.targets_for(own) == ("sync_ops_per_step",)
    assert cmp.targets_for(RecommendationRef("host.enable-graph-mode"))[0] == "dispatch_ops_per_step"
    assert cmp.targets_for(RecommendationRef("comm.some-new-advice")) == cmp.ADVICE_TARGETS["comm."]
    assert cmp.targets_for(RecommendationRef("collect.enable-aic-metrics")) == ()
    assert cmp.targets_for(RecommendationRef("unknown-family.x")) == ()


def test_judge_recommendation_writes_threshold_and_primary_into_payload():
    rec = RecommendationRef("host.enable-graph-mode", expected_gain_pct=37.5)
    before = {"dispatch_ops_per_step": None, "host_exclusive_per_step_us": 5000.0, "avg_step_us": 10_000.0}
    after = {"dispatch_ops_per_step": 300.0, "host_exclusive_per_step_us": 4000.0, "avg_step_us": 9_000.0}
    row = cmp.judge_recommendation(rec, before, after, still_listed=True)
    # dispatch ops are missing before, so the next target is the primary one: 20 % ≥ 18.75 %
    assert row["primary_metric"] == "host_exclusive_per_step_us"
    assert row["observed_improvement_pct"] == pytest.approx(20.0)
    assert row["threshold_pct"] == pytest.approx(18.75)
    assert row["threshold_rule"].startswith("max(1 %")
    assert row["verdict"] == "achieved"
    assert row["still_listed_after"] is True
    assert [t["metric"] for t in row["targets"]] == list(cmp.ADVICE_TARGETS["host.enable-graph-mode"])


def test_synthetic_pair_gives_the_verdicts_known_by_construction():
    before, after = synthetic_pair()
    result = cmp.compare_sides(before, after)
    got = {r["id"]: r["verdict"] for r in result.recommendations}
    assert got == SYNTHETIC_EXPECTED_VERDICTS
    rows = {r["id"]: r for r in result.recommendations}
    assert rows["host.enable-graph-mode"]["observed_improvement_pct"] == pytest.approx(80.0)
    assert rows["host.remove-sampler-sync"]["threshold_pct"] == pytest.approx(10.0)
    assert rows["host.remove-sampler-sync"]["observed_improvement_pct"] == pytest.approx(5.0)
    assert rows["comm.overlap"]["observed_improvement_pct"] == pytest.approx(-10.0)
    assert rows["collect.enable-aic-metrics"]["threshold_pct"] == pytest.approx(1.0)
    # "still listed after": only comm.overlap is recommended again
    assert {k for k, r in rows.items() if r["still_listed_after"]} == {"comm.overlap"}
    assert any("compute.fuse-small-ops" in w for w in result.warnings)


def test_synthetic_pair_bottleneck_shift_is_flagged_not_blocking():
    before, after = synthetic_pair()
    result = cmp.compare_sides(before, after)
    assert result.bottleneck["changed"] is True
    assert (result.bottleneck["before"], result.bottleneck["after"]) == ("host", "compute")
    scores = {s["kind"]: s for s in result.bottleneck["scores"]}
    assert scores["host"]["delta"] == pytest.approx(-62.0)
    assert result.comparable is True
    assert result.comparability["level"] == "comparable_with_caveats"
    assert "bottleneck_change" in result.comparability["flags"]
    assert "window" in result.comparability["flags"]  # 200 ms -> 140 ms = 30 % > 20 %
    assert "bottleneck host -> compute" in result.headline["sentence"]


# ---------------------------------------------------------------- §7.3 comparability


def _fired(check: cmp.Check) -> tuple[bool, bool]:
    return check.triggered, check.blocking


@pytest.mark.parametrize(("before", "after", "fired"), [(100, 100, False), (100, 85, False), (100, 84, True),
                                                        (84, 100, True), (None, 10, False)])
def test_step_count_rule(before, after, fired):
    check = cmp.check_step_count(before, after)
    assert check.triggered is fired and check.blocking is True


@pytest.mark.parametrize(("after_decode", "fired"), [(70.0, False), (69.9, True)])
def test_phase_mix_rule(after_decode, fired):
    check = cmp.check_phase_mix({"prefill": 20.0, "decode": 80.0},
                                {"prefill": 100.0 - after_decode, "decode": after_decode})
    assert _fired(check) == (fired, True)
    assert cmp.check_phase_mix({}, {}).triggered is False


def test_phase_override_rule():
    assert _fired(cmp.check_phase_override(None, None)) == (False, True)
    assert _fired(cmp.check_phase_override("decode", None)) == (True, True)


def test_sampling_rule_names_the_sampled_side():
    assert not cmp.check_sampling(False, False).triggered
    check = cmp.check_sampling(False, True, after_note="kept 1 in 10 kernel events")
    assert _fired(check) == (True, True)
    assert "after" in check.reason and "1 in 10" in check.reason


@pytest.mark.parametrize(
    ("totals_source", "sampled"),
    [
        ("trace", False),
        ("csv", False),  # CSV tables only, no trace: read in full, not sampled
        ("trace (event budget: host events sampled; device totals complete)", True),
        ("csv (event budget: device events sampled; step time totals from step_trace_time.csv)", True),
        ("trace (truncated)", True),
    ],
)
def test_which_totals_sources_count_as_sampled(totals_source, sampled):
    assert cmp.is_sampled_totals(totals_source) is sampled


def test_file_set_rule_lists_the_difference():
    a = frozenset({"trace_view.json", "kernel_details.csv"})
    b = frozenset({"trace_view.json", "kernel_details.csv", "communication.json"})
    assert not cmp.check_file_set(a, a).triggered
    check = cmp.check_file_set(a, b)
    assert _fired(check) == (True, True)
    assert "only after: communication.json" in check.reason
    assert not cmp.check_file_set(None, b).triggered


def test_totals_source_rule():
    assert not cmp.check_totals_source("trace", "trace").triggered
    assert _fired(cmp.check_totals_source("trace", "op_statistic")) == (True, True)


@pytest.mark.parametrize(
    ("check", "args"),
    [
        (cmp.check_bottleneck, ("host", "compute")),
        (cmp.check_window, (100_000.0, 79_000.0)),
        (cmp.check_rank, ((3,), (1,))),
    ],
)
def test_flag_only_checks_fire_but_do_not_block(check, args):
    assert _fired(check(*args)) == (True, False)


@pytest.mark.parametrize(
    ("check", "args"),
    [
        (cmp.check_hardware, (("NVIDIA A100-PG509-200",), ("Tesla V100-SXM2-16GB",))),
        (cmp.check_world_size, (8, 2)),
    ],
)
def test_hardware_and_world_size_changes_block(check, args):
    assert _fired(check(*args)) == (True, True)


def test_flag_only_checks_quiet_when_equal():
    assert not cmp.check_window(100_000.0, 80_000.0).triggered  # exactly 20 % is not > 20 %
    assert not cmp.check_hardware(("A",), ("A",)).triggered
    assert not cmp.check_hardware((), ("A",)).triggered
    assert not cmp.check_world_size(2, 2).triggered
    assert not cmp.check_rank((0,), (0,)).triggered


@pytest.mark.parametrize(
    ("field", "value", "blocking_id"),
    [
        ("step_count", 10, "step_count"),
        ("phase_shares_pct", {"decode": 50.0, "prefill": 50.0}, "phase_mix"),
        ("phase_override", "prefill", "phase_override"),
        ("sampled", True, "sampling"),
        ("files", frozenset({"trace_view.json"}), "file_set"),
        ("totals_source", "op_statistic", "totals_source"),
    ],
)
def test_each_of_the_first_six_checks_makes_the_pair_not_comparable(field, value, blocking_id):
    before, _ = synthetic_pair()
    after = dataclasses.replace(before, label="changed", **{field: value})
    result = cmp.compare_sides(before, after)
    assert result.comparable is False
    assert result.comparability["blocking"] == [blocking_id]
    assert result.comparability["level"] == "not_comparable"
    assert any(r.startswith(blocking_id + ":") for r in result.comparability["reasons"])
    assert "NOT COMPARABLE" in result.headline["sentence"]


def test_identical_sides_are_comparable_and_unchanged():
    before, _ = synthetic_pair()
    result = cmp.compare_sides(before, before)
    assert result.comparable is True and result.comparability["level"] == "comparable"
    assert {r["status"] for r in result.metrics} <= {"unchanged", "background"}
    assert result.operators == {"saved": [], "added": []}
    assert all(r["verdict"] == ("not_judgeable" if r["id"].startswith("collect.") else "not_achieved")
               for r in result.recommendations)


_side_fields = st.fixed_dictionaries({
    "step_count": st.integers(1, 1000),
    "window_us": st.floats(1.0, 1e9),
    "world_size": st.integers(1, 64),
    "phase_override": st.sampled_from([None, "prefill", "decode"]),
})


@settings(max_examples=60, deadline=None)
@given(_side_fields, _side_fields)
def test_comparability_is_symmetric(a_fields, b_fields):
    base, _ = synthetic_pair()
    a = dataclasses.replace(base, **a_fields)
    b = dataclasses.replace(base, **b_fields)
    ab = cmp.comparability_summary(cmp.comparability_checks(a, b))
    ba = cmp.comparability_summary(cmp.comparability_checks(b, a))
    assert (ab["comparable"], ab["blocking"], ab["flags"]) == (ba["comparable"], ba["blocking"], ba["flags"])


# ---------------------------------------------------------------- §7.4 sections


def test_operator_changes_top_saved_and_added_with_means():
    before = {f"op{i}": OperatorTotal(100.0 * (i + 1), 10) for i in range(12)}
    after = {f"op{i}": OperatorTotal(100.0 * (i + 1) + (-(i + 1) * 10 if i % 2 else (i + 1) * 5), 10)
             for i in range(12)}
    after["new_op"] = OperatorTotal(50.0, 5)
    out = cmp.operator_changes(before, after)
    assert len(out["saved"]) == 6 and len(out["added"]) == 7  # only 6 odd ops saved; 6 even + new added
    assert out["saved"][0]["name"] == "op11" and out["saved"][0]["delta_us"] == pytest.approx(-120.0)
    assert out["saved"][0]["before_mean_us"] == pytest.approx(120.0)
    assert out["saved"][0]["after_mean_us"] == pytest.approx(108.0)
    assert out["added"][0]["name"] == "op10"
    new = next(r for r in out["added"] if r["name"] == "new_op")
    assert new["before_count"] == 0 and new["before_mean_us"] is None and new["after_mean_us"] == 10.0
    many = {f"x{i}": OperatorTotal(float(i), 1) for i in range(1, 20)}
    assert len(cmp.operator_changes({}, many)["added"]) == 8  # seed §7.4: the 8 adding the most


def test_category_changes_sorted_by_absolute_change_with_shares():
    rows = cmp.category_changes({"compute": 80.0, "communication": 20.0},
                                {"compute": 60.0, "communication": 30.0, "memcpy": 10.0})
    assert [r["category"] for r in rows] == ["compute", "communication", "memcpy"]
    assert rows[0]["before_share_pct"] == pytest.approx(80.0)
    assert rows[0]["after_share_pct"] == pytest.approx(60.0)
    assert rows[2]["rel_change_pct"] is None  # 0 -> 10: undefined relative change


def test_payload_has_every_section_and_is_json():
    before, after = synthetic_pair()
    d = json.loads(cmp.compare_sides(before, after).to_json())
    assert list(d) == ["sides", "headline", "metrics", "categories", "operators", "bottleneck",
                       "recommendations", "findings", "comparability", "warnings"]  # findings: analyzer.advisor
    assert set(d["headline"]["values"]) == set(cmp.HEADLINE_METRICS)
    assert d["headline"]["values"]["avg_step_us"]["improvement_pct"] == pytest.approx(30.0)
    assert len(d["metrics"]) == 23
    assert d["sides"]["before"]["label"] == "synthetic-before-eager"
    assert len(d["comparability"]["checks"]) == 11


def test_markdown_and_html_render_every_section():
    before, after = synthetic_pair()
    result = cmp.compare_sides(before, after)
    md = cmp.render_markdown(result)
    for heading in ("## Comparability", "## Sides", "## Metrics", "## Categories", "## Operators that saved",
                    "## Operators that added", "## Bottleneck", "## Recommendations", "## Warnings"):
        assert heading in md
    assert "host.enable-graph-mode | achieved" in md
    page = cmp.render_html(result)
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page and "partially_achieved" in page


def test_rules_come_from_the_thresholds_parameters():
    """Every seed §7 number is a compare* parameter: an override reaches the verdict, the checks and the text."""
    from analyzer.thresholds import default_thresholds

    th = default_thresholds().with_overrides({"compareVerdictGainFactor": 0.25, "compareStepCountTolPct": 50,
                                              "compareTopOperators": 3})
    rules = cmp.CompareRules.from_thresholds(th)
    assert cmp.verdict_threshold_pct(20.0, rules) == pytest.approx(5.0)  # max(1, 20 × 0.25)
    assert cmp.verdict_threshold_pct(20.0) == pytest.approx(10.0)  # defaults: max(1, 20 × 0.5)
    assert not cmp.check_step_count(10, 6, rules).triggered and cmp.check_step_count(10, 6).triggered
    before, after = synthetic_pair()
    result = cmp.compare_sides(before, after, rules)
    assert all(r["threshold_rule"] == "max(1 %, expected_gain_pct × 0.25)" for r in result.recommendations)
    assert "`max(1 %, expected gain × 0.25)`" in cmp.render_markdown(result)
    many = {f"x{i}": OperatorTotal(float(i), 1) for i in range(1, 20)}
    assert len(cmp.operator_changes({}, many, rules.top_operators)["added"]) == 3
