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

Everything else (attention, norms, softmax, router, embedding, output layer, loss, optimizer) keeps
its own precision. ``options.low_precision_gemms: false`` prices every GEMM at the compute dtype as
before recipes (bit-identical numbers).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from estimator.inputs.profiles import profile_of
from estimator.inputs.recipes import LINEAR_GEMMS, LinearRecipe, recipe_of
from estimator.perf.operators import Op, gemm

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig

#: weight-cast share per framework: TE casts once per step (1/micro-batches), torchao every forward
_CASTS_ONCE_PER_STEP = frozenset({"delayed", "tensorwise", "blockwise", "mxfp8", "nvfp4"})


@dataclass(frozen=True)
class LowpGemms:
    """The recipe as the roofline prices it: the recipe, its peak over the compute peak, the share of
    micro-batches that cast the weights."""

    recipe: LinearRecipe
    peak_scale: float
    weight_cast_share: float


def lowp_of(cfg: EstimatorConfig, micro_batches: int) -> LowpGemms | None:
    """The config's low-precision GEMMs, or None (no recipe, ``options.low_precision_gemms`` off,
    ``score`` mode). A missing peak is refused at load (:mod:`estimator.config.rules`)."""
    pr, o = cfg.precision, cfg.options
    recipe = recipe_of(pr.linear_recipe, pr.fp8_linear, profile_of(cfg).name)
    if recipe is None or not o.low_precision_gemms or o.perf_mode == "score":
        return None
    peaks = cfg.hardware.peak_tflops
    share = 1.0 / max(1, micro_batches) if recipe.name in _CASTS_ONCE_PER_STEP else 1.0
    return LowpGemms(recipe, peaks[recipe.peak] / peaks[pr.compute], share)


def cast_bytes(elements: float, b: int, recipe: LinearRecipe) -> float:
    """Bytes one cast of ``elements`` compute-dtype elements moves: read ``B`` (twice with an amax
    pass), write each quantized copy (data + scales)."""
    reads = (2 if recipe.amax_pass else 1) * elements * b
    return reads + recipe.copies * elements * recipe.stored_bytes


def quantized_gemm(op: Op, lowp: LowpGemms, b: int) -> list[Op]:
    """``op`` (a linear layer's GEMM) on the low-precision tensor cores and its cast operator."""
    assert op.shape is not None
    m, k, n = op.shape
    r = lowp.recipe
    q = r.stored_bytes
    fw_bytes = (m * k + k * n) * q + m * n * b
    bw_bytes = (m * n + k * n) * q + m * k * b + (m * k + m * n) * q + k * n * b
    low = replace(op, bytes=fw_bytes, bw_bytes=bw_bytes, variant=f"{op.variant}@{r.peak}", peak_scale=lowp.peak_scale)
    per_tensor = 2.0 if r.amax_pass else 1.0
    fw_cast = cast_bytes(m * k, b, r) + lowp.weight_cast_share * cast_bytes(k * n, b, r)
    cast = Op(f"{op.name}_quantize", "elementwise", op.modules, 0.0, fw_cast, per_tensor * (1.0 + lowp.weight_cast_share),
              0.0, cast_bytes(m * n, b, r), per_tensor, op.count, "quantize")
    return [low, cast]


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
