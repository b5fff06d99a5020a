"""Plain (uncompressed) traces are framed over a private memory map (``analyzer.ingest.window.MapWindow``)
instead of a read buffer: the same :func:`read_trace` output in every case, the file on disk untouched,
pages released behind the decoder, and the buffer path whenever there is no map (gzip, opted out)."""

from __future__ import annotations

import gzip
import mmap
from pathlib import Path

import pytest

from analyzer.ingest import chunks, framing, window
from analyzer.ingest.budgets import Budgets
from analyzer.ingest.stream import RawTrace, read_trace
from tests.analyzer.native_equivalence import snapshot


def _event(i: int, name: str | None = None) -> str:
    return (f'{{"ph": "X", "cat": "kernel", "name": "{name or f"op{i % 29}"}", "pid": {i % 3}, "tid": 7, '
            f'"ts": {1700000000000000 + 5 * i}.25, "dur": {i % 4}, "args": {{"correlation": {i}}}}}')


def _kineto(path: Path, events: list[str], tail: str = ', "distributedInfo": {"rank": 0}}') -> Path:
    """A SYNTHETIC Kineto trace (object layout, metadata first, top-level keys after the array)."""
    meta = '{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "rank 0"}}'
    path.write_text('{"schemaVersion": 1, "traceEvents": [\n' + ",\n".join([meta, *events]) + "\n]" + tail,
                    encoding="utf-8")
    return path


def _read_both(path: Path, monkeypatch: pytest.MonkeyPatch, budgets: Budgets | None = None
               ) -> tuple[RawTrace, RawTrace, list[bool]]:
    """``(mapped, buffered, maps)``: the trace read over a map, then with ``NDVAL_MMAP_INGEST=0``;
    ``maps``: per read, whether a map was made."""
    maps: list[bool] = []
    real = framing.Source.map

    def spy(self: framing.Source) -> mmap.mmap | None:
        got = real(self)
        maps.append(got is not None)
        return got

    monkeypatch.setattr(framing.Source, "map", spy)
    mapped = read_trace(path, budgets=budgets)
    with monkeypatch.context() as m:
        m.setenv("NDVAL_MMAP_INGEST", "0")
        buffered = read_trace(path, budgets=budgets)
    return mapped, buffered, maps


def _assert_same(path: Path, monkeypatch: pytest.MonkeyPatch, budgets: Budgets | None = None) -> RawTrace:
    before = path.read_bytes()
    mapped, buffered, maps = _read_both(path, monkeypatch, budgets)
    assert maps == [True, False], maps
    a, b = snapshot(mapped), snapshot(buffered)
    for key in a:
        assert a[key] == b[key], f"{path.name}: {key} differs between the mapped and the buffered read"
    assert path.read_bytes() == before, "the private map wrote to the file"
    return mapped


def test_many_small_chunks_same_as_buffered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 8 * 1024)  # ~70 chunks, windows crossing pages
    raw = _assert_same(_kineto(tmp_path / "t.json", [_event(i) for i in range(4000)]), monkeypatch)
    assert raw.n_complete == 4000 and raw.top == {"schemaVersion": 1, "distributedInfo": {"rank": 0}}


def test_slow_path_in_the_middle_then_mapped_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An event over the size budget and an undecodable one mid-file: the exact scanner frames that part
    (reading from the source), then framing goes back to the map at the right offset."""
    events = [_event(i) for i in range(3000)]
    events[1000] = _event(1000, name="L" * 5000)  # over max_event_bytes: skipped, counted
    events[2000] = '{"ph": "X", "name": "bad", "ts": 1700000000010000, "dur": 1, "args": {"x": [1, 2,]}}'
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 16 * 1024)
    made: list[str] = []

    def spy(text: bytes, src: framing.Source, mapping: mmap.mmap | None) -> window.Window:
        win = window.window(text, src, mapping)
        made.append(type(win).__name__)
        return win

    monkeypatch.setattr(chunks, "window", spy)
    raw = _assert_same(_kineto(tmp_path / "t.json", events), monkeypatch, Budgets(max_event_bytes=4000))
    assert raw.n_complete == 2998 and any("max_event_bytes" in w for w in raw.warnings)
    mapped = made[:made.index("BufferWindow")]
    assert len(mapped) >= 2 and set(mapped) == {"MapWindow"}, made  # back on the map after the slow path


def test_truncated_file_same_events_and_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _kineto(tmp_path / "t.json", [_event(i) for i in range(2000)])
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: text.rindex('"correlation": 1500') + 7], encoding="utf-8")
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 16 * 1024)
    raw = _assert_same(path, monkeypatch)
    assert raw.truncated and raw.n_complete == 1500


def test_bare_array_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Ascend layout (a bare array, string ts) over a map: the msgspec path, same output."""
    path = tmp_path / "trace_view.json"
    path.write_text("[" + ",".join(f'{{"ph": "X", "name": "op{i % 7}", "pid": 1, "tid": 2, "ts": "1700000000000{i:03d}.5", '
                                   '"dur": 1.5, "args": {}}' for i in range(900)) + "]", encoding="utf-8")
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 4 * 1024)
    assert _assert_same(path, monkeypatch).n_complete == 900


