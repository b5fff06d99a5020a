"""Hugging Face config.json importer on the public configs of seven models (tests/data/hf_configs, provenance
in its SOURCES.yaml): parameter counts against the published ones, the shipped catalog entries field by
field, and the errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from estimator.config.errors import ConfigError
from estimator.config.loading import read_yaml
from estimator.config.sections import ModelConfig
from estimator.importers import import_hf_config
from estimator.inputs.params import embedding_params, param_counts
from ndval.harness.cli import main
from ndval.harness.commands.models import source_of

DATA = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
MODELS = Path(__file__).resolve().parents[2] / "validation_cases" / "models"
SOURCES = yaml.safe_load((DATA / "SOURCES.yaml").read_text(encoding="utf-8"))
#: config file -> shipped catalog entry imported from it
CATALOG = {"llama3-8b.json": "llama3-8b", "llama3.1-405b.json": "llama3.1-405b", "deepseek-v3.json": "deepseek-v3-671b",
           "mixtral-8x7b.json": "mixtral-8x7b", "qwen3-30b-a3b.json": "qwen3-30b-a3b",
           "gpt-oss-120b.json": "gpt-oss-120b", "qwen3-next-80b-a3b.json": "qwen3-next-80b-a3b",
           "ling-lite-1.5.json": "ling-lite-1.5"}
TOLERANCE = 0.005


def _model(name: str) -> ModelConfig:
    return ModelConfig.model_validate(import_hf_config(DATA / name).data["model"])


def _estimate_json(tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, int]:
    run = {"profile": "megatron", "model": {"hf_config": str(config)}, "train": {"seq_length": 4096,
           "micro_batch_size": 1, "num_micro_batches": 8}, "parallel": {"tp": 8, "pp": 1, "dp": 1},
           "hardware": "h100-80g"}
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(run), encoding="utf-8")
    assert main(["estimate", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["model"]


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_params_total_of_estimate_json_is_the_published_count(name: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    published = SOURCES[name]["published"]
    doc = _estimate_json(tmp_path, DATA / name, capsys)
    assert doc["params_total"] == param_counts(_model(name)).total
    assert abs(doc["params_total"] / float(published["total"]) - 1) <= TOLERANCE, (doc, published)


def test_deepseek_v3_main_model_is_671b_and_the_mtp_module_shares_embedding_and_head() -> None:
    counts = param_counts(_model("deepseek-v3.json"))
    assert abs(counts.main / 671.0e9 - 1) <= TOLERANCE
    assert counts.total > counts.main  # the MTP module: one MoE layer, the 2h·h projection and two norms
    assert abs(counts.total - counts.main - 11.6e9) < 0.1e9


def test_glm45_air_imports_as_gqa_with_deepseek_moe_and_mtp() -> None:
    # GLM-4.5-Air (glm4_moe): 96 heads of 128 over 8 KV heads, no q/k norm in the Air release, 128 routed experts
    # of 1408 + 1 shared, top-8, the first layer dense (10944), one MTP layer; 106B published (main model)
    model = _model("glm-4.5-air.json")
    assert (model.attention, model.head_size, model.kv_heads, model.qk_norm) == ("gqa", 128, 8, False)
    assert (model.num_experts, model.moe_topk, model.num_dense_layers, model.mtp_layers) == (128, 8, 1, 1)
    assert model.shared_expert_ffn_hidden_size == 1408
    counts = param_counts(model)
    assert abs(counts.main / float(SOURCES["glm-4.5-air.json"]["published"]["total"]) - 1) <= 0.01
    assert counts.total > counts.main
    # GLM-4.5 proper sets use_qk_norm: true
    doc = json.loads((DATA / "glm-4.5-air.json").read_text(encoding="utf-8"))
    assert ModelConfig.model_validate(import_hf_config_doc({**doc, "use_qk_norm": True})).qk_norm


def import_hf_config_doc(doc: dict[str, object]) -> dict[str, object]:
    """The imported model section of ``doc`` written to a temporary file."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        return dict(import_hf_config(path).data["model"])


def test_phi4_imports_as_llama_shapes() -> None:
    # Phi-4 (phi3): 40 layers, 40 heads over 10 KV heads, SwiGLU 17920, untied 100352 vocabulary: 14.66B
    model = _model("phi-4.json")
    assert (model.attention, model.kv_heads, model.ffn_hidden_size, model.tied_embeddings) == ("gqa", 10, 17920, False)
    assert abs(param_counts(model).total / float(SOURCES["phi-4.json"]["published"]["total"]) - 1) <= TOLERANCE


