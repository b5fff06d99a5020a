"""Flash attention's softmax exponentials at the device's SFU rate (issue 26): Blackwell Ultra (B300, GB300)
exponentiates at 10.7 against the B200's 5 TeraExponentials/s, and the attention factors were measured on a
B200. Hand-computed values in the comments; the efficiencies of ``EFF`` are synthetic."""

from __future__ import annotations

import random

import pytest

import estimator
from estimator.inputs.hardware import PRESETS, DeviceEfficiency
from estimator.perf import operators
from estimator.perf.roofline import kernel_group_s, op_pass_s, sfu_adjusted_s
from estimator.search.batched_time import batch_step_time_of
from tests.estimator.scalar_reference import EXAMPLES
from tests.estimator.test_batched_time import REL, _compare, _groups

#: synthetic: attention 0.5 forward, 0.4 backward at 1e15 FLOP/s (HBM ample: the compute term prices); the
#: device's SFU twice the reference's
EFF = DeviceEfficiency(hbm_gb_s=1e6, matmul=[(0.0, 0.8)], attention_fwd=0.5, attention_bwd=0.4,
                       memory=[(0.0, 0.5)], sfu_exp_per_s=2e12, attention_sfu_exp_per_s=1e12)
PEAK = 1e15


def _dims(on: bool = True) -> operators.LayerDims:
    return operators.LayerDims(tokens=1024, norm_tokens=1024, batch=1, seq=1024, tp=1, cp=1, b=2, flash=True,
                               ring_blocks=1, imbalance=1.0, sfu_exps=on)


def test_exponentials_are_the_visited_scores() -> None:
    # T = 1024 queries over 1024 keys (causal: 512 really visited each), 8 heads, d = 128 / 128:
    # flops = 2·1024·1024·8·256 = 4,294,967,296; exponentials 1024·1024·8 / 2 = 4,194,304 = flops / (4·256)
    flash, = operators.core_attention_ops(_dims(), 8, 8, 128, 128)
    assert flash.flops == 4294967296.0
    assert flash.exps == 4194304.0 == operators.sfu_exponentials(flash.flops, 128, 128)
    assert operators.core_attention_ops(_dims(on=False), 8, 8, 128, 128)[0].exps == 0.0


def test_a_faster_sfu_takes_the_difference_off_each_pass() -> None:
    # 1e12 FLOPs: forward 1e12 / (1e15·0.5) = 2 ms, backward 1e12 / (1e15·0.4) = 2.5 ms; 1e9 exponentials
    # at 2e12 instead of 1e12 per second: 1e9·(0.5e-12 − 1e-12) = −0.5 ms off each pass
    assert kernel_group_s(1e12, 0.0, 1, "attention", False, EFF, PEAK, exps=1e9) == pytest.approx(1.5e-3, rel=1e-12)
    assert kernel_group_s(1e12, 0.0, 1, "attention", True, EFF, PEAK, exps=1e9) == pytest.approx(2.0e-3, rel=1e-12)
    # without exponentials, or on a GEMM, nothing changes
    assert kernel_group_s(1e12, 0.0, 1, "attention", False, EFF, PEAK) == pytest.approx(2e-3, rel=1e-12)
    assert kernel_group_s(1e12, 0.0, 1, "gemm", False, EFF, PEAK, exps=1e9) == pytest.approx(1e12 / 0.8e15, rel=1e-12)


def test_the_adjustment_is_bounded() -> None:
    # slower SFU (0.5e12 against 1e12): 2 ms + 1e9·(2e-12 − 1e-12) = 3 ms
    assert sfu_adjusted_s(2e-3, 1e9, 0.5e12, 1e12) == pytest.approx(3e-3, rel=1e-12)
    # a pass priced below its exponentials' reference time (2 ms < 5e9 / 1e12 = 5 ms): a faster SFU gives
    # max(2 − 2.5, min(2, 5e9 / 2e12 = 2.5)) = 2 ms, never more than before and never below zero
    assert sfu_adjusted_s(2e-3, 5e9, 2e12, 1e12) == 2e-3
    # equal rates: the same number
    assert sfu_adjusted_s(2e-3, 1e9, 1e12, 1e12) == 2e-3
    # a faster SFU never lengthens a pass; the result never falls below min(t, E / R_dev) (random inputs)
    rng = random.Random(26)
    for _ in range(500):
        t, e = rng.uniform(1e-6, 1e-2), rng.uniform(0.0, 1e10)
        fast = sfu_adjusted_s(t, e, 2e12, 1e12)
        assert min(t, e / 2e12) <= fast <= t
        assert sfu_adjusted_s(t, e, 0.5e12, 1e12) >= t


def test_op_pass_carries_the_exponentials() -> None:
    flash, = operators.core_attention_ops(_dims(), 8, 8, 128, 128)
    # forward 4,294,967,296 / 0.5e15 = 8.589935 µs; minus 4,194,304·0.5e-12 = 2.097152 µs -> 6.492783 µs
    assert op_pass_s(flash, False, EFF, PEAK) == pytest.approx(4294967296 / 0.5e15 - 4194304 * 0.5e-12, rel=1e-12)


def test_presets_state_their_rates_with_sources() -> None:
    for name, device in (("b200", 5e12), ("gb200-nvl72", 5e12), ("b300", 10.7e12), ("gb300-nvl72", 10.7e12)):
        eff = PRESETS[name]["efficiency"]
        assert (eff["sfu_exp_per_s"], eff["attention_sfu_exp_per_s"]) == (device, 5e12), name
        assert "TeraExponentials" in eff["sources"]["sfu_exp_per_s"]
        assert "B200" in eff["sources"]["attention_sfu_exp_per_s"]


def _b300(**overrides: object) -> estimator.EstimatorConfig:
    return estimator.load_config(EXAMPLES / "llama3-8b-h100.yaml", {"hardware": "b300", **overrides})


def test_b300_attention_is_faster_and_equal_rates_change_nothing() -> None:
    on, off = estimator.estimate_perf(_b300()), estimator.estimate_perf(_b300(**{"options.sfu_softmax": False}))
    assert on.total < off.total
    # the B200 (and GB200) exponentiate at the rate their attention factors were measured at: no change
    b200 = estimator.load_config(EXAMPLES / "llama3-8b-h100.yaml", {"hardware": "b200"})
    b200_off = estimator.load_config(EXAMPLES / "llama3-8b-h100.yaml",
                                     {"hardware": "b200", "options.sfu_softmax": False})
    assert estimator.estimate_perf(b200).total == estimator.estimate_perf(b200_off).total  # equal rates


def test_batched_b300_layouts_equal_the_scalar_path() -> None:
    space = {"parallel.tp": (1, 2, 4, 8), "parallel.cp": (1, 2), "train.micro_batch_size": (1, 2)}
    compared = 0
    for cfgs in _groups("llama3-8b-h100.yaml", 64, space, "megatron", random.Random(7), 40):
        cfgs = [estimator.load_config(c, {"hardware": "b300"}) for c in cfgs]
        batched = batch_step_time_of(cfgs)
        assert batched is not None
        for row, cfg in enumerate(cfgs):
            assert _compare(batched, row, cfg) <= REL
        compared += len(cfgs)
    assert compared >= 10
