"""Pipeline schedule time, the straggler stage, BUBBLE and the EP/bubble overlap (seed P3).

Inputs are per-stage times of one micro-batch ``s_i`` (compute + exposed comm, seconds or score
units) and the number of micro-batches ``m``. Formulas:

* 1F1B / GPipe (reference §3.4): ``T = Σ_i s_i + (m − 1)·max_i s_i`` (``p = 1`` gives ``m·s_0``).
* Interleaved with ``v`` chunks per device (reference §3.4, Narayanan et al. 2021 §2.2.2):
  ``T = S/v + p(v−1)·max/v + (m·v − p(v−1) − 1)·max/v = S/v + (m·v − 1)·max/v``; with equal stages the
  bubble is ``(p−1)·s/v``, i.e. Narayanan's bubble fraction ``(p−1)/(v·m)``.
* Zero-bubble V (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, ZB-V):
  ``T = m·max_i(F_i + B_i + W_i) + (p − 1)·max(0, max_i(F_i + B_i − 2·W_i))`` with F the forward,
  B the input-gradient and W the weight-gradient part of one micro-batch on a device.

Seed P3 overlap: ``s_i' = s_i − ratio·ep_i`` on stages whose layers run with ``ep > 1`` (dense
stages have ``ep_i = 0``); the straggler's own EP stays on the critical path (:func:`step_time`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from estimator.shared.arrays import ARRAY, any_true, is_array, max_of, maximum, pick, where

SCHEDULES = ("1f1b", "interleaved", "zero_bubble_v", "gpipe")

#: relative size below which a bubble is float rounding of equal sums, reported as 0
FLOAT_NOISE_REL = 1e-12


def one_f_one_b_time(stage_s: Sequence[float], num_micro_batches: int) -> float:
    """1F1B (and GPipe) step time ``Σ s_i + (m − 1)·max s_i`` (reference §3.4, seed P3 derivation)."""
    _check(stage_s, num_micro_batches)
    return sum(stage_s) + (num_micro_batches - 1) * max_of(stage_s)


def interleaved_time(stage_s: Sequence[float], num_micro_batches: int, vpp: int) -> float:
    """Interleaved 1F1B: ``S/v + p(v−1)·max/v + (m·v − p(v−1) − 1)·max/v`` (reference §3.4).

    ``stage_s`` are whole-device times (all ``v`` chunks); ``v = 1`` reduces to 1F1B.
    """
    _check(stage_s, num_micro_batches)
    if vpp < 1:
        raise ValueError(f"vpp={vpp} must be >= 1")
    p, v, m = len(stage_s), vpp, num_micro_batches
    peak = max_of(stage_s) / v
    return sum(stage_s) / v + p * (v - 1) * peak + (m * v - p * (v - 1) - 1) * peak


def zero_bubble_v_time(
    forward_s: Sequence[float], backward_input_s: Sequence[float], backward_weight_s: Sequence[float],
    num_micro_batches: int,
) -> float:
    """ZB-V: ``m·max(F+B+W) + (p−1)·max(0, max(F + B − 2W))`` (Qi et al. 2024, ZB-V bubble)."""
    totals = [f + b + w for f, b, w in zip(forward_s, backward_input_s, backward_weight_s, strict=True)]
    _check(totals, num_micro_batches)
    residual = max_of([f + b - 2.0 * w for f, b, w in zip(forward_s, backward_input_s, backward_weight_s,
                                                           strict=True)])
    return num_micro_batches * max_of(totals) + (len(totals) - 1) * maximum(0.0, residual)


def straggler_index(values: Sequence[float]) -> int:
    """Index of the slowest stage; the *last* one on ties, as the reference tool (§3.4)."""
    peak = max(values)
    return max(i for i, v in enumerate(values) if v == peak)


def ep_overlapped_stage_time(stage_s: float, ep_comm_s: float, ratio: float, stage_ep: int) -> float:
    """Seed P3: ``s' = s − ratio·ep_comm`` on a stage whose layers run with ``ep > 1``; else ``s``."""
    if not 0.0 <= ratio <= 1.0:
        raise ValueError(f"ep_bubble_overlap_ratio {ratio} outside [0, 1]")
    if type(stage_ep) is ARRAY:  # per layout (estimator.shared.arrays)
        return where(stage_ep <= 1, stage_s, stage_s - ratio * ep_comm_s)
    if stage_ep <= 1:
        return stage_s
    return stage_s - ratio * ep_comm_s


@dataclass(frozen=True)
class StepTime:
    """Result of :func:`step_time`: total time, the straggler and the bubble (same unit as inputs)."""

    total: float
    pipeline: float
    work_bound: float
    straggler_stage: int
    bubble: float


