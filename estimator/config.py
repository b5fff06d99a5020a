"""Estimator configuration: schema (spec §3), options (spec §5), loading with precise errors.

``EstimatorConfig`` = profile + model + train + parallel + recompute + precision + hardware +
options. It is frozen after validation and rejects unknown fields. ``load_config`` reads a YAML
file or a dict, resolves ``model: {ref: models/<name>.yaml}`` includes, applies ``a.b=c``
overrides, and turns every validation failure into one ``ConfigError`` naming the field, the rule
and (for YAML) the file and line.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from estimator.errors import ConfigError, did_you_mean
from estimator.hardware import HardwareSpec, expand_hardware, preset_names

__all__ = [
    "ConfigError",
    "EstimatorConfig",
    "ModelConfig",
    "OptionsConfig",
    "ParallelConfig",
    "PrecisionConfig",
    "RecomputeConfig",
    "TrainConfig",
    "load_config",
]

#: where ``model: {ref: models/x.yaml}`` is looked up when not found beside the YAML file
BUNDLED_CASES_DIR = Path(__file__).resolve().parent.parent / "validation_cases"

RecomputeMode = Literal["none", "selective", "full"]
#: selective-recompute modules understood by the activation model (Megatron names)
RECOMPUTE_MODULES = ("core_attn", "mla_up_proj", "layernorm", "mlp", "moe", "moe_act", "shared_experts")
#: names of the time parts, the only keys allowed in ``options.part_coefficients``
PERF_PART_NAMES = (
    "FW_COMPUTE", "BW_COMPUTE", "RECOMPUTE", "DP_COMM", "MP_COMM", "EP_COMM", "CP_COMM", "PP_COMM", "BUBBLE",
)


def _rule(field: str, rule: str) -> PydanticCustomError:
    """A validation error that carries its dotted field name (read back by ``load_config``)."""
    return PydanticCustomError("config_rule", "{rule}", {"field": field, "rule": rule})


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelConfig(_Strict):
    """Model dimensions (spec §3 ``model``). ``assumed`` maps field -> reason for assumed values."""

    name: str = "model"
    num_layers: int = Field(ge=1)
    num_dense_layers: int = Field(default=0, ge=0)
    hidden_size: int = Field(ge=1)
    ffn_hidden_size: int | None = Field(default=None, ge=1)
    num_attention_heads: int = Field(ge=1)
    num_kv_heads: int | None = Field(default=None, ge=1)
    head_dim: int | None = Field(default=None, ge=1)
    attention: Literal["mha", "gqa", "mla"] = "mha"
    q_lora_rank: int | None = Field(default=None, ge=1)
    kv_lora_rank: int | None = Field(default=None, ge=1)
    qk_head_dim: int | None = Field(default=None, ge=1)
    qk_rope_head_dim: int | None = Field(default=None, ge=0)
    v_head_dim: int | None = Field(default=None, ge=1)
    num_experts: int = Field(default=0, ge=0)
    moe_topk: int = Field(default=1, ge=1)
    num_shared_experts: int = Field(default=0, ge=0)
    moe_ffn_hidden_size: int | None = Field(default=None, ge=1)
    shared_expert_ffn_hidden_size: int | None = Field(
        default=None, ge=1, description="TOTAL shared-expert width (default num_shared_experts·moe_ffn)"
    )
    mtp_layers: int = Field(default=0, ge=0)
    vocab_size: int = Field(ge=1)
    padded_vocab_size: int | None = Field(default=None, ge=1)
    tied_embeddings: bool = False
    activation: Literal["swiglu", "gelu", "squared_relu"] = "swiglu"
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    position_embedding: Literal["rope", "learned"] = "rope"
    assumed: dict[str, str] = Field(default_factory=dict, description="field -> why the value is assumed")
    source_facts: dict[str, str] = Field(
        default_factory=dict,
        description="config path -> citation, for values taken from a source's published configuration "
        "(estimator.measured.SOURCE_FACTS) rather than from a data cell",
    )

    @property
    def is_moe(self) -> bool:
        """A MoE model has more than one routed expert (spec: num_experts ≤ 1 is dense)."""
        return self.num_experts > 1

    @property
    def kv_heads(self) -> int:
        """KV heads g (= query heads for MHA)."""
        return self.num_kv_heads or self.num_attention_heads

    @property
    def head_size(self) -> int:
        """Per-head dim d (default h/a)."""
        return self.head_dim or self.hidden_size // self.num_attention_heads

    @property
    def vocab(self) -> int:
        """Vocabulary as laid out in memory (padded when given)."""
        return self.padded_vocab_size or self.vocab_size

    @property
    def dense_ffn(self) -> int:
        """Dense MLP width F (default 4h)."""
        return self.ffn_hidden_size or 4 * self.hidden_size

    @property
    def expert_ffn(self) -> int:
        """Routed-expert width F_e (default F)."""
        return self.moe_ffn_hidden_size or self.dense_ffn

    @property
    def shared_ffn_total(self) -> int:
        """Total shared-expert width F_s (0 without shared experts)."""
        if self.num_shared_experts == 0:
            return 0
        return self.shared_expert_ffn_hidden_size or self.num_shared_experts * self.expert_ffn

    @model_validator(mode="after")
    def _check(self) -> ModelConfig:
        if self.num_dense_layers > self.num_layers:
            raise _rule("model.num_dense_layers", "must not exceed model.num_layers")
        if self.kv_heads > self.num_attention_heads or self.num_attention_heads % self.kv_heads:
            raise _rule("model.num_kv_heads", "must divide model.num_attention_heads")
        if self.attention == "mla":
            for name in ("kv_lora_rank", "qk_head_dim", "qk_rope_head_dim", "v_head_dim"):
                if getattr(self, name) is None:
                    raise _rule(f"model.{name}", "is required when model.attention is 'mla'")
        if self.padded_vocab_size is not None and self.padded_vocab_size < self.vocab_size:
            raise _rule("model.padded_vocab_size", "must be ≥ model.vocab_size")
        if self.is_moe and self.moe_topk > self.num_experts:
            raise _rule("model.moe_topk", "must not exceed model.num_experts")
        return self


class TrainConfig(_Strict):
    """Run shape (spec §3 ``train``): give ``num_micro_batches`` or ``global_batch_size``."""

    seq_length: int = Field(ge=1)
    micro_batch_size: int = Field(default=1, ge=1)
    num_micro_batches: int | None = Field(default=None, ge=1)
    global_batch_size: int | None = Field(default=None, ge=1)
    flash_attention: bool = True
    #: attention-probability dropout rate; None = not stated: keep Korthikanti's dropout mask and
    #: dropout output per score (Korthikanti et al. 2022 Table 2). 0 = no dropout: ``torch`` dropout
    #: with p = 0 returns its input, so no mask and no second copy are kept.
    attention_dropout: float | None = Field(default=None, ge=0, lt=1)
    #: hidden (residual) dropout rate; None = not stated: keep Korthikanti's 1-byte masks (attention
    #: output and MLP output); 0 = no dropout, no masks.
    hidden_dropout: float | None = Field(default=None, ge=0, lt=1)


class ParallelConfig(_Strict):
    """Parallel strategy (spec §3 ``parallel``)."""

    tp: int = Field(default=1, ge=1)
    pp: int = Field(default=1, ge=1)
    vpp: int = Field(default=1, ge=1)
    dp: int = Field(default=1, ge=1)
    cp: int = Field(default=1, ge=1)
    ep: int = Field(default=1, ge=1)
    etp: int | None = Field(default=None, ge=1)
    sequence_parallel: bool = False
    #: Megatron ``--cp-comm-type``: ``p2p`` = ring attention (K/V blocks passed round the CP ring),
    #: ``a2a`` = Ulysses all-to-all (heads scattered, sequence gathered); perf model only
    cp_comm_type: Literal["p2p", "a2a"] = "p2p"
    schedule: Literal["1f1b", "interleaved", "zero_bubble_v", "gpipe"] = "1f1b"
    layers_per_stage: list[int] | None = None
    distributed_optimizer: bool = True
    optimizer_shard_size: int | None = Field(default=None, ge=1)
    grad_sharding: bool = False
    expert_zero3_sharding: bool = True
    #: Megatron ``--overlap-moe-expert-parallel-comm``: the interleaved schedule runs one extra
    #: warm-up forward (``get_pp_rank_microbatches``), so one more micro-batch is in flight
    overlap_moe_expert_parallel_comm: bool = False

    @property
    def world_size(self) -> int:
        """dp·tp·pp·cp (EP and ETP live inside it)."""
        return self.dp * self.tp * self.pp * self.cp


class RecomputeConfig(_Strict):
    """Activation recomputation: one ``mode`` for all stages, or ``per_stage`` (length pp)."""

    mode: RecomputeMode = "none"
    per_stage: list[RecomputeMode] | None = None
    modules: list[str] = Field(default_factory=list)

    @field_validator("modules")
    @classmethod
    def _known_modules(cls, value: list[str]) -> list[str]:
        for name in value:
            if name not in RECOMPUTE_MODULES:
                hint = did_you_mean(name, RECOMPUTE_MODULES)
                raise _rule(
                    "recompute.modules",
                    f"unknown module {name!r}; known: {', '.join(RECOMPUTE_MODULES)}" + (f" ({hint})" if hint else ""),
                )
        return value


class PrecisionConfig(_Strict):
    """Byte widths by dtype; None = the profile's convention (spec §4)."""

    params: Literal["fp32", "bf16", "fp16", "fp8"] | None = None
    compute: Literal["fp32", "bf16", "fp16", "fp8"] = "bf16"
    grads: Literal["fp32", "bf16", "fp16"] | None = None
    optimizer_states: Literal["fp32", "bf16", "fp16"] | None = None
    #: linear layers run in FP8 through Transformer Engine (Megatron ``--fp8-format``); the
    #: ``megatron`` profile then counts TE's cached FP8 weight copies (``memory.static``)
    fp8_linear: bool = False


