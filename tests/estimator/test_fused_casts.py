"""Transformer Engine's fused casts (estimator.perf.lowp, ``options.fused_quantize``) with hand-computed values and
their off-switch, and the GA / GBS rule of throughput-only measured rows (estimator.experiments.measured)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import estimator
from estimator.experiments.measured import config_from_measured_row
from estimator.inputs import recipes
from estimator.inputs.hardware import preset
from estimator.perf import comm, lowp, operators

from .test_config_measured_rows import SYNTHETIC_ROW

EXAMPLE = Path(estimator.__file__).parent / "examples" / "llama3-8b-h100.yaml"


def _cfg(*overrides: str) -> Any:
    return estimator.load_config(EXAMPLE, list(overrides))


def _casts(name: str, recipe: recipes.LinearRecipe, fused: bool) -> operators.Op:
    """The cast operator of GEMM ``name`` [4, 8] @ [8, 16] (B = 2), weights cast on half the micro-batches."""
    op = operators.gemm(name, ("mlp",), 4, 8, 16, 2)
    return lowp.quantized_gemm(op, lowp.LowpGemms(recipe, 2.0, 0.5, fused), 2)[1]


def test_delayed_norm_writes_fp8_on_blackwell_by_hand() -> None:
    """Delayed scaling, one copy (non-TN FP8 GEMMs): the norm kernel writes the 1-byte input itself, so the
    input adds max(0, 1 − 2)·32 = 0 bytes and no kernel; the weight cast 0.5·(128·2 + 128·1) = 192 bytes,
    0.5 kernel; backward dY 64·2 + 64 = 192 bytes, one kernel. Unfused (out_proj, or the switch off): input
    32·2 + 32 = 96 more bytes and one more kernel."""
    one_copy = replace(recipes.RECIPES["delayed"], columnwise_copy=False)
    fused = _casts("qkv", one_copy, True)
    assert (fused.bytes, fused.kernels, fused.bw_bytes, fused.bw_kernels) == (192.0, 0.5, 192.0, 1.0)
    for unfused in (_casts("out_proj", one_copy, True), _casts("qkv", one_copy, False)):
        assert (unfused.bytes, unfused.kernels, unfused.bw_bytes) == (288.0, 1.5, 192.0)


def test_delayed_norm_fused_on_hopper_adds_one_transpose_pass() -> None:
    """Two copies (TN-only FP8 GEMMs): the norm writes the row-wise copy, one transpose pass reads and writes
    1 byte per element: 2·32 = 64 bytes, one kernel; weight 0.5·(256 + 2·128) = 256 → 320 bytes, 1.5 kernels."""
    cast = _casts("mlp_fc1", recipes.RECIPES["delayed"], True)
    assert (cast.bytes, cast.kernels) == (320.0, 1.5)


def test_current_scaling_norm_reduces_the_amax_by_hand() -> None:
    """Current scaling (one copy): FUSED_NORM_AMAX_FP8 leaves one read and one write per input element,
    32·2 + 32 = 96 bytes and one kernel (unfused: 2·32·2 + 32 = 160, two kernels); the weight keeps its amax
    pass: 0.5·(2·128·2 + 128) = 320 bytes, 2·0.5 kernels."""
    one_copy = replace(recipes.RECIPES["tensorwise"], columnwise_copy=False)
    fused, unfused = _casts("qkv", one_copy, True), _casts("qkv", one_copy, False)
    assert (fused.bytes, fused.kernels) == (416.0, 2.0)
    assert (unfused.bytes, unfused.kernels) == (480.0, 3.0)


def test_mxfp8_and_blockwise_norms_are_not_fused() -> None:
    """MXFP8 and blockwise: TE's norm runs UNFUSED (high-precision output, then the cast): no change."""
    for name in ("mxfp8", "blockwise"):
        fused, off = _casts("qkv", recipes.RECIPES[name], True), _casts("qkv", recipes.RECIPES[name], False)
        assert (fused.bytes, fused.kernels, fused.bw_bytes) == (off.bytes, off.kernels, off.bw_bytes)


