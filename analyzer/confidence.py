"""Seed §8 "如何提高结论可信度": the five ways to raise confidence, ranked by cost-effectiveness, each
marked as applying (or not) to this capture, with the reason read from the capture itself.

The list is emitted beside the boundary warnings (``RankAnalysis.how_to_raise_confidence``, the
Markdown and HTML "Warnings" section), in the seed's order, so that a reader sees which single step
would remove which uncertainty.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

#: seed §8, in the seed's order (cost-effectiveness, best first): (id, action, what it settles)
STEPS: tuple[tuple[str, str, str], ...] = (
    ("separate-phases", "Capture prefill and decode separately",
     "the only root cure for the uncertainty of the inferred phase split"),
    ("pipe-utilisation", "Enable the AI Core metrics (PipeUtilization)",
     "turns compute-bound / memory-bound / busy-but-idle from a conditional statement into a finding"),
    ("cann-statistics", "Keep op_statistic.csv, operator_details.csv and step_trace_time.csv",
     "cross-checks the accumulated times and the phase indicators against CANN's own tables"),
    ("comm-statistics", "On several cards, keep communication.json and communication_matrix.json",
     "confirms the communication groups, message sizes and the spread over cards"),
    ("controlled-experiment", "Change one variable at a time under the same load (concurrency, chunk size, "
     "parallel strategy)", "turns the estimated gains into measured gains"),
)
CANN_TABLES = ("op_statistic.csv", "operator_details.csv", "step_trace_time.csv")
COMM_FILES = ("communication.json", "communication_matrix.json")


@dataclass(frozen=True)
class CaptureFacts:
    """What the §8 list is judged on, read from one rank's analysis."""

    phase_confidence: str
    phase_override: str | None
    has_pipe_utilisation: bool
    files: Collection[str]
    multi_card: bool
    source_format: str


def _applies(step_id: str, f: CaptureFacts) -> tuple[bool, str]:
    """(applies, reason) for one §8 step."""
    if step_id == "separate-phases":
        if f.phase_override:
            return False, f"the phase was set by the user ({f.phase_override}): the capture is read as one phase"
        if f.phase_confidence == "high":
            return False, "the phase split is labelled (high confidence)"
        return True, f"the phase split has {f.phase_confidence} confidence"
    if step_id == "pipe-utilisation":
        return (False, "MAC/MTE2 ratios are present") if f.has_pipe_utilisation else \
            (True, "MAC/MTE2 utilisation is unavailable")
    if step_id == "cann-statistics":
        if f.source_format != "ascend":
            return False, "not an Ascend capture (the CANN tables do not exist for it)"
        missing = [n for n in CANN_TABLES if n not in f.files]
        return (True, "missing: " + ", ".join(missing)) if missing else (False, "all three tables are present")
    if step_id == "comm-statistics":
        if not f.multi_card:
            return False, "single card"
        if f.source_format != "ascend":
            return False, "not an Ascend capture"
        missing = [n for n in COMM_FILES if n not in f.files]
        return (True, "missing: " + ", ".join(missing)) if missing else (False, "both files are present")
    return True, "every expected gain of this analysis is estimated from one capture, none is measured"


def raise_confidence(facts: CaptureFacts) -> tuple[dict[str, Any], ...]:
    """Seed §8's list in its order: ``{rank, id, action, settles, applies, reason}`` per step."""
    out = []
    for i, (sid, action, settles) in enumerate(STEPS, start=1):
        ok, why = _applies(sid, facts)
        out.append({"rank": i, "id": sid, "action": action, "settles": settles, "applies": ok, "reason": why})
    return tuple(out)


def markdown_lines(steps: Collection[dict[str, Any]]) -> list[str]:
    """The applying steps as a numbered Markdown list (seed order kept)."""
    return [f"{s['rank']}. {s['action']} — {s['settles']} ({s['reason']})" for s in steps if s["applies"]]
