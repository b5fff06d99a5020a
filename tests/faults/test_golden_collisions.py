"""Golden collisions (issue: case ``gamma`` at matrix point ``tool: x`` and case ``gamma__toolx`` shared one golden
file; so did matrix values ``"a b"`` / ``"a/b"`` / ``"a:b"``; lint said valid, ``--regen-all-golden`` passed, the next
run drifted and flip-flopped; ``Foo`` / ``foo`` share one file on a case-insensitive file system)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from ndval.harness.commands.lint import lint_paths
from tests.harness.conftest import SYNTHETIC_ROWS


def _case(case_id: str, matrix: str = "") -> str:
    return textwrap.dedent(f"""\
        id: {case_id}
        title: synthetic golden case {case_id}
        kind: recorded.results
        owner: harness-tests
        severity: major
        source: synthetic numbers for the collision tests
        golden: true
        data:
          inline:
        """) + SYNTHETIC_ROWS + (textwrap.dedent(matrix) if matrix else "") + textwrap.dedent("""\
        expect:
          - {type: ratio_within, id: band, estimate: estimate_mb, measured: measured_mb, lo: 0.5, hi: 2}
        """)


def _many(*cases: str) -> str:
    return "cases:\n" + "".join(textwrap.indent(c, "  ").replace("  id:", "- id:", 1) for c in cases)


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / "validation_cases" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


MATRIX_TOOL = "matrix:\n  tool: [x]\n"


def test_golden_collision_case_and_matrix_point_refused_by_lint(tmp_path: Path) -> None:
    path = _write(tmp_path, "recorded/g.case.yaml", _many(_case("gamma", MATRIX_TOOL), _case("gamma__toolx")))
    _, errors = lint_paths([path])
    clashes = [e for e in errors if "golden collision" in e]
    assert len(clashes) == 2, errors
    assert all("gamma" in e and "gamma__toolx" in e and str(path) in e for e in clashes)


@pytest.mark.parametrize("values", [["a b", "a/b"], ["a/b", "a:b"]])
def test_golden_collision_matrix_values_refused_by_lint(tmp_path: Path, values: list[str]) -> None:
    matrix = "matrix:\n  tool: " + json.dumps(values) + "\n"
    path = _write(tmp_path, "recorded/v.case.yaml", _case("vals", matrix))
    _, errors = lint_paths([path])
    assert any("golden collision" in e for e in errors), errors


def test_golden_collision_after_case_folding_names_both_files(tmp_path: Path) -> None:
    a = _write(tmp_path, "recorded/Foo.case.yaml", _case("one"))
    b = _write(tmp_path, "recorded/foo.case.yaml", _case("one"))
    if not b.exists() or a.samefile(b):
        pytest.skip("this file system is case-insensitive: Foo/foo are one file here")
    _, errors = lint_paths([tmp_path / "validation_cases"])
    clashes = [e for e in errors if "case-folding" in e]
    assert clashes and all("Foo.case.yaml" in e and "foo.case.yaml" in e for e in clashes), errors


def test_distinct_goldens_are_not_collisions(tmp_path: Path) -> None:
    path = _write(tmp_path, "recorded/ok.case.yaml", _many(_case("alpha", MATRIX_TOOL), _case("beta")))
    n_ok, errors = lint_paths([path])
    assert errors == [] and n_ok == 2


def test_golden_collision_breaks_the_items_in_a_run(pytester: pytest.Pytester) -> None:
    _write(pytester.path, "recorded/g.case.yaml", _many(_case("gamma", MATRIX_TOOL), _case("gamma__toolx")))
    result = pytester.runpytest("validation_cases", "--regen-all-golden", "-p", "no:randomly")
    result.assert_outcomes(errors=2)
    summary = json.loads((pytester.path / "reports" / "summary.json").read_text())
    assert summary["gate"]["exit_code"] == 2
    assert all("golden collision" in c["message"] for c in summary["cases"]), summary["cases"]
