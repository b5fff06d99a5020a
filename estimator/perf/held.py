"""The parameters one device holds on a stage, those that train, and its optimizer step's operators."""

from __future__ import annotations

from typing import TYPE_CHECKING

from estimator.inputs import derive, params
from estimator.inputs.adapters import adapter_of, layer_adapter_params
from estimator.inputs.profiles import resolved_bytes
from estimator.perf import layers, operators
from estimator.perf.muon import muon_active, muon_update, newton_schulz_ops

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig
    from estimator.perf.context import Ctx


def stage_params(cfg: EstimatorConfig, ctx: Ctx, layout: derive.StageLayout) -> tuple[float, float]:
    """Parameters of the stage one device holds: (non-expert, routed experts).

    Non-expert (attention, norms, dense MLP, shared experts, embedding, head): ``/tp`` except the
    parts every TP rank holds whole (``LayerParams.held_non_expert``); routed experts ``/(ep·t_exp)``.
    """
    m = cfg.model
    dense = routed = 0.0
    for index, n in layers.stage_groups(cfg, layout):
        lp = params.layer_params(m, index)
        n = params.weight_copies(m, index, n)
        held_routed, held_shared = lp.held_experts(ctx.tp, derive.layer_ep(cfg, index), ctx.t_exp)
        dense, routed = dense + n * (lp.held_non_expert(ctx.tp) + held_shared), routed + n * held_routed
    if layout.has_embedding:
        dense += (params.embedding_params(m) + params.position_embedding_params(m, ctx.seq)) / ctx.tp
    if layout.has_head:
        dense += params.head_params(m) / ctx.tp
    return dense, routed


def trained_params(cfg: EstimatorConfig, ctx: Ctx, layout: derive.StageLayout,
                   held: tuple[float, float]) -> tuple[float, float]:
    """The parameters of the stage that train (gradients reduced over DP, updated by the optimizer):
    ``held`` (:func:`stage_params`), or with an adapter the adapters' only (:mod:`estimator.inputs.adapters`)."""
    adapter = adapter_of(cfg)
    if adapter is None:
        return held
    dense = routed = 0.0
    for index, n in layers.stage_groups(cfg, layout):
        moe = layers.is_moe_layer(cfg.model, index)
        local = cfg.model.num_experts / derive.layer_ep(cfg, index) if moe else 0.0
        d, r = layer_adapter_params(cfg.model, adapter, moe, ctx.tp, local)
        dense, routed = dense + n * d, routed + n * r
    return dense, routed


def optimizer_ops(cfg: EstimatorConfig, ctx: Ctx, layout: derive.StageLayout,
                  held: tuple[float, float] | None = None) -> list[operators.Op]:
    """The optimizer step of one device: Adam over its shard (``/(dp·cp)`` non-expert, ``/edp`` routed with
    the distributed optimizer, else everything it holds), reading master params (or params), grads
    and both moments and writing them back plus the low-precision copy (:func:`resolved_bytes`).
    ``held``: the stage's :func:`stage_params` when the caller has them."""
    dense, routed = held or stage_params(cfg, ctx, layout)
    rb = resolved_bytes(cfg)
    main = rb.master_params or rb.params
    per_param: float = 2 * main + rb.grads + 4 * rb.optimizer_state + (rb.params if rb.master_params else 0)
    if muon_active(cfg):  # (Muon's weights: one momentum, over their own shards; estimator.perf.muon)
        local, per_param = muon_update(cfg, ctx, layout, dense, routed, per_param)
        return operators.optimizer_ops(local, per_param, rb.grads) + newton_schulz_ops(cfg, ctx, layout)
    if cfg.parallel.distributed_optimizer:
        dense, routed = dense / (ctx.dp * ctx.cp), routed / ctx.edp
    return operators.optimizer_ops(dense + routed, per_param, rb.grads)
