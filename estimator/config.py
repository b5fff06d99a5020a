"""Estimator configuration: schema (spec §3), options (spec §5), loading with precise errors.

``EstimatorConfig`` = profile + model + train + parallel + recompute + precision + hardware +
options (the sections live in ``estimator.config_sections``). It is frozen after validation and
rejects unknown fields. ``load_config`` reads a YAML file or a dict, resolves
``model: {ref: models/<name>.yaml}`` includes, applies ``a.b=c`` overrides
(``estimator.config_yaml``), and turns every validation failure into one ``ConfigError`` naming
the field, the rule and (for YAML) the file and line.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from estimator import pipeline_split
from estimator.config_sections import (
    PERF_PART_NAMES,
    RECOMPUTE_MODULES,
    ModelConfig,
    OptionsConfig,
    ParallelConfig,
    PrecisionConfig,
    RecomputeConfig,
    RecomputeMode,
    StrictSection,
    TrainConfig,
    config_rule,
)
from estimator.config_yaml import (
    BUNDLED_CASES_DIR,
    apply_overrides,
    line_for,
    parse_override,
    read_yaml,
    resolve_model_ref,
)
from estimator.errors import ConfigError, did_you_mean
from estimator.hardware import HardwareSpec, expand_hardware, preset_names

__all__ = [
    "BUNDLED_CASES_DIR",
    "PERF_PART_NAMES",
    "RECOMPUTE_MODULES",
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


class EstimatorConfig(StrictSection):
    """The whole run: profile + model + train + parallel + recompute + precision + hardware + options."""

    profile: Literal["sapp-nd", "megatron", "fsdp2"] = "sapp-nd"
    model: ModelConfig
    train: TrainConfig
    parallel: ParallelConfig = Field(default_factory=ParallelConfig)
    recompute: RecomputeConfig = Field(default_factory=RecomputeConfig)
    precision: PrecisionConfig = Field(default_factory=PrecisionConfig)
    hardware: HardwareSpec
    options: OptionsConfig = Field(default_factory=OptionsConfig)

    @field_validator("hardware", mode="before")
    @classmethod
    def _expand_hardware(cls, value: Any) -> Any:
        expanded = expand_hardware(value)
        if isinstance(expanded, str):
            hint = did_you_mean(expanded, preset_names())
            raise config_rule(
                "hardware",
                f"unknown preset {expanded!r}; known: {', '.join(preset_names())}" + (f" ({hint})" if hint else ""),
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
    def _cross_field(self) -> EstimatorConfig:
        _check_cross_fields(self)
        return self


def _check_cross_fields(cfg: EstimatorConfig) -> None:
    """Cross-field invariants of spec §3 (one place)."""
    m, p, t = cfg.model, cfg.parallel, cfg.train
    if m.num_attention_heads % p.tp:
        raise config_rule("parallel.tp", f"must divide model.num_attention_heads ({m.num_attention_heads}); got {p.tp}")
    if m.is_moe:
        if m.num_experts % p.ep:
            raise config_rule("parallel.ep", f"must divide model.num_experts ({m.num_experts}); got {p.ep}")
        if (p.dp * p.tp * p.cp) % (p.ep * (p.etp or 1)):
            raise config_rule("parallel.ep", f"ep·etp must divide dp·tp·cp ({p.dp * p.tp * p.cp}); got ep={p.ep}")
        if cfg.profile != "sapp-nd" and p.etp is None and (p.dp * p.cp) % p.ep:
            raise config_rule(
                "parallel.ep",
                f"must divide dp·cp ({p.dp * p.cp}) under '{cfg.profile}', where etp defaults to tp "
                "(expert groups ep·etp must divide dp·tp·cp); set parallel.etp otherwise",
            )
    elif p.ep > 1:
        raise config_rule("parallel.ep", "must be 1 for a dense model (model.num_experts ≤ 1)")
    elif p.etp is not None and p.etp != 1:
        raise config_rule("parallel.etp", "expert tensor parallelism needs routed experts: leave it unset (or 1) for "
                          f"a dense model (model.num_experts ≤ 1); got {p.etp}")
    devices = cfg.hardware.devices
    if devices is not None and devices != p.world_size:
        raise config_rule(
            "parallel",
            f"world size dp·tp·pp·cp = {p.dp}·{p.tp}·{p.pp}·{p.cp} = {p.world_size} "
            f"does not match hardware.devices = {devices}",
        )
    _check_layers(cfg)
    if t.seq_length % p.cp:
        raise config_rule("train.seq_length", f"must be divisible by parallel.cp ({p.cp})")
    if p.sequence_parallel and t.seq_length % (p.tp * p.cp):
        raise config_rule("train.seq_length", "must be divisible by tp·cp with sequence parallelism")
    if t.global_batch_size is not None:
        per_step = t.micro_batch_size * p.dp
        if t.global_batch_size % per_step:
            raise config_rule("train.global_batch_size", f"must be a multiple of micro_batch_size·dp = {per_step}")
        if t.num_micro_batches is not None and t.num_micro_batches * per_step != t.global_batch_size:
            raise config_rule("train.num_micro_batches", "disagrees with global_batch_size/(micro_batch_size·dp)")
    if cfg.recompute.selective_ac_option == "op" and (m.is_moe or m.attention == "mla"):
        raise config_rule(
            "recompute.selective_ac_option",
            "'op' (torchtitan's op-level policy) is modelled for dense MHA/GQA blocks only; "
            "a valid example: model llama3-8b with {mode: selective, selective_ac_option: op}",
        )
    if cfg.recompute.per_stage is not None and len(cfg.recompute.per_stage) != p.pp:
        raise config_rule("recompute.per_stage", f"needs one entry per pipeline stage ({p.pp})")
    if p.optimizer_shard_size is not None and (p.dp * p.tp) % p.optimizer_shard_size:
        raise config_rule("parallel.optimizer_shard_size", "must divide dp·tp")


def _check_layers(cfg: EstimatorConfig) -> None:
    """Layer split over pp·vpp (spec §3) and the schedule's chunk count."""
    p = cfg.parallel
    if p.schedule == "zero_bubble_v" and p.vpp != 2:
        raise config_rule("parallel.vpp", "must be 2 for schedule 'zero_bubble_v' (two chunks per stage)")
    if p.schedule == "interleaved" and p.vpp < 2:
        raise config_rule("parallel.vpp", "must be ≥ 2 for schedule 'interleaved'")
    if p.vpp > 1 and p.schedule in ("1f1b", "gpipe"):
        raise config_rule("parallel.schedule", f"'{p.schedule}' has one chunk per stage; use 'interleaved' for vpp > 1")
    families = pipeline_split.split_fields_set(p)
    if len(families) > 1:
        raise config_rule(
            "parallel", f"give at most one uneven pipeline split; got {' and '.join(families)} "
            "(a valid example: parallel.pipeline_layout 'Et*3|(tt|)*29,m|L' alone)"
        )
    try:
        _check_split(cfg)
    except ConfigError as exc:
        raise config_rule(exc.field, f"{exc.rule}; {exc.hint}" if exc.hint else exc.rule) from None


