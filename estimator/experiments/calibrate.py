"""Calibration of the step-time model against measured step times, with honest error reporting.

At most one free knob is fitted here: the global ``compute_efficiency`` (achieved share of peak
FLOP/s), on a deterministic half of the rows (split by a hash of ``case_id``); the accuracy
figures are reported on the other half and by leave-one-out on the fitting half. The fitted value
never lives in code: callers pass it to ``options.compute_efficiency`` (spec §7, style anchor 4).

Objective: least squares of ``log(estimated) − log(measured)`` (a relative error, symmetric in
over/under-estimation), minimised over ``efficiency ∈ [EFF_MIN, EFF_MAX]`` with Brent's bounded
method (scipy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy import optimize

from ndval.core import stats
from ndval.core.hashing import first_byte_of_sha256

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig

#: search bounds of the fitted efficiency (share of peak); wide on purpose
EFF_MIN, EFF_MAX = 0.02, 1.0

#: estimator of one row's step time (seconds) for a given compute efficiency
EstimateFn = Callable[[int, float], float]


def split_half(case_id: str) -> str:
    """``"fit"`` or ``"holdout"`` for ``case_id``: the parity of the first byte of its SHA-256.

    Deterministic and independent of row order, so the split is the same on every machine.
    """
    return "fit" if first_byte_of_sha256(case_id) % 2 == 0 else "holdout"


def log_sq_error(estimated: Sequence[float], measured: Sequence[float]) -> float:
    """``Σ (log est − log meas)²``, the fit objective."""
    e, m = np.asarray(estimated, float), np.asarray(measured, float)
    return float(np.sum((np.log(e) - np.log(m)) ** 2))


def fit_efficiency(estimate: EstimateFn, rows: Sequence[int], measured_s: Sequence[float]) -> float:
    """The efficiency minimising :func:`log_sq_error` over ``rows`` (bounded Brent search)."""

    def objective(eff: float) -> float:
        return log_sq_error([estimate(r, eff) for r in rows], measured_s)

    res = optimize.minimize_scalar(objective, bounds=(EFF_MIN, EFF_MAX), method="bounded", options={"xatol": 1e-4})
    return float(res.x)


@dataclass(frozen=True)
class Accuracy:
    """Accuracy of estimates against measurements over one set of rows."""

    n: int
    spearman_pooled: float
    spearman_group_median: float
    groups: int
    mape_pct: float
    median_ratio: float

    def as_dict(self) -> dict[str, float]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


def accuracy(estimated: Sequence[float], measured: Sequence[float], groups: Sequence[str]) -> Accuracy:
    """Pooled Spearman, median within-group Spearman (groups with ≥ 3 rows; constant groups left
    out, ``ndval.core.stats``), MAPE (%), median est/meas."""
    e, m = np.asarray(estimated, float), np.asarray(measured, float)
    per_group = stats.grouped("spearman", e, m, groups, min_n=3)
    return Accuracy(
        n=len(e),
        spearman_pooled=stats.spearman(e, m),
        spearman_group_median=stats.summarise(per_group, "median"),
        groups=sum(g.r is not None for g in per_group),
        mape_pct=100.0 * stats.mape(e, m),
        median_ratio=float(np.median(e / m)),
    )


@dataclass(frozen=True)
class Calibration:
    """Result of :func:`calibrate_efficiency`."""

    efficiency: float
    fit_rows: int
    holdout_rows: int
    fit: Accuracy
    holdout: Accuracy
    uncalibrated_holdout: Accuracy
    loo_mape_pct: float


def calibrate_efficiency(
    estimate: EstimateFn,
    case_ids: Sequence[str],
    measured_s: Sequence[float],
    groups: Sequence[str],
    loo_subsample: int = 40,
) -> Calibration:
    """Fit one global efficiency on the ``fit`` half, report accuracy on the ``holdout`` half.

    ``estimate(i, eff)`` returns the estimated step time of row ``i`` in seconds. Leave-one-out
    MAPE on the fit half is computed over an evenly spaced subsample of ``loo_subsample`` rows
    (each refit excludes that row). ``uncalibrated_holdout`` uses efficiency 1.0 (raw peak).
    """
    fit_idx = [i for i, c in enumerate(case_ids) if split_half(c) == "fit"]
    hold_idx = [i for i, c in enumerate(case_ids) if split_half(c) == "holdout"]
    if not fit_idx or not hold_idx:
        raise ValueError(f"split_half left an empty half ({len(fit_idx)} fit, {len(hold_idx)} holdout rows)")
    meas = np.asarray(measured_s, float)
    eff = fit_efficiency(estimate, fit_idx, meas[fit_idx].tolist())

    def acc(idx: list[int], e: float) -> Accuracy:
        return accuracy([estimate(i, e) for i in idx], meas[idx].tolist(), [groups[i] for i in idx])

    step = max(1, len(fit_idx) // max(1, loo_subsample))
    loo_err = []
    for i in fit_idx[::step]:
        rest = [j for j in fit_idx if j != i]
        e_i = fit_efficiency(estimate, rest, meas[rest].tolist())
        loo_err.append(abs(estimate(i, e_i) - meas[i]) / meas[i])
    return Calibration(
        efficiency=eff,
        fit_rows=len(fit_idx),
        holdout_rows=len(hold_idx),
        fit=acc(fit_idx, eff),
        holdout=acc(hold_idx, eff),
        uncalibrated_holdout=acc(hold_idx, 1.0),
        loo_mape_pct=float(100.0 * np.mean(loo_err)),
    )


def efficiency_estimator(cfgs: Sequence[EstimatorConfig]) -> EstimateFn:
    """``estimate(i, eff)``: TOTAL (s) of ``cfgs[i]`` as if ``options.compute_efficiency = eff``.

    Stage costs are computed once at efficiency 1.0; compute parts scale as ``1/eff`` (time =
    FLOPs/(peak·eff)), so each evaluation only re-runs the schedule. Equal to running
    ``estimate_perf`` with that efficiency (checked by the tests).
    """
    from estimator.perf import parts

    prepared = []
    for cfg in cfgs:
        base = cfg.model_copy(update={"options": cfg.options.model_copy(update={"compute_efficiency": 1.0})})
        o, p = base.options, base.parallel
        stages = parts.apply_coefficients(parts.stage_costs(base), o.part_coefficients)
        prepared.append((stages, p.schedule, base.num_micro_batches, p.vpp, o.ep_bubble_overlap_ratio,
                         parts.pp_comm_value(base), (o.part_coefficients or {}).get("BUBBLE", 1.0)))

    def estimate(i: int, eff: float) -> float:
        stages, schedule, m, vpp, ratio, pp_comm, bubble_k = prepared[i]
        k = 1.0 / eff
        scaled = parts.apply_coefficients(stages, {"FW_COMPUTE": k, "BW_COMPUTE": k, "RECOMPUTE": k})
        _, real, _ = parts.assemble(scaled, schedule=schedule, num_micro_batches=m, vpp=vpp, ratio=ratio,
                                    pp_comm=pp_comm, bubble_coefficient=bubble_k)
        return real["TOTAL"]

    return estimate
