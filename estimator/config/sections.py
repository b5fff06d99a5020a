"""Sections of the estimator configuration (spec §3, §5): model, train, parallel, recompute,
precision (options: ``estimator.config.options``). Each is a frozen pydantic model that rejects unknown fields; ``EstimatorConfig``
(``estimator.config.schema``) puts them together and checks the cross-field rules.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from estimator.config.errors import config_rule as config_rule
from estimator.config.errors import did_you_mean
from estimator.config.hybrid_fields import HybridFields
from estimator.inputs.recipes import RecipeName
from estimator.shared.numbers import no_boolean

RecomputeMode = Literal["none", "selective", "full"]
#: selective-recompute modules understood by the activation model (Megatron names)
RECOMPUTE_MODULES = ("core_attn", "mla_up_proj", "layernorm", "mlp", "moe", "moe_act", "shared_experts",
                     "gdn_norm_out")
#: names of the time parts, the only keys allowed in ``options.part_coefficients``
PERF_PART_NAMES = (
    "FW_COMPUTE", "BW_COMPUTE", "RECOMPUTE", "DP_COMM", "MP_COMM", "EP_COMM", "CP_COMM", "PP_COMM", "BUBBLE",
)


#: largest integer any field may hold: beyond 2**53 an int no longer converts to a float exactly, and
#: no model dimension, batch or degree comes near it
MAX_INT = 2**53
#: most transformer layers (``model.num_layers``) a run may have: the largest published models have a
#: few hundred; the estimate works per layer, and 4096 layers take about 0.25 s
MAX_LAYERS = 4096
#: most multi-token-prediction layers (``model.mtp_layers``): published models use 1–4; the MTP
#: terms are not linear in this count, 1024 take under 0.1 s (10^6 took minutes)
MAX_MTP_LAYERS = 1024


def in_int_range(value: Any) -> Any:
    """Reject ints beyond ±MAX_INT anywhere inside ``value`` (lists and mappings walked)."""
    kind = type(value)
    if (kind is int and -MAX_INT <= value <= MAX_INT) or kind is float or kind is str or kind is bool or value is None:
        return value  # the common leaves, decided at once (the checks below give the same answer)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        raise ValueError(f"must be at most 2**53 in magnitude; got {value:.3e}")
    if isinstance(value, dict):
        for item in value.values():
            in_int_range(item)
    elif isinstance(value, list | tuple):
        for item in value:
            in_int_range(item)
    return value


class StrictSection(BaseModel):
    """Frozen, no unknown fields, every float finite (no NaN/inf), every int within ±2**53, no boolean where a
    number goes (``--set parallel.tp=true`` silently became tp 1)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        return no_boolean(value, cls.model_fields[info.field_name].annotation) if info.field_name else value

    @field_validator("*", mode="after")
    @classmethod
    def _numbers_in_range(cls, value: Any) -> Any:
        return in_int_range(value)


