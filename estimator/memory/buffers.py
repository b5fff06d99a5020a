"""Communication buffers per layer (reference §2.6), used by the ``sapp-nd`` profile only.

Per layer: comm = max(dp, tp, cp) + ep. The reference mixes units (dp and cp are element
counts, ep is bytes, dense tp has no bytes factor); the ``sapp-nd`` profile reproduces the
reference, so those counts are kept as the reference adds them (one count = one byte). Profiles
that model a real framework (``megatron``, ``fsdp2``) count no separate comm buffers: Megatron's
gathered SP inputs and all-to-all outputs are activations, and its distributed-optimizer
gathers and reduce-scatters work in place in the param and grad buffers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from estimator.inputs.derive import expert_degrees, layer_ep, layer_kind, mtp_is_moe, shard_factors
from estimator.inputs.params import MLP_MATRICES, layer_params
from estimator.inputs.profiles import profile_of, resolved_bytes
from estimator.shared.arrays import maximum, where

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig, RecomputeMode

#: attention matmuls (Q, K, V, O) and gathers per layer (reference op counts n_attMM = n_gather = 4)
N_ATT_MM = 4


def comm_flag(degree: float, has_op: bool, grad_sharding: bool) -> int:
    """Reference comm flag: 0 without sharding (degree 1 or no OP), 2 ZeRO-2-like, 3 with grad sharding.
    (``degree`` may be an array of layouts: :mod:`estimator.shared.arrays`.)"""
    return where((degree <= 1) | (not has_op), 0, 3 if grad_sharding else 2)


def _by_flag(flag: int, two: float, three: float) -> float:
    """The value of a buffer term by comm flag: 0, ``two`` or ``three`` (elementwise for arrays)."""
    return where(flag == 0, 0.0, where(flag == 2, two, three))


def dp_buffer(cfg: EstimatorConfig, index: int) -> float:
    """Parameter-gather buffer (elements): non-expert n/(cp·t) + n/t (flag 2) or n/t (flag 3); experts
    E_tot/(cp·t_exp·ep) + E_tot/max(ep, t_exp) (flag 2) or E_tot/(cp·t_exp·ep) (flag 3)."""
    p = cfg.parallel
    lp = layer_params(cfg.model, index)
    flag = comm_flag(p.dp, p.distributed_optimizer, p.grad_sharding)
    non_exp = _by_flag(flag, lp.non_expert / (p.cp * p.tp) + lp.non_expert / p.tp, lp.non_expert / p.tp)
    deg = expert_degrees(p.dp, p.tp, p.cp, p.ep, p.etp)
    ep = layer_ep(cfg, index)
    e_tot = lp.routed + lp.shared
    flag_e = comm_flag(deg.d_exp, p.distributed_optimizer, p.grad_sharding)
    sharded = e_tot / (p.cp * deg.t_exp * ep)
    expert = _by_flag(flag_e, sharded + e_tot / maximum(ep, deg.t_exp), sharded)
    return non_exp + expert


def tp_buffer(cfg: EstimatorConfig, index: int) -> float:
    """TP gather buffer for one micro-batch. Dense: s·b·(h + F)/cp (elements). MoE (parameter-sized):
    4·h²·B + n_mm·h·B·(E/ep·F_e + F_s) bytes. 0 without TP."""
    m, p, tr = cfg.model, cfg.parallel, cfg.train
    kind = layer_kind(m, index)
    moe = kind in ("moe", "moe_mlp", "gdn_moe") or (kind == "mtp" and mtp_is_moe(m))
    s_b = tr.seq_length * tr.micro_batch_size
    if not moe:
        return where(p.tp == 1, 0.0, s_b * (m.hidden_size + m.dense_ffn) / p.cp)
    b_c, h = resolved_bytes(cfg).compute, m.hidden_size
    widths = m.num_experts / layer_ep(cfg, index) * m.expert_ffn + m.shared_ffn_total
    return where(p.tp == 1, 0.0, N_ATT_MM * h * h * b_c
                 + MLP_MATRICES[m.activation] * h * b_c * widths)


def cp_buffer(cfg: EstimatorConfig, index: int) -> float:
    """Ring-CP buffer (elements): 2·s·b·(rf + 0.5)·4·h/t + 2·s·b·n_mm·F/t with rf = [p = 1]; 0 without CP."""
    m, p, tr = cfg.model, cfg.parallel, cfg.train
    s_b = tr.seq_length * tr.micro_batch_size
    rf = 1.0 if p.pp == 1 else 0.0
    ffn = m.expert_ffn if layer_kind(m, index) in ("moe", "moe_mlp", "gdn_moe") else m.dense_ffn
    value = 2 * s_b * (rf + 0.5) * N_ATT_MM * m.hidden_size / p.tp + 2 * s_b * MLP_MATRICES[m.activation] * ffn / p.tp
    return where(p.cp == 1, 0.0, value)


def ep_buffer(cfg: EstimatorConfig, index: int) -> float:
    """EP all-to-all buffer for one micro-batch (bytes): 2·k·s·b/cp·(ep−1)/ep·h·B (dispatch + combine; L for h
    with ``moe_latent_size``)."""
    m, tr = cfg.model, cfg.train
    ep = layer_ep(cfg, index)
    tokens = tr.seq_length * tr.micro_batch_size / cfg.parallel.cp
    width = m.moe_latent_size or m.hidden_size  # a latent MoE dispatches L-wide tokens
    value = 2 * m.moe_topk * tokens * (ep - 1) / ep * width * resolved_bytes(cfg).compute
    return where(ep <= 1, 0.0, value)


def layer_comm_bytes(cfg: EstimatorConfig, index: int, mu: int, mode: RecomputeMode) -> float:
    """comm = max(dp, tp·μ, cp) + ep·μ; a fully recomputed layer keeps only dp (reference §2.6)."""
    if not profile_of(cfg).comm_buffers:
        return 0.0
    dp = dp_buffer(cfg, index)
    if mode == "full":
        return dp
    return maximum(maximum(dp, tp_buffer(cfg, index) * mu), cp_buffer(cfg, index)) + ep_buffer(cfg, index) * mu


def embedding_comm_bytes(cfg: EstimatorConfig) -> float:
    """Embedding: max(dp = flag·h·v/(shard_embed·cp), tp = s·h·b·(t−1)/(t·cp))."""
    if not profile_of(cfg).comm_buffers:
        return 0.0
    m, p, tr = cfg.model, cfg.parallel, cfg.train
    flag = comm_flag(p.dp, p.distributed_optimizer, p.grad_sharding)
    dp = flag * m.hidden_size * m.vocab / (shard_factors(cfg).embed * p.cp)
    tp = tr.seq_length * m.hidden_size * tr.micro_batch_size * (p.tp - 1) / (p.tp * p.cp)
    return maximum(dp, tp)


def head_comm_bytes(cfg: EstimatorConfig) -> float:
    """Output head: dp = flag·(h·v + v)/(t·cp)."""
    if not profile_of(cfg).comm_buffers:
        return 0.0
    m, p = cfg.model, cfg.parallel
    flag = comm_flag(p.dp, p.distributed_optimizer, p.grad_sharding)
    return flag * (m.hidden_size * m.vocab + m.vocab) / (p.tp * p.cp)
