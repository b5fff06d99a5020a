"""Stage pricing: one pipeline stage's cost per micro-batch and its per-step DP traffic.

Per stage and micro-batch the model prices forward, backward and recompute FLOPs
(:mod:`estimator.perf.layers`) and the TP/SP, EP and CP collectives (:mod:`estimator.perf.comm`)
in seconds with the hierarchical network (:mod:`estimator.perf.network`); per step it prices the
DP/ZeRO traffic. Stages with the same layers, extras and recompute mode are priced once.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import TYPE_CHECKING, Any, cast

from estimator.inputs import derive
from estimator.inputs.recipes import stored_recipe
from estimator.perf import (
    comm,
    compute,
    graphs,
    kernels,
    layers,
    lowp,
    mixer_cp,
    network,
    offload,
    overlap,
    roofline,
)
from estimator.perf.context import CONTEXT_KEY, Ctx, comm_value, compute_value, config_context, prices
from estimator.perf.eager import eager_active
from estimator.perf.held import optimizer_ops, stage_params, trained_params
from estimator.shared.arrays import ARRAY, any_true, maximum, where
from estimator.shared.memo import config_memo, kept_property, pricing_key, with_kept_values
from ndval.core import cache

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig


@dataclass(frozen=True)
class StageCost:
    """One pipeline stage's cost: per-micro-batch parts and the per-step DP part (report units).

    ``ep`` is the largest EP degree among the stage's layers (1 for an all-dense stage); the
    ``*_flops`` and ``*_bytes`` fields are per device and micro-batch (DP: per step) for reports.

    Host launch bound (``options.host_launch_overhead``): ``host_fw/bw/rec`` are the seconds the
    host needs to launch the pass's kernels (:mod:`estimator.perf.kernels` count × the profile's
    per-launch cost, :func:`estimator.inputs.profiles.host_launch_cost_s`). Host dispatch and device
    execution run asynchronously, so a pass takes ``max(device, host)``: the device waits for
    launches when the host is slower, the host never waits for the device (no sync inside a
    pass). The excess ``max(0, host − device)`` of each pass is the *exposed host time*; it is
    folded into that pass's compute part (FW_COMPUTE / BW_COMPUTE / RECOMPUTE, hence COMP) because
    the spec's part lists (§2, §7) have no host part and the device is idle between kernels of that
    pass, i.e. the time is spent "computing" at the launch rate. ``device`` of a pass is its compute
    plus its comm (TP/EP: forward 1, backward 1, recompute 1 with full recompute; CP ring: 1, 2, 1 —
    the pass factors of :func:`stage_cost`). All host fields are 0 in ``score`` mode, under
    ``legacy()`` and for profiles without a sourced per-launch cost; then every value equals the
    model without the term exactly.

    Derived values (``per_micro_batch``, the exposed host time, ``fw_time`` ...) are pure functions of
    the record, computed once per record (:class:`estimator.shared.memo.kept_property`); the record never
    changes (:func:`relabelled` and :func:`dataclasses.replace` make new ones).
    """

    stage: int
    fw_compute: float
    bw_compute: float
    recompute: float
    mp_comm: float
    ep_comm: float
    cp_comm: float
    dp_comm: float
    ep: int
    fw_flops: float = 0.0
    cp_dim: str = "cp"  # pass factors of the CP comm: "cp" ring, "cp_a2a" Ulysses (comm.BACKWARD_COMM_FACTOR)
    tp_bytes: float = 0.0
    ep_bytes: float = 0.0
    cp_bytes: float = 0.0
    dp_bytes: float = 0.0
    host_fw: float = 0.0
    host_bw: float = 0.0
    host_rec: float = 0.0
    full_recompute: float = 0.0  # share of the stage's layers re-run whole (1: full recompute; block: its layers)
    kernels_fw: float = 0.0
    kernels_bw: float = 0.0
    kernels_rec: float = 0.0
    optimizer: float = 0.0  # per step: the optimizer step over the local shard (operator roofline only)
    by_class: dict[str, float] = field(default_factory=dict)  # device seconds per micro-batch per operator class
    #: comm seconds the overlap mechanisms hide (:mod:`estimator.perf.overlap`); ``mp/ep/cp/dp_comm`` are
    #: what stays exposed. All 0 with the mechanisms off.
    tp_hidden: float = 0.0
    ep_hidden: float = 0.0
    cp_hidden: float = 0.0
    dp_hidden: float = 0.0
    #: TE's CPU activation offload per micro-batch (:mod:`estimator.perf.offload`): the copies' seconds under the
    #: compute and the stalls (already in ``fw_compute`` / ``bw_compute``); 0 without offload
    offload_hidden: float = 0.0
    offload_exposed: float = 0.0

    def pass_comm(self, ep_scale: float = 1.0) -> tuple[float, float, float]:
        """(forward, backward, recompute) share of the stage's TP + EP + CP comm per micro-batch
        (EP scaled by ``ep_scale``), split by :func:`comm.pass_comm_factors` (the factors
        :func:`stage_cost` prices): TP/EP ``1 : 1 : f`` over ``2 + f``, CP ``1 : 2 : f`` over ``3 + f``,
        ``f`` = 1 with full recompute."""
        fw = rec = 0.0
        for dim, value in (("tp", self.mp_comm), ("ep", self.ep_comm * ep_scale), (self.cp_dim, self.cp_comm)):
            factors = comm.pass_comm_factors(dim, self.full_recompute)
            total = sum(factors)
            fw, rec = fw + factors[0] * value / total, rec + factors[2] * value / total
        return fw, self.mp_comm + self.ep_comm * ep_scale + self.cp_comm - fw - rec, rec

    @property
    def has_host_term(self) -> bool:
        if type(self.host_fw) is ARRAY or type(self.host_bw) is ARRAY or type(self.host_rec) is ARRAY:
            return any_true(self.host_fw) or any_true(self.host_bw) or any_true(self.host_rec)
        return bool(self.host_fw or self.host_bw or self.host_rec)

    def exposed_host(self, ep_scale: float = 1.0) -> tuple[float, float, float]:
        """Exposed host time per pass ``max(0, host_p − (compute_p + comm_p))`` (forward, backward,
        recompute); all 0 without a host term."""
        if ep_scale == 1.0:
            return self._exposed
        return self._exposed_at(ep_scale)

    @kept_property
    def _exposed(self) -> tuple[float, float, float]:
        return self._exposed_at(1.0)

    def _exposed_at(self, ep_scale: float) -> tuple[float, float, float]:
        if not self.has_host_term:
            return 0.0, 0.0, 0.0
        c_fw, c_bw, c_rec = self.pass_comm(ep_scale)
        return (maximum(0.0, self.host_fw - self.fw_compute - c_fw),
                maximum(0.0, self.host_bw - self.bw_compute - c_bw), maximum(0.0, self.host_rec - self.recompute - c_rec))

    @kept_property
    def per_micro_batch(self) -> float:
        """``s_i``: everything the stage does for one micro-batch, ``Σ_pass max(device_p, host_p)``."""
        device = self.fw_compute + self.bw_compute + self.recompute + self.mp_comm + self.ep_comm + self.cp_comm
        return device + sum(self._exposed)

    def per_micro_batch_ep_hidden(self, ratio: float) -> float:
        """``s_i`` when ``ratio`` of the EP comm is hidden in the bubble (seed P3): the hidden comm
        leaves the device time, the host launch bound stays: ``Σ_pass max(device_p − ratio·ep_p, host_p)``."""
        device = (self.fw_compute + self.bw_compute + self.recompute + self.mp_comm + self.ep_comm * (1.0 - ratio)
                  + self.cp_comm)
        return device + sum(self.exposed_host(1.0 - ratio))

    @kept_property
    def fw_time(self) -> float:
        """Forward compute plus its exposed host time (the FW_COMPUTE part per micro-batch)."""
        return self.fw_compute + self._exposed[0]

    @kept_property
    def bw_time(self) -> float:
        """Backward compute plus its exposed host time (BW_COMPUTE per micro-batch)."""
        return self.bw_compute + self._exposed[1]

    @kept_property
    def rec_time(self) -> float:
        """Recompute plus its exposed host time (RECOMPUTE per micro-batch)."""
        return self.recompute + self._exposed[2]

    def part(self, name: str) -> float:
        """Per-micro-batch value of a PerfParts name (DP_COMM: per step); compute parts include the
        pass's exposed host time."""
        return self.parts()[name]

    def parts(self) -> dict[str, float]:
        """:meth:`part` of every PerfParts name it knows."""
        return {
            "FW_COMPUTE": self.fw_time, "BW_COMPUTE": self.bw_time, "RECOMPUTE": self.rec_time,
            "MP_COMM": self.mp_comm, "EP_COMM": self.ep_comm, "CP_COMM": self.cp_comm, "DP_COMM": self.dp_comm,
        }



