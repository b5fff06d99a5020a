"""Every threshold the analyzer reasons with, as data: value, relation, unit, rationale, source.

The defaults live in ``thresholds_default.yaml`` (seed ``profiling-analysis-reasoning.zh.md`` §2, §4, §6.3,
plus a few of ndval's own, each marked as such). A YAML file can override any value::

    hostOnlyGate: 35                      # flat form
    thresholds:                           # or nested, optionally with saturation
      commShareGate: {value: 10}

The same file holds the analyzer's other judgement numbers under ``parameters:`` (bottleneck score weights,
gain factors, the priority formula, comparison tolerances): value, unit, rationale, source, no relation (they
are coefficients, not gates). They load with the same loader and are overridden the same way (by id, flat or
under ``thresholds:``); ``Thresholds.v(id)`` reads either kind.

Unknown ids, non-numeric values and unknown relations are errors naming the file, the field and the rule.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ndval.core import cache
from ndval.core.yamlsrc import FAST_SAFE_LOADER, CaseError, read_plain

RELATIONS = (">=", ">", "<=", "<")


class ThresholdError(ValueError):
    """Bad threshold data: names the file, the field and the rule broken."""


@dataclass(frozen=True)
class Threshold:
    """One gate: ``value`` compared by ``relation``; ``saturation`` where severity reaches 1."""

    id: str
    value: float
    relation: str
    unit: str
    rationale: str
    source: str
    group: str = ""
    saturation: float | None = None

    @property
    def upper(self) -> bool:
        """True for gates reached from below (``>=``, ``>``)."""
        return self.relation.startswith(">")

    @property
    def effective_saturation(self) -> float:
        """Saturation point: the explicit one, else 2 x gate (upper gates) or gate / 2 (lower gates)."""
        if self.saturation is not None:
            return self.saturation
        return self.value * 2 if self.upper else self.value / 2

    def describe(self) -> str:
        """``>= 45 %`` — the rule in words, for evidence rows."""
        return f"{self.relation} {_fmt(self.value)} {self.unit}".strip()

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (stable keys)."""
        return {
            "id": self.id, "value": self.value, "relation": self.relation, "unit": self.unit,
            "saturation": self.effective_saturation, "rationale": self.rationale, "source": self.source,
            "group": self.group,
        }


