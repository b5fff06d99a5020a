"""Step-time assembly: per-stage costs -> pipeline -> PerfParts -> RealParts (spec §7, seed P3/P4).

Per pipeline stage and micro-batch the model prices forward, backward and recompute FLOPs
(:mod:`compute`) and the TP/SP, EP and CP collectives (:mod:`comm`) in seconds with the
hierarchical network (:mod:`network`); per step it prices the DP/ZeRO traffic and the pipeline
p2p. The schedule (:mod:`pipeline`) gives the step time; the straggler stage's parts times ``m``
are the useful work and ``BUBBLE`` is the rest (reference §3.4-§3.5).

Options (spec §5): ``ep_bubble_overlap_ratio`` (P3: EP comm hides in the bubble on stages with
ep > 1), ``ep_comm_overlap`` and ``convert_ep_comm_to_time`` (P4: EP in seconds, or left in bytes
like the reference), ``dp_comm_zero_hack`` / ``tp_comm_half_hack`` (the reference's test hacks),
``perf_mode`` (``score``: compute in FLOP·B_p and comm in bytes·comm_w, the reference's relative
units), ``compute_efficiency``, per-dimension overlaps, ``part_coefficients``,
``host_launch_overhead`` (each pass takes ``max(device, host launch time)``, :class:`StageCost`).

Placement (which network levels a group spans) follows Megatron's default rank order
tp → cp → dp (experts: etp → ep → edp) → pp: a group's stride is the product of the degrees
inside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

from estimator import derive, params
from estimator.errors import ConfigError
from estimator.perf import comm, compute, kernels, network, pipeline
from estimator.profiles import DTYPE_BYTES, host_launch_cost_s, profile_of

if TYPE_CHECKING:
    from estimator.config import EstimatorConfig, ModelConfig

PERF_PARTS = ("FW_COMPUTE", "BW_COMPUTE", "RECOMPUTE", "DP_COMM", "MP_COMM", "EP_COMM", "CP_COMM", "PP_COMM", "BUBBLE")
REAL_PARTS = ("COMP", "DP_WAIT", "MP_WAIT", "EP_WAIT", "CP_WAIT", "PP_WAIT", "TOTAL")
#: per-micro-batch parts of a stage (PP_COMM and DP_COMM are per step)
_MB_PARTS = ("FW_COMPUTE", "BW_COMPUTE", "RECOMPUTE", "MP_COMM", "EP_COMM", "CP_COMM")


# --------------------------------------------------------------------------------------------
# records


@dataclass(frozen=True)
class StageCost:
    """One pipeline stage's cost: per-micro-batch parts and the per-step DP part (report units).

    ``ep`` is the largest EP degree among the stage's layers (1 for an all-dense stage); the
    ``*_flops`` and ``*_bytes`` fields are per device and micro-batch (DP: per step) for reports.

    Host launch bound (``options.host_launch_overhead``): ``host_fw/bw/rec`` are the seconds the
    host needs to launch the pass's kernels (:mod:`estimator.perf.kernels` count × the profile's
    per-launch cost, :func:`estimator.profiles.host_launch_cost_s`). Host dispatch and device
    execution run asynchronously, so a pass takes ``max(device, host)``: the device waits for
    launches when the host is slower, the host never waits for the device (no sync inside a
    pass). The excess ``max(0, host − device)`` of each pass is the *exposed host time*; it is
    folded into that pass's compute part (FW_COMPUTE / BW_COMPUTE / RECOMPUTE, hence COMP) because
    the spec's part lists (§2, §7) have no host part and the device is idle between kernels of that
    pass, i.e. the time is spent "computing" at the launch rate. ``device`` of a pass is its compute
    plus its comm (TP/EP: forward 1, backward 1, recompute 1 with full recompute; CP ring: 1, 2, 1 —
    the pass factors of :func:`_stage_cost`). All host fields are 0 in ``score`` mode, under
    ``legacy()`` and for profiles without a sourced per-launch cost; then every value equals the
    model without the term exactly.
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
    full_recompute: bool = False
    kernels_fw: float = 0.0
    kernels_bw: float = 0.0
    kernels_rec: float = 0.0

    def pass_comm(self, ep_scale: float = 1.0) -> tuple[float, float, float]:
        """(forward, backward, recompute) share of the stage's TP + EP + CP comm per micro-batch
        (EP scaled by ``ep_scale``), split by :func:`comm.pass_comm_factors` (the factors
        :func:`_stage_cost` prices): TP/EP ``1 : 1 : f`` over ``2 + f``, CP ``1 : 2 : f`` over ``3 + f``,
        ``f`` = 1 with full recompute."""
        fw = rec = 0.0
        for dim, value in (("tp", self.mp_comm), ("ep", self.ep_comm * ep_scale), (self.cp_dim, self.cp_comm)):
            f_fw, _, f_rec = comm.pass_comm_factors(dim, self.full_recompute)
            total = sum(comm.pass_comm_factors(dim, self.full_recompute))
            fw, rec = fw + f_fw * value / total, rec + f_rec * value / total
        return fw, self.mp_comm + self.ep_comm * ep_scale + self.cp_comm - fw - rec, rec

    def exposed_host(self, ep_scale: float = 1.0) -> tuple[float, float, float]:
        """Exposed host time per pass ``max(0, host_p − (compute_p + comm_p))`` (forward, backward,
        recompute); all 0 without a host term."""
        if not (self.host_fw or self.host_bw or self.host_rec):
            return 0.0, 0.0, 0.0
        c_fw, c_bw, c_rec = self.pass_comm(ep_scale)
        return (max(0.0, self.host_fw - self.fw_compute - c_fw), max(0.0, self.host_bw - self.bw_compute - c_bw),
                max(0.0, self.host_rec - self.recompute - c_rec))

    @property
    def per_micro_batch(self) -> float:
        """``s_i``: everything the stage does for one micro-batch, ``Σ_pass max(device_p, host_p)``."""
        device = self.fw_compute + self.bw_compute + self.recompute + self.mp_comm + self.ep_comm + self.cp_comm
        return device + sum(self.exposed_host())

    def per_micro_batch_ep_hidden(self, ratio: float) -> float:
        """``s_i`` when ``ratio`` of the EP comm is hidden in the bubble (seed P3): the hidden comm
        leaves the device time, the host launch bound stays: ``Σ_pass max(device_p − ratio·ep_p, host_p)``."""
        device = (self.fw_compute + self.bw_compute + self.recompute + self.mp_comm + self.ep_comm * (1.0 - ratio)
                  + self.cp_comm)
        return device + sum(self.exposed_host(1.0 - ratio))

    @property
    def fw_time(self) -> float:
        """Forward compute plus its exposed host time (the FW_COMPUTE part per micro-batch)."""
        return self.fw_compute + self.exposed_host()[0]

    @property
    def bw_time(self) -> float:
        """Backward compute plus its exposed host time (BW_COMPUTE per micro-batch)."""
        return self.bw_compute + self.exposed_host()[1]

    @property
    def rec_time(self) -> float:
        """Recompute plus its exposed host time (RECOMPUTE per micro-batch)."""
        return self.recompute + self.exposed_host()[2]

    def part(self, name: str) -> float:
        """Per-micro-batch value of a PerfParts name (DP_COMM: per step); compute parts include the
        pass's exposed host time."""
        return {
            "FW_COMPUTE": self.fw_time, "BW_COMPUTE": self.bw_time, "RECOMPUTE": self.rec_time,
            "MP_COMM": self.mp_comm, "EP_COMM": self.ep_comm, "CP_COMM": self.cp_comm, "DP_COMM": self.dp_comm,
        }[name]


