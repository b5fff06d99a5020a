"""Megatron-specific memory terms, each a sourced fact (synthetic toy configs; no measured number is used).

- unfused attention keeps B bytes per score without attention dropout, B + 1 + B with it
  (Korthikanti's 5 at B = 2); hidden dropout 0 keeps no masks;
- Megatron-Core duplicates the MLA down-projections on every TP rank;
- the Megatron MTP stage holds its own word embedding;
- Megatron's interleaved forward order puts one micro-batch on the last stage's last chunk;
- with FP8 linears Transformer Engine keeps 2 bytes of FP8 weight copies per linear weight.
"""

from __future__ import annotations

import pytest

import estimator
from estimator.inputs.derive import stage_layouts
from estimator.inputs.params import attention_params, layer_params, mla_replicated_params
from estimator.memory import activation as act
from estimator.memory.schedule import (
    in_flight,
    in_flight_interleaved,
    in_flight_megatron_interleaved,
    megatron_forward_chunks,
    megatron_interleaved_warmup,
)
from estimator.memory.stage import mtp_embedding_on_stage
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, SYNTHETIC_MOE_MODEL, synthetic_run

MIB = 1024 * 1024

#: synthetic toy MLA model (dims chosen small, not a real model)
SYNTHETIC_MLA_MODEL = {
    **SYNTHETIC_MOE_MODEL,
    "name": "synthetic-mla",
    "attention": "mla",
    "q_lora_rank": 48,
    "kv_lora_rank": 32,
    "qk_head_dim": 16,
    "qk_rope_head_dim": 8,
    "v_head_dim": 16,
}


def _dense_megatron(train: dict | None = None) -> estimator.EstimatorConfig:
    run = synthetic_run(model=SYNTHETIC_DENSE_MODEL, profile="megatron",
                        parallel={"tp": 1, "pp": 1, "dp": 2, "ep": 1}, train={"flash_attention": False, **(train or {})})
    return estimator.load_config(run)


def test_score_bytes_follow_attention_dropout() -> None:
    """bf16: 5 bytes per score by default (Korthikanti), 2 with attention dropout 0."""
    assert act.score_bytes_per_element(_dense_megatron()) == act.SCORE_BYTES == 5
    assert act.score_bytes_per_element(_dense_megatron({"attention_dropout": 0.1})) == 5
    assert act.score_bytes_per_element(_dense_megatron({"attention_dropout": 0.0})) == 2


def test_attention_dropout_zero_removes_three_bytes_per_score() -> None:
    """Toy: 4 layers × a·T·s = 8·128·128 scores; dropping mask + copy saves 3 bytes each."""
    default = estimator.estimate_memory(_dense_megatron()).stages[0].components["activations"]
    no_drop = estimator.estimate_memory(_dense_megatron({"attention_dropout": 0.0})).stages[0].components["activations"]
    assert default - no_drop == pytest.approx(4 * 3 * 8 * 128 * 128 / MIB)


def test_hidden_dropout_zero_removes_masks() -> None:
    """Two 1-byte masks of T·h per layer (attention output, MLP output): 4 layers · 2 · 128 · 64 bytes."""
    default = estimator.estimate_memory(_dense_megatron()).stages[0].components["activations"]
    no_drop = estimator.estimate_memory(_dense_megatron({"hidden_dropout": 0.0})).stages[0].components["activations"]
    assert default - no_drop == pytest.approx(4 * 2 * 128 * 64 / MIB)
    assert act.hidden_dropout_mask_bytes(_dense_megatron({"hidden_dropout": 0.1})) == 1


def test_dropout_rates_validated() -> None:
    with pytest.raises(estimator.ConfigError):
        _dense_megatron({"attention_dropout": 1.5})


def test_mla_down_projections_replicated_over_tp() -> None:
    """Megatron TELinear(parallel_mode='duplicated'): h·q_lora + q_lora + h·(kv_lora + d_rope) + kv_lora."""
    model = estimator.load_config(synthetic_run(model=SYNTHETIC_MLA_MODEL)).model
    h = 64
    assert mla_replicated_params(model) == h * 48 + 48 + h * (32 + 8) + 32
    lp = layer_params(model, 1)
    assert lp.replicated == lp.norm + mla_replicated_params(model)
    assert lp.mla_replicated < attention_params(model)
    gqa = _dense_megatron().model
    assert mla_replicated_params(gqa) == 0


