"""The assertion package: one module per family, the ``ndval.assertions`` entry-point group, and the
docs tables of assertions and kinds generated from the registries."""

from __future__ import annotations

import importlib.metadata
import sys
import textwrap
from typing import Literal

import pytest

import ndval.harness.assertions as assertions_pkg
from ndval.harness import doctables
from ndval.harness.assertions import REGISTRY, AssertionSpec, register_assertion
from ndval.harness.results import RunResult


def test_every_builtin_type_lives_in_a_family_module():
    families = {cls.__module__ for cls in REGISTRY.values() if cls.__module__.startswith("ndval.harness.")}
    assert families == set(assertions_pkg.BUILTIN_MODULES)
    assert REGISTRY["pearson_r_gt"].__module__ == "ndval.harness.assertions.correlation"
    assert REGISTRY["ratio_within"].__module__ == "ndval.harness.assertions.rowwise"


def test_entry_point_module_registers_its_types(tmp_path, monkeypatch):
    (tmp_path / "team_checks.py").write_text(textwrap.dedent("""
        from typing import Literal
        from ndval.harness.assertions import AssertionSpec, register_assertion

        @register_assertion
        class RowsAtLeast(AssertionSpec):
            '''At least ``n`` rows in the result table (a third-party check).'''
            type: Literal["rows_at_least"]
            n: int

            def evaluate(self, result, ctx):
                got = len(self.rows(result))
                return self.make(self.id or self.type, target="rows", observed=got, expected=f">= {self.n}",
                                 margin=got - self.n, passed=got >= self.n, message=f"{got} rows")
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = importlib.metadata.EntryPoint(name="team", value="team_checks", group="ndval.assertions")
    real = importlib.metadata.entry_points

    def fake(**kw):
        return [ep] if kw.get("group") == "ndval.assertions" else real(**kw)

    monkeypatch.setattr(importlib.metadata, "entry_points", fake)
    monkeypatch.setattr(assertions_pkg, "_entry_points_loaded", False)
    try:
        registry = assertions_pkg.load_assertions()
        spec = registry["rows_at_least"].model_validate({"type": "rows_at_least", "n": 2})
        res = spec.evaluate(RunResult(table=[{"a": 1}, {"a": 2}]), assertions_pkg.EvalContext())
        assert res.passed and res.observed == 2
    finally:
        REGISTRY.pop("rows_at_least", None)
        sys.modules.pop("team_checks", None)


def test_a_second_class_claiming_a_type_is_refused():
    with pytest.raises(TypeError, match="registered twice"):
        @register_assertion
        class Another(AssertionSpec):
            type: Literal["ratio_within"]


def test_docs_tables_match_the_registries():
    text = doctables.DOC.read_text(encoding="utf-8")
    _, drifted = doctables.sync(text)
    assert drifted == [], f"docs/harness.md out of date: {drifted}; run python -m ndval.harness.doctables --write"


def test_drift_is_detected_and_rewritten():
    text = doctables.DOC.read_text(encoding="utf-8")
    broken = text.replace("| `mape_le` |", "| `mape_lt` |", 1)
    assert broken != text
    fixed, drifted = doctables.sync(broken)
    assert drifted == ["assertions"]
    assert fixed == text
    _, missing = doctables.sync(text.replace("<!-- end generated: kinds -->", ""))
    assert missing == ["kinds (markers missing)"]


def test_the_table_row_carries_docstring_and_fields():
    table = doctables.assertions_table()
    row = next(line for line in table.splitlines() if line.startswith("| `ratio_within` |"))
    assert "rowwise" in row and "`lo`" in row and "`mostly`" in row
    assert "`where`" not in row  # common fields are described once, above the table
