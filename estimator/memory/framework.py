"""Per-rank allocations the framework stack keeps for the whole run (``StageMemory.persistent``).

What ``torch.cuda.memory_allocated()`` counts besides parameters, gradients and optimizer states,
allocated on first use and never freed, so present at the activation peak *and* after the
optimizer step (the Megatron-LM CI ``mem-allocated-bytes`` rows). Each term is a mechanism with
its source; none is fitted. Bytes throughout.

- ``torch_cublas_workspace``: PyTorch gives every (cuBLAS handle, stream) pair a workspace allocated
  through the caching allocator (pytorch/pytorch@26a39059ec aten/src/ATen/cuda/CublasHandlePool.cpp:
  ``getCurrentCUDABlasHandle`` -> ``setWorkspaceForHandle`` -> ``getNewWorkspace`` =
  ``CUDACachingAllocator::get()->allocate(getChosenWorkspaceSize())``, kept in
  ``cublas_handle_stream_to_workspace``). Size ``parseChosenWorkspaceSize``: ``CUBLAS_WORKSPACE_CONFIG``
  when set, else ``4096 * 8 * 1024`` = 32 MiB on compute capability 9.0 and
  ``4096 * 1024 * 2 + 16 * 1024 * 8`` = 8.125 MiB otherwise. One pair: the compute stream (Megatron
  runs its torch matmuls - output layer, unfused attention, router - there). Profiles ``megatron``
  and ``fsdp2`` on CUDA hardware.
- ``te_cublas_workspace``: Transformer Engine's GEMM workspace (NVIDIA/TransformerEngine@d0067d0da6
  transformer_engine/pytorch/cpp_extensions/gemm.py ``get_cublas_workspace``, ``functools.lru_cache``:
  one per device; ``get_cublas_workspace_size_bytes``: 32 MiB + 1024 B on compute capability >= 9,
  4 MiB below), plus with grouped GEMM (``--moe-grouped-gemm``: ``TEGroupedLinear`` ->
  ``general_grouped_gemm``) one more of that size per TE compute stream
  (``tex.get_num_cublas_streams()``; transformer_engine/common/util/multi_stream.cpp
  ``num_compute_streams = 4``). Profile ``megatron`` (Megatron-Core's default
  ``--transformer-impl transformer_engine``).
- ``dummy_wgrads``: with gradient-accumulation fusion the weight gradient is written into
  ``main_grad`` and backward returns a *dummy* gradient of the weight's shape; TE caches one per
  (shape, dtype) in a module-global dict and never frees it (transformer_engine/pytorch/module/base.py
  ``get_dummy_wgrad``, ``_dummy_wgrads``; TE PR #1651 "Enable reuse of dummy wgrad tensor", 2025-04),
  used by TE's Linear / LayerNormLinear / GroupedLinear (``handle_custom_ddp_from_mcore``) and, with
  TE installed, by Megatron's own ``ColumnParallelLinear`` output layer
  (NVIDIA/Megatron-LM@d98e8a64dd megatron/core/tensor_parallel/layers.py: ``grad_weight =
  get_dummy_wgrad(list(weight.main_grad.shape), input.dtype)``). So: one tensor per *distinct*
  linear-weight shape the rank holds (``linear_weight_shapes``), not one per layer.
- ``sp_gather_buffer``: with sequence parallelism Megatron's output layer all-gathers its input
  into the global memory buffer (megatron/core/tensor_parallel/layers.py
  ``get_global_memory_buffer().get_tensor(dim_size, input.dtype, "mpu")``), which keeps the
  largest request per (name, dtype) for the run (megatron/core/utils.py ``GlobalMemoryBuffer``):
  s/cp·b·h elements of the compute dtype on the stage with the output layer.

Not modelled (small or not pinned down): PyTorch's separate cuBLASLt workspace (1 MiB, only for
cuBLASLt matmuls), the MoE all-to-all dispatcher's per-layer state kept until the next forward
(``self.probs``, ``self.routing_map``, the permutation's ``row_id_map``: megatron/core/transformer/
moe/token_dispatcher.py ``dispatch_preprocess``; ~3 MiB per MoE layer on the CI proxies), RoPE caches
(``lru_cache`` on ``RotaryEmbedding.forward``, ~1 MiB per model chunk).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

from estimator.inputs.derive import expert_groups, mtp_is_moe
from estimator.inputs.gdn import gdn_dims
from estimator.inputs.hybrid import mamba_dims
from estimator.inputs.params import MLP_MATRICES
from estimator.inputs.profiles import profile_of, resolved_bytes
from estimator.shared.arrays import is_array, where

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig
    from estimator.config.sections import ModelConfig
    from estimator.inputs.derive import StageLayout

#: CUDA compute capability of the NVIDIA hardware presets (NVIDIA "CUDA GPUs - Compute Capability":
#: A100 8.0, H100 9.0, H200 9.0, B200 10.0); other hardware (Ascend) runs no CUDA libraries
COMPUTE_CAPABILITY: dict[str, tuple[int, int]] = {
    "a100-80g": (8, 0), "h100-80g": (9, 0), "h100-sxm-96g-hbm2e": (9, 0), "h200": (9, 0), "b200": (10, 0),
}

#: PyTorch cuBLAS workspace on compute capability 9.0 / otherwise (CublasHandlePool.cpp defaults)
TORCH_CUBLAS_WORKSPACE_SM90_BYTES = 4096 * 8 * 1024
TORCH_CUBLAS_WORKSPACE_DEFAULT_BYTES = 4096 * 1024 * 2 + 16 * 1024 * 8
#: Transformer Engine GEMM workspace on compute capability >= 9 / below (gemm.py)
TE_CUBLAS_WORKSPACE_HOPPER_BYTES = 32 * 1024 * 1024 + 1024
TE_CUBLAS_WORKSPACE_DEFAULT_BYTES = 4_194_304
#: TE compute streams of grouped GEMM, each with its own workspace (multi_stream.cpp)
TE_GROUPED_GEMM_STREAMS = 4

#: a linear weight as (rows, columns, bytes per element): the key of TE's dummy-wgrad cache
WeightShape = tuple[float, float, int]


def torch_cublas_workspace_bytes(capability: tuple[int, int]) -> float:
    """PyTorch's workspace of one (cuBLAS handle, stream): 32 MiB on 9.0, else 8.125 MiB."""
    return float(TORCH_CUBLAS_WORKSPACE_SM90_BYTES if capability == (9, 0) else TORCH_CUBLAS_WORKSPACE_DEFAULT_BYTES)


