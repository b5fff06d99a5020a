"""docs/estimator-accuracy.md carries the current A-F table (regenerated, never hand-edited)."""

from __future__ import annotations

from pathlib import Path

from estimator.experiments.seed import accuracy_table_markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "estimator-accuracy.md"


def test_doc_table_matches_estimator() -> None:
    text = DOC.read_text(encoding="utf-8")
    table = text.split("<!-- accuracy-table:start -->")[1].split("<!-- accuracy-table:end -->")[0].strip()
    assert table == accuracy_table_markdown(), "regenerate with: python -m estimator.experiments.seed"


def test_doc_measured_errors_table_matches_estimator(measured_dir: Path) -> None:
    """The signed-error table over the published memory rows is ndval's current output."""
    from estimator.experiments.measured_accuracy import markdown, table_errors

    text = DOC.read_text(encoding="utf-8")
    table = text.split("<!-- measured-errors:start -->")[1].split("<!-- measured-errors:end -->")[0].strip()
    assert table == markdown(table_errors(measured_dir / "memory_cases.csv")), (
        "regenerate with: python -m estimator.experiments.measured_accuracy"
    )