def test_mla_tp2_params_keep_down_projections_whole() -> None:
    run = synthetic_run(model=SYNTHETIC_MLA_MODEL, profile="megatron", parallel={"tp": 2, "pp": 1, "dp": 2, "ep": 1})
    detail = estimator.estimate_memory(estimator.load_config(run)).stages[0].static_detail
    model = estimator.load_config(run).model
    lps = [layer_params(model, i) for i in range(model.num_layers)]
    held = sum((lp.non_expert - lp.replicated) / 2 + lp.replicated for lp in lps)
    assert detail.non_expert.params == pytest.approx(2 * held)  # bf16 params


def _mtp_run(profile: str) -> dict:
    model = {**SYNTHETIC_MOE_MODEL, "mtp_layers": 1}
    return synthetic_run(model=model, profile=profile, parallel={"tp": 1, "pp": 2, "dp": 2, "ep": 1})


def test_megatron_mtp_stage_holds_embedding() -> None:
    """Megatron GPTModel builds the embedding when pre_process or mtp_process: V·h on the last stage too."""
    with_mtp = estimator.estimate_memory(estimator.load_config(_mtp_run("megatron"))).stages[-1]
    no_mtp_run = _mtp_run("megatron")
    no_mtp_run["model"]["mtp_layers"] = 0
    without = estimator.estimate_memory(estimator.load_config(no_mtp_run)).stages[-1]
    v_h = 1000 * 64
    mtp = layer_params(estimator.load_config(_mtp_run("megatron")).model, 4).total
    # bf16 param 2 B per parameter: the MTP layer plus the embedding
    assert with_mtp.components["params"] - without.components["params"] == pytest.approx((mtp + v_h) * 2 / MIB)
    megatron = estimator.load_config(_mtp_run("megatron"))
    assert mtp_embedding_on_stage(megatron, stage_layouts(megatron)[-1])
    sapp = estimator.load_config(_mtp_run("sapp-nd"))  # the reference profile is unchanged
    assert not mtp_embedding_on_stage(sapp, stage_layouts(sapp)[-1])


def test_megatron_interleaved_warmup_and_order() -> None:
    """get_pp_rank_microbatches / get_schedule_table with group size p."""
    assert megatron_interleaved_warmup(2, 4, 4, 1) == 6
    assert megatron_interleaved_warmup(2, 4, 4, 1, extra=1) == 7
    assert megatron_interleaved_warmup(4, 8, 4, 0) == 32  # capped at m·vp
    assert megatron_forward_chunks(2, 2, 5) == [0, 0, 1, 1, 0, 0, 1, 1, 0, 1]  # Megatron's PP2 M5 VP2 example
    # last stage of p = 2, vp = 4, m = 4: seven forwards, the last chunk holds one
    assert [in_flight_megatron_interleaved(2, 4, 4, 1, c) for c in range(4)] == [2, 2, 2, 1]
    assert [in_flight_megatron_interleaved(2, 4, 4, 1, c, extra=1) for c in range(4)] == [2, 2, 2, 2]
    assert [in_flight("interleaved", 2, 4, 4, 1, c, order="megatron") for c in range(4)] == [2, 2, 2, 1]


def test_megatron_order_total_matches_reference_except_first_stage() -> None:
    p, vp, m = 4, 8, 8
    for s in range(p):
        ours = sum(in_flight_megatron_interleaved(p, vp, m, s, c) for c in range(vp))
        ref = sum(in_flight_interleaved(p, vp, m, s, c) for c in range(vp))
        assert ours == (ref + 1 if s == 0 else ref)


def test_fp8_linear_weight_cache_two_bytes_per_linear_weight() -> None:
    """Dense toy, TP 1: every weight but the norms is a TE linear; embedding and head are not."""
    run = synthetic_run(model=SYNTHETIC_DENSE_MODEL, profile="megatron", parallel={"tp": 1, "pp": 1, "dp": 2, "ep": 1})
    bf16 = estimator.estimate_memory(estimator.load_config(run)).stages[0]
    fp8 = estimator.estimate_memory(estimator.load_config({**run, "precision": {"fp8_linear": True}})).stages[0]
    model = estimator.load_config(run).model
    linear = sum(layer_params(model, i).non_expert - layer_params(model, i).norm for i in range(4))
    assert fp8.components["params"] - bf16.components["params"] == pytest.approx(2 * linear / MIB)
    assert fp8.components["grads"] == bf16.components["grads"]
    sapp = synthetic_run(model=SYNTHETIC_DENSE_MODEL, parallel={"tp": 1, "pp": 1, "dp": 2, "ep": 1})
    a = estimator.estimate_memory(estimator.load_config(sapp)).peak_mb
    b = estimator.estimate_memory(estimator.load_config({**sapp, "precision": {"fp8_linear": True}})).peak_mb
    assert a == b  # the reference profile has no such term
