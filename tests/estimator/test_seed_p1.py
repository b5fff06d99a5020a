"""Seed P1 tests P1-01..P1-07: safety buffer scaled /tp and the TP-shardable overhead term.

Configs: the seed's A (TP=1, EP=2, DP=16) and D (TP=2, EP=4, DP=8) with the bundled assumed
scaled-down DeepSeek-V3 (``estimator.experiments.seed``), profile ``sapp-nd``. The seed's arithmetic is
asserted exactly: effective buffer = safety_buffer_mb/t, effective overhead = overhead_mb/t,
added to every stage whose dynamic memory is > 0.
"""

from __future__ import annotations

from typing import Any

import pytest

import estimator
from estimator.experiments.seed import seed_run


def _mem(label: str, **options: Any) -> estimator.MemoryReport:
    return estimator.estimate_memory(estimator.load_config(seed_run(label, options=options)))


def _stages(report: estimator.MemoryReport, name: str) -> list[float]:
    return [s.components[name] for s in report.stages]


def test_P1_01_default_safety_buffer_tp1_unchanged() -> None:
    scaled = _mem("A", safety_buffer_mb=1024, tp_scaled_buffers=True, tp_shardable_overhead_mb=0)
    flat = _mem("A", safety_buffer_mb=1024, tp_scaled_buffers=False, tp_shardable_overhead_mb=0)
    assert _stages(scaled, "safety_buffer") == [1024.0, 1024.0]
    assert [s.dynamic_mb for s in scaled.stages] == [s.dynamic_mb for s in flat.stages]  # as before the change
    assert scaled.to_dict() == flat.to_dict()


def test_P1_02_tp2_safety_buffer_512() -> None:
    scaled = _mem("D", safety_buffer_mb=1024, tp_shardable_overhead_mb=0)
    flat = _mem("D", safety_buffer_mb=1024, tp_scaled_buffers=False, tp_shardable_overhead_mb=0)
    assert _stages(scaled, "safety_buffer") == [512.0, 512.0]
    for s, f in zip(scaled.stages, flat.stages, strict=True):
        assert f.dynamic_mb - s.dynamic_mb == pytest.approx(512.0, abs=1e-9)


def test_P1_03_overhead_2676_tp1() -> None:
    with_ov = _mem("A", tp_shardable_overhead_mb=2676)
    without = _mem("A", tp_shardable_overhead_mb=0)
    assert _stages(with_ov, "tp_shardable_overhead") == [2676.0, 2676.0]
    assert with_ov.peak_mb - without.peak_mb == pytest.approx(2676.0, abs=1e-9)


def test_P1_04_overhead_tp2_is_1338() -> None:
    with_ov = _mem("D", tp_shardable_overhead_mb=2676)
    without = _mem("D", tp_shardable_overhead_mb=0)
    assert _stages(with_ov, "tp_shardable_overhead") == [1338.0, 1338.0]
    assert with_ov.peak_mb - without.peak_mb == pytest.approx(1338.0, abs=1e-9)


def test_P1_05_no_extra_terms() -> None:
    """Both terms 0: the dynamic part holds activations, comm buffers and backward overhead only."""
    physical = ("activations", "comm_buffers", "backward_overhead")
    for label, tp in (("A", 1), ("D", 2)):
        zero = _mem(label, safety_buffer_mb=0, tp_shardable_overhead_mb=0)
        both = _mem(label, safety_buffer_mb=1024, tp_shardable_overhead_mb=2676)
        for z, b in zip(zero.stages, both.stages, strict=True):
            c = z.components
            assert set(c) == {"params", "optimizer_states", "grads", *physical, "safety_buffer",
                              "tp_shardable_overhead", "other"}
            # nothing extra hides anywhere: the buffer, the overhead and the FSDP2-only term are all zero
            assert c["safety_buffer"] == 0 and c["tp_shardable_overhead"] == 0 and c["other"] == 0
            assert z.dynamic_mb == pytest.approx(sum(c[k] for k in physical), rel=1e-12)
            # and the physical parts do not depend on the two options
            assert all(c[k] == b.components[k] for k in physical)
            # second formulation: the defaults add exactly 1024/tp + 2676/tp (seed §4.1.1-§4.1.2) per stage
            assert b.total_mb - z.total_mb == pytest.approx((1024 + 2676) / tp, abs=1e-9)
            assert z.dynamic_mb > 0


def test_P1_06_safety_3072_tp1() -> None:
    big = _mem("A", safety_buffer_mb=3072, tp_shardable_overhead_mb=0)
    default = _mem("A", safety_buffer_mb=1024, tp_shardable_overhead_mb=0)
    assert _stages(big, "safety_buffer") == [3072.0, 3072.0]
    assert big.peak_mb - default.peak_mb == pytest.approx(2048.0, abs=1e-9)


