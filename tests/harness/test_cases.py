"""Case loading without pytest runs: ``ref:`` includes, data files (CSV/XLSX/Parquet) with checksums,
matrix ids, and the file/line/field of each error. Every case and number here is synthetic."""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

import pytest

from ndval.core.yamlsrc import CaseError, field_at_line
from ndval.harness.cases import expand_matrix, load_case_file

HEAD = """\
id: synthetic-load
title: synthetic loading case
kind: recorded.results
owner: harness-tests
severity: minor
source: synthetic numbers
"""
EXPECT = "expect:\n  - {type: ratio_within, id: band, estimate: estimate_mb, measured: measured_mb, lo: 0.5, hi: 2}\n"
CSV_TEXT = "config,tp,estimate_mb,measured_mb\ns1,1,95,100\ns2,2,52,50\n"


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "validation_cases"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def _load(root: Path, rel: str = "r/c.case.yaml"):
    loaded = load_case_file(root / rel, root)
    if loaded.errors:
        raise loaded.errors[0][1]
    return loaded.cases[0]


def test_ref_include_merges_overrides_and_is_confined(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "shared/rows.yaml": "data:\n  inline:\n    - {config: s1, tp: 1, estimate_mb: 95, measured_mb: 100}\n",
        "shared/what_if.yaml": "what_if: {tp_shardable_overhead_mb: 10, safety_buffer_mb: 0, legacy_safety_buffer_mb: 0}\n",
        "r/c.case.yaml": HEAD + "data: {ref: shared/rows.yaml}\n"
                         "params:\n  what_if: {ref: shared/what_if.yaml, tp_shardable_overhead_mb: 20}\n" + EXPECT,
    })
    lc = _load(root)
    assert lc.points[0].rows == [{"config": "s1", "tp": 1, "estimate_mb": 95, "measured_mb": 100}]
    # the key beside ref overrides the referenced value; the others come from the file
    assert lc.points[0].params.what_if.tp_shardable_overhead_mb == 20
    assert lc.points[0].params.what_if.safety_buffer_mb == 0
    for target, rule in (("../../outside.yaml", "outside the cases tree"), ("shared/none.yaml", "not found"),
                         ("r/c.case.yaml", "circular ref")):
        (root / "r/c.case.yaml").write_text(HEAD + f"data: {{ref: {target}}}\n" + EXPECT, encoding="utf-8")
        with pytest.raises(CaseError) as err:
            _load(root)
        assert (err.value.line, err.value.field) == (7, "data.ref") and rule in err.value.rule, err.value.render()


@pytest.mark.parametrize("suffix", ["csv", "xlsx", "parquet"])
def test_data_file_rows_and_checksum_are_recorded(tmp_path: Path, suffix: str) -> None:
    root = _tree(tmp_path, {"r/c.case.yaml": HEAD + f"data: {{file: rows.{suffix}}}\n" + EXPECT})
    data = root / "r" / f"rows.{suffix}"
    if suffix == "csv":
        data.write_text(CSV_TEXT, encoding="utf-8")
    elif suffix == "parquet":
        import io

        import pandas as pd

        pd.read_csv(io.StringIO(CSV_TEXT)).to_parquet(data)
    else:
        from openpyxl import Workbook

        wb = Workbook()
        for line in CSV_TEXT.splitlines():
            wb.active.append([int(c) if c.isdigit() else c for c in line.split(",")])
        wb.save(data)
    lc = _load(root)
    assert [r["config"] for r in lc.points[0].rows] == ["s1", "s2"] and lc.points[0].rows[1]["measured_mb"] == 50
    digest = hashlib.sha256(data.read_bytes()).hexdigest()
    assert lc.data_provenance == {"source": "file", "path": str(data.resolve()), "sha256": digest, "rows": 2}
    # a declared checksum must match the file
    (root / "r/c.case.yaml").write_text(HEAD + f"data:\n  file: rows.{suffix}\n  sha256: {'deadbeef' * 8}\n" + EXPECT, encoding="utf-8")
    with pytest.raises(CaseError) as err:
        _load(root)
    assert (err.value.line, err.value.field) == (9, "data.sha256") and f"file has {digest}" in err.value.rule


def test_unreadable_parquet_is_a_case_error_naming_the_field(tmp_path: Path) -> None:
    # a file that is not Parquet
    root = _tree(tmp_path, {"r/c.case.yaml": HEAD + "data: {file: rows.parquet}\n" + EXPECT})
    (root / "r" / "rows.parquet").write_bytes(b"synthetic, not parquet")
    with pytest.raises(CaseError) as err:
        _load(root)
    assert (err.value.line, err.value.field) == (7, "data.file") and "cannot read rows.parquet" in err.value.rule


def test_matrix_ids_are_stable_and_ordered() -> None:
    assert [pid for pid, _ in expand_matrix({"parallel.ep": [2, 4], "parallel.tp": [1, 2]})] == [
        "ep2-tp1", "ep2-tp2", "ep4-tp1", "ep4-tp2"]
    assert expand_matrix([{"id": "a", "x.y": 1}, {"x.y": 2}]) == [("a", {"x.y": 1}), ("y2", {"x.y": 2})]
    assert expand_matrix(None) == [("", {})]


def test_field_at_line_names_the_key_of_unparseable_text() -> None:
    text = "cases:\n  - id: a\n    params:\n      x: 1\n  - id: b\n    params:\n      x: [1\n"
    assert field_at_line(text, 7) == "cases[1].params.x"
    assert field_at_line(text, 2) == "cases[0].id"
    assert field_at_line("# only a comment\n", 1) is None
