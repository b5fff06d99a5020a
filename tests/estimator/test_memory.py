"""Memory model: a toy config with hand arithmetic, schedules, assembly rules."""

from __future__ import annotations

import pytest

import estimator
from estimator.memory import COMPONENTS
from estimator.memory.schedule import in_flight, in_flight_interleaved
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, synthetic_run

MIB = 2**20


def _toy_megatron() -> estimator.EstimatorConfig:
    """Synthetic dense GQA model, megatron profile, tp=pp=1, dp=2, seq 128, mbs 1."""
    return estimator.load_config(
        synthetic_run(
            model=SYNTHETIC_DENSE_MODEL,
            profile="megatron",
            parallel={"tp": 1, "pp": 1, "dp": 2, "ep": 1},
        )
    )


def test_toy_megatron_hand_arithmetic() -> None:
    report = estimator.estimate_memory(_toy_megatron())
    (stage,) = report.stages
    c = stage.components
    # params: 4 layers · 45312 + embedding 1000·64 + head 1000·64 + final LayerNorm 2·64 = 309376
    n = 4 * 45312 + 64000 + 64128
    assert c["params"] == pytest.approx(2 * n / MIB)  # bf16
    assert c["grads"] == pytest.approx(4 * n / MIB)  # fp32 main grads, unsharded
    assert c["optimizer_states"] == pytest.approx(12 * n / 2 / MIB)  # (4 master + 8 Adam) / dp
    # one layer, T = 128 tokens, B = 2: Korthikanti 34·sbh = 278528, GQA (g = a/2) keeps K, V of half
    # size (−2·sbh = −16384), flash adds fp32 softmax stats 128·8·4 = 4096 -> 266240; 4 layers, μ = 1
    layers = 4 * 266240
    embedding = 128 * 64 * 2  # T·h·B
    head_input = 128 * 64 * 2
    logits = 128 * 1000 * 4  # fp32, vocab-parallel over tp = 1, held once
    assert c["activations"] == pytest.approx((layers + embedding + head_input + logits) / MIB)
    assert c["backward_overhead"] == pytest.approx((head_input + logits) / MIB)  # head at μ = 1
    # run-long allocations on H100 (estimator.memory.framework): PyTorch and TE cuBLAS workspaces and
    # one bf16 dummy wgrad per linear shape: qkv 128x64, proj 64x64, fc1 256x64, fc2 64x256, head 1000x64
    persistent = {"torch_cublas_workspace": 32 * MIB, "te_cublas_workspace": 32 * MIB + 1024,
                  "dummy_wgrads": 2 * (128 * 64 + 64 * 64 + 256 * 64 + 64 * 256 + 1000 * 64), "sp_gather_buffer": 0}
    assert stage.persistent == pytest.approx({k: v / MIB for k, v in persistent.items()})
    assert c["comm_buffers"] == 0 and c["other"] == pytest.approx(sum(persistent.values()) / MIB)
    assert c["safety_buffer"] == 1024 and c["tp_shardable_overhead"] == 0
    assert stage.total_mb == pytest.approx(sum(c.values()))
    assert report.peak_mb == stage.total_mb and report.peak_stage == 0


def test_components_named_as_spec() -> None:
    report = estimator.estimate_memory(estimator.load_config(synthetic_run()))
    assert COMPONENTS == (
        "params", "optimizer_states", "grads", "activations", "comm_buffers",
        "backward_overhead", "safety_buffer", "tp_shardable_overhead", "other",
    )
    for s in report.stages:
        assert tuple(s.components) == COMPONENTS
    d = report.to_dict()
    assert d["peak_mb"] == report.peak_mb and len(d["stages"]) == 2
    assert d["stages"][0]["components"] == report.stages[0].components


def test_schedule_1f1b_and_gpipe() -> None:
    assert [in_flight("1f1b", 4, 1, 8, s) for s in range(4)] == [4, 3, 2, 1]
    assert [in_flight("1f1b", 4, 1, 2, s) for s in range(4)] == [2, 1, 1, 1]  # min(p, m) − stage, ≥ 1
    assert in_flight("gpipe", 4, 1, 8, 3) == 8


def test_schedule_interleaved_matches_megatron_warmup() -> None:
    """Σ over chunks = Megatron's warm-up (p−s−1)·2 + (vp−1)·p plus 1 (stage 0: one less)."""
    p, vp, m = 4, 8, 4
    for s in range(p):
        total = sum(in_flight_interleaved(p, vp, m, s, c) for c in range(vp))
        megatron = (p - s - 1) * 2 + (vp - 1) * p + 1
        assert total == (megatron - 1 if s == 0 else megatron)
    assert [in_flight_interleaved(4, 8, 4, 3, c) for c in (0, 1, 7)] == [3, 4, 2]


