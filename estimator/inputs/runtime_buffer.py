"""The seed's P1: the TP-scaled runtime buffer (seed §4.1, "P1：TP 运行时开销建模").

Two terms join a stage's dynamic memory, only on a stage whose dynamic memory is > 0 (seed §4.1.1
"仅加到 Dynamic > 0 的 stage"):

- the safety buffer (seed §4.1.1): ``safety_buffer_mb / t``; the reference tool added a flat 1 GiB
  (``_backbone.py:660-662``, ``safety_buffer = 1024 * 1024 * 1024``), kept by ``tp_scaled = False``;
- the TP-shardable runtime overhead (seed §4.1.2): ``tp_shardable_overhead_mb / t`` (output-layer
  activation, comm double buffers, graph memory: what TP = 1 under-estimated by 2676 MiB on average).

The seed's defaults are :data:`SEED_SAFETY_BUFFER_MB` and :data:`SEED_TP_SHARDABLE_OVERHEAD_MB`, named
here once (the options' defaults, the presets, the ``sapp-nd`` profile and the recorded-results what-if
read them).
"""

from __future__ import annotations

from estimator.shared.arrays import where
from ndval.core.units import MIB_PER_GIB

#: seed §4.1.1: ``safety_buffer_mb`` default, 1 GiB — the reference's flat buffer, /t with the fix (MiB)
SEED_SAFETY_BUFFER_MB = 1.0 * MIB_PER_GIB
#: seed §4.1.2: ``tp_shardable_overhead_mb`` default — the mean TP = 1 under-estimate of the reference
#: on the scaled-down DeepSeek-V3 (seed §2: "TP=1 平均低估 ~2676 MB") (MiB)
SEED_TP_SHARDABLE_OVERHEAD_MB = 2676.0


def rank_safety_buffer_mb(safety_mb: float, tp: int, *, tp_scaled: bool) -> float:
    """Safety buffer of one rank (seed §4.1.1): ``safety_mb / t`` when ``tp_scaled``, else flat ``safety_mb``."""
    return safety_mb / (tp if tp_scaled else 1)


def rank_overhead_mb(overhead_mb: float, tp: int) -> float:
    """TP-shardable runtime overhead of one rank (seed §4.1.2): ``overhead_mb / t``."""
    return overhead_mb / tp


def stage_runtime_buffers_mb(has_dynamic: object, safety_mb: float, overhead_mb: float, tp: int, *,
                             tp_scaled: bool) -> tuple[float, float]:
    """(safety buffer, TP-shardable overhead) of a stage: :func:`rank_safety_buffer_mb` and
    :func:`rank_overhead_mb` where the stage has dynamic memory (``has_dynamic``: a bool, or an
    array of them for the batched search), else 0 (seed §4.1.1)."""
    return (where(has_dynamic, rank_safety_buffer_mb(safety_mb, tp, tp_scaled=tp_scaled), 0.0),
            where(has_dynamic, rank_overhead_mb(overhead_mb, tp), 0.0))


def p1_what_if_mb(recorded_mb: float, tp: int, overhead_mb: float, safety_mb: float, legacy_safety_mb: float) -> float:
    """A peak recorded from the reference tool with P1 applied arithmetically (seed §4.1.1-§4.1.2).

    estimate' = estimate + overhead/t + safety/t − safety_legacy: the tool added a flat
    ``safety_legacy`` (1 GiB); the fix scales the safety buffer and the new TP-shardable overhead by
    1/t (:func:`rank_safety_buffer_mb`, :func:`rank_overhead_mb`). Assumes every stage's peak had
    dynamic memory > 0, so the buffer applied there before and after.
    """
    return (recorded_mb + rank_overhead_mb(overhead_mb, tp)
            + rank_safety_buffer_mb(safety_mb, tp, tp_scaled=True) - legacy_safety_mb)
