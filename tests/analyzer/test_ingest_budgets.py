"""Ingest budgets (nesting depth, event size, events read, decompressed size) and the framing that
enforces them, on SYNTHETIC traces generated here in tmp (labelled synthetic; nothing measured).

Each budget, when exceeded, must be a warning that names it while the events that fit are kept; the
cost must stay bounded (checked by tracemalloc peaks and event counts, not by timing).
"""

from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from analyzer.dataset import load_dataset
from analyzer.ingest import budgets as B
from analyzer.ingest import chunks
from analyzer.ingest.framing import Scanner
from analyzer.ingest.stream import read_trace


def _kernel(i: int, name: str = "k") -> dict[str, Any]:
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": 1000 + 10 * i, "dur": 5,
            "args": {"correlation": i}}


def _kineto_text(events: list[dict[str, Any]], extra: str = "") -> str:
    body = ",\n".join(json.dumps(e) for e in events)
    return '{"schemaVersion": 1, "traceEvents": [\n' + body + extra + '\n], "distributedInfo": {"rank": 3}}'


def test_synthetic_deep_args_is_dropped_with_depth_warning_in_bounded_memory(tmp_path: Path) -> None:
    """A ~200 KB file whose one event nests an ``args`` value 100,000 deep (the 21 GB case)."""
    deep = '{"ph": "X", "cat": "kernel", "name": "deep", "pid": 0, "tid": 7, "ts": 5, "dur": 1, "args": {"x": ' \
        + "[" * 100_000 + "]" * 100_000 + "}}"
    path = tmp_path / "deep.json"
    path.write_text(_kineto_text([_kernel(i) for i in range(50)], extra=",\n" + deep))
    tracemalloc.start()
    raw = read_trace(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert raw.n_complete == 50 and raw.top["distributedInfo"] == {"rank": 3}
    assert any("nesting-depth budget" in w and "max_depth=" in w for w in raw.warnings)
    assert peak < 64 * 2**20


def _long_name_peak(tmp_path: Path, n_chars: int) -> tuple[Any, int]:
    events = [_kernel(i) for i in range(20)] + [_kernel(20, name="n" * n_chars)] + \
        [_kernel(i) for i in range(21, 40)]
    path = tmp_path / f"long{n_chars}.json"
    path.write_text(_kineto_text(events))
    tracemalloc.start()
    raw = read_trace(path, budgets=B.Budgets(max_event_bytes=2**20))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return raw, peak


def test_synthetic_long_name_is_skipped_by_streaming_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """3 MB and 6 MB names over a 1 MiB event-size budget, read in 64 KiB chunks: skipped while
    streaming (never held whole: the peak does not grow with the name), the events around kept."""
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 64 * 1024)
    raw, peak3 = _long_name_peak(tmp_path, 3_000_000)
    _, peak6 = _long_name_peak(tmp_path, 6_000_000)
    assert raw.n_complete == 39
    assert any("event-size budget" in w and "max_event_bytes=1,048,576" in w for w in raw.warnings)
    assert peak6 < 1.3 * peak3 and peak6 < 16 * 2**20


def test_synthetic_long_name_in_one_chunk_is_dropped_too(tmp_path: Path) -> None:
    """Inside a chunk that decodes, a name over the budget is dropped the same way."""
    events = [_kernel(0), _kernel(1, name="m" * 5000), _kernel(2)]
    path = tmp_path / "long_in_chunk.json"
    path.write_text(_kineto_text(events))
    raw = read_trace(path, budgets=B.Budgets(max_event_bytes=4096))
    assert raw.n_complete == 2 and raw.n_dropped_bad == 0
    assert any("event-size budget" in w for w in raw.warnings)


def test_synthetic_events_budget_stops_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 32 * 1024)
    path = tmp_path / "many.json"
    path.write_text(_kineto_text([_kernel(i) for i in range(20_000)]))
    raw = read_trace(path, budgets=B.Budgets(max_read_events=2000))
    assert 2000 <= raw.n_seen < 2000 + 1000  # stops within one 32 KiB chunk of the budget
    assert any("events budget" in w and "max_read_events=2,000" in w for w in raw.warnings)


def test_event_budget_bounds_reading_too() -> None:
    assert B.Budgets.for_event_budget(None).max_read_events is None
    assert B.Budgets.for_event_budget(500_000).max_read_events == 5_000_000
    assert B.Budgets.for_event_budget(10).max_read_events == B.READ_MIN


def test_synthetic_gzip_bomb_stops_at_decompressed_size_budget(tmp_path: Path) -> None:
    """A small .gz of many tiny events (compression ratio ~100): reading stops at the budget and
    the analysis continues on the events read, with the budget named."""
    path = tmp_path / "bomb.json.gz"
    with gzip.open(path, "wt", compresslevel=9) as fh:
        fh.write(_kineto_text([_kernel(i) for i in range(100_000)]))
    assert path.stat().st_size < 2 * 2**20
    ds = load_dataset(path, budgets=B.Budgets(max_decompressed_bytes=2**20))
    rank = ds.ranks[0]
    assert 0 < len(rank.events) < 100_000
    assert any("decompressed-size budget" in w for w in ds.warnings)


def test_automatic_event_budget_fits_memory() -> None:
    assert B.memory_limit_bytes() > 0
    assert B.auto_max_events() >= 100_000
    assert B.auto_max_events(bytes_per_event=10**15) == 100_000


@pytest.mark.parametrize("text, n", [
    ('[{"a": "x\\\\"}, {"b": [1, {"c": "]}\\""}]}, {"d": [[[[1]]]]}]', 3),
    ('[{"s": "\\\\\\""}, {"t": "{[\\"]"}]', 2),
])
def test_scanner_frames_elements_exactly_whatever_the_block_size(text: str, n: int,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    data = text.encode()[1:]
    for block in (1, 2, 3, 7, 1 << 20):
        monkeypatch.setattr("analyzer.ingest.framing.SCAN_BLOCK_BYTES", block)
        sc = Scanner(pos=0)
        found = []
        for i in range(0, len(data), 5):
            found += sc.feed(data[i:i + 5])
        assert len(found) == n and sc.closed == len(data)
        for el in found:
            json.loads(data[el.start:el.end])


def test_synthetic_metadata_keys_before_and_after_events_in_one_pass(tmp_path: Path) -> None:
    text = ('{"deviceProperties": [{"name": "GPU \\"traceEvents\\" x"}], "traceEvents": ['
            + ",".join(json.dumps(_kernel(i)) for i in range(3)) + '], "distributedInfo": {"rank": 5}}')
    path = tmp_path / "meta.json"
    path.write_text(text)
    raw = read_trace(path)
    assert raw.n_complete == 3
    assert raw.top["distributedInfo"] == {"rank": 5}
    assert raw.top["deviceProperties"][0]["name"] == 'GPU "traceEvents" x'


def test_synthetic_kernel_names_with_braces_and_commas_decode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """C++ lambda kernel names hold ``},`` (a false boundary): every event is still read once."""
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 4096)
    names = [f"void f<{{lambda(long)#{i}}}, {{x}},{{y}}>" for i in range(500)]
    path = tmp_path / "braces.json"
    path.write_text(_kineto_text([_kernel(i, name=n) for i, n in enumerate(names)]))
    raw = read_trace(path)
    assert raw.n_complete == 500 and not raw.warnings
    assert sorted(s[2] for s in raw.sigs) == sorted(set(names))
