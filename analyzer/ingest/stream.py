"""Streaming Chrome-trace reader: bounded memory, exact timestamps, truncated-tail recovery.

The trace is read with ``ijson`` (yajl2_c backend) one event at a time; only the fields the event
table needs are kept: numbers in typed ``array`` columns, and the strings (pid, tid, name, cat,
task type, aux) as one **signature id** (int32) into a table of distinct signatures, so an event
costs 36 bytes while streaming. Classification runs once per signature and is broadcast to the
events as categorical codes (see ``events.build_table``). Memory grows with the number of complete
events kept (peak per event measured by ``benchmarks/bench_analyzer.py``), never with a JSON DOM
(which costs ~10× the file size); an event budget (:class:`Thinning`) bounds it whatever the trace
size. Both layouts are accepted: a bare JSON
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
from collections.abc import Callable
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


#: signature of a complete event: (pid, tid, name, cat, Task Type, memcpy direction / Collective name)
#: as written in the trace (classification depends only on these, so it runs once per signature).
Signature = tuple[Any, Any, Any, Any, Any, Any]


@dataclass
class RawTrace:
    """Columns of the complete events of one trace, before classification (see ``events.py``).

    Per event only numbers are stored: the signature id (``int32``: index into ``sigs``, the distinct
    (pid, tid, name, cat, task type, aux) tuples), ``ts_us``/``dur_us``/``bytes`` (float64) and
    ``corr`` (int64): 36 bytes per event while streaming. Strings live once, in ``sigs``.
    """

    path: Path
    base_ts_us: int
    sig: array = field(default_factory=lambda: array("i"))
    ts_us: array = field(default_factory=lambda: array("d"))
    dur_us: array = field(default_factory=lambda: array("d"))
    corr: array = field(default_factory=lambda: array("q"))
    bytes: array = field(default_factory=lambda: array("d"))
    sigs: list[Signature] = field(default_factory=list)
    sig_index: dict[Signature, int] = field(default_factory=dict)
    ids: dict[str, int] = field(default_factory=dict)
    process_names: dict[int, str] = field(default_factory=dict)
    process_labels: dict[int, str] = field(default_factory=dict)
    thread_names: dict[tuple[int, int], str] = field(default_factory=dict)
    n_seen: int = 0
    n_complete: int = 0
    n_dropped_bad: int = 0
    truncated: bool = False
    warnings: list[str] = field(default_factory=list)
    layout: str = ""
    shift_us: float = 0.0
    #: event budget bookkeeping (None when no budget was given), see :class:`Thinning`.
    thinning: Thinning | None = None
    #: events dropped under the budget, by event-table category (set by the readers).
    dropped_by_category: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ts_us)


#: tier of a signature under an event budget: lower = kept first (0 is never dropped).
TierFn = Callable[[RawTrace], np.ndarray]


@dataclass
class Thinning:
    """Bounded-memory event budget: keep at most ``max_events`` complete events.

    Every signature has a *tier* (``tier_fn``; lower = needed more by the analysis; tier 0 = step
    markers, never dropped). Events of a tier are thinned by a **stride**: the k-th event of tier t
    (k counted in file order over the whole trace) is kept iff ``k % stride[t] == 0``. Whenever the
    buffer reaches ``cap`` events, or at the end, the lowest-priority tier still holding events has
    its stride doubled (a tier whose stride exceeds its count is dropped whole) until at most
    :attr:`mid_target` (default 2 × ``max_events``; ``cap`` defaults to 3 ×) are kept. Within a tier the survivors are therefore one in ``stride`` of its
    events, evenly spread over the file (trace writers emit each thread/stream in time order). At
    the end the tier being cut keeps exactly what still fits, picked evenly in ``ts`` order, so the
    budget is filled: lower tiers are dropped whole, higher tiers kept whole. Memory stays O(``cap``) rows whatever the trace size (as
    long as the tiers are known, i.e. the process metadata came first; events of a process not yet
    named are kept until it is). ``dropped_by_sig`` counts every dropped event by signature, so
    per-category drop counts are exact.
    """

    max_events: int
    tier_fn: TierFn
    cap: int = 0
    stride: dict[int, int] = field(default_factory=dict)
    seen: dict[int, int] = field(default_factory=dict)
    tix: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    done: int = 0
    dropped_by_sig: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    compactions: int = 0
    #: most events ever buffered (the memory bound: never above ``cap``).
    max_buffered: int = 0
    #: tier -> events kept by the final even pick; tier -> events kept in the end.
    picked: dict[int, int] = field(default_factory=dict)
    kept: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.max_events < 0:
            raise ValueError(f"max_events must be >= 0, got {self.max_events}")
        if not self.cap:
            self.cap = max(3 * self.max_events, self.max_events + (1 << 16))

    @property
    def mid_target(self) -> int:
        """Events kept by a compaction while streaming: ``max(max_events, cap − max_events)`` (2×
        the budget by default), so that the tier being cut keeps at least what the final, exact pick
        needs (a power-of-two stride can overshoot by up to 2×) and compactions stay O(1) per event."""
        return max(self.max_events, self.cap - self.max_events)

    @property
    def n_dropped(self) -> int:
        """Events dropped so far."""
        return int(self.dropped_by_sig.sum())

    def compact(self, raw: RawTrace, final: bool = False) -> None:
        """Thin the buffered events of ``raw`` to at most ``max_events`` (in place, see class doc).

        ``final``: the last call (complete metadata): instead of a last stride doubling, the tier
        being cut keeps exactly as many of its survivors as still fit, picked evenly in time
        (evenly spaced in ``ts`` order), so the budget is filled.
        """
        n = len(raw.ts_us)
        self.compactions += 1
        self.max_buffered = max(self.max_buffered, n)
        sig = np.frombuffer(raw.sig, dtype=np.int32).copy() if n else np.empty(0, dtype=np.int32)
        tiers_sig = np.asarray(self.tier_fn(raw), dtype=np.int64)
        tier = tiers_sig[sig] if n else np.empty(0, dtype=np.int64)
        new_tier = tier[self.done:]
        tix_new = np.empty(new_tier.size, dtype=np.int64)
        for t in np.unique(new_tier):
            m = new_tier == t
            cnt = int(m.sum())
            start = self.seen.get(int(t), 0)
            tix_new[m] = np.arange(start, start + cnt, dtype=np.int64)
            self.seen[int(t)] = start + cnt
        tix = np.concatenate([self.tix, tix_new])
        keep = self._keep(tier, tix)
        target = self.max_events if final else self.mid_target
        while int(keep.sum()) > target:
            kept_tiers = [int(t) for t in np.unique(tier[keep]) if t > 0]
            if not kept_tiers:
                break  # only step markers left: the budget cannot be met (reported by the caller)
            t = max(kept_tiers)
            in_t = keep & (tier == t)
            room = target - int(keep.sum()) + int(in_t.sum())
            if final and room > 0:
                rows = np.flatnonzero(in_t)
                ts = np.frombuffer(raw.ts_us, dtype=np.float64)[rows]
                by_time = rows[np.argsort(ts, kind="stable")]
                picked = by_time[np.unique(np.linspace(0, rows.size - 1, room).round().astype(np.int64))]
                keep[rows] = False
                keep[picked] = True
                self.picked[t] = int(picked.size)
                break
            stride = self.stride.get(t, 1) * 2
            self.stride[t] = 0 if stride > self.seen.get(t, 0) or room <= 0 else stride  # 0: dropped whole
            keep = self._keep(tier, tix)
        if len(self.dropped_by_sig) < len(raw.sigs):
            self.dropped_by_sig = np.concatenate(
                [self.dropped_by_sig, np.zeros(len(raw.sigs) - len(self.dropped_by_sig), dtype=np.int64)])
        if not keep.all():
            self.dropped_by_sig += np.bincount(sig[~keep], minlength=len(raw.sigs))
            for name, dtype in (("sig", np.int32), ("ts_us", np.float64), ("dur_us", np.float64),
                                ("corr", np.int64), ("bytes", np.float64)):
                buf: array = getattr(raw, name)
                kept = np.frombuffer(buf, dtype=dtype)[keep].tobytes() if n else b""
                del buf[:]
                buf.frombytes(kept)
        self.tix = tix[keep]
        self.done = len(raw.ts_us)
        if final:
            kept_tiers, counts = np.unique(tier[keep], return_counts=True)
            self.kept = {int(t): int(c) for t, c in zip(kept_tiers, counts, strict=True)}

    def summary(self, names: dict[int, str]) -> list[str]:
        """``"<tier>: kept k of n"`` for every tier that lost events (after the final compaction)."""
        out = []
        for t in sorted(self.seen):
            seen, kept = self.seen[t], self.kept.get(t, 0)
            if kept < seen:
                out.append(f"{names.get(t, str(t))} kept {kept:,} of {seen:,}" if kept else
                           f"{names.get(t, str(t))} dropped ({seen:,})")
        return out

    def _keep(self, tier: np.ndarray, tix: np.ndarray) -> np.ndarray:
        """Rows kept under the current strides (stride 0 = tier dropped; tier 0 always kept)."""
        if not tier.size:
            return np.ones(0, dtype=bool)
        top = int(tier.max()) + 1
        strides = np.ones(top, dtype=np.int64)
        for t, s in self.stride.items():
            if t < top:
                strides[t] = s
        st = strides[tier]
        keep = np.zeros(tier.size, dtype=bool)
        live = st > 0
        keep[live] = (tix[live] % st[live]) == 0
        keep[tier == 0] = True
        return keep


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


def read_trace(path: Path, progress: bool | None = None, thinning: Thinning | None = None) -> RawTrace:
    """Stream every event of a Chrome-trace file into a :class:`RawTrace` (see module docstring).

    With ``thinning`` the buffer is thinned to its budget whenever it reaches ``thinning.cap`` and
    once more at the end, with the complete process/thread metadata (see :class:`Thinning`).
    """
    layout = sniff_layout(path)
    if layout == "empty":
        raise IngestError(path, "<file>", "empty file: no trace events")
    prefix = "item" if layout == "array" else "traceEvents.item"
    fh, counter = open_stream(path)
    bar = _Progress(path, progress)
    raw = RawTrace(path=path, base_ts_us=0, layout=layout, thinning=thinning)
    try:
        # Ascend arrays carry ts as strings, so numbers may be floats (faster); Kineto numbers stay
        # Decimal so a numeric epoch ts keeps its sub-µs digits.
        _consume(ijson.items(fh, prefix, use_float=layout == "array"), raw, counter, bar)
    except (ijson.JSONError, EOFError, zlib.error, OSError, UnicodeDecodeError) as exc:
        raw.truncated = True
        raw.warnings.append(
            f"{path}: trace truncated or corrupt after {raw.n_seen} JSON events "
            f"({type(exc).__name__}: {str(exc).splitlines()[0][:100] if str(exc) else ''}); "
            f"kept {raw.n_complete} complete events read before the damage, the rest of the file "
            "is ignored"
        )
    finally:
        bar.close()
        fh.close()
        counter.raw.close()
    if thinning is not None:
        thinning.compact(raw, final=True)
    _rebase(raw)
    return raw


def _consume(items: Any, raw: RawTrace, counter: _CountingReader, bar: _Progress) -> None:
    """The hot loop: one pass, only the needed fields; strings go to the signature table."""
    sig_index, sigs = raw.sig_index, raw.sigs
    base: int | None = None
    thin = raw.thinning
    ap_sig, ap_ts, ap_dur = raw.sig.append, raw.ts_us.append, raw.dur_us.append
    ap_corr, ap_bytes = raw.corr.append, raw.bytes.append
    nan = math.nan
    n_complete = 0
    try:
        for i, ev in enumerate(items):
            raw.n_seen += 1
            if not (i & 0x3FFF):
                bar.update(counter.n_read)
            if thin is not None and len(raw.ts_us) >= thin.cap:
                thin.compact(raw)
            if not isinstance(ev, dict):
                raw.n_dropped_bad += 1
                continue
            ph = ev.get("ph")
            if ph == "M":
                _meta(ev, raw, raw.ids)
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
            args = ev.get("args")
            if args and isinstance(args, dict):
                tt = args.get("Task Type", args.get("task type", ""))
                aux = args.get("memcpy direction", args.get("Collective name", ""))
                corr = _corr(args)
                nbytes = _message_bytes(args)
            else:
                tt = aux = ""
                corr, nbytes = -1, nan
            key = (ev.get("pid", -1), ev.get("tid", -1), ev.get("name", ""), ev.get("cat", ""), tt, aux)
            try:
                s = sig_index[key]
            except KeyError:
                s = sig_index[key] = len(sigs)
                sigs.append(key)
            except TypeError:  # an unhashable value (list / object) where a string was expected
                key = tuple(v if isinstance(v, str | int) else str(v) for v in key)  # type: ignore[assignment]
                s = sig_index.setdefault(key, len(sigs))
                if s == len(sigs):
                    sigs.append(key)
            ap_sig(s)
            ap_ts(ts)
            ap_dur(dur)
            ap_corr(corr)
            ap_bytes(nbytes)
            n_complete += 1
    finally:
        raw.n_complete = n_complete
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
        shift = math.floor(float(np.frombuffer(raw.ts_us, dtype=np.float64).min()))
        raw.shift_us = float(shift)
        raw.base_ts_us += shift


def estimate_complete_events(path: Path, sample_bytes: int = 8 * 2**20) -> int:
    """Rough number of complete (``"ph": "X"``) events in a trace, from the density of
    ``"ph":"X"`` in its first ``sample_bytes`` (decompressed) × its size on disk (for a gzip file
    the density is per compressed byte read). An estimate for a memory warning, not a count."""
    fh, counter = open_stream(path)
    try:
        head = fh.read(sample_bytes)
    except (OSError, EOFError, zlib.error):
        return 0
    finally:
        fh.close()
        counter.raw.close()
    found = len(re.findall(rb'"ph"\s*:\s*"X"', head))
    read_on_disk = max(counter.n_read, 1) if len(head) >= sample_bytes else path.stat().st_size
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
    out = {
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
