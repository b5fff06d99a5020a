"""Issue 26 mechanisms, each with hand-computed values and its off-switch: low-precision linear recipes
(estimator.inputs.recipes, estimator.perf.lowp), the Blackwell presets, FP4 refused without FP4, CUDA graphs
(estimator.perf.graphs), LoRA adapters (estimator.inputs.adapters)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import estimator
from estimator.config.errors import ConfigError
from estimator.inputs import adapters, recipes
from estimator.inputs.hardware import preset
from estimator.memory.static import fp8_params_in_place, fp8_weight_cache, layer_static
from estimator.perf import graphs, lowp, operators, roofline
from estimator.perf.context import context
from estimator.perf.kernels import PassKernels, head_pass_kernels
from estimator.perf.stage import stage_costs

EXAMPLE = Path(estimator.__file__).parent / "examples" / "llama3-8b-h100.yaml"


def _cfg(*overrides: str) -> Any:
    return estimator.load_config(EXAMPLE, list(overrides))


def _b200(*overrides: str) -> Any:
    return _cfg("hardware.preset=b200", *overrides)


# -- recipes: the GEMM and its cast kernels --------------------------------------------------------------


def test_quantized_gemm_bytes_by_hand_mxfp8() -> None:
    """m=4, k=8, n=16, B=2, MXFP8 (q = 1 + 1/32, row- and column-wise copies), weights cast on half the
    micro-batches: forward (32 + 128)·q + 64·2 = 293; backward (64 + 128)·q + 32·2 + (32 + 64)·q + 128·2 = 617;
    one cast of e elements reads 2e and writes 2·e·q = 4.0625·e: forward 32·4.0625 + 0.5·128·4.0625 = 390,
    backward 64·4.0625 = 260."""
    op = operators.gemm("mlp_fc1", ("mlp",), 4, 8, 16, 2)
    low = lowp.LowpGemms(recipes.RECIPES["mxfp8"], peak_scale=2.0, weight_cast_share=0.5)
    gemm, cast = lowp.quantized_gemm(op, low, 2)
    assert (gemm.flops, gemm.bytes, gemm.bw_bytes, gemm.variant, gemm.peak_scale) == (op.flops, 293.0, 617.0, "@fp8", 2.0)
    assert (cast.op_class, cast.bytes, cast.bw_bytes, cast.kernels, cast.bw_kernels) == ("elementwise", 390.0, 260.0,
                                                                                        1.5, 1.0)


def test_current_scaling_adds_an_amax_read_per_cast() -> None:
    """Tensorwise (current scaling): each cast reads B twice (amax, then cast) and writes two 1-byte copies:
    6 bytes per element, two kernels per tensor."""
    assert lowp.cast_bytes(10, 2, recipes.RECIPES["tensorwise"]) == 60.0
    assert lowp.cast_bytes(10, 2, recipes.RECIPES["delayed"]) == 40.0
    assert lowp.cast_bytes(16, 2, recipes.RECIPES["nvfp4"]) == 16 * 4 + 2 * 16 * (0.5 + 1 / 16)


def test_low_precision_gemm_runs_at_the_scaled_peak() -> None:
    """``@fp8`` at peak_scale 2 takes half the compute time of the same GEMM at the compute peak."""
    eff = preset("b200").efficiency
    assert eff is not None
    flops, peak = 1e12, 2250e12
    bf16 = roofline.kernel_group_s(flops, 0.0, 1.0, "gemm", False, eff, peak)
    fp8 = roofline.kernel_group_s(flops, 0.0, 1.0, "gemm", False, eff, peak, "@fp8", 2.0)
    assert fp8 == pytest.approx(bf16 / 2, rel=1e-15)


def test_recipe_peaks_and_weight_cast_share() -> None:
    """B200: fp8 4500 / bf16 2250 = 2, fp4 9000 / 2250 = 4; Megatron (TE) casts weights once per step (1/m),
    torchao every micro-batch; fp8_linear alone = the profile's default recipe."""
    cfg = _b200("precision.linear_recipe=mxfp8")
    low = lowp.lowp_of(cfg, 8)
    assert low is not None and (low.peak_scale, low.weight_cast_share) == (2.0, 0.125)
    nv = lowp.lowp_of(_b200("precision.linear_recipe=nvfp4"), 8)
    assert nv is not None and nv.peak_scale == 4.0
    assert recipes.recipe_of(None, True, "megatron") == recipes.RECIPES["delayed"]
    assert recipes.recipe_of(None, True, "fsdp2") == recipes.RECIPES["torchao_tensorwise"]
    torchao = lowp.lowp_of(_cfg("profile=fsdp2", "precision.fp8_linear=true"), 8)
    assert torchao is not None and torchao.weight_cast_share == 1.0
    assert lowp.lowp_of(_cfg("precision.fp8_linear=true", "options.low_precision_gemms=false"), 8) is None


