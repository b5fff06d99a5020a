"""The device efficiencies as the operator roofline reads them: a kernel's fixed time by operator variant, the
configuration's efficiencies under its options, and their values as a hashable pricing key."""

from __future__ import annotations

from typing import TYPE_CHECKING

from estimator.inputs.gemm_rates import GEMM_FIELDS
from ndval.core import cache

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig
    from estimator.inputs.hardware import DeviceEfficiency

__all__ = ["device_efficiency", "efficiency_key", "kernel_latency_us", "rated_gemm_factors"]


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
    """``cfg.hardware.efficiency`` as the operator roofline reads it, under the options:

    * ``options.cast_kernel_latency: false``: without its cast-kernel latency (casts then pay
      ``kernel_latency_us``, the model before it);
    * ``options.measured_gemm_rate`` (on): the GEMM factors (:data:`GEMM_FIELDS`) multiplied by the hardware's
      ``gemm_rate`` (:func:`rated_gemm_factors`); off: the GEMM factors alone, the model before the measured rates;
    * ``options.ssd_scan_memory: false``: without the SSD scan's measured HBM share (the scan on the ``memory``
      table, as before; :mod:`estimator.inputs.ssd_scan`).

    The copy holds no ``gemm_rate``: the roofline reads its factors as they are."""
    eff = cfg.hardware.efficiency
    assert eff is not None
    update: dict[str, object] = {}
    if not cfg.options.cast_kernel_latency and eff.cast_kernel_latency_us is not None:
        update["cast_kernel_latency_us"] = None
    if eff.gemm_rate is not None:
        update["gemm_rate"] = None
        if cfg.options.measured_gemm_rate:
            update |= rated_gemm_factors(eff)
    if not cfg.options.ssd_scan_memory and eff.ssd_scan_memory is not None:
        update["ssd_scan_memory"] = None
    if not update:
        return eff
    key = (id(eff), cfg.options.cast_kernel_latency, cfg.options.measured_gemm_rate, cfg.options.ssd_scan_memory)
    return cache.held_value(_UNDER_OPTIONS, key, eff, lambda: eff.model_copy(update=update))


def rated_gemm_factors(eff: DeviceEfficiency) -> dict[str, object]:
    """The GEMM factors the roofline prices under ``eff.gemm_rate`` r: each GEMM factor f of ``eff`` becomes ``f·r``
    (a size table row by row; an unset factor stays unset); r unset: 1."""
    rate = 1.0 if eff.gemm_rate is None else eff.gemm_rate
    out: dict[str, object] = {}
    for name in GEMM_FIELDS:
        value = getattr(eff, name)
        if value is None or isinstance(value, (int, float)):
            out[name] = None if value is None else value * rate
        else:
            out[name] = [(float(row[0]), float(row[1]) * rate) for row in value]
    return out


#: :func:`device_efficiency`'s copies under the options, by the instance's identity and the three options
_UNDER_OPTIONS = cache.store("estimator.efficiency_under_options", bound=64,
                             key="(id(DeviceEfficiency), cast_kernel_latency, measured_gemm_rate, ssd_scan_memory)",
                             holds="(the instance, its copy under those options)")


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
            eff.permute_memory_bwd, eff.fp8_matmul, eff.fp4_matmul, eff.fp8_grouped_matmul, eff.sfu_exp_per_s,
            eff.attention_sfu_exp_per_s, eff.ssd_scan_memory,
            *(tuple(map(tuple, t or ())) for t in (eff.grouped_matmul_fwd_by_tokens, eff.grouped_matmul_bwd_by_tokens)))
