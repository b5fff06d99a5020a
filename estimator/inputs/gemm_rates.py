"""Measured GEMM rates of the Blackwell presets that carry the B200's GEMM factors.

The Blackwell presets' GEMM factors (``matmul``, the grouped tables) were measured on one device, SimuMax's B200
(``configs/system/b200_bf16_ceperm.json``), and carried to B300, GB200 NVL72 and GB300 NVL72 at the ratio of their
published peaks. NVIDIA's aiconfigurator measured the same GEMMs on each of these devices with the same kernels
(ai-dynamo/aiconfigurator@095f58a51c ``aic-core/src/aiconfigurator_core/systems/data/<system>/gemm/trtllm/
1.3.0rc20/gemm_perf.parquet``: TensorRT-LLM 1.3.0rc20's ``Linear`` module, latency per (dtype, m, n, k),
``collection_meta.yaml`` ``provenance: collected``), which gives each device's GEMM throughput against the B200's:

    ``gemm_rate = median over shapes (T_device / T_B200) · peak_B200 / peak_device``  (BF16 peaks)

``T`` = ``2·m·n·k / latency`` of the BF16 GEMMs (kernel source ``torch_flow``) of every shape both tables hold
with ``m ≥ 4096`` and ``n, k ≥ 2048`` (a pre-training micro-batch's tokens on hidden sizes of 2048 and more:
1,339 shapes). BF16, because the FP8 and NVFP4 rows of the same tables time the activation's quantization with
the GEMM (``collector/trtllm/collect_gemm.py``: "the collected fp8 GEMM includes the compute-scale overhead";
the NVFP4 ``Linear`` quantizes its input), which ndval prices as cast kernels of its own
(:mod:`estimator.perf.lowp`): the rate is the device's, applied to each GEMM dtype alike.

``gemm_rate`` multiplies every GEMM factor (:func:`estimator.perf.efficiency.rated_gemm_factors`). The medians
and their interquartile ranges (per-shape ratios against the B200):

=================  ===========  ===============  ======  ==========
device             median       IQR              peak    gemm_rate
=================  ===========  ===============  ======  ==========
B300 SXM6 AC       1.0480       0.976 – 1.109    2250    1.0480
GB200              1.0730       0.997 – 1.134    2500    0.9657
GB300              1.2490       1.194 – 1.319    2500    1.1241
H100 80GB HBM3     0.5202       0.490 – 0.560    989     (not applied)
H200               0.5166       0.485 – 0.561    989     (not applied)
=================  ===========  ===============  ======  ==========

The rate is applied where the factors it scales are the reference device's own: the B200's, on the Blackwell
presets. It is not applied to the Hopper presets: their factors are SimuMax's H100 file, and which measured device
anchors them is not settled by the data. SimuMax measured its factors in training on the A100 (0.75) and the B200
(0.488), while aiconfigurator's A100 / B200 ratio (sglang 0.5.10 tables, the same framework on both: 0.165) puts
the A100 at 0.58 from the B200's factor: the shortfall of a training run against the kernel benchmark differs by
device (B200 0.488 against aiconfigurator's 0.656 of peak; A100 0.75 against 0.78). Anchored on the B200 the H100
would read 0.577, on the A100 0.72 (the H100 file holds 0.70); choosing between them by the H100 rows they move
would be fitting. Rubin and the A100 presets are left as they are. ``options.measured_gemm_rate: false`` prices
with the held factors (:mod:`estimator.perf.efficiency`). ``tools/gemm_rates.py`` recomputes the medians from an
aiconfigurator checkout.
"""

from __future__ import annotations

from typing import Any

#: the GEMM factors of :class:`estimator.inputs.hardware.DeviceEfficiency` (what ``gemm_rate`` multiplies)
GEMM_FIELDS = ("matmul", "grouped_matmul", "grouped_matmul_fwd_by_tokens", "grouped_matmul_bwd_by_tokens",
               "fp8_matmul", "fp4_matmul", "fp8_grouped_matmul")

_AIC = ("ai-dynamo/aiconfigurator@095f58a51c aic-core/src/aiconfigurator_core/systems/data/{}/gemm/trtllm/1.3.0rc20/"
        "gemm_perf.parquet (TensorRT-LLM 1.3.0rc20 Linear, measured): median over 1,339 BF16 shapes (m >= 4096, "
        "n, k >= 2048) of the throughput against b200_sxm's = {:.4f} (IQR {}), times the BF16 peak ratio {:g} / {:g}"
        " = {:.4f} (estimator.inputs.gemm_rates)")

#: aiconfigurator system -> (median ratio against the B200, its IQR); the Hopper rows are recorded for the anchor
#: check of the module docstring, not applied
MEASURED_RATIO: dict[str, tuple[float, str]] = {
    "h100_sxm": (0.5202, "0.490-0.560"),
    "h200_sxm": (0.5166, "0.485-0.561"),
    "b300_sxm": (1.0480, "0.976-1.109"),
    "gb200": (1.0730, "0.997-1.134"),
    "gb300": (1.2490, "1.194-1.319"),
}
#: the preset whose device each system measured (its BF16 peak is the preset's)
SYSTEM_PRESET: dict[str, str] = {"h100_sxm": "h100-80g", "h200_sxm": "h200", "b300_sxm": "b300",
                                 "gb200": "gb200-nvl72", "gb300": "gb300-nvl72"}
#: the reference device's preset
REFERENCE_PRESET = "b200"
#: the presets the rate is applied to (the ones that carry the B200's GEMM factors) -> the system measured
PRESET_SYSTEM: dict[str, str] = {"b300": "b300_sxm", "gb200-nvl72": "gb200", "gb300-nvl72": "gb300"}


def gemm_rate(ratio: float, peak_tflops: float, reference_peak_tflops: float) -> float:
    """``ratio · reference_peak / peak``: the measured throughput ratio against the reference device as a factor
    on the reference's GEMM factors (a share of each device's own peak)."""
    return ratio * reference_peak_tflops / peak_tflops


def preset_gemm_rate(presets: dict[str, dict[str, Any]], system: str) -> float:
    """:func:`gemm_rate` of ``system``'s recorded ratio with the BF16 peaks of its preset and the reference's,
    rounded to 4 places."""
    def peak(name: str) -> float:
        return float(presets[name]["peak_tflops"]["bf16"])
    return round(gemm_rate(MEASURED_RATIO[system][0], peak(SYSTEM_PRESET[system]), peak(REFERENCE_PRESET)), 4)


def with_gemm_rates(presets: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``presets`` with ``efficiency.gemm_rate`` and its source on each preset of :data:`PRESET_SYSTEM`."""
    out = dict(presets)
    for name, system in PRESET_SYSTEM.items():
        if name not in presets:
            continue
        ratio, iqr = MEASURED_RATIO[system]
        rate = preset_gemm_rate(presets, system)
        peaks = (presets[REFERENCE_PRESET]["peak_tflops"]["bf16"], presets[name]["peak_tflops"]["bf16"])
        eff = presets[name]["efficiency"]
        sources = {**eff.get("sources", {}), "gemm_rate": _AIC.format(system, ratio, iqr, *peaks, rate)}
        out[name] = {**presets[name], "efficiency": {**eff, "gemm_rate": rate, "sources": sources}}
    return out
