"""``step_trace_time.csv`` is used for totals only when its cells parse and its totals agree with the trace
(issue: a table that contradicts the trace, is in ms, has ``"8,873.756"`` or NaN flipped the verdict from
communication to "device compute" when it supplied the totals)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from analyzer import steptable
from analyzer.phases import Step

#: SYNTHETIC: one step of 136,581 + 17,902.5 µs as torch_npu partitions it (numbers shaped like the shared Level1)
ROW = {"Step": "50", "Computing": 8873.756, "Communication(Not Overlapped)": 101963.203, "Overlapped": 4028.675,
       "Communication": 105991.878, "Free": 25744.05, "Preparing": 17902.5}
STEP = Step(index=0, number=50, start_us=0.0, end_us=155985.8)


@dataclasses.dataclass(frozen=True)
class _Rank:
    rank: int
    tables: dict[str, pd.DataFrame]


def _check(**changes: object) -> tuple[_Rank, list[str]]:
    rank = _Rank(0, {"step_trace_time": pd.DataFrame([ROW | changes])})
    return steptable.checked(rank, (STEP,))


def test_agreeing_table_is_kept() -> None:
    rank, warnings = _check()
    assert "step_trace_time" in rank.tables and warnings == []


@pytest.mark.parametrize(("changes", "said"), [
    ({"Computing": "8,873.756"}, "Computing line 2 '8,873.756'"),
    ({"Free": float("nan")}, "Free line 2 'nan'"),
])
def test_unparsable_cells_are_named_and_the_table_not_used(changes: dict[str, object], said: str) -> None:
    rank, warnings = _check(**changes)
    assert "step_trace_time" not in rank.tables
    assert len(warnings) == 1 and said in warnings[0] and "not used for totals" in warnings[0]


def test_table_in_ms_disagrees_and_is_not_used() -> None:
    ms = {k: v / 1000 for k, v in ROW.items() if isinstance(v, float)}
    rank, warnings = _check(**ms)
    assert "step_trace_time" not in rank.tables
    assert "disagree with the trace" in warnings[0] and "-99.9 %" in warnings[0]


def test_real_level1_table_agrees_with_its_trace(profile_path) -> None:  # type: ignore[no-untyped-def]
    from analyzer.dataset import load_dataset
    from analyzer.phases import plan_phases
    from analyzer.thresholds import resolve

    path: Path = profile_path("ascend/msinsight-level1")
    for r in load_dataset(path, workers=1).ranks:
        plan = plan_phases(r.events, resolve(None), r.tables.get("step_trace_time"), None)
        kept, warnings = steptable.checked(r, plan.steps)
        assert warnings == [] and "step_trace_time" in kept.tables
