"""A cast kernel's fixed time (DeviceEfficiency.cast_kernel_latency_us, estimator.perf.efficiency): hand-computed
values, its off-switch, every NVIDIA preset's source, and the figure re-derived from the profile it cites."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import estimator
from estimator.inputs.device_presets import CAST_KERNEL_LATENCY_US
from estimator.inputs.hardware import PRESETS, preset
from estimator.perf.efficiency import device_efficiency, kernel_latency_us
from estimator.perf.roofline import kernel_group_s

EXAMPLE = Path(estimator.__file__).parent / "examples" / "llama3-8b-h100.yaml"


def test_a_cast_kernel_pays_the_cast_latency_by_hand() -> None:
    """B200 (HBM 8,000 GB/s, share 0.666, SimuMax's 30 µs per operator): a cast of 64 MB in 2 kernels (amax +
    cast) takes 64e6 / (8e12 · 0.666) + 2 · 3 µs; the same bytes as an element-wise operator pay 2 · 30 µs."""
    eff = preset("b200").efficiency
    assert eff is not None and eff.kernel_latency_us == 30.0 and eff.cast_kernel_latency_us == 3.0
    moved = 64e6
    stream = moved / (8000.0 * 1e9 * 0.666)
    assert kernel_group_s(0.0, moved, 2.0, "elementwise", False, eff, 2.25e15, "quantize") == pytest.approx(
        stream + 2 * 3.0e-6, rel=1e-12)
    assert kernel_group_s(0.0, moved, 2.0, "elementwise", False, eff, 2.25e15, "") == pytest.approx(
        stream + 2 * 30.0e-6, rel=1e-12)
    assert kernel_latency_us(eff, "quantize") == 3.0 and kernel_latency_us(eff, "permute") == 30.0
    assert kernel_latency_us(eff.model_copy(update={"cast_kernel_latency_us": None}), "quantize") == 30.0


def test_off_switch_prices_casts_as_before() -> None:
    """``options.cast_kernel_latency: false``: the roofline reads the efficiencies without the cast latency, so an
    FP8 run's every number equals that of a hardware whose casts pay ``kernel_latency_us``; on, the FP8 run is
    faster (fewer µs per cast kernel), a BF16 run (no casts) is unchanged."""
    fp8 = ["precision.fp8_linear=true", "precision.linear_recipe=tensorwise"]
    on = estimator.load_config(EXAMPLE, fp8)
    off = estimator.load_config(EXAMPLE, [*fp8, "options.cast_kernel_latency=false"])
    assert device_efficiency(off).cast_kernel_latency_us is None
    assert device_efficiency(on) is on.hardware.efficiency
    spec = on.hardware.model_dump()
    spec["efficiency"]["cast_kernel_latency_us"] = None
    plain = estimator.load_config(EXAMPLE, [*fp8, "options.cast_kernel_latency=true"])
    plain = estimator.load_config({**plain.model_dump(), "hardware": spec})
    assert estimator.estimate_perf(off).to_dict() == estimator.estimate_perf(plain).to_dict()
    assert estimator.estimate_perf(on).total < estimator.estimate_perf(off).total
    bf16 = estimator.load_config(EXAMPLE)
    bf16_off = estimator.load_config(EXAMPLE, ["options.cast_kernel_latency=false"])
    assert estimator.estimate_perf(bf16).to_dict() == estimator.estimate_perf(bf16_off).to_dict()


def test_every_nvidia_preset_states_the_cast_latency_with_its_source() -> None:
    with_efficiency = [name for name in PRESETS if preset(name).efficiency is not None]
    assert len(with_efficiency) >= 14
    for name in with_efficiency:
        eff = preset(name).efficiency
        assert eff is not None and eff.cast_kernel_latency_us == CAST_KERNEL_LATENCY_US, name
        assert "hta-trace-diff/control.json.gz" in eff.sources["cast_kernel_latency_us"], name


def test_the_cast_latency_is_the_profile_figure_it_cites(profile_path: Any) -> None:
    """``ndval calibrate --from-profile`` on the cited trace: the 10th percentile of its element-wise kernel
    durations is 3.00 µs over 6,078 kernels (the preset's figure, transcribed)."""
    from ndval.harness.commands.calibrate import fit_classes, profile_kernels

    kernels, _ = profile_kernels(profile_path("kineto/hta-trace-diff/control.json.gz"))
    fit = fit_classes(kernels, 312e12, 2039e9)
    assert fit["elementwise"]["count"] == 6078
    assert round(fit["elementwise"]["kernel_latency_us"], 2) == CAST_KERNEL_LATENCY_US