def step_time(
    schedule_time: Callable[[Sequence[float]], float],
    hidden: Sequence[float],
    stage_s: Sequence[float],
    num_micro_batches: int,
    per_step_tail: Sequence[float],
) -> StepTime:
    """Step time with the seed-P3 EP/bubble overlap, the straggler and BUBBLE.

    ``schedule_time(h)`` is the schedule time when stage ``i`` hides ``h_i`` of its EP comm;
    ``hidden`` = ``ratio·ep_comm_i`` on stages with ep > 1 (:func:`ep_overlapped_stage_time`).
    EP comm can hide only in idle time, and the steady-state bottleneck stage has none, so for each
    candidate straggler ``k`` the schedule is timed with ``h_k = 0``; the step takes the largest:
    ``T = max_k schedule(h with h_k = 0) + max_i tail_i``. For 1F1B this is
    ``max_k [Σ_{i≠k} (s_i − h_i) + m·s_k]``; the straggler is the maximising ``k`` (then the larger
    ``s_k``, then the last index — the reference's rule, §3.4) and
    ``BUBBLE = T − (m·s_k + tail_k) ≥ 0``. For ``p = 2`` this is the seed's
    ``BUBBLE = min_i(s_i − ep_comm_i)`` (seed §4.3.2); with ``ratio = 0`` it is the reference's
    ``Σ s_i + (m−1)·max s_i − m·max s_i``. ``T`` never falls when any stage time grows.
    """
    p = len(stage_s)
    arrays = is_array(*hidden, *stage_s)
    hides = any(any_true(h) for h in hidden) if arrays else any(hidden)
    if hides and arrays:  # arrays: every k in one call
        rows = np.arange(p)[:, None]  # candidate k on axis 0, layouts on axis 1
        per_k: list[Any] = [np.where(rows == i, 0.0, h) for i, h in enumerate(hidden)]  # h_k = 0 in row k
        timed = schedule_time(per_k)
        candidates = list(np.broadcast_to(timed, (p, *np.shape(timed)[1:])))
    elif hides:
        candidates = [schedule_time([0.0 if i == k else h for i, h in enumerate(hidden)]) for k in range(p)]
    else:
        candidates = [schedule_time(hidden)] * p
    k = _straggler(candidates, stage_s)
    tail = max_of(per_step_tail)
    work = [num_micro_batches * s + t for s, t in zip(stage_s, per_step_tail, strict=True)]
    if type(k) is ARRAY:  # per layout: row r takes candidate k[r]
        total = pick(k, candidates) + tail
        bubble = total - pick(k, work)
        bubble = where(abs(bubble) <= FLOAT_NOISE_REL * total, 0.0, bubble)
        return StepTime(total, total, max_of(work), k, bubble)
    total = candidates[k] + tail
    bubble = total - work[k]
    if abs(bubble) <= FLOAT_NOISE_REL * total:  # the same sum in another order (p = 1, ZB-V)
        bubble = 0.0
    return StepTime(total, total, max_of(work), k, bubble)


def _straggler(candidates: Sequence[float], stage_s: Sequence[float]) -> int:
    """The ``k`` maximising ``(candidates[k], stage_s[k], k)`` (elementwise for arrays of layouts)."""
    p = len(stage_s)
    if not is_array(*candidates, *stage_s):
        return max(range(p), key=lambda i: (candidates[i], stage_s[i], i))
    best_c, best_s = np.asarray(candidates[0]), np.asarray(stage_s[0])
    k = np.zeros(np.broadcast(*(np.asarray(v) for v in (*candidates, *stage_s))).shape, dtype=np.int64)
    for i in range(1, p):
        c, s = candidates[i], stage_s[i]
        better = (c > best_c) | ((c == best_c) & (s >= best_s))  # a later index wins full ties
        k, best_c, best_s = np.where(better, i, k), np.where(better, c, best_c), np.where(better, s, best_s)
    return k  # type: ignore[return-value]  # one stage index per layout



def bubble_fraction_1f1b(pp: int, num_micro_batches: int) -> float:
    """Seed §4.3.4: idle share of a 1F1B step with equal stages, ``(p−1)/(p + m − 1)``."""
    return (pp - 1) / (pp + num_micro_batches - 1)


def _check(stage_s: Sequence[float], m: int) -> None:
    if not stage_s:
        raise ValueError("no pipeline stages")
    if any_true(m < 1):  # (arrays of layouts too)
        raise ValueError(f"num_micro_batches={m} must be >= 1")
