"""TE's CPU activation offload in time (estimator.perf.offload): the schedule's stalls by hand, the copies over the
preset's host link, hidden and exposed seconds in the report, and the off-switch ``options.offload_copies``."""

from __future__ import annotations

import random
from typing import Any

import pytest

import estimator
from estimator.inputs.derive import stage_layouts
from estimator.inputs.hardware import PRESETS
from estimator.inputs.host_link import HOST_LINK_GB_S
from estimator.memory.activation import layer_activation_bytes
from estimator.perf import roofline
from estimator.perf.context import config_context
from estimator.perf.offload import backward_stall_s, forward_stall_s
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, synthetic_run


def test_forward_copies_that_fit_stall_nothing() -> None:
    """4 layers of 1 s, the first 2 offloaded at 1 s each: copy 0 ends at 1, copy 1 at 2; layer 2 (may start with
    one copy pending) and layer 3 (none pending) start at 2 and 3: no stall."""
    assert forward_stall_s([1.0] * 4, [1.0, 1.0]) == 0.0


def test_forward_waits_for_the_copies_it_must_free() -> None:
    """Copies of 3 s: copy 0 ends at 3, copy 1 (from 1) at 6. L − N = 2 sets: layer 2 waits for copy 0 (starts at 3),
    layer 3 for copy 1 (starts at 6) and ends at 7: 7 − 4 = 3 s of stall."""
    assert forward_stall_s([1.0] * 4, [3.0, 3.0]) == pytest.approx(3.0)


def test_forward_copy_ends_no_earlier_than_its_layer() -> None:
    """A copy cannot finish before its layer has saved its last tensor: 2 layers of 5 s, one copy of 1 s ends at 5,
    when layer 1 starts anyway: no stall."""
    assert forward_stall_s([5.0, 5.0], [1.0]) == 0.0


def test_backward_reloads_behind_freed_slots() -> None:
    """4 layers of 2 s backward, layers 0 and 1 offloaded, reloads of 3 s: layer 3 ends at 2, reload 1 runs 2-5;
    layer 2 ends at 4, reload 0 runs 5-8; layer 1 starts at 5 (ends 7), layer 0 at 8 (ends 10): 10 − 8 = 2 s."""
    assert backward_stall_s([2.0] * 4, [3.0, 3.0]) == pytest.approx(2.0)


def test_backward_reloads_that_fit_stall_nothing() -> None:
    assert backward_stall_s([2.0] * 4, [1.0, 1.0]) == 0.0


def test_stalls_never_negative_and_never_fall_when_copies_grow() -> None:
    """Random schedules (seeded): each stall ≥ 0, and longer copies or one more offloaded layer never shorten it."""
    rng = random.Random(26)
    for _ in range(300):
        layers = rng.randint(2, 12)
        n = rng.randint(1, layers - 1)
        f = [rng.uniform(0.1, 3.0) for _ in range(layers)]
        x = [rng.uniform(0.0, 4.0) for _ in range(layers)]
        slower = [v * rng.uniform(1.0, 3.0) for v in x]
        for stall in (forward_stall_s, backward_stall_s):
            base = stall(f, x[:n])
            assert base >= 0.0
            assert stall(f, slower[:n]) >= base - 1e-12
            if n + 1 < layers:
                assert stall(f, x[:n + 1]) >= base - 1e-12


def test_every_host_link_figure_has_its_source() -> None:
    assert HOST_LINK_GB_S["h100-80g"][0] == 64.0  # PCIe Gen5 x16: 128 GB/s both ways
    assert HOST_LINK_GB_S["a100-80g"][0] == 32.0  # PCIe Gen4 x16: 64 GB/s both ways
    assert HOST_LINK_GB_S["gb200-nvl72"][0] == 450.0  # NVLink-C2C: 900 GB/s both ways
    for name, (rate, source) in HOST_LINK_GB_S.items():
        assert PRESETS[name]["host_link_gb_s"] == rate
        assert PRESETS[name]["provenance"]["host_link_gb_s"] == source and "GB/s" in source
    assert "host_link_gb_s" not in PRESETS["ascend-910b"]  # no sourced figure: the copies stay unpriced


