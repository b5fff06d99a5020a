"""The routed experts' fc2 bias weighted by the routing probabilities (``estimator.perf.expert_bias``).

Synthetic config (written here): GPT-OSS-like experts, one MoE layer, 8 local experts, bf16, no TP.
"""

from __future__ import annotations

import pytest

import estimator
from estimator.perf import expert_bias, roofline
from estimator.perf import operators as ops_
from estimator.perf.context import config_context

MOE = {
    "profile": "megatron",
    "model": {"num_layers": 2, "num_dense_layers": 0, "hidden_size": 2880, "ffn_hidden_size": 2880,
              "num_attention_heads": 64, "num_kv_heads": 8, "head_dim": 64, "num_experts": 128, "moe_topk": 4,
              "moe_ffn_hidden_size": 2880, "vocab_size": 201088, "activation": "quick_geglu", "linear_bias": True},
    "train": {"seq_length": 4096, "micro_batch_size": 1, "num_micro_batches": 1},
    "parallel": {"tp": 1, "pp": 1, "dp": 16, "ep": 16, "distributed_optimizer": True},
    "hardware": "b200",
}


def test_bytes_and_kernels_by_hand() -> None:
    # forward: b·p writes 4; t + b·p reads 2 + 4, writes 4; cat reads 4, writes 4; .to reads 4, writes 2 -> 28
    assert expert_bias.forward_bytes(2) == 4 + (2 + 4 + 4) + (4 + 4) + (4 + 2) == 28
    # backward: cast to fp32 (2 + 4), t's gradient back (4 + 2), b's and p's: product (4 + 4) and reduction (4) each
    assert expert_bias.backward_bytes(2) == (2 + 4) + (4 + 2) + 2 * (4 + 4 + 4) == 36
    assert expert_bias.kernels(8) == (18.0, 41.0)


def _bias_op(**overrides: object) -> list[ops_.Op]:
    cfg = estimator.load_config(MOE, overrides)
    d = roofline.layer_dims(cfg, config_context(cfg))
    return [op for op in ops_.mlp_ops(cfg.model, d, True, 8) if op.name == "expert_bias"]


def test_the_layer_carries_one_bias_pass_of_the_routed_rows() -> None:
    (op,) = _bias_op()
    rows = 4096 * 4  # T·k routed tokens on the rank (balanced), each 2880 wide
    assert op.bytes == pytest.approx(rows * 2880 * 28) and op.bw_bytes == pytest.approx(rows * 2880 * 36)
    assert (op.kernels, op.bw_kernels, op.modules) == (18.0, 41.0, ("moe",))


@pytest.mark.parametrize("overrides", [
    {"model.linear_bias": False},
    {"options.expert_bias": False},  # the off-switch
    {"train.te_op_fuser": True},  # TE's op fuser scales the fc2 bias inside its grouped linear
    {"profile": "fsdp2"},  # torch's FSDP2: not Megatron-Core's experts
])
def test_not_priced_outside_megatron_cores_unfused_experts(overrides: dict[str, object]) -> None:
    assert _bias_op(**overrides) == []


def test_the_bias_pass_adds_step_time_and_the_switch_restores_it() -> None:
    on = estimator.estimate_perf(estimator.load_config(MOE)).total
    off = estimator.estimate_perf(estimator.load_config(MOE, {"options.expert_bias": False})).total
    plain = estimator.estimate_perf(estimator.load_config(MOE, {"model.linear_bias": False})).total
    assert on > off == plain


@pytest.mark.parametrize(("flags", "bias"), [("", True), (" --disable-bias-linear", False),
                                             (" --add-bias-linear", True)])
def test_megatron_import_reads_the_bias_flags(tmp_path, flags: str, bias: bool) -> None:
    """Megatron's ``add_bias_linear`` defaults to true; ``--disable-bias-linear`` turns it off (synthetic args)."""
    from estimator.importers.megatron import import_megatron

    args = tmp_path / "args.txt"
    args.write_text("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 4096 --vocab-size 32000 "
                    "--num-experts 8 --moe-router-topk 2 --expert-model-parallel-size 8" + flags, encoding="utf-8")
    run = import_megatron(args, world_size=8, hardware="h100-80g")
    assert run.data["model"]["linear_bias"] is bias and not any("bias" in w for w in run.warnings)


def test_gpt_oss_model_file_carries_its_biases() -> None:
    from estimator.importers.hf import import_hf_config
    from tests.estimator.test_import_hf import DATA

    assert import_hf_config(DATA / "gpt-oss-120b.json").data["model"]["linear_bias"] is True
