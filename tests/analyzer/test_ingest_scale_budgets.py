"""Ingest budgets at scale (issue 13 traces, issue 16 memory), on SYNTHETIC traces generated here in
tmp (labelled synthetic; nothing measured is asserted beyond bounds and ratios):

- a gzip of many events (concatenated members, written in a fraction of a second): ``max_events``
  bounds what is *read* (time) and what is kept (memory), and the budget is named in a warning;
- the nesting-depth budget is exact on the fast decoding path too (an event one level deeper than
  ``max_depth`` is dropped and named, one at ``max_depth`` is kept), also between the budget and the
  fast decoder's own recursion limit (~1000 levels), where it used to be ignored;
- one long string: time grows linearly with its length (2/4/8 MB names, the CPU-time growth exponent above a
  short name's; ``benchmarks/bench_gzip_bomb.py --names`` times 25/50/100 MB), and a
  name over the event-size budget is skipped with a warning naming the budget.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from analyzer.dataset import load_dataset
from analyzer.ingest import budgets as B
from analyzer.ingest.framing import Scanner
from analyzer.ingest.stream import read_trace
from tests.benchmark_scripts import load_benchmark


def _make_traces() -> ModuleType:
    return load_benchmark("make_traces")


def _kernel(i: int, name: str = "k", args: str = '{"correlation": 1}') -> str:
    return (f'{{"ph": "X", "cat": "kernel", "name": {json.dumps(name)}, "pid": 0, "tid": 7, '
            f'"ts": {1000 + 10 * i}, "dur": 5, "args": {args}}}')


def _write(path: Path, events: list[str]) -> Path:
    path.write_text('{"traceEvents": [\n' + ",\n".join(events) + '\n], "distributedInfo": {"rank": 0}}')
    return path


def test_synthetic_gzip_of_many_events_max_events_bounds_reading_and_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """2 M events in ~2.5 MB of gzip; ``max_events=1000`` reads at most ``max(READ_FACTOR × 1000,
    READ_MIN)`` events (+ one chunk: time bounded; ``READ_MIN`` lowered to 100k to keep the test
    short) and keeps 1000 (memory bounded: the streaming buffer never holds more than the thinning
    cap, ``test_budget.py``); ``benchmarks/bench_gzip_bomb.py`` measures the 150 M-event case."""
    monkeypatch.setattr(B, "READ_MIN", 100_000)
    path = _make_traces().write_gzip_bomb(tmp_path / "bomb.json.gz", 2_000_000)
    assert path.stat().st_size < 4 * 2**20
    ds = load_dataset(path, max_events=1000)
    assert len(ds.ranks[0].events) <= 1000
    stopped = [w for w in ds.warnings if "events budget: stopped reading after" in w]
    assert stopped and "max_read_events=100,000" in stopped[0]
    read = int(stopped[0].split("stopped reading after ")[1].split(" events")[0].replace(",", ""))
    assert 100_000 <= read < 100_000 + 200_000  # one 8 MiB chunk of ~75-byte events past the budget


def test_synthetic_gzip_of_many_events_decompressed_size_budget_is_named(tmp_path: Path) -> None:
    path = _make_traces().write_gzip_bomb(tmp_path / "bomb.json.gz", 2_000_000)
    raw = read_trace(path, budgets=B.Budgets(max_decompressed_bytes=16 * 2**20))
    assert 0 < raw.n_complete < 2_000_000
    assert any("decompressed-size budget" in w and "max_decompressed_bytes=16,777,216" in w for w in raw.warnings)


def _nested(depth: int) -> str:
    """``args`` whose event nests exactly ``depth`` levels (1 = a flat event; measured below)."""
    return '{"x": ' + "[" * (depth - 2) + "]" * (depth - 2) + "}"


def _scanned_depth(text: str) -> int:
    return Scanner(pos=0).feed(memoryview(("[" + text + "]").encode())[1:])[0].depth


@pytest.mark.parametrize("max_depth", [50, B.MAX_DEPTH])
def test_synthetic_depth_budget_is_exact_on_the_fast_path(tmp_path: Path, max_depth: int) -> None:
    at, over = _kernel(1, args=_nested(max_depth)), _kernel(2, args=_nested(max_depth + 1))
    assert (_scanned_depth(at), _scanned_depth(over)) == (max_depth, max_depth + 1)
    events = [_kernel(i + 10) for i in range(200)]
    path = _write(tmp_path / "deep.json", [*events[:100], at, over, *events[100:]])
    raw = read_trace(path, budgets=B.Budgets(max_depth=max_depth))
    assert raw.n_complete == 201
    assert any(f"nesting-depth budget: dropped 1 events nested deeper than max_depth={max_depth}" in w
               for w in raw.warnings)


def _cpu_seconds_to_load(path: Path, budgets: B.Budgets) -> tuple[float, Any]:
    best, ds = float("inf"), None
    for _ in range(3):  # best of three: a shared machine only ever adds time
        start = time.process_time()
        ds = load_dataset(path, budgets=budgets)
        best = min(best, time.process_time() - start)
    return best, ds


def test_synthetic_long_name_costs_linear_time(tmp_path: Path) -> None:
    """A 2, 4 and 8 MB kernel name (issue 13: 25/50/100 MB took 9.6/35/143 s, quadratic): with an
    event-size budget that admits them, the time of the whole load above that of a short name grows
    linearly: the least-squares exponent of the CPU time on the length over the three sizes stays under 1.5
    (linear 1, quadratic 2). Best of three per size, and a fit over all three rather than a ratio to the smallest,
    so one slow sample on a busy machine does not decide it; the seconds themselves are
    ``benchmarks/bench_gzip_bomb.py --names``."""
    budgets = B.Budgets(max_event_bytes=64 * 2**20)
    seconds = {}
    for mb in (0, 2, 4, 8):
        name = "n" * (mb * 10**6) if mb else "short"
        path = _write(tmp_path / f"name{mb}.json", [_kernel(0), _kernel(1, name=name), _kernel(2)])
        seconds[mb], ds = _cpu_seconds_to_load(path, budgets)
        assert len(ds.ranks[0].events) == 3
    extra = {mb: max(seconds[mb] - seconds[0], 1e-3) for mb in (2, 4, 8)}
    # the growth exponent: least-squares slope of log(time) on log(length); linear 1, quadratic 2
    slope = float(np.polyfit(np.log(list(extra)), np.log(list(extra.values())), 1)[0])
    assert slope < 1.5, (slope, seconds)


def test_synthetic_long_name_over_the_default_budget_is_skipped_and_named(tmp_path: Path) -> None:
    path = _write(tmp_path / "name20.json", [_kernel(0), _kernel(1, name="n" * (20 * 10**6)), _kernel(2)])
    ds = load_dataset(path)
    assert len(ds.ranks[0].events) == 2
    assert any("event-size budget: skipped 1 events" in w and f"max_event_bytes={B.MAX_EVENT_BYTES:,}" in w
               for w in ds.warnings)
