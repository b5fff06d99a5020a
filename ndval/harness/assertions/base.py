"""What every assertion shares: the ``AssertionSpec`` base model, the evaluation context, the registry
and the column helpers the families use.

An assertion type is a pydantic model with a ``type: Literal["name"]`` field and
``evaluate(result, ctx) -> AssertionResult``; ``@register_assertion`` puts it in ``REGISTRY``.
Row filters: every assertion takes ``where: {column: value | [values]}`` to select table rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ndval.core import rows as rowfilter
from ndval.harness.results import AssertionResult, RunResult

Severity = Literal["blocker", "major", "minor"]


class AssertionUsageError(Exception):
    """The case asks for something the run result does not have (a column, a value)."""


class EvalContext:
    """What an assertion may need beyond the run result (the golden engine, the case id)."""

    def __init__(self, golden_check: Callable[[RunResult, Any], AssertionResult] | None = None) -> None:
        self.golden_check = golden_check


class AssertionSpec(BaseModel):
    """Fields every assertion has: ``type``, optional ``id``, ``criterion``, ``severity``, ``where``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: str
    id: str | None = Field(None, description="name of this assertion inside the case (default: type#index)")
    criterion: str | None = Field(None, description="acceptance criterion this evidence belongs to, e.g. P1")
    severity: Severity | None = Field(None, description="overrides the case severity for this assertion")
    where: dict[str, Any] = Field(default_factory=dict, description="row filter {column: value or [values]}")
    description: str | None = None

    target_text: ClassVar[str] = ""

    def evaluate(self, result: RunResult, ctx: EvalContext) -> AssertionResult:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- helpers shared by the row-wise types -------------------------------------------------
    def rows(self, result: RunResult) -> list[dict[str, Any]]:
        """Table rows selected by ``where`` (``ndval.core.rows``); an empty selection is a usage error."""
        try:
            out = rowfilter.select(result.table, self.where)
        except rowfilter.RowFilterError as exc:
            raise AssertionUsageError(str(exc)) from None
        if not out:
            raise AssertionUsageError(f"no result rows match where={self.where!r}")
        return out

    def rows_and_gaps(self, result: RunResult, label: str | None = None
                      ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(evaluable rows, evidence of the not-evaluable ones): the rows :meth:`rows` selects split on
        their ``not_evaluable`` reason (a value the estimate needs is not stated by the source); each gap
        is ``{row, not_evaluable, passed: False}``, the evidence ``ndval.harness.summary`` lists."""
        selected = self.rows(result)
        gaps = [{"row": row_label(r, label, i), "not_evaluable": r["not_evaluable"], "passed": False}
                for i, r in enumerate(selected) if r.get("not_evaluable")]
        return [r for r in selected if not r.get("not_evaluable")], gaps

    def gaps_result(self, gaps: list[dict[str, Any]], target: str, expected: str) -> AssertionResult:
        """The result when every selected row is not evaluable: nothing to judge (``evaluable=False``)."""
        reasons = "; ".join(f"{g['row']}: {g['not_evaluable']}" for g in gaps)
        return self.make(self.id or self.type, target=target, observed=None, expected=expected, margin=None,
                         passed=False, message=f"not evaluable: {reasons}", stats={"n": 0, "n_not_evaluable": len(gaps)},
                         rows=gaps, evaluable=False)

    def provenance_of(self, result: RunResult) -> tuple[str, str]:
        """(provenance, producer) of the number this assertion judges: by default the run result's."""
        return result.provenance, result.producer

    def make(self, name: str, **kw: Any) -> AssertionResult:
        return AssertionResult(type=self.type, id=name, criterion=self.criterion, severity=self.severity, **kw)


#: assertion type -> its spec class; filled by ``@register_assertion`` (see ``ndval.harness.assertions.load_assertions``)
REGISTRY: dict[str, type[AssertionSpec]] = {}


def register_assertion(cls: type[AssertionSpec]) -> type[AssertionSpec]:
    """Class decorator: register ``cls`` under the literal value of its ``type`` field."""
    literal = cls.model_fields["type"].annotation
    names: tuple[str, ...] = getattr(literal, "__args__", ())
    if len(names) != 1:
        raise TypeError(f"{cls.__name__}.type must be a single Literal")
    known = REGISTRY.get(names[0])
    if known is not None and known.__qualname__ != cls.__qualname__:
        raise TypeError(f"assertion type {names[0]!r} registered twice: {known.__module__}.{known.__qualname__} "
                        f"and {cls.__module__}.{cls.__qualname__}")
    REGISTRY[names[0]] = cls
    return cls


def column(rows: list[dict[str, Any]], name: str) -> np.ndarray:
    """Column ``name`` of ``rows`` as floats (None -> nan); a missing or non-numeric column is a usage error."""
    missing = [r for r in rows if name not in r]
    if missing:
        raise AssertionUsageError(f"column {name!r} not in the result table (have {sorted(rows[0])})")
    try:
        return np.array([np.nan if r[name] is None else float(r[name]) for r in rows], dtype=float)
    except (TypeError, ValueError) as exc:
        raise AssertionUsageError(f"column {name!r} is not numeric: {exc}") from None


def row_label(row: dict[str, Any], label: str | None, i: int) -> str:
    """How reports name row ``i``: the ``label`` column, else a conventional id column, else ``row<i>``."""
    if label and label in row:
        return str(row[label])
    for key in ("id", "config", "case_id", "component", "name"):
        if key in row:
            return str(row[key])
    return f"row{i}"


def fmt(x: float | None) -> str:
    """Four significant digits; ``nan`` for None or NaN."""
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4g}"


def describe_types() -> dict[str, str]:
    """type -> first docstring line (for ``ndval lint --list`` and the docs)."""
    return {name: (cls.__doc__ or "").strip().splitlines()[0] for name, cls in sorted(REGISTRY.items())}
