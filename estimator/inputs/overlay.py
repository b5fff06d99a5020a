"""Per-run hardware overlay: device efficiencies that replace the preset's (``ndval estimate
--hardware-overlay``, cases' ``params.hardware_overlay_from``; written by ``ndval calibrate
--from-profile``).

File (YAML)::

    hardware: a100-80g            # optional: the preset the numbers were measured for
    efficiency:                   # any subset of estimator.inputs.hardware.DeviceEfficiency's fields
      matmul: [[0, 0.62]]         # (min GFLOP, efficiency) rows
      memory: [[0, 0.55]]         # (min MB, efficiency) rows
      kernel_latency_us: 6.0
      sources: {matmul: "..."}    # field -> where the number comes from
    network:                      # per network level of the hardware, by name: any subset of
      nvlink3:                    # estimator.inputs.hardware.NetworkLevel's efficiency / latency fields
        efficiency: 0.78
        latency_us: 3.4
        call_latency_us: 8.4
        collectives: {all_to_all: {efficiency: 0.6, latency_us: 3.4}}
        sources: {efficiency: "..."}
    fit: {...}                    # optional, informational (the calibration's per-class fit)
    host_layers: [...]            # optional, informational (host time per repeated layer, calibrate)

At least one of ``efficiency`` and ``network``. Unknown keys, a negative or out-of-range efficiency,
a level the hardware does not have, or a hardware without an efficiency block that the overlay does
not complete raise :class:`ConfigError` naming the file and field. An overlay that sets a GEMM factor
(``matmul``, the grouped tables, ``fp8_matmul`` ...) and no ``gemm_rate`` drops the preset's measured rate (:mod:`estimator.inputs.gemm_rates`): its factors were measured on the device itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from estimator.config.errors import ConfigError, did_you_mean
from estimator.inputs.gemm_rates import GEMM_FIELDS
from estimator.inputs.hardware import DeviceEfficiency, NetworkLevel
from ndval.core.yamlsrc import CaseError, read_plain

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig

TOP_KEYS = ("hardware", "efficiency", "network", "fit", "host_layers", "source")
EFFICIENCY_KEYS = tuple(DeviceEfficiency.model_fields)
#: the fields of a network level an overlay may set (its name, size and bandwidth stay the preset's)
LEVEL_KEYS = ("efficiency", "latency_us", "call_latency_us", "collectives", "sources")


@dataclass(frozen=True)
class Overlay:
    """A checked overlay file: the preset it was measured for (``hardware``, optional), the
    ``efficiency`` mapping (fields of :class:`DeviceEfficiency` plus ``sources``) and its ``source`` line."""

    file: str
    hardware: str | None
    efficiency: dict[str, Any]
    source: str | None = None
    network: dict[str, dict[str, Any]] | None = None

    def fields(self) -> list[str]:
        """The fields the overlay sets (``sources`` excluded): efficiency fields, ``network.<level>.<field>``."""
        net = [f"network.{lv}.{k}" for lv, fields in (self.network or {}).items() for k in fields if k != "sources"]
        return [k for k in self.efficiency if k != "sources"] + net

    def values(self) -> dict[str, Any]:
        """Field (as :meth:`fields` names it) -> value."""
        out = {k: v for k, v in self.efficiency.items() if k != "sources"}
        for lv, fields in (self.network or {}).items():
            out |= {f"network.{lv}.{k}": v for k, v in fields.items() if k != "sources"}
        return out

    def sources(self) -> dict[str, str]:
        """Field -> citation, network fields as ``network.<level>.<field>``."""
        out = dict(self.efficiency.get("sources", {}))
        for lv, fields in (self.network or {}).items():
            out |= {f"network.{lv}.{k}": v for k, v in (fields.get("sources") or {}).items()}
        return out


def read_overlay(path: str | Path) -> Overlay:
    """The overlay file at ``path``, keys and values checked (see the module docstring)."""
    file = str(path)
    try:  # the case loader's limits: aliases, depth, a regular file (not a FIFO or /dev/zero)
        doc = read_plain(Path(path))
    except CaseError as exc:
        raise ConfigError(exc.field if exc.field != "<root>" else "hardware_overlay",
                          exc.rule.replace("cannot read:", "cannot read the overlay:", 1), file=file,
                          line=exc.line) from None
    if not isinstance(doc, dict) or not (isinstance(doc.get("efficiency"), dict) or isinstance(doc.get("network"), dict)):
        raise ConfigError("efficiency", "an overlay is a mapping with an 'efficiency' or a 'network' mapping", file=file)
    for key in doc:
        if key not in TOP_KEYS:
            raise ConfigError(str(key), f"unknown overlay key; expected one of {', '.join(TOP_KEYS)}", file=file,
                              hint=_hint(str(key), TOP_KEYS))
    eff: dict[str, Any] = doc.get("efficiency") or {}
    if not isinstance(eff, dict):
        raise ConfigError("efficiency", "a mapping of efficiency fields", file=file)
    for key, value in eff.items():
        if key not in EFFICIENCY_KEYS:
            raise ConfigError(f"efficiency.{key}", f"unknown efficiency class; expected one of "
                              f"{', '.join(EFFICIENCY_KEYS)}", file=file, hint=_hint(str(key), EFFICIENCY_KEYS))
        _check_values(file, key, value)
    network = _network_section(file, doc.get("network"))
    hardware = doc.get("hardware")
    if hardware is not None and not isinstance(hardware, str):
        raise ConfigError("hardware", f"a preset name; got {hardware!r}", file=file)
    return Overlay(file, hardware, eff, str(doc["source"]) if doc.get("source") is not None else None, network)


def _network_section(file: str, section: Any) -> dict[str, dict[str, Any]] | None:
    """The ``network`` mapping: level name -> fields of :data:`LEVEL_KEYS`, each checked by
    :class:`NetworkLevel`'s own rules (a ConfigError naming ``network.<level>.<field>``)."""
    if section is None:
        return None
    if not isinstance(section, dict):
        raise ConfigError("network", "a mapping of level name -> fields", file=file)
    for level, fields in section.items():
        if not isinstance(fields, dict):
            raise ConfigError(f"network.{level}", f"a mapping of {', '.join(LEVEL_KEYS)}", file=file)
        for key in fields:
            if key not in LEVEL_KEYS:
                raise ConfigError(f"network.{level}.{key}", f"unknown level field; expected one of "
                                  f"{', '.join(LEVEL_KEYS)}", file=file, hint=_hint(str(key), LEVEL_KEYS))
        try:  # the level's own rules on a stand-in level (name, size and bandwidth are the preset's)
            NetworkLevel.model_validate({"name": str(level), "bandwidth_gb_s": 1.0, **fields})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"network.{level}.{where}", first["msg"], file=file) from None
    return section


