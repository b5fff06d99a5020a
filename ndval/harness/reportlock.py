"""The reports-folder lock: held by every process that writes the reports, the pytest run included.

``ndval validate`` takes an exclusive ``flock`` on ``<reports>/.validate.lock`` and hands the locked file to
its pytest child (the descriptor number in ``NDVAL_REPORTS_LOCK_FD``, passed with ``pass_fds``): both then
share one lock, so it lasts until the last of them exits. A wrapper killed with ``kill -9`` leaves the pytest
child holding it, and a new run waits for that orphan instead of deleting its files (and having its own
deleted). A pytest run over the cases started without the wrapper takes the lock itself.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO

LOCK_NAME = ".validate.lock"
FD_ENV = "NDVAL_REPORTS_LOCK_FD"


def acquire(reports: Path, who: str) -> IO[str] | None:
    """Open and exclusively lock ``reports/.validate.lock`` (waiting, with a message, while another run holds it).

    Returns the open file (keep it open to keep the lock), or None where ``fcntl`` does not exist."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no locking
        return None
    reports.mkdir(parents=True, exist_ok=True)
    fh = (reports / LOCK_NAME).open("a+", encoding="utf-8")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"{who}: another run is writing {reports}; waiting for it (use --reports DIR to run side by side)",
              file=sys.stderr, flush=True)
        fcntl.flock(fh, fcntl.LOCK_EX)
    return fh


def inherited() -> int | None:
    """The locked descriptor handed down by ``ndval validate`` (None when not run by it or already closed)."""
    raw = os.environ.get(FD_ENV, "")
    if not raw.isdigit():
        return None
    try:
        os.fstat(int(raw))
    except OSError:
        return None
    return int(raw)


def release(fh: IO[str] | None) -> None:
    """Close the lock file (the lock goes with the last process holding it)."""
    if fh is not None:
        fh.close()
