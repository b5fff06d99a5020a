"""Native (C) decoding of Kineto chunks: JSON bytes -> typed columns with no Python object per event.

The extension ``analyzer.ingest._kineto_scan`` (``_kineto_scan.c``, built by ``pip install -e .``;
optional) scans a chunk of events with a strict JSON tokenizer and fills the columns that the msgspec
path (:mod:`analyzer.ingest.decode`, the reference implementation) produces for the same chunk:
signature key index, ts (integer part and fraction, subtracted from the base here: exact), dur,
correlation, bytes and the unreadable-row flag. A chunk holding a value of a type it does not
reproduce exactly (a ts in exponent notation, a string dur, ``"args": null`` in a Collective name, a
duplicate key, ...) is **refused** with a reason, and the caller decodes that chunk with msgspec, so
behaviour on odd input is the msgspec path's. Metadata events (``"ph": "M"``) come back as spans
decoded here by msgspec's single-event decoder (a handful per trace).

Without the extension (no C compiler at install time) or with ``NDVAL_NATIVE_INGEST=0`` every chunk
takes the msgspec path; :data:`PATH` names the path in use and ``RawTrace.decoder`` what ran.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from analyzer.ingest import decode as dec

_ext: ModuleType | None
try:
    from analyzer.ingest import _kineto_scan as _ext
except ImportError:  # not built (optional extension): the msgspec path
    _ext = None

#: whether chunks of Kineto traces are scanned natively (extension built and not disabled).
AVAILABLE: bool = _ext is not None and os.environ.get("NDVAL_NATIVE_INGEST", "1") != "0"
#: the decoding path of Kineto chunks: ``native`` or ``msgspec``.
PATH: str = "native" if AVAILABLE else "msgspec"
#: deepest nesting the native scanner accepts (a deeper chunk is refused: msgspec and the exact
#: scanner apply the depth budget); at most half the budget, so msgspec (which accepts about the
#: budget under ``chunks._cap_recursion``) would accept every chunk accepted here.
NATIVE_MAX_DEPTH = 256
#: phases the scanner accepts: every phase but the duration pairs ``B``/``E`` (a chunk holding one is
#: refused and decoded by msgspec, where ``stream`` counts them: never skipped silently).
_PHASES = "".join(p for p in dec.PHASES if p not in dec.DURATION_PHASES).encode()
assert all(len(p) == 1 for p in dec.PHASES), "the native scanner matches one-character phases"


@dataclass
class NativeChunk:
    """The columns of one chunk's complete events (one row each, unreadable rows flagged in ``bad``)
    and its decoded metadata events; ``n_events``: every element of the chunk."""

    n_events: int
    keys: list[dec.Signature]
    kidx: np.ndarray
    ts_whole: np.ndarray
    ts_frac: np.ndarray
    bad: np.ndarray
    dur: np.ndarray
    corr: np.ndarray
    nbytes: np.ndarray
    meta: list[dec.KinetoEvent]

    def __len__(self) -> int:
        return self.n_events

    def clear(self) -> None:
        """Drop the metadata structs (the columns are released with the chunk)."""
        self.meta.clear()


def scan_chunk(body: bytes | memoryview, max_depth: int) -> NativeChunk | str:
    """The chunk ``body`` (``[`` events ``]``) natively, or the reason it is refused (a str)."""
    if _ext is None:
        return "native extension not built"
    limit = min(NATIVE_MAX_DEPTH, max_depth // 2)
    out: Any = _ext.scan(body, limit, _PHASES, dec.DTYPE_BYTES)
    if isinstance(out, str):
        return out
    n, keys, kidx, whole, frac, bad, dur, corr, nbytes, spans = out
    meta = []
    with memoryview(body) as view:
        for start, end in spans:
            try:
                meta.append(dec.KINETO.one.decode(view[start:end]))
            except dec.DecodeFailure:
                return "metadata event that msgspec does not decode"
    return NativeChunk(n, keys, np.frombuffer(kidx, dtype=np.int32), np.frombuffer(whole, dtype=np.int64),
                       np.frombuffer(frac, dtype=np.float64), np.frombuffer(bad, dtype=np.bool_),
                       np.frombuffer(dur, dtype=np.float64), np.frombuffer(corr, dtype=np.int64),
                       np.frombuffer(nbytes, dtype=np.float64), meta)


def relative_us(chunk: NativeChunk, base: int | None) -> dec.Timestamps:
    """:func:`decode.exact_relative_us` of the chunk's ts (:func:`decode.parts_relative_us`; an
    unreadable ts has a NaN fraction)."""
    return dec.parts_relative_us(chunk.ts_whole, chunk.ts_frac, np.isnan(chunk.ts_frac), base)


@dataclass
class SignatureIds:
    """Signature ids of the kept rows of a chunk and what was dropped (see :func:`signature_ids`)."""

    ids: np.ndarray
    n_long: int
    n_bad: int


def signature_ids(index: dict[dec.Signature, int], sigs: list[dec.Signature], chunk: NativeChunk,
                  bad: np.ndarray, max_name: int) -> SignatureIds:
    """``stream._chunk_signatures`` on a native chunk: the same ids, the same first-occurrence order
    of new signatures, the same counts, with one lookup per distinct key of the chunk instead of per
    event. ``bad`` (unreadable rows) is updated in place with the rows whose name is over the
    event-size budget (only a key new to ``index`` can be; such a key is never added)."""
    keys, kidx = chunk.keys, chunk.kidx
    lut = np.fromiter((index.get(k, -1) for k in keys), dtype=np.int32, count=len(keys))
    ids = lut[kidx]
    new = np.flatnonzero(ids < 0)
    n_long = 0
    if new.size:
        long_key = np.fromiter((len(k[2]) > max_name for k in keys), dtype=bool, count=len(keys))
        long = long_key[kidx[new]]
        n_long = int(long.sum())
        bad[new[long]] = True
        kept = new[~bad[new]]
        local, first = np.unique(kidx[kept], return_index=True)
        for k in local[np.argsort(first)]:
            lut[k] = dec.signature_id(index, sigs, keys[k])
        ids[kept] = lut[kidx[kept]]
    n_bad = int(bad.sum())
    return SignatureIds(ids[~bad] if n_bad else ids, n_long, n_bad - n_long if n_bad else 0)
