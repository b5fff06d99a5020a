"""Unit tests of the pure step-time formulas (compute, comm, network, pipeline) on toy inputs.

Expected values are written as commented arithmetic; inputs are synthetic.
"""

from __future__ import annotations

import math

import pytest

from estimator.perf import comm, compute, network, pipeline

# --------------------------------------------------------------------------- compute


def test_gpt_layer_matches_narayanan_24bsh2_plus_4bs2h() -> None:
    # Narayanan et al. 2021: forward FLOPs per layer = 24·b·s·h² + 4·b·s²·h (GeLU MLP, f = 4h).
    b, s, h, a = 2, 128, 64, 4
    t = b * s
    fwd = (
        compute.attention_projection_flops(t, h, a, a, h // a)
        + compute.attention_core_flops(t, s, a, h // a, h // a)
        + compute.mlp_flops(t, h, 4 * h, "gelu")
    )
    assert fwd == 24 * b * s * h**2 + 4 * b * s**2 * h


def test_gqa_projection_counts_fewer_kv_heads() -> None:
    # T=1, h=8, a=4, n_kv=2, d=2: Q 2·8·8=128, K,V 2·(2·8·4)=128, O 2·8·8=128 -> 384
    assert compute.attention_projection_flops(1, 8, 4, 2, 2) == 384


def test_swiglu_has_three_matmuls() -> None:
    # 3 · 2·T·h·f = 3·2·1·4·16 = 384
    assert compute.mlp_flops(1, 4, 16, "swiglu") == 384
    with pytest.raises(ValueError, match="activation"):
        compute.mlp_flops(1, 4, 16, "relu6")


def test_mla_projection_toy() -> None:
    # T=1, h=4, a=2, r_q=2, r_kv=3, d_nope=2, d_rope=1, d_v=2
    # q: 2·4·2 + 2·2·(2·3)=16+24=40; kv: 2·4·(3+1)=32 + 2·3·(2·(2+2))=48 -> 80; out 2·(2·2)·4=32
    assert compute.mla_projection_flops(1, 4, 2, 2, 3, 2, 1, 2) == 40 + 80 + 32
    # without q compression: q = 2·4·6 = 48
    assert compute.mla_projection_flops(1, 4, 2, None, 3, 2, 1, 2) == 48 + 80 + 32


def test_moe_topk_router_and_shared() -> None:
    # T=1, h=2, E=4, k=2, f_e=3, 1 shared of f=5, swiglu:
    # router 2·2·4=16; routed 2·(3·2·2·3)=72; shared 3·2·2·5=60
    assert compute.moe_flops(1, 2, 4, 2, 3, 1, 5, "swiglu") == 16 + 72 + 60
    # imbalance 1.5 scales only the routed part
    assert compute.moe_flops(1, 2, 4, 2, 3, 1, 5, "swiglu", 1.5) == 16 + 108 + 60


def test_ep_rank_load_imbalance() -> None:
    # 4 experts on 2 ranks: loads (1+3, 2+2) = (4, 4) balanced; (6+2, 1+1) -> max 8 / mean 5
    assert compute.ep_rank_load_imbalance([1, 3, 2, 2], 2) == 1.0
    assert compute.ep_rank_load_imbalance([6, 2, 1, 1], 2) == pytest.approx(1.6)
    with pytest.raises(ValueError, match="divisible"):
        compute.ep_rank_load_imbalance([1, 1, 1], 2)


def test_pass_factors_and_recompute() -> None:
    assert compute.pass_flops(10.0, compute.recompute_forward_fraction("full", 0.2)) == (10.0, 20.0, 10.0)
    assert compute.pass_flops(10.0, compute.recompute_forward_fraction("selective", 0.2)) == (10.0, 20.0, 2.0)
    assert compute.pass_flops(10.0, compute.recompute_forward_fraction("none", 0.2))[2] == 0.0
    with pytest.raises(ValueError):
        compute.recompute_forward_fraction("partial", 0.2)


# --------------------------------------------------------------------------- comm bytes


def test_wire_bytes_ring_bounds() -> None:
    assert comm.wire_bytes(comm.Collective("all_reduce", 100.0, 4)) == 150.0  # 2·3/4·100
    assert comm.wire_bytes(comm.Collective("all_gather", 100.0, 4, 2)) == 150.0  # 2·3/4·100
    assert comm.wire_bytes(comm.Collective("all_to_all", 80.0, 8)) == 70.0  # 7/8·80
    assert comm.wire_bytes(comm.Collective("p2p", 5.0, 2, 3)) == 15.0
    assert comm.wire_bytes(comm.Collective("all_reduce", 100.0, 1)) == 0.0


def test_tp_sp_same_bytes_as_all_reduce() -> None:
    ar = sum(comm.wire_bytes(c) for c in comm.tp_layer_collectives(64.0, 4, sequence_parallel=False))
    sp = sum(comm.wire_bytes(c) for c in comm.tp_layer_collectives(64.0, 4, sequence_parallel=True))
    # forward: 2 all-reduces (attention, MLP) of 64 B over 4: 2·2·3/4·64 = 192
    assert ar == sp == 192.0
    one_block = comm.tp_layer_collectives(64.0, 4, sequence_parallel=False, blocks=1)
    assert sum(comm.wire_bytes(c) for c in one_block) == 96.0
    assert comm.tp_layer_collectives(64.0, 1, True) == []
    # forward + backward: ×(1 + 1)
    both = comm.scaled(comm.tp_layer_collectives(64.0, 4, False), 1 + comm.BACKWARD_COMM_FACTOR["tp"])
    assert sum(comm.wire_bytes(c) for c in both) == 384.0


def test_ep_bytes_match_seed_formula() -> None:
    # seed P4: forward EP bytes = k·s·b/cp·(ep−1)/ep·h·B_c·2 (dispatch + combine)
    k, tokens, h, bc, ep = 4, 4096.0, 1024, 2.0, 8
    cs = comm.ep_layer_collectives(comm.ep_dispatch_tokens_balanced(tokens, k), h, bc, ep)
    assert sum(comm.wire_bytes(c) for c in cs) == pytest.approx(2 * k * tokens * (ep - 1) / ep * h * bc)
    assert comm.ep_layer_collectives(100.0, h, bc, 1) == []


def test_ep_imbalanced_busiest_rank() -> None:
    # balanced distribution = balanced volume; skewed: rank 0 gets 3/4 of 2·ep·T copies
    assert comm.ep_dispatch_tokens_imbalanced(10.0, 2, [1, 1, 1, 1], 2) == 20.0
    # loads (3, 1) of 4 -> 2·10·2·3/4 = 30
    assert comm.ep_dispatch_tokens_imbalanced(10.0, 2, [2, 1, 0.5, 0.5], 2) == 30.0


def test_dp_distributed_optimizer_rs_plus_ag() -> None:
    rs_ag = comm.dp_step_collectives(1000.0, 4.0, 2.0, 8, distributed_optimizer=True)
    assert [c.kind for c in rs_ag] == ["reduce_scatter", "all_gather"]
    # 7/8·4000 + 7/8·2000 = 5250
    assert sum(comm.wire_bytes(c) for c in rs_ag) == 5250.0
    ar = comm.dp_step_collectives(1000.0, 4.0, 2.0, 8, distributed_optimizer=False)
    assert sum(comm.wire_bytes(c) for c in ar) == 7000.0  # 2·7/8·4000
    assert comm.dp_step_collectives(1000.0, 4.0, 2.0, 1, True) == []


def test_cp_ring_and_p2p_counts() -> None:
    # ring forward: (cp−1) sends of 2·T·kv·B = 3·2·10·4·2 = 480 bytes; with backward ×3
    cs = comm.cp_ring_layer_collectives(10.0, 4, 2.0, 4)
    assert sum(comm.wire_bytes(c) for c in cs) == 480.0
    both = comm.scaled(cs, 1 + comm.BACKWARD_COMM_FACTOR["cp"])
    assert sum(comm.wire_bytes(c) for c in both) == 1440.0
    assert comm.p2p_transfers_on_critical_path(1, 8) == 0.0
    assert comm.p2p_transfers_on_critical_path(2, 8) == 16.0  # 2·(8+2−2)
    assert comm.p2p_transfers_on_critical_path(4, 8, vpp=2) == 36.0  # 2·(16+4−2)


# --------------------------------------------------------------------------- network

LEVELS = [network.Level(8, 100.0, 1.0, 0.0), network.Level(None, 10.0, 1.0, 0.0)]


def test_group_span_follows_stride() -> None:
    assert network.members_per_domain(8, 1, LEVELS) == [8, 8]
    assert network.members_per_domain(8, 2, LEVELS) == [4, 8]  # 4 members per node, 2 nodes
    assert network.members_per_domain(4, 16, LEVELS) == [1, 4]  # every member in its own node
    assert network.level_fanout(8, 2, LEVELS) == [4.0, 2.0]


def test_ring_all_reduce_intra_node() -> None:
    # 8 in one node: 2·7/8·1e9 B / 100e9 B/s = 0.0175 s
    assert network.ring_time_s("all_reduce", 1e9, 8, 1, LEVELS) == pytest.approx(0.0175)


def test_ring_all_reduce_hierarchical() -> None:
    # 16 members stride 1: n0=8 (1e9 B at 100 GB/s), n1=2 on the 1/8 shard at 10 GB/s
    # 2·7/8·1e9/100e9 + 2·1/2·(1e9/8)/10e9 = 0.0175 + 0.0125
    assert network.ring_time_s("all_reduce", 1e9, 16, 1, LEVELS) == pytest.approx(0.03)
    # all-gather: half of it
    assert network.ring_time_s("all_gather", 1e9, 16, 1, LEVELS) == pytest.approx(0.015)


def test_latency_and_efficiency() -> None:
    lv = [network.Level(None, 100.0, 0.5, 10.0)]
    # 2·1/2·1e9/(50e9) + 2·1·10e-6
    assert network.ring_time_s("all_reduce", 1e9, 2, 1, lv) == pytest.approx(0.02 + 20e-6)


def test_all_to_all_splits_levels() -> None:
    # 16 members, stride 1: 7 peers in-node, 8 across; chunk 1.6e9/16 = 1e8
    # 7·1e8/100e9 + 8·1e8/10e9 = 0.007 + 0.08
    assert network.all_to_all_time_s(1.6e9, 16, 1, LEVELS) == pytest.approx(0.087)


def test_p2p_level_by_distance() -> None:
    assert network.p2p_time_s(1e9, 4, LEVELS) == pytest.approx(0.01)  # same node
    assert network.p2p_time_s(1e9, 8, LEVELS) == pytest.approx(0.1)  # next node


def test_exposed_overlap() -> None:
    assert network.exposed_s(2.0, 0.25) == 1.5
    with pytest.raises(ValueError):
        network.exposed_s(1.0, 1.5)


def test_time_falls_with_bandwidth() -> None:
    slow = [network.Level(8, 50.0), network.Level(None, 5.0)]
    c = comm.Collective("all_reduce", 1e8, 32)
    assert network.collective_time_s(c, 1, slow) > network.collective_time_s(c, 1, LEVELS)


# --------------------------------------------------------------------------- pipeline


def test_1f1b_formula_and_p1() -> None:
    # Σ + (m−1)·max = 3 + 5 + 3·5 = 23
    assert pipeline.one_f_one_b_time([3.0, 5.0], 4) == 23.0
    assert pipeline.one_f_one_b_time([3.0], 4) == 12.0


def test_interleaved_reduces_bubble_by_v() -> None:
    # equal stages s=1, p=4, m=8: bubble 1F1B = 3, interleaved v=2 → 1.5 (Narayanan: (p−1)/(v·m))
    s = [1.0] * 4
    assert pipeline.one_f_one_b_time(s, 8) - 8 == 3.0
    assert pipeline.interleaved_time(s, 8, 2) - 8 == 1.5
    assert pipeline.interleaved_time(s, 8, 1) == pipeline.one_f_one_b_time(s, 8)


def test_zero_bubble_v_zero_when_b_equals_w_and_f() -> None:
    # F = B = W: F + B − 2W = 0 → T = m·3
    assert pipeline.zero_bubble_v_time([1.0, 1.0], [1.0, 1.0], [1.0, 1.0], 4) == 12.0
    # extra comm in F (0.5): residual 0.5 → 4·3.5 + 1·0.5
    assert pipeline.zero_bubble_v_time([1.5, 1.0], [1.0, 1.0], [1.0, 1.0], 4) == 14.5


def test_straggler_last_on_ties() -> None:
    assert pipeline.straggler_index([2.0, 5.0, 5.0, 1.0]) == 2


def _1f1b_step(s: list[float], ep: list[float], ratio: float, m: int, tails: list[float] | None = None):
    hidden = [ratio * e for e in ep]
    tails = tails or [0.0] * len(s)
    return pipeline.step_time(
        lambda h: pipeline.one_f_one_b_time([x - y for x, y in zip(s, h, strict=True)], m), hidden, s, m, tails
    )


def test_seed_p3_derivation_bubble_equals_min_for_p2() -> None:
    # seed §2.3: p=2 1F1B, BUBBLE = Σ + (m−1)max − m·max = min(s)
    st = _1f1b_step([3.0, 5.0], [0.0, 0.0], 0.0, 6)
    assert st.bubble == 3.0 and st.straggler_stage == 1 and st.total == 33.0


@pytest.mark.parametrize("delta", [(1.0, 1.0), (0.0, 1.0), (1.0, 0.0), (4.0, 0.0)])
def test_seed_p3_bubble_never_shrinks_when_ep_added(delta: tuple[float, float]) -> None:
    # seed table: Δ on both, on the straggler only, on the other only (also switching the straggler)
    s, m = [3.0, 5.0], 6
    before = _1f1b_step(s, [0.0, 0.0], 0.0, m).bubble
    s2 = [a + d for a, d in zip(s, delta, strict=True)]
    assert _1f1b_step(s2, list(delta), 0.0, m).bubble >= before


def test_ep_overlap_hides_ep_of_the_other_stage_only() -> None:
    # stages 4 and 6 with 1 s of EP each, m = 6, ratio 1:
    # k=0: (4, 6−1) → 9 + 5·5 = 34; k=1: (4−1, 6) → 9 + 5·6 = 39 → straggler 1, total 39,
    # work 6·6 = 36, BUBBLE 3 = min(s_i − ep_i) (seed §4.3.2); ratio 0: 4 + 6 + 5·6 = 40, BUBBLE 4
    st = _1f1b_step([4.0, 6.0], [1.0, 1.0], 1.0, 6)
    assert (st.total, st.straggler_stage, st.bubble) == (39.0, 1, 3.0)
    assert _1f1b_step([4.0, 6.0], [1.0, 1.0], 0.0, 6).bubble == 4.0
    # p = 1: nothing to hide in
    assert _1f1b_step([6.0], [1.0], 1.0, 6).total == 36.0
    assert pipeline.ep_overlapped_stage_time(4.0, 1.0, 0.0, 4) == 4.0
    assert pipeline.ep_overlapped_stage_time(4.0, 1.0, 1.0, 1) == 4.0  # dense stage (ep = 1)
    assert pipeline.ep_overlapped_stage_time(4.0, 1.0, 1.0, 4) == 3.0
    with pytest.raises(ValueError):
        pipeline.ep_overlapped_stage_time(4.0, 1.0, 1.5, 4)


def test_ep_overlap_total_monotone_when_straggler_switches() -> None:
    # stage 0: 10 compute + 10 EP; stage 1: s grows past stage 0's s' — total never falls
    totals = [_1f1b_step([20.0, x], [10.0, 0.0], 1.0, 8).total for x in (9.0, 9.9, 10.0, 10.1, 11.0, 25.0)]
    assert totals == sorted(totals)


def test_dp_tail_adds_to_total() -> None:
    # 1F1B (3, 5), m=2 → 3+5+5 = 13; + max tail 2 = 15; straggler 1 work 10+1 → bubble 4
    st = _1f1b_step([3.0, 5.0], [0.0, 0.0], 0.0, 2, [2.0, 1.0])
    assert st.total == 15.0 and st.straggler_stage == 1 and st.bubble == 4.0


def test_bubble_fraction_seed_formula() -> None:
    assert pipeline.bubble_fraction_1f1b(2, 8) == pytest.approx(1 / 9)
    assert math.isclose(pipeline.bubble_fraction_1f1b(1, 8), 0.0)


def test_mla_up_projection_toy() -> None:
    # T=1, a=2, r_q=2, r_kv=3, d_nope=2, d_rope=1, d_v=2: q up 2·2·(2·3)=24, kv up 2·3·(2·4)=48
    assert compute.mla_up_projection_flops(1, 2, 2, 3, 2, 1, 2) == 72
    assert compute.mla_up_projection_flops(1, 2, None, 3, 2, 1, 2) == 48
