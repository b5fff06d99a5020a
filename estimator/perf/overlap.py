"""Communication overlap as mechanisms: which collective hides under which compute the schedule runs
beside it, and how much of it does not fit (the exposed part, what the step-time parts carry).

Each framework's switches are named as the framework names them (``parallel.<name>``, default the
framework's, table with sources: :data:`estimator.inputs.profiles.OVERLAP_FLAGS`); the CP ring's overlap
is part of the implementation (no switch). ``options.comm_overlap: false`` (and ``legacy()``, and
``score`` mode, whose units cannot be compared) turns every mechanism off: every collective is then
fully exposed and every number is the model's without them.

Two ways a collective hides, per stage and micro-batch (DP: per step):

- **pipelined** (:func:`pipelined_exposed`): the collective and the compute come in ``n`` equal pieces,
  piece ``i`` of the comm needing (or feeding) piece ``i`` of the compute — a two-stage flow shop:
  makespan ``c + w + (n−1)·max(c, w)`` (``c = C/n``, ``w = W/n``), so the exposed comm is
  ``max(C/n, C − W·(n−1)/n)``; one piece always stays exposed. DP gradient reduce-scatter under the
  backward of the buckets still to come (Megatron ``overlap_grad_reduce``; ``n`` = gradient buckets,
  Megatron-Core ``DistributedDataParallel``: ``bucket_size = max(40 000 000, 1 000 000·dp·cp)``
  parameters), the parameter all-gather under the forward (``overlap_param_gather``), FSDP2's
  per-block all-gather / reduce-scatter (``fsdp_prefetch``, ``n`` = blocks), TP comm under the
  the reduce-scatter side of Megatron ``tp_comm_overlap`` (TE userbuffers ``pipeline``, 4 splits);
- **beside independent compute** (:func:`concurrent_exposed`): ``max(0, C − W)``. The EP all-to-alls
  beside the shared experts (``moe_shared_expert_overlap``: FC1 beside the dispatch, FC2 beside the
  combine) or beside the other micro-batch's compute (``overlap_moe_expert_parallel_comm``, combined
  1F1B): a paired step hides its all-to-alls under its partner's compute, ``max(0, C − (F + B))``,
  while the steps Megatron runs alone keep theirs exposed — the first forward and the last backward
  without PP (``combined_1f1b_schedule_for_no_pipelining``: "The forward step for the first microbatch
  is executed alone, no a2a overlapping"), the rank's warm-up forwards and cool-down backwards with
  interleaving (``get_pp_rank_microbatches``, one extra warm-up forward with the overlap): share
  ``u = W/(m·vp)`` of :func:`a2a_unpaired_share`, exposed ``u·C + (1 − u)·max(0, C − (F + B))``
  (``options.a2a_unpaired_steps``; off: the window ``(m−1)/m`` of the compute as before). Megatron-Core
  refuses it beside ``moe_shared_expert_overlap``; with both set here, the larger window applies.
- **pipeline p2p** (:func:`exposed_pp`, Megatron ``overlap_p2p_comm``, on by default with the interleaved
  schedule): each steady-state transfer runs beside half of the straggler's model chunk (a chunk's forward
  output beside the next chunk's work, its backward gradient likewise), the ``2·(pp − 2)`` fill and drain
  transfers have nothing beside them (:func:`p2p_exposed`).
- **CP ring** (:func:`ring_exposed`): ring attention (Megatron ``cp_comm_type p2p`` through Transformer
  Engine ``AttnFuncWithCPAndKVP2P``) sends the next K/V block while it computes the current one: ``cp``
  blocks of attention ``A/cp`` and ``cp−1`` transfers ``C/(cp−1)``, each beside one block:
  ``(cp−1)·max(0, C/(cp−1) − A/cp) = max(0, C − A·(cp−1)/cp)``. torch's ``context_parallel``
  (torchtitan, ``context_parallel_rotate_method`` default ``allgather``) gathers K/V once beside the
  first (local) block: ``max(0, C − A/cp)``. The same ring form prices the all-gather side of TP comm
  overlap (TE ``ring_exchange``) and each collective torchtitan's async TP fuses (micro-pipelined
  all-gather-matmul / matmul-reduce-scatter; the backward reduce-scatters of summed input gradients are not
  fused and stay exposed, :func:`async_tp_exposed`): ``tp − 1`` transfers beside ``tp`` GEMM chunks. Ulysses all-to-all (``cp_comm_type a2a``) sits between
  the projections and the attention core with no compute beside it: nothing hides.

Every exposed value is ``≤`` the collective's seconds and ``≥ 0`` (hiding never makes a part
negative), never falls when the collective gets slower, and falls by less than the window grows, so
the step never gets shorter when a stage's compute gets slower.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from math import ceil
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from estimator.inputs.profiles import overlap_flag_on
from estimator.memory.schedule import megatron_interleaved_warmup
from estimator.perf import comm, layers, roofline
from estimator.perf import operators as ops_
from estimator.perf.context import Ctx, comm_value
from estimator.perf.efficiency import device_efficiency
from estimator.shared.arrays import any_true, is_array, maximum, pick

#: one stage's cost record: estimator.perf.stage.StageCost, which imports this module (not imported here, even
#: for type checking: no import cycle)
StageCost = Any

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig
    from estimator.inputs.derive import StageLayout

#: Megatron-Core DistributedDataParallel's default gradient bucket: max(40M, 1M·dp·cp) parameters
#: (megatron/core/distributed/distributed_data_parallel.py, ``bucket_size`` None -> this)
BUCKET_MIN_PARAMS = 40_000_000
BUCKET_PARAMS_PER_DP_RANK = 1_000_000
#: the TE linear layers whose TP collectives userbuffers overlap: after the all-gather (column-parallel
#: QKV, FC1; MLA's up-projections) and before the reduce-scatter (row-parallel output projection, FC2)
TP_AG_GEMMS = frozenset({"qkv", "q_up", "kv_up", "mlp_fc1"})
TP_RS_GEMMS = frozenset({"out_proj", "mlp_fc2"})
TP_GEMMS = TP_AG_GEMMS | TP_RS_GEMMS
#: Transformer Engine ``initialize_ub`` defaults: the reduce-scatter side is overlapped by method
#: ``pipeline`` in 4 splits (the all-gather side by ``ring_exchange``, tp − 1 transfers)
TE_RS_SPLITS = 4
SHARED_EXPERT_OPS = frozenset({"shared_fc1", "shared_activation", "shared_fc2"})


def pipelined_exposed(comm_s: float, compute_s: float, pieces: float) -> float:
    """Exposed seconds of ``comm_s`` pipelined with ``compute_s`` in ``pieces`` equal pieces (two-stage
    flow shop): ``max(C/n, C − W·(n−1)/n)``."""
    n = maximum(pieces, 1.0)
    return maximum(comm_s / n, comm_s - compute_s * (n - 1.0) / n)


def concurrent_exposed(comm_s: float, compute_s: float) -> float:
    """Exposed seconds of ``comm_s`` beside independent ``compute_s``: ``max(0, C − W)``."""
    return maximum(0.0, comm_s - compute_s)


def ring_exposed(comm_s: float, attention_s: float, cp: int) -> float:
    """Exposed seconds of ring attention's K/V transfers: ``max(0, C − A·(cp−1)/cp)`` (module docstring)."""
    return maximum(0.0, comm_s - attention_s * (cp - 1.0) / cp)


