"""Where ndval finds the shared, read-only data (one place for every path default).

The real profiler outputs and published measurements live beside the checkout in
``../shared/data`` and are read in place, never copied into the repository. Each location can
be moved with an environment variable so CI and users can point elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

#: environment variable -> default location (relative to the repository root)
_DEFAULTS: dict[str, Path] = {
    "NDVAL_SHARED_DIR": REPO_ROOT.parent / "shared",
}


def shared_dir() -> Path:
    """Root of the shared material (``$NDVAL_SHARED_DIR``, default ``../shared``)."""
    return Path(os.environ.get("NDVAL_SHARED_DIR", _DEFAULTS["NDVAL_SHARED_DIR"])).resolve()


def profiles_dir() -> Path:
    """Real profiler outputs (``$NDVAL_PROFILES_DIR``, default ``<shared>/data/profiles``)."""
    env = os.environ.get("NDVAL_PROFILES_DIR")
    return Path(env).resolve() if env else shared_dir() / "data" / "profiles"


def measured_dir() -> Path:
    """Published measurements (``$NDVAL_MEASURED_DIR``, default ``<shared>/data/measured``)."""
    env = os.environ.get("NDVAL_MEASURED_DIR")
    return Path(env).resolve() if env else shared_dir() / "data" / "measured"


def cases_dir() -> Path:
    """The validation cases tree (``validation_cases/`` in the repository)."""
    return REPO_ROOT / "validation_cases"


def golden_dir() -> Path:
    """Golden outputs, mirroring ``validation_cases/``."""
    return REPO_ROOT / "golden"


def reports_dir() -> Path:
    """Generated output (``$NDVAL_REPORTS_DIR``, default ``reports/``)."""
    env = os.environ.get("NDVAL_REPORTS_DIR")
    return Path(env).resolve() if env else REPO_ROOT / "reports"
