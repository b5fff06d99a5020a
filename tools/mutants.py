"""The targeted mutants of ``tools/mutation.py``: seed formulas, analyzer weights and gain factors,
harness assertion bands. Each is an exact substitution in the code as it is now; when the code moves,
the mutation run reports the mutant as stale and this list is updated with it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    """One deliberate breakage and the tests that must notice it."""

    id: str
    group: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    why: str


P1 = ("tests/estimator/test_seed_p1.py",)
P4 = ("tests/estimator/test_seed_p4.py", "tests/estimator/test_perf_seed_configs.py", "tests/estimator/test_ablation.py")
PERF = ("tests/estimator/test_perf_seed_configs.py",)
SCORES = ("tests/analyzer/test_bottleneck.py", "tests/analyzer/test_report.py")
GAINS = ("tests/analyzer/test_gains.py", "tests/analyzer/test_compare_wiring.py")
MERGE = ("tests/analyzer/test_merge_phases_confidence.py",)
COMPARE = ("tests/analyzer/test_compare_rules.py", "tests/analyzer/test_compare_real.py",
           "tests/analyzer/test_compare_wiring.py")
BANDS = ("tests/harness/test_assertions.py",)
RECOMMEND = ("tests/analyzer/test_recommend.py",)
KINDS = ("tests/harness/test_kinds.py",)

_STAGE = "estimator/memory/stage.py"
_ASSEMBLY = "estimator/perf/assembly.py"
_GAINS = "analyzer/gains.py"
_ROWWISE = "ndval/harness/assertions/rowwise.py"
_CORR = "ndval/harness/assertions/correlation.py"
_STATS = "ndval/core/stats.py"

_SEED: tuple[Mutant, ...] = (
    Mutant("p1-safety-buffer-not-over-tp", "seed-formula", "estimator/inputs/runtime_buffer.py",
           "return safety_mb / (tp if tp_scaled else 1)", "return safety_mb", P1,
           "seed §4.1.1: effective safety buffer = safety_buffer_mb / tp"),
    Mutant("p1-overhead-not-over-tp", "seed-formula", "estimator/inputs/runtime_buffer.py",
           "return overhead_mb / tp", "return overhead_mb", P1,
           "seed §4.1.2: TP-shardable overhead / tp"),
    Mutant("p1-terms-on-every-stage", "seed-formula", _STAGE,
           "stage_runtime_buffers_mb(dynamic > 0,", "stage_runtime_buffers_mb(True,", P1,
           "seed P1: terms only on stages with dynamic memory"),
    Mutant("p1-extra-term-in-other", "seed-formula", _STAGE,
           '"other": fixed.other_mb,',
           '"other": fixed.other_mb + 1.0,',
           P1, "seed P1-05: no term beyond activations, comm buffers and backward overhead"),
    Mutant("dummy-wgrads-per-layer", "estimator-memory", "estimator/memory/framework.py",
           "total = total + where(seen, 0.0, rows * cols * width)", "total = total + rows * cols * width",
           ("tests/estimator/test_framework_memory.py",),
           "TE caches one dummy weight gradient per distinct (shape, dtype), not one per layer"),
    Mutant("dummy-wgrads-per-layer-scalar", "estimator-memory", "estimator/memory/framework.py",
           "if shape not in seen_shapes:", "if shape not in ():",
           ("tests/estimator/test_framework_memory.py",),
           "TE caches one dummy weight gradient per distinct (shape, dtype), not one per layer (one config)"),
    Mutant("memory-warns-late", "seed-formula", "estimator/memory/__init__.py",
           "if peak > hbm_mb:", "if peak > 1.001 * hbm_mb:", ("tests/estimator/test_memory.py",),
           "a peak above device memory is warned about"),
    Mutant("p1-what-if-no-legacy-buffer", "seed-formula", "estimator/inputs/runtime_buffer.py",
           "tp_scaled=True) - legacy_safety_mb)", "tp_scaled=True))", KINDS,
           "seed P1 what-if: the reference's flat 1 GiB buffer is removed"),
    Mutant("p4-ep-left-in-bytes", "seed-formula", "estimator/perf/context.py",
           'keep_bytes = ctx.score or (dim == "ep" and not o.convert_ep_comm_to_time)',
           'keep_bytes = ctx.score or (dim == "ep" and o.convert_ep_comm_to_time)', P4,
           "seed P4: EP comm converted to seconds when convert_ep_comm_to_time"),
    Mutant("p4-a2a-wire-bytes-no-ep-factor", "seed-formula", "estimator/perf/comm.py",
           'factor = 2.0 * (n - 1) / n if c.kind == "all_reduce" else (n - 1) / n',
           'factor = 2.0 * (n - 1) / n if c.kind == "all_reduce" else 1.0', P4,
           "seed P4-05: all-to-all wire bytes (ep−1)/ep"),
    Mutant("net-a2a-one-peer", "seed-formula", "estimator/perf/network.py",
           'total += peers * chunk / effective_bytes_per_s(lvl, "all_to_all") + peers * latency_us * S_PER_US',
           'total += chunk / effective_bytes_per_s(lvl, "all_to_all") + peers * latency_us * S_PER_US', P4,
           "all-to-all: S/n to each of the n−1 peers"),
    Mutant("net-a2a-no-latency", "seed-formula", "estimator/perf/network.py",
           'total += peers * chunk / effective_bytes_per_s(lvl, "all_to_all") + peers * latency_us * S_PER_US',
           'total += peers * chunk / effective_bytes_per_s(lvl, "all_to_all")', P4,
           "all-to-all: one latency per peer"),
    Mutant("pipe-1f1b-no-warmup", "seed-formula", "estimator/perf/pipeline.py",
           "return sum(stage_s) + (num_micro_batches - 1) * max_of(stage_s)",
           "return num_micro_batches * max_of(stage_s)", PERF,
           "reference §3.4: 1F1B = Σ s_i + (m − 1)·max s_i"),
    Mutant("pipe-ep-overlap-half", "seed-formula", "estimator/perf/pipeline.py",
           "return stage_s - ratio * ep_comm_s", "return stage_s - 0.5 * ratio * ep_comm_s", PERF,
           "seed P3: s' = s − ratio·ep_comm"),
    Mutant("pipe-ep-hidden-ignores-ratio", "seed-formula", "estimator/perf/stage.py",
           "self.ep_comm * (1.0 - ratio)", "self.ep_comm * (1.0 - 0.5 * ratio)", PERF,
           "seed P3 with the host bound: hidden EP = ratio·ep_comm"),
    Mutant("real-pp-wait-no-pp-comm", "seed-formula", _ASSEMBLY,
           '"PP_WAIT": perf["BUBBLE"] + perf["PP_COMM"],', '"PP_WAIT": perf["BUBBLE"],', PERF,
           "seed §2.3: PP_WAIT = BUBBLE + PP_COMM"),
    Mutant("mfu-two-flops-per-fw", "seed-formula", _ASSEMBLY,
           "sum(3.0 * s.fw_flops for s in stages)", "sum(2.0 * s.fw_flops for s in stages)", PERF,
           "model FLOPs = 3 × forward (fw + 2 × bw)"),
    Mutant("tokens-without-dp", "seed-formula", _ASSEMBLY,
           "tokens = m * cfg.train.micro_batch_size * cfg.train.seq_length * p.dp",
           "tokens = m * cfg.train.micro_batch_size * cfg.train.seq_length", PERF,
           "tokens per step = m·b·s·dp"),
)

_THRESHOLDS_YAML = "analyzer/thresholds_default.yaml"


def _yaml_value(param: str, old: float, new: float) -> tuple[str, str]:
    """The ``old`` -> ``new`` substitution of one entry's value in the thresholds file (its one home)."""
    return f"  {param}:\n    value: {old:g}\n", f"  {param}:\n    value: {new:g}\n"


