"""Hugging Face families added beside the first twenty (estimator.importers.hf_mamba, hf_llama_like, hf.py's
Nemotron / Ling / Gemma): each family's parameter count against its authors' published count, its features, its
refusals. Files are SYNTHETIC where a config.json was not transcribed: the published dims for the keys the importer
reads, labelled per model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator.config.errors import ConfigError
from estimator.config.sections import ModelConfig
from estimator.importers import import_hf_config
from estimator.inputs.params import embedding_params, param_counts

from .test_import_hf import DATA, SOURCES, TOLERANCE, _estimate_json, _model, _write


def test_ling_lite_active_count_is_the_published_one() -> None:
    counts = param_counts(_model("ling-lite-1.5.json"))
    assert abs(counts.active / float(SOURCES["ling-lite-1.5.json"]["published"]["active"]) - 1) <= TOLERANCE


def test_bailing_v2_keys_shared_width_qk_norm_dense_layers_and_mtp(tmp_path: Path) -> None:
    """A SYNTHETIC Ling 2.0-style file (BailingMoeV2's keys, small values): the shared expert's own width
    (``moe_shared_expert_intermediate_size``) × its count, q/k norms, one leading dense layer, one MTP layer;
    biases reported, not counted; parameters by hand."""
    doc = {"model_type": "bailing_moe", "architectures": ["BailingMoeV2ForCausalLM"], "hidden_size": 256,
           "intermediate_size": 640, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
           "head_dim": 64, "vocab_size": 1000, "num_experts": 8, "num_experts_per_tok": 2, "num_shared_experts": 1,
           "moe_intermediate_size": 64, "moe_shared_expert_intermediate_size": 96, "first_k_dense_replace": 1,
           "use_qk_norm": True, "num_nextn_predict_layers": 1, "partial_rotary_factor": 0.5, "use_qkv_bias": True,
           "score_function": "sigmoid", "n_group": 4, "topk_group": 2, "moe_router_enable_expert_bias": True,
           "routed_scaling_factor": 2.5, "router_dtype": "fp32", "hidden_act": "silu", "tie_word_embeddings": False}
    imported = import_hf_config(_write(tmp_path, doc))
    model = ModelConfig.model_validate(imported.data["model"])
    assert (model.num_shared_experts, model.shared_expert_ffn_hidden_size, model.qk_norm, model.num_dense_layers,
            model.mtp_layers) == (1, 96, True, 1, 1)
    assert "use_qkv_bias" in imported.not_modelled and not imported.warnings
    attn = 256 * 4 * 64 + 2 * 256 * 2 * 64 + 4 * 64 * 256 + 2 * 64  # q, k+v, o, q/k norms of head_dim
    moe = 8 * 3 * 256 * 64 + 3 * 256 * 96 + 8 * 256  # routed, shared, router
    dense = 3 * 256 * 640
    norms = 2 * 256
    main = (attn + norms) * 3 + dense + 2 * moe + 2 * 1000 * 256 + 256
    assert param_counts(model).main == main


def test_nemotron4_15b_counts_are_the_report_s(tmp_path: Path) -> None:
    """Nemotron-4 15B's dims as a SYNTHETIC NemotronConfig file (technical report arXiv 2402.16819 Table 1: 32
    layers, hidden 6144, 48 heads, 8 KV heads, vocabulary 256,000; squared-ReLU MLP of 4 × hidden): "3.2 billion
    embedding parameters and 12.5 billion non-embedding parameters" (§2); LayerNorm1P weights and biases."""
    doc = {"model_type": "nemotron", "architectures": ["NemotronForCausalLM"], "hidden_size": 6144,
           "intermediate_size": 24576, "num_hidden_layers": 32, "num_attention_heads": 48, "num_key_value_heads": 8,
           "vocab_size": 256000, "hidden_act": "relu2", "norm_eps": 1e-5, "partial_rotary_factor": 0.5,
           "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False, "rope_theta": 10000}
    model = ModelConfig.model_validate(import_hf_config(_write(tmp_path, doc)).data["model"])
    assert (model.activation, model.norm, model.attention, model.tied_embeddings) == (
        "squared_relu", "layernorm", "gqa", False)
    counts = param_counts(model)
    embedding = 2 * embedding_params(model)  # input embedding and output layer, untied
    assert abs(embedding / 3.2e9 - 1) <= 0.02
    assert abs((counts.total - embedding) / 12.5e9 - 1) <= TOLERANCE
    with pytest.raises(ConfigError) as err:
        import_hf_config(_write(tmp_path, {**doc, "hidden_act": "silu"}))
    assert err.value.field == "hidden_act"


#: Mamba-Codestral-7B-v0.1's published values for the keys the importer reads (mistralai/Mamba-Codestral-7B-v0.1
#: config.json as public loaders transcribe it; the model card: 7,285,403,648 parameters)
CODESTRAL = {"model_type": "mamba2", "architectures": ["Mamba2ForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 64,
             "num_heads": 128, "head_dim": 64, "state_size": 128, "n_groups": 8, "expand": 2, "conv_kernel": 4,
             "chunk_size": 256, "vocab_size": 32768, "tie_word_embeddings": False, "use_bias": False,
             "use_conv_bias": True, "rms_norm": True, "hidden_act": "silu", "residual_in_fp32": True,
             "time_step_rank": 256, "time_step_min": 0.001, "time_step_max": 0.1, "time_step_floor": 1e-4,
             "layer_norm_epsilon": 1e-5, "rescale_prenorm_residual": False}


def test_mamba2_imports_as_a_mamba_mixer_on_every_layer(tmp_path: Path) -> None:
    imported = import_hf_config(_write(tmp_path, CODESTRAL))
    model = ModelConfig.model_validate(imported.data["model"])
    assert model.hybrid_override_pattern == "M" * 64 and model.position_embedding == "none"
    assert (model.mamba_num_heads, model.mamba_head_dim, model.mamba_state_dim, model.mamba_num_groups) == (128, 64,
                                                                                                          128, 8)
    assert param_counts(model).total == 7_285_403_648  # the model card's count, to the parameter
    assert not imported.warnings
    # state-spaces/mamba2-780m (its config as public loaders transcribe it): 48 layers, h 1536, 48 heads, one
    # group, vocabulary 50288, tied: the 780M of its name
    small = {**CODESTRAL, "hidden_size": 1536, "num_hidden_layers": 48, "num_heads": 48, "n_groups": 1,
             "vocab_size": 50288, "tie_word_embeddings": True}
    assert abs(param_counts(ModelConfig.model_validate(import_hf_config(_write(tmp_path, small)).data["model"])).total
               / 780e6 - 1) <= 0.01
    for change, key in (({"num_heads": 64}, "num_heads"), ({"rms_norm": False}, "rms_norm")):
        with pytest.raises(ConfigError) as err:
            import_hf_config(_write(tmp_path, {**CODESTRAL, **change}))
        assert err.value.field == key
    assert "use_bias" in import_hf_config(_write(tmp_path, {**CODESTRAL, "use_bias": True})).not_modelled


def test_a_mamba2_file_estimates_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(CODESTRAL), encoding="utf-8")
    doc = _estimate_json(tmp_path, config, capsys)
    assert doc["params_total"] == 7_285_403_648


def _params(tmp_path: Path, doc: dict[str, object]) -> tuple[ModelConfig, int, int]:
    model = ModelConfig.model_validate(import_hf_config(_write(tmp_path, doc)).data["model"])
    counts = param_counts(model)
    return model, counts.total, counts.active


def _llama_keys(h: int, ffn: int, layers: int, heads: int, kv: int, vocab: int, tied: bool,
                **extra: object) -> dict[str, object]:
    return {"hidden_size": h, "intermediate_size": ffn, "num_hidden_layers": layers, "num_attention_heads": heads,
            "num_key_value_heads": kv, "vocab_size": vocab, "tie_word_embeddings": tied, "hidden_act": "silu", **extra}


#: SYNTHETIC files with each model's published dims for the keys the importer reads (as the models' config.json
#: files give them), and the parameter count its authors publish: (file, published total, tolerance)
LLAMA_LIKE = {
    # GLM-4-9B-0414 / GLM-4-32B-0414 (THUDM model cards: 9.4B, 32B; sandwich norms)
    "glm4-9b": ({"model_type": "glm4", **_llama_keys(4096, 13696, 40, 32, 2, 151552, False, head_dim=128,
                                                     partial_rotary_factor=0.5, attention_bias=True)}, 9.4e9, 0.005),
    "glm4-32b": ({"model_type": "glm4", **_llama_keys(6144, 23040, 61, 48, 2, 151552, False, head_dim=128,
                                                      partial_rotary_factor=0.5, attention_bias=True)}, 32.6e9, 0.005),
    # OLMo-2-1124-7B (OLMo 2 report, arXiv 2501.00656: 7.30B)
    "olmo2-7b": ({"model_type": "olmo2", **_llama_keys(4096, 11008, 32, 32, 32, 100352, False)}, 7.30e9, 0.005),
    # granite-3.3-8b-base (IBM model card: 8.17B) and granite-3.1-3b-a800m (3.3B total)
    "granite-8b": ({"model_type": "granite", **_llama_keys(4096, 12800, 40, 32, 8, 49159, True,
                                                           embedding_multiplier=12.0, residual_multiplier=0.22,
                                                           attention_multiplier=0.0078125, logits_scaling=16.0)},
                   8.17e9, 0.005),
    "granite-moe-3b": ({"model_type": "granitemoe", **_llama_keys(1536, 512, 32, 24, 8, 49155, True,
                                                                  num_local_experts=40, num_experts_per_tok=8)},
                       3.3e9, 0.01),
    # SmolLM3-3B (Hugging Face blog 'SmolLM3': 3B; the hub's safetensors 3.08B)
    "smollm3-3b": ({"model_type": "smollm3", **_llama_keys(2048, 11008, 36, 16, 4, 128256, True,
                                                           no_rope_layer_interval=4, use_sliding_window=False)},
                   3.08e9, 0.005),
    # Seed-OSS-36B (ByteDance-Seed model card: 36B; the hub's safetensors 36.2B)
    "seed-oss-36b": ({"model_type": "seed_oss", **_llama_keys(5120, 27648, 64, 80, 8, 155136, False, head_dim=128,
                                                              attention_bias=True, attention_out_bias=False)},
                     36.2e9, 0.005),
    # dots.llm1.base (rednote model card: 142B total, 14B activated)
    "dots1": ({"model_type": "dots1", **_llama_keys(4096, 10944, 62, 32, 32, 152064, False, head_dim=128,
                                                    n_routed_experts=128, num_experts_per_tok=6, n_shared_experts=2,
                                                    moe_intermediate_size=1408, first_k_dense_replace=1,
                                                    routed_scaling_factor=2.5, norm_topk_prob=True)}, 142e9, 0.01),
    # EXAONE-4.0-32B (LG AI model card: 30.95B without embeddings; 32.0B with them)
    "exaone4-32b": ({"model_type": "exaone4", **_llama_keys(5120, 27392, 64, 40, 8, 102400, False, head_dim=128,
                                                            sliding_window=4096, sliding_window_pattern="LLLG")},
                    32.0e9, 0.005),
    # Gemma 1 2B / 7B (Gemma report, arXiv 2403.08295 Table 2: 2.51B / 8.54B parameters with embeddings)
    "gemma-2b": ({"model_type": "gemma", "hidden_size": 2048, "intermediate_size": 16384, "num_hidden_layers": 18,
                  "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 256000,
                  "hidden_act": "gelu", "hidden_activation": None}, 2.51e9, 0.005),
    "gemma-7b": ({"model_type": "gemma", "hidden_size": 3072, "intermediate_size": 24576, "num_hidden_layers": 28,
                  "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 256, "vocab_size": 256000,
                  "hidden_act": "gelu", "hidden_activation": None}, 8.54e9, 0.005),
    # StarCoder2 3B / 7B (bigcode model cards: 3.03B / 7.17B; StarCoder2 report arXiv 2402.19173 Table 8 dims)
    "starcoder2-3b": ({"model_type": "starcoder2", **_llama_keys(3072, 12288, 30, 24, 2, 49152, True,
                                                                 hidden_act="gelu_pytorch_tanh", sliding_window=4096,
                                                                 use_bias=True, norm_epsilon=1e-5)}, 3.03e9, 0.005),
    "starcoder2-7b": ({"model_type": "starcoder2", **_llama_keys(4608, 18432, 32, 36, 4, 49152, True,
                                                                 hidden_act="gelu_pytorch_tanh", sliding_window=4096,
                                                                 use_bias=True, norm_epsilon=1e-5)}, 7.17e9, 0.005),
    # Qwen2.5-VL-7B's text tower = Qwen2.5-7B (Qwen2.5 report, arXiv 2412.15115 Table 1: 7.61B)
    "qwen2.5-vl-7b": ({"model_type": "qwen2_5_vl", **_llama_keys(3584, 18944, 28, 28, 4, 152064, False),
                       "vision_config": {"depth": 32}, "image_token_id": 151655}, 7.61e9, 0.005),
}


@pytest.mark.parametrize("name", sorted(LLAMA_LIKE))
def test_llama_like_families_give_the_published_counts(name: str, tmp_path: Path) -> None:
    doc, published, tolerance = LLAMA_LIKE[name]
    imported = import_hf_config(_write(tmp_path, doc))
    assert not imported.warnings, imported.warnings
    _, total, _ = _params(tmp_path, doc)
    assert abs(total / published - 1) <= tolerance, (total, published)


def test_llama_like_features_are_mapped(tmp_path: Path) -> None:
    glm4, _, _ = _params(tmp_path, LLAMA_LIKE["glm4-9b"][0])
    plain = ModelConfig.model_validate({**glm4.model_dump(), "post_norms": False})
    assert glm4.post_norms and param_counts(glm4).total - param_counts(plain).total == 40 * 2 * 4096
    olmo, _, _ = _params(tmp_path, {**LLAMA_LIKE["olmo2-7b"][0], "model_type": "olmo3", "sliding_window": 4096,
                                    "layer_types": ["sliding_attention"] * 3 + ["full_attention"]})
    assert (olmo.qk_norm, olmo.sliding_window, olmo.global_attention_every) == (True, 4096, 4)
    dots, _, active = _params(tmp_path, LLAMA_LIKE["dots1"][0])
    assert (dots.qk_norm, dots.num_dense_layers, dots.shared_expert_ffn_hidden_size) == (True, 1, 2816)
    assert abs(active / 14e9 - 1) <= 0.01  # 14B activated
    moe = {**LLAMA_LIKE["granite-moe-3b"][0], "model_type": "granitemoeshared", "shared_intermediate_size": 1024}
    shared, _, _ = _params(tmp_path, moe)
    assert (shared.num_shared_experts, shared.shared_expert_ffn_hidden_size) == (1, 1024)
    vl = import_hf_config(_write(tmp_path, LLAMA_LIKE["qwen2.5-vl-7b"][0]))
    assert "vision_config" in vl.not_modelled
    coder, _, _ = _params(tmp_path, LLAMA_LIKE["starcoder2-7b"][0])
    assert (coder.activation, coder.norm, coder.sliding_window, coder.tied_embeddings) == ("gelu", "layernorm", 4096,
                                                                                         True)
    gemma, _, _ = _params(tmp_path, LLAMA_LIKE["gemma-2b"][0])
    assert (gemma.activation, gemma.num_kv_heads, gemma.head_size, gemma.tied_embeddings) == ("geglu", 1, 256, True)
    mimo, _, _ = _params(tmp_path, {"model_type": "mimo", **_llama_keys(4096, 11008, 36, 32, 8, 151680, False,
                                                                        num_nextn_predict_layers=1)})
    assert mimo.mtp_layers == 1
    exaone, total, _ = _params(tmp_path, LLAMA_LIKE["exaone4-32b"][0])
    assert (exaone.qk_norm, exaone.sliding_window, exaone.global_attention_every) == (True, 4096, 4)
    assert abs((total - 2 * embedding_params(exaone)) / 30.95e9 - 1) <= TOLERANCE
    with pytest.raises(ConfigError) as err:
        _params(tmp_path, {**LLAMA_LIKE["exaone4-32b"][0], "sliding_window_pattern": "LGLG"})
    assert err.value.field == "sliding_window_pattern"


def test_a_ministral3_wrapper_imports_its_text_tower(tmp_path: Path) -> None:
    """Megatron-Bridge's SYNTHETIC Ministral 3 toy config (tests/functional_tests/.../test_ministral3_conversion.py:
    a ``mistral3`` wrapper, a ``ministral3`` text_config with YaRN rope_parameters, a Pixtral vision_config)."""
    text = {"model_type": "ministral3", "hidden_size": 512, "head_dim": 512, "intermediate_size": 1536,
            "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 32768,
            "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "tie_word_embeddings": True, "rope_theta": 1000000,
            "rope_parameters": {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 16384,
                                "llama_4_scaling_beta": 0.0}}
    doc = {"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3", "image_token_index": 10,
           "text_config": text, "vision_config": {"model_type": "pixtral", "hidden_size": 256}}
    imported = import_hf_config(_write(tmp_path, doc))
    model = ModelConfig.model_validate(imported.data["model"])
    assert (model.head_dim, model.num_kv_heads, model.tied_embeddings, model.attention) == (512, 2, True, "gqa")
    assert "vision_config" in imported.not_modelled and not imported.warnings
    attn = 512 * 8 * 512 + 2 * 512 * 2 * 512 + 8 * 512 * 512
    assert param_counts(model).total == 4 * (attn + 3 * 512 * 1536 + 2 * 512) + 32768 * 512 + 512


def test_a_model_folder_reads_its_config_json(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text((DATA / "llama3-8b.json").read_text(encoding="utf-8"), encoding="utf-8")
    imported = import_hf_config(tmp_path)
    assert imported.file == str(tmp_path / "config.json") and imported.data["model"]["name"] == tmp_path.name
    assert param_counts(ModelConfig.model_validate(imported.data["model"])).total == param_counts(
        _model("llama3-8b.json")).total
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError) as err:
        import_hf_config(empty)
    assert "folder" in err.value.rule
