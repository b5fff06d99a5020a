"""``config_from_measured_row``: mapping of the shared measured CSV columns (synthetic rows)."""

from __future__ import annotations

import pytest

import estimator
from estimator.experiments.measured import config_from_measured_row, hardware_preset

SYNTHETIC_ROW = {
    "case_id": "synthetic", "model_name": "synthetic", "arch": "moe", "num_layers": "4", "num_dense_layers": "1",
    "hidden_size": "64", "ffn_hidden_size": "256", "num_attention_heads": "8", "num_kv_heads": "8",
    "attention": "mha", "num_experts": "8", "moe_topk": "2", "num_shared_experts": "1",
    "moe_ffn_hidden_size": "32", "vocab_size": "1000", "tied_embeddings": "", "activation": "swiglu",
    "norm": "rmsnorm", "seq_length": "128", "micro_batch_size": "1", "global_batch_size": "8",
    "num_micro_batches": "", "world_size": "8", "tp": "1", "pp": "2", "vpp": "1", "dp": "4", "cp": "1",
    "ep": "2", "etp": "", "sequence_parallel": "false", "distributed_optimizer": "true", "recompute": "selective",
    "recompute_modules": "core_attention,moe_act", "flash_attention": "auto", "precision": "bf16",
    "grad_dtype": "fp32", "optimizer": "adam", "hardware": "H100 80GB (8x)", "notes": "",
}


def test_synthetic_row_maps_to_valid_config() -> None:
    data = config_from_measured_row(SYNTHETIC_ROW)
    cfg = estimator.load_config(data)
    assert cfg.profile == "megatron" and cfg.hardware.name == "h100-80g" and cfg.hardware.devices == 8
    assert cfg.recompute.modules == ["core_attn", "moe_act"]
    assert cfg.num_micro_batches == 2  # 8 / (1 · 4)
    assert cfg.model.assumed == {"tied_embeddings": data["model"]["assumed"]["tied_embeddings"]}


@pytest.mark.parametrize(
    ("column", "value"),
    [("tp", "two"), ("hidden_size", ""), ("hardware", "TPU v5"), ("activation", "relu"), ("recompute", "some")],
)
def test_bad_cells_name_the_column(column: str, value: str) -> None:
    with pytest.raises(estimator.ConfigError) as info:
        config_from_measured_row({**SYNTHETIC_ROW, column: value})
    assert info.value.field == column


def test_hardware_text_mapping() -> None:
    assert hardware_preset("B200 (8x, one node)") == "b200"
    assert hardware_preset("A100 (8 per node)") == "a100-80g"
    assert hardware_preset("H100 (CI platform dgx_h100)") == "h100-80g"


def test_fsdp_selects_fsdp2_profile() -> None:
    data = config_from_measured_row({**SYNTHETIC_ROW, "distributed_optimizer": "fsdp"})
    assert data["profile"] == "fsdp2"


def test_fsdp_recipe_item_with_an_empty_column_selects_fsdp() -> None:
    """Synthetic row: the ``distributed_optimizer`` column is empty and the notes' recipe item says
    ``fsdp=true(optim_grads_params)`` (as the Nemotron-3 Ultra Bridge rows): the row reads as FSDP (profile
    ``fsdp2``) and says why; ``row_rules=False`` keeps the column's default; a table stating ``FSDP column = 0``
    (the 25.11 Llama 3.1 405B rows, whose recipe differs from the published layout) ran DDP."""
    row = {**SYNTHETIC_ROW, "distributed_optimizer": "", "notes": "x | fsdp=true(optim_grads_params) | y"}
    data = config_from_measured_row(row)
    assert data["profile"] == "fsdp2"
    assert "fsdp=true" in data["model"]["assumed"]["distributed_optimizer"]
    assert config_from_measured_row(row, row_rules=False)["profile"] == "megatron"
    unset = config_from_measured_row({**row, "notes": "x | fsdp=unset | y"})
    assert unset["profile"] == "megatron"
    ddp = config_from_measured_row({**row, "notes": "FSDP column = 0 (Bridge nomenclature) | fsdp=true(optim_grads_params)"})
    assert ddp["profile"] == "megatron"