#: seed §2 score weights: parameter id -> (candidate, value in thresholds_default.yaml)
_WEIGHTS: dict[str, tuple[str, float]] = {
    "weightHostPrimary": ("host", 45.0), "weightHostSupport": ("host", 35.0), "weightHostBusy": ("host", 20.0),
    "weightComputeBusy": ("compute", 55.0), "weightComputeCommLow": ("compute", 25.0),
    "weightComputeBound": ("compute", 20.0), "weightMemoryBound": ("compute", 12.0),
    "weightCommShare": ("comm", 55.0), "weightCommLatency": ("comm", 20.0), "weightCommBandwidth": ("comm", 15.0),
    "weightCommOverlap": ("comm", 15.0),
    "weightCopyShare": ("copy", 45.0), "weightCopySync": ("copy", 12.0), "weightCopyH2d": ("copy", 10.0),
}


def _kebab(camel: str) -> str:
    return "".join(f"-{c.lower()}" if c.isupper() else c for c in camel).lstrip("-")


def _weight_mutants() -> tuple[Mutant, ...]:
    """Each seed §2 weight lowered by 10 % (one at a time), in the thresholds file."""
    out = []
    for param, (kind, v) in _WEIGHTS.items():
        old, new = _yaml_value(param, v, round(v * 0.9, 2))
        out.append(Mutant(f"weight-{_kebab(param.removeprefix('weight'))}", "analyzer-weight", _THRESHOLDS_YAML,
                          old, new, SCORES, f"seed §2 {kind} weight {v:g} -> {round(v * 0.9, 2):g}"))
    return tuple(out)