def test_schedule_zero_bubble_v() -> None:
    assert [in_flight("zero_bubble_v", 4, 2, 8, 0, c) for c in (0, 1)] == [7, 1]
    assert [in_flight("zero_bubble_v", 4, 2, 8, 3, c) for c in (0, 1)] == [4, 3]


def test_full_recompute_keeps_only_inputs() -> None:
    run = synthetic_run(model=SYNTHETIC_DENSE_MODEL, profile="megatron", parallel={"pp": 1, "dp": 2, "ep": 1})
    none = estimator.estimate_memory(estimator.load_config(run)).stages[0].components["activations"]
    full_cfg = estimator.load_config({**run, "recompute": {"mode": "full"}})
    full = estimator.estimate_memory(full_cfg).stages[0].components["activations"]
    # 4 layer inputs T·h·B = 16384 each + embedding 16384 + head input 16384 + logits 512000
    assert full == pytest.approx((4 * 16384 + 16384 + 16384 + 512000) / MIB)
    assert full < none


def test_selective_recompute_drops_scores_without_flash() -> None:
    run = synthetic_run(model=SYNTHETIC_DENSE_MODEL, profile="megatron", parallel={"pp": 1, "dp": 2, "ep": 1},
                        train={"flash_attention": False})
    none = estimator.estimate_memory(estimator.load_config(run)).stages[0].components["activations"]
    sel = estimator.estimate_memory(
        estimator.load_config({**run, "recompute": {"mode": "selective"}})
    ).stages[0].components["activations"]
    # core_attn: 5·a·T·s/t = 5·8·128·128 bytes per layer, 4 layers; flash stats are absent here
    assert none - sel == pytest.approx(4 * 5 * 8 * 128 * 128 / MIB)


def test_sequence_parallel_shards_replicated_parts() -> None:
    """Korthikanti Table 2: SP divides the 10·sbh outside the attention/MLP blocks (two norm inputs
    and outputs at B = 2, two 1-byte dropout masks) by t, and the final-norm output feeding the head."""
    base = synthetic_run(model=SYNTHETIC_DENSE_MODEL, profile="megatron", parallel={"tp": 2, "pp": 1, "dp": 1, "ep": 1})
    off = estimator.estimate_memory(estimator.load_config(base)).stages[0].components["activations"]
    on_cfg = estimator.load_config({**base, "parallel": {**base["parallel"], "sequence_parallel": True}})
    on = estimator.estimate_memory(on_cfg).stages[0].components["activations"]
    T, h, B, t = 128, 64, 2, 2
    per_layer = 10 * T * h * (1 - 1 / t)
    head_input = T * h * B * (1 - 1 / t)
    assert off - on == pytest.approx((4 * per_layer + head_input) / MIB)


def test_sapp_nd_comm_buffers_and_backward_overhead_hand_arithmetic() -> None:
    """Reference §2.6/§2.8 on the synthetic MoE toy (sapp-nd, tp 1, pp 2, dp 4, ep 2, s·b = 128, m 4).

    Per layer comm = max(dp, tp·μ, cp) + ep·μ (mixed units kept as the reference adds them):
    dp flag 2 (dp > 1 with OP): non-expert n/(cp·t) + n/t; experts (d_exp = 2, flag 2)
    E_tot/(cp·t_exp·ep) + E_tot/max(ep, t_exp); ep 2·k·T·(ep−1)/ep·h·B = 32768; tp = cp = 0.
    MoE layer: n = 4·64² + 2·64 + 64·8 = 17024, E_tot = 49152 + 6144 -> dp = 34048 + 55296 = 89344.
    Dense layer 0: n = 16384 + 128 + 3·64·256 = 65664 -> dp = 131328, no ep.
    Embedding: 2·h·v/(t·d·cp) = 32000; head: 2·(h·v + v)/(t·cp) = 130000. Full recompute keeps dp only.
    Backward overhead = last node at μ = 1 without recompute: stage 0 the MoE layer 1 (activation
    301056 + comm 122112), stage 1 the head (input T·h·4 = 32768 + bf16 logits T·V·2 = 256000 + 130000).
    """
    moe_dp, moe_ep, dense_dp = 89344, 32768, 131328
    expected_comm = {
        "none": [dense_dp + (moe_dp + 2 * moe_ep) + 32000, 2 * (moe_dp + moe_ep) + 130000],  # μ = 2, 1
        "full": [dense_dp + moe_dp + 32000, 2 * moe_dp + 130000],
    }
    for mode, comm in expected_comm.items():
        report = estimator.estimate_memory(estimator.load_config(synthetic_run(recompute={"mode": mode})))
        assert [s.in_flight for s in report.stages] == [(2,), (1,)]
        assert [s.components["comm_buffers"] * MIB for s in report.stages] == comm
        assert [s.components["backward_overhead"] * MIB for s in report.stages] == [
            301056 + moe_dp + moe_ep, 32768 + 256000 + 130000,
        ]


