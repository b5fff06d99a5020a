"""Activation memory per layer and micro-batch (bytes), generalised from Korthikanti et al. 2022.

Korthikanti et al. 2022 (MLSys'23) Table 2: a GPT layer stores s·b·h·(34 + 5·a·s/h) bytes with
16-bit activations and 1-byte dropout masks: attention 11·sbh + 5·a·s²·b, MLP 19·sbh (F = 4h),
two LayerNorm inputs 4·sbh. With TP t the 24·sbh inside the attention and MLP blocks are /t; the
other 10·sbh are /t only with sequence parallelism (SP). Generalised here to GQA (K, V with g
heads), MLA (memory-accounting facts §4.3), SwiGLU, MoE (router, routed top-k tokens, shared
experts), context parallelism (tokens /cp), flash attention (no s² scores; fp32 softmax stats
kept) and recompute (none / selective modules / full = layer input only).

Symbols: T = s·b/cp tokens on the rank, B = compute bytes, t = tp, r = tp with SP else 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from estimator.inputs.derive import kv_dim, layer_blocks, layer_kind, sequence_shard
from estimator.inputs.gdn import gdn_dims
from estimator.inputs.hybrid import mamba_dims
from estimator.inputs.params import gated_mlp
from estimator.inputs.profiles import megatron_core_layers, profile_of, resolved_bytes
from estimator.inputs.recipes import stored_recipe
from estimator.memory import sac
from estimator.shared.arrays import where
from estimator.shared.memo import derived

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig, RecomputeMode

#: bytes per element of a dropout mask (Korthikanti: "sbh" per mask)
DROPOUT_MASK_BYTES = 1
#: bytes per attention-score element without flash attention at 16-bit compute: softmax output 2 +
#: dropout mask 1 + dropout output 2 (Korthikanti's 5·a·s²·b); see ``score_bytes_per_element``
SCORE_BYTES = 5
#: fp32 softmax statistics (log-sum-exp) kept by flash attention per head and token
SOFTMAX_STATS_BYTES = 4
#: router activations per token and expert: probabilities 2 B + int64 routing map 8 B (facts §4.3)
ROUTER_BYTES_PER_EXPERT = 2 + 8
#: bytes per routing probability the experts' weighted activation keeps (fp32: the router dtype the Megatron-Bridge
#: recipes and Megatron-LM's MoE tests set, ``moe_router_dtype: fp32``; bf16 would halve a term below 0.1 %)
ROUTING_PROB_BYTES = 4
#: default module recomputed by ``selective`` when ``recompute.modules`` is empty (Megatron default)
DEFAULT_SELECTIVE = ("core_attn",)
#: fp32 reciprocal standard deviation the gated RMSNorm keeps per token and group (mamba_ssm layernorm_gated)
RSTD_BYTES = 4
#: bytes per element of a quantized FP8 tensor (E4M3 / E5M2; per-tensor scales are negligible)
FP8_BYTES = 1


@dataclass(frozen=True)
class _Shape:
    tokens: float  # T = s·b/cp
    seq: int  # full s (keys seen by each query)
    t: int
    r: int
    b_c: int


def _shape(cfg: EstimatorConfig) -> _Shape:
    """The symbols of the module docstring, read once per config instance (:mod:`estimator.shared.memo`)."""
    return derived(cfg, "activation_shape", lambda: _read_shape(cfg))


def _read_shape(cfg: EstimatorConfig) -> _Shape:
    tr, p = cfg.train, cfg.parallel
    return _Shape(
        tokens=tr.seq_length * tr.micro_batch_size / p.cp,
        seq=tr.seq_length,
        t=p.tp,
        r=sequence_shard(cfg),
        b_c=resolved_bytes(cfg).compute,
    )


def recomputed_modules(cfg: EstimatorConfig, mode: RecomputeMode) -> frozenset[str]:
    """Modules whose activations are recomputed (not stored) under ``mode``."""
    if mode != "selective":
        return frozenset()
    return frozenset(cfg.recompute.modules or DEFAULT_SELECTIVE)


def te_fp8_saved_inputs(cfg: EstimatorConfig) -> bool:
    """True when Transformer Engine linears run in FP8 (``precision.fp8_linear``, profile
    ``megatron``) and so save their *quantized* input for backward.

    NVIDIA/TransformerEngine@v2.9 transformer_engine/pytorch/module/linear.py ``_Linear.forward``:
    with FP8 the input is cast by the module's own ``input_quantizer`` and that FP8 tensor is the
    saved ``inputmat`` (row-wise data dropped for the wgrad GEMM, ``update_usage(rowwise_usage=False,
    columnwise_usage=True)``, or only row-wise kept when a sequence-parallel input is re-gathered in
    backward): one byte per element. ``LayerNormLinear`` saves its FP8 ``ln_out`` the same way and
    ``GroupedLinear`` its quantized inputs.

    Under the ``fsdp2`` sharding a Transformer Engine recipe (any but ``torchao_*``: the Megatron-FSDP rows
    of Megatron-Bridge, priced with that sharding, run TE linears) saves the same way when the recipe
    mechanisms are on (``options.low_precision_gemms``; off: the profile rule alone, as before); torchao's
    ``Float8Linear`` keeps its high-precision input; the reference profile ``sapp-nd`` has no such term.
    """
    if not cfg.precision.fp8_linear:
        return False
    profile = profile_of(cfg).name
    if profile != "fsdp2":
        return profile == "megatron"
    recipe = stored_recipe(cfg)
    return recipe is not None and not recipe.name.startswith("torchao")


def saved_input_bytes(cfg: EstimatorConfig, te_linears: int, other_holders: bool) -> float:
    """Bytes per element kept for backward of a tensor read by ``te_linears`` TE linears and, when
    ``other_holders``, saved by some other op too (attention, the router).

    Without FP8 every reader saves the one tensor: B. With FP8 (:func:`te_fp8_saved_inputs`) each
    TE linear saves its own quantized copy (its own quantizer), 1 byte each, and the compute-dtype
    tensor stays only when another op keeps it: B·[other] + te_linears (× the recipe's bytes per
    quantized element with its block scales, :mod:`estimator.inputs.recipes`: MXFP8 1 + 1/32, NVFP4 0.5 + 1/16).
    """
    b_c = resolved_bytes(cfg).compute
    if not te_fp8_saved_inputs(cfg):
        return b_c
    recipe = stored_recipe(cfg)
    if recipe is None or recipe.stored_bytes == FP8_BYTES:
        return (b_c if other_holders else 0) + te_linears * FP8_BYTES
    return (b_c if other_holders else 0) + te_linears * recipe.stored_bytes  # block scales, FP4


def hidden_dropout_mask_bytes(cfg: EstimatorConfig) -> int:
    """Bytes per element of a hidden-dropout mask: 1 (Korthikanti), 0 when ``hidden_dropout`` is 0.

    ``torch.nn.functional.dropout`` with p = 0 returns its input (ATen ``dropout``: ``if p == 0 ||
    !train ... return input``), so no mask is saved for backward. None (not stated) keeps the mask.
    """
    return 0 if cfg.train.hidden_dropout == 0 else DROPOUT_MASK_BYTES


def score_bytes_per_element(cfg: EstimatorConfig) -> int:
    """Bytes kept per attention score by unfused (non-flash) core attention, per micro-batch.

    Korthikanti et al. 2022 §4.1: softmax output (B), dropout mask (1 B) and dropout output (B)
    = 5 at B = 2. The QKᵀ product itself is not kept: the batched matmul's backward needs only Q
    and K, and the softmax backward needs only its output (Megatron/TE ``FusedScaleMaskSoftmax``
    saves ``softmax_results``). With ``attention_dropout == 0`` dropout returns its input, so the
    mask and the second copy disappear and the context matmul saves the softmax output itself:
    B bytes per score (e.g. Megatron-LM CI MoE tests, ``--attention-dropout 0.0``).
    """
    b_c = resolved_bytes(cfg).compute
    if cfg.train.attention_dropout == 0:
        return b_c
    return b_c + DROPOUT_MASK_BYTES + b_c


def attention_block_bytes(cfg: EstimatorConfig, drop: frozenset[str]) -> float:
    """Attention block: norm input + norm output (/r), Q/K/V and out-proj input (/t), masks, scores.

    MHA/GQA: Q T·a·d, K and V T·g·d, out-proj input T·a·d (all ·B/t). MLA: compressed q and kv
    (and their norm outputs) ·B/r, up-projected q, k (a·(d_qk + d_rope)), v and attention output
    (a·d_v) ·B/t. ``qk_norm`` (Qwen3, Megatron ``--qk-layernorm``): the pre-norm q and k
    T·(a + g)·d ·B/t as well. Flash: softmax stats T·a·4/t; otherwise scores
    ``score_bytes_per_element``·a·T·s/t (Korthikanti: 5). The output dropout mask follows
    ``hidden_dropout_mask_bytes``. Gated attention (``attention_output_gate``): the gate's multiply keeps the
    ungated output T·a·d·B/t and the fp32 sigmoid T·a·d·4/t (Megatron-Core ``_apply_output_gate``).

    Tensors a TE linear saves take :func:`saved_input_bytes` (Megatron-Core's TE layer spec,
    NVIDIA/Megatron-LM@adc69dba2d megatron/core/models/gpt/gpt_layer_specs.py): the norm output is
    the input of the fused ``TELayerNormColumnParallelLinear`` QKV (MHA/GQA) or of MLA's two
    ``TELinear`` down projections; the q/kv norm outputs of ``linear_q_up_proj`` /
    ``linear_kv_up_proj``; the out-proj input is also saved by flash attention (its ``out``), not by
    the unfused ``bmm``, whose ``.contiguous()`` context only the out-proj keeps.
    """
    m, sh = cfg.model, _shape(cfg)
    T, B, t, r = sh.tokens, sh.b_c, sh.t, sh.r
    h, a = m.hidden_size, m.num_attention_heads
    mla = m.attention == "mla"
    proj_input = saved_input_bytes(cfg, 1, cfg.train.flash_attention)
    total = T * h * B / r  # norm input (residual stream)
    if "layernorm" not in drop:
        total += T * h * saved_input_bytes(cfg, 2 if mla else 1, False) / r  # norm output = QKV input
    total += T * h * hidden_dropout_mask_bytes(cfg) / r  # attention-output dropout mask
    if mla:
        q_lora, kv_lora = m.q_lora_rank or 0, m.kv_lora_rank or 0
        d_qk, d_rope, d_v = m.qk_head_dim or 0, m.qk_rope_head_dim or 0, m.v_head_dim or 0
        total += T * (q_lora + kv_lora + d_rope) * B / r  # down-proj outputs (the up-proj norms' inputs)
        total += T * (q_lora + kv_lora) * saved_input_bytes(cfg, 1, False) / r  # their norm outputs
        if "mla_up_proj" not in drop:
            total += T * a * (2 * (d_qk + d_rope) + d_v) * B / t  # q, k, v after up-projection
        total += T * a * d_v * proj_input / t  # attention output = out-proj input
    else:
        d, g = m.head_size, m.kv_heads
        total += T * (a + 2 * g) * d * B / t  # q, k, v
        if m.qk_norm:  # the q and k norms keep their inputs (the norm outputs are the q, k above)
            total += T * (a + g) * d * B / t
        total += T * a * d * proj_input / t  # attention output = out-proj input
        if m.attention_output_gate:  # the multiply keeps the ungated output and the fp32 sigmoid
            total += T * a * d * (B + RSTD_BYTES) / t
    if cfg.train.flash_attention:
        total += T * a * SOFTMAX_STATS_BYTES / t
    elif "core_attn" not in drop:
        total += score_bytes_per_element(cfg) * a * T * sh.seq / t
    return total


def _mlp_intermediate(T: float, ffn: int, activation: str, b_c: int, drop_act: bool, fc2_input: float) -> float:
    """fc1 output (2F for SwiGLU's gate and up, F otherwise) per token ·B (the activation saves it)
    and activation output F ·``fc2_input`` (saved only by fc2: :func:`saved_input_bytes`)."""
    fc1 = (2 if gated_mlp(activation) else 1) * ffn
    return T * fc1 * b_c + (0 if drop_act else T * ffn * fc2_input)


def mlp_block_bytes(cfg: EstimatorConfig, moe: bool, drop: frozenset[str]) -> float:
    """MLP block: norm input/output and dropout mask (/r), then dense or MoE intermediates.

    Dense: fc1 and activation outputs /t (F = 4h GeLU gives Korthikanti's 16·sbh/t).
    MoE: router T·E·10/r; routed experts hold T·k tokens /t with permuted input h, fc1 2F_e or
    F_e, activation F_e and un-permuted output h (reference §2.5: not /ep, tokens per rank are
    unchanged on average) — or, where the probabilities are applied in the activation
    (:func:`unpermute_saves_output` false: Megatron-Core), the probabilities k·4 instead of the output;
    shared experts like a dense MLP of width F_s.

    TE-saved tensors take :func:`saved_input_bytes`: the dense norm output (input of the fused
    ``TELayerNormColumnParallelLinear`` fc1), every activation output (fc2 input), the permuted
    tokens (``TEGroupedLinear`` fc1 input; the fused permutation keeps only its row map). The MoE
    norm output is saved by the router in the compute dtype (NVIDIA/Megatron-LM@adc69dba2d
    megatron/core/transformer/moe/moe_utils.py ``RouterGatingLinearFunction``:
    ``ctx.save_for_backward(inp, ...)``) and once more by the shared experts' fc1.
    """
    m, sh = cfg.model, _shape(cfg)
    T, B, t, r = sh.tokens, sh.b_c, sh.t, sh.r
    h = m.hidden_size
    fc2_input = saved_input_bytes(cfg, 1, False)
    total = T * h * B / r + T * h * hidden_dropout_mask_bytes(cfg) / r  # norm input, dropout mask
    latent = m.moe_latent_size if moe else None
    if "layernorm" not in drop:  # norm output = MLP input (+ the latent down-projection's saved input)
        readers = (1 if m.shared_ffn_total else 0) + (1 if latent else 0)
        total += T * h * (saved_input_bytes(cfg, readers, True) if moe else saved_input_bytes(cfg, 1, False)) / r
    if not moe:
        if "mlp" not in drop:
            total += _mlp_intermediate(T, m.dense_ffn, m.activation, B, False, fc2_input) / t
        return total
    if "moe" in drop:
        return total
    total += T * m.num_experts * ROUTER_BYTES_PER_EXPERT / r
    routed_tokens = T * m.moe_topk / t
    width = latent or h  # routed tokens are L wide in a latent MoE
    if unpermute_saves_output(cfg):  # permuted input (grouped fc1 input), un-permuted output
        total += routed_tokens * width * (fc2_input + B)
    else:  # permuted input; the weighted activation keeps the permuted probabilities
        total += routed_tokens * width * fc2_input + routed_tokens * ROUTING_PROB_BYTES
    if latent:  # the combined L-wide output, saved by the up-projection fc2_latent_proj
        total += T * latent * saved_input_bytes(cfg, 1, False) / r
    total += _mlp_intermediate(routed_tokens, m.expert_ffn, m.activation, B, "moe_act" in drop, fc2_input)
    if m.shared_ffn_total and "shared_experts" not in drop:
        total += _mlp_intermediate(T, m.shared_ffn_total, m.activation, B, "moe_act" in drop, fc2_input) / t
    return total


def unpermute_saves_output(cfg: EstimatorConfig) -> bool:
    """True where un-permuting the routed experts' output keeps that output for backward, ``T·k·h·B/t``: the routing
    probabilities are multiplied there, and their gradient needs the output.

    Megatron-Core applies them inside the experts' activation instead since core 0.13 (NVIDIA/Megatron-LM@2659630721
    "perf(MoE): Memory efficient token permutation", first in ``core_v0.13.0``; @d98e8a64dd
    ``megatron/core/transformer/moe/experts.py`` ``TEGroupedMLP.forward``: ``bias_act_func(fc1_output, bias_parallel,
    permuted_probs)`` through ``weighted_bias_swiglu_impl`` / ``weighted_bias_quick_geglu_impl`` /
    ``weighted_squared_relu_impl``, which save the fc1 output and the probabilities; ``token_dispatcher.py`` calls
    ``unpermute`` without ``probs``, and ``moe_utils.unpermute`` / TE's ``moe_unpermute`` with ``merging_probs=None``
    save only the row map): its layers keep the permuted probabilities, ``T·k·4`` bytes
    (:data:`ROUTING_PROB_BYTES`), and no output. Its layers run wherever
    :func:`estimator.inputs.profiles.megatron_core_layers` holds; every measured MoE memory row ran a later
    Megatron-Core (Megatron-LM CI @d98e8a64dd, SimuMax's @23e00ed096 = core_r0.14.0, Moonlight's core 24bad8e677d2).
    ``options.moe_probs_in_activation`` off, the reference profile and torch's own FSDP keep the output (the model
    before). The unfused activation path (``bias_activation_fusion`` off: the product keeps the activation output
    instead) is not modelled: Megatron-LM's default and the Bridge recipes fuse it."""
    return not (cfg.options.moe_probs_in_activation and megatron_core_layers(cfg))


