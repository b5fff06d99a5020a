"""Operator-level advice beside the bottleneck verdict: msprof-analyze's advisor rules as data.

Each rule is a table entry (:class:`analyzer.advisor.finding.Rule`: inputs, threshold ids, source, recommendation,
verification, risk, phases) plus one small function ``(AdvisorInput, Thresholds) -> Finding | None``; the numbers
are ``advisor*`` entries of ``thresholds_default.yaml`` (value, unit, rationale, source file of msprof-analyze).
Rule modules: :mod:`.rules_env` (environment variables), :mod:`.rules_comm` (byte alignment, small packets,
bandwidth contention, retransmission), :mod:`.rules_compute` (pipeline bound per operator family, no bound,
block dim, AICPU, dynamic shape, shape affinity), :mod:`.rules_schedule` (synchronize-stream co-occurrence, GC,
conjectured GC, fusible sequences),
:mod:`.rules_freq` (AI-Core frequency drop), :mod:`.rules_affinity` (affinity-API replacement, patterns in
:mod:`.affinity_table`).

:func:`advise` runs every rule on one scope's inputs and returns an :class:`AdvisorReport`: the findings ranked by
share of the scope's window (:func:`analyzer.advisor.finding.rank_findings`), and for every rule that did not fire
whether it was evaluated or why not. :func:`attach` runs it over the overall scope (the whole capture's kernel
table and trace, as msprof-analyze does) and over every phase scope of the rank (the rows starting in that phase's
windows, :mod:`.scope`), each ranked by share of its own window. The findings never enter the seed's four-kind
bottleneck scoring.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from analyzer import hta_breakdowns
from analyzer.advisor import rules_affinity, rules_comm, rules_compute, rules_env, rules_freq, rules_schedule
from analyzer.advisor.finding import Finding, Rule, rank_findings, with_share
from analyzer.advisor.inputs import (
    AdvisorInput,
    core_counts,
    device_info,
    env_variables,
    freq_from_db,
    kernels_from_db,
    rated_frequency,
    read_hccl_tasks,
    read_hccl_tasks_db,
)
from analyzer.advisor.scope import relevant_events, scoped
from analyzer.thresholds import Thresholds

RuleFn = Callable[[AdvisorInput, Thresholds], "Finding | None"]
RULES: tuple[tuple[Rule, RuleFn], ...] = (*rules_env.RULES, *rules_comm.RULES, *rules_compute.RULES,
                                          *rules_freq.RULES, *rules_schedule.RULES, *rules_affinity.RULES)

__all__ = ["RULES", "AdvisorInput", "AdvisorReport", "Finding", "Rule", "advise", "attach", "build_input",
           "missing_input"]


@dataclass(frozen=True)
class AdvisorReport:
    """The findings of one rank (ranked) and, per rule without a finding, ``"evaluated"`` or why not."""

    findings: tuple[Finding, ...]
    quiet: dict[str, str]
    window_us: float | None

    def to_dict(self, th: Thresholds, scope: str = "overall") -> dict[str, Any]:
        """Plain data (stable keys); every finding names ``scope``."""
        return {"findings": [{**f.to_dict(th), "scope": scope} for f in self.findings], "window_us": None if self.window_us is None else round(self.window_us, 3),
                "rules_without_finding": dict(sorted(self.quiet.items())),
                "ranking": "share of the window: high >= advisorHighSharePct, medium >= advisorMediumSharePct "
                           "(msprof-analyze base_analyzer.py get_priority_by_time_ratio); no time: by expected gain"}


def _freq_missing(inp: AdvisorInput) -> str:
    if inp.kernels is None:
        return inp.notes.get("kernels", "no kernel_details.csv")
    if inp.freq is None:
        return inp.notes.get("freq", "no AI Core Freq samples (trace_view.json counter / DB AICORE_FREQ)")
    return "rated AI-Core frequency unknown (no aic_frequency in the capture's device info, info.json.* DeviceInfo)"


def missing_input(rule: Rule, inp: AdvisorInput) -> str | None:
    """Why ``rule`` cannot be evaluated on ``inp`` (None when its inputs are there); a phase scope's notes
    (:mod:`analyzer.advisor.scope`) say which input the phase's windows hold none of."""
    kd, nk = inp.kernels, inp.notes.get("kernels", "no kernel_details.csv")
    needs: dict[str, tuple[bool, str]] = {
        "environment": (inp.env is not None, inp.notes.get("env", "no profiler_metadata.json ENV_VARIABLES")),
        "advisor.comm-byte-alignment": (inp.hccl_tasks is not None, inp.notes.get("hccl", "no HCCL task detail")),
        "communication": (inp.communication is not None, inp.notes.get("communication", "no communication.json")),
        "advisor.block-dim": (inp.ai_core_num is not None and kd is not None,
                              nk if kd is None else "core count unknown (no ai_core_num in the capture's device info)"),
        "computation": (kd is not None, nk),
        "advisor.aicore-pipeline": (kd is not None and "aiv_vec_ratio" in kd.columns,
                                    nk if kd is None else "kernel_details.csv has no PipeUtilization ratios"),
        "advisor.aicore-freq": (kd is not None and inp.freq is not None and inp.rated_freq_mhz is not None,
                                _freq_missing(inp)),
        "advisor.fusible-sequences": (kd is not None, nk),
        "advisor.affinity-api": (inp.fmt == "ascend" and "events" not in inp.notes,
                                 inp.notes.get("events", "") if inp.fmt == "ascend" else
                                 "not an Ascend capture: the fused APIs are torch_npu's"),
        "schedule": ("events" not in inp.notes, inp.notes.get("events", "no trace events")),
    }
    ok, why = needs.get(rule.id) or needs.get(rule.category) or (True, "")  # a rule's own entry overrides its category's
    return None if ok else why


