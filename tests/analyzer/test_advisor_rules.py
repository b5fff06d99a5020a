"""Each advisor rule on a synthetic input (labelled synthetic): one that fires it at the edge of its threshold and
one just the other side that does not. ``fire(key)`` / ``calm(key)`` give the two values for threshold ``key``
(``DELTA`` away from the gate), so a mutation of any threshold value (``tools/mutants.py``: 5 x DELTA towards the
other side) flips one of the pair."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analyzer.advisor import (
    AdvisorInput,
    advise,
    rules_affinity,
    rules_comm,
    rules_compute,
    rules_env,
    rules_freq,
    rules_schedule,
)
from analyzer.thresholds import default_thresholds

TH = default_thresholds()
COUNTS = {"advisorFusibleCount", "advisorStaticOpsMax", "advisorHostCacheCapacity", "advisorAffinityMinCount"}
#: msprof-analyze 26.2.0's defaults (files cited in thresholds_default.yaml), written here rather than read from
#: the thresholds file, so a changed default changes the rules' behaviour on these edges and a test fails.
DEFAULTS: dict[str, float] = {
    "advisorAclnnCacheLimit": 10000, "advisorHostCacheCapacity": 0, "advisorAlignmentMinBytes": 512,
    "advisorSmallSdmaMb": 16, "advisorSmallRdmaMb": 1, "advisorSmallPacketRatio": 0.2, "advisorContentionFraction": 0.8,
    "advisorRetransmissionMs": 4000, "advisorCubeMacRatio": 0.8, "advisorCubeMte2Ratio": 0.95, "advisorFaMte2Ratio": 0.8,
    "advisorFaFixpipeRatio": 0.75, "advisorFaVecRatio": 0.75, "advisorVecTotalRatio": 0.9, "advisorVecRatio": 0.7,
    "advisorVecMte2Ratio": 0.7, "advisorVecMte3Ratio": 0.7, "advisorVectorTypeSharePct": 1, "advisorCubeMemoryMb": 100,
    "advisorNoBoundRatio": 0.8, "advisorNoBoundMinUs": 20, "advisorAicpuMinUs": 20, "advisorStaticOpsMax": 0,
    "advisorSyncCoOccurrence": 0.5, "advisorGcMinUs": 1000, "advisorGcFreeMinUs": 200000, "advisorGcAclRatePerUs": 0.0001,
    "advisorGcAclTimeRatio": 0.01, "advisorFusibleHostRatio": 0.4, "advisorFusibleMteRatio": 0.8,
    "advisorFusibleDurationRatio": 0.01, "advisorFusibleCount": 5, "advisorSdmaBaselineGbps": 18,
    "advisorAffinityMinCount": 1, "advisorFreqDropRatio": 0.05,
}


def delta(key: str) -> float:
    """The distance of the synthetic values from gate ``key``: 1 % of it (1 for counts, 0.5 at zero)."""
    v = DEFAULTS[key]
    return 1.0 if key in COUNTS else (abs(v) * 0.01 if v else 0.5)


def fire(key: str) -> float:
    """The value nearest the default gate that reaches it."""
    v, rel = DEFAULTS[key], TH[key].relation
    return {">=": v, "<=": v, ">": v + delta(key), "<": v - delta(key)}[rel]


def calm(key: str) -> float:
    """The value nearest the default gate that does not reach it."""
    v, rel = DEFAULTS[key], TH[key].relation
    eps = 1e-9 * max(1.0, abs(v))  # the gate itself for strict relations, off by float rounding of sums
    return {">=": v - delta(key), "<=": v + delta(key), ">": v - eps, "<": v + eps}[rel]


def events(rows: list[tuple[str, str, float, float]]) -> pd.DataFrame:
    """A synthetic event table: (name, side, ts_us, dur_us) rows."""
    return pd.DataFrame({"name": [r[0] for r in rows], "side": [r[1] for r in rows],
                         "ts_us": [float(r[2]) for r in rows], "dur_us": [float(r[3]) for r in rows],
                         "category": ["other"] * len(rows), "sub": ["overlap_analysis" if r[0] == "Free" else "" for r in rows],
                         "step": [-1] * len(rows), "corr": [-1] * len(rows), "tid": [0] * len(rows)})


def inp(**kw: object) -> AdvisorInput:
    base: dict[str, object] = {"rank": 0, "fmt": "ascend", "events": events([]), "window_us": 1e6}
    return AdvisorInput(**{**base, **kw})  # type: ignore[arg-type]


def kernels(rows: list[dict[str, object]]) -> pd.DataFrame:
    """Synthetic kernel_details rows with defaults for every column the rules read."""
    base = {"Name": "k", "Type": "Add", "OP State": "static", "Accelerator Core": "AI_VECTOR_CORE", "Start Time(us)": 0.0,
            "Duration(us)": 10.0, "Block Dim": 24, "Mix Block Dim": 0, "Input Shapes": "8,8", "Output Shapes": "8,8",
            "Input Data Types": "FLOAT", "Output Data Types": "FLOAT", "aicore_time(us)": 10.0,
            **{c: 0.0 for c in ("aic_mac_ratio", "aic_mte2_ratio", "aic_fixpipe_ratio", "aic_scalar_ratio", "aic_mte1_ratio",
                                "aiv_vec_ratio", "aiv_mte2_ratio", "aiv_mte3_ratio", "aiv_scalar_ratio", "aic_mte2_time(us)",
                                "aiv_mte2_time(us)", "aic_fixpipe_time(us)", "aiv_mte3_time(us)")}}
    return pd.DataFrame([{**base, **r} for r in rows])


# ------------------------------------------------------------------------------------------- environment

@pytest.mark.parametrize(("var", "key"), [("ACLNN_CACHE_LIMIT", "advisorAclnnCacheLimit"),
                                          ("HOST_CACHE_CAPACITY", "advisorHostCacheCapacity")])
def test_env_numeric_gates(var: str, key: str) -> None:
    assert rules_env.env_variables(inp(env={var: f"{fire(key):.0f}"}), TH) is not None
    assert rules_env.env_variables(inp(env={var: f"{calm(key):.0f}"}), TH) is None


def test_env_log_level_and_flags() -> None:
    assert rules_env.env_variables(inp(env={"ASCEND_GLOBAL_LOG_LEVEL": "1"}), TH) is not None
    assert rules_env.env_variables(inp(env={"ASCEND_GLOBAL_LOG_LEVEL": "3", "ASCEND_LAUNCH_BLOCKING": "0",
                                            "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"}), TH) is None
    f = rules_env.env_variables(inp(env={"ASCEND_LAUNCH_BLOCKING": "1", "PYTORCH_NPU_ALLOC_CONF": ""}), TH)
    assert f is not None and [r[0] for r in f.rows] == ["PYTORCH_NPU_ALLOC_CONF", "ASCEND_LAUNCH_BLOCKING"]
    assert rules_env.env_variables(inp(env=None), TH) is None


# ------------------------------------------------------------------------------------------- communication

def hccl(sizes: list[float], link: str = "HCCS") -> pd.DataFrame:
    return pd.DataFrame({"op": ["hcom_allReduce_1"] * len(sizes), "task": ["Memcpy"] * len(sizes),
                         "transport": ["SDMA"] * len(sizes), "link": [link] * len(sizes), "size_bytes": sizes,
                         "dur_us": [10.0] * len(sizes), "ts_us": [0.0] * len(sizes)})


def test_byte_alignment() -> None:
    key = "advisorAlignmentMinBytes"
    assert rules_comm.byte_alignment(inp(hccl_tasks=hccl([fire(key)])), TH) is not None
    assert rules_comm.byte_alignment(inp(hccl_tasks=hccl([calm(key)])), TH) is None  # too small to check
    assert rules_comm.byte_alignment(inp(hccl_tasks=hccl([768.0])), TH) is not None  # 256-aligned, not 512
    assert rules_comm.byte_alignment(inp(hccl_tasks=hccl([1024.0, 4096.0])), TH) is None
    assert rules_comm.byte_alignment(inp(hccl_tasks=hccl([768.0], link="ON_CHIP")), TH) is None


def comm(ops: list[tuple[float, float, float, float]], start: float = 0.0) -> dict[str, object]:
    """communication.json with ops of (SDMA MB, RDMA MB, elapse/transit ms, SDMA GB/s)."""
    return {"step1": {"collective": {f"op{i}@g": {
        "Communication Time Info": {"Start Timestamp(us)": start, "Elapse Time(ms)": t},
        "Communication Bandwidth Info": {"SDMA": {"Transit Size(MB)": s, "Transit Time(ms)": t, "Bandwidth(GB/s)": bw},
                                         "RDMA": {"Transit Size(MB)": r, "Transit Time(ms)": t}}}
        for i, (s, r, t, bw) in enumerate(ops)} | {"Total Op Info": {}}}}


@pytest.mark.parametrize(("key", "col"), [("advisorSmallSdmaMb", 0), ("advisorSmallRdmaMb", 1)])
def test_small_packet_size(key: str, col: int) -> None:
    def op(mb: float) -> tuple[float, float, float, float]:
        return (mb, 0.0, 1.0, 20.0) if col == 0 else (0.0, mb, 1.0, 20.0)
    assert rules_comm.small_packets(inp(communication=comm([op(fire(key))])), TH) is not None
    assert rules_comm.small_packets(inp(communication=comm([op(calm(key))])), TH) is None


def test_small_packet_ratio() -> None:
    key = "advisorSmallPacketRatio"
    for value, fires in ((fire(key), True), (calm(key), False)):
        n_small = round(value * 500)
        ops = [(1.0, 0.0, 1.0, 20.0)] * n_small + [(100.0, 0.0, 1.0, 20.0)] * (500 - n_small)
        assert (rules_comm.small_packets(inp(communication=comm(ops)), TH) is not None) is fires


def test_bandwidth_contention() -> None:
    key = "advisorContentionFraction"
    kd = kernels([{"Name": "aclnnMatmul_MatMulV2", "Start Time(us)": 0.0, "Duration(us)": 500.0}])
    for frac, fires in ((fire(key), True), (calm(key), False)):
        bw = frac * DEFAULTS["advisorSdmaBaselineGbps"]
        f = rules_comm.bandwidth_contention(inp(kernels=kd, communication=comm([(50.0, 0.0, 1.0, bw)], start=100.0)), TH)
        assert (f is not None) is fires
    far = comm([(50.0, 0.0, 1.0, 1.0)], start=1e6)  # slow but not overlapping a matmul
    assert rules_comm.bandwidth_contention(inp(kernels=kd, communication=far), TH) is None


def test_retransmission() -> None:
    key = "advisorRetransmissionMs"
    assert rules_comm.retransmission(inp(communication=comm([(0.0, 5.0, fire(key), 1.0)])), TH) is not None
    assert rules_comm.retransmission(inp(communication=comm([(0.0, 5.0, calm(key), 1.0)])), TH) is None


# ------------------------------------------------------------------------------------------- computation

VEC = {"Type": "Add", "Accelerator Core": "AI_VECTOR_CORE"}
CUBE = {"Type": "MatMulV2", "Accelerator Core": "AI_CORE", "Input Shapes": "8192,4096;4096,4608", "Output Shapes": "1,1"}
FA = {"Type": "FlashAttentionScore", "Accelerator Core": "MIX_AIC", "Input Shapes": "1,8,4096,128"}


@pytest.mark.parametrize(("key", "row", "col", "bound"), [
    ("advisorVecRatio", VEC, "aiv_vec_ratio", "vec"), ("advisorVecMte2Ratio", VEC, "aiv_mte2_ratio", "mte2"),
    ("advisorVecMte3Ratio", VEC, "aiv_mte3_ratio", "mte3"), ("advisorCubeMacRatio", CUBE, "aic_mac_ratio", "mac"),
    ("advisorCubeMte2Ratio", CUBE, "aic_mte2_ratio", "mte2"), ("advisorFaMte2Ratio", FA, "aic_mte2_ratio", "mte2"),
    ("advisorFaFixpipeRatio", FA, "aic_fixpipe_ratio", "fixpipe"), ("advisorFaVecRatio", FA, "aiv_vec_ratio", "vec")])
def test_pipeline_bound_per_family(key: str, row: dict[str, object], col: str, bound: str) -> None:
    for value, fires in ((fire(key), True), (calm(key), False)):
        f = rules_compute.aicore_pipeline(inp(kernels=kernels([{**row, col: value}])), TH)
        assert f is not None
        assert (f.rows[0][4] == bound) is fires, f.rows


def test_pipeline_vector_total() -> None:
    key = "advisorVecTotalRatio"
    for value, fires in ((fire(key), True), (calm(key), False)):
        third = value / 3
        kd = kernels([{**VEC, "aiv_vec_ratio": third, "aiv_mte2_ratio": third, "aiv_mte3_ratio": third}])
        f = rules_compute.aicore_pipeline(inp(kernels=kd), TH)
        assert f is not None and (f.rows[0][4] == "vec_mte2_mte3") is fires


def test_pipeline_family_filters() -> None:
    key = "advisorVectorTypeSharePct"
    for share, fires in ((fire(key), True), (calm(key), False)):
        kd = kernels([{**VEC, "Name": "vec", "Duration(us)": share}, {"Name": "other", "Type": "Other", "Accelerator Core": "AI_CORE",
                                                       "Duration(us)": 100.0 - share}])
        assert (rules_compute.aicore_pipeline(inp(kernels=kd), TH) is not None) is fires
    small = {**CUBE, "Input Shapes": "8192,4096;4096,4480"}  # 99 MiB of fp16 tensors: under advisorCubeMemoryMb
    assert rules_compute.aicore_pipeline(inp(kernels=kernels([CUBE])), TH) is not None
    assert rules_compute.aicore_pipeline(inp(kernels=kernels([small])), TH) is None


def test_no_bound() -> None:
    r, t = "advisorNoBoundRatio", "advisorNoBoundMinUs"
    # the finding fires when no ratio reaches the gate: calm(r) fires it, fire(r) (a bound pipeline) does not
    assert rules_compute.no_bound(inp(kernels=kernels([{"aiv_vec_ratio": calm(r), "Duration(us)": fire(t)}])), TH)
    assert rules_compute.no_bound(inp(kernels=kernels([{"aiv_vec_ratio": fire(r), "Duration(us)": fire(t)}])), TH) is None
    assert rules_compute.no_bound(inp(kernels=kernels([{"aiv_vec_ratio": calm(r), "Duration(us)": calm(t)}])), TH) is None
    dynamic = kernels([{"aiv_vec_ratio": calm(r), "Duration(us)": fire(t), "OP State": "dynamic"}])
    assert rules_compute.no_bound(inp(kernels=dynamic), TH) is None  # msprof-analyze's pre-check


def test_block_dim() -> None:
    kd = kernels([{"Accelerator Core": "AI_CORE", "Block Dim": 20, "Duration(us)": 5.0}])
    assert rules_compute.block_dim(inp(kernels=kd, ai_core_num=24), TH) is not None
    assert rules_compute.block_dim(inp(kernels=kernels([{"Accelerator Core": "AI_CORE", "Block Dim": 48}]),
                                       ai_core_num=24), TH) is None
    assert rules_compute.block_dim(inp(kernels=kd), TH) is None  # core count unknown


def test_aicpu() -> None:
    key = "advisorAicpuMinUs"
    row = {"Accelerator Core": "AI_CPU", "Type": "Unique", "Output Data Types": "DOUBLE"}
    f = rules_compute.aicpu(inp(kernels=kernels([{**row, "Duration(us)": fire(key)}])), TH)
    assert f is not None and f.rows[0][4] is True
    assert rules_compute.aicpu(inp(kernels=kernels([{**row, "Duration(us)": calm(key)}])), TH) is None


def test_dynamic_shape() -> None:
    key = "advisorStaticOpsMax"
    n_static = int(fire(key))
    kd = kernels([{"OP State": "dynamic"}] * 3 + [{"OP State": "static"}] * n_static)
    assert rules_compute.dynamic_shape(inp(kernels=kd), TH) is not None
    kd = kernels([{"OP State": "dynamic"}] * 3 + [{"OP State": "static"}] * int(calm(key)))
    assert rules_compute.dynamic_shape(inp(kernels=kd), TH) is None


def test_shape_affinity() -> None:
    off = {**CUBE, "Input Shapes": "8192,4096;4096,4736"}  # 4736 = 18.5 x 256 (a multiple of 128)
    assert rules_compute.shape_affinity(inp(kernels=kernels([off])), TH) is not None
    assert rules_compute.shape_affinity(inp(kernels=kernels([{**CUBE, "Input Shapes": "8192,4096;4096,4608"}])), TH) is None
    assert rules_compute.shape_affinity(inp(kernels=kernels([{**FA, "Input Shapes": "1,8,4096,192"}])), TH) is not None
    assert rules_compute.shape_affinity(inp(kernels=kernels([FA])), TH) is None


# ------------------------------------------------------------------------------------------- schedule

def test_sync_stream_co_occurrence() -> None:
    key = "advisorSyncCoOccurrence"
    for value, fires in ((fire(key), True), (calm(key), False)):
        co = round(value * 200)
        rows = []
        for i in range(200):
            rows.append(("Node@launch", "host", 10.0 * i, 1.0))
            if i < co:
                rows.append(("AscendCL@aclrtSynchronizeStream", "host", 10.0 * i + 2, 1.0))
        assert (rules_schedule.sync_stream(inp(events=events(rows)), TH) is not None) is fires


def test_gc() -> None:
    key = "advisorGcMinUs"
    f = rules_schedule.gc_pauses(inp(events=events([("GC", "host", 0.0, fire(key))])), TH)
    assert f is not None and f.gain is not None
    assert rules_schedule.gc_pauses(inp(events=events([("GC", "host", 0.0, calm(key))])), TH) is None


def test_conjectured_gc_gap_length() -> None:
    key = "advisorGcFreeMinUs"
    acl = ("AscendCL@aclnnAdd", "host", -10.0, 1.0)
    for dur, fires in ((fire(key), True), (calm(key), False)):
        ev_ = events([("Free", "device", 0.0, dur), acl])
        assert (rules_schedule.conjectured_gc(inp(events=ev_), TH) is not None) is fires
    gc_seen = events([("Free", "device", 0.0, fire(key)), acl, ("GC", "host", 5.0, 1.0)])
    assert rules_schedule.conjectured_gc(inp(events=gc_seen), TH) is None  # real GC events: no conjecture


def test_conjectured_gc_host_activity() -> None:
    free = 1e6
    for key in ("advisorGcAclRatePerUs", "advisorGcAclTimeRatio"):
        for value, fires in ((fire(key), True), (calm(key), False)):
            if key == "advisorGcAclRatePerUs":
                acl = [("AscendCL@x", "host", 10.0 + i, 1e-3) for i in range(round(value * free))]
            else:
                acl = [("AscendCL@x", "host", 10.0, value * free)]
            ev_ = events([("Free", "device", 0.0, free), *acl])
            assert (rules_schedule.conjectured_gc(inp(events=ev_), TH) is not None) is fires, (key, value)


def seq_kernels(reps: int, gap: float, tail_us: float = 0.0, mte: float = 0.0) -> pd.DataFrame:
    """``reps`` x (A, B, C) kernels of 1 µs each ``gap`` apart, then an AICPU kernel of ``tail_us`` (stretches the span)."""
    rows, t = [], 0.0
    for _ in range(reps):
        for name in "ABC":
            rows.append({"Name": name, "Start Time(us)": t, "Duration(us)": 1.0, "aicore_time(us)": 1.0,
                         "aiv_mte2_time(us)": mte})
            t += 1.0 + gap
    rows.append({"Name": "tail", "Accelerator Core": "AI_CPU", "Start Time(us)": t, "Duration(us)": tail_us})
    return kernels(rows)


FUSE = TH.with_overrides({"advisorFusibleMaxLen": 3})  # sequences of exactly three kernels


def test_fusible_host_bound_ratio_and_count() -> None:
    key = "advisorFusibleHostRatio"
    for ratio, fires in ((fire(key), True), (calm(key), False)):
        gap = (3 / ratio - 3) / 2  # npu / wall of one A-B-C = 3 / (3 + 2 gap)
        assert (rules_schedule.fusible_sequences(inp(kernels=seq_kernels(8, gap)), FUSE) is not None) is fires
    key = "advisorFusibleCount"
    for n, fires in ((fire(key), True), (calm(key), False)):
        assert (rules_schedule.fusible_sequences(inp(kernels=seq_kernels(int(n), 5.0)), FUSE) is not None) is fires


def test_fusible_duration_and_mte() -> None:
    key = "advisorFusibleDurationRatio"
    wall = 8 * (3 + 2 * 5.0)  # eight host-bound A-B-C, 13 µs each
    for share, fires in ((fire(key), True), (calm(key), False)):
        span_us = wall / share
        kd = seq_kernels(8, 5.0, tail_us=span_us - (8 * 3 * 6.0 - 5.0))
        assert (rules_schedule.fusible_sequences(inp(kernels=kd), FUSE) is not None) is fires, share
    key = "advisorFusibleMteRatio"
    for ratio, fires in ((fire(key), True), (calm(key), False)):
        kd = seq_kernels(8, 0.0, tail_us=1e9, mte=ratio)  # not host bound, negligible share: only MTE can fire it
        assert (rules_schedule.fusible_sequences(inp(kernels=kd), FUSE) is not None) is fires


# ------------------------------------------------------------------------------------------- affinity API

def host(names: list[str], t0: float = 0.0) -> list[tuple[str, str, float, float]]:
    """Synthetic host calls 10 µs apart, 5 µs each."""
    return [(n, "host", t0 + 10.0 * i, 5.0) for i, n in enumerate(names)]


RMS = ["aten::pow", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul"]


def test_affinity_api_fires_on_a_fused_sequence() -> None:
    f = rules_affinity.affinity_api(inp(events=events(host(["aten::empty", *RMS, "aten::to"]))), TH)
    assert f is not None
    assert [r[:4] for r in f.rows] == [("torch_npu.npu_rms_norm", "pow? mean? add? rsqrt mul type_as?", "7.0.0", 1)]
    assert f.rows[0][4] == 45.0 and f.time_us == 45.0  # first call's start to the last one's end


def test_affinity_api_edges() -> None:
    key = "advisorAffinityMinCount"
    assert rules_affinity.affinity_api(inp(events=events(host(RMS * int(fire(key))))), TH) is not None
    calm_th = TH.with_overrides({key: 2})  # one occurrence under a gate of two
    assert rules_affinity.affinity_api(inp(events=events(host(RMS))), calm_th) is None
    broken = ["aten::pow", "aten::mean", "aten::add", "aten::rsqrt", "AscendCL@aclrtSynchronizeStream", "aten::mul"]
    assert rules_affinity.affinity_api(inp(events=events(host(broken))), TH) is None  # a sync call breaks it
    assert rules_affinity.affinity_api(inp(events=events(host(["aten::mul", "aten::rsqrt"]))), TH) is None
    device = [(n, "device", t, d) for n, _, t, d in host(RMS)]
    assert rules_affinity.affinity_api(inp(events=events(device)), TH) is None  # host calls only


def test_affinity_api_optimizer_and_counts() -> None:
    f = rules_affinity.affinity_api(inp(events=events(host(["Optimizer.step#SGD.step"] * 3))), TH)
    assert f is not None and f.rows[0][0] == "torch_npu.optim.NpuFusedSGD" and f.rows[0][3] == 3
    assert rules_affinity.affinity_api(inp(events=events(host(["Optimizer.step#MyOpt.step"]))), TH) is None
    seq = ["aten::permute", "aten::contiguous", "aten::reshape", "aten::view", "aten::transpose"]
    f = rules_affinity.affinity_api(inp(events=events(host(seq))), TH)
    assert f is not None and {r[0] for r in f.rows} == {"torch_npu.npu_confusion_transpose"}
    assert sum(r[3] for r in f.rows) == 2  # permute-contiguous-reshape, then view-transpose (no overlap)


def test_affinity_api_not_evaluated_on_kineto() -> None:
    rep = advise(inp(fmt="kineto", events=events(host(RMS))), TH)
    assert rep.quiet["advisor.affinity-api"].startswith("not evaluated: not an Ascend capture")


# ------------------------------------------------------------------------------------------- AI-Core frequency

def freq_input(drop: float, rated: float | None = 1800.0) -> AdvisorInput:
    """Synthetic: one MatMul call at 0-100 µs under one sample of ``rated · (1 − drop)`` MHz."""
    kd = kernels([{"Name": "MatMul_1", "Accelerator Core": "AI_CORE", "Start Time(us)": 0.0, "Duration(us)": 100.0},
                  {"Name": "Add_1", "Start Time(us)": 200.0, "Duration(us)": 50.0}])
    mhz = 1800.0 * (1.0 - drop)
    freq = pd.DataFrame({"ts_us": [-10.0, 150.0], "mhz": [mhz, 1800.0]})
    return inp(kernels=kd, freq=freq, rated_freq_mhz=rated)


def test_aicore_freq_edges() -> None:
    key = "advisorFreqDropRatio"
    f = rules_freq.aicore_freq(freq_input(fire(key)), TH)
    assert f is not None and f.rows[0][:3] == ("MatMul_1", 1, 100.0)
    assert f.rows[0][3] == pytest.approx(100 * 100 / 150, abs=1e-3) and f.rows[0][4] == pytest.approx(100 * fire(key))
    assert rules_freq.aicore_freq(freq_input(calm(key)), TH) is None
    rep = advise(freq_input(0.5, rated=None), TH)
    assert "rated AI-Core frequency unknown" in rep.quiet["advisor.aicore-freq"]


def test_call_frequency_takes_the_lowest_sample_in_force() -> None:
    ts, mhz = np.array([0.0, 10.0, 20.0]), np.array([1800.0, 1000.0, 1800.0])
    got = rules_freq.call_frequency(np.array([-5.0, 1.0, 5.0, 12.0, 25.0]), np.array([-1.0, 9.0, 15.0, 30.0, 40.0]),
                                    ts, mhz)
    assert np.isnan(got[0]) and got[1:].tolist() == [1800.0, 1000.0, 1000.0, 1800.0]


def test_advise_ranks_by_share_and_reports_quiet_rules() -> None:
    ev_ = events([("GC", "host", 0.0, 60_000.0)])
    rep = advise(inp(events=ev_, env={"HCCL_ALGO": "ring"}), TH)
    assert [f.id for f in rep.findings] == ["advisor.gc", "advisor.env-variables"]
    assert rep.findings[0].severity(TH) == "high"  # 6 % of the 1 s window
    assert rep.quiet["advisor.aicpu"].startswith("not evaluated")
    assert np.isclose(rep.findings[0].share_pct or 0.0, 6.0)


@pytest.mark.parametrize(("share", "level"), [(5.0, "high"), (4.99, "medium"), (3.0, "medium"), (2.99, "low")])
def test_severity_edges(share: float, level: str) -> None:
    ev_ = events([("GC", "host", 0.0, share * 1e4)])
    f = advise(inp(events=ev_), TH).findings[0]
    assert f.severity(TH) == level


def test_compare_findings_resolved_new_persists() -> None:
    from analyzer.compare.findings import finding_changes
    a, b, c = ("a", "overall", "x"), ("b", "decode", "—"), ("c", "prefill", "y")
    rows = {(r["id"], r["phase"], r["subject"]): r for r in finding_changes({a: 2.0, b: None}, {b: None, c: 1.0})}
    assert (rows[a]["verdict"], rows[b]["verdict"], rows[c]["verdict"]) == ("resolved", "persists", "new")


def test_hccl_scan_of_a_hostile_trace_keeps_going() -> None:
    """Synthetic: a list as ``pid``, a string as ``args``, text in ``ts`` (found by tests/fuzz) give rows or none,
    never a TypeError."""
    from analyzer.advisor.inputs import hccl_tasks_from_trace

    trace = [{"ph": "M", "name": "process_name", "pid": [1], "args": {"name": "HCCL"}},
             {"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "HCCL"}},
             {"ph": "X", "name": "Memcpy", "pid": [1], "ts": 1, "dur": 2, "args": {}},
             {"ph": "X", "name": "Memcpy", "pid": 7, "ts": "soon", "dur": 2, "args": "junk"}]
    frame = hccl_tasks_from_trace(trace)
    assert frame["dur_us"].tolist() == [2.0] and frame["ts_us"].tolist() == [0.0]
    assert len(hccl_tasks_from_trace("not a trace")) == 0
