"""Parameter counts per layer kind: toy arithmetic and the official DeepSeek-V3 recount."""

from __future__ import annotations

import pytest

from estimator.config.schema import ModelConfig
from estimator.inputs.params import (
    activated_params,
    attention_params,
    embedding_params,
    head_params,
    layer_params,
    mlp_params,
    total_params,
)
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, SYNTHETIC_MOE_MODEL


def test_toy_gqa_dense_layer() -> None:
    m = ModelConfig(**SYNTHETIC_DENSE_MODEL)
    # h=64, a=8, g=4, d=8: Q 64·64 + K,V 2·64·32 + O 64·64 = 4096 + 4096 + 4096 = 12288
    assert attention_params(m) == 12288
    # GeLU MLP 2·64·256 = 32768; LayerNorm 2 norms · 2·64 = 256
    lp = layer_params(m, 0)
    assert (lp.non_expert, lp.routed, lp.shared, lp.norm) == (12288 + 32768 + 256, 0, 0, 256)


def test_toy_moe_layers() -> None:
    m = ModelConfig(**SYNTHETIC_MOE_MODEL)
    attn = 4 * 64 * 64  # MHA: Q, K, V, O
    dense = layer_params(m, 0)
    assert dense.non_expert == attn + 3 * 64 * 256 + 2 * 64  # SwiGLU 3·h·F, RMSNorm 2·h
    moe = layer_params(m, 1)
    # router h·E = 512; routed 8 · 3·64·32 = 49152; shared (1 × F_e) 3·64·32 = 6144
    assert (moe.non_expert, moe.routed, moe.shared) == (attn + 2 * 64 + 512, 49152, 6144)
    assert moe.norm == 2 * 64 + 512


def test_mla_attention_matches_official_deepseek_v3() -> None:
    """facts §3.1 [C] recount: attention/layer 0.187B, expert 44.04M, dense layer 0.583B, MoE layer 11.507B."""
    m = ModelConfig(
        num_layers=61, num_dense_layers=3, hidden_size=7168, ffn_hidden_size=18432, num_attention_heads=128,
        attention="mla", q_lora_rank=1536, kv_lora_rank=512, qk_head_dim=128, qk_rope_head_dim=64,
        v_head_dim=128, num_experts=256, moe_topk=8, num_shared_experts=1, moe_ffn_hidden_size=2048,
        mtp_layers=1, vocab_size=129280,
    )
    assert attention_params(m) / 1e9 == pytest.approx(0.187, abs=5e-4)
    assert mlp_params(7168, 2048, "swiglu") / 1e6 == pytest.approx(44.04, abs=0.01)
    assert layer_params(m, 0).total / 1e9 == pytest.approx(0.583, abs=1e-3)
    assert layer_params(m, 3).total / 1e9 == pytest.approx(11.507, abs=1e-3)
    main = total_params(m) - layer_params(m, 61).total  # without the MTP module
    assert main / 1e9 == pytest.approx(671.03, abs=0.05)
    # MTP module (facts §3.1 recount "MTP unique 11.61B"): a MoE layer + projection 2h·h + 2 RMSNorms
    assert layer_params(m, 61).total == layer_params(m, 3).total + 2 * 7168 * 7168 + 2 * 7168
    assert layer_params(m, 61).total / 1e9 == pytest.approx(11.61, abs=5e-3)
    assert embedding_params(m) / 1e9 == pytest.approx(0.927, abs=1e-3)
    assert head_params(m) == 129280 * 7168 + 7168
    # activated 36.7B incl. 0.9B embedding + 0.9B head (README_WEIGHTS.md)
    act = activated_params(m) + embedding_params(m) + head_params(m)
    assert act / 1e9 == pytest.approx(37.5, abs=1.0)


def test_bundled_mini_is_about_1p3b() -> None:
    import yaml

    from estimator.config.schema import BUNDLED_CASES_DIR

    data = yaml.safe_load((BUNDLED_CASES_DIR / "models" / "deepseek-v3-mini.yaml").read_text())["model"]
    m = ModelConfig(**data)
    assert 1.2e9 < total_params(m) < 1.4e9
    assert m.num_experts == 32 and m.num_layers == 12 and m.attention == "mla"
    # every field the seed does not publish ("~1.3B, 32 experts, 12 layers, MLA") is marked assumed,
    # with a one-line reason, both in the map and as a "# assumed:" comment on its line
    published = {"name", "num_layers", "num_experts", "attention", "assumed"}
    assert set(data) - published == set(m.assumed)
    assert all(reason.strip() and "\n" not in reason for reason in m.assumed.values())
    text = (BUNDLED_CASES_DIR / "models" / "deepseek-v3-mini.yaml").read_text()
    for name in m.assumed:
        line = next(raw for raw in text.splitlines() if raw.strip().startswith(f"{name}:"))
        assert "# assumed:" in line, line
