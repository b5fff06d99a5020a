"""SYNTHETIC before/after fixtures for the comparison unit tests — not measured data.

Every number here is invented so that the expected verdict is known by construction (seed §7.2:
``threshold = max(1 %, expected gain × 0.5)``):

=============================  =============  ===========  ===========================  ==================
recommendation                 expected gain  threshold    primary target (before→after) verdict
=============================  =============  ===========  ===========================  ==================
``host.enable-graph-mode``     37.5 %         18.75 %      dispatch ops/step 1500→300   achieved (80 %)
``host.remove-sampler-sync``   20 %           10 %         sync ops/step 2.0→1.9        partially (5 %)
``comm.overlap``               12 %           6 %          comm exposed 1000→1100 µs    not achieved (−10 %)
``collect.enable-aic-metrics`` —              1 %          (none)                       not judgeable
=============================  =============  ===========  ===========================  ==================

The "after" side is a graph-mode capture whose bottleneck moved from host dispatch to device compute
(the bottleneck-shift case).
"""

from __future__ import annotations

import dataclasses

from analyzer.compare import OperatorTotal, RecommendationRef, SideSummary

#: the four recommendations of the synthetic "before" analysis and their known verdicts
SYNTHETIC_EXPECTED_VERDICTS: dict[str, str] = {
    "host.enable-graph-mode": "achieved",
    "host.remove-sampler-sync": "partially_achieved",
    "comm.overlap": "not_achieved",
    "collect.enable-aic-metrics": "not_judgeable",
}

_FILES = frozenset({"trace_view.json", "kernel_details.csv", "op_statistic.csv", "step_trace_time.csv",
                    "profiler_info.json"})


def synthetic_before() -> SideSummary:
    """SYNTHETIC host-bound decode capture (eager mode): 20 steps of 10 ms."""
    return SideSummary(
        label="synthetic-before-eager",
        source_format="ascend",
        metrics={
            "avg_step_us": 10_000.0, "window_us": 200_000.0, "device_idle_pct": 50.0,
            "host_exclusive_per_step_us": 5_000.0, "host_exclusive_pct": 50.0, "host_busy_pct": 90.0,
            "host_dispatch_us": 120_000.0, "dispatch_ops_per_step": 1_500.0, "sync_ops_per_step": 2.0,
            "comm_exposed_us": 1_000.0, "comm_us_per_step": 300.0, "copy_device_us": 2_000.0,
            "d2h_per_step_us": 50.0, "h2d_per_step_us": 40.0, "compute_us": 90_000.0,
            "idle_gap_mean_us": 120.0, "idle_gap_count": 800.0, "device_busy_pct": 50.0,
            "comm_overlap_pct": 30.0, "compute_pct": 45.0, "comm_ops_per_step": 4.0,
            "event_count": 100_000.0, "device_op_count": 30_000.0,
        },
        categories_us={"compute": 90_000.0, "communication": 6_000.0, "memcpy": 2_000.0},
        operators={
            "MatMulV2": OperatorTotal(40_000.0, 2_000), "Add": OperatorTotal(10_000.0, 5_000),
            "Mul": OperatorTotal(8_000.0, 4_000), "Cast": OperatorTotal(6_000.0, 6_000),
            "FlashAttentionScore": OperatorTotal(20_000.0, 1_000), "allreduce": OperatorTotal(6_000.0, 80),
        },
        bottleneck="host",
        scores={"host": 72.0, "compute": 0.0, "communication": 0.0, "copy": 0.0},
        recommendations=[
            RecommendationRef("host.enable-graph-mode", "enable graph mode", 37.5),
            RecommendationRef("host.remove-sampler-sync", "remove sampler sync", 20.0),
            RecommendationRef("comm.overlap", "overlap communication", 12.0),
            RecommendationRef("collect.enable-aic-metrics", "collect PipeUtilization", None),
        ],
        step_count=20,
        window_us=200_000.0,
        phase_shares_pct={"decode": 100.0},
        phase_override=None,
        totals_source="trace",
        files=_FILES,
        device_names=("Ascend910B",),
        world_size=8,
        ranks=(0,),
        event_count=100_000,
    )


def synthetic_after() -> SideSummary:
    """SYNTHETIC graph-mode capture of the same workload: host overhead gone, compute now dominates."""
    before = synthetic_before()
    metrics = dict(before.metrics)
    metrics.update({
        "avg_step_us": 7_000.0, "window_us": 140_000.0, "device_idle_pct": 15.0,
        "host_exclusive_per_step_us": 1_000.0, "host_exclusive_pct": 14.3, "host_busy_pct": 40.0,
        "host_dispatch_us": 20_000.0, "dispatch_ops_per_step": 300.0, "sync_ops_per_step": 1.9,
        "comm_exposed_us": 1_100.0, "device_busy_pct": 85.0, "compute_pct": 64.0,
        "idle_gap_mean_us": 60.0, "idle_gap_count": 200.0, "event_count": 60_000.0,
    })
    return dataclasses.replace(
        before,
        label="synthetic-after-graph",
        metrics=metrics,
        categories_us={"compute": 89_000.0, "communication": 6_500.0, "memcpy": 2_000.0},
        operators={
            "MatMulV2": OperatorTotal(40_000.0, 2_000), "Add": OperatorTotal(4_000.0, 2_000),
            "Mul": OperatorTotal(8_000.0, 4_000), "FusedAddMul": OperatorTotal(5_000.0, 1_000),
            "FlashAttentionScore": OperatorTotal(20_500.0, 1_000), "allreduce": OperatorTotal(6_500.0, 80),
        },
        bottleneck="compute",
        scores={"host": 10.0, "compute": 61.0, "communication": 0.0, "copy": 0.0},
        recommendations=[RecommendationRef("comm.overlap", "overlap communication", 10.0),
                         RecommendationRef("compute.fuse-small-ops", "fuse small ops", None)],
        window_us=140_000.0,
        event_count=60_000,
    )


def synthetic_pair() -> tuple[SideSummary, SideSummary]:
    """The SYNTHETIC (before, after) pair with the verdicts of :data:`SYNTHETIC_EXPECTED_VERDICTS`."""
    return synthetic_before(), synthetic_after()