def test_one_copy_only_for_per_tensor_te_recipes_on_non_tn_hardware() -> None:
    """B200 (fp8_gemm_any_layout, sourced): delayed / tensorwise write one copy; MXFP8 keeps both; H100
    keeps both; the switch off restores the recipe and no fusion (the model before the mechanism)."""
    assert preset("b200").fp8_gemm_any_layout and not preset("h100-80g").fp8_gemm_any_layout
    assert all(preset(n).fp8_gemm_any_layout for n in ("b300", "gb200-nvl72", "gb300-nvl72"))
    assert "is_non_tn_fp8_gemm_supported" in preset("b200").provenance["fp8_gemm_any_layout"]
    b200 = lowp.lowp_of(_cfg("hardware.preset=b200", "precision.linear_recipe=tensorwise"), 8)
    assert b200 is not None and b200.recipe.copies == 1 and b200.norm_fusion
    mx = lowp.lowp_of(_cfg("hardware.preset=b200", "precision.linear_recipe=mxfp8"), 8)
    assert mx is not None and mx.recipe.copies == 2
    h100 = lowp.lowp_of(_cfg("precision.linear_recipe=tensorwise"), 8)
    assert h100 is not None and h100.recipe.copies == 2 and h100.norm_fusion
    off = lowp.lowp_of(_cfg("hardware.preset=b200", "precision.linear_recipe=tensorwise", "options.fused_quantize=false"),
                       8)
    assert off == lowp.LowpGemms(recipes.RECIPES["tensorwise"], 2.0, 0.125)
    torchao = lowp.lowp_of(_cfg("profile=fsdp2", "precision.fp8_linear=true"), 8)
    assert torchao is not None and not torchao.norm_fusion


def test_fused_casts_lower_the_step_and_the_switch_restores_it() -> None:
    """On B200 with current scaling the fused casts take time off the step, never add; off = the old step."""
    base = ("hardware.preset=b200", "precision.linear_recipe=tensorwise")
    on = estimator.estimate_perf(_cfg(*base)).total
    off = estimator.estimate_perf(_cfg(*base, "options.fused_quantize=false")).total
    assert on < off
    bf16 = ("hardware.preset=b200",)
    assert estimator.estimate_perf(_cfg(*bf16)).total == estimator.estimate_perf(
        _cfg(*bf16, "options.fused_quantize=false")).total


def test_throughput_row_with_contradicting_ga_runs_the_gbs() -> None:
    """GA 4 · mbs 1 · dp 4 = 16 ≠ GBS 8: a throughput-only row takes GBS (2 micro-batches) and says so; a row
    with a measured step keeps the published GA."""
    row = {**SYNTHETIC_ROW, "num_micro_batches": "4"}
    data = config_from_measured_row(row)
    assert data["train"].get("global_batch_size") == 8 and "num_micro_batches" not in data["train"]
    assert "contradicts GBS 8" in data["model"]["assumed"]["num_micro_batches"]
    assert estimator.load_config(data).num_micro_batches == 2
    kept = config_from_measured_row({**row, "measured_step_ms": "1000"})
    assert kept["train"]["num_micro_batches"] == 4
    published = config_from_measured_row(row, row_rules=False)  # the off-switch: the row as published
    assert published["train"]["num_micro_batches"] == 4 and "num_micro_batches" not in published["model"]["assumed"]
    consistent = config_from_measured_row({**SYNTHETIC_ROW, "num_micro_batches": "2"})
    assert consistent["train"]["num_micro_batches"] == 2 and "num_micro_batches" not in consistent["model"]["assumed"]


def test_quantized_tp_gathers_by_hand() -> None:
    """One of two blocks' all-gathers quantized at half the bytes: AG 100 B × 2 calls → 50 B × 1 + 100 B × 1;
    the reduce-scatter unchanged; every call kept."""
    cs = [comm.Collective("all_gather", 100.0, 4, 2.0), comm.Collective("reduce_scatter", 100.0, 4, 2.0)]
    out = lowp.quantized_tp_gathers(cs, 0.5, 1.0, 2.0)
    assert out == [comm.Collective("all_gather", 50.0, 4, 1.0), comm.Collective("all_gather", 100.0, 4, 1.0),
                   comm.Collective("reduce_scatter", 100.0, 4, 2.0)]
    assert sum(c.count for c in out) == sum(c.count for c in cs)