class ModelConfig(StrictSection, HybridFields):
    """Model dimensions (spec §3 ``model``; hybrid stacks: :class:`HybridFields`); ``assumed``: field -> why."""

    name: str = "model"
    num_layers: int = Field(ge=1, le=MAX_LAYERS)
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
    mtp_layers: int = Field(default=0, ge=0, le=MAX_MTP_LAYERS)
    vocab_size: int = Field(ge=1)
    padded_vocab_size: int | None = Field(default=None, ge=1)
    tied_embeddings: bool = False
    #: MLP activation: ``swiglu`` (gate, up, down), ``quick_geglu`` (GPT-OSS: the same three matrices,
    #: gate through x·σ(1.702·x) clamped at 7, Megatron ``--quick-geglu``), ``gelu`` / ``squared_relu``
    #: (up, down), ``geglu`` (Gemma: gate through tanh-GELU, the same three matrices)
    activation: Literal["swiglu", "quick_geglu", "geglu", "gelu", "squared_relu"] = "swiglu"
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    position_embedding: Literal["rope", "learned", "none"] = "rope"  # none: Nemotron-H (--position-embedding-type none)
    #: per-head RMSNorm of q and k before RoPE (Qwen3 ``q_norm``/``k_norm``, Megatron ``--qk-layernorm``):
    #: 2·d weights per layer, its inputs kept for backward; MHA/GQA only (MLA normalises its latents)
    qk_norm: bool = False
    #: learned per-head attention sink logit (GPT-OSS ``sinks``): a extra weights per layer
    attention_sinks: bool = False
    #: the linear layers carry biases (Megatron ``--add-bias-linear``, its default; GPT-OSS): weights only in the
    #: parameter counts (biases < 0.1 %); in time, the routed experts' fc2 bias weighted by the routing
    #: probabilities under Megatron-Core (:mod:`estimator.perf.expert_bias`)
    linear_bias: bool = False
    #: sandwich norms (Gemma 2 / 3 ``post_attention_layernorm`` / ``post_feedforward_layernorm``): a norm on the
    #: attention output and one on the MLP output before each residual add, 2 more norms per layer
    post_norms: bool = False
    #: sliding-window attention: each query sees the last ``sliding_window`` keys (GPT-OSS 128)
    sliding_window: int | None = Field(default=None, ge=1)
    #: with ``sliding_window``: every n-th layer (layer i with (i+1) % n == 0) attends to the whole
    #: sequence, the others through the window (GPT-OSS alternates: 2); 0 = every layer windowed
    global_attention_every: int = Field(default=0, ge=0)
    assumed: dict[str, str] = Field(default_factory=dict, description="field -> why the value is assumed")
    source_facts: dict[str, str] = Field(
        default_factory=dict,
        description="config path -> citation, for values taken from a source's published configuration "
        "(estimator.experiments.measured.SOURCE_FACTS) rather than from a data cell",
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
            raise config_rule("model.num_dense_layers", "must not exceed model.num_layers")
        if self.kv_heads > self.num_attention_heads or self.num_attention_heads % self.kv_heads:
            raise config_rule("model.num_kv_heads", "must divide model.num_attention_heads")
        if self.attention == "mla":
            for name in ("kv_lora_rank", "qk_head_dim", "qk_rope_head_dim", "v_head_dim"):
                if getattr(self, name) is None:
                    raise config_rule(f"model.{name}", "is required when model.attention is 'mla'")
        if self.padded_vocab_size is not None and self.padded_vocab_size < self.vocab_size:
            raise config_rule("model.padded_vocab_size", "must be ≥ model.vocab_size")
        if self.is_moe and self.moe_topk > self.num_experts:
            raise config_rule("model.moe_topk", "must not exceed model.num_experts")
        if self.qk_norm and self.attention == "mla":
            raise config_rule("model.qk_norm", "is for mha/gqa: MLA's q/kv latent norms are already part of "
                              "attention: mla (drop qk_norm)")
        if self.global_attention_every and self.sliding_window is None:
            raise config_rule("model.global_attention_every", "needs model.sliding_window (the window of the "
                              "other layers); a valid example: {sliding_window: 128, global_attention_every: 2}")
        if (broken := self.hybrid_rule()) is not None:
            raise config_rule(*broken)
        return self


class TrainConfig(StrictSection):
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
    #: Megatron's ``--gradient-accumulation-fusion`` (default on; ``--no-gradient-accumulation-fusion``
    #: turns it off): weight gradients go straight into ``main_grad`` and TE caches a dummy gradient per
    #: weight shape (``estimator.memory.framework``)
    gradient_accumulation_fusion: bool = True
    #: Megatron ``--optimizer``: ``muon`` keeps one momentum per 2-D weight instead of Adam's two moments
    #: (norms, router, embedding and output layer stay on Adam, Megatron's ``muon_scalar_optimizer``) and
    #: orthogonalises each weight's update by Newton-Schulz iterations; ``dist_muon`` (Megatron's deprecated
    #: name for Muon with the layer-wise distributed optimizer) spreads those states and iterations over the
    #: data-parallel ranks (``estimator.perf.muon``, ``estimator.memory.static.muon_layer_static``)
    optimizer: Literal["adam", "muon", "dist_muon"] = "adam"
    #: Megatron's ``--moe-grouped-gemm`` (default off): TE grouped GEMM with its per-stream workspaces
    moe_grouped_gemm: bool = False
    #: Megatron's fused loss: ``--cross-entropy-loss-fusion`` with ``--cross-entropy-fusion-impl``
    #: ``native`` (Megatron's jit-fused fp32 softmax: the same memory as no fusion) or ``te``
    #: (Transformer Engine's in-place kernel: logits in the compute dtype, gradient written into them;
    #: ``estimator.memory.activation.loss_in_place``); ``none`` = no fusion (Megatron's default)
    cross_entropy_fusion: Literal["none", "native", "te"] = "none"
    #: CUDA graphs (Megatron-Core ``--cuda-graph-impl`` with ``--cuda-graph-scope``, Transformer Engine
    #: ``make_graphed_callables``): ``none``; ``layers`` = each transformer layer's forward and backward
    #: captured (``transformer_engine`` / ``local`` per-layer graphs); ``full_iteration`` = the whole
    #: forward-backward of a step one graph (``local`` with scope ``full_iteration``). The host then
    #: launches one graph where it launched the graph's kernels (``estimator.perf.graphs``).
    cuda_graph: Literal["none", "layers", "full_iteration"] = "none"
    #: Megatron-Core ``use_transformer_engine_op_fuser``: TEGroupedMLP through TE's op fuser (grouped quantize,
    #: grouped GEMM: one kernel per pass for all local experts, estimator.perf.operators.fused_grouped_experts)
    te_op_fuser: bool = False
    #: Megatron ``--cpu-offloading`` with ``--cpu-offloading-num-layers`` N (Transformer Engine ``cpu_offload``,
    #: activations only): the first N layers move their saved activations to host memory after their forward
    #: and reload them for their backward (``estimator.memory.stage.offloaded_layers``; memory only)
    cpu_offloading_num_layers: int = Field(default=0, ge=0)
    #: the blocks' element-wise ops as plain PyTorch eager kernels, one per ATen op (torchtitan's Llama 3 / Qwen3
    #: blocks: complex RoPE, ``silu(w1 x) * w3 x``); ``options.torch_compile`` fuses them (``estimator.perf.eager``)
    eager_ops: bool = False
    #: with ``eager_ops``: RMSNorm as its ATen decomposition (torchtitan@9dec370 ``RMSNorm``: cast, pow, mean,
    #: rsqrt, multiply, cast, weight); False: one fused norm kernel (torchtitan ``fused_rmsnorm``)
    eager_rmsnorm: bool = False


class ParallelConfig(StrictSection):
    """Parallel strategy (spec §3 ``parallel``)."""

    tp: int = Field(default=1, ge=1)
    pp: int = Field(default=1, ge=1)
    vpp: int = Field(default=1, ge=1)
    dp: int = Field(default=1, ge=1)
    cp: int = Field(default=1, ge=1)
    ep: int = Field(default=1, ge=1)
    etp: int | None = Field(default=None, ge=1)
    #: Megatron ``--moe-token-dispatcher-type`` (``alltoall``: a copy per routed expert; ``flex``: DeepEP /
    #: HybridEP, a copy per destination rank, estimator.perf.comm.ep_dispatch_tokens_flex); None = alltoall
    moe_token_dispatcher: Literal["alltoall", "flex"] | None = None
    sequence_parallel: bool = False
    #: Megatron ``--cp-comm-type``: ``p2p`` = ring attention (K/V blocks passed round the CP ring),
    #: ``a2a`` = Ulysses all-to-all (heads scattered, sequence gathered), ``allgather`` = K/V all-gathered
    #: (TE ``AttnFuncWithCPAndKVAllGather``, Llama 3 §3.3.2); perf model only (estimator.perf.comm)
    cp_comm_type: Literal["p2p", "a2a", "allgather"] = "p2p"
    schedule: Literal["1f1b", "interleaved", "zero_bubble_v", "gpipe"] = "1f1b"
    #: uneven pipeline splits (``estimator.inputs.pipeline_split``; at most one of these four families):
    #: decoder layers per virtual stage (pp·vpp entries)
    layers_per_stage: list[int] | None = None
    #: Megatron ``--pipeline-model-parallel-layout``, e.g. ``"Et*3|(tt|)*29,m|L"``
    pipeline_layout: str | None = None
    #: Megatron ``--decoder-first-pipeline-num-layers`` / ``--decoder-last-pipeline-num-layers``
    decoder_first_pipeline_num_layers: int | None = Field(default=None, ge=0)
    decoder_last_pipeline_num_layers: int | None = Field(default=None, ge=0)
    #: Megatron ``--account-for-embedding-in-pipeline-split`` / ``--account-for-loss-in-pipeline-split``
    account_for_embedding_in_pipeline_split: bool = False
    account_for_loss_in_pipeline_split: bool = False
    distributed_optimizer: bool = True
    optimizer_shard_size: int | None = Field(default=None, ge=1)
    grad_sharding: bool = False
    expert_zero3_sharding: bool = True
    #: FSDP2 ``reshard_after_forward`` of the transformer blocks; None = torchtitan's choice
    #: (``apply_fsdp``: true without PP except the last block, false with PP)
    fsdp_reshard_after_forward: bool | None = None
    #: the fsdp2 sharding's implementation: torch ``fully_shard`` (FSDP2, copies around each collective) or
    #: Megatron-FSDP (parameters and gradients are views of its buffers; ``estimator.perf.operators.fsdp2_copy_op``)
    fsdp_implementation: Literal["torch", "megatron"] = "torch"
    #: Megatron ``--overlap-moe-expert-parallel-comm``: the interleaved schedule runs one extra
    #: warm-up forward (``get_pp_rank_microbatches``), so one more micro-batch is in flight
    overlap_moe_expert_parallel_comm: bool = False
    #: communication overlap switches, each named as its framework names it (None = the framework's
    #: default; a switch the profile's framework does not have is a ConfigError, ``estimator.config.rules``).
    #: What each hides under which compute: ``estimator.perf.overlap``; the table with sources:
    #: ``estimator.inputs.profiles.OVERLAP_FLAGS``. Megatron-LM ``--overlap-grad-reduce``:
    overlap_grad_reduce: bool | None = None
    #: Megatron-LM ``--overlap-param-gather`` (needs the distributed optimizer and overlap_grad_reduce)
    overlap_param_gather: bool | None = None
    #: Megatron-LM ``--tp-comm-overlap`` (Transformer Engine userbuffers; needs sequence parallelism)
    tp_comm_overlap: bool | None = None
    #: Megatron-LM ``--moe-shared-expert-overlap`` (needs shared experts)
    moe_shared_expert_overlap: bool | None = None
    #: Megatron-LM ``--no-overlap-p2p-communication`` unset (the default): the interleaved schedule's p2p
    #: sends and receives beside the model chunks (off without the interleaved schedule)
    overlap_p2p_comm: bool | None = None
    #: torchtitan ``parallelism.enable_async_tensor_parallel`` (needs torch.compile)
    enable_async_tensor_parallel: bool | None = None
    #: FSDP2's implicit prefetching of the next block's all-gather and the overlapped reduce-scatter
    #: (``fully_shard``: always on; false models a run without it)
    fsdp_prefetch: bool | None = None

    @property
    def world_size(self) -> int:
        """dp·tp·pp·cp (EP and ETP live inside it)."""
        return self.dp * self.tp * self.pp * self.cp


class RecomputeConfig(StrictSection):
    """Activation recomputation: one ``mode`` for all stages, or ``per_stage`` (length pp)."""

    mode: RecomputeMode = "none"
    per_stage: list[RecomputeMode] | None = None
    modules: list[str] = Field(default_factory=list)
    #: Megatron ``--recompute-method`` with full recompute (megatron/core/recompute.py): ``uniform`` re-runs
    #: every layer from one saved input per unit of ``num_layers`` layers (unset: 1; ``derive.unit_inputs``);
    #: ``block`` re-runs only the first ``num_layers`` decoder layers of each model chunk (virtual stage) and
    #: keeps every activation of the others (``estimator.inputs.derive.recomputed_layers``)
    method: Literal["uniform", "block"] | None = None
    #: ``--recompute-num-layers`` (with ``method``; 0 under ``block``: no layer re-run)
    num_layers: int | None = Field(default=None, ge=0, le=MAX_INT)
    #: torchtitan ``activation_checkpoint.selective_ac_option`` with ``mode: selective``: ``"op"`` =
    #: op-level selective checkpointing (torchtitan's save list), ``"<n>"`` = layer-level: every n-th
    #: block fully checkpointed, the others keep everything (``estimator.memory.sac``)
    selective_ac_option: str | None = None

    @field_validator("selective_ac_option")
    @classmethod
    def _sac_option(cls, value: str | None) -> str | None:
        if value is not None and value != "op" and not (value.isdigit() and int(value) > 0):
            raise config_rule(
                "recompute.selective_ac_option",
                f"unknown checkpointing policy {value!r}: must be 'op' or a positive integer "
                "(torchtitan activation_checkpoint.selective_ac_option); a valid example: selective_ac_option: op",
            )
        return value

    @model_validator(mode="after")
    def _sac_needs_selective(self) -> RecomputeConfig:
        if self.selective_ac_option is not None and (self.mode != "selective" or self.modules or self.per_stage):
            raise config_rule(
                "recompute.selective_ac_option",
                "needs mode 'selective' without modules or per_stage (the policy replaces Megatron's module list); "
                "a valid example: {mode: selective, selective_ac_option: op}",
            )
        return self

    @model_validator(mode="after")
    def _method_needs_full(self) -> RecomputeConfig:
        full = self.mode == "full" or "full" in (self.per_stage or ())
        if (self.method is not None or self.num_layers is not None) and not full:
            raise config_rule("recompute.method", "recompute.method and recompute.num_layers need mode full (Megatron-"
                              "Core: recompute_num_layers must be None with selective granularity); a valid example: "
                              "{mode: full, method: block, num_layers: 4}")
        if self.method == "block" and self.num_layers is None:
            raise config_rule("recompute.num_layers", "method block needs num_layers (the layers re-run per model "
                              "chunk); a valid example: {mode: full, method: block, num_layers: 4}")
        if self.method == "uniform" and self.num_layers == 0:
            raise config_rule("recompute.num_layers", "method uniform needs units of at least 1 layer (Megatron: "
                              "'recompute_num_layers must be between 1 and num_layers_per_pipeline_rank'); a valid "
                              "example: {mode: full, method: uniform, num_layers: 1}")
        return self

    @field_validator("modules")
    @classmethod
    def _known_modules(cls, value: list[str]) -> list[str]:
        for name in value:
            if name not in RECOMPUTE_MODULES:
                hint = did_you_mean(name, RECOMPUTE_MODULES)
                raise config_rule(
                    "recompute.modules",
                    f"unknown module {name!r}; known: {', '.join(RECOMPUTE_MODULES)}" + (f" ({hint})" if hint else "")
                    + "; a valid example: modules: [core_attn, mlp]",
                )
        return value


#: linear layers an adapter may target (Megatron-Bridge PEFT names; ``estimator.inputs.adapters``)
AdapterTarget = Literal["linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"]
ADAPTER_TARGETS: tuple[AdapterTarget, ...] = ("linear_qkv", "linear_proj", "linear_fc1", "linear_fc2")


class AdapterConfig(StrictSection):
    """Adapter fine-tuning (``estimator.inputs.adapters``): ``lora`` freezes every base weight (no
    gradient, no optimizer state, no weight-gradient GEMM) and trains rank-``rank`` adapters
    ``A: k×r``, ``B: r×n`` beside each targeted linear (Hu et al. 2021, LoRA; Megatron-Bridge
    ``peft.LoRA`` defaults: dim 32 on linear_qkv, linear_proj, linear_fc1, linear_fc2)."""

    kind: Literal["none", "lora"] = "none"
    rank: int = Field(default=32, ge=1, le=MAX_INT)
    target_modules: list[AdapterTarget] = Field(
        default_factory=lambda: list(ADAPTER_TARGETS), min_length=1)


class PrecisionConfig(StrictSection):
    """Byte widths by dtype; None = the profile's convention (spec §4)."""

    params: Literal["fp32", "bf16", "fp16", "fp8"] | None = None
    compute: Literal["fp32", "bf16", "fp16", "fp8"] = "bf16"
    grads: Literal["fp32", "bf16", "fp16"] | None = None
    optimizer_states: Literal["fp32", "bf16", "fp16"] | None = None
    #: linear layers run in FP8 (Megatron ``--fp8-format`` / TE; torchtitan ``--float8.enable_float8_linear`` /
    #: torchao ``Float8Linear``); ``megatron`` then counts TE's cached FP8 weight copies (``memory.static``)
    fp8_linear: bool = False
    #: Megatron ``--first-last-layers-bf16`` (start, end): the first / last N main-stack layers outside the
    #: low-precision recipe (``estimator.perf.lowp.bf16_layers``; time only)
    bf16_layers_at_ends: tuple[NonNegativeInt, NonNegativeInt] = (0, 0)
    #: FSDP2 all-gathers the Float8Linear weights in float8 (torchtitan
    #: ``--float8.enable_fsdp_float8_all_gather``, default off; ``memory.fsdp2``)
    fsdp_float8_all_gather: bool = False
    #: the low-precision recipe of the linear layers (``estimator.inputs.recipes``): Transformer
    #: Engine ``delayed`` / ``tensorwise`` (current scaling) / ``blockwise`` / ``mxfp8`` / ``nvfp4``,
    #: torchao ``torchao_tensorwise`` / ``torchao_rowwise``; None = the profile's default recipe when
    #: ``fp8_linear``. Giving a recipe turns ``fp8_linear`` on (it then means "low-precision linears").
    linear_recipe: RecipeName | None = None
    #: Megatron ``--fp8-param-gather`` (Bridge ``fp8_param_gather``): with the distributed optimizer the
    #: updated parameters are all-gathered in the recipe's quantized form (``estimator.perf.stage.gather_bytes``)
    fp8_param_gather: bool = False
    fp8_attention: bool = False  #: TE FP8 fused attention (``--fp8-dot-product-attention``; perf.operators)

    @model_validator(mode="before")
    @classmethod
    def _recipe_means_low_precision(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("linear_recipe") is not None and not data.get("fp8_linear"):
            return {**data, "fp8_linear": True}
        return data

    @model_validator(mode="after")
    def _float8_all_gather_needs_float8(self) -> PrecisionConfig:
        if self.fsdp_float8_all_gather and not self.fp8_linear:
            raise config_rule(
                "precision.fsdp_float8_all_gather",
                "needs precision.fp8_linear: true (only Float8Linear weights are all-gathered in float8); "
                "a valid example: precision: {fp8_linear: true, fsdp_float8_all_gather: true}",
            )
        return self
