"""Chrome-trace reader: one pass, chunked typed decoding, exact timestamps, bounded cost.

The file's bytes are framed into chunks of events (:mod:`analyzer.ingest.chunks`: gzip decompressed
in a separate thread, top-level metadata read in the same pass) and each chunk is decoded by
``msgspec`` into structs holding only the needed fields (:mod:`analyzer.ingest.decode`), then turned
into typed columns (a Kineto chunk scanned by the C extension comes as columns already:
:mod:`analyzer.ingest.native`, the same values; ``RawTrace.decoder`` says which path ran): numbers in ``array`` buffers, and the strings (pid, tid, name, cat, task type,
aux) as one **signature id** (int32) into a table of distinct signatures, so an event costs 36 bytes
once read; no Python object outlives its chunk. Classification runs once per signature
(``events.build_table``). An event budget (:class:`~analyzer.ingest.thinning.Thinning`) bounds the
rows kept; the ingest budgets (:mod:`analyzer.ingest.budgets`) bound what one file may cost. Both
layouts are accepted: a bare JSON array (Ascend ``trace_view.json``) and an object with
``traceEvents`` (Kineto).

Timestamps: ``ts`` may be a decimal string of epoch µs (Ascend) or a number (Kineto, read as its
text). The integer part of the first event's ``ts`` becomes a provisional base; each ``ts`` is
reduced *exactly* (integer subtraction) before it becomes a float
(:func:`decode.exact_relative_us`). Once the whole trace is read, the base moves to the floor of
the earliest start (an integer shift, exact).

A truncated or corrupt file yields every event before the damage, plus a warning that names the
file and the number of events kept; a budget that stops reading or drops events is named in a
warning too.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import math
import re
import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analyzer.ingest import decode as dec
from analyzer.ingest import durations, native
from analyzer.ingest.budgets import Budgets
from analyzer.ingest.chunks import EventFramer, not_json
from analyzer.ingest.durations import DurationPairs
from analyzer.ingest.errors import IngestError
from analyzer.ingest.framing import open_source, read_all
from analyzer.ingest.thinning import Thinning
from ndval.core.units import MIB_BYTES

__all__ = [
    "RawTrace",
    "Thinning",
    "estimate_complete_events",
    "event_arrays",
    "read_trace",
    "signature_frame",
    "sniff_layout",
]

#: files larger than this show a progress bar on a terminal (bytes on disk).
PROGRESS_MIN_BYTES = 64 * MIB_BYTES
#: errors of a damaged file while reading (gzip, I/O); the events read before stay.
READ_ERRORS: tuple[type[BaseException], ...] = (EOFError, OSError, ValueError, RuntimeError)

#: signature of a complete event (``decode.Signature``); classification depends only on it, so it
#: runs once per signature.
Signature = dec.Signature


@dataclass
class RawTrace:
    """Columns of the complete events of one trace, before classification (see ``events.py``).

    Per event only numbers are stored: the signature id (``int32``: index into ``sigs``, the distinct
    (pid, tid, name, cat, task type, aux) tuples), ``ts_us``/``dur_us``/``bytes`` (float64) and
    ``corr`` (int64): 36 bytes per event while streaming. Strings live once, in ``sigs``.
    """

    path: Path
    base_ts_us: int
    sig: array[int] = field(default_factory=lambda: array("i"))
    ts_us: array[float] = field(default_factory=lambda: array("d"))
    dur_us: array[float] = field(default_factory=lambda: array("d"))
    corr: array[int] = field(default_factory=lambda: array("q"))
    bytes: array[float] = field(default_factory=lambda: array("d"))
    sigs: list[Signature] = field(default_factory=list)
    sig_index: dict[Signature, int] = field(default_factory=dict)
    ids: dict[str, int] = field(default_factory=dict)
    process_names: dict[int, str] = field(default_factory=dict)
    process_labels: dict[int, str] = field(default_factory=dict)
    thread_names: dict[tuple[int, int], str] = field(default_factory=dict)
    n_seen: int = 0
    n_complete: int = 0
    n_dropped_bad: int = 0
    #: of those, unreadable ``ts`` and elements that are no event object (the rest: bad ``dur``; ``excluded``)
    n_bad_ts: int = 0
    not_events: tuple[int, int] = (0, 0)  # (elements, of which not UTF-8)
    #: events dropped under the event-size budget (a name longer than ``Budgets.max_event_bytes``).
    n_too_long: int = 0
    #: duration events (``B`` / ``E``) paired into complete events, and the ones that could not be (by cause).
    durations: DurationPairs = field(default_factory=DurationPairs)
    #: ``ProfilerStep#N`` markers dropped with a bad ts/dur: (name, relative start µs before the rebase; NaN
    #: when the start itself is unreadable) — the reader says which step that excluded.
    bad_steps: list[tuple[str, float]] = field(default_factory=list)
    excluded_steps: list[dict[str, Any]] = field(default_factory=list)  # those with their step's events (readers)
    truncated: bool = False
    warnings: list[str] = field(default_factory=list)
    layout: str = ""
    shift_us: float = 0.0
    #: event budget bookkeeping (None when no budget was given), see :class:`Thinning`.
    thinning: Thinning | None = None
    #: events dropped under the budget, by event-table category (set by the readers).
    dropped_by_category: dict[str, int] = field(default_factory=dict)
    #: top-level keys of an object trace other than ``traceEvents`` (Kineto ``distributedInfo``...).
    top: dict[str, Any] = field(default_factory=dict)
    #: which path decoded the chunks (``EventFramer.decoder``: native, msgspec, or both).
    decoder: str = ""

    def __len__(self) -> int:
        return len(self.ts_us)


def _to_int(value: Any, ids: dict[str, int]) -> int:
    """Trace pids/tids are ints, or strings such as ``"Spans"``: map the latter (and integers beyond
    int64) to stable negatives."""
    try:
        out = value if isinstance(value, int) else int(value)
    except (TypeError, ValueError, OverflowError):
        out = None
    if out is not None and -2**63 <= out < 2**63:
        return out
    return ids.setdefault(str(value), -1000 - len(ids))


class _Progress:
    """rich progress on stderr, only for big files on a terminal (or when forced)."""

    def __init__(self, path: Path, enabled: bool | None) -> None:
        size = path.stat().st_size
        show = enabled if enabled is not None else (size >= PROGRESS_MIN_BYTES and sys.stderr.isatty())
        self.bar = None
        if show:
            from rich.progress import Progress

            self.bar = Progress(transient=True, console=_stderr_console())
            self.task = self.bar.add_task(f"parsing {path.name}", total=size)
            self.bar.start()

    def update(self, n_read: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=n_read)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def sniff_layout(path: Path) -> str:
    """``array`` (bare list of events), ``object`` (``{...}``) or ``empty``; no full parse."""
    try:
        head = read_all(path, 4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    except READ_ERRORS as exc:
        raise IngestError(path, "<file>", f"cannot read ({exc})") from exc
    if not head:
        return "empty"
    if head[:1] == b"[":
        return "array"
    if head[:1] == b"{":
        return "object"
    raise IngestError(path, "<file>", not_json(head))


def read_trace(path: Path, progress: bool | None = None, thinning: Thinning | None = None,
               budgets: Budgets | None = None, kineto: bool = False) -> RawTrace:
    """Read every complete event of a Chrome-trace file into a :class:`RawTrace` (module docstring).

    With ``thinning`` the buffer is thinned to its budget whenever it reaches ``thinning.cap`` and
    once more at the end, with the complete process/thread metadata (see :class:`Thinning`).
    ``budgets``: ingest budgets (default :class:`Budgets` ()); each one exceeded is a warning.
    ``kineto``: the events are Kineto's in either layout (a bare array is then decoded as Kineto events).
    """
    budgets = budgets or Budgets()
    src = open_source(path)
    framer = EventFramer(src, budgets, kineto=kineto)
    raw = RawTrace(path=path, base_ts_us=0, thinning=thinning)
    bar = _Progress(path, progress)
    state = _State()
    try:
        try:
            raw.layout = framer.open()
        except ValueError as exc:
            raise IngestError(path, "<file>", str(exc)) from exc
        except READ_ERRORS as exc:
            raise IngestError(path, "<file>", f"cannot read ({exc})") from exc
        if raw.layout == "empty":
            raise IngestError(path, "<file>", "empty file: no trace events")
        state.kineto, state.max_name = raw.layout == "object" or kineto, budgets.max_event_bytes
        with _gc_paused():
            for events in framer.chunks():
                _add(raw, events, state)
                events.clear()  # this chunk's structs freed before the next chunk is decoded (peak: one chunk, not two)
                bar.update(src.disk.n_read)
    except READ_ERRORS as exc:
        if isinstance(exc, IngestError):
            raise
        framer.truncated = f"{type(exc).__name__}: {str(exc).splitlines()[0][:100] if str(exc) else ''}"
    finally:
        bar.close()
        src.close()
    if framer.trailing:  # two traces in one file, or data appended after the document: never merged silently
        raise IngestError(path, "<file>", framer.trailing)
    raw.top, raw.decoder = framer.top, framer.decoder
    raw.base_ts_us = state.base or 0
    _notes(raw, framer)
    if thinning is not None and (thinning.compactions or len(raw.ts_us) > thinning.max_events):
        thinning.compact(raw, final=True)
    _rebase(raw)
    return raw


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while chunks are decoded (restored after, also on error).

    Decoded JSON cannot form reference cycles, so reference counting frees every chunk; without this
    the collector would walk the millions of short-lived tuples of the column extraction (measured:
    a third of the decode time on a 1M-event trace)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class _State:
    base: int | None = None
    kineto: bool = False
    max_name: int = 0


def _notes(raw: RawTrace, framer: EventFramer) -> None:
    """Warnings for damage and for every ingest budget that dropped or stopped something."""
    path, b = raw.path, framer.budgets
    raw.n_dropped_bad, raw.not_events = raw.n_dropped_bad + framer.n_not_events, (framer.n_not_events, framer.n_bad_utf8)
    if framer.truncated:
        raw.truncated = True
        raw.warnings.append(
            f"{path}: trace truncated or corrupt after {raw.n_seen} JSON events ({framer.truncated}); "
            f"kept {raw.n_complete} complete events read before the damage, the rest of the file is ignored")
    if framer.n_too_deep:
        raw.warnings.append(f"{path}: nesting-depth budget: dropped {framer.n_too_deep} events nested deeper "
                            f"than max_depth={b.max_depth}")
    if framer.n_too_big + raw.n_too_long:
        raw.warnings.append(f"{path}: event-size budget: skipped {framer.n_too_big + raw.n_too_long} events longer than "
                            f"max_event_bytes={b.max_event_bytes:,} (a string that long is not kept)")
    paired = durations.note(path, raw.durations)
    if paired:
        raw.warnings.append(paired)
    if framer.stopped:
        raw.warnings.append(f"{path}: {framer.stopped}; the rest of the file is not read and the analysis "
                            f"covers only the {raw.n_complete:,} complete events read")


_NAME = itemgetter(2)


def _add(raw: RawTrace, events: list[dec.Event] | native.NativeChunk, state: _State) -> None:
    """One decoded chunk -> columns of ``raw`` (module docstring); metadata events -> ``raw``'s maps.

    Column-wise, with as few passes over the structs as possible (each pass costs ~70 ns per event
    in CPython): the signature key of an event is built in one comprehension, not zipped from
    per-field lists (measured: half the cost). A native chunk has its columns already."""
    if isinstance(events, native.NativeChunk):
        _add_native(raw, events, state)
        return
    raw.n_seen += len(events)
    xs = [e for e in events if e.ph == "X"]
    if len(xs) != len(events):
        for e in events:
            if e.ph == "M":
                _meta(e, raw)
            elif e.ph in dec.DURATION_PHASES:
                done = raw.durations.add(e, dec.KinetoEvent if state.kineto else dec.Event)
                if done is not None:
                    xs.append(done)
    if not xs:
        return
    ts = dec.exact_relative_us([e.ts for e in xs], state.base)
    state.base = ts.base
    dur, bad = dec.durations_us([e.dur for e in xs])
    bad |= ts.bad
    raw.n_bad_ts += int(ts.bad.sum())
    keys: list[Any]
    if state.kineto:
        keys, corr, nbytes = dec.kineto_columns(xs)  # type: ignore[arg-type]  # KinetoEvent chunks
    else:
        tt, aux, corr_t, nbytes_t = zip(*[dec.arg_info(e.args) for e in xs], strict=True)
        corr, nbytes = dec.int64_column(list(corr_t)), np.array(nbytes_t, dtype=np.float64)
        keys = list(zip([e.pid for e in xs], [e.tid for e in xs], [e.name for e in xs],
                        [e.cat for e in xs], tt, aux, strict=True))
    sig = _chunk_signatures(raw, keys, bad, state.max_name)
    if bad.any():
        rows = np.flatnonzero(bad)
        _note_bad_steps(raw, [xs[i].name for i in rows], ts.rel_us[rows], ts.bad[rows])
        good = ~bad
        ts.rel_us, dur, corr, nbytes = ts.rel_us[good], dur[good], corr[good], nbytes[good]
    cols = (sig, ts.rel_us, dur, corr, nbytes)
    raw.n_complete += len(sig)
    _append(raw, cols)


def _add_native(raw: RawTrace, chunk: native.NativeChunk, state: _State) -> None:
    """:func:`_add` of a chunk decoded natively (the same columns, counts and signature order)."""
    raw.n_seen += chunk.n_events
    for e in chunk.meta:
        _meta(e, raw)
    if not chunk.kidx.size:
        return
    ts = native.relative_us(chunk, state.base)
    state.base = ts.base
    bad = chunk.bad
    got = native.signature_ids(raw.sig_index, raw.sigs, chunk, bad, state.max_name)
    raw.n_too_long += got.n_long
    raw.n_dropped_bad += got.n_bad
    if got.n_bad:
        raw.n_bad_ts, rows = raw.n_bad_ts + int(ts.bad.sum()), np.flatnonzero(bad)
        _note_bad_steps(raw, [chunk.keys[k][2] for k in chunk.kidx[rows]], ts.rel_us[rows], ts.bad[rows])
    cols = (got.ids, ts.rel_us, chunk.dur, chunk.corr, chunk.nbytes)
    if len(got.ids) < len(bad):  # unreadable rows or names over the budget dropped
        good = ~bad
        cols = (got.ids, ts.rel_us[good], chunk.dur[good], chunk.corr[good], chunk.nbytes[good])
    raw.n_complete += len(got.ids)
    _append(raw, cols)


def _note_bad_steps(raw: RawTrace, names: list[Any], rel_us: np.ndarray, ts_bad: np.ndarray) -> None:
    """Record the ``ProfilerStep#N`` markers among dropped rows (``RawTrace.bad_steps``)."""
    for name, t, unreadable in zip(names, rel_us, ts_bad, strict=True):
        if isinstance(name, str) and name.startswith("ProfilerStep#"):
            raw.bad_steps.append((name, math.nan if unreadable else float(t)))


