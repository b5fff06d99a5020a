"""Where the routing probabilities are applied, in memory (``estimator.memory.activation.unpermute_saves_output``).

Megatron-Core (since core 0.13) multiplies them inside the experts' weighted activation, so un-permuting the experts'
output keeps nothing for backward; the activation keeps the permuted probabilities (fp32). Other frameworks multiply
after the experts and keep the output. The config is synthetic (written here): one MoE layer, bf16, no TP, no
hidden dropout.
"""

from __future__ import annotations

import pytest

import estimator
from estimator.memory import activation

#: one MoE layer of 2048 wide tokens, 128 experts of 768, top-8; 4096 tokens per micro-batch
MOE = {
    "model": {"num_layers": 1, "num_dense_layers": 0, "hidden_size": 2048, "ffn_hidden_size": 6144,
              "num_attention_heads": 32, "num_kv_heads": 4, "head_dim": 128, "num_experts": 128, "moe_topk": 8,
              "moe_ffn_hidden_size": 768, "vocab_size": 151936},
    "train": {"seq_length": 4096, "micro_batch_size": 1, "num_micro_batches": 1, "hidden_dropout": 0.0},
    "parallel": {"tp": 1, "pp": 1, "dp": 8, "ep": 8, "distributed_optimizer": True},
    "hardware": "b200",
}
TOKENS, TOPK, HIDDEN = 4096, 8, 2048


def _mlp_bytes(**overrides: object) -> float:
    cfg = estimator.load_config(MOE, overrides)
    return activation.mlp_block_bytes(cfg, True, frozenset())


def test_megatron_keeps_the_probabilities_not_the_unpermuted_output() -> None:
    cfg = estimator.load_config(MOE, {"profile": "megatron"})
    assert not activation.unpermute_saves_output(cfg)
    before = _mlp_bytes(profile="megatron", **{"options.moe_probs_in_activation": False})
    # the un-permuted output, 4096 tokens x 8 copies x 2048 x 2 B = 134,217,728 B, becomes 4096 x 8 fp32 probabilities
    assert before - _mlp_bytes(profile="megatron") == pytest.approx(TOKENS * TOPK * HIDDEN * 2 - TOKENS * TOPK * 4)


def test_megatron_fsdp_layers_are_megatron_cores() -> None:
    fsdp = {"profile": "fsdp2", "parallel.fsdp_implementation": "megatron"}
    assert not activation.unpermute_saves_output(estimator.load_config(MOE, fsdp))
    assert activation.unpermute_saves_output(estimator.load_config(MOE, {"profile": "fsdp2"}))


@pytest.mark.parametrize("overrides", [
    {"profile": "sapp-nd"},  # the reference tool
    {"profile": "fsdp2"},  # torch's own FSDP: probabilities after the experts
    {"profile": "megatron", "options.moe_probs_in_activation": False},  # the off-switch
])
def test_others_keep_the_unpermuted_output(overrides: dict[str, object]) -> None:
    cfg = estimator.load_config(MOE, overrides)
    assert activation.unpermute_saves_output(cfg)
    with_output = activation.mlp_block_bytes(cfg, True, frozenset())
    # norm input 2048·2, norm output (router) 2048·2, router 128·10, permuted input and un-permuted output
    # 8·2048·(2 + 2), fc1 8·2·768·2, activation 8·768·2: per token
    per_token = 2048 * 2 + 2048 * 2 + 128 * 10 + 8 * 2048 * 4 + 8 * 2 * 768 * 2 + 8 * 768 * 2
    assert with_output == pytest.approx(TOKENS * per_token)
