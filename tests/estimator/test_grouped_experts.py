"""Grouped experts (issue 26): the routed experts as Megatron-Core's TEGroupedMLP runs them — one
activation kernel over all local experts' tokens, and the grouped GEMM's efficiency by tokens per
expert where the hardware has a measured table (SimuMax's B200 ``group_matmul`` table). Hand-computed
values in the comments; the efficiencies here are synthetic."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import estimator
from estimator.config.schema import ModelConfig
from estimator.inputs.hardware import DeviceEfficiency, preset
from estimator.perf import operators
from estimator.perf.roofline import kernel_group_s, op_pass_s
from tests.estimator._factories import SYNTHETIC_MOE_MODEL, synthetic_run

#: synthetic efficiencies: flat grouped factor 0.4; by tokens: forward 0.2 below 1000 tokens, 0.5 from
#: 1000; backward 0.1 / 0.25
EFF = DeviceEfficiency(hbm_gb_s=1000.0, matmul=[(0.0, 0.8)], attention_fwd=0.7, attention_bwd=0.6,
                       memory=[(0.0, 0.9)], kernel_latency_us=10.0, grouped_matmul=0.4,
                       grouped_matmul_fwd_by_tokens=[(0.0, 0.2), (1000.0, 0.5)],
                       grouped_matmul_bwd_by_tokens=[(0.0, 0.1), (1000.0, 0.25)])
PEAK = 1e15  # FLOP/s
MODEL = ModelConfig.model_validate(SYNTHETIC_MOE_MODEL)


def _dims(activation: bool, by_tokens: bool) -> operators.LayerDims:
    return operators.LayerDims(tokens=1024, norm_tokens=1024, batch=1, seq=1024, tp=1, cp=1, b=2, flash=True,
                               ring_blocks=1, imbalance=1.0, grouped_activation=activation,
                               grouped_by_tokens=by_tokens)


def _ops(activation: bool, by_tokens: bool) -> dict[str, operators.Op]:
    return {op.name: op for op in operators.mlp_ops(MODEL, _dims(activation, by_tokens), True, 4)}


def test_grouped_gemm_by_tokens_per_expert() -> None:
    # 1e12 FLOPs: 500 tokens per expert forward 1e12 / (1e15·0.2) = 5 ms; 2000 tokens 1e12 / (1e15·0.5) = 2 ms;
    # backward at 2000 tokens 1e12 / (1e15·0.25) = 4 ms; no tokens: the flat 0.4 → 2.5 ms
    def t(tokens: float, backward: bool = False) -> float:
        return kernel_group_s(1e12, 0.0, 1, "gemm", backward, EFF, PEAK, "grouped", grouped_tokens=tokens)

    assert t(500) == pytest.approx(5e-3, rel=1e-12)
    assert t(2000) == pytest.approx(2e-3, rel=1e-12)
    assert t(2000, backward=True) == pytest.approx(4e-3, rel=1e-12)
    assert t(0) == pytest.approx(2.5e-3, rel=1e-12)
    # a low-precision grouped GEMM reads the table too (at the FP8 peak, peak_scale 2): 1e12 / (2e15·0.5) = 1 ms
    assert kernel_group_s(1e12, 0.0, 1, "gemm", False, EFF, PEAK, "grouped@fp8", 2.0, 2000) == pytest.approx(
        1e-3, rel=1e-12)


def test_without_a_table_the_flat_factor_applies() -> None:
    plain = EFF.model_copy(update={"grouped_matmul_fwd_by_tokens": None, "grouped_matmul_bwd_by_tokens": None})
    assert kernel_group_s(1e12, 0.0, 1, "gemm", False, plain, PEAK, "grouped", grouped_tokens=2000) == pytest.approx(
        2.5e-3, rel=1e-12)


def test_arrays_of_layouts_take_the_table_per_row() -> None:
    # rows of 0 / 500 / 2000 tokens: flat 0.4 → 2.5 ms, 0.2 → 5 ms, 0.5 → 2 ms
    got = kernel_group_s(1e12, 0.0, 1, "gemm", False, EFF, PEAK, "grouped",
                         grouped_tokens=np.array([0.0, 500.0, 2000.0]))  # type: ignore[arg-type]
    assert np.allclose(got, [2.5e-3, 5e-3, 2e-3], rtol=1e-12)


def test_expert_gemms_carry_their_tokens_per_expert() -> None:
    # 1024 tokens · top-2 over 4 local experts = 512 tokens per expert GEMM
    on, off = _ops(False, True), _ops(False, False)
    assert on["expert_fc1"].grouped_tokens == on["expert_fc2"].grouped_tokens == 512.0
    assert off["expert_fc1"].grouped_tokens == 0.0
    # forward compute of fc1 at 512 tokens: count · FLOPs / (1e15 · 0.2)
    fc1 = replace(on["expert_fc1"], bytes=0.0)
    assert op_pass_s(fc1, False, EFF, PEAK) == pytest.approx(4 * fc1.flops / 0.2e15, rel=1e-12)


def test_activation_is_one_kernel_over_the_local_experts() -> None:
    # SwiGLU over 512 tokens per expert: (2·32 + 32)·512·2 B = 98,304 B each; grouped: 4 · 98,304 = 393,216 B
    # in one operator (backward 1.5×: 589,824 B), one kernel per pass
    per, one = _ops(False, False)["expert_activation"], _ops(True, False)["expert_activation"]
    assert (per.count, per.bytes, per.kernels) == (4.0, 98304.0, 1.0)
    assert (one.count, one.bytes, one.bw_bytes, one.kernels, one.bw_kernels) == (1.0, 393216.0, 589824.0, 1.0, 1.0)
    # priced: 4 · (98,304 / (1e12·0.9) + 10 µs) = 40.437 µs per expert kernels; one kernel 393,216 / 0.9e12 + 10 µs
    assert op_pass_s(per, False, EFF, PEAK) == pytest.approx(4 * (98304 / 0.9e12 + 1e-5), rel=1e-12)
    assert op_pass_s(one, False, EFF, PEAK) == pytest.approx(393216 / 0.9e12 + 1e-5, rel=1e-12)


def test_switches_off_leave_the_operators_unchanged() -> None:
    """Both off: the expert operators are exactly the ones before the mechanisms (bit-identical numbers)."""
    assert list(_ops(False, False).values()) == operators.mlp_ops(MODEL, _dims(False, False), True, 4)
    experts = [op for op in operators.mlp_ops(MODEL, _dims(False, False), True, 4) if op.name.startswith("expert")]
    assert operators.grouped_experts(experts, _dims(False, False), 512.0) == experts


def test_b200_carries_simumax_measured_table() -> None:
    eff = preset("b200").efficiency
    assert eff is not None and eff.grouped_matmul_fwd_by_tokens and eff.grouped_matmul_bwd_by_tokens
    # the medians of the table's bins (4 digits): 1024-2047 tokens forward 0.4262, backward 0.3815
    assert eff.grouped_matmul_by_tokens(1232.0, False) == 0.4262
    assert eff.grouped_matmul_by_tokens(1232.0, True) == 0.3815
    assert "group_matmul.accurate_efficient_factor" in eff.sources["grouped_matmul_fwd_by_tokens"]
    for name in ("gb200-nvl72", "gb300-nvl72", "b300"):  # carried over as the same SM (stated)
        other = preset(name).efficiency
        assert other is not None and other.grouped_matmul_fwd_by_tokens == eff.grouped_matmul_fwd_by_tokens
        assert "assumption" in other.sources["grouped_matmul_fwd_by_tokens"]
    h100 = preset("h100-80g").efficiency
    assert h100 is not None and h100.grouped_matmul_fwd_by_tokens is None  # no measured table: flat 0.60


def test_the_switches_reprice_a_moe_step_and_off_restores_it() -> None:
    """A synthetic MoE run on B200 (h 4096, 4 local experts of 2048 tokens each, compute-bound GEMMs): each
    mechanism changes its step time; both off give the model before them."""
    model = {**SYNTHETIC_MOE_MODEL, "hidden_size": 4096, "ffn_hidden_size": 8192, "moe_ffn_hidden_size": 4096}

    def total(**options: bool) -> float:
        run = synthetic_run(model, hardware="b200", options=options,
                            train={"seq_length": 4096, "micro_batch_size": 1, "num_micro_batches": 4})
        return estimator.estimate_perf(estimator.load_config(run)).total

    on, off = total(), total(grouped_expert_activation=False, grouped_gemm_by_tokens=False)
    assert on != off
    assert total(grouped_expert_activation=False) not in (on, off)
    assert total(grouped_gemm_by_tokens=False) not in (on, off)


def test_bad_table_rows_are_refused() -> None:
    with pytest.raises(ValueError, match="grouped_matmul_fwd_by_tokens"):
        EFF.model_validate({**EFF.model_dump(), "grouped_matmul_fwd_by_tokens": [(0.0, 1.5)]})


def test_flex_dispatch_sends_one_copy_per_destination_rank() -> None:
    """E = 8 experts, k = 2, ep = 4 (2 experts per rank): a rank misses both of a token's experts with
    C(6,2)/C(8,2) = 15/28, so a token reaches 4·(1 − 15/28) = 13/7 ranks: 1,000 tokens → 1,857.14 copies
    (alltoall: k·T = 2,000); k = 1: one rank per token; ep = 1: the token stays (T)."""
    from estimator.perf import comm

    assert comm.ep_dispatch_tokens_flex(1000.0, 2, 8, 4) == pytest.approx(1000 * 13 / 7, rel=1e-12)
    assert comm.ep_dispatch_tokens_flex(1000.0, 1, 8, 4) == pytest.approx(1000.0, rel=1e-12)
    assert comm.ep_dispatch_tokens_flex(1000.0, 2, 8, 1) == pytest.approx(1000.0, rel=1e-12)
    assert comm.ep_dispatch_tokens_flex(1000.0, 8, 8, 8) == pytest.approx(8000.0, rel=1e-12)  # every rank
    got = comm.ep_dispatch_tokens_flex(1000.0, 2, 8, np.array([1, 4]))  # type: ignore[arg-type]
    assert np.allclose(got, [1000.0, 1000 * 13 / 7], rtol=1e-12)


def test_flex_dispatcher_prices_less_ep_traffic_and_the_switch_restores_alltoall() -> None:
    """The synthetic MoE run (8 experts, top-2, ep 2): flex sends 2·(1 − C(4,2)/C(8,2)) = 2·(1 − 6/28) = 1.571
    copies per token instead of 2, so EP_COMM falls by 1.571/2 (same collective, fewer bytes: latency aside);
    options.flex_dispatch_per_rank false gives the alltoall numbers bit for bit."""
    def report(dispatcher: str | None, switch: bool = True) -> estimator.PerfReport:
        run = synthetic_run(parallel={"tp": 1, "pp": 2, "dp": 4, "ep": 2, "moe_token_dispatcher": dispatcher},
                            options={"flex_dispatch_per_rank": switch})
        return estimator.estimate_perf(estimator.load_config(run))

    a2a, flex, off = report(None), report("flex"), report("flex", switch=False)
    assert flex.perf_parts["EP_COMM"] < a2a.perf_parts["EP_COMM"]
    assert off.perf_parts == a2a.perf_parts and off.total == a2a.total


def _fused_dims(fused: bool) -> operators.LayerDims:
    return replace(_dims(True, True), grouped_fused=fused)


def test_op_fuser_runs_each_expert_gemm_and_cast_as_one_kernel() -> None:
    """4 local experts: fc1's 4 copies of ``[512, 64] @ [64, 64]`` (2·512·64·64 = 4,194,304 FLOPs each) become
    one operator of 16,777,216 FLOPs with one forward kernel (two backward), so one kernel latency instead of
    four; a synthetic cast of the experts (name ``expert_…``, variant ``quantize``) likewise; the router,
    permute and shared experts are untouched."""
    from estimator.perf.operators import Op, fused_grouped_experts

    plain = operators.mlp_ops(MODEL, _fused_dims(False), True, 4)
    cast = Op("expert_fc1_quantize", "elementwise", ("moe",), 0.0, 1000.0, 1.0, 0.0, 600.0, 1.0, 4.0, "quantize")
    fused = {op.name: op for op in fused_grouped_experts([*plain, cast], _fused_dims(True))}
    fc1 = fused["expert_fc1"]
    assert (fc1.count, fc1.flops, fc1.kernels, fc1.bw_kernels, fc1.grouped_tokens) == (1.0, 16777216.0, 1.0, 2.0, 512.0)
    assert (fused["expert_fc1_quantize"].count, fused["expert_fc1_quantize"].bytes) == (1.0, 4000.0)
    assert fused["expert_fc1_quantize"].bw_bytes == 2400.0
    before = {op.name: op for op in plain}
    for name in ("router", "permute", "shared_fc1", "expert_activation"):
        assert fused[name] == before[name]
    # priced (no by-tokens table): one latency, 16,777,216 FLOPs at 1e15·0.4, 1.34e6 B at 0.9 TB/s → max(...)
    flat = EFF.model_copy(update={"grouped_matmul_fwd_by_tokens": None, "grouped_matmul_bwd_by_tokens": None})
    one = op_pass_s(fc1, False, flat, PEAK)
    assert one == pytest.approx(max(16777216 / 0.4e15, fc1.bytes / 0.9e12 + 1e-5), rel=1e-12)
    assert op_pass_s(before["expert_fc1"], False, flat, PEAK) == pytest.approx(
        4 * max(4194304 / 0.4e15, before["expert_fc1"].bytes / 0.9e12 + 1e-5), rel=1e-12)
    assert fused_grouped_experts(plain, _fused_dims(False)) == plain  # off: unchanged


@pytest.mark.parametrize(("recipe", "fused"), [(None, True), ("mxfp8", True), ("nvfp4", True), ("tensorwise", True),
                                               ("delayed", False), ("blockwise", False)])
def test_op_fuser_applies_where_te_has_grouped_quantization(recipe: str | None, fused: bool) -> None:
    """TE's op-fuser grouped-tensor path: MXFP8, NVFP4, FP8 current scaling and BF16; delayed scaling and
    FP8 block scaling fall back to per-expert split quantization."""
    from estimator.perf.context import config_context
    from estimator.perf.roofline import layer_dims

    precision = {"compute": "bf16", **({"linear_recipe": recipe} if recipe else {})}
    cfg = estimator.load_config(synthetic_run(hardware="b200", train={"seq_length": 128, "micro_batch_size": 1,
                                                                      "num_micro_batches": 4, "te_op_fuser": True},
                                              precision=precision))
    assert layer_dims(cfg, config_context(cfg)).grouped_fused is fused
    off = estimator.load_config(cfg, {"options.grouped_op_fuser": False})
    assert layer_dims(off, config_context(off)).grouped_fused is False


def test_flex_dispatch_across_nodes_sends_one_copy_per_destination_node() -> None:
    """E = 16 experts, k = 2, ep = 16 over 2 domains of g = 8 (one expert per rank, 8 per domain).
    Per rank: a token reaches its k = 2 ranks (C(15,2)/C(16,2) = 105/120 miss → 16·(1 − 7/8) = 2 copies).
    Per domain: a domain misses both experts with C(8,2)/C(16,2) = 28/120 = 7/30, so a token reaches
    2·(1 − 7/30) = 46/30 domains, of which (N−1)/N = 1/2 are remote: 23/30 copies cross the network per token,
    where the flat all-to-all sends 8/16 of its 2 copies = 1 copy per token (30/30)."""
    from estimator.perf import comm, network

    t, w, b = 1000.0, 64, 2.0
    rank_copies = comm.ep_dispatch_tokens_flex(t, 2, 16, 16)
    node_copies = comm.ep_dispatch_tokens_flex(t, 2, 16, 2)
    assert rank_copies == pytest.approx(2000.0, rel=1e-12)
    assert node_copies == pytest.approx(t * 46 / 30, rel=1e-12)
    inside, between = comm.ep_layer_collectives_by_node(rank_copies, node_copies, w, b, 16, 8)
    assert [(c.kind, c.group_size, c.count) for c in inside + between] == [("all_to_all", 8, 2), ("all_to_all", 2, 2)]
    assert comm.wire_bytes(between[0]) == pytest.approx(2 * t * 23 / 30 * w * b, rel=1e-12)  # 2 calls
    assert comm.wire_bytes(inside[0]) == pytest.approx(2 * 2000 * 7 / 8 * w * b, rel=1e-12)
    # priced on a synthetic two-level network (NVLink domain of 8 at 400 GB/s, network 50 GB/s, no latency):
    # inside 7·(2000·128/8)/400e9 per call, between over the 2 domains at stride 8: 1·(t·46/30·128/2)/50e9
    levels = (network.Level(8, 400.0), network.Level(None, 50.0))
    inner_s = network.collectives_time_s(inside, 1, levels)
    outer_s = network.collectives_time_s(between, 8, levels)
    assert inner_s == pytest.approx(2 * 7 * (2000 * 128 / 8) / 400e9, rel=1e-12)
    assert outer_s == pytest.approx(2 * (t * 46 / 30 * 128 / 2) / 50e9, rel=1e-12)
    flat_s = network.collectives_time_s(comm.ep_layer_collectives(rank_copies, w, b, 16), 1, levels)
    assert flat_s == pytest.approx(2 * (7 * 2000 * 128 / 16 / 400e9 + 8 * 2000 * 128 / 16 / 50e9), rel=1e-12)
    assert inner_s + outer_s < flat_s


def test_flex_dispatch_per_node_prices_less_ep_time_across_nodes_and_the_switch_restores_it() -> None:
    """ep 16 over two 8-GPU nodes (h100-80g): the per-node exchange prices less EP time than the flat
    all-to-all; options.flex_dispatch_per_node false gives the per-rank numbers bit for bit; inside one
    node (ep 8) both are the same."""
    model = {**SYNTHETIC_MOE_MODEL, "num_experts": 16}

    def report(ep: int, switch: bool) -> estimator.PerfReport:
        run = synthetic_run(model, parallel={"tp": 1, "pp": 1, "dp": 16, "ep": ep, "moe_token_dispatcher": "flex"},
                            options={"flex_dispatch_per_node": switch})
        return estimator.estimate_perf(estimator.load_config(run))

    on, off = report(16, True), report(16, False)
    assert 0 < on.perf_parts["EP_COMM"] < off.perf_parts["EP_COMM"]
    inside_on, inside_off = report(8, True), report(8, False)
    assert inside_on.perf_parts == inside_off.perf_parts and inside_on.total == inside_off.total
