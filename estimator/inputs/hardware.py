"""Device presets as data: memory, peak throughput per dtype, and the network as ordered levels.

Every number carries its provenance in ``provenance`` (datasheet, the reference tool, or an
assumption). Bandwidths are **unidirectional per device** in GB/s (1e9 bytes/s); a level's
``max_devices`` is the largest group that fits inside it (e.g. 8 GPUs of an NVLink node); the last
level is unbounded (``max_devices: null``). ``efficiency`` is the achievable share of the link
bandwidth and ``latency_us`` a per-step latency, per level and, where given, per collective kind
(``collectives``); the NVIDIA presets cite each in ``levels[].sources`` (:data:`NVIDIA_LEVELS`: NCCL's
latency model, SimuMax's published factors), the Ascend presets keep the reference's assumed constants.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Annotated, Any, Literal, cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from estimator.perf.comm import CollectiveKind
from estimator.shared.arrays import ARRAY
from ndval.core import cache
from ndval.core.units import MIB_PER_GIB

Dtype = Literal["fp32", "bf16", "fp16", "fp8"]


class CollectiveFactors(BaseModel):
    """One collective kind's achieved share of a level's bandwidth and its latency per ring step /
    message on that level (µs), as in :func:`estimator.perf.network.level_factors`."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    efficiency: float = Field(gt=0, le=1)
    latency_us: float = Field(ge=0)


