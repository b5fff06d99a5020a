"""Blackwell systems beyond DGX B200: DGX/HGX B300, GB200 NVL72 and GB300 NVL72, as preset data.

Every figure cites its published spec in the preset's ``provenance`` (per GPU, dense tensor-core
peaks: NVIDIA publishes FP4 / FP8 / BF16 rack and board figures *with* 2:4 sparsity unless marked
dense; the dense figure is half, which NVIDIA states beside it where it prints both). Bandwidths are
per direction (NVLink 5: 1.8 TB/s per GPU both ways = 900 GB/s each way). The NVL72 racks are one
NVLink domain of 72 GPUs (the first network level holds 72 devices); between racks, and between the
8-GPU B300 nodes, one scale-out NIC per GPU.

The device efficiencies (GEMM, attention, HBM share, kernel latency, MoE grouped GEMM and permute) are
SimuMax's B200 measurements (``configs/system/b200_bf16_ceperm.json``, as the ``b200`` preset): the same
Blackwell SM and tensor-core generation; that they carry over to B300 / GB200 / GB300 is an
assumption, stated in each preset's ``efficiency.sources``. The NVLink collective factors likewise
are SimuMax's measured 8-GPU NVLink 5 factors, applied to the NVL72 switch domain (assumption). The GEMM factors
are priced at each system's GEMM rate measured against the B200 (:mod:`estimator.inputs.gemm_rates`).
Blackwell Ultra (B300, GB300) doubles the SFU's exponential throughput (10.7 against 5 TeraExponentials/s):
each preset states its own rate beside the B200's, on which the attention factors were measured
(``efficiency.sfu_exp_per_s`` / ``attention_sfu_exp_per_s``, :func:`estimator.perf.roofline.sfu_adjusted_s`).
"""

from __future__ import annotations

from typing import Any

from estimator.inputs.device_presets import (
    _ASSUMED_EFF,
    _NET_LAT_US,
    BLACKWELL_SFU_EXP_PER_S,
    BLACKWELL_ULTRA_SFU_EXP_PER_S,
    FP8_ANY_LAYOUT,
    MXFP8_GEMM,
    NVIDIA_LEVELS,
    PRESETS,
    SFU_SOURCE,
    _level,
)

#: the B200 device-efficiency block (SimuMax measured on B200) and the note every Blackwell preset adds
_B200_EFFICIENCY: dict[str, Any] = PRESETS["b200"]["efficiency"]
_SAME_SM = ("; applied to {} as the same Blackwell SM / tensor-core generation (assumption: no published "
            "per-operator efficiency for this system)")

_HGX_B300 = ("NVIDIA HGX B300 specifications (nvidia.com/en-us/data-center/hgx, Blackwell Ultra): 8 GPUs, "
             "FP4 144 PFLOPS sparse / 108 PFLOPS dense, FP8 72 PFLOPS, BF16 36 PFLOPS (sparse), 2.3 TB HBM3e, "
             "NVLink 5 1.8 TB/s per GPU")
_GB200_NVL72 = ("NVIDIA GB200 NVL72 specifications (nvidia.com/en-us/data-center/gb200-nvl72): 72 GPUs, FP4 1,440 "
                "PFLOPS, FP8/FP6 720 PFLOPS, FP16/BF16 360 PFLOPS (sparse), FP32 5,760 TFLOPS, up to 13.4 TB HBM3e at "
                "576 TB/s, NVLink 130 TB/s")
_GB300_NVL72 = ("NVIDIA GB300 NVL72 specifications (nvidia.com/en-us/data-center/gb300-nvl72): 72 GPUs, FP4 1,440 "
                "PFLOPS sparse / 1,080 PFLOPS dense, FP8/FP6 720 PFLOPS, FP16/BF16 360 PFLOPS (sparse), up to 21 TB "
                "HBM3e at 576 TB/s, NVLink 130 TB/s")
