"""The one cache seam: every store that outlives a call is created here, named, bounded and described.

A *store* is a dictionary that keeps values between calls (stage layouts shared by configs with the same
split, layer prices shared by a sweep's layouts, the values derived from one config instance ...). Each
is made by :func:`store` with its name, its bound (most entries; all are forgotten when full), what its
key holds and what its values hold; a memoised pure function is made by :func:`memoize` (a bounded
``functools.lru_cache``, registered alike). :func:`stores` lists them (``docs/architecture.md``),
:func:`clear_all` empties every one, and ``NDVAL_NO_CACHE=1`` in the environment of the process
bypasses all of them: stores then keep nothing and memoised functions run every time, so every
number is computed from its inputs alone (the fingerprint test compares both).

Formula functions never take a store or a memo argument: a caller that shares values asks a store
for them, by value keys that state everything the value reads (or by the identity of instances the
entry holds, so that an ``id`` cannot be reused while its entry lives).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from operator import is_
from typing import Any, TypeVar

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

#: the environment variable that bypasses every store (``1``): read once, when this module is imported
NO_CACHE_ENV = "NDVAL_NO_CACHE"
ENABLED = os.environ.get(NO_CACHE_ENV, "") != "1"


@dataclass(frozen=True)
class StoreInfo:
    """What one registered store is: its name, bound, key fields and what it holds."""

    name: str
    bound: int
    key: str
    holds: str
    kind: str  # "store" or "memoize"


#: a registered store: a plain dictionary (lookups at the builtin's speed; its :class:`StoreInfo` is in the registry)
Store = dict[Any, Any]


class _Bypassed(dict[Any, Any]):
    """A store under ``NDVAL_NO_CACHE=1``: it keeps nothing (writes are dropped, reads miss)."""

    def __setitem__(self, key: Any, value: Any) -> None:
        return None

    def setdefault(self, key: Any, default: Any = None) -> Any:
        return default

    def update(self, *args: Any, **kwargs: Any) -> None:
        return None


#: every store and memoised function, by name (the registry itself: the one module-level store allowed)
_REGISTRY: dict[str, tuple[StoreInfo, Callable[[], None]]] = {}
#: each store's bound, by the store's id (the registry holds the store, so its id stays its own)
_BOUNDS: dict[int, int] = {}
_HELD: list[Store] = []


def _register(info: StoreInfo, clear: Callable[[], None]) -> None:
    if info.name in _REGISTRY:
        raise ValueError(f"cache store {info.name!r} registered twice")
    if info.bound < 1:
        raise ValueError(f"cache store {info.name!r}: bound must be ≥ 1, got {info.bound}")
    _REGISTRY[info.name] = (info, clear)


def store(name: str, *, bound: int, key: str, holds: str) -> Store:
    """A new registered store ``name`` of at most ``bound`` entries; ``key``: what its keys hold (the
    fields the value reads), ``holds``: what its values are."""
    info = StoreInfo(name, bound, key, holds, "store")
    made: Store = {} if ENABLED else _Bypassed()
    _register(info, made.clear)
    _BOUNDS[id(made)] = bound
    _HELD.append(made)
    return made


def bound_of(target: Store) -> int:
    """The bound ``target`` was registered with."""
    return _BOUNDS[id(target)]


def memoize(name: str, *, bound: int, key: str, holds: str) -> Callable[[F], F]:
    """A decorator: the function memoised in a registered bounded ``lru_cache`` (its arguments must be
    hashable and state everything it reads), or left as it is under ``NDVAL_NO_CACHE=1``."""
    def wrap(func: F) -> F:
        info = StoreInfo(name, bound, key, holds, "memoize")
        if not ENABLED:
            _register(info, lambda: None)
            return func
        cached = functools.lru_cache(maxsize=bound)(func)
        _register(info, cached.cache_clear)
        return cached  # type: ignore[return-value]

    return wrap


def clear_all() -> None:
    """Empty every registered store and memoised function."""
    for _, clear in list(_REGISTRY.values()):
        clear()


def stores() -> list[StoreInfo]:
    """Every registered store and memoised function, in registration order."""
    return [info for info, _ in _REGISTRY.values()]


def shared_value(target: Store, key: Hashable, held: tuple[object, ...], compute: Callable[..., T], *args: Any) -> T:
    """``compute(*args)`` kept in ``target`` under ``key``; ``held``: the instances ``key`` names by ``id`` —
    an entry answers only while they are the same objects (it holds them, so their ids cannot be reused
    meanwhile). Full: every entry forgotten."""
    hit = target.get(key)
    if hit is not None and (hit[0] is held or all(map(is_, hit[0], held))):
        return hit[1]  # type: ignore[no-any-return]
    value = compute(*args)
    if len(target) >= _BOUNDS[id(target)]:
        target.clear()
    target[key] = (held, value)
    return value


def held_value(target: Store, key: Hashable, owner: object, compute: Callable[..., T], *args: Any) -> T:
    """:func:`shared_value` for a key naming one instance, ``owner``, by ``id``."""
    hit = target.get(key)
    if hit is not None and hit[0] is owner:
        return hit[1]  # type: ignore[no-any-return]
    value = compute(*args)
    if len(target) >= _BOUNDS[id(target)]:
        target.clear()
    target[key] = (owner, value)
    return value
