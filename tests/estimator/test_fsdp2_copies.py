"""FSDP2's all-gather copy-out and reduce-scatter copy-in on the compute stream (issue 26,
``operators.fsdp2_copy_op``, ``roofline.fsdp2_copy_bytes``). Hand-computed values in the comments; the
example configs are the shipped Llama 3 8B one under the ``fsdp2`` profile."""

from __future__ import annotations

from dataclasses import replace

import pytest

import estimator
from estimator.perf import context, operators
from estimator.perf.roofline import fsdp2_copy_bytes, ops_seconds
from tests.estimator.scalar_reference import EXAMPLES

LLAMA = EXAMPLES / "llama3-8b-h100.yaml"
#: FSDP2 over 8 ranks, no PP: each micro-batch gathers every block in forward, again in backward, and reduces
FSDP8 = {"profile": "fsdp2", "parallel.tp": 1, "parallel.pp": 1, "parallel.dp": 8}


def _bytes(root: bool = False, **overrides: object) -> tuple[float, float, float]:
    cfg = estimator.load_config(LLAMA, {**FSDP8, **overrides})
    blocks, root_group = fsdp2_copy_bytes(cfg, context.config_context(cfg))
    return root_group if root else blocks


def test_copy_op_moves_what_the_copies_move() -> None:
    # 1e6 weight elements in bf16 gathered, reduced in fp32: forward copy-out reads the gathered buffer and writes
    # the parameters, 2·2 = 4 B each; backward copy-out again 4 B, copy-in reads bf16 and writes fp32, 6 B
    op = operators.fsdp2_copy_op(1e6, (4.0, 4.0, 6.0))
    assert (op.bytes, op.kernels, op.bw_bytes, op.bw_kernels) == (4e6, 1.0, 1e7, 2.0)
    assert (op.flops, op.bw_flops, op.variant, op.op_class) == (0.0, 0.0, operators.FSDP_COPY, "elementwise")
    # a block kept unsharded after forward: no backward copy-out, one kernel
    kept = operators.fsdp2_copy_op(1e6, (4.0, 0.0, 6.0))
    assert (kept.bw_bytes, kept.bw_kernels) == (6e6, 1.0)


def test_weight_elements_count_copies_and_fused_experts() -> None:
    # [10, 3] @ [3, 5] twice (count 2): 2·15 = 30; the op fuser's form of 4 experts (count 1, 4× the FLOPs): 60
    two = operators.gemm("w", (), 10, 3, 5, 2, count=2.0)
    fused = replace(operators.gemm("e", (), 10, 3, 5, 2), flops=4 * 2.0 * 10 * 3 * 5)
    assert operators.weight_elements([two]) == 30.0
    assert operators.weight_elements([fused]) == 60.0
    assert operators.weight_elements([operators.elementwise("norm", (), 100.0)]) == 0.0


def test_bytes_per_element_follow_dtypes_and_resharding() -> None:
    # bf16 compute, fp32 reduce (the fsdp2 profile's gradients): (2·2, 2·2, 2 + 4)
    assert _bytes() == (4.0, 4.0, 6.0)
    assert _bytes(root=True) == (4.0, 4.0, 6.0)
    # Float8 all-gather: the blocks' gathered weights are 1 B (2·1 per copy-out); the root group stays bf16
    f8 = {"precision.fp8_linear": True, "precision.fsdp_float8_all_gather": True}
    assert _bytes(**f8) == (2.0, 2.0, 6.0)
    assert _bytes(root=True, **f8) == (4.0, 4.0, 6.0)
    # blocks kept unsharded after forward: no re-gather in backward
    assert _bytes(**{"parallel.fsdp_reshard_after_forward": False}) == (4.0, 0.0, 6.0)
    # not priced: no sharding (dp 1), PP (one gather and one reduce per step), the switch off, Megatron
    assert _bytes(**{"parallel.dp": 1, "parallel.tp": 8}) == (0.0, 0.0, 0.0)
    assert _bytes(**{"parallel.pp": 2, "parallel.dp": 4}) == (0.0, 0.0, 0.0)
    assert _bytes(**{"options.fsdp2_copies": False}) == (0.0, 0.0, 0.0)
    assert _bytes(profile="megatron") == (0.0, 0.0, 0.0)
    # Megatron-FSDP: parameters and gradients are views of its buffers, nothing is copied
    assert _bytes(**{"parallel.fsdp_implementation": "megatron"}) == (0.0, 0.0, 0.0)


