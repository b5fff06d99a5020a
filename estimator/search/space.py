"""The layout space of a strategy search: dimensions, their values, and the layouts they span.

A space maps a dimension to the values tried: a dotted config field (``parallel.tp``,
``train.micro_batch_size``, ``recompute.mode`` ...) or the pseudo-dimension ``pipeline.split``,
which says how layers are placed on pipeline stages:

- ``even``: the config's even split over pp·vpp virtual stages (rejected when it does not divide);
- ``first-last``: Megatron's ``decoder_first/last_pipeline_num_layers`` with the middle ranks
  holding ⌊L/pp⌋ or ⌈L/pp⌉ layers and the first and last rank sharing the rest
  (``estimator.inputs.pipeline_split.first_last_split`` checks and places them);
- ``account``: Megatron's ``account_for_embedding_in_pipeline_split`` and/or
  ``account_for_loss_in_pipeline_split`` where (L + 1) or (L + 2) splits evenly.

``parallel.dp`` is derived: devices / (tp·pp·cp). The global batch is held fixed (or swept as
``train.global_batch_size``), so each layout gets its own number of micro-batches. When the space
sweeps ``parallel.vpp`` but not ``parallel.schedule``, vpp > 1 runs the ``interleaved`` schedule
and vpp = 1 the base schedule (``1f1b`` when the base is interleaved).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from estimator.config.errors import did_you_mean
from estimator.config.schema import EstimatorConfig
from estimator.config.sections import MAX_INT
from ndval.core.yamlsrc import CaseError, parse_text

#: the pseudo-dimension for pipeline layer placement, and its values
SPLIT_DIM = "pipeline.split"
SPLIT_KINDS = ("even", "first-last", "account")
#: the config fields that state a pipeline split (mutually exclusive; cleared when a search places layers)
SPLIT_FIELDS = (
    "layers_per_stage", "pipeline_layout", "decoder_first_pipeline_num_layers",
    "decoder_last_pipeline_num_layers", "account_for_embedding_in_pipeline_split",
    "account_for_loss_in_pipeline_split",
)
#: short names accepted on the command line
ALIASES = {
    "tp": "parallel.tp", "pp": "parallel.pp", "vpp": "parallel.vpp", "ep": "parallel.ep",
    "etp": "parallel.etp", "cp": "parallel.cp", "mb": "train.micro_batch_size",
    "micro_batch_size": "train.micro_batch_size", "recompute": "recompute.mode",
    "schedule": "parallel.schedule", "split": SPLIT_DIM,
}
#: fields a search derives itself (never a dimension)
DERIVED = ("parallel.dp", "hardware.devices", "train.num_micro_batches")
#: the space swept when the caller gives none
DEFAULT_SPACE: dict[str, tuple[Any, ...]] = {
    "parallel.tp": (1, 2, 4, 8),
    "parallel.pp": (1, 2, 4, 8),
    "parallel.ep": (1, 2, 4, 8),
    "recompute.mode": ("none", "selective", "full"),
}
#: dimensions whose values must be integers ≥ 1 (parallel degrees, micro-batch, global batch, sequence)
INTEGER_DIMS = ("parallel.tp", "parallel.pp", "parallel.vpp", "parallel.ep", "parallel.etp", "parallel.cp",
                "train.micro_batch_size", "train.global_batch_size", "train.seq_length")
#: most values one dimension may list, and most layouts one space may span (a typo guard)
MAX_VALUES_PER_DIM = 4096
MAX_LAYOUTS = 10**9


class SpaceError(ValueError):
    """A malformed search space: the dimension and the rule it breaks."""

    def __init__(self, dimension: str, rule: str) -> None:
        self.dimension = dimension
        self.rule = rule
        super().__init__(f"{dimension}: {rule}" if dimension else rule)


def _field_paths(model: Any, prefix: str = "") -> Iterator[str]:
    """Every dotted field path of the config schema (sections recursed)."""
    for name, info in getattr(model, "model_fields", {}).items():
        path = f"{prefix}{name}"
        yield path
        ann = info.annotation
        for sub in getattr(ann, "__args__", (ann,)):
            if hasattr(sub, "model_fields"):
                yield from _field_paths(sub, path + ".")


KNOWN_FIELDS: frozenset[str] = frozenset(_field_paths(EstimatorConfig))


def check_dimension(name: str) -> str:
    """The canonical dimension name for ``name`` (alias resolved); ``SpaceError`` when unknown."""
    name = ALIASES.get(name, name)
    if name in DERIVED:
        raise SpaceError(name, "is derived by the search (from the devices and the global batch), not a dimension")
    if name != SPLIT_DIM and name not in KNOWN_FIELDS:
        hint = did_you_mean(name, [*KNOWN_FIELDS, *ALIASES, SPLIT_DIM])
        raise SpaceError(name, "unknown dimension" + (f" ({hint})" if hint else "")
                         + "; e.g. --space parallel.tp=1,2,4,8 --space pipeline.split=even,first-last")
    return name


def _scalar(text: str) -> Any:
    """One value as a YAML 1.2 scalar (``2`` -> 2, ``true`` -> True, ``full`` -> "full"; ``010`` -> 10, ``yes`` and
    ``1:0`` stay strings), under the case loader's limits."""
    try:
        value = parse_text(text, "--space value", yaml12=True)
    except CaseError:
        return text
    return text if isinstance(value, (dict, list)) or value is None else value


