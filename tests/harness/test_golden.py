"""The golden lifecycle end to end (pytester, synthetic cases), modelled on pytest-regressions' workflow test."""

from __future__ import annotations

import json

import pytest

from ndval.harness import golden
from ndval.harness.gate import EXIT_GATE_FAILED, EXIT_PASS

from .conftest import synthetic_case

GOLDEN_A = "golden/recorded/g/synthetic-a.yaml"
GOLDEN_B = "golden/recorded/g/synthetic-b.yaml"


def two_cases(value_a: int = 95) -> str:
    a = synthetic_case("synthetic-a", extra="golden: true\n").replace("estimate_mb: 95", f"estimate_mb: {value_a}")
    b = synthetic_case("synthetic-b", extra="golden: true\n")
    return "schema_version: 1\ncases:\n" + "".join(
        "  - " + "\n    ".join(text.rstrip("\n").splitlines()) + "\n" for text in (a, b))


def test_golden_lifecycle(pytester: pytest.Pytester, cases, summary) -> None:
    root = pytester.path
    cases("recorded/g.case.yaml", two_cases())
    # 1. missing golden => fail, nothing written under golden/, obtained payload for review under reports/
    r = pytester.runpytest("validation_cases")
    r.assert_outcomes(failed=2)
    assert not (root / "golden").exists()
    assert (root / "reports/golden/recorded/g/synthetic-a.yaml.obtained").is_file()
    assert {d["status"] for d in summary()["golden"]["drift"]} == {"missing"}
    # 2. --regen-all-golden writes every selected golden and passes
    assert pytester.runpytest("validation_cases", "--regen-all-golden").ret == EXIT_PASS
    text_a = (root / GOLDEN_A).read_text()
    assert "format_version: 1" in text_a and "case: synthetic-a" in text_a
    assert pytester.runpytest("validation_cases").ret == EXIT_PASS
    # 3. a changed value => mismatch: .obtained + unified and HTML diff under reports/, fail, golden untouched
    cases("recorded/g.case.yaml", two_cases(value_a=96))
    r = pytester.runpytest("validation_cases")
    assert r.ret == EXIT_GATE_FAILED
    r.assert_outcomes(passed=1, failed=1)
    r.stdout.fnmatch_lines(["*golden*synthetic-a.yaml: 1 field(s) differ*"])
    review = root / "reports/golden/recorded/g"
    assert "estimate_mb: 96" in (review / "synthetic-a.yaml.obtained").read_text()
    assert not (review / "synthetic-b.yaml.obtained").exists()
    diff = (review / "synthetic-a.yaml.diff").read_text()
    assert "-    estimate_mb: 95" in diff and "+    estimate_mb: 96" in diff
    assert "<table" in (review / "synthetic-a.diff.html").read_text()
    assert (root / GOLDEN_A).read_text() == text_a
    # 4. --update-golden rewrites only the mismatching golden and still fails
    mtime_b = (root / GOLDEN_B).stat().st_mtime_ns
    r = pytester.runpytest("validation_cases", "--update-golden")
    assert r.ret == EXIT_GATE_FAILED
    assert "estimate_mb: 96" in (root / GOLDEN_A).read_text()
    assert (root / GOLDEN_B).stat().st_mtime_ns == mtime_b
    assert pytester.runpytest("validation_cases").ret == EXIT_PASS
    # 5. goldens of unselected cases are never touched; unused goldens are listed, not deleted
    orphan = root / "golden/recorded/g/retired-case.yaml"
    orphan.write_text("format_version: 1\ncase: retired-case\ndata: {}\n")
    cases("recorded/g.case.yaml", two_cases(value_a=97))
    release = (root / "reports" / "summary.json").read_bytes()
    r = pytester.runpytest("validation_cases", "-k", "synthetic-b", "--regen-all-golden")
    assert r.ret == EXIT_PASS
    assert "estimate_mb: 96" in (root / GOLDEN_A).read_text()
    # a -k run is PARTIAL: its summary goes to reports/partial/, the release summary stays as it was
    assert (root / "reports" / "summary.json").read_bytes() == release
    partial = json.loads((root / "reports" / "partial" / "summary.json").read_text())
    assert partial["run"]["partial"].startswith("1 item(s) deselected")
    assert partial["golden"]["unused"] == [str(orphan)]
    r.stdout.fnmatch_lines(["*unused golden (not deleted; --prune-golden deletes it)*retired-case.yaml*"])
    assert orphan.exists()


