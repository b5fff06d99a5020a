"""Operator-level advice beside the bottleneck verdict: msprof-analyze's advisor rules as data.

Each rule is a table entry (:class:`analyzer.advisor.finding.Rule`: inputs, threshold ids, source, recommendation,
verification, risk, phases) plus one small function ``(AdvisorInput, Thresholds) -> Finding | None``; the numbers
are ``advisor*`` entries of ``thresholds_default.yaml`` (value, unit, rationale, source file of msprof-analyze).
Rule modules: :mod:`.rules_env` (environment variables), :mod:`.rules_comm` (byte alignment, small packets,
bandwidth contention, retransmission), :mod:`.rules_compute` (pipeline bound per operator family, no bound,
block dim, AICPU, dynamic shape, shape affinity), :mod:`.rules_schedule` (synchronize-stream co-occurrence, GC,
conjectured GC, fusible sequences).

:func:`advise` runs every rule on one rank over the overall window (the kernel table and the trace of the whole
capture, as msprof-analyze does) and returns an :class:`AdvisorReport`: the findings ranked by share of the window
(:func:`analyzer.advisor.finding.rank_findings`), and for every rule that did not fire whether it was evaluated
or why not. Each finding lists the phases it applies to (the rule's ``phases``). The findings never enter the
seed's four-kind bottleneck scoring.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from analyzer import hta_breakdowns
from analyzer.advisor import rules_comm, rules_compute, rules_env, rules_schedule
from analyzer.advisor.finding import Finding, Rule, rank_findings, with_share
from analyzer.advisor.inputs import (
    AdvisorInput,
    core_counts,
    env_variables,
    kernels_from_db,
    read_hccl_tasks,
    read_hccl_tasks_db,
)
from analyzer.thresholds import Thresholds

RuleFn = Callable[[AdvisorInput, Thresholds], "Finding | None"]
RULES: tuple[tuple[Rule, RuleFn], ...] = (*rules_env.RULES, *rules_comm.RULES, *rules_compute.RULES,
                                          *rules_schedule.RULES)

__all__ = ["RULES", "AdvisorInput", "AdvisorReport", "Finding", "Rule", "advise", "attach", "build_input",
           "missing_input"]


@dataclass(frozen=True)
class AdvisorReport:
    """The findings of one rank (ranked) and, per rule without a finding, ``"evaluated"`` or why not."""

    findings: tuple[Finding, ...]
    quiet: dict[str, str]
    window_us: float | None

    def to_dict(self, th: Thresholds) -> dict[str, Any]:
        """Plain data (stable keys)."""
        return {"findings": [f.to_dict(th) for f in self.findings], "window_us": self.window_us,
                "rules_without_finding": dict(sorted(self.quiet.items())),
                "ranking": "share of the window: high >= advisorHighSharePct, medium >= advisorMediumSharePct "
                           "(msprof-analyze base_analyzer.py get_priority_by_time_ratio); no time: by expected gain"}


def missing_input(rule: Rule, inp: AdvisorInput) -> str | None:
    """Why ``rule`` cannot be evaluated on ``inp`` (None when its inputs are there)."""
    kd = inp.kernels
    needs: dict[str, tuple[bool, str]] = {
        "environment": (inp.env is not None, "no profiler_metadata.json ENV_VARIABLES"),
        "advisor.comm-byte-alignment": (inp.hccl_tasks is not None, inp.notes.get("hccl", "no HCCL task detail")),
        "communication": (inp.communication is not None, "no communication.json"),
        "advisor.block-dim": (inp.ai_core_num is not None and kd is not None,
                              "core count unknown (no ai_core_num in the capture's device info)"),
        "computation": (kd is not None, "no kernel_details.csv"),
        "advisor.aicore-pipeline": (kd is not None and "aiv_vec_ratio" in kd.columns,
                                    "kernel_details.csv has no PipeUtilization ratios"),
        "advisor.fusible-sequences": (kd is not None, "no kernel_details.csv"),
        "schedule": (not inp.events.empty, "no trace events"),
    }
    ok, why = needs.get(rule.id) or needs.get(rule.category) or (True, "")  # a rule's own entry overrides its category's
    return None if ok else why


def build_input(rank: Any, fmt: str, window_us: float | None, th: Thresholds) -> AdvisorInput:
    """:class:`AdvisorInput` of an ``analyzer.dataset.RankData`` (its screened events)."""
    db = next((p for name, p in sorted(rank.files.items()) if name.startswith("ascend_pytorch_profiler")), None)
    if fmt != "ascend":
        hccl, why = None, "Kineto trace: no HCCL tasks"
    elif rank.files.get("trace_view.json") is None and db is not None:
        hccl, why = read_hccl_tasks_db(db)
    else:
        hccl, why = read_hccl_tasks(rank.files.get("trace_view.json"), th)
    ai_core, aiv = core_counts(rank.meta)
    kernels = rank.tables.get("kernel_details")
    if kernels is None and db is not None:
        kernels, _ = kernels_from_db(db, rank.base_ts_us)
    inp = AdvisorInput(rank=rank.rank, fmt=fmt, events=rank.events, window_us=window_us, base_ts_us=rank.base_ts_us,
                       kernels=kernels, env=env_variables(rank.meta), hccl_tasks=hccl,
                       communication=rank.communication, ai_core_num=ai_core, aiv_num=aiv)
    if why:
        inp.notes["hccl"] = why
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


def attach(ra: Any, rank: Any, th: Thresholds, fmt: str, scope: str) -> Any:
    """The hook of ``analyzer.analysis``: ``ra`` (a ``RankAnalysis``) with ``advisor`` (the findings of ``rank`` over
    the ``scope`` window, as plain data) and, for Kineto traces, ``hta_breakdowns`` set."""
    overall = ra.scopes[scope]
    report = advise(build_input(rank, fmt, overall.indicators.value("wall_us"), th), th)
    payload = {**report.to_dict(th), "scope": scope, "phase": overall.phase,
               "scope_note": "rules read the whole capture's kernel table and trace (as msprof-analyze does); each "
                             "finding lists the phases its rule applies to"}
    hta = hta_breakdowns.breakdowns(rank.events, th) if fmt == "kineto" else None
    return replace(ra, advisor=payload, hta_breakdowns=hta)
