"""Seed P3 (PP_WAIT ranking inverted): the ablations P3-E1..P3-E4 and the fix P3-01..P3-04.

Configs A-F are the seed's (``estimator.experiments.seed.seed_run``: published EP/TP/DP, assumed dimensions).
The ablations print their direction tables (run with ``-s`` to see them) and assert only what the
model's mathematics guarantees (spec §8).
"""

from __future__ import annotations

import pytest

import estimator
from estimator.config import presets
from estimator.experiments import ablation
from estimator.experiments.seed import SEED_CONFIGS, seed_run
from estimator.perf.parts import PerfReport

LABELS = list(SEED_CONFIGS)
BASE = ablation.legacy_seconds()  # the reference before the fixes, EP priced in seconds


def _perf(label: str, **options: object) -> PerfReport:
    return estimator.estimate_perf(estimator.load_config(seed_run(label, options={**presets.fixed(), **options})))


def _configs() -> list[tuple[str, dict]]:
    return [(label, seed_run(label)) for label in LABELS]


@pytest.mark.parametrize("base", [BASE, presets.legacy()], ids=["ep-seconds", "ep-bytes"])
def test_P3_E1_bubble_grows_or_stays_when_ep_comm_added(base: dict) -> None:
    # seed §2.3: 1F1B, p = 2, no DP tail (hack on): BUBBLE = min(s_i) never shrinks when EP is added
    rows = ablation.exp1_ep_comm_removed(_configs(), base)
    print("\nP3-E1\n" + ablation.format_rows(rows))
    assert len(rows) == 6
    for r in rows:
        assert r.after >= r.before, r
    # EP_COMM is really present in these MoE configs, so the comparison is not vacuous
    assert all(r.direction == "up" for r in rows)


def test_P3_E2_dp_hack_removed() -> None:
    rows = ablation.exp2_dp_hack_removed(_configs(), BASE)
    print("\nP3-E2\n" + ablation.format_rows(rows))
    for label, cfg in _configs():
        hacked = ablation.perf(ablation.with_options(cfg, {**BASE, "dp_comm_zero_hack": True}))
        real = ablation.perf(ablation.with_options(cfg, {**BASE, "dp_comm_zero_hack": False}))
        assert hacked.perf_parts["DP_COMM"] == 0.0
        assert real.perf_parts["DP_COMM"] > 0.0, label
        # adding a non-negative per-step tail can only lengthen the step
        assert real.total >= hacked.total


def test_P3_E3_dp_varied_at_fixed_ep() -> None:
    cfg = seed_run("B")  # EP = 4
    rows = ablation.exp3_dp_varied(cfg, [4, 8, 16], BASE)
    print("\nP3-E3\n" + ablation.format_rows(rows))
    assert [r.dp for r in rows] == [8, 16]
    # with the DP hack on, DP only moves the pipeline p2p placement: per-micro-batch stage times
    # are identical across DP, and PP_WAIT changes only through PP_COMM
    reports = []
    for dp in (4, 8, 16):
        c = ablation.with_options(cfg, BASE)
        c["parallel"]["dp"] = dp
        c["hardware"]["devices"] = dp * 2
        reports.append(ablation.perf(c))
    assert all(r.stage_times_s == reports[0].stage_times_s for r in reports)
    for r in reports:
        assert r.perf_parts["BUBBLE"] == pytest.approx(reports[0].perf_parts["BUBBLE"], rel=1e-12)


def test_P3_E4_straggler_stage_per_config() -> None:
    rows = ablation.exp4_straggler(_configs(), BASE)
    from tabulate import tabulate

    print("\nP3-E4\n" + tabulate(rows, headers=ablation.EXP4_HEADERS))
    stragglers = {row[0]: row[4] for row in rows}
    # the last stage holds one more MoE layer (stage 0 has the dense layer) and the output head:
    # it is the straggler in every config, so no straggler switch explains the inversion
    assert set(stragglers.values()) == {1}