def mamba_block_bytes(cfg: EstimatorConfig, drop: frozenset[str]) -> float:
    """A Mamba-2 layer (Megatron-Core ``MambaLayer``, ``MambaMixer`` training path) per micro-batch.

    Norm input T·h·B/r, its output (the input ``TELayerNormColumnParallelLinear`` in_proj saves:
    :func:`saved_input_bytes`)/r unless ``layernorm`` is recomputed, the hidden-dropout mask; then, /t (heads
    and groups split over TP), what ``mamba_split_conv1d_scan_combined`` saves (mamba_ssm
    ``MambaSplitConv1dScanCombinedFn.forward``: ``ctx.save_for_backward(zxbcdt, ..., out_x, ...)``): the
    [b, s]-major copy of in_proj's output T·(2·d_i + 2·g·N + n_h)·B and the scan output T·d_i·B; the copy
    back to [s, b] that the gated RMSNorm saves T·d_i·B with its fp32 rstd T·g·4; the norm output out_proj
    saves T·d_i·:func:`saved_input_bytes`. The conv output, dt and the chunk states are not saved: the
    backward recomputes them; the conv and SSM states are inference caches (no training memory).
    """
    sh, d = _shape(cfg), mamba_dims(cfg.model)
    T, B, t, r, h = sh.tokens, sh.b_c, sh.t, sh.r, cfg.model.hidden_size
    total = T * h * B / r + T * h * hidden_dropout_mask_bytes(cfg) / r
    if "layernorm" not in drop:
        total += T * h * saved_input_bytes(cfg, 1, False) / r
    total += T * (d.in_proj_width + 2 * d.inner) * B / t + T * d.groups * RSTD_BYTES / t
    return total + T * d.inner * saved_input_bytes(cfg, 1, False) / t


