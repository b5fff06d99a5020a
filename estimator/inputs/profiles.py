"""Framework profiles (spec §4): byte widths and sharding conventions, resolved per config.

- ``sapp-nd``: the reference tool (reference §2.1-§2.4): fp32 params (B_p = 4), Adam 2×4 bytes,
  grads 4 bytes only when pp > 1 (``B_g = 4 if p > 1 else 0``), the sharding factors of
  reference §2.3, logits in compute precision and not TP-sharded (MindFormers
  ``shard_output_activ = 1``), per-layer comm buffers, TP-shardable overhead 2676 MiB (seed P1).
- ``megatron``: Megatron-Core (memory-accounting facts §1.2, §4.1): bf16 params 2 B + fp32 main
  grads 4 B (unsharded) + fp32 master params and Adam states 12 B sharded over DP·CP with the
  distributed optimizer (experts over expert-DP); vocab-parallel fp32 logits on the last stage;
  no separate comm buffers (dispatch/gather outputs are activations); the MTP stage holds its own
  word embedding (``mtp_stage_holds_embedding``).
- ``fsdp2`` (torchtitan): fp32 params, grads and Adam states all sharded over dp·cp
  (16 B / shard degree; grads not live at the peak without PP), the unsharded bf16 weights of
  the blocks not resharded, torchtitan's fp32 loss path, and the caching allocator's reserve
  (``estimator.memory.reserve``).

Users override byte widths with ``precision``; everything else follows the profile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np

from estimator.inputs.runtime_buffer import SEED_TP_SHARDABLE_OVERHEAD_MB
from estimator.shared.arrays import is_array
from estimator.shared.memo import derived
from ndval.core.units import S_PER_US

#: a validated configuration: estimator.config.schema.EstimatorConfig, which imports this module (not imported here, even
#: for type checking: no import cycle)
EstimatorConfig = Any


#: bytes per element of each dtype name
DTYPE_BYTES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}

#: Adam keeps two states (first and second moment) per parameter
ADAM_STATES = 2


Sharding = Literal["sapp-nd", "megatron", "fsdp2"]


@dataclass(frozen=True)
class Profile:
    """Conventions of one framework (defaults before ``precision`` overrides)."""

    name: str
    sharding: Sharding
    params_dtype: str
    master_params_dtype: str | None  # fp32 master copy kept beside low-precision params
    grads_dtype: str
    optimizer_states_dtype: str
    grads_only_with_pp: bool  # reference: B_g = 4 if p > 1 else 0
    logits_tp_sharded: bool
    logits_dtype: str | None  # None = compute dtype
    logits_held_per_micro_batch: bool  # reference: output activation × μ; Megatron: one transient copy
    full_recompute_input_tp_sharded: bool  # True: /tp always; False: /tp only with sequence parallelism
    comm_buffers: bool  # reference §2.6 per-layer comm buffers
    tp_shardable_overhead_mb: float
    #: the stage running the MTP layers also holds a word embedding (Megatron-Core ``GPTModel``:
    #: ``if self.pre_process or self.mtp_process: self.embedding = LanguageModelEmbedding(...)``)
    mtp_stage_holds_embedding: bool = False
    #: interleaved 1F1B μ per chunk: the reference's rule (reference §2.7) or Megatron-Core's
    #: forward order (``estimator.memory.schedule.in_flight_megatron_interleaved``)
    interleaved_order: Literal["reference", "megatron"] = "reference"
    #: fp32 logit-sized tensors live at the loss backward besides the one the forward keeps:
    #: 1 = one gradient (this model's convention for Megatron's fused vocab-parallel loss);
    #: 2 = torchtitan's ``cross_entropy(pred.float())``: ``log_softmax`` keeps its fp32 output,
    #: ``nll_loss`` backward materialises a dense T·V gradient and ``log_softmax`` backward writes
    #: another (PyTorch autograd formulas), all live at once
    loss_backward_logits_copies: int = 1
    #: sharded gradients exist at the activation peak; False for FSDP2 without PP: the optimizer's
    #: ``zero_grad()`` sets them to None and reduce-scatter recreates them during backward, after
    #: the loss-backward peak
    grads_live_at_peak_without_pp: bool = True


PROFILES: dict[str, Profile] = {
    "sapp-nd": Profile(
        name="sapp-nd",
        sharding="sapp-nd",
        params_dtype="fp32",
        master_params_dtype=None,
        grads_dtype="fp32",
        optimizer_states_dtype="fp32",
        grads_only_with_pp=True,
        logits_tp_sharded=False,
        logits_dtype=None,
        logits_held_per_micro_batch=True,
        full_recompute_input_tp_sharded=True,
        comm_buffers=True,
        tp_shardable_overhead_mb=SEED_TP_SHARDABLE_OVERHEAD_MB,  # seed P1 (§4.1.2)
    ),
    "megatron": Profile(
        name="megatron",
        sharding="megatron",
        params_dtype="bf16",
        master_params_dtype="fp32",
        grads_dtype="fp32",
        optimizer_states_dtype="fp32",
        grads_only_with_pp=False,
        logits_tp_sharded=True,
        logits_dtype="fp32",
        logits_held_per_micro_batch=False,
        full_recompute_input_tp_sharded=False,
        comm_buffers=False,
        tp_shardable_overhead_mb=0.0,
        mtp_stage_holds_embedding=True,
        interleaved_order="megatron",
    ),
    "fsdp2": Profile(
        name="fsdp2",
        sharding="fsdp2",
        params_dtype="fp32",
        master_params_dtype=None,
        grads_dtype="fp32",
        optimizer_states_dtype="fp32",
        grads_only_with_pp=False,
        logits_tp_sharded=True,
        logits_dtype="fp32",
        logits_held_per_micro_batch=False,
        full_recompute_input_tp_sharded=False,
        comm_buffers=False,
        tp_shardable_overhead_mb=0.0,
        loss_backward_logits_copies=2,
        grads_live_at_peak_without_pp=False,
    ),
}


@dataclass(frozen=True)
class ResolvedBytes:
    """Byte widths for one config: the profile with ``precision`` overrides and the pp rule applied."""

    params: int
    master_params: int
    grads: int
    optimizer_state: int  # per state; Adam keeps ADAM_STATES of them
    compute: int
    logits: int


def profile_of(cfg: EstimatorConfig) -> Profile:
    """The ``Profile`` named by ``cfg.profile``."""
    return PROFILES[cfg.profile]


def megatron_core_layers(cfg: EstimatorConfig) -> bool:
    """True where Megatron-Core's model code runs the layers: the ``megatron`` sharding, or ``fsdp2`` with
    Megatron-FSDP (``parallel.fsdp_implementation: megatron``), which shards Megatron-Core's model; False for the
    reference tool (``sapp-nd``) and torch's own FSDP2 (torchtitan)."""
    sharding = profile_of(cfg).sharding
    return sharding == "megatron" or (sharding == "fsdp2" and cfg.parallel.fsdp_implementation == "megatron")