def parse_space(specs: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    """``["parallel.tp=1,2,4", "recompute.mode=none,full"]`` -> ``{"parallel.tp": (1, 2, 4), ...}``.

    Raises ``SpaceError`` for a spec without ``=``, an unknown or repeated dimension, an empty value
    list, more than :data:`MAX_VALUES_PER_DIM` values, or an unknown ``pipeline.split`` kind.
    """
    space: dict[str, tuple[Any, ...]] = {}
    for spec in specs:
        key, sep, values = spec.partition("=")
        if not sep:
            raise SpaceError(spec, "expected DIMENSION=V1,V2,... (e.g. parallel.tp=1,2,4,8)")
        name = check_dimension(key.strip())
        if name in space:
            raise SpaceError(name, "given twice; list every value in one --space")
        items = tuple(_scalar(v.strip()) for v in values.split(",") if v.strip())
        space[name] = check_values(name, items)
    if not space:
        raise SpaceError("", "the space is empty: give at least one --space DIMENSION=V1,V2,...")
    return space


def check_values(name: str, values: Sequence[Any]) -> tuple[Any, ...]:
    """The values of one dimension, checked: non-empty, bounded, integers ≥ 1 for
    :data:`INTEGER_DIMS`, known split kinds; duplicates removed (order kept)."""
    if not values:
        raise SpaceError(name, "has no values")
    if len(values) > MAX_VALUES_PER_DIM:
        raise SpaceError(name, f"lists {len(values)} values; at most {MAX_VALUES_PER_DIM}")
    if name in INTEGER_DIMS:
        bad_int = next((v for v in values if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_INT),
                       None)
        if bad_int is not None:
            raise SpaceError(name, f"values must be integers ≥ 1; got {bad_int!r}")
    if name == SPLIT_DIM:
        bad = [v for v in values if v not in SPLIT_KINDS]
        if bad:
            raise SpaceError(name, f"unknown split kind(s) {bad}; known: {', '.join(SPLIT_KINDS)}")
    return tuple(dict.fromkeys(values))


def space_size(space: Mapping[str, Sequence[Any]]) -> int:
    """Number of points of the product (before splits expand and rules reject)."""
    return math.prod(len(v) for v in space.values())


def check_size(space: Mapping[str, Sequence[Any]], bound: int = MAX_LAYOUTS) -> None:
    """Refuse, up front, a space of more than ``bound`` points: ``SpaceError`` with its size, the largest
    dimensions and how to narrow it (a 6.4·10^10-point space would otherwise run for weeks with no total)."""
    size = space_size(space)
    if size <= bound:
        return
    widest = sorted(space.items(), key=lambda kv: -len(kv[1]))[:3]
    dims = ", ".join(f"{k} ({len(v)} values)" for k, v in widest)
    raise SpaceError("<space>", f"{size:.3g} layouts, more than {bound:.0e}: narrow the widest dimensions "
                     f"({dims}) with --space NAME=v1,v2,... or search in several runs")


# --------------------------------------------------------------------------------------------
# pipeline splits


@dataclass(frozen=True)
class Split:
    """One way to place layers on the pipeline: its label and the config fields that state it."""

    label: str
    fields: tuple[tuple[str, Any], ...] = ()


def first_last_splits(num_layers: int, pp: int, vpp: int) -> list[Split]:
    """Megatron first/last-stage splits: middle ranks hold k ∈ {⌊L/pp⌋, ⌈L/pp⌉} layers, the first
    and last rank share r = L − (pp−2)·k as ⌈r/2⌉/⌊r/2⌋ (both orders); each count ≥ 1 and divisible
    by vpp (Megatron asserts it). With pp = 2 there is no middle: first + last = L. Splits equal
    to the even one are left to ``even``."""
    if pp < 2:
        return []
    out: dict[tuple[int, int], Split] = {}
    for k in sorted({num_layers // pp, -(-num_layers // pp)}) if pp > 2 else [0]:
        rest = num_layers - (pp - 2) * k
        for first, last in ((rest - rest // 2, rest // 2), (rest // 2, rest - rest // 2)):
            if (pp > 2 and k < 1) or first < 1 or last < 1 or (first, last) in out:
                continue
            if k % vpp or first % vpp or last % vpp or first == last == k:
                continue
            out[(first, last)] = Split(
                f"first-last {first}/{k}/{last}" if pp > 2 else f"first-last {first}/{last}",
                (("parallel.decoder_first_pipeline_num_layers", first),
                 ("parallel.decoder_last_pipeline_num_layers", last)),
            )
    return list(out.values())


def account_splits(num_layers: int, pp: int, vpp: int) -> list[Split]:
    """Embedding and/or loss counted as a layer, where L + (1 or 2) slots split over pp·vpp."""
    if pp < 2:
        return []
    chunks = pp * vpp
    out = []
    for emb, loss in ((True, True), (True, False), (False, True)):
        slots = num_layers + emb + loss
        if slots % chunks == 0 and slots // chunks > 1:
            label = "account " + "+".join(n for n, on in (("E", emb), ("L", loss)) if on)
            out.append(Split(label, (("parallel.account_for_embedding_in_pipeline_split", emb),
                                     ("parallel.account_for_loss_in_pipeline_split", loss))))
    return out


def splits_for(kinds: Sequence[str], num_layers: int, pp: int, vpp: int, *, asked: bool = True) -> list[Split]:
    """The splits of ``kinds`` for one (pp, vpp). ``even`` is offered whenever the caller asked for
    it (the config then judges it); when the kinds were defaulted, only where L divides by pp·vpp."""
    out: list[Split] = []
    for kind in kinds:
        if kind == "even":
            if asked or num_layers % (pp * vpp) == 0:
                out.append(Split("even"))
        elif kind == "first-last":
            out += first_last_splits(num_layers, pp, vpp)
        else:
            out += account_splits(num_layers, pp, vpp)
    return out


# --------------------------------------------------------------------------------------------
# layouts


@dataclass(frozen=True)
class Layout:
    """One point of the space: the overrides to apply to the base config (dp, devices included)."""

    overrides: tuple[tuple[str, Any], ...]
    split: str = "even"

    def as_dict(self) -> dict[str, Any]:
        return dict(self.overrides)


@dataclass(frozen=True)
class SkippedLayout:
    """A point rejected before any config is built (the device count does not divide)."""

    overrides: tuple[tuple[str, Any], ...]
    reason: str
    message: str


def with_schedule(point: dict[str, Any], space: Mapping[str, Any], base_schedule: str) -> None:
    """vpp > 1 runs ``interleaved`` when the space does not sweep the schedule itself."""
    if "parallel.vpp" in space and "parallel.schedule" not in space:
        vpp = point["parallel.vpp"]
        if isinstance(vpp, int) and vpp > 1:
            point["parallel.schedule"] = "interleaved"
        elif base_schedule == "interleaved":
            point["parallel.schedule"] = "1f1b"


def layouts(
    base: EstimatorConfig, devices: int, space: Mapping[str, Sequence[Any]],
) -> Iterator[Layout | SkippedLayout]:
    """Every point of ``space`` on ``devices`` devices, uneven splits expanded, in a fixed order.

    dp = devices/(tp·pp·cp); a point where that is not an integer is a :class:`SkippedLayout`
    with reason ``devices not divisible``. When the space sweeps pp or vpp without naming
    ``pipeline.split``, every split kind is tried (the base config's own split is then cleared by
    the evaluator, see :data:`SPLIT_FIELDS`).
    """
    keys = [k for k in space if k != SPLIT_DIM]
    kinds = tuple(space.get(SPLIT_DIM, ()))
    asked = bool(kinds)
    if not kinds and ("parallel.pp" in space or "parallel.vpp" in space):
        kinds = SPLIT_KINDS
    p = base.parallel
    for combo in itertools.product(*(space[k] for k in keys)):
        point = dict(zip(keys, combo, strict=True))
        tp, pp, cp = (int(point.get(f"parallel.{d}", getattr(p, d))) for d in ("tp", "pp", "cp"))
        vpp = int(point.get("parallel.vpp", p.vpp))
        with_schedule(point, space, p.schedule)
        denom = tp * pp * cp
        if devices % denom:
            yield SkippedLayout(tuple(point.items()), "devices not divisible",
                                f"{devices} devices are not divisible by tp·pp·cp = {denom}")
            continue
        point["parallel.dp"] = devices // denom
        point["hardware.devices"] = devices
        if not kinds:
            yield Layout(tuple(point.items()))
            continue
        for split in splits_for(kinds, base.model.num_layers, pp, vpp, asked=asked):
            yield Layout(tuple(point.items()) + split.fields, split.label)
