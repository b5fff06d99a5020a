"""Form-factor and export variants of the A100 and H100 as preset data, and which preset a measured
row's hardware text names.

A variant is its base GPU's preset with the figures its datasheet changes: dense peaks, HBM capacity and
bandwidth, and the link inside a node. The device efficiencies stay the base GPU's SimuMax factors (the
same SM; assumption, stated in each source), except the A100 PCIe card, whose own SimuMax system file
(``a100_pcie.json``) is read. Cards without NVSwitch (PCIe, NVL) talk over PCIe inside a node: the NVLink
bridge that joins a pair of them is not modelled (collectives of 4 or 8 GPUs run over PCIe).

``hardware_preset`` maps a row's text (``"H100 80GB PCIe (8x)"``) to a preset by ordered regular
expressions, the most specific first; a text naming a GPU without a preset (GH200, H20, an AMD part) is a
ConfigError naming the ``hardware`` column, never the nearest preset.
"""

from __future__ import annotations

import re
from typing import Any

from estimator.config.errors import ConfigError
from estimator.inputs.device_presets import (
    _NVIDIA_NET,
    PRESETS,
    _level,
    _simumax_eff,
)

#: NCCL's per-step latency of a ring over PCIe (Simple protocol): hwLat[PCI][Ring][Simple]
PCI_LAT_US = 5.7
_PCI_LAT = "NVIDIA/nccl@01afd20a77 src/graph/tuning.cc hwLat[PCI][Ring][Simple] = 5.7 us per ring step"
_SIMUMAX_PCIE = "MooreThreads/SimuMax@3005b17c41 configs/system/a100_pcie.json"
#: SimuMax's measured factors of 8 A100 PCIe cards (``networks.intra_node_pcie_8x``)
_PCIE_8X = {"all_reduce": 0.4176, "all_gather": 0.4497, "reduce_scatter": 0.3688, "all_to_all": 0.2754}
_H100_SPECS = "NVIDIA H100 datasheet (nvidia.com/en-us/data-center/h100), sparse figures halved"
_A100_SPECS = "NVIDIA A100 datasheet (nvidia.com/en-us/data-center/a100)"
_SAME_SM = " (SimuMax's {} factors: the same SM; assumption)"


def _pcie_level(name: str, bw_gb_s: float, source: str) -> dict[str, Any]:
    """PCIe inside a node of 8: ``bw_gb_s`` per direction, SimuMax's measured 8-card A100 PCIe factors."""
    factors = f"{_SIMUMAX_PCIE}: networks.intra_node_pcie_8x (8 cards, measured)"
    level = _level(name, 8, bw_gb_s, PCI_LAT_US, 0.5,
                   {"efficiency": f"{factors}.bandwidth.efficient_factor",
                    **{f"collectives.{kind}": f"{factors}.op.{kind if kind != 'all_to_all' else 'all2all'}"
                                              ".efficient_factor" for kind in _PCIE_8X}}, _PCIE_8X)
    return {**level, "sources": {**level["sources"], "latency_us": _PCI_LAT, "bandwidth_gb_s": source}}


def _with_hbm(base: str, hbm_gb_s: float, source: str) -> dict[str, Any]:
    """``base``'s efficiency block at another HBM bandwidth."""
    eff = PRESETS[base]["efficiency"]
    sources = {k: v + _SAME_SM.format(base) for k, v in eff["sources"].items()}
    return {**eff, "hbm_gb_s": hbm_gb_s, "sources": {**sources, "hbm_gb_s": source}}


def _slower_nvlink(base: str, bw_gb_s: float, source: str) -> list[dict[str, Any]]:
    """``base``'s levels with the NVLink level at ``bw_gb_s`` per direction."""
    first, *rest = PRESETS[base]["levels"]
    return [{**first, "bandwidth_gb_s": bw_gb_s, "sources": {**first["sources"], "bandwidth_gb_s": source}}, *rest]