def active(cfg: EstimatorConfig) -> bool:
    """Overlap mechanisms apply: ``options.comm_overlap`` on, time mode."""
    return cfg.options.comm_overlap and cfg.options.perf_mode == "time"


def on(cfg: EstimatorConfig, name: str) -> bool:
    """Overlap switch ``name`` is on for ``cfg`` (its framework's default when unset) and mechanisms apply."""
    return active(cfg) and overlap_flag_on(cfg, name)


@dataclass(frozen=True)
class Windows:
    """Compute seconds of one stage per micro-batch (all passes) a collective can hide under."""

    forward: float
    backward: float  # backward + recompute (the backward pass of the last micro-batch)
    tp_ag_gemms: float  # the GEMMs after the TP all-gathers
    tp_rs_gemms: float  # the GEMMs before the TP reduce-scatters
    attention: float
    shared_experts: float
    #: torchtitan's async TP by pass (:func:`async_tp_exposed`; 0 unless it applies): the forward seconds (recompute
    #: included) of the GEMMs after the all-gathers and before the reduce-scatters, the input-gradient GEMMs of the
    #: latter in backward, and the backward share of the TP comm ``1/(2 + f)``
    async_ag_fw: float = 0.0
    async_rs_fw: float = 0.0
    async_rs_dgrad: float = 0.0
    async_bw_share: float = 0.0


