"""The link between a device and its host's memory, per preset: GB/s per direction (1e9 bytes/s), with the source.

It prices Transformer Engine's CPU activation offload (``train.cpu_offloading_num_layers``,
:mod:`estimator.perf.offload`): the copies to host memory in the forward and back in the backward. A preset
without a figure here leaves those copies unpriced (the estimate says so).

Nominal link rates: a pinned-memory copy reaches somewhat less, which no source here measures, so the copies
are priced at the nominal rate (the optimistic side: less time exposed). The copies' own HBM traffic beside
the compute is not priced either (TE's guide: "unlikely to affect compute-bound operations like GEMMs").
"""

from __future__ import annotations

from typing import Any

_TE_GUIDE = ("NVIDIA/TransformerEngine@d0067d0da docs/features/other_optimizations/cpu_offloading/"
             "cpu_offloading.rst (Hardware Support)")
_PCIE5 = (64.0, "PCIe Gen5 x16: 128 GB/s both ways = 64 GB/s per direction ({}; " + _TE_GUIDE +
          ": 'Traditional PCIe Gen5 x16 systems offer 128 GB/s bidirectional bandwidth')")
_PCIE4 = (32.0, "PCIe Gen4 x16: 64 GB/s both ways = 32 GB/s per direction ({})")
_C2C = (450.0, "NVLink-C2C to the Grace CPU: 900 GB/s both ways per link = 450 GB/s per direction ({}; " + _TE_GUIDE +
        ": 'With NVLink-C2C (GB200), bandwidth jumps to 900 GB/s bidirectional per link')")
_A100 = "NVIDIA A100 datasheet: 'PCIe Gen4: 64GB/s'"
_H100 = "NVIDIA H100 datasheet: 'PCIe Gen5: 128GB/s'"

#: preset name -> (GB/s per direction, source)
HOST_LINK_GB_S: dict[str, tuple[float, str]] = {
    **{name: (_PCIE4[0], _PCIE4[1].format(_A100)) for name in ("a100-80g", "a100-40g", "a100-pcie", "a800")},
    **{name: (_PCIE5[0], _PCIE5[1].format(_H100)) for name in ("h100-80g", "h100-sxm-96g-hbm2e", "h100-pcie",
                                                                "h100-nvl", "h800")},
    "h200": (_PCIE5[0], _PCIE5[1].format("NVIDIA H200 datasheet: 'PCIe Gen5: 128GB/s'")),
    "b200": (_PCIE5[0], _PCIE5[1].format("DGX / HGX B200: each GPU on a PCIe Gen5 x16 host link")),
    "b300": (_PCIE5[0], _PCIE5[1].format(
        "DGX / HGX B300: the Blackwell Ultra GPU has a PCIe Gen6 interface, the x86 host's root ports are PCIe Gen5, "
        "which bounds a copy to host memory (assumption: the Gen5 rate)")),
    "gb200-nvl72": (_C2C[0], _C2C[1].format("GB200 superchip: one Grace CPU, two Blackwell GPUs, one link each")),
    "gb300-nvl72": (_C2C[0], _C2C[1].format(
        "GB300 superchip: the same Grace CPU and NVLink-C2C as GB200 (assumption: the GB200 rate)")),
}


def with_host_link(presets: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``presets`` with ``host_link_gb_s`` and its ``provenance`` entry added where :data:`HOST_LINK_GB_S` has a
    figure (a new mapping per preset; the others unchanged)."""
    out: dict[str, dict[str, Any]] = {}
    for name, data in presets.items():
        if name in HOST_LINK_GB_S:
            rate, source = HOST_LINK_GB_S[name]
            data = {**data, "host_link_gb_s": rate,
                    "provenance": {**data.get("provenance", {}), "host_link_gb_s": source}}
        out[name] = data
    return out