def _h100_card(name: str, card: str, hbm_gib: float, peaks: tuple[float, float, float], hbm_gb_s: float,
               figures: str) -> dict[str, Any]:
    """An H100 PCIe card (``card``: PCIe, NVL): its dense (BF16, FP32, FP8) ``peaks``, HBM, PCIe Gen5 inside a
    node of 8 (the NVLink bridge of a pair not modelled) and NDR InfiniBand between nodes as h100-80g."""
    bf16, fp32, fp8 = peaks
    source = f"{_H100_SPECS}: {figures}"
    return {
        "name": name, "hbm_gib": hbm_gib, "peak_tflops": {"bf16": bf16, "fp16": bf16, "fp32": fp32, "fp8": fp8},
        "devices_per_node": 8,
        "levels": [_pcie_level("pcie5", 64.0, f"{_H100_SPECS}: H100 {card} 'PCIe Gen5: 128GB/s' (both ways) = 64 "
                                              "GB/s per direction; factors measured on PCIe Gen4 A100s (assumption)"),
                   PRESETS["h100-80g"]["levels"][-1]],
        "efficiency": _with_hbm("h100-80g", hbm_gb_s, source),
        "provenance": {"hbm_gib": source, "peak_tflops": source,
                       "levels": f"PCIe Gen5 inside a node of 8; the NVLink bridge of an H100 {card} pair (600 GB/s) "
                                 "is not modelled; NDR InfiniBand between nodes as the h100-80g preset",
                       "network": _NVIDIA_NET},
    }


_PCIE_A100 = _simumax_eff("a100_pcie.json", 1935.0, f"{_A100_SPECS}: A100 80GB PCIe 1,935 GB/s HBM2e",
                          0.75, 0.75, 0.75, 0.91, 40.0, moe=("MooreThreads/SimuMax@3005b17c41", 0.75, 0.1879, 0.1879))
_NET_A100 = PRESETS["a100-80g"]["levels"][-1]

#: the presets of this module, merged into :data:`estimator.inputs.hardware.PRESETS`
VARIANT_PRESETS: dict[str, dict[str, Any]] = {
    "a100-40g": {
        **PRESETS["a100-80g"], "name": "a100-40g", "hbm_gib": 40.0,
        "efficiency": _with_hbm("a100-80g", 1555.0, f"{_A100_SPECS}: A100 40GB SXM 1,555 GB/s HBM2"),
        "provenance": {**PRESETS["a100-80g"]["provenance"],
                       "hbm_gib": f"{_A100_SPECS}: A100 40GB SXM, 40 GB HBM2 (taken as GiB like the 80 GB preset)"},
    },
    "a100-pcie": {
        "name": "a100-pcie", "hbm_gib": 80.0, "peak_tflops": {"bf16": 312.0, "fp16": 312.0, "fp32": 19.5},
        "devices_per_node": 8,
        "levels": [_pcie_level("pcie4", 30.0, f"{_SIMUMAX_PCIE}: networks.intra_node_pcie_8x.bandwidth.gbps 30 "
                                              "(PCIe Gen4 x16: 32 GB/s per direction)"),
                   _NET_A100],
        "efficiency": _PCIE_A100,
        "provenance": {
            "hbm_gib": f"{_A100_SPECS}: A100 80GB PCIe, 80 GB HBM2e",
            "peak_tflops": f"{_A100_SPECS}: PCIe and SXM list the same dense peaks (312 BF16)",
            "levels": f"PCIe Gen4 inside a node of 8 ({_SIMUMAX_PCIE}: intra_with_pcie); the 2-GPU NVLink bridge "
                      "(600 GB/s) is not modelled; HDR InfiniBand between nodes as the a100-80g preset",
            "network": _NVIDIA_NET,
        },
    },
    "h100-pcie": _h100_card("h100-pcie", "PCIe", 80.0, (756.0, 51.0, 1513.0), 2000.0,
                            "H100 PCIe 80 GB; dense BF16 1,513/2 = 756, FP8 3,026/2 = 1,513; FP32 51; 2 TB/s HBM"),
    "h100-nvl": _h100_card("h100-nvl", "NVL", 94.0, (835.0, 60.0, 1670.0), 3900.0,
                           "H100 NVL 94 GB (taken as GiB like the 80 GB preset); dense BF16 1,671/2 = 835, FP8 "
                           "3,341/2 = 1,670; FP32 60; 3.9 TB/s HBM3"),
    "h800": {
        **PRESETS["h100-80g"], "name": "h800",
        "levels": _slower_nvlink("h100-80g", 200.0, "H800: NVLink 400 GB/s both ways (H100's 900) = 200 GB/s per "
                                                    "direction (aiwiki.ai/wiki/nvidia_h800; DeepSeek-V3 technical "
                                                    "report, arXiv:2412.19437 section 3.2.2: 'NVLink offers a "
                                                    "bandwidth of 160 GB/s')"),
        "efficiency": _with_hbm("h100-80g", 3350.0, "H800 SXM: the H100 SXM's 80 GB HBM3 at 3.35 TB/s"),
        "provenance": {**PRESETS["h100-80g"]["provenance"],
                       "peak_tflops": "H800 SXM: the H100 SXM die and its dense peaks (FP64 cut only; aiwiki.ai/"
                                      "wiki/nvidia_h800)",
                       "levels": "NVLink 400 GB/s both ways inside a node of 8; NDR InfiniBand between nodes"},
    },
    "a800": {
        **PRESETS["a100-80g"], "name": "a800",
        "levels": _slower_nvlink("a100-80g", 200.0, "A800: NVLink 400 GB/s both ways (A100's 600) = 200 GB/s per "
                                                    "direction (aiwiki.ai/wiki/nvidia_a800; Reuters via tweakers.net "
                                                    "2022-11)"),
        "efficiency": _with_hbm("a100-80g", 2039.0, "A800 80GB SXM: the A100 80GB's HBM2e at 2,039 GB/s"),
        "provenance": {**PRESETS["a100-80g"]["provenance"],
                       "peak_tflops": "A800: the A100's dense peaks (only NVLink is cut; aiwiki.ai/wiki/nvidia_a800)",
                       "levels": "NVLink 400 GB/s both ways inside a node of 8; HDR InfiniBand between nodes"},
    },
}

