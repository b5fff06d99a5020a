"""Batched memory: the per-stage memory of many layouts at once, with the scalar path's own formulas.

Layouts that differ only in the *array fields* (:data:`ARRAY_FIELDS`: tp, dp, ep, cp, etp, the
micro-batch size and the global batch) share their pipeline structure (pp, vpp, split, schedule, recompute, profile).
For such a group, :class:`ArrayConfig` stands in for a config whose array fields are numpy arrays
(one value per layout) and :func:`estimator.memory.stage.stage_memory` runs once on it: the
formulas are written over numbers that may be arrays (:mod:`estimator.shared.arrays`), so there is one
formula home and no second copy. A group whose formulas branch on an array field (a comparison
the array cannot answer) raises, and its layouts are priced on the scalar path instead: every
candidate reports the ``path`` that priced its memory.

The rest of the batched pipeline (the space as arrays, the config rules as masks, the OOM mask,
step time, the reduction) is :mod:`estimator.search.price`.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from estimator.inputs.derive import stage_layouts
from estimator.memory.stage import StageMemory, stage_memory
from estimator.search.grid import ARRAY_FIELDS
from ndval.core import cache

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig
    from estimator.search.space import Layout

__all__ = ["ARRAY_FIELDS", "ArrayConfig", "array_config", "batch_stage_memory", "group_columns", "group_key",
           "group_stage_memory", "stage_totals"]
#: what a formula raises when it branches on an array (the group then goes to the scalar path)
BRANCH_ERRORS = (ValueError, TypeError)


_CLASS_ATTRIBUTES = cache.store("estimator.class_attributes", bound=4096, key="(class, attribute name)",
                                holds="the attribute as the class or a base defines it")
_MISSING = object()


def _class_attribute(cls: type, name: str) -> Any:
    """``name`` as defined on ``cls`` or a base (descriptor not invoked), cached per class."""
    key = (cls, name)
    hit = _CLASS_ATTRIBUTES.get(key, _MISSING)
    if hit is _MISSING:
        if len(_CLASS_ATTRIBUTES) >= cache.bound_of(_CLASS_ATTRIBUTES):
            _CLASS_ATTRIBUTES.clear()
        hit = _CLASS_ATTRIBUTES[key] = next((k.__dict__[name] for k in cls.__mro__ if name in k.__dict__), None)
    return hit


class ArrayConfig:
    """A read-only stand-in for a validated config (or one of its sections) where some fields are
    arrays. Fields come from ``values`` or the representative ``rep``; properties and methods of
    ``rep``'s class are evaluated on the stand-in, so derived values see the arrays too. Each
    attribute is resolved once and kept (the stand-in and its representative never change)."""

    def __init__(self, rep: Any, values: dict[str, Any]) -> None:
        self._rep = rep
        self._values = values

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or "_values" not in self.__dict__:  # copy/pickle probes, half-built
            raise AttributeError(name)
        value = self._resolve(name)
        self.__dict__[name] = value  # later reads skip __getattr__
        return value

    def _resolve(self, name: str) -> Any:
        if name in self._values:
            return self._values[name]
        attr = _class_attribute(type(self._rep), name)
        if isinstance(attr, property) and attr.fget is not None:
            return attr.fget(self)
        if isinstance(attr, cached_property):
            return attr.func(self)
        if inspect.isfunction(attr):
            return types.MethodType(attr, self)
        return getattr(self._rep, name)


def array_config(rep: EstimatorConfig, columns: dict[str, np.ndarray]) -> EstimatorConfig:
    """``rep`` with each ``section.field`` of ``columns`` replaced by its array (duck-typed)."""
    sections: dict[str, dict[str, np.ndarray]] = {}
    for key, column in columns.items():
        section, name = key.split(".")
        sections.setdefault(section, {})[name] = column
    values = {s: ArrayConfig(getattr(rep, s), fields) for s, fields in sections.items()}
    return cast("EstimatorConfig", ArrayConfig(rep, values))


class MixedUnset(ValueError):
    """A field set on some configs of a group and unset (None) on others: not one array."""


def _column(cfgs: Sequence[EstimatorConfig], key: str) -> np.ndarray | None:
    """The values of ``key`` over ``cfgs`` as an int64 array, or None when no config sets it;
    :class:`MixedUnset` when some do and some do not."""
    section, name = key.split(".")
    values = [getattr(getattr(c, section), name) for c in cfgs]
    unset = sum(v is None for v in values)
    if unset == len(values):
        return None
    if unset:
        raise MixedUnset(f"{key} is unset on {unset} of {len(values)} layouts")
    return np.array(values, dtype=np.int64)


def group_stage_memory(rep: EstimatorConfig, columns: Mapping[str, np.ndarray]) -> list[StageMemory] | None:
    """Per-stage memory of the layouts that are ``rep`` with the :data:`ARRAY_FIELDS` of
    ``columns`` (one array per field, one value per layout), each component an array over the
    layouts (or a number shared by all), from the scalar path's
    :func:`estimator.memory.stage.stage_memory`; None when a formula branches on an array field."""
    proxy = array_config(rep, dict(columns))
    try:
        return [stage_memory(proxy, layout) for layout in stage_layouts(rep)]
    except BRANCH_ERRORS:
        return None


def group_key(layout: Layout) -> tuple[Any, ...]:
    """The batched group of a one-by-one ``layout``: its overrides other than :data:`ARRAY_FIELDS`
    and its pipeline split (layouts with equal keys differ only in the array fields)."""
    return (*(kv for kv in layout.overrides if kv[0] not in ARRAY_FIELDS), layout.split)


def group_columns(cfgs: Sequence[EstimatorConfig]) -> dict[str, np.ndarray] | None:
    """The :data:`ARRAY_FIELDS` of validated configs that differ only in those fields, one int64
    array per field some config sets; None when they cannot be one batch (a field set on some only)."""
    try:
        return {key: col for key in ARRAY_FIELDS if (col := _column(cfgs, key)) is not None}
    except MixedUnset:
        return None


def batch_stage_memory(cfgs: Sequence[EstimatorConfig]) -> list[StageMemory] | None:
    """:func:`group_stage_memory` of validated configs that differ only in :data:`ARRAY_FIELDS`;
    None when they cannot be one batch (a formula branches, or a field is set on some only)."""
    columns = group_columns(cfgs)
    return None if columns is None else group_stage_memory(cfgs[0], columns)


def stage_totals(stages: Sequence[StageMemory], n: int) -> np.ndarray:
    """Allocated MiB per (layout, stage), summed as ``StageMemory.total_mb`` sums its components."""
    totals = [np.broadcast_to(np.asarray(sum(s.components.values()), dtype=np.float64), (n,)) for s in stages]
    return np.stack(totals, axis=1)
