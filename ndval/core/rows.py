"""The ``where`` row filter shared by case data and assertions.

``where: {column: value | [values]}`` keeps the rows whose ``column`` equals ``value`` (or is one
of ``values``). One rule for a missing column: a ``where`` naming a column that a row does not
have is an error (:class:`RowFilterError`, naming the column and the columns the row has) — a
misspelt column never silently selects nothing or everything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


class RowFilterError(ValueError):
    """A ``where`` names a column that is not in the rows."""


def matches(row: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    """True when ``row`` satisfies every ``column: value | [values]`` of ``where``."""
    for col, want in where.items():
        if col not in row:
            raise RowFilterError(f"where: column {col!r} not in the rows ({sorted(row)})")
        allowed = want if isinstance(want, list) else [want]
        if row[col] not in allowed:
            return False
    return True


def select(rows: Iterable[Mapping[str, Any]], where: Mapping[str, Any]) -> list[Any]:
    """The rows of ``rows`` that satisfy ``where``, in order (module rule for a missing column)."""
    return [row for row in rows if matches(row, where)]