def resolved_bytes(cfg: EstimatorConfig) -> ResolvedBytes:
    """Byte widths of ``cfg``: precision overrides win over the profile's defaults.

    Under ``sapp-nd`` the gradient buffer is 0 bytes without pipeline parallelism (reference
    §2.1: ``B_g = 4 if p > 1 else 0``). Resolved once per config instance (:mod:`estimator.shared.memo`).
    """
    return derived(cfg, "resolved_bytes", lambda: _resolved_bytes(cfg))


def _resolved_bytes(cfg: EstimatorConfig) -> ResolvedBytes:
    prof = profile_of(cfg)
    prec = cfg.precision
    params = DTYPE_BYTES[prec.params or prof.params_dtype]
    master = DTYPE_BYTES[prof.master_params_dtype] if prof.master_params_dtype else 0
    if master and master <= params:  # params already at master precision: no separate copy
        master = 0
    grads = DTYPE_BYTES[prec.grads or prof.grads_dtype]
    if prof.grads_only_with_pp and cfg.parallel.pp == 1:
        grads = 0
    compute = DTYPE_BYTES[prec.compute]
    return ResolvedBytes(
        params=params,
        master_params=master,
        grads=grads,
        optimizer_state=DTYPE_BYTES[prec.optimizer_states or prof.optimizer_states_dtype],
        compute=compute,
        logits=compute if cfg.train.cross_entropy_fusion == "te" or not prof.logits_dtype
        else DTYPE_BYTES[prof.logits_dtype],
    )


def tp_shardable_overhead_mb(cfg: EstimatorConfig) -> float:
    """``options.tp_shardable_overhead_mb``, or the profile default when unset (spec §5)."""
    value = cfg.options.tp_shardable_overhead_mb
    return profile_of(cfg).tp_shardable_overhead_mb if value is None else value


# --------------------------------------------------------------------------------------------
# host (CPU) cost of launching one device kernel (step-time model, estimator.perf.kernels)


@dataclass(frozen=True)
class HostLaunchCost:
    """CPU time the framework spends per device kernel it launches (µs), with its provenance."""

    per_launch_us: float
    source: str


