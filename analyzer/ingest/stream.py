"""Streaming Chrome-trace reader: bounded memory, exact timestamps, truncated-tail recovery.

The trace is read with ``ijson`` (yajl2_c backend) one event at a time; only the fields the event
table needs are kept: numbers in typed ``array`` columns (8 bytes each), strings as references to
one interned object per distinct value. Memory grows with the number of complete events (measured
by ``benchmarks/bench_analyzer.py``: ~90 bytes per event while streaming, ~300 bytes per event peak
once classified into the pandas table), never with a JSON DOM (which costs ~10× the file size). Both layouts are accepted: a bare JSON
array (Ascend ``trace_view.json``) and an object with ``traceEvents`` (Kineto); ``.gz`` is
decompressed on the fly.

Timestamps: ``ts`` may be a decimal string of epoch µs (Ascend) or a number (Kineto, parsed as
``Decimal`` or ``int`` by ijson). The integer part of the first event's ``ts`` becomes a provisional
base; each ``ts`` is reduced *exactly* (integer subtraction) before it becomes a float. Once the
whole trace is read, the base moves to the floor of the earliest start (an integer shift, exact).

A truncated or corrupt file yields every event before the damage, plus a warning that names the
file and the number of events kept.
"""

from __future__ import annotations

import gzip
import io
import math
import re
import sys
import zlib
from array import array
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

import ijson
import numpy as np
import pandas as pd

from analyzer.ingest.errors import IngestError

#: files larger than this show a progress bar on a terminal (bytes on disk).
PROGRESS_MIN_BYTES = 64 * 2**20

#: bytes per element of the dtype names used in HCCL / NCCL args (message size = count × this).
DTYPE_BYTES: dict[str, int] = {
    "fp32": 4, "float32": 4, "float": 4, "fp16": 2, "float16": 2, "half": 2, "bf16": 2,
    "bfloat16": 2, "int8": 1, "uint8": 1, "int16": 2, "int32": 4, "int64": 8, "uint64": 8,
    "fp64": 8, "float64": 8, "double": 8, "bool": 1, "char": 1, "byte": 1, "long": 8, "int": 4,
}


@dataclass
class RawTrace:
    """Columns of the complete events of one trace, before classification (see ``events.py``)."""

    path: Path
    base_ts_us: int
    name: list[str] = field(default_factory=list)
    cat: list[str] = field(default_factory=list)
    # numbers in typed arrays (8 bytes per event), strings as interned references
    pid: array = field(default_factory=lambda: array("q"))
    tid: array = field(default_factory=lambda: array("q"))
    ts_us: array = field(default_factory=lambda: array("d"))
    dur_us: array = field(default_factory=lambda: array("d"))
    task_type: list[str] = field(default_factory=list)
    corr: array = field(default_factory=lambda: array("q"))
    bytes: array = field(default_factory=lambda: array("d"))
    aux: list[str] = field(default_factory=list)
    process_names: dict[int, str] = field(default_factory=dict)
    process_labels: dict[int, str] = field(default_factory=dict)
    thread_names: dict[tuple[int, int], str] = field(default_factory=dict)
    n_seen: int = 0
    n_dropped_bad: int = 0
    truncated: bool = False
    warnings: list[str] = field(default_factory=list)
    layout: str = ""
    shift_us: float = 0.0