def test_only_linear_gemms_are_quantized() -> None:
    """Router, logits and attention stay in their own precision; every linear GEMM gets its cast operator."""
    cfg = _b200("precision.linear_recipe=mxfp8")
    dims = roofline.layer_dims(cfg, context(cfg))
    ops = roofline.layer_ops(cfg, dims, 0)
    low = {op.name for op in ops if op.variant.endswith("@fp8")}
    assert low == {"qkv", "out_proj", "mlp_fc1", "mlp_fc2"}
    assert {f"{n}_quantize" for n in low} <= {op.name for op in ops}
    assert all(not op.variant.endswith("@fp8") for op in ops if op.op_class == "attention")


def test_fp8_recipe_lowers_compute_and_the_off_switch_restores_it() -> None:
    base = estimator.estimate_perf(_cfg())
    fp8 = estimator.estimate_perf(_cfg("precision.fp8_linear=true"))
    off = estimator.estimate_perf(_cfg("precision.fp8_linear=true", "options.low_precision_gemms=false"))
    assert fp8.real_parts["COMP"] < 0.85 * base.real_parts["COMP"]
    assert off.real_parts == base.real_parts and off.perf_parts == base.perf_parts  # bit-identical


def test_recipe_memory_by_hand() -> None:
    """Cached weight copies per element: per-tensor FP8 2 (as before recipes; 1 on B200, whose FP8 GEMM reads the
    row-wise copy in either orientation, ``options.fused_quantize`` off: 2), MXFP8 2·(1 + 1/32), NVFP4
    2·(0.5 + 1/16); with the off-switch the per-tensor bytes whatever the recipe."""
    assert fp8_weight_cache(_cfg("precision.linear_recipe=delayed"), 1000).params == 2000.0
    assert fp8_weight_cache(_b200("precision.linear_recipe=delayed"), 1000).params == 1000.0
    assert fp8_weight_cache(_b200("precision.linear_recipe=delayed", "options.fused_quantize=false"),
                            1000).params == 2000.0
    assert fp8_weight_cache(_b200("precision.linear_recipe=mxfp8"), 1000).params == 2062.5
    assert fp8_weight_cache(_b200("precision.linear_recipe=nvfp4"), 1000).params == 1125.0
    off = _b200("precision.linear_recipe=nvfp4", "options.low_precision_gemms=false")
    assert fp8_weight_cache(off, 1000).params == 2000.0
    assert estimator.estimate_memory(_b200("precision.linear_recipe=mxfp8")).peak_mb > estimator.estimate_memory(
        _b200("precision.linear_recipe=delayed")).peak_mb


def test_fp8_param_gather_holds_no_compute_dtype_copy_by_hand() -> None:
    """``precision.fp8_param_gather``: the quantized weight is the parameter, so the 2 B BF16 copy of each held
    linear weight goes (1000 weights: −2000 B) and the quantized copies stay (MXFP8 on B200: 2062.5 B); off
    without the flag or without FP8 linears (numbers as before)."""
    on = _b200("precision.linear_recipe=mxfp8", "precision.fp8_param_gather=true")
    assert fp8_params_in_place(on, 1000, 2.0).params == -2000.0
    assert fp8_weight_cache(on, 1000).params + fp8_params_in_place(on, 1000, 2.0).params == 62.5
    assert fp8_params_in_place(_b200("precision.linear_recipe=mxfp8"), 1000, 2.0).params == 0.0
    assert fp8_params_in_place(_cfg("precision.fp8_param_gather=true"), 1000, 2.0).params == 0.0
    off = _b200("precision.linear_recipe=mxfp8", "precision.fp8_param_gather=true", "options.low_precision_gemms=false")
    assert fp8_params_in_place(off, 1000, 2.0).params == 0.0  # the recipe mechanisms' off-switch
    held = estimator.estimate_memory(_b200("precision.linear_recipe=mxfp8")).stages[0].components["params"]
    kept = estimator.estimate_memory(on).stages[0].components["params"]
    assert 0 < kept < held