class NetworkLevel(BaseModel):
    """One level of the network hierarchy (intra-node, then inter-node ...).

    ``efficiency`` / ``latency_us``: the level's achieved share of ``bandwidth_gb_s`` and latency per
    ring step or message; ``collectives``: per collective kind (``all_reduce``, ``all_gather``,
    ``reduce_scatter``, ``all_to_all``, ``p2p``) its own :class:`CollectiveFactors` on this level
    (kinds not listed use the level's); ``call_latency_us``: the fixed latency of one ring collective
    (all-reduce, all-gather, reduce-scatter) whose widest level is this one; ``sources``: field (``efficiency``, ``latency_us``,
    ``collectives.<kind>``) -> citation.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str
    max_devices: int | None = Field(default=None, ge=1, description="group size that fits; None = unbounded")
    bandwidth_gb_s: float = Field(gt=0, description="unidirectional per-device bandwidth, GB/s (1e9 B/s)")
    efficiency: float = Field(default=1.0, gt=0, le=1)
    latency_us: float = Field(default=0.0, ge=0)
    collectives: dict[CollectiveKind, CollectiveFactors] = Field(default_factory=dict)
    call_latency_us: float = Field(default=0.0, ge=0, description="fixed latency of one ring collective call "
                                                                 "whose widest level is this one (µs)")
    sources: dict[str, str] = Field(default_factory=dict)


#: a size table: ``(min size, efficiency)`` pairs; the efficiency of the largest threshold the size
#: reaches applies (Calculon's lookup: thresholds scanned from the largest down), below every
#: threshold the smallest one's efficiency
SizeTable = list[tuple[float, float]]


def table_value(table: SizeTable, size: float) -> float:
    """Efficiency of ``size`` in a :data:`SizeTable` (step function, see there)."""
    return descending_table_value(descending(table), size)


def descending(table: SizeTable) -> SizeTable:
    """The rows of ``table`` from the largest threshold down (the order :func:`table_value` scans)."""
    return sorted(table, key=lambda row: -row[0])


def descending_table_value(ordered: SizeTable, size: float) -> float:
    """:func:`table_value` on rows already in :func:`descending` order (``size`` may be an array of
    layouts: the first row it reaches, elementwise)."""
    if type(size) is ARRAY:  # the largest threshold ≤ size, else the last row (ties: the first row, as the scan)
        thresholds, effs = _ascending(ordered)
        at = np.searchsorted(thresholds, size, side="right") - 1
        return cast(float, np.where(at < 0, ordered[-1][1], effs[np.maximum(at, 0)]))
    for threshold, eff in ordered:
        if size >= threshold:
            return eff
    return ordered[-1][1]


#: ascending (thresholds, efficiencies) arrays of a descending table, by the table's identity (the entry
#: holds the table, so its id cannot be reused while cached)
_ASCENDING = cache.store("estimator.ascending_tables", bound=256, key="id(descending size table)",
                         holds="(the table, ascending thresholds and efficiencies as arrays)")


def _ascending(ordered: SizeTable) -> tuple[np.ndarray, np.ndarray]:
    return cache.held_value(_ASCENDING, id(ordered), ordered, _ascending_arrays, ordered)


def _ascending_arrays(ordered: SizeTable) -> tuple[np.ndarray, np.ndarray]:
    rows = list(reversed(ordered))
    return np.array([r[0] for r in rows], dtype=np.float64), np.array([r[1] for r in rows], dtype=np.float64)


class DeviceEfficiency(BaseModel):
    """Achieved share of a device's peaks per operator class, as data with a source (operator roofline).

    ``matmul``: GEMM efficiency by the GEMM's size in GFLOP (:data:`SizeTable`); ``attention_fwd`` /
    ``attention_bwd``: fused (flash) attention forward / backward against its full, non-causal FLOP
    count; ``hbm_gb_s``: HBM bandwidth (GB/s, 1e9 B/s) and ``memory``: its achieved share by the
    bytes one kernel moves in MB; ``kernel_latency_us``: fixed time added to each kernel's memory
    term. ``grouped_matmul``: the routed-expert GEMMs of a MoE layer (grouped GEMM) against peak, and
    ``permute_memory_fwd`` / ``_bwd``: the HBM share of the MoE token permute / unpermute forward and
    backward, where the source publishes them (None: the ``matmul`` / ``memory`` tables apply).
    ``sources``: field -> citation. All efficiencies in (0, 1].
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    hbm_gb_s: float = Field(gt=0, allow_inf_nan=False)
    matmul: SizeTable = Field(min_length=1)
    attention_fwd: float = Field(gt=0, le=1)
    attention_bwd: float = Field(gt=0, le=1)
    memory: SizeTable = Field(min_length=1)
    kernel_latency_us: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    grouped_matmul: float | None = Field(default=None, gt=0, le=1)
    permute_memory_fwd: float | None = Field(default=None, gt=0, le=1)
    permute_memory_bwd: float | None = Field(default=None, gt=0, le=1)
    sources: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _efficiencies_in_range(self) -> DeviceEfficiency:
        for name in ("matmul", "memory"):
            for threshold, eff in getattr(self, name):
                if not (0 < eff <= 1) or threshold < 0 or math.isnan(threshold):
                    raise ValueError(f"{name}: each row is (min size >= 0, efficiency in (0, 1]); got "
                                     f"({threshold}, {eff})")
        return self

    def matmul_eff(self, gflop: float) -> float:
        """GEMM efficiency of one GEMM of ``gflop`` GFLOP."""
        return descending_table_value(self._matmul_descending, gflop)

    def memory_eff(self, megabytes: float) -> float:
        """HBM efficiency of one kernel moving ``megabytes`` MB."""
        return descending_table_value(self._memory_descending, megabytes)

    @cached_property
    def _matmul_descending(self) -> SizeTable:  # sorted once per (frozen) instance, not per operator
        return descending(self.matmul)

    @cached_property
    def _memory_descending(self) -> SizeTable:
        return descending(self.memory)


