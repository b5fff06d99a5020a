"""Values derived from one configuration, computed once per configuration instance.

A validated :class:`estimator.config.EstimatorConfig` is frozen (its sections too), and the
batched search's stand-ins (:class:`estimator.search.batched.ArrayConfig`) never change either, so
anything computed from one instance stays true for that instance. :func:`config_memo` gives each
instance its own dictionary for such values (the stage partition, the byte widths, per-kind layer
prices ...), shared by ``estimate_memory`` and ``estimate_perf`` and by every stage.

Keyed by the instance's identity, not its contents: two equal configs simply have two entries,
and a changed config is a new instance (``model_copy(update=...)``, ``load_config`` with
overrides), so no entry can answer for another config. Each entry holds its instance, so the id
cannot be reused while the entry lives; at most :data:`MAX_CONFIGS` instances are kept (the
oldest entry goes first).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")
R = TypeVar("R")

#: most configuration instances whose derived values are kept (a sweep prices one at a time)
MAX_CONFIGS = 32

_ENTRIES: dict[int, tuple[object, dict[Hashable, Any]]] = {}
_MISSING = object()


def config_memo(cfg: object) -> dict[Hashable, Any]:
    """The dictionary of values derived from the instance ``cfg`` (created empty on first use)."""
    entry = _ENTRIES.get(id(cfg))
    if entry is not None and entry[0] is cfg:
        return entry[1]
    while len(_ENTRIES) >= MAX_CONFIGS:
        try:
            _ENTRIES.pop(next(iter(_ENTRIES)), None)
        except (StopIteration, RuntimeError):  # emptied or resized by another thread meanwhile
            break
    memo: dict[Hashable, Any] = {}
    _ENTRIES[id(cfg)] = (cfg, memo)
    return memo


def derived(cfg: object, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``, evaluated once per instance ``cfg`` and ``key`` (:func:`config_memo`)."""
    entry = _ENTRIES.get(id(cfg))  # config_memo's fast path, inlined (this runs ~30 times per estimate)
    memo = entry[1] if entry is not None and entry[0] is cfg else config_memo(cfg)
    value = memo.get(key, _MISSING)
    if value is _MISSING:
        value = memo[key] = compute()
    return value  # type: ignore[no-any-return]


def clear() -> None:
    """Forget every instance (tests)."""
    _ENTRIES.clear()


class kept_property(Generic[R, T]):
    """``functools.cached_property`` without its lock (Python 3.11 takes an ``RLock`` on every first
    read): the value is computed on the first read and written into the instance's ``__dict__``,
    which later reads find first (a non-data descriptor). For records that never change (frozen
    dataclasses: the write bypasses their ``__setattr__``); two threads reading at once may both
    compute it, and get equal values."""

    def __init__(self, func: Callable[[R], T]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type[Any] | None = None) -> kept_property[R, T]: ...

    @overload
    def __get__(self, obj: R, owner: type[Any] | None = None) -> T: ...

    def __get__(self, obj: R | None, owner: type[Any] | None = None) -> T | kept_property[R, T]:
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.func(obj)
        return value
