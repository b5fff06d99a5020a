"""Framing a trace file into chunks of decoded events, in one pass, with the ingest budgets.

Layouts: a bare JSON array of events (Ascend ``trace_view.json``) or an object whose
``traceEvents`` key holds the array (Kineto); the other top-level keys of the object
(``distributedInfo``, ``deviceProperties``, ...) are decoded in the same pass, before and after the
array (:attr:`EventFramer.top`), so no extra pass over the file is needed for metadata.

Fast path: the decompressed bytes are read in chunks of :data:`CHUNK_BYTES` (a plain file's are
taken from a memory map instead, without a copy: :mod:`analyzer.ingest.window`); the last ``},`` of the
buffer is a candidate boundary between two events and the text up to it is decoded as one array: a
Kineto chunk by the native scanner (:func:`native.scan_chunk`, when built) into columns, any other
chunk, or one the scanner refuses, by ``msgspec`` (:func:`decode.decode_chunk`). A wrong candidate (inside a string or a nested object)
cannot decode, so a chunk that decodes is framed right. Slow path, for a chunk that does not decode
or at the end of the file: the exact streaming scanner (``framing.Scanner``) delimits every event,
which is then decoded alone (:func:`decode.decode_one`); an event over a budget (``budgets.Budgets``)
is skipped there, counted, and named in a warning.
"""

from __future__ import annotations

import mmap
import re
import sys
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import numpy as np

from analyzer.ingest import decode as dec
from analyzer.ingest import native, trailing
from analyzer.ingest.budgets import Budgets
from analyzer.ingest.framing import Scanner, Source, _depths
from analyzer.ingest.window import Window, window
from ndval.core.units import MIB_BYTES

#: decompressed bytes read per chunk.
CHUNK_BYTES = 8 * MIB_BYTES
#: first read of a plain file: its events are then framed over a memory map (``window.MapWindow``), so
#: only the top-level keys before ``traceEvents`` need a read (more is read when they are longer).
HEAD_BYTES = 64 * 2**10
#: most bytes of top-level content read before / after the event array.
HEADER_MAX_BYTES = 64 * MIB_BYTES
_KEY = b'"traceEvents"'
_ARRAY_OPEN = re.compile(rb"\s*:\s*\[")
_BOM = b"\xef\xbb\xbf"
_NEXT_EVENT = re.compile(rb"\s*\{")
#: candidate boundaries tried per chunk before the exact scanner frames it.
CANDIDATES = 3
_CLOSE_BRACKET, _COMMA = ord("]"), ord(",")