class HardwareSpec(BaseModel):
    """A device type and its network; ``devices`` (world size) is optional. ``efficiency`` (None: the
    step-time model prices compute at raw peak, no memory-bound operators) feeds the operator
    roofline (:mod:`estimator.perf.roofline`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str
    hbm_gib: float = Field(gt=0)
    peak_tflops: dict[Dtype, Annotated[float, Field(gt=0)]]
    devices_per_node: int = Field(ge=1)
    levels: list[NetworkLevel] = Field(min_length=1)
    devices: int | None = Field(default=None, ge=1)
    efficiency: DeviceEfficiency | None = None
    provenance: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _levels_ordered(self) -> HardwareSpec:
        bounds = [lv.max_devices for lv in self.levels]
        if any(b is None for b in bounds[:-1]):
            raise ValueError("levels: only the last level may be unbounded (max_devices: null)")
        finite = [b for b in bounds if b is not None]
        if finite != sorted(finite):
            raise ValueError("levels: max_devices must grow from the first level to the last")
        return self

    @property
    def hbm_mb(self) -> float:
        """Device memory in MiB."""
        return self.hbm_gib * MIB_PER_GIB


def _lv(name: str, max_devices: int | None, bw: float, eff: float, lat: float, **extra: Any) -> dict[str, Any]:
    return {"name": name, "max_devices": max_devices, "bandwidth_gb_s": bw, "efficiency": eff, "latency_us": lat,
            **extra}


#: efficiency / latency defaults shared by presets: the reference tool's helper constants
#: (reference §3.3: level efficiency 0.7 node / 0.9 cluster, latency 1e-5 / 2e-5 s).
_REF_NET = "efficiency and latency: SAPP-ND comm_time helper constants (reference §3.3); assumption"
_ASSUMED_EFF = "SAPP-ND comm_time helper constant (reference §3.3); assumption"

#: NCCL's own latency model: a ring collective costs baseLat + nsteps·hwLat[link][Ring][protocol], the
#: Simple protocol being the one of large messages: per ring step 3.4 µs over NVLink, 9.6 µs over the
#: network (the per-step latency of estimator.perf.network)
_NCCL_LAT = ("NVIDIA/nccl@01afd20a77 src/graph/tuning.cc hwLat[{}][Ring][Simple] = {} us per ring step "
             "(latency = baseLat + nsteps * hwLat)")
_NVLINK_LAT_US, _NET_LAT_US = 3.4, 9.6
#: NCCL's baseLat[Ring][Simple]: the fixed latency of one ring collective call
_NCCL_BASE_LAT_US = 8.4
_NCCL_BASE = "NVIDIA/nccl@01afd20a77 src/graph/tuning.cc baseLat[Ring][Simple] = 8.4 us per ring collective call"
_SIMUMAX_A100_NET = "MooreThreads/SimuMax@2127d7d919 configs/system/a100_bf16.json: networks.{}.bandwidth.efficient_factor"
_H100_EFF = ("SAPP-ND helper constant (reference §3.3); assumption - SimuMax's h100_nvlink.json factors (0.50-0.60) "
             "are against 900 GB/s (bidirectional NVLink4) and exceed 1 against the 450 GB/s per direction priced here")
#: B200 intra-node factors measured by SimuMax, per collective kind (its all2all is ndval's all_to_all)
_SIMUMAX_B200_OP = ("MooreThreads/SimuMax@e691807a7e configs/system/b200_bf16_ceperm.json: "
                    "networks.high_intra_node.op.{}.efficient_factor (measured)")


def _level(name: str, max_devices: int | None, bw: float, latency_us: float, efficiency: float,
           sources: dict[str, str], collectives: dict[str, float] | None = None) -> dict[str, Any]:
    """A sourced network level: NCCL's per-step latency for its link type (every kind) and base latency
    per ring collective call, the level's efficiency and per-kind efficiencies; ``sources`` names where each efficiency comes from."""
    link = "NVLINK" if max_devices is not None else "NET"
    per_kind = {kind: {"efficiency": eff, "latency_us": latency_us} for kind, eff in (collectives or {}).items()}
    return _lv(name, max_devices, bw, efficiency, latency_us, collectives=per_kind, call_latency_us=_NCCL_BASE_LAT_US,
               sources={"latency_us": _NCCL_LAT.format(link, latency_us), "call_latency_us": _NCCL_BASE, **sources})


_NVIDIA_NET = ("efficiency and latency per level and collective kind with their sources in levels[].sources "
               "(NCCL's per-step latencies; SimuMax's efficiencies where published)")
