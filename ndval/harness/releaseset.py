"""A run's reports as one set: written aside in a staging folder, swapped in only when complete.

``ndval validate`` points its pytest run at ``<reports>/.run-<pid>/`` (summary, JUnit, Allure results, sign-off,
golden review files). Only when that run ended on its own and its set is complete are the files moved into
``<reports>/`` (or ``<reports>/partial/``), with SIGINT/SIGTERM held back for the few renames. An interrupted,
failed or out-of-space run removes its staging folder and leaves the previous set byte-identical.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

#: the files and folders of one run's report set (in ``reports/`` or ``reports/partial/``)
SET_NAMES = ("summary.json", "junit.xml", "signoff.md", "signoff.html", "signoff_plots", "allure-results",
             "allure-report")
#: golden review files (written under the reports folder itself, for release and partial runs alike)
GOLDEN_REVIEW = "golden"
STAGE_PREFIX = ".run-"
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def new_stage(reports: Path) -> Path:
    """A fresh staging folder under ``reports`` (one left by a killed run of this process id is removed first)."""
    stage = reports / f"{STAGE_PREFIX}{os.getpid()}"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    return stage


def stale_stages(reports: Path) -> list[Path]:
    """Staging folders left by runs killed with SIGKILL (their process is gone)."""
    out = []
    for p in reports.glob(f"{STAGE_PREFIX}*"):
        pid = p.name.removeprefix(STAGE_PREFIX)
        if pid.isdigit() and not _alive(int(pid)):
            out.append(p)
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def discard(stage: Path) -> None:
    """Remove a staging folder and everything in it (never raises)."""
    shutil.rmtree(stage, ignore_errors=True)


def staged_summary(stage: Path) -> Path | None:
    """The summary the staged run wrote: the release one or the PARTIAL one (the session decides which)."""
    for path in (stage / "summary.json", stage / "partial" / "summary.json"):
        if path.is_file():
            return path
    return None


def incomplete(out: Path, junit: bool = True) -> str | None:
    """Why the staged set in ``out`` is not complete (None: complete)."""
    try:
        json.loads((out / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"summary.json unreadable ({exc})"
    if junit and not _nonempty(out / "junit.xml"):
        return "junit.xml missing or empty"
    if not _nonempty(out / "signoff.md"):
        return "signoff.md missing or empty"
    return None


def _nonempty(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM back while the set is swapped (delivered when the block ends)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def swap_in(staged: Path, target: Path, stage: Path, reports: Path) -> None:
    """Replace the set in ``target`` by the one in ``staged`` (the previous one moved aside, then removed)."""
    target.mkdir(parents=True, exist_ok=True)
    old = stage / ".previous"
    old.mkdir(exist_ok=True)
    with signals_held():
        for name in SET_NAMES:
            if (target / name).exists() or (target / name).is_symlink():
                os.replace(target / name, old / name)
        for name in SET_NAMES:
            if (staged / name).exists():
                os.replace(staged / name, target / name)
        _merge_tree(stage / GOLDEN_REVIEW, reports / GOLDEN_REVIEW, replace=target == reports, old=old)
    discard(stage)


def _merge_tree(src: Path, dst: Path, replace: bool, old: Path) -> None:
    """Golden review files: a release run replaces the folder; a partial run adds its files to it."""
    if not src.is_dir():
        if replace and dst.exists():
            os.replace(dst, old / GOLDEN_REVIEW)
        return
    if replace or not dst.exists():
        if dst.exists():
            os.replace(dst, old / GOLDEN_REVIEW)
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, dst)
        return
    for f in src.rglob("*"):
        if f.is_file():
            to = dst / f.relative_to(src)
            to.parent.mkdir(parents=True, exist_ok=True)
            os.replace(f, to)


def disk_full(folder: Path, floor_bytes: int = 64 * 1024) -> bool:
    """Whether the file system of ``folder`` has (almost) no space left: the likely cause of a failed write."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < floor_bytes


def failure_cause(folder: Path) -> str:
    """A failed run's likely environment cause in words (empty when none is visible)."""
    if disk_full(folder):
        return f"no space left on device (ENOSPC) on {folder}"
    if not os.access(folder, os.W_OK):
        return f"{folder} is not writable ({errno.errorcode[errno.EACCES]})"
    return ""
