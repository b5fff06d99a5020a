"""End-to-end on SYNTHETIC Ascend-format fixtures (tests/analyzer/synthetic.py): files → load_dataset → analyze."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer import analyze, load_dataset
from analyzer.phases import DECODE, PREFILL
from tests.analyzer import synthetic as S


def run(tmp_path: Path, steps: list[S.SynthStep], markers: bool = True, **kw):  # type: ignore[no-untyped-def]
    return analyze(load_dataset(S.write_rank(tmp_path, steps, markers)), **kw)


def test_two_step_length_modes_split_into_prefill_and_decode(tmp_path: Path) -> None:
    a = run(tmp_path, S.prefill_decode_steps(3, 9), markers=False)
    ra = a.primary
    assert ra.plan.method == "bimodal" and ra.plan.confidence == "medium"
    assert set(ra.scopes) == {"overall", PREFILL, DECODE}
    assert ra.scopes[PREFILL].indicators.value("step_count") == 3
    assert ra.scopes[DECODE].indicators.value("step_count") == 9
    assert ra.scopes[PREFILL].indicators.value("avg_step_us") > 5 * ra.scopes[DECODE].indicators.value("avg_step_us")
    for name in (PREFILL, DECODE):  # each scope analysed on its own
        assert ra.scopes[name].verdict.kind == "compute" and ra.scopes[name].phase == name
    assert ra.overall.phase == PREFILL  # overall read as the dominant phase (seed §1)


def test_host_bound_fixture_gives_host_verdict(tmp_path: Path) -> None:
    a = run(tmp_path, S.host_bound_steps())
    v = a.verdict
    assert v.kind == "host" and v.score >= 40
    ids = {h.id for h in a.primary.overall.hypotheses}
    assert "host.generic" in ids or ids & {"host.launch-gaps", "host.sampler-sync"}
    assert a.primary.overall.verdict.excluded  # single card: no communication candidate


def test_graph_mode_fixture_warns(tmp_path: Path) -> None:
    a = run(tmp_path, S.graph_mode_steps())
    assert a.primary.graph_mode
    assert any("graph mode detected" in w and "NOT evidence" in w for w in a.warnings)


def test_comm_bound_fixture(tmp_path: Path) -> None:
    a = run(tmp_path, S.comm_bound_steps())
    assert a.verdict.kind == "communication"
    assert any(h.id == "comm.overlap-disabled" for h in a.primary.overall.hypotheses)


def test_threshold_yaml_flips_verdict(tmp_path: Path) -> None:
    ds = load_dataset(S.write_rank(tmp_path, S.host_bound_steps()))
    assert analyze(ds).verdict.kind == "host"
    yaml_file = tmp_path / "strict.yaml"
    yaml_file.write_text("# synthetic test override\nthresholds:\n  hostOnlyGate: 95\n  deviceIdleSupport: 95\n")
    flipped = analyze(ds, thresholds=yaml_file)
    assert flipped.verdict.kind != "host"
    assert flipped.primary.overall.verdict.candidate("host").score == 0


def test_phase_override(tmp_path: Path) -> None:
    a = run(tmp_path, S.host_bound_steps(), phase_override=DECODE)
    ra = a.primary
    assert ra.plan.method == "override" and set(ra.scopes) == {"overall", DECODE}
    assert a.to_dict()["phase_override"] == DECODE
    with pytest.raises(ValueError):
        run(tmp_path / "x", S.host_bound_steps(), phase_override="train")


def test_results_are_immutable(tmp_path: Path) -> None:
    a = run(tmp_path, S.comm_bound_steps())
    with pytest.raises(AttributeError):
        a.verdict.kind = "host"  # type: ignore[misc]
