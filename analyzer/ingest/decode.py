"""Decoding trace events: JSON bytes -> typed per-chunk columns, only the fields the analysis needs.

A chunk of events is decoded in one call by ``msgspec`` into small structs holding only ``ph``,
``name``, ``cat``, ``pid``, ``tid``, ``ts``, ``dur`` and the few ``args`` keys read below; every other
key is skipped by the decoder without building anything. Floats in untyped fields (``ts``, the args)
come back as their **text** (``float_hook=str``), so a numeric epoch ``ts`` with sub-µs digits stays
exact: :func:`exact_relative_us` subtracts an integer base from the text's integer part before any
float conversion (Ascend writes ``ts`` as such a string already).

Events that do not fit the types (a list where a string was expected, a ``NaN`` literal, nesting
deeper than the budget) make the chunk decode fail; the reader then decodes that chunk event by
event (:func:`decode_one`), so one odd event costs one event, not the chunk.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: bytes per element of the dtype names used in HCCL / NCCL args (message size = count × this).
DTYPE_BYTES: dict[str, int] = {
    "fp32": 4, "float32": 4, "float": 4, "fp16": 2, "float16": 2, "half": 2, "bf16": 2,
    "bfloat16": 2, "int8": 1, "uint8": 1, "int16": 2, "int32": 4, "int64": 8, "uint64": 8,
    "fp64": 8, "float64": 8, "double": 8, "bool": 1, "char": 1, "byte": 1, "long": 8, "int": 4,
}


class Args(msgspec.Struct, gc=False, rename={
    "task_type": "Task Type", "task_type_lc": "task type", "memcpy_direction": "memcpy direction",
    "collective_name": "Collective name", "data_size": "data size(Byte)", "size": "size(Byte)",
    "nbytes": "bytes", "msg_nelems": "In msg nelems",
}):
    """The ``args`` keys read (every other key is skipped by the decoder)."""

    task_type: Any = None
    task_type_lc: Any = None
    memcpy_direction: Any = None
    collective_name: Any = None
    correlation: Any = None
    connection_id: Any = None
    correlation_id: Any = None
    data_size: Any = None
    nbytes: Any = None
    size: Any = None
    count: Any = None
    msg_nelems: Any = None
    data_type: Any = None
    dtype: Any = None
    name: Any = None
    labels: Any = None


class Event(msgspec.Struct, gc=False):
    """One trace event, needed fields only (``dur`` UNSET when absent: read as 0, like before)."""

    ph: str = ""
    name: str = ""
    cat: str = ""
    pid: int | str = -1
    tid: int | str = -1
    ts: Any = None
    dur: float | str | msgspec.UnsetType | None = msgspec.UNSET
    args: Args | None = None


class KinetoArgs(msgspec.Struct, gc=False, frozen=True, rename={
    "nbytes": "bytes", "collective_name": "Collective name", "msg_nelems": "In msg nelems",
    "pg_name": "Process Group Name", "pg_ranks": "Process Group Ranks", "ranks": "Ranks",
}):
    """The ``args`` keys a Kineto trace needs (launch correlation, copy bytes, NCCL collective and
    message size; ``name`` of metadata events). Defaults are the "absent" values of the columns.
    Frozen, so that one shared instance can be the default of an event without ``args``."""

    correlation: Any = -1
    nbytes: Any = math.nan
    collective_name: Any = ""
    msg_nelems: Any = None
    dtype: Any = None
    name: Any = None
    labels: Any = None
    pg_name: Any = None
    pg_ranks: Any = None
    ranks: Any = None


_EMPTY_KINETO_ARGS = KinetoArgs()


def process_group_key(a: KinetoArgs) -> str:
    """The signature's 5th field of a Kineto event: ``"<Process Group Name>|<rank list>"`` of an NCCL event that
    carries them (``Process Group Ranks`` or ``Ranks``, a list or its text), ``""`` otherwise."""
    if a.pg_name is None and a.pg_ranks is None and a.ranks is None:
        return ""
    ranks = a.pg_ranks if a.pg_ranks is not None else a.ranks
    text = "" if ranks is None else (ranks if isinstance(ranks, str) else json.dumps(ranks))
    return f"{'' if a.pg_name is None else a.pg_name}|{text}"


class KinetoEvent(msgspec.Struct, gc=False):
    """One Kineto event, needed fields only (see :class:`Event`). Without ``args`` the event gets
    the shared empty :class:`KinetoArgs` (no allocation, and ``e.args.correlation`` reads the
    "absent" value); only an explicit ``"args": null`` gives None."""

    ph: str = ""
    name: str = ""
    cat: str = ""
    pid: int | str = -1
    tid: int | str = -1
    ts: Any = None
    dur: float | str | msgspec.UnsetType | None = msgspec.UNSET
    args: KinetoArgs | None = _EMPTY_KINETO_ARGS


@dataclass(frozen=True)
class Format:
    """Decoders of one trace layout: ``generic`` (Ascend arrays; every args key of :class:`Args`) or
    ``kineto`` (:class:`KinetoArgs`, column-wise extraction: the hot path of big GPU traces)."""

    chunk: msgspec.json.Decoder[Any]
    one: msgspec.json.Decoder[Any]
    kineto: bool


#: every ``ph`` of the Trace Event Format; a chunk holding another value (or an event without
#: ``ph``) fails the fast decode and is decoded event by event (:func:`decode_one`), same result.
PHASES: tuple[str, ...] = ("X", "M", "B", "E", "i", "I", "C", "b", "n", "e", "s", "t", "f", "P", "N", "O",
                           "D", "V", "v", "R", "c", "(", ")")
#: the phases whose fields are read (complete events; metadata: process / thread names).
#: duration events (begin / end pairs): paired into complete events (``analyzer.ingest.durations``).
DURATION_PHASES: tuple[str, ...] = ("B", "E")
READ_PHASES: tuple[str, ...] = ("X", "M", *DURATION_PHASES)


def _chunk_decoder(event: type[msgspec.Struct]) -> msgspec.json.Decoder[Any]:
    """A decoder of a chunk of events, tagged by ``ph``: complete and metadata events get the fields
    of ``event``; events of every other phase (Kineto flow ``s``/``f`` arrows, instants, counters:
    a third of a GPU trace) decode to a struct with no field, so the decoder skips their content
    without building a string or a number. Every struct has its ``ph`` as a class attribute, like
    the ``ph`` field of ``event`` (what :func:`decode_one` returns)."""
    fields = [(f.name, f.type, f.default) for f in msgspec.structs.fields(event) if f.name != "ph"]
    types = [msgspec.defstruct(f"{event.__name__}_{i}", fields if ph in READ_PHASES else [], tag_field="ph",
                               tag=ph, gc=False, namespace={"ph": ph}, module=__name__)
             for i, ph in enumerate(PHASES)]
    union: Any = Union[tuple(types)]  # noqa: UP007 - a union of types built at run time
    return msgspec.json.Decoder(list[union], float_hook=str)


GENERIC = Format(_chunk_decoder(Event), msgspec.json.Decoder(Event, float_hook=str), False)
KINETO = Format(_chunk_decoder(KinetoEvent), msgspec.json.Decoder(KinetoEvent, float_hook=str), True)
LOOSE_DECODER = msgspec.json.Decoder(float_hook=str)
_NON_JSON_NUMBER = re.compile(rb"([:,\[]\s*)(?:-?Infinity|NaN)")
DecodeFailure = (msgspec.DecodeError, msgspec.ValidationError, RecursionError, ValueError)


def decode_chunk(body: bytes | memoryview, fmt: Format = GENERIC) -> list[Any]:
    """Events of ``body`` (a JSON array text); raises one of :data:`DecodeFailure`."""
    return fmt.chunk.decode(body)  # type: ignore[no-any-return]


def decode_one(text: bytes, fmt: Format = GENERIC) -> Any:
    """One event, leniently: typed first; else as plain JSON with odd values converted (``NaN`` /
    ``Infinity`` read as null, non-string names as their text); None when it is not a JSON object."""
    try:
        return fmt.one.decode(text)
    except DecodeFailure:
        pass
    try:
        obj = LOOSE_DECODER.decode(text)
    except DecodeFailure:
        if b"NaN" not in text and b"Infinity" not in text:
            return None
        try:
            obj = LOOSE_DECODER.decode(_NON_JSON_NUMBER.sub(rb"\1null", text))
        except DecodeFailure:
            return None
    if not isinstance(obj, dict):
        return None
    event = _from_dict(obj)
    if fmt.kineto:
        a = event.args
        args = _EMPTY_KINETO_ARGS if a is None else KinetoArgs(
            correlation=_first(a.correlation, a.connection_id, a.correlation_id, -1),
            nbytes=_first(a.data_size, a.nbytes, a.size, math.nan), collective_name=_first(a.collective_name, ""),
            msg_nelems=_first(a.count, a.msg_nelems, None), dtype=_first(a.data_type, a.dtype, None),
            name=a.name, labels=a.labels, **_group_args(obj.get("args")))
        return KinetoEvent(event.ph, event.name, event.cat, event.pid, event.tid, event.ts, event.dur, args)
    return event


def _group_args(args: Any) -> dict[str, Any]:
    """The process-group args of a leniently decoded Kineto event."""
    if not isinstance(args, dict):
        return {}
    return {"pg_name": args.get("Process Group Name"), "pg_ranks": args.get("Process Group Ranks"),
            "ranks": args.get("Ranks")}


def _first(*values: Any) -> Any:
    return next((v for v in values[:-1] if v is not None), values[-1])


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def _from_dict(obj: dict[str, Any]) -> Event:
    args = obj.get("args")
    a = None
    if isinstance(args, dict):
        a = Args(**{f: args.get(k) for f, k in _ARG_KEYS.items()})
    pid, tid = obj.get("pid", -1), obj.get("tid", -1)
    dur = obj.get("dur", msgspec.UNSET)
    return Event(ph=_text(obj.get("ph")), name=_text(obj.get("name", "")), cat=_text(obj.get("cat", "")),
                 pid=pid if isinstance(pid, int | str) else str(pid), tid=tid if isinstance(tid, int | str) else str(tid),
                 ts=obj.get("ts"), dur=dur if isinstance(dur, float | int | str | None | msgspec.UnsetType) else str(dur),
                 args=a)


#: Args field -> JSON key.
_ARG_KEYS: dict[str, str] = {f: Args.__struct_encode_fields__[i] for i, f in enumerate(Args.__struct_fields__)}

_NO_ARGS = ("", "", -1, math.nan)


def arg_info(a: Args | None) -> tuple[Any, Any, int, float]:
    """``(task type, aux, correlation, bytes)`` of an event's args (``aux``: memcpy direction or
    collective name). Bytes: memcpy ``data size(Byte)`` / ``bytes`` / plane ``size(Byte)``, or
    ``count × sizeof(data_type)`` (HCCL) / ``In msg nelems × sizeof(dtype)`` (NCCL); NaN if unknown."""
    if a is None:
        return _NO_ARGS
    tt = a.task_type if a.task_type is not None else (a.task_type_lc if a.task_type_lc is not None else "")
    aux = a.memcpy_direction if a.memcpy_direction is not None else (
        a.collective_name if a.collective_name is not None else "")
    corr = a.correlation if a.correlation is not None else (
        a.connection_id if a.connection_id is not None else a.correlation_id)
    if corr is None:
        corr = -1
    elif type(corr) is not int:
        corr = _as_int(corr)
    size = a.data_size if a.data_size is not None else (a.nbytes if a.nbytes is not None else a.size)
    if size is not None:
        return tt, aux, corr, _as_float(size)
    count = a.count if a.count is not None else a.msg_nelems
    if count is None:
        return tt, aux, corr, math.nan
    dtype = a.data_type if a.data_type is not None else a.dtype
    width = DTYPE_BYTES.get(str(dtype).lower().replace("torch.", "")) if dtype is not None else None
    return tt, aux, corr, (_as_float(count) * width if width is not None else math.nan)


def kineto_columns(events: list[KinetoEvent]) -> tuple[list[Signature], np.ndarray, np.ndarray]:
    """``(signature keys, correlation, bytes)`` of Kineto events (the same values as
    :func:`arg_info`; Kineto writes no task type, so it is ``""``). Signature key =
    ``(pid, tid, name, cat, task type, collective name)``, built in one comprehension; bytes are
    ``args.bytes``, else ``In msg nelems × sizeof(dtype)`` (NCCL), else NaN.

    Each comprehension reads ``e.args`` directly (an event without ``args`` holds the shared empty
    one); a chunk with an explicit ``"args": null`` first gets the empty one on those events (same values)."""
    try:
        return _kineto_columns(events)
    except AttributeError:  # "args": null in the chunk
        for e in events:
            if e.args is None:
                e.args = _EMPTY_KINETO_ARGS
        return _kineto_columns(events)


def _kineto_columns(events: list[KinetoEvent]) -> tuple[list[Signature], np.ndarray, np.ndarray]:
    """:func:`kineto_columns` of events that all hold ``args`` (AttributeError on one that is None)."""
    keys = [(e.pid, e.tid, e.name, e.cat, process_group_key(e.args)  # type: ignore[arg-type]
             if e.args.pg_name is not None  # type: ignore[union-attr]
             or e.args.pg_ranks is not None or e.args.ranks is not None else "", e.args.collective_name)  # type: ignore[union-attr]
            for e in events]
    corr = int64_column([e.args.correlation for e in events])  # type: ignore[union-attr]
    nbytes = float_column([e.args.nbytes if e.args.msg_nelems is None  # type: ignore[union-attr]
                           else _nccl_bytes(e.args) for e in events])  # type: ignore[arg-type]
    return keys, corr, nbytes


def _nccl_bytes(a: KinetoArgs) -> Any:
    """``args.bytes`` when given, else ``In msg nelems × sizeof(dtype)`` (NaN when the dtype is unknown)."""
    given = _as_float(a.nbytes) if a.nbytes is not None else math.nan
    if not math.isnan(given):
        return given
    width = DTYPE_BYTES.get(str(a.dtype).lower().replace("torch.", "")) if a.dtype is not None else None
    return _as_float(a.msg_nelems) * width if width is not None else math.nan


#: signature of a complete event: (pid, tid, name, cat, Task Type, memcpy direction / Collective name).
Signature = tuple[Any, Any, Any, Any, Any, Any]


def signature_id(index: dict[Signature, int], sigs: list[Signature], key: Signature) -> int:
    """The id of ``key`` in ``index``; a key not seen yet gets the next id and is appended to ``sigs``."""
    s = index.get(key)
    if s is None:
        s = index[key] = len(sigs)
        sigs.append(key)
    return s


def int64_column(values: Sequence[Any]) -> np.ndarray:
    """int64 array of ids (non-integers and out-of-range values -> -1)."""
    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        out = [_as_int(v) if v is not None else -1 for v in values]
        return np.array([v if -2**63 <= v < 2**63 else -1 for v in out], dtype=np.int64)


def float_column(values: Sequence[Any]) -> np.ndarray:
    """float64 array (non-numeric -> NaN)."""
    try:
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return np.array([_as_float(v) if v is not None else math.nan for v in values], dtype=np.float64)


def _as_int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return -1


def _as_float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan


@dataclass
class Timestamps:
    """Start times of a chunk relative to ``base`` (µs, float64) and which were unreadable."""

    rel_us: np.ndarray
    bad: np.ndarray
    base: int | None


def exact_relative_us(values: Sequence[Any], base: int | None) -> Timestamps:
    """``value − base`` per value, exact to the digit (``base``: the integer part of the first valid
    value when None).

    Integers are subtracted as int64; text (Ascend strings, Kineto floats as text) is split into its
    integer part, subtracted as an integer, and its fraction (with the text's sign) added as a float — no float64 rounding at
    epoch magnitudes (profiling-formats §0.5). Anything else (null, a list, 1e300) is ``bad``.
    """
    n = len(values)
    if not n:
        return Timestamps(np.empty(0), np.zeros(0, dtype=bool), base)
    arr = np.array(values) if n else np.empty(0)
    if arr.dtype.kind == "i" and arr.ndim == 1:
        if base is None:
            base = int(arr[0])
        return Timestamps((arr - base).astype(np.float64), np.zeros(n, dtype=bool), base)
    return _text_relative(values, base)


_TS_PATTERN = r"^\s*(?P<whole>-?\d{1,18})(?P<frac>\.\d*)?\s*$"


def _text_relative(values: Sequence[Any], base: int | None) -> Timestamps:
    """:func:`exact_relative_us` for chunks holding text (vectorized with Arrow's regex kernels)."""
    text = pa.array([v if isinstance(v, str) else (str(v) if type(v) is int else None) for v in values],
                    type=pa.string())
    parts = pc.extract_regex(text, _TS_PATTERN)
    whole_txt = pc.struct_field(parts, "whole")
    bad = np.asarray(pc.is_null(whole_txt).to_numpy(zero_copy_only=False), dtype=bool)
    whole = pc.cast(pc.fill_null(whole_txt, "0"), pa.int64()).to_numpy(zero_copy_only=False)
    frac_txt = pc.fill_null(pc.struct_field(parts, "frac"), "")
    frac = pc.cast(pc.binary_join_element_wise("0", frac_txt, "0", ""), pa.float64()).to_numpy(
        zero_copy_only=False)
    negative = pc.fill_null(pc.starts_with(whole_txt, "-"), False).to_numpy(zero_copy_only=False)
    frac = np.where(negative, -frac, frac)  # "-5.5" = -5 - 0.5 (and "-0.5" = -0 - 0.5)
    return parts_relative_us(whole, frac, bad, base)


def parts_relative_us(whole: np.ndarray, frac: np.ndarray, bad: np.ndarray, base: int | None) -> Timestamps:
    """ts = ``whole`` (int64) + ``frac`` (signed, float) relative to ``base``: the integers subtracted
    exactly, then the fraction added (``base``: the integer part of the first row not ``bad`` when
    None); ``bad`` rows are NaN. The text path above and the native scanner's columns share it."""
    if base is None:
        ok = np.flatnonzero(~bad)
        base = int(whole[ok[0]]) if ok.size else None
    rel = (whole - (base or 0)).astype(np.float64) + frac
    rel[bad] = np.nan
    return Timestamps(rel, bad, base)


def durations_us(values: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """``(dur, bad)``: absent -> 0 (as written by older exporters), numbers and numeric text as
    float64; null, negative, non-finite or non-numeric -> ``bad``."""
    try:
        dur = np.array(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):  # an integer beyond float range: bad, like a NaN
        dur = np.array([0.0 if v is msgspec.UNSET else _as_float(v) if v is not None else math.nan
                        for v in values], dtype=np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~(np.isfinite(dur) & (dur >= 0.0))
    return dur, bad