def gdn_block_bytes(cfg: EstimatorConfig, drop: frozenset[str]) -> float:
    """A Gated DeltaNet mixer (Megatron-Core ``GatedDeltaNet``, :mod:`estimator.inputs.gdn`) per micro-batch.

    Norm input T·h·B/r, its output (saved by the fused-norm in_proj: :func:`saved_input_bytes`)/r unless
    ``layernorm`` is recomputed, the hidden-dropout mask; then, /t (heads split over TP): the conv's input q, k, v
    T·(2·n_k·d_k + n_v·d_v)·B; the L2 norm's outputs T·2·n_k·d_k·B and fp32 rstd T·2·n_k·4; q and k repeated to
    the value heads T·2·n_v·d_k·B (n_v > n_k); what FLA's rule saves beside them (fla-org/flash-linear-attention
    @bc3b101d ``ChunkGatedDeltaRuleFunction.forward``: ``save_for_backward(q, q_rstd, k, k_rstd, v, g, beta_raw,
    beta, A, ...)``): v T·n_v·d_v·B, g fp32 T·n_v·4, β T·n_v·B, A T·n_v·C·B; α (the softplus input) T·n_v·B; the
    gated norm's inputs, the rule's output and the gate z, 2·T·n_v·d_v·B, with its fp32 rstd T·n_v·4; its output
    out_proj saves T·n_v·d_v·:func:`saved_input_bytes`. The chunk states are not saved (the backward re-runs
    ``chunk_gated_delta_rule_fwd_h``). With ``gdn_norm_out`` recomputed (Megatron-Core ``CheckpointWithoutOutput``
    around ``_gated_norm_and_a2a``: its inputs kept, its output discarded after out_proj) neither out_proj's
    saved input nor the norm's rstd is held.
    """
    sh, d = _shape(cfg), gdn_dims(cfg.model)
    T, B, t, r, h = sh.tokens, sh.b_c, sh.t, sh.r, cfg.model.hidden_size
    total = T * h * B / r + T * h * hidden_dropout_mask_bytes(cfg) / r
    if "layernorm" not in drop:
        total += T * h * saved_input_bytes(cfg, 1, False) / r
    repeated = 2 * d.value_heads * d.key_dim if d.value_heads > d.key_heads else 0
    per_token = ((d.conv_channels + 2 * d.qk_width + repeated + 3 * d.v_width) * B + 2 * d.key_heads * RSTD_BYTES
                 + d.value_heads * (2 * RSTD_BYTES + (2 + d.chunk) * B))
    if "gdn_norm_out" in drop:  # the gated norm re-run in backward: its rstd and output (out_proj's input) freed
        return total + T * (per_token - d.value_heads * RSTD_BYTES) / t
    return total + T * per_token / t + T * d.v_width * saved_input_bytes(cfg, 1, False) / t