def test_minimax_m2_imports_as_full_attention_moe() -> None:
    # MiniMax-M2.5 (minimax_m2): 62 layers, 48 heads of 128 over 8 KV heads, 256 routed experts of 1536, top-8, no
    # shared expert, q/k norms, untied 200064 vocabulary; 230B total / 10B active published (rounded)
    model = _model("minimax-m2.5.json")
    assert (model.attention, model.head_size, model.kv_heads, model.qk_norm) == ("gqa", 128, 8, True)
    assert (model.num_experts, model.moe_topk, model.moe_ffn_hidden_size, model.num_dense_layers) == (256, 8, 1536, 0)
    assert model.num_shared_experts == 0 and model.mtp_layers == 0
    counts = param_counts(model)
    published = SOURCES["minimax-m2.5.json"]["published"]
    assert abs(counts.total / float(published["total"]) - 1) <= 0.01
    active = counts.active - embedding_params(model) - model.vocab * model.hidden_size  # neither lookup nor head
    assert abs(active / float(published["active"]) - 1) <= 0.03
    assert "use_mtp" in import_hf_config(DATA / "minimax-m2.5.json").not_modelled


@pytest.mark.parametrize(("change", "key"), [({"attn_type_list": [0, 1]}, "attn_type_list"),
                                             ({"shared_intermediate_size": 1536}, "shared_intermediate_size"),
                                             ({"qk_norm_type": "per_token"}, "qk_norm_type")])
def test_minimax_m2_variants_it_does_not_model_are_refused(change: dict[str, object], key: str) -> None:
    doc = json.loads((DATA / "minimax-m2.5.json").read_text(encoding="utf-8"))
    with pytest.raises(ConfigError) as err:
        import_hf_config_doc({**doc, **change})
    assert err.value.field == key


#: ERNIE-4.5-21B-A3B's published config.json values for the keys the importer reads (baidu/ERNIE-4.5-21B-A3B-PT, as
#: two public test fixtures transcribe them; the file itself is not in tests/data): 21B total, 3B activated
ERNIE_21B_A3B = {"model_type": "ernie4_5_moe", "hidden_size": 2560, "intermediate_size": 12288,
                 "moe_intermediate_size": 1536, "num_hidden_layers": 28, "num_attention_heads": 20,
                 "num_key_value_heads": 4, "head_dim": 128, "moe_num_experts": 64, "moe_num_shared_experts": 2,
                 "moe_k": 6, "moe_layer_start_index": 1, "moe_layer_end_index": 27, "moe_layer_interval": 1,
                 "vocab_size": 103424, "tie_word_embeddings": True, "hidden_act": "silu", "use_bias": False,
                 "rope_theta": 500000, "rms_norm_eps": 1e-05, "max_position_embeddings": 131072}


def test_ernie45_moe_imports_its_expert_keys_and_leading_dense_layer() -> None:
    model = ModelConfig.model_validate(import_hf_config_doc(ERNIE_21B_A3B))
    assert (model.num_experts, model.moe_topk, model.num_shared_experts, model.num_dense_layers) == (64, 6, 2, 1)
    assert (model.moe_ffn_hidden_size, model.shared_expert_ffn_hidden_size, model.ffn_hidden_size) == (
        1536, 3072, 12288)
    counts = param_counts(model)
    assert abs(counts.total / 21.8e9 - 1) <= 0.01  # 21.8B (the Hub's safetensors count; "21B" on the card)
    active = counts.active - embedding_params(model)  # tied: the embedding is the output layer
    assert 3.0e9 <= active <= 3.2e9  # "3B activated"
    for change, key in (({"moe_layer_interval": 2}, "moe_layer_interval"), ({"moe_layer_end_index": 20},
                                                                              "moe_layer_end_index")):
        with pytest.raises(ConfigError) as err:
            import_hf_config_doc({**ERNIE_21B_A3B, **change})
        assert err.value.field == key


