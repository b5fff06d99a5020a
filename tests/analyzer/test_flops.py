"""Seed §9 ``peakTflops``: matmul FLOPs from kernel_details.csv shapes and the compute utilisation.

Unit cases are SYNTHETIC shape strings; the real check reads the Level1 rank-0 kernel_details.csv
(skipped with a reason when ../shared/data is absent).
"""

from __future__ import annotations

import csv

import pytest

from analyzer import analyze, flops, load_dataset
from analyzer.thresholds import default_thresholds


def test_matmul_flops_from_shapes() -> None:
    # addmm with a transposed weight: A 32×9216, B 4096×9216 (N×K), bias; out 32×4096 -> K = 9216
    assert flops.matmul_flops("32,9216;4096,9216;4096", "32,4096") == 2 * 32 * 4096 * 9216
    # plain mm: A 32×1000, B 1000×4096
    assert flops.matmul_flops("32,1000;1000,4096", "32,4096") == 2 * 32 * 4096 * 1000
    # batched: 8 × (64×32 · 32×16)
    assert flops.matmul_flops("8,64,32;8,32,16", "8,64,16") == 2 * 8 * 64 * 16 * 32
    # operands that disagree on K (81920 from A, 8192 from B) are left out, as are unparseable strings
    assert flops.matmul_flops("81920,4096;8192,512", "4096,512") is None
    assert flops.matmul_flops("N/A", "N/A") is None and flops.matmul_flops("32,0;0,4", "32,4") is None


def test_peak_tflops_threshold_is_declared() -> None:
    t = default_thresholds()["peakTflops"]
    assert (t.value, t.unit) == (320, "TFLOPS") and "seed §9" in t.source and "320" in t.rationale


@pytest.mark.needs_data
def test_matmul_utilisation_on_the_level1_capture(profile_path) -> None:  # type: ignore[no-untyped-def]
    rank = profile_path("ascend/msinsight-level1/rank0_ascend_pt")
    # second formulation: K from the weight operand only (numel(B) / N for these 2-D weights)
    total_flops = total_us = 0.0
    with (rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if not row["Type"].startswith("MatMul"):
                continue
            b = [int(x) for x in row["Input Shapes"].strip('"').split(";")[1].split(",")]
            m, n = (int(x) for x in row["Output Shapes"].strip('"').split(","))
            total_flops += 2 * m * n * (b[0] * b[1] // n)
            total_us += float(row["Duration(us)"])
    tflops = total_flops / total_us / 1e6
    a = analyze(load_dataset(rank))
    ind = a.primary.overall.indicators
    assert ind.value("matmul_tflops") == pytest.approx(tflops, rel=1e-9)
    assert ind.value("matmul_flops_utilisation_pct") == pytest.approx(100 * tflops / 320, rel=1e-9)
    assert not any("peakTflops" in w for w in a.warnings)
    # the seed §9 override: half the peak doubles the utilisation; a peak below the achieved rate is warned about
    half = analyze(load_dataset(rank), thresholds={"peakTflops": 160}).primary.overall.indicators
    assert half.value("matmul_flops_utilisation_pct") == pytest.approx(200 * tflops / 320, rel=1e-9)
    low = analyze(load_dataset(rank), thresholds={"peakTflops": tflops / 2})
    assert any("% of peakTflops" in w for w in low.warnings)


@pytest.mark.needs_data
def test_inconsistent_shapes_give_a_reason(profile_path) -> None:  # type: ignore[no-untyped-def]
    a = analyze(load_dataset(profile_path("ascend/kernel-details-pipeutil-2025")))
    ind = a.primary.overall.indicators["matmul_tflops"]
    assert ind.value is None and ind.reason.startswith("no usable matmul kernel rows: 12 matmul row(s)")
