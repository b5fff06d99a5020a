"""Unit tests of the assertion registry on synthetic run results."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ndval.harness.assertions import REGISTRY, AssertionUsageError, EvalContext
from ndval.harness.results import RunResult

CTX = EvalContext()


def check(spec: dict, table: list[dict] | None = None, values: dict | None = None):
    model = REGISTRY[spec["type"]].model_validate({"id": spec["type"], **spec})
    return model.evaluate(RunResult(table=table or [], values=values or {}), CTX)


def test_every_spec_type_is_registered() -> None:
    expected = {"ratio_within", "rel_error_le", "abs_error_le", "pearson_r_gt", "spearman_rho_gt", "magnitude_within",
                "share_le", "monotonic", "invariant", "verdict_equals", "bottleneck_is", "score_between", "golden_match",
                "mape_le"}
    assert expected <= set(REGISTRY)


def test_ratio_within_reports_rows_margin_and_mostly() -> None:
    table = [{"config": "A", "e": 8255, "m": 10941}, {"config": "D", "e": 6174, "m": 5850}]
    res = check({"type": "ratio_within", "estimate": "e", "measured": "m", "lo": 0.85, "hi": 1.10}, table)
    assert not res.passed
    assert res.stats["n_passed"] == 1
    assert res.margin == pytest.approx(8255 / 10941 - 0.85)  # A is 0.0955 below the band
    assert [r["row"] for r in res.rows if not r["passed"]] == ["A"]
    res = check({"type": "ratio_within", "estimate": "e", "measured": "m", "lo": 0.85, "hi": 1.10, "mostly": 0.5}, table)
    assert res.passed


def test_where_filter_and_missing_column_are_usage_errors() -> None:
    table = [{"tp": 1, "e": 1.0, "m": 1.0}]
    assert check({"type": "ratio_within", "estimate": "e", "measured": "m", "lo": 0.9, "hi": 1.1, "where": {"tp": 1}}, table).passed
    with pytest.raises(AssertionUsageError, match="no result rows match"):
        check({"type": "ratio_within", "estimate": "e", "measured": "m", "lo": 0.9, "hi": 1.1, "where": {"tp": 2}}, table)
    with pytest.raises(AssertionUsageError, match="column 'x'"):
        check({"type": "ratio_within", "estimate": "x", "measured": "m", "lo": 0.9, "hi": 1.1}, table)


def test_pearson_constant_input_fails_clearly() -> None:
    table = [{"x": 1.0, "y": v} for v in (1.0, 2.0, 3.0, 4.0)]
    res = check({"type": "pearson_r_gt", "x": "x", "y": "y", "min": 0.5}, table)
    assert not res.passed and "constant input" in res.message


def test_pearson_computed_with_ci_and_recorded_fact_with_p_value() -> None:
    table = [{"x": float(i), "y": 2.0 * i + (i % 2)} for i in range(8)]
    res = check({"type": "pearson_r_gt", "x": "x", "y": "y", "min": 0.5}, table)
    # by hand: x̄ = 3.5, ȳ = 7.5 (y = 0 3 4 7 8 11 12 15); Sxx = 42, Syy = 178, Sxy = 86
    r = 86 / math.sqrt(42 * 178)  # 0.99464; Spearman's rho here is exactly 1 (y is monotonic in x)
    assert res.passed and res.stats["n"] == 8 and res.observed == pytest.approx(r, rel=1e-12)
    # 95 % interval by Fisher's z: tanh(atanh r ± 1.959964 / sqrt(n − 3))
    z, half = math.atanh(r), 1.959964 / math.sqrt(8 - 3)
    assert res.stats["ci95"] == pytest.approx([math.tanh(z - half), math.tanh(z + half)], abs=1e-8)
    assert res.margin == pytest.approx(r - 0.5, rel=1e-12)
    # the gate sits between r and 1: a rank correlation in its place would pass min 0.995
    assert not check({"type": "pearson_r_gt", "x": "x", "y": "y", "min": 0.995}, table).passed
    assert check({"type": "pearson_r_gt", "x": "x", "y": "y", "min": 0.994}, table).passed
    rec = check({"type": "pearson_r_gt", "recorded": "r", "n": 6, "min": 0.5, "where": {"c": "PP_WAIT"}},
                [{"c": "PP_WAIT", "r": -0.197}, {"c": "COMP", "r": 0.999}])
    assert not rec.passed and rec.observed == pytest.approx(-0.197)
    # t = r·sqrt((n-2)/(1-r²)) = -0.197·sqrt(4/0.961) = -0.402 → two-sided p ≈ 0.708 with 4 dof; Student's t
    # with 4 dof has the closed form F(t) = 1/2 + (3/4)·x·(1 − x²/3), x = t / sqrt(4 + t²)
    t = -0.197 * math.sqrt(4 / (1 - 0.197**2))
    x = t / math.sqrt(4 + t * t)
    cdf = 0.5 + 0.75 * x * (1 - x * x / 3)
    assert rec.stats["p_value"] == pytest.approx(2 * min(cdf, 1 - cdf), rel=1e-9)
    # and its Fisher-z interval: tanh(atanh(-0.197) ± 1.959964 / sqrt(6 − 3))
    z, half = math.atanh(-0.197), 1.959964 / math.sqrt(3)
    assert rec.stats["ci95"] == pytest.approx([math.tanh(z - half), math.tanh(z + half)], abs=1e-6)


def test_spearman_and_mape() -> None:
    table = [{"e": 1.0, "m": 1.1}, {"e": 2.0, "m": 1.9}, {"e": 3.0, "m": 3.3}, {"e": 4.0, "m": 4.0}]
    assert check({"type": "spearman_rho_gt", "x": "e", "y": "m", "min": 0.9}, table).observed == pytest.approx(1.0)
    res = check({"type": "mape_le", "estimate": "e", "measured": "m", "max": 0.05}, table)
    # |1-1.1|/1.1 + |2-1.9|/1.9 + |3-3.3|/3.3 + 0 = 0.0909 + 0.0526 + 0.0909 → mean 0.0586
    assert res.observed == pytest.approx((0.1 / 1.1 + 0.1 / 1.9 + 0.3 / 3.3) / 4) and not res.passed


def test_monotonic_with_inverse_scaling() -> None:
    table = [{"ep": ep, "tp": 1, "y": 304.0 * 2 / ep} for ep in (2, 4, 8)]
    spec = {"type": "monotonic", "x": "ep", "y": "y", "direction": "decreasing", "exponent": -1, "group_by": ["tp"]}
    assert check(spec, table).passed
    table[2]["y"] = 100.0  # still decreasing but not 1/EP
    res = check(spec, table)
    assert not res.passed and res.rows[0]["monotonic"] and res.rows[0]["scaling_deviation"] > 0.1


def test_share_le_magnitude_invariant_and_values() -> None:
    parts = [{"c": 1.0, "ep": 9.5, "t": 10.5}]
    assert not check({"type": "share_le", "parts": ["c", "ep"], "total": "t", "max": 0.9}, parts).passed
    assert check({"type": "magnitude_within", "estimate": "e", "measured": "m", "factor": 10}, [{"e": 0.5, "m": 4.0}]).passed
    assert not check({"type": "magnitude_within", "estimate": "e", "measured": "m"}, [{"e": 1e7, "m": 1.0}]).passed
    assert check({"type": "invariant", "a": "a", "b": "b"}, [{"a": 1.0, "b": 1.0}]).passed
    assert not check({"type": "invariant", "a": "a", "b": "b"}, [{"a": 1.0, "b": 1.0 + 1e-12}]).passed
    assert check({"type": "verdict_equals", "field": "v", "expected": "ok"}, values={"v": "ok"}).passed
    assert not check({"type": "bottleneck_is", "expected": "compute"}, values={"bottleneck": "memory"}).passed
    assert check({"type": "score_between", "field": "s", "lo": 0, "hi": 1}, values={"s": 0.3}).passed


@settings(max_examples=60, deadline=None)
@given(est=st.floats(1, 1e6), meas=st.floats(1, 1e6), lo=st.floats(0.1, 1.0), width=st.floats(0, 1))
def test_ratio_within_agrees_with_arithmetic(est: float, meas: float, lo: float, width: float) -> None:
    hi = lo + width
    res = check({"type": "ratio_within", "estimate": "e", "measured": "m", "lo": lo, "hi": hi}, [{"e": est, "m": meas}])
    ratio = est / meas
    assert res.passed == (lo <= ratio <= hi)
    assert math.isclose(res.margin, min(ratio - lo, hi - ratio), rel_tol=1e-9, abs_tol=1e-12)


def test_column_in_checks_categories_per_row() -> None:
    table = [{"experiment": "EXP-1", "config": c, "direction": d} for c, d in (("A", "up"), ("B", "same"), ("C", "down"))]
    res = check({"type": "column_in", "column": "direction", "allowed": ["up", "same"]}, table)
    assert not res.passed and "C=down" in res.message and res.observed == {"up": 1, "same": 1, "down": 1}
    assert check({"type": "column_in", "column": "direction", "allowed": ["up", "same"], "where": {"config": ["A", "B"]}}, table).passed


def _grouped_table() -> list[dict]:
    """Synthetic: group g1 ranks perfectly (rho 1), g2 backwards (rho -1), g3 half (rho 0.5),
    g4 has two rows (left out), g5 is constant in the estimate (left out)."""
    rows = []
    for g, est, meas in (("g1", [1, 2, 3], [10, 20, 30]), ("g2", [1, 2, 3], [30, 20, 10]),
                         ("g3", [1, 2, 3], [20, 10, 30]), ("g4", [1, 2], [1, 2]), ("g5", [5, 5, 5], [1, 2, 3])):
        rows += [{"config": f"{g}-{i}", "model": g, "gpus": 8, "e": e, "m": m}
                 for i, (e, m) in enumerate(zip(est, meas, strict=True))]
    return rows


def test_grouped_spearman_median_per_group_and_left_out_groups() -> None:
    spec = {"type": "spearman_rho_gt", "x": "e", "y": "m", "min": 0.5, "group_by": ["model", "gpus"]}
    res = check(spec, _grouped_table())
    assert res.observed == pytest.approx(0.5)  # median of 1, -1, 0.5
    assert not res.passed  # 0.5 > 0.5 is false ...
    assert check({**spec, "inclusive": True}, _grouped_table()).passed  # ... 0.5 >= 0.5 holds
    assert res.expected == "median over groups > 0.5"
    assert res.stats["n_groups"] == 3 and res.stats["n_groups_left_out"] == 2
    by_group = {r["group"]: r for r in res.rows}
    assert by_group["g1/8"]["r"] == pytest.approx(1.0) and by_group["g2/8"]["r"] == pytest.approx(-1.0)
    assert not by_group["g4/8"]["used"] and "fewer than 3" in by_group["g4/8"]["note"]
    assert "constant e" in by_group["g5/8"]["note"]
    assert "3 groups = 0.500" in res.message and "2 group(s) left out" in res.message
    assert check({**spec, "statistic": "min", "min": -1, "inclusive": True}, _grouped_table()).observed == pytest.approx(-1)
    # the pooled coefficient over the same rows is a different number (groups are what a search ranks)
    pooled = check({k: v for k, v in spec.items() if k != "group_by"}, _grouped_table())
    assert pooled.stats["n"] == 14 and pooled.observed != pytest.approx(res.observed)


def test_grouped_spearman_usage_errors_and_no_usable_group() -> None:
    with pytest.raises(AssertionUsageError, match="group_by: column"):
        check({"type": "spearman_rho_gt", "x": "e", "y": "m", "min": 0.5, "group_by": ["nope"]}, _grouped_table())
    with pytest.raises(AssertionUsageError, match="group_by needs x and y"):
        check({"type": "spearman_rho_gt", "recorded": "r", "n": 6, "min": 0.5, "group_by": ["model"]}, [{"r": 0.9, "model": "a"}])
    res = check({"type": "spearman_rho_gt", "x": "e", "y": "m", "min": 0.5, "group_by": ["config"]}, _grouped_table())
    assert not res.passed and res.observed is None and "no group" in res.message


def test_band_edges_are_exact() -> None:
    """Each band holds exactly its edges (the seed's 0.85-1.10, 20 %, 10x, 90 %): values on the edge pass,
    values a hair outside fail — a band widened by even 0.5 % fails this test. SYNTHETIC rows, m = 1000."""

    def rows(*estimates: float) -> list[dict]:
        return [{"e": e, "m": 1000.0} for e in estimates]

    ratio = {"type": "ratio_within", "estimate": "e", "measured": "m", "lo": 0.85, "hi": 1.10}
    err = {"type": "rel_error_le", "estimate": "e", "measured": "m", "max": 0.20}
    mag = {"type": "magnitude_within", "estimate": "e", "measured": "m", "factor": 10.0}
    cases = [(ratio, (850.0,), True), (ratio, (1100.0,), True), (ratio, (848.0,), False), (ratio, (1102.0,), False),
             # |error|: 20 % under and over pass; 20.2 % under fails as 20.2 % over does
             (err, (800.0,), True), (err, (1200.0,), True), (err, (798.0,), False), (err, (1202.0,), False),
             (mag, (10000.0,), True), (mag, (100.0,), True), (mag, (10050.0,), False), (mag, (99.5,), False)]
    for spec, est, ok in cases:
        assert check(spec, rows(*est)).passed is ok, (spec["type"], est)
    mape = {"type": "mape_le", "estimate": "e", "measured": "m", "max": 0.05}
    assert check(mape, rows(950.0, 1050.0)).passed  # mean |err| = 0.05
    assert not check(mape, rows(950.0, 1050.8)).passed  # 0.0504
    share = {"type": "share_le", "parts": ["a", "b"], "total": "t", "max": 0.9}
    assert check(share, [{"a": 9.0, "b": 1.0, "t": 10.0}]).passed
    assert not check(share, [{"a": 9.02, "b": 0.98, "t": 10.0}]).passed
    score = {"type": "score_between", "field": "s", "lo": 0.5, "hi": 0.8}
    assert check(score, values={"s": 0.5}).passed and check(score, values={"s": 0.8}).passed
    assert not check(score, values={"s": 0.498}).passed and not check(score, values={"s": 0.802}).passed
