"""Seed P2 tests P2-01..P2-08: the EP/ZeRO-3 cancellation and ``expert_zero3_sharding``.

Configs A, B, C of the seed (TP=1, DP=16, EP=2/4/8) and the bundled scaled-down DeepSeek-V3,
profile ``sapp-nd``. Stage 1 holds only MoE layers. routed = R/ep·B/S_re with
S_re = d_exp·cp·t_exp (zero3, d_exp = d/ep, so ep cancels) or cp·t_exp (not zero3: 1/ep).
"""

from __future__ import annotations

from typing import Any

import pytest

import estimator
from estimator.experiments.seed import seed_run
from estimator.inputs.derive import shard_factors
from estimator.inputs.params import layer_params
from estimator.memory.static import StaticBreakdown, grad_clip_buffer

EP_CONFIGS = {2: "A", 4: "B", 8: "C"}
MOE_STAGE = 1
MOE_LAYER = 11
#: sapp-nd byte widths (reference §2.1): fp32 params B_p, fp32 Adam states B_os (×2)
B_P = B_OS = 4
DP = 16  # configs A-C


def _cfg(ep: int, zero3: bool | None, **parallel: Any) -> estimator.EstimatorConfig:
    run = seed_run(EP_CONFIGS[ep])
    if zero3 is not None:
        run["parallel"]["expert_zero3_sharding"] = zero3
    run["parallel"].update(parallel)
    return estimator.load_config(run)


def _detail(ep: int, zero3: bool | None, **parallel: Any) -> StaticBreakdown:
    return estimator.estimate_memory(_cfg(ep, zero3, **parallel)).stages[MOE_STAGE].static_detail


def _stage_routed_params() -> int:
    """All routed-expert parameters R of the MoE stage's layers (every expert, before /ep)."""
    cfg = _cfg(2, None)
    layers = estimator.estimate_memory(cfg).stages[MOE_STAGE].layers
    return sum(layer_params(cfg.model, i).routed for i in layers)


def test_P2_01_zero3_true_routed_params_constant_in_ep() -> None:
    # seed §2.2: R/ep·B_p/(d_exp·cp·t_exp) with d_exp = d/ep (d ≥ ep) = R·B_p/d, no ep left
    values = [_detail(ep, True).routed.params for ep in (2, 4, 8)]
    assert values == [_stage_routed_params() * B_P / DP] * 3
    os_values = [_detail(ep, True).routed.optimizer_states for ep in (2, 4, 8)]
    assert os_values == [2 * _stage_routed_params() * B_OS / DP] * 3


def test_P2_02_zero3_false_routed_params_scale_1_over_ep() -> None:
    # seed §4.2.2: S_re = cp·t_exp = 1, so routed params = R/ep·B_p: EP=4 half of EP=2, EP=8 a quarter
    p2, p4, p8 = (_detail(ep, False).routed.params for ep in (2, 4, 8))
    assert p2 == _stage_routed_params() / 2 * B_P
    assert p4 == 0.5 * p2
    assert p8 == 0.25 * p2


@pytest.mark.parametrize("grad_sharding", [True, False])
def test_P2_03_os_and_grads_scale_like_params(grad_sharding: bool) -> None:
    # with grad sharding shard_grad_exp = shard_p_os_exp (seed §4.2.3); without it the routed
    # grads are R/ep·B_g/t_exp, which scale 1/ep in either setting
    d = {ep: _detail(ep, False, grad_sharding=grad_sharding).routed for ep in (2, 4, 8)}
    assert d[2].optimizer_states > 0 and d[2].grads > 0
    for ep, factor in ((4, 0.5), (8, 0.25)):
        assert d[ep].params == factor * d[2].params
        assert d[ep].optimizer_states == factor * d[2].optimizer_states
        assert d[ep].grads == factor * d[2].grads
    if grad_sharding:  # with zero3 the cancellation holds for OS and sharded grads too
        on = {ep: _detail(ep, True, grad_sharding=True).routed for ep in (2, 4, 8)}
        assert on[2].optimizer_states == on[4].optimizer_states == on[8].optimizer_states
        assert on[2].grads == on[4].grads == on[8].grads


def test_P2_04_grad_clip_buffer_scales_like_params() -> None:
    off = [grad_clip_buffer(_cfg(ep, False), MOE_LAYER).routed for ep in (2, 4, 8)]
    assert off[0] > 0
    assert off[1] == 0.5 * off[0] and off[2] == 0.25 * off[0]
    on = [grad_clip_buffer(_cfg(ep, True), MOE_LAYER).routed for ep in (2, 4, 8)]
    assert on[0] == on[1] == on[2]
    # body.py:130 inner term r/ep·B_os/S_re times the outer B_os/S_ne_partial
    cfg = _cfg(2, False)
    f = shard_factors(cfg)
    expected = layer_params(cfg.model, MOE_LAYER).routed / 2 * B_OS / f.p_os_exp * B_OS / f.p_os_non_exp_partial
    assert off[0] == expected


@pytest.mark.parametrize("ep", [2, 4, 8])
def test_P2_05_shared_experts_unaffected(ep: int) -> None:
    on, off = _detail(ep, True).shared, _detail(ep, False).shared
    assert on == off
    assert on.params > 0 and on.optimizer_states > 0 and on.grads > 0
    assert grad_clip_buffer(_cfg(ep, True), MOE_LAYER).shared == grad_clip_buffer(_cfg(ep, False), MOE_LAYER).shared


@pytest.mark.parametrize("ep", [2, 4, 8])
def test_P2_06_non_experts_unaffected(ep: int) -> None:
    on, off = _detail(ep, True).non_expert, _detail(ep, False).non_expert
    assert on == off
    assert on.params > 0 and on.optimizer_states > 0 and on.grads > 0
    for stage in (0, 1):  # embedding (stage 0) and head (stage 1) are non-expert too
        a = estimator.estimate_memory(_cfg(ep, True)).stages[stage]
        b = estimator.estimate_memory(_cfg(ep, False)).stages[stage]
        assert a.static_mb - a.static_detail.routed.total / 2**20 == pytest.approx(
            b.static_mb - b.static_detail.routed.total / 2**20, abs=1e-9
        )


@pytest.mark.parametrize("ep", [2, 4, 8])
def test_P2_07_without_distributed_optimizer_both_settings_equal(ep: int) -> None:
    on_cfg, off_cfg = _cfg(ep, True, distributed_optimizer=False), _cfg(ep, False, distributed_optimizer=False)
    assert shard_factors(on_cfg).p_os_exp == shard_factors(off_cfg).p_os_exp == 1  # both cp·t_exp = 1·1
    on, off = estimator.estimate_memory(on_cfg), estimator.estimate_memory(off_cfg)
    assert on.to_dict() == off.to_dict()
    assert on.stages[MOE_STAGE].static_detail == off.stages[MOE_STAGE].static_detail


@pytest.mark.parametrize("ep", [2, 4, 8])
def test_P2_08_default_is_zero3_true_no_regression(ep: int) -> None:
    default = estimator.estimate_memory(_cfg(ep, None))
    explicit = estimator.estimate_memory(_cfg(ep, True))
    assert _cfg(ep, None).parallel.expert_zero3_sharding is True
    assert default.to_dict() == explicit.to_dict()
