"""Seed §5: actionable recommendations, selected by hypothesis id (never by matching prose).

``priorityScore = priorityPointsPerWeight × priorityWeight<High|Medium|Low>
+ min(priorityScoreCapPoints, priorityScoreFactor × bottleneckScore)
+ min(priorityGainCapPoints, priorityGainFactor × estimatedGainPct)``; the numbers are parameters of
``thresholds_default.yaml`` (value, unit, source, rationale; overridable like every threshold). Advice that depends on a framework version switch is flagged
``needs_version_confirmation`` and worded "confirm the current vLLM-Ascend / torch_npu version supports it
before enabling".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analyzer import gains as g
from analyzer.bottleneck import Verdict
from analyzer.indicators import IndicatorSet
from analyzer.rootcause import Hypothesis
from analyzer.thresholds import Thresholds, default_thresholds

#: the scopes a template may name as its applicable phases (seed §1, §5)
ALL_PHASES: tuple[str, ...] = ("prefill", "decode", "overall")
#: priority -> the parameter holding its weight
PRIORITY_WEIGHT_ID: dict[str, str] = {"high": "priorityWeightHigh", "medium": "priorityWeightMedium",
                                      "low": "priorityWeightLow"}
VERSION_NOTE = "needs version confirmation: confirm the current vLLM-Ascend / torch_npu version supports it before enabling"


def priority_score(priority: str, bottleneck_score: float, gain_pct: float | None,
                   th: Thresholds | None = None) -> float:
    """Seed §5: ``points × w + min(score cap, score factor × score) + min(gain cap, gain factor × gain)``
    (gain 0 when not estimable; the ``priority*`` parameters of ``th``, default ``thresholds_default.yaml``)."""
    th = th or default_thresholds()
    return (th.v("priorityPointsPerWeight") * th.v(PRIORITY_WEIGHT_ID[priority])
            + min(th.v("priorityScoreCapPoints"), th.v("priorityScoreFactor") * bottleneck_score)
            + min(th.v("priorityGainCapPoints"), th.v("priorityGainFactor") * (gain_pct or 0.0)))


@dataclass(frozen=True)
class Template:
    """Library entry of one recommendation."""

    id: str
    title: str
    priority: str
    actions: tuple[tuple[str, str], ...]
    validation: str
    risk: str
    gain_id: str | None
    needs_version_confirmation: bool = False
    phases: tuple[str, ...] = ALL_PHASES


def applies(template: Template, scope: str, phase: str | None) -> bool:
    """Seed §5 "适用阶段": may ``template`` be recommended in ``scope``?

    A phase scope (``prefill`` / ``decode``) takes the templates that list it. The ``overall`` scope takes
    those that list ``overall`` and, when it is read as its dominant phase (seed §1), that phase too.
    """
    if scope != "overall":
        return scope in template.phases
    return "overall" in template.phases and (phase is None or phase in template.phases)


@dataclass(frozen=True)
class Recommendation:
    """One recommendation for one scope."""

    id: str
    title: str
    kind: str
    scopes: tuple[str, ...]
    priority: str
    priority_score: float
    basis: tuple[str, ...]
    actions: tuple[tuple[str, str], ...]
    gain: g.Gain | None
    validation: str
    risk: str
    needs_version_confirmation: bool
    hypotheses: tuple[str, ...]
    #: the template's applicable phases (seed §5 "适用阶段"): prefill / decode / overall
    phases: tuple[str, ...] = ALL_PHASES

    def to_dict(self) -> dict[str, Any]:
        """Plain data (stable keys)."""
        return {
            "id": self.id, "title": self.title, "kind": self.kind, "scopes": list(self.scopes),
            "priority": self.priority, "priority_score": round(self.priority_score, 2), "basis": list(self.basis),
            "actions": [{"kind": k, "text": t} for k, t in self.actions],
            "expected_gain": None if self.gain is None else self.gain.to_dict(),
            "expected_gain_pct": None if self.gain is None else round(self.gain.estimate_pct, 2),
            "validation": self.validation, "risk": self.risk,
            "needs_version_confirmation": self.needs_version_confirmation,
            "version_note": VERSION_NOTE if self.needs_version_confirmation else "",
            "hypotheses": list(self.hypotheses), "applicable_phases": list(self.phases),
        }


T = Template
TEMPLATES: dict[str, Template] = {t.id: t for t in (
    T("host.enable-graph-mode", "Run decode in graph mode (aclgraph / torchair)", "high",
      (("config", "Disable enforce_eager so decode steps replay a captured graph."),
       ("verify", "Re-profile: dispatch ops per step and host-exclusive time per step should drop.")),
      "dispatch_ops_per_step and host_exclusive_per_step_us fall; avg_step_us falls", "Capture memory and warm-up time; dynamic shapes fall back to eager.",
      "graph-mode", True, ("decode", "overall")),
    T("host.remove-sampler-sync", "Remove per-step host synchronisation", "high",
      (("code", "Avoid .item()/tolist()/synchronize in the step loop; keep sampling results on the device or copy asynchronously."),
       ("measure", "Count sync-like ops per step before and after.")),
      "sync_ops_per_step falls; host_exclusive_per_step_us falls", "Changes to sampling code paths; ordering bugs if a value is read too early.",
      "sync-removal"),
    T("host.async-scheduling", "Overlap host-side input preparation with device work", "medium",
      (("config", "Enable asynchronous scheduling / chunked prefill so metadata for step n+1 is prepared during step n."),
       ("verify", "Host-exclusive time per prefill step should fall.")),
      "host_exclusive_per_step_us falls", "More complex scheduling; latency of the first token may change.",
      "chunked-prefill", True, ("prefill", "overall")),
    T("host.reduce-launch-gaps", "Reduce per-kernel launch gaps", "medium",
      (("config", "Use graph mode or fused operators to cut the number of launches per step."),
       ("measure", "Mean idle segment and idle share before and after.")),
      "idle_gap_mean_us and device_idle_pct fall", "As for graph mode.", "graph-mode", True),
    T("compute.chunked-prefill", "Tune chunked prefill", "medium",
      (("config", "Tune max_num_batched_tokens / chunk size against the real prompt-length distribution."),),
      "prefill step time per token falls", "Decode latency interference.", "chunked-prefill", True, ("prefill", "overall")),
    T("compute.quantize", "Quantize weights / activations (W8A8, FP8 where supported)", "medium",
      (("config", "Use a quantized checkpoint supported by the deployment."), ("verify", "Check accuracy on the target task.")),
      "compute_us falls", "Accuracy loss; operator coverage.", "quantization", True),
    T("compute.raise-decode-concurrency", "Raise decode concurrency (larger decode batch)", "high",
      (("config", "Increase max_num_seqs / request concurrency while memory allows."),),
      "throughput per device rises; device_busy_pct rises", "Per-request latency rises; KV memory.", "concurrency", False, ("decode", "overall")),
    T("compute.fuse-small-ops", "Fuse small operators", "medium",
      (("code", "Replace frequent short kernel sequences with fused operators (norm+rotary, add+norm ...)."),),
      "compute_op_count and compute_us fall", "Custom fused ops need maintenance.", "small-op-fusion", True),
    T("comm.overlap", "Overlap communication with compute", "high",
      (("config", "Enable comm-compute overlap (gradient bucketing / MC2 fused matmul-collectives where supported)."),
       ("measure", "Check the collective's wait vs transit time: wait dominated by a slower peer rank is load imbalance, not overlap."),
       ("verify", "comm_overlap_pct rises and comm_exposed_us falls.")),
      "comm_exposed_us falls and comm_overlap_pct rises", "Extra memory for buffers; stream contention.", "comm-overlap", True),
    T("comm.fuse-or-batch", "Batch or fuse small collectives", "medium",
      (("config", "Fuse small all-reduces (larger buckets) or raise the batch so each collective carries more data."),),
      "comm_us_per_step falls", "Latency per request / memory for larger buckets.", "comm-batch", True),
    T("comm.parallel-strategy", "Revisit the parallel strategy", "low",
      (("measure", "Compare TP/PP/DP/EP layouts on the same workload."),),
      "avg_step_us falls", "Requires re-deployment and memory re-planning.", "parallel-strategy"),
    T("comm.find-late-rank", "Find the rank the collectives wait for and remove its delay", "high",
      (("measure", "Analyse every rank together: per-rank wait share, slowest rank, arrival skew of the collectives."),
       ("verify", "comm_wait_pct falls on the waiting ranks and avg_step_us falls.")),
      "comm_wait_pct falls and avg_step_us falls", "None beyond the re-capture.", None),
    T("comm.balance-load", "Balance the work across ranks", "medium",
      (("config", "Balance sequence lengths / micro-batches per data-parallel rank, layers per pipeline stage, expert load."),
       ("verify", "compute per step equal across ranks; comm_wait_pct falls.")),
      "compute spread across ranks and comm_wait_pct fall", "Re-partitioning changes memory per rank.", None),
    T("comm.remove-host-stall", "Remove the host stall before the collective", "medium",
      (("code", "Avoid .item()/synchronize and blocking data loading before the step's collectives; prefetch inputs."),),
      "comm_wait_pct and host_exclusive_pct fall", "Ordering bugs if a value is read too early.", None),
    T("copy.async-d2h", "Make device-to-host copies asynchronous", "high",
      (("code", "Use non_blocking copies into pinned memory and read them one step later."),),
      "d2h_per_step_us and sync_ops_per_step fall", "Ordering: values are available one step later.", "d2h-async"),
    T("copy.keep-resident", "Keep per-step data resident on the device", "medium",
      (("code", "Avoid re-uploading KV / weights / inputs every step; pre-allocate and reuse device buffers."),),
      "h2d_per_step_us falls", "Device memory.", None),
    T("collect.confirm-on-site", "Confirm the mechanism with a targeted capture", "low",
      (("measure", "Capture prefill and decode separately, enable PipeUtilization, keep step_trace_time / communication files (seed §8)."),),
      "not judgeable by a metric", "None.", None),
)}

#: hypothesis id -> recommendation ids (seed §4 → §5).
BY_HYPOTHESIS: dict[str, tuple[str, ...]] = {
    "host.eager-python-per-token": ("host.enable-graph-mode",),
    "host.sampler-sync": ("host.remove-sampler-sync",),
    "host.prefill-metadata": ("host.async-scheduling",),
    "host.launch-gaps": ("host.reduce-launch-gaps",),
    "compute.prefill-attention-quadratic": ("compute.chunked-prefill", "compute.quantize"),
    "compute.decode-memory-bound": ("compute.raise-decode-concurrency", "compute.quantize"),
    "compute.fragmented-small-ops": ("compute.fuse-small-ops",),
    "comm.decode-tp-small-message": ("comm.fuse-or-batch", "comm.parallel-strategy"),
    "comm.prefill-bandwidth": ("comm.overlap", "comm.parallel-strategy"),
    "comm.overlap-disabled": ("comm.overlap",),
    "comm.wait-for-late-rank": ("comm.find-late-rank",),
    "comm.load-imbalance": ("comm.balance-load",),
    "comm.host-stall-before-collective": ("comm.remove-host-stall",),
    "copy.d2h-sync-sampling": ("copy.async-d2h",),
    "copy.h2d-kv-or-weight": ("copy.keep-resident",),
}
GENERIC_RECOMMENDATION = "collect.confirm-on-site"


def recommend(scope: str, verdict: Verdict, hypotheses: tuple[Hypothesis, ...], ind: IndicatorSet,
              phase: str | None = None, th: Thresholds | None = None) -> tuple[Recommendation, ...]:
    """Recommendations for one scope, sorted by priority score (highest first).

    ``phase``: the phase the scope is read as (the dominant phase for ``overall``; None when unknown); a
    template is offered only where :func:`applies` (its applicable phases). ``th``: gain and priority
    parameters (default ``thresholds_default.yaml``).
    """
    out: dict[str, Recommendation] = {}
    for h in hypotheses:
        cand = verdict.candidate(h.kind)
        score = cand.score if cand else 0.0
        for rid in BY_HYPOTHESIS.get(h.id, (GENERIC_RECOMMENDATION,)):
            t = TEMPLATES[rid]
            if not applies(t, scope, phase):
                continue
            if rid in out:
                prev = out[rid]
                out[rid] = Recommendation(**{**prev.__dict__, "hypotheses": (*prev.hypotheses, h.id)})
                continue
            gain = g.derive(t.gain_id, ind, th) if t.gain_id else None
            out[rid] = Recommendation(
                id=rid, title=t.title, kind=h.kind, scopes=(scope,), priority=t.priority,
                priority_score=priority_score(t.priority, score, gain.estimate_pct if gain else None, th),
                basis=h.triggers, actions=t.actions, gain=gain, validation=t.validation, risk=t.risk,
                needs_version_confirmation=t.needs_version_confirmation, hypotheses=(h.id,), phases=t.phases)
    return tuple(sorted(out.values(), key=lambda r: -r.priority_score))