_CX7 = "NVIDIA ConnectX-7 400 Gb/s InfiniBand per GPU (GB200 NVL72 reference architecture) = 50 GB/s"
_CX8 = "NVIDIA ConnectX-8 SuperNIC 800 Gb/s per GPU (HGX B300 / GB300 NVL72) = 100 GB/s"


def carried_b200_efficiency(carried: str, hbm_gb_s: float, hbm_source: str, sfu_exp_per_s: float,
                            sfu_source: str) -> dict[str, Any]:
    """The B200 device efficiencies carried over to another system: every source ends with ``carried`` (the
    assumption), with the system's own HBM bandwidth and SFU exponential rate and their sources (the attention
    factors keep the B200's rate as their reference)."""
    sources = {k: v + carried for k, v in _B200_EFFICIENCY["sources"].items()}
    sources["hbm_gb_s"], sources["sfu_exp_per_s"] = hbm_source, sfu_source
    return {**_B200_EFFICIENCY, "hbm_gb_s": hbm_gb_s, "sfu_exp_per_s": sfu_exp_per_s, "sources": sources}


def _efficiency(system: str, sfu_exp_per_s: float) -> dict[str, Any]:
    """:func:`carried_b200_efficiency` for a Blackwell system: the same SM generation, 8 TB/s HBM3e."""
    return carried_b200_efficiency(_SAME_SM.format(system), 8000.0, f"{system}: 8 TB/s HBM3e per GPU (see "
                                   "provenance.hbm)", sfu_exp_per_s,
                                   f"{system}: {sfu_exp_per_s / 1e12:g} TeraExponentials/s; {SFU_SOURCE}")


def _nvlink5(max_devices: int, system: str) -> dict[str, Any]:
    """The B200 preset's NVLink 5 level (900 GB/s per direction, SimuMax's measured factors) for a
    domain of ``max_devices`` GPUs."""
    base = NVIDIA_LEVELS["b200"][0]
    note = "" if max_devices == 8 else f"; the 72-GPU NVLink switch domain of {system} (assumption: same factors)"
    sources = {k: v + note for k, v in base["sources"].items()}
    return {**base, "name": "nvlink5" if max_devices == 8 else "nvlink5-nvl72", "max_devices": max_devices,
            "sources": sources}


def _scale_out(name: str, bw_gb_s: float) -> dict[str, Any]:
    return _level(name, None, bw_gb_s, _NET_LAT_US, 0.9, {"efficiency": _ASSUMED_EFF})


_NET = ("efficiency and latency per level and collective kind with their sources in levels[].sources "
        "(NCCL's per-step latencies; SimuMax's measured B200 NVLink 5 factors)")

