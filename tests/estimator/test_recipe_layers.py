"""Per-layer recipe facts (issue 26) with hand-computed values and their off-switches: TE's fused NVFP4 split
quantization of the routed experts (estimator.perf.lowp.grouped_split_casts), the experts' GEMM shapes under
MoE parallel folding (estimator.perf.operators.expert_tokens) and Megatron's ``--first-last-layers-bf16``
(estimator.perf.lowp.bf16_layers). Shapes and models are synthetic."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

import estimator
from estimator.config.schema import ModelConfig
from estimator.experiments import recipe_notes
from estimator.inputs import recipes
from estimator.perf import lowp, operators
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, SYNTHETIC_MOE_MODEL, synthetic_run

NVFP4 = recipes.RECIPES["nvfp4"]  # amax pass (2 kernels per tensor), 2 copies of 0.5 + 1/16 B: 5.125 B per element


def _expert_casts(k: int, fused: bool = True) -> list[operators.Op]:
    """The casts of 4 experts' GEMM [256, k] @ [k, 256] (B = 2) under NVFP4, weights cast on a quarter of the
    micro-batches."""
    op = operators.gemm("expert_fc1", ("moe",), 256, k, 256, 2, 4.0, "grouped")
    return lowp.quantized_gemm(op, lowp.LowpGemms(NVFP4, 4.0, 0.25, fused), 2)[1:]


def test_nvfp4_splits_of_the_experts_are_one_kernel_by_hand() -> None:
    """k = 128: one cast of the 4 inputs 4·5.125·256·128 = 671,744 B in 2 kernels (amax + cast), backward the 4
    output gradients 4·5.125·256·256 = 1,343,488 B in 2; the weights per expert 0.25·5.125·128·256 = 41,984 B,
    0.5 kernel each."""
    splits, weights = _expert_casts(128)
    assert (splits.count, splits.bytes, splits.kernels, splits.bw_bytes, splits.bw_kernels) == (
        1.0, 671744.0, 2.0, 1343488.0, 2.0)
    assert (weights.count, weights.bytes, weights.kernels, weights.bw_bytes) == (4.0, 41984.0, 0.5, 0.0)


@pytest.mark.parametrize(("k", "fused"), [(100, True), (128, False)])
def test_nvfp4_splits_fall_back_per_expert(k: int, fused: bool) -> None:
    """An inner dim not a multiple of 128 (TE's fallback) or options.fused_quantize off: one cast per expert as
    before, 5.125·256·k + 0.25·5.125·k·256 B and 2·1.25 kernels forward, 5.125·256·256 B backward."""
    (cast,) = _expert_casts(k, fused)
    assert cast.count == 4.0 and cast.bytes == pytest.approx(5.125 * 256 * k * 1.25) and cast.kernels == 2.5
    assert cast.bw_bytes == pytest.approx(5.125 * 256 * 256)


DELAYED = recipes.RECIPES["delayed"]  # FP8 delayed scaling: no amax pass, row- and column-wise copies of 1 B


@pytest.mark.parametrize(("experts", "launches"), [(4, 1.0), (64, 1.0), (65, 2.0), (128, 2.0)])
def test_delayed_scaling_splits_are_multi_cast_transpose_launches(experts: int, launches: float) -> None:
    """FP8 delayed scaling with the transposed copy (Hopper): TE's ``nvte_multi_cast_transpose`` takes up to 64
    splits per launch, so E experts' inputs [256, 128] (B = 2) are ⌈E/64⌉ kernels moving E·(2 + 2·1)·256·128 =
    E·131,072 B forward; backward the output gradients [256, 256], E·262,144 B in as many kernels."""
    op = operators.gemm("expert_fc1", ("moe",), 256, 128, 256, 2, float(experts), "grouped")
    splits, weights = lowp.quantized_gemm(op, lowp.LowpGemms(DELAYED, 4.0, 0.25, True), 2)[1:]
    assert (splits.count, splits.bytes, splits.kernels, splits.bw_bytes, splits.bw_kernels) == (
        1.0, experts * 131072.0, launches, experts * 262144.0, launches)
    # the weights stay one cast per expert: 0.25·4·128·256 B, a quarter kernel each
    assert (weights.count, weights.bytes, weights.kernels) == (float(experts), 32768.0, 0.25)


def test_delayed_scaling_without_the_transposed_copy_casts_each_split() -> None:
    """Blackwell (non-TN FP8 GEMMs) writes no column-wise copy, which the fused kernel needs: one cast per expert,
    (2 + 1)·256·128 + 0.25·(2 + 1)·128·256 = 122,880 B, 1.25 kernels each."""
    rowwise = replace(DELAYED, columnwise_copy=False)
    op = operators.gemm("expert_fc1", ("moe",), 256, 128, 256, 2, 8.0, "grouped")
    (cast,) = lowp.quantized_gemm(op, lowp.LowpGemms(rowwise, 4.0, 0.25, True), 2)[1:]
    assert (cast.count, cast.bytes, cast.kernels) == (8.0, 122880.0, 1.25)


def test_expert_gemm_shapes_follow_the_expert_tp_size() -> None:
    """T = 1024 tokens, tp 2, top-2 over 4 local experts: etp 1 routes the SP shard, 2·512/4 = 256 tokens per
    expert on the whole FFN (32); etp 2 (= tp, as before) 2·1024/4 = 512 tokens on FFN/2 = 16 — the same FLOPs."""
    model = ModelConfig.model_validate(SYNTHETIC_MOE_MODEL)

    def fc1(etp: int | None) -> operators.Op:
        dims = operators.LayerDims(tokens=1024, norm_tokens=512, batch=1, seq=1024, tp=2, cp=1, b=2, flash=True,
                                   ring_blocks=1, imbalance=1.0, etp=etp)
        return next(op for op in operators.mlp_ops(model, dims, True, 4) if op.name == "expert_fc1")

    one, two, before = fc1(1), fc1(2), fc1(None)
    assert one.shape == (256.0, 64, 64.0) and two.shape == (512.0, 64, 32.0)  # swiglu: fc1 is 2·ffn wide
    assert one.flops == two.flops == before.flops and two == before
    assert operators.expert_tokens(1024.0, 2, 1) == 512.0 and operators.expert_tokens(1024.0, 2, 2) == 1024.0


def _dense(ends: tuple[int, int] | None, recipe: str | None = "tensorwise") -> Any:
    precision: dict[str, Any] = {"linear_recipe": recipe} if recipe else {}
    if ends is not None:
        precision["bf16_layers_at_ends"] = list(ends)
    run = synthetic_run(SYNTHETIC_DENSE_MODEL, parallel={"tp": 1, "pp": 1, "dp": 8, "ep": 1}, precision=precision,
                        profile="megatron")
    return estimator.estimate_perf(estimator.load_config(run))


def test_first_and_last_layers_in_bf16_price_their_layers_without_the_recipe() -> None:
    """4 identical layers, (1, 1) at the ends: 2 layers at the FP8 price and 2 at the BF16 price, so each pass
    is the mean of the all-FP8 and the all-BF16 runs (embedding and head are outside the recipe in both);
    (0, 0) is the all-FP8 run bit for bit."""
    fp8, bf16, ends = _dense((0, 0)), _dense(None, None), _dense((1, 1))
    for part in ("FW_COMPUTE", "BW_COMPUTE"):
        assert ends.perf_parts[part] == pytest.approx((fp8.perf_parts[part] + bf16.perf_parts[part]) / 2, rel=1e-12)
        assert ends.perf_parts[part] != fp8.perf_parts[part]  # (tiny shapes: FP8's casts cost more than BF16)
    assert _dense(None).perf_parts == fp8.perf_parts and _dense((0, 0)).total == fp8.total
    assert _dense((4, 0)).perf_parts == pytest.approx(bf16.perf_parts, rel=1e-12)  # every layer outside


def test_recipe_item_first_last_layers_bf16() -> None:
    config: dict[str, Any] = {"profile": "megatron", "model": {"num_experts": 0, "source_facts": {}, "assumed": {}},
                              "train": {}, "parallel": {"tp": 1, "pp": 1}, "recompute": {}, "precision": {}}
    notes = "fp4=e2m1(fp4_recipe=nvfp4,fp4_param_gather=unset) | first_last_layers_bf16=true(start=0,end=14)"
    recipe_notes.apply_recipe_items({"notes": notes}, config)
    assert config["precision"]["bf16_layers_at_ends"] == [0, 14]
    assert "first_last_layers_bf16" not in config["model"]["assumed"].get("recipe_items", "")


@pytest.mark.parametrize("precision", [{"linear_recipe": "delayed", "bf16_layers_at_ends": [1, 1]},
                                       {"linear_recipe": "tensorwise", "bf16_layers_at_ends": [0, 3]}])
def test_first_last_layers_bf16_refused_as_megatron_refuses(precision: dict[str, Any]) -> None:
    """Delayed scaling, or more BF16 layers than one stage holds (4 layers over pp 2): one ConfigError naming the
    field and Megatron-Core's rule."""
    run = synthetic_run(SYNTHETIC_DENSE_MODEL, precision=precision, profile="megatron",
                        parallel={"tp": 1, "pp": 2, "dp": 4, "ep": 1})
    with pytest.raises(estimator.ConfigError, match=r"precision\.bf16_layers_at_ends.*delayed scaling"):
        estimator.load_config(run)


def _offload_run(layers: int, **train: Any) -> dict[str, Any]:
    return synthetic_run(SYNTHETIC_DENSE_MODEL, parallel={"tp": 1, "pp": 1, "dp": 8, "ep": 1}, profile="megatron",
                         train={"seq_length": 128, "micro_batch_size": 1, "num_micro_batches": 4,
                                "cpu_offloading_num_layers": layers, **train})


def test_cpu_offloading_keeps_the_other_layers_and_one_in_transit() -> None:
    """4 identical layers of activation a, embedding and head unchanged: offloading 2 holds 2 + 1 in transit, so
    the activations fall by exactly one layer's a (0 offloaded: every number as without the field); 3 offloaded
    hold 1 + 1."""
    def act(layers: int) -> float:
        mem = estimator.estimate_memory(estimator.load_config(_offload_run(layers)))
        return float(mem.stages[0].components["activations"])

    from estimator.memory.stage import layer_dynamic_bytes
    cfg = estimator.load_config(_offload_run(0))
    a = layer_dynamic_bytes(cfg, 0, 1, "none")[0] / 2**20
    assert act(2) == pytest.approx(act(0) - a, rel=1e-12)
    assert act(3) == pytest.approx(act(0) - 2 * a, rel=1e-12)
    unpriced = estimator.load_config(_offload_run(2), {"options.offload_copies": False})
    report = estimator.estimate_perf(unpriced)
    assert any("cpu_offloading_num_layers" in w and "options.offload_copies is off" in w for w in report.warnings)
    assert report.total == estimator.estimate_perf(cfg).total  # time: the copies off (estimator.perf.offload)


@pytest.mark.parametrize(("layers", "extra"), [(4, {}), (1, {"pp": 2, "dp": 4}), (1, {"recompute": True})])
def test_cpu_offloading_refused_as_megatron_refuses(layers: int, extra: dict[str, Any]) -> None:
    """All the layers, pipeline parallelism or recompute: one ConfigError naming the field."""
    run = _offload_run(layers)
    if "pp" in extra:
        run["parallel"] = {**run["parallel"], "pp": 2, "dp": 4}
    if "recompute" in extra:
        run["recompute"] = {"mode": "full"}
    with pytest.raises(estimator.ConfigError, match=r"train\.cpu_offloading_num_layers"):
        estimator.load_config(run)


@pytest.mark.parametrize(("pp", "applied"), [(1, 40), (8, None)])
def test_recipe_item_cpu_offloading_applied_where_megatron_allows_it(pp: int, applied: int | None) -> None:
    """``cpu_offloading_num_layers=40``: applied at pp 1; at pp 8 (a published layout other than the recipe's)
    recorded as not applied, with the reason."""
    config: dict[str, Any] = {"profile": "megatron", "model": {"num_experts": 0, "source_facts": {}, "assumed": {}},
                              "train": {}, "parallel": {"tp": 1, "pp": pp}, "recompute": {"mode": "none"}}
    recipe_notes.apply_recipe_items({"notes": "cuda_graph=none | cpu_offloading_num_layers=40"}, config)
    assert config["train"].get("cpu_offloading_num_layers") == applied
    assert ("cpu_offloading_num_layers" in config["model"]["assumed"]) == (applied is None)