class _CountingReader(io.RawIOBase):
    """Wraps a binary file, counting bytes read (for progress on the compressed size)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.n_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self.raw.readinto(b)  # type: ignore[attr-defined]
        self.n_read += n or 0
        return n or 0


class _NanFilter(io.RawIOBase):
    """Rewrites the non-JSON literals Python's ``json.dump`` emits (``NaN``, ``Infinity``,
    ``-Infinity``) to ``null`` when they stand as a value (after ``:``, ``,`` or ``[``), so one bad
    number drops one event instead of ending the parse. A short tail is held back between reads so
    a literal split across chunks is still seen whole."""

    _RE = re.compile(rb"([:,\[]\s*)(?:-?Infinity|NaN)")
    _HOLD = 16

    def __init__(self, inner: IO[bytes]) -> None:
        self.inner = inner
        self.pending = b""
        self.out = b""
        self.eof = False

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self.out and not (self.eof and not self.pending):
            chunk = b"" if self.eof else self.inner.read(1 << 20)
            if not chunk:
                self.eof = True
            data = self.pending + chunk
            cut = len(data) if self.eof else max(0, len(data) - self._HOLD)
            head, self.pending = data[:cut], data[cut:]
            # the regex only runs on the (rare) chunks that contain a literal at all
            self.out = self._RE.sub(rb"\1null", head) if (b"NaN" in head or b"Infinity" in head) else head
        n = min(len(b), len(self.out))
        b[:n] = self.out[:n]
        self.out = self.out[n:]
        return n

    def close(self) -> None:
        self.inner.close()
        super().close()


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def open_stream(path: Path) -> tuple[IO[bytes], _CountingReader]:
    """Binary stream of the (decompressed when gzip) file with NaN/Infinity made ``null``, plus the
    byte counter of the file on disk. Close both: ``fh.close(); counter.raw.close()``."""
    counter = _CountingReader(open(path, "rb"))  # noqa: SIM115 - closed by caller
    buffered = io.BufferedReader(counter, buffer_size=1 << 20)
    inner: IO[bytes] = gzip.GzipFile(fileobj=buffered) if _is_gzip(path) else buffered  # type: ignore[assignment]
    return io.BufferedReader(_NanFilter(inner), buffer_size=1 << 20), counter


def sniff_layout(path: Path) -> str:
    """``array`` (bare list of events), ``object`` (``{...}``) or ``empty``; no full parse."""
    fh, counter = open_stream(path)
    try:
        head = fh.read(4096).lstrip()
    except (OSError, EOFError, zlib.error) as exc:
        raise IngestError(path, "<file>", f"cannot read ({exc})") from exc
    finally:
        fh.close()
        counter.raw.close()
    if not head:
        return "empty"
    first = head[:1]
    if first == b"[":
        return "array"
    if first == b"{":
        return "object"
    raise IngestError(path, "<file>", "not JSON: expected '[' (event array) or '{' (traceEvents object)")


def _split_ts(ts: Any, base: int | None) -> tuple[float, int]:
    """``(ts - base, base)`` exactly; the base is set from the first ``ts`` seen."""
    if isinstance(ts, str):
        text = ts.strip()
        dot = text.find(".")
        whole = int(text[:dot] if dot >= 0 else text)
        if base is None:
            base = whole
        frac = float("0" + text[dot:]) if dot >= 0 else 0.0
        return float(whole - base) + frac, base
    if isinstance(ts, int):
        if base is None:
            base = ts
        return float(ts - base), base
    if isinstance(ts, Decimal):
        whole = int(ts)
        if base is None:
            base = whole
        return float(ts - base), base
    if isinstance(ts, float) and math.isfinite(ts):
        if base is None:
            base = int(ts)
        return ts - base, base
    raise ValueError(f"ts {ts!r}")


def _to_int(value: Any, ids: dict[str, int]) -> int:
    """Trace pids/tids are ints, or strings such as ``"Spans"``: map the latter to stable negatives."""
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        return ids.setdefault(str(value), -1000 - len(ids))


def _message_bytes(args: dict[str, Any]) -> float:
    """Bytes of the event: memcpy ``data size(Byte)`` / ``bytes`` / plane ``size(Byte)``, or
    collective ``count × sizeof(data_type)`` (HCCL) / ``In msg nelems × sizeof(dtype)`` (NCCL)."""
    for key in ("data size(Byte)", "bytes", "size(Byte)"):
        if key in args:
            try:
                return float(args[key])
            except (TypeError, ValueError):
                return math.nan
    count = args.get("count", args.get("In msg nelems"))
    dtype = args.get("data_type", args.get("dtype"))
    if count is not None and dtype is not None:
        width = DTYPE_BYTES.get(str(dtype).lower().replace("torch.", ""))
        if width is not None:
            try:
                return float(count) * width
            except (TypeError, ValueError):
                return math.nan
    return math.nan


def _corr(args: dict[str, Any]) -> int:
    for key in ("correlation", "connection_id", "correlation_id"):
        value = args.get(key)
        if value is not None:
            try:
                return int(value)
            except (TypeError, ValueError):
                return -1
    return -1


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


def read_trace(path: Path, progress: bool | None = None) -> RawTrace:
    """Stream every event of a Chrome-trace file into a :class:`RawTrace` (see module docstring)."""
    layout = sniff_layout(path)
    if layout == "empty":
        raise IngestError(path, "<file>", "empty file: no trace events")
    prefix = "item" if layout == "array" else "traceEvents.item"
    fh, counter = open_stream(path)
    bar = _Progress(path, progress)
    raw = RawTrace(path=path, base_ts_us=0, layout=layout)
    try:
        # Ascend arrays carry ts as strings, so numbers may be floats (faster); Kineto numbers stay
        # Decimal so a numeric epoch ts keeps its sub-µs digits.
        _consume(ijson.items(fh, prefix, use_float=layout == "array"), raw, counter, bar)
    except (ijson.JSONError, EOFError, zlib.error, OSError, UnicodeDecodeError) as exc:
        raw.truncated = True
        raw.warnings.append(
            f"{path}: trace truncated or corrupt after {raw.n_seen} JSON events "
            f"({type(exc).__name__}: {str(exc).splitlines()[0][:100] if str(exc) else ''}); "
            f"kept {len(raw.ts_us)} complete events read before the damage, the rest of the file "
            "is ignored"
        )
    finally:
        bar.close()
        fh.close()
        counter.raw.close()
    _rebase(raw)
    return raw


def _consume(items: Any, raw: RawTrace, counter: _CountingReader, bar: _Progress) -> None:
    """The hot loop: one pass, only the needed fields, interned strings."""
    interned: dict[str, str] = {}
    ids: dict[str, int] = {}
    base: int | None = None
    ap_name, ap_cat, ap_pid, ap_tid = raw.name.append, raw.cat.append, raw.pid.append, raw.tid.append
    ap_ts, ap_dur, ap_tt = raw.ts_us.append, raw.dur_us.append, raw.task_type.append
    ap_corr, ap_bytes, ap_aux = raw.corr.append, raw.bytes.append, raw.aux.append
    for i, ev in enumerate(items):
        raw.n_seen += 1
        if not (i & 0x3FFF):
            bar.update(counter.n_read)
        if not isinstance(ev, dict):
            raw.n_dropped_bad += 1
            continue
        ph = ev.get("ph")
        if ph == "M":
            _meta(ev, raw, ids)
            continue
        if ph != "X":
            continue
        try:
            ts, base = _split_ts(ev.get("ts"), base)
            dur = float(ev.get("dur", 0.0))
        except (ValueError, TypeError, ArithmeticError):
            raw.n_dropped_bad += 1
            continue
        if not (dur >= 0.0 and math.isfinite(dur)):
            raw.n_dropped_bad += 1
            continue
        args = ev.get("args") or {}
        name = str(ev.get("name", ""))
        ap_name(interned.setdefault(name, name))
        cat = str(ev.get("cat", ""))
        ap_cat(interned.setdefault(cat, cat))
        ap_pid(_to_int(ev.get("pid", -1), ids))
        ap_tid(_to_int(ev.get("tid", -1), ids))
        ap_ts(ts)
        ap_dur(dur)
        tt = str(args.get("Task Type", args.get("task type", ""))) if args else ""
        ap_tt(interned.setdefault(tt, tt))
        ap_corr(_corr(args) if args else -1)
        ap_bytes(_message_bytes(args) if args else math.nan)
        aux = str(args.get("memcpy direction", args.get("Collective name", ""))) if args else ""
        ap_aux(interned.setdefault(aux, aux))
    raw.base_ts_us = base or 0


def _meta(ev: dict[str, Any], raw: RawTrace, ids: dict[str, int]) -> None:
    args = ev.get("args") or {}
    pid = _to_int(ev.get("pid", -1), ids)
    kind = ev.get("name")
    if kind == "process_name":
        raw.process_names[pid] = str(args.get("name", ""))
    elif kind == "process_labels":
        raw.process_labels[pid] = str(args.get("labels", ""))
    elif kind == "thread_name":
        raw.thread_names[(pid, _to_int(ev.get("tid", -1), ids))] = str(args.get("name", ""))


def _rebase(raw: RawTrace) -> None:
    """Move the base to the floor of the earliest start (integer shift: exact)."""
    if raw.ts_us:
        shift = math.floor(min(raw.ts_us))
        raw.shift_us = float(shift)
        raw.base_ts_us += shift


def raw_frame(raw: RawTrace) -> pd.DataFrame:
    """The raw columns as a DataFrame (ts rebased); the lists of ``raw`` are released."""
    frame = pd.DataFrame({
        "name": np.array(raw.name, dtype=object),
        "cat": np.array(raw.cat, dtype=object),
        "pid": np.frombuffer(raw.pid, dtype=np.int64).copy(),
        "tid": np.frombuffer(raw.tid, dtype=np.int64).copy(),
        "ts_us": np.frombuffer(raw.ts_us, dtype=np.float64) - raw.shift_us,
        "dur_us": np.frombuffer(raw.dur_us, dtype=np.float64).copy(),
        "task_type": np.array(raw.task_type, dtype=object),
        "corr": np.frombuffer(raw.corr, dtype=np.int64).copy(),
        "bytes": np.frombuffer(raw.bytes, dtype=np.float64).copy(),
        "aux": np.array(raw.aux, dtype=object),
    })
    for col in ("name", "cat", "task_type", "aux"):
        setattr(raw, col, [])
    for col in ("pid", "tid", "ts_us", "dur_us", "corr", "bytes"):
        setattr(raw, col, array(getattr(raw, col).typecode))
    return frame
