"""Seed §4: root-cause hypotheses for triggered candidates only.

Each hypothesis has a mechanism, the framework behaviour behind it (vLLM-Ascend / PyTorch), the data that
triggered it (values quoted) and how to confirm it on site. A hypothesis appears only when its candidate is
triggered AND its data condition holds (condition thresholds are ``hyp*`` entries of the threshold file).
A triggered candidate with no matching specific hypothesis gets ``<kind>.generic`` ("confirm on site").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from analyzer.bottleneck import COMMUNICATION, COMPUTE, COPY, HOST, Verdict
from analyzer.indicators import IndicatorSet
from analyzer.phases import DECODE, PREFILL
from analyzer.thresholds import Thresholds, passes

_GENERIC_PREFIX = {HOST: "host", COMPUTE: "compute", COMMUNICATION: "comm", COPY: "copy"}


@dataclass(frozen=True)
class Hypothesis:
    """One root-cause hypothesis selected for a scope."""

    id: str
    kind: str
    mechanism: str
    framework_behaviour: str
    triggers: tuple[str, ...]
    checks: tuple[str, ...]
    generic: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Plain data (stable keys)."""
        return {"id": self.id, "kind": self.kind, "mechanism": self.mechanism,
                "framework_behaviour": self.framework_behaviour, "triggers": list(self.triggers),
                "checks": list(self.checks), "generic": self.generic}


Condition = Callable[[IndicatorSet, Thresholds, "str | None"], "list[str] | None"]


def _all(ind: IndicatorSet, th: Thresholds, pairs: list[tuple[str, str]]) -> list[str] | None:
    """Every (indicator, threshold) pair passes ⇒ the trigger texts; else None."""
    out = []
    for metric, tid in pairs:
        val, t = ind.value(metric), th[tid]
        if not passes(val, t):
            return None
        out.append(f"{metric} = {val:.2f} {ind[metric].unit} ({tid} {t.describe()})")
    return out


def _phase(p: str | None, want: str) -> list[str] | None:
    return [f"scope phase = {want}"] if p == want else None


def _and(*parts: list[str] | None) -> list[str] | None:
    if any(p is None for p in parts):
        return None
    return [x for p in parts if p for x in p]


def _wait_bound(i: IndicatorSet, t: Thresholds) -> list[str] | None:
    """The wait/synchronisation-bound condition with the wait and idle times named (``analyzer.comm_wait``)."""
    if "comm_wait_pct" not in i:
        return None
    hit = _all(i, t, [("comm_wait_pct", "commWaitBoundPct")])
    if hit is None:
        return None
    named = [f"{k} = {i.value(k):.1f} us" for k in ("comm_peer_wait_us", "comm_idle_us", "comm_transfer_us",
                                                      "comm_notify_wait_us") if k in i and i[k].available]
    return hit + named


def _host_stall(i: IndicatorSet, t: Thresholds, p: str | None) -> list[str] | None:
    host = _all(i, t, [("host_exclusive_pct", "hypCommWaitHostExclusivePct")])
    n = i.value("sync_op_count")
    return _and(_wait_bound(i, t), host or ([f"sync_op_count = {n:.0f} host sync ops in the scope"] if n else None))


def _sampler_sync(i: IndicatorSet, t: Thresholds, p: str | None) -> list[str] | None:
    if not i.value("sync_op_count"):
        return None
    return _all(i, t, [("sync_ops_per_step", "hypSyncPerStep")]) or _all(i, t, [("sync_pct_of_wall", "hypSyncPctOfWall")])


def _d2h_sync(i: IndicatorSet, t: Thresholds, p: str | None) -> list[str] | None:
    hit = _all(i, t, [("d2h_per_step_us", "hypD2hPerStepUs")])
    if hit:
        return hit
    n = i.value("sync_op_count")
    return [f"sync_op_count = {n:.0f} sync-like ops present"] if n else None


@dataclass(frozen=True)
class HypothesisSpec:
    """Library entry: text plus the data condition (``select``)."""

    id: str
    kind: str
    mechanism: str
    framework_behaviour: str
    checks: tuple[str, ...]
    select: Condition


