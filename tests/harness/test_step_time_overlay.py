"""``estimator.perf`` ``params.hardware_overlay_from``: a case's rows estimated with an overlay's
device efficiencies (written by ``ndval calibrate --from-profile`` or committed with its source).

SYNTHETIC: the toy config and the overlays are written by the tests (no shared data needed).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

import estimator
from estimator.inputs.overlay import apply_overlay
from ndval.harness.kinds import KindError, RunContext
from ndval.harness.kinds.estimator import perf
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL

#: SYNTHETIC toy config on the A100 preset (SimuMax efficiencies, so the roofline is on)
CONFIG: dict[str, Any] = {
    "profile": "megatron",
    "model": copy.deepcopy(SYNTHETIC_DENSE_MODEL),
    "train": {"seq_length": 512, "micro_batch_size": 2, "num_micro_batches": 4},
    "parallel": {"tp": 2, "pp": 1, "dp": 4},
    "hardware": {"preset": "a100-80g", "devices": 8},
}

#: SYNTHETIC overlay: half SimuMax's A100 matmul efficiency, a 3 µs latency (values as calibrate writes them)
OVERLAY: dict[str, Any] = {
    "hardware": "a100-80g",
    "source": "synthetic overlay for the wiring test",
    "efficiency": {"matmul": [[0.0, 0.375]], "kernel_latency_us": 3.0,
                   "sources": {"matmul": "synthetic", "kernel_latency_us": "synthetic"}},
}


def _write(folder: Path, doc: dict[str, Any], name: str = "overlay.yaml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def _run(folder: Path, overlay: str | None, config: dict[str, Any] = CONFIG) -> Any:
    params = perf.PerfParams(config=config, hardware_overlay_from=overlay)
    return perf.run_perf(RunContext(case_id="t", params=params, rows=[{"config": "a"}], cases_root=folder))


def test_rows_are_estimated_with_the_overlay(tmp_path: Path) -> None:
    path = _write(tmp_path, OVERLAY)
    res = _run(tmp_path, "overlay.yaml")  # relative to the cases folder
    cfg = estimator.load_config(copy.deepcopy(CONFIG))
    want = estimator.estimate_perf(apply_overlay(cfg, path)).real_parts["TOTAL"]
    plain = estimator.estimate_perf(cfg).real_parts["TOTAL"]
    assert res.table[0]["TOTAL_s"] == pytest.approx(want, rel=1e-12)
    # the toy layers are latency-bound: 3 µs per kernel instead of SimuMax's 40 µs makes them faster
    assert want < 0.5 * plain
    rec = res.values["hardware_overlay"]
    assert rec["file"] == "overlay.yaml" and rec["hardware"] == "a100-80g" and set(rec["fields"]) == {"matmul",
                                                                                                 "kernel_latency_us"}
    assert rec["values"]["matmul"] == [[0.0, 0.375]] and rec["sources"]["matmul"] == "synthetic"
    assert "hardware_overlay" not in _run(tmp_path, None).values


def test_overlay_applies_to_the_calibration_rows_too(tmp_path: Path) -> None:
    _write(tmp_path, OVERLAY)
    rows = [{"case_id": f"synthetic-{i}", "step_ms": 50.0 + i} for i in range(8)]
    params = perf.PerfParams(config=CONFIG, measured="step_ms", hardware_overlay_from="overlay.yaml",
                             calibrate={"fit": "compute_efficiency", "loo_subsample": 2})
    res = perf.run_perf(RunContext(case_id="t", params=params, rows=rows, cases_root=tmp_path))
    cfg = apply_overlay(estimator.load_config(copy.deepcopy(CONFIG)), tmp_path / "overlay.yaml")
    at_peak = estimator.estimate_perf(cfg).real_parts["TOTAL"] * 1e3
    assert res.table[0]["total_at_peak_ms"] == pytest.approx(at_peak, rel=1e-12)


def test_overlay_of_another_hardware_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path, OVERLAY | {"hardware": "h100"})
    with pytest.raises(KindError, match=r"hardware_overlay_from: .*overlay.yaml: measured on 'h100', row 'a' runs on "
                                        r"'a100-80g'"):
        _run(tmp_path, "overlay.yaml")


@pytest.mark.parametrize("efficiency,field", [
    ({"matmull": [[0, 0.5]]}, "efficiency.matmull"),
    ({"memory": [[0, 1.5]]}, "efficiency.memory"),
])
def test_bad_overlay_is_a_kind_error_naming_file_and_field(tmp_path: Path, efficiency: dict[str, Any],
                                                           field: str) -> None:
    path = _write(tmp_path, {"efficiency": efficiency})
    with pytest.raises(KindError, match=rf"^hardware_overlay_from: .*{field}.*") as err:
        _run(tmp_path, "overlay.yaml")
    assert str(path) in str(err.value)


def test_missing_overlay_is_a_kind_error(tmp_path: Path) -> None:
    with pytest.raises(KindError, match=r"hardware_overlay_from: .*no-such.yaml.*cannot read the overlay"):
        _run(tmp_path, "no-such.yaml")


def test_overlay_that_leaves_a_raw_peak_preset_incomplete_is_an_error(tmp_path: Path) -> None:
    """The Ascend presets have no efficiency block: an overlay with only a latency cannot complete one."""
    _write(tmp_path, {"efficiency": {"kernel_latency_us": 2.0}})
    config = copy.deepcopy(CONFIG) | {"hardware": {"preset": "ascend-910b", "devices": 8}}
    with pytest.raises(KindError, match=r"hardware_overlay_from: .*efficiency.*no efficiency block"):
        _run(tmp_path, "overlay.yaml", config)


def test_signoff_names_the_overlay() -> None:
    from ndval.harness.signoff import _calibration

    rec = {"file": "overlays/x.yaml", "hardware": "a100-80g", "source": "ndval calibrate --from-profile p",
           "fields": ["kernel_latency_us"], "values": {"kernel_latency_us": 3.0}, "sources": {}}
    summary = {"cases": [{"nodeid": "f.case.yaml::c", "values": {"hardware_overlay": rec}}]}
    text = " ".join(str(x) for x in _calibration(summary))
    assert "overlays/x.yaml (a100-80g) sets kernel_latency_us = 3.0 [ndval calibrate --from-profile p]" in text
