"""The model fields of hybrid Mamba-2 / attention / MoE stacks, Gated DeltaNet layers and gated attention
(:mod:`estimator.inputs.gdn`), latent MoE and the repeated MTP layer (:mod:`estimator.inputs.hybrid`), a base of ``estimator.config.sections.ModelConfig``: Megatron's spelling,
Megatron-Core's defaults. At their defaults every layer is attention + MLP, as without them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from estimator.inputs import gdn, hybrid


class HybridFields(BaseModel):
    """Hybrid-stack fields of the model section (rules: :func:`estimator.inputs.hybrid.pattern_rule`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    #: hybrid stack, Megatron's ``--hybrid-override-pattern``: one of M (Mamba-2) G (Gated DeltaNet) * (attention)
    #: - (dense MLP) E (MoE) per layer; None = every layer attention + MLP
    hybrid_override_pattern: str | None = None
    #: the Mamba-2 mixer: heads (None: 2h/head dim), head dim, state N (d_state), B/C groups, causal-conv
    #: kernel, SSD chunk
    mamba_num_heads: int | None = Field(default=None, ge=1)
    mamba_head_dim: int = Field(default=hybrid.MAMBA_DEFAULT_HEAD_DIM, ge=1)
    mamba_state_dim: int = Field(default=hybrid.MAMBA_DEFAULT_STATE_DIM, ge=1)
    mamba_num_groups: int = Field(default=hybrid.MAMBA_DEFAULT_NUM_GROUPS, ge=1)
    mamba_conv_kernel: int = Field(default=hybrid.MAMBA_DEFAULT_CONV_KERNEL, ge=1)
    mamba_chunk_size: int = Field(default=hybrid.MAMBA_DEFAULT_CHUNK_SIZE, ge=1)
    #: Gated DeltaNet layers in a transformer stack, Megatron's ``--linear-attention-freq N``: layer i is softmax
    #: attention when (i + 1) % N == 0, else GDN + its MLP (:mod:`estimator.inputs.gdn`); None = no GDN layers
    linear_attention_freq: int | None = Field(default=None, ge=1)
    #: the GDN mixer (Megatron's ``--linear-num-key-heads`` …): key heads, value heads, their dims, conv kernel
    gdn_num_key_heads: int = Field(default=gdn.GDN_DEFAULT_NUM_KEY_HEADS, ge=1)
    gdn_num_value_heads: int = Field(default=gdn.GDN_DEFAULT_NUM_VALUE_HEADS, ge=1)
    gdn_key_head_dim: int = Field(default=gdn.GDN_DEFAULT_KEY_HEAD_DIM, ge=1)
    gdn_value_head_dim: int = Field(default=gdn.GDN_DEFAULT_VALUE_HEAD_DIM, ge=1)
    gdn_conv_kernel: int = Field(default=gdn.GDN_DEFAULT_CONV_KERNEL, ge=1)
    #: gated attention, Megatron's ``--attention-output-gate``: a sigmoid gate on each head's attention output
    attention_output_gate: bool = False
    #: latent MoE, Megatron's ``--moe-latent-size``: routed experts work in this width between an h→L and an
    #: L→h projection (:mod:`estimator.inputs.params`)
    moe_latent_size: int | None = Field(default=None, ge=1)
    #: the shared experts' sigmoid gate, Megatron's ``--moe-shared-expert-gate`` (one weight of h per MoE layer;
    #: Qwen2-MoE, Qwen3-Next)
    shared_expert_gate: bool = False
    #: Megatron's ``--mtp-use-repeated-layer``: the ``mtp_layers`` passes run one MTP layer (weights held once)
    mtp_repeated_layer: bool = False

    def hybrid_rule(self) -> tuple[str, str] | None:
        """(field, rule) of the first hybrid-stack rule the model breaks (:func:`hybrid.pattern_rule`), or None."""
        return hybrid.pattern_rule(self) or gdn.gdn_rule(self)  # type: ignore[arg-type]  # (the whole ModelConfig)
