"""Atomic file writes: write to a temporary file in the target folder, then ``os.replace``.

Goldens and reports are read by people and by CI while runs happen; a reader never sees a
half-written file, and two xdist workers never write one path (each item owns its files).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


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


def write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (parents created); returns ``path``."""
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
    return path


def write_text(path: Path, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically; returns ``path``."""
    return write_bytes(path, text.encode("utf-8"))


#: the output target that means standard output (every command's every output option accepts it)
STDOUT = "-"


def is_stdout(target: str | os.PathLike[str] | None) -> bool:
    """Whether an output option's value means standard output (``-``)."""
    return target is not None and os.fspath(target) == STDOUT


def write_output(target: str | os.PathLike[str], data: str | bytes) -> str:
    """Write one output of a command: ``-`` streams ``data`` to standard output (text as UTF-8, bytes raw),
    any other target is a file written by :func:`write_bytes`; returns where it went (``stdout`` or the path),
    for the command's "wrote ..." line (which then belongs on stderr: see :func:`is_stdout`)."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if is_stdout(target):
        sys.stdout.flush()
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is None:  # a text-only stream (io.StringIO under redirect_stdout)
            sys.stdout.write(payload.decode("utf-8", "replace"))
            sys.stdout.flush()
        else:
            buffer.write(payload)
            buffer.flush()
        return "stdout"
    return str(write_bytes(Path(target), payload))