#: NVLink inside a node of 8 and InfiniBand between nodes of the NVIDIA presets, each number sourced
NVIDIA_LEVELS: dict[str, list[dict[str, Any]]] = {
    "a100-80g": [
        _level("nvlink3", 8, 300.0, _NVLINK_LAT_US, 0.7, {"efficiency": _SIMUMAX_A100_NET.format("high_intra_node")}),
        _level("ib-hdr", None, 25.0, _NET_LAT_US, 0.6, {"efficiency": _SIMUMAX_A100_NET.format("inter_node")}),
    ],
    "h100-80g": [
        _level("nvlink4", 8, 450.0, _NVLINK_LAT_US, 0.7, {"efficiency": _H100_EFF}),
        _level("ib-ndr", None, 50.0, _NET_LAT_US, 0.9, {"efficiency": _ASSUMED_EFF}),
    ],
    "b200": [
        _level("nvlink5", 8, 900.0, _NVLINK_LAT_US, 0.7,
               {"efficiency": _ASSUMED_EFF + " (p2p only: SimuMax's measured p2p factor 1.45 exceeds 1 against the "
                                             "900 GB/s per direction)",
                **{f"collectives.{kind}": _SIMUMAX_B200_OP.format(op) for kind, op in (
                    ("all_reduce", "all_reduce"), ("all_gather", "all_gather"), ("reduce_scatter", "reduce_scatter"),
                    ("all_to_all", "all2all"))}},
               {"all_reduce": 0.7424, "all_gather": 0.6735, "reduce_scatter": 0.6731, "all_to_all": 0.5968}),
        _level("ib-ndr", None, 50.0, _NET_LAT_US, 0.9, {"efficiency": _ASSUMED_EFF}),
    ],
}

#: SimuMax's published system files (MooreThreads/SimuMax@4dcaae513b configs/system/): per op class
#: an efficient_factor against the datasheet peak, an HBM efficient_factor and a latency_us added
#: to every operator's memory-access time (simumax/core/config.py compute_mem_access_time)
_SIMUMAX = "MooreThreads/SimuMax@4dcaae513b configs/system/{}"


def _simumax_eff(file: str, hbm_gb_s: float, hbm_source: str, matmul: float, sdp_fwd: float, sdp_bwd: float,
                 mem: float, latency_us: float, moe: tuple[str, float, float, float] | None = None) -> dict[str, Any]:
    """A :class:`DeviceEfficiency` mapping from one SimuMax system file (flat tables: one size row);
    ``moe``: (``owner/repo@commit`` of the file read, group_matmul, permute_fwd, permute_bwd factors)."""
    src = _SIMUMAX.format(file)
    extra: dict[str, Any] = {}
    if moe is not None:
        at, grouped, perm_fwd, perm_bwd = moe
        extra = {"grouped_matmul": grouped, "permute_memory_fwd": perm_fwd, "permute_memory_bwd": perm_bwd}
        moe_src = f"{at} configs/system/{file}"
        extra_sources = {"grouped_matmul": f"{moe_src}: accelerator.op.group_matmul.efficient_factor",
                         "permute_memory_fwd": f"{moe_src}: accelerator.bandwidth.permute_fwd.efficient_factor",
                         "permute_memory_bwd": f"{moe_src}: accelerator.bandwidth.permute_bwd.efficient_factor"}
    return extra | {
        "hbm_gb_s": hbm_gb_s, "matmul": [(0.0, matmul)], "attention_fwd": sdp_fwd, "attention_bwd": sdp_bwd,
        "memory": [(0.0, mem)], "kernel_latency_us": latency_us,
        "sources": {
            "hbm_gb_s": hbm_source,
            "matmul": f"{src}: accelerator.op.matmul.efficient_factor",
            "attention_fwd": f"{src}: accelerator.op.sdp_fwd.efficient_factor",
            "attention_bwd": f"{src}: accelerator.op.sdp_bwd.efficient_factor",
            "memory": f"{src}: accelerator.bandwidth efficient_factor",
            "kernel_latency_us": f"{src}: accelerator.bandwidth latency_us (added per operator memory access)",
            **(extra_sources if moe is not None else {}),
        },
    }


