"""Standard JSON only: no ``NaN`` / ``Infinity`` in anything ndval writes (RFC 8259 has neither).

``json.dumps`` writes a non-finite float as a bare ``NaN`` that ``JSON.parse`` and every strict parser
reject. :func:`finite` replaces each one by ``null`` and returns the paths it replaced, so the writer can say
why the number is unavailable; :func:`dumps` writes the cleaned document with ``allow_nan=False`` (a
non-finite value that slipped through raises instead of being written). :func:`loads` is the strict reader
the tests parse every output with.
"""

from __future__ import annotations

import json
import math
from typing import Any

#: key of the note a cleaned document carries: ``{path: reason}`` of the numbers written as null.
NULL_REASONS_KEY = "null_reasons"


def non_finite_paths(doc: Any, path: str = "") -> list[str]:
    """Dotted paths of every NaN / ±inf float inside ``doc`` (mappings, lists and tuples walked)."""
    if isinstance(doc, float):
        return [] if math.isfinite(doc) else [path or "<root>"]
    if isinstance(doc, dict):
        return [p for k, v in doc.items() for p in non_finite_paths(v, f"{path}.{k}" if path else str(k))]
    if isinstance(doc, list | tuple):
        return [p for i, v in enumerate(doc) for p in non_finite_paths(v, f"{path}[{i}]")]
    return []


def finite(doc: Any) -> Any:
    """``doc`` with every NaN / ±inf float replaced by None (a new structure; tuples become lists)."""
    if isinstance(doc, float):
        return doc if math.isfinite(doc) else None
    if isinstance(doc, dict):
        return {k: finite(v) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [finite(v) for v in doc]
    return doc


def with_null_reasons(doc: dict[str, Any], reason: str = "not a finite number") -> dict[str, Any]:
    """``finite(doc)`` plus, when something was replaced, ``doc[NULL_REASONS_KEY] = {path: reason}``."""
    bad = non_finite_paths(doc)
    out: dict[str, Any] = finite(doc)
    if bad:
        out[NULL_REASONS_KEY] = {**out.get(NULL_REASONS_KEY, {}), **{p: reason for p in bad}}
    return out


def dumps(doc: Any, **kwargs: Any) -> str:
    """Strict JSON text of ``doc`` (non-finite floats as null; ``allow_nan=False``)."""
    kwargs.setdefault("ensure_ascii", False)
    clean = with_null_reasons(doc) if isinstance(doc, dict) else finite(doc)
    return json.dumps(clean, allow_nan=False, **kwargs)


def _refuse(token: str) -> Any:
    raise ValueError(f"non-standard JSON constant {token!r}")


def loads(text: str | bytes) -> Any:
    """Parse ``text`` as standard JSON: ``NaN``, ``Infinity`` and ``-Infinity`` are errors."""
    return json.loads(text, parse_constant=_refuse)
