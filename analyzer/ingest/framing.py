"""Byte level of trace ingest: the decompressed byte source and the exact JSON structure scanner.

:func:`open_source` yields the file's bytes (gzip is decompressed by ISA-L in a **separate thread**,
``isal.igzip_threaded``, so decompression overlaps decoding on the main thread; plain files are read
as is), counting the bytes read on disk (progress) and the decompressed bytes (size budget).

:class:`Scanner` walks JSON text with numpy, block by block, carrying its state (inside a string,
escape pending, nesting depth) across blocks: per byte it knows the nesting depth outside strings,
so it finds the exact end of every top-level element of an array, the end of the array, and the
deepest nesting of each element — in linear time and bounded memory whatever the element's size
(a 100 MB name, a 100,000-deep ``args`` value); a block inside a string without quote or
backslash is stepped over by one vectorized test. The fast path of :mod:`analyzer.ingest.decode`
uses cheap boundary *candidates* and calls the scanner only where a candidate fails.
"""

from __future__ import annotations

import io
import mmap
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

import numpy as np
from isal.igzip_lib import IsalError as _IsalError

from ndval.core.units import MIB_BYTES

_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_OPEN = (ord("{"), ord("["))
_CLOSE = (ord("}"), ord("]"))
#: bytes scanned per numpy block (bounds the scanner's temporary arrays: ~10 bytes per input byte).
SCAN_BLOCK_BYTES = 256 * 2**10


def is_gzip(path: Path) -> bool:
    """The file starts with the gzip magic bytes."""
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


