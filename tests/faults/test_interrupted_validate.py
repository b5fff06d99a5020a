"""An interrupted, failed or out-of-space ``ndval validate`` keeps the previous release set byte-identical (issue:
"an interrupted or failed run deletes the last release": SIGINT/SIGTERM 25 s into a run deleted summary.json,
signoff.md/.html and junit.xml and wrote nothing; SIGINT printed a KeyboardInterrupt traceback; a full reports disk
left a 0-byte junit.xml, two *.tmp files and an INTERNALERROR).

A tiny project (one synthetic case) runs in a subprocess group; a conftest in its cases folder writes a marker file at
the chosen point (collection done, an item running, the summary written) and waits there, so the signal lands there.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.faults.conftest import fill, small_tmpfs
from tests.harness.conftest import synthetic_case

CONFTEST = textwrap.dedent("""\
    import os, time
    from pathlib import Path

    import pytest

    def _park(point):
        if os.environ.get("FAULT_POINT") == point:
            Path(os.environ["FAULT_MARKER"]).write_text(point)
            time.sleep(60)

    def pytest_collection_finish(session):
        _park("collected")

    def pytest_runtest_call(item):
        _park("item")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(session):
        _park("summary-written")
    """)

ENV_DROP = ("NDVAL_", "PYTEST_", "COV_")


def _project(root: Path) -> Path:
    (root / "validation_cases" / "recorded").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "fault-project"\nversion = "0"\n[tool.ndval]\n'
                                         'cases = "validation_cases"\nreports = "reports"\n', encoding="utf-8")
    (root / "validation_cases" / "recorded" / "ok.case.yaml").write_text(synthetic_case("ok"), encoding="utf-8")
    (root / "validation_cases" / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    return root / "reports"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_DROP)}
    return env | extra


def _validate(root: Path, env: dict[str, str], reports: Path | None = None) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "ndval.harness.cli", "validate", "-n", "0", "--no-allure-report"]
    if reports is not None:
        args += ["--reports", str(reports)]
    return subprocess.Popen(args, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def _snapshot(reports: Path) -> dict[str, str]:
    """sha256 of every file of the report set (the lock file aside)."""
    return {p.relative_to(reports).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(reports.rglob("*")) if p.is_file() and p.name != ".validate.lock"}


@pytest.fixture(scope="module")
def _release_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One good release run of the tiny project (made once per module)."""
    root = tmp_path_factory.mktemp("release") / "proj"
    reports = _project(root)
    proc = _validate(root, _env())
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out[-3000:]
    assert {"summary.json", "junit.xml", "signoff.md", "signoff.html"} <= set(_snapshot(reports))
    return root


@pytest.fixture
def released(_release_run: Path, tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A copy of the project after one good release run: (project root, reports folder, snapshot of the set)."""
    root = tmp_path / "proj"
    shutil.copytree(_release_run, root, symlinks=True)
    return root, root / "reports", _snapshot(root / "reports")


#: every point and signal under ``make fuzz``; two of them in the bounded run of ``make test``
LONG = os.environ.get("NDVAL_FUZZ") == "long"
POINTS = [(p, s) for p in ("collected", "item", "summary-written") for s in (signal.SIGINT, signal.SIGTERM)
          if LONG or (p, s) in {("item", signal.SIGINT), ("summary-written", signal.SIGTERM)}]


@pytest.mark.parametrize(("point", "sig"), POINTS, ids=[f"{p}-{s.name}" for p, s in POINTS])
def test_interrupted_validate_keeps_the_previous_release_set(released: tuple[Path, Path, dict[str, str]], point: str,
                                                             sig: signal.Signals, tmp_path: Path) -> None:
    root, reports, before = released
    marker = tmp_path / "marker"
    proc = _validate(root, _env(FAULT_POINT=point, FAULT_MARKER=str(marker)))
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline, f"run ended before {point}: {proc.stdout}"
        time.sleep(0.05)
    os.killpg(proc.pid, sig)
    out, _ = proc.communicate(timeout=90)
    assert proc.returncode == 128 + sig, out[-3000:]
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out[-3000:]
    assert f"interrupted by {sig.name}" in out and "left as they were" in out
    assert _snapshot(reports) == before
    assert not list(reports.glob(".run-*")) and not list(reports.rglob("*.tmp"))


def test_full_reports_disk_keeps_the_previous_release_set(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    _project(root)
    with small_tmpfs(tmp_path / "mnt", size_kib=512) as mnt:
        reports = mnt / "reports"
        proc = _validate(root, _env(), reports)
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, out[-3000:]
        before = _snapshot(reports)
        fill(mnt)
        proc = _validate(root, _env(), reports)
        out, _ = proc.communicate(timeout=300)
        (mnt / ".filler").unlink()
        assert proc.returncode == 2, out[-3000:]
        assert "INTERNALERROR" not in out and "Traceback" not in out, out[-3000:]
        assert "ENOSPC" in out and "left as they were" in out, out[-3000:]
        assert _snapshot(reports) == before
        assert not list(reports.glob(".run-*")) and not list(reports.rglob("*.tmp"))
