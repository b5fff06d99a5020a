"""The Vera Rubin NVL72 preset (estimator.inputs.rubin, Megatron-Bridge's ``vr200``): its announced figures by
hand, a source for every figure, the hardware-text mapping, and what the figures change in an estimate."""

from __future__ import annotations

from pathlib import Path

import pytest

import estimator
from estimator.inputs.hardware import preset
from estimator.inputs.rubin import RUBIN_PRESETS
from estimator.inputs.variants import hardware_preset

EXAMPLE = Path(estimator.__file__).parent / "examples" / "llama3-8b-h100.yaml"


def test_rubin_figures_by_hand() -> None:
    """Dense per-GPU peaks, HBM4 and the links as announced: bf16 4,000, fp8 17,500, fp4 35,000 TFLOPS;
    288 GB = 268 GiB at 22 TB/s; NVLink 6 1,800 GB/s per direction over 72 GPUs; ConnectX-9 200 GB/s."""
    spec = preset("vr200")
    assert spec.name == "vr200-nvl72" and spec.devices_per_node == 4 and spec.hbm_gib == 268.0
    assert (spec.peak_tflops["bf16"], spec.peak_tflops["fp8"], spec.peak_tflops["fp4"]) == (4000.0, 17500.0, 35000.0)
    assert spec.efficiency is not None and spec.efficiency.hbm_gb_s == 22000.0
    nvlink, net = spec.levels
    assert (nvlink.bandwidth_gb_s, nvlink.max_devices) == (1800.0, 72)
    assert (net.bandwidth_gb_s, net.max_devices) == (200.0, None)
    assert spec.mxfp8_gemm and spec.fp8_gemm_any_layout
    # B200's measured factors carried over: the same GEMM and collective efficiencies, no SFU adjustment
    b200 = preset("b200")
    assert b200.efficiency is not None and spec.efficiency.matmul == b200.efficiency.matmul
    assert nvlink.collectives == b200.levels[0].collectives
    assert spec.efficiency.sfu_exp_per_s == spec.efficiency.attention_sfu_exp_per_s


@pytest.mark.parametrize("name", sorted(RUBIN_PRESETS))
def test_every_rubin_figure_has_a_source_that_says_what_is_assumed(name: str) -> None:
    spec = preset(name)
    assert spec.efficiency is not None
    for key in ("hbm_gib", "hbm", "peak_tflops", "devices_per_node", "levels", "network"):
        assert spec.provenance.get(key), key
    assert "pre-release" in spec.provenance["peak_tflops"]
    for field in ("matmul", "attention_fwd", "attention_bwd", "memory", "kernel_latency_us", "grouped_matmul"):
        assert "assumption" in spec.efficiency.sources[field], field
    assert "22.00 TB/s" in spec.efficiency.sources["hbm_gb_s"]
    for level in spec.levels:
        assert level.sources.get("latency_us") and level.sources.get("efficiency")


@pytest.mark.parametrize("text", ["VR200 (DGX-VR200)", "Vera Rubin NVL72", "NVIDIA Rubin", "vera-rubin nvl144"])
def test_rubin_hardware_texts_map_to_the_preset(text: str) -> None:
    assert hardware_preset(text) == "vr200-nvl72"


def test_rubin_prices_compute_faster_than_gb300_by_at_most_its_peaks() -> None:
    """Llama 3 8B, BF16, one NVLink domain: Rubin's forward compute is shorter than GB300's (1.6x the BF16
    peak, 2.75x the HBM bandwidth, the same efficiencies) but not by more than the larger of the two ratios."""
    sets = ["parallel.tp=1", "parallel.dp=8", "parallel.pp=1", "hardware.devices=8"]
    gb300 = estimator.estimate_perf(estimator.load_config(EXAMPLE, [*sets, "hardware.preset=gb300-nvl72"]))
    rubin = estimator.estimate_perf(estimator.load_config(EXAMPLE, [*sets, "hardware.preset=vr200-nvl72"]))
    fw_gb300, fw_rubin = gb300.perf_parts["FW_COMPUTE"], rubin.perf_parts["FW_COMPUTE"]
    assert fw_gb300 / 2.75 <= fw_rubin < fw_gb300 / 1.2
    assert rubin.total < gb300.total