LIBRARY: tuple[HypothesisSpec, ...] = (
    HypothesisSpec(
        "host.eager-python-per-token", HOST,
        "Each decode token runs the model op by op from Python; per-op dispatch cost is paid every step while the device waits.",
        "vLLM-Ascend in eager mode (enforce_eager=True or aclgraph disabled) dispatches every ATen/aclnn op per step.",
        ("Check enforce_eager / graph-mode settings of the deployment.", "Compare dispatch ops per step against the model's op count."),
        lambda i, t, p: _and(_phase(p, DECODE), _all(i, t, [("dispatch_ops_per_step", "hypEagerDispatchPerStep"),
                                                             ("device_busy_pct", "hypEagerDeviceBusyMax")]))),
    HypothesisSpec(
        "host.sampler-sync", HOST,
        "Synchronising calls (.item(), tolist, stream synchronize) block the host until the device drains, serialising host and device.",
        "Sampling / logits processing and metric logging call .item() or copy results to the host each step.",
        ("Look up the call stacks of aten::item / aclrtSynchronize* events.", "Check sampling parameters and logging hooks."),
        _sampler_sync),
    HypothesisSpec(
        "host.prefill-metadata", HOST,
        "Preparing attention metadata and inputs for long prompts runs on the host before the device can start.",
        "vLLM builds block tables, slot mappings and positions in Python for every prefill batch.",
        ("Inspect the host time before the first device kernel of each prefill step.",),
        lambda i, t, p: _and(_phase(p, PREFILL), _all(i, t, [("host_exclusive_pct", "hypPrefillHostExclusivePct"),
                                                              ("dispatch_ops_per_step", "hypPrefillDispatchPerStep")]))),
    HypothesisSpec(
        "host.launch-gaps", HOST,
        "Repeated device idle segments between kernels: the host does not enqueue work fast enough.",
        "Per-op launches, task-queue back-pressure or Python overhead between ops.",
        ("Look at the idle segments in the timeline and the host events inside them.",),
        lambda i, t, p: _all(i, t, [("idle_gap_count", "hypLaunchGapCount"), ("idle_gap_mean_us", "hypLaunchGapMeanUs"),
                                    ("device_idle_pct", "hypLaunchGapIdlePct")])),
    HypothesisSpec(
        "compute.prefill-attention-quadratic", COMPUTE,
        "Attention cost grows quadratically with prompt length and dominates prefill compute.",
        "Prefill runs FlashAttention / fused-infer-attention over the full prompt.",
        ("Rank kernels by total time in prefill steps; check attention share and sequence lengths.",),
        lambda i, t, p: _and(_phase(p, PREFILL), _all(i, t, [("compute_pct", "hypPrefillComputeSharePct")]),
                             [f"attention_op_count = {i.value('attention_op_count'):.0f}"] if i.value("attention_op_count") else None)),
    HypothesisSpec(
        "compute.decode-memory-bound", COMPUTE,
        "Decode reads all weights and the KV cache for few tokens: HBM bandwidth, not the cube unit, limits it.",
        "Small decode batches make matmuls GEMV-like (low MAC, high MTE2).",
        ("Check aic_mte2_ratio vs aic_mac_ratio of the top decode kernels.", "Try larger decode batch / concurrency."),
        lambda i, t, p: _and(_phase(p, DECODE), _all(i, t, [("device_busy_pct", "hypDecodeDeviceBusyPct"),
                                                             ("mac_ratio", "hypDecodeMacMax"),
                                                             ("mte2_ratio", "hypDecodeMte2Min")]))),
    HypothesisSpec(
        "compute.fragmented-small-ops", COMPUTE,
        "Many short kernels: fixed per-kernel overhead and poor pipelining dominate.",
        "Unfused elementwise / norm / rotary ops in eager execution.",
        ("List the most frequent short kernels; look for fusible sequences.",),
        lambda i, t, p: _all(i, t, [("device_busy_pct", "hypFragmentedDeviceBusyPct"),
                                    ("compute_pct", "hypFragmentedComputeSharePct"),
                                    ("compute_op_median_us", "hypFragmentedMedianOpUs")])),
    HypothesisSpec(
        "comm.decode-tp-small-message", COMMUNICATION,
        "Tensor-parallel all-reduces of decode activations are tiny: each pays HCCL's fixed latency.",
        "Every decoder layer issues TP collectives per token.",
        ("Check collective sizes and counts per step; compare with the TP degree.",),
        lambda i, t, p: _and(_phase(p, DECODE), _all(i, t, [("comm_pct_of_device", "hypDecodeCommSharePct"),
                                                             ("comm_duration_median_us", "hypDecodeCommMedianUs")]))),
    HypothesisSpec(
        "comm.prefill-bandwidth", COMMUNICATION,
        "Prefill moves large activations between devices; interconnect bandwidth limits it.",
        "Long prompts make TP/SP collectives megabytes in size.",
        ("Check communication.json bandwidth per link against the link's peak.",),
        lambda i, t, p: _and(_phase(p, PREFILL), _all(i, t, [("comm_pct_of_device", "hypPrefillCommSharePct"),
                                                              ("comm_message_median_mb", "hypPrefillCommMessageMb")]))),
    HypothesisSpec(
        "comm.overlap-disabled", COMMUNICATION,
        "Communication runs after compute instead of alongside it, so it sits on the critical path (or waits for a slower rank).",
        "Gradient / activation collectives are not overlapped (no bucketing or comm-compute fusion), or ranks arrive late.",
        ("Check whether collectives run on a separate stream concurrently with compute.",
         "Compare the collective's wait time (communication.json Wait Time) with its transit time: a long wait means a slow peer rank."),
        lambda i, t, p: _all(i, t, [("comm_pct_of_device", "hypOverlapDisabledCommSharePct"),
                                    ("comm_overlap_pct", "hypOverlapDisabledOverlapPct")])),
    HypothesisSpec(
        "comm.wait-for-late-rank", COMMUNICATION,
        "The collectives spend most of their time waiting for a peer that reaches them later: a slow or late rank sets the pace.",
        "A collective completes only when every rank of its group has arrived; the early ranks' kernels (HCCL notify wait, NCCL spin) run until then.",
        ("Analyse all ranks together (the parent folder / a cluster_analysis_output): the rank with the least wait is the one the others wait for.",
         "Check that rank's node: a slower device, throttling, a slower link or a slower input pipeline."),
        lambda i, t, p: _wait_bound(i, t)),
    HypothesisSpec(
        "comm.load-imbalance", COMMUNICATION,
        "The ranks do unequal work before the collective, so the faster ones wait for the slowest.",
        "Uneven sequence lengths or micro-batches per data-parallel rank, unbalanced pipeline stages, unbalanced expert routing.",
        ("Compare compute per step across ranks (cluster view) and the tokens / layers / experts each rank holds.",),
        lambda i, t, p: _wait_bound(i, t)),
    HypothesisSpec(
        "comm.host-stall-before-collective", COMMUNICATION,
        "A host stall (synchronisation, data loading, Python work) delays the launch of the collective on some rank, and the others wait for it.",
        "The step's collectives are issued from the host; a blocking .item() / synchronize or a slow data loader before them delays the whole group.",
        ("Look at the host events just before each collective's launch on the late rank.",),
        _host_stall),
    HypothesisSpec(
        "copy.d2h-sync-sampling", COPY,
        "Results are copied to the host synchronously each step (sampling, logits, metrics).",
        "Sampler / logging code calls .item(), .cpu() or tolist on device tensors.",
        ("Find the D2H copies and the host calls that precede them.",),
        _d2h_sync),
    HypothesisSpec(
        "copy.h2d-kv-or-weight", COPY,
        "Something (KV blocks, weights, inputs) is uploaded to the device every step.",
        "KV offload / swap, weight offload, or inputs rebuilt on the host each step.",
        ("Check the H2D copy sizes per step and what issues them.",),
        lambda i, t, p: _all(i, t, [("h2d_per_step_us", "hypH2dPerStepUs")])),
)


def infer(verdict: Verdict, ind: IndicatorSet, th: Thresholds, phase: str | None) -> tuple[Hypothesis, ...]:
    """Hypotheses for the triggered candidates of one scope (``phase``: the scope's phase, or None)."""
    out: list[Hypothesis] = []
    for cand in verdict.candidates:
        if not cand.triggered:
            continue
        found = []
        for spec in LIBRARY:
            if spec.kind != cand.kind:
                continue
            trig = spec.select(ind, th, phase)
            if trig:
                found.append(Hypothesis(spec.id, spec.kind, spec.mechanism, spec.framework_behaviour,
                                        tuple(trig), spec.checks))
        if not found:
            prefix = _GENERIC_PREFIX[cand.kind]
            found.append(Hypothesis(
                f"{prefix}.generic", cand.kind,
                f"The {cand.label} is supported by the evidence, but no specific mechanism in the library matches the data.",
                "Needs on-site confirmation.",
                tuple(f"{e.metric} = {e.value:.2f} {e.unit}" for e in cand.evidence if e.passed),
                ("Confirm on site with a targeted capture (seed §8).",), generic=True))
        out.extend(found)
    return tuple(out)
