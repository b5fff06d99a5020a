"""FSDP2 (torchtitan) terms beside the sharded states, and the caching allocator's reserve.

Live at the peak (allocated):

- **unsharded block weights**: FSDP2 all-gathers a block's compute-dtype (bf16) weights before
  its forward and, with ``reshard_after_forward``, frees them after it. torchtitan
  (``parallelize_llama.apply_fsdp``@9dec370) reshards every block except the last one without PP
  ("FSDP would prefetch it immediately") and reshards none with PP. The peak of an unpipelined
  run is at the loss backward: one block (the last) is unsharded then; with PP all blocks of the
  stage are. With TP the unsharded weights are the rank's TP slice.
- **root group**: ``fully_shard(model, reshard_after_forward=not pp_enabled)`` makes the
  embedding, final norm and output layer one group; without PP it is resharded after the model
  forward, i.e. before the loss; with PP its weights stay unsharded (live).

Reserved over allocated (``reserve_terms``, only when ``options.expandable_segments`` is off):
PyTorch's caching allocator (``c10/cuda/CUDACachingAllocator.cpp``; "CUDA semantics — memory
management" in the PyTorch docs) serves a request only from a cached free block at least as large
(best fit, blocks may be split), never merges blocks of different ``cudaMalloc`` segments, keeps
free blocks per stream, and calls ``cudaMalloc`` for a new segment when no cached block fits.
Blocks freed before the peak that are smaller than the peak's requests therefore stay reserved
but idle. At the loss-backward peak of torchtitan's eager loss (``loss_fn(pred)`` then
``del pred``; requests of T·V·4/t bytes each):

1. **idle compute-dtype logits**: ``pred`` (T·V·B/t) is freed before the fp32 gradients are
   requested, which it cannot hold;
2. **idle root buffers**: FSDP2's all-gather output (allocated on the all-gather copy-in stream,
   ``_fsdp_collectives.foreach_all_gather``) and the per-parameter unsharded storage it is copied
   into (compute stream, ``foreach_all_gather_copy_out``), each the root group's unsharded size,
   both freed when the root reshards (without PP only the first; with PP the storage is live);
   Megatron-FSDP copies nothing out (its parameters are views of the bucket): the bucket alone
   (:func:`root_idle_copies`);
3. **idle block intermediates**: what the last block freed during its forward (its activations
   without recompute minus what the policy keeps), smaller than the fp32 logit requests.

With ``expandable_segments`` the allocator maps more pages into one segment and can hand freed
pages to a larger request, so terms 1 and 3 vanish; term 2 (a different stream's pool) stays.
Block rounding (segments rounded up to 2 MiB, blocks to 512 B) is below 0.1 % here and not added.

Options:

- **Float8 all-gather** (``precision.fsdp_float8_all_gather`` with ``fp8_linear``): torchtitan
  (``torchtitan/float8.py``@9dec370) swaps every ``nn.Linear`` but ``output`` for torchao's
  ``Float8Linear`` and, with ``--float8.enable_fsdp_float8_all_gather`` (default off) and FSDP
  sharding (``dp_shard > 1``), passes ``Float8LinearConfig(enable_fsdp_float8_all_gather=True)``:
  FSDP2 then all-gathers those weights as float8 (1 B) instead of bf16, so the unsharded linear
  weights of a block take half the bytes (norms, router and routed experts stay in the compute
  dtype; the root group holds no Float8Linear). ``FLOAT8_BYTES``, ``float8_all_gather``.
- **Float8 linears without it** and **torch.compile**: no memory term (``FLOAT8_LINEAR_MEMORY``,
  ``TORCH_COMPILE_MEMORY`` state why).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from estimator.inputs.derive import expert_groups, layer_ep
from estimator.inputs.params import embedding_params, head_params, layer_params, position_embedding_params
from estimator.inputs.profiles import profile_of, resolved_bytes
from estimator.memory import activation as act
from estimator.shared.arrays import maximum

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig, RecomputeMode
    from estimator.inputs.derive import StageLayout


#: bytes per element of a float8 all-gathered weight (e4m3, torchao ``Float8LinearConfig``)
FLOAT8_BYTES = 1

#: why torch.compile changes no memory term: no published source states what compiling the
#: blocks does to memory. torchtitan's benchmark (benchmarks/llama3_h100_202412_torchtitan.md)
#: measures compiled runs 5.4 GiB (8 GPUs) and 5.0 GiB (128 GPUs) below eager but says nothing of
#: why, and a difference seen only in the rows being judged is not turned into a term.
TORCH_COMPILE_MEMORY = "none modelled: no published source states a memory effect of torch.compile"

#: why Float8 linears without float8 all-gather change no memory term: torchao's dynamic-scaling
#: ``Float8Linear`` casts input and weight inside the forward and saves for backward either the
#: high-precision arguments (``manual_float8_matmul_with_args_in_hp``, as ``nn.Linear`` does) or
#: their float8 casts (``manual_float8_matmul_with_args_in_float8``) depending on the scaling
#: path, while torchtitan's op-level SAC saves every ``abs``/``max`` output; which of these survive
#: torch.compile's fusion is not stated by a source. The torchtitan Float8 rows are 0.2 GiB below
#: compile-only.
FLOAT8_LINEAR_MEMORY = "none modelled without fsdp_float8_all_gather: what Float8Linear keeps under compile + SAC is not published"


def float8_all_gather(cfg: EstimatorConfig) -> bool:
    """FSDP2 all-gathers Float8Linear weights in float8: asked for, Float8 on and FSDP sharding
    (torchtitan enables it only when ``dp_shard > 1``)."""
    pr = cfg.precision
    return pr.fp8_linear and pr.fsdp_float8_all_gather and cfg.parallel.dp > 1


def is_fsdp2(cfg: EstimatorConfig) -> bool:
    """The config uses FSDP2 sharding (profile ``fsdp2``)."""
    return profile_of(cfg).sharding == "fsdp2"


def blocks_reshard_after_forward(cfg: EstimatorConfig) -> bool:
    """``parallel.fsdp_reshard_after_forward``, else torchtitan's choice: reshard without PP."""
    value = cfg.parallel.fsdp_reshard_after_forward
    return cfg.parallel.pp == 1 if value is None else value


