"""In-flight micro-batches per pipeline schedule — the one home for μ.

μ(stage, chunk) is the number of micro-batches whose forward activations a layer of that
(stage, chunk) holds at the stage's memory peak (the end of the warm-up). Reference §2.7, with p
stages, vp chunks per stage, m micro-batches and ``base = min(p, m)``.
"""

from __future__ import annotations

from typing import Literal

from estimator.shared.arrays import maximum, minimum
from ndval.core import cache

Schedule = Literal["1f1b", "interleaved", "zero_bubble_v", "gpipe"]
#: how interleaved 1F1B spreads μ over a stage's chunks: the reference's rule or Megatron's order
InterleavedOrder = Literal["reference", "megatron"]


def in_flight_1f1b(pp: int, m: int, stage: int) -> int:
    """1F1B: μ = min(p, m) − stage (stage 0 holds p, the last stage 1); at least 1. (``m`` may be
    an array of layouts: :mod:`estimator.shared.arrays`.)"""
    return maximum(1, minimum(pp, m) - stage)


def in_flight_interleaved(pp: int, vpp: int, m: int, stage: int, chunk: int) -> int:
    """Interleaved 1F1B (reference §2.7, default "big memory" mode), per chunk.

    base = min(p, m); extra = base − stage − 1; last = base − stage; if last < base then last += 1
    and extra −= 1. Chunk 0 holds base + extra (one less on stage 0), middle chunks hold base, the
    last chunk holds ``last``. Summed over chunks this equals Megatron's warm-up depth
    (p − stage − 1)·2 + (vp − 1)·p plus the one in the steady state for every stage but the first.
    """
    base = minimum(pp, m)
    extra = base - stage - 1
    last = base - stage
    if stage > 0:  # last < base ⇔ stage > 0 (the form that also holds for an array of m)
        last += 1
        extra -= 1
    if chunk == 0:
        value = base + extra - (1 if stage == 0 else 0)
    elif chunk == vpp - 1:
        value = last
    else:
        value = base
    return maximum(1, value)


def megatron_interleaved_warmup(pp: int, vpp: int, m: int, stage: int, extra: int = 0) -> int:
    """Warm-up forwards of rank ``stage`` in Megatron-Core's interleaved 1F1B.

    ``get_pp_rank_microbatches`` (megatron/core/pipeline_parallel/schedules.py):
    (p − stage − 1)·2 + (vp − 1)·g with the micro-batch group size g = p
    (``microbatch_group_size_per_vp_stage`` default), + 1 with
    ``--overlap-moe-expert-parallel-comm`` (``extra``), capped at all m·vp forwards. (``m`` may be an array
    of layouts: :mod:`estimator.shared.arrays`.)
    """
    return minimum((pp - stage - 1) * 2 + (vpp - 1) * pp + extra, m * vpp)


def megatron_forward_chunks(pp: int, vpp: int, m: int) -> list[int]:
    """Model chunk of each of a rank's m·vp forwards, in order (``get_schedule_table``, g = p).

    Micro-batches go in groups of g: every chunk runs the group's micro-batches before the
    next chunk; the last group takes the remaining micro-batches.
    """
    chunks: list[int] = []
    for start in range(0, m, pp):
        group = min(pp, m - start)
        for chunk in range(vpp):
            chunks.extend([chunk] * group)
    return chunks


def in_flight_megatron_interleaved(pp: int, vpp: int, m: int, stage: int, chunk: int, extra: int = 0) -> int:
    """Interleaved 1F1B, per chunk, in Megatron-Core's forward order (at least 1).

    The stage's peak is when its first backward starts: after the W warm-up forwards and the
    first steady-state forward (W + 1 forwards, all m·vp when W = m·vp), none of them released
    yet. μ(chunk) counts those forwards that ran ``chunk`` (``megatron_forward_chunks``).
    Summed over chunks this is the reference rule's total on every stage but the first (which
    the reference gives one less), but the reference puts the extra micro-batch on the last
    chunk, while on the last stage Megatron runs the last chunk's forward and then at once its
    backward, so that chunk holds 1 and the others p each. This matters when chunks differ in
    size (MTP layers on the last chunk, an explicit ``layers_per_stage`` layout).
    """
    n = min(megatron_interleaved_warmup(pp, vpp, m, stage, extra) + 1, m * vpp)
    return max(1, _forward_chunks(pp, vpp, m)[:n].count(chunk))


@cache.memoize("estimator.forward_chunks", bound=1024, key="(pp, vpp, micro-batches)",
               holds="Megatron's forward chunk order")
def _forward_chunks(pp: int, vpp: int, m: int) -> tuple[int, ...]:
    """:func:`megatron_forward_chunks`, built once per (p, vp, m) (every stage and chunk reads it)."""
    return tuple(megatron_forward_chunks(pp, vpp, m))


def in_flight_zero_bubble_v(pp: int, m: int, stage: int, chunk: int) -> int:
    """Zero-bubble V (DualPipeV-like, 2 chunks): chunk 0 holds 2·min(p, m) − 1 − stage, chunk 1 holds stage."""
    value = 2 * minimum(pp, m) - 1 - stage if chunk == 0 else stage
    return maximum(1, value)


def in_flight_gpipe(m: int) -> int:
    """GPipe: all m forwards run before any backward, so every layer holds m micro-batches.

    The reference uses μ = p here (reference §2.7); that undercounts whenever m > p, the OOM
    direction, so ndval keeps the m of Huang et al. 2019 (GPipe §2.2: activations of all
    micro-batches are stored unless re-materialised).
    """
    return maximum(1, m)


def in_flight(
    schedule: Schedule,
    pp: int,
    vpp: int,
    m: int,
    stage: int,
    chunk: int = 0,
    order: InterleavedOrder = "reference",
    extra_warmup: int = 0,
) -> int:
    """μ for a layer of (stage, chunk) under ``schedule``.

    ``order`` picks the interleaved rule; ``extra_warmup`` adds Megatron's extra warm-up forward
    (``--overlap-moe-expert-parallel-comm``) to the Megatron order.
    """
    if schedule == "1f1b":
        return in_flight_1f1b(pp, m, stage)
    if schedule == "interleaved":
        if order == "megatron":
            return in_flight_megatron_interleaved(pp, vpp, m, stage, chunk, extra_warmup)
        return in_flight_interleaved(pp, vpp, m, stage, chunk)
    if schedule == "zero_bubble_v":
        return in_flight_zero_bubble_v(pp, m, stage, chunk)
    if schedule == "gpipe":
        return in_flight_gpipe(m)
    raise ValueError(f"unknown schedule {schedule!r}")