def full_recompute_bytes(cfg: EstimatorConfig) -> float:
    """A fully recomputed layer keeps only its input T·h·B (/t when the profile or SP shards it)."""
    sh = _shape(cfg)
    shard = sh.t if profile_of(cfg).full_recompute_input_tp_sharded else sh.r
    return sh.tokens * cfg.model.hidden_size * sh.b_c / shard


def layer_activation_bytes(cfg: EstimatorConfig, index: int, mode: RecomputeMode) -> float:
    """Activation bytes of layer ``index`` for one micro-batch under recompute ``mode``.

    MTP layers add the concatenated projection input T·2h·B/r. A torchtitan
    ``selective_ac_option`` replaces the module list: ``op`` keeps what its save list keeps,
    ``<n>`` checkpoints every n-th layer fully and keeps everything of the others.
    """
    option = cfg.recompute.selective_ac_option
    if mode == "selective" and option is not None:  # torchtitan's policies (estimator.memory.sac)
        if option == "op":
            return sac.op_sac_layer_bytes(cfg, index)
        mode = "full" if sac.layer_checkpointed(index, int(option)) else "none"
    if mode == "full":
        return full_recompute_bytes(cfg)
    drop = recomputed_modules(cfg, mode)
    kind = layer_kind(cfg.model, index)
    mixer, mlp = layer_blocks(cfg.model, index)
    total = attention_block_bytes(cfg, drop) if mixer == "attention" else 0.0
    if cfg.model.post_norms:  # each post norm keeps its input (the block's output) for its backward
        sh = _shape(cfg)
        total += sum(1 for block in (mixer, mlp) if block) * sh.tokens * cfg.model.hidden_size * sh.b_c / sh.r
    total += mamba_block_bytes(cfg, drop) if mixer == "mamba" else 0.0
    total += gdn_block_bytes(cfg, drop) if mixer == "gdn" else 0.0
    total += mlp_block_bytes(cfg, mlp == "moe", drop) if mlp else 0.0
    if kind == "mtp":  # concatenated input of the TE column-parallel ``eh_proj``
        sh = _shape(cfg)
        total += sh.tokens * 2 * cfg.model.hidden_size * saved_input_bytes(cfg, 1, False) / sh.r
    return total


