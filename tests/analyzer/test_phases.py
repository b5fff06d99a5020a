"""Phase scopes: labels only when labels, annotations (mstx / vLLM scopes), bimodality, override, confidence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analyzer.ingest import events as ev
from analyzer.phases import DECODE, PREFILL, bimodal_split, plan_phases
from analyzer.thresholds import default_thresholds

TH = default_thresholds()


def table(rows: list[tuple[str, str, str, float, float]]) -> pd.DataFrame:
    """SYNTHETIC event table rows: (name, category, side, ts_us, dur_us)."""
    df = pd.DataFrame(rows, columns=["name", "category", "side", "ts_us", "dur_us"])
    for c, default in (("pid", 1), ("tid", 1), ("stream", ""), ("rank", 0), ("step", -1), ("sub", ""), ("corr", -1),
                       ("bytes", np.nan)):
        df[c] = default
    return ev.conform(df)


def steps_table(durs: list[float], markers: bool = True, gap: float = 5000.0) -> pd.DataFrame:
    rows, t = [], 0.0
    for i, d in enumerate(durs):
        if markers:
            rows.append((f"ProfilerStep#{i}", ev.STEP, "host", t, d))
        rows.append(("k", ev.COMPUTE, "device", t + 1, d - 2))
        t += d + gap
    return table(rows)


def test_numeric_stage_column_is_not_a_label() -> None:
    st = pd.DataFrame({"Step": ["0", "1"], "Stage": [136581.0, 120000.0]})
    plan = plan_phases(steps_table([1000.0, 1000.0]), TH, st)
    assert plan.method == "none" and plan.confidence == "low"
    assert "holds numbers" in plan.reason and set(plan.scopes) == {"overall"}


def test_label_column_with_labels_is_used() -> None:
    st = pd.DataFrame({"Step": ["0", "1", "2"], "Phase": ["prefill", "decode", "decode"]})
    plan = plan_phases(steps_table([9000.0, 1000.0, 1000.0]), TH, st)
    assert plan.method == "labels" and plan.confidence == "high"
    assert [s.phase for s in plan.steps] == [PREFILL, DECODE, DECODE]


def test_bimodal_split_and_dominant_phase() -> None:
    durs = [20000.0, 2000.0, 2100.0, 1900.0, 21000.0, 2050.0, 1950.0, 2000.0]
    plan = plan_phases(steps_table(durs, markers=False), TH)
    assert plan.step_source.startswith("inferred") and len(plan.steps) == 8
    assert plan.method == "bimodal" and plan.confidence == "medium" and "inferred" in plan.reason
    assert [s.phase for s in plan.steps].count(PREFILL) == 2
    assert plan.dominant == PREFILL  # 2 × ~20 ms > 6 × ~2 ms


def test_unimodal_noise_is_not_two_phases() -> None:
    rng = np.random.default_rng(0)
    mask, reason = bimodal_split(rng.normal(5000, 300, size=40), TH)
    assert mask is None and "no step-length bimodality" in reason


def test_annotations_name_the_phase() -> None:
    base = steps_table([5000.0, 1000.0])
    ann = table([("mstx_prefill", ev.ANNOTATION, "host", 0.0, 5000.0), ("mstx_decode", ev.ANNOTATION, "host", 10000.0, 1000.0)])
    plan = plan_phases(pd.concat([base, ann], ignore_index=True), TH)
    assert plan.method == "annotations" and plan.confidence == "high"
    assert plan.scopes[PREFILL] == ((0.0, 5000.0),) and [s.phase for s in plan.steps] == [PREFILL, DECODE]


def test_vllm_scopes_define_steps() -> None:
    rows = [("execute_model", ev.ANNOTATION, "host", t, 900.0) for t in (0.0, 1000.0, 2000.0)]
    rows += [("k", ev.COMPUTE, "device", t + 10, 800.0) for t in (0.0, 1000.0, 2000.0)]
    plan = plan_phases(table(rows), TH)
    assert plan.step_source == "vLLM model-step scopes" and len(plan.steps) == 3


def test_override_reads_whole_window_as_phase() -> None:
    plan = plan_phases(steps_table([1000.0, 1000.0]), TH, override=DECODE)
    assert plan.method == "override" and plan.scopes[DECODE] == plan.scopes["overall"] and plan.dominant == DECODE
    with pytest.raises(ValueError, match="phase override"):
        plan_phases(steps_table([1000.0]), TH, override="train")


def test_single_step_note() -> None:
    plan = plan_phases(steps_table([1000.0]), TH)
    assert any("only one step" in n for n in plan.notes)