def stage_cost(cfg: EstimatorConfig, ctx: Ctx, layout: derive.StageLayout) -> StageCost:
    """Cost of one pipeline stage (all its chunks) per micro-batch, and its per-step DP traffic.

    Layers of one kind are priced once (:func:`layers.layer_groups`): their prices are kept for the
    other stages (:func:`estimator.perf.context.prices`)."""
    memo = prices(cfg, ctx, "stage_costs")
    m = cfg.model
    fw = bw = rec = 0.0
    tp_cs: list[comm.Collective] = []
    ep_cs: list[comm.Collective] = []
    cp_cs: list[comm.Collective] = []
    mixer_cs: list[comm.Collective] = []  # the mixers' CP all-to-alls: nothing runs beside them (exposed)
    act_bytes, dispatch, cp_dim, cp_layer, by_node = per_layer_traffic(cfg, ctx)
    ep_node_cs: list[comm.Collective] = []
    stage_ep = 1
    stage_mode = cfg.stage_recompute(layout.stage)
    launches = kernels.PassKernels(0.0, 0.0, 0.0)
    gather_share = lowp.tp_gather_share(cfg, ctx.b_compute) if any_true(ctx.sp) else None
    n_full = n_all = 0
    for index, kind, mode, n in layers.stage_mode_groups(cfg, layout, stage_mode):
        full = mode == "full"
        n_full, n_all = n_full + (n if full else 0), n_all + n
        if ("calls", full) not in memo:
            memo["calls", full] = {dim: sum(comm.pass_comm_factors(dim, full)) for dim in ("tp", "ep", cp_dim, "cp_a2a")}
        calls = memo["calls", full]
        kind_key = (kind, mode)
        lc = memo.get(("flops", kind_key))
        if lc is None:
            lc = memo["flops", kind_key] = layers.shared_layer_cost(cfg, ctx, index, layout.stage, mode)
        f, b, r = compute.pass_flops(lc.forward * n, lc.recompute_fraction)
        fw, bw, rec = fw + f, bw + b, rec + r
        blocks = layers.tp_blocks(m, index, ctx.t_exp)
        mixer = derive.layer_blocks(m, index)[0]
        attention = mixer == "attention"
        if ctx.host_launch_s:
            if ("kernels", kind_key) not in memo:
                eager = layers.layer_kernels(cfg, ctx, index, lc.moe, blocks, mode)
                memo["kernels", kind_key] = graphs.layer_launches(graphs.graph_mode(cfg), eager)
            launches += memo["kernels", kind_key].scaled(n)
        tp_layer = comm.tp_layer_collectives(act_bytes, ctx.tp, ctx.sp, blocks)
        if gather_share is not None:  # TE's quantized SP all-gathers (estimator.perf.lowp)
            quantized = layers.quantized_gather_blocks(m, index, lc.moe)
            tp_layer = lowp.quantized_tp_gathers(tp_layer, gather_share, quantized, maximum(blocks, 1))  # (0: none)
        tp_cs += comm.scaled(tp_layer, calls["tp"] * n)
        cp_cs += comm.scaled(cp_layer, calls[cp_dim] * n) if attention else []
        if mixer in mixer_cp.MIXER_CP_CALLS and any_true(ctx.cp > 1):  # Mamba / GDN all-to-alls (perf.mixer_cp)
            if ("mixer_cp", mixer) not in memo:
                memo["mixer_cp", mixer] = mixer_cp.mixer_cp_collectives(
                    mixer, ctx.tokens / ctx.cp, *mixer_cp.mixer_cp_widths(m, mixer, ctx.tp), ctx.b_compute, ctx.cp)
            mixer_cs += comm.scaled(memo["mixer_cp", mixer], calls["cp_a2a"] * n)
            if mixer == "gdn" and mode == "selective" and "gdn_norm_out" in cfg.recompute.modules:
                mixer_cs += comm.scaled(memo["mixer_cp", mixer][1:], n)  # the recomputed HP-to-CP all-to-all
        layer_ep = derive.kind_ep(cfg, kind)
        if lc.moe and any_true(layer_ep > 1):  # (arrays: rows with ep = 1 price no EP comm)
            stage_ep = maximum(stage_ep, layer_ep)
            ep_a2a, between = ep_layer_exchange(cfg, ctx, dispatch, by_node, layer_ep)
            ep_node_cs += comm.scaled(between, calls["ep"] * n)
            ep_cs += comm.scaled(ep_a2a, calls["ep"] * n)
    if layout.has_head:
        head = compute.output_head_flops(ctx.tokens, m.hidden_size, m.vocab) / (ctx.tp * ctx.cp)
        fw, bw = fw + head, bw + compute.BACKWARD_TO_FORWARD_RATIO * head
    if ctx.host_launch_s:
        graphed = graphs.graph_mode(cfg)
        if layout.has_embedding:
            launches += graphs.extra_launches(graphed, kernels.embedding_pass_kernels(m.position_embedding == "learned"))
        if layout.has_head:
            launches += graphs.extra_launches(graphed, kernels.head_pass_kernels(ctx.tp, eager_active(cfg)[1]))
        launches += roofline.fsdp2_copy_launches(cfg, ctx, layout)
    held = trained_params(cfg, ctx, layout, stage_params(cfg, ctx, layout))
    dp_cs, dp_stride_exp, dp_cs_exp = dp_collectives(cfg, ctx, layout, held)
    timed = [compute_value(ctx, fw), compute_value(ctx, bw), compute_value(ctx, rec)]
    optimizer, by_class = 0.0, {}
    if roofline.roofline_active(cfg):
        roof = roofline.stage_roofline(cfg, ctx, layout, optimizer_ops(cfg, ctx, layout, held))
        timed, optimizer, by_class = [roof.forward, roof.backward, roof.recompute], roof.optimizer, roof.by_class
    copies = offload.stage_offload(cfg, ctx, layout)
    if copies is not None:
        timed = [timed[0] + copies.forward_stall_s, timed[1] + copies.backward_stall_s, timed[2]]
    values = {
        "tp": comm_value(cfg, ctx, tp_cs, 1, "tp"),
        "ep": comm_value(cfg, ctx, ep_cs, ctx.t_exp, "ep") + (
            comm_value(cfg, ctx, ep_node_cs, by_node[1] * ctx.t_exp, "ep") if by_node is not None else 0.0),
        "cp": comm_value(cfg, ctx, cp_cs, ctx.tp, "cp"),
        "dp": comm_value(cfg, ctx, dp_cs, ctx.tp, "dp") + comm_value(cfg, ctx, dp_cs_exp, dp_stride_exp, "dp"),
    }
    host = [launches.forward * ctx.host_launch_s, launches.backward * ctx.host_launch_s,
            launches.recompute * ctx.host_launch_s]
    passes = [maximum(t, h) for t, h in zip(timed, host, strict=True)] if ctx.host_launch_s else timed
    hidden = _hidden(cfg, ctx, layout, values, passes, held, [(dp_cs, ctx.tp), (dp_cs_exp, dp_stride_exp)])
    mixer_s = comm_value(cfg, ctx, mixer_cs, ctx.tp, "cp") if mixer_cs else 0.0
    return StageCost(
        stage=layout.stage,
        fw_compute=timed[0],
        bw_compute=timed[1],
        recompute=timed[2],
        mp_comm=values["tp"] - hidden["tp"], ep_comm=values["ep"] - hidden["ep"], cp_comm=values["cp"] - hidden["cp"] + mixer_s,
        dp_comm=values["dp"] - hidden["dp"],
        tp_hidden=hidden["tp"], ep_hidden=hidden["ep"], cp_hidden=hidden["cp"], dp_hidden=hidden["dp"],
        ep=stage_ep,
        fw_flops=fw,
        cp_dim=cp_dim,
        tp_bytes=sum(map(comm.wire_bytes, tp_cs)),
        ep_bytes=sum(map(comm.wire_bytes, ep_cs + ep_node_cs)),
        cp_bytes=sum(map(comm.wire_bytes, cp_cs + mixer_cs)),
        dp_bytes=sum(map(comm.wire_bytes, dp_cs + dp_cs_exp)),
        host_fw=host[0], host_bw=host[1], host_rec=host[2],
        full_recompute=n_full / n_all if n_all else float(stage_mode == "full"),
        kernels_fw=launches.forward, kernels_bw=launches.backward, kernels_rec=launches.recompute,
        optimizer=optimizer, by_class=by_class,
        offload_hidden=copies.hidden_s if copies else 0.0, offload_exposed=copies.exposed_s if copies else 0.0,
    )