def test_no_map_for_gzip_or_when_opted_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _kineto(tmp_path / "t.json", [_event(i) for i in range(10)])
    packed = tmp_path / "t.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    for path, expected in ((plain, True), (packed, False), (empty, False)):
        src = framing.open_source(path, threaded=False)
        try:
            got = src.map()
            assert (got is not None) == expected, path.name
            if got is not None:
                got.close()
        finally:
            src.close()
    monkeypatch.setenv("NDVAL_MMAP_INGEST", "0")
    src = framing.open_source(plain, threaded=False)
    try:
        assert src.map() is None
    finally:
        src.close()


def test_map_window_releases_decoded_pages_and_keeps_the_file(tmp_path: Path) -> None:
    """``drop`` moves the text's start (a "[" written before it, in this process's copy only) and hands
    back every page wholly before it; ``read_into`` hands out file bytes without reading them."""
    page = mmap.PAGESIZE
    path = tmp_path / "blob.json"
    data = b"[" + b"x" * (4 * page)
    path.write_bytes(data)
    src = framing.open_source(path, threaded=False)
    try:
        head = src.read(10)
        mapping = src.map()
        assert mapping is not None
        win = window.window(head[1:], src, mapping)
        assert isinstance(win, window.MapWindow) and (win.at, win.n) == (0, 10)
        assert win.read_into(src, 3 * page) == 3 * page and src.n_out == 10 + 3 * page
        win.drop(2 * page + 5)
        assert win.at == 2 * page + 4 and win.released == 2 * page and win.text() == data[win.at + 1:win.at + win.n]
        assert mapping[win.at] == ord("[") and src.n_out == win.at + win.n
        assert win.read_into(src, 10 * page) == page - 9 and src.n_out == len(data) and win.read_into(src, page) == 0
        assert src.read(5) == b""  # the source is positioned behind the text (the slow path reads from there)
        mapping.close()
    finally:
        src.close()
    assert path.read_bytes() == data


@pytest.mark.needs_data
@pytest.mark.parametrize("relative", ["ascend/msinsight-level0/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json",
                                      "ascend/msinsight-level1/rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json",
                                      "ascend/msprof-analyze-single-card/trace_view.json"])
def test_shared_plain_samples_same_as_buffered(profile_path, monkeypatch: pytest.MonkeyPatch, relative: str) -> None:
    _assert_same(profile_path(relative), monkeypatch)


def test_top_level_keys_longer_than_the_first_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain file's first read is ``HEAD_BYTES``: top-level keys before ``traceEvents`` longer than
    that are read on, and the events start at the right offset of the map."""
    path = tmp_path / "t.json"
    props = ", ".join(f'{{"id": {i}, "name": "{"G" * 200}"}}' for i in range(1000))  # ~220 kB > HEAD_BYTES
    path.write_text('{"deviceProperties": [' + props + '], "traceEvents": [\n'
                    + ",\n".join(_event(i) for i in range(500)) + "\n]}", encoding="utf-8")
    assert path.stat().st_size > 3 * chunks.HEAD_BYTES
    raw = _assert_same(path, monkeypatch)
    assert raw.n_complete == 500 and len(raw.top["deviceProperties"]) == 1000
