"""The text being framed into chunks (:class:`analyzer.ingest.chunks.EventFramer`): ``[`` followed by the
events not decoded yet, as ``store[at:at + n]``.

Two kinds, the same interface (``store``, ``at``, ``n``, :meth:`drop`, :meth:`read_into`, :meth:`text`):

- :class:`BufferWindow`: one buffer reused for the whole file; the next bytes are read into the space
  behind the text (any source: gzip, a pipe, a plain file).
- :class:`MapWindow`: a range of a private memory map of a plain file (:meth:`framing.Source.map`):
  no byte is copied before the decoder reads it (a read copies every byte once more, ~10 % of an
  uncompressed ingest), and the pages already decoded are handed back to the system as the range
  moves on, so the resident memory stays about a chunk, as with a buffer.

The framer writes into ``store`` (a ``]`` after the candidate event for the decode, then the ``,``
back; a ``[`` before the first event left): in a private map such a write changes this process's
copy of one page only.
"""

from __future__ import annotations

import mmap

from analyzer.ingest.framing import Source

_OPEN_BRACKET = ord("[")


class BufferWindow:
    """``store[:n]`` is the text (``at`` is 0), in one buffer reused for the whole file: a decoded prefix
    is dropped by moving the short rest to the front (a same-length slice assignment: no reallocation)
    and the next bytes are read straight into the space behind it."""

    at = 0

    def __init__(self, text: bytes) -> None:
        self.store = bytearray(b"[") + text
        self.n = len(self.store)

    def drop(self, upto: int) -> None:
        """Forget ``store[1:upto]`` (decoded events; the leading "[" stays)."""
        rest = self.n - upto
        self.store[1:1 + rest] = self.store[upto:self.n]
        self.n = 1 + rest

    def read_into(self, src: Source, size: int) -> int:
        """Read up to ``size`` bytes of ``src`` behind the text; returns the count (0: end of file)."""
        if len(self.store) < self.n + size:
            self.store.extend(bytes(self.n + size - len(self.store)))
        with memoryview(self.store) as view, view[self.n:self.n + size] as free:
            got = src.readinto(free)
        self.n += got
        return got

    def text(self) -> bytes:
        """A copy of the text without the leading "[" (the slow path and the end-of-file check)."""
        return bytes(self.store[1:self.n])


class MapWindow:
    """``store[at:at + n]`` of a private map of the whole file is the text; ``store[at]`` (the byte before
    the first event not decoded: the array's ``[``, or the ``,`` after a decoded event) is set to
    ``[``. Reading more hands the next bytes of the source out without copying them
    (:meth:`framing.Source.skip`), so the source stays positioned behind the text for the slow path."""

    def __init__(self, mapping: mmap.mmap, at: int, n: int) -> None:
        self.store = mapping
        self.at, self.n = at, n
        self.released = 0
        mapping[at] = _OPEN_BRACKET

    def drop(self, upto: int) -> None:
        """Forget ``store[at + 1:at + upto]``: the text now starts at the byte before ``at + upto``."""
        self.at += upto - 1
        self.n -= upto - 1
        self.store[self.at] = _OPEN_BRACKET
        self._release()

    def _release(self) -> None:
        """Hand the pages wholly before the text back after every chunk (they read as the file again if
        touched), so the map's resident pages stay about one chunk, as a buffer's would."""
        end = self.at - self.at % mmap.PAGESIZE
        if end > self.released and hasattr(mmap, "MADV_DONTNEED"):
            self.store.madvise(mmap.MADV_DONTNEED, self.released, end - self.released)
            self.released = end

    def read_into(self, src: Source, size: int) -> int:
        """Extend the text by up to ``size`` bytes of the file; returns the count (0: end of file)."""
        got = max(0, min(size, len(self.store) - (self.at + self.n)))
        if got:
            src.skip(got)
        self.n += got
        return got

    def text(self) -> bytes:
        """A copy of the text without the leading "["."""
        return bytes(self.store[self.at + 1:self.at + self.n])


Window = BufferWindow | MapWindow


def window(text: bytes, src: Source, mapping: mmap.mmap | None) -> Window:
    """The window over ``text`` (the bytes just handed out by ``src``, ending at its position): a range of
    ``mapping`` when there is one, else a buffer."""
    if mapping is None:
        return BufferWindow(text)
    return MapWindow(mapping, src.n_out - len(text) - 1, len(text) + 1)
