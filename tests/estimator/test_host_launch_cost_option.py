"""``options.host_launch_cost_us``: a measured host µs per launch overrides the profile's sourced value.

SYNTHETIC toy configs (tiny layers on an H100, the pattern of test_perf_host.py) whose kernels are so
short that the host launch bound binds; the 5 µs default is ``estimator.inputs.profiles.HOST_LAUNCH_COST``.
The device side is the raw-peak model (``operator_roofline: false``): the operator roofline adds a
sourced per-kernel latency (H100: 20 µs) that would outlast a 5 µs host launch.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

import estimator
from estimator.config import presets
from estimator.inputs.profiles import HOST_LAUNCH_COST, host_launch_cost_s
from estimator.perf.parts import host_launch_s, stage_costs
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, SYNTHETIC_MOE_MODEL

FIELD = "options.host_launch_cost_us"


def _raw(profile: str = "megatron", model: dict[str, Any] = SYNTHETIC_DENSE_MODEL, **options: Any) -> dict[str, Any]:
    """Synthetic toy config: micro batch 1, seq 128, hidden 64, so the host launch time dominates."""
    return {
        "profile": profile,
        "model": copy.deepcopy(model),
        "train": {"seq_length": 128, "micro_batch_size": 1, "num_micro_batches": 8},
        "parallel": {"tp": 2, "pp": 2, "dp": 2, "ep": 2 if model.get("num_experts") else 1},
        "recompute": {"mode": "full"},
        "hardware": {"preset": "h100-80g", "devices": 8},
        "options": {"operator_roofline": False, **options},
    }


def _cfg(profile: str = "megatron", **options: Any) -> Any:
    return estimator.load_config(_raw(profile, **options))


def _total(profile: str = "megatron", **options: Any) -> float:
    return float(estimator.estimate_perf(_cfg(profile, **options)).total)


@pytest.mark.parametrize("profile", ["megatron", "fsdp2"])
def test_default_is_the_profile_value(profile: str) -> None:
    cost = HOST_LAUNCH_COST[profile]
    assert cost is not None and cost.per_launch_us == 5.0
    cfg = _cfg(profile)
    assert cfg.options.host_launch_cost_us is None
    assert host_launch_cost_s(cfg) == pytest.approx(5e-6) and host_launch_s(cfg) == pytest.approx(5e-6)


@pytest.mark.parametrize("model", [SYNTHETIC_DENSE_MODEL, SYNTHETIC_MOE_MODEL], ids=["dense", "moe"])
def test_option_sets_the_per_launch_cost(model: dict[str, Any]) -> None:
    cfg = estimator.load_config(_raw(model=model, host_launch_cost_us=30.0))
    assert host_launch_cost_s(cfg) == pytest.approx(30e-6) and host_launch_s(cfg) == pytest.approx(30e-6)
    for s in stage_costs(cfg):
        assert s.kernels_fw > 0 and s.host_fw == pytest.approx(s.kernels_fw * 30e-6)
        assert s.host_bw == pytest.approx(s.kernels_bw * 30e-6)


def test_total_grows_with_the_option_and_the_bound_binds() -> None:
    costs_us = [0.5, 1.0, 5.0, 10.0, 30.0, 100.0]
    totals = [_total(host_launch_cost_us=c) for c in costs_us]
    assert all(b >= a for a, b in itertools.pairwise(totals)), totals
    off = _total(host_launch_overhead=False)
    # the bound binds on this toy config: on > off, and a larger per-launch cost gives a larger TOTAL
    assert totals[-2] > off and totals[-1] > totals[-2] > totals[2]
    assert _total() == pytest.approx(totals[2], rel=1e-12)  # the default is 5 µs
    # host-bound from 5 µs up (every pass = kernels × cost): TOTAL is linear in the cost there, one slope
    slopes = [(totals[j] - totals[i]) / (costs_us[j] - costs_us[i]) for i, j in ((2, 3), (3, 4), (4, 5))]
    assert slopes[0] > 0 and slopes == pytest.approx([slopes[0]] * 3, rel=1e-9)


def test_option_on_sapp_nd_gives_a_host_term() -> None:
    assert HOST_LAUNCH_COST["sapp-nd"] is None
    assert host_launch_cost_s(_cfg("sapp-nd")) == 0.0
    cfg = _cfg("sapp-nd", host_launch_cost_us=30.0)
    assert host_launch_cost_s(cfg) == pytest.approx(30e-6)
    assert all(s.host_fw > 0 and s.host_bw > 0 for s in stage_costs(cfg))
    assert _total("sapp-nd", host_launch_cost_us=30.0) > _total("sapp-nd")


@pytest.mark.parametrize("value", [0, 0.0, -1.0, -5])
def test_non_positive_value_is_a_config_error(value: float) -> None:
    with pytest.raises(estimator.ConfigError) as info:
        _cfg(host_launch_cost_us=value)
    assert info.value.field == FIELD and FIELD in str(info.value)
    assert "greater than 0" in info.value.rule


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_non_finite_value_is_a_config_error(value: float) -> None:
    with pytest.raises(estimator.ConfigError) as info:
        _cfg(host_launch_cost_us=value)
    assert info.value.field == FIELD and "finite" in info.value.rule


@pytest.mark.parametrize("options", [
    {"host_launch_overhead": False},
    {"perf_mode": "score"},
    presets.legacy(),
], ids=["off", "score", "legacy"])
def test_option_ignored_when_the_bound_is_off(options: dict[str, Any]) -> None:
    cfg = _cfg(**options, host_launch_cost_us=100.0)
    assert host_launch_s(cfg) == 0.0
    assert all(s.host_fw == s.host_bw == s.host_rec == 0.0 for s in stage_costs(cfg))
    with_option = estimator.estimate_perf(cfg)
    without = estimator.estimate_perf(_cfg(**options))
    assert with_option.real_parts == without.real_parts and with_option.perf_parts == without.perf_parts
