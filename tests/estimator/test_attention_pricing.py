"""Fused attention pricing (issue 26): the head-dim dependence of the flash kernel's efficiency and
Transformer Engine's FP8 attention (``precision.fp8_attention``). Hand-computed values in the comments;
the efficiencies here are synthetic."""

from __future__ import annotations

import pytest

import estimator
from estimator.config.errors import ConfigError
from estimator.config.schema import ModelConfig
from estimator.experiments.recipe_notes import apply_recipe_items
from estimator.inputs import derive
from estimator.inputs.hardware import DeviceEfficiency
from estimator.perf import operators
from estimator.perf.roofline import fp8_attention_scale, kernel_group_s, op_pass_s
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, synthetic_run

#: synthetic efficiencies: attention 0.5 forward, 0.4 backward; HBM 1000 GB/s at 0.5, 10 µs per kernel
EFF = DeviceEfficiency(hbm_gb_s=1000.0, matmul=[(0.0, 0.8)], attention_fwd=0.5, attention_bwd=0.4,
                       memory=[(0.0, 0.5)], kernel_latency_us=10.0)
PEAK = 1e15  # FLOP/s


def _dims(head_dim_eff: bool = True, fp8: float = 0.0) -> operators.LayerDims:
    return operators.LayerDims(tokens=1024, norm_tokens=1024, batch=1, seq=1024, tp=1, cp=1, b=2, flash=True,
                               ring_blocks=1, imbalance=1.0, head_dim_eff=head_dim_eff, fp8_attention=fp8)


def test_head_dim_64_takes_the_published_ratio() -> None:
    # 1e12 FLOPs at head dim 128: 1e12 / (1e15·0.5) = 2 ms forward, 1e12 / (1e15·0.4) = 2.5 ms backward;
    # head dim 64: forward efficiency 0.5·408/609 = 0.33498 -> 2.98529 ms, backward 0.4·417/499 -> 2.99161 ms
    def t(variant: str, backward: bool) -> float:
        return kernel_group_s(1e12, 0.0, 1, "attention", backward, EFF, PEAK, variant)

    assert t("", False) == pytest.approx(2e-3, rel=1e-12)
    assert t("hd64", False) == pytest.approx(2e-3 * 609 / 408, rel=1e-12)
    assert t("hd64", True) == pytest.approx(2.5e-3 * 499 / 417, rel=1e-12)
    assert t("hd64", False) == pytest.approx(2.98529e-3, rel=1e-5)


def test_only_a_listed_head_dim_gets_a_variant() -> None:
    def variant(d_qk: int, d_v: int, on: bool = True) -> str:
        return operators.core_attention_ops(_dims(on), 8, 8, d_qk, d_v)[0].variant

    assert variant(64, 64) == "hd64"
    assert variant(128, 128) == variant(192, 128) == variant(96, 96) == ""
    assert variant(64, 64, on=False) == ""


def test_sliding_window_scales_the_flops_not_the_sequence() -> None:
    # GPT-OSS-like: 4 layers, window 128 on layers 0 and 2, full on 1 and 3 (every 2nd), s = 4096:
    # keys = (2·4096 + 2·min(4096, 256)) / 4 = 2176; the flash FLOPs 4·T·keys·a·d = 4·4096·2176·8·64
    model = ModelConfig.model_validate({**SYNTHETIC_DENSE_MODEL, "sliding_window": 128, "global_attention_every": 2})
    assert derive.attended_keys(model, 4096) == 2176
    dims = operators.LayerDims(tokens=4096, norm_tokens=4096, batch=1, seq=4096, tp=1, cp=1, b=2, flash=True,
                               ring_blocks=1, imbalance=1.0)
    flash = operators.core_attention_ops(dims, 8, 4, 64, 64, derive.attended_keys(model, 4096))[0]
    assert flash.flops == pytest.approx(4 * 4096 * 2176 * 8 * 64, rel=1e-12)


