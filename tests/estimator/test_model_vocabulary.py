"""The architecture features of GPT-OSS and Qwen3 (quick-GeGLU, attention sinks, alternating sliding-window
attention, qk-norm), with hand-computed values; hybrid Mamba stacks refused by name; nothing accepted silently."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from estimator.config.errors import ConfigError
from estimator.config.schema import EstimatorConfig, load_config
from estimator.config.sections import ModelConfig
from estimator.experiments.measured import config_from_measured_row
from estimator.inputs.derive import attended_keys
from estimator.inputs.params import layer_params, total_params
from estimator.memory.activation import attention_block_bytes, mlp_block_bytes
from estimator.perf import compute
from estimator.perf.layers import attention_flops

#: synthetic small model (not a published one): GQA, h 1024, a 16, g 4, d 64
BASE: dict[str, Any] = {"name": "synthetic", "num_layers": 6, "hidden_size": 1024, "ffn_hidden_size": 2048,
                        "num_attention_heads": 16, "num_kv_heads": 4, "attention": "gqa", "vocab_size": 1000}


def _run(**model: Any) -> EstimatorConfig:
    return load_config({"profile": "megatron", "model": {**BASE, **model},
                        "train": {"seq_length": 4096, "micro_batch_size": 2, "num_micro_batches": 2,
                                  "flash_attention": True}, "parallel": {"tp": 2}, "hardware": "h100-80g"})


def test_attended_keys_by_hand() -> None:
    oss = ModelConfig(**{**BASE, "num_layers": 36, "sliding_window": 128, "global_attention_every": 2})
    assert attended_keys(oss, 4096) == (18 * 4096 + 18 * 256) // 36 == 2176
    every = ModelConfig(**{**BASE, "sliding_window": 128})  # Mistral-style: every layer windowed
    assert attended_keys(every, 4096) == 256 and attended_keys(every, 200) == 200
    assert attended_keys(ModelConfig(**BASE), 4096) == 4096  # off: bit-identical to before


def test_flash_core_flops_over_the_window() -> None:
    m = ModelConfig(**{**BASE, "sliding_window": 128, "global_attention_every": 3})
    keys = (2 * 4096 + 4 * 256) / 6
    _, core = attention_flops(m, 8192.0, 4096)
    assert core == compute.attention_core_flops(8192.0, round(keys), 16, 64, 64) == 2.0 * 8192 * 1536 * 16 * 128


def test_qk_norm_keeps_the_pre_norm_q_and_k() -> None:
    plain, qk = _run(), _run(qk_norm=True)
    tokens, b_c, tp = 4096 * 2, 2, 2
    assert attention_block_bytes(qk, frozenset()) - attention_block_bytes(plain, frozenset()) == (
        tokens * (16 + 4) * 64 * b_c / tp)
    assert total_params(qk.model) - total_params(plain.model) == 6 * 2 * 64  # q_norm, k_norm of d per layer


def test_sinks_and_quick_geglu_parameters() -> None:
    plain = ModelConfig(**BASE)
    sinks = ModelConfig(**{**BASE, "attention_sinks": True})
    assert layer_params(sinks, 0).total - layer_params(plain, 0).total == 16  # one logit per head
    glu = ModelConfig(**{**BASE, "activation": "quick_geglu"})
    assert layer_params(glu, 0).total - layer_params(plain, 0).total == 0  # gate, up, down as SwiGLU
    assert mlp_block_bytes(_run(activation="quick_geglu"), False, frozenset()) == mlp_block_bytes(
        _run(), False, frozenset())


@pytest.mark.parametrize(("fields", "field"), [
    ({"qk_norm": True, "attention": "mla", "kv_lora_rank": 8, "qk_head_dim": 8, "qk_rope_head_dim": 8,
      "v_head_dim": 8, "num_kv_heads": 16}, "model.qk_norm"),
    ({"global_attention_every": 2}, "model.global_attention_every"),
    ({"activation": "relu"}, "model.activation"),  # not an activation the model prices
])
def test_impossible_feature_combinations_are_refused(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        _run(**fields)
    assert info.value.field == field


def _row(measured_dir: Path, case_id: str) -> dict[str, str]:
    """The published row, its hardware cell read as B200 (the GB300 preset is not what is tested here)."""
    with (measured_dir / "step_time_cases.csv").open(newline="", encoding="utf-8") as fh:
        return {**next(r for r in csv.DictReader(fh) if r["case_id"] == case_id), "hardware": "B200"}


def test_measured_rows_carry_the_features_their_notes_state(measured_dir: Path) -> None:
    oss = config_from_measured_row(_row(measured_dir, "mbridge_perf_summary_blackwell__26.08_GPT_OSS_120B_DGX-GB300_MXFP8"))
    assert {k: oss["model"][k] for k in ("activation", "sliding_window", "global_attention_every", "attention_sinks")} == {
        "activation": "quick_geglu", "sliding_window": 128, "global_attention_every": 2, "attention_sinks": True}
    qwen = config_from_measured_row(_row(measured_dir, "mbridge_perf_summary_blackwell__26.08_Qwen3_30B_a3B_DGX-GB300_MXFP8"))
    assert qwen["model"]["qk_norm"] is True


def test_a_hybrid_mamba_row_without_its_pattern_is_refused_by_name(measured_dir: Path) -> None:
    row = _row(measured_dir, "mbridge_perf_summary_blackwell__26.08_Nemotron_3_Nano_DGX-GB300_MXFP8")
    assert config_from_measured_row(row)["model"]["hybrid_override_pattern"].count("M") == 23  # read from notes
    cut = {**row, "notes": row["notes"].replace("hybrid_layer_pattern MEMEM", "layers MEMEM")}
    with pytest.raises(ConfigError) as info:
        config_from_measured_row(cut)
    assert info.value.field == "notes" and "model.hybrid_override_pattern" in info.value.rule


def test_qk_norm_kernels_and_operators() -> None:
    from estimator.perf.kernels import layer_modules, layer_shape

    def shape(cfg: EstimatorConfig) -> Any:
        return layer_shape(cfg.model, moe=False, layer_ep=1, tp=2, sequence_parallel=False, tp_blocks=2, cp=1,
                           flash_attention=True)

    plain, qk = layer_modules(shape(_run()))["attn_proj"], layer_modules(shape(_run(qk_norm=True)))["attn_proj"]
    assert qk["NORM"] - plain["NORM"] == 2


@pytest.mark.parametrize(("phrase", "says"), [
    ("hybrid gated deltanet/gated attention (3:1)", "Gated DeltaNet"),
    ("linear_attention layers every 4th full", "Gated DeltaNet"),
    ("lightning attention every 8th layer", "lightning"),
    ("lightning indexer, index_topk 2048", "sparse attention"),
    ("chunked attention (attention_chunk_size 8192)", "chunked local attention"),
    ("nope layers every 4th", "NoPE"),
    ("attention logit soft-capping 50", "soft-capping"),
    ("sandwich norm per block", "norms after"),
    ("vision encoder (ViT-H) frozen", "vision encoder"),
    ("sliding window 4096 on every layer", "sliding window in a form the reader does not parse"),
    ("mamba layers interleaved 1:7", "no hybrid Mamba stack"),
    ("mHC hyper-connections (4 streams)", "hyper-connections"),
    ("hash-routed MoE in the first 3 layers", "hash-routed"),
])
def test_unmodelled_architecture_in_notes_is_refused_naming_it(measured_dir: Path, phrase: str, says: str) -> None:
    """A row whose notes state an architecture feature the estimator does not model is refused on ``notes`` with
    the feature and the phrase, never estimated as the transformer its columns describe (a published Qwen3 row
    with one synthetic phrase added)."""
    row = _row(measured_dir, "mbridge_perf_summary_blackwell__26.08_Qwen3_30B_a3B_DGX-GB300_MXFP8")
    assert config_from_measured_row(row)["model"]["num_experts"] == 128  # the row as published is estimated
    with pytest.raises(ConfigError) as info:
        config_from_measured_row({**row, "notes": row["notes"] + " | " + phrase})
    assert info.value.field == "notes" and says in info.value.rule, info.value.rule


@pytest.mark.parametrize(("name", "says"), [
    ("Qwen3.5 397B-A17B", "vision encoder"),
    ("DeepSeek-V3.2-Exp", "sparse attention"), ("Llama 4 Maverick", "chunked"), ("Gemma 3 27B", "sandwich norms"),
    ("MiniMax-M1", "linear-attention"), ("Kimi Linear 48B", "linear-attention"), ("Falcon-H1 34B", "hybrid Mamba"),
    ("DeepSeekV4_Flash", "hyper-connections"), ("GLM-5", "DSA"), ("MiniMax-M3", "vision encoder"),
    ("Qwen3_VL_235B_A22B", "vision encoder"), ("Nemotron 3 Omni", "vision encoder"),
])
def test_a_row_of_an_unmodelled_family_is_refused_by_name(measured_dir: Path, name: str, says: str) -> None:
    row = _row(measured_dir, "mbridge_perf_summary_blackwell__26.08_Qwen3_30B_a3B_DGX-GB300_MXFP8")
    with pytest.raises(ConfigError) as info:
        config_from_measured_row({**row, "model_name": name})
    assert info.value.field == "model_name" and says in info.value.rule and name in info.value.rule


@pytest.mark.parametrize("name", ["MiniMax-M2", "MiniMax-M2.5", "GLM 4.5 Air", "Kimi K2", "DeepSeekV3"])
def test_families_whose_columns_describe_them_are_not_refused_by_name(measured_dir: Path, name: str) -> None:
    """MiniMax-M2 is full attention (GQA) with MoE (Megatron-Bridge MiniMaxM2Bridge), unlike MiniMax-Text-01 / M1's
    lightning attention: a row named so is estimated from its columns."""
    row = _row(measured_dir, "mbridge_perf_summary_blackwell__26.08_Qwen3_30B_a3B_DGX-GB300_MXFP8")
    assert config_from_measured_row({**row, "model_name": name})["model"]["num_experts"] == 128


def test_no_shared_row_trips_the_unmodelled_feature_guard(measured_dir: Path) -> None:
    """Every shared row's notes (both CSVs) pass the guard: the features they state are modelled ('--fp8-format
    hybrid', the Nemotron rows' 'hybrid Mamba', GPT-OSS's sliding window are not refusals)."""
    from estimator.experiments.architecture_notes import check_unmodelled_features

    for name in ("step_time_cases.csv", "memory_cases.csv"):
        with (measured_dir / name).open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                check_unmodelled_features(row["notes"].lower(), row["model_name"])