@dataclass(frozen=True)
class PerfReport:
    """Step-time estimate (spec §2). ``unit`` is ``s`` in ``time`` mode, ``score`` otherwise.

    ``perf_parts``/``real_parts``: name -> value per step; ``stage_times_s``: per-micro-batch stage
    times ``s_i`` (EP counted in full); ``straggler_stage``: the stage with the most work.
    """

    perf_parts: dict[str, float]
    real_parts: dict[str, float]
    stage_times_s: list[float]
    straggler_stage: int
    tokens_per_s: float
    mfu: float
    stages: list[StageCost]
    mode: str
    unit: str
    schedule: str
    num_micro_batches: int
    pipeline_s: float
    work_bound_s: float
    warnings: list[str] = field(default_factory=list)

    @property
    def total(self) -> float:
        return self.real_parts["TOTAL"]

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict derived from the fields (stage records included)."""
        return asdict(self)


# --------------------------------------------------------------------------------------------
# per-layer FLOPs


def _attention_flops(model: ModelConfig, tokens: float, seq: int) -> tuple[float, float]:
    """(projections, core) forward FLOPs of one attention block for ``tokens`` tokens."""
    a = model.num_attention_heads
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
    return proj, compute.attention_core_flops(tokens, seq, a, d, d)


def _mlp_flops(model: ModelConfig, tokens: float, moe: bool, imbalance: float) -> float:
    if not moe:
        return compute.mlp_flops(tokens, model.hidden_size, model.dense_ffn, model.activation)
    n_shared = 1 if model.shared_ffn_total else 0
    return compute.moe_flops(
        tokens, model.hidden_size, model.num_experts, model.moe_topk, model.expert_ffn, n_shared,
        model.shared_ffn_total, model.activation, imbalance,
    )


def _is_moe_layer(model: ModelConfig, index: int) -> bool:
    kind = derive.layer_kind(model, index)
    return kind == "moe" or (kind == "mtp" and derive.mtp_is_moe(model))


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
        share += compute.mla_up_projection_flops(
            tokens, model.num_attention_heads, model.q_lora_rank, model.kv_lora_rank, model.qk_head_dim,
            model.qk_rope_head_dim or 0, model.v_head_dim,
        )
    if ("mlp" in modules and not moe) or ("moe" in modules and moe):
        share += mlp
    elif "shared_experts" in modules and moe and model.shared_ffn_total:
        share += compute.mlp_flops(tokens, model.hidden_size, model.shared_ffn_total, model.activation)
    return share


def _recompute_fraction(cfg: EstimatorConfig, stage: int, tokens: float, attn: tuple[float, float], mlp: float,
                        moe: bool) -> float:
    """Share of a layer's forward re-run in the backward (full: 1; selective: the listed modules,
    default ``core_attn`` as Megatron's ``--recompute-granularity selective``)."""
    mode = cfg.stage_recompute(stage)
    if mode != "selective":
        return compute.recompute_forward_fraction(mode, 0.0)
    modules = set(cfg.recompute.modules) or {"core_attn"}
    share = _selective_share_flops(cfg.model, tokens, modules, attn[1], mlp, moe)
    return compute.recompute_forward_fraction("selective", share / (attn[0] + attn[1] + mlp))