def test_megatron_bridge_rows_run_megatron_fsdp() -> None:
    from estimator.experiments.measured import source_facts

    value, citation = source_facts({"source_id": "mbridge_any_release", "model_name": "x"})[
        "parallel.fsdp_implementation"]
    assert value == "megatron" and "view(p.shape)" in citation
    assert "parallel.fsdp_implementation" not in source_facts({"source_id": "torchtitan_llama3_h100_202412"})


def test_recompute_does_not_rerun_the_copies() -> None:
    from estimator.inputs.hardware import preset

    eff = preset("h100-80g").efficiency
    assert eff is not None
    gemm = operators.gemm("fc", ("mlp",), 1024, 1024, 1024, 2)
    copy = operators.fsdp2_copy_op(1024 * 1024, (4.0, 4.0, 6.0))
    fw, _, rec, _ = ops_seconds([gemm, copy], True, "full", frozenset(), eff, 989e12, 1.0)
    fw_gemm, _, rec_gemm, _ = ops_seconds([gemm], True, "full", frozenset(), eff, 989e12, 1.0)
    assert rec == rec_gemm and fw > fw_gemm


def test_step_gains_the_copies_and_the_switch_restores_it() -> None:
    on = estimator.estimate_perf(estimator.load_config(LLAMA, FSDP8))
    off = estimator.estimate_perf(estimator.load_config(LLAMA, {**FSDP8, "options.fsdp2_copies": False}))
    assert on.total > off.total
    megatron = {**FSDP8, "profile": "megatron"}
    assert estimator.estimate_perf(estimator.load_config(LLAMA, megatron)).total == estimator.estimate_perf(
        estimator.load_config(LLAMA, {**megatron, "options.fsdp2_copies": False})).total


def test_mixed_dp_groups_fall_back_to_the_scalar_path() -> None:
    from estimator.search.batched_time import batch_step_time_of

    cfgs = [estimator.load_config(LLAMA, {**FSDP8, "parallel.dp": dp, "parallel.tp": tp})
            for dp, tp in ((1, 8), (8, 1))]
    assert batch_step_time_of(cfgs) is None
    same = [estimator.load_config(LLAMA, {**FSDP8, "parallel.dp": dp, "parallel.tp": tp}) for dp, tp in ((2, 4), (8, 1))]
    batched = batch_step_time_of(same)
    assert batched is not None
    assert [float(t) for t in batched.total_s] == pytest.approx([estimator.estimate_perf(c).total for c in same],
                                                                rel=1e-9)


def test_host_launches_count_the_copy_kernels() -> None:
    # Llama 3 8B: 32 blocks, and the root group on the one stage. Per micro-batch each block adds 1 forward
    # copy-out, 1 backward copy-out (resharded) + 1 copy-in; the root group the same once:
    # forward 32 + 1 = 33, backward 2·32 + 2 = 66, recompute 0
    on = estimator.estimate_perf(estimator.load_config(LLAMA, FSDP8)).stages[0]
    off = estimator.estimate_perf(estimator.load_config(LLAMA, {**FSDP8, "options.fsdp2_copies": False})).stages[0]
    assert (on.kernels_fw - off.kernels_fw, on.kernels_bw - off.kernels_bw, on.kernels_rec - off.kernels_rec) == (
        33.0, 66.0, 0.0)
    # blocks kept unsharded after forward: no backward copy-out for them, 32 + 2 = 34
    kept = {**FSDP8, "parallel.fsdp_reshard_after_forward": False}
    on = estimator.estimate_perf(estimator.load_config(LLAMA, kept)).stages[0]
    off = estimator.estimate_perf(estimator.load_config(LLAMA, {**kept, "options.fsdp2_copies": False})).stages[0]
    assert (on.kernels_fw - off.kernels_fw, on.kernels_bw - off.kernels_bw) == (33.0, 34.0)
    # the host seconds follow the count at the profile's per-launch cost
    cost = context.host_launch_s(estimator.load_config(LLAMA, FSDP8))
    assert on.host_fw - off.host_fw == pytest.approx(33 * cost, rel=1e-12)