#: SimuMax's H100 file (h100_nvlink.json, read at 160921ca96): group_matmul 0.60, permute_fwd / _bwd 0.25
_SIMUMAX_H100_MOE = ("MooreThreads/SimuMax@160921ca96", 0.60, 0.25, 0.25)

PRESETS: dict[str, dict[str, Any]] = {
    "ascend-910b": {
        "name": "ascend-910b",
        "hbm_gib": 64.0,
        "peak_tflops": {"bf16": 313.0, "fp16": 313.0, "fp32": 78.0},
        "devices_per_node": 8,
        "levels": [_lv("hccs", 8, 50.0, 0.7, 10.0), _lv("roce", None, 10.0, 0.9, 20.0)],
        "provenance": {
            "hbm_gib": "Atlas 800T A2 (910B) 64 GB HBM per NPU, vendor material",
            "peak_tflops": "approximate vendor figure for 910B (fp16/bf16 ~313 TFLOPS); fp32 assumed 1/4",
            "levels": "SAPP-ND A2 device: bounds [8, inf], bandwidth [50, 10] GB/s (reference §3.3)",
            "network": _REF_NET,
        },
    },
    "ascend-910c": {
        "name": "ascend-910c",
        "hbm_gib": 64.0,
        "peak_tflops": {"bf16": 376.0, "fp16": 376.0, "fp32": 94.0},
        "devices_per_node": 16,
        "levels": [
            _lv("hccs", 16, 200.0, 0.7, 10.0),
            _lv("supernode", 24, 25.0, 0.9, 20.0),
            _lv("roce", None, 10.0, 0.9, 20.0),
        ],
        "provenance": {
            "hbm_gib": "A3 (910C) per die as a device: 64 GB (128 GB per two-die package); assumption",
            "peak_tflops": "approximate per-die figure; assumption",
            "levels": "SAPP-ND A3 device: bounds [16, 24, inf], bandwidth [200, 25, 10] GB/s (reference §3.3)",
            "network": _REF_NET,
        },
    },
    "a100-80g": {
        "name": "a100-80g",
        "hbm_gib": 80.0,
        "peak_tflops": {"bf16": 312.0, "fp16": 312.0, "fp32": 19.5},
        "devices_per_node": 8,
        "levels": NVIDIA_LEVELS["a100-80g"],
        "efficiency": _simumax_eff("a100_bf16.json", 2039.0, "NVIDIA A100 80GB SXM datasheet: 2,039 GB/s",
                                   0.75, 0.75, 0.75, 0.7, 40.0),
        "provenance": {
            "hbm_gib": "NVIDIA A100 80GB datasheet (81920 MiB)",
            "peak_tflops": "NVIDIA A100 datasheet, dense (no sparsity); fp32 non-tensor-core",
            "levels": "NVLink3 600 GB/s bidirectional = 300 GB/s per direction; HDR InfiniBand 200 Gb/s per GPU",
            "network": _NVIDIA_NET,
        },
    },
    "h100-80g": {
        "name": "h100-80g",
        "hbm_gib": 80.0,
        "peak_tflops": {"bf16": 989.0, "fp16": 989.0, "fp32": 67.0, "fp8": 1979.0},
        "devices_per_node": 8,
        "levels": NVIDIA_LEVELS["h100-80g"],
        "efficiency": _simumax_eff("h100_nvlink.json", 3350.0, "NVIDIA H100 SXM5 datasheet: 3.35 TB/s",
                                   0.70, 0.72, 0.55, 0.85, 20.0, moe=_SIMUMAX_H100_MOE),
        "provenance": {
            "hbm_gib": "NVIDIA H100 SXM5 80GB datasheet",
            "peak_tflops": "NVIDIA H100 SXM5 datasheet, dense (no sparsity)",
            "levels": "NVLink4 900 GB/s bidirectional = 450 per direction; NDR InfiniBand 400 Gb/s per GPU",
            "network": _NVIDIA_NET,
        },
    },
    "h200": {
        "name": "h200",
        "hbm_gib": 140.0,
        "peak_tflops": {"bf16": 989.0, "fp16": 989.0, "fp32": 67.0, "fp8": 1979.0},
        "devices_per_node": 8,
        "levels": NVIDIA_LEVELS["h100-80g"],
        "efficiency": _simumax_eff("h100_nvlink.json", 4800.0, "NVIDIA H200 SXM datasheet: 4.8 TB/s; the "
                                   "efficiencies are SimuMax's H100 file (same tensor cores; assumption)",
                                   0.70, 0.72, 0.55, 0.85, 20.0, moe=_SIMUMAX_H100_MOE),
        "provenance": {
            "hbm_gib": "NVIDIA H200 SXM 141 GB (decimal) datasheet; ~140 GiB usable, rounded",
            "peak_tflops": "NVIDIA H200 SXM datasheet, dense (same tensor cores as H100)",
            "levels": "NVLink4 900 GB/s bidirectional; NDR InfiniBand 400 Gb/s per GPU",
            "network": _NVIDIA_NET,
        },
    },
    "b200": {
        "name": "b200",
        "hbm_gib": 180.0,
        "peak_tflops": {"bf16": 2250.0, "fp16": 2250.0, "fp32": 80.0, "fp8": 4500.0},
        "devices_per_node": 8,
        "levels": NVIDIA_LEVELS["b200"],
        "efficiency": _simumax_eff("b200_bf16_ceperm.json", 8000.0, "NVIDIA DGX B200 datasheet: 64 TB/s HBM3e "
                                   "for 8 GPUs = 8 TB/s per GPU", 0.48780765792034037, 0.7059717796465379,
                                   0.6943225842672003, 0.666, 30.0,
                                   moe=("MooreThreads/SimuMax@4dcaae513b", 0.30199308868813257, 0.5008136513816437,
                                        0.5108178337365621)),
        "provenance": {
            "hbm_gib": "DGX B200: 1,440 GB HBM3e for 8 GPUs = 180 GB per GPU (decimal); rounded",
            "peak_tflops": "NVIDIA DGX B200 datasheet per GPU, dense (no sparsity); fp32 approximate",
            "levels": "NVLink5 1.8 TB/s bidirectional = 900 GB/s per direction; 400 Gb/s InfiniBand per GPU",
            "network": _NVIDIA_NET,
        },
    },
}

