"""Hierarchical network model: collective buffers in bytes -> seconds.

A machine is a list of levels, innermost first (e.g. NVLink inside a node of 8, then the
inter-node fabric). Level ``L`` has a domain of ``max_devices`` devices (cumulative: a node holds
8, the cluster holds all), a per-device unidirectional bandwidth in GB/s (1e9 bytes/s), an
efficiency (achieved / nominal) and a per-message latency.

Which levels a group spans follows from its size and placement: the group's members are
``stride`` device ids apart (``stride`` = product of the degrees placed inside it, Megatron's
order tp → cp → ep/dp → pp), so ``min(n, max(1, domain_L // stride))`` members share one level-L
domain. Times use the standard bandwidth-optimal ring bounds applied level by level (hierarchical
reduce-scatter / all-reduce / all-gather: Patarasuk & Yuan 2009; Thakur et al. 2005) — reference
design §3.3, "newer variant": ``time = Σ_L [2(n_L−1)/n_L · S_L/(bw_L·eff_L) + 2(n_L−1)·lat_L]``.

Efficiency and per-step latency are per level *and* per collective kind: a level may carry its own
``(efficiency, latency_us)`` for ``all_reduce``, ``all_gather``, ``reduce_scatter``, ``all_to_all`` or
``p2p`` (``collectives``, :func:`level_factors`), else the level's own values apply; each level a group
spans is priced with its own factors (e.g. NVLink inside a node, InfiniBand between nodes). The
latency is per ring step / per message, NCCL's latency model (``src/graph/tuning.cc``: a ring
collective's latency is ``nsteps·hwLat`` of the link type, NVLink or network, plus a base latency).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import is_
from typing import Any, Protocol

from estimator.perf.comm import Collective
from estimator.shared.arrays import ARRAY, any_true, maximum, minimum, where
from ndval.core import cache
from ndval.core.units import BYTES_PER_GB, S_PER_US


class LevelLike(Protocol):
    """Anything with the four fields of a network level (``estimator.inputs.hardware`` levels qualify)."""

    @property
    def bandwidth_gb_s(self) -> float: ...
    @property
    def efficiency(self) -> float: ...
    @property
    def latency_us(self) -> float: ...
    @property
    def max_devices(self) -> float | int | None: ...


@dataclass(frozen=True)
class Factors:
    """A collective kind's own efficiency (0-1] and per-step latency (µs) on one level."""

    efficiency: float
    latency_us: float


@dataclass(frozen=True)
class Level:
    """One network level: domain size, per-device bandwidth (GB/s), efficiency (0-1], latency (µs),
    per collective kind its own :class:`Factors` (``collectives``; absent kinds use the level's), and
    the fixed latency of one ring collective call whose widest level is this one (``call_latency_us``)."""

    max_devices: float | None
    bandwidth_gb_s: float
    efficiency: float = 1.0
    latency_us: float = 0.0
    collectives: Mapping[str, Factors] = field(default_factory=dict)
    call_latency_us: float = 0.0

    def __post_init__(self) -> None:
        factors = [(self.efficiency, self.latency_us), *((f.efficiency, f.latency_us) for f in self.collectives.values())]
        if (self.max_devices is not None and self.max_devices < 1) or self.bandwidth_gb_s <= 0 or any(
                not 0 < eff <= 1 or lat < 0 for eff, lat in factors) or self.call_latency_us < 0:
            raise ValueError(f"invalid network level {self}")


def level_factors(level: LevelLike, kind: str) -> tuple[float, float]:
    """(efficiency, latency µs per step) of ``level`` for a collective of ``kind``: the level's entry for
    that kind in ``collectives`` when it has one, else the level's own ``efficiency`` and ``latency_us``."""
    per_kind: Mapping[str, Any] = getattr(level, "collectives", None) or {}
    own = per_kind.get(kind)
    if own is None:
        return level.efficiency, level.latency_us
    return float(own.efficiency), float(own.latency_us)


def effective_bytes_per_s(level: LevelLike, kind: str = "") -> float:
    """Achieved bandwidth of a level in bytes/s for a collective of ``kind``: ``bandwidth_gb_s · 1e9 ·
    efficiency`` (:func:`level_factors`; no kind: the level's own efficiency)."""
    return level.bandwidth_gb_s * BYTES_PER_GB * level_factors(level, kind)[0]