@dataclass(frozen=True)
class Parameter:
    """One judgement number that is not a gate (a weight, factor, cap or tolerance): ``value`` in ``unit``."""

    id: str
    value: float
    unit: str
    rationale: str
    source: str
    group: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (stable keys)."""
        return {"id": self.id, "value": self.value, "unit": self.unit, "rationale": self.rationale,
                "source": self.source, "group": self.group}


def _fmt(x: float) -> str:
    return f"{x:g}"


def passes(value: float | None, rule: Threshold) -> bool:
    """Whether ``value`` reaches the gate; an unavailable (None/NaN) value never does."""
    if value is None or not math.isfinite(value):
        return False
    return {
        ">=": value >= rule.value, ">": value > rule.value,
        "<=": value <= rule.value, "<": value < rule.value,
    }[rule.relation]


def clamp01(x: float) -> float:
    """Clamp to [0, 1]."""
    return min(1.0, max(0.0, x))


def severity(value: float | None, rule: Threshold) -> float:
    """Seed §2 severity of ``value`` against a gate.

    ``0`` when the gate is not reached (a gate, not a gradient); otherwise
    ``0.5 + 0.5 * clamp01((v - gate) / (saturation - gate))`` — for lower gates the distances are
    mirrored: ``(gate - v) / (gate - saturation)``.
    """
    if not passes(value, rule):
        return 0.0
    assert value is not None
    sat = rule.effective_saturation
    span = (sat - rule.value) if rule.upper else (rule.value - sat)
    dist = (value - rule.value) if rule.upper else (rule.value - value)
    return 0.5 + 0.5 * clamp01(dist / max(1e-9, span))


class Thresholds(Mapping[str, Threshold]):
    """Immutable set of thresholds by id (plus the non-gate :class:`Parameter` s); ``with_overrides``
    returns a new set. As a mapping it holds the gates only (what an analysis records as its thresholds)."""

    def __init__(self, items: Mapping[str, Threshold], origin: str = "defaults",
                 parameters: Mapping[str, Parameter] | None = None) -> None:
        self._items = dict(items)
        self._params = dict(parameters or {})
        self.origin = origin

    def __getitem__(self, key: str) -> Threshold:
        try:
            return self._items[key]
        except KeyError:
            raise KeyError(f"unknown threshold id {key!r}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def v(self, key: str) -> float:
        """The numeric value of threshold or parameter ``key``."""
        if key in self._params:
            return self._params[key].value
        return self[key].value

    @property
    def parameters(self) -> Mapping[str, Parameter]:
        """The non-gate judgement numbers by id (read-only view)."""
        return dict(self._params)

    def with_overrides(self, overrides: Mapping[str, Any], origin: str = "overrides") -> Thresholds:
        """New set with ``overrides`` (``{id: number | {value, saturation}}``) applied; validated."""
        items, params = dict(self._items), dict(self._params)
        for key, raw in overrides.items():
            if key not in items and key not in params:
                known = ", ".join(sorted([*items, *params]))
                raise ThresholdError(f"{origin}: field {key!r}: unknown threshold id (known: {known})")
            allowed = ("value", "saturation", "rationale") if key in items else ("value", "rationale")
            fields = raw if isinstance(raw, Mapping) else {"value": raw}
            unknown = set(fields) - set(allowed)
            if unknown:
                raise ThresholdError(f"{origin}: field {key!r}: unknown keys {sorted(unknown)} (allowed: {', '.join(allowed)})")
            changes: dict[str, Any] = {}
            for name in ("value", "saturation"):
                if name in fields:
                    changes[name] = _number(fields[name], f"{origin}: field {key}.{name}")
            if "rationale" in fields:
                changes["rationale"] = str(fields["rationale"])
            if key in items:
                items[key] = replace(items[key], **changes)
            else:
                params[key] = replace(params[key], **changes)
        return Thresholds(items, origin=origin, parameters=params)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """All thresholds (gates) as plain data, keyed by id."""
        return {k: t.to_dict() for k, t in self._items.items()}

    def parameters_dict(self) -> dict[str, dict[str, Any]]:
        """All parameters as plain data, keyed by id."""
        return {k: p.to_dict() for k, p in self._params.items()}

    def all_values(self) -> dict[str, float]:
        """Every number by id, thresholds and parameters alike (to tell two sets apart)."""
        return {**{k: t.value for k, t in self._items.items()}, **{k: p.value for k, p in self._params.items()}}


def _number(raw: Any, where: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(float(raw)):
        raise ThresholdError(f"{where}: must be a finite number, got {raw!r}")
    return float(raw)


def _parse_entry(key: str, raw: Any, origin: str) -> Threshold:
    if not isinstance(raw, Mapping):
        raise ThresholdError(f"{origin}: field {key!r}: must be a mapping with value/relation/unit/rationale/source")
    for need in ("value", "relation", "unit", "rationale", "source"):
        if need not in raw:
            raise ThresholdError(f"{origin}: field {key}.{need}: required")
    if raw["relation"] not in RELATIONS:
        raise ThresholdError(f"{origin}: field {key}.relation: must be one of {RELATIONS}, got {raw['relation']!r}")
    sat = raw.get("saturation")
    return Threshold(
        id=key, value=_number(raw["value"], f"{origin}: field {key}.value"), relation=raw["relation"],
        unit=str(raw["unit"]), rationale=str(raw["rationale"]), source=str(raw["source"]),
        group=str(raw.get("group", "")),
        saturation=None if sat is None else _number(sat, f"{origin}: field {key}.saturation"),
    )


def _parse_parameter(key: str, raw: Any, origin: str) -> Parameter:
    if not isinstance(raw, Mapping):
        raise ThresholdError(f"{origin}: field parameters.{key}: must be a mapping with value/unit/rationale/source")
    for need in ("value", "unit", "rationale", "source"):
        if need not in raw:
            raise ThresholdError(f"{origin}: field parameters.{key}.{need}: required")
    if "relation" in raw:
        raise ThresholdError(f"{origin}: field parameters.{key}.relation: a parameter is not a gate and has no relation")
    return Parameter(id=key, value=_number(raw["value"], f"{origin}: field parameters.{key}.value"),
                     unit=str(raw["unit"]), rationale=str(raw["rationale"]), source=str(raw["source"]),
                     group=str(raw.get("group", "")))


@cache.memoize("analyzer.default_thresholds", bound=1, key="()", holds="the bundled thresholds (immutable)")
def default_thresholds() -> Thresholds:
    """The seed's defaults (``thresholds_default.yaml``): thresholds and parameters (read once; immutable)."""
    text = resources.files("analyzer").joinpath("thresholds_default.yaml").read_text(encoding="utf-8")
    data = yaml.load(text, Loader=FAST_SAFE_LOADER)
    origin = "analyzer/thresholds_default.yaml"
    items = {k: _parse_entry(k, v, origin) for k, v in data["thresholds"].items()}
    params = {k: _parse_parameter(k, v, origin) for k, v in data.get("parameters", {}).items()}
    clash = sorted(set(items) & set(params))
    if clash:
        raise ThresholdError(f"{origin}: field parameters: ids also defined as thresholds: {clash}")
    return Thresholds(items, origin="defaults", parameters=params)


def load_overrides(path: str | Path) -> dict[str, Any]:
    """Read an override file; returns ``{id: value-or-mapping}``. Errors name the file."""
    p = Path(path)
    if not p.exists():
        raise ThresholdError(f"{p}: threshold file not found")
    try:  # the case loader's limits: nested aliases (a 400-byte "billion laughs"), depth, a regular file
        data = read_plain(p)
    except CaseError as exc:
        raise ThresholdError(exc.render()) from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ThresholdError(f"{p}: top level must be a mapping of threshold id -> value")
    if "thresholds" in data:
        inner = data["thresholds"]
        if not isinstance(inner, Mapping):
            raise ThresholdError(f"{p}: field 'thresholds': must be a mapping of threshold id -> value")
        return dict(inner)
    return {k: v for k, v in data.items() if k != "version"}


def resolve(thresholds: Thresholds | Mapping[str, Any] | str | Path | None) -> Thresholds:
    """Accept None (defaults), a ``Thresholds``, an override mapping or a YAML path."""
    if thresholds is None:
        return default_thresholds()
    if isinstance(thresholds, Thresholds):
        return thresholds
    if isinstance(thresholds, str | Path):
        return default_thresholds().with_overrides(load_overrides(thresholds), origin=str(thresholds))
    return default_thresholds().with_overrides(thresholds)