def test_compare_tolerances_are_per_field() -> None:
    # floats: |o - e| <= max(rel·|e|, abs); integers, strings and booleans exact
    assert golden.compare({"x": 1.0 + 1e-9}, {"x": 1.0}, rel=1e-6, abs_tol=0) == []
    assert golden.compare({"x": 1.1}, {"x": 1.0}, rel=1e-6, abs_tol=0)[0]["field"] == "x"
    assert golden.compare({"n": 3}, {"n": 4}, rel=1.0, abs_tol=1.0)[0]["diff"] == "differs"
    assert golden.compare({"s": "a", "l": [1, 2]}, {"s": "a", "l": [1]}, 0, 0)[0]["diff"] == "length"
    assert golden.compare({"a": 1}, {"b": 1}, 0, 0) == [
        {"field": "a", "obtained": 1, "expected": "<absent>", "diff": "added"},
        {"field": "b", "obtained": "<absent>", "expected": 1, "diff": "removed"}]


def test_dump_is_deterministic_and_rounded() -> None:
    a = golden.dump("c", {"b": 1 / 3, "a": [1, 2.0]})
    assert a == golden.dump("c", {"a": [1, 2.0], "b": 1 / 3})
    assert "b: 0.3333333333\n" in a


def test_atomic_write_gives_a_normal_file_mode(tmp_path) -> None:
    """mkstemp's 0o600 must not leak into goldens and reports; an existing file keeps its mode."""
    import os

    from ndval.core.atomic import write_text

    umask = os.umask(0o022)
    try:
        fresh = write_text(tmp_path / "fresh.yaml", "a: 1\n")
        assert fresh.stat().st_mode & 0o777 == 0o644
        kept = tmp_path / "kept.yaml"
        kept.write_text("a: 0\n")
        kept.chmod(0o640)
        write_text(kept, "a: 2\n")
        assert kept.stat().st_mode & 0o777 == 0o640 and kept.read_text() == "a: 2\n"
    finally:
        os.umask(umask)


def test_prune_golden_deletes_the_unused_and_the_inline_diff_ends_with_the_full_one(pytester, cases) -> None:
    from .conftest import synthetic_case

    cases("recorded/g.case.yaml", synthetic_case("gold") + "golden: true\n")
    assert pytester.runpytest("validation_cases", "--regen-all-golden").ret == 0
    stale = pytester.path / "golden" / "recorded" / "gone" / "old-case.yaml"
    stale.parent.mkdir(parents=True)
    stale.write_text("format_version: 1\n")
    listed = pytester.runpytest("validation_cases")
    listed.stdout.fnmatch_lines(["*unused golden (not deleted; --prune-golden deletes it): *old-case.yaml"])
    assert stale.exists()
    # a broken case file: its goldens would look unused, so nothing is pruned
    cases("recorded/broken.case.yaml", "id: [unclosed\n")
    refused = pytester.runpytest("validation_cases", "--prune-golden")
    refused.stdout.fnmatch_lines(["*--prune-golden: nothing deleted, 1 case file(s)/case(s)*broken.case.yaml*"])
    assert stale.exists()
    (pytester.path / "validation_cases" / "recorded" / "broken.case.yaml").unlink()
    pruned = pytester.runpytest("validation_cases", "--prune-golden")
    pruned.stdout.fnmatch_lines(["*unused golden pruned (--prune-golden): *old-case.yaml"])
    assert not stale.exists() and (pytester.path / "golden" / "recorded" / "g" / "gold.yaml").exists()
    golden = pytester.path / "golden" / "recorded" / "g" / "gold.yaml"
    golden.write_text(golden.read_text().replace("estimate_mb: 95", "estimate_mb: 94"))
    drift = pytester.runpytest("validation_cases")
    drift.stdout.fnmatch_lines(["*golden diff (expected -> obtained):*", "full diff: *gold.yaml.diff (side by side: *gold.diff.html)"])
