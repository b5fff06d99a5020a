"""Config schema, loading, overrides, includes and errors (spec §3, §5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import estimator
from estimator.config import presets
from estimator.config.schema import OptionsConfig, apply_overrides, parse_override
from estimator.inputs.hardware import PRESETS, preset
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, synthetic_run


def test_dict_config_loads_and_is_frozen() -> None:
    cfg = estimator.load_config(synthetic_run())
    assert cfg.parallel.tp == 1 and cfg.hardware.name == "h100-80g"
    with pytest.raises(Exception):  # noqa: B017 - pydantic frozen instance error
        cfg.parallel = cfg.parallel  # type: ignore[misc]


def test_option_defaults_are_the_seeds() -> None:
    opts = OptionsConfig()
    assert opts.safety_buffer_mb == 1024
    assert opts.tp_scaled_buffers is True
    assert opts.tp_shardable_overhead_mb is None  # profile default (2676 under sapp-nd)
    assert opts.ep_bubble_overlap_ratio == 1.0
    assert opts.ep_comm_overlap == 0.0
    assert opts.convert_ep_comm_to_time is True
    assert opts.dp_comm_zero_hack is False and opts.tp_comm_half_hack is False
    assert opts.perf_mode == "time"
    assert opts.compute_efficiency == 1.0 and opts.part_coefficients is None


def test_presets_are_plain_dicts_and_valid_options() -> None:
    legacy, fixed = presets.legacy(), presets.fixed()
    assert legacy["tp_scaled_buffers"] is False and legacy["tp_shardable_overhead_mb"] == 0
    assert legacy["ep_bubble_overlap_ratio"] == 0 and legacy["convert_ep_comm_to_time"] is False
    assert legacy["dp_comm_zero_hack"] and legacy["tp_comm_half_hack"]
    assert "expert_zero3_sharding" not in legacy and "expert_zero3_sharding" not in fixed
    assert OptionsConfig(**fixed) == OptionsConfig()  # fixed() = the defaults
    OptionsConfig(**legacy)


def test_yaml_with_model_ref_and_overrides(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "m.yaml").write_text(
        "model:\n" + "".join(f"  {k}: {v}\n" for k, v in SYNTHETIC_DENSE_MODEL.items())
    )
    run = tmp_path / "run.yaml"
    run.write_text(
        "profile: megatron\n"
        "model: {ref: models/m.yaml, num_layers: 8}\n"
        "train: {seq_length: 64, micro_batch_size: 1, global_batch_size: 8}\n"
        "parallel: {tp: 2, pp: 2, dp: 2}\n"
        "hardware: {preset: a100-80g, devices: 8}\n"
    )
    cfg = estimator.load_config(run, ["parallel.tp=4", "parallel.dp=1", "options.safety_buffer_mb=0"])
    assert cfg.model.num_layers == 8 and cfg.model.norm == "layernorm"
    assert cfg.parallel.tp == 4 and cfg.options.safety_buffer_mb == 0
    assert cfg.num_micro_batches == 8  # GBS 8 / (MBS 1 · DP 1)
    assert cfg.hardware.devices == 8 and cfg.hardware.hbm_gib == 80


def test_bundled_model_ref_resolves_from_anywhere(tmp_path: Path) -> None:
    run = synthetic_run(model={"ref": "models/megatron-ci-gpt3-7b.yaml"})
    cfg = estimator.load_config(run, {"parallel.ep": 1}, base_dir=tmp_path)
    assert cfg.model.hidden_size == 4096 and cfg.model.position_embedding == "learned"


def test_override_parsing() -> None:
    assert parse_override("parallel.tp=2") == ("parallel.tp", 2)
    assert parse_override("options.tp_scaled_buffers=false") == ("options.tp_scaled_buffers", False)
    data = apply_overrides({"hardware": "h100-80g"}, ["hardware.devices=8"])
    assert data["hardware"] == {"preset": "h100-80g", "devices": 8}


def test_hardware_presets_complete() -> None:
    assert set(PRESETS) == {"ascend-910b", "ascend-910c", "a100-80g", "h100-80g", "h100-sxm-96g-hbm2e", "h200", "b200",
                            "b300", "gb200-nvl72", "gb300-nvl72", "vr200-nvl72", "a100-40g", "a100-pcie", "a800", "h100-pcie",
                            "h100-nvl", "h800"}
    for name in PRESETS:
        spec = preset(name)
        assert spec.levels[-1].max_devices is None
        assert spec.peak_tflops["bf16"] > 0 and spec.provenance
    assert preset("a2").name == "ascend-910b" and preset("A3").name == "ascend-910c"


def test_inline_hardware_mapping() -> None:
    hw = {
        "name": "lab-gpu", "hbm_gib": 24, "peak_tflops": {"bf16": 100}, "devices_per_node": 4,
        "levels": [{"name": "pcie", "max_devices": 4, "bandwidth_gb_s": 16}, {"name": "eth", "bandwidth_gb_s": 1}],
    }
    cfg = estimator.load_config(synthetic_run(hardware=hw))
    assert cfg.hardware.hbm_mb == 24 * 1024


# ---- invalid configs: ConfigError names the field and the rule -------------------------------


@pytest.mark.parametrize(
    ("sections", "field", "rule_part"),
    [
        ({"parallel": {"tp": 3, "dp": 4}}, "parallel.tp", "must divide model.num_attention_heads"),
        ({"parallel": {"ep": 3, "dp": 6}}, "parallel.ep", "must divide model.num_experts"),
        ({"hardware": {"preset": "h100-80g", "devices": 16}}, "parallel", "does not match hardware.devices"),
        ({"options": {"safety_buffer_mb": -1}}, "options.safety_buffer_mb", "greater than or equal to 0"),
        ({"options": {"ep_bubble_overlap_ratio": 1.5}}, "options.ep_bubble_overlap_ratio", "less than or equal to 1"),
        ({"parallel": {"pp": 3}}, "parallel.pp", "must split evenly"),
        ({"parallel": {"ep": 8, "dp": 4}}, "parallel.ep", "ep·etp must divide dp·tp·cp"),
        ({"parallel": {"schedule": "zero_bubble_v"}}, "parallel.vpp", "must be 2"),
        ({"recompute": {"per_stage": ["full"]}}, "recompute.per_stage", "one entry per pipeline stage"),
        ({"hardware": "h100"}, None, None),  # alias is valid
    ],
)
def test_invalid_configs_name_field_and_rule(sections: dict, field: str | None, rule_part: str | None) -> None:
    if field is None:
        estimator.load_config(synthetic_run(**sections))
        return
    with pytest.raises(estimator.ConfigError) as info:
        estimator.load_config(synthetic_run(**sections))
    assert info.value.field == field
    assert rule_part in info.value.rule
    assert field in str(info.value)


def test_unknown_field_did_you_mean_with_file_and_line(tmp_path: Path) -> None:
    run = tmp_path / "run.yaml"
    run.write_text(
        "profile: sapp-nd\n"
        "model: {ref: models/deepseek-v3-mini.yaml}\n"
        "train: {seq_length: 128}\n"
        "parallel:\n"
        "  tp: 1\n"
        "  pp: 2\n"
        "  dp: 16\n"
        "  ep: 2\n"
        "  expert_zero3_shardng: false\n"
        "hardware: ascend-910b\n"
    )
    with pytest.raises(estimator.ConfigError) as info:
        estimator.load_config(run)
    err = info.value
    assert err.field == "parallel.expert_zero3_shardng"
    assert err.rule == "unknown field"
    assert err.hint == "did you mean 'expert_zero3_sharding'?"
    assert err.file == str(run) and err.line == 9
    assert str(err).startswith(f"{run}:9: parallel.expert_zero3_shardng: unknown field")


def test_unknown_top_level_and_hardware_preset() -> None:
    with pytest.raises(estimator.ConfigError) as info:
        estimator.load_config({**synthetic_run(), "optoins": {}})
    assert info.value.field == "optoins" and info.value.hint == "did you mean 'options'?"
    with pytest.raises(estimator.ConfigError) as info:
        estimator.load_config(synthetic_run(hardware="h100-80gb"))
    assert info.value.field == "hardware" and "did you mean 'h100-80g'" in info.value.rule
    with pytest.raises(estimator.ConfigError) as info:  # a mapping naming no preset (was: "hardware.name missing")
        estimator.load_config(synthetic_run(hardware={"preset": "h100-80gb", "devices": 8}))
    assert info.value.field == "hardware.preset" and "did you mean 'h100-80g'" in info.value.rule


def test_missing_model_ref_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(estimator.ConfigError) as info:
        estimator.load_config(synthetic_run(model={"ref": "models/nope.yaml"}), base_dir=tmp_path)
    assert info.value.field == "model.ref"
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [unclosed\n")
    with pytest.raises(estimator.ConfigError) as info:
        estimator.load_config(bad)
    assert info.value.file == str(bad) and "invalid YAML" in info.value.rule


def test_part_coefficients_keys_checked() -> None:
    estimator.load_config(synthetic_run(options={"part_coefficients": {"BUBBLE": 1.2}}))
    with pytest.raises(estimator.ConfigError) as info:
        estimator.load_config(synthetic_run(options={"part_coefficients": {"BUBLE": 1.2}}))
    assert info.value.field == "options.part_coefficients.BUBLE" and "BUBBLE" in info.value.rule


def test_error_in_referenced_model_names_that_file(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(
        "model:\n" + "".join(f"  {k}: {v}\n" for k, v in SYNTHETIC_DENSE_MODEL.items()) + "  hiden_size: 3\n"
    )
    run = tmp_path / "run.yaml"
    run.write_text("model: {ref: m.yaml}\ntrain: {seq_length: 64}\nhardware: h100-80g\n")
    with pytest.raises(estimator.ConfigError) as info:
        estimator.load_config(run)
    err = info.value
    assert err.field == "model.hiden_size" and err.hint == "did you mean 'hidden_size'?"
    assert err.file == str(tmp_path / "m.yaml") and err.line == len(SYNTHETIC_DENSE_MODEL) + 2


def test_megatron_expert_groups_need_ep_dividing_dp_cp() -> None:
    run = synthetic_run(profile="megatron", parallel={"tp": 4, "dp": 2, "ep": 4})
    estimator.load_config({**run, "profile": "sapp-nd"})  # the reference's t_exp fallback accepts it
    with pytest.raises(estimator.ConfigError) as info:
        estimator.load_config(run)
    assert info.value.field == "parallel.ep" and "etp defaults to tp" in info.value.rule
    estimator.load_config(synthetic_run(profile="megatron", parallel={"tp": 4, "dp": 2, "ep": 4, "etp": 1}))



def test_megatron_moe_with_tp_but_no_sequence_parallel_is_stated() -> None:
    """Megatron-Core's MoELayer.forward raises in training with TP > 1 and no sequence parallelism: the
    layout is priced as given and says so (the CLI's notes, both reports' warnings); sequence parallelism on,
    tp = 1 or the seed's profile state nothing (synthetic MoE model)."""
    from estimator.config.rules import stated_rules

    def notes(**sections: Any) -> tuple[list[str], list[str], tuple[str, ...]]:
        cfg = estimator.load_config(synthetic_run(**sections))
        return stated_rules(cfg), estimator.estimate_perf(cfg).warnings, estimator.estimate_memory(cfg).warnings

    layout = {"tp": 2, "pp": 2, "dp": 2, "ep": 2}
    stated, perf, memory = notes(profile="megatron", parallel=layout)
    assert len(stated) == 1 and stated[0].startswith("rule moe-tp-needs-sp: parallel.tp 2")
    assert "MoELayer.forward" in stated[0] and stated[0] in perf and stated[0] in memory
    for quiet in ({"profile": "megatron", "parallel": {**layout, "sequence_parallel": True}},
                  {"profile": "megatron", "parallel": {"tp": 1, "pp": 2, "dp": 4, "ep": 2}},
                  {"parallel": layout}):
        assert not any("moe-tp-needs-sp" in n for group in notes(**quiet) for n in group), quiet
