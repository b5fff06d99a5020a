"""Estimator cross-field rules, each named (issue: "tp 16 with 8 KV heads or hidden 1 with 32 heads is estimated
without a word")."""

from __future__ import annotations

from pathlib import Path

import pytest

import estimator
from estimator.config.errors import ConfigError
from estimator.config.rules import RULES, stated_rules

LLAMA = Path(__file__).parents[2] / "estimator" / "examples" / "llama3-8b-h100.yaml"  # 32 heads, 8 KV heads


def test_tp_above_kv_heads_states_the_kv_replication_rule() -> None:
    cfg = estimator.load_config(LLAMA, {"parallel.tp": 16, "parallel.dp": 1, "parallel.pp": 1, "hardware.devices": 16})
    notes = stated_rules(cfg)
    assert len(notes) == 1 and notes[0].startswith("rule kv-replication") and "replicated on 2" in notes[0]


def test_tp_neither_dividing_nor_multiple_of_kv_heads_is_refused() -> None:
    with pytest.raises(ConfigError, match="tp-divides-kv-heads") as err:
        estimator.load_config(LLAMA, {"model.num_attention_heads": 24, "model.num_kv_heads": 6, "parallel.tp": 4,
                                      "parallel.dp": 1, "hardware.devices": 8})
    assert err.value.field == "parallel.tp"


def test_hidden_below_heads_is_refused() -> None:
    with pytest.raises(ConfigError, match="hidden-divisible-by-heads") as err:
        estimator.load_config(LLAMA, {"model.hidden_size": 1})
    assert err.value.field == "model.hidden_size"


def test_hidden_not_divisible_by_heads_is_stated() -> None:
    cfg = estimator.load_config(LLAMA, {"model.hidden_size": 4100})
    assert any(n.startswith("rule hidden-divisible-by-heads") for n in stated_rules(cfg))


def test_every_head_rule_is_named() -> None:
    named = {r.name for r in RULES if r.name}
    assert {"tp-divides-attention-heads", "tp-divides-kv-heads", "hidden-divisible-by-heads"} <= named
