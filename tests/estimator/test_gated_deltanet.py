"""Gated DeltaNet layers and gated attention (Qwen3-Next; estimator.inputs.gdn, estimator.perf.gdn): shapes,
parameters, FLOPs, bytes, kernels and activations by hand on a SYNTHETIC small model, the published Qwen3-Next
parameter count, the model rules, the importers, measured rows, and nothing changed for models without them."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

import estimator
from estimator.config.errors import ConfigError
from estimator.config.schema import EstimatorConfig, load_config
from estimator.config.sections import ModelConfig
from estimator.experiments.measured import config_from_measured_row
from estimator.importers import import_hf_config
from estimator.inputs import gdn
from estimator.inputs.derive import layer_blocks, layer_kind, layer_kind_runs
from estimator.inputs.params import layer_params, param_counts
from estimator.memory.activation import attention_block_bytes, gdn_block_bytes
from estimator.perf import compute
from estimator.perf import gdn as gdn_perf
from estimator.perf.kernels import backward_kernels, forward_kernels, layer_modules, layer_shape
from estimator.perf.layers import attention_flops, block_flops
from estimator.perf.operators import output_gate_op

DATA = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
#: SYNTHETIC small model (not a published one): GQA h 256, a 4 of 64, g 2; GDN n_k 2 of 32, n_v 4 of 16, k 4
BASE: dict[str, Any] = {"name": "synthetic-gdn", "num_layers": 4, "hidden_size": 256, "ffn_hidden_size": 512,
                        "num_attention_heads": 4, "num_kv_heads": 2, "attention": "gqa", "head_dim": 64,
                        "vocab_size": 1000, "linear_attention_freq": 2, "gdn_num_key_heads": 2,
                        "gdn_num_value_heads": 4, "gdn_key_head_dim": 32, "gdn_value_head_dim": 16,
                        "gdn_conv_kernel": 4}
DIMS = gdn.GdnDims(2, 4, 32, 16, 4)


def _run(model: dict[str, Any] | None = None, **parallel: Any) -> EstimatorConfig:
    return load_config({"profile": "megatron", "model": BASE if model is None else model,
                        "train": {"seq_length": 128, "micro_batch_size": 1, "num_micro_batches": 2,
                                  "flash_attention": True, "hidden_dropout": 0.0},
                        "parallel": {"tp": 1, **parallel}, "hardware": "h100-80g"})


def test_shape_by_hand() -> None:
    d = gdn.gdn_dims(ModelConfig(**BASE))
    assert d == DIMS and d.chunk == 64  # Megatron-Core GatedDeltaNet chunk_size
    assert (d.qk_width, d.v_width) == (64, 64)
    assert d.in_proj_width == 2 * 64 + 2 * 64 + 2 * 4 == 264  # q, k, v, z, beta, alpha
    assert d.conv_channels == 2 * 64 + 64 == 192  # q, k, v


def test_layer_kinds_follow_linear_attention_freq() -> None:
    """Megatron-Core get_linear_attention_pattern: N = 2 -> [GDN, attention, GDN, attention]; MTP keeps attention."""
    m = ModelConfig(**BASE)
    assert [layer_kind(m, i) for i in range(4)] == ["gdn_dense", "dense", "gdn_dense", "dense"]
    assert [layer_blocks(m, i) for i in range(2)] == [("gdn", "dense"), ("attention", "dense")]
    assert layer_kind_runs(m, range(4)) == [("gdn_dense", 0, 2), ("dense", 1, 2)]
    moe = ModelConfig(**{**BASE, "num_experts": 8, "moe_topk": 2, "moe_ffn_hidden_size": 128})
    assert [layer_kind(moe, i) for i in range(4)] == ["gdn_moe", "moe", "gdn_moe", "moe"]
    assert layer_blocks(moe, 0) == ("gdn", "moe")
    hybrid = ModelConfig(**{**BASE, "linear_attention_freq": None, "hybrid_override_pattern": "G-*-"})
    assert [layer_blocks(hybrid, i) for i in range(4)] == [("gdn", None), (None, "dense"), ("attention", None),
                                                          (None, "dense")]


def test_parameters_by_hand() -> None:
    m = ModelConfig(**BASE)
    sharded = 256 * 264 + 192 * 4 + 2 * 4 + 64 * 256  # in_proj, conv (no bias), dt_bias + A_log, out_proj
    assert gdn.gdn_sharded_params(256, DIMS) == sharded == 84744
    mlp = 3 * 256 * 512  # SwiGLU fc1 (gate, up) and fc2
    lp = layer_params(m, 0)
    assert lp.total == sharded + 16 + 2 * 256 + mlp  # + the gated norm's d_v + the layer's two RMSNorms
    assert lp.norm == 16 + 2 * 256  # replicated on every TP rank
    assert layer_params(m, 1).total == 256 * 64 * 4 + 2 * 256 * 2 * 64 + 4 * 64 * 256 + 2 * 256 + mlp


def test_published_qwen3_next_parameter_count() -> None:
    """Qwen3-Next-80B-A3B's config.json: ndval's total and active counts are the published safetensors totals
    (79,674,391,296 / 3,874,929,408), exactly, to the parameter; 98,304 of them are the 48 shared-expert gates
    (one weight of h each, ``shared_expert_gate``)."""
    model = ModelConfig.model_validate(import_hf_config(DATA / "qwen3-next-80b-a3b.json").data["model"])
    assert (model.linear_attention_freq, model.attention_output_gate, model.qk_norm) == (4, True, True)
    counts = param_counts(model)
    assert (counts.total, counts.active) == (79_674_391_296, 3_874_929_408)
    ungated = param_counts(ModelConfig.model_validate({**model.model_dump(), "shared_expert_gate": False}))
    assert counts.total - ungated.total == counts.active - ungated.active == 48 * 2048


def test_delta_rule_flops_and_bytes_by_hand() -> None:
    per_head = 6 * 32 * 16 + 2 * 64 * (3 * 32 + 2 * 16) + 2 * 64**2 / 3  # state pass + o; kkt, w, u, o; solve
    assert gdn_perf.delta_rule_flops(1.0, DIMS) == pytest.approx(4 * per_head)
    rerun = 4 * (2 * 64 * (32 + 16) + 4 * 32 * 16)  # recompute_w_u and fwd_h before the gradients
    assert gdn_perf.delta_rule_backward_flops(1.0, DIMS) == pytest.approx(2 * 4 * per_head + rerun)
    assert gdn_perf.delta_rule_bytes(1.0, DIMS, 2) == 4 * (2 * (7 * 32 + 6 * 16 + 3 * 64 + 2 + 2 * 32 * 16 / 64) + 24)
    assert gdn_perf.gdn_conv_flops(10.0, DIMS) == 2 * 4 * 192 * 10


def test_layer_flops_by_hand() -> None:
    cfg = _run()
    tokens = 128.0
    (proj, core), mlp = block_flops(cfg.model, _ctx(cfg), 0, False)
    assert proj == compute.matmul_flops(tokens, 256, 264) + compute.matmul_flops(tokens, 64, 256)
    assert core == pytest.approx(gdn_perf.delta_rule_flops(tokens, DIMS) + 2 * 4 * 192 * tokens)
    assert mlp == compute.mlp_flops(tokens, 256, 512, "swiglu")


def _ctx(cfg: EstimatorConfig) -> Any:
    from estimator.perf.context import context

    return context(cfg)


def test_operators_and_kernels() -> None:
    cfg = _run()
    from estimator.perf import roofline

    ctx = _ctx(cfg)
    ops = {op.name: op for op in roofline.layer_ops(cfg, roofline.layer_dims(cfg, ctx), 0)}
    assert {"gdn_in_proj", "gdn_conv1d", "gdn_delta_rule", "gdn_gated_norm", "gdn_out_proj"} <= set(ops)
    assert "qkv" not in ops and "flash_attention" not in ops
    rule = ops["gdn_delta_rule"]
    assert (rule.kernels, rule.bw_kernels) == gdn_perf.RULE_KERNELS == (6, 7)
    assert rule.flops == pytest.approx(gdn_perf.delta_rule_flops(128.0, DIMS))
    assert rule.bytes == pytest.approx(gdn_perf.delta_rule_bytes(128.0, DIMS, 2))
    shape = layer_shape(cfg.model, moe=False, layer_ep=1, tp=1, sequence_parallel=False, tp_blocks=2, cp=1,
                        flash_attention=True, blocks=("gdn", "dense"))
    modules = layer_modules(shape)
    assert "core_attn" not in modules and "attn_proj" not in modules
    # 2 GEMMs (1 + 2 each), conv (1, 1), 3 pointwise (1, 1), gated norm (1, 2), the rule (6, 7)
    assert (forward_kernels(modules["gdn"]), backward_kernels(modules["gdn"])) == (2 + 1 + 3 + 1 + 6, 4 + 1 + 3 + 2 + 7)


def test_activation_bytes_by_hand() -> None:
    """T = 128 tokens, bf16, tp 1, no dropout: norm input and output 2·T·h·2, then per token the conv input 192,
    the L2-norm outputs 128, q and k repeated to the 4 value heads 256, v, the rule's output and the gate 3·64
    (all ·2 bytes), the fp32 rstds 2·2·4 + 4·4, g 4·4, beta, alpha and A 4·(2 + 64)·2; out_proj's input 64·2."""
    per_token = (192 + 128 + 256 + 3 * 64) * 2 + 2 * 2 * 4 + 4 * (2 * 4 + (2 + 64) * 2)
    expected = 2 * 128 * 256 * 2 + 128 * per_token + 128 * 64 * 2
    assert gdn_block_bytes(_run(), frozenset()) == expected == 417792


