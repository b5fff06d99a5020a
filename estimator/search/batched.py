"""Batched memory: the per-stage memory of many layouts at once, with the scalar path's own formulas.

Layouts that differ only in the *array fields* (:data:`ARRAY_FIELDS`: tp, dp, ep, cp, etp and the
micro-batch size) share their pipeline structure (pp, vpp, split, schedule, recompute, profile).
For such a group, :class:`ArrayConfig` stands in for a config whose array fields are numpy arrays
(one value per layout) and :func:`estimator.memory.stage.stage_memory` runs once on it: the
formulas are written over numbers that may be arrays (:mod:`estimator.arrays`), so there is one
formula home and no second copy. A group whose formulas branch on an array field (a comparison
the array cannot answer) raises, and its layouts are priced on the scalar path instead: every
candidate reports the ``path`` that priced its memory.

What is batched (issue 15, a subset): memory per stage and the OOM decision. Config rules are
checked by ``load_config`` per layout (the rejection reason is the scalar path's by construction)
and the step time of each layout that fits is priced on the scalar path.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from estimator.derive import stage_layouts
from estimator.memory import estimate_memory
from estimator.memory.stage import StageMemory, stage_memory
from estimator.search.evaluate import Candidate, Rejection, finish, load_layout
from estimator.search.space import Layout, SkippedLayout

if TYPE_CHECKING:
    from estimator.config import EstimatorConfig

#: config fields that may vary inside one batched group (dotted section.field)
ARRAY_FIELDS = ("parallel.tp", "parallel.dp", "parallel.ep", "parallel.cp", "parallel.etp",
                "train.micro_batch_size")
#: what a formula raises when it branches on an array (the group then goes to the scalar path)
BRANCH_ERRORS = (ValueError, TypeError)


_CLASS_ATTRIBUTES: dict[tuple[type, str], Any] = {}


def _class_attribute(cls: type, name: str) -> Any:
    """``name`` as defined on ``cls`` or a base (descriptor not invoked), cached per class."""
    key = (cls, name)
    if key not in _CLASS_ATTRIBUTES:
        _CLASS_ATTRIBUTES[key] = next((k.__dict__[name] for k in cls.__mro__ if name in k.__dict__), None)
    return _CLASS_ATTRIBUTES[key]


class ArrayConfig:
    """A read-only stand-in for a validated config (or one of its sections) where some fields are
    arrays. Fields come from ``values`` or the representative ``rep``; properties and methods of
    ``rep``'s class are evaluated on the stand-in, so derived values see the arrays too."""

    def __init__(self, rep: Any, values: dict[str, Any]) -> None:
        self._rep = rep
        self._values = values

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("_values", {})
        if name in values:
            return values[name]
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


def _column(cfgs: Sequence[EstimatorConfig], key: str) -> np.ndarray | None:
    section, name = key.split(".")
    values = [getattr(getattr(c, section), name) for c in cfgs]
    if any(v is None for v in values):
        return None if all(v is None for v in values) else np.array([-1])  # mixed None: not batchable
    return np.array(values, dtype=np.int64)


def batch_stage_memory(cfgs: Sequence[EstimatorConfig]) -> list[StageMemory] | None:
    """Per-stage memory of ``cfgs`` (one batched group: they differ only in :data:`ARRAY_FIELDS`),
    each component an array over the layouts (or a number shared by all), from the scalar path's
    :func:`estimator.memory.stage.stage_memory`; None when a formula branches on an array field."""
    columns: dict[str, np.ndarray] = {}
    for key in ARRAY_FIELDS:
        column = _column(cfgs, key)
        if column is not None and len(column) != len(cfgs):
            return None
        if column is not None:
            columns[key] = column
    proxy = array_config(cfgs[0], columns)
    memo: dict[Any, Any] = {}
    try:
        return [stage_memory(proxy, layout, memo) for layout in stage_layouts(cfgs[0])]
    except BRANCH_ERRORS:
        return None


def batch_stage_totals(cfgs: Sequence[EstimatorConfig]) -> np.ndarray | None:
    """Allocated MiB per (layout, stage) of ``cfgs`` (one batched group), summed as
    ``StageMemory.total_mb`` sums its components; None when the group cannot be batched."""
    stages = batch_stage_memory(cfgs)
    if stages is None:
        return None
    totals = [np.broadcast_to(np.asarray(sum(s.components.values()), dtype=np.float64), (len(cfgs),))
              for s in stages]
    return np.stack(totals, axis=1)


def evaluate_batched(
    base_data: Mapping[str, Any], points: Sequence[Layout | SkippedLayout], memory_margin_mb: float = 0.0,
) -> list[Candidate | Rejection]:
    """Price ``points`` like :func:`estimator.search.evaluate.evaluate`, in order, with the memory of
    each batched group computed at once (:func:`batch_stage_totals`); a group that cannot be
    batched is priced on the scalar path."""
    outcomes: list[Candidate | Rejection | None] = [None] * len(points)
    groups: dict[tuple[Any, ...], list[tuple[int, Layout, EstimatorConfig]]] = {}
    for pos, layout in enumerate(points):
        cfg = load_layout(base_data, layout)
        if isinstance(cfg, Rejection):
            outcomes[pos] = cfg
            continue
        assert isinstance(layout, Layout)
        key = (*(kv for kv in layout.overrides if kv[0] not in ARRAY_FIELDS), layout.split)
        groups.setdefault(key, []).append((pos, layout, cfg))
    for members in groups.values():
        totals = batch_stage_totals([cfg for _, _, cfg in members])
        for row, (pos, layout, cfg) in enumerate(members):
            if totals is None:
                mem = estimate_memory(cfg)
                outcomes[pos] = finish(layout, cfg, mem.peak_mb, mem.peak_stage, memory_margin_mb)
            else:
                stage = int(np.argmax(totals[row]))  # the first stage at the peak, as MemoryReport.peak_stage
                outcomes[pos] = finish(layout, cfg, float(totals[row, stage]), stage, memory_margin_mb, "batched")
    return [o for o in outcomes if o is not None]