# --------------------------------------------------------------------------------------------
# per-stage cost


@dataclass(frozen=True)
class _Ctx:
    """Quantities shared by all stages of one config (computed once)."""

    tokens: float  # b·s of one micro-batch
    seq: int
    tp: int
    cp: int
    dp: int
    pp: int
    ep: int
    t_exp: int
    edp: int
    sp: bool
    b_compute: int
    b_param: int
    b_grad: int
    peak_flops: float  # FLOP/s one device sustains (peak × efficiency)
    levels: tuple[network.LevelLike, ...]
    score: bool
    comm_weight: float
    tokens_per_expert: tuple[float, ...] | None  # given routing load, None = balanced
    expert_imbalance: float  # busiest EP rank's load / mean (1.0 balanced)
    host_launch_s: float = 0.0  # host seconds per kernel launch (0: no host term)


def reference_comm_weight(hidden: int, ffn: int, seq: int) -> float:
    """The reference's comm weight in score mode, ``1.5·(F + s)·8192/(h + s)`` (reference §3.2)."""
    return 1.5 * (ffn + seq) * 8192.0 / (hidden + seq)


def _context(cfg: EstimatorConfig) -> _Ctx:
    p, m, prof = cfg.parallel, cfg.model, profile_of(cfg)
    degrees = derive.expert_degrees(p.dp, p.tp, p.cp, p.ep, p.etp)
    peak = cfg.hardware.peak_tflops.get(cfg.precision.compute)
    if peak is None:
        raise ConfigError("precision.compute", f"hardware {cfg.hardware.name!r} has no peak_tflops for "
                          f"{cfg.precision.compute!r}")
    ffn = m.expert_ffn if m.is_moe else m.dense_ffn
    load = _tokens_per_expert(cfg)
    return _Ctx(
        tokens=float(cfg.train.micro_batch_size * cfg.train.seq_length),
        seq=cfg.train.seq_length,
        tp=p.tp, cp=p.cp, dp=p.dp, pp=p.pp, ep=p.ep,
        t_exp=degrees.t_exp,
        edp=derive.expert_data_parallel(cfg),
        sp=p.sequence_parallel and p.tp > 1,
        b_compute=DTYPE_BYTES[cfg.precision.compute],
        b_param=DTYPE_BYTES[cfg.precision.params or prof.params_dtype],
        b_grad=DTYPE_BYTES[cfg.precision.grads or prof.grads_dtype],
        peak_flops=peak * 1e12 * cfg.options.compute_efficiency,
        levels=tuple(cfg.hardware.levels),
        score=cfg.options.perf_mode == "score",
        comm_weight=reference_comm_weight(m.hidden_size, ffn, cfg.train.seq_length),
        tokens_per_expert=load,
        expert_imbalance=compute.ep_rank_load_imbalance(load, p.ep) if load else 1.0,
        host_launch_s=host_launch_s(cfg),
    )


