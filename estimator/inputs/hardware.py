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
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from estimator.inputs.blackwell import BLACKWELL_ALIASES, BLACKWELL_PRESETS
from estimator.inputs.device_presets import ALIASES as _BASE_ALIASES
from estimator.inputs.device_presets import NVIDIA_LEVELS
from estimator.inputs.device_presets import PRESETS as _BASE_PRESETS
from estimator.inputs.gemm_rates import GEMM_FIELDS, with_gemm_rates
from estimator.inputs.host_link import with_host_link
from estimator.inputs.rubin import RUBIN_ALIASES, RUBIN_PRESETS
from estimator.inputs.variants import VARIANT_PRESETS
from estimator.perf.comm import CollectiveKind
from estimator.shared.arrays import ARRAY
from estimator.shared.numbers import no_boolean
from ndval.core import cache
from ndval.core.units import MIB_PER_GIB

#: peak keys: compute dtypes, ``fp8`` (FP8 / MXFP8 tensor cores) and ``fp4`` (NVFP4 / MXFP4, Blackwell)
Dtype = Literal["fp32", "bf16", "fp16", "fp8", "fp4"]

__all__ = ["ALIASES", "NVIDIA_LEVELS", "PRESETS", "DeviceEfficiency", "HardwareSpec", "NetworkLevel"]


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


def gemm_factor_values(fields: dict[str, Any]) -> list[float]:
    """Every efficiency in a mapping of GEMM factors: the scalars and each size table's efficiencies."""
    out: list[float] = []
    for value in fields.values():
        if isinstance(value, (int, float)):
            out.append(float(value))
        elif value:
            out.extend(float(row[1]) for row in value)
    return out


