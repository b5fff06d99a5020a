"""Values derived from one configuration, computed once per configuration instance.

A validated :class:`estimator.config.schema.EstimatorConfig` is frozen (its sections too), and the
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

from pydantic import BaseModel

from ndval.core import cache

T = TypeVar("T")
R = TypeVar("R")

#: most configuration instances whose derived values are kept (a sweep prices one at a time)
MAX_CONFIGS = 32

_ENTRIES = cache.store("estimator.config_values", bound=MAX_CONFIGS, key="id(config instance)",
                       holds="(the instance, its dictionary of derived values: stage partition, byte widths ...)")
_MISSING = object()


def config_memo(cfg: object) -> dict[Hashable, Any]:
    """The dictionary of values derived from the instance ``cfg`` (created empty on first use)."""
    entry = _ENTRIES.get(id(cfg))
    if entry is not None and entry[0] is cfg:
        return entry[1]  # type: ignore[no-any-return]
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


#: parallel fields no per-stage price reads: the pipeline split and schedule decide which layers a stage
#: holds (the callers' stage keys state them: kind runs, extras) and how stages overlap (``perf.assembly``,
#: the in-flight micro-batches of ``memory.stage``)
SPLIT_ONLY = frozenset({
    "vpp", "schedule", "layers_per_stage", "pipeline_layout", "decoder_first_pipeline_num_layers",
    "decoder_last_pipeline_num_layers", "account_for_embedding_in_pipeline_split",
    "account_for_loss_in_pipeline_split",
})
#: config sections keyed by value (a sweep validates them anew per layout), less the fields named;
#: every other section by identity (a sweep shares the instance)
_BY_VALUE = {"train": frozenset(), "parallel": SPLIT_ONLY, "recompute": frozenset()}
_CONTAINERS = (list, tuple, dict)


def pricing_key(cfg: object) -> tuple[tuple[object, ...], tuple[object, ...]] | None:
    """What a per-stage price (``perf.stage.stage_cost``, ``memory.stage.stage_fixed``) may read from
    ``cfg`` besides the stage, and the instances the key names: every field of every section but
    :data:`SPLIT_ONLY`, the train/parallel/recompute sections by value and the others (model,
    precision, hardware, options) by identity (held with the key, so their ids cannot be reused
    while kept). Built once per instance; None for the batched stand-ins (arrays, not a model)."""
    if not isinstance(cfg, BaseModel):
        return None
    return derived(cfg, "pricing_key", lambda: _pricing_key(cfg))


def _pricing_key(cfg: BaseModel) -> tuple[tuple[object, ...], tuple[object, ...]]:
    key: list[object] = []
    held: list[object] = []
    for name in type(cfg).model_fields:
        value = getattr(cfg, name)
        skip = _BY_VALUE.get(name)
        if skip is not None:  # (a validated model's __dict__ holds its fields, in their order)
            key.append(tuple(v if type(v) not in _CONTAINERS else _frozen(v)
                             for f, v in value.__dict__.items() if f not in skip))
        elif isinstance(value, BaseModel):
            key.append(id(value))
            held.append(value)
        else:
            key.append(value)
    return tuple(key), tuple(held)


def pricing_memo(cfg: object, user: str) -> dict[Hashable, Any]:
    """A dictionary for ``user``'s per-layer and per-stage prices of ``cfg`` (values that read ``cfg``
    only through :func:`pricing_key`, under keys that state everything else they read), shared by
    every config with the same pricing key; one per instance for the batched stand-ins. At most
    :data:`MAX_SHARED` are kept (all forgotten when full). Found once per instance and user (every stage
    asks), then kept with the instance (:func:`config_memo`)."""
    entry = _ENTRIES.get(id(cfg))  # config_memo's fast path, inlined (every stage asks)
    memo = entry[1] if entry is not None and entry[0] is cfg else config_memo(cfg)
    hit = memo.get(("prices", user))
    if hit is None:
        hit = memo["prices", user] = _shared_prices(cfg, user)
    return hit


def _shared_prices(cfg: object, user: str) -> dict[Hashable, Any]:
    shared = pricing_key(cfg)
    if shared is None:  # a batched stand-in: its own dictionary, kept with the instance
        return {}
    return cache.shared_value(_SHARED, (user, shared[0]), shared[1], dict)


#: most shared price dictionaries (:func:`pricing_memo`) kept
MAX_SHARED = 256
_SHARED = cache.store("estimator.price_dictionaries", bound=MAX_SHARED, key="(user, pricing key)",
                      holds="(the instances the pricing key names, a dictionary of per-layer/per-stage prices)")


def _frozen(value: object) -> object:
    """``value`` hashable: lists and tuples as tuples, mappings as (key, value) tuples in their order."""
    if isinstance(value, list | tuple):
        return tuple(map(_frozen, value))
    if isinstance(value, dict):
        return tuple((k, _frozen(v)) for k, v in value.items())
    return value


def with_kept_values(source: Any, record: R) -> R:
    """``record`` (a copy of ``source`` equal in every field the :class:`kept_property` values read)
    with the values ``source`` already derived: they are pure functions of those fields."""
    values = source.__dict__
    record.__dict__.update({k: values[k] for k in _kept_names(type(source)) if k in values})
    return record


@cache.memoize("estimator.kept_property_names", bound=64, key="record class", holds="its kept_property names")
def _kept_names(cls: type) -> frozenset[str]:
    return frozenset(k for c in cls.__mro__ for k, v in vars(c).items() if isinstance(v, kept_property))


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
