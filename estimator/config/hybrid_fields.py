"""The model fields of hybrid Mamba-2 / attention / MoE stacks and their latent MoE and repeated MTP layer
(:mod:`estimator.inputs.hybrid`), a base of ``estimator.config.sections.ModelConfig``: Megatron's spelling,
Megatron-Core's defaults. At their defaults every layer is attention + MLP, as without them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from estimator.inputs import hybrid


class HybridFields(BaseModel):
    """Hybrid-stack fields of the model section (rules: :func:`estimator.inputs.hybrid.pattern_rule`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    #: hybrid stack, Megatron's ``--hybrid-override-pattern``: one of M (Mamba-2) * (attention) - (dense MLP)
    #: E (MoE) per layer; None = every layer attention + MLP
    hybrid_override_pattern: str | None = None
    #: the Mamba-2 mixer: heads (None: 2h/head dim), head dim, state N (d_state), B/C groups, causal-conv
    #: kernel, SSD chunk
    mamba_num_heads: int | None = Field(default=None, ge=1)
    mamba_head_dim: int = Field(default=hybrid.MAMBA_DEFAULT_HEAD_DIM, ge=1)
    mamba_state_dim: int = Field(default=hybrid.MAMBA_DEFAULT_STATE_DIM, ge=1)
    mamba_num_groups: int = Field(default=hybrid.MAMBA_DEFAULT_NUM_GROUPS, ge=1)
    mamba_conv_kernel: int = Field(default=hybrid.MAMBA_DEFAULT_CONV_KERNEL, ge=1)
    mamba_chunk_size: int = Field(default=hybrid.MAMBA_DEFAULT_CHUNK_SIZE, ge=1)
    #: latent MoE, Megatron's ``--moe-latent-size``: routed experts work in this width between an h→L and an
    #: L→h projection (:mod:`estimator.inputs.params`)
    moe_latent_size: int | None = Field(default=None, ge=1)
    #: Megatron's ``--mtp-use-repeated-layer``: the ``mtp_layers`` passes run one MTP layer (weights held once)
    mtp_repeated_layer: bool = False

    def hybrid_rule(self) -> tuple[str, str] | None:
        """(field, rule) of the first hybrid-stack rule the model breaks (:func:`hybrid.pattern_rule`), or None."""
        return hybrid.pattern_rule(self)  # type: ignore[arg-type]  # (called on the whole ModelConfig)