def test_output_gate_by_hand() -> None:
    plain = ModelConfig(**{**BASE, "linear_attention_freq": None})
    gated = ModelConfig(**{**BASE, "linear_attention_freq": None, "attention_output_gate": True})
    assert layer_params(gated, 0).total - layer_params(plain, 0).total == 256 * 4 * 64  # the gate rows h·a·d
    assert attention_flops(gated, 100.0, 128)[0] - attention_flops(plain, 100.0, 128)[0] == 2 * 100 * 256 * 256
    op = output_gate_op(100.0, 256.0, 2)
    assert (op.bytes, op.kernels, op.bw_kernels) == (100 * 256 * (3 * 2 + 24), 4, 3)
    run = {"linear_attention_freq": None}
    extra = attention_block_bytes(_run({**BASE, **run, "attention_output_gate": True}), frozenset()) \
        - attention_block_bytes(_run({**BASE, **run}), frozenset())
    assert extra == 128 * 4 * 64 * (2 + 4)  # the ungated output and the fp32 sigmoid


def test_estimate_runs_and_its_parts_add_up() -> None:
    cfg = _run()
    perf, mem = estimator.estimate_perf(cfg), estimator.estimate_memory(cfg)
    parts = perf.real_parts
    assert parts["TOTAL"] == pytest.approx(sum(v for k, v in parts.items() if k != "TOTAL"))
    assert all(v >= 0 for v in parts.values()) and mem.peak_mb > 0
    plain = estimator.estimate_perf(_run({**BASE, "linear_attention_freq": None}))
    assert plain.real_parts["TOTAL"] != parts["TOTAL"]