def test_tp_gather_share_per_recipe_and_switch() -> None:
    """MXFP8 row-wise data + scales: (1 + 1/32) / 2 = 0.515625; NVFP4 (0.5 + 1/16) / 2 = 0.28125; torchao's tensorwise
    Float8 (torchtitan's Float8ColwiseParallel / Float8RowwiseParallel gather float8): 1 / 2; torchao rowwise (high-
    precision TP in torchtitan), BF16 and the switch off: None."""
    mx = _cfg("hardware.preset=b200", "precision.linear_recipe=mxfp8")
    assert lowp.tp_gather_share(mx, 2) == 0.515625
    assert lowp.tp_gather_share(_cfg("hardware.preset=b200", "precision.linear_recipe=nvfp4"), 2) == 0.28125
    assert lowp.tp_gather_share(_cfg("hardware.preset=b200", "precision.linear_recipe=mxfp8",
                                     "options.quantized_tp_gather=false"), 2) is None
    assert lowp.tp_gather_share(_cfg("profile=fsdp2", "precision.fp8_linear=true"), 2) == 0.5
    assert lowp.tp_gather_share(_cfg("profile=fsdp2", "precision.fp8_linear=true",
                                     "precision.linear_recipe=torchao_rowwise"), 2) is None
    assert lowp.tp_gather_share(_cfg("hardware.preset=b200"), 2) is None


def test_quantized_gathers_lower_tp_comm_and_the_switch_restores_it() -> None:
    """TP 2 with sequence parallelism, NVFP4 on B200: less TP traffic with the mechanism; off = as before; BF16
    unchanged by the switch."""
    base = ("hardware.preset=b200", "parallel.tp=2", "parallel.dp=2", "parallel.sequence_parallel=true")
    nv = (*base, "precision.linear_recipe=nvfp4")
    on = estimator.estimate_perf(_cfg(*nv)).perf_parts["MP_COMM"]
    off = estimator.estimate_perf(_cfg(*nv, "options.quantized_tp_gather=false")).perf_parts["MP_COMM"]
    assert 0 < on < off
    assert estimator.estimate_perf(_cfg(*base)).total == estimator.estimate_perf(
        _cfg(*base, "options.quantized_tp_gather=false")).total


def test_main_grad_add_by_hand() -> None:
    """Unfused weight-gradient accumulation: GEMMs [4,8]@[8,16] (one copy) and [4,16]@[16,8] (3 copies) hold
    128 + 3·128 = 512 weights; fp32 main_grad + bf16 grad: 2·4 + 2 = 10 bytes each, 5120 bytes, 4 kernels, backward
    only; the attention-score GEMM (no weight) is not counted."""
    ops = [operators.gemm("mlp_fc1", ("mlp",), 4, 8, 16, 2), operators.gemm("expert_fc2", ("moe",), 4, 16, 8, 2, 3.0),
           operators.Op("attn_scores", "gemm", ("core_attn",), 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)]
    add = operators.main_grad_add_op(ops, 10.0)
    assert (add.bytes, add.kernels, add.bw_bytes, add.bw_kernels, add.modules) == (0.0, 0.0, 5120.0, 4.0, ())


def test_main_grad_add_prices_no_gradient_accumulation_fusion_only() -> None:
    """``train.gradient_accumulation_fusion: false`` adds backward time under Megatron; fused (default) and the
    switch off price nothing (the model before the mechanism)."""
    fused = estimator.estimate_perf(_cfg()).perf_parts["BW_COMPUTE"]
    unfused = estimator.estimate_perf(_cfg("train.gradient_accumulation_fusion=false")).perf_parts["BW_COMPUTE"]
    off = estimator.estimate_perf(_cfg("train.gradient_accumulation_fusion=false", "options.main_grad_add=false"))
    assert unfused > fused == off.perf_parts["BW_COMPUTE"]


def test_footnote_rows_take_the_footnote_recipe_without_recipe_items() -> None:
    """A 25.09 parenthesized row ("fp8 (32x32 ...)") whose layout matches no recipe entry (no recipe items) is
    priced with the footnote's recipe like its siblings (MXFP8, the nearest), not the profile's default."""
    row = {**SYNTHETIC_ROW, "precision": "fp8 (32x32 quantization granularity per table footnote)"}
    precision = config_from_measured_row(row)["precision"]
    assert precision["linear_recipe"] == "mxfp8" and "fp8_linear" not in precision
    off = config_from_measured_row(row, row_rules=False)["precision"]
    assert off["fp8_linear"] and "linear_recipe" not in off
