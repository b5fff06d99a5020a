"""Dense-model invariance, memory part of INT-03: num_experts ≤ 1 ⇒ identical MemoryReport with
every option of spec §5 at legacy vs fixed values, except the safety buffer and overhead terms.

Checked two ways on synthetic dense models: all options switched at once (``presets.legacy()``
vs ``presets.fixed()``, plus ``expert_zero3_sharding``), and each option of spec §5 switched
alone. The whole report is compared (every component, layers, in-flight counts, recompute mode,
static detail, device memory, warnings); only ``safety_buffer``, ``tp_shardable_overhead`` and the
totals that contain them may differ, and the totals only by exactly those two terms.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

import estimator
from estimator.config import presets
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, synthetic_run

SWITCHED = {"safety_buffer", "tp_shardable_overhead"}

#: every option of spec §5 with its legacy and fixed value (expert_zero3_sharding is a parallel field)
SECTION5_OPTIONS: dict[str, tuple[Any, Any]] = {
    **{name: (presets.legacy()[name], presets.fixed()[name]) for name in presets.fixed()},
    "perf_mode": ("score", "time"),
}


def _report(run: dict, options: dict, zero3: bool) -> estimator.MemoryReport:
    run = {**run, "options": options, "parallel": {**run["parallel"], "expert_zero3_sharding": zero3}}
    return estimator.estimate_memory(estimator.load_config(run))


def _without_switched(report: estimator.MemoryReport) -> dict[str, Any]:
    """The report as a dict with the switched terms and the totals that include them removed."""
    doc = report.to_dict()
    for key in ("peak_mb", "peak_stage", "fits", "peak_reserved_mb"):
        doc.pop(key)
    for stage in doc["stages"]:
        stage.pop("total_mb")
        stage.pop("reserved_mb")
        for name in SWITCHED:
            stage["components"].pop(name)
    return doc


def _assert_same_but_switched(a: estimator.MemoryReport, b: estimator.MemoryReport) -> None:
    assert _without_switched(a) == _without_switched(b)
    for sa, sb in zip(a.stages, b.stages, strict=True):
        assert sa.static_detail == sb.static_detail
        assert sa.total_mb - sum(sa.components[k] for k in SWITCHED) == pytest.approx(
            sb.total_mb - sum(sb.components[k] for k in SWITCHED), abs=1e-9
        )


def _dense_run(profile: str, tp: int, pp: int, num_experts: int) -> dict:
    model = {**SYNTHETIC_DENSE_MODEL, "num_experts": num_experts}
    return synthetic_run(model=model, profile=profile, parallel={"tp": tp, "pp": pp, "dp": 2, "ep": 1})


@pytest.mark.parametrize(
    ("profile", "tp", "pp", "num_experts"),
    list(itertools.product(["sapp-nd", "megatron", "fsdp2"], [1, 2], [1, 2], [0, 1])),
)
def test_dense_model_identical_under_legacy_and_fixed(profile: str, tp: int, pp: int, num_experts: int) -> None:
    run = _dense_run(profile, tp, pp, num_experts)
    _assert_same_but_switched(_report(run, presets.legacy(), zero3=False), _report(run, presets.fixed(), zero3=True))


@pytest.mark.parametrize("option", sorted(SECTION5_OPTIONS))
@pytest.mark.parametrize("profile", ["sapp-nd", "megatron"])
def test_dense_model_identical_with_each_option_alone(option: str, profile: str) -> None:
    legacy_value, _ = SECTION5_OPTIONS[option]
    run = _dense_run(profile, tp=2, pp=2, num_experts=0)
    fixed = _report(run, presets.fixed(), zero3=True)
    switched = _report(run, {**presets.fixed(), option: legacy_value}, zero3=True)
    _assert_same_but_switched(switched, fixed)
    if option not in ("safety_buffer_mb", "tp_scaled_buffers", "tp_shardable_overhead_mb"):
        assert switched.to_dict() == fixed.to_dict()  # not a memory term at all


@pytest.mark.parametrize("profile", ["sapp-nd", "megatron", "fsdp2"])
def test_dense_model_identical_with_expert_zero3_alone(profile: str) -> None:
    run = _dense_run(profile, tp=2, pp=2, num_experts=1)
    assert _report(run, {}, zero3=True).to_dict() == _report(run, {}, zero3=False).to_dict()
