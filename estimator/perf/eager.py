"""Plain PyTorch eager element-wise ops: each ATen op of a block's module code is its own kernel.

The operator model (:mod:`estimator.perf.operators`) prices every norm, RoPE and activation as one fused
kernel, as Transformer Engine / Megatron-Core run them. A block written in plain PyTorch and run eagerly
(``train.eager_ops``: torchtitan's Llama 3 and Qwen3 blocks) launches one kernel per ATen op instead, each
reading its inputs from HBM and writing its output; ``torch.compile`` (``options.torch_compile``) fuses
them back into one kernel per chain (TorchInductor's pointwise / reduction fusion), which is the fused
model again. What the eager blocks run (per element of the op's tensor, ``B`` = bytes of the compute dtype,
row statistics of ``T`` or ``T·heads`` values not counted):

* **RMSNorm** (``train.eager_rmsnorm``; torchtitan@9dec370 ``torchtitan/models/norms.py`` ``RMSNorm``:
  ``(x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * weight``; PyTorch's
  own ``nn.RMSNorm`` was such an unfused chain until its fused kernel, pytorch/pytorch#153666, measured about 9×
  faster on CUDA, the ratio of the bytes here). Forward: cast
  up (B + 4), ``pow`` (8), ``mean`` (4), ``+ eps`` and ``rsqrt`` (rows), ``x·r`` (8), ``type_as`` (4 + B),
  ``·weight`` (2B) = ``4B + 28`` bytes in 8 kernels. Backward, PyTorch's autograd formulas
  (``tools/autograd/derivatives.yaml``): ``·weight`` → ``g·w`` (2B), ``g·y`` (3B) and its sum over rows for
  the weight gradient (B); ``type_as`` → cast (B + 4); ``x·r`` → ``g·r`` (8), ``g·x`` (12) and its row sum
  (4); ``rsqrt`` / ``+ eps`` (rows, 3 kernels); ``mean`` → the expanded gradient divided by ``h`` (4);
  ``pow`` → ``g · (2 · x.pow(1))``: copy (8), scale (8), multiply (12); the two gradients of ``x.float()``
  summed (12); cast down (4 + B) = ``8B + 76`` bytes in 16 kernels. Fused (the operator model): ``2B``
  forward in 1 kernel, ``3B`` backward in 2.
* **RoPE** (torchtitan ``apply_rotary_emb``, q and k each: ``view_as_complex(x.float())`` ·
  ``freqs_cis`` → ``view_as_real`` → ``type_as``): forward cast up (B + 4), complex multiply (8), cast
  down (4 + B) = ``2B + 16`` in 3 kernels; backward the same three (``freqs_cis`` needs no gradient):
  ``2B + 16`` in 3. Fused: ``2B`` / ``3B`` in 1 / 1.
* **SwiGLU** (torchtitan ``FeedForward``: ``w2(F.silu(w1(x)) * w3(x))``; per element of the FFN width
  ``F``): forward ``silu`` (2B) and the multiply (3B) = ``5B`` in 2 kernels; backward the multiply's two
  gradients (3B each) and ``silu_backward`` (3B) = ``9B`` in 3. Fused: ``3B`` / ``4.5B`` in 1 / 1. (The two
  separate GEMMs ``w1``, ``w3`` have the fused ``fc1``'s FLOPs and bytes but half its N each: priced as the
  fused one.)

Other ops keep their fused price: LayerNorm (``F.layer_norm`` is one ATen kernel), GeLU (``F.gelu``), the
residual adds (one ``add`` each), SDPA (flash). Off (``options.eager_kernels: false``, ``train.eager_ops``
false, ``options.torch_compile`` true, or ``score`` mode): every number is the fused model's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from estimator.perf.operators import FP32_BYTES, Op

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig

#: kernels per pass (forward, backward) of each eager decomposition (the host count of estimator.perf.kernels)
RMSNORM_KERNELS = (8, 16)
ROPE_KERNELS = (3, 3)
SWIGLU_KERNELS = (2, 3)

#: the RMSNorm operators of a block and of the head (the operator model's names)
RMSNORM_OPS = frozenset({"input_norm", "post_attn_norm", "q_norm", "k_norm", "final_norm"})
#: RoPE on q and k
ROPE_OPS = frozenset({"rope_q", "rope_k"})
#: the dense MLP's SwiGLU
SWIGLU_OPS = frozenset({"mlp_activation"})


def rmsnorm_bytes(b: int) -> tuple[float, float]:
    """(forward, backward) bytes per element of eager RMSNorm: ``4B + 28`` and ``8B + 76`` (module docstring)."""
    return 4.0 * b + 7 * FP32_BYTES, 8.0 * b + 19 * FP32_BYTES


def rope_bytes(b: int) -> tuple[float, float]:
    """(forward, backward) bytes per element of eager complex RoPE: ``2B + 16`` each (module docstring)."""
    moved = 2.0 * b + 4 * FP32_BYTES
    return moved, moved


def swiglu_bytes(b: int) -> tuple[float, float]:
    """(forward, backward) bytes per element of the FFN width of eager ``silu(a) · c``: ``5B`` and ``9B``."""
    return 5.0 * b, 9.0 * b


def eager_active(cfg: EstimatorConfig) -> tuple[bool, bool]:
    """(pointwise ops eager, RMSNorm eager) for ``cfg``: ``train.eager_ops`` (and ``train.eager_rmsnorm``) with
    ``options.eager_kernels`` on, without ``options.torch_compile``, in time mode; else (False, False)."""
    o, tr = cfg.options, cfg.train
    on = tr.eager_ops and o.eager_kernels and not o.torch_compile and o.perf_mode != "score"
    return on, on and tr.eager_rmsnorm


def eager_op(op: Op, b: int, rmsnorm: bool) -> Op:
    """``op`` (a fused norm / RoPE / SwiGLU operator of :mod:`estimator.perf.operators`) as its eager
    decomposition: the elements it touches from the fused bytes (norm and RoPE ``2B`` per element, SwiGLU
    ``3B`` per FFN element), the decomposition's bytes and kernels per pass; any other operator unchanged
    (and a norm when ``rmsnorm`` is False)."""
    if op.name in RMSNORM_OPS and rmsnorm:
        per, kernels, elements = rmsnorm_bytes(b), RMSNORM_KERNELS, op.bytes / (2 * b)
    elif op.name in ROPE_OPS:
        per, kernels, elements = rope_bytes(b), ROPE_KERNELS, op.bytes / (2 * b)
    elif op.name in SWIGLU_OPS:
        per, kernels, elements = swiglu_bytes(b), SWIGLU_KERNELS, op.bytes / (3 * b)
    else:
        return op
    return replace(op, bytes=elements * per[0], bw_bytes=elements * per[1], kernels=float(kernels[0]),
                   bw_kernels=float(kernels[1]))


def eager_ops(ops: list[Op], b: int, pointwise: bool, rmsnorm: bool) -> list[Op]:
    """``ops`` with each norm / RoPE / SwiGLU as its eager decomposition (:func:`eager_op`) when
    ``pointwise``; unchanged otherwise."""
    return [eager_op(op, b, rmsnorm) for op in ops] if pointwise else ops
