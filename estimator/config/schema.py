"""Estimator configuration: schema (spec §3), options (spec §5), loading with precise errors.

``EstimatorConfig`` = profile + model + train + parallel + recompute + precision + hardware +
options (the sections live in ``estimator.config.sections``). It is frozen after validation and
rejects unknown fields. ``load_config`` reads a YAML file or a dict, resolves
``model: {ref: models/<name>.yaml}`` includes, applies ``a.b=c`` overrides
(``estimator.config.loading``), and turns every validation failure into one ``ConfigError`` naming
the field, the rule and (for YAML) the file and line.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from estimator.config.errors import ConfigError, did_you_mean
from estimator.config.loading import (
    BUNDLED_CASES_DIR,
    apply_overrides,
    line_for,
    parse_override,
    read_yaml,
    resolve_model_ref,
)
from estimator.config.options import OptionsConfig
from estimator.config.rules import first_broken
from estimator.config.sections import (
    PERF_PART_NAMES,
    RECOMPUTE_MODULES,
    AdapterConfig,
    ModelConfig,
    ParallelConfig,
    PrecisionConfig,
    RecomputeConfig,
    RecomputeMode,
    StrictSection,
    TrainConfig,
    config_rule,
)
from estimator.inputs.hardware import HardwareSpec, expand_hardware, preset_names
from ndval.core import cache

__all__ = [
    "BUNDLED_CASES_DIR",
    "PERF_PART_NAMES",
    "RECOMPUTE_MODULES",
    "AdapterConfig",
    "ConfigError",
    "EstimatorConfig",
    "ModelConfig",
    "OptionsConfig",
    "ParallelConfig",
    "PrecisionConfig",
    "RecomputeConfig",
    "RecomputeMode",
    "TrainConfig",
    "apply_overrides",
    "load_config",
    "parse_override",
]


#: validation context key that leaves the cross-field rules to the caller (``load_config(cross_fields=False)``)
SKIP_CROSS_FIELDS = "skip_cross_fields"


class EstimatorConfig(StrictSection):
    """The whole run: profile + model + train + parallel + recompute + precision + hardware + options
    (+ adapter: adapter fine-tuning, off by default)."""

    profile: Literal["sapp-nd", "megatron", "fsdp2"] = "sapp-nd"
    model: ModelConfig
    train: TrainConfig
    parallel: ParallelConfig = Field(default_factory=ParallelConfig)
    recompute: RecomputeConfig = Field(default_factory=RecomputeConfig)
    precision: PrecisionConfig = Field(default_factory=PrecisionConfig)
    hardware: HardwareSpec
    options: OptionsConfig = Field(default_factory=OptionsConfig)
    adapter: AdapterConfig = Field(default_factory=AdapterConfig)

    @field_validator("hardware", mode="before")
    @classmethod
    def _expand_hardware(cls, value: Any) -> Any:
        expanded = expand_hardware(value)
        # a name, or a mapping whose ``preset`` names none (a known one is merged in and its key dropped)
        unknown = expanded.get("preset") if isinstance(expanded, dict) else expanded
        if isinstance(unknown, str):
            hint = did_you_mean(unknown, preset_names())
            raise config_rule(
                "hardware.preset" if isinstance(expanded, dict) else "hardware",
                f"unknown preset {unknown!r}; known: {', '.join(preset_names())}" + (f" ({hint})" if hint else ""),
            )
        return expanded

    @property
    def num_micro_batches(self) -> int:
        """Micro-batches per step per DP rank: given, or GBS/(MBS·DP), or pp (reference default)."""
        t = self.train
        if t.num_micro_batches is not None:
            return t.num_micro_batches
        if t.global_batch_size is not None:
            return t.global_batch_size // (t.micro_batch_size * self.parallel.dp)
        return self.parallel.pp

    def stage_recompute(self, stage: int) -> RecomputeMode:
        """Recompute mode of pipeline stage ``stage``."""
        per_stage = self.recompute.per_stage
        return per_stage[stage] if per_stage else self.recompute.mode

    @model_validator(mode="after")
    def _cross_field(self, info: ValidationInfo) -> EstimatorConfig:
        if info.context and info.context.get(SKIP_CROSS_FIELDS):
            return self
        broken = first_broken(self)  # the cross-field rules of spec §3, one table (estimator.config.rules)
        if broken is not None:
            raise config_rule(*broken)
        return self


# --------------------------------------------------------------------------------------------
# loading


def load_config(
    source: str | Path | Mapping[str, Any] | EstimatorConfig,
    overrides: Mapping[str, Any] | list[str] | None = None,
    *,
    base_dir: str | Path | None = None,
    cross_fields: bool = True,
    ref_dirs: tuple[Path, ...] = (),
) -> EstimatorConfig:
    """Load and validate a configuration.

    ``source``: a YAML path, a mapping, or an ``EstimatorConfig`` (returned re-validated with the
    overrides). ``overrides``: ``{"parallel.tp": 2}`` or ``["parallel.tp=2", ...]`` (values parsed
    as YAML scalars). ``model: {ref: path}`` loads the model from a YAML file relative to the
    config's folder (or ``base_dir``), then in ``ref_dirs`` (the project's cases tree, passed by the
    harness), falling back to the bundled ``validation_cases/``; other
    keys beside ``ref`` override the referenced model. Raises ``ConfigError``.
    ``cross_fields=False`` checks every section but leaves the cross-field rules
    (``estimator.config.rules``) to the caller: the batched search checks them as array masks.
    """
    file: str | None = None
    lines: dict[str, int] = {}
    if isinstance(source, EstimatorConfig):
        # sections as validated instances: pydantic keeps an instance of the field's model as it is,
        # so only the sections an override touches (dumped by apply_overrides) are validated again;
        # the cross-field rules always run
        data: dict[str, Any] = {name: getattr(source, name) for name in EstimatorConfig.model_fields}
    elif isinstance(source, Mapping):
        data = dict(source)  # no deep copy: overrides copy on write, validation never mutates its input
    else:
        path = Path(source)
        file = str(path)
        data, lines = read_yaml(path)
        base_dir = base_dir or path.parent
    reused: dict[str, tuple[tuple[object, ...], object]] = {}
    try:
        data, ref = resolve_model_ref(data, Path(base_dir) if base_dir else None, ref_dirs)
        if overrides:
            pairs = [parse_override(o) for o in overrides] if isinstance(overrides, list) else list(overrides.items())
            reused = _overridden_sections(data, pairs)
            hits = {name: hit[1] for name, (key, section) in reused.items()
                    if (hit := _OVERRIDDEN.get(key)) is not None and hit[0] is section}
            rest = overrides
            if hits:  # a reused section is the instance validated before; the other overrides apply as usual
                data, rest = {**data, **hits}, _without_sections(overrides, pairs, set(hits))
            data = apply_overrides(data, rest)
    except ConfigError as exc:
        raise exc.with_location(file, None) from None
    try:
        cfg = EstimatorConfig.model_validate(data, context=None if cross_fields else {SKIP_CROSS_FIELDS: True})
    except ValidationError as exc:
        err = _to_config_error(exc, file, lines)
    else:
        if len(_OVERRIDDEN) + len(reused) > cache.bound_of(_OVERRIDDEN):
            _OVERRIDDEN.clear()
        _OVERRIDDEN.update({key: (section, getattr(cfg, name)) for name, (key, section) in reused.items()})
        return cfg
    if ref is not None and err.field.startswith("model.") and err.field.split(".")[1] in ref.keys:
        err = ConfigError(err.field, err.rule, file=ref.file, line=line_for(err.field, ref.lines), hint=err.hint)
    if overrides and err.field in _override_keys(overrides):
        hint = "; ".join(h for h in (err.hint, "value set by an override") if h)
        err = ConfigError(err.field, err.rule, file=err.file, hint=hint)
    raise err


#: a validated section with overrides applied, from an earlier load: (id of the section instance, its
#: overrides with their types) -> (that instance, the validated result); the entry holds the instance,
#: so its id cannot be reused while cached (sections are frozen)
_OVERRIDDEN = cache.store("estimator.overridden_sections", bound=256, key="(id(section instance), its overrides "
                          "with their types)", holds="(the instance, the validated section)")
#: override values a cache key may hold (hashable, and compared with their type: 1, 1.0 and True differ)
_SCALARS = (int, float, str, bool, type(None))


def _overridden_sections(data: Mapping[str, Any], pairs: list[tuple[str, Any]],
                         ) -> dict[str, tuple[tuple[object, ...], object]]:
    """The cache key of each section ``data`` holds as a validated instance that ``overrides`` change
    field by field (scalar values only): a sweep sets the same few fields of the same base sections
    again and again (e.g. ``hardware.devices``), and the validated result is the same section. The
    first load validates it as usual; later ones reuse that instance (validation would rebuild an
    equal one)."""
    fields: dict[str, list[tuple[str, type, Any]]] = {}
    whole: set[str] = set()
    for key, value in pairs:
        name, _, rest = key.partition(".")
        if not rest or "." in rest or type(value) not in _SCALARS:
            whole.add(name)
        elif isinstance(data.get(name), StrictSection | HardwareSpec):
            fields.setdefault(name, []).append((rest, type(value), value))
    return {name: ((id(data[name]), tuple(items)), data[name]) for name, items in fields.items() if name not in whole}


def _without_sections(overrides: Mapping[str, Any] | list[str], pairs: list[tuple[str, Any]],
                      sections: set[str]) -> Mapping[str, Any] | list[str]:
    """``overrides`` (in their own form and order) less those inside ``sections`` (``pairs``: them parsed)."""
    keep = [key.partition(".")[0] not in sections for key, _ in pairs]
    if isinstance(overrides, list):
        return [o for o, k in zip(overrides, keep, strict=True) if k]
    return {key: value for (key, value), k in zip(pairs, keep, strict=True) if k}


def _override_keys(overrides: Mapping[str, Any] | list[str]) -> set[str]:
    return {parse_override(o)[0] for o in overrides} if isinstance(overrides, list) else set(overrides)


def _to_config_error(exc: ValidationError, file: str | None, lines: dict[str, int]) -> ConfigError:
    """The first validation error as a ConfigError (field, rule, line, did-you-mean)."""
    err = exc.errors()[0]
    loc = [str(part) for part in err["loc"]]
    field = ".".join(loc)
    rule = err["msg"]
    hint = None
    ctx = err.get("ctx") or {}
    if err["type"] == "config_rule":
        field, rule = str(ctx["field"]), str(ctx["rule"])
    elif err["type"] == "extra_forbidden":
        rule = "unknown field"
        hint = did_you_mean(loc[-1], _known_fields(loc[:-1]))
    elif err["type"] == "missing":
        rule = "required field is missing"
    line = line_for(field, lines)
    return ConfigError(field, rule, file=file, line=line, hint=hint)


def _known_fields(parent: list[str]) -> list[str]:
    """Field names of the schema node at ``parent`` (for the "did you mean" hint)."""
    model: Any = EstimatorConfig
    for part in parent:
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            return []
        ann = field.annotation
        model = next((a for a in getattr(ann, "__args__", (ann,)) if hasattr(a, "model_fields")), ann)
    return list(getattr(model, "model_fields", {}))
