"""Seed P2 tests P2-01..P2-08: the EP/ZeRO-3 cancellation and ``expert_zero3_sharding``.

Configs A, B, C of the seed (TP=1, DP=16, EP=2/4/8) and the bundled scaled-down DeepSeek-V3,
profile ``sapp-nd``. Stage 1 holds only MoE layers. routed = R/ep·B/S_re with
S_re = d_exp·cp·t_exp (zero3, d_exp = d/ep, so ep cancels) or cp·t_exp (not zero3: 1/ep).
"""

from __future__ import annotations

from typing import Any

import pytest

import estimator
from estimator.memory.static import grad_clip_buffer
from estimator.seed import seed_run

EP_CONFIGS = {2: "A", 4: "B", 8: "C"}
MOE_STAGE = 1
MOE_LAYER = 11


def _cfg(ep: int, zero3: bool | None, **parallel: Any) -> estimator.EstimatorConfig:
    run = seed_run(EP_CONFIGS[ep])
    if zero3 is not None:
        run["parallel"]["expert_zero3_sharding"] = zero3
    run["parallel"].update(parallel)
    return estimator.load_config(run)


def _detail(ep: int, zero3: bool | None, **parallel: Any):
    return estimator.estimate_memory(_cfg(ep, zero3, **parallel)).stages[MOE_STAGE].static_detail


def test_P2_01_zero3_true_routed_params_constant_in_ep() -> None:
    values = [_detail(ep, True).routed.params for ep in (2, 4, 8)]
    assert values[0] > 0
    assert values == pytest.approx([values[0]] * 3, rel=1e-12)


def test_P2_02_zero3_false_routed_params_scale_1_over_ep() -> None:
    p2, p4, p8 = (_detail(ep, False).routed.params for ep in (2, 4, 8))
    assert p4 == pytest.approx(0.5 * p2, rel=1e-12)
    assert p8 == pytest.approx(0.25 * p2, rel=1e-12)


def test_P2_03_os_and_grads_scale_like_params() -> None:
    # grads follow the param/OS shard only with grad sharding (shard_grad_exp = shard_p_os_exp)
    d = {ep: _detail(ep, False, grad_sharding=True).routed for ep in (2, 4, 8)}
    for ep, factor in ((4, 0.5), (8, 0.25)):
        assert d[ep].optimizer_states == pytest.approx(factor * d[2].optimizer_states, rel=1e-12)
        assert d[ep].grads == pytest.approx(factor * d[2].grads, rel=1e-12)
    on = {ep: _detail(ep, True, grad_sharding=True).routed for ep in (2, 4, 8)}
    assert on[8].optimizer_states == pytest.approx(on[2].optimizer_states, rel=1e-12)
    assert on[8].grads == pytest.approx(on[2].grads, rel=1e-12)


def test_P2_04_grad_clip_buffer_scales_like_params() -> None:
    off = [grad_clip_buffer(_cfg(ep, False), MOE_LAYER).routed for ep in (2, 4, 8)]
    assert off[1] == pytest.approx(0.5 * off[0], rel=1e-12) and off[2] == pytest.approx(0.25 * off[0], rel=1e-12)
    on = [grad_clip_buffer(_cfg(ep, True), MOE_LAYER).routed for ep in (2, 4, 8)]
    assert on == pytest.approx([on[0]] * 3, rel=1e-12)


@pytest.mark.parametrize("ep", [2, 4, 8])
def test_P2_05_shared_experts_unaffected(ep: int) -> None:
    assert _detail(ep, True).shared == _detail(ep, False).shared
    assert _detail(ep, True).shared.params > 0


@pytest.mark.parametrize("ep", [2, 4, 8])
def test_P2_06_non_experts_unaffected(ep: int) -> None:
    assert _detail(ep, True).non_expert == _detail(ep, False).non_expert


@pytest.mark.parametrize("ep", [2, 4, 8])
def test_P2_07_without_distributed_optimizer_both_settings_equal(ep: int) -> None:
    on = estimator.estimate_memory(_cfg(ep, True, distributed_optimizer=False))
    off = estimator.estimate_memory(_cfg(ep, False, distributed_optimizer=False))
    assert on.to_dict() == off.to_dict()
    assert on.stages[MOE_STAGE].static_detail == off.stages[MOE_STAGE].static_detail


@pytest.mark.parametrize("ep", [2, 4, 8])
def test_P2_08_default_is_zero3_true_no_regression(ep: int) -> None:
    default = estimator.estimate_memory(_cfg(ep, None))
    explicit = estimator.estimate_memory(_cfg(ep, True))
    assert _cfg(ep, None).parallel.expert_zero3_sharding is True
    assert default.to_dict() == explicit.to_dict()
