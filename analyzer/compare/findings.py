"""Advisor findings before vs after (``analyzer.advisor``), matched by rule, phase and subject: a finding that
disappears after a change is a verdict of its own (``resolved``), one that appears is ``new``, one on both sides
``persists`` with its share of the phase window on each side (percentage points).

The *subject* is what an evidence row names: the value of the rule's subject column (``subjects`` of the finding:
the operator, variable, collective, fused API or sequence); a finding about the capture as a whole (GC pauses,
dynamic shape, synchronize-stream) has the subject ``—``. A phase is ``overall`` or a phase scope of the advisor
payload (``phases``), so a finding gone in ``decode`` but kept in ``prefill`` shows as resolved in ``decode`` only.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

RESOLVED, NEW, PERSISTS = "resolved", "new", "persists"
FindingKey = tuple[str, str, str]
NO_SUBJECT = "—"


def _scopes(rank_advisor: Mapping[str, Any]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    yield str(rank_advisor.get("scope", "overall")), list(rank_advisor.get("findings", []))
    for name, ph in (rank_advisor.get("phases") or {}).items():
        yield str(name), list(ph.get("findings", []))


def finding_shares(rank_advisor: Mapping[str, Any] | None) -> dict[FindingKey, float | None]:
    """``{(finding id, phase, subject): share of the phase window %}`` of one rank's ``advisor`` payload."""
    out: dict[FindingKey, float | None] = {}
    for scope, findings in _scopes(rank_advisor or {}):
        for f in findings:
            subjects = list(f.get("subjects") or []) or [NO_SUBJECT]
            for subject in subjects:
                out[(f["id"], scope, subject)] = f["share_pct"]
    return out


def finding_changes(before: Mapping[FindingKey, float | None],
                    after: Mapping[FindingKey, float | None]) -> list[dict[str, Any]]:
    """One row per (finding, phase, subject) of either side: verdict, share before / after, change in points."""
    rows = []
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        verdict = PERSISTS if key in before and key in after else RESOLVED if key in before else NEW
        change = None if b is None or a is None else round(a - b, 3)
        rows.append({"id": key[0], "phase": key[1], "subject": key[2], "verdict": verdict, "before_share_pct": b,
                     "after_share_pct": a, "change_pt": change})
    return rows