@dataclass
class EventFramer:
    """One pass over ``src`` (see module docstring). Call :meth:`open` then iterate :meth:`chunks`."""

    src: Source
    budgets: Budgets
    #: decode a bare array with the Kineto decoder (a Kineto trace in the Trace Event Format's JSON Array Format)
    kineto: bool = False
    layout: str = ""
    fmt: dec.Format = dec.GENERIC
    top: dict[str, Any] = field(default_factory=dict)
    n_elements: int = 0
    n_too_deep: int = 0
    n_too_big: int = 0
    n_not_events: int = 0
    #: of those, elements whose bytes are not valid UTF-8 (a name with a stray byte: JSON text is UTF-8)
    n_bad_utf8: int = 0
    truncated: str = ""
    stopped: str = ""
    #: data after the JSON document, in words (an error of the file: concatenated traces, appended junk)
    trailing: str = ""
    #: fast-path chunks decoded natively / by msgspec, and the last reason a chunk was refused natively.
    n_native: int = 0
    n_msgspec: int = 0
    refused: str = ""
    _buf: bytes = b""
    _eof: bool = False
    _map: mmap.mmap | None = None

    def open(self) -> str:
        """Read the start of the file: ``array``, ``object`` or ``empty`` (raises ``ValueError``
        when it is not JSON)."""
        self._buf = self._read(HEAD_BYTES if self.src.plain else CHUNK_BYTES)
        if self._buf.startswith(_BOM):
            self._buf = self._buf[len(_BOM):]
        head = self._buf.lstrip()
        while not head and not self._eof:
            self._buf = self._read()
            head = self._buf.lstrip()
        if not head:
            self.layout = "empty"
        elif head[:1] == b"[":
            self.layout, self._buf = "array", head[1:]
            self.fmt = dec.KINETO if self.kineto else self.fmt
        elif head[:1] == b"{":
            self.layout, self.fmt = "object", dec.KINETO
            self._buf = head
            self._find_events()
        else:
            raise ValueError(not_json(head))
        return self.layout

    def _read(self, size: int = CHUNK_BYTES) -> bytes:
        data = self.src.read(size) if not self._eof else b""
        if not data:
            self._eof = True
        return data

    def _find_events(self) -> None:
        """Position the buffer just inside the ``traceEvents`` array; decode the keys before it."""
        buf, searched = self._buf, 0
        while True:
            at = buf.find(_KEY, searched)
            while at >= 0:
                depths, in_str, _ = _depths(np.frombuffer(buf, dtype=np.uint8, count=at), False, False, 0)
                if not in_str and depths.size and int(depths[-1]) == 1:
                    m = _ARRAY_OPEN.match(buf, at + len(_KEY))
                    if m:
                        self.top.update(_object_prefix(buf[:at]))
                        self._buf = buf[m.end():]
                        return
                at = buf.find(_KEY, at + 1)
            searched = max(0, len(buf) - len(_KEY))
            if self._eof or len(buf) > HEADER_MAX_BYTES:
                self._buf, self._eof = b"", True
                self.top.update(_object_prefix(buf) if len(buf) <= HEADER_MAX_BYTES else {})
                return
            buf += self._read()

    def chunks(self) -> Iterator[list[Any] | native.NativeChunk]:
        """Decoded events, a chunk at a time, until the array ends, the file ends or a budget stops it."""
        if self.layout not in ("array", "object") or (self._eof and not self._buf.strip()):
            return
        self._map = self.src.map()
        try:
            yield from self._frame(window(self._buf, self.src, self._map))
        finally:
            if self._map is not None:
                self._map.close()  # no view of it outlives a chunk: every decode copies what it keeps
                self._map = None

    def _frame(self, win: Window) -> Iterator[list[Any] | native.NativeChunk]:
        """:meth:`chunks` over ``win`` ("[" + the events not decoded yet)."""
        while not self.stopped:
            cut, events = self._fast(win)
            if events is not None:
                win.drop(cut + 2)
                yield self._count(events)
            elif not self._eof and (cut < 0 and win.n < self.budgets.max_event_bytes):
                pass  # no boundary yet: read more
            else:
                rest, done = yield from self._exact(win.text())
                if done:
                    return
                win = window(rest, self.src, self._map)
            if self._check_budgets():
                return
            self._fill(win)
            if self._eof and not win.text().strip():
                self.truncated = self.truncated or "the event array is not closed"
                return

    def _fill(self, win: Window) -> None:
        """Read the next :data:`CHUNK_BYTES` into ``win`` behind its text (end of file: ``_eof``)."""
        got = 0 if self._eof else win.read_into(self.src, CHUNK_BYTES)
        if not got:
            self._eof = True

    def _fast(self, win: Window) -> tuple[int, list[Any] | native.NativeChunk | None]:
        """``(cut, events)``: the events of ``win`` (``[`` + event text) before the last candidate
        boundary that decodes (a ``}`` followed by ``,`` and the ``{`` of the next event; up to
        :data:`CANDIDATES` tried), or ``(cut, None)`` (``cut`` -1 when no candidate was found). The
        ``,`` after the candidate is turned into ``]`` for the decode (no copy) and restored."""
        if self._eof:
            return -1, None
        buf, at, n = win.store, win.at, win.at + win.n
        cut, end, tried = -1, n, 0
        while tried < CANDIDATES:
            cut = buf.rfind(b"},", at + 1, end)
            if cut < 0:
                return -1, None
            end = cut
            if _NEXT_EVENT.match(buf, cut + 2, n) is None:
                continue
            tried += 1
            buf[cut + 1] = _CLOSE_BRACKET
            old_limit = _cap_recursion(self.budgets.max_depth)
            try:
                with memoryview(buf) as view, view[at:cut + 2] as body:
                    return cut - at, self._decode(body)
            except dec.DecodeFailure:
                continue
            finally:
                sys.setrecursionlimit(old_limit)
                buf[cut + 1] = _COMMA
        return cut - at, None

    def _decode(self, body: memoryview) -> list[Any] | native.NativeChunk:
        """One chunk: natively when the extension is there and accepts it (Kineto layout), else by
        msgspec (raises :data:`decode.DecodeFailure` when the chunk does not decode)."""
        if self.fmt.kineto and native.AVAILABLE:
            got = native.scan_chunk(body, self.budgets.max_depth)
            if not isinstance(got, str):
                self.n_native += 1
                return got
            self.refused = got
        events = dec.decode_chunk(body, self.fmt)
        self.n_msgspec += 1
        return events

    @property
    def decoder(self) -> str:
        """Which path decoded the fast-path chunks: ``native``, ``msgspec``, or both with the counts
        and the last reason a chunk was refused natively."""
        if not self.n_native:
            return f"msgspec (native refused: {self.refused})" if self.refused else "msgspec"
        if not self.refused:
            return "native"
        return f"native ({self.n_native} chunks) + msgspec ({self.n_msgspec} chunks; native refused: {self.refused})"

    def _count(self, events: list[Any] | native.NativeChunk) -> list[Any] | native.NativeChunk:
        self.n_elements += len(events)
        return events

    def _check_budgets(self) -> bool:
        b = self.budgets
        if b.max_read_events is not None and self.n_elements >= b.max_read_events:
            self.stopped = (f"events budget: stopped reading after {self.n_elements:,} events "
                            f"(max_read_events={b.max_read_events:,})")
        elif b.max_decompressed_bytes is not None and self.src.n_out > b.max_decompressed_bytes:
            self.stopped = (f"decompressed-size budget: stopped reading after {self.src.n_out:,} bytes "
                            f"(max_decompressed_bytes={b.max_decompressed_bytes:,})")
        return bool(self.stopped)

    def _exact(self, buf: bytes) -> Generator[list[Any], None, tuple[bytes, bool]]:
        """Slow path over ``buf`` (starts between events): decode every complete event alone; skip
        an event bigger than the budget by streaming over it. Returns ``(rest, done)``: the bytes of
        the event still open (to be completed by the fast path), and whether the array ended."""
        sc = Scanner(pos=0)
        held: bytes | memoryview = buf
        held_at, skipping = 0, False
        while True:
            found = sc.feed(memoryview(held)[sc.pos - held_at:] if not skipping else memoryview(held))
            events = []
            for el in found:
                if el.start < held_at or el.end - el.start > self.budgets.max_event_bytes:  # the skipped event ended
                    self.n_too_big += 1
                elif el.depth > self.budgets.max_depth:
                    self.n_too_deep += 1
                else:
                    text = bytes(held[el.start - held_at:el.end - held_at])
                    one = dec.decode_one(text, self.fmt)
                    if one is None:
                        self.n_not_events += 1
                        self.n_bad_utf8 += not _utf8(text)
                    else:
                        events.append(one)
            self.n_elements += len(found)
            if events:
                yield events
            if sc.closed >= 0:
                self._tail(held[sc.closed - held_at:] if sc.closed >= held_at else b"")
                return b"", True
            if sc.open_start < 0:
                return b"", False
            if sc.open_start >= held_at:
                held, held_at = held[sc.open_start - held_at:], sc.open_start
            if not skipping and len(held) <= self.budgets.max_event_bytes:
                if self._eof:
                    self.truncated = "the last event is incomplete"
                    return b"", True
                return bytes(held), False
            skipping = True  # an event over the size budget: stream over it, keep nothing
            data = self._read()
            if not data:
                self.truncated = "the last event is incomplete (and over the event-size budget)"
                self.n_too_big += 1
                return b"", True
            held, held_at = data, sc.pos

    def _tail(self, rest: bytes | memoryview) -> None:
        """The top-level keys after the event array (object layout); data after the document's end is
        :attr:`trailing` (see :func:`analyzer.ingest.trailing.describe`)."""
        tail = bytes(rest)
        while not self._eof and len(tail) <= HEADER_MAX_BYTES:
            tail += self._read()
        text = tail.strip()
        if self.layout != "object":
            self.trailing = trailing.describe(text, self.src.plain)
            return
        if text.startswith(b","):
            obj, end = trailing.object_rest(text[1:])
            if isinstance(obj, dict):
                self.top.update(obj)
            text = text[1:][end:] if end else b""
        elif text.startswith(b"}"):
            text = text[1:]
        self.trailing = trailing.describe(text.strip(), self.src.plain)


