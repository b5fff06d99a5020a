"""docs/estimator-accuracy.md carries the current A-F table (regenerated, never hand-edited)."""

from __future__ import annotations

from pathlib import Path

from estimator.seed import accuracy_table_markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "estimator-accuracy.md"


def test_doc_table_matches_estimator() -> None:
    text = DOC.read_text(encoding="utf-8")
    table = text.split("<!-- accuracy-table:start -->")[1].split("<!-- accuracy-table:end -->")[0].strip()
    assert table == accuracy_table_markdown(), "regenerate with: python -m estimator.seed"