def _run(layers: int, link_gb_s: float | None = None, **options: Any) -> estimator.EstimatorConfig:
    hardware: dict[str, Any] = {"preset": "h100-80g"}
    if link_gb_s is not None:
        hardware["host_link_gb_s"] = link_gb_s
    run = synthetic_run(SYNTHETIC_DENSE_MODEL, parallel={"tp": 1, "pp": 1, "dp": 8, "ep": 1}, profile="megatron",
                        hardware=hardware, options=options,
                        train={"seq_length": 2048, "micro_batch_size": 2, "num_micro_batches": 4,
                               "cpu_offloading_num_layers": layers})
    return estimator.load_config(run)


def test_copies_hidden_at_the_preset_link_and_priced_by_hand() -> None:
    """Synthetic dense model (4 layers), 2 offloaded over the H100's 64 GB/s: the copies (2 directions, 4 micro-
    batches) are hidden, TOTAL as without offload; hidden seconds = 2·m·Σ bytes / rate."""
    cfg = _run(2)
    report = estimator.estimate_perf(cfg)
    plain = estimator.estimate_perf(_run(0))
    copy = sum(layer_activation_bytes(cfg, i, "none") for i in (0, 1)) / 64e9
    assert report.stages[0].offload_exposed == 0.0
    assert report.total == plain.total
    assert report.overlap["CPU_OFFLOAD"]["hidden_s"] + report.overlap["CPU_OFFLOAD"]["exposed_s"] == pytest.approx(
        4 * 2 * copy, rel=1e-12)
    assert not any("cpu_offloading_num_layers" in w for w in report.warnings)


def test_a_slow_link_stalls_the_passes_by_the_schedule() -> None:
    """At 0.05 GB/s the copies do not fit: FW_COMPUTE and BW_COMPUTE grow by the schedule's stalls over the
    roofline's per-layer seconds, TOTAL by m times their sum; parts ≥ 0 and TOTAL = Σ parts."""
    cfg = _run(2, link_gb_s=0.05)
    report = estimator.estimate_perf(cfg)
    plain = estimator.estimate_perf(_run(0, link_gb_s=0.05))
    seconds = roofline.layer_pass_seconds(cfg, config_context(cfg), stage_layouts(cfg)[0])
    copies = [layer_activation_bytes(cfg, i, "none") / 0.05e9 for i in (0, 1)]
    fw = forward_stall_s([f for f, _ in seconds], copies)
    bw = backward_stall_s([b for _, b in seconds], copies)
    assert fw > 0 and bw > 0
    assert report.perf_parts["FW_COMPUTE"] - plain.perf_parts["FW_COMPUTE"] == pytest.approx(4 * fw, rel=1e-9)
    assert report.perf_parts["BW_COMPUTE"] - plain.perf_parts["BW_COMPUTE"] == pytest.approx(4 * bw, rel=1e-9)
    assert report.total - plain.total == pytest.approx(4 * (fw + bw), rel=1e-9)
    assert report.overlap["CPU_OFFLOAD"]["exposed_s"] == pytest.approx(4 * (fw + bw), rel=1e-9)
    parts = {k: v for k, v in report.real_parts.items() if k != "TOTAL"}
    assert all(v >= 0 for v in parts.values())
    assert report.total == pytest.approx(sum(parts.values()), rel=1e-12)


def test_total_never_falls_when_the_host_link_slows() -> None:
    totals = [estimator.estimate_perf(_run(3, link_gb_s=rate)).total for rate in (64.0, 4.0, 1.0, 0.2, 0.05, 0.01)]
    assert totals == sorted(totals)


def test_off_switch_and_unpriced_hardware_say_so() -> None:
    """``options.offload_copies`` off: every number as without the copies (memory only), and a warning; a device
    without a host-link figure: the same numbers, and the warning names the field."""
    plain = estimator.estimate_perf(_run(0, link_gb_s=0.05))
    off = estimator.estimate_perf(_run(2, link_gb_s=0.05, offload_copies=False))
    assert off.total == plain.total and off.perf_parts == plain.perf_parts and "CPU_OFFLOAD" not in off.overlap
    assert any("options.offload_copies is off" in w for w in off.warnings)
    run = synthetic_run(SYNTHETIC_DENSE_MODEL, parallel={"tp": 1, "pp": 1, "dp": 8, "ep": 1}, profile="megatron",
                        hardware={"preset": "h100-80g", "host_link_gb_s": None},
                        train={"seq_length": 2048, "micro_batch_size": 2, "num_micro_batches": 4,
                               "cpu_offloading_num_layers": 2})
    report = estimator.estimate_perf(estimator.load_config(run))
    assert any("has no host_link_gb_s" in w for w in report.warnings)
