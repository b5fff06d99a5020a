"""Events and steps left out of a Kineto trace are counted by cause (issue: "silent wrong answers" / "vague
messages" — B/E duration events were dropped silently; zero-length step markers gave "no single dominant
bottleneck" from 0 events with no cause; one bad step marker dropped its whole step while the warning said
"1 events dropped"; a bare-array Kineto trace was read as Ascend). Every trace here is SYNTHETIC."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from analyzer.dataset import load_dataset
from analyzer.ingest.errors import IngestError


def _kernels(n: int, t0: int = 10) -> list[dict[str, Any]]:
    return [{"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": t0 + 40 * i, "dur": 30, "pid": 0, "tid": 7,
             "args": {"stream": 7, "device": 0}} for i in range(n)]


def _step(n: int, ts: int, dur: Any) -> dict[str, Any]:
    return {"ph": "X", "name": f"ProfilerStep#{n}", "ts": ts, "dur": dur, "pid": 1, "tid": 1, "cat": "user_annotation"}


def _write(tmp_path: Path, events: list[dict[str, Any]], name: str = "t.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def test_begin_end_duration_events_are_paired_not_dropped_silently(tmp_path: Path) -> None:
    be = [{"ph": "B", "name": "fwd", "ts": 20, "pid": 1, "tid": 1, "cat": "user_annotation"},
          {"ph": "B", "name": "inner", "ts": 30, "pid": 1, "tid": 1, "cat": "user_annotation"},
          {"ph": "E", "ts": 100, "pid": 1, "tid": 1},  # closes "inner" (the most recent open B of the thread)
          {"ph": "E", "name": "fwd", "ts": 400, "pid": 1, "tid": 1, "cat": "user_annotation"},
          {"ph": "E", "ts": 450, "pid": 1, "tid": 2},  # no open B on tid 2
          {"ph": "B", "name": "bwd", "ts": 500, "pid": 1, "tid": 1, "cat": "user_annotation"}]  # never closed
    ds = load_dataset(_write(tmp_path, [_step(1, 0, 1000), *_kernels(20), *be]))
    events = ds.ranks[0].events
    assert len(events) == 23  # the 21 complete events and 2 pairs
    spans = {n: (t, d) for n, t, d in zip(events["name"], events["ts_us"], events["dur_us"], strict=True)}
    t0 = spans["ProfilerStep#1"][0]
    assert spans["fwd"] == (t0 + 20, 380) and spans["inner"] == (t0 + 30, 70)
    text = "\n".join(ds.ranks[0].warnings)
    assert ("2 begin/end ('B'/'E') pairs read as complete events; dropped 2 duration events that could not be "
            "paired (unclosed begin 1, unmatched end 1)") in text, text


def test_no_begin_end_no_duration_warning(tmp_path: Path) -> None:
    ds = load_dataset(_write(tmp_path, [_step(1, 0, 1000), *_kernels(20)]))
    assert not any("begin/end" in w or "duration events" in w for w in ds.ranks[0].warnings)



def test_zero_length_step_markers_are_not_evaluable_with_the_cause(tmp_path: Path) -> None:
    from analyzer.analysis import analyze
    result = analyze(load_dataset(_write(tmp_path, [_step(1, 0, 0), _step(2, 500, 0), *_kernels(20)])))
    assert not result.verdict.evaluable and "zero-length steps" in result.verdict.summary, result.verdict.summary
    text = "\n".join(result.warnings)
    assert "all 2 ProfilerStep markers have duration 0 (zero-length steps)" in text, text
    assert "none of the trace's 22 events" in text


@pytest.mark.parametrize("bad_dur", ["bad", -5])  # msgspec path / native scanner path
def test_one_bad_step_marker_names_the_excluded_step_and_its_events(tmp_path: Path, bad_dur: Any) -> None:
    # step 1 [0, 400) holds kernels 0-9; step 2's marker has an unreadable dur, so kernels 10-19 are in no step
    ds = load_dataset(_write(tmp_path, [_step(1, 0, 400), _step(2, 400, bad_dur), *_kernels(20)]))
    rank = ds.ranks[0]
    text = "\n".join(rank.warnings)
    assert "step ProfilerStep#2 excluded (marker with a bad ts/dur; its 10 events are in no step)" in text, text
    assert rank.dropped_events.count == 1 and "ProfilerStep#2 excluded" in rank.dropped_events.reason
    assert rank.dropped_events.by_category == {"unparsed": 1, "excluded_step_markers": 1, "events_in_excluded_steps": 10}


@pytest.mark.parametrize("name", ["bare.json", "trace_view.json"])
def test_bare_array_kineto_trace_is_refused_not_read_as_ascend(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(json.dumps([_step(1, 0, 1000), *_kernels(20)]))
    with pytest.raises(IngestError) as err:
        load_dataset(path)
    text = str(err.value)
    assert str(path) in text and "bare JSON array of Kineto events (categories kernel" in text and "traceEvents" in text


def test_bare_array_with_ascend_process_names_is_still_ascend(tmp_path: Path) -> None:
    meta = {"ph": "M", "name": "process_name", "pid": 9, "tid": 0, "args": {"name": "Ascend Hardware"}}
    path = tmp_path / "trace_view.json"
    path.write_text(json.dumps([meta, _step(1, 0, 1000), *_kernels(20)]))
    assert load_dataset(path).source_format == "ascend"
