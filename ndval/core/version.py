"""The installed ndval version: one home for ``ndval --version``, the service's ``/api/health`` and the
``version`` field of every JSON document a command prints (``estimate --json``, ``search --json``)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def ndval_version() -> str:
    """The installed distribution's version; ``unknown`` in a source tree without package metadata."""
    try:
        return version("ndval")
    except PackageNotFoundError:  # pragma: no cover - a bare checkout, never installed
        return "unknown"
