"""Megatron-Bridge facts the rows leave empty (``estimator.experiments.bridge_facts``): provider dropout, benchmark grads.

Rows are synthetic (written here); the real-data check reads the shared Bridge rows in place and skips without them.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from estimator.experiments import bridge_facts
from estimator.experiments.measured import config_from_measured_row, source_facts

BRIDGE = "mbridge_perf_summary_blackwell"


@pytest.mark.parametrize("name", ["Llama3.1 405B", "DeepSeek-V3 (w/o MTP)", "Moonlight-16B-A3B", "Kimi K2",
                                  "Qwen3 235B-A22B", "GPT-OSS 120B", "Nemotron-3 Super 120B-A12B",
                                  "Nemotron-3.5 Lightning 30B-A3B"])
def test_every_bridge_family_of_the_rows_sets_dropout_zero(name: str) -> None:
    facts = source_facts({"source_id": BRIDGE, "model_name": name})
    assert facts["train.hidden_dropout"][0] == 0.0 and facts["train.attention_dropout"][0] == 0.0
    assert "Megatron-Bridge@21b02e0cfb" in facts["train.hidden_dropout"][1]


def test_other_families_and_sources_state_nothing() -> None:
    assert bridge_facts.provider_facts({"model_name": "Mixtral 8x7B"}) == {}
    assert "train.hidden_dropout" not in source_facts({"source_id": "torchtitan_llama3_h100_202412",
                                                       "model_name": "Llama 3.1 8B"})
    assert "train.hidden_dropout" not in source_facts({"source_id": BRIDGE, "model_name": "Llama3 70B"},
                                                      bridge=False)


def test_rows_take_the_fact_unless_the_row_rules_are_off(measured_dir: Path) -> None:
    rows = [r for r in csv.DictReader((measured_dir / "step_time_cases.csv").open(encoding="utf-8"))
            if r["source_id"] == BRIDGE and r["model_name"] == "Llama3 70B"]
    assert rows
    on, off = config_from_measured_row(rows[0]), config_from_measured_row(rows[0], row_rules=False)
    assert on["train"]["hidden_dropout"] == 0.0 and on["train"]["attention_dropout"] == 0.0
    assert "train.hidden_dropout" in on["model"]["source_facts"]
    assert "hidden_dropout" not in off["train"] and "train.hidden_dropout" not in off["model"]["source_facts"]


def test_benchmark_rows_keep_bf16_main_grads_unless_a_column_states_them() -> None:
    facts = source_facts({"source_id": BRIDGE, "model_name": "Llama3 70B"})
    value, citation = facts["precision.grads"]
    assert value == "bf16" and "grad_reduce_in_fp32 = False" in citation
    # another hardware's performance table is the same scripts; the Moonlight study is not a benchmark table
    assert "precision.grads" in source_facts({"source_id": "mbridge_perf_summary_h100", "model_name": "x"})
    assert "precision.grads" not in source_facts({"source_id": "mbridge_recompute_moonlight", "model_name": "x"})
    assert bridge_facts.benchmark_facts({"source_id": "megatron_ci"}) == {}


def test_benchmark_grads_in_the_config(measured_dir: Path) -> None:
    rows = [r for r in csv.DictReader((measured_dir / "step_time_cases.csv").open(encoding="utf-8"))
            if r["source_id"] == BRIDGE and r["model_name"] == "Llama3.1 405B"]
    on, off = config_from_measured_row(rows[0]), config_from_measured_row(rows[0], row_rules=False)
    assert on["precision"]["grads"] == "bf16" and "grads" not in off["precision"]
    stated = config_from_measured_row({**rows[0], "grad_dtype": "fp32"})
    assert stated["precision"]["grads"] == "fp32" and "precision.grads" not in stated["model"]["source_facts"]


@pytest.mark.parametrize(("name", "loss"), [("Llama3.1 405B", "te"), ("Nemotron-3 Super 120B-A12B", "te"),
                                            ("Nemotron-3 Ultra 550B-A55B", "native")])
def test_benchmark_rows_run_the_recipes_cross_entropy(name: str, loss: str) -> None:
    value, citation = source_facts({"source_id": BRIDGE, "model_name": name})["train.cross_entropy_fusion"]
    assert value == loss and "Megatron-Bridge" in citation


def test_megatron_fsdp_rows_may_fuse_the_loss() -> None:
    """Megatron-FSDP runs Megatron's model and loss, so the fused cross entropy is allowed there; torch's FSDP2 has
    no such path (synthetic config)."""
    import estimator
    from estimator.config.errors import ConfigError

    base = {"profile": "fsdp2", "model": {"ref": "models/llama3-8b.yaml"}, "hardware": "b200",
            "parallel": {"dp": 8, "distributed_optimizer": True},
            "train": {"seq_length": 8192, "micro_batch_size": 1, "num_micro_batches": 1, "cross_entropy_fusion": "te"}}
    cfg = estimator.load_config({**base, "parallel": {**base["parallel"], "fsdp_implementation": "megatron"}})
    assert cfg.train.cross_entropy_fusion == "te"
    with pytest.raises(ConfigError, match="without Megatron-FSDP"):
        estimator.load_config(base)
