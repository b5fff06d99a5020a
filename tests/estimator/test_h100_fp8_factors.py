"""SimuMax's H100 file states FP8 factors beside the BF16 ones the H100 presets read: fp8_matmul 0.65 and
fp8_group_matmul 0.58 against the 1,979 TFLOPS FP8 peak (h100_nvlink.json at 160921ca96). Hand-computed values,
and every SimuMax citation at a commit that holds its file."""

from __future__ import annotations

import pytest

from estimator.inputs.hardware import preset
from estimator.perf.roofline import kernel_group_s


@pytest.mark.parametrize("name", ["h100-80g", "h100-sxm-96g-hbm2e", "h200"])
def test_h100_presets_carry_the_files_fp8_factors(name: str) -> None:
    eff = preset(name).efficiency
    assert eff is not None and (eff.fp8_matmul, eff.fp8_grouped_matmul) == (0.65, 0.58)
    for field in ("fp8_matmul", "fp8_grouped_matmul", "matmul", "attention_fwd"):
        source = eff.sources[field]
        assert "SimuMax@160921ca96 configs/system/h100_nvlink.json" in source, (field, source)
        assert "NOT shape-calibrated" in source  # the file's own note travels with every factor


def test_fp8_gemms_by_hand_on_h100() -> None:
    """1 TFLOP at the FP8 peak (989·2 TFLOPS): a dense GEMM at 0.65, a routed-experts grouped GEMM at 0.58;
    the BF16 GEMM keeps 0.70 of 989."""
    eff = preset("h100-80g").efficiency
    assert eff is not None
    peak = 989e12
    dense = kernel_group_s(1e12, 0.0, 1.0, "gemm", False, eff, peak, "@fp8", 2.0)
    grouped = kernel_group_s(1e12, 0.0, 1.0, "gemm", False, eff, peak, "grouped@fp8", 2.0)
    bf16 = kernel_group_s(1e12, 0.0, 1.0, "gemm", False, eff, peak, "")
    assert dense == pytest.approx(1e12 / (2 * peak * 0.65), rel=1e-12)
    assert grouped == pytest.approx(1e12 / (2 * peak * 0.58), rel=1e-12)
    assert bf16 == pytest.approx(1e12 / (peak * 0.70), rel=1e-12)


def test_simumax_citations_name_a_commit_that_holds_the_file() -> None:
    """a100_bf16.json was removed in SimuMax 3005b17 (cited at 95a0211dda), h100_nvlink.json exists at 160921ca96;
    B200's file is at 4dcaae513b."""
    assert "SimuMax@95a0211dda configs/system/a100_bf16.json" in preset("a100-80g").efficiency.sources["matmul"]  # type: ignore[union-attr]
    assert "SimuMax@4dcaae513b configs/system/b200_bf16_ceperm.json" in preset("b200").efficiency.sources["matmul"]  # type: ignore[union-attr]
