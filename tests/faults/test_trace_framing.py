"""Trace framing (issue: "silent wrong answers" — two JSON documents in one trace file, concatenated or two gzip
members, were merged into one rank with no warning and 24 of 429 events lost; data after the document was ignored)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from analyzer.dataset import load_dataset
from analyzer.ingest.errors import IngestError
from analyzer.ingest.trailing import describe

#: SYNTHETIC: a minimal Kineto trace (one step, 20 kernels)
EVENTS = [{"ph": "X", "name": "ProfilerStep#1", "ts": 0, "dur": 1000, "pid": 1, "tid": 1, "cat": "user_annotation"}] + [
    {"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": 10 + 40 * i, "dur": 30, "pid": 0, "tid": 7,
     "args": {"stream": 7, "device": 0}} for i in range(20)]
#: SYNTHETIC: the same events as a bare array with an Ascend process name (a bare Kineto array is refused by its content)
ASCEND = [{"ph": "M", "name": "process_name", "pid": 9, "tid": 0, "args": {"name": "Ascend Hardware"}}, *EVENTS]
DOC = json.dumps({"schemaVersion": 1, "traceEvents": EVENTS, "deviceProperties": [{"name": "x"}]})


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_one_document_reads(tmp_path: Path) -> None:
    ds = load_dataset(_write(tmp_path, "ok.json", DOC.encode() + b"\n"))
    assert len(ds.ranks) == 1 and len(ds.ranks[0].events) > 0


@pytest.mark.parametrize(("name", "data", "rule"), [
    ("two.json", (DOC + "\n" + DOC).encode(), "2 traces in one file"),
    ("three.json", (DOC + DOC + DOC).encode(), "3 traces in one file"),
    ("two.json.gz", gzip.compress(DOC.encode()) * 2, "gzip members"),
    ("tail.json", (DOC + "garbage").encode(), "data after the JSON document"),
    ("array.json", (json.dumps(ASCEND) + json.dumps(ASCEND)).encode(), "2 traces in one file"),
])
def test_data_after_the_document_is_an_error(tmp_path: Path, name: str, data: bytes, rule: str) -> None:
    with pytest.raises(IngestError, match=rule):
        load_dataset(_write(tmp_path, name, data))


def test_describe_bounded_second_document() -> None:
    assert "at least 2 traces" in describe(b'{"traceEvents": [{"ph": "X"')
    assert describe(b"") == ""


@pytest.mark.parametrize(("data", "rule"), [
    (DOC.encode("utf-16"), "UTF-16"),
    (__import__("zlib").compress(DOC.encode()), "zlib-compressed"),
])
def test_other_encodings_are_named(tmp_path: Path, data: bytes, rule: str) -> None:
    """UTF-16 and zlib traces gave a bare "not JSON"."""
    with pytest.raises(IngestError, match=rule):
        load_dataset(_write(tmp_path, "t.json", data))


def test_fifo_trace_is_refused_without_reading(fifo: Path) -> None:
    """A FIFO trace was "not found" (or, read, would block); now named as a FIFO."""
    with pytest.raises(IngestError, match="FIFO"):
        load_dataset(fifo)


def test_gzip_magic_followed_by_junk_is_one_error_not_an_isal_traceback(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """gzip magic followed by junk gave an ``IsalError`` traceback with exit 1 (not an OSError); now exit 2, one line."""
    from ndval.harness.cli import main

    path = _write(tmp_path, "t.json.gz", b"\x1f\x8b\x08\x00" + b"junk" * 40)
    with pytest.raises(IngestError, match="corrupt gzip data"):
        load_dataset(path)
    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err
    assert "corrupt gzip data" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_ts_beyond_int64_everywhere_names_the_cause_not_no_complete_events(tmp_path: Path) -> None:
    """Every ts beyond int64 gave "no complete ('X') events" (vague); now the count dropped and the cause."""
    events = [dict(e, ts=10**20 + int(e["ts"])) for e in EVENTS]
    with pytest.raises(IngestError, match=r"all 21 were dropped as unreadable \(bad ts 21; a bad ts/dur is NaN"):
        load_dataset(_write(tmp_path, "t.json", json.dumps({"traceEvents": events}).encode()))


def test_invalid_utf8_in_a_name_is_named_not_bad_ts(tmp_path: Path) -> None:
    """Invalid UTF-8 in an event name was reported as "bad ts/dur"; now as invalid UTF-8, counted."""
    data = DOC.encode().replace(b'"k3"', b'"k\xff\xfe3"')
    rank = load_dataset(_write(tmp_path, "t.json", data)).ranks[0]
    text = "\n".join(rank.warnings)
    assert "dropped 1 unreadable events (invalid UTF-8 1)" in text, text
    assert rank.dropped_events.count == 1 and len(rank.events) == 20


@pytest.mark.parametrize("wrap", [True, False])  # Kineto object / bare array
def test_dur_integer_beyond_float_range_is_a_bad_dur_not_an_overflow_traceback(tmp_path: Path, wrap: bool) -> None:
    """Found in the audit: ``"dur": 10**400`` (an integer no float holds) gave an OverflowError traceback."""
    events = [dict(e, dur=10**400) if i == 3 else e for i, e in enumerate(EVENTS)]
    data = json.dumps({"traceEvents": events} if wrap else events).encode()
    rank = load_dataset(_write(tmp_path, "t.json", data)).ranks[0]
    assert "dropped 1 unreadable events (bad dur 1;" in "\n".join(rank.warnings) and len(rank.events) == 20
