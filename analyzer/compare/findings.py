"""Advisor findings before vs after (``analyzer.advisor``): a finding that disappears after a change is a verdict
of its own (``resolved``), one that appears is ``new``, one on both sides ``persists`` with its share of the
window on each side (percentage points)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RESOLVED, NEW, PERSISTS = "resolved", "new", "persists"


def finding_shares(rank_advisor: Mapping[str, Any] | None) -> dict[str, float | None]:
    """``{finding id: share of the window %}`` of one rank's ``advisor`` payload (empty when absent)."""
    return {f["id"]: f["share_pct"] for f in (rank_advisor or {}).get("findings", [])}


def finding_changes(before: Mapping[str, float | None], after: Mapping[str, float | None]) -> list[dict[str, Any]]:
    """One row per finding id of either side: verdict, share before / after, change in points."""
    rows = []
    for fid in sorted(set(before) | set(after)):
        b, a = before.get(fid), after.get(fid)
        verdict = PERSISTS if fid in before and fid in after else RESOLVED if fid in before else NEW
        change = None if b is None or a is None else round(a - b, 3)
        rows.append({"id": fid, "verdict": verdict, "before_share_pct": b, "after_share_pct": a, "change_pt": change})
    return rows