class CountingReader(io.RawIOBase):
    """Wraps a binary file, counting bytes read from disk (progress on the compressed size)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.n_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self.raw.readinto(b)  # type: ignore[attr-defined]
        self.n_read += n or 0
        return n or 0

    def seekable(self) -> bool:
        return self.raw.seekable()

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self.raw.seek(offset, whence)

    def tell(self) -> int:
        return self.raw.tell()

    def close(self) -> None:
        self.raw.close()
        super().close()


#: ISA-L's error for corrupt deflate data after a gzip header (not an ``OSError``): read as one.
IsalError = cast(type[Exception], _IsalError)


@dataclass
class Source:
    """An open trace: ``read(n)`` gives decompressed bytes; ``disk`` counts bytes read on disk,
    ``n_out`` the decompressed bytes handed out. ``plain``: an uncompressed file (bytes handed out =
    the file offset), which :meth:`map` can map into memory."""

    fh: IO[bytes]
    disk: CountingReader
    n_out: int = 0
    plain: bool = False

    def read(self, n: int) -> bytes:
        try:
            data = self.fh.read(n)
        except IsalError as exc:  # not an OSError: corrupt deflate data after a gzip header
            raise OSError(f"corrupt gzip data ({exc})") from None
        self.n_out += len(data)
        return data

    def readinto(self, buf: memoryview) -> int:
        """Read up to ``len(buf)`` bytes into ``buf``; returns the count (0 at the end)."""
        try:
            n = self.fh.readinto(buf) or 0  # type: ignore[attr-defined]
        except IsalError as exc:
            raise OSError(f"corrupt gzip data ({exc})") from None
        self.n_out += n
        return n

    def skip(self, n: int) -> None:
        """Hand out the next ``n`` bytes of a plain file without reading them (the caller reads them
        from :meth:`map`): the position and both counters move on as if they were read."""
        self.fh.seek(self.n_out + n)
        self.n_out += n
        self.disk.n_read += n

    def map(self) -> mmap.mmap | None:
        """A private (copy-on-write) read mapping of a plain regular file, or None (compressed, not a
        regular file, empty, or the system refuses). Writes to it change this process's copy only.
        Caveat of every memory map: a file truncated by another process while it is read ends the
        process with SIGBUS instead of a truncation warning; ``NDVAL_MMAP_INGEST=0`` reads instead."""
        if not self.plain or os.environ.get("NDVAL_MMAP_INGEST", "1") == "0":
            return None
        try:
            fd = self.disk.raw.fileno()
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            mapping = mmap.mmap(fd, 0, access=mmap.ACCESS_COPY)
        except (OSError, ValueError, io.UnsupportedOperation):  # empty file, no mmap on this file system
            return None
        if hasattr(mmap, "MADV_SEQUENTIAL"):
            mapping.madvise(mmap.MADV_SEQUENTIAL)
        return mapping

    def close(self) -> None:
        try:
            self.fh.close()
        finally:
            self.disk.close()


def open_source(path: Path, threaded: bool = True) -> Source:
    """Open ``path`` for reading decompressed bytes (see module docstring). Close it when done."""
    disk = CountingReader(open(path, "rb"))  # noqa: SIM115 - closed by Source.close
    if not is_gzip(path):
        return Source(io.BufferedReader(disk, buffer_size=MIB_BYTES), disk, plain=True)
    buffered = io.BufferedReader(disk, buffer_size=MIB_BYTES)
    if threaded:
        from isal import igzip_threaded

        fh: Any = igzip_threaded.open(buffered, "rb", threads=1)  # type: ignore[no-untyped-call]
    else:
        from isal import igzip

        fh = igzip.IGzipFile(fileobj=buffered)  # type: ignore[no-untyped-call]
    return Source(fh, disk)


def read_all(path: Path, limit: int = 1 << 16) -> bytes:
    """The first ``limit`` decompressed bytes of ``path`` (for sniffing)."""
    src = open_source(path, threaded=False)
    try:
        return src.read(limit)
    finally:
        src.close()


@dataclass
class Element:
    """One top-level element of an array found by the scanner: absolute byte offsets ``[start, end)``
    and its deepest nesting (1 = a flat object)."""

    start: int
    end: int
    depth: int


@dataclass
class Scanner:
    """Streaming exact scanner of the elements of a JSON array (see module docstring).

    Created at an absolute offset ``pos`` *inside* the array, between elements (depth 0, outside any
    string); :meth:`feed` takes the next bytes (consecutive, any size) and returns the elements
    completed in them. ``closed`` becomes the absolute offset just after the array's ``]`` once
    reached (the scanner then stops); ``open_start`` is the start of the element still open (-1 when
    none) and ``open_depth`` its deepest nesting so far.
    """

    pos: int
    in_str: bool = False
    escaped: bool = False
    depth: int = 0
    open_start: int = -1
    open_depth: int = 0
    closed: int = -1

    def feed(self, buf: bytes | memoryview) -> list[Element]:
        """Scan ``buf`` (the bytes at ``self.pos``...); return the elements completed in it."""
        elements: list[Element] = []
        view = memoryview(buf)
        off = 0
        while off < len(view) and self.closed < 0:
            block = np.frombuffer(view[off:off + SCAN_BLOCK_BYTES], dtype=np.uint8)
            if not (self.in_str and not self.escaped and _plain_text(block)):
                self._block(block, self.pos, elements)
            self.pos += block.size
            off += block.size
        return elements

    def _block(self, a: np.ndarray, base: int, elements: list[Element]) -> None:
        depths, in_str, escaped = _depths(a, self.in_str, self.escaped, self.depth)
        opens = np.flatnonzero((depths == 1) & (np.concatenate(([self.depth], depths[:-1])) == 0))
        closes = np.flatnonzero((depths <= 0) & (np.concatenate(([self.depth], depths[:-1])) >= 1))
        close_arr = np.flatnonzero(depths < 0)
        marks = sorted([(int(o), 1) for o in opens] + [(int(c), 0) for c in closes])
        prev = 0
        for off, is_open in marks:
            if is_open:
                self.open_start, self.open_depth, prev = base + off, 1, off
            elif self.open_start >= 0:
                deepest = max(self.open_depth, int(depths[prev:off + 1].max()))
                elements.append(Element(self.open_start, base + off + 1, deepest))
                self.open_start, self.open_depth = -1, 0
        if close_arr.size:
            self.closed = base + int(close_arr[0]) + 1
            return
        if self.open_start >= 0 and a.size:
            self.open_depth = max(self.open_depth, int(depths[prev:].max()))
        self.in_str, self.escaped, self.depth = in_str, escaped, int(depths[-1]) if a.size else self.depth


def _plain_text(block: np.ndarray) -> bool:
    """``block`` holds no quote and no backslash: inside a string it changes no state (depth, string,
    escape), so the scanner steps over it with this one vectorized test (a long name is skipped at
    memory speed instead of the full per-byte depth computation)."""
    return not bool(np.any((block == _QUOTE) | (block == _BACKSLASH)))


def _depths(a: np.ndarray, in_str: bool, escaped: bool, depth: int) -> tuple[np.ndarray, bool, bool]:
    """Nesting depth after every byte of ``a`` (brackets inside strings ignored), and the string /
    escape state at its end, given the state at its start.

    A quote is escaped when an odd run of backslashes precedes it; runs are measured vectorized and
    a run continuing from the previous block is carried as ``escaped`` (its parity).
    """
    n = a.size
    if not n:
        return np.empty(0, dtype=np.int32), in_str, escaped
    bs = a == _BACKSLASH
    idx = np.arange(n, dtype=np.int32)
    last_non = np.maximum.accumulate(np.where(bs, np.int32(-1), idx))
    run_before = np.zeros(n, dtype=np.int32)
    run_before[1:] = np.where(bs[:-1], idx[:-1] - last_non[:-1], 0)
    if escaped:
        lead = n if bs.all() else int(np.argmin(bs))
        run_before[:lead + 1] += 1
    quote = (a == _QUOTE) & (run_before % 2 == 0)
    inside = (np.cumsum(quote, dtype=np.int32) % 2 == 1) ^ in_str
    outside = ~inside & ~quote
    step = (outside & ((a == _OPEN[0]) | (a == _OPEN[1]))).astype(np.int32)
    step -= outside & ((a == _CLOSE[0]) | (a == _CLOSE[1]))
    depths = np.cumsum(step, dtype=np.int32) + np.int32(depth)
    trailing = n - 1 - int(last_non[-1]) + (1 if escaped and bs.all() else 0)
    return depths, bool(inside[-1]), bool(inside[-1]) and trailing % 2 == 1
