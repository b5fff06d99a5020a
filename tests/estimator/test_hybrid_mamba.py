"""Hybrid Mamba-2 / attention / MLP / MoE stacks (``model.hybrid_override_pattern``): one Mamba-2 layer's
parameters, activation bytes, FLOPs and kernels by hand on a small SYNTHETIC config (not a published model),
the latent MoE, the pattern's rules, and the Bridge Nemotron rows read from their notes."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

import estimator
from estimator.config.errors import ConfigError
from estimator.config.schema import EstimatorConfig, load_config
from estimator.experiments.measured import config_from_measured_row
from estimator.inputs.derive import layer_kind, stage_layouts
from estimator.inputs.hybrid import mamba_dims
from estimator.inputs.params import layer_params, total_params
from estimator.memory.activation import layer_activation_bytes
from estimator.perf import mamba
from estimator.perf.context import config_context
from estimator.perf.kernels import layer_pass_kernels, layer_shape
from estimator.perf.layers import layer_cost

#: synthetic hybrid model: h 256, 8 Mamba heads of 32 (d_i 256), state 16, 2 groups, conv 4, chunk 128;
#: GQA 4 heads / 2 KV of 64; 8 experts top-2 of 128 (squared ReLU); dense MLP 512
SYNTH: dict[str, Any] = {
    "name": "synthetic-hybrid", "num_layers": 4, "hidden_size": 256, "num_attention_heads": 4, "num_kv_heads": 2,
    "head_dim": 64, "attention": "gqa", "vocab_size": 1024, "num_experts": 8, "moe_topk": 2,
    "moe_ffn_hidden_size": 128, "ffn_hidden_size": 512, "activation": "squared_relu", "position_embedding": "none",
    "hybrid_override_pattern": "ME*-", "mamba_num_heads": 8, "mamba_head_dim": 32, "mamba_state_dim": 16,
    "mamba_num_groups": 2,
}


def _run(tp: int = 1, **model: Any) -> EstimatorConfig:
    return load_config({"profile": "megatron", "model": {**SYNTH, **model},
                        "train": {"seq_length": 512, "micro_batch_size": 1, "num_micro_batches": 2,
                                  "hidden_dropout": 0.0},
                        "parallel": {"tp": tp}, "hardware": "b200"})


def test_mamba_layer_params_by_hand() -> None:
    cfg = _run(tp=2)
    d = mamba_dims(cfg.model)
    assert (d.inner, d.in_proj_width, d.conv_channels) == (256, 584, 320)  # 2·256 + 2·2·16 + 8; 256 + 64
    lp = layer_params(cfg.model, 0)
    # in_proj 256·584 + conv (320·4 + 320) + dt_bias, A_log, D 3·8 + gated norm 256 + out_proj 256·256 + pre-norm 256
    assert lp.non_expert == 149504 + 1600 + 24 + 256 + 65536 + 256 == 217176
    assert (lp.routed, lp.shared, lp.replicated) == (0, 0, 256)
    assert lp.held_non_expert(2) == (217176 - 256) / 2 + 256  # every mixer tensor split over TP, the norm whole


def test_one_block_layers_by_hand() -> None:
    m = _run().model
    assert [layer_kind(m, i) for i in range(4)] == ["mamba", "moe_mlp", "attention", "mlp"]
    moe, attn, mlp = layer_params(m, 1), layer_params(m, 2), layer_params(m, 3)
    assert (moe.non_expert, moe.routed) == (256 + 256 * 8, 8 * 2 * 256 * 128)  # norm + router; E·2·h·F_e
    assert attn.non_expert == 256 + 256 * 4 * 64 + 2 * 256 * 2 * 64 + 4 * 64 * 256  # norm + Q, K, V, O
    assert mlp.non_expert == 256 + 2 * 256 * 512
    # no final-norm / embedding surprises: 4 layers + V·h twice (untied) + final norm
    assert total_params(m) == 217176 + moe.total + attn.total + mlp.total + 2 * 1024 * 256 + 256


def test_mamba_layer_activation_bytes_by_hand() -> None:
    cfg = _run()
    T, B = 512, 2  # s·b tokens, bf16; tp 1, no SP, no hidden dropout
    expected = (T * 256 * B  # norm input
                + T * 256 * B  # norm output (in_proj's saved input)
                + T * (584 + 2 * 256) * B  # [b, s] copy of in_proj's output (zxbcdt) + scan output out_x
                + T * 2 * 4  # gated norm's fp32 rstd per group
                + T * 256 * B)  # gated norm's output = out_proj's saved input
    assert layer_activation_bytes(cfg, 0, "none") == expected == 1912832


def test_mamba_layer_flops_by_hand() -> None:
    cfg = _run()
    d, T = mamba_dims(cfg.model), 512
    assert mamba.ssd_scan_flops(T, d) == 2 * T * (2 * 128 * 16 + 8 * 32 * (128 + 2 * 16)) == 46137344
    assert mamba.conv1d_flops(T, d) == 2 * 4 * 320 * T
    assert mamba.mamba_projection_flops(T, 256, d) == 2 * T * 256 * 584 + 2 * T * 256 * 256
    lc = layer_cost(cfg, config_context(cfg), 0, 0)
    assert lc.forward == 220200960 + 46137344 + 1310720 and not lc.moe
    assert mamba.ssd_scan_backward_flops(T, d) == 2 * 46137344 + 2 * T * (2 * 128 * 16 + 8 * 32 * 16)


def test_mamba_layer_kernels_by_hand() -> None:
    m = _run().model
    shape = layer_shape(m, moe=False, layer_ep=1, tp=1, sequence_parallel=False, tp_blocks=1, cp=1,
                        flash_attention=True, blocks=("mamba", None))
    k = layer_pass_kernels(shape, "none")
    # forward: pre-norm 1 + in/out GEMMs 2 + 3 pointwise + gated norm 1 + conv 1 + scan 5 + residual 1
    assert (k.forward, k.backward) == (14.0, 2 + 4 + 3 + 2 + 2 + 15 + 1)


def test_latent_moe_params_by_hand() -> None:
    m = _run(moe_latent_size=64).model
    lp = layer_params(m, 1)
    assert lp.routed == 8 * 2 * 64 * 128  # experts map L = 64, not h
    assert lp.non_expert == 256 + 256 * 8 + 2 * 256 * 64 and lp.duplicated == 2 * 256 * 64  # + h·L + L·h


def test_latent_projections_are_held_linear_weights_by_hand() -> None:
    """The latent projections (2·256·64 = 32768, whole on every TP rank) are the MoE layer's only non-expert
    linear weights: ``held_linear(2)`` = (35072 − 35072)/2 + 0 + 32768; the experts per rank at ep 2, etp 1:
    8·2·64·128 / 2 routed, 0 shared. With MXFP8 linears their cached copies are 2·(1 + 1/32) B each (before
    the rule, the FP8 weight cache left them out)."""
    from estimator.memory.static import megatron_layer_static

    plain = _run(tp=2, moe_latent_size=64)
    lp = layer_params(plain.model, 1)
    assert lp.held_linear(2) == 32768 and lp.held_experts(2, 2, 1) == (8 * 2 * 64 * 128 / 2, 0.0)
    fp8 = load_config({**plain.model_dump(mode="json", exclude={"hardware"}), "hardware": "b200",
                       "precision": {"linear_recipe": "mxfp8"}})
    extra = megatron_layer_static(fp8, lp, 2).non_expert.params - megatron_layer_static(plain, lp, 2).non_expert.params
    assert extra == pytest.approx(32768 * 2 * (1 + 1 / 32))


def test_without_a_pattern_nothing_changes() -> None:
    """The hybrid fields at their defaults leave a transformer model's numbers as they were: two transformer
    layers equal a ``*-*-`` pattern's four one-block layers in parameters and (pp 1) in step time."""
    base = {k: v for k, v in SYNTH.items() if not k.startswith(("hybrid", "mamba"))} | {"num_experts": 0}
    plain = _run(**{**base, "num_layers": 2, "hybrid_override_pattern": None})
    split = _run(**{**base, "num_layers": 4, "hybrid_override_pattern": "*-*-"})
    assert total_params(plain.model) == total_params(split.model)
    a, b = estimator.estimate_perf(plain).total, estimator.estimate_perf(split).total
    assert a == pytest.approx(b, rel=1e-9)
    assert stage_layouts(plain)[0].layers == (0, 1)