def test_fp4_on_hardware_without_fp4_names_file_field_rule(tmp_path: Path) -> None:
    src = EXAMPLE.read_text(encoding="utf-8").replace("recompute:", "precision: {linear_recipe: nvfp4}\nrecompute:")
    path = tmp_path / "nvfp4-h100.yaml"
    path.write_text(src.replace("{ref: models/llama3-8b.yaml}", "{ref: " + str(
        EXAMPLE.parent.parent.parent / "validation_cases" / "models" / "llama3-8b.yaml") + "}"), encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        estimator.load_config(path)
    e = err.value
    assert e.field == "precision.linear_recipe" and e.file == str(path) and e.line is not None
    assert "fp4" in e.rule and "h100-80g" in e.rule
    estimator.load_config(_b200("precision.linear_recipe=nvfp4"))  # Blackwell has FP4


def test_mxfp8_on_hopper_is_refused_with_the_device_rule() -> None:
    """TransformerEngine refuses MXFP8 below compute capability 10.0 although Hopper has an fp8 peak."""
    with pytest.raises(ConfigError) as err:
        _cfg("precision.linear_recipe=mxfp8")  # the default hardware of _cfg: h100-80g
    e = err.value
    assert e.field == "precision.linear_recipe" and "hardware.mxfp8_gemm" in e.rule and "h100-80g" in e.rule
    _cfg("precision.linear_recipe=tensorwise")  # per-tensor FP8 runs on Hopper
    _cfg("precision.linear_recipe=mxfp8", "options.low_precision_gemms=false")  # the off-switch: no recipe GEMMs
    estimator.load_config(_b200("precision.linear_recipe=mxfp8"))
    assert all(preset(n).mxfp8_gemm for n in ("b200", "b300", "gb200-nvl72", "gb300-nvl72"))
    assert not any(preset(n).mxfp8_gemm for n in ("h100-80g", "h200", "a100-80g"))
    assert "_compute_mxfp8_support" in preset("b300").provenance["mxfp8_gemm"]


def test_compute_fp8_is_refused_unless_the_off_switch() -> None:
    with pytest.raises(ConfigError) as err:
        _cfg("precision.compute=fp8")
    assert err.value.field == "precision.compute" and "linear_recipe" in err.value.rule
    _cfg("precision.compute=fp8", "options.low_precision_gemms=false")  # the model before recipes


# -- presets -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["b300", "gb200-nvl72", "gb300-nvl72"])
def test_blackwell_presets_sourced(name: str) -> None:
    spec = preset(name)
    assert {"fp8", "fp4", "bf16"} <= set(spec.peak_tflops)
    assert {"hbm_gib", "peak_tflops", "levels", "network"} <= set(spec.provenance)
    assert spec.efficiency is not None and spec.efficiency.hbm_gb_s == 8000.0
    assert all(spec.efficiency.sources.get(k) for k in ("matmul", "attention_fwd", "memory", "hbm_gb_s"))
    nvlink = spec.levels[0]
    assert nvlink.bandwidth_gb_s == 900.0 and nvlink.max_devices == (8 if name == "b300" else 72)


def test_nvl72_keeps_ep64_on_nvlink() -> None:
    """An EP group of 64 fits the 72-GPU NVLink domain of GB200 NVL72, not the 8-GPU node of DGX-B200."""
    assert preset("gb200-nvl72").levels[0].max_devices >= 64 > preset("b200").levels[0].max_devices  # type: ignore[operator]


# -- CUDA graphs --------------------------------------------------------------------------------------------


def test_graph_launches_by_hand() -> None:
    eager = PassKernels(30.0, 50.0, 10.0)
    assert graphs.layer_launches("layers", eager) == PassKernels(1.0, 1.0, 1.0)
    assert graphs.layer_launches("layers", PassKernels(30.0, 50.0, 0.0)) == PassKernels(1.0, 1.0, 0.0)
    assert graphs.layer_launches("full_iteration", eager) == PassKernels(0.0, 0.0, 0.0)
    assert graphs.layer_launches("none", eager) == eager
    assert graphs.extra_launches("layers", eager) == eager


def test_graphs_bound_the_host_per_layer_and_switch_off() -> None:
    """Llama 3 8B on pp 2: 16 layers per stage; with per-layer graphs the stage launches 16 graphs per pass
    plus the eager embedding / head kernels; the off-switch restores every kernel."""
    eager = stage_costs(_cfg())[1]
    graphed = stage_costs(_cfg("train.cuda_graph=layers"))[1]
    off = stage_costs(_cfg("train.cuda_graph=layers", "options.cuda_graphs=false"))[1]
    head = head_pass_kernels(2)
    assert graphed.kernels_fw == 16 + head.forward and graphed.kernels_bw == 16 + head.backward
    assert off.kernels_fw == eager.kernels_fw and off.host_fw == eager.host_fw
    full = stage_costs(_cfg("train.cuda_graph=full_iteration"))[1]
    assert full.kernels_fw == 0.0 and full.host_fw == 0.0


# -- LoRA ----------------------------------------------------------------------------------------------------


def test_lora_params_by_hand() -> None:
    """Llama 3 8B, tp 2, r 16: qkv 4096 × 3072, proj 2048 × 4096, fc1 4096 × 14336, fc2 7168 × 4096 per rank:
    16·(7168 + 6144 + 18432 + 11264) = 688,128 adapter parameters per layer."""
    cfg = _cfg("adapter.kind=lora", "adapter.rank=16")
    adapter = adapters.adapter_of(cfg)
    assert adapter is not None
    assert adapters.layer_adapter_params(cfg.model, adapter, False, 2, 0.0) == (688128.0, 0.0)
    assert adapters.lora_params(8, 4096, 4096) == 65536
    # quick-GeGLU (GPT-OSS) is gated like SwiGLU: fc1 keeps its 2·ffn/tp = 14336 outputs
    quick = _cfg("adapter.kind=lora", "adapter.rank=16", "model.activation=quick_geglu")
    assert adapters.layer_adapter_params(quick.model, adapter, False, 2, 0.0) == (688128.0, 0.0)
    # GeLU: fc1 is one 4096 × 7168 matrix per rank -> 16·(4096 + 7168) fewer by 16·7168
    plain = _cfg("adapter.kind=lora", "adapter.rank=16", "model.activation=gelu")
    assert adapters.layer_adapter_params(plain.model, adapter, False, 2, 0.0) == (688128.0 - 16 * 7168, 0.0)


def test_lora_memory_frozen_base_and_trained_adapters() -> None:
    """Megatron: frozen weights keep 2 B each, no grad, no optimizer state; adapters 2 + 4 B held and 12 B
    over dp·cp = 2 (distributed optimizer)."""
    full = layer_static(_cfg(), 0).total
    lora = layer_static(_cfg("adapter.kind=lora", "adapter.rank=16"), 0).total
    n = 688128.0
    held = full.params  # the frozen base keeps its bf16 params
    assert lora.params == pytest.approx(held + 2 * n)
    assert lora.grads == pytest.approx(4 * n)
    assert lora.optimizer_states == pytest.approx(12 * n / 2)
    off = layer_static(_cfg("adapter.kind=lora", "options.adapters=false"), 0).total
    assert off == full


def test_lora_backward_has_no_weight_gradient_gemms() -> None:
    base = operators.gemm("qkv", ("attn_proj",), 8, 16, 32, 2)
    out = lowp.frozen_ops([base], frozenset({"qkv"}), 4, 2)
    frozen, a, b = out
    assert frozen.bw_flops == base.flops and frozen.bw_bytes == base.bytes and frozen.bw_kernels == 1.0
    assert (a.shape, b.shape) == ((8, 16, 4), (8, 4, 32)) and a.bw_flops == 2 * a.flops
    time_full = estimator.estimate_perf(_cfg()).real_parts
    time_lora = estimator.estimate_perf(_cfg("adapter.kind=lora")).real_parts
    assert time_lora["COMP"] < time_full["COMP"] and time_lora["DP_WAIT"] < time_full["DP_WAIT"]
    assert estimator.estimate_perf(_cfg("adapter.kind=lora", "options.adapters=false")).real_parts == time_full


def test_quantized_parameter_all_gather_by_hand() -> None:
    """Megatron fp8_param_gather with MXFP8: the DP all-gather carries 1 + 1/32 bytes per parameter instead of
    bf16's 2 (the gradient reduce-scatter unchanged); FSDP2's float8 all-gather 1 byte; off-switch: 2 again."""
    from estimator.inputs import derive
    from estimator.perf.context import config_context
    from estimator.perf.stage import dp_collectives, gather_bytes

    cfg = _b200("precision.linear_recipe=mxfp8", "precision.fp8_param_gather=true")
    assert gather_bytes(cfg, 2) == 1.03125
    ctx, layout = config_context(cfg), derive.stage_layouts(cfg)[0]
    base = _b200("precision.linear_recipe=mxfp8")
    gathered = {c.kind: c for c in dp_collectives(cfg, ctx, layout)[0]}
    plain = {c.kind: c for c in dp_collectives(base, config_context(base), derive.stage_layouts(base)[0])[0]}
    assert gathered["all_gather"].size_bytes == pytest.approx(plain["all_gather"].size_bytes * 1.03125 / 2)
    assert gathered["reduce_scatter"].size_bytes == plain["reduce_scatter"].size_bytes
    fsdp = _cfg("profile=fsdp2", "precision.fp8_linear=true", "precision.fsdp_float8_all_gather=true")
    assert gather_bytes(fsdp, 2) == 1.0
    assert gather_bytes(_b200("precision.linear_recipe=mxfp8", "precision.fp8_param_gather=true",
                              "options.low_precision_gemms=false"), 2) == 2