def _chunk_signatures(raw: RawTrace, keys: list[Any], bad: np.ndarray, max_name: int) -> np.ndarray:
    """Signature ids of the events of a chunk that are kept. ``bad`` (unreadable ts / dur) is
    updated in place with the names over the event-size budget; dropped events are counted.

    One C-level lookup pass (-1 for a key not seen yet); only the events with a new key are then
    visited in order: a name over the budget is dropped (such a key is never added, so it is always
    new), every other new key is added in first-occurrence order of the kept events. A chunk with an
    unhashable value takes the exact route of :func:`_signature_ids` (values as text)."""
    index = raw.sig_index
    try:
        ids = np.fromiter(map(index.get, keys, itertools.repeat(-1)), dtype=np.int32, count=len(keys))
    except TypeError:
        return _exact_signatures(raw, keys, bad, max_name)
    new = np.flatnonzero(ids < 0)
    long = _long_names([keys[i] for i in new], max_name) if new.size else None
    n_long = int(long.sum()) if long is not None else 0
    if long is not None:
        raw.n_too_long += n_long
        bad[new[long]] = True
    sigs = raw.sigs
    for i in new[~bad[new]]:
        ids[i] = dec.signature_id(index, sigs, keys[i])
    if bad.any():
        raw.n_dropped_bad += int(bad.sum()) - n_long  # a name too long is counted apart
        ids = ids[~bad]
    return ids