_NOTHING_HIDDEN = {"tp": 0.0, "ep": 0.0, "cp": 0.0, "dp": 0.0}


def _hidden(cfg: EstimatorConfig, ctx: Ctx, layout: derive.StageLayout, values: dict[str, float],
            passes: list[float], held: tuple[float, float], dp_groups: list[tuple[list[comm.Collective], int]],
            ) -> dict[str, float]:
    """Comm seconds per dimension the overlap mechanisms hide (:mod:`estimator.perf.overlap`): the
    collective's seconds less what stays exposed, never below 0; all 0 with the mechanisms off.
    ``passes``: the stage's forward, backward and recompute seconds, each at least its host launch
    time (a host-bound pass lasts that long, and per-step DP traffic can hide under all of it)."""
    if not overlap.any_active(cfg, ctx):
        return _NOTHING_HIDDEN
    w = overlap.windows(cfg, ctx, layout, passes)
    exposed = {
        "tp": overlap.exposed_tp(cfg, ctx, values["tp"], w),
        "ep": overlap.exposed_ep(cfg, values["ep"], w, layout.stage) if overlap.ep_active(cfg) else values["ep"],
        "cp": overlap.exposed_cp(cfg, ctx, values["cp"], w),
        "dp": (overlap.exposed_dp(cfg, ctx, dp_groups, overlap.dp_pieces(cfg, ctx, layout, held), w)
               if overlap.dp_overlap_active(cfg) else values["dp"]),
    }
    return {dim: maximum(0.0, values[dim] - exposed[dim]) for dim in values}


