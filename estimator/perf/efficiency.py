"""The device efficiencies as the operator roofline reads them: a kernel's fixed time by operator variant, the
configuration's efficiencies under its options, and their values as a hashable pricing key."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ndval.core import cache

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig
    from estimator.inputs.hardware import DeviceEfficiency

__all__ = ["device_efficiency", "efficiency_key", "kernel_latency_us"]


def kernel_latency_us(eff: DeviceEfficiency, variant: str) -> float:
    """Fixed device time of one kernel of an operator of ``variant``: ``eff.cast_kernel_latency_us`` for a cast
    kernel (variant ``quantize``: the recipe's quantize / amax kernels, :mod:`estimator.perf.lowp`) where the
    hardware states one, else ``eff.kernel_latency_us``.

    The presets' ``kernel_latency_us`` is SimuMax's ``latency_us``, which SimuMax adds once per memory access of
    its own operators (norms, activations, two permute kernels ...) with the HBM share it fitted beside it
    (MooreThreads/SimuMax@4dcaae513b ``simumax/core/config.py`` ``compute_mem_access_time``). SimuMax prices no
    cast kernel (its B200 ``fp8_matmul`` entries are 0, unmeasured): a cast is one small kernel, whose fixed
    time is a near-empty kernel's, as ``ndval calibrate --from-profile`` measures it (the 10th percentile of a
    real profile's element-wise kernel durations)."""
    if variant == "quantize" and eff.cast_kernel_latency_us is not None:
        return eff.cast_kernel_latency_us
    return eff.kernel_latency_us


def device_efficiency(cfg: EstimatorConfig) -> DeviceEfficiency:
    """``cfg.hardware.efficiency`` as the operator roofline reads it: without its cast-kernel latency under
    ``options.cast_kernel_latency: false`` (casts then pay ``kernel_latency_us``, the model before it)."""
    eff = cfg.hardware.efficiency
    assert eff is not None
    if cfg.options.cast_kernel_latency or eff.cast_kernel_latency_us is None:
        return eff
    return cache.held_value(_WITHOUT_CAST_LATENCY, id(eff), eff,
                            lambda: eff.model_copy(update={"cast_kernel_latency_us": None}))


#: :func:`device_efficiency`'s copies without the cast-kernel latency, by the instance's identity
_WITHOUT_CAST_LATENCY = cache.store("estimator.efficiency_without_cast_latency", bound=64, key="id(DeviceEfficiency)",
                                    holds="(the instance, its copy with cast_kernel_latency_us None)")


def efficiency_key(eff: DeviceEfficiency) -> tuple[object, ...]:
    """The values :func:`estimator.perf.roofline.kernel_group_s` reads from ``eff`` (sources excluded), hashable; built once per
    (frozen) instance."""
    return cache.held_value(_EFFICIENCY_KEYS, id(eff), eff, _efficiency_values, eff)


#: :func:`efficiency_key` by instance identity (the entry holds the instance)
_EFFICIENCY_KEYS = cache.store("estimator.efficiency_keys", bound=256, key="id(DeviceEfficiency)",
                               holds="(the instance, its values as a hashable tuple)")


def _efficiency_values(eff: DeviceEfficiency) -> tuple[object, ...]:
    return (eff.hbm_gb_s, tuple(map(tuple, eff.matmul)), eff.attention_fwd, eff.attention_bwd,
            tuple(map(tuple, eff.memory)), eff.kernel_latency_us, eff.cast_kernel_latency_us, eff.grouped_matmul,
            eff.permute_memory_fwd,
            eff.permute_memory_bwd, eff.fp8_matmul, eff.fp4_matmul, eff.fp8_grouped_matmul, eff.sfu_exp_per_s, eff.attention_sfu_exp_per_s,
            *(tuple(map(tuple, t or ())) for t in (eff.grouped_matmul_fwd_by_tokens, eff.grouped_matmul_bwd_by_tokens)))