class DeviceEfficiency(BaseModel):
    """Achieved share of a device's peaks per operator class, as data with a source (operator roofline).

    ``matmul``: GEMM efficiency by the GEMM's size in GFLOP (:data:`SizeTable`); ``attention_fwd`` /
    ``attention_bwd``: fused (flash) attention forward / backward against its full, non-causal FLOP
    count; ``hbm_gb_s``: HBM bandwidth (GB/s, 1e9 B/s) and ``memory``: its achieved share by the
    bytes one kernel moves in MB; ``kernel_latency_us``: fixed time added to each kernel's memory
    term (SimuMax's per-operator latency, for the operators SimuMax prices); ``cast_kernel_latency_us``: that
    of a cast kernel, which no SimuMax operator holds (:func:`estimator.perf.efficiency.kernel_latency_us`).
    ``grouped_matmul``: the routed-expert GEMMs of a MoE layer (grouped GEMM) against peak, and
    ``permute_memory_fwd`` / ``_bwd``: the HBM share of the MoE token permute / unpermute forward and
    backward, where the source publishes them (None: the ``matmul`` / ``memory`` tables apply).
    ``grouped_matmul_fwd_by_tokens`` / ``_bwd_by_tokens``: the grouped GEMM's efficiency by the
    tokens each expert's GEMM holds (its ``M``, :data:`SizeTable`) in the forward / backward where a
    source measured it (None: the flat ``grouped_matmul`` applies).
    ``sfu_exp_per_s``: this device's softmax exponential throughput (SFU ``MUFU.EX2``, exponentials per
    second) and ``attention_sfu_exp_per_s``: that of the device ``attention_fwd`` / ``_bwd`` were
    measured on; both given and different, flash attention's exponentials are re-priced at this
    device's rate (:func:`estimator.perf.roofline.sfu_adjusted_s`).
    ``gemm_rate``: this device's measured GEMM throughput against the device its GEMM factors were measured on
    (same shapes, same kernels), over the ratio of their BF16 peaks: it multiplies every GEMM factor
    (:data:`GEMM_FIELDS`: dense, grouped, low-precision), where a source measured it (None: 1, the factors carry
    over at the peak ratio; :mod:`estimator.inputs.gemm_rates`). ``options.measured_gemm_rate: false`` prices with
    the factors alone (:mod:`estimator.perf.efficiency`).
    ``sources``: field -> citation. All efficiencies in (0, 1].
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    hbm_gb_s: float = Field(gt=0, allow_inf_nan=False)
    matmul: SizeTable = Field(min_length=1)
    attention_fwd: float = Field(gt=0, le=1)
    attention_bwd: float = Field(gt=0, le=1)
    memory: SizeTable = Field(min_length=1)
    kernel_latency_us: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    #: the fixed device time of one cast kernel (a TE / torchao quantize or amax kernel, operator variant
    #: ``quantize``), where a profile measured a near-empty kernel's time (None: ``kernel_latency_us``)
    cast_kernel_latency_us: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    grouped_matmul: float | None = Field(default=None, gt=0, le=1)
    permute_memory_fwd: float | None = Field(default=None, gt=0, le=1)
    permute_memory_bwd: float | None = Field(default=None, gt=0, le=1)
    grouped_matmul_fwd_by_tokens: SizeTable | None = Field(default=None, min_length=1)
    grouped_matmul_bwd_by_tokens: SizeTable | None = Field(default=None, min_length=1)
    #: a low-precision GEMM's share of the FP8 / FP4 peak where a source states it (None: the
    #: ``matmul`` table applies at that peak, estimator.perf.lowp)
    fp8_matmul: float | None = Field(default=None, gt=0, le=1)
    fp4_matmul: float | None = Field(default=None, gt=0, le=1)
    #: a low-precision routed-experts grouped GEMM's share of the FP8 peak where a source states it (None: the
    #: rules of ``fp8_matmul`` and the grouped tables apply)
    fp8_grouped_matmul: float | None = Field(default=None, gt=0, le=1)
    sfu_exp_per_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    attention_sfu_exp_per_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    gemm_rate: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    #: the Mamba-2 SSD scan's achieved HBM share where a source measured it (None: the ``memory`` table;
    #: estimator.inputs.ssd_scan)
    ssd_scan_memory: float | None = Field(default=None, gt=0, le=1)
    sources: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _efficiencies_in_range(self) -> DeviceEfficiency:
        for name in ("matmul", "memory", "grouped_matmul_fwd_by_tokens", "grouped_matmul_bwd_by_tokens"):
            for threshold, eff in getattr(self, name) or ():
                if not (0 < eff <= 1) or threshold < 0 or math.isnan(threshold):
                    raise ValueError(f"{name}: each row is (min size >= 0, efficiency in (0, 1]); got "
                                     f"({threshold}, {eff})")
        if self.gemm_rate is not None:
            top = max(gemm_factor_values({k: getattr(self, k) for k in GEMM_FIELDS}), default=0.0)
            if top * self.gemm_rate > 1.0:
                raise ValueError(f"gemm_rate: {self.gemm_rate} times the largest GEMM factor {top} exceeds 1")
        return self

    def low_precision_matmul(self, peak: str, grouped: bool = False) -> float | None:
        """The stated share of the ``fp8`` / ``fp4`` peak a low-precision GEMM achieves (a routed-experts grouped
        GEMM: ``fp8_grouped_matmul`` where given), or None."""
        if grouped and peak == "fp8" and self.fp8_grouped_matmul is not None:
            return self.fp8_grouped_matmul
        return self.fp8_matmul if peak == "fp8" else self.fp4_matmul if peak == "fp4" else None

    def grouped_matmul_by_tokens(self, tokens: float, backward: bool) -> float | None:
        """Grouped-GEMM efficiency when each expert's GEMM holds ``tokens`` rows (forward or backward
        table), or None where the hardware has no such table."""
        table = self.grouped_matmul_bwd_by_tokens if backward else self.grouped_matmul_fwd_by_tokens
        return None if table is None else table_value(table, tokens)

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
    #: the FP8 GEMM takes per-tensor-scaled operands in any layout (non-TN; Blackwell, compute capability
    #: 10.x), so per-tensor FP8 casts need no transposed copy (estimator.perf.lowp); false: TN only (Hopper)
    fp8_gemm_any_layout: bool = False
    #: the tensor cores take MX block-scaled FP8 operands (MXFP8: one E8M0 scale per 32 elements; compute
    #: capability 10.x), so ``precision.linear_recipe: mxfp8`` can run (estimator.config.rules); false: Hopper, Ada
    mxfp8_gemm: bool = False
    #: the link to host memory, GB/s per direction (PCIe, NVLink-C2C; estimator.inputs.host_link): prices TE's CPU
    #: activation offload (estimator.perf.offload); None: those copies are not priced
    host_link_gb_s: float | None = Field(default=None, gt=0)
    provenance: dict[str, str] = Field(default_factory=dict)

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        return no_boolean(value, cls.model_fields[info.field_name].annotation) if info.field_name else value

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


#: every built-in preset (estimator.inputs.device_presets, estimator.inputs.blackwell, estimator.inputs.rubin,
#: estimator.inputs.variants)
#: and their short names
PRESETS: dict[str, dict[str, Any]] = with_gemm_rates(with_host_link({**_BASE_PRESETS, **BLACKWELL_PRESETS,
                                                                     **RUBIN_PRESETS, **VARIANT_PRESETS}))
ALIASES: dict[str, str] = {**_BASE_ALIASES, **BLACKWELL_ALIASES, **RUBIN_ALIASES}


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