def ep_layer_exchange(cfg: EstimatorConfig, ctx: Ctx, dispatch: Any, by_node: tuple[float, int] | None,
                      layer_ep: Any) -> tuple[list[comm.Collective], list[comm.Collective]]:
    """Forward EP collectives of one MoE layer for one micro-batch: (inside the EP group or its NVLink domain,
    between domains). ``dispatch`` / ``by_node`` as :func:`_per_layer_traffic` gives them; without ``by_node``
    one all-to-all over the EP group (:func:`comm.ep_layer_collectives`), with it the flex dispatcher's
    hierarchical kernels (:func:`comm.ep_layer_collectives_by_node`)."""
    width = cfg.model.moe_latent_size or cfg.model.hidden_size
    if by_node is None:
        return comm.ep_layer_collectives(dispatch, width, ctx.b_compute, layer_ep), []
    return comm.ep_layer_collectives_by_node(dispatch, by_node[0], width, ctx.b_compute, layer_ep, by_node[1])


def per_layer_traffic(
    cfg: EstimatorConfig, ctx: Ctx
) -> tuple[float, float, str, list[comm.Collective], tuple[float, int] | None]:
    """:func:`_per_layer_traffic`, memoized per config like :func:`stage_cost` reads it."""
    memo = prices(cfg, ctx, "stage_costs")
    if "per_layer" not in memo:
        memo["per_layer"] = _per_layer_traffic(cfg, ctx)
    return cast(tuple[float, float, str, list[comm.Collective], tuple[float, int] | None], memo["per_layer"])


