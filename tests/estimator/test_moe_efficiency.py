"""MoE-specific device efficiencies (issue 11, item 4): routed-expert GEMMs at the grouped-GEMM
factor and the token permute / unpermute at the permute HBM factors, where the hardware's source
publishes them (SimuMax's H100 and B200 system files); hand-computed values in the comments."""

from __future__ import annotations

from dataclasses import replace

import pytest

from estimator.config.schema import ModelConfig
from estimator.inputs.hardware import DeviceEfficiency, preset
from estimator.perf import operators
from estimator.perf.roofline import kernel_group_s, op_pass_s
from tests.estimator._factories import SYNTHETIC_MOE_MODEL

EFF = DeviceEfficiency(hbm_gb_s=1000.0, matmul=[(0.0, 0.8)], attention_fwd=0.7, attention_bwd=0.6,
                       memory=[(0.0, 0.9)], kernel_latency_us=0.0, grouped_matmul=0.4,
                       permute_memory_fwd=0.25, permute_memory_bwd=0.5)
PEAK = 1e15  # FLOP/s


def test_grouped_gemm_takes_the_grouped_factor() -> None:
    # 1e12 FLOPs: dense 1e12 / (1e15·0.8) = 1.25 ms; grouped 1e12 / (1e15·0.4) = 2.5 ms
    assert kernel_group_s(1e12, 0.0, 1, "gemm", False, EFF, PEAK) == pytest.approx(1.25e-3, rel=1e-12)
    assert kernel_group_s(1e12, 0.0, 1, "gemm", False, EFF, PEAK, "grouped") == pytest.approx(2.5e-3, rel=1e-12)


def test_permute_takes_the_permute_factors_per_pass() -> None:
    # 1e9 bytes: plain 1e9 / (1e12·0.9); permute forward / (1e12·0.25) = 4 ms, backward / (1e12·0.5) = 2 ms
    assert kernel_group_s(0.0, 1e9, 1, "elementwise", False, EFF, PEAK) == pytest.approx(1e9 / 0.9e12, rel=1e-12)
    assert kernel_group_s(0.0, 1e9, 1, "elementwise", False, EFF, PEAK, "permute") == pytest.approx(4e-3, rel=1e-12)
    assert kernel_group_s(0.0, 1e9, 1, "elementwise", True, EFF, PEAK, "permute") == pytest.approx(2e-3, rel=1e-12)


def test_without_the_factors_the_tables_apply() -> None:
    plain = EFF.model_copy(update={"grouped_matmul": None, "permute_memory_fwd": None, "permute_memory_bwd": None})
    assert kernel_group_s(1e12, 0.0, 1, "gemm", False, plain, PEAK, "grouped") == pytest.approx(1.25e-3, rel=1e-12)
    assert kernel_group_s(0.0, 1e9, 1, "elementwise", False, plain, PEAK, "permute") == pytest.approx(
        1e9 / 0.9e12, rel=1e-12)


def test_expert_gemms_and_permutes_are_marked() -> None:
    model = ModelConfig.model_validate(SYNTHETIC_MOE_MODEL)
    dims = operators.LayerDims(tokens=1024, norm_tokens=1024, batch=1, seq=1024, tp=1, cp=1, b=2, flash=True,
                               ring_blocks=1, imbalance=1.0)
    ops = {op.name: op for op in operators.mlp_ops(model, dims, True, 4)}
    assert ops["expert_fc1"].variant == ops["expert_fc2"].variant == "grouped"
    assert ops["permute"].variant == ops["unpermute"].variant == "permute"
    assert ops["router"].variant == "" and ops.get("shared_fc1", ops["router"]).variant == ""
    # the compute term of a grouped expert GEMM's backward: its 2× FLOPs at the grouped factor
    fc1 = replace(ops["expert_fc1"], bytes=0.0, bw_bytes=0.0)
    assert op_pass_s(fc1, True, EFF, PEAK) == pytest.approx(fc1.count * fc1.bw_flops / (PEAK * 0.4), rel=1e-12)


@pytest.mark.parametrize("name,grouped,fwd,bwd,file", [
    ("h100-80g", 0.60, 0.25, 0.25, "h100_nvlink.json"),
    ("h200", 0.60, 0.25, 0.25, "h100_nvlink.json"),
    ("b200", 0.30199308868813257, 0.5008136513816437, 0.5108178337365621, "b200_bf16_ceperm.json"),
])
def test_presets_carry_simumax_moe_factors(name: str, grouped: float, fwd: float, bwd: float, file: str) -> None:
    eff = preset(name).efficiency
    assert eff is not None
    assert (eff.grouped_matmul, eff.permute_memory_fwd, eff.permute_memory_bwd) == (grouped, fwd, bwd)
    assert file in eff.sources["grouped_matmul"] and "group_matmul" in eff.sources["grouped_matmul"]
    assert "permute_bwd" in eff.sources["permute_memory_bwd"]


def test_a100_has_none() -> None:
    eff = preset("a100-80g").efficiency
    assert eff is not None and eff.grouped_matmul is None and eff.permute_memory_fwd is None


def test_the_layer_memo_tells_moe_factors_apart() -> None:
    """Layer seconds are memoised across configs on the efficiencies kernel_group_s reads: two
    efficiencies differing only in a MoE factor must not share an entry."""
    from estimator.perf.roofline import efficiency_key

    other = EFF.model_copy(update={"grouped_matmul": 0.5})
    assert efficiency_key(other) != efficiency_key(EFF)
    assert efficiency_key(EFF.model_copy(update={"permute_memory_bwd": 0.3})) != efficiency_key(EFF)