_ARGS = ("--num-layers 4 --hidden-size 256 --num-attention-heads 4 --group-query-attention --num-query-groups 2 "
         "--kv-channels 64 --ffn-hidden-size 512 --swiglu --normalization RMSNorm --position-embedding-type rope "
         "--seq-length 512 --micro-batch-size 1 --global-batch-size 8 --bf16 --vocab-size 1024 ")


def _megatron(tmp_path: Path, extra: str) -> dict[str, Any]:
    """SYNTHETIC Megatron-LM launch arguments (a small GQA model) plus ``extra``; the imported model section."""
    from estimator.importers.megatron import import_megatron

    path = tmp_path / "run.sh"
    path.write_text(_ARGS + extra + "\n", encoding="utf-8")
    return import_megatron(path, world_size=8).data["model"]


def test_megatron_window_and_sink_flags_import(tmp_path: Path) -> None:
    """GPT-OSS's spelling in Megatron-LM: ``--window-size (128,0) --window-attn-skip-freq 2 --softmax-type
    learnable`` -> sliding window 128 on alternate layers and sink logits; without a skip frequency every layer
    is windowed; without the flags nothing changes."""
    oss = _megatron(tmp_path, "--window-size (128,0) --window-attn-skip-freq 2 --softmax-type learnable")
    assert (oss["sliding_window"], oss["global_attention_every"], oss["attention_sinks"]) == (128, 2, True)
    every = _megatron(tmp_path, "--window-size 4096,0")
    assert every["sliding_window"] == 4096 and "global_attention_every" not in every
    plain = _megatron(tmp_path, "")
    assert not {"sliding_window", "global_attention_every", "attention_sinks"} & set(plain)