def _op_seconds(cfg: EstimatorConfig, ctx: Ctx, op: ops_.Op) -> tuple[float, float]:
    """(forward, backward) seconds of ``op``: the operator roofline when active, else FLOPs at peak."""
    if roofline.roofline_active(cfg):
        eff = device_efficiency(cfg)
        k = cfg.options.compute_efficiency
        peak = ctx.peak_flops / k
        return roofline.op_pass_s(op, False, eff, peak) / k, roofline.op_pass_s(op, True, eff, peak) / k
    return op.count * op.flops / ctx.peak_flops, op.count * op.bw_flops / ctx.peak_flops


def _selected_ops(cfg: EstimatorConfig, ctx: Ctx, layout: StageLayout,
                  pick_op: Callable[[ops_.Op], bool]) -> Iterator[tuple[ops_.Op, int, float, float, float]]:
    """The stage's operators ``pick_op`` selects, each with its layers' count ``n``, ``again`` (1.0 when full
    recompute re-runs the forward, else 0.0) and its (forward, backward) seconds (:func:`_op_seconds`)."""
    dims = roofline.layer_dims(cfg, ctx)
    for index, _, mode, n in layers.stage_mode_groups(cfg, layout, cfg.stage_recompute(layout.stage)):
        again = 1.0 if mode == "full" else 0.0
        for op in roofline.layer_ops(cfg, dims, index):
            if pick_op(op):
                yield (op, n, again, *_op_seconds(cfg, ctx, op))


def _selected_s(cfg: EstimatorConfig, ctx: Ctx, layout: StageLayout, pick_op: Callable[[ops_.Op], bool]) -> float:
    """Seconds per micro-batch of the stage's operators ``pick_op`` selects: forward + backward, and the
    forward again under full recompute (when the collectives re-run too)."""
    total = 0.0
    for _, n, again, f, b in _selected_ops(cfg, ctx, layout, pick_op):
        total = total + n * (f * (1.0 + again) + b)
    return total


def _is_attention(op: ops_.Op) -> bool:
    return op.op_class == "attention" or (op.op_class == "gemm" and "core_attn" in op.modules)


def tp_active(cfg: EstimatorConfig) -> bool:
    """A TP mechanism applies (Megatron's ``tp_comm_overlap`` or torchtitan's async TP)."""
    return on(cfg, "tp_comm_overlap") or on(cfg, "enable_async_tensor_parallel")


def ep_active(cfg: EstimatorConfig) -> bool:
    """An EP mechanism applies (EP comm in seconds)."""
    return cfg.options.convert_ep_comm_to_time and (
        on(cfg, "moe_shared_expert_overlap") or on(cfg, "overlap_moe_expert_parallel_comm"))


