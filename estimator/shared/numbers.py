"""A boolean is never a number in a configuration (pydantic's lax mode reads ``true`` as 1 for an ``int`` field:
``--set parallel.tp=true`` silently became tp 1)."""

from __future__ import annotations

import types
import typing
from typing import Any


def number_only(annotation: Any) -> bool:
    """Whether a field typed ``annotation`` holds a number and never a boolean: ``int`` / ``float``, optional or
    in a union without ``bool``."""
    if typing.get_origin(annotation) not in (None, typing.Union, types.UnionType):
        return False
    members = typing.get_args(annotation) or (annotation,)
    return bool({int, float} & set(members)) and bool not in members


def no_boolean(value: Any, annotation: Any) -> Any:
    """``value`` unchanged, or ``ValueError`` when it is a boolean given for a number field (a pydantic
    ``mode="before"`` field validator calls this with the field's annotation)."""
    if isinstance(value, bool) and number_only(annotation):
        raise ValueError(f"must be a number; got {str(value).lower()} (a boolean)")
    return value