#: Gemma 3 1B's published config.json values (google/gemma-3-1b-pt; transformers Gemma3TextConfig's keys); the
#: Gemma 3 report (arXiv 2503.19786) Table 1: 302M embedding + 698M non-embedding parameters
GEMMA3_1B = {"model_type": "gemma3_text", "hidden_size": 1152, "intermediate_size": 6912, "num_hidden_layers": 26,
             "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 262144,
             "sliding_window": 512, "sliding_window_pattern": 6, "hidden_activation": "gelu_pytorch_tanh",
             "query_pre_attn_scalar": 256, "rope_local_base_freq": 10000.0, "rope_theta": 1000000.0,
             "attn_logit_softcapping": None, "final_logit_softcapping": None, "rms_norm_eps": 1e-06,
             "max_position_embeddings": 32768, "tie_word_embeddings": True}


def test_gemma3_imports_with_sandwich_norms_geglu_and_its_window_pattern() -> None:
    model = ModelConfig.model_validate(import_hf_config_doc(GEMMA3_1B))
    assert (model.activation, model.post_norms, model.qk_norm, model.tied_embeddings) == ("geglu", True, True, True)
    assert (model.sliding_window, model.global_attention_every, model.head_dim) == (512, 6, 256)
    counts = param_counts(model)
    assert embedding_params(model) == 262144 * 1152  # 302M
    assert abs((counts.total - embedding_params(model)) / 698e6 - 1) <= 0.001  # 698M non-embedding
    plain = ModelConfig.model_validate({**model.model_dump(), "post_norms": False})
    assert counts.total - param_counts(plain).total == 26 * 2 * 1152  # two more RMSNorms per layer
    for change, key in (({"final_logit_softcapping": 30.0}, "final_logit_softcapping"),
                        ({"hidden_activation": "silu"}, "hidden_activation")):
        with pytest.raises(ConfigError) as err:
            import_hf_config_doc({**GEMMA3_1B, **change})
        assert err.value.field == key


def test_olmoe_imports_as_routed_experts_with_qk_norms() -> None:
    # OLMoE-1B-7B-0924's published values for the keys the importer reads (allenai/OLMoE-1B-7B-0924, as public
    # fixtures transcribe them): 6.9B total, 1.3B active (OLMoE paper, arXiv 2409.02060, §1)
    doc = {"model_type": "olmoe", "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 1024,
           "num_hidden_layers": 16, "num_experts": 64, "num_experts_per_tok": 8, "num_attention_heads": 16,
           "num_key_value_heads": 16, "vocab_size": 50304, "tie_word_embeddings": False, "clip_qkv": None,
           "norm_topk_prob": False, "rope_theta": 10000.0, "rms_norm_eps": 1e-05, "max_position_embeddings": 4096}
    model = ModelConfig.model_validate(import_hf_config_doc(doc))
    assert (model.num_experts, model.moe_topk, model.moe_ffn_hidden_size, model.qk_norm) == (64, 8, 1024, True)
    counts = param_counts(model)
    assert abs(counts.total / 6.9e9 - 1) <= 0.01 and abs(counts.active / 1.3e9 - 1) <= 0.03


def test_qwen3_vl_text_towers_import_and_the_vision_encoder_is_reported() -> None:
    """A SYNTHETIC Qwen3-VL wrapper (``qwen3_vl_moe`` with a ``qwen3_vl_moe_text`` text_config and a vision_config):
    the text tower is Qwen3-MoE's (q/k norms, routed experts), the vision encoder is listed as not modelled, and
    ``tie_word_embeddings`` kept outside the text_config (as Qwen3-VL does) is read; the dense tower likewise."""
    text = {"model_type": "qwen3_vl_moe_text", "hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
            "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1000, "num_experts": 16, "num_experts_per_tok": 4,
            "moe_intermediate_size": 128, "intermediate_size": 1024, "hidden_act": "silu", "decoder_sparse_step": 1,
            "mlp_only_layers": [], "rope_scaling": {"mrope_section": [24, 20, 20]}}
    imported_doc = {"model_type": "qwen3_vl_moe", "text_config": text, "vision_config": {"depth": 2},
                    "tie_word_embeddings": True}
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.json"
        path.write_text(json.dumps(imported_doc), encoding="utf-8")
        imported = import_hf_config(path)
        model = ModelConfig.model_validate(imported.data["model"])
        assert (model.qk_norm, model.num_experts, model.moe_topk, model.tied_embeddings) == (True, 16, 4, True)
        assert "vision_config" in imported.not_modelled
        dense = {k: v for k, v in text.items() if not k.startswith(("num_experts", "moe_", "decoder_", "mlp_only"))}
        path.write_text(json.dumps({"model_type": "qwen3_vl", "text_config": {**dense, "model_type": "qwen3_vl_text"},
                                    "vision_config": {"depth": 2}}), encoding="utf-8")
        model = ModelConfig.model_validate(import_hf_config(path).data["model"])
        assert (model.is_moe, model.ffn_hidden_size, model.qk_norm) == (False, 1024, True)