def cp_active(cfg: EstimatorConfig, ctx: Ctx) -> bool:
    """The CP ring's overlap applies: ring attention (``cp_comm_type p2p``) with cp > 1 under a
    framework profile (the reference tool's ``sapp-nd`` states none)."""
    return (active(cfg) and cfg.profile != "sapp-nd" and cfg.parallel.cp_comm_type == "p2p"
            and any_true(ctx.cp > 1))


def any_active(cfg: EstimatorConfig, ctx: Ctx) -> bool:
    """Any mechanism applies to ``cfg``."""
    return active(cfg) and (tp_active(cfg) or ep_active(cfg) or dp_overlap_active(cfg) or cp_active(cfg, ctx))


def _async_passes(cfg: EstimatorConfig, ctx: Ctx, layout: StageLayout) -> dict[str, float]:
    """:class:`Windows`' async-TP fields (:func:`async_tp_exposed`) when torchtitan's async TP prices its fusion
    patterns (``options.async_tp_patterns``), else {}."""
    if not (on(cfg, "enable_async_tensor_parallel") and cfg.options.async_tp_patterns):
        return {}
    ag_fw = rs_fw = rs_dgrad = 0.0
    for op, n, again, f, b in _selected_ops(cfg, ctx, layout, lambda op: op.name in TP_GEMMS):
        if op.name in TP_AG_GEMMS:
            ag_fw = ag_fw + n * f * (1.0 + again)
        else:
            rs_fw, rs_dgrad = rs_fw + n * f * (1.0 + again), rs_dgrad + n * b / 2.0
    groups = layers.stage_mode_groups(cfg, layout, cfg.stage_recompute(layout.stage))
    n_all = sum(n for *_, n in groups)
    n_full = sum(n for _, _, mode, n in groups if mode == "full")
    factors = comm.pass_comm_factors("tp", n_full / n_all if n_all else 0.0)
    return {"async_ag_fw": ag_fw, "async_rs_fw": rs_fw, "async_rs_dgrad": rs_dgrad,
            "async_bw_share": factors[1] / sum(factors)}


def windows(cfg: EstimatorConfig, ctx: Ctx, layout: StageLayout, timed: list[float]) -> Windows:
    """The stage's :class:`Windows` (``timed``: its forward, backward and recompute seconds)."""
    tp_needed = tp_active(cfg)
    return Windows(
        forward=timed[0], backward=timed[1] + timed[2],
        tp_ag_gemms=_selected_s(cfg, ctx, layout, lambda op: op.name in TP_AG_GEMMS) if tp_needed else 0.0,
        tp_rs_gemms=_selected_s(cfg, ctx, layout, lambda op: op.name in TP_RS_GEMMS) if tp_needed else 0.0,
        attention=_selected_s(cfg, ctx, layout, _is_attention) if cp_active(cfg, ctx) else 0.0,
        shared_experts=(_selected_s(cfg, ctx, layout, lambda op: op.name in SHARED_EXPERT_OPS)
                        if on(cfg, "moe_shared_expert_overlap") else 0.0),
        **_async_passes(cfg, ctx, layout),
    )


def exposed_tp(cfg: EstimatorConfig, ctx: Ctx, tp_s: float, w: Windows) -> float:
    """TP comm left exposed beside the neighbouring GEMMs when the switch is on. Half the bytes are
    all-gathers, half reduce-scatters (sequence parallelism, Korthikanti et al. §4.2.2). The all-gather
    side is a ring exchange (``tp − 1`` transfers beside ``tp`` GEMM chunks, :func:`ring_exposed`); the
    reduce-scatter side: Megatron/TE pipelines it in :data:`TE_RS_SPLITS` splits
    (:func:`pipelined_exposed`, the last split's transfer stays exposed), torch's micro-pipelined
    async TP as a ring like the all-gather."""
    half = tp_s / 2.0
    if on(cfg, "tp_comm_overlap"):
        return ring_exposed(half, w.tp_ag_gemms, ctx.tp) + pipelined_exposed(half, w.tp_rs_gemms, TE_RS_SPLITS)
    if on(cfg, "enable_async_tensor_parallel") and cfg.options.async_tp_patterns:
        return async_tp_exposed(tp_s, w, ctx.tp)
    if on(cfg, "enable_async_tensor_parallel"):
        return ring_exposed(half, w.tp_ag_gemms, ctx.tp) + ring_exposed(half, w.tp_rs_gemms, ctx.tp)
    return tp_s