def te_cublas_workspace_bytes(capability: tuple[int, int], grouped_gemm: bool) -> float:
    """TE's GEMM workspace (32 MiB + 1 KiB from 9.0 on, 4 MiB below), times 1 + 4 with grouped GEMM."""
    one = TE_CUBLAS_WORKSPACE_HOPPER_BYTES if capability[0] >= 9 else TE_CUBLAS_WORKSPACE_DEFAULT_BYTES
    return float(one * (1 + (TE_GROUPED_GEMM_STREAMS if grouped_gemm else 0)))


def dummy_wgrad_bytes(shapes: Sequence[WeightShape]) -> float:
    """One cached dummy gradient per distinct (shape, dtype): Σ rows·cols·bytes over ``shapes``, a shape
    equal to an earlier one counted once (elementwise for arrays of layouts: :mod:`estimator.shared.arrays`)."""
    if not is_array(*chain.from_iterable(shapes)):  # numbers: a set finds the repeats (adding 0.0 for them is a no-op)
        total, seen_shapes = 0.0, set()
        for shape in shapes:
            if shape not in seen_shapes:
                seen_shapes.add(shape)
                total = total + shape[0] * shape[1] * shape[2]
        return total
    total = 0.0
    for i, (rows, cols, width) in enumerate(shapes):
        seen: Any = False
        for rows_j, cols_j, width_j in shapes[:i]:
            seen = seen | ((rows_j == rows) & (cols_j == cols) & (width_j == width))
        total = total + where(seen, 0.0, rows * cols * width)
    return total


def _attention_shapes(m: ModelConfig, t: int, width: int) -> list[WeightShape]:
    """Megatron-Core TE attention linears (out, in) on one TP rank.

    MHA/GQA: ``linear_qkv`` ((a + 2g)·d/t, h; + a·d/t gate rows with ``attention_output_gate``), ``linear_proj``
    (h, a·d/t). MLA: ``linear_q_down_proj``
    (q_lora, h) and ``linear_kv_down_proj`` (kv_lora + d_rope, h) duplicated over TP,
    ``linear_q_up_proj`` (a·(d_qk + d_rope)/t, q_lora) (or ``linear_q_proj`` from h without q
    compression), ``linear_kv_up_proj`` (a·(d_qk + d_v)/t, kv_lora), ``linear_proj`` (h, a·d_v/t).
    """
    h, a = m.hidden_size, m.num_attention_heads
    if m.attention != "mla":
        d, gate = m.head_size, a if m.attention_output_gate else 0  # gated attention: a·d gate rows
        return [((a + 2 * m.kv_heads + gate) * d / t, h, width), (h, a * d / t, width)]
    d_qk, d_rope, d_v = m.qk_head_dim or 0, m.qk_rope_head_dim or 0, m.v_head_dim or 0
    kv_lora = m.kv_lora_rank or 0
    shapes = [(kv_lora + d_rope, h, width), (a * (d_qk + d_v) / t, kv_lora, width), (h, a * d_v / t, width)]
    if m.q_lora_rank:
        return [*shapes, (m.q_lora_rank, h, width), (a * (d_qk + d_rope) / t, m.q_lora_rank, width)]
    return [*shapes, (a * (d_qk + d_rope) / t, h, width)]


