"""``estimator.perf`` ``host_launch_cost_from``: host µs per launch measured on a real profile, wired in.

The record comes from the real HTA trace-diff Kineto sample (skipped when ``../shared/data`` is absent;
read once per module). The kind-wiring tests use a SYNTHETIC record and SYNTHETIC toy configs and rows
(tiny layers, host-bound), so they run without the data.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

import estimator
from ndval.harness.kinds import KindError, RunContext
from ndval.harness.kinds.estimator import host_cost, perf
from ndval.harness.signoff import _calibration, _host_cost
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL

CONTROL = "kineto/hta-trace-diff/control.json.gz"

#: synthetic toy config: micro batch 1, hidden 64, so the host launch time binds
SYNTHETIC_CONFIG: dict[str, Any] = {
    "profile": "megatron",
    "model": copy.deepcopy(SYNTHETIC_DENSE_MODEL),
    "train": {"seq_length": 128, "micro_batch_size": 1, "num_micro_batches": 8},
    "parallel": {"tp": 2, "pp": 2, "dp": 2},
    "recompute": {"mode": "full"},
    "hardware": {"preset": "h100-80g", "devices": 8},
}


@pytest.fixture(scope="module")
def control_record(profile_path) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """The measured record of the real control trace (about 2 s to read; once per module)."""
    profile_path(CONTROL)  # skips when the data is absent
    return host_cost.measured_host_launch_cost(CONTROL)


def test_record_of_the_real_control_trace(control_record: dict[str, Any]) -> None:
    """Facts measured by the lead on kineto/hta-trace-diff/control.json.gz (one rank, two launching threads)."""
    r = control_record
    assert (r["value_us"], r["p25_us"], r["p75_us"]) == (30.0, 20.0, 43.0)
    assert (r["intervals"], r["threads"], r["profile"]) == (9448, 2, CONTROL)
    assert "analyzer.indicators.launch_intervals" in r["method"] and "median" in r["method"]
    assert set(r) == {"value_us", "p25_us", "p75_us", "intervals", "threads", "profile", "method"}


def test_host_options() -> None:
    assert host_cost.host_options(None) == {}
    assert host_cost.host_options({"value_us": 12.5, "p25_us": 1.0}) == {"host_launch_cost_us": 12.5}


def test_absent_profile_skips_the_case(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("NDVAL_PROFILES_DIR", str(tmp_path))
    with pytest.raises(pytest.skip.Exception, match=re.escape("data not available: profile 'kineto/no-such.json.gz'")):
        host_cost.measured_host_launch_cost("kineto/no-such.json.gz")


def test_absent_profiles_folder_skips_the_case(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("NDVAL_PROFILES_DIR", str(tmp_path / "absent"))
    with pytest.raises(pytest.skip.Exception, match=r"profiles folder .* is absent"):
        host_cost.measured_host_launch_cost(CONTROL)


def test_unreadable_profile_is_a_kind_error(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """SYNTHETIC: an empty folder is no profile -> KindError naming the option and the profile."""
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("NDVAL_PROFILES_DIR", str(tmp_path))
    with pytest.raises(KindError, match=r"^host_launch_cost_from: empty: .*no profile found"):
        host_cost.measured_host_launch_cost("empty")


def test_profile_without_launches_is_a_kind_error(profile_path) -> None:  # type: ignore[no-untyped-def]
    """ascend/msinsight-level0 has task-queue enqueue/dequeue rows but no runtime-layer launch calls."""
    profile_path("ascend/msinsight-level0")
    with pytest.raises(KindError, match=r"host_launch_cost_from: ascend/msinsight-level0: no host thread launches twice"):
        host_cost.measured_host_launch_cost("ascend/msinsight-level0")


def test_host_cost_rendering(control_record: dict[str, Any]) -> None:
    text = _host_cost(control_record)
    assert text.startswith(f"30.0 measured on {CONTROL} (p25 20.0, p75 43.0, 9448 intervals; analyzer.indicators")
    assert _host_cost(host_cost.HOST_DEFAULT) == host_cost.HOST_DEFAULT
    assert _host_cost(None) == "profile default"


# ----------------------------------------------------------------------------------- the kind, wired

#: SYNTHETIC measured record (the shape measured_host_launch_cost returns; 30 µs like the control trace)
SYNTHETIC_RECORD: dict[str, Any] = {"value_us": 30.0, "p25_us": 20.0, "p75_us": 43.0, "intervals": 9448, "threads": 2,
                                    "profile": CONTROL, "method": "synthetic record for the wiring tests"}


@pytest.fixture
def measured(monkeypatch) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """run_perf gets the synthetic record instead of reading the trace (asserts the path asked for)."""

    def fake(relative: str) -> dict[str, Any]:
        assert relative == CONTROL
        return SYNTHETIC_RECORD

    monkeypatch.setattr(host_cost, "measured_host_launch_cost", fake)
    return SYNTHETIC_RECORD


def _total_s(**options: Any) -> float:
    raw = copy.deepcopy(SYNTHETIC_CONFIG) | {"options": options}
    return float(estimator.estimate_perf(estimator.load_config(raw)).real_parts["TOTAL"])


def test_run_perf_applies_the_measured_cost_to_every_row(measured: dict[str, Any]) -> None:
    params = perf.PerfParams(config=SYNTHETIC_CONFIG, host_launch_cost_from=CONTROL)
    rows = [{"config": "a"}, {"config": "b"}]
    res = perf.run_perf(RunContext(case_id="t", params=params, rows=rows))
    assert res.values["host_launch_cost"] == measured
    want = _total_s(host_launch_cost_us=30.0)
    assert want > _total_s()  # the measured 30 µs is not the 5 µs default on this host-bound config
    assert [r["TOTAL_s"] for r in res.table] == pytest.approx([want, want], rel=1e-12)
    plain = perf.run_perf(RunContext(case_id="t", params=perf.PerfParams(config=SYNTHETIC_CONFIG), rows=rows))
    assert "host_launch_cost" not in plain.values
    assert plain.table[0]["TOTAL_s"] == pytest.approx(_total_s(), rel=1e-12)


def _calibrated(host_from: str | None) -> Any:
    """SYNTHETIC rows: one toy config, made-up measured step times, calibrated on half of them."""
    rows = [{"case_id": f"synthetic-{i}", "step_ms": 20.0 + i} for i in range(12)]
    params = perf.PerfParams(config=SYNTHETIC_CONFIG, measured="step_ms", host_launch_cost_from=host_from,
                                 calibrate={"fit": "compute_efficiency", "loo_subsample": 2})
    return perf.run_perf(RunContext(case_id="t", params=params, rows=rows))


def test_calibration_record_names_the_host_cost(measured: dict[str, Any]) -> None:
    res = _calibrated(CONTROL)
    cal = res.values["calibration"]
    assert cal["host_launch_cost"] == measured and res.values["host_launch_cost"] == measured
    assert {r["half"] for r in res.table} == {"fit", "holdout"}
    eff = res.values["compute_efficiency"]
    for r in res.table:  # the fitted value and the at-peak figure both carry the measured host cost
        assert r["TOTAL_s"] == pytest.approx(_total_s(host_launch_cost_us=30.0, compute_efficiency=eff), rel=1e-9)
        assert r["total_at_peak_ms"] == pytest.approx(
            1e3 * _total_s(host_launch_cost_us=30.0, compute_efficiency=1.0), rel=1e-9)
    default = _calibrated(None)
    assert default.values["calibration"]["host_launch_cost"] == host_cost.HOST_DEFAULT
    assert "host_launch_cost" not in default.values
    summary = {"cases": [{"nodeid": "cases.py::measured", "values": res.values},
                         {"nodeid": "cases.py::default", "values": default.values}]}
    line = next(x for x in _calibration(summary) if isinstance(x, str) and x.startswith("Host cost per kernel"))
    assert f"measured: host µs per launch 30.0 measured on {CONTROL}" in line
    assert f"default: host µs per launch {host_cost.HOST_DEFAULT}" in line