def async_tp_exposed(tp_s: float, w: Windows, tp: int) -> float:
    """TP comm torchtitan's async TP leaves exposed: only the collectives torch's micro-pipeline pass fuses hide.

    The pass (pytorch/pytorch ``torch/_inductor/fx_passes/micro_pipeline_tp.py``) fuses an all-gather with the
    matmuls that take the gathered tensor as their left operand (``fuse_all_gather_matmul``) and a reduce-scatter
    with the one matmul that produces its input (``fuse_matmul_reduce_scatter``, ``_find_producer_matmul``). Under
    torchtitan's plan (separate ``wq``, ``wk``, ``wv`` and ``w1``, ``w3``; pytorch/torchtitan@9dec370
    ``models/llama/model.py``) that is, per block: in the forward (and a recomputed forward) both all-gathers
    and both reduce-scatters; in the backward the all-gathers of the output gradients before the ``wo`` / ``w2``
    input-gradient matmuls, while the reduce-scatters of the input gradients of the norms' outputs reduce a *sum*
    of matmuls (three, two) and stay plain collectives, exposed. With ``T`` the TP seconds, ``β`` their backward
    share (:func:`comm.pass_comm_factors`), ``F = (1 − β)·T``, ``B = β·T``, each half a ring of ``tp − 1``
    transfers beside ``tp`` GEMM chunks (:func:`ring_exposed`):

    ``ring(F/2, G_ag) + ring(F/2, G_rs) + ring(B/2, D_rs) + B/2``

    ``G_ag`` / ``G_rs``: forward seconds (recompute included) of the GEMMs after the all-gathers / before the
    reduce-scatters, ``D_rs``: the backward input-gradient GEMMs of the latter. Never above ``T``, never below 0."""
    beta = w.async_bw_share
    forward, backward = (1.0 - beta) * tp_s, beta * tp_s
    return (ring_exposed(forward / 2.0, w.async_ag_fw, tp) + ring_exposed(forward / 2.0, w.async_rs_fw, tp)
            + ring_exposed(backward / 2.0, w.async_rs_dgrad, tp) + backward / 2.0)


def exposed_ep(cfg: EstimatorConfig, ep_s: float, w: Windows, stage: int = 0) -> float:
    """EP all-to-all left exposed beside the shared experts and / or the other micro-batch's compute
    (module docstring; ``stage``: the pipeline rank, whose warm-up depth sets the unpaired steps)."""
    window = 0.0
    if on(cfg, "moe_shared_expert_overlap"):
        window = w.shared_experts
    if not on(cfg, "moe_shared_expert_overlap") and not on(cfg, "overlap_moe_expert_parallel_comm"):
        return ep_s
    if not on(cfg, "overlap_moe_expert_parallel_comm"):
        return concurrent_exposed(ep_s, window)
    if not cfg.options.a2a_unpaired_steps:
        m = cfg.num_micro_batches
        return concurrent_exposed(ep_s, maximum(window, (w.forward + w.backward) * (m - 1.0) / m))
    u: float = a2a_unpaired_share(cfg, stage)
    paired = concurrent_exposed(ep_s, maximum(window, w.forward + w.backward))
    return u * concurrent_exposed(ep_s, window) + (1.0 - u) * paired


