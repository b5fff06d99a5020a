"""The measured GEMM rates of the presets (``estimator.inputs.gemm_rates``, ``efficiency.gemm_rate``).

Synthetic configs and efficiency blocks (written here); the presets' rates are checked against the measured ratios
the module records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

import estimator
from estimator.inputs import gemm_rates
from estimator.inputs.hardware import PRESETS, DeviceEfficiency
from estimator.inputs.overlay import apply_overlay
from estimator.perf import roofline
from estimator.perf.efficiency import device_efficiency, rated_gemm_factors

DENSE = {
    "profile": "megatron",
    "model": {"num_layers": 4, "hidden_size": 4096, "ffn_hidden_size": 14336, "num_attention_heads": 32,
              "num_kv_heads": 8, "vocab_size": 128256, "activation": "swiglu"},
    "train": {"seq_length": 8192, "micro_batch_size": 1, "num_micro_batches": 4},
    "parallel": {"tp": 1, "pp": 1, "dp": 8, "distributed_optimizer": True},
    "hardware": {"preset": "gb300-nvl72", "devices": 8},
}


def _eff(**extra: Any) -> DeviceEfficiency:
    return DeviceEfficiency(hbm_gb_s=1000.0, matmul=[[0.0, 0.5]], attention_fwd=0.6, attention_bwd=0.5,
                            memory=[[0.0, 0.8]], **extra)


def test_rate_by_hand() -> None:
    # GB300: 1.2490 times the B200's throughput at a BF16 peak 2500 / 2250 times the B200's
    assert gemm_rates.gemm_rate(1.2490, 2500.0, 2250.0) == pytest.approx(1.2490 * 0.9)
    # H100: 0.5202 of the B200's throughput at 989 / 2250 of its peak -> 1.1835 times the B200's share of peak
    assert round(gemm_rates.gemm_rate(0.5202, 989.0, 2250.0), 4) == 1.1835


def test_every_preset_rate_is_its_measured_ratio_times_the_peak_ratio() -> None:
    for name, system in gemm_rates.PRESET_SYSTEM.items():
        eff = PRESETS[name]["efficiency"]
        ratio, _ = gemm_rates.MEASURED_RATIO[system]
        peak = PRESETS[gemm_rates.SYSTEM_PRESET[system]]["peak_tflops"]["bf16"]
        assert eff["gemm_rate"] == round(ratio * 2250.0 / peak, 4), name
        assert "aiconfigurator" in eff["sources"]["gemm_rate"], name
    assert {"b300", "gb200-nvl72", "gb300-nvl72"} == set(gemm_rates.PRESET_SYSTEM)
    # the reference device; the Hopper presets (anchor not settled, module docstring); the A100's own SimuMax file
    for name in ("b200", "h100-80g", "h200", "h100-sxm-96g-hbm2e", "a100-80g"):
        assert "gemm_rate" not in PRESETS[name]["efficiency"], name


def test_a_gemm_takes_the_rate_and_nothing_else_does() -> None:
    flops, peak = 4e12, 1e15
    plain = _eff(grouped_matmul=0.4, fp8_matmul=0.6)
    rated = rated_gemm_factors(_eff(grouped_matmul=0.4, fp8_matmul=0.6, gemm_rate=1.25))
    assert rated["matmul"] == [(0.0, 0.625)] and rated["grouped_matmul"] == 0.5 and rated["fp8_matmul"] == 0.75
    assert rated["fp4_matmul"] is None and rated["grouped_matmul_fwd_by_tokens"] is None
    fast = plain.model_copy(update=rated)
    # GEMM: 4e12 / (1e15 · 0.5 · 1.25) = 6.4 ms against 8 ms
    assert roofline.kernel_group_s(flops, 0.0, 1.0, "gemm", False, plain, peak) == pytest.approx(8e-3)
    assert roofline.kernel_group_s(flops, 0.0, 1.0, "gemm", False, fast, peak) == pytest.approx(6.4e-3)
    # an FP8 GEMM at twice the peak: 4e12 / (2e15 · 0.6 · 1.25)
    assert roofline.kernel_group_s(flops, 0.0, 1.0, "gemm", True, fast, peak, "@fp8", 2.0) == pytest.approx(
        4e12 / 1.5e15)
    # attention and a memory-bound kernel are not GEMMs
    for args in ((flops, 0.0, 1.0, "attention", False), (0.0, 1e9, 1.0, "elementwise", False)):
        assert roofline.kernel_group_s(*args, fast, peak) == roofline.kernel_group_s(*args, plain, peak)


def test_a_rate_that_would_exceed_the_peak_is_refused() -> None:
    with pytest.raises(ValidationError, match="gemm_rate"):
        _eff(gemm_rate=2.5)  # 0.5 · 2.5 > 1
    with pytest.raises(ValidationError, match="gemm_rate"):
        _eff(grouped_matmul=0.9, gemm_rate=1.2)  # the largest factor counts


def test_the_resolved_factors_hold_the_rate_and_the_switch_gives_the_held_ones() -> None:
    b200 = PRESETS["b200"]["efficiency"]
    on = device_efficiency(estimator.load_config(DENSE))
    assert [list(r) for r in on.matmul] == [[0.0, b200["matmul"][0][1] * 1.1241]]
    assert on.fp8_matmul is None and on.gemm_rate is None  # resolved: the factors hold the rate
    off = device_efficiency(estimator.load_config(DENSE, {"options.measured_gemm_rate": False}))
    assert [list(r) for r in off.matmul] == [list(r) for r in b200["matmul"]] and off.gemm_rate is None


def test_the_rate_shortens_the_gemms_and_the_switch_gives_the_carried_factors_back() -> None:
    on = estimator.estimate_perf(estimator.load_config(DENSE))
    off = estimator.estimate_perf(estimator.load_config(DENSE, {"options.measured_gemm_rate": False}))
    assert on.perf_parts["FW_COMPUTE"] < off.perf_parts["FW_COMPUTE"]
    b = estimator.estimate_perf(estimator.load_config(DENSE, {"hardware": {"preset": "b200", "devices": 8}}))
    b_off = estimator.estimate_perf(estimator.load_config(DENSE, {"hardware": {"preset": "b200", "devices": 8},
                                                                  "options.measured_gemm_rate": False}))
    assert b.total == b_off.total  # the reference device holds no rate


def test_an_overlay_that_calibrates_gemms_drops_the_measured_rate(tmp_path: Path) -> None:
    path = tmp_path / "cal.yaml"
    path.write_text(yaml.safe_dump({"efficiency": {"matmul": [[0, 0.6]], "sources": {"matmul": "synthetic"}}}),
                    encoding="utf-8")
    tuned = apply_overlay(estimator.load_config(DENSE), path)
    assert tuned.hardware.efficiency is not None
    assert tuned.hardware.efficiency.gemm_rate is None and [list(r) for r in tuned.hardware.efficiency.matmul] == [[0.0, 0.6]]
    path.write_text(yaml.safe_dump({"efficiency": {"kernel_latency_us": 5.0}}), encoding="utf-8")
    kept = apply_overlay(estimator.load_config(DENSE), path)
    assert kept.hardware.efficiency is not None and kept.hardware.efficiency.gemm_rate == 1.1241


def test_the_recomputing_tool_reduces_a_table_as_recorded() -> None:
    """tools/gemm_rates.py on synthetic tables (written here): a device twice as fast on the shapes that pass the
    filter (m >= 4096, n, k >= 2048) reads 2.0; a small shape and a non-BF16 row are left out."""
    import pandas as pd

    from tools import gemm_rates as tool

    def table(latency_ms: float, small_ms: float) -> pd.DataFrame:
        rows = [("torch_flow", "bfloat16", 4096, 2048, 4096, latency_ms), ("torch_flow", "bfloat16", 8192, 4096, 4096,
                latency_ms), ("torch_flow", "bfloat16", 256, 2048, 2048, small_ms),
                ("torch_flow", "fp8", 4096, 2048, 4096, 99.0)]
        return pd.DataFrame(rows, columns=["kernel_source", "gemm_dtype", "m", "n", "k", "latency"])

    ref, dev = tool.bf16_tflops(table(2.0, 1.0)), tool.bf16_tflops(table(1.0, 5.0))
    q = tool.ratio_to_reference(dev, ref)
    assert len(q) == 2 and float(q.median()) == pytest.approx(2.0)
    # 2·4096·2048·4096 FLOP in 2 ms
    assert ref.loc[(4096, 2048, 4096)] == pytest.approx(2 * 4096 * 2048 * 4096 / 2e-3 / 1e12)