def _param(mid: str, group: str, param: str, old: float, new: float, tests: tuple[str, ...], why: str) -> Mutant:
    """A mutant changing one parameter's value in the thresholds file."""
    return Mutant(mid, group, _THRESHOLDS_YAML, *_yaml_value(param, old, new), tests, why)


_ANALYZER: tuple[Mutant, ...] = (
    Mutant("severity-floor", "analyzer-weight", "analyzer/thresholds.py",
           "return 0.5 + 0.5 * clamp01(dist / max(1e-9, span))", "return 0.4 + 0.6 * clamp01(dist / max(1e-9, span))",
           SCORES, "seed §2: severity = 0.5 + 0.5 × clamp01(...)"),
    Mutant("trigger-score-35", "analyzer-weight", "analyzer/thresholds_default.yaml",
           "  triggerScore:\n    value: 40\n", "  triggerScore:\n    value: 35\n", (*SCORES, "tests/analyzer/test_thresholds.py"),
           "seed §2: trigger score 40"),
    _param("gain-graph-mode-factor", "analyzer-gain", "gainGraphModeFactor", 0.75, 0.7, GAINS, "seed §6.1 graph mode 0.75"),
    _param("gain-graph-mode-cap", "analyzer-gain", "gainGraphModeCap", 0.8, 0.9, GAINS, "seed §6.1 graph mode cap 0.8"),
    _param("gain-sync-factor", "analyzer-gain", "gainSyncRemovalFactor", 0.8, 0.7, GAINS, "seed §6.1 sync removal 0.8"),
    _param("gain-comm-overlap-factor", "analyzer-gain", "gainCommOverlapFactor", 0.6, 0.5, GAINS,
           "seed §6.1 comm overlap 0.6"),
    _param("gain-comm-batch-factor", "analyzer-gain", "gainCommBatchFactor", 0.7, 0.6, GAINS, "seed §6.1 comm batch 0.7"),
    _param("gain-d2h-factor", "analyzer-gain", "gainD2hAsyncFactor", 0.7, 0.6, GAINS, "seed §6.1 D2H async 0.7"),
    _param("gain-concurrency-bonus", "analyzer-gain", "gainConcurrencyBonusPct", 15, 10, GAINS,
           "seed §6.1 concurrency +15 %"),
    _param("gain-concurrency-cap", "analyzer-gain", "gainConcurrencyCapPct", 60, 70, GAINS, "seed §6.1 concurrency cap 60 %"),
    _param("gain-low-fraction", "analyzer-gain", "gainLowFraction", 0.6, 0.5, GAINS, "seed §6.1 interval 60 %-100 %"),
    _param("gain-empirical-quantization-low", "analyzer-gain", "empiricalQuantizationLowPct", 20, 15, GAINS,
           "seed §6.2 quantization 20 %-45 %"),
    Mutant("gain-combined-no-cap", "analyzer-gain", _GAINS,
           "return CombinedGain(lows, min(cap_pct, est), cap_pct", "return CombinedGain(lows, est, cap_pct", GAINS,
           "seed §6.3 optimistic = min(70 %, Σ estimates)"),
    _param("priority-weight-term", "analyzer-gain", "priorityPointsPerWeight", 20, 15, RECOMMEND,
           "seed §5 priorityScore 20 × weight"),
    _param("priority-weight-high", "analyzer-gain", "priorityWeightHigh", 3, 2.5, RECOMMEND, "seed §5 high weight 3"),
    _param("priority-score-cap", "analyzer-gain", "priorityScoreCapPoints", 40, 30, RECOMMEND,
           "seed §5 min(40, 0.4 × score)"),
    _param("priority-gain-factor", "analyzer-gain", "priorityGainFactor", 0.4, 0.3, RECOMMEND,
           "seed §5 min(20, 0.4 × gain)"),
    _param("verdict-gain-factor", "analyzer-gain", "compareVerdictGainFactor", 0.5, 0.4, COMPARE,
           "seed §7.2 threshold = gain × 0.5"),
    _param("verdict-floor", "analyzer-gain", "compareVerdictFloorPct", 1, 2, COMPARE, "seed §7.2 threshold floor 1 %"),
    _param("compare-unchanged-band", "analyzer-gain", "compareUnchangedPct", 1, 2, COMPARE, "seed §7.1 unchanged < 1 %"),
    _param("compare-step-count-tol", "analyzer-gain", "compareStepCountTolPct", 15, 20, COMPARE,
           "seed §7.3 step counts > 15 %"),
    _param("compare-phase-mix-tol", "analyzer-gain", "comparePhaseMixTolPt", 10, 15, COMPARE, "seed §7.3 phase mix > 10 pt"),
    _param("compare-window-tol", "analyzer-gain", "compareWindowTolPct", 20, 25, COMPARE, "seed §7.3 window > 20 %"),
    _param("compare-top-operators", "analyzer-gain", "compareTopOperators", 8, 7, COMPARE, "seed §7.4 top 8 operators"),
    Mutant("verdict-primary-is-last-target", "analyzer-gain", "analyzer/compare/verdicts.py",
           "        if primary is None and imp is not None:\n", "        if imp is not None:\n", COMPARE,
           "seed §7.2: observed = improvement of the primary (first available) target metric"),
    Mutant("cluster-spread-max-minus-min", "analyzer-gain", "analyzer/cluster.py",
           "100.0 * (float(values.max()) - mean) / mean", "100.0 * (float(values.max()) - float(values.min())) / mean",
           ("tests/analyzer/test_analysis_real.py",), "cluster spread = (max − mean) / mean"),
    Mutant("flops-no-factor-two", "analyzer-gain", "analyzer/flops.py",
           "return 2.0 * math.prod(out) * k_a", "return math.prod(out) * k_a", ("tests/analyzer/test_flops.py",),
           "seed §9: matmul FLOPs = 2·M·N·K"),
    Mutant("flops-peak-ignored", "analyzer-gain", "analyzer/flops.py",
           "100.0 * tflops / peak_tflops", "100.0 * tflops / 320.0", ("tests/analyzer/test_flops.py",),
           "seed §9: utilisation against the configured peakTflops"),
    Mutant("calibrate-fits-the-holdout", "seed-formula", "estimator/experiments/calibrate.py",
           "eff = fit_efficiency(estimate, fit_idx, meas[fit_idx].tolist())",
           "eff = fit_efficiency(estimate, hold_idx, meas[hold_idx].tolist())",
           KINDS, "calibration fits on the fit half only"),
    Mutant("merge-first-scope-only", "analyzer-merge", "analyzer/analysis.py",
           '"scopes": tuple(where[r.id])', '"scopes": tuple(where[r.id][:1])', MERGE,
           "seed §1: list every scope a merged recommendation applies to"),
    Mutant("merge-keeps-first-not-most-evidence", "analyzer-merge", "analyzer/analysis.py",
           "if r.id not in best or len(r.basis) > len(best[r.id].basis):", "if r.id not in best:", MERGE,
           "seed §1: keep the recommendation with the most evidence"),
    Mutant("phases-not-filtered", "analyzer-merge", "analyzer/recommend.py",
           "            if not applies(t, scope, phase):\n                continue\n", "", MERGE,
           "seed §5: templates apply only in their phases"),
)