def members_per_domain(group_size: int, stride: int, levels: Sequence[LevelLike]) -> list[int]:
    """Group members inside one domain of each level: ``min(n, max(1, domain_L // stride))``.

    The last entry is always ``n`` (the outermost level holds the whole group, whatever its size).
    """
    if (any_true(group_size < 1) or any_true(stride < 1) if type(group_size) is ARRAY or type(stride) is ARRAY
            else group_size < 1 or stride < 1):  # (arrays of layouts too: estimator.shared.arrays)
        raise ValueError(f"group_size={group_size}, stride={stride}: both must be >= 1")
    out = []
    for i, lvl in enumerate(levels):
        if i == len(levels) - 1 or lvl.max_devices is None or math.isinf(lvl.max_devices):
            out.append(group_size)
        else:
            out.append(minimum(group_size, maximum(1, int(lvl.max_devices) // stride)))
    return out


def level_fanout(group_size: int, stride: int, levels: Sequence[LevelLike]) -> list[float]:
    """``n_L`` = members per level-L domain / members per level-(L−1) domain (product = ``n``)."""
    members = members_per_domain(group_size, stride, levels)
    prev = 1
    out = []
    for m in members:
        out.append(m / prev)
        prev = m
    return out


def ring_time_s(
    kind: str, size_bytes: float, group_size: int, stride: int, levels: Sequence[LevelLike]
) -> float:
    """Hierarchical ring all-reduce / all-gather / reduce-scatter of a ``size_bytes`` buffer.

    Level ``L`` works on ``S_L = S/Π_{l<L} n_l`` (the shard left after the inner levels) with the
    ring bound ``k·(n_L−1)/n_L·S_L/bw_L + k·(n_L−1)·lat_L`` with that level's factors for ``kind``;
    ``k`` = 2 for all-reduce (reduce-scatter then all-gather), 1 for all-gather and reduce-scatter.
    Plus once per call the ``call_latency_us`` of the widest level the group spans (NCCL's baseLat).
    """
    if type(group_size) is not ARRAY and group_size <= 1:  # the formula's 0 (arrays: computed)
        return 0.0
    k = 2.0 if kind == "all_reduce" else 1.0
    shard = size_bytes
    total = call = 0.0
    for n_l, lvl in zip(level_fanout(group_size, stride, levels), levels, strict=True):
        if type(n_l) is ARRAY:  # per layout: a level spanned by one member adds 0 (n_l − 1 = 0)
            _, latency_us = level_factors(lvl, kind)
            total = total + k * (n_l - 1) / n_l * shard / effective_bytes_per_s(lvl, kind)
            total = total + k * (n_l - 1) * latency_us * S_PER_US
            call = where(n_l > 1, float(getattr(lvl, "call_latency_us", 0.0)) * S_PER_US, call)
        elif n_l > 1:
            _, latency_us = level_factors(lvl, kind)
            total += k * (n_l - 1) / n_l * shard / effective_bytes_per_s(lvl, kind)
            total += k * (n_l - 1) * latency_us * S_PER_US
            call = float(getattr(lvl, "call_latency_us", 0.0)) * S_PER_US
        shard = shard / n_l  # not in place: an array may be the collective's own
    return total + call


def all_to_all_time_s(size_bytes: float, group_size: int, stride: int, levels: Sequence[LevelLike]) -> float:
    """All-to-all where each device holds ``S`` bytes split evenly over the ``n`` members (each level's
    ``all_to_all`` factors).

    The ``S/n`` chunks for peers first reachable at level L (``members_L − members_{L−1}`` of them,
    minus itself at level 0) go over that level: ``Σ_L chunks_L·(S/n)/bw_L + chunks_L·lat_L``.
    Levels are summed (serial), the conservative bound when the inner and outer links are not driven
    concurrently.
    """
    if type(group_size) is not ARRAY and group_size <= 1:  # the formula's 0 (arrays: computed)
        return 0.0
    chunk = size_bytes / group_size
    prev = 1
    total = 0.0
    for m, lvl in zip(members_per_domain(group_size, stride, levels), levels, strict=True):
        peers = m - prev
        if type(peers) is ARRAY or peers > 0:  # arrays: a level with no new peers adds 0
            _, latency_us = level_factors(lvl, "all_to_all")
            total += peers * chunk / effective_bytes_per_s(lvl, "all_to_all") + peers * latency_us * S_PER_US
        prev = m
    return total


def p2p_time_s(size_bytes: float, stride: int, levels: Sequence[LevelLike]) -> float:
    """One send of ``S`` bytes to a peer ``stride`` ids away, over the innermost level holding both:
    ``S/bw_L + lat_L`` (the level's ``p2p`` factors)."""
    members = members_per_domain(2, stride, levels)
    if type(stride) is ARRAY:  # per layout: the innermost level holding both, from the outside in
        out: float = 0.0
        for m, lvl in reversed(list(zip(members, levels, strict=True))):
            out = where(m >= 2, _p2p_level_s(size_bytes, lvl), out)
        return out
    lvl = levels[next(i for i, m in enumerate(members) if m >= 2)]
    return _p2p_level_s(size_bytes, lvl)


def _p2p_level_s(size_bytes: float, lvl: LevelLike) -> float:
    """``S/bw_L + lat_L`` of one send over level ``lvl`` (its ``p2p`` factors)."""
    return size_bytes / effective_bytes_per_s(lvl, "p2p") + level_factors(lvl, "p2p")[1] * S_PER_US


def collective_time_s(c: Collective, stride: int, levels: Sequence[LevelLike]) -> float:
    """Seconds for ``c.count`` calls of collective ``c`` placed with ``stride`` (see module doc)."""
    if type(c.count) is not ARRAY and c.count == 0:  # (arrays: 0 calls price 0)
        return 0.0
    if type(c.size_bytes) is ARRAY or type(c.group_size) is ARRAY or type(stride) is ARRAY:
        return c.count * call_time_s(c.kind, c.size_bytes, c.group_size, stride, levels)
    key = (c.kind, c.size_bytes, c.group_size, stride, *map(id, levels))
    hit = _CALL_S.get(key)  # the registry store read inline: this runs for every collective of every stage
    if hit is not None and (hit[0] is levels or all(map(is_, hit[0], levels))):  # (equal lengths: the key has the ids)
        return c.count * hit[1]  # type: ignore[no-any-return]
    held = levels if type(levels) is tuple else tuple(levels)
    return c.count * cache.shared_value(_CALL_S, key, held, call_time_s, c.kind, c.size_bytes, c.group_size, stride,
                                        levels)


#: seconds of one collective call shared across configs (a sweep repeats the same buffers and groups):
#: key (kind, bytes, group size, stride, the levels' ids) -> (the levels, seconds); the entry holds the
#: levels, so their ids cannot be reused while cached
_CALL_S = cache.store("estimator.collective_call_s", bound=8192, key="(kind, bytes, group size, stride, the levels' ids)",
                      holds="(the levels, seconds of one call)")


def call_time_s(kind: str, size_bytes: float, group_size: int, stride: int, levels: Sequence[LevelLike]) -> float:
    """Seconds of one call of a collective of ``kind`` (p2p, all-to-all or a ring collective)."""
    if kind == "p2p":
        return p2p_time_s(size_bytes, stride, levels)
    if kind == "all_to_all":
        return all_to_all_time_s(size_bytes, group_size, stride, levels)
    return ring_time_s(kind, size_bytes, group_size, stride, levels)


def collectives_time_s(cs: Sequence[Collective], stride: int, levels: Sequence[LevelLike]) -> float:
    """Sum of :func:`collective_time_s` over ``cs`` (they run one after another)."""
    return sum(map(collective_time_s, cs, repeat(stride), repeat(levels)))  # (map: no generator frames)


def exposed_s(time_s: float, overlap: float) -> float:
    """Time left on the critical path when a share ``overlap`` ∈ [0, 1] hides behind compute."""
    if not 0.0 <= overlap <= 1.0:
        raise ValueError(f"overlap {overlap} outside [0, 1]")
    return time_s * (1.0 - overlap)
