"""Low-precision linear layers as a compute mode: the recipe's GEMMs and cast kernels (operator roofline).

With a recipe (:mod:`estimator.inputs.recipes`; ``options.low_precision_gemms`` on, time mode) each
GEMM of a transformer layer's linear layers (:data:`estimator.inputs.recipes.LINEAR_GEMMS`) becomes

* the GEMM on the recipe's tensor cores: the same FLOPs at ``peak[recipe.peak]`` (``Op.peak_scale`` =
  that peak over the compute dtype's; efficiency ``DeviceEfficiency.fp8_matmul`` / ``fp4_matmul`` where
  the hardware states one, else its GEMM table), reading its operands quantized (``q`` = data + block
  scales bytes per element) and writing its output in the compute dtype ``B``: forward
  ``(m·k + k·n)·q + m·n·B``; backward the input-gradient GEMM ``(m·n + k·n)·q + m·k·B`` and the
  weight-gradient GEMM ``(m·k + m·n)·q + k·n·B``;
* one memory-bound cast operator (``<gemm>_quantize``, class ``elementwise``) per GEMM and pass: forward
  the input ``X`` (read ``m·k·B``, write ``c·m·k·q``, ``c`` = 2 with a column-wise copy) and the weight
  (``w·(k·n·B + c·k·n·q)``, ``w`` = the share of micro-batches that cast it: Transformer Engine casts a
  weight once per step, ``is_first_microbatch`` in Megatron-Core's TE wrappers, so ``w = 1/m_b``; torchao
  casts it in every forward, ``w = 1``); backward the output gradient ``dY`` (read ``m·n·B``, write
  ``c·m·n·q``). A recipe with an ``amax_pass`` reads each of these tensors once more (``+ B`` per element,
  one more kernel per tensor).

Transformer Engine's fused casts (``options.fused_quantize``, on by default; off: the casts above
exactly, bit-identical numbers):

* **the norm quantizes its output** for the GEMMs whose input a ``te.LayerNormLinear`` produces
  (:data:`NORM_FUSED_GEMMS`: Megatron-Core's TE layer spec builds ``linear_qkv`` and a dense MLP's
  ``linear_fc1`` as ``TELayerNormColumnParallelLinear``; a MoE layer's pre-MLP norm is a separate
  ``TENorm``, the router needs its output). TE's ``rmsnorm_fwd`` / ``layernorm_fwd``
  (``transformer_engine/pytorch/csrc/extensions/normalization.cpp``) pick per quantizer: per-tensor
  delayed scaling ``FULLY_FUSED`` (the norm kernel writes the FP8 data itself: no cast kernel, no
  re-read, the 1-byte copy replaces the norm's ``B``-byte output; a transposed copy where the device
  needs one is one transpose pass), current scaling and NVFP4
  ``FUSED_NORM_AMAX_FP8`` / ``_NVFP4`` (the norm kernel also reduces the amax: the cast that follows
  needs no amax pass, one read and one kernel), MXFP8 and blockwise ``UNFUSED`` (a separate cast, as
  above; cuDNN's fused MXFP8 norm only with ``NVTE_NORM_FWD_USE_CUDNN``);
* **no transposed FP8 copy on devices with non-TN FP8 GEMMs** (``hardware.fp8_gemm_any_layout``:
  Blackwell, compute capability 10.x): TE's GEMM reads the row-wise data of a per-tensor FP8 operand
  in either orientation there (``transformer_engine/common/gemm/cublaslt_gemm.cu``: "Hopper only
  supports TN GEMMs for FP8"; ``is_non_tn_fp8_gemm_supported``), so the delayed and current-scaling
  casts write one copy (``c = 1``). MXFP8 / NVFP4 / blockwise scales run along the reduction dimension,
  so their column-wise copies stay.

**Quantized sequence-parallel all-gathers** (``options.quantized_tp_gather``, on by default; off: BF16
all-gathers, bit-identical numbers): with sequence parallelism TE quantizes a ``LayerNormLinear``'s
input *before* its tensor-parallel all-gather and gathers the row-wise quantized data
(``transformer_engine/pytorch/module/layernorm_linear.py``, "Cast to expected dtype and perform
tensor-parallel communication": ``gather_along_first_dim(ln_out, tp_group, quantizer=...)``; the
userbuffers all-gather holds the quantized buffer too), and a row-parallel linear's backward gathers
its quantized output gradient (``module/base.py`` ``grad_output_preprocess``: "FP8 with all-gather").
So those all-gathers move ``q`` bytes per element instead of ``B`` (:func:`tp_gather_share`,
:func:`quantized_tp_gathers`): a dense layer's two
(into ``qkv`` and ``fc1``), a MoE layer's attention block only (the MoE block's all-gather is the
token dispatcher's, in the compute dtype); MLA attention gathers before its unfused down-projections
(not counted). Reduce-scatters carry the GEMMs' high-precision outputs (unchanged). torchao's tensorwise Float8
under torchtitan's TP plan does the same (:data:`_QUANTIZED_TP_GATHER`: the attention and feed-forward inputs cast
to float8 before their all-gathers, the output gradients before the backward ones); its rowwise recipe gathers in
high precision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from estimator.inputs.profiles import profile_of
from estimator.inputs.recipes import LINEAR_GEMMS, LinearRecipe, on_device, recipe_of
from estimator.perf.comm import Collective
from estimator.perf.operators import Op, gemm

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig

#: weight-cast share per framework: TE casts once per step (1/micro-batches), torchao every forward
_CASTS_ONCE_PER_STEP = frozenset({"delayed", "tensorwise", "blockwise", "mxfp8", "nvfp4"})
#: recipes whose sequence-parallel all-gathers run quantized: TE's (see the module docstring) and torchao's tensorwise
#: Float8 under torchtitan's TP plan (``Float8ColwiseParallel`` / ``PrepareFloat8ModuleInput`` cast the input to
#: float8 before its all-gather, ``Float8RowwiseParallel`` casts the output gradient before the backward all-gather;
#: pytorch/torchtitan ``docs/float8.md``: "float8 all-gather ... for TP (by default for Float8Linear)"; rowwise keeps
#: high-precision TP, torchtitan ``parallelize.py`` ``enable_float8_tensorwise_tp``)
_QUANTIZED_TP_GATHER = _CASTS_ONCE_PER_STEP | {"torchao_tensorwise"}
#: GEMMs whose input a TE LayerNormLinear (norm + linear in one module) produces (see the module docstring)
NORM_FUSED_GEMMS = frozenset({"qkv", "mlp_fc1"})
#: TE's fused norm per recipe (normalization.cpp): "quantized" = FULLY_FUSED, "amax" = FUSED_NORM_AMAX_*
NORM_FUSION: dict[str, str] = {"delayed": "quantized", "tensorwise": "amax", "nvfp4": "amax"}


@dataclass(frozen=True)
class LowpGemms:
    """The recipe as the roofline prices it: the recipe, its peak over the compute peak, the share of
    micro-batches that cast the weights."""

    recipe: LinearRecipe
    peak_scale: float
    weight_cast_share: float
    #: Transformer Engine's fused norm + cast for :data:`NORM_FUSED_GEMMS` (``options.fused_quantize``)
    norm_fusion: bool = False


def lowp_of(cfg: EstimatorConfig, micro_batches: int) -> LowpGemms | None:
    """The config's low-precision GEMMs, or None (no recipe, ``options.low_precision_gemms`` off,
    ``score`` mode). A missing peak is refused at load (:mod:`estimator.config.rules`)."""
    pr, o = cfg.precision, cfg.options
    recipe = recipe_of(pr.linear_recipe, pr.fp8_linear, profile_of(cfg).name)
    if recipe is None or not o.low_precision_gemms or o.perf_mode == "score":
        return None
    peaks = cfg.hardware.peak_tflops
    share = 1.0 / max(1, micro_batches) if recipe.name in _CASTS_ONCE_PER_STEP else 1.0
    fused = o.fused_quantize and recipe.name in _CASTS_ONCE_PER_STEP  # TE recipes (torchao: its own casts)
    return LowpGemms(on_device(recipe, cfg), peaks[recipe.peak] / peaks[pr.compute], share, fused)


def bf16_layers(cfg: EstimatorConfig) -> frozenset[int]:
    """Main-stack layers outside the low-precision recipe (``precision.bf16_layers_at_ends`` = (start, end)):
    ``i < start`` or ``i ≥ L − end`` — Megatron-Core's ``get_fp8_context`` / ``get_fp4_context`` return a null
    context for them under ``first_last_layers_bf16`` (``num_layers_at_start_in_bf16`` /
    ``num_layers_at_end_in_bf16``; NVIDIA/Megatron-LM@d98e8a64dd ``megatron/core/fp8_utils.py``,
    ``fp4_utils.py``), so their linears, casts and FP8 attention run in the compute dtype. Empty without a recipe
    (:func:`lowp_of` None)."""
    start, end = cfg.precision.bf16_layers_at_ends
    if not (start or end) or lowp_of(cfg, cfg.num_micro_batches) is None:
        return frozenset()
    n = cfg.model.num_layers
    return frozenset(i for i in range(n) if i < start or i >= n - end)


def cast_bytes(elements: float, b: int, recipe: LinearRecipe) -> float:
    """Bytes one cast of ``elements`` compute-dtype elements moves: read ``B`` (twice with an amax
    pass), write each quantized copy (data + scales)."""
    reads = (2 if recipe.amax_pass else 1) * elements * b
    return reads + recipe.copies * elements * recipe.stored_bytes


def cast_kernels(recipe: LinearRecipe) -> float:
    """Kernels one cast of one tensor launches: its amax pass, if the recipe has one, and the cast."""
    return 2.0 if recipe.amax_pass else 1.0


def quantized_gemm(op: Op, lowp: LowpGemms, b: int) -> list[Op]:
    """``op`` (a linear layer's GEMM) on the low-precision tensor cores and its cast operator."""
    assert op.shape is not None
    m, k, n = op.shape
    r = lowp.recipe
    q = r.stored_bytes
    fw_bytes = (m * k + k * n) * q + m * n * b
    bw_bytes = (m * n + k * n) * q + m * k * b + (m * k + m * n) * q + k * n * b
    low = replace(op, bytes=fw_bytes, bw_bytes=bw_bytes, variant=f"{op.variant}@{r.peak}", peak_scale=lowp.peak_scale)
    per_tensor = cast_kernels(r)
    fusion = NORM_FUSION.get(r.name) if lowp.norm_fusion and op.name in NORM_FUSED_GEMMS else None
    if fusion is None:
        fw_cast = cast_bytes(m * k, b, r) + lowp.weight_cast_share * cast_bytes(k * n, b, r)
        fw_kernels = per_tensor * (1.0 + lowp.weight_cast_share)
    else:
        x_bytes, x_kernels = norm_fused_input_cast(m * k, b, r, fusion)
        fw_cast = x_bytes + lowp.weight_cast_share * cast_bytes(k * n, b, r)
        fw_kernels = x_kernels + per_tensor * lowp.weight_cast_share
    if grouped_split_fused(op, lowp):
        return [low, *grouped_split_casts(op, lowp, b)]
    cast = Op(f"{op.name}_quantize", "elementwise", op.modules, 0.0, fw_cast, fw_kernels,
              0.0, cast_bytes(m * n, b, r), per_tensor, op.count, "quantize")
    return [low, cast]


#: recipes whose split quantization of the routed experts' inputs and output gradients TE runs as fused kernels
#: over every expert's split (``split_quantize``): NVFP4 as one ``split_quantize_nvfp4_impl`` launch
#: (``QuantizationMethod::FUSED_NVFP4``); FP8 delayed scaling, where the cast also writes the transposed copy,
#: as ``nvte_multi_cast_transpose`` (``multi_tensor_quantize_impl``: "Currently only have fused kernel for FP8
#: delayed scaling"), up to :data:`MULTI_CAST_TENSORS_PER_KERNEL` splits per launch. MXFP8 and the current-scaling
#: recipes quantize each split on its own.
GROUPED_SPLIT_FUSED = frozenset({"nvfp4", "delayed"})

#: splits one ``multi_cast_transpose_kernel`` launch takes (``kMaxTensorsPerKernel``, "Args must be <4 KB";
#: NVIDIA/TransformerEngine@d0067d0d ``common/transpose/multi_cast_transpose.cu``)
MULTI_CAST_TENSORS_PER_KERNEL = 64


def grouped_split_fused(op: Op, lowp: LowpGemms) -> bool:
    """A routed-experts GEMM (variant ``grouped…``, ``count`` > 1 experts) whose split casts TE fuses (options
    ``fused_quantize``): NVFP4 with both tensors' last dims multiples of 128 (TE falls back to per-split
    kernels otherwise); FP8 delayed scaling when the cast writes the column-wise copy too (the fused kernel
    requires it: devices without non-TN FP8 GEMMs, :func:`estimator.inputs.recipes.on_device`)."""
    name = lowp.recipe.name
    if not (lowp.norm_fusion and name in GROUPED_SPLIT_FUSED and op.variant.startswith("grouped") and op.count > 1):
        return False
    if name == "delayed":
        return lowp.recipe.columnwise_copy
    assert op.shape is not None
    _, k, n = op.shape
    return bool(k % 128 == 0 and n % 128 == 0)


def split_cast_kernels(recipe: LinearRecipe, splits: float) -> float:
    """Kernels of one fused split cast over ``splits`` expert splits: NVFP4 one launch, after its amax pass
    (2); FP8 delayed scaling ``⌈splits / 64⌉`` multi-cast-transpose launches (:data:`MULTI_CAST_TENSORS_PER_KERNEL`;
    equal splits are all aligned or all not, one kernel class)."""
    if recipe.name == "delayed":
        return float(math.ceil(splits / MULTI_CAST_TENSORS_PER_KERNEL))
    return cast_kernels(recipe)


def grouped_split_casts(op: Op, lowp: LowpGemms, b: int) -> list[Op]:
    """The casts of a :func:`grouped_split_fused` GEMM: the experts' inputs ``X`` (forward) and output gradients
    ``dY`` (backward) as one operator of ``count`` splits in :func:`split_cast_kernels` kernels per tensor, the
    weights one cast per expert as before (``w·k·n`` each).

    Source: NVIDIA/TransformerEngine@d0067d0d ``pytorch/csrc/extensions/cast.cpp`` ``split_quantize`` (NVFP4
    quantizers with contiguous bulk-allocated outputs and an inner dim multiple of 128 take
    ``FUSED_NVFP4``: one ``split_quantize_nvfp4_impl`` launch for all splits; FP8 delayed-scaling quantizers
    with row- and column-wise outputs take ``nvte_multi_cast_transpose``), called by ``GroupedLinear`` for
    the inputs and the output gradients (``pytorch/module/grouped_linear.py`` ``_split_quantize``)."""
    assert op.shape is not None
    m, k, n = op.shape
    r, c = lowp.recipe, op.count
    per_tensor = cast_kernels(r)
    kernels = split_cast_kernels(r, c)
    splits = Op(f"{op.name}_quantize", "elementwise", op.modules, 0.0, c * cast_bytes(m * k, b, r), kernels,
                0.0, c * cast_bytes(m * n, b, r), kernels, 1.0, "quantize")
    weights = Op(f"{op.name}_weight_quantize", "elementwise", op.modules, 0.0,
                 lowp.weight_cast_share * cast_bytes(k * n, b, r), per_tensor * lowp.weight_cast_share,
                 0.0, 0.0, 0.0, c, "quantize")
    return [splits, weights]


def norm_fused_input_cast(elements: float, b: int, recipe: LinearRecipe, fusion: str) -> tuple[float, float]:
    """(bytes, kernels) the cast of a LayerNormLinear's input adds beside the norm kernel (see the module
    docstring), ``e`` elements: ``quantized`` (the norm kernel writes the row-wise copy instead of its
    ``B``-byte output; a transposed copy, where the device needs one, is one more pass reading and
    writing ``q``): ``max(0, q − B)·e + (c − 1)·2·q·e`` bytes, ``c − 1`` kernels; ``amax`` (the norm
    reduces the amax): one read and the copies, ``e·B + c·e·q``, one kernel."""
    q, c = recipe.stored_bytes, recipe.copies
    if fusion == "quantized":
        return max(0.0, q - b) * elements + (c - 1) * 2.0 * q * elements, float(c - 1)
    return elements * b + c * elements * q, 1.0


def lowp_ops(ops: list[Op], lowp: LowpGemms | None, b: int) -> list[Op]:
    """``ops`` with each linear-layer GEMM replaced by :func:`quantized_gemm` (unchanged without a recipe)."""
    if lowp is None:
        return ops
    out: list[Op] = []
    for op in ops:
        out += quantized_gemm(op, lowp, b) if op.op_class == "gemm" and op.name in LINEAR_GEMMS else [op]
    return out


def frozen_ops(ops: list[Op], gemms: frozenset[str], rank: int, b: int) -> list[Op]:
    """``ops`` under LoRA (:mod:`estimator.inputs.adapters`): every weight GEMM frozen (backward = the
    input-gradient GEMM only: half the FLOPs, bytes and kernels of the two), and beside each targeted
    one its adapter GEMMs ``[m,k]@[k,r]``, ``[m,r]@[r,n]`` (compute dtype, full backward)."""
    out: list[Op] = []
    for op in ops:
        if op.op_class != "gemm" or op.shape is None:  # (attention-score GEMMs have no weight)
            out.append(op)
            continue
        out.append(replace(op, bw_flops=op.bw_flops / 2, bw_bytes=op.bw_bytes / 2, bw_kernels=op.bw_kernels / 2))
        if op.name in gemms:
            m, k, n = op.shape
            out += [gemm(f"{op.name}_lora_a", op.modules, m, k, rank, b, op.count),
                    gemm(f"{op.name}_lora_b", op.modules, m, rank, n, b, op.count)]
    return out


def tp_gather_share(cfg: EstimatorConfig, b: int) -> float | None:
    """``q / B`` of a recipe's quantized sequence-parallel all-gather (row-wise data + scales; TE's recipes and
    torchao's tensorwise Float8, :data:`_QUANTIZED_TP_GATHER`), or None (another recipe,
    ``options.quantized_tp_gather`` off, no sequence parallelism)."""
    low = lowp_of(cfg, cfg.num_micro_batches)
    if low is None or not cfg.options.quantized_tp_gather or low.recipe.name not in _QUANTIZED_TP_GATHER:
        return None
    return low.recipe.stored_bytes / b


def quantized_tp_gathers(cs: list[Collective], share: float, quantized: float, blocks: float) -> list[Collective]:
    """A layer's TP collectives ``cs`` with ``quantized`` of its ``blocks`` all-gathers at ``share`` of
    their bytes (see the module docstring); the rest unchanged. Calls are kept: ``count·f`` quantized
    and ``count·(1 − f)`` as before, ``f = quantized / blocks``."""
    f = quantized / blocks
    out: list[Collective] = []
    for c in cs:
        if c.kind != "all_gather":
            out.append(c)
            continue
        out += [Collective("all_gather", c.size_bytes * share, c.group_size, c.count * f),
                Collective("all_gather", c.size_bytes, c.group_size, c.count * (1.0 - f))]
    return out