ADVISOR = ("tests/analyzer/test_advisor_rules.py",)
#: advisor gates: id -> (value in thresholds_default.yaml, relation); each mutant moves the gate 5 x the test's
#: DELTA (1 % of the value; 1 for counts) towards the calm side, so the edge case that fired must stop firing.
_ADVISOR_GATES: dict[str, tuple[float, str]] = {
    "advisorAclnnCacheLimit": (10000, "<"), "advisorHostCacheCapacity": (0, "<="), "advisorAlignmentMinBytes": (512, ">"),
    "advisorSmallSdmaMb": (16, "<"), "advisorSmallRdmaMb": (1, "<"), "advisorSmallPacketRatio": (0.2, ">"),
    "advisorContentionFraction": (0.8, "<"), "advisorRetransmissionMs": (4000, ">"), "advisorCubeMacRatio": (0.8, ">="),
    "advisorCubeMte2Ratio": (0.95, ">="), "advisorFaMte2Ratio": (0.8, ">="), "advisorFaFixpipeRatio": (0.75, ">="),
    "advisorFaVecRatio": (0.75, ">="), "advisorVecTotalRatio": (0.9, ">="), "advisorVecRatio": (0.7, ">="),
    "advisorVecMte2Ratio": (0.7, ">="), "advisorVecMte3Ratio": (0.7, ">="), "advisorVectorTypeSharePct": (1, ">="),
    "advisorCubeMemoryMb": (100, ">="), "advisorNoBoundRatio": (0.8, ">"), "advisorNoBoundMinUs": (20, ">"),
    "advisorAicpuMinUs": (20, ">="), "advisorStaticOpsMax": (0, "<="), "advisorSyncCoOccurrence": (0.5, ">"),
    "advisorGcMinUs": (1000, ">="), "advisorGcFreeMinUs": (200000, ">"), "advisorGcAclRatePerUs": (0.0001, "<"),
    "advisorGcAclTimeRatio": (0.01, "<"), "advisorFusibleHostRatio": (0.4, "<"), "advisorFusibleMteRatio": (0.8, ">"),
    "advisorFusibleDurationRatio": (0.01, ">"), "advisorFusibleCount": (5, ">"),
    "advisorHighSharePct": (5, ">="), "advisorMediumSharePct": (3, ">="),
    "advisorAffinityMinCount": (1, ">="), "advisorFreqDropRatio": (0.05, ">="),
}
_ADVISOR_COUNTS = ("advisorFusibleCount", "advisorStaticOpsMax", "advisorHostCacheCapacity", "advisorAffinityMinCount")
#: advisor constants that are not gates: id -> (value, mutated value).
_ADVISOR_PARAMS: dict[str, tuple[float, float]] = {
    "advisorAlignmentBytes": (512, 256), "advisorSdmaBaselineGbps": (18, 17), "advisorCubeAxisMultiple": (256, 128),
    "advisorFaAxisMultiple": (128, 64), "advisorLogLevelError": (3, 2), "advisorBlockDimMinUs": (0, 10),
}


