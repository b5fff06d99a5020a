"""Training FLOPs per layer kind (forward pass, one micro-batch, whole model replica).

Every function returns the FLOPs of the *forward* pass of one layer for ``tokens`` tokens
(``tokens = b·s`` of a micro-batch) summed over the tensor/context-parallel group; the caller
divides by the devices that share the work (``tp·cp``) and multiplies by the pass factors below.
A matrix multiply of an ``[m, k]`` by a ``[k, n]`` matrix costs ``2·m·k·n`` FLOPs.

Sources: Narayanan et al. 2021 ("Efficient large-scale language model training on GPU clusters",
§5.1, the 24·b·s·h² + 4·b·s²·h per-layer count that Megatron's MFU uses); DeepSeek-V2/V3
technical reports for the MLA projections; reference design §3.1 (backward = 2× forward).
"""

from __future__ import annotations

from collections.abc import Sequence

#: Backward pass = input gradient + weight gradient, each as costly as the forward (reference §3.1).
BACKWARD_TO_FORWARD_RATIO = 2.0

#: Matrices in one dense MLP: SwiGLU has gate, up and down projections; GeLU / squared ReLU two.
MLP_MATMULS = {"swiglu": 3, "gelu": 2, "squared_relu": 2, "quick_geglu": 3, "geglu": 3}


def matmul_flops(m: float, k: float, n: float) -> float:
    """FLOPs of an ``[m, k] @ [k, n]`` product: ``2·m·k·n`` (one multiply + one add per term)."""
    return 2.0 * m * k * n


def attention_projection_flops(
    tokens: float, hidden: int, num_heads: int, num_kv_heads: int, head_dim: int
) -> float:
    """Q, K, V and output projections of MHA/GQA for ``tokens`` tokens.

    ``2·T·h·(a·d_h)`` for Q, ``2·2·T·h·(n_kv·d_h)`` for K and V, ``2·T·(a·d_h)·h`` for the output;
    with ``a·d_h = h`` and ``n_kv = a`` this is Narayanan et al.'s ``8·T·h²``.
    """
    q_out = num_heads * head_dim
    kv_out = num_kv_heads * head_dim
    return matmul_flops(tokens, hidden, q_out) + 2 * matmul_flops(tokens, hidden, kv_out) + matmul_flops(
        tokens, q_out, hidden
    )


def depthwise_conv_flops(tokens: float, kernel: int, channels: int) -> float:
    """A depthwise causal conv of ``kernel`` taps over ``channels`` channels: 2·k·C per token (one multiply-add per
    tap; the Mamba-2 and Gated DeltaNet mixers' short convs)."""
    return 2.0 * kernel * channels * tokens


def attention_core_flops(
    tokens: float, seq_length: int, num_heads: int, qk_head_dim: int, v_head_dim: int
) -> float:
    """Scores ``Q·Kᵀ`` and the weighted sum ``P·V`` for ``tokens`` query tokens over ``seq_length`` keys.

    ``2·T·s·a·d_qk + 2·T·s·a·d_v``; with ``d = h/a`` this is Narayanan et al.'s ``4·T·s·h``. No causal
    halving, as in the published MFU convention (kernels skip part of it; the efficiency absorbs that).
    """
    return 2.0 * tokens * seq_length * num_heads * (qk_head_dim + v_head_dim)


def mla_projection_flops(
    tokens: float,
    hidden: int,
    num_heads: int,
    q_lora_rank: int | None,
    kv_lora_rank: int,
    qk_head_dim: int,
    qk_rope_head_dim: int,
    v_head_dim: int,
) -> float:
    """Multi-head latent attention projections (DeepSeek-V2/V3 report, §2.1.2).

    Q: down ``h→r_q`` and up ``r_q→a·(d_nope+d_rope)`` (or one ``h→a·(d_nope+d_rope)`` without q
    compression); KV: down ``h→r_kv+d_rope``, up ``r_kv→a·(d_nope+d_v)``; output ``a·d_v→h``.
    ``qk_head_dim`` is the non-rope part ``d_nope``.
    """
    q_dim = num_heads * (qk_head_dim + qk_rope_head_dim)
    if q_lora_rank:
        q = matmul_flops(tokens, hidden, q_lora_rank) + matmul_flops(tokens, q_lora_rank, q_dim)
    else:
        q = matmul_flops(tokens, hidden, q_dim)
    kv = matmul_flops(tokens, hidden, kv_lora_rank + qk_rope_head_dim) + matmul_flops(
        tokens, kv_lora_rank, num_heads * (qk_head_dim + v_head_dim)
    )
    out = matmul_flops(tokens, num_heads * v_head_dim, hidden)
    return q + kv + out


