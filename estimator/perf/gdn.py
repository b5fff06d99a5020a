"""The Gated DeltaNet mixer's work on one rank per micro-batch (FLOPs, operators, kernels) and gated attention's
output gate's FLOPs (its operator: :func:`estimator.perf.operators.output_gate_op`; the shapes: :mod:`estimator.inputs.gdn`).

Shapes: n_k key heads of d_k, n_v value heads of d_v, conv kernel k, chunk C = 64 (Megatron-Core
``GatedDeltaNet``); T tokens of the micro-batch on the rank, t = tp (heads are split over TP). Megatron-Core
L2-normalises q and k, repeats them to the n_v value heads (``repeat_interleave``) and calls
flash-linear-attention's ``chunk_gated_delta_rule`` (fla-org/flash-linear-attention@bc3b101d
fla/ops/gated_delta_rule/chunk.py), so the rule runs over n_v heads of (d_k, d_v).

**Chunked delta rule**, per value head and token, forward (multiply-add = 2; whole C×C blocks, no causal
halving, as :func:`estimator.perf.mamba.ssd_scan_flops`), FLA's forward steps:

* ``chunk_gated_delta_rule_fwd_kkt_solve``: A = β·K·Kᵀ inside the chunk 2·C·d_k, and (I + A)⁻¹ by the triangular
  solve, C³/3 multiply-adds per chunk = (2/3)·C² per token;
* ``recompute_w_u_fwd``: w = A·(β·k) 2·C·d_k and u = A·(β·v) 2·C·d_v;
* ``chunk_gated_delta_rule_fwd_h``: the state pass v_new = u − w·S and S += kᵀ·v_new, 4·d_k·d_v;
* ``chunk_fwd_o``: o = q·S 2·d_k·d_v + (q·kᵀ, masked)·v_new 2·C·(d_k + d_v).

= T·n_v·(6·d_k·d_v + 2·C·(3·d_k + 2·d_v) + (2/3)·C²). Backward (``chunk_gated_delta_rule_bwd``): twice the
forward's products (the gradients of both factors) plus what it re-runs first: ``recompute_w_u_fwd``
2·C·(d_k + d_v) and ``chunk_gated_delta_rule_fwd_h`` 4·d_k·d_v per token and head.

Memory traffic of the rule's forward kernels, per token and value head in the compute dtype B unless fp32:
``chunk_local_cumsum`` g (fp32, read and written) 8; the zero fill of A, then kkt_solve reads k, g, β and
writes A; recompute_w_u reads k, v, β, A, g and writes w, u; fwd_h reads k, w, u, g and writes the chunk states
h (d_k·d_v per chunk, in k's dtype: ``k.new_empty``) and v_new; fwd_o reads q, k, v_new, h, g and writes o:
B·(7·d_k + 6·d_v + 3·C + 2 + 2·d_k·d_v/C) + 4·4 (the four g reads) + 8. Backward moves twice that.

**Kernels**: the rule 6 forward (cumsum, A's zero fill, kkt_solve, recompute_w_u, fwd_h, fwd_o) and 7 backward
(recompute_w_u, fwd_h, bwd_dv_local, bwd_dhu, bwd_dqkwg, prepare_wy_repr_bwd, the reverse cumsum); FLA's causal
conv 1 and 1 (fla/modules/conv/triton/ops.py ``causal_conv1d_fwd_kernel`` / ``causal_conv1d_bwd_kernel``).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from estimator.inputs.gdn import GdnDims, gdn_dims
from estimator.perf import compute
from estimator.perf.mixer_cp import MIXER_CP_CALLS, mixer_cp_relayout_ops
from estimator.perf.operators import ELEMENTWISE_BACKWARD_BYTES, FP32_BYTES, LayerDims, Op, elementwise, gemm

if TYPE_CHECKING:
    from estimator.config.schema import ModelConfig

#: kernels of the chunked delta rule per pass (forward, backward), see the module docstring
RULE_KERNELS = (6, 7)
#: kernels of FLA's causal conv per pass (forward, backward)
CONV_KERNELS = (1, 1)


def delta_rule_flops(tokens: float, d: GdnDims) -> float:
    """Forward FLOPs of the chunked delta rule over ``tokens`` tokens, all value heads:
    T·n_v·(6·d_k·d_v + 2·C·(3·d_k + 2·d_v) + (2/3)·C²) (module docstring)."""
    per_head = 6 * d.key_dim * d.value_dim + 2 * d.chunk * (3 * d.key_dim + 2 * d.value_dim) + 2 * d.chunk**2 / 3
    return tokens * d.value_heads * per_head


def delta_rule_backward_flops(tokens: float, d: GdnDims) -> float:
    """Backward FLOPs: 2·forward + the re-run w, u and states T·n_v·(2·C·(d_k + d_v) + 4·d_k·d_v)."""
    rerun = tokens * d.value_heads * (2 * d.chunk * (d.key_dim + d.value_dim) + 4 * d.key_dim * d.value_dim)
    return 2.0 * delta_rule_flops(tokens, d) + rerun


def delta_rule_bytes(tokens: float, d: GdnDims, b: int) -> float:
    """Forward HBM bytes of the rule's kernels, all value heads (module docstring):
    T·n_v·(B·(7·d_k + 6·d_v + 3·C + 2 + 2·d_k·d_v/C) + 24)."""
    per_head = b * (7 * d.key_dim + 6 * d.value_dim + 3 * d.chunk + 2 + 2 * d.key_dim * d.value_dim / d.chunk)
    return tokens * d.value_heads * (per_head + 6 * FP32_BYTES)


def gdn_conv_flops(tokens: float, d: GdnDims) -> float:
    """Depthwise causal conv over q, k, v: 2·k·(2·n_k·d_k + n_v·d_v) per token (:func:`compute.depthwise_conv_flops`)."""
    return compute.depthwise_conv_flops(tokens, d.conv, d.conv_channels)


def gdn_projection_flops(tokens: float, hidden: int, d: GdnDims) -> float:
    """in_proj h → 2·n_k·d_k + 2·n_v·d_v + 2·n_v and out_proj n_v·d_v → h."""
    return compute.matmul_flops(tokens, hidden, d.in_proj_width) + compute.matmul_flops(tokens, d.v_width, hidden)


def gdn_layer_flops(model: ModelConfig, tokens: float) -> tuple[float, float]:
    """(projections, rule + conv) forward FLOPs of one GDN mixer for ``tokens`` tokens (all heads)."""
    d = gdn_dims(model)
    return gdn_projection_flops(tokens, model.hidden_size, d), delta_rule_flops(tokens, d) + gdn_conv_flops(tokens, d)


def output_gate_flops(tokens: float, hidden: int, num_heads: int, head_dim: int) -> float:
    """The gate rows of gated attention's ``linear_qkv``: 2·T·h·a·d."""
    return compute.matmul_flops(tokens, hidden, num_heads * head_dim)


