"""Reports: stable JSON with units in names, Markdown, self-contained HTML with charts (SYNTHETIC fixture)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from analyzer import analyze, load_dataset, report
from tests.analyzer import synthetic as S

UNIT_TOKENS = ("_us", "_pct", "_count", "_ratio", "_mb", "per_step", "_tflops")


@pytest.fixture(scope="module")
def analysis(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("synthetic")
    return analyze(load_dataset(S.write_rank(root, S.prefill_decode_steps(3, 9), markers=False)))


def test_json_is_stable_and_round_trips(analysis) -> None:  # type: ignore[no-untyped-def]
    text = report.to_json(analysis)
    assert text == report.to_json(analysis)
    d = json.loads(text)
    assert d == json.loads(json.dumps(analysis.to_dict()))  # nothing lost or renamed on the way out
    assert d["schema_version"] == 1
    scopes = d["ranks"][0]["scopes"]
    assert set(scopes["prefill"]) >= {"indicators", "verdict", "hypotheses", "recommendations", "combined_gain",
                                      "windows_us"}
    # Hand arithmetic on the SYNTHETIC construction (tests/analyzer/synthetic.py):
    # prefill step = 100 kernels of 200 µs, 1 µs apart: window 100·201 − 1 = 20099 µs, busy 20000 µs;
    # decode step = 50 kernels of 50 µs: window 50·51 − 1 = 2549 µs, busy 2500 µs. No communication.
    busy = {"prefill": 100 * 20000 / 20099, "decode": 100 * 2500 / 2549}
    for phase, pct in busy.items():
        ind = scopes[phase]["indicators"]["indicators"]
        assert ind["device_busy_pct"]["value"] == pytest.approx(pct, abs=1e-4)
        # seed §2.2: 55 × max(sev busy, sev share) + 25 × sev(comm exposed 0 % < 12 %, saturation 6 % -> 1);
        # share = busy (all device time is compute); sev share = 0.5 + 0.5 × (pct − 55) / (110 − 55)
        score = 55 * (0.5 + 0.5 * min(1.0, (pct - 55) / 55)) + 25 * 1.0
        assert scopes[phase]["verdict"]["kind"] == "compute"
        assert scopes[phase]["verdict"]["score"] == pytest.approx(score, abs=0.05)
    # overall: 3·20000 + 9·2500 = 82500 µs busy over 117449 µs (12 steps, 11 gaps of 3000 µs) = 70.2 % < 82 %
    overall = scopes["overall"]["indicators"]["indicators"]
    assert overall["device_busy_pct"]["value"] == pytest.approx(100 * 82500 / 117449, abs=1e-4)
    assert d["verdict"]["kind"] == "none" and d["verdict"]["score"] == 0.0


def test_indicator_ids_carry_units(analysis) -> None:  # type: ignore[no-untyped-def]
    ids = analysis.to_dict()["ranks"][0]["scopes"]["overall"]["indicators"]["indicators"]
    for k in ids:
        assert any(tok in k for tok in UNIT_TOKENS), k


def test_markdown_has_verdict_evidence_and_thresholds(analysis) -> None:  # type: ignore[no-untyped-def]
    md = report.to_markdown(analysis)
    assert "# ndval analysis" in md and "#### Evidence — compute" in md
    assert "| deviceBusyGate |" in md and "Scope `prefill`" in md


def test_html_is_self_contained_with_charts(analysis, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page = report.to_html(analysis)
    assert page.count("<svg") >= 2 * len(analysis.primary.scopes)  # score chart + time breakdown per scope
    assert "trigger 40" in page and "exposed communication" in page
    assert "<script" not in page and not re.search(r"(src|href)\s*=", page)
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", page)


def test_breakdown_segments_sum_to_wall(analysis) -> None:  # type: ignore[no-untyped-def]
    ind = analysis.to_dict()["ranks"][0]["scopes"]["decode"]["indicators"]["indicators"]
    seg = report.breakdown_us(ind)
    assert seg is not None and sum(seg.values()) == pytest.approx(ind["wall_us"]["value"], rel=1e-6)