def test_qwen2_moe_maps_the_shared_expert(tmp_path: Path) -> None:
    # synthetic file with Qwen1.5-MoE-A2.7B's dims (its config.json: 24 layers, h 2048, 16 heads, 60 experts of
    # 1408, top-4, one shared expert of 5632, vocab 151936, untied); the Qwen1.5-MoE release: 14.3B in total
    doc = {"model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 24,
           "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 151936, "num_experts": 60,
           "num_experts_per_tok": 4, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
           "decoder_sparse_step": 1, "tie_word_embeddings": False, "use_sliding_window": False,
           "sliding_window": 32768, "max_window_layers": 21, "norm_topk_prob": False}
    model = ModelConfig.model_validate(import_hf_config(_write(tmp_path, doc)).data["model"])
    assert (model.num_experts, model.moe_topk, model.num_shared_experts, model.shared_expert_ffn_hidden_size) == (
        60, 4, 1, 5632)
    assert model.num_dense_layers == 0 and model.sliding_window is None
    assert abs(param_counts(model).total / 14.3e9 - 1) <= 0.01


@pytest.mark.parametrize("model_type,words", [("llama4_text", "chunked local attention"),
                                              ("deepseek_v32", "sparse attention"),
                                              ("deepseek_v4", "hyper-connections"), ("glm_moe_dsa", "DSA"),
                                              ("minimax", "lightning"), ("minimax_m3", "vision encoder"),
                                              ("kimi_linear", "linear-attention"), ("mamba", "Mamba-1"),
                                              ("jamba", "hybrid Mamba"), ("nemotron-nas", "per-layer block"),
                                              ("cohere2", "parallel attention")])
def test_newer_architectures_are_refused_with_the_reason(tmp_path: Path, model_type: str, words: str) -> None:
    path = _write(tmp_path, {"model_type": model_type, "hidden_size": 1024, "num_hidden_layers": 4})
    with pytest.raises(ConfigError) as err:
        import_hf_config(path)
    assert err.value.field == "model_type" and words in err.value.rule and str(path) in str(err.value)


def test_active_counts_follow_each_publisher_convention() -> None:
    mixtral = param_counts(_model("mixtral-8x7b.json"))
    assert abs(mixtral.active / 12.9e9 - 1) <= TOLERANCE  # Mistral counts embedding and output layer
    oss = _model("gpt-oss-120b.json")
    # OpenAI's 5.13B counts the output layer but not the embedding (a lookup)
    assert abs((param_counts(oss).active - embedding_params(oss)) / 5.13e9 - 1) <= TOLERANCE


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_the_catalog_entry_is_the_import_field_by_field(name: str) -> None:
    data, _ = read_yaml(MODELS / f"{CATALOG[name]}.yaml")
    shipped = ModelConfig.model_validate(data["model"])
    imported = ModelConfig.model_validate({**import_hf_config(DATA / name).data["model"], "name": CATALOG[name]})
    assert shipped.model_dump() == imported.model_dump()
    assert list(data) == ["model"]  # one key: `model: {ref:}` includes unwrap it
    assert source_of(MODELS / f"{CATALOG[name]}.yaml")["file"] == f"tests/data/hf_configs/{name}"


def test_the_hand_written_entries_of_b8e2656_equal_the_imports() -> None:
    """The three entries written by hand before the importer (transcribed here from b8e2656) are what
    the importer produces: the regenerated files changed no number."""
    hand = {
        "llama3-8b.json": dict(num_layers=32, hidden_size=4096, ffn_hidden_size=14336, num_attention_heads=32,
                               num_kv_heads=8, attention="gqa", vocab_size=128256),
        "deepseek-v3.json": dict(num_layers=61, num_dense_layers=3, hidden_size=7168, ffn_hidden_size=18432,
                                 num_attention_heads=128, num_kv_heads=128, attention="mla", q_lora_rank=1536,
                                 kv_lora_rank=512, qk_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
                                 num_experts=256, moe_topk=8, num_shared_experts=1, moe_ffn_hidden_size=2048,
                                 shared_expert_ffn_hidden_size=2048, mtp_layers=1, vocab_size=129280),
    }
    for name, fields in hand.items():
        model = _model(name).model_dump()
        assert {k: model[k] for k in fields} == fields
        assert (model["tied_embeddings"], model["activation"], model["norm"]) == (False, "swiglu", "rmsnorm")


