"""Thresholds: the seed's defaults, severity formula, YAML overrides and their errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.thresholds import ThresholdError, default_thresholds, passes, resolve, severity

SEED_DEFAULTS = {  # seed §2.1–§2.4 and §2 trigger score, §6.3 cap
    "hostOnlyGate": 45, "deviceIdleSupport": 8, "dispatchPerStep": 1200, "hostExclusivePerStepUs": 800,
    "hostBusyGate": 45, "deviceBusyGate": 82, "computeShareGate": 55, "commExposedLow": 12,
    "macRatioComputeBound": 0.45, "mte2RatioMemoryBound": 0.45, "lowUtilizationGate": 0.3, "commShareGate": 12,
    "commExposedGate": 5, "commLatencyBoundUs": 60, "commBandwidthBoundMb": 16, "copyShareGate": 4,
    "hostCopyShareGate": 8, "d2hPerStepUs": 200, "triggerScore": 40, "optimisticCapPct": 70,
    "commOverlapLow": 40, "h2dPerStepUs": 200,
}
SEED_HYPOTHESIS_CONDITIONS = {  # seed §4 table, (value, relation)
    "hypEagerDispatchPerStep": (400, ">="), "hypEagerDeviceBusyMax": (95, "<"), "hypSyncPerStep": (0.5, ">="),
    "hypSyncPctOfWall": (3, ">="), "hypPrefillHostExclusivePct": (15, ">="), "hypPrefillDispatchPerStep": (300, ">="),
    "hypLaunchGapCount": (5, ">="), "hypLaunchGapMeanUs": (80, ">="), "hypLaunchGapIdlePct": (5, ">="),
    "hypPrefillComputeSharePct": (55, ">="), "hypDecodeDeviceBusyPct": (70, ">="), "hypDecodeMacMax": (0.35, "<"),
    "hypDecodeMte2Min": (0.25, ">="), "hypFragmentedDeviceBusyPct": (70, ">="),
    "hypFragmentedComputeSharePct": (40, ">="), "hypFragmentedMedianOpUs": (30, "<"),
    "hypDecodeCommSharePct": (12, ">="), "hypDecodeCommMedianUs": (120, "<="), "hypPrefillCommSharePct": (12, ">="),
    "hypPrefillCommMessageMb": (1, ">="), "hypOverlapDisabledCommSharePct": (8, ">="),
    "hypOverlapDisabledOverlapPct": (40, "<"), "hypD2hPerStepUs": (150, ">="), "hypH2dPerStepUs": (200, ">="),
}


def test_seed_hypothesis_conditions() -> None:
    th = default_thresholds()
    for k, (value, relation) in SEED_HYPOTHESIS_CONDITIONS.items():
        assert (th.v(k), th[k].relation) == (value, relation), k


def test_seed_defaults_and_every_threshold_documented() -> None:
    th = default_thresholds()
    for k, v in SEED_DEFAULTS.items():
        assert th.v(k) == v, k
    for t in th.values():
        assert t.rationale and t.source and t.unit, t.id


def test_relations_of_lower_gates() -> None:
    th = default_thresholds()
    assert th["commLatencyBoundUs"].relation == "<=" and th["commExposedLow"].relation == "<"
    assert passes(60.0, th["commLatencyBoundUs"]) and not passes(60.1, th["commLatencyBoundUs"])
    assert not passes(None, th["commShareGate"])


def test_severity_formula() -> None:
    th = default_thresholds()
    gate = th["commShareGate"]  # 12 %, saturation 24 %
    assert severity(11.9, gate) == 0.0  # a gate, not a gradient
    assert severity(12.0, gate) == 0.5
    assert severity(18.0, gate) == pytest.approx(0.5 + 0.5 * (18 - 12) / (24 - 12))
    assert severity(100.0, gate) == 1.0
    low = th["commLatencyBoundUs"]  # <= 60 us, saturation 30 us
    assert severity(45.0, low) == pytest.approx(0.5 + 0.5 * (60 - 45) / (60 - 30))
    assert severity(None, gate) == 0.0


def test_yaml_override_flat_and_nested(tmp_path: Path) -> None:
    flat = tmp_path / "flat.yaml"
    flat.write_text("hostOnlyGate: 35\ncommShareGate: 10\n")
    th = resolve(flat)
    assert th.v("hostOnlyGate") == 35 and th.v("commShareGate") == 10 and th.v("deviceBusyGate") == 82
    nested = tmp_path / "nested.yaml"
    nested.write_text("thresholds:\n  deviceBusyGate: {value: 85, saturation: 95}\n")
    th = resolve(nested)
    assert th.v("deviceBusyGate") == 85 and th["deviceBusyGate"].effective_saturation == 95


@pytest.mark.parametrize("text, needle", [
    ("nope: 3\n", "unknown threshold id"),
    ("hostOnlyGate: high\n", "must be a finite number"),
    ("thresholds: [1, 2]\n", "must be a mapping"),
    ("hostOnlyGate: {value: 3, colour: red}\n", "unknown keys"),
    ("a: [unclosed\n", "invalid YAML"),
    ("weightHostPrimary: {value: 40, saturation: 50}\n", "allowed: value, rationale"),  # a parameter is no gate
    ("gainLowFraction: lots\n", "field gainLowFraction.value: must be a finite number"),
])
def test_bad_override_files_name_file_and_field(tmp_path: Path, text: str, needle: str) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(ThresholdError) as err:
        resolve(p)
    assert needle in str(err.value) and str(p) in str(err.value)


def test_overrides_do_not_mutate_defaults() -> None:
    base = default_thresholds()
    changed = base.with_overrides({"triggerScore": 10})
    assert base.v("triggerScore") == 40 and changed.v("triggerScore") == 10


SEED_PARAMETERS = {  # seed §2 weights, §5 priorityScore, §6.1 gain factors, §6.2 ranges, §7 comparison rules
    "weightHostPrimary": 45, "weightHostSupport": 35, "weightHostBusy": 20, "weightComputeBusy": 55,
    "weightComputeCommLow": 25, "weightComputeBound": 20, "weightMemoryBound": 12, "weightCommShare": 55,
    "weightCommLatency": 20, "weightCommBandwidth": 15, "weightCommOverlap": 15, "weightCopyShare": 45,
    "weightCopySync": 12, "weightCopyH2d": 10,
    "priorityWeightHigh": 3, "priorityWeightMedium": 2, "priorityWeightLow": 1, "priorityPointsPerWeight": 20,
    "priorityScoreFactor": 0.4, "priorityScoreCapPoints": 40, "priorityGainFactor": 0.4, "priorityGainCapPoints": 20,
    "gainLowFraction": 0.6, "gainGraphModeFactor": 0.75, "gainGraphModeCap": 0.8, "gainSyncRemovalFactor": 0.8,
    "gainCommOverlapFactor": 0.6, "gainCommBatchFactor": 0.7, "gainD2hAsyncFactor": 0.7,
    "gainConcurrencyBonusPct": 15, "gainConcurrencyCapPct": 60,
    "compareUnchangedPct": 1, "compareVerdictFloorPct": 1, "compareVerdictGainFactor": 0.5,
    "compareStepCountTolPct": 15, "comparePhaseMixTolPt": 10, "compareWindowTolPct": 20, "compareTopOperators": 8,
    "empiricalQuantizationLowPct": 20, "empiricalQuantizationHighPct": 45, "empiricalSmallOpFusionLowPct": 10,
    "empiricalSmallOpFusionHighPct": 30, "empiricalChunkedPrefillLowPct": 5, "empiricalChunkedPrefillHighPct": 25,
    "empiricalParallelStrategyLowPct": 5, "empiricalParallelStrategyHighPct": 30,
}


#: ndval's own parameters (not in the seed; source and rationale in the file say so)
NDVAL_PARAMETERS = {"weightCommWait": 15, "commLinkBandwidthGBps": 300}


def test_seed_parameters_documented_and_not_gates() -> None:
    th = default_thresholds()
    advisor = {k for k, p in th.parameters.items() if p.group == "advisor"}  # msprof-analyze / HTA constants
    assert set(th.parameters) - advisor == set(SEED_PARAMETERS) | set(NDVAL_PARAMETERS)
    assert all(th.parameters[k].source and th.parameters[k].rationale and th.parameters[k].unit for k in advisor)
    for k, v in {**SEED_PARAMETERS, **NDVAL_PARAMETERS}.items():
        p = th.parameters[k]
        assert th.v(k) == v and p.rationale and p.source and p.unit, k
        assert k not in th  # the mapping (recorded in every analysis) holds the gates only


def test_parameters_override_like_thresholds(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("weightHostPrimary: 40\n")
    assert resolve(f).v("weightHostPrimary") == 40  # flat form
    f.write_text("thresholds:\n  weightHostPrimary: 40\n  compareVerdictGainFactor: {value: 0.4, rationale: why}\n")
    th = resolve(f)
    assert th.v("weightHostPrimary") == 40 and th.v("compareVerdictGainFactor") == 0.4
    assert th.parameters["compareVerdictGainFactor"].rationale == "why"
    assert default_thresholds().v("weightHostPrimary") == 45