def mla_up_projection_flops(
    tokens: float, num_heads: int, q_lora_rank: int | None, kv_lora_rank: int, qk_head_dim: int,
    qk_rope_head_dim: int, v_head_dim: int,
) -> float:
    """The MLA up-projections Megatron's ``mla_up_proj`` selective recompute re-runs: q up
    ``r_q→a·(d_nope+d_rope)`` (only with q compression) and kv up ``r_kv→a·(d_nope+d_v)``."""
    q_up = matmul_flops(tokens, q_lora_rank, num_heads * (qk_head_dim + qk_rope_head_dim)) if q_lora_rank else 0.0
    return q_up + matmul_flops(tokens, kv_lora_rank, num_heads * (qk_head_dim + v_head_dim))


def mlp_flops(tokens: float, hidden: int, ffn_hidden: int, activation: str) -> float:
    """Dense MLP: ``n_mm·2·T·h·f`` with ``n_mm`` = 3 (SwiGLU) or 2 (GeLU); ``16·T·h²`` for GeLU, f=4h."""
    if activation not in MLP_MATMULS:
        raise ValueError(f"activation {activation!r}: expected one of {sorted(MLP_MATMULS)}")
    return MLP_MATMULS[activation] * matmul_flops(tokens, hidden, ffn_hidden)


def moe_flops(
    tokens: float,
    hidden: int,
    num_experts: int,
    topk: int,
    moe_ffn_hidden: int,
    num_shared_experts: int,
    shared_ffn_hidden: int,
    activation: str,
    expert_load_imbalance: float = 1.0,
) -> float:
    """MoE MLP of ``tokens`` tokens: router ``2·T·h·E`` + ``k`` routed experts + shared experts.

    Routed work is ``k·mlp(T, h, f_e)`` when balanced; ``expert_load_imbalance`` (≥ 1, the busiest
    EP rank's load over the mean, :func:`ep_rank_load_imbalance`) scales it for the slowest rank
    (reference §2.2, compute-side expert FLOPs). Shared experts see every token once each.
    """
    router = matmul_flops(tokens, hidden, num_experts)
    routed = topk * mlp_flops(tokens, hidden, moe_ffn_hidden, activation) * expert_load_imbalance
    shared = mlp_flops(tokens, hidden, shared_ffn_hidden, activation) * num_shared_experts
    return router + routed + shared


def ep_rank_load_imbalance(tokens_per_expert: Sequence[float], ep: int) -> float:
    """Busiest EP rank's routed tokens over the mean rank load (1.0 = balanced).

    Experts are placed contiguously, ``E/ep`` per rank (Megatron's default); rank load = sum of
    its experts' tokens (reference §2.6, imbalanced EP). Requires ``E`` divisible by ``ep``.
    """
    n = len(tokens_per_expert)
    if ep < 1 or n % ep:
        raise ValueError(f"tokens_per_expert has {n} experts, not divisible by ep={ep}")
    per_rank = n // ep
    loads = [sum(tokens_per_expert[r * per_rank : (r + 1) * per_rank]) for r in range(ep)]
    mean = sum(loads) / ep
    if mean <= 0:
        raise ValueError("tokens_per_expert sums to 0")
    return max(loads) / mean


def output_head_flops(tokens: float, hidden: int, vocab_size: int) -> float:
    """Logits projection ``2·T·h·V`` (Narayanan et al. §5.1's ``6·b·s·h·V`` over fw+bw)."""
    return matmul_flops(tokens, hidden, vocab_size)


def recompute_forward_fraction(mode: str, core_attention_share: float) -> float:
    """Share of a layer's forward FLOPs re-run in the backward pass.

    ``full``: 1 (Korthikanti et al. 2022, full activation checkpointing re-runs the whole forward);
    ``selective``: only core attention (``core_attention_share`` = its share of the layer's forward
    FLOPs, Korthikanti §4.2); ``none``: 0.
    """
    if mode == "full":
        return 1.0
    if mode == "selective":
        return core_attention_share
    if mode == "none":
        return 0.0
    raise ValueError(f"recompute mode {mode!r}: expected none, selective or full")


def pass_flops(forward_flops: float, recompute_fraction: float) -> tuple[float, float, float]:
    """(forward, backward, recompute) FLOPs of one layer: ``F``, ``2F``, ``fraction·F`` (reference §3.1)."""
    return forward_flops, BACKWARD_TO_FORWARD_RATIO * forward_flops, recompute_fraction * forward_flops
