"""The A100 / H100 form-factor and export variants (estimator.inputs.variants) and the hardware text of a
measured row -> preset mapping, with hand-computed values."""

from __future__ import annotations

from pathlib import Path

import pytest

import estimator
from estimator.inputs.hardware import preset
from estimator.inputs.variants import VARIANT_PRESETS, hardware_preset
from estimator.perf.network import effective_bytes_per_s

EXAMPLE = Path(estimator.__file__).parent / "examples" / "llama3-8b-h100.yaml"


@pytest.mark.parametrize(("text", "name"), [
    # the texts of the shared measured rows keep their presets
    ("B200 (8x, one node)", "b200"), ("A100 80GB", "a100-80g"), ("A100 (8 per node)", "a100-80g"),
    ("H100 (CI platform dgx_h100)", "h100-80g"), ("H100 80GB (8x)", "h100-80g"), ("GB300 (DGX-GB300)", "gb300-nvl72"),
    ("GB200 (DGX-GB200)", "gb200-nvl72"), ("B300 (DGX-B300)", "b300"), ("H200 141GB", "h200"),
    ("H100 SXM 96GB HBM2e, 500 W power limit (Grand Teton)", "h100-sxm-96g-hbm2e"),
    # variants
    ("H800 (8x)", "h800"), ("NVIDIA A800 80GB SXM", "a800"), ("H100 80GB PCIe", "h100-pcie"), ("H100 NVL", "h100-nvl"),
    ("A100-SXM4-40GB", "a100-40g"), ("A100 40GB", "a100-40g"), ("A100 80GB PCIe (8x)", "a100-pcie"),
    # NVLink in the text is not the NVL card
    ("H100 80GB (NVLink, 8x)", "h100-80g"), ("DGX H100 (NVLink 900 GB/s)", "h100-80g"),
])
def test_hardware_text_maps_to_its_preset(text: str, name: str) -> None:
    assert hardware_preset(text) == name


@pytest.mark.parametrize(("text", "says"), [
    ("GH200 (4 per node)", "GH200"), ("A100 40GB PCIe", "A100 40GB PCIe"), ("H20 96GB", "no hardware preset"),
    ("MI300X", "no hardware preset"),
])
def test_gpus_without_a_preset_are_refused_naming_the_column(text: str, says: str) -> None:
    with pytest.raises(estimator.ConfigError) as info:
        hardware_preset(text)
    assert info.value.field == "hardware" and says in str(info.value)


def test_variant_figures_by_hand() -> None:
    """Peaks, memory and the intra-node link as the datasheets give them (dense, per direction)."""
    pcie, nvl = preset("h100-pcie"), preset("h100-nvl")
    assert (pcie.peak_tflops["bf16"], pcie.peak_tflops["fp8"], pcie.hbm_gib) == (756.0, 1513.0, 80.0)
    assert (nvl.peak_tflops["bf16"], nvl.peak_tflops["fp8"], nvl.hbm_gib) == (835.0, 1670.0, 94.0)
    assert pcie.efficiency is not None and pcie.efficiency.hbm_gb_s == 2000.0
    assert nvl.efficiency is not None and nvl.efficiency.hbm_gb_s == 3900.0
    assert preset("a100-40g").hbm_gib == 40.0 and preset("a100-40g").efficiency.hbm_gb_s == 1555.0  # type: ignore[union-attr]
    # H800 / A800: NVLink 400 GB/s both ways = 200 per direction, everything else their base GPU's
    for variant, base in (("h800", "h100-80g"), ("a800", "a100-80g")):
        v, b = preset(variant), preset(base)
        assert v.levels[0].bandwidth_gb_s == 200.0 and v.levels[1:] == b.levels[1:]
        assert v.peak_tflops == b.peak_tflops and v.efficiency is not None and b.efficiency is not None
        assert v.efficiency.matmul == b.efficiency.matmul


def test_pcie_levels_carry_simumax_measured_factors() -> None:
    """A100 PCIe: 30 GB/s at SimuMax's 8-card factors, e.g. all-reduce 30e9 · 0.4176 B/s, all-to-all 0.2754;
    NCCL's PCIe ring latency 5.7 µs per step."""
    level = preset("a100-pcie").levels[0]
    assert (level.max_devices, level.bandwidth_gb_s, level.latency_us) == (8, 30.0, 5.7)
    assert effective_bytes_per_s(level, "all_reduce") == pytest.approx(30e9 * 0.4176)
    assert effective_bytes_per_s(level, "all_to_all") == pytest.approx(30e9 * 0.2754)
    eff = preset("a100-pcie").efficiency
    assert eff is not None and (eff.matmul, eff.memory, eff.kernel_latency_us) == ([(0.0, 0.75)], [(0.0, 0.91)], 40.0)


@pytest.mark.parametrize("name", sorted(VARIANT_PRESETS))
def test_every_variant_figure_has_a_source(name: str) -> None:
    spec = preset(name)
    assert spec.provenance and spec.efficiency is not None
    for field in ("hbm_gb_s", "matmul", "attention_fwd", "attention_bwd", "memory", "kernel_latency_us"):
        assert spec.efficiency.sources.get(field), field
    for level in spec.levels:
        assert level.sources.get("latency_us") and level.sources.get("efficiency") is not None


def test_tp_comm_is_slower_over_the_h800_nvlink() -> None:
    """Llama 3 8B at TP 8 on one node: the H800's NVLink (200 of the H100's 450 GB/s per direction) makes the
    TP collectives at least 2x slower; the compute is unchanged."""
    h100 = estimator.estimate_perf(estimator.load_config(EXAMPLE, ["parallel.tp=8", "parallel.dp=1", "parallel.pp=1"]))
    h800 = estimator.estimate_perf(estimator.load_config(EXAMPLE, ["parallel.tp=8", "parallel.dp=1", "parallel.pp=1", "hardware.preset=h800"]))
    assert h800.perf_parts["MP_COMM"] > 2.0 * h100.perf_parts["MP_COMM"] > 0
    assert h800.perf_parts["FW_COMPUTE"] == pytest.approx(h100.perf_parts["FW_COMPUTE"])


@pytest.mark.parametrize("name", ["a100-pcie", "h800"])
def test_batched_search_equals_the_scalar_path_on_the_variants(name: str) -> None:
    """The PCIe level's per-collective factors and the slower NVLink go through the batched search as through
    the scalar path: Llama 3 8B on 16 devices, the same ranking to the last bit."""
    from estimator import search

    base = estimator.load_config(EXAMPLE, [f"hardware.preset={name}", "hardware.devices=16", "parallel.dp=4"])
    space = {"parallel.tp": (1, 2, 4, 8), "parallel.pp": (1, 2, 4), "recompute.mode": ("full", "selective")}
    fast, slow = search.search(base, 16, space, top_k=50), search.search(base, 16, space, top_k=50, batched=False)
    assert (fast.path, slow.path) == ("batched", "scalar") and len(fast.ranked) > 5
    assert [(c.key(), c.total_s, c.peak_mb) for c in fast.ranked] == [(c.key(), c.total_s, c.peak_mb)
                                                                       for c in slow.ranked]