def host_launch_s(cfg: EstimatorConfig) -> float:
    """Host seconds per kernel launch used by the model: ``options.host_launch_cost_us`` or else the
    profile's sourced value (:func:`estimator.profiles.host_launch_cost_s`) when ``options.host_launch_overhead`` is on and
    the mode is ``time``; 0 otherwise (``score`` mode has no seconds to bound: FLOP·B_p and
    bytes·comm_w are the reference's relative units, which never had a host term)."""
    o = cfg.options
    if not o.host_launch_overhead or o.perf_mode == "score":
        return 0.0
    return host_launch_cost_s(cfg)


def _tokens_per_expert(cfg: EstimatorConfig) -> tuple[float, ...] | None:
    """``options.ep_tokens_per_expert`` checked against the model (length E, ≥ 0, not all 0)."""
    load = cfg.options.ep_tokens_per_expert
    if load is None:
        return None
    field_name = "options.ep_tokens_per_expert"
    if not cfg.model.is_moe or len(load) != cfg.model.num_experts:
        raise ConfigError(field_name, f"needs one value per routed expert ({cfg.model.num_experts}); got {len(load)}")
    if any(x < 0 for x in load) or sum(load) <= 0:
        raise ConfigError(field_name, "values must be ≥ 0 and not all 0")
    return tuple(float(x) for x in load)


def _comm_value(cfg: EstimatorConfig, ctx: _Ctx, cs: list[comm.Collective], stride: int, dim: str) -> float:
    """Seconds (time mode) or bytes·comm_w (score mode, and EP when not converted — P4)."""
    o = cfg.options
    keep_bytes = ctx.score or (dim == "ep" and not o.convert_ep_comm_to_time)
    if keep_bytes:
        value = sum(comm.wire_bytes(c) for c in cs) * (ctx.comm_weight if ctx.score else 1.0)
    else:
        value = network.collectives_time_s(cs, stride, ctx.levels)
    overlap = {"tp": o.tp_comm_overlap, "ep": o.ep_comm_overlap, "cp": o.cp_comm_overlap, "dp": o.dp_comm_overlap}
    value = network.exposed_s(value, overlap[dim])
    if dim == "tp" and o.tp_comm_half_hack:
        value /= 2.0
    if dim == "dp" and o.dp_comm_zero_hack:
        value = 0.0
    return value


def _compute_value(ctx: _Ctx, flops: float) -> float:
    """Seconds ``FLOPs/(peak·eff)`` (time) or ``FLOPs·B_p`` (score; reference §3.1's FLOP×bytes)."""
    return flops * ctx.b_param if ctx.score else flops / ctx.peak_flops


@dataclass(frozen=True)
class _LayerFlops:
    """Forward FLOPs of one layer on one device, its recompute share, and whether it is MoE."""

    forward: float
    recompute_fraction: float
    moe: bool


def _layer_cost(cfg: EstimatorConfig, ctx: _Ctx, index: int, stage: int) -> _LayerFlops:
    """Per-device forward FLOPs (``/(tp·cp)``) of one transformer (or MTP) layer."""
    m = cfg.model
    moe = _is_moe_layer(m, index)
    attn = _attention_flops(m, ctx.tokens, ctx.seq)
    mlp = _mlp_flops(m, ctx.tokens, moe, ctx.expert_imbalance)
    if derive.layer_kind(m, index) == "mtp":  # DeepSeek MTP: projection 2h -> h and a second head
        attn = (attn[0] + compute.matmul_flops(ctx.tokens, 2 * m.hidden_size, m.hidden_size), attn[1])
        mlp += compute.output_head_flops(ctx.tokens, m.hidden_size, m.vocab)
    fwd = (attn[0] + attn[1] + mlp) / (ctx.tp * ctx.cp)
    return _LayerFlops(fwd, _recompute_fraction(cfg, stage, ctx.tokens, attn, mlp, moe), moe)


