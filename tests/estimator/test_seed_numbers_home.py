"""The measured A-F numbers have one home, ``validation_cases/recorded/seed_a_f.csv``: the estimator's
``SEED_CONFIGS`` and both seed cases read it, and it matches the seed document's own table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from estimator.experiments.seed import SEED_CONFIGS, SEED_TABLE, load_seed_configs
from ndval.harness import paths
from ndval.harness.cases import load_case_file

CASES = ("recorded/seed_peak_hbm.case.yaml", "estimator/seed_configs.case.yaml")
#: "A	2	1	16	10941	8255	0.75 (低估)" — config, EP, TP, DP, measured, reference estimate, ratio
SEED_ROW = re.compile(r"^([A-F])\t(\d+)\t(\d+)\t(\d+)\t(\d+)\t(\d+)\t([\d.]+)", re.MULTILINE)


def test_seed_configs_are_read_from_the_csv() -> None:
    assert SEED_TABLE.name == "seed_a_f.csv" and load_seed_configs() == SEED_CONFIGS
    assert list(SEED_CONFIGS) == ["A", "B", "C", "D", "E", "F"]


@pytest.mark.parametrize("case_file", CASES)
def test_cases_load_the_same_rows(case_file: str) -> None:
    path = paths.cases_dir() / case_file
    loaded = load_case_file(path, paths.cases_dir())
    assert loaded.errors == []
    for case in loaded.cases:  # every case reads the CSV, none carries its own inline copy
        prov = case.data_provenance
        assert prov["source"] == "file" and Path(prov["path"]).resolve() == SEED_TABLE.resolve(), case.case.id
    rows = {r["config"]: r for r in loaded.cases[0].points[0].rows}
    assert sorted(rows) == list(SEED_CONFIGS)
    estimate_col = "estimate_mb" if case_file.startswith("recorded") else "recorded_mb"
    for label, seed in SEED_CONFIGS.items():
        r = rows[label]
        assert (r["ep"], r["tp"], r["dp"]) == (seed.ep, seed.tp, seed.dp)
        assert (r["measured_mb"], r[estimate_col]) == (seed.measured_peak_mb, seed.reference_estimate_mb)


def test_csv_matches_the_seed_document() -> None:
    doc = paths.shared_dir() / "seeds" / "sapp-nd-validation-issue.zh.md"
    if not doc.is_file():
        pytest.skip(f"seed document not available at {doc}")
    table = {m[0]: m for m in SEED_ROW.findall(doc.read_text(encoding="utf-8"))}
    assert sorted(table) == list(SEED_CONFIGS)
    for label, seed in SEED_CONFIGS.items():
        _, ep, tp, dp, measured, estimate, ratio = table[label]
        assert (seed.ep, seed.tp, seed.dp) == (int(ep), int(tp), int(dp))
        assert (seed.measured_peak_mb, seed.reference_estimate_mb) == (float(measured), float(estimate))
        assert round(seed.reference_estimate_mb / seed.measured_peak_mb, 2) == float(ratio)