def _exact_signatures(raw: RawTrace, keys: list[Any], bad: np.ndarray, max_name: int) -> np.ndarray:
    """:func:`_chunk_signatures` for a chunk with an unhashable value: per event, values as text."""
    long = _long_names(keys, max_name)
    if long is not None:
        raw.n_too_long += int(long.sum())
        bad |= long
    if bad.any():
        raw.n_dropped_bad += int(bad.sum()) - int(long.sum() if long is not None else 0)
        keys = list(itertools.compress(keys, ~bad))
    return _signature_ids(raw, keys)


def _long_names(keys: list[Any], max_name: int) -> np.ndarray | None:
    """Per key, whether its name is longer than ``max_name`` (None when none is)."""
    if not keys or max(map(len, map(_NAME, keys))) <= max_name:
        return None
    return np.array([len(k[2]) > max_name for k in keys])


def _signature_ids(raw: RawTrace, keys: list[Any]) -> np.ndarray:
    """Signature id per key, new signatures added to ``raw.sigs`` (unhashable values as text)."""
    index, sigs = raw.sig_index, raw.sigs
    try:
        ids = list(map(index.get, keys, itertools.repeat(-1)))
    except TypeError:
        keys = [tuple(v if isinstance(v, str | int) else str(v) for v in k) for k in keys]
        ids = list(map(index.get, keys, itertools.repeat(-1)))
    if -1 in ids:
        for i, k in enumerate(keys):
            if ids[i] < 0:
                ids[i] = dec.signature_id(index, sigs, k)
    return np.array(ids, dtype=np.int32)


