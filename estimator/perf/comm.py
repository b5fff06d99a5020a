"""Communication per parallel dimension, as collectives with their buffer size in bytes.

Each function returns the collectives one device takes part in (kind, buffer bytes, group size,
how many times). :mod:`estimator.perf.network` prices them in seconds; :func:`wire_bytes` gives the
bytes a device sends, the unit of the reference tool's ``score`` mode (seed P4: EP stays bytes there).

Buffer size convention (NCCL's): all-reduce — the reduced tensor; all-gather — the gathered output;
reduce-scatter — the input before scattering; all-to-all — what one device sends plus keeps;
p2p — the message. Sources: reference design §3.2 and §8 (volumes per dimension), Megatron-LM
sequence parallelism (Korthikanti et al. 2022, §4.2.2: 2 all-gathers + 2 reduce-scatters per layer
in the forward pass), the seed P4 (EP: ``k·s·b/cp·(ep−1)/ep·h·B_c·2`` for dispatch + combine).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from estimator.shared.arrays import ARRAY, all_true, any_true, is_array, maximum, where

CollectiveKind = Literal["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p"]


@dataclass(frozen=True)
class Collective:
    """One collective: ``count`` calls of ``kind`` over ``group_size`` devices on ``size_bytes`` buffers."""

    kind: CollectiveKind
    size_bytes: float
    group_size: int
    count: float = 1.0

    def __post_init__(self) -> None:
        size, count, group = self.size_bytes, self.count, self.group_size  # arrays of layouts too
        if type(size) is ARRAY or type(count) is ARRAY or type(group) is ARRAY:
            bad = any_true(size < 0) or any_true(count < 0) or any_true(group < 1)
        else:
            bad = size < 0 or count < 0 or group < 1
        if bad:
            raise ValueError(f"invalid collective {self}")


def wire_bytes(c: Collective) -> float:
    """Bytes one device sends for ``c``: ring all-reduce ``2(n−1)/n·S``; all-gather, reduce-scatter and
    all-to-all ``(n−1)/n·S``; p2p ``S`` (Patarasuk & Yuan 2009 for the ring bounds); times ``count``."""
    n = c.group_size
    if c.kind == "p2p":
        return c.size_bytes * c.count
    if type(n) is not ARRAY and n == 1:  # the formula's 0 (arrays: computed)
        return 0.0
    factor = 2.0 * (n - 1) / n if c.kind == "all_reduce" else (n - 1) / n
    return factor * c.size_bytes * c.count


def tp_layer_collectives(
    activation_bytes: float, tp: int, sequence_parallel: bool, blocks: int = 2
) -> list[Collective]:
    """Forward TP/SP collectives of one layer for one micro-batch; ``blocks`` TP-sharded blocks
    (attention and MLP: 2; a MoE layer whose experts are not TP-sharded: 1).

    Per block: without SP one all-reduce of the ``b·s·h·B_c`` activation; with SP one all-gather and
    one reduce-scatter of it (same bytes, Korthikanti et al. §4.2.2). ``activation_bytes`` =
    ``b·(s/cp)·h·B_c``. The backward pass repeats them (:data:`BACKWARD_COMM_FACTOR`).
    """
    if all_true(tp <= 1) or all_true(blocks <= 0):  # no traffic (arrays: rows with tp = 1 price 0)
        return []
    if type(sequence_parallel) is ARRAY:  # per layout: the kind not taken gets 0 calls
        with_sp, without = where(sequence_parallel, blocks, 0), where(sequence_parallel, 0, blocks)
        return [
            Collective("all_gather", activation_bytes, tp, with_sp),
            Collective("reduce_scatter", activation_bytes, tp, with_sp),
            Collective("all_reduce", activation_bytes, tp, without),
        ]
    if sequence_parallel:
        return [
            Collective("all_gather", activation_bytes, tp, blocks),
            Collective("reduce_scatter", activation_bytes, tp, blocks),
        ]
    return [Collective("all_reduce", activation_bytes, tp, blocks)]


def ep_dispatch_tokens_balanced(tokens: float, topk: int) -> float:
    """Token copies one device sends+keeps per dispatch with balanced routing: ``k·T``."""
    return topk * tokens


def ep_dispatch_tokens_flex(tokens: float, topk: int, experts: int, ep: int) -> float:
    """Token copies one device sends+keeps per dispatch with the flex dispatcher (DeepEP / HybridEP) and
    uniformly random routing (Megatron ``moe_router_force_load_balancing``: random logits, top-k):
    ``T·ep·(1 − Π_{i<k} (E − E/ep − i)/(E − i))``.

    A token goes once to each EP rank holding at least one of its ``k`` experts (DeepEP's dispatch
    layout ``is_token_in_rank`` / ``num_tokens_per_rank``, deepseek-ai/DeepEP@dd758ca docs/legacy.md;
    Megatron-Core ``_HybridEPManager`` / ``_DeepepManager`` permute to experts after the
    communication, NVIDIA/Megatron-LM@d98e8a64dd ``moe/token_dispatcher.py``; HybridEP's benchmark
    counts the received bytes before that permute, deepseek-ai/DeepEP@94a9f8f (hybrid-ep)
    ``tests/test_hybrid_ep.py``), and a rank of ``E/ep`` experts misses all ``k`` distinct uniformly
    drawn experts with the hypergeometric probability ``C(E − E/ep, k)/C(E, k)``. ``k = 1`` gives ``T``
    (one rank per token), ``ep = E/k`` or fewer ranks no fewer copies than the ranks can hold.
    Group-limited routing (DeepSeek-V3's node groups) would send fewer: not modelled (an upper bound).
    """
    local = experts / ep
    miss = 1.0
    for i in range(topk):
        miss = miss * maximum(0.0, (experts - local - i) / (experts - i))
    return tokens * ep * (1.0 - miss)


def ep_layer_collectives_by_node(
    rank_copies: float, node_copies: float, width: int, bytes_compute: float, ep: int, ranks_per_node: int
) -> tuple[list[Collective], list[Collective]]:
    """Forward EP exchange of one MoE layer for one micro-batch with the flex dispatcher's hierarchical
    kernels, when the EP group spans ``N = ep/g`` domains of ``g`` members: (inside a domain, between domains).

    Between domains a token crosses the scale-out network once per destination domain holding any of its
    experts (``node_copies`` = :func:`ep_dispatch_tokens_flex` with the ``N`` domains as the ranks: an
    all-to-all over the ``N`` domains of ``node_copies·w·B_c``, wire ``(N−1)/N`` of it); inside the domain
    the receiving GPU forwards each copy to the local ranks holding its experts (``rank_copies`` = the
    per-rank copies: an all-to-all over the ``g`` local members, wire ``(g−1)/g``). Dispatch + combine
    each (2 calls); the two levels are summed (serial), as :func:`estimator.perf.network.all_to_all_time_s`.

    Source: DeepEP's internode normal kernels send one RDMA token per destination node carrying the mask
    of its local ranks (``SourceMeta.is_token_in_nvl_rank_bits``, ``NUM_MAX_NVL_PEERS`` = 8) and forward
    over NVLink (deepseek-ai/DeepEP ``csrc/kernels/internode.cu``); HybridEP's hierarchical design: RDMA
    between nodes, NVLink (TMA) inside (deepseek-ai/DeepEP hybrid-ep ``docs/README_Hybrid-EP.md``).
    """
    nodes = ep // ranks_per_node
    inside = [Collective("all_to_all", rank_copies * width * bytes_compute, ranks_per_node, 2)]
    between = [Collective("all_to_all", node_copies * width * bytes_compute, nodes, 2)]
    return inside, between


def ep_dispatch_tokens_imbalanced(
    tokens: float, topk: int, tokens_per_expert: Sequence[float], ep: int
) -> float:
    """Token copies the busiest EP rank receives per dispatch, for a given expert load.

    ``tokens_per_expert`` (any scale) is normalised to ``k·T·ep`` routed copies over the EP group;
    the busiest rank (experts placed contiguously, ``E/ep`` per rank) receives
    ``k·T·ep·max_rank_share`` — ``k·T`` when balanced (reference §2.6, imbalanced EP).
    """
    n = len(tokens_per_expert)
    if ep < 1 or n % ep:
        raise ValueError(f"tokens_per_expert has {n} experts, not divisible by ep={ep}")
    total = float(sum(tokens_per_expert))
    if total <= 0:
        raise ValueError("tokens_per_expert sums to 0")
    per_rank = n // ep
    busiest = max(sum(tokens_per_expert[r * per_rank : (r + 1) * per_rank]) for r in range(ep))
    return topk * tokens * ep * busiest / total


def ep_layer_collectives(dispatch_tokens: float, hidden: int, bytes_compute: float, ep: int) -> list[Collective]:
    """Forward EP all-to-alls of one MoE layer for one micro-batch: dispatch + combine.

    Buffer per all-to-all ``k·T·h·B_c`` (``dispatch_tokens`` from the balanced/imbalanced helpers);
    wire bytes ``(ep−1)/ep·k·T·h·B_c``, so one forward moves the seed's ``2·k·T·(ep−1)/ep·h·B_c``
    (seed P4, comm.py:167-181). The backward repeats both with gradients.
    """
    if all_true(ep <= 1):  # (arrays: rows with ep = 1 price 0, a group of one)
        return []
    return [Collective("all_to_all", dispatch_tokens * hidden * bytes_compute, ep, 2)]


def dp_step_collectives(
    params: float, bytes_grad: float, bytes_param: float, dp: int, distributed_optimizer: bool
) -> list[Collective]:
    """Data-parallel traffic of one optimizer step for ``params`` parameters held by this device.

    Distributed optimizer (ZeRO-1/2): reduce-scatter of the gradients (``B_g`` bytes each) and an
    all-gather of the updated parameters (``B_p``); otherwise one all-reduce of the gradients
    (reference §8 item 2; Rajbhandari et al. 2020 for ZeRO's equal volume).
    """
    if is_array(dp, params):  # per layout: 0 calls where there is no traffic
        calls = where((dp <= 1) | (params <= 0), 0.0, 1.0)
        if all_true(calls == 0.0):
            return []
    elif dp <= 1 or params <= 0:
        return []
    else:
        calls = 1.0
    if distributed_optimizer:
        return [
            Collective("reduce_scatter", params * bytes_grad, dp, calls),
            Collective("all_gather", params * bytes_param, dp, calls),
        ]
    return [Collective("all_reduce", params * bytes_grad, dp, calls)]


def cp_ring_layer_collectives(tokens_local: float, kv_dim: float, bytes_compute: float, cp: int) -> list[Collective]:
    """Forward ring attention (context parallelism) of one layer for one micro-batch.

    Each of ``cp−1`` steps passes the local K and V block, ``2·(s/cp)·b·kv_dim·B_c`` bytes, to the next
    rank (reference §3.2 CP detail); the backward passes K, V and their gradients (2× forward).
    ``tokens_local`` = ``b·s/cp``, ``kv_dim`` = ``n_kv·d_h`` per TP rank.
    """
    if all_true(cp <= 1):  # (arrays: rows with cp = 1 make cp − 1 = 0 calls)
        return []
    block = 2.0 * tokens_local * kv_dim * bytes_compute
    return [Collective("p2p", block, cp, cp - 1)]


def cp_ulysses_layer_collectives(
    tokens_local: float, q_width: float, kv_width: float, out_width: float, bytes_compute: float, cp: int
) -> list[Collective]:
    """Forward Ulysses (all-to-all) context parallelism of one layer (reference §3.2; Jacobs et al.
    2023, DeepSpeed-Ulysses §3): Q, K and V are re-sharded from sequence to heads before the
    attention core and the output back, four all-to-alls of ``b·(s/cp)·width·B_c`` each, with
    ``width`` = ``a·d_qk`` (Q), ``n_kv·d_qk`` (K), ``n_kv·d_v`` (V), ``a·d_v`` (output) per TP rank;
    ``kv_width`` is the mean of the K and V widths. The backward runs the four conjugate all-to-alls
    on the gradients (:data:`BACKWARD_COMM_FACTOR` ``cp_a2a``)."""
    if all_true(cp <= 1):  # (arrays: rows with cp = 1 price 0, a group of one)
        return []
    size = tokens_local * bytes_compute
    return [
        Collective("all_to_all", size * q_width, cp),
        Collective("all_to_all", size * kv_width, cp, 2),
        Collective("all_to_all", size * out_width, cp),
    ]


def cp_allgather_layer_collectives(tokens_local: float, kv_dim: float, bytes_compute: float,
                                   cp: int) -> list[Collective]:
    """Forward all-gather context parallelism of one layer (NVIDIA/TransformerEngine@d0067d0da
    ``AttnFuncWithCPAndKVAllGather``, "KV all-gather between CP ranks is exposed"; Llama 3 §3.3.2): K and V
    all-gathered over the CP group before the attention steps, two all-gathers of the gathered
    ``cp·(b·s/cp)·kv_dim·B_c`` bytes each (NCCL's convention: the output). The backward gathers K and V again and
    reduce-scatters dK and dV (:data:`BACKWARD_COMM_FACTOR` ``cp_ag`` 2, the reduce-scatters priced as
    all-gathers of the same size)."""
    if all_true(cp <= 1):  # (arrays: rows with cp = 1 price 0, a group of one)
        return []
    return [Collective("all_gather", cp * tokens_local * kv_dim * bytes_compute, cp, 2)]


#: Megatron ``cp_comm_type`` -> the CP dimension's name for its pass factors and collectives
CP_DIMS = {"p2p": "cp", "a2a": "cp_a2a", "allgather": "cp_ag"}


def cp_attention_steps(cp: int, cp_comm_type: str) -> int:
    """Core-attention kernels per layer and pass under CP: the ring's ``cp`` KV blocks, all-gather's 2 load-balanced
    query chunks (TE ``local_seq_chunk_ids``), Ulysses' one; 1 without CP."""
    if cp_comm_type == "a2a":
        return 1
    steps = cp if cp_comm_type == "p2p" else 2
    return where(cp > 1, steps, 1)


#: backward-pass comm relative to the forward pass, per dimension: TP/SP, EP and Ulysses CP
#: (``cp_a2a``) run the conjugate collectives once; ring CP passes K/V and their gradients (reference §3.2);
#: all-gather CP gathers K and V again and reduce-scatters their gradients (``cp_ag``)
BACKWARD_COMM_FACTOR = {"tp": 1.0, "ep": 1.0, "cp": 2.0, "cp_a2a": 1.0, "cp_ag": 2.0}


def pass_comm_factors(dim: str, full_recompute: float) -> tuple[float, float, float]:
    """Calls of a dimension's forward collectives per pass (forward, backward, recompute):
    ``(1, BACKWARD_COMM_FACTOR[dim], f)`` with ``f`` = 1 when full recompute re-runs the forward
    (reference §3.2; TP/EP ``1 : 1 : f``, ring CP ``1 : 2 : f``); ``f`` = the share of a stage's layers
    re-run whole (``recompute.method: block``) splits a stage's comm by pass. Their sum scales a layer's
    forward collectives to one micro-batch."""
    return 1.0, BACKWARD_COMM_FACTOR[dim], float(full_recompute)


def scaled(cs: list[Collective], factor: float) -> list[Collective]:
    """``cs`` with every count multiplied by ``factor`` (forward → forward + backward + recompute)."""
    return [Collective(c.kind, c.size_bytes, c.group_size, c.count * factor) for c in cs]


def pp_p2p_collectives(activation_bytes: float, num_transfers: float) -> list[Collective]:
    """Pipeline p2p: ``num_transfers`` sends of the boundary activation (or its gradient),
    ``b·(s/cp)·h·B_c`` bytes each, divided by ``tp`` under sequence parallelism (reference §8)."""
    if all_true(num_transfers <= 0):  # (arrays: rows with 0 transfers make 0 calls)
        return []
    return [Collective("p2p", activation_bytes, 2, num_transfers)]


def p2p_transfers_on_critical_path(pp: int, num_micro_batches: int, vpp: int = 1) -> float:
    """Serial p2p transfers on the critical path of one step: ``2·(m·v + p − 2)`` for ``p > 1``.

    Each micro-batch crosses the straggler's boundary once forward and once backward (``2·m·v``
    with ``v`` chunks); fill and drain add ``2·(p − 2)`` hops beyond the first. 0 when ``p = 1``.
    Replaces the reference's fitted ``MANUAL_P2P_RATIO = 0.002`` (reference §3.4) by transfer counts.
    """
    if pp <= 1:
        return 0.0
    return 2.0 * (num_micro_batches * vpp + pp - 2)
