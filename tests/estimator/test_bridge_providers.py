"""Megatron-Bridge's provider dropout as a source fact (``estimator.experiments.bridge_providers``).

Rows are synthetic (written here); the real-data check reads the shared Bridge rows in place and skips without them.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from estimator.experiments import bridge_providers
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
    assert bridge_providers.provider_facts({"model_name": "Mixtral 8x7B"}) == {}
    assert "train.hidden_dropout" not in source_facts({"source_id": "torchtitan_llama3_h100_202412",
                                                       "model_name": "Llama 3.1 8B"})
    assert "train.hidden_dropout" not in source_facts({"source_id": BRIDGE, "model_name": "Llama3 70B"},
                                                      providers=False)


def test_rows_take_the_fact_unless_the_row_rules_are_off(measured_dir: Path) -> None:
    rows = [r for r in csv.DictReader((measured_dir / "step_time_cases.csv").open(encoding="utf-8"))
            if r["source_id"] == BRIDGE and r["model_name"] == "Llama3 70B"]
    assert rows
    on, off = config_from_measured_row(rows[0]), config_from_measured_row(rows[0], row_rules=False)
    assert on["train"]["hidden_dropout"] == 0.0 and on["train"]["attention_dropout"] == 0.0
    assert "train.hidden_dropout" in on["model"]["source_facts"]
    assert "hidden_dropout" not in off["train"] and "train.hidden_dropout" not in off["model"]["source_facts"]
