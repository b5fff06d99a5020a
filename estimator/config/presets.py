"""Option presets (spec §5): the reference tool before the fixes, and every fix on.

Each returns a plain dict to merge into ``options``. ``expert_zero3_sharding`` is deliberately
absent: it describes the framework being modelled, so it stays a ``parallel`` setting.
"""

from __future__ import annotations

from typing import Any

from estimator.inputs.runtime_buffer import SEED_SAFETY_BUFFER_MB


def legacy() -> dict[str, Any]:
    """The reference tool before the seed's fixes.

    Flat 1 GiB safety buffer (not /tp), no TP-shardable overhead term, no EP/bubble overlap,
    EP comm left in bytes, and both comm hacks (``comm[DP] = 0``, ``comm[TP] /= 2``) on; no host
    kernel-launch term, no operator roofline (GEMM FLOPs at raw peak) and no overlap mechanisms (the
    reference has none of them).
    """
    return {
        "safety_buffer_mb": SEED_SAFETY_BUFFER_MB,
        "tp_scaled_buffers": False,
        "tp_shardable_overhead_mb": 0.0,
        "ep_bubble_overlap_ratio": 0.0,
        "ep_comm_overlap": 0.0,
        "convert_ep_comm_to_time": False,
        "dp_comm_zero_hack": True,
        "tp_comm_half_hack": True,
        "host_launch_overhead": False,
        "operator_roofline": False,
        "comm_overlap": False,
    }


def fixed() -> dict[str, Any]:
    """Every fix on with the seed's defaults.

    Safety buffer 1024 MiB scaled /tp (P1), TP-shardable overhead at the profile default (None:
    2676 MiB under ``sapp-nd``, 0 otherwise; P1), EP comm fully overlapping the bubble (P3, ratio
    1.0), EP comm converted to seconds with overlap 0 (P4), hacks off; stage passes bounded below by
    the host kernel-launch time (``host_launch_overhead``) and each operator priced on the hardware's
    sourced efficiencies (``operator_roofline``, docs/step-time-accuracy.md).
    """
    return {
        "safety_buffer_mb": SEED_SAFETY_BUFFER_MB,
        "tp_scaled_buffers": True,
        "tp_shardable_overhead_mb": None,
        "ep_bubble_overlap_ratio": 1.0,
        "ep_comm_overlap": 0.0,
        "convert_ep_comm_to_time": True,
        "dp_comm_zero_hack": False,
        "tp_comm_half_hack": False,
        "host_launch_overhead": True,
        "operator_roofline": True,
        "comm_overlap": True,
    }


#: names accepted where a preset is chosen by name (CLI, cases)
PRESETS = {"legacy": legacy, "fixed": fixed}