@pytest.mark.parametrize(("model", "parallel", "field", "words"), [
    ({"hybrid_override_pattern": "ME*"}, {}, "model.hybrid_override_pattern", "has 3 symbols"),
    ({"hybrid_override_pattern": "MX*-"}, {}, "model.hybrid_override_pattern", "unknown symbol"),
    ({"hybrid_override_pattern": "ME*-", "num_experts": 0}, {}, "model.hybrid_override_pattern", "num_experts"),
    ({"mamba_num_heads": 7}, {}, "model.mamba_num_heads", "multiple of model.mamba_num_groups"),
    ({"mamba_num_groups": 1, "mamba_num_heads": 6}, {"tp": 4}, "parallel.tp", "Mamba heads"),
    ({}, {"tp": 4}, "parallel.tp", "mamba_num_groups"),
    ({}, {"cp": 4}, "parallel.cp", "group_repeat_count"),  # 2 groups over cp 4: replicated, not modelled
    ({"num_dense_layers": 1}, {}, "model.num_dense_layers", "not used"),
])
def test_bad_hybrid_configs_are_refused_by_field(model: dict[str, Any], parallel: dict[str, Any], field: str,
                                                 words: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config({"profile": "megatron", "model": {**SYNTH, **model},
                     "train": {"seq_length": 512, "num_micro_batches": 2}, "parallel": parallel, "hardware": "b200"})
    assert info.value.field == field and words in info.value.rule


def test_adapters_on_a_hybrid_stack_are_refused() -> None:
    with pytest.raises(ConfigError) as info:
        load_config({"profile": "megatron", "model": SYNTH, "train": {"seq_length": 512, "num_micro_batches": 2},
                     "adapter": {"kind": "lora"}, "hardware": "b200"})
    assert info.value.field == "adapter.kind" and "not modelled" in info.value.rule


def _bridge_rows(measured_dir: Path) -> list[dict[str, str]]:
    with (measured_dir / "step_time_cases.csv").open(newline="") as f:
        return [r for r in csv.DictReader(f) if "Nemotron" in r["model_name"]]


def test_every_bridge_nemotron_row_is_estimated(measured_dir: Path) -> None:
    rows = _bridge_rows(measured_dir)
    assert len(rows) == 49
    for row in rows:
        cfg = load_config(config_from_measured_row(row))
        assert estimator.estimate_perf(cfg).total > 0 and cfg.model.vocab_size == 131072
    nano = load_config(config_from_measured_row(rows[0]))
    assert (nano.model.mamba_num_heads, nano.model.mamba_head_dim, nano.model.mamba_state_dim,
            nano.model.mamba_num_groups, nano.model.position_embedding) == (64, 64, 128, 8, "none")
    super_row = next(r for r in rows if "Super" in r["model_name"])
    sup = config_from_measured_row(super_row)["model"]
    assert sup["moe_latent_size"] == 1024 and sup["mtp_layers"] == 2 and sup["mtp_repeated_layer"]
    assert "mtp_layers" in sup["assumed"]
    assert "model.mamba_state_dim" in sup["source_facts"]
    # the model's facts hold for its rows of any source (another table, other hardware)
    elsewhere = config_from_measured_row({**super_row, "source_id": "another_table", "hardware": "H100",
                                          "precision": "bf16", "notes": super_row["notes"].replace("fp8_recipe=", "x=")})
    assert (elsewhere["model"]["mamba_state_dim"], elsewhere["model"]["mamba_num_groups"]) == (128, 8)
    assert load_config(elsewhere).model.vocab_size == 131072
    # another size of the family (a name no fact lists): its tokenizer's vocabulary; the notes state the rest
    other = {**rows[0], "model_name": "Nemotron-H 8B"}  # a Nano row: its notes state every Mamba-2 dim
    assert config_from_measured_row(other)["model"]["vocab_size"] == 131072
    with pytest.raises(ConfigError, match="mamba_state_dim"):  # the Super row's notes do not: refused, not guessed
        config_from_measured_row({**super_row, "model_name": "Nemotron-H 8B"})
    assert config_from_measured_row({**other, "notes": "a dense row", "arch": "dense"})["model"].get(
        "vocab_size") != 131072  # not a hybrid row: no family fact


def test_a_nemotron_h_config_json_imports(tmp_path: Path) -> None:
    """A SYNTHETIC ``NemotronHForCausalLM`` config.json (the keys of NemotronHConfig, small values)."""
    import json

    from estimator.importers.hf import import_hf_config

    doc = {"model_type": "nemotron_h", "architectures": ["NemotronHForCausalLM"], "vocab_size": 1024,
           "hidden_size": 256, "num_hidden_layers": 4, "hybrid_override_pattern": "ME*-", "num_attention_heads": 4,
           "num_key_value_heads": 2, "head_dim": 64, "intermediate_size": 512, "mlp_hidden_act": "relu2",
           "mamba_num_heads": 8, "mamba_head_dim": 32, "ssm_state_size": 16, "n_groups": 2, "conv_kernel": 4,
           "chunk_size": 128, "expand": 2, "n_routed_experts": 8, "num_experts_per_tok": 2,
           "moe_intermediate_size": 128, "moe_shared_expert_intermediate_size": 256, "tie_word_embeddings": False,
           "num_nextn_predict_layers": 0, "layer_norm_epsilon": 1e-5}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    out = import_hf_config(path, name="synthetic-nemotron-h")
    model = out.data["model"]
    assert (model["hybrid_override_pattern"], model["mamba_state_dim"], model["mamba_num_groups"],
            model["activation"], model["position_embedding"], model["num_shared_experts"]) == (
        "ME*-", 16, 2, "squared_relu", "none", 1)
    cfg = load_config({"profile": "megatron", "model": model, "train": {"seq_length": 512, "num_micro_batches": 2},
                       "hardware": "b200"})
    assert layer_params(cfg.model, 0).non_expert == 217176  # the hand count of test_mamba_layer_params_by_hand


def test_nemotron_3_sizes_match_the_published_totals(measured_dir: Path) -> None:
    """The parameter counts from the rows' dims against NVIDIA's published sizes: Nano "31.6B total, 3.2B active
    (3.6B with embeddings)" (NVIDIA Nemotron 3 release notes / white paper), Super 120B (Nemotron-3 Super
    120B-A12B), Ultra 550B (550B-A55B); ``main``: without the MTP layers."""
    from estimator.inputs.params import param_counts

    rows = {r["model_name"]: r for r in _bridge_rows(measured_dir)}
    sizes = {name: param_counts(load_config(config_from_measured_row(row)).model) for name, row in rows.items()}
    nano = sizes["Nemotron-3 Nano 30B-A3B"]
    assert nano.total == pytest.approx(31.6e9, rel=0.005) and nano.active == pytest.approx(3.6e9, rel=0.01)
    assert sizes["Nemotron-3 Super 120B-A12B"].main == pytest.approx(120e9, rel=0.01)
    assert sizes["Nemotron-3 Ultra 550B-A55B"].main == pytest.approx(550e9, rel=0.005)


def test_the_pattern_decides_each_stages_layer_kinds() -> None:
    cfg = load_config({"profile": "megatron", "model": {**SYNTH, "num_layers": 8, "hybrid_override_pattern": "MEME*-*-"},
                       "train": {"seq_length": 512, "num_micro_batches": 4}, "parallel": {"pp": 2},
                       "hardware": "b200"})
    first, last = stage_layouts(cfg)
    assert dict(first.kind_runs(cfg.model)) == {"mamba": 2, "moe_mlp": 2}
    assert dict(last.kind_runs(cfg.model)) == {"attention": 2, "mlp": 2}
    memory = estimator.estimate_memory(cfg).to_dict()["stages"]
    assert memory[0]["components"]["activations"] != memory[1]["components"]["activations"]


def test_a_repeated_mtp_layer_holds_its_weights_once() -> None:
    base = {**SYNTH, "mtp_layers": 2}
    two, one = _run(**base).model, _run(**base, mtp_repeated_layer=True).model
    mtp = layer_params(two, 4).total  # the MTP layer (attention + MoE + projection + norms)
    assert total_params(two) - total_params(one) == mtp  # one set of MTP weights, not two
    mem_two = estimator.estimate_memory(_run(**base)).to_dict()["stages"][0]["components"]
    mem_one = estimator.estimate_memory(_run(**base, mtp_repeated_layer=True)).to_dict()["stages"][0]["components"]
    assert mem_one["params"] < mem_two["params"] and mem_one["activations"] == mem_two["activations"]
    a = estimator.estimate_perf(_run(**base)).to_dict()["stages"][0]["fw_flops"]
    assert estimator.estimate_perf(_run(**base, mtp_repeated_layer=True)).to_dict()["stages"][0]["fw_flops"] == a


def test_megatron_hybrid_arguments_import(tmp_path: Path) -> None:
    """SYNTHETIC Megatron-LM launch arguments in the spelling of NVIDIA's Nemotron-3 Super launch config."""
    from estimator.importers.megatron import import_megatron

    path = tmp_path / "hybrid.sh"
    path.write_text(
        '--is-hybrid-model --hybrid-override-pattern ME*-/*E --mamba-num-heads 8 --mamba-head-dim 32 '
        "--mamba-state-dim 16 --mamba-num-groups 2 --num-layers 4 --hidden-size 256 --num-attention-heads 4 "
        "--group-query-attention --num-query-groups 2 --kv-channels 64 --ffn-hidden-size 512 --squared-relu "
        "--num-experts 8 --moe-router-topk 2 --moe-ffn-hidden-size 128 --moe-latent-size 64 --mtp-num-layers 2 "
        "--mtp-use-repeated-layer --position-embedding-type none --normalization RMSNorm --seq-length 512 "
        '--micro-batch-size 1 --global-batch-size 8 --bf16 --vocab-size 1024 --untie-embeddings-and-output-weights\n',
        encoding="utf-8")
    model = import_megatron(path, world_size=8).data["model"]
    assert (model["hybrid_override_pattern"], model["mamba_state_dim"], model["moe_latent_size"],
            model["mtp_repeated_layer"], model["position_embedding"], model["num_dense_layers"]) == (
        "ME*-", 16, 64, True, "none", 0)
    cfg = load_config({"profile": "megatron", "model": model, "train": {"seq_length": 512, "num_micro_batches": 2},
                       "hardware": "b200"})
    assert layer_params(cfg.model, 0).non_expert == 217176


def test_a_moe_only_layer_without_tp_blocks_prices_under_quantized_gathers() -> None:
    """An ``E`` layer whose experts are not TP-sharded (etp 1) has no TP collective; with TE's quantized SP
    all-gathers (MXFP8, tp 2, sequence parallelism) the stage still prices (no division by its 0 blocks)."""
    cfg = load_config({"profile": "megatron", "model": SYNTH,
                       "train": {"seq_length": 512, "num_micro_batches": 2},
                       "parallel": {"tp": 2, "sequence_parallel": True, "ep": 1, "etp": 1},
                       "precision": {"linear_recipe": "mxfp8"}, "hardware": "b200"})
    assert estimator.estimate_perf(cfg).total > 0