def embedding_activation_bytes(cfg: EstimatorConfig) -> float:
    """Embedding output per micro-batch T·h·B/t (reference §2.5)."""
    sh = _shape(cfg)
    return sh.tokens * cfg.model.hidden_size * sh.b_c / sh.t


#: reference byte width of the final-norm output (B_norm, reference §2.1)
REFERENCE_NORM_BYTES = 4


def head_input_bytes(cfg: EstimatorConfig) -> float:
    """Final-norm output feeding the head, per micro-batch.

    Vocab-parallel profiles: T·h·B/r. Reference (logits not TP-sharded): T·h·B_norm with
    B_norm = 4 and no shard (reference §2.5, ``shard_output_activ = 1``).
    """
    sh = _shape(cfg)
    if not profile_of(cfg).logits_tp_sharded:
        return sh.tokens * cfg.model.hidden_size * REFERENCE_NORM_BYTES
    return sh.tokens * cfg.model.hidden_size * sh.b_c / sh.r


def logits_bytes(cfg: EstimatorConfig) -> float:
    """Logits of one micro-batch T·V·B_logits, /t when vocab-parallel, once per loss (1 + MTP).

    Reference (MindFormers): compute dtype, not TP-sharded (``shard_output_activ = 1``), the root
    of the seed's P1 (~2084 MB at TP=1). Megatron: fp32 logits, vocab-parallel (facts §1.2); with
    Transformer Engine's fused loss (:func:`loss_in_place`) the compute dtype (``resolved_bytes``).
    """
    prof, sh = profile_of(cfg), _shape(cfg)
    shard = sh.t if prof.logits_tp_sharded else 1
    losses = 1 + cfg.model.mtp_layers
    return losses * sh.tokens * cfg.model.vocab * resolved_bytes(cfg).logits / shard


