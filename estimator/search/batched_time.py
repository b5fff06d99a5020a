"""Batched step time: the step-time parts of many layouts at once, with the scalar path's own formulas.

Like the batched memory (:mod:`estimator.search.batched`), a group of layouts that differ only in
the array fields (tp, dp, ep, cp, etp, micro-batch size) is priced by running the scalar
:func:`estimator.perf.assembly.estimate_perf` once on an :func:`estimator.search.batched.array_config`
proxy whose array fields are numpy arrays (one value per layout). The step-time formulas are
written over numbers that may be arrays (:mod:`estimator.shared.arrays`: elementwise min/max/where, the
straggler picked per layout, kernel counts per distinct degrees), so there is one formula home.
A group whose formulas still branch on an array (e.g. a given expert routing load, which is split
by ep) raises, and :func:`batch_step_time` returns None: those layouts go to the scalar path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from estimator.perf.assembly import estimate_perf
from estimator.perf.report import PERF_PARTS, REAL_PARTS
from estimator.search.batched import BRANCH_ERRORS, array_config, group_columns

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig


@dataclass(frozen=True)
class BatchedPerf:
    """Step time of ``n`` layouts: each value an array of length ``n`` (row ``r`` = layout ``r``), in the
    units of :class:`estimator.perf.report.PerfReport` (seconds in ``time`` mode)."""

    total_s: np.ndarray
    tokens_per_s: np.ndarray
    mfu: np.ndarray
    real_parts: dict[str, np.ndarray]  # every RealPart (REAL_PARTS), TOTAL included
    perf_parts: dict[str, np.ndarray]  # every PerfPart (PERF_PARTS)
    straggler_stage: np.ndarray


def _rows(value: Any, n: int) -> np.ndarray:
    """``value`` (a number shared by all layouts, or an array over them) as a length-``n`` float array."""
    out = np.asarray(value, dtype=np.float64)
    if out.ndim > 1 or (out.ndim == 1 and len(out) != n):
        raise ValueError(f"a step-time value of shape {out.shape} for {n} layouts")
    return np.array(np.broadcast_to(out, (n,)))


def batch_step_time(proxy_cfg: EstimatorConfig, n: int) -> BatchedPerf | None:
    """Step time of the ``n`` layouts of ``proxy_cfg`` (an :func:`estimator.search.batched.array_config`
    whose array fields have length ``n``), from :func:`estimate_perf` run once on the arrays; None when
    a formula branches on an array field (the group is then priced on the scalar path)."""
    try:
        report = estimate_perf(proxy_cfg)
        return BatchedPerf(
            total_s=_rows(report.real_parts["TOTAL"], n),
            tokens_per_s=_rows(report.tokens_per_s, n),
            mfu=_rows(report.mfu, n),
            real_parts={name: _rows(report.real_parts[name], n) for name in REAL_PARTS},
            perf_parts={name: _rows(report.perf_parts[name], n) for name in PERF_PARTS},
            straggler_stage=_rows(report.straggler_stage, n).astype(np.int64),
        )
    except BRANCH_ERRORS:
        return None


def batch_step_time_of(cfgs: Sequence[EstimatorConfig]) -> BatchedPerf | None:
    """:func:`batch_step_time` of validated configs that differ only in :data:`ARRAY_FIELDS` (one batched
    group; the first is the representative); None when the group cannot be batched."""
    columns = group_columns(cfgs)
    return None if columns is None else batch_step_time(array_config(cfgs[0], columns), len(cfgs))
