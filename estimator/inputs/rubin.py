"""Vera Rubin NVL72 (Megatron-Bridge's ``vr200``) as preset data: NVIDIA's announced, pre-release figures.

NVIDIA marks the Rubin specifications preliminary; the figures here are those announced, per GPU and dense, as
collected with their sources in stas00/ml-engineering@744d01e18b (``compute/accelerator/README.md``, the
"Announced, availability not confirmed" tables, note 26 = the Vera Rubin NVL72 specifications page;
``network/README.md``: NVLink 6 and ConnectX-9). Megatron-Bridge runs it with 4 GPUs per node
(NVIDIA-NeMo/Megatron-Bridge@067f987df0 ``scripts/performance/argument_parser.py``: ``"vr200": 4``).

No per-operator efficiency of Rubin is published: the device efficiencies (GEMM, attention, HBM share,
kernel latency, grouped GEMM, permute) and the NVLink collective factors are SimuMax's B200 measurements
(``configs/system/b200_bf16_ceperm.json``), carried over as an assumption that each source states. Rubin's
SFU exponential rate is not published either: the attention factors are taken as they were measured (no
SFU adjustment, :func:`estimator.perf.roofline.sfu_adjusted_s`).
"""

from __future__ import annotations

from typing import Any

from estimator.inputs.blackwell import carried_b200_efficiency
from estimator.inputs.device_presets import (
    _ASSUMED_EFF,
    _NET_LAT_US,
    BLACKWELL_SFU_EXP_PER_S,
    FP8_ANY_LAYOUT,
    MXFP8_GEMM,
    NVIDIA_LEVELS,
    _level,
)

_MLE = "stas00/ml-engineering@744d01e18b"
_RUBIN_FLOPS = (f"{_MLE} compute/accelerator/README.md TFLOPS table, 'NVIDIA Rubin SXM' (announced, dense): fp32 130, "
                "bf16 / fp16 4,000, fp8 / fp6 17,500, fp4 / nvfp4 35,000 TFLOPS (note 26: NVIDIA Vera Rubin NVL72 "
                "specifications, pre-release)")
_RUBIN_HBM = f"{_MLE} compute/accelerator/README.md memory table: 'NVIDIA Rubin SXM' 288 GB HBM4 at 22.00 TB/s"
_NVLINK6 = (f"{_MLE} network/README.md: NVLink 6 (Rubin) 1,800 GB/s per direction (3,600 GB/s both ways); "
            "Vera Rubin NVL72: one NVLink domain of 72 GPUs")
_CX9 = (f"{_MLE} network/README.md: ConnectX-9 SuperNIC 1,600 Gb/s (NVIDIA: 'up to 1.6 terabits per second') "
        "= 200 GB/s per GPU")
_CARRIED = ("; carried over to Vera Rubin as an assumption (no published per-operator efficiency of Rubin, a newer "
            "SM and tensor-core generation than the B200 they were measured on)")
#: Rubin's HBM4 bandwidth per GPU (GB/s)
RUBIN_HBM_GB_S = 22000.0


def _efficiency() -> dict[str, Any]:
    """The B200 preset's device efficiencies, each source stating the carry-over, with Rubin's HBM bandwidth;
    the SFU rate the attention factors' own (Blackwell's: no SFU adjustment, Rubin's is not published)."""
    return carried_b200_efficiency(_CARRIED, RUBIN_HBM_GB_S, _RUBIN_HBM, BLACKWELL_SFU_EXP_PER_S,
                                   "Rubin's SFU exponential rate is not published: the attention factors' reference "
                                   "rate (Blackwell's), so flash attention is priced as measured")


def _nvlink6() -> dict[str, Any]:
    """The B200 preset's NVLink 5 level (SimuMax's measured collective factors, NCCL's latencies) at NVLink 6's
    1,800 GB/s per direction over the 72-GPU domain."""
    base = NVIDIA_LEVELS["b200"][0]
    sources = {k: v + ("" if k.endswith("latency_us") else _CARRIED) for k, v in base["sources"].items()}
    return {**base, "name": "nvlink6-nvl72", "max_devices": 72, "bandwidth_gb_s": 1800.0,
            "sources": {**sources, "bandwidth_gb_s": _NVLINK6}}


#: the presets of this module, merged into :data:`estimator.inputs.hardware.PRESETS`
RUBIN_PRESETS: dict[str, dict[str, Any]] = {
    "vr200-nvl72": {
        "name": "vr200-nvl72",
        "hbm_gib": 268.0,
        "peak_tflops": {"bf16": 4000.0, "fp16": 4000.0, "fp32": 130.0, "fp8": 17500.0, "fp4": 35000.0},
        "devices_per_node": 4,
        "fp8_gemm_any_layout": True,
        "mxfp8_gemm": True,
        "levels": [_nvlink6(), _level("ib-cx9", None, 200.0, _NET_LAT_US, 0.9, {"efficiency": _ASSUMED_EFF})],
        "efficiency": _efficiency(),
        "provenance": {
            "hbm_gib": f"{_RUBIN_HBM}: 288 GB (decimal) = 268.2 GiB, rounded down",
            "hbm": _RUBIN_HBM,
            "peak_tflops": _RUBIN_FLOPS,
            "devices_per_node": "Megatron-Bridge scripts/performance/argument_parser.py: 4 GPUs per node for vr200; "
                                "the NVLink domain is 72",
            "levels": f"{_NVLINK6}; {_CX9}",
            "network": "NCCL's per-step latencies; SimuMax's measured B200 NVLink 5 collective factors (assumption)",
            "fp8_gemm_any_layout": FP8_ANY_LAYOUT + " (Rubin: a later generation, assumed to keep it)",
            "mxfp8_gemm": MXFP8_GEMM + " (Rubin: a later generation, assumed to keep it)",
        },
    },
}

#: short names of these presets
RUBIN_ALIASES: dict[str, str] = {"vr200": "vr200-nvl72", "vera-rubin-nvl72": "vr200-nvl72"}
