"""Shared helpers of the fault suite: FIFOs, device nodes under a temp folder, a small full filesystem.

Every fault test is bounded in time (a FIFO reader thread with a timeout, subprocesses with ``timeout``) and never
touches a real device node: a character device is made with ``mknod`` under ``tmp_path`` (root only; else skipped
with the reason), and "disk full" comes from a tiny tmpfs mount (root only; else skipped with the reason).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest


class FifoReader:
    """Drain a FIFO in a thread (so a writer that opens it does not block forever); ``data`` holds what was read."""

    def __init__(self, path: Path) -> None:
        self.path, self.data = path, b""
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with open(self.path, "rb") as fh:
            self.data = fh.read()

    def join(self, timeout_s: float = 10.0) -> bytes:
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), f"{self.path}: the writer never closed the FIFO"
        return self.data


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "out.fifo"
    os.mkfifo(path)
    return path


@pytest.fixture
def null_device(tmp_path: Path) -> Path:
    """A character device equal to /dev/null (1, 3), made under tmp_path; skipped unless root."""
    path = tmp_path / "null"
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod of a character device needs root (CAP_MKNOD); the FIFO tests cover streamed writes")
    except OSError as exc:  # a file system mounted nodev still creates it; others may refuse
        pytest.skip(f"mknod refused under {tmp_path}: {exc}")
    return path


@pytest.fixture
def full_device(tmp_path: Path) -> Path:
    """A character device equal to /dev/full (1, 7), made under tmp_path; skipped unless root."""
    path = tmp_path / "full"
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    except PermissionError:
        pytest.skip("mknod of a character device needs root (CAP_MKNOD)")
    try:
        with open(path, "wb", buffering=0) as fh:
            fh.write(b"x")
    except OSError:
        pass
    else:
        pytest.skip(f"{tmp_path} is mounted nodev: the node made there does not act as /dev/full")
    return path


@contextlib.contextmanager
def small_tmpfs(where: Path, size_kib: int = 256) -> Iterator[Path]:
    """Mount a ``size_kib`` tmpfs at ``where`` (root only); skips with the reason where that is not possible."""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a small tmpfs for disk-full faults needs root and mount(8)")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(where)],
                          capture_output=True, text=True, timeout=20, check=False)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.strip() or proc.returncode}): disk-full faults skipped")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=20, check=False)


def fill(folder: Path) -> None:
    """Fill the file system of ``folder`` (a small tmpfs) until a write fails with ENOSPC."""
    with open(folder / ".filler", "wb", buffering=0) as fh, contextlib.suppress(OSError):
        while True:
            fh.write(b"\0" * 4096)
