"""Derived degrees, sharding factors and the layer partition (reference §2.3, §2.7)."""

from __future__ import annotations

import pytest

import estimator
from estimator.inputs.derive import (
    expert_degrees,
    layer_ep,
    layer_kind,
    routed_expert_shard,
    shard_factors,
    stage_layouts,
)
from tests.estimator._factories import synthetic_run


@pytest.mark.parametrize(
    ("dp", "tp", "cp", "ep", "etp", "t_exp", "d_exp"),
    [
        (16, 1, 1, 2, None, 1, 8.0),  # d ≥ ep: d/ep
        (2, 2, 1, 4, None, 1, 1.0),  # d < ep: d·t/ep; t_exp·ep = 8 > d·t = 4 -> t_exp = 1
        (8, 2, 1, 4, None, 2, 2.0),  # seed config D
        (4, 2, 2, 4, 1, 1, 4.0),  # etp: d·t·cp/(etp·ep) = 16/4
    ],
)
def test_expert_degrees_branches(dp, tp, cp, ep, etp, t_exp, d_exp) -> None:
    deg = expert_degrees(dp, tp, cp, ep, etp)
    assert (deg.t_exp, deg.d_exp) == (t_exp, d_exp)


def test_zero3_cancellation_arithmetic() -> None:
    """routed/ep / (d_exp·cp·t_exp) with d_exp = d/ep equals routed/(d·cp·t_exp): ep cancels (seed P2)."""
    for ep in (2, 4, 8):
        deg = expert_degrees(16, 1, 1, ep, None)
        on = routed_expert_shard(deg.d_exp, 1, deg.t_exp, has_op=True, expert_zero3_sharding=True)
        off = routed_expert_shard(deg.d_exp, 1, deg.t_exp, has_op=True, expert_zero3_sharding=False)
        assert 1 / ep / on == 1 / 16  # independent of ep
        assert off == 1  # cp·t_exp
        assert routed_expert_shard(deg.d_exp, 1, deg.t_exp, has_op=False, expert_zero3_sharding=True) == 1


def test_shard_factors_sapp() -> None:
    cfg = estimator.load_config(synthetic_run(parallel={"tp": 2, "dp": 4, "ep": 2}))
    f = shard_factors(cfg)
    assert f.p_os_non_exp_partial == 8  # os_max_shard = d·t = 8, ·cp
    assert f.p_os_non_exp == 8  # d·cp·t
    assert f.grad_non_exp == 2  # t without grad sharding
    assert f.p_os_exp == 2 * 1 * 2  # d_exp = d/ep = 2, ·cp·t_exp (t_exp = 2)
    assert f.p_os_exp_partial == 8  # gcd(E = 8, os_max_shard·t_exp = 16)
    assert f.embed == 8


def test_layer_kinds_and_ep() -> None:
    cfg = estimator.load_config(synthetic_run(model={**synthetic_run()["model"], "mtp_layers": 1}))
    assert [layer_kind(cfg.model, i) for i in range(5)] == ["dense", "moe", "moe", "moe", "mtp"]
    assert [layer_ep(cfg, i) for i in range(5)] == [1, 2, 2, 2, 2]


def test_layout_1f1b_embedding_head_mtp() -> None:
    cfg = estimator.load_config(synthetic_run(model={**synthetic_run()["model"], "mtp_layers": 1}))
    first, last = stage_layouts(cfg)
    assert first.chunks == ((0, 1),) and first.has_embedding and not first.has_head
    assert last.chunks == ((2, 3, 4),) and last.has_head and not last.has_embedding


def test_layout_interleaved_and_zero_bubble_v() -> None:
    run = synthetic_run(model={**synthetic_run()["model"], "num_layers": 8, "num_dense_layers": 0})
    inter = estimator.load_config({**run, "parallel": {"tp": 1, "pp": 2, "dp": 4, "ep": 2, "vpp": 2,
                                                         "schedule": "interleaved"}})
    s0, s1 = stage_layouts(inter)
    assert s0.chunks == ((0, 1), (4, 5)) and s1.chunks == ((2, 3), (6, 7))
    assert s0.embedding_chunk == 0 and s1.head_chunk == 1
    zbv = estimator.load_config({**run, "parallel": {"tp": 1, "pp": 2, "dp": 4, "ep": 2, "vpp": 2,
                                                       "schedule": "zero_bubble_v"}})
    s0, s1 = stage_layouts(zbv)
    assert s0.chunks == ((0, 1), (6, 7)) and s1.chunks == ((2, 3), (4, 5))  # V shape
    assert s0.embedding_chunk == 0 and s0.head_chunk == 1 and not s1.has_head


def test_explicit_layers_per_stage() -> None:
    cfg = estimator.load_config(synthetic_run(parallel={"layers_per_stage": [1, 3]}))
    assert [lay.layers for lay in stage_layouts(cfg)] == [(0,), (1, 2, 3)]
    with pytest.raises(estimator.ConfigError) as info:
        estimator.load_config(synthetic_run(parallel={"layers_per_stage": [1, 2]}))
    assert info.value.field == "parallel.layers_per_stage"