def _per_layer_traffic(
    cfg: EstimatorConfig, ctx: Ctx
) -> tuple[float, float, str, list[comm.Collective], tuple[float, int] | None]:
    """What every layer of the config sends, whatever its stage: the TP activation ``b·(s/cp)·h·B_c``,
    the EP dispatch tokens (balanced, the flex dispatcher's one copy per rank, or from the given routing
    load), the CP dimension, a layer's forward CP collectives and, for the flex dispatcher's hierarchical
    exchange (:func:`_by_node`), the copies per destination domain and the EP members per domain
    (:func:`stage_cost` reads them once per config)."""
    m = cfg.model
    local_tokens = ctx.tokens / ctx.cp
    act_bytes = local_tokens * m.hidden_size * ctx.b_compute
    sent = local_tokens / where(ctx.sp, ctx.tp, 1)
    by_node = None
    if ctx.tokens_per_expert is None and cfg.parallel.moe_token_dispatcher == "flex" and \
            cfg.options.flex_dispatch_per_rank and m.num_experts > 1:
        dispatch = comm.ep_dispatch_tokens_flex(sent, m.moe_topk, m.num_experts, ctx.ep)
        by_node = _by_node(cfg, ctx, sent)
    elif ctx.tokens_per_expert is None:
        dispatch = comm.ep_dispatch_tokens_balanced(sent, m.moe_topk)
    else:
        dispatch = comm.ep_dispatch_tokens_imbalanced(sent, m.moe_topk, ctx.tokens_per_expert, ctx.ep)
    cp_dim = comm.CP_DIMS[cfg.parallel.cp_comm_type]
    return act_bytes, dispatch, cp_dim, layers.cp_layer_collectives(m, ctx, local_tokens, cp_dim), by_node