@pytest.mark.parametrize("tp_group", [("A", "B", "C"), ("E", "D", "F")], ids=["tp1", "tp2"])
def test_P3_01_ratio_one_removes_ep_growth_of_pp_wait(tp_group: tuple[str, str, str]) -> None:
    # EP 2 -> 4 -> 8 at fixed TP
    before = [_perf(label, ep_bubble_overlap_ratio=0.0).real_parts["PP_WAIT"] for label in tp_group]
    after = [_perf(label, ep_bubble_overlap_ratio=1.0).real_parts["PP_WAIT"] for label in tp_group]
    print(f"\nP3-01 {tp_group}: PP_WAIT ratio 0 {before} -> ratio 1 {after}")
    # ratio 0 reproduces the seed's inversion: PP_WAIT rises with EP
    assert before == sorted(before) and before[0] < before[-1]
    # ratio 1 is below ratio 0 at every EP, and the EP hidden in the bubble grows with EP
    assert all(a < b for a, b in zip(after, before, strict=True))
    gaps = [b - a for a, b in zip(after, before, strict=True)]
    assert gaps == sorted(gaps)
    # the EP-driven growth is gone: the spread over EP 2..8 is < 10 % of ratio 0's growth
    assert max(after) - min(after) < 0.1 * (before[-1] - before[0])


@pytest.mark.xfail(strict=True, reason=(
    "model finding: with ratio 1.0 only the non-straggler stages hide their EP in the bubble "
    "(BUBBLE = Σ_{i≠k}(s_i − ep_i)), which does not depend on EP; PP_WAIT stays flat "
    "(+2 % over EP 2..8 from the DP tail), it does not fall as the seed's measurements do"))
@pytest.mark.parametrize("tp_group", [("A", "B", "C"), ("E", "D", "F")], ids=["tp1", "tp2"])
def test_P3_01_pp_wait_falls_as_ep_rises(tp_group: tuple[str, str, str]) -> None:
    after = [_perf(label).real_parts["PP_WAIT"] for label in tp_group]
    assert after[0] > after[1] > after[2]


@pytest.mark.parametrize("label", LABELS)
def test_P3_02_ratio_zero_equals_model_without_overlap(label: str) -> None:
    r = _perf(label, ep_bubble_overlap_ratio=0.0)
    m, s = r.num_micro_batches, r.stage_times_s
    dp = [st.dp_comm for st in r.stages]
    # reference §3.4 without any overlap term: 1F1B Σ s_i + (m−1)·max s_i, then the DP tail
    total = sum(s) + (m - 1) * max(s) + max(dp) + r.perf_parts["PP_COMM"]
    assert r.total == pytest.approx(total, rel=1e-12)
    k = r.straggler_stage
    assert s[k] == max(s)
    assert r.perf_parts["BUBBLE"] == pytest.approx(sum(s) + (m - 1) * max(s) + max(dp) - m * s[k] - dp[k], rel=1e-12)


@pytest.mark.parametrize("label", ["A", "D"])
def test_P3_03_ep_one_overlap_has_no_effect(label: str) -> None:
    cfg = seed_run(label)
    cfg["parallel"]["ep"] = 1
    r0 = estimator.estimate_perf(estimator.load_config(ablation.with_options(cfg, {"ep_bubble_overlap_ratio": 0.0})))
    r1 = estimator.estimate_perf(estimator.load_config(ablation.with_options(cfg, {"ep_bubble_overlap_ratio": 1.0})))
    assert r0.real_parts == r1.real_parts and r0.perf_parts == r1.perf_parts
    assert r0.real_parts["EP_WAIT"] == 0.0


@pytest.mark.parametrize("label", LABELS)
def test_P3_04_dp_comm_counted_without_hack(label: str) -> None:
    fixed = _perf(label)
    hacked = _perf(label, dp_comm_zero_hack=True)
    assert fixed.perf_parts["DP_COMM"] > 0 and fixed.real_parts["DP_WAIT"] == fixed.perf_parts["DP_COMM"]
    assert hacked.real_parts["DP_WAIT"] == 0.0
    assert fixed.total > hacked.total