def root_resharded(cfg: EstimatorConfig) -> bool:
    """torchtitan reshards the root group (embedding, norm, output) after forward without PP."""
    return cfg.parallel.pp == 1


def unsharded_layer_bytes(cfg: EstimatorConfig, index: int) -> float:
    """Bytes of layer ``index``'s weights once all-gathered (its TP/EP slice): compute dtype, or
    ``FLOAT8_BYTES`` for the linear weights (all but norms, router and routed experts) with
    ``float8_all_gather``."""
    t, etp = cfg.parallel.tp, expert_groups(cfg).etp
    lp = layer_params(cfg.model, index)
    routed, shared = lp.held_experts(t, layer_ep(cfg, index), etp)
    count = lp.held_non_expert(t) + routed + shared
    compute = resolved_bytes(cfg).compute
    if not float8_all_gather(cfg):
        return count * compute
    linear = lp.held_linear(t) + shared
    return linear * FLOAT8_BYTES + (count - linear) * compute


def root_unsharded_bytes(cfg: EstimatorConfig, layout: StageLayout) -> float:
    """Compute-dtype bytes of the root group's weights on this stage (embedding and/or head, /tp)."""
    m, t = cfg.model, cfg.parallel.tp
    count = 0.0
    if layout.has_embedding:
        count += embedding_params(m) / t + position_embedding_params(m, cfg.train.seq_length)
    if layout.has_head:
        count += head_params(m) / t
    return count * resolved_bytes(cfg).compute


def unsharded_live_bytes(cfg: EstimatorConfig, layout: StageLayout) -> float:
    """Unsharded weights live at the stage's peak: the last block (or all blocks without
    resharding), plus the root group when it is not resharded."""
    if not is_fsdp2(cfg) or not layout.layers:
        return 0.0
    blocks = [layout.layers[-1]] if blocks_reshard_after_forward(cfg) else list(layout.layers)
    total = sum(unsharded_layer_bytes(cfg, i) for i in blocks)
    if not root_resharded(cfg):
        total += root_unsharded_bytes(cfg, layout)
    return total


def grads_live(cfg: EstimatorConfig) -> bool:
    """Sharded gradients are live at the peak (always, except FSDP2 without PP: ``Profile``)."""
    return cfg.parallel.pp > 1 or profile_of(cfg).grads_live_at_peak_without_pp


def root_idle_copies(cfg: EstimatorConfig) -> int:
    """Copies of the root group's unsharded weights idle in the cache at the peak: FSDP2's all-gather output and
    the per-parameter storage it is copied into (both when the root reshards, the output alone when its storage
    stays live); Megatron-FSDP (``parallel.fsdp_implementation: megatron``) copies nothing out — its parameters are
    views of the all-gather bucket (``estimator.experiments.bridge_splits.FSDP_VIEWS``) —, so one copy when
    resharded and none otherwise."""
    copy_out = 0 if cfg.parallel.fsdp_implementation == "megatron" else 1
    return (1 + copy_out) if root_resharded(cfg) else copy_out


def reserve_terms(cfg: EstimatorConfig, layout: StageLayout, mode: RecomputeMode) -> dict[str, float]:
    """Idle cached bytes at the peak, by name (see the module docstring); empty unless FSDP2."""
    if not is_fsdp2(cfg) or not layout.has_head:
        return {}
    root = root_unsharded_bytes(cfg, layout)
    terms = {"idle_root_all_gather_buffers": root * root_idle_copies(cfg)}
    if cfg.options.expandable_segments:
        return terms
    b, t = resolved_bytes(cfg), cfg.parallel.tp
    tr = cfg.train
    tokens = tr.seq_length * tr.micro_batch_size / cfg.parallel.cp
    terms["idle_compute_dtype_logits"] = tokens * cfg.model.vocab * b.compute / t
    main = [i for i in layout.layers if i < cfg.model.num_layers]
    if main:
        last = main[-1]
        freed = act.layer_activation_bytes(cfg, last, "none") - act.layer_activation_bytes(cfg, last, mode)
        terms["idle_block_intermediates"] = maximum(freed, 0.0)  # arrays of layouts too (estimator.shared.arrays)
    return terms
