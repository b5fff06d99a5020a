"""ndval estimator: per-stage memory and step-time parts of distributed LLM training (spec §2).

Public API::

    cfg = estimator.load_config("run.yaml")      # or a dict; raises estimator.ConfigError
    mem = estimator.estimate_memory(cfg)          # MemoryReport
    perf = estimator.estimate_perf(cfg)           # PerfReport (estimator.perf.parts)
    estimator.config.presets.legacy() / estimator.config.presets.fixed()
"""

from __future__ import annotations

from typing import Any

from estimator.config import presets
from estimator.config.errors import ConfigError
from estimator.config.schema import EstimatorConfig, load_config
from estimator.memory import MemoryReport, estimate_memory

__all__ = [
    "ConfigError",
    "EstimatorConfig",
    "MemoryReport",
    "estimate_memory",
    "estimate_perf",
    "load_config",
    "presets",
]


def estimate_perf(cfg: EstimatorConfig) -> Any:
    """Step-time parts of ``cfg`` (``estimator.perf.parts.estimate_perf``, imported on first use)."""
    from estimator.perf.parts import estimate_perf as _estimate_perf

    return _estimate_perf(cfg)
