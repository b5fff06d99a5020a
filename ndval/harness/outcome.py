"""The per-item outcome and waiver rules, as pure functions (no pytest): testable on plain records.

Rules (docs/harness.md, "waivers"):

- a waiver excuses a failing, evaluable assertion it covers (``waiver.assertions`` None = all);
  under ``--strict-waivers`` it excuses nothing;
- a waiver on a case whose every assertion passes is *stale*: a note, and a failure under
  ``--strict-waivers``;
- status: ``error`` when an assertion could not be evaluated (broken input), else ``failed`` when an
  unwaived assertion fails, else ``waived`` when a waiver excused one, else ``not_evaluable`` when
  every assertion is not evaluable because its data rows lack a value the estimate needs (not
  broken input: the rows are listed, ``ndval.harness.summary.not_evaluable_rows``), else ``passed``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from ndval.harness.results import AssertionResult

Status = Literal["passed", "failed", "waived", "error", "not_evaluable"]


class WaiverLike(Protocol):
    """What the rules read of a case waiver (``ndval.harness.cases.Waiver``)."""

    @property
    def issue(self) -> str: ...

    @property
    def assertions(self) -> list[str] | None: ...


@dataclass(frozen=True)
class Outcome:
    status: Status
    failed: list[AssertionResult] = field(default_factory=list)
    waived: list[AssertionResult] = field(default_factory=list)
    stale: bool = False
    gaps: list[AssertionResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def fails(self) -> bool:
        """True when the item fails (an unwaived failure, or a stale waiver under strict waivers)."""
        return self.status == "failed"


def apply_waiver(results: Sequence[AssertionResult], waiver: WaiverLike | None, strict: bool) -> None:
    """Mark the failing, evaluable results the waiver covers as waived (none under ``strict``)."""
    if waiver is None or strict:
        return
    for res in results:
        if not res.passed and res.evaluable and (waiver.assertions is None or res.id in waiver.assertions):
            res.waived = True


def decide(results: Sequence[AssertionResult], broken: Sequence[str], waiver: WaiverLike | None,
           strict: bool) -> Outcome:
    """The outcome of one item from its (already waiver-marked) results and broken-input messages."""
    failed = [r for r in results if not r.passed and not r.waived and (r.evaluable or broken)]
    gaps = [r for r in results if not r.evaluable and not broken]
    waived = [r for r in results if r.waived]
    stale = waiver is not None and not any(not r.passed for r in results)
    notes = [f"waiver ({waiver.issue}) no longer needed: every criterion passes"] if stale and waiver else []
    status: Status
    if broken:
        status = "error"
    elif failed or (stale and strict):
        status = "failed"
    elif waived:
        status = "waived"
    elif gaps and len(gaps) == len(results):
        status = "not_evaluable"
    else:
        status = "passed"
    return Outcome(status, failed, waived, stale, notes=notes, gaps=gaps)