def _by_node(cfg: EstimatorConfig, ctx: Ctx, sent: float) -> tuple[float, int] | None:
    """The flex dispatcher's hierarchical exchange (``options.flex_dispatch_per_node``; priced in seconds
    only, score mode and P4 bytes keep the flat all-to-all): ``(copies per destination domain, g)`` with
    ``g`` the EP members inside one innermost network domain (``network.members_per_domain``), or the
    whole group where ``g`` does not divide ``ep`` — then the exchange is the flat all-to-all
    (:func:`comm.ep_layer_collectives_by_node` with ``g = ep`` is :func:`comm.ep_layer_collectives`)."""
    if not cfg.options.flex_dispatch_per_node or ctx.score or not cfg.options.convert_ep_comm_to_time:
        return None
    m = cfg.model
    g = network.members_per_domain(ctx.ep, ctx.t_exp, ctx.levels)[0]
    g = where(ctx.ep % g == 0, g, ctx.ep)
    if type(g) is not ARRAY and g == ctx.ep:  # one domain holds the group: the flat all-to-all
        return None
    return comm.ep_dispatch_tokens_flex(sent, m.moe_topk, m.num_experts, ctx.ep // g), g


def dp_collectives(
    cfg: EstimatorConfig, ctx: Ctx, layout: derive.StageLayout, held: tuple[float, float] | None = None,
) -> tuple[list[comm.Collective], int, list[comm.Collective]]:
    """DP collectives of one step for the stage's parameters held by one device.

    Non-expert (attention, norms, dense MLP, shared experts, embedding, head): ``/tp`` except the
    parts every TP rank holds whole (``LayerParams.held_non_expert``), reduced over the ``dp·cp``
    group (stride tp). Routed experts: ``routed/(ep·t_exp)`` over the expert-data-parallel group ``dp·tp·cp/(t_exp·ep)`` (stride ``t_exp·ep``).
    ``held``: the stage's :func:`stage_params` when the caller has them.
    """
    dense, routed = held or stage_params(cfg, ctx, layout)
    dist = cfg.parallel.distributed_optimizer
    b_gather = gather_bytes(cfg, ctx.b_param)
    non_exp = comm.dp_step_collectives(dense, ctx.b_grad, b_gather, ctx.dp * ctx.cp, dist)
    exp = comm.dp_step_collectives(routed, ctx.b_grad, b_gather, ctx.edp, dist)
    return non_exp, ctx.t_exp * ctx.ep, exp


def gather_bytes(cfg: EstimatorConfig, b_param: int) -> float:
    """Bytes per parameter of the DP parameter all-gather: the recipe's quantized bytes
    (:class:`estimator.inputs.recipes.LinearRecipe` ``stored_bytes``) when the parameters are gathered
    quantized — Megatron ``precision.fp8_param_gather``, or FSDP2's float8 all-gather
    (``precision.fsdp_float8_all_gather`` with dp > 1, torchtitan: 1 B instead of the bf16 2 B) —, else
    ``b_param``. (All the gathered parameters counted as linear weights: the norms are < 0.1 %.)
    ``options.low_precision_gemms: false`` keeps ``b_param`` (the model before recipes)."""
    pr = cfg.precision
    recipe = stored_recipe(cfg)
    quantized = pr.fp8_param_gather or (pr.fsdp_float8_all_gather and cfg.parallel.dp > 1)
    return recipe.stored_bytes if recipe is not None and quantized else b_param


def stage_costs(cfg: EstimatorConfig, ctx: Ctx | None = None) -> list[StageCost]:
    """Per-stage costs of ``cfg`` before part coefficients (report units).

    Stages with the same layers (kind and count; a layer's ep follows from its kind), extras and
    recompute mode cost the same and are priced once; under the config's own context
    (:func:`config_context`) also once across configs equal in what the pricing reads
    (:func:`estimator.shared.memo.pricing_key`).
    """
    ctx = ctx or config_context(cfg)
    out: list[StageCost] = []
    seen: dict[tuple[object, ...], StageCost] = {}
    shared = pricing_key(cfg) if config_memo(cfg).get(CONTEXT_KEY) is ctx else None
    for layout in derive.stage_layouts(cfg):
        kinds = tuple(sorted(layout.kind_runs(cfg.model)))
        key = (kinds, layout.has_embedding, layout.has_head, cfg.stage_recompute(layout.stage),
               derive.recomputed_by_kind(cfg, layout))
        if key not in seen:
            seen[key] = _priced(cfg, ctx, layout, shared, key[1:])
        out.append(seen[key] if seen[key].stage == layout.stage else relabelled(seen[key], layout.stage))
    return out


#: stage costs shared across configs: (pricing key, kind runs in order, embedding, head, recompute mode, layers
#: re-run whole per kind) -> (the instances the pricing key names, cost); cleared when full
_STAGE_COSTS = cache.store("estimator.stage_costs", bound=4096, key="(pricing key, kind runs in order, embedding, "
                           "head, recompute mode, recomputed layers per kind)", holds="(the instances the pricing key names, StageCost)")
#: a stage cost for another stage with the same layers (:func:`relabelled`): (id(cost), stage) -> (cost, copy)
_RELABELLED = cache.store("estimator.relabelled_stage_costs", bound=4096, key="(id(stage cost), stage)",
                          holds="(the cost, its record for that stage)")


def _priced(cfg: EstimatorConfig, ctx: Ctx, layout: derive.StageLayout,
            shared: tuple[tuple[object, ...], tuple[object, ...]] | None, extras: tuple[object, ...]) -> StageCost:
    """:func:`stage_cost` of ``layout`` with its ``per_micro_batch`` derived (the relabelled copies carry
    it), kept in :data:`_STAGE_COSTS` under ``shared`` (:func:`estimator.shared.memo.pricing_key`), the layout's kind runs
    in their order (the order of the sums) and ``extras`` (embedding, head, recompute mode, recomputed layers)."""
    def priced() -> StageCost:
        cost = stage_cost(cfg, ctx, layout)
        cost.per_micro_batch  # noqa: B018
        return cost

    if shared is None:
        return priced()
    key = (shared[0], layout.kind_runs(cfg.model), *extras)
    return cache.shared_value(_STAGE_COSTS, key, shared[1], priced)


def relabelled(cost: StageCost, stage: int) -> StageCost:
    """``cost`` for another stage with the same layers: every value kept, only ``stage`` differs (a new
    record through the constructor, with the values ``cost`` already derived — none reads ``stage``;
    kept per (cost, stage) in the cache registry, so a sweep's stages reuse one record)."""
    return cache.held_value(_RELABELLED, (id(cost), stage), cost, _with_stage, cost, stage)


#: StageCost's init fields after ``stage`` (its first), read in one call: what :func:`relabelled` passes
#: to the constructor (what :func:`dataclasses.replace` does, without its per-call walk over the fields)
_AFTER_STAGE = tuple(f.name for f in fields(StageCost) if f.init)[1:]
_VALUES_AFTER_STAGE = attrgetter(*_AFTER_STAGE)
if fields(StageCost)[0].name != "stage" or len(_AFTER_STAGE) != len(fields(StageCost)) - 1:
    raise TypeError("StageCost: relabelled() expects 'stage' first and every field an init field")


def _with_stage(cost: StageCost, stage: int) -> StageCost:
    out = with_kept_values(cost, StageCost(stage, *_VALUES_AFTER_STAGE(cost)))
    _ORIGINS[id(out)] = (out, origin(cost))
    return out


def origin(cost: StageCost) -> StageCost:
    """The priced record ``cost`` is a :func:`relabelled` copy of (``cost`` itself when it is none): what a
    value read from the numbers only may be kept under."""
    hit = _ORIGINS.get(id(cost))
    return hit[1] if hit is not None and hit[0] is cost else cost


#: the priced record of each :func:`relabelled` copy: id(copy) -> (copy, priced record)
_ORIGINS = cache.store("estimator.stage_cost_origins", bound=4096, key="id(relabelled stage cost)",
                       holds="(the copy, the priced record it copies)")
