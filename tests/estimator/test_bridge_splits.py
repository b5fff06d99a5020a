"""Megatron-Bridge recipe pipeline splits (estimator.experiments.bridge_splits) and the documented row
corrections (estimator.experiments.row_corrections). Hand-computed splits on synthetic rows; the
published Bridge rows only for the off-switch (bit-identical configs wherever nothing is filled in)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

import estimator
from estimator.config.errors import ConfigError
from estimator.experiments import bridge_splits, row_corrections
from estimator.experiments.measured import config_from_measured_row
from estimator.inputs.pipeline_split import decoder_layers_per_virtual_stage, expand_layout, parse_layout

BRIDGE = bridge_splits.BRIDGE_SOURCE


def _config(pp: int, vpp: int, num_layers: int, mtp: int = 0, **parallel: Any) -> dict[str, Any]:
    return {"model": {"num_layers": num_layers, "mtp_layers": mtp, "source_facts": {}, "assumed": {}},
            "parallel": {"pp": pp, "vpp": vpp, **parallel}}


def _row(model_name: str, notes: str = "recipe layout matches table", mtp: str = "") -> dict[str, str]:
    """A synthetic Bridge row: only the cells the split reads."""
    return {"source_id": BRIDGE, "model_name": model_name, "notes": notes, "mtp_layers": mtp}


@pytest.mark.parametrize(("name", "family"), [
    ("DeepSeek-V3 (w/o MTP)", "deepseek-v3"), ("DeepSeek-V3", "deepseek-v3"), ("Llama3.1 405B", "llama3.1 405b"),
    ("Qwen3 235B-A22B (tokendrop)", "qwen3 235b-a22b"), ("Llama3 70B", None), ("Kimi K2", "kimi k2"),
])
def test_family_of_model_names(name: str, family: str | None) -> None:
    found = bridge_splits.family_of(name)
    assert (found.names[0] if found else None) == family


@pytest.mark.parametrize(("pp", "vpp", "expected"), [
    (8, 8, [1] + [2] * 62 + [1]),   # 126 + E + L = 128 slots / 64 virtual stages = 2
    (16, 4, [1] + [2] * 62 + [1]),
    (8, 2, [7] + [8] * 14 + [7]),   # 128 / 16 = 8
])
def test_llama_405b_accounts_for_embedding_and_loss(pp: int, vpp: int, expected: list[int]) -> None:
    config = _config(pp, vpp, 126)
    bridge_splits.apply_bridge_split(_row("Llama3.1 405B"), config)
    p = config["parallel"]
    assert p["account_for_embedding_in_pipeline_split"] and p["account_for_loss_in_pipeline_split"]
    assert "llama31_405b.py" in config["model"]["source_facts"]["parallel.account_for_loss_in_pipeline_split"]
    split = decoder_layers_per_virtual_stage(estimator.load_config(_full(config)).parallel, 126)
    assert split == expected and sum(split) == 126
    # any Megatron-Bridge table (another hardware's): the family's split; another framework's source: none
    other = _config(pp, vpp, 126)
    bridge_splits.apply_bridge_split({**_row("Llama3.1 405B"), "source_id": "mbridge_perf_summary_h100"}, other)
    assert other["parallel"]["account_for_loss_in_pipeline_split"]
    foreign = _config(pp, vpp, 126)
    bridge_splits.apply_bridge_split({**_row("Llama3.1 405B"), "source_id": "torchtitan_llama3"}, foreign)
    assert "account_for_loss_in_pipeline_split" not in foreign["parallel"]


def test_qwen3_235b_by_hand() -> None:
    """94 + 2 = 96 slots over pp 8 · vpp 2 = 16 virtual stages: 6 each, 5 on the first and the last."""
    config = _config(8, 2, 94)
    bridge_splits.apply_bridge_split(_row("Qwen3 235B-A22B"), config)
    split = decoder_layers_per_virtual_stage(estimator.load_config(_full(config)).parallel, 94)
    assert split == [5] + [6] * 14 + [5]


@pytest.mark.parametrize(("stages", "mtp", "bridge_text"), [
    (16, 1, "Et*4|(t*4|)*14tmL"),   # the 26.x notes' pp_layout item (Bridge layout_map (4,4)/(8,2)/(16,1))
    (32, 1, "Et|(tt|)*30mL"),       # the perf scripts' explicit 32-stage layout
    (8, 0, "Et*8|(t*8|)*6t*5L"),    # (8,1)/(4,2) without MTP
    (4, 1, "Et*16|t*16|t*16|t*13mL"),
])
def test_deepseek_layouts_equal_the_recipe_strings(stages: int, mtp: int, bridge_text: str) -> None:
    per_stage = bridge_splits.FAMILIES[2].layouts[stages]
    assert sum(per_stage) == 61 and len(per_stage) == stages
    assert bridge_splits.layout_string(per_stage, mtp) == expand_layout(bridge_text)


@pytest.mark.parametrize(("pp", "vpp"), [(4, 4), (8, 2), (16, 1), (2, 8), (2, 4), (8, 4), (4, 8), (4, 1)])
def test_deepseek_any_pp_vpp_of_a_known_stage_count_loads(pp: int, vpp: int) -> None:
    config = _config(pp, vpp, 61, mtp=1)
    bridge_splits.apply_bridge_split(_row("DeepSeek-V3", notes="release x"), config)
    layout = config["parallel"]["pipeline_layout"]
    assert len(parse_layout(layout)) == pp * vpp and layout.endswith("mL")
    assert "pipeline_layout" in config["model"]["assumed"]  # not the release's preset: an assumption, said so
    cfg = estimator.load_config(_full(config))
    assert sum(decoder_layers_per_virtual_stage(cfg.parallel, 61)) == 61


def test_kimi_k2_layout_has_no_mtp_and_no_32_stage_entry() -> None:
    config = _config(2, 8, 61)
    bridge_splits.apply_bridge_split(_row("Kimi K2"), config)
    assert config["parallel"]["pipeline_layout"] == bridge_splits.layout_string(bridge_splits.FAMILIES[2].layouts[16], 0)
    wide = _config(8, 4, 61)
    bridge_splits.apply_bridge_split(_row("Kimi K2"), wide)
    assert "pipeline_layout" not in wide["parallel"]  # the Kimi recipe has no 32-stage layout


def test_deepseek_mtp_from_the_run_script_item_and_unknown_stage_count() -> None:
    config = _config(4, 4, 61)
    notes = "run_script.py deepseek branch for gb200: use_tokendrop default=true, mtp_num_layers=1 (base recipe)"
    bridge_splits.apply_bridge_split(_row("DeepSeek-V3 (tokendrop)", notes=notes), config)
    assert config["model"]["mtp_layers"] == 1 and config["parallel"]["pipeline_layout"].endswith("tmL")
    odd = _config(3, 2, 61)  # 6 virtual stages: no recipe layout, nothing set (the estimator refuses the row)
    bridge_splits.apply_bridge_split(_row("DeepSeek-V3"), odd)
    assert "pipeline_layout" not in odd["parallel"]


def test_a_split_from_the_notes_wins_and_the_switch_is_off() -> None:
    stated = _config(4, 4, 61, pipeline_layout="Et*4|(t*4|)*14tmL")
    before = repr(stated)
    bridge_splits.apply_bridge_split(_row("DeepSeek-V3"), stated)
    assert repr(stated) == before
    off = _config(8, 8, 126)
    bridge_splits.apply_bridge_split(_row("Llama3.1 405B"), off, enabled=False)
    assert "account_for_embedding_in_pipeline_split" not in off["parallel"]
    other = _config(8, 8, 126)  # another source: untouched
    bridge_splits.apply_bridge_split({**_row("Llama3.1 405B"), "source_id": "megatron_ci"}, other)
    assert "account_for_embedding_in_pipeline_split" not in other["parallel"]


def _full(config: dict[str, Any]) -> dict[str, Any]:
    """A loadable config around a synthetic parallel section (hand-checked model dims)."""
    n = config["model"]["num_layers"]
    model: dict[str, Any] = {"name": "synthetic", "num_layers": n, "hidden_size": 1024, "num_attention_heads": 8,
                             "ffn_hidden_size": 4096, "vocab_size": 32000, "mtp_layers": config["model"]["mtp_layers"]}
    parallel = {"tp": 1, "dp": 1, "schedule": "interleaved" if config["parallel"]["vpp"] > 1 else "1f1b",
                **config["parallel"]}
    return {"model": model, "parallel": parallel, "hardware": {"preset": "h100-80g"},
            "train": {"seq_length": 1024, "micro_batch_size": 1, "num_micro_batches": 64}}


def _bridge_rows(measured_dir: Path) -> list[dict[str, str]]:
    with (measured_dir / "step_time_cases.csv").open(newline="", encoding="utf-8") as f:
        return [r for r in csv.DictReader(f) if r["source_id"] == BRIDGE]


def test_off_switch_bit_identical_on_every_bridge_row(measured_dir: Path) -> None:
    """Rows the table does not fill give the very same config; the rows it fills were refused without it."""
    filled = 0
    for row in _bridge_rows(measured_dir):
        try:
            on = config_from_measured_row(row)
        except ConfigError:
            continue  # refused from its columns (not modelled architecture): the same with or without
        off = config_from_measured_row(row, recipe_splits=False)
        if on == off:
            continue
        filled += 1
        with pytest.raises(ConfigError):
            estimator.load_config(off)
        estimator.load_config(on)
    assert filled == 13


def test_ep_correction_recorded_and_switchable(measured_dir: Path) -> None:
    case = next(iter(row_corrections.CORRECTIONS))
    row = next(r for r in _bridge_rows(measured_dir) if r["case_id"] == case)
    assert (row["ep"], row["pp"], row["world_size"]) == ("64", "8", "256")  # as published
    on = config_from_measured_row(row)
    assert on["parallel"]["ep"] == 32 and "Megatron-Core" in on["model"]["assumed"]["correction parallel.ep"]
    with pytest.raises(ConfigError) as err:
        estimator.load_config(config_from_measured_row(row, recipe_splits=False))
    assert err.value.field == "parallel.ep"
    estimator.load_config(on)