def a2a_unpaired_share(cfg: EstimatorConfig, stage: int) -> Any:
    """Share of a rank's forward and backward steps Megatron's combined 1F1B runs alone, ``u = W/(m·vp)``:
    without PP the first forward and the last backward (``W`` = 1: ``combined_1f1b_schedule_for_no_pipelining``);
    interleaved, the warm-up forwards and as many cool-down backwards, ``W = min((p − r − 1)·2 + (vp − 1)·p + 1,
    m·vp)`` (``memory.schedule.megatron_interleaved_warmup`` with the overlap's extra forward). (``m`` may be an
    array of layouts.)"""
    p, m = cfg.parallel, cfg.num_micro_batches
    if p.pp == 1:
        return 1.0 / m
    return megatron_interleaved_warmup(p.pp, p.vpp, m, stage, extra=1) / (m * p.vpp)


def exposed_cp(cfg: EstimatorConfig, ctx: Ctx, cp_s: float, w: Windows) -> float:
    """CP comm left exposed: the ring's transfers beside the attention blocks (module docstring)."""
    if not cp_active(cfg, ctx):
        return cp_s
    if cfg.profile == "fsdp2":
        return concurrent_exposed(cp_s, w.attention / ctx.cp)
    return ring_exposed(cp_s, w.attention, ctx.cp)


def dp_pieces(cfg: EstimatorConfig, ctx: Ctx, layout: StageLayout, held: tuple[float, float]) -> float:
    """Pieces the DP traffic comes in: FSDP2 one per block; Megatron one per gradient bucket
    (``⌈params / max(40M, 1M·dp·cp)⌉``, :data:`BUCKET_MIN_PARAMS`)."""
    if cfg.profile == "fsdp2":
        return float(max(1, len(layout.layers)))
    bucket = maximum(BUCKET_MIN_PARAMS, BUCKET_PARAMS_PER_DP_RANK * ctx.dp * ctx.cp)
    params = held[0] + held[1]
    if is_array(params, bucket):  # (arrays of layouts)
        return cast(float, maximum(1.0, np.ceil(params / bucket)))
    return maximum(1.0, float(ceil(params / bucket)))


def _dp_switches(cfg: EstimatorConfig) -> tuple[bool, bool]:
    """(gradients hide, parameters hide): Megatron's two switches, or FSDP2's prefetch for both."""
    if cfg.profile == "fsdp2":
        prefetch = on(cfg, "fsdp_prefetch")
        return prefetch, prefetch
    return on(cfg, "overlap_grad_reduce"), on(cfg, "overlap_param_gather")


def dp_overlap_active(cfg: EstimatorConfig) -> bool:
    """Any DP mechanism applies to ``cfg``."""
    return any(_dp_switches(cfg))


def exposed_dp(cfg: EstimatorConfig, ctx: Ctx, groups: list[tuple[list[comm.Collective], int]], pieces: float,
               w: Windows) -> float:
    """DP seconds per step left exposed: the gradient reduce-scatter (or all-reduce) pipelined with the
    backward of the last micro-batch, the parameter all-gather with the forward of the first, in
    ``pieces`` pieces; ``groups``: (collectives, stride) of the non-expert and expert DP groups."""
    grads_hide, params_hide = _dp_switches(cfg)
    grad_s = param_s = 0.0
    for cs, stride in groups:
        grad_s = grad_s + comm_value(cfg, ctx, [c for c in cs if c.kind != "all_gather"], stride, "dp")
        param_s = param_s + comm_value(cfg, ctx, [c for c in cs if c.kind == "all_gather"], stride, "dp")
    if grads_hide:
        grad_s = pipelined_exposed(grad_s, w.backward, pieces)
    if params_hide:
        param_s = pipelined_exposed(param_s, w.forward, pieces)
    return grad_s + param_s


