"""Shared fixtures: locations of the real, read-only data (skipped with a reason when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ndval.harness import paths

#: the shared headless-Chromium fixtures (``browser``, ``page``); they skip when no browser is installed.
pytest_plugins = ["tests.browser"]


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        pytest.skip(f"{what} not available at {path} (set NDVAL_SHARED_DIR or the specific variable)")
    return path


@pytest.fixture(scope="session")
def profiles_dir() -> Path:
    """Real profiler outputs (``../shared/data/profiles``); skips when absent."""
    return _require(paths.profiles_dir(), "real profiles")


@pytest.fixture(scope="session")
def measured_dir() -> Path:
    """Published measurements (``../shared/data/measured``); skips when absent."""
    return _require(paths.measured_dir(), "published measurements")


@pytest.fixture(scope="session")
def profile_path(profiles_dir: Path):
    """``profile_path("ascend/msinsight-level1/rank0_ascend_pt")`` -> path, skipping when missing."""

    def get(relative: str) -> Path:
        return _require(profiles_dir / relative, f"profile sample {relative!r}")

    return get


@pytest.fixture(autouse=True)
def _strict_json_outputs(monkeypatch: pytest.MonkeyPatch):
    """Every ``.json`` file the project writes during a test (all outputs go through ``ndval.core.atomic``) must
    parse as standard JSON — no ``NaN`` / ``Infinity`` (issue 28); the test fails naming the file otherwise."""
    import json

    from ndval.core import atomic, strictjson

    original, bad = atomic.write_bytes, []

    def checked(path, data):  # type: ignore[no-untyped-def]
        if str(path).endswith(".json"):
            try:
                json.loads(data)  # a test may write text that is no JSON at all: only NaN / Infinity count here
            except ValueError:
                pass
            else:
                try:
                    strictjson.loads(data)
                except ValueError as exc:
                    bad.append(f"{path}: {exc}")
        return original(path, data)

    monkeypatch.setattr(atomic, "write_bytes", checked)
    yield
    assert not bad, f"non-standard JSON written: {bad}"
