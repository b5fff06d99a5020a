"""The one output writer: atomic replace over a regular file, streamed into anything else.

Goldens and reports are read by people and by CI while runs happen; a reader never sees a
half-written file, and two xdist workers never write one path (each item owns its files).
What an output path names decides how it is written:

- a regular file or a new path: written to a temporary file in the target folder, then ``os.replace``
  (the temporary file is removed on any failure, disk full included);
- ``-``, ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``: the process's own stream, written in place;
- a character or block device, a FIFO or a socket (``/dev/null``, ``/dev/full``, a named pipe): opened and
  written in place (streamed), never replaced;
- a symbolic link: followed to its target, which is then written by the rules above (the link stays);
- a directory: ``OutputPathError`` naming the path.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import BinaryIO

#: spellings of the process's own output streams (written in place, never opened by name)
_STREAMS = {"-": 1, "/dev/stdout": 1, "/dev/stderr": 2, "/proc/self/fd/1": 1, "/proc/self/fd/2": 2,
            "/dev/fd/1": 1, "/dev/fd/2": 2}


class OutputPathError(OSError):
    """An output path that cannot be written as a file (a directory); ``str()`` names the path and the rule."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(errno.EISDIR, reason, os.fspath(path))

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def _stream_fd(path: str | Path) -> int | None:
    """The descriptor (1 or 2) when ``path`` spells the process's stdout/stderr, else None."""
    return _STREAMS.get(os.fspath(path))


def _resolved(path: str | Path) -> Path:
    """``path`` with symbolic links followed (a dangling link: the path its target would be)."""
    p = Path(path)
    return Path(os.path.realpath(p)) if p.is_symlink() else p


def is_streamed(path: str | Path) -> bool:
    """Whether ``path`` is written in place (``-``, a stream, a device, FIFO or socket), not atomically replaced."""
    if _stream_fd(path) is not None:
        return True
    try:
        mode = _resolved(path).stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _file_mode(path: Path) -> int:
    """Mode for the new file: the existing file's, else what ``open()`` would give (0o666 & ~umask).

    ``mkstemp`` creates 0o600 files; without this a rewritten golden or report would silently
    become unreadable to other users of a shared checkout.
    """
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _write_stream(fd: int, data: bytes) -> None:
    """Write to the process's own stdout/stderr (flushing what text was written before)."""
    text_stream = sys.stdout if fd == 1 else sys.stderr
    text_stream.flush()
    buffer: BinaryIO | None = getattr(text_stream, "buffer", None)
    if buffer is None:  # a replaced stream (pytest capture, StringIO): text only
        text_stream.write(data.decode("utf-8", errors="replace"))
        text_stream.flush()
        return
    buffer.write(data)
    buffer.flush()


def _write_in_place(path: Path, data: bytes) -> None:
    """Open a device/FIFO/socket for writing (no create, no truncate of anything else) and write ``data``."""
    fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "wb", buffering=0) as fh:
        view = memoryview(data)
        while view:
            n = fh.write(view)
            view = view[n or 0:]


def _replace(path: Path, data: bytes) -> None:
    """Write a temporary file beside ``path`` and rename it over ``path`` (temp removed on failure)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _file_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` (``-`` = stdout) by the rules of this module; returns ``path`` as a Path."""
    fd = _stream_fd(path)
    if fd is not None:
        _write_stream(fd, data)
        return Path(path)
    target = _resolved(path)
    if target.is_dir():
        raise OutputPathError(path, "is a directory, not a file to write (name a file inside it)")
    try:
        if is_streamed(target):
            _write_in_place(target, data)
        else:
            _replace(target, data)
    except OSError as exc:  # name the output (a write to a device or a full disk carries no file name)
        if exc.filename is None:
            exc.filename = os.fspath(path)
        raise
    return Path(path)


def write_text(path: str | Path, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` (``-`` = stdout) by the rules of this module; returns ``path``."""
    return write_bytes(path, text.encode("utf-8"))


#: the output target that means standard output (every command's every output option accepts it)
STDOUT = "-"


def is_stdout(target: str | os.PathLike[str] | None) -> bool:
    """Whether an output option's value names standard output (``-``, ``/dev/stdout``...): the command's console
    lines then belong on stderr, so that stdout carries the document alone."""
    return target is not None and _stream_fd(os.fspath(target)) == 1


def write_output(target: str | os.PathLike[str], data: str | bytes) -> str:
    """Write one output option of a command by the rules of this module (text as UTF-8); returns where it went,
    ``stdout`` or the path, for the command's "wrote ..." line."""
    path = os.fspath(target)
    write_bytes(path, data.encode("utf-8") if isinstance(data, str) else data)
    return "stdout" if is_stdout(path) else path