def load_overlay(path: str | Path) -> dict[str, Any]:
    """The ``efficiency`` mapping of an overlay file, keys and values checked (:func:`read_overlay`)."""
    return read_overlay(path).efficiency


def _hint(key: str, known: tuple[str, ...]) -> str | None:
    close = did_you_mean(key, known)
    return f"did you mean {close!r}?" if close else None


def _check_values(file: str, key: str, value: Any) -> None:
    """Efficiencies in (0, 1], sizes, bandwidth and latency ≥ 0 (one error naming the field)."""
    field = f"efficiency.{key}"
    if key in ("matmul", "memory"):
        if not isinstance(value, list) or not value:
            raise ConfigError(field, "a list of [min size, efficiency] rows", file=file)
        for row in value:
            if not (isinstance(row, list | tuple) and len(row) == 2 and all(isinstance(x, int | float) for x in row)):
                raise ConfigError(field, f"each row is [min size, efficiency]; got {row!r}", file=file)
            if not 0 < row[1] <= 1 or row[0] < 0:
                raise ConfigError(field, f"efficiency must be in (0, 1] and size >= 0; got {row!r}", file=file)
    elif key in ("attention_fwd", "attention_bwd", "grouped_matmul", "permute_memory_fwd", "permute_memory_bwd"):
        if not isinstance(value, int | float) or not 0 < value <= 1:
            raise ConfigError(field, f"efficiency must be in (0, 1]; got {value!r}", file=file)
    elif key in ("hbm_gb_s", "kernel_latency_us", "cast_kernel_latency_us") and (
            not isinstance(value, int | float) or value < 0 or (key == "hbm_gb_s" and value == 0)):
        raise ConfigError(field, f"must be a number {'> 0' if key == 'hbm_gb_s' else '>= 0'}; got {value!r}",
                          file=file)


def apply_overlay(cfg: EstimatorConfig, path: str | Path) -> EstimatorConfig:
    """``cfg`` with its hardware efficiencies replaced field by field by the overlay at ``path``."""
    return overlay_config(cfg, read_overlay(path))


def overlay_config(cfg: EstimatorConfig, overlay: Overlay) -> EstimatorConfig:
    """``cfg`` with its hardware efficiencies and network-level factors replaced field by field by
    ``overlay`` (a :class:`ConfigError` naming the overlay's file when the merged efficiency block is
    incomplete or a level does not exist on the hardware)."""
    update: dict[str, Any] = {}
    eff = overlay.efficiency
    if any(k != "sources" for k in eff):
        base = cfg.hardware.efficiency.model_dump() if cfg.hardware.efficiency else {}
        sources = {**base.get("sources", {}), **eff.get("sources", {})}
        merged = {**base, **{k: v for k, v in eff.items() if k != "sources"}, "sources": sources}
        if any(k in GEMM_FIELDS for k in eff) and "gemm_rate" not in eff:
            # GEMM factors measured on the device itself: the preset's measured rate against another device goes
            merged["gemm_rate"] = None
        try:
            update["efficiency"] = DeviceEfficiency.model_validate(merged)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"efficiency.{where}" if where else "efficiency",
                              f"{first['msg']} (hardware {cfg.hardware.name!r} has "
                              f"{'no' if not base else 'an'} efficiency block to complete)", file=overlay.file) from None
    if overlay.network:
        update["levels"] = _overlaid_levels(cfg, overlay)
    hardware = cfg.hardware.model_copy(update=update)
    return cfg.model_copy(update={"hardware": hardware})


def _overlaid_levels(cfg: EstimatorConfig, overlay: Overlay) -> list[NetworkLevel]:
    """The hardware's levels with the overlay's fields merged in (``collectives`` and ``sources`` per key)."""
    by_name = {lv.name: lv for lv in cfg.hardware.levels}
    for name in overlay.network or {}:
        if name not in by_name:
            raise ConfigError(f"network.{name}", f"hardware {cfg.hardware.name!r} has no level {name!r}; its levels: "
                              f"{', '.join(by_name)}", file=overlay.file, hint=_hint(name, tuple(by_name)))
    out = []
    for lv in cfg.hardware.levels:
        fields = (overlay.network or {}).get(lv.name)
        if not fields:
            out.append(lv)
            continue
        base = lv.model_dump()
        merged = {**base, **fields, "collectives": {**base["collectives"], **fields.get("collectives", {})},
                  "sources": {**base["sources"], **fields.get("sources", {})}}
        out.append(NetworkLevel.model_validate(merged))
    return out
