"""Kinds: the P1 what-if arithmetic, the like-for-like memory mapping, and a missing estimator."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest

from harness.kinds import KINDS, KindError, load_kinds
from harness.kinds import estimator as est_kind
from harness.kinds.recorded import p1_what_if_mb


def test_builtin_kinds_are_registered() -> None:
    assert {"recorded.results", "estimator.memory", "estimator.perf", "estimator.invariance",
            "estimator.ablation"} <= set(load_kinds())


def test_p1_what_if_on_the_seed_numbers() -> None:
    # config A (TP=1): 8255 + 2676/1 + 1024/1 − 1024 = 10931 MiB vs measured 10941 → 0.999
    assert p1_what_if_mb(8255, 1, 2676, 1024, 1024) == 10931
    # config D (TP=2): 6174 + 2676/2 + 1024/2 − 1024 = 7000 MiB vs measured 5850 → 1.197
    assert p1_what_if_mb(6174, 2, 2676, 1024, 1024) == 7000


def _stage(i: int, total: float, acts: float = 1.0) -> SimpleNamespace:
    comp = {"params": 1.0, "optimizer_states": 2.0, "grads": 3.0, "activations": acts}
    return SimpleNamespace(stage=i, components=comp, total_mb=total)


def test_estimate_for_measurement_is_like_for_like() -> None:
    """Synthetic two-stage report: stage 0 total 10 (peak), stage 1 total 8."""
    report = SimpleNamespace(stages=[_stage(0, 10.0, acts=4.0), _stage(1, 8.0)], peak_stage=0)
    assert est_kind.estimate_for_measurement(report, "max_allocated", "max_over_ranks")[0] == 10.0
    assert est_kind.estimate_for_measurement(report, "max_reserved", "last_rank")[0] == 8.0
    assert est_kind.estimate_for_measurement(report, "max_allocated", "per_stage:1")[0] == 8.0
    assert est_kind.estimate_for_measurement(report, "allocated_steady", "last_rank")[0] == 6.0  # 1 + 2 + 3
    assert est_kind.estimate_for_measurement(report, "activations", "")[0] == 4.0
    with pytest.raises(KindError, match="per_stage:2"):
        est_kind.estimate_for_measurement(report, "max_allocated", "per_stage:2")


def test_missing_estimator_makes_the_kind_unavailable_with_a_reason(monkeypatch) -> None:
    real = importlib.import_module

    def fake(name: str, *a, **k):
        if name == "estimator":
            raise ImportError("No module named 'estimator' (synthetic)")
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", fake)
    reason = KINDS["estimator.memory"].requires()
    assert reason and "estimator package is not importable" in reason
    assert KINDS["recorded.results"].requires() is None
