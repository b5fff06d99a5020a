"""Communication rules: byte alignment, small packets, bandwidth contention, retransmission.

Sources (msprof-analyze 26.2.0, ``msprof_analyze/advisor/``): ``analyzer/communication/alignment/
byte_alignment_checker.py`` + ``rules/en/byte_alignment.yaml``; ``analyzer/communication/packet/packet_checker.py``
+ ``rules/en/packet.yaml``; ``analyzer/communication/contention/bandwidth_contention_checker.py`` +
``rules/en/bandwidth_contention.yaml``; ``analyzer/communication/retransmission/
communication_retransmission_checker.py`` + ``rules/en/rdma_analysis.yaml``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from analyzer.advisor.finding import Finding, Rule
from analyzer.advisor.inputs import AdvisorInput
from analyzer.thresholds import Thresholds, passes

_SRC = "msprof-analyze 26.2.0 advisor/"
ALIGNMENT = Rule(
    "advisor.comm-byte-alignment", "SDMA data not aligned", "communication",
    ("trace_view.json HCCL process: Memcpy / Reduce_Inline tasks, args size(Byte), transport type, link type",),
    ("advisorAlignmentBytes", "advisorAlignmentMinBytes"),
    _SRC + "analyzer/communication/alignment/byte_alignment_checker.py, rules/en/byte_alignment.yaml",
    "Pad or bucket the communicated tensors so every SDMA transfer is a multiple of 512 B (e.g. gradient bucket "
    "sizes, hidden sizes that are multiples of 256 elements in fp16/bf16)",
    "Re-capture: the listed collectives have no unaligned SDMA task and their SDMA bandwidth rises",
    "Padding adds bytes and memory; changing bucket sizes changes overlap with compute", subject="op")
PACKETS = Rule(
    "advisor.comm-small-packets", "Many small communication packets", "communication",
    ("communication.json: Communication Bandwidth Info SDMA / RDMA Transit Size(MB), Transit Time(ms)",),
    ("advisorSmallSdmaMb", "advisorSmallRdmaMb", "advisorSmallPacketRatio"),
    _SRC + "analyzer/communication/packet/packet_checker.py, rules/en/packet.yaml",
    "Fewer, larger collectives: larger batch or gradient accumulation in data parallelism, ZeRO-1/2 instead of "
    "ZeRO-3 when memory allows, fused (affinity) optimizers that bucket gradients",
    "Re-capture: the share of collectives under the size limit drops below the ratio; communication time per step falls",
    "Larger buckets delay the first collective (less overlap); ZeRO-2 needs more memory", subject="transport")
CONTENTION = Rule(
    "advisor.comm-bandwidth-contention", "SDMA bandwidth low while matmuls run", "communication",
    ("communication.json: Start Timestamp(us), Elapse Time(ms), SDMA Bandwidth(GB/s)",
     "kernel_details.csv: Name, Start Time(us), Duration(us) of MatMul kernels"),
    ("advisorSdmaBaselineGbps", "advisorContentionFraction"),
    _SRC + "analyzer/communication/contention/bandwidth_contention_checker.py, rules/en/bandwidth_contention.yaml",
    "Compare a capture with communication/compute overlap turned off (or with different stream priorities) to "
    "decide whether the overlap gain exceeds the bandwidth lost to contention",
    "The listed collectives' SDMA bandwidth rises above the limit, or the step gets faster without the overlap",
    "Removing overlap exposes communication time; judge on step time, not on bandwidth", subject="op")
RETRANSMISSION = Rule(
    "advisor.comm-retransmission", "RDMA retransmission suspected", "communication",
    ("communication.json: Elapse Time(ms), RDMA Transit Time(ms), Transit Size(MB), group of each op",),
    ("advisorRetransmissionMs",),
    _SRC + "analyzer/communication/retransmission/communication_retransmission_checker.py, rules/en/rdma_analysis.yaml",
    "Check the RDMA transit time of the listed ops, then the switch and NIC configuration (PFC, DSCP/TC, SL)",
    "Re-capture: no RDMA transfer of the listed groups takes longer than the limit",
    "Network changes affect every job on the fabric; change them with the cluster administrators", subject="group")


def _gbps(size_bytes: float, dur_us: float) -> float:
    """Bandwidth in GB/s (10^9 B/s, msprof-analyze's COMMUNICATION_B_TO_GB): bytes / µs / 1000."""
    return 0.0 if dur_us <= 0 else size_bytes / dur_us / 1000.0


def byte_alignment(inp: AdvisorInput, th: Thresholds) -> Finding | None:
    """SDMA tasks off-chip larger than ``advisorAlignmentMinBytes`` whose size is not a multiple of
    ``advisorAlignmentBytes``; evidence per collective: checked bytes, duration, unaligned duration, GB/s."""
    t = inp.hccl_tasks
    if t is None or t.empty:
        return None
    copies = t["task"].astype(str).str.startswith(("Memcpy", "Reduce"))  # the tasks HcclDetailDataset keeps
    checked = t[copies & (t["transport"] == "SDMA") & (t["link"] != "ON_CHIP")
                & passes_mask(t["size_bytes"].to_numpy(), th, "advisorAlignmentMinBytes")]
    if checked.empty:
        return None
    bad = (checked["size_bytes"].to_numpy() % th.v("advisorAlignmentBytes")) != 0
    checked = checked.assign(bad_us=np.where(bad, checked["dur_us"].to_numpy(), 0.0), bad=bad)
    g = checked.groupby("op", sort=False).agg(size_b=("size_bytes", "sum"), dur=("dur_us", "sum"),
                                                bad_us=("bad_us", "sum"), n_bad=("bad", "sum"))
    g = g[g["n_bad"] > 0]
    if g.empty:
        return None
    rows = tuple((op, int(r.size_b), float(r.dur), float(r.bad_us), round(_gbps(float(r.size_b), float(r.dur)), 4))
                 for op, r in g.iterrows())
    return Finding(ALIGNMENT, f"{len(rows)} collective(s) move SDMA data that is not a multiple of "
                   f"{th.v('advisorAlignmentBytes'):g} B", ("op", "size_bytes", "dur_us", "unaligned_us", "bandwidth_gbps"),
                   rows, float(g["bad_us"].sum()))


def passes_mask(values: np.ndarray, th: Thresholds, key: str) -> np.ndarray:
    """Element-wise :func:`analyzer.thresholds.passes` of ``values`` against threshold ``key``."""
    rule = th[key]
    ops = {">=": np.greater_equal, ">": np.greater, "<=": np.less_equal, "<": np.less}
    return np.asarray(ops[rule.relation](values.astype("float64"), rule.value), dtype=bool)


def comm_ops(communication: dict[str, Any] | None) -> Iterator[tuple[str, str, str, dict[str, Any], dict[str, Any]]]:
    """``(step, op, group, time info, bandwidth info)`` per op of ``communication.json`` (``Total Op Info`` skipped)."""
    for step, kinds in (communication or {}).items():
        for ops in (kinds or {}).values() if isinstance(kinds, dict) else ():
            for name, op in (ops or {}).items() if isinstance(ops, dict) else ():
                if name == "Total Op Info" or not isinstance(op, dict):
                    continue
                op_name, _, group = str(name).partition("@")
                yield (str(step), op_name, group, op.get("Communication Time Info") or {},
                       op.get("Communication Bandwidth Info") or {})


def small_packets(inp: AdvisorInput, th: Thresholds) -> Finding | None:
    """Per transport (SDMA, RDMA): ops with transit data under the size limit; fires when their share of the
    ops with any transit data exceeds ``advisorSmallPacketRatio`` (packet_checker.py ``Statistic``)."""
    rows, time_us = [], 0.0
    for transport, key in (("SDMA", "advisorSmallSdmaMb"), ("RDMA", "advisorSmallRdmaMb")):
        sizes = [(float(b.get(transport, {}).get("Transit Size(MB)", 0) or 0),
                  float(b.get(transport, {}).get("Transit Time(ms)", 0) or 0)) for *_, b in comm_ops(inp.communication)]
        sizes = [s for s in sizes if s[0] > 0]
        small = [s for s in sizes if passes(s[0], th[key])]
        if not sizes or not small:
            continue
        ratio = len(small) / len(sizes)
        if passes(ratio, th["advisorSmallPacketRatio"]):
            small_us = 1000.0 * sum(s[1] for s in small)
            rows.append((transport, len(sizes), len(small), round(ratio, 4), small_us))
            time_us += small_us
    if not rows:
        return None
    return Finding(PACKETS, "; ".join(f"{r[0]}: {r[2]} of {r[1]} collectives under the size limit" for r in rows),
                   ("transport", "ops", "small_ops", "small_ratio", "small_transit_us"), tuple(rows), time_us)


def _matmul_spans(inp: AdvisorInput) -> np.ndarray:
    kd = inp.kernels
    if kd is None or not {"Name", "Start Time(us)", "Duration(us)"} <= set(kd.columns):
        return np.empty((0, 2))
    mm = kd[kd["Name"].astype(str).str.lower().str.contains("matmul")]
    start = mm["Start Time(us)"].to_numpy(dtype="float64") + inp.base_ts_us
    return np.column_stack([start, start + mm["Duration(us)"].to_numpy(dtype="float64")])


def bandwidth_contention(inp: AdvisorInput, th: Thresholds) -> Finding | None:
    """SDMA collectives overlapping a MatMul kernel whose SDMA bandwidth is under
    ``advisorContentionFraction × advisorSdmaBaselineGbps``."""
    spans = _matmul_spans(inp)
    if not len(spans):
        return None
    limit = th.v("advisorContentionFraction") * th.v("advisorSdmaBaselineGbps")
    rows = []
    for _, op, _, t, b in comm_ops(inp.communication):
        sdma = b.get("SDMA") or {}
        if not float(sdma.get("Transit Size(MB)", 0) or 0):
            continue
        ts = float(t.get("Start Timestamp(us)", 0) or 0)
        dur_us = 1000.0 * float(t.get("Elapse Time(ms)", 0) or 0)
        bw = float(sdma.get("Bandwidth(GB/s)", 0) or 0)
        overlaps = bool(((spans[:, 0] <= ts + dur_us) & (spans[:, 1] >= ts)).any())
        if overlaps and bw < limit:
            rows.append((op, dur_us, bw))
    if not rows:
        return None
    rows.sort(key=lambda r: r[2])
    return Finding(CONTENTION, f"{len(rows)} SDMA collective(s) under {limit:g} GB/s while a MatMul runs",
                   ("op", "elapse_us", "sdma_bandwidth_gbps"), tuple(rows), sum(r[1] for r in rows))


def retransmission(inp: AdvisorInput, th: Thresholds) -> Finding | None:
    """Ops whose elapse and RDMA transit time both exceed ``advisorRetransmissionMs`` (a long elapse alone is
    rank skew, not retransmission)."""
    rows = []
    for step, op, group, t, b in comm_ops(inp.communication):
        rdma = b.get("RDMA") or {}
        transit_ms = float(rdma.get("Transit Time(ms)", 0) or 0)
        elapse_ms = float(t.get("Elapse Time(ms)", 0) or 0)
        if passes(elapse_ms, th["advisorRetransmissionMs"]) and passes(transit_ms, th["advisorRetransmissionMs"]):
            rows.append((step, group, op, float(rdma.get("Transit Size(MB)", 0) or 0), transit_ms))
    if not rows:
        return None
    groups = sorted({r[1] for r in rows})
    return Finding(RETRANSMISSION, f"RDMA transfers over the limit in {len(groups)} group(s)",
                   ("step", "group", "op", "rdma_mb", "rdma_transit_ms"), tuple(rows), 1000.0 * sum(r[4] for r in rows))


RULES = ((ALIGNMENT, byte_alignment), (PACKETS, small_packets), (CONTENTION, bandwidth_contention),
         (RETRANSMISSION, retransmission))
