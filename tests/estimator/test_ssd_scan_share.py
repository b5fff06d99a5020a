"""The Mamba-2 SSD scan's measured HBM share (``efficiency.ssd_scan_memory``, ``estimator.inputs.ssd_scan``).

Synthetic efficiency blocks and a SYNTHETIC hybrid config (written here, not a published model).
"""

from __future__ import annotations

from typing import Any

import pytest

import estimator
from estimator.inputs import ssd_scan
from estimator.inputs.hardware import PRESETS, DeviceEfficiency
from estimator.perf import mamba, roofline
from estimator.perf.context import config_context
from estimator.perf.efficiency import device_efficiency

#: synthetic hybrid stack: one Mamba-2 layer (16 heads of 64, state 128, 8 groups) and one MLP layer
HYBRID: dict[str, Any] = {
    "profile": "megatron",
    "model": {"name": "synthetic-hybrid", "num_layers": 2, "hidden_size": 1024, "num_attention_heads": 8,
              "num_kv_heads": 2, "head_dim": 128, "attention": "gqa", "vocab_size": 32000, "ffn_hidden_size": 4096,
              "activation": "squared_relu", "position_embedding": "none", "hybrid_override_pattern": "M-",
              "mamba_num_heads": 16, "mamba_head_dim": 64, "mamba_state_dim": 128, "mamba_num_groups": 8},
    "train": {"seq_length": 8192, "micro_batch_size": 1, "num_micro_batches": 2, "hidden_dropout": 0.0},
    "parallel": {"tp": 1, "dp": 8},
    "hardware": {"preset": "b200", "devices": 8},
}


def _eff(**extra: Any) -> DeviceEfficiency:
    return DeviceEfficiency(hbm_gb_s=8000.0, matmul=[[0.0, 0.5]], attention_fwd=0.6, attention_bwd=0.5,
                            memory=[[0.0, 0.666]], kernel_latency_us=30.0, **extra)


def test_the_share_reproduces_a_measured_time_by_hand() -> None:
    """A row measured at 1.0 ms for 2 GB: 2e9 / (8e12 · (1e-3 − 5 · 30e-6)) = 0.2941; with that share the operator
    prices 2 GB in 5 kernels at exactly 1.0 ms."""
    share = 2e9 / (8e12 * (1e-3 - 5 * 30e-6))
    assert share == pytest.approx(0.29412, abs=1e-5)
    t = roofline.kernel_group_s(0.0, 2e9, 5.0, "gemm", False, _eff(ssd_scan_memory=share), 2250e12, "ssd_scan")
    assert t == pytest.approx(1e-3, rel=1e-12)


def test_only_the_scan_takes_its_share() -> None:
    eff, plain = _eff(ssd_scan_memory=0.25), _eff()
    moved = 1e9
    scan = roofline.kernel_group_s(0.0, moved, 5.0, "gemm", True, eff, 2250e12, "ssd_scan")
    assert scan == pytest.approx(moved / (8e12 * 0.25) + 5 * 30e-6, rel=1e-12)
    # no share stated: the memory table, as every other kernel
    assert roofline.kernel_group_s(0.0, moved, 5.0, "gemm", True, plain, 2250e12, "ssd_scan") == pytest.approx(
        moved / (8e12 * 0.666) + 5 * 30e-6, rel=1e-12)
    for variant in ("", "permute"):
        assert roofline.kernel_group_s(0.0, moved, 1.0, "elementwise", False, eff, 2250e12, variant) == \
            roofline.kernel_group_s(0.0, moved, 1.0, "elementwise", False, plain, 2250e12, variant)


def test_the_b200_states_it_and_the_blackwell_presets_carry_it() -> None:
    b200 = PRESETS["b200"]["efficiency"]
    assert b200["ssd_scan_memory"] == ssd_scan.SSD_SCAN_MEMORY == 0.2697
    assert "aiconfigurator" in b200["sources"]["ssd_scan_memory"]
    for name in ("b300", "gb200-nvl72", "gb300-nvl72", "vr200-nvl72"):
        eff = PRESETS[name]["efficiency"]
        assert eff["ssd_scan_memory"] == 0.2697 and "assumption" in eff["sources"]["ssd_scan_memory"], name
    for name in ("h100-80g", "a100-80g"):
        assert PRESETS[name]["efficiency"].get("ssd_scan_memory") is None, name


def test_the_scan_operator_and_the_switch() -> None:
    cfg = estimator.load_config(HYBRID)
    d = roofline.layer_dims(cfg, config_context(cfg))
    (scan,) = [op for op in mamba.mamba_ops(cfg.model, d) if op.name == "ssd_scan"]
    assert scan.variant == "ssd_scan"
    off = estimator.load_config(HYBRID, {"options.ssd_scan_memory": False})
    assert device_efficiency(cfg).ssd_scan_memory == 0.2697 and device_efficiency(off).ssd_scan_memory is None
    on_t, off_t = estimator.estimate_perf(cfg).total, estimator.estimate_perf(off).total
    assert on_t > off_t  # 0.2697 of the HBM peak against the general 0.666
    dense = {**HYBRID, "model": {**HYBRID["model"], "hybrid_override_pattern": "*-"}}
    assert estimator.estimate_perf(estimator.load_config(dense)).total == estimator.estimate_perf(
        estimator.load_config(dense, {"options.ssd_scan_memory": False})).total  # no Mamba layer: nothing moves
