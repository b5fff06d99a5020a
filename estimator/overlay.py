"""Per-run hardware overlay: device efficiencies that replace the preset's (``ndval estimate
--hardware-overlay``, cases' ``params.hardware_overlay_from``; written by ``ndval calibrate
--from-profile``).

File (YAML)::

    hardware: a100-80g            # optional: the preset the numbers were measured for
    efficiency:                   # any subset of estimator.hardware.DeviceEfficiency's fields
      matmul: [[0, 0.62]]         # (min GFLOP, efficiency) rows
      memory: [[0, 0.55]]         # (min MB, efficiency) rows
      kernel_latency_us: 6.0
      sources: {matmul: "..."}    # field -> where the number comes from
    fit: {...}                    # optional, informational (the calibration's per-class fit)

Unknown keys, a negative or out-of-range efficiency, or a hardware without an efficiency block that
the overlay does not complete raise :class:`ConfigError` naming the file and field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from estimator.errors import ConfigError, did_you_mean
from estimator.hardware import DeviceEfficiency

if TYPE_CHECKING:
    from estimator.config import EstimatorConfig

TOP_KEYS = ("hardware", "efficiency", "fit", "source")
EFFICIENCY_KEYS = tuple(DeviceEfficiency.model_fields)


@dataclass(frozen=True)
class Overlay:
    """A checked overlay file: the preset it was measured for (``hardware``, optional), the
    ``efficiency`` mapping (fields of :class:`DeviceEfficiency` plus ``sources``) and its ``source`` line."""

    file: str
    hardware: str | None
    efficiency: dict[str, Any]
    source: str | None = None

    def fields(self) -> list[str]:
        """The efficiency fields the overlay sets (``sources`` excluded)."""
        return [k for k in self.efficiency if k != "sources"]


def read_overlay(path: str | Path) -> Overlay:
    """The overlay file at ``path``, keys and values checked (see the module docstring)."""
    file = str(path)
    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError("hardware_overlay", f"cannot read the overlay: {exc.strerror}", file=file) from None
    except yaml.YAMLError as exc:
        raise ConfigError("hardware_overlay", f"not valid YAML: {exc}", file=file) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("efficiency"), dict):
        raise ConfigError("efficiency", "an overlay is a mapping with an 'efficiency' mapping", file=file)
    for key in doc:
        if key not in TOP_KEYS:
            raise ConfigError(str(key), f"unknown overlay key; expected one of {', '.join(TOP_KEYS)}", file=file,
                              hint=_hint(str(key), TOP_KEYS))
    eff: dict[str, Any] = doc["efficiency"]
    for key, value in eff.items():
        if key not in EFFICIENCY_KEYS:
            raise ConfigError(f"efficiency.{key}", f"unknown efficiency class; expected one of "
                              f"{', '.join(EFFICIENCY_KEYS)}", file=file, hint=_hint(str(key), EFFICIENCY_KEYS))
        _check_values(file, key, value)
    hardware = doc.get("hardware")
    if hardware is not None and not isinstance(hardware, str):
        raise ConfigError("hardware", f"a preset name; got {hardware!r}", file=file)
    return Overlay(file, hardware, eff, str(doc["source"]) if doc.get("source") is not None else None)


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
    elif key in ("attention_fwd", "attention_bwd"):
        if not isinstance(value, int | float) or not 0 < value <= 1:
            raise ConfigError(field, f"efficiency must be in (0, 1]; got {value!r}", file=file)
    elif key in ("hbm_gb_s", "kernel_latency_us") and (
            not isinstance(value, int | float) or value < 0 or (key == "hbm_gb_s" and value == 0)):
        raise ConfigError(field, f"must be a number {'> 0' if key == 'hbm_gb_s' else '>= 0'}; got {value!r}",
                          file=file)


def apply_overlay(cfg: EstimatorConfig, path: str | Path) -> EstimatorConfig:
    """``cfg`` with its hardware efficiencies replaced field by field by the overlay at ``path``."""
    return overlay_config(cfg, read_overlay(path))


def overlay_config(cfg: EstimatorConfig, overlay: Overlay) -> EstimatorConfig:
    """``cfg`` with its hardware efficiencies replaced field by field by ``overlay`` (a
    :class:`ConfigError` naming the overlay's file when the merged block is incomplete)."""
    eff = overlay.efficiency
    base = cfg.hardware.efficiency.model_dump() if cfg.hardware.efficiency else {}
    sources = {**base.get("sources", {}), **eff.get("sources", {})}
    merged = {**base, **{k: v for k, v in eff.items() if k != "sources"}, "sources": sources}
    try:
        new_eff = DeviceEfficiency.model_validate(merged)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"efficiency.{where}" if where else "efficiency",
                          f"{first['msg']} (hardware {cfg.hardware.name!r} has "
                          f"{'no' if not base else 'an'} efficiency block to complete)", file=overlay.file) from None
    hardware = cfg.hardware.model_copy(update={"efficiency": new_eff})
    return cfg.model_copy(update={"hardware": hardware})
