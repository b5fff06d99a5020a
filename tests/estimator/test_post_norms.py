"""Sandwich norms (``model.post_norms``, Gemma 2 / 3's post_attention_layernorm and post_feedforward_layernorm) and
the GeGLU activation, on a SYNTHETIC dense model: parameters, kernels, activations and step time by hand."""

from __future__ import annotations

from typing import Any

import pytest

import estimator
from estimator.config.schema import EstimatorConfig, load_config
from estimator.inputs.params import param_counts
from estimator.perf import kernels
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, synthetic_run


def _run(**model: Any) -> EstimatorConfig:
    return load_config(synthetic_run({**SYNTHETIC_DENSE_MODEL, **model}, profile="megatron",
                                     parallel={"tp": 1, "pp": 1, "dp": 8, "ep": 1},
                                     train={"seq_length": 256, "micro_batch_size": 2, "num_micro_batches": 2,
                                            "flash_attention": True}))


def test_two_more_norms_per_layer_by_hand() -> None:
    """4 layers, h 64, RMSNorm: +2·64 weights per layer; +2 norm kernels forward per layer; each post norm keeps
    its input T·h·B = 512·64·2 B per layer."""
    plain, sandwich = _run(norm="rmsnorm"), _run(norm="rmsnorm", post_norms=True)
    assert param_counts(sandwich.model).total - param_counts(plain.model).total == 4 * 2 * 64
    a, b = (estimator.estimate_perf(c).stages[0] for c in (plain, sandwich))
    assert b.kernels_fw - a.kernels_fw == 4 * 2 * kernels.OP_KERNELS["NORM"][0]
    assert estimator.estimate_perf(sandwich).total > estimator.estimate_perf(plain).total
    mem_a, mem_b = (float(estimator.estimate_memory(c).stages[0].components["activations"]) * 2**20
                    for c in (plain, sandwich))
    assert mem_b - mem_a == pytest.approx(4 * 2 * 512 * 64 * 2)


def test_geglu_is_a_gated_mlp() -> None:
    """GeGLU has SwiGLU's three matrices: the same parameters; only the elementwise function differs."""
    assert param_counts(_run(activation="geglu").model).total == param_counts(_run(activation="swiglu").model).total


def test_post_norms_on_a_hybrid_stack_are_refused() -> None:
    run = synthetic_run({**SYNTHETIC_DENSE_MODEL, "post_norms": True, "hybrid_override_pattern": "M-M-",
                         "mamba_num_heads": 4, "mamba_head_dim": 16, "mamba_state_dim": 16, "mamba_num_groups": 1,
                         "position_embedding": "none"},
                        profile="megatron", parallel={"tp": 1, "pp": 1, "dp": 8, "ep": 1},
                        train={"seq_length": 256, "micro_batch_size": 1, "num_micro_batches": 2})
    with pytest.raises(estimator.ConfigError) as info:
        load_config(run)
    assert info.value.field == "model.post_norms"