_COLUMNS = ("sig", "ts_us", "dur_us", "corr", "bytes")


def _append(raw: RawTrace, cols: tuple[np.ndarray, ...]) -> None:
    """Append a chunk's columns, compacting under the event budget whenever the buffer reaches its
    cap (so it never holds more than ``cap`` rows)."""
    thin = raw.thinning
    n, at = len(cols[0]), 0
    while at < n:
        room = n - at if thin is None else max(1, thin.cap - len(raw.ts_us))
        part = slice(at, at + room)
        for name, col in zip(_COLUMNS, cols, strict=True):
            getattr(raw, name).frombytes(np.ascontiguousarray(col[part]).data.cast("B"))
        at += room
        if thin is not None and len(raw.ts_us) >= thin.cap:
            thin.compact(raw)


def _meta(ev: dec.Event | dec.KinetoEvent, raw: RawTrace) -> None:
    args = ev.args
    pid = _to_int(ev.pid, raw.ids)
    if ev.name == "process_name":
        raw.process_names[pid] = str(args.name if args is not None and args.name is not None else "")
    elif ev.name == "process_labels":
        raw.process_labels[pid] = str(args.labels if args is not None and args.labels is not None else "")
    elif ev.name == "thread_name":
        raw.thread_names[(pid, _to_int(ev.tid, raw.ids))] = str(
            args.name if args is not None and args.name is not None else "")


