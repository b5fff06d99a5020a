"""Collective efficiency and latency per network level and collective kind (issue 11): the pricing
uses the factors of every level a group spans; the NVIDIA presets carry sourced values; overlays can
replace them. Expected values are computed by hand in the comments."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

import estimator
from estimator.config.errors import ConfigError
from estimator.inputs.hardware import preset
from estimator.inputs.overlay import apply_overlay, read_overlay
from estimator.perf import network
from estimator.perf.comm import Collective
from estimator.perf.network import Factors, Level
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL


def test_a_kind_uses_its_own_factors_on_a_level() -> None:
    lv = [Level(None, 100.0, 0.5, 2.0, {"all_to_all": Factors(0.2, 4.0)})]
    # all-reduce, level factors: 2·3/4·1e9 / (100e9·0.5) + 2·3·2 µs = 0.03 + 12e-6
    assert network.ring_time_s("all_reduce", 1e9, 4, 1, lv) == pytest.approx(0.030012, rel=1e-12)
    # all-to-all, its own: 3 peers × 2.5e8 / (100e9·0.2) + 3·4 µs = 0.0375 + 12e-6
    assert network.all_to_all_time_s(1e9, 4, 1, lv) == pytest.approx(0.037512, rel=1e-12)
    assert network.level_factors(lv[0], "p2p") == (0.5, 2.0)


def test_a_group_spanning_two_levels_is_priced_with_each_levels_factors() -> None:
    lv = [Level(2, 100.0, 0.5, 1.0, {"all_gather": Factors(0.8, 2.0)}),
          Level(None, 10.0, 0.9, 5.0, {"all_gather": Factors(0.5, 10.0)})]
    # fan-out [2, 2]; level 0: 1/2·8e8/(100e9·0.8) + 1·2 µs = 0.005 + 2e-6;
    # level 1 on the 4e8 shard: 1/2·4e8/(10e9·0.5) + 1·10 µs = 0.04 + 10e-6
    assert network.ring_time_s("all_gather", 8e8, 4, 1, lv) == pytest.approx(0.045012, rel=1e-12)
    # a reduce-scatter has no entry: the levels' own 0.5 / 0.9 and 1 / 5 µs
    want = 0.5 * 8e8 / (100e9 * 0.5) + 1e-6 + 0.5 * 4e8 / (10e9 * 0.9) + 5e-6
    assert network.ring_time_s("reduce_scatter", 8e8, 4, 1, lv) == pytest.approx(want, rel=1e-12)


def test_call_latency_of_the_widest_level_spanned_once_per_ring_call() -> None:
    lv = [Level(2, 100.0, 1.0, 0.0, call_latency_us=8.4), Level(None, 10.0, 1.0, 0.0, call_latency_us=20.0)]
    assert network.ring_time_s("all_reduce", 0.0, 2, 1, lv) == pytest.approx(8.4e-6, rel=1e-12)
    assert network.ring_time_s("all_reduce", 0.0, 4, 1, lv) == pytest.approx(20e-6, rel=1e-12)
    assert network.all_to_all_time_s(0.0, 4, 1, lv) == 0.0  # NCCL's baseLat is the ring collectives'


def test_invalid_per_kind_factors_are_rejected() -> None:
    with pytest.raises(ValueError):
        Level(None, 10.0, 1.0, 0.0, {"all_reduce": Factors(1.5, 0.0)})
    with pytest.raises(ValueError):
        Level(None, 10.0, 1.0, 0.0, call_latency_us=-1.0)


def test_a100_preset_levels_are_sourced_and_priced_by_hand() -> None:
    hw = preset("a100-80g")
    nvlink, ib = hw.levels
    for lv in hw.levels:
        assert {"efficiency", "latency_us", "call_latency_us"} <= set(lv.sources)
    assert (nvlink.efficiency, nvlink.latency_us, nvlink.call_latency_us) == (0.7, 3.4, 8.4)
    assert (ib.efficiency, ib.latency_us) == (0.6, 9.6)
    assert "SimuMax" in nvlink.sources["efficiency"] and "NVIDIA/nccl" in nvlink.sources["latency_us"]
    # TP all-reduce of 1e8 bytes over 8 GPUs (one node): 2·7/8·1e8/(300e9·0.7) + 14·3.4 µs + 8.4 µs
    want = 1.75e8 / 2.1e11 + 14 * 3.4e-6 + 8.4e-6
    got = network.collective_time_s(Collective("all_reduce", 1e8, 8), 1, hw.levels)
    assert got == pytest.approx(want, rel=1e-12)
    # DP all-reduce over 2 nodes at stride 8: fan-out [1, 2] -> only InfiniBand: 2·1/2·1e8/(25e9·0.6) + 2·9.6 µs + 8.4 µs
    want_ib = 1e8 / 1.5e10 + 2 * 9.6e-6 + 8.4e-6
    assert network.collective_time_s(Collective("all_reduce", 1e8, 2), 8, hw.levels) == pytest.approx(want_ib,
                                                                                                     rel=1e-12)


def test_b200_all_to_all_uses_simumax_measured_factor() -> None:
    hw = preset("b200")
    nvlink = hw.levels[0]
    assert nvlink.collectives["all_to_all"].efficiency == 0.5968
    assert "b200_bf16_ceperm.json" in nvlink.sources["collectives.all_to_all"]
    # EP all-to-all of 8e8 bytes over 8 GPUs: 7 peers × 1e8 / (900e9·0.5968) + 7·3.4 µs (no call latency)
    want = 7e8 / (900e9 * 0.5968) + 7 * 3.4e-6
    got = network.collective_time_s(Collective("all_to_all", 8e8, 8), 1, hw.levels)
    assert got == pytest.approx(want, rel=1e-12)


# ------------------------------------------------------------------------------------- overlays

CONFIG: dict[str, Any] = {  # SYNTHETIC toy config: TP 8 on one A100 node, so TP all-reduces cross NVLink
    "profile": "megatron", "model": copy.deepcopy(SYNTHETIC_DENSE_MODEL),
    "train": {"seq_length": 512, "micro_batch_size": 2, "num_micro_batches": 2},
    "parallel": {"tp": 8, "pp": 1, "dp": 1}, "hardware": {"preset": "a100-80g", "devices": 8},
}


def _overlay(tmp_path: Path, network_section: Any, **extra: Any) -> Path:
    path = tmp_path / "net.yaml"
    path.write_text(yaml.safe_dump({"hardware": "a100-80g", "network": network_section, **extra}), encoding="utf-8")
    return path


def test_network_overlay_replaces_a_levels_factors(tmp_path: Path) -> None:
    path = _overlay(tmp_path, {"nvlink3": {"collectives": {"all_reduce": {"efficiency": 0.35, "latency_us": 6.8}},
                                           "sources": {"collectives.all_reduce": "synthetic"}}})
    cfg = estimator.load_config(copy.deepcopy(CONFIG))
    tuned = apply_overlay(cfg, path)
    nvlink = tuned.hardware.levels[0]
    assert nvlink.collectives["all_reduce"].efficiency == 0.35 and nvlink.efficiency == 0.7  # the rest kept
    assert nvlink.sources["collectives.all_reduce"] == "synthetic" and "latency_us" in nvlink.sources
    # half the efficiency, twice the per-step latency: 2·7/8·1e8/(300e9·0.35) + 14·6.8 µs + 8.4 µs
    want = 1.75e8 / 1.05e11 + 14 * 6.8e-6 + 8.4e-6
    assert network.collective_time_s(Collective("all_reduce", 1e8, 8), 1, tuned.hardware.levels) == pytest.approx(
        want, rel=1e-12)
    assert estimator.estimate_perf(tuned).real_parts["MP_WAIT"] > estimator.estimate_perf(cfg).real_parts["MP_WAIT"]
    ov = read_overlay(path)
    assert ov.fields() == ["network.nvlink3.collectives"] and ov.sources() == {
        "network.nvlink3.collectives.all_reduce": "synthetic"}


def test_network_only_overlay_applies_to_a_preset_without_efficiencies(tmp_path: Path) -> None:
    path = tmp_path / "a2.yaml"
    path.write_text(yaml.safe_dump({"network": {"roce": {"efficiency": 0.5}}}), encoding="utf-8")
    cfg = estimator.load_config(copy.deepcopy(CONFIG) | {"hardware": {"preset": "ascend-910b", "devices": 8}})
    tuned = apply_overlay(cfg, path)
    assert tuned.hardware.levels[1].efficiency == 0.5 and tuned.hardware.efficiency is None


@pytest.mark.parametrize("section,field", [
    ({"nvlink9": {"efficiency": 0.5}}, "network.nvlink9"),
    ({"nvlink3": {"efficiency": 1.5}}, "network.nvlink3.efficiency"),
    ({"nvlink3": {"latency_us": -1}}, "network.nvlink3.latency_us"),
    ({"nvlink3": {"bandwidth_gb_s": 900}}, "network.nvlink3.bandwidth_gb_s"),
    ({"nvlink3": {"collectives": {"all2all": {"efficiency": 0.5, "latency_us": 1}}}},
     "network.nvlink3.collectives.all2all"),
])
def test_bad_network_overlay_is_one_error_naming_file_and_field(tmp_path: Path, section: dict[str, Any],
                                                                field: str) -> None:
    path = _overlay(tmp_path, section)
    cfg = estimator.load_config(copy.deepcopy(CONFIG))
    with pytest.raises(ConfigError) as err:
        apply_overlay(cfg, path)
    assert err.value.field.startswith(field) and err.value.file == str(path)
