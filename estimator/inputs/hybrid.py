"""Hybrid Mamba-2 / attention / MLP / MoE stacks (Nemotron-H, Nemotron-3): the layer pattern, the blocks
each layer kind holds, and the Mamba-2 mixer's shape and parameters.

Megatron-Core's hybrid models (``MambaModel``, ``--hybrid-override-pattern``; NVIDIA/Megatron-LM@d98e8a64dd
megatron/core/ssm/mamba_hybrid_layer_allocation.py ``Symbols``) spell the stack as one character per layer:
``M`` a Mamba-2 mixer layer, ``*`` a self-attention layer, ``-`` a dense MLP layer, ``E`` a MoE layer. Each
layer holds ONE block (its pre-norm, the block, the residual add), unlike a transformer layer (attention and
MLP): ``num_layers`` is the pattern's length (Nemotron-3 Nano: 52 symbols = 23 ``M`` + 23 ``E`` + 6 ``*``).

The Mamba-2 mixer (Dao & Gu 2024, "Transformers are SSMs", arXiv 2405.21060, §7 the Mamba-2 block;
Megatron-Core megatron/core/ssm/mamba_mixer.py ``MambaMixer``), with ``n_h`` heads of ``p`` channels
(``d_i = n_h·p``), state ``N``, ``g`` groups of B/C, conv kernel ``k``:

* ``in_proj``: h → ``2·d_i + 2·g·N + n_h`` (z, x, B, C, dt packed in one column-parallel linear; the layer's
  RMSNorm is fused into it: ``TELayerNormColumnParallelLinear``);
* ``conv1d``: depthwise causal conv over the ``d_i + 2·g·N`` channels of x, B, C (weight ``k`` per channel
  plus a bias);
* ``dt_bias``, ``A_log``, ``D``: ``n_h`` each (``D_has_hdim`` False, the Megatron default);
* gated RMSNorm over ``d_i`` (``RMSNormGated``, ``group_size = d_i/g``);
* ``out_proj``: ``d_i`` → h (row-parallel).

Every mixer tensor is split over TP (heads and groups per rank: Megatron asserts ``n_h % tp == 0`` and
``g % tp == 0``); only the layer's pre-norm (h) is whole on each rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

#: pattern symbol -> layer kind (Megatron-Core ``hybrid_layer_allocation.Symbols``: MAMBA 'M', GDN 'G' (a Gated
#: DeltaNet mixer, :mod:`estimator.inputs.gdn`), ATTENTION '*', MLP '-', MOE 'E')
HYBRID_SYMBOLS: dict[str, str] = {"M": "mamba", "G": "gdn", "*": "attention", "-": "mlp", "E": "moe_mlp"}
#: the layer kinds of a hybrid pattern (each one block)
HYBRID_KINDS = frozenset(HYBRID_SYMBOLS.values())

#: Megatron-Core defaults of the Mamba-2 fields (NVIDIA/Megatron-LM@d98e8a64dd
#: megatron/core/transformer/transformer_config.py: ``mamba_state_dim = 128``, ``mamba_head_dim = 64``,
#: ``mamba_num_groups = 8``; megatron/core/ssm/mamba_mixer.py ``MambaMixer(d_conv=4, expand=2,
#: chunk_size=128)``)
MAMBA_DEFAULT_STATE_DIM = 128
MAMBA_DEFAULT_HEAD_DIM = 64
MAMBA_DEFAULT_NUM_GROUPS = 8
MAMBA_DEFAULT_CONV_KERNEL = 4
MAMBA_DEFAULT_CHUNK_SIZE = 128
#: d_inner = expand·h when ``mamba_num_heads`` is not given (``MambaMixer(expand=2)``)
MAMBA_DEFAULT_EXPAND = 2

Mixer = Literal["attention", "mamba", "gdn"] | None
MlpBlock = Literal["dense", "moe"] | None


class HybridModel(Protocol):
    """The model fields this module reads (``estimator.config.sections.ModelConfig``, which imports this
    module: not named here, even for type checking)."""

    @property
    def num_layers(self) -> int: ...
    @property
    def num_dense_layers(self) -> int: ...
    @property
    def hidden_size(self) -> int: ...
    @property
    def is_moe(self) -> bool: ...
    @property
    def hybrid_override_pattern(self) -> str | None: ...
    @property
    def mamba_num_heads(self) -> int | None: ...
    @property
    def mamba_head_dim(self) -> int: ...
    @property
    def mamba_state_dim(self) -> int: ...
    @property
    def mamba_num_groups(self) -> int: ...
    @property
    def mamba_conv_kernel(self) -> int: ...
    @property
    def mamba_chunk_size(self) -> int: ...
    @property
    def moe_latent_size(self) -> int | None: ...


def layer_blocks(kind: str, mtp_moe: bool) -> tuple[Mixer, MlpBlock]:
    """(mixer, MLP block) of a layer of ``kind``: a transformer layer (``dense`` / ``moe`` / ``mtp``, whose
    MLP is MoE when ``mtp_moe``) holds attention and an MLP, a GDN transformer layer (``gdn_dense`` /
    ``gdn_moe``: ``linear_attention_freq``) a Gated DeltaNet mixer and an MLP; a hybrid layer one block."""
    if kind in ("mamba", "gdn", "attention"):
        return kind, None  # type: ignore[return-value]
    if kind in ("gdn_dense", "gdn_moe"):
        return "gdn", ("moe" if kind == "gdn_moe" else "dense")
    if kind == "mlp":
        return None, "dense"
    if kind == "moe_mlp":
        return None, "moe"
    return "attention", ("moe" if kind == "moe" or (kind == "mtp" and mtp_moe) else "dense")


def pattern_rule(model: HybridModel) -> tuple[str, str] | None:
    """(field, rule) of the first hybrid-model rule ``model`` breaks, or None.

    The pattern is Megatron's ``hybrid_override_pattern`` spelling: one of ``M * - E`` per layer, length
    ``num_layers`` (Megatron-Core asserts the pattern's length equals the layer count); ``E`` needs a MoE
    model; ``num_dense_layers`` is not used with a pattern (the pattern places the MLP kinds); the Mamba
    heads split into whole groups (``n_h % g == 0``, ``MambaMixer``); ``moe_latent_size`` needs MoE.
    """
    pattern = model.hybrid_override_pattern
    if model.moe_latent_size is not None and not model.is_moe:
        return "model.moe_latent_size", "is the latent width of MoE experts: needs model.num_experts > 1"
    if pattern is None:
        return None
    field = "model.hybrid_override_pattern"
    bad = sorted(set(pattern) - set(HYBRID_SYMBOLS))
    if bad:
        return field, (f"unknown symbol(s) {''.join(bad)!r}: one character per layer, M (Mamba-2), G (Gated "
                       "DeltaNet), * (attention), - (dense MLP), E (MoE); a valid example: 'M-M*-E'")
    if len(pattern) != model.num_layers:
        return field, f"has {len(pattern)} symbols but model.num_layers is {model.num_layers} (one symbol per layer)"
    if "E" in pattern and not model.is_moe:
        return field, "has MoE layers (E) but model.num_experts ≤ 1"
    if model.num_dense_layers:
        return "model.num_dense_layers", "is not used with model.hybrid_override_pattern (the pattern places the MLP kinds)"
    if "M" in pattern and mamba_dims(model).heads % model.mamba_num_groups:
        return "model.mamba_num_heads", f"must be a multiple of model.mamba_num_groups ({model.mamba_num_groups})"
    return None


@dataclass(frozen=True)
class MambaDims:
    """The Mamba-2 mixer's shape: heads n_h, head dim p, d_i = n_h·p, state N, groups g, conv kernel k, chunk Q."""

    heads: int
    head_dim: int
    state: int
    groups: int
    conv: int
    chunk: int

    @property
    def inner(self) -> int:
        """d_i = n_h·p."""
        return self.heads * self.head_dim

    @property
    def conv_channels(self) -> int:
        """Channels the causal conv runs over (x, B, C): d_i + 2·g·N."""
        return self.inner + 2 * self.groups * self.state

    @property
    def in_proj_width(self) -> int:
        """in_proj output width (z, x, B, C, dt): 2·d_i + 2·g·N + n_h."""
        return 2 * self.inner + 2 * self.groups * self.state + self.heads


def mamba_dims(model: HybridModel) -> MambaDims:
    """:class:`MambaDims` of ``model``; n_h defaults to expand·h/p (``MambaMixer``: ``d_inner = expand·d_model``)."""
    p = model.mamba_head_dim
    heads = model.mamba_num_heads or MAMBA_DEFAULT_EXPAND * model.hidden_size // p
    return MambaDims(heads, p, model.mamba_state_dim, model.mamba_num_groups, model.mamba_conv_kernel,
                     model.mamba_chunk_size)


def mamba_mixer_params(hidden: int, d: MambaDims) -> int:
    """Weights of one Mamba-2 mixer (all TP-sharded; the layer's pre-norm is counted apart):

    in_proj h·(2·d_i + 2·g·N + n_h) + conv1d (d_i + 2·g·N)·(k + 1) (weight and bias) + dt_bias, A_log, D
    3·n_h + gated-norm weight d_i + out_proj d_i·h (Megatron-Core ``MambaMixer``: ``bias=False`` for the
    projections, ``conv_bias=True``).
    """
    return hidden * d.in_proj_width + d.conv_channels * (d.conv + 1) + 3 * d.heads + d.inner + d.inner * hidden