def _rebase(raw: RawTrace) -> None:
    """Move the base to the floor of the earliest start (integer shift: exact)."""
    if raw.ts_us:
        shift = math.floor(float(np.frombuffer(raw.ts_us, dtype=np.float64).min()))
        raw.shift_us = float(shift)
        raw.base_ts_us += shift


def estimate_complete_events(path: Path, sample_bytes: int = 8 * MIB_BYTES) -> int:
    """Rough number of complete (``"ph": "X"``) events in a trace, from the density of
    ``"ph":"X"`` in its first ``sample_bytes`` (decompressed) × its size on disk (for a gzip file
    the density is per compressed byte read). An estimate for a memory warning, not a count."""
    src = open_source(path, threaded=False)
    try:
        head = src.read(sample_bytes)
    except READ_ERRORS:
        return 0
    finally:
        src.close()
    found = len(re.findall(rb'"ph"\s*:\s*"X"', head))
    read_on_disk = max(src.disk.n_read, 1) if len(head) >= sample_bytes else path.stat().st_size
    return int(found * path.stat().st_size / max(read_on_disk, 1))


def signature_frame(raw: RawTrace) -> pd.DataFrame:
    """One row per distinct signature: ``pid``, ``tid`` (int64), ``name``, ``cat``, ``task_type``,
    ``aux`` (str). Readers classify this small table, then broadcast it to the events by ``sig``."""
    keys = raw.sigs
    return pd.DataFrame({
        "name": np.array([str(k[2]) for k in keys], dtype=object),
        "cat": np.array([str(k[3]) for k in keys], dtype=object),
        "pid": np.array([_to_int(k[0], raw.ids) for k in keys], dtype=np.int64),
        "tid": np.array([_to_int(k[1], raw.ids) for k in keys], dtype=np.int64),
        "task_type": np.array([str(k[4]) for k in keys], dtype=object),
        "aux": np.array([str(k[5]) for k in keys], dtype=object),
    })


def event_arrays(raw: RawTrace) -> dict[str, np.ndarray]:
    """The per-event numeric columns as numpy arrays (``ts_us`` rebased); ``raw``'s buffers are
    handed over (zero-copy) and released from ``raw``."""
    out: dict[str, np.ndarray] = {
        "sig": np.frombuffer(raw.sig, dtype=np.int32) if raw.sig else np.empty(0, dtype=np.int32),
        "ts_us": np.frombuffer(raw.ts_us, dtype=np.float64) if raw.ts_us else np.empty(0),
        "dur_us": np.frombuffer(raw.dur_us, dtype=np.float64) if raw.dur_us else np.empty(0),
        "corr": np.frombuffer(raw.corr, dtype=np.int64) if raw.corr else np.empty(0, dtype=np.int64),
        "bytes": np.frombuffer(raw.bytes, dtype=np.float64) if raw.bytes else np.empty(0),
    }
    if raw.shift_us:
        out["ts_us"] = out["ts_us"] - raw.shift_us
    for col in ("sig", "ts_us", "dur_us", "corr", "bytes"):
        setattr(raw, col, array(getattr(raw, col).typecode))
    return out
