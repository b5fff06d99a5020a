"""Per-layer work of one rank and one micro-batch: FLOPs, recompute share, kernels, CP collectives.

FLOP counts come from :mod:`estimator.perf.compute` (Narayanan et al. 2021 §5.1; DeepSeek-V2/V3 for
MLA), kernel counts from :mod:`estimator.perf.kernels`. Identical layers (same kind and ep) are
priced once (:func:`layer_groups`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from estimator.config.errors import ConfigError
from estimator.inputs import derive, hybrid
from estimator.perf import comm, compute, gdn, kernels, mamba, sac
from estimator.perf.eager import eager_active
from estimator.shared.arrays import any_true, is_array, per_unique, where
from ndval.core import cache

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig, ModelConfig
    from estimator.config.sections import RecomputeMode
    from estimator.perf.context import Ctx


def attention_flops(model: ModelConfig, tokens: float, seq: int) -> tuple[float, float]:
    """(projections, core) forward FLOPs of one attention block for ``tokens`` tokens; the core over
    :func:`estimator.inputs.derive.attended_keys` keys (``seq`` without a sliding window)."""
    a = model.num_attention_heads
    seq = derive.attended_keys(model, seq)
    if model.attention == "mla":
        assert model.kv_lora_rank and model.qk_head_dim and model.v_head_dim
        rope = model.qk_rope_head_dim or 0
        proj = compute.mla_projection_flops(
            tokens, model.hidden_size, a, model.q_lora_rank, model.kv_lora_rank, model.qk_head_dim, rope,
            model.v_head_dim,
        )
        core = compute.attention_core_flops(tokens, seq, a, model.qk_head_dim + rope, model.v_head_dim)
        return proj, core
    d = model.head_size
    proj = compute.attention_projection_flops(tokens, model.hidden_size, a, model.kv_heads, d)
    if model.attention_output_gate:  # gated attention's gate rows (estimator.perf.gdn.output_gate_flops)
        proj = proj + gdn.output_gate_flops(tokens, model.hidden_size, a, d)
    return proj, compute.attention_core_flops(tokens, seq, a, d, d)


def mlp_flops(model: ModelConfig, tokens: float, moe: bool, imbalance: float) -> float:
    """Forward FLOPs of one layer's MLP block (dense, or MoE router + routed + shared experts); with
    ``moe_latent_size`` L the routed experts work in L (the latent projections: :func:`latent_flops`)."""
    if not moe:
        return compute.mlp_flops(tokens, model.hidden_size, model.dense_ffn, model.activation)
    n_shared = 1 if model.shared_ffn_total else 0
    if model.moe_latent_size:
        h, latent = model.hidden_size, model.moe_latent_size
        routed = compute.moe_flops(tokens, latent, model.num_experts, model.moe_topk, model.expert_ffn, 0, 0,
                                   model.activation, imbalance) - compute.matmul_flops(tokens, latent, model.num_experts)
        return routed + compute.moe_flops(tokens, h, model.num_experts, 1, 0, n_shared, model.shared_ffn_total,
                                          model.activation)
    return compute.moe_flops(
        tokens, model.hidden_size, model.num_experts, model.moe_topk, model.expert_ffn, n_shared,
        model.shared_ffn_total, model.activation, imbalance,
    )


def latent_flops(model: ModelConfig, tokens: float) -> float:
    """The latent MoE projections h → L and L → h of one MoE block: 2·2·T·h·L (0 without ``moe_latent_size``)."""
    if not model.moe_latent_size:
        return 0.0
    return 2 * compute.matmul_flops(tokens, model.hidden_size, model.moe_latent_size)


def is_moe_layer(model: ModelConfig, index: int) -> bool:
    """A layer with a MoE block: a MoE layer, a hybrid ``E`` layer, or an MTP layer of a MoE model."""
    return derive.layer_blocks(model, index)[1] == "moe"


def block_flops(model: ModelConfig, ctx: Ctx, index: int, moe: bool) -> tuple[tuple[float, float], float]:
    """((mixer projections, mixer core), MLP block) forward FLOPs of layer ``index`` for the micro-batch's
    tokens, every block counted whole (the caller divides by tp·cp): attention (:func:`attention_flops`), the
    Mamba-2 mixer (:func:`estimator.perf.mamba.mamba_layer_flops`: projections; scan + conv), the GDN mixer
    (:func:`estimator.perf.gdn.gdn_layer_flops`: projections; delta rule + conv), or none; the
    MLP block (:func:`mlp_flops`, + the latent projections :func:`latent_flops` per rank: on T/tp tokens with
    sequence parallelism, all T without it, so × tp/r before the caller's /tp) or none."""
    mixer, mlp_block = derive.layer_blocks(model, index)
    if mixer == "attention":
        attn = attention_flops(model, ctx.tokens, ctx.seq)
    elif mixer == "mamba":
        attn = mamba.mamba_layer_flops(model, ctx.tokens)
    elif mixer == "gdn":
        attn = gdn.gdn_layer_flops(model, ctx.tokens)
    else:
        attn = (0.0, 0.0)
    mlp = mlp_flops(model, ctx.tokens, moe, ctx.expert_imbalance) if mlp_block is not None else 0.0
    if moe and model.moe_latent_size:
        mlp = mlp + latent_flops(model, ctx.tokens) * ctx.tp / where(ctx.sp, ctx.tp, 1)
    return attn, mlp


def _selective_share_flops(model: ModelConfig, tokens: float, modules: set[str], core: float, mlp: float,
                           moe: bool) -> float:
    """Forward FLOPs of one layer that selective recompute re-runs (Megatron module names).

    ``core_attn``: scores and weighted sum; ``mla_up_proj``: the MLA up-projections; ``mlp``: a dense
    layer's MLP; ``moe``: a MoE layer's whole MLP block; ``shared_experts``: its shared experts.
    ``layernorm`` and ``moe_act`` are element-wise (no matmul FLOPs).
    """
    share = core if "core_attn" in modules else 0.0
    if "mla_up_proj" in modules and model.attention == "mla":
        assert model.kv_lora_rank and model.qk_head_dim and model.v_head_dim
        share = share + compute.mla_up_projection_flops(  # not in place: ``share`` may be ``core``'s array
            tokens, model.num_attention_heads, model.q_lora_rank, model.kv_lora_rank, model.qk_head_dim,
            model.qk_rope_head_dim or 0, model.v_head_dim,
        )
    if ("mlp" in modules and not moe) or ("moe" in modules and moe):
        share = share + mlp
    elif "shared_experts" in modules and moe and model.shared_ffn_total:
        share = share + compute.mlp_flops(tokens, model.hidden_size, model.shared_ffn_total, model.activation)
    return share


def _recompute_fraction(cfg: EstimatorConfig, mode: RecomputeMode, tokens: float, attn: tuple[float, float],
                        mlp: float, moe: bool) -> float:
    """Share of a layer's forward re-run in the backward under the layer's recompute ``mode`` (full: 1;
    selective: the listed modules, default ``core_attn`` as Megatron's ``--recompute-granularity selective``)."""
    if mode != "selective":
        return compute.recompute_forward_fraction(mode, 0.0)
    if sac.uses_op_sac(cfg) and not moe:  # torchtitan's op-level policy: its re-run mms (estimator.perf.sac)
        return compute.recompute_forward_fraction("selective", sac.recomputed_flops(cfg.model, tokens)
                                                  / (attn[0] + attn[1] + mlp))
    modules = set(cfg.recompute.modules) or {"core_attn"}
    share = _selective_share_flops(cfg.model, tokens, modules, attn[1], mlp, moe)
    return compute.recompute_forward_fraction("selective", share / (attn[0] + attn[1] + mlp))


@dataclass(frozen=True)
class LayerFlops:
    """Forward FLOPs of one layer on one device, its recompute share, and whether it is MoE."""

    forward: float
    recompute_fraction: float
    moe: bool


def layer_cost(cfg: EstimatorConfig, ctx: Ctx, index: int, stage: int, mode: RecomputeMode | None = None) -> LayerFlops:
    """Per-device forward FLOPs (``/(tp·cp)``) of one transformer (or MTP) layer under recompute ``mode``
    (default: :func:`derive.layer_recompute` of the layer on ``stage``)."""
    mode = derive.layer_recompute(cfg, stage, index) if mode is None else mode
    m = cfg.model
    moe = is_moe_layer(m, index)
    attn, mlp = block_flops(m, ctx, index, moe)
    if derive.layer_kind(m, index) == "mtp":  # DeepSeek MTP: projection 2h -> h and a second head
        attn = (attn[0] + compute.matmul_flops(ctx.tokens, 2 * m.hidden_size, m.hidden_size), attn[1])
        mlp += compute.output_head_flops(ctx.tokens, m.hidden_size, m.vocab)
    fwd = (attn[0] + attn[1] + mlp) / (ctx.tp * ctx.cp)
    if derive.layer_blocks(m, index)[0] in ("mamba", "gdn"):  # no core attention to recompute selectively
        attn = (attn[0] + attn[1], 0.0)
    return LayerFlops(fwd, _recompute_fraction(cfg, mode, ctx.tokens, attn, mlp, moe), moe)


def quantized_gather_blocks(model: ModelConfig, index: int, moe: bool) -> float:
    """TP blocks of layer ``index`` whose SP all-gather TE runs quantized (:func:`estimator.perf.lowp.quantized_tp_gathers`):
    a transformer layer's non-MLA QKV and dense fc1 (a MoE block gathers in the compute dtype); a hybrid layer's
    one block: a Mamba or GDN in_proj (``TELayerNormColumnParallelLinear``), a non-MLA QKV or a dense fc1; a GDN
    transformer layer's in_proj in place of the QKV."""
    mixer, mlp_block = derive.layer_blocks(model, index)
    if derive.layer_kind(model, index) not in hybrid.HYBRID_KINDS:
        return float(mixer == "gdn" or model.attention != "mla") + (0.0 if moe else 1.0)
    return float(mixer in ("mamba", "gdn") or (mixer == "attention" and model.attention != "mla")
                 or mlp_block == "dense")


def tp_blocks(model: ModelConfig, index: int, t_exp: int) -> int:
    """TP-sharded blocks of layer ``index`` (each one TP collective per pass, :func:`comm.tp_layer_collectives`):
    a transformer layer 2, a MoE one 1 when its experts are not TP-sharded (``t_exp`` 1); a hybrid layer its
    one block (a MoE block: 0 when ``t_exp`` is 1)."""
    kind = derive.layer_kind(model, index)
    moe = is_moe_layer(model, index)
    if kind not in hybrid.HYBRID_KINDS:
        return where(t_exp == 1, 1, 2) if moe else 2
    return where(t_exp == 1, 0, 1) if moe else 1


def shared_layer_cost(cfg: EstimatorConfig, ctx: Ctx, index: int, stage: int,
                      mode: RecomputeMode | None = None) -> LayerFlops:
    """:func:`layer_cost`, memoised across configs on everything it reads: the model (by identity;
    the entry holds it, so the id cannot be reused while cached), the layer kind, the micro-batch's
    tokens, the sequence, tp, cp, the expert load imbalance, the stage's recompute mode and (selective)
    the recompute modules. (Arrays of layouts: computed, not kept.)"""
    model = cfg.model
    mode = derive.layer_recompute(cfg, stage, index) if mode is None else mode
    if is_array(ctx.tokens, ctx.seq, ctx.tp, ctx.cp, ctx.expert_imbalance):
        return layer_cost(cfg, ctx, index, stage, mode)
    modules = tuple(cfg.recompute.modules) if mode == "selective" else ()
    if mode == "selective" and sac.uses_op_sac(cfg):
        modules = (sac.OP_SAC,)
    key = (id(model), derive.layer_kind(model, index), ctx.tokens, ctx.seq, ctx.tp, ctx.cp, ctx.expert_imbalance,
           mode, modules)
    return cache.held_value(_LAYER_FLOPS, key, model, lambda: layer_cost(cfg, ctx, index, stage, mode))


#: :func:`layer_cost` shared across configs (a sweep repeats the same shapes): key -> (model, flops)
_LAYER_FLOPS = cache.store("estimator.layer_flops", bound=4096, key="(id(model), layer kind, tokens, seq, tp, cp, "
                           "expert imbalance, recompute mode, selective modules)", holds="(the model, LayerFlops)")


def layer_kernels(cfg: EstimatorConfig, ctx: Ctx, index: int, moe: bool, tp_blocks: int,
                  mode: str) -> kernels.PassKernels:
    """Kernels one rank launches for layer ``index`` per micro-batch (:mod:`estimator.perf.kernels`);
    an MTP layer adds its projection and second head. (Arrays of layouts: counted once per distinct
    degrees, :func:`estimator.shared.arrays.per_unique`.)"""
    model = cfg.model
    recompute_modules = frozenset({sac.OP_SAC}) if sac.uses_op_sac(cfg) else frozenset(cfg.recompute.modules)
    fixed = (id(model), moe, derive.layer_kind(model, index) == "mtp", mode, recompute_modules,
             cfg.train.flash_attention, cfg.parallel.cp_comm_type, derive.layer_blocks(model, index), eager_active(cfg))

    def count(layer_ep: int, tp: int, sp: bool, blocks: int, cp: int) -> tuple[float, float, float]:
        def counted() -> tuple[float, float, float]:
            shape = kernels.layer_shape(model, moe=moe, layer_ep=layer_ep, tp=tp, sequence_parallel=sp,
                                        tp_blocks=blocks, cp=cp, flash_attention=fixed[5], cp_comm=fixed[6],
                                        blocks=fixed[7], eager=fixed[8])
            out = kernels.layer_pass_kernels(shape, mode, fixed[4])
            if fixed[2]:
                out += kernels.mtp_extra_pass_kernels(tp)
            return out.forward, out.backward, out.recompute

        return cache.held_value(_KERNELS, (*fixed, layer_ep, tp, sp, blocks, cp), model, counted)

    return kernels.PassKernels(*per_unique(count, derive.layer_ep(cfg, index), ctx.tp, ctx.sp, tp_blocks, ctx.cp))


#: kernel counts of a layer shared across configs (a sweep repeats the same degrees): key -> (model, counts);
#: the entry holds the model, so the ``id`` in the key cannot be reused while cached
_KERNELS = cache.store("estimator.layer_kernels", bound=4096, key="(id(model), moe, mtp, recompute mode, modules, "
                       "flash attention, cp comm type, blocks, eager, layer ep, tp, sp, tp blocks, cp)", holds="(the model, kernel counts per pass)")


def layer_groups(cfg: EstimatorConfig, layers: Sequence[int]) -> list[tuple[int, int]]:
    """(representative index, count) per distinct (layer kind, ep): identical layers are priced once.
    A layer's ep follows from its kind (:func:`derive.layer_ep`), so this is :func:`derive.layer_kind_groups`."""
    return derive.layer_kind_groups(cfg.model, layers)


def mode_groups(cfg: EstimatorConfig, layout: derive.StageLayout, kind: derive.LayerKind, n: int,
                mode: RecomputeMode) -> list[tuple[RecomputeMode, int]]:
    """(recompute mode, count) of the stage's ``n`` layers of ``kind`` on a stage of ``mode``: ``[(mode, n)]``,
    or where :func:`derive.stage_choice` chooses per layer, those re-run whole (``full``) and the others
    (``none``)."""
    chosen = derive.recomputed_by_kind(cfg, layout)
    if chosen is None or derive.stage_choice(cfg, mode) is None:
        return [(mode, n)]
    k = dict(chosen)[kind]
    split: tuple[tuple[RecomputeMode, int], ...] = (("full", k), ("none", n - k))
    return [(m, c) for m, c in split if c]


def stage_mode_groups(cfg: EstimatorConfig, layout: derive.StageLayout,
                      mode: RecomputeMode) -> list[tuple[int, derive.LayerKind, RecomputeMode, int]]:
    """(representative index, kind, recompute mode, count) of the stage's layers on a stage of ``mode``:
    :func:`stage_groups` split by :func:`mode_groups`."""
    return [(index, kind, layer_mode, count)
            for (index, n), (kind, _) in zip(stage_groups(cfg, layout), layout.kind_runs(cfg.model), strict=True)
            for layer_mode, count in mode_groups(cfg, layout, kind, n, mode)]


def stage_groups(cfg: EstimatorConfig, layout: derive.StageLayout) -> Sequence[tuple[int, int]]:
    """:func:`layer_groups` of a stage's layers, kept on the layout (:meth:`derive.StageLayout.kind_groups`)."""
    return layout.kind_groups(cfg.model)


def cp_layer_collectives(m: ModelConfig, ctx: Ctx, local_tokens: float, cp_dim: str) -> list[comm.Collective]:
    """Forward CP collectives of one layer per micro-batch on one rank: the ring's K/V blocks
    (:func:`comm.cp_ring_layer_collectives`, ``cp_dim`` ``cp``) or Ulysses' four all-to-alls
    (:func:`comm.cp_ulysses_layer_collectives`, ``cp_a2a``), widths per TP rank (``/tp``). MLA runs
    the all-to-alls after its up-projections: ``a`` heads of ``d_qk + d_rope`` (Q, K) and ``d_v`` (V, output)."""
    if cp_dim == "cp":
        return comm.cp_ring_layer_collectives(local_tokens, derive.kv_dim(m) / ctx.tp, ctx.b_compute, ctx.cp)
    if cp_dim == "cp_ag":
        return comm.cp_allgather_layer_collectives(local_tokens, derive.kv_dim(m) / ctx.tp, ctx.b_compute, ctx.cp)
    a = m.num_attention_heads
    if any_true((a // ctx.tp) % ctx.cp):
        raise ConfigError("parallel.cp_comm_type", f"a2a (Ulysses) scatters the {a // ctx.tp} attention heads of a "
                          f"TP rank over cp={ctx.cp}: cp must divide them")
    if m.attention == "mla":
        assert m.qk_head_dim and m.v_head_dim
        d_qk, d_v, n_kv = m.qk_head_dim + (m.qk_rope_head_dim or 0), m.v_head_dim, a
    else:
        d_qk = d_v = m.head_size
        n_kv = m.kv_heads
    return comm.cp_ulysses_layer_collectives(
        local_tokens, a * d_qk / ctx.tp, n_kv * (d_qk + d_v) / 2.0 / ctx.tp, a * d_v / ctx.tp, ctx.b_compute, ctx.cp,
    )
