"""``analyzer.compare`` through ``load_dataset`` + ``analyze`` on SYNTHETIC Ascend exports (no real data needed).

The synthetic traces come from ``tests/analyzer/synthetic.py`` (labelled synthetic): an eager, host-bound
capture (1500 enqueues and 9 ms of host work per step) and the same 30 kernels per step with 300 enqueues
and 1.8 ms of host work — a "graph-mode-like" after side. Known by construction: dispatch ops per step
1500 → 300 (80 % better), same step count and file set (comparable), the host bottleneck goes away.
"""

from __future__ import annotations

import pytest

import analyzer.compare as cmp
from analyzer.analysis import analyze
from analyzer.dataset import load_dataset
from tests.analyzer.synthetic import SynthStep, host_bound_steps, write_rank

SYNTHETIC_AFTER_STEP = SynthStep(host_busy_us=1800.0, host_ops=60, enqueues=300, device_offset_us=200.0, kernels=30,
                                 kernel_us=50.0, gap_after_us=200.0)


@pytest.fixture(scope="module")
def synthetic_sides(tmp_path_factory):
    root = tmp_path_factory.mktemp("synthetic_compare")
    before_dir = write_rank(root / "before", host_bound_steps(6))
    after_dir = write_rank(root / "after", [SYNTHETIC_AFTER_STEP] * 6)
    out = []
    for d in (before_dir, after_dir):
        ds = load_dataset(d)
        out.append((ds, analyze(ds)))
    return out


def test_synthetic_eager_to_graph_like_pair(synthetic_sides):
    before, after = synthetic_sides
    result = cmp.compare(before, after)
    assert result.comparable is True, result.comparability["reasons"]
    assert result.comparability["blocking"] == []
    dispatch = result.metric("dispatch_ops_per_step")
    assert (dispatch["before"], dispatch["after"]) == (1500.0, 300.0)
    assert dispatch["improvement_pct"] == pytest.approx(80.0)
    assert dispatch["status"] == "improved"
    assert result.metric("avg_step_us")["status"] == "improved"
    assert result.bottleneck["before"] == "host"
    assert result.bottleneck["changed"] is True
    # Hand arithmetic on the construction. Before: host work 9000 µs, 30 kernels of 50 µs (1 µs apart)
    # from 7000 µs, so the step marker spans 9001 µs and the device idles 7000 µs before its first kernel
    # and 9001 − (7000 + 30·51 − 1) = 472 µs after its last: mean idle gap 3736 µs. After: 200 µs and
    # 1801 − (200 + 1529) = 72 µs: mean 136 µs. The only recommendation (no decode phase, so no graph-mode
    # template) is host.reduce-launch-gaps, primary target idle_gap_mean_us: (3736 − 136) / 3736 = 96.4 %.
    (row,) = result.recommendations
    assert row["id"] == "host.reduce-launch-gaps" and row["primary_metric"] == "idle_gap_mean_us"
    assert result.metric("avg_step_us")["before"] == 9001.0 and result.metric("avg_step_us")["after"] == 1801.0
    assert row["observed_improvement_pct"] == pytest.approx(100 * (3736 - 136) / 3736, abs=1e-3)
    # expected gain (seed §6.1 graph mode): min(0.8, 0.75 × host-exclusive per step / step) of the before side
    ind = before[1].primary.overall.indicators
    gain = 100 * min(0.8, 0.75 * ind.value("host_exclusive_per_step_us") / 9001.0)
    assert row["expected_gain_pct"] == pytest.approx(gain, abs=1e-3)
    assert row["threshold_pct"] == pytest.approx(max(1.0, 0.5 * gain), abs=1e-3)
    assert 0.5 * gain < 96.36 and row["verdict"] == "achieved"
    # operator section: the 30 kernels per step are identical on both sides -> nothing saved or added
    assert result.operators == {"saved": [], "added": []}
    assert result.sides["before"]["files"] == result.sides["after"]["files"]


def test_synthetic_pair_reversed_is_a_regression(synthetic_sides):
    before, after = synthetic_sides
    result = cmp.compare(after, before)
    assert result.metric("dispatch_ops_per_step")["status"] == "regressed"
    assert result.comparable is True


def test_phase_override_on_one_side_only_blocks(synthetic_sides):
    (ds_b, a_b), (ds_a, _) = synthetic_sides
    a_decode = analyze(ds_a, phase_override="decode")
    result = cmp.compare((ds_b, a_b), (ds_a, a_decode))
    assert result.comparable is False
    assert "phase_override" in result.comparability["blocking"]