def build_input(rank: Any, fmt: str, window_us: float | None, th: Thresholds) -> AdvisorInput:
    """:class:`AdvisorInput` of an ``analyzer.dataset.RankData`` (its screened events)."""
    db = next((p for name, p in sorted(rank.files.items()) if name.startswith("ascend_pytorch_profiler")), None)
    freq = None
    if fmt != "ascend":
        hccl, why = None, "Kineto trace: no HCCL tasks"
    elif rank.files.get("trace_view.json") is None and db is not None:
        (hccl, why), freq = read_hccl_tasks_db(db), freq_from_db(db, rank.base_ts_us)
    else:
        hccl, why, freq = read_hccl_tasks(rank.files.get("trace_view.json"), th, rank.base_ts_us)
    meta = {**rank.meta, "device_info": rank.meta.get("device_info") or device_info(rank.path)}
    ai_core, aiv = core_counts(meta)
    kernels = rank.tables.get("kernel_details")
    if kernels is None and db is not None:
        kernels, _ = kernels_from_db(db, rank.base_ts_us)
    inp = AdvisorInput(rank=rank.rank, fmt=fmt, events=relevant_events(rank.events, host_api=fmt == "ascend"),
                       window_us=window_us, base_ts_us=rank.base_ts_us, kernels=kernels, env=env_variables(rank.meta), hccl_tasks=hccl,
                       communication=rank.communication, ai_core_num=ai_core, aiv_num=aiv, freq=freq,
                       rated_freq_mhz=rated_frequency(meta))
    if why:
        inp.notes["hccl"] = why
    if rank.events.empty:
        inp.notes["events"] = "no trace events"
    return inp


def advise(inp: AdvisorInput, th: Thresholds) -> AdvisorReport:
    """Every rule of :data:`RULES` on ``inp``; shares of ``inp.window_us``."""
    found: list[Finding] = []
    quiet: dict[str, str] = {}
    for rule, fn in RULES:
        why = missing_input(rule, inp)
        if why:
            quiet[rule.id] = f"not evaluated: {why}"
            continue
        f = fn(inp, th)
        if f is None:
            quiet[rule.id] = "evaluated: no finding"
        else:
            found.append(with_share(f, inp.window_us))
    return AdvisorReport(tuple(rank_findings(found)), quiet, inp.window_us)


SCOPE_NOTE = ("overall: the whole capture's kernel table and trace (as msprof-analyze reads them), shares of the "
              "overall window; phases: the rows starting inside each phase's windows (analyzer.advisor.scope), "
              "shares of that phase's wall time")


def attach(ra: Any, rank: Any, th: Thresholds, fmt: str, scope: str) -> Any:
    """The hook of ``analyzer.analysis``: ``ra`` (a ``RankAnalysis``) with ``advisor`` (the findings of ``rank`` over
    the ``scope`` window and, in ``phases``, over every other scope of ``ra``, as plain data) and, for Kineto
    traces, ``hta_breakdowns`` set."""
    overall = ra.scopes[scope]
    inp = build_input(rank, fmt, overall.indicators.value("wall_us"), th)
    report = advise(inp, th)
    placeable = not rank.events.empty
    per_phase = {}
    for name, sc in ra.scopes.items():
        if name == scope:
            continue
        rep = advise(scoped(inp, name, sc.windows, sc.indicators.value("wall_us"), placeable), th)
        per_phase[name] = {**rep.to_dict(th, name), "windows": len(sc.windows)}
    payload = {**report.to_dict(th, scope), "scope": scope, "phase": overall.phase, "phases": per_phase,
               "scope_note": SCOPE_NOTE}
    hta = hta_breakdowns.breakdowns(rank.events, th) if fmt == "kineto" else None
    return replace(ra, advisor=payload, hta_breakdowns=hta)
