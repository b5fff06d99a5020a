"""Operator roofline: each operator of a stage priced on the device's sourced efficiencies.

One kernel group (an :class:`estimator.perf.operators.Op` pass) takes

``max(FLOPs / (peak[precision] · eff_c), bytes / (HBM · eff_mem(bytes per kernel)) + kernels · latency)``

with ``eff_c`` = ``matmul(GFLOP per kernel)`` for GEMMs and ``attention_fwd`` / ``attention_bwd`` for
flash attention (:class:`estimator.inputs.hardware.DeviceEfficiency`, data with its source). The latency
sits in the memory term as in the source of the numbers (SimuMax ``compute_mem_access_time``: bytes /
(bandwidth · efficiency) + latency per operator; the op takes the larger of that and its compute time).
``options.compute_efficiency`` derates every operator time (``t / eff``; 1.0 = as priced).

Applies in ``time`` mode with ``options.operator_roofline`` on and a hardware ``efficiency`` block;
otherwise the stage prices GEMM FLOPs at ``peak · compute_efficiency`` and nothing else
(:func:`estimator.perf.context.compute_value`, the reference's model, ``legacy()``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from operator import attrgetter
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from estimator.inputs import derive
from estimator.inputs.adapters import adapter_of
from estimator.memory import fsdp2
from estimator.perf import eager, expert_bias, gdn, lowp, mamba, sac
from estimator.perf import operators as ops_
from estimator.perf.comm import cp_attention_steps
from estimator.perf.context import prices
from estimator.perf.efficiency import device_efficiency, efficiency_key, kernel_latency_us
from estimator.perf.kernels import PassKernels
from estimator.perf.layers import is_moe_layer, stage_mode_groups
from estimator.shared.arrays import ARRAY, is_array, maximum, minimum, unique_rows, where
from ndval.core import cache
from ndval.core.units import BYTES_PER_GB, BYTES_PER_MEGABYTE, FLOPS_PER_GFLOP, S_PER_US

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig
    from estimator.inputs.hardware import DeviceEfficiency
    from estimator.perf.context import Ctx



def roofline_active(cfg: EstimatorConfig) -> bool:
    """True when the stage compute is priced operator by operator (see the module docstring)."""
    o = cfg.options
    return o.perf_mode == "time" and o.operator_roofline and cfg.hardware.efficiency is not None


def kernel_group_s(flops: float, moved: float, kernels: float, op_class: str, backward: bool,
                   eff: DeviceEfficiency, peak_flops: float, variant: str = "", peak_scale: float = 1.0,
                   grouped_tokens: float = 0.0, exps: float = 0.0) -> float:
    """Seconds of ``kernels`` equal kernels doing ``flops`` and moving ``moved`` bytes in all (roofline).

    A ``grouped`` GEMM (MoE routed experts) takes ``eff.grouped_matmul`` and a ``permute`` operator
    ``eff.permute_memory_fwd`` / ``_bwd`` when the hardware has them (else the matmul / memory tables);
    with ``grouped_tokens`` (the tokens of each expert's GEMM, > 0) and a hardware table by tokens per
    expert, the grouped GEMM takes that table's efficiency (:func:`grouped_eff`).
    A low-precision GEMM (variant ``…@fp8`` / ``…@fp4``, :mod:`estimator.perf.lowp`) runs at
    ``peak_flops·peak_scale`` with ``eff.fp8_matmul`` / ``fp4_matmul`` where given (a grouped one
    ``eff.fp8_grouped_matmul`` where given)."""
    per_kernel = maximum(kernels, 1.0)
    compute_s = 0.0
    if type(flops) is ARRAY or flops:  # (arrays of layouts: rows with 0 FLOPs price 0)
        base, _, low = variant.partition("@")
        if op_class == "attention":
            e = eff.attention_bwd if backward else eff.attention_fwd
            if base.startswith("hd"):  # head dim other than the measured 128 (ops_.HEAD_DIM_EFFICIENCY)
                e *= ops_.HEAD_DIM_EFFICIENCY[int(base[2:])][1 if backward else 0]
        elif low and eff.low_precision_matmul(low, base == "grouped") is not None:
            e = cast(float, eff.low_precision_matmul(low, base == "grouped"))
        elif base == "grouped" and (type(grouped_tokens) is ARRAY or grouped_tokens) and \
                eff.grouped_matmul_by_tokens(0.0, backward) is not None:
            e = grouped_eff(eff, grouped_tokens, backward)
        elif base == "grouped" and eff.grouped_matmul is not None:
            e = eff.grouped_matmul
        else:
            e = eff.matmul_eff(flops / per_kernel / FLOPS_PER_GFLOP)
        compute_s = flops / (peak_flops * peak_scale * e) if low else flops / (peak_flops * e)
        if op_class == "attention" and (type(exps) is ARRAY or exps) and eff.sfu_exp_per_s and \
                eff.attention_sfu_exp_per_s and eff.sfu_exp_per_s != eff.attention_sfu_exp_per_s:
            compute_s = sfu_adjusted_s(compute_s, exps, eff.sfu_exp_per_s, eff.attention_sfu_exp_per_s)
    memory_s = 0.0
    if type(moved) is ARRAY or moved:
        own = (eff.permute_memory_bwd if backward else eff.permute_memory_fwd) if variant == "permute" else \
            eff.ssd_scan_memory if variant == "ssd_scan" else None  # a measured share of its own (DeviceEfficiency)
        share = own if own is not None else eff.memory_eff(moved / per_kernel / BYTES_PER_MEGABYTE)
        memory_s = moved / (eff.hbm_gb_s * BYTES_PER_GB * share) + kernels * kernel_latency_us(eff, variant) * S_PER_US
        if type(moved) is ARRAY:  # rows moving nothing price no memory term (the scalar ``if``)
            memory_s = where(moved != 0, memory_s, 0.0)
    return maximum(compute_s, memory_s)


def sfu_adjusted_s(measured_s: float, exps: float, device_exp_per_s: float, reference_exp_per_s: float) -> float:
    """Flash-attention seconds on a device whose SFU exponentiates at ``device_exp_per_s`` when
    ``measured_s`` prices the pass with attention factors measured on a device at ``reference_exp_per_s``:

    ``t' = max(t + E·(1/R_dev − 1/R_ref), min(t, E/R_dev))``, ``E`` = the pass's exponentials
    (:func:`estimator.perf.operators.sfu_exponentials`).

    The exponentials are taken as not hidden under the tensor-core work on the reference device: NVIDIA
    ("Making Softmax More Efficient with NVIDIA Blackwell Ultra") shows the second attention GEMM waiting
    for the softmax on GB200, so a faster SFU shortens the pass by the whole difference (its measured
    ~35 % higher FP8 attention forward throughput on GB300 matches that). A faster SFU never lengthens
    the pass, nor shortens it below its exponentials at the device's rate; a slower one lengthens it by
    the difference. Equal rates leave ``t`` unchanged."""
    return maximum(measured_s + exps * (1.0 / device_exp_per_s - 1.0 / reference_exp_per_s),
                   minimum(measured_s, exps / device_exp_per_s))


def grouped_eff(eff: DeviceEfficiency, tokens: float, backward: bool) -> float:
    """Grouped-GEMM efficiency at ``tokens`` tokens per expert (``eff``'s table by tokens; rows of an
    array of layouts with 0 tokens take the flat ``grouped_matmul``, else the matmul table's first row)."""
    by_tokens = cast(float, eff.grouped_matmul_by_tokens(tokens, backward))
    if type(tokens) is not ARRAY:
        return by_tokens
    flat = eff.grouped_matmul if eff.grouped_matmul is not None else eff.matmul[0][1]
    return where(tokens > 0, by_tokens, flat)


def op_pass_s(op: ops_.Op, backward: bool, eff: DeviceEfficiency, peak_flops: float) -> float:
    """Seconds of one pass (forward or backward) of ``op`` and its ``count`` copies."""
    if backward:
        return op.count * kernel_group_s(op.bw_flops, op.bw_bytes, op.bw_kernels, op.op_class, True, eff, peak_flops,
                                         op.variant, op.peak_scale, op.grouped_tokens, op.exps)
    return op.count * kernel_group_s(op.flops, op.bytes, op.kernels, op.op_class, False, eff, peak_flops, op.variant,
                                     op.peak_scale, op.grouped_tokens, op.exps)


@dataclass(frozen=True)
class StageRoofline:
    """Device compute seconds of one stage per micro-batch by pass, per operator class (all passes),
    and the per-step optimizer seconds."""

    forward: float
    backward: float
    recompute: float
    by_class: dict[str, float]
    optimizer: float


def layer_dims(cfg: EstimatorConfig, ctx: Ctx) -> ops_.LayerDims:
    """Per-rank shapes shared by the stage's layers."""
    local = ctx.tokens / ctx.cp
    ring = cp_attention_steps(ctx.cp, cfg.parallel.cp_comm_type)
    blocks, root = fsdp2_copy_bytes(cfg, ctx)
    return ops_.LayerDims(
        tokens=local, norm_tokens=local / where(ctx.sp, ctx.tp, 1), batch=ctx.tokens / ctx.seq, seq=ctx.seq,
        tp=ctx.tp, cp=ctx.cp, b=ctx.b_compute, flash=cfg.train.flash_attention, ring_blocks=ring,
        imbalance=ctx.expert_imbalance, lowp=lowp.lowp_of(cfg, cfg.num_micro_batches), adapter=adapter_of(cfg),
        grouped_activation=cfg.options.grouped_expert_activation,
        grouped_by_tokens=cfg.options.grouped_gemm_by_tokens, head_dim_eff=cfg.options.attention_head_dim,
        fp8_attention=fp8_attention_scale(cfg),
        grouped_fused=cfg.train.te_op_fuser and cfg.options.grouped_op_fuser and (
            (low.recipe.name if (low := lowp.lowp_of(cfg, cfg.num_micro_batches)) else None)
            in ops_.GROUPED_TENSOR_RECIPES),
        main_grad_add_bytes=main_grad_add_bytes(cfg, ctx), etp=ctx.t_exp if cfg.options.grouped_gemm_by_tokens else None,
        sfu_exps=cfg.options.sfu_softmax, fsdp_copies=blocks, fsdp_root_copies=root, eager=eager.eager_active(cfg),
        expert_bias=expert_bias.expert_bias_active(cfg),
    )


def fp8_attention_scale(cfg: EstimatorConfig) -> float:
    """FP8 peak / compute peak when the fused attention runs in FP8 (``precision.fp8_attention`` with
    ``options.fp8_attention``, flash attention, not ``score`` mode), else 0. A missing FP8 peak is refused at
    load (:mod:`estimator.config.rules`)."""
    o, peaks = cfg.options, cfg.hardware.peak_tflops
    if not (cfg.precision.fp8_attention and o.fp8_attention and cfg.train.flash_attention) or o.perf_mode == "score":
        return 0.0
    return peaks["fp8"] / peaks[cfg.precision.compute]


def main_grad_add_bytes(cfg: EstimatorConfig, ctx: Ctx) -> float:
    """Bytes per weight element of Megatron's unfused ``main_grad`` add (:func:`operators.main_grad_add_op`):
    ``2·B_g + B`` with ``train.gradient_accumulation_fusion`` off under the ``megatron`` profile (no adapter:
    frozen weights have no gradient) and ``options.main_grad_add`` on; else 0 (not priced, as before)."""
    tr, o = cfg.train, cfg.options
    if tr.gradient_accumulation_fusion or not o.main_grad_add or cfg.profile != "megatron" or adapter_of(cfg):
        return 0.0
    return float(2 * ctx.b_grad + ctx.b_compute)


CopyBytes = tuple[float, float, float]


def fsdp2_copy_bytes(cfg: EstimatorConfig, ctx: Ctx) -> tuple[CopyBytes, CopyBytes]:
    """Bytes per weight element of FSDP2's copies per micro-batch (:func:`operators.fsdp2_copy_op`), for the
    blocks and for the root group (embedding, final norm, output): forward copy-out ``2·B_ag``, backward copy-out
    ``2·B_ag`` when the group is resharded after forward (``memory.fsdp2.blocks_reshard_after_forward`` /
    ``root_resharded``), backward copy-in ``B + B_g`` (unsharded gradients in the compute dtype into the reduce
    dtype; none for the frozen weights of an adapter run); ``B_ag`` = 1 for the blocks' weights under Float8
    all-gather, else ``B``. Priced under the ``fsdp2`` sharding by torch's ``fully_shard``
    (``parallel.fsdp_implementation``; Megatron-FSDP copies nothing) with ``dp > 1``, without PP (each
    micro-batch re-gathers and reduces) and ``options.fsdp2_copies`` on; else zeros (with PP each group is
    gathered and reduced once per step: not priced)."""
    none = (0.0, 0.0, 0.0)
    if not (cfg.options.fsdp2_copies and fsdp2.is_fsdp2(cfg) and cfg.parallel.pp == 1
            and cfg.parallel.fsdp_implementation == "torch"):
        return none, none
    sharded = np.asarray(ctx.dp) > 1
    if sharded.any() != sharded.all():  # (arrays of layouts: one branch per group)
        raise ValueError("FSDP2 copies: layouts with dp = 1 and dp > 1 in one group")
    if not sharded.all():
        return none, none
    b = float(ctx.b_compute)
    copy_in = 0.0 if adapter_of(cfg) else b + float(ctx.b_grad)

    def copies(gathered: float, resharded: bool) -> CopyBytes:
        return (2.0 * gathered, 2.0 * gathered if resharded else 0.0, copy_in)

    blocks = copies(float(fsdp2.FLOAT8_BYTES) if fsdp2.float8_all_gather(cfg) else b,
                    fsdp2.blocks_reshard_after_forward(cfg))
    return blocks, copies(b, fsdp2.root_resharded(cfg))


def fsdp2_copy_launches(cfg: EstimatorConfig, ctx: Ctx, layout: derive.StageLayout) -> PassKernels:
    """Host launches of FSDP2's copies per micro-batch on this stage: :func:`operators.fsdp2_copy_kernels` once
    per block (one ``fully_shard`` group each) and once for the root group (embedding, final norm, output) when
    the stage holds it; zero where :func:`fsdp2_copy_bytes` prices no copies."""
    blocks, root = fsdp2_copy_bytes(cfg, ctx)
    per_block = PassKernels(*ops_.fsdp2_copy_kernels(blocks), 0.0)
    launches = per_block.scaled(len(layout.layers))
    if layout.has_embedding or layout.has_head:
        launches += PassKernels(*ops_.fsdp2_copy_kernels(root), 0.0)
    return launches


def layer_ops(cfg: EstimatorConfig, dims: ops_.LayerDims, index: int, layer_ep: int | None = None) -> list[ops_.Op]:
    """Forward operators of layer ``index`` on one rank (attention block, MLP or MoE block, MTP extras);
    ``layer_ep``: the layer's ep when the caller has it (:func:`derive.layer_ep`)."""
    m = cfg.model
    moe = is_moe_layer(m, index)
    ep = derive.layer_ep(cfg, index) if layer_ep is None else layer_ep
    local = maximum(1, m.num_experts // maximum(1, ep)) if moe else 0
    mixer, mlp_block = derive.layer_blocks(m, index)
    mixer_ops = {"attention": ops_.attention_ops, "mamba": mamba.mamba_ops, "gdn": gdn.gdn_ops}
    block = mixer_ops[mixer](m, dims) if mixer else []
    block += ops_.mlp_ops(m, dims, moe, local) if mlp_block else []
    block = eager.eager_ops(block, dims.b, *dims.eager)
    out = ops_.fused_grouped_experts(lowp.lowp_ops(block, dims.lowp, dims.b), dims)
    if derive.layer_kind(m, index) == "mtp":
        out += ops_.mtp_extra_ops(m, dims)
    if dims.adapter is not None:
        out = lowp.frozen_ops(out, dims.adapter.gemms, dims.adapter.rank, dims.b)
    if dims.main_grad_add_bytes:
        out.append(ops_.main_grad_add_op(out, dims.main_grad_add_bytes))
    if any(dims.fsdp_copies):
        out.append(ops_.fsdp2_copy_op(ops_.weight_elements(out), dims.fsdp_copies))
    return out


def _recomputed(op: ops_.Op, mode: str, modules: frozenset[str]) -> bool:
    if mode == "full":
        return True
    return mode == "selective" and bool(modules & set(op.modules))


def _recompute_share(op: ops_.Op, layer: bool, mode: str, modules: frozenset[str],
                     shares: Mapping[str, float] | None) -> float:
    """Share of ``op``'s forward a layer's recompute re-runs: torchtitan's op-level policy (``shares``,
    :func:`sac.op_share`), else all of a recomputed operator; none outside layers and for FSDP2's copies
    (:data:`operators.FSDP_COPY`: the parameters are unsharded before the recomputed forward)."""
    if not layer or op.variant == ops_.FSDP_COPY:
        return 0.0
    if shares is not None and mode == "selective":
        return sac.op_share(op, shares)
    return 1.0 if _recomputed(op, mode, modules) else 0.0


#: seconds of one operator group: (forward, backward, recompute, per operator class)
GroupSeconds = tuple[float, float, float, dict[str, float]]


def ops_seconds(ops: list[ops_.Op], layer: bool, mode: str, modules: frozenset[str], eff: DeviceEfficiency,
                peak: float, derate: float, shares: Mapping[str, float] | None = None) -> GroupSeconds:
    """Forward, backward and recompute seconds of ``ops`` (one layer, or the embedding / head), each
    operator priced by :func:`op_pass_s` and derated; recompute re-runs the forward of a layer's
    recomputed operators — under torchtitan's op-level policy (``shares``, :mod:`estimator.perf.sac`)
    each operator's recomputed share of it. (Arrays of layouts: :func:`_stacked_ops_seconds`.)"""
    if any(is_array(*(getattr(op, f) for f in _OP_NUMBERS)) for op in ops):
        return _stacked_ops_seconds(ops, layer, mode, modules, eff, peak, derate, shares)
    fw = bw = rec = 0.0
    by_class: dict[str, float] = defaultdict(float)
    for op in ops:
        f = op_pass_s(op, False, eff, peak) * derate
        b = op_pass_s(op, True, eff, peak) * derate
        r = f * _recompute_share(op, layer, mode, modules, shares)
        fw, bw, rec = fw + f, bw + b, rec + r
        by_class[op.op_class] += f + b + r
    return fw, bw, rec, by_class


#: the numbers of an :class:`operators.Op` (any may be an array of layouts)
_OP_NUMBERS = ("flops", "bytes", "kernels", "bw_flops", "bw_bytes", "bw_kernels", "count", "grouped_tokens", "exps")


def _stacked_ops_seconds(ops: list[ops_.Op], layer: bool, mode: str, modules: frozenset[str],
                         eff: DeviceEfficiency, peak: float, derate: float,
                         shares: Mapping[str, float] | None = None) -> GroupSeconds:
    """:func:`ops_seconds` over arrays of layouts: the operators of one (class, variant) stacked into
    (operator, layout) arrays and priced by one :func:`kernel_group_s` call per pass (the same formula
    elementwise); the sums run over the operators in their order, as the scalar loop adds them."""
    numbers = [getattr(op, f) for op in ops for f in _OP_NUMBERS]
    shape = np.broadcast_shapes(*(v.shape for v in numbers if type(v) is ARRAY))
    kinds: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, op in enumerate(ops):
        kinds[op.op_class, op.variant].append(i)
    fw, bw, rec = (np.empty((len(ops), *shape)) for _ in range(3))
    for (op_class, variant), at in kinds.items():
        col = {f: _stacked([getattr(ops[i], f) for i in at], shape) for f in _OP_NUMBERS}
        scale = ops[at[0]].peak_scale  # (one recipe per config: every op of a variant has its scale)
        rows = cast(float, col["grouped_tokens"]) if np.any(col["grouped_tokens"]) else 0.0
        exps = cast(float, col["exps"]) if np.any(col["exps"]) else 0.0
        fw[at] = col["count"] * kernel_group_s(*_numbers(col, "flops", "bytes", "kernels"), op_class, False, eff,
                                               peak, variant, scale, rows, exps) * derate
        bw[at] = col["count"] * kernel_group_s(*_numbers(col, "bw_flops", "bw_bytes", "bw_kernels"), op_class, True,
                                               eff, peak, variant, scale, rows, exps) * derate
        part = np.array([_recompute_share(ops[i], layer, mode, modules, shares) for i in at])
        rec[at] = fw[at] * part.reshape(-1, *([1] * len(shape)))
    each = fw + bw + rec
    by_class = {cls: _in_order(each[[i for i, op in enumerate(ops) if op.op_class == cls]])
                for cls in dict.fromkeys(op.op_class for op in ops)}
    return _in_order(fw), _in_order(bw), _in_order(rec), by_class


def _in_order(rows: np.ndarray) -> float:
    """``rows[0] + rows[1] + ...`` left to right (the scalar loop's order, so the sums are the same numbers)."""
    return cast(float, np.cumsum(rows, axis=0)[-1])


def _stacked(values: list[float], shape: tuple[int, ...]) -> np.ndarray:
    """``values`` (numbers or arrays of ``shape``) as one (value, *shape) array; all numbers: (value, 1...)."""
    if not is_array(*values):
        return np.array(values, dtype=np.float64).reshape(-1, *([1] * len(shape)))
    out = np.empty((len(values), *shape))
    for i, v in enumerate(values):
        out[i] = v
    return out


def _numbers(col: dict[str, np.ndarray], flops: str, moved: str, kernels: str) -> tuple[float, float, float]:
    """The stacked columns of one pass (arrays pass for numbers in the formulas, :mod:`estimator.shared.arrays`)."""
    return cast(float, col[flops]), cast(float, col[moved]), cast(float, col[kernels])


#: layer seconds shared across configs (a sweep's layouts repeat the same layer shapes): key -> (model, seconds)
_LAYER_SECONDS = cache.store("estimator.roofline_seconds", bound=4096, key="(id(model), per-rank dims, layer kind "
                             "or embedding/head, ep, recompute mode, modules, efficiency_key, peak, derate)",
                             holds="(the model, seconds per pass and per operator class)")


def _layer_seconds(cfg: EstimatorConfig, dims: ops_.LayerDims, index: int, mode: str, modules: frozenset[str],
                   eff: DeviceEfficiency, peak: float, derate: float) -> GroupSeconds:
    """:func:`ops_seconds` of layer ``index``'s operators, memoised across configs on everything they
    depend on: the model (by identity, held by the entry so the identity cannot be reused), the
    per-rank shapes ``dims``, the layer kind and ep, the recompute mode and modules, the device
    efficiencies (by value), the peak and the derate."""
    kind, ep = derive.layer_kind(cfg.model, index), derive.layer_ep(cfg, index)
    shares = sac.gemm_shares(cfg.model) if sac.OP_SAC in modules else None
    if is_array(*_dims_arrays(dims), ep):  # arrays of layouts
        return _on_distinct_rows(dims, ep, lambda d, e: ops_seconds(layer_ops(cfg, d, index, e), True, mode, modules,
                                                                    eff, peak, derate, shares))
    key = (id(cfg.model), dims, kind, ep, mode, modules, efficiency_key(eff), peak, derate)
    return _memo_seconds(cfg.model, key, lambda: ops_seconds(layer_ops(cfg, dims, index), True, mode, modules, eff,
                                                             peak, derate, shares))


#: the fields of :class:`operators.LayerDims` that may be arrays of layouts
_DIMS_ARRAYS = ("tokens", "norm_tokens", "batch", "tp", "cp", "ring_blocks", "imbalance", "etp")
#: those fields' values of a :class:`operators.LayerDims`, as a tuple
_dims_arrays = attrgetter(*_DIMS_ARRAYS)


def _on_distinct_rows(dims: ops_.LayerDims, ep: int,
                      price: Callable[[ops_.LayerDims, int], GroupSeconds]) -> GroupSeconds:
    """``price(dims, ep)`` over arrays of layouts, evaluated once per distinct (shape, ep) row
    (:func:`estimator.shared.arrays.unique_rows`: many layouts of a group share tp, cp, micro-batch and ep)
    and spread back to the layouts (the same numbers, elementwise)."""
    reduced, inverse = unique_rows(*_dims_arrays(dims), ep)
    changes: dict[str, Any] = dict(zip(_DIMS_ARRAYS, reduced, strict=False))
    fw, bw, rec, by_class = price(replace(dims, **changes), cast(int, reduced[-1]))

    def spread(value: float) -> float:
        return cast(float, np.asarray(value)[inverse]) if type(value) is ARRAY else value

    return spread(fw), spread(bw), spread(rec), {k: spread(v) for k, v in by_class.items()}


def _memo_seconds(model: object, key: tuple[object, ...], price: Callable[[], GroupSeconds]) -> GroupSeconds:
    """``price()`` memoised in :data:`_LAYER_SECONDS` under ``key`` (which starts with ``id(model)``; the
    entry holds ``model``, so that identity cannot be reused while cached)."""
    return cache.held_value(_LAYER_SECONDS, key, model, price)


def _extra_seconds(cfg: EstimatorConfig, dims: ops_.LayerDims, head: bool, b_grad: int, eff: DeviceEfficiency,
                   peak: float, derate: float) -> GroupSeconds:
    """:func:`ops_seconds` of the embedding (``head`` False) or the head operators, memoised across
    configs like :func:`_layer_seconds` (no recompute: the mode does not enter)."""
    def price(d: ops_.LayerDims) -> GroupSeconds:
        ops = eager.eager_ops(ops_.head_ops(cfg.model, d), d.b, *d.eager) if head else ops_.embedding_ops(cfg.model, d, b_grad)
        if d.adapter is not None:  # the frozen output layer: no weight gradient
            ops = lowp.frozen_ops(ops, frozenset(), d.adapter.rank, d.b)
        if head and d.main_grad_add_bytes:  # the output layer's weight gradient
            ops = [*ops, ops_.main_grad_add_op(ops, d.main_grad_add_bytes)]
        if any(d.fsdp_root_copies):  # the root group's embedding table or output weight (a tied one once)
            table = cfg.model.vocab / d.tp * cfg.model.hidden_size
            elements = (0.0 if cfg.model.tied_embeddings else ops_.weight_elements(ops)) if head else table
            ops = [*ops, ops_.fsdp2_copy_op(elements, d.fsdp_root_copies)]
        return ops_seconds(ops, False, "none", frozenset(), eff, peak, derate)

    if is_array(*_dims_arrays(dims)):  # arrays of layouts
        return _on_distinct_rows(dims, 1, lambda d, _: price(d))
    key = (id(cfg.model), dims, "head" if head else "embedding", b_grad, efficiency_key(eff), peak, derate)
    return _memo_seconds(cfg.model, key, lambda: price(dims))


@dataclass(frozen=True)
class _Pricing:
    """What every layer's price of one config reads: efficiencies, the memo, peak and derate, the per-rank
    shapes, the recomputed modules and the recipe's BF16 layers."""

    eff: DeviceEfficiency
    memo: dict[Any, Any]
    peak: float
    derate: float
    dims: ops_.LayerDims
    modules: frozenset[str]
    high: frozenset[int]


def _pricing(cfg: EstimatorConfig, ctx: Ctx) -> _Pricing:
    memo = prices(cfg, ctx, "roofline")
    if "dims" not in memo:
        memo["dims"] = layer_dims(cfg, ctx)
    if "bf16_layers" not in memo:
        memo["bf16_layers"] = lowp.bf16_layers(cfg)
    modules = frozenset({sac.OP_SAC}) if sac.uses_op_sac(cfg) else (
        frozenset(cfg.recompute.modules) or frozenset({"core_attn"}))
    return _Pricing(device_efficiency(cfg), memo, ctx.peak_flops / cfg.options.compute_efficiency,
                    1.0 / cfg.options.compute_efficiency, memo["dims"], modules, memo["bf16_layers"])


def _kind_seconds(cfg: EstimatorConfig, pr: _Pricing, index: int, kind: str, mode: str, bf16: bool) -> GroupSeconds:
    """One layer of ``kind`` (represented by layer ``index``) under recompute ``mode``, in the recipe's
    precision or (``bf16``: a layer outside the recipe, lowp.bf16_layers) without it; priced once per key."""
    key = (kind, mode, "bf16") if bf16 else (kind, mode)
    if key not in pr.memo:
        dims = replace(pr.dims, lowp=None, fp8_attention=0.0) if bf16 else pr.dims
        pr.memo[key] = _layer_seconds(cfg, dims, index, mode, pr.modules, pr.eff, pr.peak, pr.derate)
    return cast(GroupSeconds, pr.memo[key])


def layer_pass_seconds(cfg: EstimatorConfig, ctx: Ctx, layout: derive.StageLayout) -> list[tuple[float, float]]:
    """(forward, backward) device seconds of each layer of ``layout``, in order, as :func:`stage_roofline`
    prices them (the stage's recompute mode; the recipe's BF16 layers in BF16)."""
    pr = _pricing(cfg, ctx)
    out = []
    for index in layout.layers:
        mode = derive.layer_recompute(cfg, layout.stage, index)
        f, b, _, _ = _kind_seconds(cfg, pr, index, derive.layer_kind(cfg.model, index), mode, index in pr.high)
        out.append((f, b))
    return out


def stage_roofline(cfg: EstimatorConfig, ctx: Ctx, layout: derive.StageLayout,
                   optimizer_ops: list[ops_.Op]) -> StageRoofline:
    """Forward, backward and recompute seconds of one stage per micro-batch (layers, embedding, head)
    and its optimizer step, each operator priced by :func:`op_pass_s`; the passes (not the per-step
    optimizer) are derated by ``options.compute_efficiency``. Layers of one kind are priced once and
    multiplied by their count; their prices are kept for the other stages
    (:func:`estimator.perf.context.prices`)."""
    pr = _pricing(cfg, ctx)
    eff, peak, derate, dims, high = pr.eff, pr.peak, pr.derate, pr.dims, pr.high
    groups: list[tuple[GroupSeconds, float]] = []
    for index, kind, mode, n in stage_mode_groups(cfg, layout, cfg.stage_recompute(layout.stage)):
        n_high = sum(1 for i in layout.layers if i in high and derive.layer_kind(cfg.model, i) == kind
                     and derive.layer_recompute(cfg, layout.stage, i) == mode) if high else 0
        if n > n_high:
            groups.append((_kind_seconds(cfg, pr, index, kind, mode, False), float(n - n_high)))
        if n_high:  # the group's layers outside the recipe (lowp.bf16_layers): no recipe, no FP8 attention
            groups.append((_kind_seconds(cfg, pr, index, kind, mode, True), float(n_high)))
    if layout.has_embedding:
        groups.append((_extra_seconds(cfg, dims, False, ctx.b_grad, eff, peak, derate), 1.0))
    if layout.has_head:
        groups.append((_extra_seconds(cfg, dims, True, ctx.b_grad, eff, peak, derate), 1.0))
    fw = bw = rec = 0.0
    by_class: dict[str, float] = defaultdict(float)
    for (f, b, r, classes), times in groups:
        fw, bw, rec = fw + f * times, bw + b * times, rec + r * times
        for name, value in classes.items():
            by_class[name] += value * times
    optimizer = sum(op_pass_s(op, False, eff, peak) for op in optimizer_ops)
    return StageRoofline(fw, bw, rec, dict(by_class), optimizer)