@pytest.mark.parametrize(("extra", "flag"), [
    ("--experimental-attention-variant dsa", "--experimental-attention-variant"),
    ("--enable-mhc-connections", "--enable-mhc-connections"),
    ("--optimizer-cpu-offload --optimizer-offload-fraction 1.0", "--optimizer-cpu-offload"),  # not 'ignored'
    ("--cpu-offloading --cpu-offloading-num-layers 2 --cpu-offloading-weights", "--cpu-offloading-weights"),
    ("--experimental-attention-variant gdn2 --linear-attention-freq 4", "--experimental-attention-variant"),
    ("--experimental-attention-variant gated_delta_net", "--linear-attention-freq"),
    ("--experimental-attention-variant gated_delta_net --linear-attention-freq [1,1,1,0]", "--linear-attention-freq"),
    ("--linear-attention-freq 4", "--linear-attention-freq"),
    ("--no-rope-freq 4", "--no-rope-freq"),
    ("--softmax-type off-by-one", "--softmax-type"),
    ("--window-size (128,128)", "--window-size"),
    ("--window-size (128,0) --window-attn-skip-freq [1,1,1,0]*1", "--window-attn-skip-freq"),
])
def test_megatron_flags_of_unmodelled_attention_are_refused(tmp_path: Path, extra: str, flag: str) -> None:
    with pytest.raises(ConfigError) as info:
        _megatron(tmp_path, extra)
    assert info.value.field == flag and ("modelled" in info.value.rule or "needs" in info.value.rule)


def test_megatron_gated_delta_net_and_output_gate_flags_import(tmp_path: Path) -> None:
    """Qwen3-Next's spelling in Megatron-LM (Bridge's provider sets the same TransformerConfig fields):
    ``--experimental-attention-variant gated_delta_net --linear-attention-freq 4 --linear-num-value-heads 8
    --attention-output-gate`` -> GDN every layer but each 4th, the given value heads, Megatron-Core's defaults for
    the rest, gated attention; ``gdn`` is the variant's current name."""
    model = _megatron(tmp_path, "--experimental-attention-variant gated_delta_net --linear-attention-freq 4 "
                      "--linear-num-key-heads 4 --linear-num-value-heads 8 --attention-output-gate")
    assert (model["linear_attention_freq"], model["gdn_num_key_heads"], model["gdn_num_value_heads"]) == (4, 4, 8)
    assert (model["gdn_key_head_dim"], model["gdn_value_head_dim"], model["gdn_conv_kernel"]) == (128, 128, 4)
    assert model["attention_output_gate"] is True
    assert _megatron(tmp_path, "--experimental-attention-variant gdn --linear-attention-freq 2")["linear_attention_freq"] == 2