def test_P1_07_both_terms_add_5748_tp1() -> None:
    both = _mem("A", safety_buffer_mb=3072, tp_shardable_overhead_mb=2676)
    none = _mem("A", safety_buffer_mb=0, tp_shardable_overhead_mb=0)
    for b, n in zip(both.stages, none.stages, strict=True):
        assert b.total_mb - n.total_mb == pytest.approx(3072 + 2676, abs=1e-9)


def test_P1_terms_only_on_stages_with_dynamic_memory() -> None:
    """Seed §4.1.1 constraint: both terms go only to stages whose Dynamic > 0 (synthetic layout
    with an empty middle stage: no layers, no embedding, no head)."""
    from tests.estimator._factories import synthetic_run

    run = synthetic_run(
        parallel={"tp": 2, "pp": 3, "dp": 4, "ep": 2, "layers_per_stage": [2, 0, 2]},
        options={"safety_buffer_mb": 1024, "tp_shardable_overhead_mb": 2676},
    )
    report = estimator.estimate_memory(estimator.load_config(run))
    assert [s.dynamic_mb > 0 for s in report.stages] == [True, False, True]
    assert _stages(report, "safety_buffer") == [512.0, 0.0, 512.0]
    assert _stages(report, "tp_shardable_overhead") == [1338.0, 0.0, 1338.0]


def test_P1_profile_default_overhead() -> None:
    """Spec §5: tp_shardable_overhead_mb defaults to 2676 under sapp-nd, 0 otherwise."""
    assert _stages(_mem("A"), "tp_shardable_overhead") == [2676.0, 2676.0]
    meg = estimator.estimate_memory(estimator.load_config(seed_run("A", profile="megatron")))
    assert _stages(meg, "tp_shardable_overhead") == [0.0, 0.0]


# ---- integration on the seed's measured peaks (INT-01, INT-04) ------------------------------
# Both fail on the data with the assumed model dimensions: kept visible as strict xfails (they
# turn into errors the day they pass, so the finding is revisited), never tuned away. Numbers:
# docs/estimator-accuracy.md.

BAND = (0.85, 1.10)


def _ratios(options: dict[str, Any], zero3: bool) -> dict[str, float]:
    from estimator.experiments.seed import SEED_CONFIGS

    out = {}
    for label, seed in SEED_CONFIGS.items():
        run = seed_run(label, options=options)
        run["parallel"]["expert_zero3_sharding"] = zero3
        out[label] = estimator.estimate_memory(estimator.load_config(run)).peak_mb / seed.measured_peak_mb
    return out


@pytest.mark.xfail(strict=True, reason="finding: fixed() without expert ZeRO-3 over-estimates A-F with the assumed dims (1.20-1.54 with etp = 1); INT-01 on the reconstructed dims: test_seed_reconstruct.py")
def test_INT_01_fixed_peak_ratios_in_band() -> None:
    ratios = _ratios(estimator.config.presets.fixed(), zero3=False)  # P1 + P2 fixes (DeepSeek: no expert ZeRO-3)
    assert all(BAND[0] <= r <= BAND[1] for r in ratios.values()), ratios


@pytest.mark.xfail(strict=True, reason="finding: 3072 + 2676 MiB over-estimates every config (seed risk P1)")
def test_INT_04_both_p1_terms_not_over_estimating() -> None:
    options = {**estimator.config.presets.fixed(), "safety_buffer_mb": 3072, "tp_shardable_overhead_mb": 2676}
    ratios = _ratios(options, zero3=True)
    assert all(BAND[0] <= r <= BAND[1] for r in ratios.values()), ratios


def test_P1_functions_are_the_models_terms() -> None:
    """The named P1 functions (``estimator.inputs.runtime_buffer``) give the seed's arithmetic, and the
    memory model's stage terms are theirs; the seed's defaults are the options' defaults."""
    from estimator.config.options import OptionsConfig
    from estimator.inputs import runtime_buffer as p1

    assert p1.stage_runtime_buffers_mb(True, 1024.0, 2676.0, 2, tp_scaled=True) == (512.0, 1338.0)  # P1-04
    assert p1.stage_runtime_buffers_mb(True, 1024.0, 2676.0, 2, tp_scaled=False) == (1024.0, 1338.0)
    assert p1.stage_runtime_buffers_mb(False, 1024.0, 2676.0, 1, tp_scaled=True) == (0.0, 0.0)
    assert OptionsConfig().safety_buffer_mb == p1.SEED_SAFETY_BUFFER_MB == 1024.0
    d = _mem("D")
    assert _stages(d, "safety_buffer") == [p1.rank_safety_buffer_mb(p1.SEED_SAFETY_BUFFER_MB, 2, tp_scaled=True)] * 2
    assert _stages(d, "tp_shardable_overhead") == [p1.rank_overhead_mb(p1.SEED_TP_SHARDABLE_OVERHEAD_MB, 2)] * 2
