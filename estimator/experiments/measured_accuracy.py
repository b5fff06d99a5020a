"""Signed memory errors of ndval over a published measurement table, like for like.

``python -m estimator.experiments.measured_accuracy [memory_cases.csv]`` prints every row's estimate,
measurement and signed error (estimate/measured − 1), under-estimates first, and the summary
(median and max |error|, rows outside 0.90–1.10). Each row goes through the same mapping as the
``estimator.memory`` validation kind: ``estimator.experiments.measured.config_from_measured_row`` (profile
``megatron``, ``fsdp2`` where the row says FSDP), options of ``presets.fixed()``, and
``estimator.experiments.measured.estimate_for_measurement``. Nothing is fitted here.
"""

from __future__ import annotations

import csv
import statistics
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from estimator.config import presets
from estimator.config.schema import load_config
from estimator.experiments.measured import (
    NotStated,
    config_from_measured_row,
    estimate_for_measurement,
    measured_kind_of,
)
from estimator.memory import estimate_memory
from ndval.core.render import markdown_table
from ndval.core.units import MIB_PER_GIB

BAND = (0.90, 1.10)


@dataclass(frozen=True)
class RowError:
    """One measured row: estimate and measurement in GiB, or why it is not evaluable."""

    case_id: str
    measured_gib: float | None
    estimate_gib: float | None
    estimate_of: str = ""
    not_evaluable: str = ""

    @property
    def signed_error(self) -> float:
        """estimate/measured − 1 (negative = under-estimate)."""
        assert self.estimate_gib is not None and self.measured_gib
        return self.estimate_gib / self.measured_gib - 1.0


def row_error(row: dict[str, str]) -> RowError:
    """Estimate one measured row like for like; an empty needed cell makes it not evaluable (column named)."""
    case_id = row.get("case_id", "")
    measured = float(row["measured_gib"]) if row.get("measured_gib") else None
    try:
        config = config_from_measured_row(row)
        config["options"] = {**config.get("options", {}), **presets.fixed()}
        report = estimate_memory(load_config(config))
    except NotStated as exc:
        return RowError(case_id, measured, None, not_evaluable=f"column {exc.field}: {exc.rule}")
    value, what = estimate_for_measurement(report, measured_kind_of(row), row.get("measured_rank", ""))
    return RowError(case_id, measured, value / MIB_PER_GIB, what)


def table_errors(path: Path) -> list[RowError]:
    """Every row of a measured memory CSV, sorted by signed error (under-estimates first)."""
    with path.open(newline="", encoding="utf-8") as fh:
        rows = [row_error(r) for r in csv.DictReader(fh)]
    done = sorted((r for r in rows if not r.not_evaluable), key=lambda r: r.signed_error)
    return done + [r for r in rows if r.not_evaluable]


@dataclass(frozen=True)
class Summary:
    """Median and max |error| and the rows outside the band, over the evaluable rows not excluded."""

    rows: int
    median_abs_error: float
    max_abs_error: float
    outside_band: tuple[str, ...]


def summarise(errors: Iterable[RowError], exclude: Iterable[str] = ()) -> Summary:
    """Summary over ``errors`` without the ``exclude`` case ids (e.g. waived rows)."""
    skip = set(exclude)
    kept = [e for e in errors if not e.not_evaluable and e.case_id not in skip]
    absolute = [abs(e.signed_error) for e in kept]
    outside = tuple(e.case_id for e in kept if not BAND[0] <= 1 + e.signed_error <= BAND[1])
    return Summary(len(kept), statistics.median(absolute), max(absolute), outside)


def markdown(errors: list[RowError]) -> str:
    """The signed-error table (Markdown), under-estimates first."""
    rows = [
        [f"`{e.case_id}`", e.measured_gib, "—", f"not evaluable: {e.not_evaluable}", "—"] if e.not_evaluable
        else [f"`{e.case_id}`", f"{e.measured_gib:.2f}", f"{e.estimate_gib:.2f}", e.estimate_of, f"{e.signed_error:+.1%}"]
        for e in errors
    ]
    return markdown_table(["row (case_id)", "measured (GiB)", "ndval (GiB)", "compared with", "signed error"], rows)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    default = Path(__file__).resolve().parents[3] / "shared" / "data" / "measured" / "memory_cases.csv"
    errors = table_errors(Path(args[0]) if args else default)
    print(markdown(errors))
    s = summarise(errors)
    print(f"\n{s.rows} rows: median |error| {s.median_abs_error:.1%}, max |error| {s.max_abs_error:.1%}, "
          f"outside {BAND[0]:.2f}-{BAND[1]:.2f}: {', '.join(s.outside_band) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
