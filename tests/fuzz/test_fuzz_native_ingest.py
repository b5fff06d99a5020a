"""Random SYNTHETIC Kineto events: the native chunk scanner and the msgspec path give byte-identical
``read_trace`` results (columns, signatures, metadata, counts, warnings), whatever the value types;
with only the value types the scanner reads itself, it must also be the path that ran."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.ingest import native
from tests.analyzer.native_equivalence import assert_same
from tests.fuzz.conftest import PROFILE

pytestmark = pytest.mark.skipif(native._ext is None, reason="the C extension analyzer.ingest._kineto_scan is not "
                                "built (no C compiler at install time): only the msgspec path exists")

_EPOCH = 1_700_000_000_000_000
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                     | st.text(max_size=6), lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c,
                                                                                                  max_size=3),
                     max_leaves=8)
_DTYPES = st.sampled_from(["Float", "float", "torch.float16", "BFloat16", "Int", "weird", "TORCH.INT8"])


def _ts(typical: bool) -> st.SearchStrategy[Any]:
    base = st.integers(_EPOCH, _EPOCH + 10**9)
    frac = st.builds(lambda w, f: float(f"{w}.{f}"), base, st.integers(0, 999))
    text = st.from_regex(r"-?[0-9]{1,18}(\.[0-9]{0,20})?", fullmatch=True)
    if typical:
        return st.one_of(base, frac, text, st.none())
    return st.one_of(base, frac, text, st.integers(), st.floats(allow_nan=False), st.text(max_size=5), _JSON)


def _number(typical: bool) -> st.SearchStrategy[Any]:
    good = st.one_of(st.integers(-10**6, 10**12), st.floats(0, 1e12), st.none())
    return good if typical else st.one_of(good, st.integers(), st.floats(allow_nan=False), st.text(max_size=4), _JSON)


def _args(typical: bool) -> st.SearchStrategy[Any]:
    name = st.text(max_size=6) | st.none()
    fields = st.fixed_dictionaries({}, optional={
        "correlation": st.integers(-2**70, 2**70) | st.none() if typical else _number(False),
        "bytes": _number(typical), "Collective name": st.text(max_size=6) if typical else name | _JSON,
        "In msg nelems": st.integers(-10, 10**9) | st.none() if typical else _number(False),
        "dtype": _DTYPES | st.none() if typical else _DTYPES | _JSON, "name": name, "labels": name,
        "Input Dims": _JSON, "External id": st.integers()})
    return fields | st.none() if typical else fields | st.none() | _JSON


@st.composite
def event(draw: st.DrawFn, typical: bool) -> dict[str, Any]:
    ph = draw(st.sampled_from(["X", "X", "X", "M", "s", "f", "i"] + ([] if typical else ["Q", ""])))
    ident = st.integers(-5, 2**40) | st.text(max_size=4)
    name = (st.sampled_from(["process_name", "thread_name", "process_labels"]) if ph == "M"
            else st.text(max_size=8))
    out = draw(st.fixed_dictionaries({"ph": st.just(ph)}, optional={
        "name": name if typical else name | _JSON, "cat": st.text(max_size=5) if typical else _JSON,
        "pid": ident if typical else ident | _JSON, "tid": ident if typical else ident | _JSON,
        "ts": _ts(typical), "dur": st.integers(-2, 10**7) | st.floats(-1, 1e7) | st.none() if typical
        else _number(False), "args": _args(typical), "id": _JSON}))
    return out


#: both tests run eight times the profile's examples (the scanner has many paths per event)
_EIGHTFOLD = settings(settings.get_profile(PROFILE), max_examples=settings.get_profile(PROFILE).max_examples * 8)


def _write(path: Path, events: list[dict[str, Any]], indent: int | None, ascii_only: bool) -> Path:
    last = {"ph": "X", "name": "last", "pid": 1, "tid": 1, "ts": _EPOCH, "dur": 1}  # framed by the exact scanner
    path.write_text(json.dumps({"traceEvents": [*events, last], "distributedInfo": {"rank": 0}}, indent=indent,
                               ensure_ascii=ascii_only), encoding="utf-8")
    return path


@_EIGHTFOLD
@given(events=st.lists(event(False), min_size=1, max_size=6), indent=st.none() | st.just(1), ascii_only=st.booleans())
def test_any_events_same_columns(tmp_path_factory: pytest.TempPathFactory, events: list[dict[str, Any]],
                                 indent: int | None, ascii_only: bool) -> None:
    path = _write(tmp_path_factory.mktemp("native") / "t.json", events, indent, ascii_only)
    with pytest.MonkeyPatch.context() as m:
        assert_same(path, m)


@_EIGHTFOLD
@given(events=st.lists(event(True), min_size=1, max_size=12), indent=st.none() | st.just(1), ascii_only=st.booleans())
def test_typical_events_read_natively(tmp_path_factory: pytest.TempPathFactory, events: list[dict[str, Any]],
                                      indent: int | None, ascii_only: bool) -> None:
    path = _write(tmp_path_factory.mktemp("native") / "t.json", events, indent, ascii_only)
    with pytest.MonkeyPatch.context() as m:
        raw = assert_same(path, m)
    assert raw.decoder == "native", raw.decoder
