"""Public entry of the step-time model (spec §2, §7): the names callers import.

The model lives in five modules: :mod:`estimator.perf.context` (per-config quantities and unit
conversion), :mod:`estimator.perf.layers` (per-layer FLOPs, kernels and CP collectives),
:mod:`estimator.perf.stage` (per-stage pricing, :class:`StageCost`),
:mod:`estimator.perf.assembly` (pipeline, PerfParts, RealParts, :func:`estimate_perf`) and
:mod:`estimator.perf.report` (:class:`PerfReport`, the text table).
"""

from __future__ import annotations

from estimator.perf.assembly import apply_coefficients, assemble, estimate_perf, pp_comm_value, schedule_time
from estimator.perf.context import host_launch_s, reference_comm_weight
from estimator.perf.report import PERF_PARTS, REAL_PARTS, PerfReport, format_perf_table
from estimator.perf.stage import StageCost, stage_costs

__all__ = [
    "PERF_PARTS", "REAL_PARTS", "PerfReport", "StageCost", "apply_coefficients", "assemble", "estimate_perf",
    "format_perf_table", "host_launch_s", "pp_comm_value", "reference_comm_weight", "schedule_time", "stage_costs",
]
