"""Memory model (spec §6): static, activations, comm buffers, in-flight micro-batches, assembly."""

from __future__ import annotations

from typing import TYPE_CHECKING

from estimator.inputs.derive import stage_layouts
from estimator.inputs.profiles import moe_tp_without_sp
from estimator.memory.stage import COMPONENTS, MemoryReport, StageMemory, stage_memory

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig

__all__ = ["COMPONENTS", "MemoryReport", "StageMemory", "estimate_memory"]


def estimate_memory(cfg: EstimatorConfig) -> MemoryReport:
    """Per-stage memory of ``cfg`` and its peak (MiB)."""
    stages = tuple(stage_memory(cfg, layout) for layout in stage_layouts(cfg))
    hbm_mb = cfg.hardware.hbm_mb
    warnings: list[str] = []
    peak = max(s.total_mb for s in stages)
    if peak > hbm_mb:
        warnings.append(f"peak {peak:.0f} MiB exceeds device memory {hbm_mb:.0f} MiB ({cfg.hardware.name})")
    if note := moe_tp_without_sp(cfg):
        warnings.append(note)
    return MemoryReport(stages=stages, profile=cfg.profile, hbm_mb=hbm_mb, warnings=tuple(warnings))