def test_sapp_nd_grads_only_with_pipeline() -> None:
    """Reference §2.1: B_g = 4 if p > 1 else 0."""
    one = estimator.load_config(synthetic_run(parallel={"pp": 1, "dp": 4, "ep": 2}))
    assert all(s.components["grads"] == 0 for s in estimator.estimate_memory(one).stages)
    two = estimator.load_config(synthetic_run())
    assert all(s.components["grads"] > 0 for s in estimator.estimate_memory(two).stages)


def test_peak_over_device_memory_warns() -> None:
    cfg = estimator.load_config(synthetic_run(train={"seq_length": 131072, "micro_batch_size": 64}))
    report = estimator.estimate_memory(cfg)
    # H100 SXM5 80GB datasheet: 80 GiB = 81920 MiB; the warning names the peak, the capacity and the device
    assert report.hbm_mb == 81920.0 and report.peak_mb > 81920.0 and not report.fits
    assert report.warnings == (f"peak {report.peak_mb:.0f} MiB exceeds device memory 81920 MiB (h100-80g)",)
    # the same run on a device just above its peak fits and says nothing; just below, it warns again
    above_gib = (report.peak_mb + 1.0) / 1024.0
    for gib, fits in ((above_gib, True), (above_gib - 2.0 / 1024.0, False)):
        run = synthetic_run(train={"seq_length": 131072, "micro_batch_size": 64},
                            hardware={"preset": "h100-80g", "hbm_gib": gib})
        other = estimator.estimate_memory(estimator.load_config(run))
        assert other.peak_mb == pytest.approx(report.peak_mb, rel=1e-12)
        assert other.fits is fits and bool(other.warnings) is not fits


def test_toy_fsdp2_everything_sharded() -> None:
    """FSDP2 without PP: fp32 params and Adam states over dp (12 B / dp) at the loss-backward peak,
    no sharded grads yet (zero_grad set them to None), the last block unsharded in bf16."""
    cfg = estimator.load_config(
        synthetic_run(model=SYNTHETIC_DENSE_MODEL, profile="fsdp2", parallel={"tp": 1, "pp": 1, "dp": 4, "ep": 1})
    )
    c = estimator.estimate_memory(cfg).stages[0].components
    n = 4 * 45312 + 64000 + 64128  # as in the megatron toy
    assert c["params"] == pytest.approx(4 * n / 4 / MIB)
    assert c["grads"] == 0.0
    assert c["optimizer_states"] == pytest.approx(8 * n / 4 / MIB)
    # the last block is not resharded after forward; + PyTorch's 32 MiB cuBLAS workspace (H100)
    assert c["other"] == pytest.approx(45312 * 2 / MIB + 32)


def test_toy_fsdp2_with_pp_keeps_grads_and_all_blocks_unsharded() -> None:
    """With PP torchtitan does not reshard after forward and grads accumulate: both are live."""
    cfg = estimator.load_config(
        synthetic_run(model=SYNTHETIC_DENSE_MODEL, profile="fsdp2", parallel={"tp": 1, "pp": 2, "dp": 2, "ep": 1})
    )
    first = estimator.estimate_memory(cfg).stages[0]
    n_first = 2 * 45312 + 64000  # two layers + embedding
    assert first.components["grads"] == pytest.approx(4 * n_first / 2 / MIB)
    # blocks + root group, + PyTorch's 32 MiB cuBLAS workspace (H100)
    assert first.components["other"] == pytest.approx((2 * 45312 + 64000) * 2 / MIB + 32)


def test_context_parallel_halves_layer_activations() -> None:
    """Tokens per rank are s·b/cp, so every per-layer activation term halves at cp = 2 (synthetic)."""
    from estimator.memory.activation import layer_activation_bytes

    base = synthetic_run(model=SYNTHETIC_DENSE_MODEL, profile="megatron", parallel={"pp": 1, "dp": 2, "ep": 1})
    one = estimator.load_config(base)
    two = estimator.load_config({**base, "parallel": {**base["parallel"], "dp": 1, "cp": 2}})
    for flash in (True, False):
        a = estimator.load_config(one, {"train.flash_attention": flash})
        b = estimator.load_config(two, {"train.flash_attention": flash})
        assert layer_activation_bytes(b, 0, "none") == pytest.approx(layer_activation_bytes(a, 0, "none") / 2)


def test_recompute_per_stage() -> None:
    cfg = estimator.load_config(synthetic_run(recompute={"per_stage": ["full", "none"]}))
    first, last = estimator.estimate_memory(cfg).stages
    assert (first.recompute, last.recompute) == ("full", "none")
    none = estimator.estimate_memory(estimator.load_config(synthetic_run())).stages[0]
    assert first.components["activations"] < none.components["activations"]