#: short names accepted for the presets
ALIASES: dict[str, str] = {
    "a2": "ascend-910b",
    "910b": "ascend-910b",
    "a3": "ascend-910c",
    "910c": "ascend-910c",
    "a100": "a100-80g",
    "h100": "h100-80g",
    "h200-141g": "h200",
    "b200-180g": "b200",
}


def preset_names() -> list[str]:
    """Names of the built-in presets."""
    return sorted(PRESETS)


def resolve_preset_name(name: str) -> str | None:
    """Canonical preset name for ``name`` (case-insensitive, aliases allowed), or None."""
    key = name.strip().lower()
    if key in PRESETS:
        return key
    return ALIASES.get(key)


def preset(name: str, **overrides: Any) -> HardwareSpec:
    """A preset as ``HardwareSpec`` with optional field overrides (e.g. ``devices=32``)."""
    canonical = resolve_preset_name(name)
    if canonical is None:
        raise KeyError(name)
    data = dict(PRESETS[canonical])
    data.update(overrides)
    return HardwareSpec.model_validate(data)


def expand_hardware(value: Any) -> Any:
    """Turn the config's ``hardware`` value into a mapping for ``HardwareSpec``.

    Accepts a preset name (``"h100-80g"``), a mapping with ``preset:`` plus overrides
    (``{preset: ascend-910b, devices: 32}``), or a full inline mapping. Unknown preset names are
    left as they are so validation reports them.
    """
    if isinstance(value, str):
        canonical = resolve_preset_name(value)
        return dict(PRESETS[canonical]) if canonical else value
    if isinstance(value, dict) and "preset" in value:
        canonical = resolve_preset_name(str(value["preset"]))
        if canonical is None:
            return value
        merged = dict(PRESETS[canonical])
        merged.update({k: v for k, v in value.items() if k != "preset"})
        return merged
    return value
