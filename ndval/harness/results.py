"""Records passed between kinds, assertions, the plugin and the reports (builtins only when serialised).

``RunResult`` is what a kind returns (a table of rows plus named values and a golden payload);
``AssertionResult`` is what every assertion returns: the same record feeds the failure text,
Allure, ``summary.json`` and the sign-off report.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

#: rows of evidence kept per assertion in the summary (the full table is an attachment)
MAX_EVIDENCE_ROWS = 200

#: whose numbers a result holds: computed in this run by the subject under test, or recorded from another tool
EVALUATED = "evaluated"
RECORDED = "recorded"


def to_builtin(value: Any) -> Any:
    """Cast numpy scalars/arrays, tuples, sets and NaN into JSON/execnet-safe builtins."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return None if math.isnan(value) else float(value)
    if isinstance(value, dict):
        return {str(k): to_builtin(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return [to_builtin(v) for v in items]
    if hasattr(value, "tolist"):
        return to_builtin(value.tolist())
    if hasattr(value, "item"):
        return to_builtin(value.item())
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


@dataclass
class RunResult:
    """What a kind produced for one case (or matrix point).

    ``table``: one row per configuration / data row (estimate and measured columns side by side);
    ``values``: named scalars or lists (verdicts, scores, recorded facts);
    ``golden``: the payload compared with the golden file (``None`` = kind has none);
    ``plots``: (x column, y column, label column) triples worth plotting as estimate vs measured.
    """

    table: list[dict[str, Any]] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    golden: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    #: ``EVALUATED`` (the subject computed the numbers in this run) or ``RECORDED`` (another tool's numbers)
    provenance: str = EVALUATED
    #: who produced the numbers: the subject under test (e.g. ``ndval``) or the recorded tool's name
    producer: str = "ndval"


@dataclass
class AssertionResult:
    """The structured outcome of one assertion (spec §2)."""

    type: str
    id: str
    target: str
    observed: Any
    expected: str
    margin: float | None
    passed: bool
    message: str
    criterion: str | None = None
    severity: str | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    waived: bool = False
    evaluable: bool = True
    #: whose number was judged (``EVALUATED`` now by ``producer``, or ``RECORDED`` from ``producer``)
    provenance: str = EVALUATED
    producer: str = "ndval"

    def to_dict(self) -> dict[str, Any]:
        """Builtin-only dict (rows capped at ``MAX_EVIDENCE_ROWS``)."""
        out = asdict(self)
        out["rows"] = out["rows"][:MAX_EVIDENCE_ROWS]
        built: dict[str, Any] = to_builtin(out)
        return built

    @property
    def status(self) -> str:
        """passed / failed / waived / not_evaluable."""
        if not self.evaluable:
            return "not_evaluable"
        if self.passed:
            return "passed"
        return "waived" if self.waived else "failed"
