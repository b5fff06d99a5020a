"""torchtitan op-level SAC in the step time (estimator.perf.sac): what the backward re-runs, by hand on
synthetic operators and models; ``options.op_sac_recompute: false`` gives exactly the model before it."""

from __future__ import annotations

from collections import Counter

import pytest

import estimator
from estimator.perf import kernels, sac
from estimator.perf import operators as ops_
from estimator.perf.roofline import op_pass_s, ops_seconds
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, synthetic_run

LLAMA_LIKE = {**SYNTHETIC_DENSE_MODEL, "activation": "swiglu", "norm": "rmsnorm", "num_attention_heads": 8,
              "num_kv_heads": 2, "hidden_size": 64, "ffn_hidden_size": 256}


def _cfg(model: dict | None = None, option: str | None = "op", on: bool = True) -> estimator.EstimatorConfig:
    recompute = {"mode": "selective", **({"selective_ac_option": option} if option else {})}
    run = synthetic_run(model=model or LLAMA_LIKE, profile="fsdp2", parallel={"tp": 1, "pp": 1, "dp": 4, "ep": 1},
                        recompute=recompute, options={"op_sac_recompute": on})
    return estimator.load_config(run)


def test_gemm_shares_by_hand() -> None:
    """SwiGLU, 8 heads, 2 KV groups: wk is 2/(8+4) of the fused qkv, w3 half of fc1, w2 kept; GeLU: fc2 re-run."""
    swiglu = _cfg().model
    assert sac.gemm_shares(swiglu) == {"qkv": 2 / 12, "out_proj": 1.0, "mlp_fc1": 0.5, "mlp_fc2": 0.0,
                                       "flash_attention": 0.0}
    gelu = _cfg(model=SYNTHETIC_DENSE_MODEL).model  # 8 heads, 4 groups
    assert sac.gemm_shares(gelu)["qkv"] == 4 / 16 and sac.gemm_shares(gelu)["mlp_fc1"] == 0.0
    assert sac.gemm_shares(gelu)["mlp_fc2"] == 1.0


def test_recomputed_flops_by_hand() -> None:
    """T = 10 tokens, h 64, d 8, g 2, f 256: 2·10·64·16 + 2·10·64·64 + 2·10·64·256 = 20480 + 81920 + 327680."""
    assert sac.recomputed_flops(_cfg().model, 10.0) == 20480 + 81920 + 327680


def test_op_share_of_operators() -> None:
    shares = {"qkv": 0.25, "mlp_fc1": 0.5}
    cast = ops_.Op("qkv_quantize", "elementwise", (), 0.0, 1.0, 1.0, 0.0, 1.0, 1.0)
    norm = ops_.elementwise("input_norm", ("layernorm",), 10.0)
    assert sac.op_share(cast, shares) == 0.25 and sac.op_share(norm, shares) == 1.0


def test_roofline_recompute_is_the_shares_of_the_forward() -> None:
    """rec = f(qkv)/6 + f(out) + f(fc1)/2 + f(norm) + f(act); flash attention and fc2 are not re-run."""
    b, t = 2, 1024.0
    ops = [ops_.elementwise("input_norm", ("layernorm",), 2 * t * 64 * b),
           ops_.gemm("qkv", ("attn_proj",), t, 64, 96, b),
           ops_.Op("flash_attention", "attention", ("core_attn",), 1e9, 1e6, 1.0, 2.5e9, 2e6, 2.0),
           ops_.gemm("out_proj", ("attn_proj",), t, 64, 64, b),
           ops_.gemm("mlp_fc1", ("mlp",), t, 64, 512, b),
           ops_.elementwise("mlp_activation", ("mlp",), 768 * t * b),
           ops_.gemm("mlp_fc2", ("mlp",), t, 256, 64, b)]
    cfg = _cfg()
    eff, peak = cfg.hardware.efficiency, 989e12
    assert eff is not None
    f = {op.name: op_pass_s(op, False, eff, peak) for op in ops}
    shares = {"qkv": 1 / 6, "out_proj": 1.0, "mlp_fc1": 0.5, "mlp_fc2": 0.0, "flash_attention": 0.0}
    _, _, rec, _ = ops_seconds(ops, True, "selective", frozenset({sac.OP_SAC}), eff, peak, 1.0, shares)
    expected = f["input_norm"] + f["qkv"] / 6 + f["out_proj"] + f["mlp_fc1"] * 0.5 + f["mlp_activation"]
    assert rec == pytest.approx(expected, rel=1e-12)
    _, _, megatron, _ = ops_seconds(ops, True, "selective", frozenset({"core_attn"}), eff, peak, 1.0)
    assert megatron == f["flash_attention"]  # the model before: Megatron's default core_attn only


def test_recompute_kernels_by_hand() -> None:
    """Dense RoPE layer with flash attention: forward NORM 2, GEMM 4, POINTWISE 5, FLASH 1; op-level SAC
    re-runs the 2 norms, the 5 pointwise kernels and 3 mms = 10 kernels."""
    shape = kernels.layer_shape(_cfg().model, moe=False, layer_ep=1, tp=1, sequence_parallel=False, tp_blocks=1, cp=1,
                                flash_attention=True)
    got = kernels.layer_pass_kernels(shape, "selective", frozenset({sac.OP_SAC}))
    assert got.forward == kernels.forward_kernels(Counter({"NORM": 2, "GEMM": 4, "POINTWISE": 5, "FLASH": 1}))
    assert got.recompute == 2 + 5 + 3


def test_step_time_op_sac_and_off_switch() -> None:
    """On: more recompute than Megatron's core_attn default; off: every number as the default selective set."""
    on, off, before = _cfg(), _cfg(on=False), _cfg(option=None)
    p_on, p_off, p_before = (estimator.estimate_perf(c) for c in (on, off, before))
    assert p_off.to_dict() == p_before.to_dict()
    assert p_on.real_parts["TOTAL"] > p_off.real_parts["TOTAL"]
    assert p_on.stages[0].recompute > p_off.stages[0].recompute
    assert p_on.stages[0].fw_compute == p_off.stages[0].fw_compute  # forward and backward untouched
    assert p_on.stages[0].bw_compute == p_off.stages[0].bw_compute
