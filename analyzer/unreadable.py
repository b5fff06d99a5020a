"""Ranks of a multi-rank folder that cannot be judged: read errors and ranks with nothing read (no events, no tables).

One bad rank (an empty output folder, a 10-byte trace, a truncated DB) no longer ends the analysis of a
folder: :func:`analyzer.parallel.map_ranks` keeps going past :data:`RANK_ERRORS`, and :func:`split_judged`
separates the ranks to analyse from the ones to name (path and reason). When no rank is readable, the first
rank's error is raised as before.
"""

from __future__ import annotations

from typing import Any

from analyzer.ingest.errors import IngestError
from analyzer.parallel import split_failed

#: what makes one rank of a folder unreadable without stopping the others (bad files, budgets, I/O)
RANK_ERRORS: tuple[type[BaseException], ...] = (IngestError, OSError, ValueError)


def split_judged(results: list[Any]) -> tuple[list[Any], list[str]]:
    """(the ranks to analyse, one line per rank that is not judged: its error, or "no events read")."""
    rds, failed = split_failed(results)
    if failed and not rds:
        raise failed[0].error
    empty = [r for r in rds if not _has_input(r)] if len(results) > 1 else []
    kept = [r for r in rds if _has_input(r)] or rds
    lines = [f.line() for f in failed] + [f"rank {r.rank}: no events read ({(r.warnings or ['empty'])[0]})"
                                          for r in empty if r not in kept]
    return kept, lines


def _has_input(rank: Any) -> bool:
    """Something to judge: events, or the tables a rank without its trace is still read from (step_trace_time.csv,
    kernel_details.csv, communication.json), as a single such rank is."""
    return not rank.events.empty or bool(rank.tables) or rank.communication is not None