def _mlp_shapes(m: ModelConfig, ffn: float, width: int, latent: int | None = None) -> list[WeightShape]:
    """``linear_fc1`` (n·F, h) with n = 2 for SwiGLU (gate and up fused), 1 otherwise; ``linear_fc2`` (h, F);
    routed experts of a latent MoE map L instead of h (``latent``)."""
    fc1_rows = (MLP_MATRICES[m.activation] - 1) * ffn
    h = latent or m.hidden_size
    return [(fc1_rows, h, width), (h, ffn, width)]


def linear_weight_shapes(cfg: EstimatorConfig, layout: StageLayout) -> list[WeightShape]:
    """Weight shapes (repeats possible: ``dummy_wgrad_bytes`` counts each once) of the gradient-accumulating linears on a stage (Megatron-Core + TE).

    Per layer kind present: attention (``_attention_shapes``); dense MLP F/t; routed experts
    F_e/etp; shared experts F_s/t; MTP ``eh_proj`` (h/t, 2h); the output layer (V/t, h) on the
    stage holding the head (Megatron's ``ColumnParallelLinear``, dummy in the input dtype).
    """
    m, t, b = cfg.model, cfg.parallel.tp, resolved_bytes(cfg)
    kinds = {kind for kind, _ in layout.kind_runs(m)}
    gdn_kinds = kinds & {"gdn", "gdn_dense", "gdn_moe"}
    shapes = _attention_shapes(m, t, b.params) if kinds - {"mamba", "mlp", "moe_mlp"} - gdn_kinds else []
    if "mamba" in kinds:  # in_proj (2·d_i + 2·g·N + n_h)/t × h, out_proj h × d_i/t (estimator.inputs.hybrid)
        d = mamba_dims(m)
        shapes += [(d.in_proj_width / t, m.hidden_size, b.params), (m.hidden_size, d.inner / t, b.params)]
    if gdn_kinds:  # in_proj (2·n_k·d_k + 2·n_v·d_v + 2·n_v)/t × h, out_proj h × n_v·d_v/t (estimator.inputs.gdn)
        g = gdn_dims(m)
        shapes += [(g.in_proj_width / t, m.hidden_size, b.params), (m.hidden_size, g.v_width / t, b.params)]
    if kinds & {"dense", "mlp", "gdn_dense"} or ("mtp" in kinds and not mtp_is_moe(m)):
        shapes += _mlp_shapes(m, m.dense_ffn / t, b.params)
    if kinds & {"moe", "moe_mlp", "gdn_moe"} or ("mtp" in kinds and mtp_is_moe(m)):
        shapes += _mlp_shapes(m, m.expert_ffn / expert_groups(cfg).etp, b.params, m.moe_latent_size)
        if m.shared_ffn_total:
            shapes += _mlp_shapes(m, m.shared_ffn_total / t, b.params)
    if "mtp" in kinds:
        shapes.append((m.hidden_size / t, 2 * m.hidden_size, b.params))
    if layout.has_head:
        shapes.append((m.vocab / t, m.hidden_size, b.compute))
    return shapes


def sp_gather_buffer_bytes(cfg: EstimatorConfig, has_head: bool) -> float:
    """Megatron's global "mpu" buffer of the output layer's sequence-parallel all-gather: s/cp·b·h·B_c
    on the stage with the head, with sequence parallelism and tp > 1; else 0."""
    p, tr = cfg.parallel, cfg.train
    if not (has_head and p.sequence_parallel):
        return 0.0
    value = tr.seq_length / p.cp * tr.micro_batch_size * cfg.model.hidden_size * resolved_bytes(cfg).compute
    return where(p.tp > 1, value, 0.0)


def persistent_bytes(cfg: EstimatorConfig, layout: StageLayout) -> dict[str, float]:
    """The run-long allocations of one stage's rank by name (bytes); empty off CUDA or under ``sapp-nd``."""
    capability = COMPUTE_CAPABILITY.get(cfg.hardware.name)
    profile = profile_of(cfg).name
    if capability is None or profile not in ("megatron", "fsdp2"):
        return {}
    terms = {"torch_cublas_workspace": torch_cublas_workspace_bytes(capability)}
    if profile != "megatron":
        return terms
    tr = cfg.train
    terms["te_cublas_workspace"] = te_cublas_workspace_bytes(capability, tr.moe_grouped_gemm and cfg.model.is_moe)
    if tr.gradient_accumulation_fusion:
        terms["dummy_wgrads"] = dummy_wgrad_bytes(linear_weight_shapes(cfg, layout))
    terms["sp_gather_buffer"] = sp_gather_buffer_bytes(cfg, layout.has_head)
    return terms