@pytest.mark.parametrize(("model", "parallel", "field"), [
    ({"gdn_num_value_heads": 3}, {}, "model.gdn_num_value_heads"),
    ({"hybrid_override_pattern": "G-*-"}, {}, "model.linear_attention_freq"),
    ({}, {"tp": 4}, "parallel.tp"),
    ({}, {"cp": 4, "dp": 1}, "parallel.cp"),  # tp·cp must divide the 2 key heads
])
def test_model_rules(model: dict[str, Any], parallel: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        _run({**BASE, **model}, **parallel)
    assert info.value.field == field, info.value


def test_adapters_on_gdn_layers_are_refused() -> None:
    with pytest.raises(ConfigError) as info:
        load_config({"profile": "megatron", "model": BASE, "train": {"seq_length": 128, "micro_batch_size": 1,
                     "num_micro_batches": 2}, "parallel": {"tp": 1}, "hardware": "h100-80g",
                     "adapter": {"kind": "lora", "rank": 8}})
    assert info.value.field == "adapter.kind" and "Gated DeltaNet" in info.value.rule


def test_without_the_fields_nothing_changes() -> None:
    """Off: linear_attention_freq None and attention_output_gate False are the defaults; freq 1 is every layer
    softmax attention, bit-identical to a model without the field."""
    plain = {**BASE, "linear_attention_freq": None}
    one = {**BASE, "linear_attention_freq": 1}
    assert estimator.estimate_perf(_run(one)).real_parts == estimator.estimate_perf(_run(plain)).real_parts
    assert estimator.estimate_memory(_run(one)).peak_mb == estimator.estimate_memory(_run(plain)).peak_mb


def _qwen_row(measured_dir: Path) -> dict[str, str]:
    path = measured_dir / "step_time_cases.csv"
    with path.open(newline="", encoding="utf-8") as fh:
        return next(r for r in csv.DictReader(fh)
                    if r["case_id"] == "mbridge_perf_summary_blackwell__26.08_Qwen3_30B_a3B_DGX-GB300_MXFP8")


def test_a_qwen3_next_row_gets_its_family_facts(measured_dir: Path) -> None:
    """A SYNTHETIC Qwen3-Next row (a published Qwen3 row renamed, with Qwen3-Next's columns and a GDN phrase in its
    notes) is estimated with Bridge's provider facts: GDN every layer but each 4th, gated attention; Qwen3.5 is
    refused by name (its vision encoder)."""
    row = {**_qwen_row(measured_dir), "model_name": "Qwen3-Next 80B-A3B", "num_attention_heads": "16",
           "num_kv_heads": "2", "head_dim": "256", "num_experts": "512", "moe_topk": "10",
           "moe_ffn_hidden_size": "512", "num_shared_experts": "1", "shared_expert_ffn_hidden_size": "512"}
    row["notes"] += " | gated delta net (3 linear : 1 gated attention)"
    model = config_from_measured_row(row)["model"]
    assert (model["linear_attention_freq"], model["gdn_num_value_heads"], model["attention_output_gate"]) == (4, 32, True)
    with pytest.raises(ConfigError) as info:
        config_from_measured_row({**row, "model_name": "Qwen3 30B-A3B"})  # the phrase without the family's facts
    assert info.value.field == "notes" and "Gated DeltaNet" in info.value.rule


def test_gated_attention_in_notes_is_read(measured_dir: Path) -> None:
    row = _qwen_row(measured_dir)
    model = config_from_measured_row({**row, "notes": row["notes"] + " | attention output gate (sigmoid)"})["model"]
    assert model["attention_output_gate"] is True
    assert "attention_output_gate" not in config_from_measured_row(row)["model"]


def test_a_hybrid_row_with_gdn_layers_is_refused_naming_them(measured_dir: Path) -> None:
    """A SYNTHETIC variant of a published Nemotron-3 Nano row whose layer pattern holds Gated DeltaNet layers
    ('G'): no row states their dims, so it is refused on ``notes`` (the published row is estimated)."""
    path = measured_dir / "step_time_cases.csv"
    with path.open(newline="", encoding="utf-8") as fh:
        row = next(r for r in csv.DictReader(fh)
                   if r["case_id"] == "mbridge_perf_summary_blackwell__26.08_Nemotron_3_Nano_DGX-GB300_MXFP8")
    assert config_from_measured_row(row)["model"]["hybrid_override_pattern"].startswith("MEMEM*E")
    gdn_row = {**row, "notes": row["notes"].replace("hybrid_layer_pattern MEMEM", "hybrid_layer_pattern GEMEM")}
    with pytest.raises(ConfigError) as info:
        config_from_measured_row(gdn_row)
    assert info.value.field == "notes" and "'G'" in info.value.rule


#: SYNTHETIC Qwen3.5-style text config (the key names of transformers' Qwen3.5 configs; the values of a small model)
_QWEN35_TEXT: dict[str, Any] = {
    "model_type": "qwen3_5_moe_text", "hidden_size": 512, "num_hidden_layers": 8, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 128, "vocab_size": 4096, "tie_word_embeddings": False,
    "attn_output_gate": True, "full_attention_interval": 4,
    "layer_types": (["linear_attention"] * 3 + ["full_attention"]) * 2, "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 64, "linear_num_key_heads": 4, "linear_num_value_heads": 8, "linear_value_head_dim": 64,
    "num_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 256, "shared_expert_intermediate_size": 256,
    "intermediate_size": 1024, "mtp_num_hidden_layers": 1, "mamba_ssm_dtype": "float32",
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25,
                        "mrope_section": [11, 11, 10]},
}


