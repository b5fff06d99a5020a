"""ndval.core.stats: MAPE, correlations and the one rule for undefined input (synthetic values)."""

from __future__ import annotations

import math

import pytest

from ndval.core import stats


def test_mape_is_a_fraction_of_positive_measurements() -> None:
    # |2−1|/1 = 1, |3−3|/3 = 0 → mean 0.5
    assert stats.mape([2.0, 3.0], [1.0, 3.0]) == 0.5
    with pytest.raises(ValueError, match="> 0"):
        stats.mape([1.0], [0.0])
    with pytest.raises(ValueError, match="no pairs"):
        stats.mape([], [])


def test_spearman_and_pearson_signs() -> None:
    assert stats.spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert stats.spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
    assert stats.spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert stats.pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)


@pytest.mark.parametrize("x,y", [([1, 1, 1], [1, 2, 3]), ([1, 2, 3], [5, 5, 5]), ([1], [2]), ([], [])])
def test_undefined_input_gives_nan_for_both_methods(x: list[float], y: list[float]) -> None:
    assert stats.undefined(x, y)
    assert math.isnan(stats.spearman(x, y)) and math.isnan(stats.pearson(x, y))
    c = stats.correlation("pearson", x, y)
    assert c.p_value is None and c.ci95 is None


def test_correlation_interval_and_pvalue() -> None:
    c = stats.correlation("spearman", [1, 2, 3, 4, 5, 6], [1, 3, 2, 5, 4, 6])
    assert c.n == 6 and 0 < c.p_value < 0.1
    lo, hi = c.ci95
    assert lo < c.r < hi
    assert stats.fisher_ci(0.5, 3) is None and stats.r_pvalue(1.0, 10) is None


def test_grouped_leaves_out_small_and_constant_groups_with_reason() -> None:
    x = [1, 2, 3, 1, 1, 1, 1, 2, float("nan"), 3]
    y = [1, 2, 3, 3, 2, 1, 2, 1, 5, 4]
    g = ["a", "a", "a", "b", "b", "b", "c", "c", "c", "d"]
    per = {p.key: p for p in stats.grouped("spearman", x, y, g, min_n=3)}
    assert per["a"].r == pytest.approx(1.0) and per["a"].left_out is None
    assert per["b"].r is None and per["b"].left_out == "constant x"
    assert per["c"].n == 2 and per["c"].left_out == "fewer than 3 finite pairs"
    assert per["d"].left_out is not None
    assert stats.summarise(list(per.values())) == pytest.approx(1.0)
    assert math.isnan(stats.summarise([per["b"]]))


def test_summaries() -> None:
    groups = [stats.GroupCorrelation(k, 3, r, None, None) for k, r in (("a", 0.2), ("b", 0.6), ("c", 0.7))]
    assert stats.summarise(groups, "median") == pytest.approx(0.6)
    assert stats.summarise(groups, "mean") == pytest.approx(0.5)
    assert stats.summarise(groups, "min") == pytest.approx(0.2)
