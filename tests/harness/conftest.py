"""Helpers for the harness tests (``pytester`` is enabled in the repository's top-level conftest.py,
because pytest rejects ``pytest_plugins`` in nested conftest files).

Every case written here is synthetic: made-up configs and numbers that exercise the harness only.

pandas is imported here, before any test runs: ``pytester`` restores ``sys.modules`` after each in-process
run, so a pandas first imported inside one (by a kind) was dropped and imported again later, a second copy
over the same C parser, whose ``read_csv(dtype=str)`` then failed ("the dtype str is not supported for
parsing") in whichever analyzer test came next on that process (order-dependent under xdist).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pandas  # noqa: F401 - imported before any in-process pytester run (see below)
import pytest

from ndval.harness import paths

#: this repository's cases tree (its gate.yaml: ndval's release rules)
REPO_CASES = paths.REPO_ROOT / "validation_cases"

SYNTHETIC_ROWS = """\
      - {config: s1, tp: 1, estimate_mb: 95, measured_mb: 100}
      - {config: s2, tp: 2, estimate_mb: 52, measured_mb: 50}
"""


def synthetic_case(case_id: str, lo: float = 0.85, hi: float = 1.10, extra: str = "") -> str:
    """A synthetic ``recorded.results`` case; with the default band both rows pass."""
    return textwrap.dedent(f"""\
        id: {case_id}
        title: synthetic case {case_id}
        kind: recorded.results
        owner: harness-tests
        severity: major
        source: synthetic numbers for the harness tests
        data:
          inline:
        """) + SYNTHETIC_ROWS + textwrap.dedent(f"""\
        expect:
          - {{type: ratio_within, id: band, estimate: estimate_mb, measured: measured_mb, lo: {lo}, hi: {hi}, criterion: P1}}
        """) + extra


@pytest.fixture
def cases(pytester: pytest.Pytester):
    """``cases("a/x.case.yaml", text)`` writes a file under the pytester's validation_cases/."""

    def write(rel: str, text: str) -> Path:
        gate = pytester.path / "validation_cases" / "gate.yaml"
        if not gate.exists():  # ndval's own release rules (the seed's criteria), as in this repository's tree
            gate.parent.mkdir(parents=True, exist_ok=True)
            gate.write_text((REPO_CASES / "gate.yaml").read_text(encoding="utf-8"), encoding="utf-8")
        path = pytester.path / "validation_cases" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


@pytest.fixture
def summary(pytester: pytest.Pytester):
    """Load ``reports/summary.json`` of the last pytester run."""

    def load() -> dict:
        return json.loads((pytester.path / "reports" / "summary.json").read_text(encoding="utf-8"))

    return load


@pytest.fixture(autouse=True)
def _fast_inner_runs(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner pytester runs skip hypothesis' plugin: pytester restores sys.modules after each
    in-process run, so the plugin would re-import (and assertion-rewrite) hypothesis every time.
    (Set after pytester's own setup, which clears PYTEST_ADDOPTS.)"""
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest")
    monkeypatch.delenv("NDVAL_REPORTS_DIR", raising=False)