#: a measured row's hardware text (lower case) -> preset, first match wins; None: refused with the reason
HARDWARE_PATTERNS: tuple[tuple[str, str | None], ...] = (
    (r"vr200|vera[\s-]*rubin|\brubin\b", "vr200-nvl72"),
    (r"gb300", "gb300-nvl72"),
    (r"gb200", "gb200-nvl72"),
    (r"b300", "b300"),
    (r"gh200", None),
    (r"h200", "h200"),
    (r"h100 sxm 96gb hbm2e", "h100-sxm-96g-hbm2e"),  # the torchtitan H100 benchmark's Grand Teton GPUs
    (r"h100.*\bnvl\b", "h100-nvl"),
    (r"h100.*pcie", "h100-pcie"),
    (r"h800", "h800"),
    (r"h100", "h100-80g"),
    (r"b200", "b200"),
    (r"a800", "a800"),
    (r"a100.*pcie.*40\s*gb|a100.*40\s*gb.*pcie", None),
    (r"a100.*pcie", "a100-pcie"),
    (r"a100\W*(sxm\w*\W*)?40\s*gb", "a100-40g"),
    (r"a100", "a100-80g"),
    (r"910c", "ascend-910c"),
    (r"a3", "ascend-910c"),
    (r"910b", "ascend-910b"),
    (r"a2", "ascend-910b"),
)
#: why a known GPU without a preset is refused
REFUSED_HARDWARE = {
    r"gh200": "GH200 (Grace Hopper: one GPU per superchip beside its Grace CPU, 96 GB HBM3 or 144 GB HBM3e) has no "
              "preset: its node topology is not the 8-GPU NVLink node of h100-80g / h200; write the hardware inline",
    r"a100.*pcie.*40\s*gb|a100.*40\s*gb.*pcie": "the A100 40GB PCIe has no preset (a100-pcie is the 80 GB card with "
                                                 "1,935 GB/s); write the hardware inline",
}


def hardware_preset(text: str) -> str:
    """Preset name for a hardware description such as ``"H100 (CI platform dgx_h100)"`` (:data:`HARDWARE_PATTERNS`)."""
    low = text.lower()
    for pattern, name in HARDWARE_PATTERNS:
        if re.search(pattern, low):
            if name is None:
                raise ConfigError("hardware", f"{text!r}: {REFUSED_HARDWARE[pattern]}")
            return name
    raise ConfigError("hardware", f"no hardware preset matches {text!r}")