def _advisor_mutants() -> tuple[Mutant, ...]:
    """Each advisor gate moved towards the side its synthetic calm case sits on; each constant changed."""
    out = []
    for param, (v, rel) in _ADVISOR_GATES.items():
        d = 1.0 if param in _ADVISOR_COUNTS else (abs(v) * 0.01 if v else 0.5)
        new = round(v + 5 * d if rel.startswith(">") else v - 5 * d, 10)
        out.append(_param(f"advisor-{_kebab(param.removeprefix('advisor'))}", "analyzer-advisor", param, v, new, ADVISOR,
                          f"msprof-analyze default {v:g} ({rel}) -> {new:g}"))
    for param, (v, new) in _ADVISOR_PARAMS.items():
        out.append(_param(f"advisor-{_kebab(param.removeprefix('advisor'))}", "analyzer-advisor", param, v, new, ADVISOR,
                          f"msprof-analyze constant {v:g} -> {new:g}"))
    return (*out, *_ADVISOR_SCOPE)


#: the phase scoping of the advisor (analyzer/advisor/scope.py): a phase must read only its own rows.
_ADVISOR_SCOPE = (
    Mutant("advisor-phase-events-unscoped", "analyzer-advisor", "analyzer/advisor/scope.py",
           "events = inp.events[_mask(inp.events[\"ts_us\"].to_numpy(), windows)] if len(inp.events) else inp.events",
           "events = inp.events", ("tests/analyzer/test_advisor_phases.py",), "a phase reads the events starting in it"),
    Mutant("advisor-phase-kernels-unscoped", "analyzer-advisor", "analyzer/advisor/scope.py",
           "kernels = _frame(inp.kernels, \"Start Time(us)\", 0.0, windows) if kernels_placeable else None",
           "kernels = inp.kernels if kernels_placeable else None", ("tests/analyzer/test_advisor_phases.py",),
           "a phase reads the kernel rows starting in it"),
)