def gdn_ops(model: ModelConfig, dd: LayerDims) -> list[Op]:
    """Forward operators of one GDN mixer on one rank (Megatron-Core ``GatedDeltaNet.forward``): the pre-norm
    fused into in_proj, in_proj, the causal conv (+ SiLU), the L2 norm of q and k, their repeat to the value
    heads (n_v > n_k), the gates g = −exp(A_log)·softplus(α + dt_bias) and β = sigmoid(β), the chunked delta
    rule (class ``gemm``: tensor-core matmuls, priced on the device's matmul table), the gated RMSNorm and the
    copy back to [s, b], out_proj, the residual; under CP the re-layouts around its all-to-alls
    (:mod:`estimator.perf.mixer_cp`)."""
    d, h, b, t, tn = gdn_dims(model), model.hidden_size, dd.b, dd.tokens, dd.norm_tokens
    share = 1.0 / dd.tp  # this rank's share of the heads
    conv, qk, v, nv = d.conv_channels * share, d.qk_width * share, d.v_width * share, d.value_heads * share
    conv_bytes = 2 * t * conv * b
    repeat = 2 * t * 2 * nv * d.key_dim * b if d.value_heads > d.key_heads else 0.0
    rule_fw, rule_bw = delta_rule_flops(t, d) * share, delta_rule_backward_flops(t, d) * share
    rule_bytes = delta_rule_bytes(t, d, b) * share
    relayout = mixer_cp_relayout_ops("gdn", t, d.in_proj_width * share, v, b, dd.cp)  # CP (estimator.perf.mixer_cp)
    return [*relayout[:1],
        elementwise("input_norm", ("layernorm",), 2 * tn * h * b, bw_kernels=2),
        gemm("gdn_in_proj", ("gdn",), t, h, d.in_proj_width * share, b),
        elementwise("gdn_conv1d", ("gdn",), conv_bytes, kernels=CONV_KERNELS[0], bw_kernels=CONV_KERNELS[1],
                    bw_bytes=(ELEMENTWISE_BACKWARD_BYTES + 1.0) * conv_bytes),
        elementwise("gdn_qk_l2norm", ("gdn",), 2 * t * 2 * qk * b + t * 2 * qk / d.key_dim * FP32_BYTES,
                    bw_kernels=1),
        elementwise("gdn_qk_repeat", ("gdn",), repeat, kernels=2 if repeat else 0, bw_kernels=2 if repeat else 0),
        elementwise("gdn_gates", ("gdn",), t * nv * (2 * b + 2 * FP32_BYTES)),
        Op("gdn_delta_rule", "gemm", ("gdn",), rule_fw, rule_bytes, RULE_KERNELS[0], rule_bw, 2.0 * rule_bytes,
           RULE_KERNELS[1]),
        elementwise("gdn_gated_norm", ("gdn", "gdn_norm_out"), 3 * t * v * b, bw_kernels=2),
        elementwise("gdn_out_layout", ("gdn", "gdn_norm_out"), 2 * t * v * b),
        *relayout[1:],
        gemm("gdn_out_proj", ("gdn",), t, v, h, b),
        elementwise("residual_gdn", ("residual",), (3 * b + 1) * tn * h),
    ]


def gdn_norm_out_kernel_ops(cp: int) -> Counter[str]:
    """Forward ops of the recompute module ``gdn_norm_out`` (Megatron-Core: "the GatedDeltaNet output norm and
    HP-to-CP all-to-all"): the gated norm and the copy back, and under CP the all-to-all and its 2 re-layouts."""
    ops = Counter({"NORM": 1, "POINTWISE": 1})
    if cp > 1:
        (_, a2a_out), (_, copies_out) = MIXER_CP_CALLS["gdn"]
        ops.update({"COLLECTIVE": a2a_out, "POINTWISE": copies_out})
    return ops


def gdn_kernel_ops() -> Counter[str]:
    """Forward ops of one GDN mixer by kernel kind (:data:`estimator.perf.kernels.OP_KERNELS`), the operators of
    :func:`gdn_ops` without the pre-norm and the residual: 2 GEMMs, the causal conv, the L2 norm, the gates and
    the copy back (3 pointwise; the q/k repeat is left out), the gated norm and the delta rule."""
    return Counter({"GEMM": 2, "GDN_CONV": 1, "POINTWISE": 3, "NORM": 1, "GDN_RULE": 1})
