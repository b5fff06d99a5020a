"""``ndval calibrate --from-profile``: per-class numbers against hand computation, the overlay it writes,
``ndval estimate --hardware-overlay``, and one clear error per bad input.

The hand-checked profile is SYNTHETIC (a kernel_details.csv written here, Ascend column names);
the real profiles (Ascend Level1 export, A100 Kineto trace) are only required to produce an overlay.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from ndval.harness.cli import main

HEADER = ("Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Input Shapes,Input Data Types,"
          "Output Shapes,Output Data Types\n")
# GEMM [1024, 4096] @ [4096, 4096] -> 2·1024·4096·4096 = 34.36 GFLOP; at 313 TFLOP/s peak (ascend-910b bf16)
# the kernel of 200 µs reaches 34.36e9/200e-6/313e12 = 0.548878, the one of 400 µs 0.274439, 100 µs 1.097756
ROWS = [
    '1,mm_a,MatMulV2,AI_CORE,0,200,"1024,4096;4096,4096",DT_BF16;DT_BF16,"1024,4096",DT_BF16',
    '1,mm_b,MatMulV2,AI_CORE,300,400,"1024,4096;4096,4096",DT_BF16;DT_BF16,"1024,4096",DT_BF16',
    '1,mm_c,MatMulV2,AI_CORE,800,100,"1024,4096;4096,4096",DT_BF16;DT_BF16,"1024,4096",DT_BF16',
    '1,mm_bad,MatMulV2,AI_CORE,900,50,"10,20;30,40",DT_BF16;DT_BF16,"10,40",DT_BF16',  # k 20 vs 30: no FLOPs
    '1,add_1,Add,AI_VECTOR_CORE,1000,10,"1024,4096;1024,4096",DT_BF16;DT_BF16,"1024,4096",DT_BF16',
    '1,add_2,Add,AI_VECTOR_CORE,1100,20,"1024,4096;1024,4096",DT_BF16;DT_BF16,"1024,4096",DT_BF16',
    '1,relu,Relu,AI_VECTOR_CORE,1200,30,"1024",DT_BF16,"1024",DT_BF16',
    '1,hcom_allReduce_,hcom_allReduce_,HCCL,1300,500,N/A,N/A,N/A,N/A',
]


def _profile(tmp_path: Path, rows: list[str] = ROWS) -> Path:
    out = tmp_path / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "kernel_details.csv").write_text(HEADER + "\n".join(rows) + "\n", encoding="utf-8")
    return tmp_path / "rank0_ascend_pt"


def _calibrate(tmp_path: Path, *extra: str, profile: Path | None = None) -> tuple[int, dict[str, Any]]:
    target = tmp_path / "overlay.yaml"
    rc = main(["calibrate", "--from-profile", str(profile or _profile(tmp_path)), *extra, "-o", str(target)])
    return rc, (yaml.safe_load(target.read_text(encoding="utf-8")) if target.exists() else {})


def test_per_class_numbers_match_the_hand_computation(tmp_path: Path) -> None:
    rc, doc = _calibrate(tmp_path, "--hardware", "ascend-910b")
    assert rc == 0
    fit = doc["fit"]
    gemm = fit["gemm"]
    assert gemm["count"] == 4 and gemm["time_us"] == 750.0
    assert gemm["share_pct"] == pytest.approx(100 * 750 / 1310)
    flops = 2.0 * 1024 * 4096 * 4096
    by_hand = sorted(flops / (d * 1e-6) / 313e12 for d in (200, 400, 100))
    assert gemm["efficiency"]["kernels_used"] == 3  # the inconsistent shape is not used
    assert gemm["efficiency"]["median"] == pytest.approx(by_hand[1], rel=1e-12)  # 0.548878
    assert doc["efficiency"]["matmul"] == [[0.0, pytest.approx(0.548878, abs=1e-6)]]
    ew = fit["elementwise"]
    assert ew["count"] == 3 and ew["time_us"] == 60.0
    # p10 of (10, 20, 30) by linear interpolation: 10 + 0.2·10 = 12
    assert ew["kernel_latency_us"] == pytest.approx(12.0) and doc["efficiency"]["kernel_latency_us"] == 12.0
    assert doc["efficiency"]["cast_kernel_latency_us"] == 12.0  # a near-empty kernel's time, casts' too
    assert fit["collective"]["count"] == 1 and fit["collective"]["time_us"] == 500.0
    assert fit["attention"] == {"count": 0} and fit["memcpy"] == {"count": 0}
    assert "ndval calibrate" in doc["efficiency"]["sources"]["matmul"]


def test_memory_efficiency_against_the_hbm_of_the_hardware(tmp_path: Path) -> None:
    rc, doc = _calibrate(tmp_path, "--hardware", "a100-80g")
    assert rc == 0
    # Add: 3·1024·4096·2 B = 25.17 MB; at 10 µs 2.517 TB/s, at 20 µs 1.258 TB/s; Relu: 2·1024·2 B in 30 µs
    moved = 3 * 1024 * 4096 * 2
    effs = sorted([moved / 10e-6 / 2039e9, moved / 20e-6 / 2039e9, 2 * 1024 * 2 / 30e-6 / 2039e9])
    assert doc["fit"]["elementwise"]["memory_efficiency"]["median"] == pytest.approx(effs[1], rel=1e-12)


def test_estimate_reads_the_overlay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import estimator
    from estimator.inputs.overlay import apply_overlay

    rc, _ = _calibrate(tmp_path, "--hardware", "a100-80g")
    assert rc == 0
    run = Path(__file__).resolve().parents[2] / "estimator" / "examples" / "llama3-8b-h100.yaml"
    cfg = estimator.load_config(run)
    tuned = apply_overlay(cfg, tmp_path / "overlay.yaml")
    assert tuned.hardware.efficiency is not None and cfg.hardware.efficiency is not None
    # against the A100's 312 TFLOP/s: 34.36e9 / 200e-6 / 312e12 = 0.550637
    assert tuned.hardware.efficiency.matmul == [(0.0, pytest.approx(0.550637, abs=1e-6))]
    assert tuned.hardware.efficiency.hbm_gb_s == cfg.hardware.efficiency.hbm_gb_s  # not in the overlay: kept
    assert estimator.estimate_perf(tuned).total != estimator.estimate_perf(cfg).total
    assert main(["estimate", str(run), "--hardware-overlay", str(tmp_path / "overlay.yaml")]) == 0


@pytest.mark.parametrize("efficiency,field", [
    ({"matmull": [[0, 0.5]]}, "efficiency.matmull"),
    ({"matmul": [[0, -0.5]]}, "efficiency.matmul"),
    ({"attention_fwd": 1.5}, "efficiency.attention_fwd"),
    ({"kernel_latency_us": -1}, "efficiency.kernel_latency_us"),
    ({"cast_kernel_latency_us": -1}, "efficiency.cast_kernel_latency_us"),
])
def test_bad_overlay_is_one_error_naming_file_and_field(tmp_path: Path, efficiency: dict[str, Any],
                                                         field: str) -> None:
    from estimator.config.errors import ConfigError
    from estimator.inputs.overlay import load_overlay

    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"efficiency": efficiency}), encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_overlay(path)
    assert err.value.field == field and err.value.file == str(path)
    assert str(path) in str(err.value) and field in str(err.value)


def test_bad_calibrate_input_is_one_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _ = _calibrate(tmp_path, "--hardware", "no-such-gpu")
    assert rc == 2 and "--hardware: unknown hardware 'no-such-gpu'" in capsys.readouterr().err
    rc, _ = _calibrate(tmp_path / "b", "--hardware", "a100", "--require", "attention")
    err = capsys.readouterr().err
    assert rc == 2 and "no kernels of class 'attention'" in err and "rank0_ascend_pt" in err
    rc, _ = _calibrate(tmp_path / "c", "--hardware", "a100", "--require", "softmax")
    assert rc == 2 and "--require: unknown class 'softmax'" in capsys.readouterr().err


@pytest.mark.needs_data
@pytest.mark.parametrize("relative,hardware,written", [
    ("ascend/msinsight-level1/rank0_ascend_pt", "ascend-910b", {"matmul", "kernel_latency_us", "cast_kernel_latency_us"}),
    ("kineto/hta-trace-diff/control.json.gz", None, {"kernel_latency_us", "cast_kernel_latency_us"}),
])
def test_real_profiles_write_an_overlay(tmp_path: Path, profile_path: Any, relative: str, hardware: str | None,
                                        written: set[str]) -> None:
    extra = ["--hardware", hardware] if hardware else []
    rc, doc = _calibrate(tmp_path, *extra, profile=profile_path(relative))
    assert rc == 0 and set(doc["efficiency"]) - {"sources"} == written
    assert doc["hardware"] == (hardware or "a100-80g")  # the Kineto trace names its A100
    assert sum(rec.get("share_pct", 0.0) for rec in doc["fit"].values()) == pytest.approx(100.0)


def test_explain_lays_estimate_and_profile_side_by_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import estimator
    from ndval.harness.commands.explain import estimate_by_class

    run = Path(__file__).resolve().parents[2] / "estimator" / "examples" / "llama3-8b-h100.yaml"
    report = estimator.estimate_perf(estimator.load_config(run))
    # the estimate's classes add up to its TOTAL (COMP = classes + optimizer + exposed host; waits)
    assert sum(estimate_by_class(report).values()) == pytest.approx(report.total, rel=1e-9)
    assert main(["explain", str(run), str(_profile(tmp_path)), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["steps_in_profile"] == 1
    # synthetic profile: GEMM 750 µs, element-wise 60 µs, collective 500 µs in its one step
    assert doc["profile_s_per_step"] == pytest.approx({"gemm": 750e-6, "elementwise": 60e-6, "collective": 500e-6})
    assert doc["estimate_total_s"] == pytest.approx(report.total)
    assert main(["explain", str(run), str(tmp_path / "missing")]) == 2