def test_architecture_features_are_mapped() -> None:
    oss, qwen = _model("gpt-oss-120b.json"), _model("qwen3-30b-a3b.json")
    assert (oss.activation, oss.attention_sinks, oss.sliding_window, oss.global_attention_every) == (
        "quick_geglu", True, 128, 2)
    assert qwen.qk_norm and qwen.head_dim == 128 and qwen.num_dense_layers == 0


def _write(tmp_path: Path, doc: object, text: str | None = None) -> Path:
    path = tmp_path / "config.json"
    path.write_text(text if text is not None else json.dumps(doc), encoding="utf-8")
    return path


def _llama(**extra: object) -> dict[str, object]:
    return {**json.loads((DATA / "llama3-8b.json").read_text(encoding="utf-8")), **extra}


@pytest.mark.parametrize(("doc", "text", "key", "words"), [
    (None, '{"model_type": "llama",\n "hidden_size": 4096,,}', "<json>", "malformed JSON at line 2"),
    ({"model_type": "bert"}, None, "model_type", "known: llama, mistral"),
    ({"model_type": "gemma2"}, None, "model_type", "soft-capping"),
    ({"model_type": "jamba"}, None, "model_type", "hybrid Mamba"),
    (_llama(num_hidden_layers=0), None, "num_hidden_layers", "integer ≥ 1"),
    (_llama(num_key_value_heads=5), None, "num_key_value_heads", "must divide"),
    (_llama(hidden_act="relu"), None, "hidden_act", "not modelled"),
    ([1, 2], None, "<json>", "JSON object"),
])
def test_bad_input_names_file_key_and_rule(tmp_path: Path, doc: object, text: str | None, key: str,
                                          words: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, doc, text)
    with pytest.raises(ConfigError) as info:
        import_hf_config(path)
    assert (info.value.field, info.value.file) == (key, str(path)) and words in info.value.rule
    assert main(["import", "--hf-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and key in err and err.count("\n") == 1


def test_an_unmapped_key_is_a_warning_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, _llama(my_new_knob=3))
    assert any("my_new_knob" in w for w in import_hf_config(path).warnings)
    assert main(["import", "--hf-config", str(path)]) == 0
    captured = capsys.readouterr()
    assert "warning: key 'my_new_knob'" in captured.err
    assert "num_layers: 32  # num_hidden_layers" in captured.out


def test_every_key_is_mapped_ignored_or_reported() -> None:
    for name in CATALOG:
        imported = import_hf_config(DATA / name)
        doc = json.loads((DATA / name).read_text(encoding="utf-8"))
        named = " ".join(imported.sources.values())
        for key in doc:
            assert key in imported.ignored or key in named or any(key in w for w in imported.warnings), (name, key)


def test_hf_config_in_a_run_file_beside_other_model_keys(tmp_path: Path) -> None:
    from estimator.config.schema import load_config

    (tmp_path / "config.json").write_text((DATA / "qwen3-30b-a3b.json").read_text(encoding="utf-8"), encoding="utf-8")
    run = tmp_path / "run.yaml"
    run.write_text(yaml.safe_dump({"profile": "megatron", "model": {"hf_config": "config.json", "name": "q3"},
                                   "train": {"seq_length": 4096, "micro_batch_size": 1, "num_micro_batches": 4},
                                   "parallel": {"ep": 4, "dp": 4}, "hardware": "h100-80g"}), encoding="utf-8")
    cfg = load_config(run)
    assert (cfg.model.name, cfg.model.num_experts, cfg.model.qk_norm) == ("q3", 128, True)
    with pytest.raises(ConfigError) as info:
        load_config({"model": {"hf_config": "config.json", "ref": "models/llama3-8b.yaml"}}, base_dir=tmp_path)
    assert info.value.field == "model.hf_config"
    with pytest.raises(ConfigError, match="not found"):
        load_config({"model": {"hf_config": "missing.json"}}, base_dir=tmp_path)
