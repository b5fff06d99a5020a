"""The mutation check's list (tools/mutants.py) targets the code as it is: every mutant's text occurs
exactly once in its file and every test file it names exists, so ``make test-mutation`` cannot silently
test nothing after a refactoring."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import mutation
from tools.mutants import MUTANTS, Mutant

REPO = Path(__file__).resolve().parent.parent


def test_mutant_ids_are_unique_and_grouped() -> None:
    ids = [m.id for m in MUTANTS]
    assert len(ids) == len(set(ids))
    groups = {m.group for m in MUTANTS}
    assert {"seed-formula", "analyzer-weight", "analyzer-gain", "assertion-band"} <= groups


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.id for m in MUTANTS])
def test_mutant_targets_current_code(mutant: Mutant) -> None:
    text = (REPO / mutant.path).read_text(encoding="utf-8")
    assert text.count(mutant.old) == 1, f"{mutant.id}: update tools/mutants.py, {mutant.path} changed"
    assert mutant.new != mutant.old
    for test in mutant.tests:
        assert (REPO / test).is_file(), test


def test_apply_writes_and_reports_stale(tmp_path: Path) -> None:
    """SYNTHETIC workspace: a unique match is replaced, a missing or repeated one is stale."""
    (tmp_path / "f.py").write_text("x = 1\ny = 2\ny = 2\n", encoding="utf-8")
    m = Mutant("t", "seed-formula", "f.py", "x = 1", "x = 2", (), "")
    assert mutation.apply(tmp_path, m) == "x = 1\ny = 2\ny = 2\n"
    assert (tmp_path / "f.py").read_text(encoding="utf-8").startswith("x = 2")
    assert mutation.apply(tmp_path, Mutant("t", "g", "f.py", "y = 2", "y = 3", (), "")) is None
    assert mutation.apply(tmp_path, Mutant("t", "g", "missing.py", "a", "b", (), "")) is None
    out = mutation.run_mutant(tmp_path, Mutant("t", "g", "f.py", "z = 9", "z = 0", (), ""))
    assert out.status == "stale"


def test_first_failure_picks_the_summary_line() -> None:
    output = ("....F\n"
              "tests/a/test_x.py:12: AssertionError: 1 != 2\n"
              "FAILED tests/a/test_x.py::test_y - assert 1 == 2\n")
    assert mutation.first_failure(output) == (
        "FAILED tests/a/test_x.py::test_y - assert 1 == 2 | tests/a/test_x.py:12: AssertionError: 1 != 2")
