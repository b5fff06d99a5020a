"""Interval algebra: hand-worked cases and properties against a brute-force grid (SYNTHETIC intervals)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer import timeline as tl


def iv(*pairs: tuple[float, float]) -> tl.Intervals:
    return tl.union(np.array([p[0] for p in pairs], float), np.array([p[1] for p in pairs], float))


def test_union_merges_overlapping_touching_and_drops_empty() -> None:
    u = iv((5, 7), (0, 2), (1, 3), (3, 4), (9, 9), (8, 6))
    # [0,2)∪[1,3)∪[3,4) = [0,4); [5,7); zero-length and reversed dropped
    assert u.start_us.tolist() == [0, 5] and u.end_us.tolist() == [4, 7]
    assert u.length_us == 6 and u.span_us == 7


def test_intersect_subtract_exclusive() -> None:
    a = iv((0, 10), (20, 30))
    b = iv((5, 25))
    assert tl.intersect(a, b).start_us.tolist() == [5, 20]
    assert tl.overlap_us(a, b) == 10          # [5,10) + [20,25)
    assert tl.exclusive_us(a, b) == 10        # [0,5) + [25,30)
    assert tl.subtract(b, a).length_us == 10  # [10,20)
    assert tl.gaps(a, 0, 40).length_us == 20  # [10,20) + [30,40)
    assert tl.clip(a, 8, 22).length_us == 4


def test_empty_sets() -> None:
    e = tl.empty()
    a = iv((0, 1))
    assert tl.intersect(a, e).length_us == 0 and tl.subtract(a, e).length_us == 1
    assert tl.merge(e, e).count == 0 and e.span_us == 0


def test_large_input_is_vectorized() -> None:
    rng = np.random.default_rng(0)
    s = rng.uniform(0, 1e7, 1_000_000)
    u = tl.union(s, s + rng.uniform(0, 20, s.size))
    assert 0 < u.length_us <= 1e7 + 20


def _grid(pairs: list[tuple[int, int]]) -> np.ndarray:
    cover = np.zeros(64, dtype=bool)
    for s, e in pairs:
        cover[s:e] = True
    return cover


intervals = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60)), max_size=12)


@settings(max_examples=150, deadline=None)
@given(intervals, intervals)
def test_algebra_matches_brute_force(a_pairs: list, b_pairs: list) -> None:
    a = tl.union(np.array([p[0] for p in a_pairs], float), np.array([p[1] for p in a_pairs], float))
    b = tl.union(np.array([p[0] for p in b_pairs], float), np.array([p[1] for p in b_pairs], float))
    ga, gb = _grid(a_pairs), _grid(b_pairs)
    assert a.length_us == ga.sum()
    assert tl.overlap_us(a, b) == (ga & gb).sum()
    assert tl.exclusive_us(a, b) == (ga & ~gb).sum()
    assert tl.merge(a, b).length_us == (ga | gb).sum()
    assert np.all(np.diff(a.start_us) > 0) and np.all(a.start_us[1:] > a.end_us[:-1])


def test_from_events() -> None:
    import pandas as pd

    df = pd.DataFrame({"ts_us": [0.0, 1.0, 10.0], "dur_us": [2.0, 2.0, 0.5]})
    assert tl.from_events(df).length_us == pytest.approx(3.5)