def loss_in_place(cfg: EstimatorConfig) -> bool:
    """True when the loss writes its gradient into the logits: Transformer Engine's fused cross
    entropy (``train.cross_entropy_fusion: te``).

    NVIDIA/TransformerEngine@v2.11 transformer_engine/pytorch/triton/cross_entropy.py
    ``cross_entropy_forward``: two Triton kernels read the logits in their own dtype, keep per-row
    fp32 statistics (3·T/t floats) and store the gradient in the input tensor itself, which
    ``CrossEntropyFunction`` saves for backward (transformer_engine/pytorch/cross_entropy.py:
    ``ctx.save_for_backward(grad_input.detach())``); Megatron calls it on the output layer's logits
    unchanged (NVIDIA/Megatron-LM@23e00ed096 megatron/core/models/common/language_module/
    language_module.py ``compute_language_model_loss``: ``te_parallel_cross_entropy(logits, ...)``).
    So no fp32 copy is made and the loss backward allocates no logits-sized gradient. Megatron's
    ``native`` fusion and the unfused loss cast to fp32 first (``calculate_logits_max``:
    ``vocab_parallel_logits.float()``) and keep that copy.
    """
    return cfg.train.cross_entropy_fusion == "te"


#: logits-sized fp32 tensors torch's loss-parallel cross-entropy backward holds beside the saved log-probabilities
LOSS_PARALLEL_BACKWARD_COPIES = 3


