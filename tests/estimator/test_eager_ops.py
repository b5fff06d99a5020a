"""Plain PyTorch eager blocks (``train.eager_ops``, ``estimator.perf.eager``): the norms, RoPE and SwiGLU as their
ATen ops, fused again by ``torch.compile``. Hand-computed values in the comments; the example config is the shipped
Llama 3 8B one under the ``fsdp2`` profile (FSDP over 8 ranks, as torchtitan's Table 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

import estimator
from estimator.config.errors import ConfigError
from estimator.perf import context, eager, kernels, operators, roofline
from tests.estimator.scalar_reference import EXAMPLES

LLAMA = EXAMPLES / "llama3-8b-h100.yaml"
TITAN = {"profile": "fsdp2", "parallel.tp": 1, "parallel.pp": 1, "parallel.dp": 8, "parallel.sequence_parallel": False,
         "train.global_batch_size": 16, "train.micro_batch_size": 2}
EAGER = {**TITAN, "train.eager_ops": True, "train.eager_rmsnorm": True}


def _cfg(**overrides: object) -> estimator.EstimatorConfig:
    return estimator.load_config(LLAMA, overrides)


def test_decompositions_move_the_hand_counted_bytes() -> None:
    # 1e6 elements in bf16 (B = 2). RMSNorm: forward 4B + 28 = 36 B in 8 kernels, backward 8B + 76 = 92 B in 16;
    # fused 2B = 4 B forward (1 kernel), 1.5·4 = 6 B backward (2)
    norm = operators.elementwise("input_norm", ("layernorm",), 2 * 1e6 * 2, bw_kernels=2)
    out = eager.eager_op(norm, 2, rmsnorm=True)
    assert (out.bytes, out.kernels, out.bw_bytes, out.bw_kernels) == (36e6, 8.0, 92e6, 16.0)
    assert eager.eager_op(norm, 2, rmsnorm=False) == norm  # torchtitan fused_rmsnorm: one kernel
    # RoPE on 1e6 q elements: 2B + 16 = 20 B each pass, 3 kernels each
    rope = operators.elementwise("rope_q", ("attn_proj",), 2 * 1e6 * 2)
    out = eager.eager_op(rope, 2, rmsnorm=False)
    assert (out.bytes, out.kernels, out.bw_bytes, out.bw_kernels) == (20e6, 3.0, 20e6, 3.0)
    # SwiGLU over F = 1e6 FFN elements: fused reads 2F and writes F (3B·F = 6e6 B); eager silu (2B) + multiply (3B)
    # = 10e6 B in 2 kernels, backward 9B = 18e6 B in 3
    act = operators.elementwise("mlp_activation", ("mlp",), 3 * 1e6 * 2)
    out = eager.eager_op(act, 2, rmsnorm=False)
    assert (out.bytes, out.kernels, out.bw_bytes, out.bw_kernels) == (10e6, 2.0, 18e6, 3.0)
    # fp32 compute (B = 4): RMSNorm 4·4 + 28 = 44 B forward, 8·4 + 76 = 108 B backward
    norm32 = operators.elementwise("post_attn_norm", ("layernorm",), 2 * 1e6 * 4, bw_kernels=2)
    assert (eager.eager_op(norm32, 4, True).bytes, eager.eager_op(norm32, 4, True).bw_bytes) == (44e6, 108e6)
    # other operators keep their price
    residual = operators.elementwise("residual_mlp", ("residual",), 5e6)
    assert eager.eager_op(residual, 2, True) == residual


def test_layer_bytes_grow_by_the_decompositions() -> None:
    # Llama 3 8B, micro-batch 2 × 8192 = 16384 tokens on one rank (tp 1): N = 16384·4096 elements per norm,
    # q 16384·4096 and k 16384·1024 RoPE elements, F = 16384·14336 SwiGLU elements. Forward bytes added per layer:
    # 2 norms · 32 N + RoPE 16 (N + N/4) + SwiGLU 4 F; backward: 2 · 86 N + 13 (N + N/4) + 13.5 F − ...
    fused, eager_cfg = _cfg(**TITAN), _cfg(**EAGER)
    ops = {}
    for name, cfg in (("fused", fused), ("eager", eager_cfg)):
        dims = roofline.layer_dims(cfg, context.config_context(cfg))
        ops[name] = roofline.layer_ops(cfg, dims, 0)
    n, f = 16384 * 4096, 16384 * 14336
    fw = sum(op.bytes for op in ops["eager"]) - sum(op.bytes for op in ops["fused"])
    bw = sum(op.bw_bytes for op in ops["eager"]) - sum(op.bw_bytes for op in ops["fused"])
    assert fw == pytest.approx(2 * (36 - 4) * n + (20 - 4) * 1.25 * n + (10 - 6) * f)
    assert bw == pytest.approx(2 * (92 - 6) * n + (20 - 6) * 1.25 * n + (18 - 9) * f)
    kernels_fw = sum(op.kernels for op in ops["eager"]) - sum(op.kernels for op in ops["fused"])
    assert kernels_fw == 2 * 7 + 2 * 2 + 1


def test_host_kernel_counts_follow_the_decompositions() -> None:
    # forward: 2 norms 8 instead of 1, 2 RoPE 3 instead of 1, SwiGLU 2 instead of 1 → +19; backward: norms 16
    # instead of 2, RoPE 3 instead of 1, SwiGLU 3 instead of 1 → +34
    model = _cfg().model
    shape = {"moe": False, "layer_ep": 1, "tp": 1, "sequence_parallel": False, "tp_blocks": 2, "cp": 1,
             "flash_attention": True}
    fused = kernels.layer_pass_kernels(kernels.layer_shape(model, **shape), "none")
    both = kernels.layer_pass_kernels(kernels.layer_shape(model, **shape, eager=(True, True)), "none")
    assert (both.forward - fused.forward, both.backward - fused.backward) == (19.0, 34.0)
    pointwise = kernels.layer_pass_kernels(kernels.layer_shape(model, **shape, eager=(True, False)), "none")
    assert (pointwise.forward - fused.forward, pointwise.backward - fused.backward) == (5.0, 6.0)
    assert kernels.head_pass_kernels(1, True).forward - kernels.head_pass_kernels(1).forward == 7.0


def test_eager_blocks_cost_time_and_compile_or_the_switch_restores_the_fused_model() -> None:
    base = estimator.estimate_perf(_cfg(**TITAN))
    slow = estimator.estimate_perf(_cfg(**EAGER))
    assert slow.total > base.total
    assert slow.stages[0].by_class["elementwise"] > base.stages[0].by_class["elementwise"]
    assert slow.stages[0].by_class["gemm"] == base.stages[0].by_class["gemm"]
    # off-switch and torch.compile: every number is the fused model's
    for off in ({"options.eager_kernels": False}, {"options.torch_compile": True}):
        assert estimator.estimate_perf(_cfg(**EAGER, **off)).to_dict() == \
            estimator.estimate_perf(_cfg(**TITAN, **off)).to_dict()
    # memory is not changed by the decomposition (op-level SAC or not, only the time is priced)
    assert estimator.estimate_memory(_cfg(**EAGER)).peak_mb == estimator.estimate_memory(_cfg(**TITAN)).peak_mb


@pytest.mark.parametrize(("overrides", "field"), [
    ({"train.eager_ops": True, "model.num_experts": 8, "model.moe_topk": 2, "model.moe_ffn_hidden_size": 1024},
     "train.eager_ops"),
    ({"train.eager_ops": True, "model.activation": "gelu"}, "train.eager_ops"),
    ({"train.eager_rmsnorm": True}, "train.eager_rmsnorm"),
    ({"train.eager_ops": True, "train.eager_rmsnorm": True, "model.norm": "layernorm"}, "train.eager_rmsnorm"),
])
def test_unmodelled_eager_blocks_are_refused(overrides: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as err:
        _cfg(**TITAN, **overrides)
    assert err.value.field == field


def test_torchtitan_imports_eager_blocks(tmp_path: Path) -> None:
    from estimator.importers.torchtitan import import_torchtitan

    data = Path(__file__).resolve().parents[1] / "data" / "torchtitan"
    old = import_torchtitan(data / "llama3_8b.toml", world_size=8).data["train"]
    assert old["eager_ops"] is True and old["eager_rmsnorm"] is True
    new = import_torchtitan(data / "llama3_8b_2025.toml", world_size=8).data["train"]
    assert new["eager_ops"] is True and "eager_rmsnorm" not in new  # nn.RMSNorm: one kernel
    fused = tmp_path / "fused.toml"
    fused.write_text((data / "llama3_8b.toml").read_text().replace('norm_type = "rmsnorm"', 'norm_type = "fused_rmsnorm"'))
    assert import_torchtitan(fused, world_size=8).data["train"]["eager_rmsnorm"] is False


def test_measured_torchtitan_rows_run_eager_blocks() -> None:
    from estimator.experiments.row_corrections import framework_rules

    row = {"case_id": "t", "framework": "torchtitan (9dec370)", "notes": "torch 1963fc8 (2024-12-23), torchao "
           "eab345c, torchtitan 9dec370 (2024-12-26)"}
    config: dict = {"parallel": {"tp": 1}, "train": {}, "model": {}}
    framework_rules(row, config)
    assert config["train"] == {"eager_ops": True, "eager_rmsnorm": True}
    assert "framework train.eager_rmsnorm" in config["model"]["assumed"]
    later = {**row, "notes": "torchtitan 238fa99 (2025-09-01)"}
    config = {"parallel": {"tp": 1}, "train": {}, "model": {}}
    framework_rules(later, config)
    assert config["train"] == {"eager_ops": True}
    config = {"parallel": {"tp": 1}, "train": {}, "model": {}}
    framework_rules(row, config, enabled=False)
    assert config["train"] == {}
