"""The assertion registry (spec §2): one module per family, each type a pydantic model with
``evaluate(result, ctx) -> AssertionResult``.

Families (``BUILTIN_MODULES``): ``rowwise`` (ratio_within, rel_error_le, abs_error_le,
magnitude_within, mape_le), ``correlation`` (pearson_r_gt, spearman_rho_gt), ``shape`` (share_le,
monotonic, invariant), ``values`` (verdict_equals, column_in, bottleneck_is, score_between),
``golden`` (golden_match).

A new type: subclass ``AssertionSpec`` with ``type: Literal["name"]``, decorate it with
``@register_assertion`` and either import its module from a kind module or expose the module
through the ``ndval.assertions`` entry-point group (``load_assertions`` imports those once).
"""

from __future__ import annotations

import importlib
import importlib.metadata

from ndval.harness.assertions import correlation, golden, rowwise, shape, values
from ndval.harness.assertions.base import (
    REGISTRY,
    AssertionSpec,
    AssertionUsageError,
    EvalContext,
    Severity,
    describe_types,
    register_assertion,
)

#: the built-in families, imported with the package (their classes register on import)
BUILTIN_MODULES = tuple(m.__name__ for m in (rowwise, correlation, shape, values, golden))
ENTRY_POINT_GROUP = "ndval.assertions"

__all__ = [
    "BUILTIN_MODULES",
    "ENTRY_POINT_GROUP",
    "REGISTRY",
    "AssertionSpec",
    "AssertionUsageError",
    "EvalContext",
    "Severity",
    "describe_types",
    "load_assertions",
    "register_assertion",
]

_entry_points_loaded = False


def load_assertions() -> dict[str, type[AssertionSpec]]:
    """The registry, after importing the ``ndval.assertions`` entry points once (each names a module
    or an object whose import registers its types)."""
    global _entry_points_loaded
    if not _entry_points_loaded:
        _entry_points_loaded = True
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            ep.load()
    return REGISTRY
