"""The Mamba-2 mixer's work on one rank per micro-batch: FLOPs, operators (roofline) and kernels.

Shapes (:class:`estimator.inputs.hybrid.MambaDims`): n_h heads of p channels, d_i = n_h·p, state N, g groups,
conv kernel k, SSD chunk Q (Megatron-Core 128); T tokens of the micro-batch on the rank, t = tp (heads and
groups are split over TP, Megatron-Core ``MambaMixer``).

**SSD chunked scan** (Dao & Gu 2024, arXiv 2405.21060, §6 "the SSD algorithm": a sequence of Q-long chunks;
each chunk's output is a masked Q×Q attention-like product plus the contribution of the state passed from
the previous chunks). Forward FLOPs per token (multiply-add = 2, the whole Q×Q block as the kernels compute
it, no causal halving, like :func:`estimator.perf.compute.attention_core_flops`):

* ``C·Bᵀ`` inside the chunk, per group: 2·Q·N·g;
* the masked product with x, per head: 2·Q·p·n_h;
* the chunk's state ``Bᵀ·x``, per head: 2·N·p·n_h;
* the output from the passed state ``C·h``, per head: 2·N·p·n_h;
* the state passing between chunks (N·p per head per chunk: /Q per token) is left out (< 1 %).

= 2·T·(g·Q·N + n_h·p·(Q + 2·N)) /t. Backward: twice the forward's products (the gradients of both factors)
plus the forward kernels it re-runs (mamba_ssm ``_mamba_chunk_scan_combined_bwd`` recomputes ``C·Bᵀ`` and the
chunk states before the gradient kernels): 2·fwd + 2·T·(g·Q·N + n_h·p·N)/t.

Memory traffic of the scan (its kernels: chunk cumsum, chunk state, state passing, ``C·Bᵀ``, chunk scan;
mamba_ssm/ops/triton/ssd_combined.py ``_mamba_chunk_scan_combined_fwd``): x, B, C, dt and z read and y
written in the compute dtype, T·(2·d_i + 2·g·N + n_h + d_i)·B/t; the chunk states (T/Q)·n_h·p·N/t written
in fp32 by the chunk-state kernel (``states_in_fp32=True``) and read by the state passing, which writes the
passed states in the input dtype (``out_dtype=C.dtype``) that the chunk scan reads: (4 + 4 + B + B) bytes per
state element; the fp32 ``C·Bᵀ`` blocks T·Q·g·4/t written and read. Backward moves twice that (the kernels
read the forward's tensors and the output gradient and write the input gradients).

The [s, b] ↔ [b, s] copies around the scan (Megatron-Core ``_ssm_training``: ``rearrange(...).contiguous()``)
move bytes only with a micro-batch above 1: with b = 1 the permuted view is already contiguous (a no-op).

**Kernels**: forward 5 (the scan's five Triton kernels), backward 15 (4 recomputed forward kernels and 11
gradient kernels of ``_mamba_chunk_scan_combined_bwd``); the causal conv (``causal_conv1d_fwd``) 1 forward, 2
backward (its recompute inside ``MambaSplitConv1dScanCombinedFn.backward`` and ``causal_conv1d_bwd``).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from estimator.inputs.hybrid import MambaDims, mamba_dims
from estimator.perf import compute
from estimator.perf.mixer_cp import mixer_cp_relayout_ops
from estimator.perf.operators import ELEMENTWISE_BACKWARD_BYTES, FP32_BYTES, LayerDims, Op, elementwise, gemm
from estimator.shared.arrays import where

if TYPE_CHECKING:
    from estimator.config.schema import ModelConfig

#: kernels of the SSD scan per pass (forward, backward), see the module docstring
SSD_KERNELS = (5, 15)
#: kernels of the causal conv per pass (forward, backward)
CONV_KERNELS = (1, 2)


def ssd_scan_flops(tokens: float, d: MambaDims) -> float:
    """Forward FLOPs of the SSD chunked scan over ``tokens`` tokens, all heads:
    2·T·(g·Q·N + n_h·p·(Q + 2·N)) (module docstring)."""
    return 2.0 * tokens * (d.groups * d.chunk * d.state + d.heads * d.head_dim * (d.chunk + 2 * d.state))


def ssd_scan_backward_flops(tokens: float, d: MambaDims) -> float:
    """Backward FLOPs of the scan: 2·forward + the recomputed C·Bᵀ and chunk states 2·T·(g·Q·N + n_h·p·N)."""
    recompute = 2.0 * tokens * (d.groups * d.chunk * d.state + d.heads * d.head_dim * d.state)
    return 2.0 * ssd_scan_flops(tokens, d) + recompute


def ssd_scan_bytes(tokens: float, d: MambaDims, b: int) -> float:
    """Forward HBM bytes of the scan, all heads (module docstring): inputs and output in ``b`` bytes, the chunk
    states written and read in fp32 and again in ``b`` bytes, the fp32 C·Bᵀ blocks written and read."""
    tensors = tokens * (3 * d.inner + 2 * d.groups * d.state + d.heads) * b
    states = tokens / d.chunk * d.heads * d.head_dim * d.state * (2 * FP32_BYTES + 2 * b)
    cb = 2.0 * tokens * d.chunk * d.groups * FP32_BYTES
    return tensors + states + cb


def conv1d_flops(tokens: float, d: MambaDims) -> float:
    """Depthwise causal conv over x, B, C: 2·k·(d_i + 2·g·N) per token (:func:`compute.depthwise_conv_flops`)."""
    return compute.depthwise_conv_flops(tokens, d.conv, d.conv_channels)


def mamba_projection_flops(tokens: float, hidden: int, d: MambaDims) -> float:
    """in_proj h → 2·d_i + 2·g·N + n_h and out_proj d_i → h: 2·T·h·(2·d_i + 2·g·N + n_h) + 2·T·d_i·h."""
    return compute.matmul_flops(tokens, hidden, d.in_proj_width) + compute.matmul_flops(tokens, d.inner, hidden)


def mamba_layer_flops(model: ModelConfig, tokens: float) -> tuple[float, float]:
    """(projections, scan + conv) forward FLOPs of one Mamba-2 mixer for ``tokens`` tokens (all heads)."""
    d = mamba_dims(model)
    return mamba_projection_flops(tokens, model.hidden_size, d), ssd_scan_flops(tokens, d) + conv1d_flops(tokens, d)


def mamba_ops(model: ModelConfig, dd: LayerDims) -> list[Op]:
    """Forward operators of one Mamba-2 layer on one rank (Megatron-Core ``MambaMixer`` training path,
    ``mamba_split_conv1d_scan_combined``): the pre-norm fused into in_proj, in_proj, the [s, b] → [b, s] copy
    of its output, the causal conv, the SSD scan (class ``gemm``: batched matmuls on the tensor cores, Dao & Gu
    2024 §6, priced on the device's matmul table; variant ``ssd_scan``: its bytes at the scan's own measured HBM
    share where the hardware states one, :mod:`estimator.inputs.ssd_scan`), the copy back, the gated RMSNorm,
    out_proj, the residual; under CP the re-layouts around its all-to-alls (:mod:`estimator.perf.mixer_cp`)."""
    d, h, b, t, tn = mamba_dims(model), model.hidden_size, dd.b, dd.tokens, dd.norm_tokens
    width, conv = d.in_proj_width / dd.tp, d.conv_channels / dd.tp
    share = d.heads / dd.tp / d.heads  # this rank's share of heads and groups
    scan_fw, scan_bw = ssd_scan_flops(t, d) * share, ssd_scan_backward_flops(t, d) * share
    scan_bytes = ssd_scan_bytes(t, d, b) * share
    conv_bytes = 2 * t * conv * b
    copy = where(dd.batch > 1, 2 * t * b, 0.0)  # per channel: the [s, b] <-> [b, s] copies (no-op at b = 1)
    relayout = mixer_cp_relayout_ops("mamba", t, width, d.inner / dd.tp, b, dd.cp)  # CP (estimator.perf.mixer_cp)
    return [*relayout,
        elementwise("input_norm", ("layernorm",), 2 * tn * h * b, bw_kernels=2),
        gemm("mamba_in_proj", ("mamba",), t, h, width, b),
        elementwise("mamba_layout", ("mamba",), copy * width, bw_bytes=copy * width),
        elementwise("mamba_conv1d", ("mamba",), conv_bytes, kernels=CONV_KERNELS[0], bw_kernels=CONV_KERNELS[1],
                    bw_bytes=(ELEMENTWISE_BACKWARD_BYTES + 1.0) * conv_bytes),
        Op("ssd_scan", "gemm", ("mamba",), scan_fw, scan_bytes, SSD_KERNELS[0], scan_bw, 2.0 * scan_bytes,
           SSD_KERNELS[1], variant="ssd_scan"),
        elementwise("mamba_out_layout", ("mamba",), copy * d.inner / dd.tp, bw_bytes=copy * d.inner / dd.tp),
        elementwise("mamba_gated_norm", ("mamba",), 2 * t * d.inner / dd.tp * b, bw_kernels=2),
        gemm("mamba_out_proj", ("mamba",), t, d.inner / dd.tp, h, b),
        elementwise("residual_mamba", ("residual",), (3 * b + 1) * tn * h),
    ]


def mamba_kernel_ops() -> Counter[str]:
    """Forward ops of one Mamba-2 mixer by kernel kind (:data:`estimator.perf.kernels.OP_KERNELS`), the
    operators of :func:`mamba_ops` without the pre-norm and the residual: 2 GEMMs, 3 pointwise (two layout
    copies, A = −exp(A_log)), the gated norm, the causal conv and the SSD scan."""
    return Counter({"GEMM": 2, "POINTWISE": 3, "NORM": 1, "CAUSAL_CONV": 1, "SSD_SCAN": 1})
