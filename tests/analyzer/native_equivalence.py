"""Helpers of the native-vs-msgspec ingest tests: read one trace by both paths and compare everything
``read_trace`` returns (columns byte for byte, signatures in order, metadata, counts, warnings)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from analyzer.ingest import native
from analyzer.ingest.budgets import Budgets
from analyzer.ingest.stream import RawTrace, read_trace

_COLUMNS = {"sig": np.int32, "ts_us": np.float64, "dur_us": np.float64, "corr": np.int64, "bytes": np.float64}


def snapshot(raw: RawTrace) -> dict[str, Any]:
    """Everything a reader of ``raw`` can see, in comparable form (numeric columns as their bytes)."""
    out: dict[str, Any] = {name: np.frombuffer(getattr(raw, name), dtype=dtype).tobytes()
                           for name, dtype in _COLUMNS.items()}
    out.update(sigs=[tuple(map(repr, k)) for k in raw.sigs], ids=raw.ids, process_names=raw.process_names,
               process_labels=raw.process_labels, thread_names=raw.thread_names, n_seen=raw.n_seen,
               n_complete=raw.n_complete, n_dropped_bad=raw.n_dropped_bad, n_too_long=raw.n_too_long,
               truncated=raw.truncated, warnings=raw.warnings, base_ts_us=raw.base_ts_us, shift_us=raw.shift_us,
               top=repr(raw.top), layout=raw.layout)
    return out


def read_both(path: Path, monkeypatch: pytest.MonkeyPatch, budgets: Budgets | None = None
              ) -> tuple[RawTrace, RawTrace]:
    """``(native, msgspec)``: the trace read with the native scanner on (when built), then off."""
    on = read_trace(path, budgets=budgets)
    with monkeypatch.context() as m:
        m.setattr(native, "AVAILABLE", False)
        off = read_trace(path, budgets=budgets)
    return on, off


def assert_same(path: Path, monkeypatch: pytest.MonkeyPatch, budgets: Budgets | None = None) -> RawTrace:
    """Both paths give the same :func:`snapshot`; returns the native read (its ``decoder`` says which
    path decoded the chunks)."""
    on, off = read_both(path, monkeypatch, budgets)
    assert off.decoder.startswith("msgspec"), off.decoder
    a, b = snapshot(on), snapshot(off)
    for key in a:
        assert a[key] == b[key], f"{path.name}: {key} differs between the native and the msgspec path"
    return on