def _stage_cost(cfg: EstimatorConfig, ctx: _Ctx, layout: derive.StageLayout) -> StageCost:
    """Cost of one pipeline stage (all its chunks) per micro-batch, and its per-step DP traffic."""
    m = cfg.model
    fw = bw = rec = 0.0
    tp_cs: list[comm.Collective] = []
    ep_cs: list[comm.Collective] = []
    cp_cs: list[comm.Collective] = []
    local_tokens = ctx.tokens / ctx.cp
    act_bytes = local_tokens * m.hidden_size * ctx.b_compute
    sent = local_tokens / (ctx.tp if ctx.sp else 1)
    if ctx.tokens_per_expert is None:
        dispatch = comm.ep_dispatch_tokens_balanced(sent, m.moe_topk)
    else:
        dispatch = comm.ep_dispatch_tokens_imbalanced(sent, m.moe_topk, ctx.tokens_per_expert, ctx.ep)
    cp_dim = "cp_a2a" if cfg.parallel.cp_comm_type == "a2a" else "cp"
    cp_layer = _cp_layer_collectives(m, ctx, local_tokens, cp_dim)
    stage_ep = 1
    mode = cfg.stage_recompute(layout.stage)
    full = mode == "full"
    calls = {dim: sum(comm.pass_comm_factors(dim, full)) for dim in ("tp", "ep", cp_dim)}
    launches = kernels.PassKernels(0.0, 0.0, 0.0)
    for index, n in _layer_groups(cfg, layout.layers):
        lc = _layer_cost(cfg, ctx, index, layout.stage)
        f, b, r = compute.pass_flops(lc.forward * n, lc.recompute_fraction)
        fw, bw, rec = fw + f, bw + b, rec + r
        blocks = 1 if (lc.moe and ctx.t_exp == 1) else 2
        if ctx.host_launch_s:
            launches += _layer_kernels(cfg, ctx, index, lc.moe, blocks, mode).scaled(n)
        tp_cs += comm.scaled(comm.tp_layer_collectives(act_bytes, ctx.tp, ctx.sp, blocks), calls["tp"] * n)
        cp_cs += comm.scaled(cp_layer, calls[cp_dim] * n)
        layer_ep = derive.layer_ep(cfg, index)
        if lc.moe and layer_ep > 1:
            stage_ep = max(stage_ep, layer_ep)
            ep_a2a = comm.ep_layer_collectives(dispatch, m.hidden_size, ctx.b_compute, layer_ep)
            ep_cs += comm.scaled(ep_a2a, calls["ep"] * n)
    if layout.has_head:
        head = compute.output_head_flops(ctx.tokens, m.hidden_size, m.vocab) / (ctx.tp * ctx.cp)
        fw, bw = fw + head, bw + compute.BACKWARD_TO_FORWARD_RATIO * head
    if ctx.host_launch_s:
        if layout.has_embedding:
            launches += kernels.embedding_pass_kernels(m.position_embedding == "learned")
        if layout.has_head:
            launches += kernels.head_pass_kernels(ctx.tp)
    dp_cs, dp_stride_exp, dp_cs_exp = _dp_collectives(cfg, ctx, layout)
    values = {
        "tp": _comm_value(cfg, ctx, tp_cs, 1, "tp"),
        "ep": _comm_value(cfg, ctx, ep_cs, ctx.t_exp, "ep"),
        "cp": _comm_value(cfg, ctx, cp_cs, ctx.tp, "cp"),
        "dp": _comm_value(cfg, ctx, dp_cs, ctx.tp, "dp") + _comm_value(cfg, ctx, dp_cs_exp, dp_stride_exp, "dp"),
    }
    return StageCost(
        stage=layout.stage,
        fw_compute=_compute_value(ctx, fw),
        bw_compute=_compute_value(ctx, bw),
        recompute=_compute_value(ctx, rec),
        mp_comm=values["tp"], ep_comm=values["ep"], cp_comm=values["cp"], dp_comm=values["dp"],
        ep=stage_ep,
        fw_flops=fw,
        cp_dim=cp_dim,
        tp_bytes=sum(comm.wire_bytes(c) for c in tp_cs),
        ep_bytes=sum(comm.wire_bytes(c) for c in ep_cs),
        cp_bytes=sum(comm.wire_bytes(c) for c in cp_cs),
        dp_bytes=sum(comm.wire_bytes(c) for c in dp_cs + dp_cs_exp),
        host_fw=launches.forward * ctx.host_launch_s,
        host_bw=launches.backward * ctx.host_launch_s,
        host_rec=launches.recompute * ctx.host_launch_s,
        full_recompute=full,
        kernels_fw=launches.forward, kernels_bw=launches.backward, kernels_rec=launches.recompute,
    )


def _layer_kernels(cfg: EstimatorConfig, ctx: _Ctx, index: int, moe: bool, tp_blocks: int,
                   mode: str) -> kernels.PassKernels:
    """Kernels one rank launches for layer ``index`` per micro-batch (:mod:`estimator.perf.kernels`);
    an MTP layer adds its projection and second head."""
    layer_ep = derive.layer_ep(cfg, index)
    shape = kernels.layer_shape(
        cfg.model, moe=moe, layer_ep=layer_ep, tp=ctx.tp, sequence_parallel=ctx.sp, tp_blocks=tp_blocks,
        cp=ctx.cp, flash_attention=cfg.train.flash_attention, cp_a2a=cfg.parallel.cp_comm_type == "a2a",
    )
    out = kernels.layer_pass_kernels(shape, mode, frozenset(cfg.recompute.modules))
    if derive.layer_kind(cfg.model, index) == "mtp":
        out += kernels.mtp_extra_pass_kernels(ctx.tp)
    return out