#: CPU-side CUDA launch time of one kernel, eager PyTorch. Value chosen from the source before any
#: comparison with measured step times: the LOWER end of the published "usual" range, because the
#: step-time model uses it as a lower bound on host time (the Python/ATen dispatch on top of the
#: launch, ~2 µs per op per pytorch/pytorch#41383, is deliberately not added).
EAGER_PYTORCH_CUDA_LAUNCH = HostLaunchCost(
    per_launch_us=5.0,
    source=(
        "Meta HolisticTraceAnalysis docs, 'CUDA Kernel Launch Statistics' "
        "(github.com/facebookresearch/HolisticTraceAnalysis, docs/source/features/cuda_kernel_launch_stats.rst): "
        "'Usually, the launch time on the CPU side is between 5-20 microseconds' (the cudaLaunchKernel runtime "
        "event of a PyTorch trace); lower end taken"
    ),
)

#: per profile; None = no sourced value (sapp-nd models MindFormers on Ascend, whose graph-mode
#: kernel issue is not the eager CUDA path above): the host term is then absent (0)
HOST_LAUNCH_COST: dict[str, HostLaunchCost | None] = {
    "sapp-nd": None,
    "megatron": EAGER_PYTORCH_CUDA_LAUNCH,
    "fsdp2": EAGER_PYTORCH_CUDA_LAUNCH,
}


def host_launch_cost_s(cfg: EstimatorConfig) -> float:
    """Host seconds per launched kernel: ``options.host_launch_cost_us`` when set (a value measured on
    the user's own stack, e.g. the analyzer's ``host_us_per_launch`` of a profile), else the profile's
    sourced value (0.0 without one)."""
    if cfg.options.host_launch_cost_us is not None:
        return cast(float, cfg.options.host_launch_cost_us * S_PER_US)
    cost = HOST_LAUNCH_COST.get(cfg.profile)
    return 0.0 if cost is None else cost.per_launch_us * S_PER_US


# --------------------------------------------------------------------------------------------
# communication overlap switches of each framework (step-time model, estimator.perf.overlap)


@dataclass(frozen=True)
class OverlapFlag:
    """One overlap switch as its framework names it: its default, the comm it hides (a PerfParts
    name), the compute it hides under, and the source of both."""

    name: str
    default: bool
    hides: str
    under: str
    source: str


_MEGATRON_ARGS = "NVIDIA/Megatron-LM megatron/training/arguments.py"
#: per profile: the overlap switches its framework has (``parallel.<name>``; None there = ``default``)
OVERLAP_FLAGS: dict[str, dict[str, OverlapFlag]] = {
    "sapp-nd": {},
    "megatron": {
        "overlap_grad_reduce": OverlapFlag(
            "overlap_grad_reduce", False, "DP_COMM", "the backward of the layers still to come (last micro-batch)",
            f"{_MEGATRON_ARGS} --overlap-grad-reduce (store_true, default off); megatron/core/distributed/"
            "param_and_grad_buffer.py: a bucket's reduce-scatter starts when its last gradient is ready"),
        "overlap_param_gather": OverlapFlag(
            "overlap_param_gather", False, "DP_COMM", "the forward of the layers still to come (first micro-batch)",
            f"{_MEGATRON_ARGS} --overlap-param-gather (default off): 'only supported with distributed optimizer', "
            "'Must use --overlap-param-gather with --overlap-grad-reduce'; the next bucket's all-gather is "
            "dispatched as the forward reaches the current one"),
        "tp_comm_overlap": OverlapFlag(
            "tp_comm_overlap", False, "MP_COMM", "the neighbouring GEMMs (QKV, output projection, FC1, FC2)",
            f"{_MEGATRON_ARGS} --tp-comm-overlap (default off): 'Tensor parallel communication/GEMM overlap can "
            "happen only when sequence parallelism is enabled'; Transformer Engine userbuffers split each "
            "all-gather / reduce-scatter into tp chunks pipelined with the GEMM's chunks"),
        "moe_shared_expert_overlap": OverlapFlag(
            "moe_shared_expert_overlap", False, "EP_COMM", "the shared experts",
            f"{_MEGATRON_ARGS} --moe-shared-expert-overlap (default off); megatron/core/transformer/moe/"
            "shared_experts.py: the shared expert runs on its own stream, FC1 beside the dispatch all-to-all, "
            "FC2 beside the combine"),
        "overlap_p2p_comm": OverlapFlag(
            "overlap_p2p_comm", True, "PP_COMM", "the model chunk computed beside each transfer (interleaved 1F1B)",
            f"{_MEGATRON_ARGS} --no-overlap-p2p-communication (store_false: overlap on by default), set off "
            "'since non-interleaved schedule does not support overlapping p2p communication'; megatron/core/"
            "pipeline_parallel/schedules.py forward_backward_pipelining_with_interleaving: the isend / irecv of a "
            "chunk's output are waited on only before the chunk that needs them. Megatron-Core's "
            "ModelParallelConfig default is off; Megatron-Bridge's CommOverlapConfig turns it on for vp > 1"),
        "overlap_moe_expert_parallel_comm": OverlapFlag(
            "overlap_moe_expert_parallel_comm", False, "EP_COMM", "the other micro-batch's compute",
            f"{_MEGATRON_ARGS} --overlap-moe-expert-parallel-comm (default off); megatron/core/pipeline_parallel/"
            "combined_1f1b.py: the forward of one micro-batch and the backward of another are merged, each "
            "one's all-to-all beside the other's compute"),
    },
    "fsdp2": {
        "enable_async_tensor_parallel": OverlapFlag(
            "enable_async_tensor_parallel", False, "MP_COMM", "the neighbouring GEMMs (micro-pipelined)",
            "pytorch/torchtitan torchtitan/config/job_config.py parallelism.enable_async_tensor_parallel "
            "(default false; needs compile); torch/distributed/_symmetric_memory: fused all-gather-matmul / "
            "matmul-reduce-scatter split into tp chunks"),
        "fsdp_prefetch": OverlapFlag(
            "fsdp_prefetch", True, "DP_COMM", "the next block's forward / the previous block's backward",
            "PyTorch FSDP2 fully_shard (torch/distributed/fsdp/_fully_shard): implicit prefetching - the next "
            "block's all-gather is issued on its own stream while the current block computes, and each "
            "block's reduce-scatter runs beside the backward of the blocks before it; always on"),
    },
}