def _write_json(tmp_path: Path, doc: dict[str, Any]) -> Path:
    import json

    path = tmp_path / "config.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_qwen3_5_text_towers_import_and_the_vision_encoder_is_reported(tmp_path: Path) -> None:
    """Qwen3.5 (``qwen3_5_moe_text`` inside a ``qwen3_5_moe`` wrapper with a vision tower): the GDN layout, dims,
    gate, experts and MTP layer are read; the vision encoder is listed as not modelled (never dropped silently);
    the dense tower (``qwen3_5_text``) keeps its MLP."""
    wrapped = {"model_type": "qwen3_5_moe", "text_config": _QWEN35_TEXT, "vision_config": {"depth": 2}}
    imported = import_hf_config(_write_json(tmp_path, wrapped))
    model = ModelConfig.model_validate(imported.data["model"])
    assert (model.linear_attention_freq, model.gdn_num_value_heads, model.gdn_key_head_dim) == (4, 8, 64)
    assert (model.attention_output_gate, model.qk_norm, model.num_experts, model.mtp_layers) == (True, True, 16, 1)
    assert "vision_config" in imported.not_modelled and not imported.warnings
    dense = {k: v for k, v in _QWEN35_TEXT.items() if not k.startswith(("num_experts", "moe_", "shared_"))}
    model = ModelConfig.model_validate(import_hf_config(_write_json(tmp_path, {
        **dense, "model_type": "qwen3_5_text"})).data["model"])
    assert (model.is_moe, model.ffn_hidden_size, model.linear_attention_freq) == (False, 1024, 4)
    cfg = load_config({"profile": "megatron", "model": imported.data["model"], "train": {
        "seq_length": 256, "micro_batch_size": 1, "num_micro_batches": 2}, "parallel": {"tp": 1}, "hardware": "b200"})
    assert estimator.estimate_perf(cfg).real_parts["TOTAL"] > 0


