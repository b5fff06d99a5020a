"""Real measured rows with cells blanked, for the not-evaluable tests (the rows are published data read
in place from ../shared; only the blanking is made up)."""

from __future__ import annotations

import csv
from collections.abc import Collection, Mapping
from pathlib import Path


def write_rows_with_gaps(src: Path, out: Path, case_ids: Collection[str] | None, source_id: str | None,
                         blanked: Mapping[str, str]) -> int:
    """Copy the real rows of ``src`` (a published measured table) selected by ``case_ids`` and/or
    ``source_id`` to ``out``, with the cell ``blanked[case_id]`` emptied in those rows; returns the row count."""
    with src.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        rows = [r for r in reader if (case_ids is None or r["case_id"] in case_ids)
                and (source_id is None or r["source_id"] == source_id)]
        fields = reader.fieldnames or []
    for row in rows:
        if row["case_id"] in blanked:
            row[blanked[row["case_id"]]] = ""
    with out.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)
