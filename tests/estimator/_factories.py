"""Synthetic config dicts for unit tests (small toy models; not measurements)."""

from __future__ import annotations

import copy
from typing import Any

#: synthetic toy MoE model: 4 layers (1 dense + 3 MoE), 8 experts, MHA
SYNTHETIC_MOE_MODEL: dict[str, Any] = {
    "name": "synthetic-moe",
    "num_layers": 4,
    "num_dense_layers": 1,
    "hidden_size": 64,
    "ffn_hidden_size": 256,
    "num_attention_heads": 8,
    "num_kv_heads": 8,
    "attention": "mha",
    "num_experts": 8,
    "moe_topk": 2,
    "num_shared_experts": 1,
    "moe_ffn_hidden_size": 32,
    "vocab_size": 1000,
    "activation": "swiglu",
    "norm": "rmsnorm",
}

#: synthetic toy dense model
SYNTHETIC_DENSE_MODEL: dict[str, Any] = {
    "name": "synthetic-dense",
    "num_layers": 4,
    "hidden_size": 64,
    "ffn_hidden_size": 256,
    "num_attention_heads": 8,
    "num_kv_heads": 4,
    "attention": "gqa",
    "num_experts": 0,
    "vocab_size": 1000,
    "activation": "gelu",
    "norm": "layernorm",
}


def synthetic_run(model: dict[str, Any] | None = None, **sections: Any) -> dict[str, Any]:
    """A valid synthetic run dict; ``sections`` update top-level sections (dicts are merged)."""
    run: dict[str, Any] = {
        "profile": "sapp-nd",
        "model": copy.deepcopy(model or SYNTHETIC_MOE_MODEL),
        "train": {"seq_length": 128, "micro_batch_size": 1, "num_micro_batches": 4},
        "parallel": {"tp": 1, "pp": 2, "dp": 4, "ep": 2},
        "hardware": "h100-80g",
    }
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(run.get(key), dict):
            run[key] = {**run[key], **value}
        else:
            run[key] = value
    return run