def _layer_groups(cfg: EstimatorConfig, layers: Sequence[int]) -> list[tuple[int, int]]:
    """(representative index, count) per distinct (layer kind, ep): identical layers are priced once."""
    groups: dict[tuple[str, int], list[int]] = {}
    for index in layers:
        groups.setdefault((derive.layer_kind(cfg.model, index), derive.layer_ep(cfg, index)), []).append(index)
    return [(members[0], len(members)) for members in groups.values()]


def _cp_layer_collectives(m: ModelConfig, ctx: _Ctx, local_tokens: float, cp_dim: str) -> list[comm.Collective]:
    """Forward CP collectives of one layer per micro-batch on one rank: the ring's K/V blocks
    (:func:`comm.cp_ring_layer_collectives`, ``cp_dim`` ``cp``) or Ulysses' four all-to-alls
    (:func:`comm.cp_ulysses_layer_collectives`, ``cp_a2a``), widths per TP rank (``/tp``). MLA runs
    the all-to-alls after its up-projections: ``a`` heads of ``d_qk + d_rope`` (Q, K) and ``d_v`` (V, output)."""
    if cp_dim == "cp":
        return comm.cp_ring_layer_collectives(local_tokens, _kv_dim(m) / ctx.tp, ctx.b_compute, ctx.cp)
    a = m.num_attention_heads
    if (a // ctx.tp) % ctx.cp:
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


def _kv_dim(m: ModelConfig) -> float:
    """Width of the K and V rows a CP ring passes (per K or V): ``n_kv·d_h``; MLA: ``a·(d_qk+d_rope+d_v)/2``."""
    if m.attention == "mla":
        assert m.qk_head_dim and m.v_head_dim
        return m.num_attention_heads * (m.qk_head_dim + (m.qk_rope_head_dim or 0) + m.v_head_dim) / 2.0
    return float(m.kv_heads * m.head_size)


def _dp_collectives(
    cfg: EstimatorConfig, ctx: _Ctx, layout: derive.StageLayout
) -> tuple[list[comm.Collective], int, list[comm.Collective]]:
    """DP collectives of one step for the stage's parameters held by one device.

    Non-expert (attention, norms, dense MLP, shared experts, embedding, head): ``/tp`` except the
    parts every TP rank holds whole (``LayerParams.held_non_expert``), reduced over the ``dp·cp``
    group (stride tp). Routed experts: ``routed/(ep·t_exp)`` over the expert-data-parallel group ``dp·tp·cp/(t_exp·ep)`` (stride ``t_exp·ep``).
    """
    m, p = cfg.model, cfg.parallel
    dense = routed = 0.0
    for index, n in _layer_groups(cfg, layout.layers):
        lp = params.layer_params(m, index)
        dense += n * (lp.held_non_expert(ctx.tp) + lp.shared / ctx.tp)
        routed += n * lp.routed / (derive.layer_ep(cfg, index) * ctx.t_exp) if lp.routed else 0.0
    if layout.has_embedding:
        dense += (params.embedding_params(m) + params.position_embedding_params(m, ctx.seq)) / ctx.tp
    if layout.has_head:
        dense += params.head_params(m) / ctx.tp
    dist = p.distributed_optimizer
    non_exp = comm.dp_step_collectives(dense, ctx.b_grad, ctx.b_param, ctx.dp * ctx.cp, dist)
    exp = comm.dp_step_collectives(routed, ctx.b_grad, ctx.b_param, ctx.edp, dist)
    return non_exp, ctx.t_exp * ctx.ep, exp


def stage_costs(cfg: EstimatorConfig) -> list[StageCost]:
    """Per-stage costs of ``cfg`` before part coefficients (report units).

    Stages with the same layers (kind, ep and count), extras and recompute mode cost the same and
    are priced once.
    """
    ctx = _context(cfg)
    out: list[StageCost] = []
    seen: dict[tuple[object, ...], StageCost] = {}
    for layout in derive.stage_layouts(cfg):
        kinds = tuple(sorted(
            (derive.layer_kind(cfg.model, i), derive.layer_ep(cfg, i), n) for i, n in _layer_groups(cfg, layout.layers)
        ))
        key = (kinds, layout.has_embedding, layout.has_head, cfg.stage_recompute(layout.stage))
        if key not in seen:
            seen[key] = _stage_cost(cfg, ctx, layout)
        out.append(replace(seen[key], stage=layout.stage))
    return out


# --------------------------------------------------------------------------------------------
# assembly


def apply_coefficients(stages: list[StageCost], coefficients: dict[str, float] | None) -> list[StageCost]:
    """Per-part regression coefficients (calibration): each stage part × its coefficient."""
    if not coefficients:
        return stages
    k = {name: coefficients.get(name, 1.0) for name in PERF_PARTS}
    return [
        replace(
            s, fw_compute=s.fw_compute * k["FW_COMPUTE"], bw_compute=s.bw_compute * k["BW_COMPUTE"],
            recompute=s.recompute * k["RECOMPUTE"], mp_comm=s.mp_comm * k["MP_COMM"], ep_comm=s.ep_comm * k["EP_COMM"],
            cp_comm=s.cp_comm * k["CP_COMM"], dp_comm=s.dp_comm * k["DP_COMM"],
        )
        for s in stages
    ]


def schedule_time(schedule: str, stages: list[StageCost], m: int, vpp: int, hidden: Sequence[float]) -> float:
    """Pipeline time of per-stage costs under ``schedule`` when stage ``i`` hides ``hidden[i]`` of its
    EP comm in the bubble (seed P3). ZB-V: F = forward compute + half the exposed comm, B = half the
    backward compute + recompute + half the comm, W = half the backward compute (Qi et al. 2024
    split the backward into equal input- and weight-gradient halves)."""
    eff = [s.per_micro_batch - h for s, h in zip(stages, hidden, strict=True)]
    if schedule == "interleaved":
        return pipeline.interleaved_time(eff, m, vpp)
    if schedule == "zero_bubble_v":
        comm_s = [s.mp_comm + s.ep_comm + s.cp_comm - h for s, h in zip(stages, hidden, strict=True)]
        fwd = [s.fw_time + c / 2 for s, c in zip(stages, comm_s, strict=True)]
        b_in = [s.bw_time / 2 + s.rec_time + c / 2 for s, c in zip(stages, comm_s, strict=True)]
        b_w = [s.bw_time / 2 for s in stages]
        return pipeline.zero_bubble_v_time(fwd, b_in, b_w, m)
    return pipeline.one_f_one_b_time(eff, m)


def _hidden_ep(s: StageCost, ratio: float) -> float:
    """EP time stage ``s`` hides in the bubble (seed P3): ``ratio·ep_comm`` on stages with ep > 1
    (:func:`pipeline.ep_overlapped_stage_time`); with a host launch bound only the part the pass
    time really loses, ``s_i − Σ_pass max(device_p − ratio·ep_p, host_p)`` (a host-bound pass keeps
    its length, so ``s_i − hidden`` never falls as EP comm grows)."""
    plain = s.per_micro_batch - pipeline.ep_overlapped_stage_time(s.per_micro_batch, s.ep_comm, ratio, s.ep)
    if s.ep <= 1 or not (s.host_fw or s.host_bw or s.host_rec):
        return plain
    return s.per_micro_batch - s.per_micro_batch_ep_hidden(ratio)


def assemble(
    stages: list[StageCost], *, schedule: str, num_micro_batches: int, vpp: int, ratio: float,
    pp_comm: float, bubble_coefficient: float = 1.0,
) -> tuple[dict[str, float], dict[str, float], pipeline.StepTime]:
    """PerfParts and RealParts of one step from stage costs (reference §3.4-§3.5, spec §7).

    ``time_sum = m·(per-micro-batch parts of the straggler) + its DP`` and ``BUBBLE = total −
    time_sum`` (:func:`pipeline.step_time`, with the P3 overlap ``ratio``); ``PP_WAIT = BUBBLE +
    PP_COMM``; ``TOTAL`` = sum of RealParts.
    """
    m = num_micro_batches
    hidden = [_hidden_ep(s, ratio) for s in stages]
    st = pipeline.step_time(
        lambda h: schedule_time(schedule, stages, m, vpp, h), hidden, [s.per_micro_batch for s in stages], m,
        [s.dp_comm for s in stages],
    )
    strag = stages[st.straggler_stage]
    perf = {name: m * strag.part(name) for name in _MB_PARTS}
    perf["DP_COMM"] = strag.dp_comm
    perf["PP_COMM"] = pp_comm
    perf["BUBBLE"] = st.bubble * bubble_coefficient
    real = {
        "COMP": perf["FW_COMPUTE"] + perf["BW_COMPUTE"] + perf["RECOMPUTE"],
        "DP_WAIT": perf["DP_COMM"],
        "MP_WAIT": perf["MP_COMM"],
        "EP_WAIT": perf["EP_COMM"],
        "CP_WAIT": perf["CP_COMM"],
        "PP_WAIT": perf["BUBBLE"] + perf["PP_COMM"],
    }
    real["TOTAL"] = sum(real.values())
    return perf, real, st


def pp_comm_value(cfg: EstimatorConfig) -> float:
    """PP_COMM: the p2p transfers on the critical path (:func:`comm.p2p_transfers_on_critical_path`),
    each ``b·(s/cp)·h·B_c`` (``/tp`` with SP) between stages ``tp·cp·dp`` ranks apart."""
    ctx = _context(cfg)
    p = cfg.parallel
    n = comm.p2p_transfers_on_critical_path(p.pp, cfg.num_micro_batches, p.vpp)
    size = ctx.tokens / ctx.cp * cfg.model.hidden_size * ctx.b_compute / (ctx.tp if ctx.sp else 1)
    cs = comm.pp_p2p_collectives(size, n)
    if ctx.score:
        value = sum(comm.wire_bytes(c) for c in cs) * ctx.comm_weight
    else:
        value = network.collectives_time_s(cs, ctx.tp * ctx.cp * ctx.dp, ctx.levels)
    coefficient = (cfg.options.part_coefficients or {}).get("PP_COMM", 1.0)
    return value * coefficient


def estimate_perf(cfg: EstimatorConfig) -> PerfReport:
    """Step-time estimate of ``cfg`` (spec §2, §7)."""
    o, p = cfg.options, cfg.parallel
    m = cfg.num_micro_batches
    stages = apply_coefficients(stage_costs(cfg), o.part_coefficients)
    bubble_k = (o.part_coefficients or {}).get("BUBBLE", 1.0)
    perf, real, st = assemble(
        stages, schedule=p.schedule, num_micro_batches=m, vpp=p.vpp, ratio=o.ep_bubble_overlap_ratio,
        pp_comm=pp_comm_value(cfg), bubble_coefficient=bubble_k,
    )
    total = real["TOTAL"]
    time_mode = o.perf_mode == "time"
    warnings = []
    if time_mode and not o.convert_ep_comm_to_time and any(s.ep_comm for s in stages):
        warnings.append("EP_COMM left in bytes (convert_ep_comm_to_time: false): TOTAL mixes bytes and seconds")
    tokens = m * cfg.train.micro_batch_size * cfg.train.seq_length * p.dp
    model_flops = sum(3.0 * s.fw_flops for s in stages) * m * p.tp * p.cp * p.dp
    peak = cfg.hardware.peak_tflops[cfg.precision.compute] * 1e12
    return PerfReport(
        perf_parts=perf,
        real_parts=real,
        stage_times_s=[s.per_micro_batch for s in stages],
        straggler_stage=st.straggler_stage,
        tokens_per_s=tokens / total if time_mode and total > 0 else float("nan"),
        mfu=model_flops / (total * p.world_size * peak) if time_mode and total > 0 else float("nan"),
        stages=stages,
        mode=o.perf_mode,
        unit="s" if time_mode else "score",
        schedule=p.schedule,
        num_micro_batches=m,
        pipeline_s=st.pipeline,
        work_bound_s=st.work_bound,
        warnings=warnings,
    )


def format_perf_table(report: PerfReport) -> str:
    """Per-stage table and the PerfParts / RealParts of a report (tabulate)."""
    from tabulate import tabulate

    u = report.unit
    rows = [
        [s.stage, s.ep, s.fw_compute, s.bw_compute, s.recompute, s.mp_comm, s.ep_comm, s.cp_comm, s.dp_comm,
         s.per_micro_batch, "*" if s.stage == report.straggler_stage else ""]
        for s in report.stages
    ]
    head = ["stage", "ep", f"FW [{u}/mb]", "BW", "REC", "MP", "EP", "CP", f"DP [{u}/step]", "s_i", "straggler"]
    stage_table = tabulate(rows, headers=head, floatfmt=".4g")
    parts = [[k, v] for k, v in report.perf_parts.items()]
    real = [[k, v, 100.0 * v / report.total if report.total else float("nan")] for k, v in report.real_parts.items()]
    lines = [
        f"schedule {report.schedule}, m = {report.num_micro_batches}, mode {report.mode} (unit {u})",
        stage_table,
        "",
        tabulate(parts, headers=["PerfPart", f"[{u}/step]"], floatfmt=".4g"),
        "",
        tabulate(real, headers=["RealPart", f"[{u}/step]", "% of TOTAL"], floatfmt=".4g"),
    ]
    if report.mode == "time":
        lines.append(f"tokens/s {report.tokens_per_s:.4g}   MFU {100 * report.mfu:.2f} %")
    lines += [f"warning: {w}" for w in report.warnings]
    return "\n".join(lines)
