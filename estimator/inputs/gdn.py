"""Gated DeltaNet (GDN) mixers and gated attention (Qwen3-Next): the mixer's shape, its parameters, where the
GDN layers sit, and the model rules.

A GDN layer replaces softmax attention by the gated delta rule (Yang, Kautz & Hatamizadeh 2025, "Gated Delta
Networks", arXiv 2412.06464): per value head a dk×dv state ``S_t = α_t·S_{t-1}·(I − β_t·k_t·k_tᵀ) + β_t·v_t·k_tᵀ``
read by ``o_t = S_t·q_t``, trained with the chunked (WY) form of flash-linear-attention's
``chunk_gated_delta_rule``. Megatron-Core (NVIDIA/Megatron-LM@d98e8a64dd megatron/core/ssm/gated_delta_net/
common.py ``_GDNBase``, gdn.py ``GatedDeltaNet``), with n_k key heads of d_k, n_v value heads of d_v
(``linear_num_key_heads`` …), conv kernel k:

* ``in_proj`` h → 2·n_k·d_k + 2·n_v·d_v + 2·n_v (q, k, v, the output gate z, β and α in one column-parallel
  linear, the layer's RMSNorm fused into it: ``column_parallel_layer_norm_linear``);
* ``conv1d``: depthwise causal conv over the 2·n_k·d_k + n_v·d_v channels of q, k, v (``conv_bias=False``);
* ``dt_bias`` and ``A_log``: n_v each;
* ``out_norm``: a gated RMSNorm over d_v (one d_v-wide weight shared by the heads, whole on every rank);
* ``out_proj`` n_v·d_v → h (row-parallel).

Every mixer tensor but ``out_norm`` is split over TP (heads per rank). Where the layers sit: Megatron's
``--linear-attention-freq N`` (``get_linear_attention_pattern``: layer i, 0-based, is softmax attention when
(i + 1) % N == 0, else GDN; Qwen3-Next N = 4), or a hybrid pattern's ``G`` layer (Megatron-Core
``hybrid_layer_allocation.Symbols.GDN``). Defaults are Megatron-Core's ``TransformerConfig`` ones
(``linear_conv_kernel_dim 4``, ``linear_key_head_dim 128``, ``linear_value_head_dim 128``,
``linear_num_key_heads 16``, ``linear_num_value_heads 32``), which are also Qwen3-Next-80B-A3B's
(NVIDIA-NeMo/Megatron-Bridge@21b02e0cfb src/megatron/bridge/models/qwen/qwen_provider.py
``Qwen3NextModelProvider``).

**Gated attention** (``attention_output_gate``, Megatron-Core attention.py): ``linear_qkv`` also projects a
gate of a·d per token (its width a·d + 2·g·d + a·d), and the core attention output is multiplied by
``sigmoid(gate)`` before ``linear_proj`` (``_apply_output_gate``: ``x * torch.sigmoid(gate.float())``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

#: Megatron-Core ``TransformerConfig`` defaults of the GDN fields (module docstring)
GDN_DEFAULT_NUM_KEY_HEADS = 16
GDN_DEFAULT_NUM_VALUE_HEADS = 32
GDN_DEFAULT_KEY_HEAD_DIM = 128
GDN_DEFAULT_VALUE_HEAD_DIM = 128
GDN_DEFAULT_CONV_KERNEL = 4
#: the chunk of the chunked delta rule (Megatron-Core ``GatedDeltaNet._setup_variant_attrs``: ``chunk_size = 64``)
GDN_CHUNK = 64


class GdnModel(Protocol):
    """The model fields this module reads (``estimator.config.sections.ModelConfig``)."""

    @property
    def num_layers(self) -> int: ...
    @property
    def hybrid_override_pattern(self) -> str | None: ...
    @property
    def linear_attention_freq(self) -> int | None: ...
    @property
    def gdn_num_key_heads(self) -> int: ...
    @property
    def gdn_num_value_heads(self) -> int: ...
    @property
    def gdn_key_head_dim(self) -> int: ...
    @property
    def gdn_value_head_dim(self) -> int: ...
    @property
    def gdn_conv_kernel(self) -> int: ...


@dataclass(frozen=True)
class GdnDims:
    """The GDN mixer's shape: n_k key heads of d_k, n_v value heads of d_v, conv kernel k, chunk C."""

    key_heads: int
    value_heads: int
    key_dim: int
    value_dim: int
    conv: int
    chunk: int = GDN_CHUNK

    @property
    def qk_width(self) -> int:
        """n_k·d_k (the width of q, and of k)."""
        return self.key_heads * self.key_dim

    @property
    def v_width(self) -> int:
        """n_v·d_v (the width of v, of the gate z and of the output)."""
        return self.value_heads * self.value_dim

    @property
    def in_proj_width(self) -> int:
        """in_proj output width (q, k, v, z, β, α): 2·n_k·d_k + 2·n_v·d_v + 2·n_v."""
        return 2 * self.qk_width + 2 * self.v_width + 2 * self.value_heads

    @property
    def conv_channels(self) -> int:
        """Channels the causal conv runs over (q, k, v): 2·n_k·d_k + n_v·d_v."""
        return 2 * self.qk_width + self.v_width