def overlap_flag_on(cfg: EstimatorConfig, name: str) -> bool:
    """Whether overlap switch ``name`` is on for ``cfg``: ``parallel.<name>`` when set, else the
    framework's default (False for a switch the profile's framework does not have)."""
    flag = OVERLAP_FLAGS[cfg.profile].get(name)
    value = getattr(cfg.parallel, name)
    if flag is None:
        return bool(value)
    return flag.default if value is None else bool(value)


def tp_comm_overlap_possible(tp: Any, sequence_parallel: Any) -> Any:
    """Megatron's TP comm overlap can run: ``tp > 1`` with sequence parallelism (Megatron-LM arguments.py:
    'Tensor parallel communication/GEMM overlap can happen only when sequence parallelism is enabled';
    Megatron-Bridge ``comm_overlap.py`` turns it off below TP 2 and without SP). Elementwise over arrays of layouts."""
    return (tp > 1) & sequence_parallel


def moe_tp_without_sp_layout(cfg: Any) -> Any:
    """A MoE model under ``megatron`` at tp > 1 without sequence parallelism (:func:`moe_tp_without_sp`);
    elementwise over arrays of layouts (the search's rule moe-tp-needs-sp)."""
    p = cfg.parallel
    return (cfg.model.is_moe & (cfg.profile == "megatron")) & (np.asarray(p.tp) > 1) & ~np.asarray(
        p.sequence_parallel, dtype=bool)


def moe_tp_without_sp(cfg: Any) -> str | None:
    """The sentence for a MoE model under ``megatron`` with tp > 1 and no sequence parallelism, a layout
    Megatron-Core does not train (NVIDIA/Megatron-LM@d98e8a64dd ``megatron/core/transformer/moe/moe_layer.py``:
    ``MoELayer.forward`` raises ``ValueError`` in training when the attention TP group has more than one rank
    and ``sequence_parallel`` is off; since Megatron-Core 0.8), or None. Priced as given, not refused: the
    seed's runs and the project's MoE examples predate the check."""
    p = cfg.parallel
    if is_array(p.tp, p.sequence_parallel):  # arrays of layouts (the batched search): the scalar reports state it
        return None
    if not moe_tp_without_sp_layout(cfg):
        return None
    return (f"rule moe-tp-needs-sp: parallel.tp {p.tp} with routed experts and parallel.sequence_parallel false: "
            "Megatron-Core's MoELayer.forward refuses this layout in training ('performance may degrade if MoE and "
            "tensor parallelism are enabled without also enabling sequence parallelism'); the estimate prices it as "
            "given (TP all-reduces, unsharded norm activations): set parallel.sequence_parallel: true for the "
            "layout Megatron runs")
