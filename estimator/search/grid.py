"""The layout space as arrays: one row per layout, grouped by pipeline structure.

The dimensions of a space split in two: the *array fields* (:data:`ARRAY_FIELDS`: tp, ep, cp, etp,
the micro-batch size, the global batch, and dp, which the search derives) vary inside a group,
every other dimension (pp, vpp, schedule, recompute, the pipeline split, the sequence length, any
other field) fixes a *structural point*.
For each structural point the array dimensions span a grid (numpy, C order = the order of
:func:`estimator.search.space.layouts`); rows whose device count does not divide by tp·pp·cp are
:class:`Skipped` once, the others form one :class:`Group` per pipeline split.

Every row carries its place in the sweep order of :func:`~estimator.search.space.layouts`: the
index of its point in the product of the space's dimensions and the index of its split, so results
that depend on order (the first example of each rejection reason, the rows of ``--csv``) equal the
one-by-one path's.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from estimator.config.schema import EstimatorConfig
from estimator.search.space import (
    INTEGER_DIMS,
    SPLIT_DIM,
    SPLIT_KINDS,
    Split,
    check_values,
    splits_for,
    with_schedule,
)

#: config fields that may vary inside one batched group (dotted section.field)
ARRAY_FIELDS = ("parallel.tp", "parallel.dp", "parallel.ep", "parallel.cp", "parallel.etp",
                "train.micro_batch_size", "train.global_batch_size")
#: most rows of one grid block (bounds the memory of one group whatever the space)
BLOCK_ROWS = 1 << 16


def check_integer_dims(space: Mapping[str, Sequence[Any]]) -> None:
    """``SpaceError`` unless every value of a parallel degree, micro-batch or global-batch dimension
    is an integer in [1, 2**53] (a degree of 0 or 'abc' is malformed input, not a layout to reject)."""
    for key in INTEGER_DIMS:
        if key in space:
            check_values(key, tuple(space[key]))


@dataclass(frozen=True)
class Rows:
    """Rows of one structural point: their order in the sweep and their value index per array dim."""

    point: dict[str, Any]
    #: value index into the space per array dimension (n × len(array_keys))
    index: np.ndarray
    #: product index of each row's point (sweep order)
    order: np.ndarray

    def __len__(self) -> int:
        return len(self.order)


@dataclass(frozen=True)
class Skipped(Rows):
    """Rows whose device count does not divide by tp·pp·cp (one rejection per point)."""

    denominator: np.ndarray


@dataclass(frozen=True)
class Group(Rows):
    """Rows of one structural point and pipeline split: they differ only in the array fields."""

    split: Split | None
    split_index: int
    #: the array fields' values per row (dp derived), keyed by dotted field
    columns: dict[str, np.ndarray]


@dataclass(frozen=True)
class Grid:
    """A space over a base config and a device count, ready to enumerate as :class:`Rows`."""

    base: EstimatorConfig
    devices: int
    space: Mapping[str, Sequence[Any]]

    @property
    def keys(self) -> list[str]:
        return [k for k in self.space if k != SPLIT_DIM]

    @property
    def array_keys(self) -> list[str]:
        return [k for k in self.keys if k in ARRAY_FIELDS]

    def strides(self) -> dict[str, int]:
        """Mixed-radix weight of each dimension in the product index (last dimension fastest)."""
        out: dict[str, int] = {}
        weight = 1
        for key in reversed(self.keys):
            out[key] = weight
            weight *= len(self.space[key])
        return out

    def kinds(self) -> tuple[tuple[str, ...], bool]:
        """The split kinds tried and whether the caller asked for them (as ``layouts``)."""
        kinds = tuple(self.space.get(SPLIT_DIM, ()))
        if not kinds and ("parallel.pp" in self.space or "parallel.vpp" in self.space):
            return SPLIT_KINDS, False
        return kinds, True

    def overrides(self, rows: Rows, row: int) -> dict[str, Any]:
        """The overrides of one row, in the order :func:`~estimator.search.space.layouts` gives them."""
        out: dict[str, Any] = {}
        array_at = {k: j for j, k in enumerate(self.array_keys)}
        for key in self.keys:
            out[key] = self.space[key][int(rows.index[row, array_at[key]])] if key in array_at else rows.point[key]
        out.update((k, v) for k, v in rows.point.items() if k not in out)
        if isinstance(rows, Group):
            out["parallel.dp"] = int(rows.columns["parallel.dp"][row])
            out["hardware.devices"] = self.devices
            out.update(rows.split.fields if rows.split else ())
        return out

    def label(self, group: Group) -> str:
        return group.split.label if group.split else "even"

    def blocks(self) -> Iterator[Rows]:
        """Every row of the space, as :class:`Skipped` and :class:`Group` pieces of at most
        :data:`BLOCK_ROWS` rows each."""
        strides = self.strides()
        struct_keys = [k for k in self.keys if k not in ARRAY_FIELDS]
        sizes = [len(self.space[k]) for k in self.array_keys]
        total = math.prod(sizes)
        for combo in itertools.product(*(range(len(self.space[k])) for k in struct_keys)):
            point = {k: self.space[k][i] for k, i in zip(struct_keys, combo, strict=True)}
            with_schedule(point, self.space, self.base.parallel.schedule)
            offset = sum(i * strides[k] for k, i in zip(struct_keys, combo, strict=True))
            for start in range(0, total, BLOCK_ROWS):
                flat = np.arange(start, min(total, start + BLOCK_ROWS), dtype=np.int64)
                index = np.stack(np.unravel_index(flat, sizes), axis=1) if sizes else np.zeros((1, 0), np.int64)
                order = offset + index @ np.array([strides[k] for k in self.array_keys], dtype=np.int64)
                yield from self._pieces(point, index, order)

    def _value(self, key: str, index: np.ndarray, default: Any) -> Any:
        """The values of ``key`` per row (an array) when it is an array dimension, else ``default``."""
        if key not in self.array_keys:
            return default
        return np.asarray(self.space[key], dtype=np.int64)[index[:, self.array_keys.index(key)]]

    def _pieces(self, point: dict[str, Any], index: np.ndarray, order: np.ndarray) -> Iterator[Rows]:
        p = self.base.parallel
        pp, vpp = int(point.get("parallel.pp", p.pp)), int(point.get("parallel.vpp", p.vpp))
        tp, cp = self._value("parallel.tp", index, p.tp), self._value("parallel.cp", index, p.cp)
        denominator = np.broadcast_to(np.asarray(tp * pp * cp, dtype=np.int64), order.shape)
        fits = self.devices % denominator == 0
        if not fits.all():
            bad = ~fits
            yield Skipped(point, index[bad], order[bad], denominator[bad])
        if not fits.any():
            return
        index, order = index[fits], order[fits]
        columns = {k: self._value(k, index, None) for k in self.array_keys}
        columns["parallel.dp"] = self.devices // denominator[fits]
        kinds, asked = self.kinds()
        splits: list[Split | None] = list(splits_for(kinds, self.base.model.num_layers, pp, vpp, asked=asked)) \
            if kinds else [None]
        for s, split in enumerate(splits):
            yield Group(point, index, order, split, s, columns)
