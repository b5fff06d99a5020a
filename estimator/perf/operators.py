"""Operators one rank runs per layer and micro-batch, with FLOPs, bytes moved and kernels (operator roofline).

Each :class:`Op` is one forward operator of a Megatron-style layer on one rank (TP/CP-local shapes)
and carries its backward: FLOPs, bytes read + written in HBM, and kernel counts per pass.
:mod:`estimator.perf.roofline` prices them. Shapes (``T`` = ``b·s/cp`` local tokens, ``T_n`` =
``T/tp`` with sequence parallelism else ``T``, ``B`` = bytes per element of the compute dtype):

* **GEMM** ``[M, K] @ [K, N]``: ``2·M·K·N`` FLOPs, ``(M·K + K·N + M·N)·B`` bytes; backward = the
  input- and weight-gradient GEMMs of the same size (2 kernels, 2× FLOPs and bytes; Narayanan et
  al. 2021 §5.1).
* **flash attention** (own class ``attention``): ``2·T·s·a·(d_qk + d_v)/tp`` FLOPs (no causal
  halving, the convention of :func:`compute.attention_core_flops` and of SimuMax's sdp factors),
  bytes Q + K + V + O; backward 2.5× the FLOPs (five GEMM-like products against two: Dao 2023,
  FlashAttention-2 §3.1; SimuMax ``dense_module.py`` ``bwd_grad_act_flops = 5·base``) and 2× the
  bytes, 2 kernels (``kernels.OP_KERNELS['FLASH']``).
* **element-wise** (class ``elementwise``; memory-bound, FLOPs not counted): bytes read + written;
  backward reads the output gradient and the saved input and writes the input gradient, 1.5× the
  forward bytes. Counted: input and post-attention norms, RoPE on q and k, unfused attention's
  fused scale-mask-softmax and dropout over ``b·(a/tp)·(s/cp)·s`` scores (+1 byte of mask per
  element) and the permute copy, bias-dropout-add residuals (+1 byte of mask), the MLP activation
  (GeLU reads ``F``, SwiGLU ``2F`` per token and writes ``F``), MoE router softmax + top-k and
  token permute / unpermute (``k`` copies of each token), the embedding lookup (+ learned position
  add, + dropout) whose backward writes the table's gradient, the final norm and the
  vocab-parallel cross entropy (reads the logits, writes and re-reads fp32 values: ``(B + 8)`` bytes
  per logit forward, ``(4 + B)`` backward).

FLOPs of the GEMM and attention operators add up to :mod:`estimator.perf.layers`' per-layer count
(every projection ``/tp``, routed experts ``k·T`` tokens over the local experts × the load
imbalance). Modules (``Op.modules``) are Megatron's recompute-module names; selective recompute
re-runs the operators of the listed modules.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from estimator.inputs.derive import attended_keys
from estimator.perf import compute, expert_bias
from estimator.shared.arrays import ARRAY, as_float, maximum, where

#: the low-precision GEMM plan: estimator.perf.lowp.LowpGemms, which imports this module (not imported here, even
#: for type checking: no import cycle)
LowpGemms = Any

if TYPE_CHECKING:
    from estimator.config.schema import ModelConfig
    from estimator.inputs.adapters import Adapter

#: device operator classes the roofline prices (the analyzer's kernel-class names for the same work)
OP_CLASSES = ("gemm", "attention", "elementwise", "optimizer")
#: element-wise backward bytes over forward bytes (read dY + saved X, write dX)
ELEMENTWISE_BACKWARD_BYTES = 1.5
#: flash-attention backward FLOPs over forward (FlashAttention-2 §3.1)
FLASH_BACKWARD_FLOPS = 2.5
#: fused-attention efficiency at head dim d over that at head dim 128, (forward, backward), for the presets' flat
#: attention factors, which are measured at head dim 128 (every measured shape of SimuMax's
#: ``b200_bf16_ceperm.json`` ``sdp_fwd`` / ``sdp_bwd`` has qk_head_dim 128, or 192 for MLA): cuDNN on H100 SXM5,
#: sequence 4k, FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608) Fig. 5 forward without causal mask, 408 vs
#: 609 TFLOP/s, and Fig. 6 backward, 417 vs 499 TFLOP/s. Hopper's ratio carried to every preset (assumption:
#: no Blackwell figure by head dim is published); head dims not listed keep the measured factor.
HEAD_DIM_EFFICIENCY = {64: (408.0 / 609.0, 417.0 / 499.0)}
#: Transformer Engine FP8 attention's cast kernels per pass (FusedAttnFunc, TE@d0067d0d
#: ``pytorch/attention/dot_product_attention/backends.py``): forward ``combine_and_quantize`` of Q, K, V and the
#: output's dequantize, backward dO's quantize and ``combine_and_dequantize`` of dQ, dK, dV
FP8_ATTENTION_CASTS = 2.0

#: kernels of the output gate ``x * torch.sigmoid(gate.float())`` cast back (forward: cast, sigmoid, multiply,
#: cast; its backward: the multiply's two gradients and the sigmoid's)
OUTPUT_GATE_KERNELS = (4, 3)
#: bytes of a fp32 element (fp32 temporaries of element-wise operators, scan states, norm statistics)
FP32_BYTES = 4

@dataclass(frozen=True)
class Op:
    """One forward operator and its backward, ``count`` identical copies (e.g. local experts)."""

    name: str
    op_class: str
    modules: tuple[str, ...]
    flops: float
    bytes: float
    kernels: float
    bw_flops: float
    bw_bytes: float
    bw_kernels: float
    count: float = 1.0
    variant: str = ""  # "grouped": a MoE layer's routed-expert GEMM; "permute": its token (un)permute;
    # "@fp8" / "@fp4" suffix: a GEMM on the low-precision tensor cores (estimator.perf.lowp)
    shape: tuple[float, float, float] | None = None  # a GEMM's (m, k, n)
    peak_scale: float = 1.0  # its peak over the compute dtype's (the low-precision recipe's, estimator.perf.lowp)
    grouped_tokens: float = 0.0  # a grouped GEMM priced by tokens per expert: each expert GEMM's M (0: flat factor)
    exps: float = 0.0  # flash attention: softmax exponentials on the SFU per pass (0: not priced apart; sfu_exponentials)


def gemm(name: str, modules: tuple[str, ...], m: float, k: float, n: float, b: int, count: float = 1.0,
         variant: str = "") -> Op:
    """``[m, k] @ [k, n]`` in a ``b``-byte dtype; backward = two GEMMs of the same size."""
    flops = compute.matmul_flops(m, k, n)
    moved = (m * k + k * n + m * n) * b
    return Op(name, "gemm", modules, flops, moved, 1.0, 2.0 * flops, 2.0 * moved, 2.0, count, variant, (m, k, n))


def elementwise(name: str, modules: tuple[str, ...], moved: float, kernels: float = 1.0,
                bw_kernels: float = 1.0, bw_bytes: float | None = None, variant: str = "") -> Op:
    """A memory-bound operator moving ``moved`` bytes forward (backward 1.5× unless given)."""
    back = ELEMENTWISE_BACKWARD_BYTES * moved if bw_bytes is None else bw_bytes
    return Op(name, "elementwise", modules, 0.0, moved, kernels, 0.0, back, bw_kernels, variant=variant)


@dataclass(frozen=True)
class LayerDims:
    """Per-rank shapes of one layer (see the module docstring)."""

    tokens: float  # T = b·s/cp
    norm_tokens: float  # T_n
    batch: float  # b
    seq: int  # s (keys per query)
    tp: int
    cp: int
    b: int  # bytes per element, compute dtype
    flash: bool
    ring_blocks: int  # core-attention kernels per layer with a CP ring (cp), else 1
    imbalance: float  # busiest EP rank's routed load / mean
    lowp: LowpGemms | None = None  # the linear layers' low-precision recipe (estimator.perf.lowp)
    adapter: Adapter | None = None  # adapter fine-tuning (estimator.inputs.adapters)
    grouped_activation: bool = False  # the local experts' activation as one kernel (options.grouped_expert_activation)
    grouped_by_tokens: bool = False  # grouped GEMMs priced by tokens per expert (options.grouped_gemm_by_tokens)
    grouped_fused: bool = False  # the experts' casts and GEMMs as TE's op fuser runs them (fused_grouped_experts)
    head_dim_eff: bool = False  # flash attention's efficiency by head dim (options.attention_head_dim, HEAD_DIM_EFFICIENCY)
    fp8_attention: float = 0.0  # TE FP8 fused attention: FP8 peak / compute peak (0: off; precision.fp8_attention)
    main_grad_add_bytes: float = 0.0  # bytes per weight of the unfused main_grad add (0: none, main_grad_add_op)
    etp: int | None = None  # expert TP size (expert_tokens; options.grouped_gemm_by_tokens; None: tp, as before)
    sfu_exps: bool = False  # flash attention carries its softmax exponentials (options.sfu_softmax, sfu_exponentials)
    fsdp_copies: tuple[float, float, float] = (0.0, 0.0, 0.0)  # FSDP2 copies per weight element (fsdp2_copy_op)
    fsdp_root_copies: tuple[float, float, float] = (0.0, 0.0, 0.0)  # the same for the root group (embedding, head)
    eager: tuple[bool, bool] = (False, False)  # (pointwise ops, RMSNorm) as PyTorch eager kernels (estimator.perf.eager)
    expert_bias: bool = False  # the experts' fc2 bias weighted by the probabilities (estimator.perf.expert_bias)


def attention_ops(model: ModelConfig, d: LayerDims) -> list[Op]:
    """Input norm, projections (+ RoPE), core attention, output projection and residual."""
    h, a, b, t, tn = model.hidden_size, model.num_attention_heads, d.b, d.tokens, d.norm_tokens
    ops = [elementwise("input_norm", ("layernorm",), 2 * tn * h * b, bw_kernels=2)]
    if model.attention == "mla":
        assert model.kv_lora_rank and model.qk_head_dim and model.v_head_dim
        rope = model.qk_rope_head_dim or 0
        d_qk, d_v, n_kv = model.qk_head_dim + rope, model.v_head_dim, a
        r_kv, q_dim = model.kv_lora_rank, a * d_qk
        if model.q_lora_rank:
            ops += [gemm("q_down", ("attn_proj",), t, h, model.q_lora_rank / d.tp, b),
                    elementwise("q_norm", ("attn_proj",), 2 * t * model.q_lora_rank * b, bw_kernels=2),
                    gemm("q_up", ("attn_proj", "mla_up_proj"), t, model.q_lora_rank, q_dim / d.tp, b)]
        else:
            ops.append(gemm("q_proj", ("attn_proj",), t, h, q_dim / d.tp, b))
        ops += [gemm("kv_down", ("attn_proj",), t, h, (r_kv + rope) / d.tp, b),
                elementwise("kv_norm", ("attn_proj",), 2 * t * r_kv * b, bw_kernels=2),
                gemm("kv_up", ("attn_proj", "mla_up_proj"), t, r_kv, a * (model.qk_head_dim + d_v) / d.tp, b)]
    else:
        d_qk = d_v = model.head_size
        n_kv = model.kv_heads
        gate = a if model.attention_output_gate else 0  # gated attention: a·d gate rows in linear_qkv
        ops.append(gemm("qkv", ("attn_proj",), t, h, (a + 2 * n_kv + gate) * d_qk / d.tp, b))
        if model.qk_norm:  # q_norm and k_norm: read and write q and k (Qwen3, Megatron --qk-layernorm)
            ops += [elementwise("q_norm", ("attn_proj",), 2 * t * a * d_qk / d.tp * b, bw_kernels=2),
                    elementwise("k_norm", ("attn_proj",), 2 * t * n_kv * d_qk / d.tp * b, bw_kernels=2)]
    if model.position_embedding == "rope" or model.attention == "mla":
        ops += [elementwise("rope_q", ("attn_proj",), 2 * t * a * d_qk / d.tp * b),
                elementwise("rope_k", ("attn_proj",), 2 * t * n_kv * d_qk / d.tp * b)]
    ops += core_attention_ops(d, a, n_kv, d_qk, d_v, attended_keys(model, d.seq))
    if model.attention_output_gate and model.attention != "mla":
        ops.append(output_gate_op(t, a * d_v / d.tp, b))
    ops.append(gemm("out_proj", ("attn_proj",), t, a * d_v / d.tp, h, b))
    if model.post_norms:  # Gemma's post_attention_layernorm on the attention output
        ops.append(elementwise("attn_out_norm", ("post_norm",), 2 * tn * h * b, bw_kernels=2))
    ops.append(elementwise("residual_attn", ("residual",), (3 * b + 1) * tn * h))
    return ops


def output_gate_op(tokens: float, width_per_rank: float, b: int) -> Op:
    """``x * torch.sigmoid(gate.float())`` cast back, over the a·d/t gated outputs of ``tokens`` tokens, unfused
    (Megatron-Core ``_apply_output_gate``): the gate cast to fp32 (B + 4), the sigmoid (4 + 4), the multiply
    (B + 4 + 4), the cast back (4 + B) = 3·B + 24 bytes per element; its backward reads the saved x and
    sigmoid and the output gradient and writes both input gradients."""
    n = tokens * width_per_rank
    return elementwise("output_gate", ("attn_proj",), n * (3 * b + 6 * FP32_BYTES), kernels=OUTPUT_GATE_KERNELS[0],
                       bw_kernels=OUTPUT_GATE_KERNELS[1], bw_bytes=n * (3 * b + 2 * FP32_BYTES + b))


def core_attention_ops(d: LayerDims, a: int, n_kv: int, d_qk: int, d_v: int, keys: int | None = None) -> list[Op]:
    """Flash attention (one ``attention`` operator) over ``keys`` keys per query (a sliding window
    skips the blocks outside it: :func:`estimator.inputs.derive.attended_keys`; default ``d.seq``),
    or unfused: QKᵀ ``baddbmm``, scale-mask-softmax, dropout, ``bmm`` PV and the permute copy
    (Megatron ``CoreAttention``; the whole s×s score matrix, a window only masks it)."""
    t, b, heads = d.tokens, d.b, a / d.tp
    q, o = t * heads * d_qk * b, t * heads * d_v * b
    kv = d.batch * d.seq * n_kv / d.tp * (d_qk + d_v) * b
    if d.flash:
        flops = compute.attention_core_flops(t, d.seq if keys is None else keys, a, d_qk, d_v) / d.tp
        k = as_float(d.ring_blocks)
        variant = f"hd{d_qk}" if d.head_dim_eff and d_qk == d_v and d_qk in HEAD_DIM_EFFICIENCY else ""
        flash = Op("flash_attention", "attention", ("core_attn",), flops, q + kv + o, k,
                   FLASH_BACKWARD_FLOPS * flops, 2.0 * (q + kv + o), 2.0 * k, variant=variant,
                   exps=sfu_exponentials(flops, d_qk, d_v) if d.sfu_exps else 0.0)
        return fp8_attention_ops(flash, (q + kv + o) / b, b, d.fp8_attention) if d.fp8_attention else [flash]
    scores = d.batch * heads * (t / d.batch) * d.seq  # b·(a/tp)·(s/cp)·s
    qk = Op("attn_scores", "gemm", ("core_attn",), 2.0 * scores * d_qk, q + kv / 2 + scores * b, 1.0,
            4.0 * scores * d_qk, 2.0 * (q + kv / 2 + scores * b), 2.0)
    pv = Op("attn_values", "gemm", ("core_attn",), 2.0 * scores * d_v, scores * b + kv / 2 + o, 1.0,
            4.0 * scores * d_v, 2.0 * (scores * b + kv / 2 + o), 2.0)
    return [
        qk,
        elementwise("softmax", ("core_attn",), 2 * scores * b),
        elementwise("attn_dropout", ("core_attn",), (2 * b + 1) * scores),
        pv,
        elementwise("attn_permute", ("core_attn",), 2 * o),
    ]


def sfu_exponentials(flops: float, d_qk: int, d_v: int) -> float:
    """Softmax exponentials of one flash-attention pass whose score and value GEMMs count ``flops``.

    ``flops = 2·T·keys·a·(d_qk + d_v)`` counts every key of the no-causal-halving convention
    (:func:`estimator.inputs.derive.attended_keys`: twice the keys a causal or sliding-window query
    really sees), so the kernel exponentiates ``T·keys·a/2 = flops / (4·(d_qk + d_v))`` scores: one
    ``exp`` per visited score in the forward and one again in the backward, which recomputes
    ``P = exp(S − LSE)`` instead of reading it (Dao 2023, FlashAttention-2 Algorithm 2)."""
    return flops / (4.0 * (d_qk + d_v))


def fp8_attention_ops(flash: Op, elements: float, b: int, peak_scale: float) -> list[Op]:
    """Transformer Engine's FP8 fused attention (cuDNN; Megatron-Core ``--fp8-dot-product-attention``): the
    kernel at the FP8 peak (``peak_scale`` = FP8 peak / compute peak, the attention efficiency of the compute
    dtype: assumption, no FP8 attention efficiency is published for the presets) reading and writing 1 byte
    per element of Q, K, V, O (forward) and dO, dQ, dK, dV (backward) instead of ``b``, and its casts
    (:data:`FP8_ATTENTION_CASTS` kernels per pass), each element read in ``b`` bytes and written in 1 (or the
    reverse): ``(b + 1)·elements`` bytes per pass, ``elements`` = those of Q, K, V and O."""
    low = replace(flash, bytes=flash.bytes / b, bw_bytes=flash.bw_bytes / b, variant=f"{flash.variant}@fp8",
                  peak_scale=peak_scale)
    moved = (b + 1) * elements
    cast = elementwise("attn_fp8_cast", flash.modules, moved, FP8_ATTENTION_CASTS, FP8_ATTENTION_CASTS, moved)
    return [cast, low]


def mlp_ops(model: ModelConfig, d: LayerDims, moe: bool, local_experts: int) -> list[Op]:
    """Post-attention norm, the dense MLP or the MoE block, and the residual."""
    h, b, t, tn = model.hidden_size, d.b, d.tokens, d.norm_tokens
    ops = [elementwise("post_attn_norm", ("layernorm",), 2 * tn * h * b, bw_kernels=2)]
    if not moe:
        ops += _ffn_ops("mlp", ("mlp",), ("mlp",), h, model.dense_ffn / d.tp, t, b, model.activation)
    else:
        e, k, w = model.num_experts, model.moe_topk, model.moe_latent_size or h
        ops += [gemm("router", ("moe",), t, h, e / d.tp, b),
                elementwise("router_softmax", ("moe",), 2 * tn * e * 4),
                elementwise("router_topk", ("moe",), tn * e * 4 + 2 * tn * k * 4)]
        if model.moe_latent_size:  # h -> L before the dispatch, L -> h after the combine (duplicated over TP)
            ops += [gemm("latent_fc1", ("moe",), tn, h, w, b), gemm("latent_fc2", ("moe",), tn, w, h, b)]
        ops += [elementwise("permute", ("moe",), (1 + k) * tn * w * b, variant="permute"),
                elementwise("unpermute", ("moe",), (1 + k) * tn * w * b, variant="permute")]
        etp = d.tp if d.etp is None else d.etp
        routed = k * expert_tokens(t, d.tp, etp) * d.imbalance  # routed tokens on the rank
        per_expert = routed / maximum(1, local_experts)
        experts = _ffn_ops("expert", ("moe",), ("moe", "moe_act"), w, model.expert_ffn / etp, per_expert, b,
                           model.activation, count=as_float(local_experts), variant="grouped")
        ops += grouped_experts(experts, d, per_expert)
        if d.expert_bias:  # Megatron-Core adds the fc2 bias weighted by the probabilities, per local expert
            fw_kernels, bw_kernels = expert_bias.kernels(local_experts)
            ops.append(elementwise("expert_bias", ("moe",), routed * w * expert_bias.forward_bytes(b), fw_kernels,
                                   bw_kernels, routed * w * expert_bias.backward_bytes(b)))
        if model.shared_ffn_total:
            ops += _ffn_ops("shared", ("moe", "shared_experts"), ("moe", "shared_experts"), h,
                            model.shared_ffn_total / d.tp, t, b, model.activation)
    if model.post_norms:  # Gemma's post_feedforward_layernorm on the MLP output
        ops.append(elementwise("mlp_out_norm", ("post_norm",), 2 * tn * h * b, bw_kernels=2))
    ops.append(elementwise("residual_mlp", ("residual",), (3 * b + 1) * tn * h))
    return ops


def expert_tokens(tokens: float, tp: int, etp: int) -> float:
    """Tokens one rank's routed experts work on before routing: ``T·etp/tp``.

    MoE parallel folding (Megatron-Core): with TP the MoE layer runs under sequence parallelism (Megatron-LM
    requires it for MoE with TP), so a rank routes its ``T/tp`` sequence shard; an expert-TP group of ``etp``
    ranks gathers its members' shards and splits each expert's FFN ``etp`` ways (``expert_ffn/etp``). With
    ``etp = tp`` this is ``T`` tokens on ``ffn/tp``; with ``etp = 1`` ``T/tp`` tokens on the whole FFN — the
    same FLOPs, other GEMM shapes (tokens per expert, what the grouped-GEMM table reads). (Megatron-Core
    ``MoEAlltoAllTokenDispatcher``: the dispatch runs over the EP group of the SP-local tokens, then an
    all-gather over the expert-TP group; NVIDIA/Megatron-LM@d98e8a64dd ``moe/token_dispatcher.py``.)"""
    return tokens * (etp / tp)


def grouped_experts(experts: list[Op], d: LayerDims, per_expert: float) -> list[Op]:
    """The routed experts' fc1, activation, fc2 as Megatron-Core's ``TEGroupedMLP`` runs them.

    ``d.grouped_activation``: the activation is one kernel over the ``E_local·T_e`` permuted tokens of
    all local experts (``count`` copies of ``bytes`` become one operator of ``count·bytes``, one kernel per
    pass): ``TEGroupedMLP.forward`` applies ``bias_act_func`` (``weighted_bias_swiglu_impl`` /
    ``weighted_bias_quick_geglu_impl``, one fused kernel) to the whole fc1 output of the grouped linear
    (NVIDIA/Megatron-LM@d98e8a64dd ``megatron/core/transformer/moe/experts.py``).
    ``d.grouped_by_tokens``: each grouped GEMM carries ``T_e`` = ``per_expert`` tokens, the ``M`` of
    every expert's GEMM, which the roofline's efficiency table by tokens per expert reads
    (:func:`estimator.perf.roofline.kernel_group_s`). Both off: ``experts`` unchanged."""
    out = []
    for op in experts:
        if op.op_class == "gemm" and d.grouped_by_tokens:
            op = replace(op, grouped_tokens=per_expert)
        elif op.op_class == "elementwise" and d.grouped_activation:
            op = replace(op, bytes=op.count * op.bytes, bw_bytes=op.count * op.bw_bytes, count=1.0)
        out.append(op)
    return out


#: linear recipes whose grouped quantization TE's op fuser runs as one ``group_quantize`` (None: BF16)
GROUPED_TENSOR_RECIPES = frozenset({None, "mxfp8", "nvfp4", "tensorwise"})


def fused_grouped_experts(ops: list[Op], d: LayerDims) -> list[Op]:
    """The routed experts' GEMMs and their casts (``count`` = local experts) as one operator each when
    ``d.grouped_fused``: ``count`` copies of FLOPs and bytes in one kernel group of the operator's own kernels
    per pass (one grouped GEMM forward, its dgrad and wgrad backward; one cast per tensor role).

    Megatron-Core's ``TEGroupedMLP`` with ``use_transformer_engine_op_fuser`` builds
    ``te.pytorch.ops.Sequential(GroupedLinear, activation, GroupedLinear)`` (NVIDIA/Megatron-LM@d98e8a64dd
    ``moe/experts.py``); TE's op-fuser grouped-tensor path quantizes every expert's input, weight and
    gradient with one ``tex.group_quantize`` and runs one ``general_grouped_gemm_for_grouped_tensor``
    (``nvte_grouped_gemm_with_discrete_inputA``) for MXFP8 / NVFP4 on Blackwell, FP8 current scaling and
    BF16; delayed scaling and FP8 block scaling fall back to per-expert split quantization
    (NVIDIA/TransformerEngine@d0067d0d ``pytorch/ops/basic/grouped_linear.py``
    ``is_op_fuser_grouped_tensor_path_supported``): the caller sets ``d.grouped_fused`` for
    :data:`GROUPED_TENSOR_RECIPES` only. Off: ``ops`` unchanged."""
    if not d.grouped_fused:
        return ops
    out = []
    for op in ops:
        grouped = op.variant.startswith("grouped") or (op.variant == "quantize" and op.name.startswith("expert_"))
        if grouped:
            c = op.count
            op = replace(op, flops=c * op.flops, bytes=c * op.bytes, bw_flops=c * op.bw_flops, bw_bytes=c * op.bw_bytes,
                         count=1.0)
        out.append(op)
    return out


def _ffn_ops(name: str, modules: tuple[str, ...], act_modules: tuple[str, ...], h: int, ffn: float, tokens: float,
             b: int, activation: str, count: float = 1.0, variant: str = "") -> list[Op]:
    """fc1 (gate and up fused for gated activations), activation, fc2 on ``tokens`` tokens (``variant``
    of the two GEMMs: ``grouped`` for routed experts)."""
    gated = compute.MLP_MATMULS[activation] == 3
    width = (2 if gated else 1) * ffn
    act = elementwise(f"{name}_activation", act_modules, (width + ffn) * tokens * b)
    return [gemm(f"{name}_fc1", modules, tokens, h, width, b, count, variant),
            Op(act.name, act.op_class, act.modules, 0.0, act.bytes, 1.0, 0.0, act.bw_bytes, 1.0, count),
            gemm(f"{name}_fc2", modules, tokens, ffn, h, b, count, variant)]


def embedding_ops(model: ModelConfig, d: LayerDims, b_grad: int) -> list[Op]:
    """Word lookup (backward: the table's gradient, ``V/tp·h`` accumulated in ``b_grad`` bytes), learned
    position lookup and add, embedding dropout (first stage, per micro-batch)."""
    h, b, t = model.hidden_size, d.b, d.tokens
    table = model.vocab / d.tp * h * b_grad
    ops = [elementwise("embedding", (), 2 * t * h * b, bw_bytes=t * h * b + 2 * table)]
    if model.position_embedding == "learned":
        ops.append(elementwise("position_add", (), 4 * t * h * b, kernels=2))
    ops.append(elementwise("embedding_dropout", (), (2 * b + 1) * t * h))
    return ops


def head_ops(model: ModelConfig, d: LayerDims) -> list[Op]:
    """Final norm, logits GEMM ``[T, h] @ [h, V/tp]`` and the vocab-parallel cross entropy (last stage)."""
    h, b, t = model.hidden_size, d.b, d.tokens
    logits = t * model.vocab / d.tp
    return [elementwise("final_norm", (), 2 * d.norm_tokens * h * b, bw_kernels=2),
            gemm("logits", (), t, h, model.vocab / d.tp, b),
            elementwise("cross_entropy", (), (b + 8) * logits, kernels=6, bw_kernels=2, bw_bytes=(4 + b) * logits)]


def mtp_extra_ops(model: ModelConfig, d: LayerDims) -> list[Op]:
    """DeepSeek MTP module beyond its transformer layer: two norms, concat, projection ``2h → h`` and a
    second head."""
    h, b, t = model.hidden_size, d.b, d.tokens
    return [elementwise("mtp_norms", (), 4 * t * h * b, kernels=2, bw_kernels=4),
            elementwise("mtp_concat", (), 4 * t * h * b),
            gemm("mtp_proj", (), t, 2 * h / d.tp, h, b), *head_ops(model, d)]


def weight_elements(ops: list[Op]) -> float:
    """Weight elements of the GEMMs in ``ops`` on this rank: ``k·n`` per GEMM and copy (``count``), and per
    expert of a GEMM the op fuser runs over all local experts (:func:`fused_grouped_experts` keeps the
    per-expert shape with the experts' FLOPs: ``flops / (2·m·k·n)`` experts)."""
    total = 0.0
    for op in ops:
        if op.op_class != "gemm" or op.shape is None:
            continue
        m, k, n = op.shape
        each = compute.matmul_flops(m, k, n)
        if type(op.count) is ARRAY or op.count != 1.0:
            copies = op.count
        else:  # (a fused GEMM, or one expert: flops / each = 1 exactly)
            copies = where(each > 0, op.flops / maximum(each, 1e-300), 1.0)
        total = total + k * n * copies
    return total


def main_grad_add_op(ops: list[Op], bytes_per_weight: float) -> Op:
    """Megatron's ``param.main_grad.add_(param.grad.data)`` after each micro-batch's backward when the
    weight gradient is not accumulated into ``main_grad`` by the GEMM (``--no-gradient-accumulation-fusion``:
    the wgrad GEMM returns the gradient in the params dtype and the DDP backward hook adds it,
    NVIDIA/Megatron-LM megatron/core/distributed/distributed_data_parallel.py ``_make_backward_post_hook``).
    Per weight element of the GEMMs in ``ops`` (``k·n`` per GEMM and copy) it reads ``main_grad`` and the
    gradient and writes ``main_grad``: ``bytes_per_weight = 2·B_g + B``; one kernel per weight; backward only
    (not recomputed)."""
    kernels = sum(op.count for op in ops if op.op_class == "gemm" and op.shape is not None)
    return Op("main_grad_add", "elementwise", (), 0.0, 0.0, 0.0, 0.0, weight_elements(ops) * bytes_per_weight, kernels)


#: the variant of FSDP2's copies (:func:`fsdp2_copy_op`): in a layer's passes, never recomputed
FSDP_COPY = "fsdp_copy"


def fsdp2_copy_op(elements: float, copy_bytes: tuple[float, float, float]) -> Op:
    """FSDP2's copies on the compute stream around one group's ``elements`` weight elements (its TP / EP
    slice) per micro-batch, ``copy_bytes`` = (forward copy-out, backward copy-out, backward copy-in) bytes
    per element:

    * **all-gather copy-out** (``foreach_all_gather_copy_out``, ``FSDPParamGroup.wait_for_unshard`` in the
      pre-forward and pre-backward hooks, on the current stream): reads the gathered buffer and writes each
      unsharded parameter, ``2·B_ag`` (``B_ag``: the all-gather dtype's bytes); in backward only when the
      group was resharded after forward (a re-gather);
    * **reduce-scatter copy-in** (``foreach_reduce_scatter_copy_in``, ``torch._chunk_cat`` of the unsharded
      gradients into the reduce-scatter input in the reduce dtype, ``B + B_r``): on the current stream, or on
      the reduce-scatter stream with the current stream waiting for it (older torch): on the compute path
      either way.

    One kernel per copy (pytorch/pytorch@002a76fb ``torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py``,
    ``_fsdp_collectives.py``). Variant :data:`FSDP_COPY`: not re-run by activation recompute (the
    parameters are unsharded before the recomputed forward)."""
    fwd, regather, copy_in = copy_bytes
    fw_kernels, bw_kernels = fsdp2_copy_kernels(copy_bytes)
    return Op("fsdp_copies", "elementwise", (), 0.0, elements * fwd, fw_kernels, 0.0,
              elements * (regather + copy_in), bw_kernels, variant=FSDP_COPY)


def fsdp2_copy_kernels(copy_bytes: tuple[float, float, float]) -> tuple[float, float]:
    """(forward, backward) kernels of FSDP2's copies around one group per micro-batch (:func:`fsdp2_copy_op`):
    one per copy that moves bytes, ``copy_bytes`` = (forward copy-out, backward copy-out, backward copy-in)
    bytes per element. Also the copies' host launches (:func:`estimator.perf.roofline.fsdp2_copy_launches`)."""
    fwd, regather, copy_in = copy_bytes
    return (1.0 if fwd else 0.0), (1.0 if regather else 0.0) + (1.0 if copy_in else 0.0)


def optimizer_ops(params_local: float, bytes_per_param: float, grad_bytes: int) -> list[Op]:
    """One optimizer step over ``params_local`` parameters of this rank's shard: Adam reads and writes
    ``bytes_per_param`` (master params, grads, both moments, the low-precision copy), and the
    grad-norm + clipping pass reads the grads twice and writes them once (per step, no backward)."""
    return [Op("adam", "optimizer", (), 0.0, params_local * bytes_per_param, 1.0, 0.0, 0.0, 0.0),
            Op("grad_norm_clip", "optimizer", (), 0.0, 3.0 * params_local * grad_bytes, 2.0, 0.0, 0.0, 0.0)]