#: the presets of this module, merged into :data:`estimator.inputs.hardware.PRESETS`
BLACKWELL_PRESETS: dict[str, dict[str, Any]] = {
    "b300": {
        "name": "b300",
        "hbm_gib": 268.0,
        "peak_tflops": {"bf16": 2250.0, "fp16": 2250.0, "fp32": 75.0, "fp8": 4500.0, "fp4": 13500.0},
        "devices_per_node": 8,
        "fp8_gemm_any_layout": True,
        "mxfp8_gemm": True,
        "levels": [_nvlink5(8, "B300"), _scale_out("ib-xdr", 100.0)],
        "efficiency": _efficiency("B300", BLACKWELL_ULTRA_SFU_EXP_PER_S),
        "provenance": {
            "hbm_gib": f"{_HGX_B300}: 288 GB (decimal) HBM3e per GPU = 268.2 GiB, rounded down",
            "hbm": "HGX B300: 8 TB/s HBM3e per GPU",
            "peak_tflops": f"{_HGX_B300}: per GPU dense fp4 108/8 = 13.5 PFLOPS, fp8 72/8/2 = 4.5, bf16 36/8/2 = "
                           "2.25 PFLOPS; fp32 approximate (75 TFLOPS)",
            "levels": f"NVLink 5 1.8 TB/s bidirectional = 900 GB/s per direction in a node of 8; {_CX8}",
            "network": _NET,
            "fp8_gemm_any_layout": FP8_ANY_LAYOUT,
            "mxfp8_gemm": MXFP8_GEMM,
        },
    },
    "gb200-nvl72": {
        "name": "gb200-nvl72",
        "hbm_gib": 173.0,
        "peak_tflops": {"bf16": 2500.0, "fp16": 2500.0, "fp32": 80.0, "fp8": 5000.0, "fp4": 10000.0},
        "devices_per_node": 4,
        "fp8_gemm_any_layout": True,
        "mxfp8_gemm": True,
        "levels": [_nvlink5(72, "GB200 NVL72"), _scale_out("ib-ndr", 50.0)],
        "efficiency": _efficiency("GB200", BLACKWELL_SFU_EXP_PER_S),
        "provenance": {
            "hbm_gib": f"{_GB200_NVL72}: 13.4 TB / 72 = 186 GB (decimal) per GPU = 173.2 GiB, rounded down",
            "hbm": "GB200 NVL72: 576 TB/s / 72 = 8 TB/s per GPU",
            "peak_tflops": f"{_GB200_NVL72}: per GPU dense fp4 1440/72/2 = 10 PFLOPS, fp8 720/72/2 = 5, bf16 "
                           "360/72/2 = 2.5 PFLOPS; fp32 5760/72 = 80 TFLOPS",
            "devices_per_node": "4 GPUs per compute tray (2 Grace-Blackwell superchips); the NVLink domain is 72",
            "levels": f"NVLink 5: 130 TB/s / 72 = 1.8 TB/s per GPU bidirectional = 900 GB/s per direction, one "
                      f"domain of 72 GPUs; {_CX7}",
            "network": _NET,
            "fp8_gemm_any_layout": FP8_ANY_LAYOUT,
            "mxfp8_gemm": MXFP8_GEMM,
        },
    },
    "gb300-nvl72": {
        "name": "gb300-nvl72",
        "hbm_gib": 268.0,
        "peak_tflops": {"bf16": 2500.0, "fp16": 2500.0, "fp32": 80.0, "fp8": 5000.0, "fp4": 15000.0},
        "devices_per_node": 4,
        "fp8_gemm_any_layout": True,
        "mxfp8_gemm": True,
        "levels": [_nvlink5(72, "GB300 NVL72"), _scale_out("ib-xdr", 100.0)],
        "efficiency": _efficiency("GB300", BLACKWELL_ULTRA_SFU_EXP_PER_S),
        "provenance": {
            "hbm_gib": f"{_GB300_NVL72}: 288 GB (decimal) HBM3e per GPU = 268.2 GiB, rounded down",
            "hbm": "GB300 NVL72: 576 TB/s / 72 = 8 TB/s per GPU",
            "peak_tflops": f"{_GB300_NVL72}: per GPU dense fp4 1080/72 = 15 PFLOPS, fp8 720/72/2 = 5, bf16 "
                           "360/72/2 = 2.5 PFLOPS; fp32 approximate (80 TFLOPS, as GB200)",
            "devices_per_node": "4 GPUs per compute tray (2 Grace-Blackwell Ultra superchips); the NVLink domain is 72",
            "levels": f"NVLink 5: 130 TB/s / 72 = 1.8 TB/s per GPU bidirectional = 900 GB/s per direction, one "
                      f"domain of 72 GPUs; {_CX8}",
            "network": _NET,
            "fp8_gemm_any_layout": FP8_ANY_LAYOUT,
            "mxfp8_gemm": MXFP8_GEMM,
        },
    },
}

#: short names of these presets
BLACKWELL_ALIASES: dict[str, str] = {
    "b300-288g": "b300", "dgx-b300": "b300", "gb200": "gb200-nvl72", "gb300": "gb300-nvl72",
}
