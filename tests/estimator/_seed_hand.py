"""Hand arithmetic for the seed's configs A-F, written from the config facts and published numbers only
(no estimator code): the expert-parallel all-to-all time of one step under ``presets.fixed()``.

Facts: seed §1 (EP, TP, DP; PP = 2; 32 devices), the assumed run of ``estimator/experiments/seed.py`` (s = 4096,
b = 2, m = 8, full recompute; expert tensor parallelism 1, inferred from the recorded estimates by
``ndval reconstruct-seed``), the assumed model ``validation_cases/models/deepseek-v3-mini.yaml``
(12 layers, layer 0 dense, top-4 routing, h = 2048, bf16) and the A2 network of reference §3.3
(8 devices per node; HCCS 50 GB/s at efficiency 0.7 and 10 µs; RoCE 10 GB/s at 0.9 and 20 µs).
"""

from __future__ import annotations

from estimator.experiments.seed import SEED_CONFIGS

SEQ, MICRO_BATCH, MICRO_BATCHES, TOP_K, HIDDEN, BYTES_BF16 = 4096, 2, 8, 4, 2048, 2
ETP = 1  # the seed run's expert tensor parallelism (estimator/experiments/seed.py ASSUMED_RUN, inferred)
STRAGGLER_MOE_LAYERS = 6  # stage 1 holds layers 6..11, all MoE (layer 0 is the only dense one)
PASSES = 3  # forward, backward, recompute (full recompute)
CALLS_PER_PASS = 2  # dispatch and combine
NODE = 8
HCCS_B_PER_S, HCCS_LAT_S = 50e9 * 0.7, 10e-6
ROCE_B_PER_S, ROCE_LAT_S = 10e9 * 0.9, 20e-6


def a2a_bytes() -> float:
    """Bytes each device sends into one all-to-all: top-k routed copies of T = s·b tokens of h bf16 values."""
    return TOP_K * SEQ * MICRO_BATCH * HIDDEN * BYTES_BF16


def a2a_seconds(ep: int, stride: int) -> float:
    """One all-to-all over an EP group whose members are ``stride`` device ids apart (Megatron's expert
    order etp → ep → edp → pp: the stride is the expert-TP degree, 1 for the seed run whatever its TP).

    ``S/ep`` bytes go to each of the ``ep − 1`` peers; peers inside the node of 8 over HCCS, the rest over
    RoCE, one latency per peer, levels in series.
    """
    in_node = min(ep, max(1, NODE // stride))
    chunk = a2a_bytes() / ep
    hccs_peers, roce_peers = in_node - 1, ep - in_node
    return (hccs_peers * (chunk / HCCS_B_PER_S + HCCS_LAT_S)
            + roce_peers * (chunk / ROCE_B_PER_S + ROCE_LAT_S))


def ep_wait_seconds(label: str) -> float:
    """EP_WAIT of one step: m micro-batches × 6 MoE layers × 3 passes × 2 all-to-alls (ep_comm_overlap 0)."""
    seed = SEED_CONFIGS[label]
    calls = MICRO_BATCHES * STRAGGLER_MOE_LAYERS * PASSES * CALLS_PER_PASS
    return calls * a2a_seconds(seed.ep, ETP)