_BANDS: tuple[Mutant, ...] = (
    Mutant("band-ratio-widened", "assertion-band", _ROWWISE,
           "return self.lo <= value <= self.hi,", "return self.lo - 0.005 <= value <= self.hi + 0.005,", BANDS,
           "ratio_within: [lo, hi] exactly"),
    Mutant("band-ratio-no-upper", "assertion-band", _ROWWISE,
           "return self.lo <= value <= self.hi,", "return self.lo <= value,", BANDS, "ratio_within: upper edge"),
    Mutant("band-error-signed", "assertion-band", _ROWWISE,
           "return abs(value) <= self.max, self.max - abs(value)", "return value <= self.max, self.max - abs(value)",
           BANDS, "rel_error_le: |error|, not the signed error"),
    Mutant("band-error-widened", "assertion-band", _ROWWISE,
           "return abs(value) <= self.max, self.max - abs(value)",
           "return abs(value) <= self.max * 1.01, self.max - abs(value)", BANDS, "rel_error_le: max exactly"),
    Mutant("band-magnitude-widened", "assertion-band", _ROWWISE,
           "return value <= self.factor, self.factor - value", "return value <= self.factor * 1.01, self.factor - value",
           BANDS, "magnitude_within: factor exactly"),
    Mutant("band-mape-widened", "assertion-band", _ROWWISE,
           "passed=mape <= self.max, stats=stats,", "passed=mape <= self.max * 1.01, stats=stats,", BANDS,
           "mape_le: max exactly"),
    Mutant("band-share-widened", "assertion-band", "ndval/harness/assertions/shape.py",
           "ok = not math.isnan(share) and share <= self.max", "ok = not math.isnan(share) and share <= self.max + 0.005",
           BANDS, "share_le: seed §7 90 % exactly"),
    Mutant("band-score-widened", "assertion-band", "ndval/harness/assertions/values.py",
           "passed=self.lo <= got <= self.hi,", "passed=self.lo - 0.005 <= got <= self.hi + 0.005,", BANDS,
           "score_between: [lo, hi] exactly"),
    Mutant("band-corr-inclusive", "assertion-band", _CORR,
           "return r >= self.min if self.inclusive else r > self.min",
           "return r >= self.min", BANDS, "correlation: '>' unless inclusive"),
    Mutant("band-pearson-is-spearman", "assertion-band", _STATS,
           "        res = st.pearsonr(xs, ys)\n", "        res = st.pearsonr(st.rankdata(xs), st.rankdata(ys))\n", BANDS,
           "pearson_r_gt computes Pearson's r, not a rank correlation"),
    Mutant("band-fisher-dof", "assertion-band", _STATS,
           "half = z * se_scale / math.sqrt(n - 3)", "half = z * se_scale / math.sqrt(n - 2)", BANDS,
           "Fisher z interval: se = 1/sqrt(n − 3)"),
    Mutant("band-p-value-dof", "assertion-band", _STATS,
           "return float(2 * st.t.sf(abs(t), n - 2))", "return float(2 * st.t.sf(abs(t), n - 1))", BANDS,
           "recorded r p-value: t with n − 2 dof"),
)

MUTANTS: tuple[Mutant, ...] = _SEED + _weight_mutants() + _ANALYZER + _advisor_mutants() + _BANDS