def _check_split(cfg: EstimatorConfig) -> None:
    """The stated split (``estimator.pipeline_split``) places exactly model.num_layers layers."""
    m, p = cfg.model, cfg.parallel
    chunks = p.pp * p.vpp
    if p.pipeline_layout is not None:
        stages = pipeline_split.parse_layout(p.pipeline_layout)
        pipeline_split.check_layout(stages, p.pp, p.vpp, m.num_layers, m.mtp_layers)
    elif p.layers_per_stage is not None:
        if len(p.layers_per_stage) != chunks:
            raise ConfigError("parallel.layers_per_stage", f"needs pp·vpp = {chunks} entries; got {len(p.layers_per_stage)}")
        if any(n < 0 for n in p.layers_per_stage) or sum(p.layers_per_stage) != m.num_layers:
            raise ConfigError(
                "parallel.layers_per_stage", f"entries must be ≥ 0 and sum to model.num_layers ({m.num_layers})",
                hint=f"a valid example for {m.num_layers} layers on {chunks} virtual stages: "
                f"{_example_layers(m.num_layers, chunks)}",
            )
    elif pipeline_split.split_fields_set(p):
        pipeline_split.decoder_layers_per_virtual_stage(p, m.num_layers)
    elif m.num_layers % chunks:
        raise ConfigError(
            "parallel.pp", f"model.num_layers ({m.num_layers}) must split evenly over pp·vpp = {chunks} "
            "(or give parallel.layers_per_stage, parallel.pipeline_layout, "
            "parallel.decoder_first/last_pipeline_num_layers)"
        )


def _example_layers(num_layers: int, chunks: int) -> list[int]:
    """An even-as-possible split (first stages one layer more), for error hints."""
    base, extra = divmod(num_layers, chunks)
    return [base + (1 if v < extra else 0) for v in range(chunks)]


# --------------------------------------------------------------------------------------------
# loading


def load_config(
    source: str | Path | Mapping[str, Any] | EstimatorConfig,
    overrides: Mapping[str, Any] | list[str] | None = None,
    *,
    base_dir: str | Path | None = None,
) -> EstimatorConfig:
    """Load and validate a configuration.

    ``source``: a YAML path, a mapping, or an ``EstimatorConfig`` (returned re-validated with the
    overrides). ``overrides``: ``{"parallel.tp": 2}`` or ``["parallel.tp=2", ...]`` (values parsed
    as YAML scalars). ``model: {ref: path}`` loads the model from a YAML file relative to the
    config's folder (or ``base_dir``), falling back to the bundled ``validation_cases/``; other
    keys beside ``ref`` override the referenced model. Raises ``ConfigError``.
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
    try:
        data, ref = resolve_model_ref(data, Path(base_dir) if base_dir else Path.cwd())
        if overrides:
            data = apply_overrides(data, overrides)
    except ConfigError as exc:
        raise exc.with_location(file, None) from None
    try:
        return EstimatorConfig.model_validate(data)
    except ValidationError as exc:
        err = _to_config_error(exc, file, lines)
    if ref is not None and err.field.startswith("model.") and err.field.split(".")[1] in ref.keys:
        err = ConfigError(err.field, err.rule, file=ref.file, line=line_for(err.field, ref.lines), hint=err.hint)
    if overrides and err.field in _override_keys(overrides):
        hint = "; ".join(h for h in (err.hint, "value set by an override") if h)
        err = ConfigError(err.field, err.rule, file=err.file, hint=hint)
    raise err


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
