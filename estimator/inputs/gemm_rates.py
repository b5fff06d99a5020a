"""Measured GEMM rates of the presets whose GEMM factors were not measured on the device itself.

The presets' GEMM factors (``matmul``, the grouped tables, ...) were measured on one device, SimuMax's B200
(``configs/system/b200_bf16_ceperm.json``), and carried to B300, GB200 NVL72 and GB300 NVL72 at the ratio of
their published peaks; the Hopper presets held SimuMax's H100 starter values ("spec-based ... NOT
shape-calibrated"). NVIDIA's aiconfigurator measured the same GEMMs on each of these devices with the same
kernels (ai-dynamo/aiconfigurator@095f58a51c ``aic-core/src/aiconfigurator_core/systems/data/<system>/gemm/
trtllm/1.3.0rc20/gemm_perf.parquet``: TensorRT-LLM 1.3.0rc20's ``Linear`` module, latency per (dtype, m, n, k),
``collection_meta.yaml`` ``provenance: collected``), which gives each device's GEMM throughput against the B200's:

    ``gemm_rate = median over shapes (T_device / T_B200) · peak_B200 / peak_device``  (BF16 peaks)

``T`` = ``2·m·n·k / latency`` of the BF16 GEMMs (kernel source ``torch_flow``) of every shape both tables
hold with ``m ≥ 4096`` and ``n, k ≥ 2048`` (a pre-training micro-batch's tokens on hidden sizes of 2048 and
more: 1,339 shapes). BF16, because the FP8 and NVFP4 rows of the same tables time the activation's
quantization with the GEMM (``collector/trtllm/collect_gemm.py``: "the collected fp8 GEMM includes the
compute-scale overhead"; the NVFP4 ``Linear`` quantizes its input), which ndval prices as cast kernels of its
own (:mod:`estimator.perf.lowp`): the rate is the device's, applied to each GEMM dtype alike.

``gemm_rate`` multiplies every GEMM factor (:func:`estimator.perf.efficiency.rated_gemm_factors`); a Hopper preset
also takes the B200's GEMM factors (``carried_gemm``) in place of its starter ones. The medians and their
interquartile ranges (per-shape ratios against the B200):

=================  ===========  ===============  ======  ==========
device             median       IQR              peak    gemm_rate
=================  ===========  ===============  ======  ==========
H100 80GB HBM3     0.5202       0.490 – 0.560    989     1.1835
H200               0.5166       0.485 – 0.561    989     1.1753
B300 SXM6 AC       1.0480       0.976 – 1.109    2250    1.0480
GB200              1.0730       0.997 – 1.134    2500    0.9657
GB300              1.2490       1.194 – 1.319    2500    1.1241
=================  ===========  ===============  ======  ==========

The H100 variants without a table of their own (the 96 GB HBM2e SXM at 500 W, H800, the PCIe and NVL cards)
take the H100 SXM's rate as a share of their own peak (assumption, stated in each source); Rubin and the A100
presets are left as they are (no table, or their own SimuMax file). ``options.measured_gemm_rate: false``
prices with the held factors (:mod:`estimator.perf.efficiency`). ``tools/gemm_rates.py`` recomputes the medians from
an aiconfigurator checkout.
"""

from __future__ import annotations

from typing import Any

#: the GEMM factors of :class:`estimator.inputs.hardware.DeviceEfficiency` (what ``gemm_rate`` multiplies and
#: ``carried_gemm`` may hold)
GEMM_FIELDS = ("matmul", "grouped_matmul", "grouped_matmul_fwd_by_tokens", "grouped_matmul_bwd_by_tokens",
               "fp8_matmul", "fp4_matmul", "fp8_grouped_matmul")

_AIC = ("ai-dynamo/aiconfigurator@095f58a51c aic-core/src/aiconfigurator_core/systems/data/{}/gemm/trtllm/1.3.0rc20/"
        "gemm_perf.parquet (TensorRT-LLM 1.3.0rc20 Linear, measured): median over 1,339 BF16 shapes (m >= 4096, "
        "n, k >= 2048) of the throughput against b200_sxm's = {:.4f} (IQR {}), times the BF16 peak ratio 2250 / {:g}"
        " = {:.4f} (estimator.inputs.gemm_rates)")

#: aiconfigurator system -> (median ratio against the B200, its IQR, the device's BF16 peak in TFLOPS)
MEASURED_RATIO: dict[str, tuple[float, str, float]] = {
    "h100_sxm": (0.5202, "0.490-0.560", 989.0),
    "h200_sxm": (0.5166, "0.485-0.561", 989.0),
    "b300_sxm": (1.0480, "0.976-1.109", 2250.0),
    "gb200": (1.0730, "0.997-1.134", 2500.0),
    "gb300": (1.2490, "1.194-1.319", 2500.0),
}
#: the reference device's BF16 peak (the b200 preset: DGX B200 datasheet, dense)
B200_BF16_TFLOPS = 2250.0

#: preset -> (aiconfigurator system measured, whether the preset carries the B200's GEMM factors, assumption)
_PRESET_SYSTEM: dict[str, tuple[str, bool, str]] = {
    "b300": ("b300_sxm", False, ""),
    "gb200-nvl72": ("gb200", False, ""),
    "gb300-nvl72": ("gb300", False, ""),
    "h100-80g": ("h100_sxm", True, ""),
    "h200": ("h200_sxm", True, ""),
    **{name: ("h100_sxm", True, f"; the H100 SXM's rate applied to {name} (the same SM; assumption)")
       for name in ("h100-sxm-96g-hbm2e", "h800", "h100-pcie", "h100-nvl")},
}


def gemm_rate(ratio: float, peak_tflops: float, reference_peak_tflops: float = B200_BF16_TFLOPS) -> float:
    """``ratio · reference_peak / peak``: the measured throughput ratio against the reference device as a factor
    on the reference's GEMM factors (a share of each device's own peak)."""
    return ratio * reference_peak_tflops / peak_tflops


def with_gemm_rates(presets: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``presets`` with ``efficiency.gemm_rate`` (and, on the Hopper presets, ``efficiency.carried_gemm``: the
    b200 preset's GEMM factors) and their sources, per :data:`_PRESET_SYSTEM`."""
    reference = presets["b200"]["efficiency"]
    carried = {k: reference.get(k) for k in GEMM_FIELDS}
    out = dict(presets)
    for name, (system, carries, note) in _PRESET_SYSTEM.items():
        if name not in presets:
            continue
        ratio, iqr, peak = MEASURED_RATIO[system]
        rate = round(gemm_rate(ratio, peak), 4)
        eff = presets[name]["efficiency"]
        sources = {**eff.get("sources", {}), "gemm_rate": _AIC.format(system, ratio, iqr, peak, rate) + note}
        extra: dict[str, Any] = {"gemm_rate": rate}
        if carries:
            extra["carried_gemm"] = carried
            sources["carried_gemm"] = ("the b200 preset's GEMM factors (SimuMax's B200 measurements) in place of "
                                       "this preset's unmeasured ones, under gemm_rate")
        out[name] = {**presets[name], "efficiency": {**eff, **extra, "sources": sources}}
    return out