def _utf8(text: bytes) -> bool:
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def not_json(head: bytes) -> str:
    """Why ``head`` (the first bytes, decompressed) is not a JSON trace, naming the encoding when it is a known one."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or (len(head) > 1 and (head[0] == 0) != (head[1] == 0)):
        return "not JSON in UTF-8: the file is UTF-16 text (re-save it as UTF-8)"
    if head[:1] == b"\x78" and head[1:2] in (b"\x01", b"\x5e", b"\x9c", b"\xda"):
        return "not JSON: zlib-compressed data without a gzip header (compress with gzip, or decompress it)"
    return "not JSON: expected '[' (event array) or '{' (traceEvents object)"


def _cap_recursion(max_depth: int) -> int:
    """Lower the interpreter's recursion limit so that the fast decoder (which counts each nesting
    level against it, also in the values it skips) fails on any chunk holding an event nested
    ``max_depth - 2`` levels or more; such a chunk then goes to the exact scanner, which measures
    every event's depth and drops only those over the budget. Returns the limit to restore (the
    limit is never raised: deeper C recursion could overflow the stack)."""
    old = sys.getrecursionlimit()
    frame: FrameType | None = sys._getframe()
    frames = 0
    while frame is not None:
        frames, frame = frames + 1, frame.f_back
    sys.setrecursionlimit(min(old, frames + max(1, max_depth - 2)))
    return old


def _object_prefix(head: bytes) -> dict[str, Any]:
    """The keys of a top-level object's text cut before one of its keys (``{"a": 1, "b": ...,``)."""
    text = head.rstrip().rstrip(b",")
    if text.strip() == b"{":
        return {}
    try:
        obj = dec.LOOSE_DECODER.decode(text + b"}")
    except dec.DecodeFailure:
        return {}
    return obj if isinstance(obj, dict) else {}