def p2p_exposed(total_s: float, transfers: float, fill_transfers: float, chunk_s: float) -> float:
    """Exposed seconds of the pipeline's p2p transfers on the critical path with Megatron's
    ``overlap_p2p_comm``: ``transfers`` equal transfers of ``t = total_s / transfers`` each, of which the
    ``fill_transfers`` of the fill and drain have nothing beside them and each other one runs beside a model
    chunk of ``chunk_s`` seconds:

    ``exposed = t·n_fill + (n − n_fill)·max(0, t − chunk_s)`` (``≤ total_s``, ``≥ 0``, never falls when a
    transfer gets slower, falls by less than the chunk grows)."""
    if not is_array(transfers) and not transfers:
        return 0.0
    each = total_s / transfers
    return each * fill_transfers + (transfers - fill_transfers) * maximum(0.0, each - chunk_s)


def exposed_pp(cfg: EstimatorConfig, total_s: float, stages: list[StageCost]) -> float:
    """PP comm left exposed: with ``overlap_p2p_comm`` under the interleaved schedule, the fill and drain
    ``2·(pp − 2)`` transfers exposed and each steady-state one (a chunk's forward output or backward
    gradient) beside half of the straggler's chunk, ``s_max / (2·vpp)`` (``s_max``: the largest stage's
    per-micro-batch time, host bound included) (:func:`p2p_exposed`); else all of it. A slower stage hides
    at most ``m·Δs_max`` more, which the pipeline's own ``m·s_max`` grows by: the step never shortens."""
    p = cfg.parallel
    if not on(cfg, "overlap_p2p_comm") or p.vpp <= 1 or p.pp <= 1 or p.schedule != "interleaved":
        return total_s
    largest = stages[0].per_micro_batch
    for s in stages[1:]:
        largest = maximum(largest, s.per_micro_batch)
    transfers = comm.p2p_transfers_on_critical_path(p.pp, cfg.num_micro_batches, p.vpp)
    return p2p_exposed(total_s, transfers, 2.0 * max(p.pp - 2, 0), largest / (2.0 * p.vpp))


def report_overlap(stages: list[StageCost], straggler: int, m: int,
                   pp: tuple[float, float] = (0.0, 0.0)) -> dict[str, dict[str, float]]:
    """Hidden and exposed seconds per step of each comm part of the straggler stage (the stage the parts
    are taken from): ``m·`` its per-micro-batch values, DP per step, and PP_COMM per step from ``pp`` =
    (total, exposed) where some of it hides; ``CPU_OFFLOAD``: TE's activation copies to and from host memory
    (their exposed seconds are in COMP) where priced; empty when nothing hides."""
    def of(name: str) -> float:
        values: list[float] = [getattr(s, name) for s in stages]
        return values[straggler] if isinstance(straggler, int) else pick(straggler, values)

    parts = {"MP_COMM": ("mp_comm", "tp_hidden", m), "EP_COMM": ("ep_comm", "ep_hidden", m),
             "CP_COMM": ("cp_comm", "cp_hidden", m), "DP_COMM": ("dp_comm", "dp_hidden", 1)}
    pp_hidden = pp[0] - pp[1]
    pp_hides = _nonzero(pp_hidden)
    offloads = any(_nonzero(s.offload_hidden) or _nonzero(s.offload_exposed) for s in stages)
    if not pp_hides and not offloads and not any(getattr(s, field) is not None and _nonzero(getattr(s, field))
                                                 for s in stages for _, field, _ in parts.values()):
        return {}
    out = {part: {"hidden_s": times * of(hidden), "exposed_s": times * of(exposed)}
           for part, (exposed, hidden, times) in parts.items()}
    if pp_hides:
        out["PP_COMM"] = {"hidden_s": pp_hidden, "exposed_s": pp[1]}
    if offloads:  # TE's CPU activation offload copies (estimator.perf.offload); the exposed seconds are in COMP
        out["CPU_OFFLOAD"] = {"hidden_s": m * of("offload_hidden"), "exposed_s": m * of("offload_exposed")}
    return out


def _nonzero(value: float) -> bool:
    try:
        return bool(value)
    except ValueError:  # an array of layouts
        return bool((value != 0).any())  # type: ignore[attr-defined]
