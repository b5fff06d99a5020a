"""Transformer Engine's fused loss (``train.cross_entropy_fusion: te``) and FP8 saved linear inputs
(``precision.fp8_linear`` under ``megatron``) in the activation model (``estimator.memory.activation``).

Unit tests on synthetic configs (hand-written shapes, not read from any CSV) pin each term to the
bytes the source code keeps; the real-data tests (skipped without ../shared/data) check that the
measured rows stating those flags get them as cited source facts.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

import estimator
from estimator.config.errors import ConfigError
from estimator.experiments.measured import config_from_measured_row
from estimator.inputs.derive import stage_layouts
from estimator.memory import activation as act
from estimator.memory.stage import backward_overhead_bytes

H, F, A, G, D = 1024, 4096, 16, 4, 64  # synthetic dense GQA layer: hidden, ffn, heads, kv heads, head dim
S, MBS, TP, V = 2048, 2, 2, 32000


def _dense(*, fp8: bool = False, flash: bool = True, profile: str = "megatron", **train: Any) -> estimator.EstimatorConfig:
    """Synthetic dense GQA/SwiGLU model, TP 2 with SP, no dropout."""
    return estimator.load_config({
        "profile": profile,
        "model": {"num_layers": 4, "hidden_size": H, "ffn_hidden_size": F, "num_attention_heads": A,
                  "num_kv_heads": G, "attention": "gqa", "vocab_size": V, "activation": "swiglu"},
        "train": {"seq_length": S, "micro_batch_size": MBS, "num_micro_batches": 4, "flash_attention": flash,
                  "attention_dropout": 0.0, "hidden_dropout": 0.0, **train},
        "parallel": {"tp": TP, "sequence_parallel": True},
        "precision": {"fp8_linear": fp8},
        "hardware": "h100-80g",
    })


def test_te_loss_keeps_compute_dtype_logits_and_no_backward_copy() -> None:
    """TE's kernel reads the bf16 logits and writes the gradient into them: T·V·2/t bytes, and the
    head's backward node adds only its input, where Megatron's fp32 loss adds another fp32 copy."""
    tokens = S * MBS
    te, native, none = (_dense(cross_entropy_fusion=v) for v in ("te", "native", "none"))
    assert act.logits_bytes(te) == tokens * V * 2 / TP
    assert act.logits_bytes(native) == act.logits_bytes(none) == tokens * V * 4 / TP
    last = stage_layouts(te)[-1]
    head_input = tokens * H * 2 / TP
    assert backward_overhead_bytes(te, last, "none") == pytest.approx(head_input)
    assert backward_overhead_bytes(none, last, "none") == pytest.approx(head_input + tokens * V * 4 / TP)
    assert backward_overhead_bytes(native, last, "none") == backward_overhead_bytes(none, last, "none")


def test_te_loss_is_a_megatron_flag() -> None:
    with pytest.raises(ConfigError) as err:
        _dense(profile="fsdp2", cross_entropy_fusion="te")
    assert err.value.field == "train.cross_entropy_fusion"
    assert "fsdp2" in str(err.value)


@pytest.mark.parametrize("flash", [True, False])
def test_fp8_dense_layer_saves_one_byte_per_te_linear_input(flash: bool) -> None:
    """Dense layer, FP8 minus bf16 = the three TE-only saved inputs going 2 -> 1 B (QKV norm output
    T·h/t, fc1 norm output T·h/t, fc2 input T·F/t), and the out-proj input T·a·d/t: saved by flash
    attention as well (+1 B for TE's FP8 copy) or, unfused, only by the out-proj (2 -> 1 B)."""
    bf16, fp8 = _dense(flash=flash), _dense(fp8=True, flash=flash)
    tokens = S * MBS
    te_only = tokens * H / TP + tokens * H / TP + tokens * F / TP
    proj = tokens * A * D / TP
    expected = -te_only + (proj if flash else -proj)
    diff = act.layer_activation_bytes(fp8, 0, "none") - act.layer_activation_bytes(bf16, 0, "none")
    assert diff == pytest.approx(expected)


def test_fp8_saved_inputs_only_under_megatron() -> None:
    """torchtitan's Float8 (profile fsdp2) is not TE: its activations are left as they are."""
    assert act.te_fp8_saved_inputs(_dense(fp8=True))
    assert not act.te_fp8_saved_inputs(_dense(fp8=True, profile="fsdp2"))
    assert act.saved_input_bytes(_dense(fp8=True, profile="fsdp2"), 2, True) == 2


def test_te_recipe_under_another_profile_saves_quantized_inputs() -> None:
    """A TE recipe under the fsdp2 sharding (Megatron-Bridge's Megatron-FSDP rows run TE linears) saves the
    quantized inputs as under megatron; torchao's recipe keeps them; options.low_precision_gemms off restores
    the profile rule (nothing saved quantized under fsdp2, as before)."""
    def cfg(recipe: str, **options: Any) -> estimator.EstimatorConfig:
        base = _dense(fp8=True, profile="fsdp2").model_dump(mode="json")
        return estimator.load_config({**base, "precision": {**base["precision"], "linear_recipe": recipe},
                                      "options": {**base["options"], **options}})

    assert act.te_fp8_saved_inputs(cfg("tensorwise")) and act.saved_input_bytes(cfg("tensorwise"), 1, False) == 1
    assert not act.te_fp8_saved_inputs(cfg("torchao_tensorwise"))
    assert not act.te_fp8_saved_inputs(cfg("tensorwise", low_precision_gemms=False))


def test_saved_input_bytes_counts_each_te_copy() -> None:
    fp8, bf16 = _dense(fp8=True), _dense()
    assert [act.saved_input_bytes(fp8, n, other) for n, other in [(1, False), (2, False), (1, True), (0, True)]] == [
        1, 2, 3, 2]
    assert {act.saved_input_bytes(bf16, n, other) for n, other in [(1, False), (2, False), (1, True)]} == {2}


def _moe_mla(fp8: bool) -> estimator.EstimatorConfig:
    """Synthetic MLA + MoE layer with one shared expert (tp 2, SP, unfused attention)."""
    return estimator.load_config({
        "profile": "megatron",
        "model": {"num_layers": 2, "num_dense_layers": 0, "hidden_size": 512, "ffn_hidden_size": 2048,
                  "num_attention_heads": 8, "attention": "mla", "q_lora_rank": 384, "kv_lora_rank": 128,
                  "qk_head_dim": 64, "qk_rope_head_dim": 32, "v_head_dim": 64, "num_experts": 8, "moe_topk": 2,
                  "num_shared_experts": 1, "moe_ffn_hidden_size": 256, "vocab_size": 1000},
        "train": {"seq_length": 1024, "micro_batch_size": 1, "num_micro_batches": 2, "flash_attention": False,
                  "attention_dropout": 0.0, "hidden_dropout": 0.0},
        "parallel": {"tp": 2, "dp": 2, "ep": 2, "etp": 1, "sequence_parallel": True, "distributed_optimizer": True},
        "precision": {"fp8_linear": fp8},
        "hardware": "h100-80g",
    })


def test_fp8_moe_mla_layer_by_hand() -> None:
    """MLA: input norm output read by two TELinear down-projections (2 x 1 B = 2 B: no change), q/kv
    norm outputs (384 + 128)/t -1 B, out-proj input 8·64/t -1 B (unfused). MoE: norm output kept by
    the router and copied by the shared fc1 (+1 B·h/t), permuted tokens k·h/t -1 B, routed fc2
    input k·F_e/t -1 B, shared fc2 input F_s/t -1 B."""
    tokens, t = 1024, 2
    per_token = (-(384 + 128) / t - 8 * 64 / t) + (512 / t - 2 * 512 / t - 2 * 256 / t - 256 / t)
    diff = act.layer_activation_bytes(_moe_mla(True), 0, "none") - act.layer_activation_bytes(_moe_mla(False), 0, "none")
    assert diff == pytest.approx(tokens * per_token)


def _rows(measured_dir: Path) -> list[dict[str, str]]:
    with (measured_dir / "memory_cases.csv").open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_measured_rows_get_their_loss_fusion_as_a_cited_fact(measured_dir: Path) -> None:
    """SimuMax's '_cef' rows run TE's fused loss; the Megatron CI MoE proxies Megatron's native one."""
    seen = {"te": 0, "native": 0}
    for row in _rows(measured_dir):
        notes = row.get("notes", "")
        cfg = config_from_measured_row(row)
        value = cfg["train"].get("cross_entropy_fusion", "none")
        if "--cross-entropy-fusion-impl te" in notes:
            assert value == "te", row["case_id"]
        elif "--cross-entropy-loss-fusion native" in notes:
            assert value == "native", row["case_id"]
        else:
            assert value == "none", row["case_id"]
            continue
        assert "train.cross_entropy_fusion" in cfg["model"]["source_facts"]
        seen[value] += 1
    assert seen["te"] >= 20 and seen["native"] >= 8, seen
