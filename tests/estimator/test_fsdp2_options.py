"""FSDP2 options (synthetic dense run): Float8 all-gather halves the unsharded linear weights;
torch.compile and Float8 linears alone change no memory term (estimator.memory.fsdp2)."""

from __future__ import annotations

import pytest

import estimator
from estimator.inputs.params import layer_params
from estimator.memory import fsdp2
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, synthetic_run

MIB = 2**20


def _fsdp2(dp: int = 4, precision: dict | None = None, options: dict | None = None) -> estimator.EstimatorConfig:
    run = synthetic_run(model=SYNTHETIC_DENSE_MODEL, profile="fsdp2", parallel={"tp": 1, "pp": 1, "dp": dp, "ep": 1},
                        recompute={"mode": "selective", "selective_ac_option": "op"})
    run["precision"] = {**run.get("precision", {}), **(precision or {})}
    run["options"] = {**run.get("options", {}), **(options or {})}
    return estimator.load_config(run)


def _components(cfg: estimator.EstimatorConfig) -> list[dict[str, float]]:
    return [dict(s.components, reserved=s.reserved_mb) for s in estimator.estimate_memory(cfg).stages]


def test_float8_all_gather_counts_linear_weights_at_one_byte() -> None:
    """Last block unsharded at the loss-backward peak: linear weights 1 B instead of 2, norms stay 2 B."""
    base = _fsdp2(precision={"fp8_linear": True})
    f8 = _fsdp2(precision={"fp8_linear": True, "fsdp_float8_all_gather": True})
    last = base.model.num_layers - 1
    lp = layer_params(base.model, last)
    linear = lp.non_expert - lp.norm  # tp 1, dense: every weight but the two norms
    assert fsdp2.unsharded_layer_bytes(base, last) == lp.non_expert * 2
    assert fsdp2.unsharded_layer_bytes(f8, last) == linear * 1 + lp.norm * 2
    before = estimator.estimate_memory(base).stages[0].components["other"]
    after = estimator.estimate_memory(f8).stages[0].components["other"]
    assert before - after == pytest.approx(linear * 1 / MIB)


def test_float8_all_gather_needs_fsdp_sharding() -> None:
    """torchtitan enables it only with dp_shard > 1: at dp 1 nothing changes."""
    assert _components(_fsdp2(dp=1, precision={"fp8_linear": True, "fsdp_float8_all_gather": True})) == \
        _components(_fsdp2(dp=1, precision={"fp8_linear": True}))


def test_float8_all_gather_without_float8_is_a_config_error() -> None:
    with pytest.raises(estimator.ConfigError) as info:
        _fsdp2(precision={"fsdp_float8_all_gather": True})
    assert info.value.field == "precision.fsdp_float8_all_gather"
    assert "valid example" in str(info.value)


@pytest.mark.parametrize(("precision", "options"), [
    ({}, {"torch_compile": True}),
    ({"fp8_linear": True}, {}),
    ({"fp8_linear": True}, {"torch_compile": True}),
])
def test_no_memory_effect_modelled(precision: dict, options: dict) -> None:
    """torch.compile and Float8 linears alone: every component and the reserve identical (reasons in
    fsdp2.TORCH_COMPILE_MEMORY / FLOAT8_LINEAR_MEMORY)."""
    assert fsdp2.TORCH_COMPILE_MEMORY.startswith("none modelled")
    assert fsdp2.FLOAT8_LINEAR_MEMORY.startswith("none modelled")
    assert _components(_fsdp2(precision=precision, options=options)) == _components(_fsdp2())
