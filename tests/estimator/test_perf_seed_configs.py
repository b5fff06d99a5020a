"""Issue acceptance on the seed's configs A-F: units, magnitudes, shares and additivity of the parts."""

from __future__ import annotations

import math

import pytest

import estimator
from estimator import presets
from estimator.perf.parts import PERF_PARTS, REAL_PARTS, PerfReport
from estimator.seed import SEED_CONFIGS, seed_run

LABELS = list(SEED_CONFIGS)


def _perf(label: str, options: dict) -> PerfReport:
    return estimator.estimate_perf(estimator.load_config(seed_run(label, options=options)))


@pytest.mark.parametrize("label", LABELS)
def test_fixed_parts_are_finite_seconds(label: str) -> None:
    r = _perf(label, presets.fixed())
    assert r.unit == "s" and r.mode == "time"
    assert set(r.real_parts) == set(REAL_PARTS) and set(r.perf_parts) == set(PERF_PARTS)
    for name, v in {**r.real_parts, **r.perf_parts}.items():
        assert math.isfinite(v) and v >= 0, name
    # a step of this model is seconds, not bytes: every part below one minute
    assert r.total < 60.0
    assert 1e-5 <= r.real_parts["EP_WAIT"] <= 10.0
    assert r.warnings == []


@pytest.mark.parametrize("label", LABELS)
def test_legacy_ep_wait_shows_the_unit_bug(label: str) -> None:
    fixed = _perf(label, presets.fixed()).real_parts["EP_WAIT"]
    legacy = _perf(label, presets.legacy())
    assert legacy.real_parts["EP_WAIT"] >= 1e6 * fixed
    assert any("bytes" in w for w in legacy.warnings)


@pytest.mark.parametrize("label", LABELS)
def test_no_part_above_90_percent_of_total(label: str) -> None:
    r = _perf(label, presets.fixed()).real_parts
    assert max(v for k, v in r.items() if k != "TOTAL") <= 0.9 * r["TOTAL"]


@pytest.mark.parametrize("preset", ["fixed", "legacy"])
@pytest.mark.parametrize("label", LABELS)
def test_total_is_sum_of_parts(label: str, preset: str) -> None:
    r = _perf(label, presets.PRESETS[preset]())
    parts = sum(v for k, v in r.real_parts.items() if k != "TOTAL")
    assert r.total == pytest.approx(parts, rel=1e-9)
    perf = r.perf_parts
    assert r.total == pytest.approx(sum(perf.values()), rel=1e-9)
    # and equals the schedule's step time (the straggler's work + BUBBLE + PP_COMM)
    assert r.total == pytest.approx(r.pipeline_s + perf["PP_COMM"], rel=1e-9)


def test_tokens_and_mfu_consistent() -> None:
    r = _perf("A", presets.fixed())
    cfg = estimator.load_config(seed_run("A"))
    tokens = cfg.num_micro_batches * cfg.train.micro_batch_size * cfg.train.seq_length * cfg.parallel.dp
    assert r.tokens_per_s == pytest.approx(tokens / r.total)
    assert 0.0 < r.mfu < 1.0
