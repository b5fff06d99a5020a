"""Where ndval finds cases, goldens, reports and the shared read-only data (one place for every path).

Every location comes from the project (``ndval.harness.project.find_project``: the nearest
``ndval.toml`` or ``pyproject.toml`` with ``[tool.ndval]`` upward from the working directory,
else the working directory) and its settings; environment variables override them
(``NDVAL_REPORTS_DIR``, ``NDVAL_SHARED_DIR``, ``NDVAL_MEASURED_DIR``, ``NDVAL_PROFILES_DIR``).
Real profiler outputs and published measurements are read in place, never copied.
"""

from __future__ import annotations

from pathlib import Path

from ndval.harness.project import Project, find_project

#: ndval's own source tree (the installed package's parent), not the project being validated
REPO_ROOT = Path(__file__).resolve().parents[2]


def project() -> Project:
    """The current project (found from ``$NDVAL_PROJECT_ROOT`` or the working directory)."""
    return find_project()


def project_root() -> Path:
    return project().root


def shared_dir() -> Path:
    """Root of the shared material (``$NDVAL_SHARED_DIR``, else the project's ``shared``, default ``../shared``)."""
    return project().shared


def profiles_dir() -> Path:
    """Real profiler outputs (``$NDVAL_PROFILES_DIR``, else ``profiles``, default ``<shared>/data/profiles``)."""
    return project().profiles


def measured_dir() -> Path:
    """Published measurements (``$NDVAL_MEASURED_DIR``, else ``measured``, default ``<shared>/data/measured``)."""
    return project().measured


def cases_dir() -> Path:
    """The validation cases tree (the project's ``cases``, default ``validation_cases/``)."""
    return project().cases


def golden_dir() -> Path:
    """Golden outputs, mirroring the cases tree (the project's ``golden``, default ``golden/``)."""
    return project().golden


def reports_dir() -> Path:
    """Generated output (``$NDVAL_REPORTS_DIR``, else the project's ``reports``, default ``reports/``)."""
    return project().reports