def test_fp8_attention_runs_at_the_fp8_peak_with_its_casts() -> None:
    # T = 1024 tokens, 8 heads of 64, 8 KV heads, b = 2: Q = O = 1024·8·64 = 524288 elements, K + V 2·524288;
    # elements 2,097,152; bytes BF16 2 B each = 4,194,304. FP8: the kernel moves 1 B each (2,097,152 forward) at
    # peak·2; the cast moves (2 + 1)·2,097,152 = 6,291,456 bytes per pass in 2 kernels:
    # 6291456 / (1e12·0.5) + 2·10 µs = 32.583 µs
    bf16, = operators.core_attention_ops(_dims(False), 8, 8, 64, 64)
    cast, fp8 = operators.core_attention_ops(_dims(False, fp8=2.0), 8, 8, 64, 64)
    assert (fp8.variant, fp8.peak_scale, fp8.flops) == ("@fp8", 2.0, bf16.flops)
    assert (bf16.bytes, fp8.bytes, fp8.bw_bytes) == (4194304.0, 2097152.0, 4194304.0)
    assert (cast.name, cast.bytes, cast.bw_bytes, cast.kernels, cast.bw_kernels) == (
        "attn_fp8_cast", 6291456.0, 6291456.0, 2.0, 2.0)
    assert op_pass_s(cast, False, EFF, PEAK) == pytest.approx(6291456 / 0.5e12 + 20e-6, rel=1e-12)
    # the attention at twice the peak with the compute dtype's efficiency: half the compute time
    assert kernel_group_s(1e12, 0.0, 1, "attention", False, EFF, PEAK, fp8.variant, fp8.peak_scale) == pytest.approx(
        1e-3, rel=1e-12)
    # head dim 64 and FP8 together: "hd64@fp8"
    assert operators.core_attention_ops(_dims(True, fp8=2.0), 8, 8, 64, 64)[1].variant == "hd64@fp8"


def _run(**precision: object) -> dict[str, object]:
    return synthetic_run(SYNTHETIC_DENSE_MODEL, parallel={"tp": 1, "pp": 1, "dp": 1, "ep": 1},
                         train={"seq_length": 128, "micro_batch_size": 1, "num_micro_batches": 1,
                                "flash_attention": True},
                         precision=dict(precision))


def test_fp8_attention_scale_and_its_off_switch() -> None:
    cfg = estimator.load_config(_run(fp8_attention=True))  # h100-80g: fp8 1979 / bf16 989
    assert fp8_attention_scale(cfg) == pytest.approx(1979.0 / 989.0, rel=1e-12)
    off = estimator.load_config(_run(fp8_attention=True), {"options.fp8_attention": False})
    assert fp8_attention_scale(off) == 0.0
    assert estimator.estimate_perf(off).total == estimator.estimate_perf(estimator.load_config(_run())).total
    assert estimator.estimate_perf(cfg).total != estimator.estimate_perf(off).total


def test_fp8_attention_without_fp8_tensor_cores_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        estimator.load_config(synthetic_run(SYNTHETIC_DENSE_MODEL, hardware="a100-80g",
                                            parallel={"tp": 1, "pp": 1, "dp": 1, "ep": 1},
                                            precision={"fp8_attention": True}))
    assert err.value.field == "precision.fp8_attention"
    assert "fp8" in err.value.rule


def test_head_dim_switch_off_reproduces_the_model_before() -> None:
    # d = 4096 / 64 = 64; the flash kernel (275 GFLOP forward per layer) is compute-bound at this size
    model = {**SYNTHETIC_DENSE_MODEL, "hidden_size": 4096, "ffn_hidden_size": 8192, "num_attention_heads": 64,
             "num_kv_heads": 8}
    run = synthetic_run(model, parallel={"tp": 1, "pp": 1, "dp": 1, "ep": 1}, hardware="b200",
                        train={"seq_length": 4096, "micro_batch_size": 1, "num_micro_batches": 1,
                               "flash_attention": True})
    on = estimator.estimate_perf(estimator.load_config(run)).total
    off = estimator.estimate_perf(estimator.load_config(run, {"options.attention_head_dim": False})).total
    assert on > off  # head dim 64 is slower than the measured factor at 128


def test_bridge_item_sets_fp8_attention() -> None:
    config: dict[str, object] = {"profile": "megatron", "model": {}, "parallel": {"tp": 1}}
    apply_recipe_items({"notes": "fp8_recipe=mxfp8 | fp8_dot_product_attention=true"}, config)
    assert config["precision"] == {"fp8_attention": True}
    assert config["model"]["source_facts"]["precision.fp8_attention"] == (  # type: ignore[index]
        "notes: fp8_dot_product_attention=true")