class OptionsConfig(_Strict):
    """The seed's fixes as options (spec §5) and the time model's knobs.

    Defaults are the seed's (= ``presets.fixed()``), except ``tp_shardable_overhead_mb`` whose
    None means the profile's default (2676 under ``sapp-nd``, 0 otherwise; spec §5).
    """

    safety_buffer_mb: float = Field(default=1024.0, ge=0, description="P1: safety buffer (MiB), /tp when scaled")
    tp_scaled_buffers: bool = Field(default=True, description="P1: false keeps the safety buffer flat")
    tp_shardable_overhead_mb: float | None = Field(
        default=None, ge=0, description="P1: runtime overhead (MiB) /tp; None = profile default"
    )
    ep_bubble_overlap_ratio: float = Field(default=1.0, ge=0, le=1, description="P3: EP comm hidden in bubble")
    ep_comm_overlap: float = Field(default=0.0, ge=0, le=1, description="P4: overlap of EP comm time")
    convert_ep_comm_to_time: bool = Field(default=True, description="P4: EP bytes -> seconds")
    dp_comm_zero_hack: bool = Field(default=False, description="P3/P4: reference's comm[DP] = 0")
    tp_comm_half_hack: bool = Field(default=False, description="P3/P4: reference's comm[TP] /= 2")
    perf_mode: Literal["time", "score"] = "time"
    compute_efficiency: float = Field(
        default=1.0, gt=0, le=1,
        description="derating of the compute passes: time / eff (raw peak model: achieved share of peak FLOP/s)",
    )
    operator_roofline: bool = Field(
        default=True,
        description="price each operator on the hardware's sourced efficiencies (estimator.perf.roofline); "
                    "off: GEMM FLOPs at raw peak (legacy())",
    )
    host_launch_overhead: bool = Field(
        default=True,
        description="stage pass time ≥ host kernel-launch time (kernels × profile per-launch cost); off in legacy()",
    )
    host_launch_cost_us: float | None = Field(
        default=None, gt=0, allow_inf_nan=False,
        description="host µs per launched kernel; None = the profile's sourced value (estimator.profiles); "
                    "set it from a profile of your own run (analyzer indicator host_us_per_launch)",
    )
    dp_comm_overlap: float = Field(default=0.0, ge=0, le=1, description="share of DP comm hidden by compute")
    tp_comm_overlap: float = Field(default=0.0, ge=0, le=1, description="share of TP comm hidden by compute")
    cp_comm_overlap: float = Field(default=0.0, ge=0, le=1, description="share of CP comm hidden by compute")
    part_coefficients: dict[str, float] | None = Field(
        default=None, description="optional per-part multipliers (calibration), keys = PerfParts names"
    )
    ep_tokens_per_expert: list[float] | None = Field(
        default=None, description="routed tokens per expert (any scale, length num_experts); None = balanced"
    )

    @field_validator("part_coefficients")
    @classmethod
    def _known_parts(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        for key, coef in (value or {}).items():
            if key not in PERF_PART_NAMES:
                hint = did_you_mean(key, PERF_PART_NAMES)
                raise _rule(
                    f"options.part_coefficients.{key}",
                    f"unknown part; known: {', '.join(PERF_PART_NAMES)}" + (f" ({hint})" if hint else ""),
                )
            if coef < 0:
                raise _rule(f"options.part_coefficients.{key}", "must be ≥ 0")
        return value


class EstimatorConfig(_Strict):
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
            raise _rule(
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
        raise _rule("parallel.tp", f"must divide model.num_attention_heads ({m.num_attention_heads}); got {p.tp}")
    if m.is_moe:
        if m.num_experts % p.ep:
            raise _rule("parallel.ep", f"must divide model.num_experts ({m.num_experts}); got {p.ep}")
        if (p.dp * p.tp * p.cp) % (p.ep * (p.etp or 1)):
            raise _rule("parallel.ep", f"ep·etp must divide dp·tp·cp ({p.dp * p.tp * p.cp}); got ep={p.ep}")
        if cfg.profile != "sapp-nd" and p.etp is None and (p.dp * p.cp) % p.ep:
            raise _rule(
                "parallel.ep",
                f"must divide dp·cp ({p.dp * p.cp}) under '{cfg.profile}', where etp defaults to tp "
                "(expert groups ep·etp must divide dp·tp·cp); set parallel.etp otherwise",
            )
    elif p.ep > 1:
        raise _rule("parallel.ep", "must be 1 for a dense model (model.num_experts ≤ 1)")
    devices = cfg.hardware.devices
    if devices is not None and devices != p.world_size:
        raise _rule(
            "parallel",
            f"world size dp·tp·pp·cp = {p.dp}·{p.tp}·{p.pp}·{p.cp} = {p.world_size} "
            f"does not match hardware.devices = {devices}",
        )
    _check_layers(cfg)
    if t.seq_length % p.cp:
        raise _rule("train.seq_length", f"must be divisible by parallel.cp ({p.cp})")
    if p.sequence_parallel and t.seq_length % (p.tp * p.cp):
        raise _rule("train.seq_length", "must be divisible by tp·cp with sequence parallelism")
    if t.global_batch_size is not None:
        per_step = t.micro_batch_size * p.dp
        if t.global_batch_size % per_step:
            raise _rule("train.global_batch_size", f"must be a multiple of micro_batch_size·dp = {per_step}")
        if t.num_micro_batches is not None and t.num_micro_batches * per_step != t.global_batch_size:
            raise _rule("train.num_micro_batches", "disagrees with global_batch_size/(micro_batch_size·dp)")
    if cfg.recompute.per_stage is not None and len(cfg.recompute.per_stage) != p.pp:
        raise _rule("recompute.per_stage", f"needs one entry per pipeline stage ({p.pp})")
    if p.optimizer_shard_size is not None and (p.dp * p.tp) % p.optimizer_shard_size:
        raise _rule("parallel.optimizer_shard_size", "must divide dp·tp")


def _check_layers(cfg: EstimatorConfig) -> None:
    """Layer split over pp·vpp (spec §3) and the schedule's chunk count."""
    m, p = cfg.model, cfg.parallel
    if p.schedule == "zero_bubble_v" and p.vpp != 2:
        raise _rule("parallel.vpp", "must be 2 for schedule 'zero_bubble_v' (two chunks per stage)")
    if p.schedule == "interleaved" and p.vpp < 2:
        raise _rule("parallel.vpp", "must be ≥ 2 for schedule 'interleaved'")
    if p.vpp > 1 and p.schedule in ("1f1b", "gpipe"):
        raise _rule("parallel.schedule", f"'{p.schedule}' has one chunk per stage; use 'interleaved' for vpp > 1")
    chunks = p.pp * p.vpp
    if p.layers_per_stage is not None:
        if len(p.layers_per_stage) != chunks:
            raise _rule("parallel.layers_per_stage", f"needs pp·vpp = {chunks} entries; got {len(p.layers_per_stage)}")
        if any(n < 0 for n in p.layers_per_stage) or sum(p.layers_per_stage) != m.num_layers:
            raise _rule("parallel.layers_per_stage", f"entries must be ≥ 0 and sum to model.num_layers ({m.num_layers})")
    elif m.num_layers % chunks:
        raise _rule(
            "parallel.pp", f"model.num_layers ({m.num_layers}) must split evenly over pp·vpp = {chunks} "
            "(or give parallel.layers_per_stage)"
        )


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
        data: dict[str, Any] = source.model_dump(mode="python")
    elif isinstance(source, Mapping):
        data = copy.deepcopy(dict(source))
    else:
        path = Path(source)
        file = str(path)
        data, lines = _read_yaml(path)
        base_dir = base_dir or path.parent
    try:
        data, ref = _resolve_model_ref(data, Path(base_dir) if base_dir else Path.cwd())
        if overrides:
            data = apply_overrides(data, overrides)
    except ConfigError as exc:
        raise exc.with_location(file, None) from None
    try:
        return EstimatorConfig.model_validate(data)
    except ValidationError as exc:
        err = _to_config_error(exc, file, lines)
    if ref is not None and err.field.startswith("model.") and err.field.split(".")[1] in ref.keys:
        err = ConfigError(err.field, err.rule, file=ref.file, line=_line_for(err.field, ref.lines), hint=err.hint)
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
    line = _line_for(field, lines)
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


def _line_for(field: str, lines: dict[str, int]) -> int | None:
    """Line of ``field`` or of its closest parent present in the YAML."""
    parts = field.split(".")
    while parts:
        key = ".".join(parts)
        if key in lines:
            return lines[key]
        parts.pop()
    return None


def _read_yaml(path: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """Mapping and a ``dotted.key -> line`` index of a YAML file (safe loader)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError("<file>", f"cannot read: {exc.strerror}", file=str(path)) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(
            "<yaml>", f"invalid YAML: {getattr(exc, 'problem', exc)}", file=str(path),
            line=mark.line + 1 if mark else None,
        ) from None
    if not isinstance(data, dict):
        raise ConfigError("<yaml>", "top level must be a mapping", file=str(path))
    lines: dict[str, int] = {}
    _index_lines(node, "", lines)
    return data, lines


def _index_lines(node: Any, prefix: str, out: dict[str, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
            out[key] = key_node.start_mark.line + 1
            _index_lines(value_node, key, out)


@dataclass(frozen=True)
class _RefSource:
    """Where the fields of a referenced model file came from (for error locations)."""

    file: str
    lines: dict[str, int]  # "model.<key>" -> line in the referenced file
    keys: frozenset[str]  # model keys taken from the file (not overridden beside ``ref``)


def _resolve_model_ref(data: dict[str, Any], base_dir: Path) -> tuple[dict[str, Any], _RefSource | None]:
    """Replace ``model: {ref: path, ...}`` by the referenced model merged with the keys beside ``ref``."""
    model = data.get("model")
    if not isinstance(model, dict) or "ref" not in model:
        return data, None
    ref = str(model["ref"])
    candidates = [base_dir / ref, BUNDLED_CASES_DIR / ref]
    path = next((c for c in candidates if c.is_file()), None)
    if path is None:
        raise ConfigError("model.ref", f"model file {ref!r} not found (looked in {base_dir} and {BUNDLED_CASES_DIR})")
    loaded, ref_lines = _read_yaml(path)
    nested = "model" in loaded
    loaded = loaded["model"] if nested else loaded
    if not nested:
        ref_lines = {f"model.{k}": v for k, v in ref_lines.items()}
    local = {k: v for k, v in model.items() if k != "ref"}
    source = _RefSource(str(path), ref_lines, frozenset(k for k in loaded if k not in local))
    return {**data, "model": {**loaded, **local}}, source


def parse_override(text: str) -> tuple[str, Any]:
    """``"parallel.tp=2"`` -> ``("parallel.tp", 2)``; the value is parsed as a YAML scalar."""
    if "=" not in text:
        raise ConfigError(text, "override must look like key.path=value")
    key, raw = text.split("=", 1)
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError:
        value = raw
    return key.strip(), value


def apply_overrides(data: dict[str, Any], overrides: Mapping[str, Any] | list[str]) -> dict[str, Any]:
    """A copy of ``data`` with dotted-key overrides applied (intermediate mappings created)."""
    pairs = [parse_override(o) for o in overrides] if isinstance(overrides, list) else list(overrides.items())
    out = copy.deepcopy(data)
    for key, value in pairs:
        parts = key.split(".")
        node = out
        for part in parts[:-1]:
            child = node.get(part)
            if isinstance(child, str) and part == "hardware":
                child = {"preset": child}
            if child is None:
                child = {}
            if not isinstance(child, dict):
                raise ConfigError(key, f"cannot set a key inside {part!r}, which is not a mapping")
            node[part] = child
            node = child
        node[parts[-1]] = value
    return out