def loss_backward_logits_copies(cfg: EstimatorConfig) -> int:
    """Logits-sized tensors the loss backward allocates at the head (:func:`logits_bytes` each):
    0 when the loss works in place (:func:`loss_in_place`), :data:`LOSS_PARALLEL_BACKWARD_COPIES` under torch's
    loss parallelism (:func:`torch_loss_parallel`), else the profile's ``loss_backward_logits_copies`` (Megatron 1,
    torchtitan's unsharded ``cross_entropy`` 2)."""
    if loss_in_place(cfg):
        return 0
    own = profile_of(cfg).loss_backward_logits_copies
    return where(torch_loss_parallel(cfg), LOSS_PARALLEL_BACKWARD_COPIES, own)


def torch_loss_parallel(cfg: EstimatorConfig) -> bool:
    """True where the vocab-sharded cross entropy is torch's ``loss_parallel`` (torchtitan with TP > 1: its train
    step enters ``loss_parallel()`` unless ``disable_loss_parallel``, which the importer refuses under TP): the
    ``fsdp2`` sharding by torch ``fully_shard`` (``parallel.fsdp_implementation: torch``), ``tp > 1`` and
    ``options.loss_parallel_memory`` on (an array of layouts: per row).

    pytorch/pytorch ``torch/distributed/tensor/parallel/loss.py`` ``_nll_loss_and_log_softmax_backward`` fuses the
    nll-loss and log-softmax backward on the local shard ``x`` of saved log-probabilities: ``grad_input =
    zeros_like(x)`` (scattered to −1 at the targets), then ``(grad_input + torch.exp(x)) * grad_output`` — while
    the sum is formed, ``grad_input``, ``exp(x)`` and the sum are live; while the product is, ``grad_input``, the sum
    and the product: three fp32 copies beside ``x``, where ATen's unsharded path holds two (the nll-loss gradient
    and the log-softmax gradient)."""
    p = cfg.parallel
    if not (cfg.options.loss_parallel_memory and profile_of(cfg).sharding == "fsdp2"
            and p.fsdp_implementation == "torch"):
        return False
    return p.tp > 1


def cp_allgather_kv_bytes(cfg: EstimatorConfig) -> float:
    """The all-gathered K and V of all-gather context parallelism, live in one layer's attention backward (bytes).

    TE's ``AttnFuncWithCPAndKVAllGather`` (NVIDIA/TransformerEngine ``pytorch/attention/dot_product_attention/
    context_parallel.py``) saves only the local q, k, v; its forward gathers K and V of the whole sequence for the
    attention steps, and its backward gathers them again and fills dK and dV of that length before reduce-scattering
    them: 4 tensors of ``s·b·w/t`` elements, ``4·s·b·w/t·B_c`` bytes (s the whole sequence, w the K or V row width
    :func:`estimator.inputs.derive.kv_dim`, t = tp). 0 unless ``cp > 1`` with ``cp_comm_type`` allgather, or with
    ``options.cp_gather_memory`` off.
    """
    p, tr = cfg.parallel, cfg.train
    if p.cp_comm_type != "allgather" or not cfg.options.cp_gather_memory:
        return 0.0
    value = 4 * tr.seq_length * tr.micro_batch_size * kv_dim(cfg.model) / p.tp * resolved_bytes(cfg).compute
    return where(p.cp > 1, value, 0.0)