def gdn_dims(model: GdnModel) -> GdnDims:
    """:class:`GdnDims` of ``model``."""
    return GdnDims(model.gdn_num_key_heads, model.gdn_num_value_heads, model.gdn_key_head_dim,
                   model.gdn_value_head_dim, model.gdn_conv_kernel)


def gdn_sharded_params(hidden: int, d: GdnDims) -> int:
    """TP-sharded weights of one GDN mixer: in_proj h·(2·n_k·d_k + 2·n_v·d_v + 2·n_v) + conv1d
    (2·n_k·d_k + n_v·d_v)·k (no bias) + dt_bias, A_log 2·n_v + out_proj n_v·d_v·h."""
    return hidden * d.in_proj_width + d.conv_channels * d.conv + 2 * d.value_heads + d.v_width * hidden


def gdn_replicated_params(d: GdnDims) -> int:
    """Weights of one GDN mixer every TP rank holds whole: the gated RMSNorm's d_v."""
    return d.value_dim


def output_gate_params(hidden: int, num_heads: int, head_dim: int) -> int:
    """The gate rows gated attention adds to ``linear_qkv``: h·a·d."""
    return hidden * num_heads * head_dim


def is_gdn_layer(model: GdnModel, index: int) -> bool:
    """Layer ``index`` of the main stack is a GDN layer: (index + 1) % N ≠ 0 under ``linear_attention_freq`` N
    (Megatron-Core ``get_linear_attention_pattern``); MTP layers (index ≥ num_layers) keep softmax attention."""
    freq = model.linear_attention_freq
    return freq is not None and index < model.num_layers and (index + 1) % freq != 0


def gdn_rule(model: GdnModel) -> tuple[str, str] | None:
    """(field, rule) of the first GDN rule ``model`` breaks, or None: ``linear_attention_freq`` places GDN layers
    in a transformer stack, a hybrid pattern places them by ``G`` (not both); the value heads are whole groups of
    the key heads (Megatron-Core repeats q and k n_v/n_k times: ``repeat_interleave``)."""
    uses = model.linear_attention_freq is not None or "G" in (model.hybrid_override_pattern or "")
    if model.linear_attention_freq is not None and model.hybrid_override_pattern is not None:
        return ("model.linear_attention_freq", "is not used with model.hybrid_override_pattern (the pattern places "
                "the GDN layers by 'G')")
    if uses and model.gdn_num_value_heads % model.gdn_num_key_heads:
        return ("model.gdn_num_value_heads", f"must be a multiple of model.gdn_num_key_heads "
                f"({model.gdn_num_key_heads}): q and k are repeated to the value heads")
    return None
