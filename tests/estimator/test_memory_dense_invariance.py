"""Dense-model invariance, memory part of INT-03: num_experts ≤ 1 ⇒ identical MemoryReport with
every option of spec §5 at legacy vs fixed values, except the safety buffer and overhead terms."""

from __future__ import annotations

import itertools

import pytest

import estimator
from estimator import presets
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, synthetic_run

SWITCHED = {"safety_buffer", "tp_shardable_overhead"}


def _report(run: dict, options: dict, zero3: bool) -> estimator.MemoryReport:
    run = {**run, "options": options, "parallel": {**run["parallel"], "expert_zero3_sharding": zero3}}
    return estimator.estimate_memory(estimator.load_config(run))


@pytest.mark.parametrize(
    ("profile", "tp", "pp", "num_experts"),
    list(itertools.product(["sapp-nd", "megatron", "fsdp2"], [1, 2], [1, 2], [0, 1])),
)
def test_dense_model_identical_under_legacy_and_fixed(profile: str, tp: int, pp: int, num_experts: int) -> None:
    model = {**SYNTHETIC_DENSE_MODEL, "num_experts": num_experts}
    run = synthetic_run(model=model, profile=profile, parallel={"tp": tp, "pp": pp, "dp": 2, "ep": 1})
    legacy = _report(run, presets.legacy(), zero3=False)
    fixed = _report(run, presets.fixed(), zero3=True)
    assert len(legacy.stages) == len(fixed.stages)
    for a, b in zip(legacy.stages, fixed.stages, strict=True):
        for name in a.components:
            if name not in SWITCHED:
                assert a.components[name] == b.components[name], name
        assert a.total_mb - sum(a.components[k] for k in SWITCHED) == pytest.approx(
            b.total_mb - sum(b.components[k] for k in SWITCHED), abs=1e-9
        )