def test_batched_search_prices_gdn_layers_as_the_scalar_path() -> None:
    """A strategy search over a SYNTHETIC GDN + MoE model: the batched path (arrays of layouts) ranks every feasible
    layout with the peak and step time of the one-config path."""
    from estimator import search

    moe = {**BASE, "num_experts": 8, "moe_topk": 2, "moe_ffn_hidden_size": 128, "num_shared_experts": 1,
           "shared_expert_ffn_hidden_size": 128, "shared_expert_gate": True, "attention_output_gate": True}
    base = load_config({"profile": "megatron", "model": moe, "train": {"seq_length": 128, "micro_batch_size": 1,
                        "global_batch_size": 64}, "parallel": {"tp": 1, "sequence_parallel": True},
                        "hardware": "h100-80g"})
    space = {"parallel.tp": (1, 2), "parallel.ep": (1, 2, 4), "train.micro_batch_size": (1, 2)}
    fast = search.search(base, 8, space, top_k=None)
    slow = search.search(base, 8, space, top_k=None, batched=False)
    assert len(fast.ranked) >= 8 and {c.path for c in fast.ranked} == {"batched"}
    assert [c.key() for c in fast.ranked] == [c.key() for c in slow.ranked]
    for f, s in zip(fast.ranked, slow.ranked, strict=True):
        assert f.peak_mb == pytest.approx(s.peak_mb, rel=1e-9) and f.total_s == pytest.approx(s.total_s, rel=1e-9)
