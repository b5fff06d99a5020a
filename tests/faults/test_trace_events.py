"""Events and steps left out of a Kineto trace are counted by cause (issue: "silent wrong answers" / "vague
messages" — B/E duration events were dropped silently; zero-length step markers gave "no single dominant
bottleneck" from 0 events with no cause; one bad step marker dropped its whole step while the warning said
"1 events dropped"; a bare-array Kineto trace was read as Ascend). Every trace here is SYNTHETIC."""

from __future__ import annotations

import gzip
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
    """One bad marker dropped its whole step while the warning said "1 events dropped"."""
    # step 1 [0, 400) holds kernels 0-9; step 2's marker has an unreadable dur, so kernels 10-19 are in no step
    ds = load_dataset(_write(tmp_path, [_step(1, 0, 400), _step(2, 400, bad_dur), *_kernels(20)]))
    rank = ds.ranks[0]
    text = "\n".join(rank.warnings)
    assert "step marker ProfilerStep#2: bad dur — 1 marker and the 10 events of its step excluded" in text, text
    assert "dropped 1 unreadable events (bad dur 1;" in text, text
    assert rank.dropped_events.count == 1 and "ProfilerStep#2: bad dur" in rank.dropped_events.reason
    assert rank.dropped_events.by_category == {"unparsed": 1, "excluded_step_markers": 1, "events_in_excluded_steps": 10}


def test_kineto_step_marker_with_a_bad_ts_counts_the_events_between_its_neighbours(tmp_path: Path) -> None:
    # steps 1 [0, 200) and 3 [400, 800) readable; step 2's ts unreadable: kernels starting in [200, 400) are its
    ds = load_dataset(_write(tmp_path, [_step(1, 0, 200), _step(2, "x", 200), _step(3, 400, 400), *_kernels(20)]))
    text = "\n".join(ds.ranks[0].warnings)
    assert ("step marker ProfilerStep#2: bad ts — 1 marker and the 5 events of its step excluded (its start is "
            "unreadable: the events in no step after ProfilerStep#1's end and before ProfilerStep#3's start)") in text, text
    assert "(bad ts 1;" in text


def _ascend_trace(tmp_path: Path, field: str) -> Path:
    """SYNTHETIC Ascend trace_view.json (tests/analyzer/synthetic.py), 4 steps of 40 events, ProfilerStep#3's
    ``field`` unreadable."""
    from tests.analyzer.synthetic import SynthStep, build_events
    events = build_events([SynthStep() for _ in range(4)])
    for e in events:
        if e.get("name") == "ProfilerStep#3":
            e[field] = "bad"
    path = tmp_path / "trace_view.json"
    path.write_text(json.dumps(events))
    return path


@pytest.mark.parametrize("field", ["ts", "dur"])
def test_ascend_bad_step_marker_states_the_cause_and_the_events_of_its_step(tmp_path: Path, field: str) -> None:
    """An Ascend trace_view.json with a bad step marker said "dropped 1 events with a bad ts/dur", its step's
    40 events silently in no step."""
    rank = load_dataset(_ascend_trace(tmp_path, field)).ranks[0]
    text = "\n".join(rank.warnings)
    assert f"dropped 1 unreadable events (bad {field} 1;" in text, text
    assert f"step marker ProfilerStep#3: bad {field} — 1 marker and the 40 events of its step excluded" in text, text
    assert rank.dropped_events.by_category == {"unparsed": 1, "excluded_step_markers": 1, "events_in_excluded_steps": 40}
    assert int((rank.events["step"] < 0).sum()) == 40 and 3 not in set(rank.events["step"])


@pytest.mark.parametrize("name", ["bare.json", "trace_view.json", "bare.json.gz"])
def test_bare_array_kineto_trace_is_read_as_kineto_not_ascend(tmp_path: Path, name: str) -> None:
    """A bare-array Kineto trace (the Trace Event Format's JSON Array Format) was read as Ascend, then refused;
    it is Kineto's by its content (categories / args), whatever its name. SYNTHETIC events."""
    path = tmp_path / name
    data = json.dumps([_step(1, 0, 1000), *_kernels(20)]).encode()
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    ds = load_dataset(path)
    assert ds.source_format == "kineto" and len(ds.ranks[0].events) == 21
    cats = ds.ranks[0].events["category"].value_counts().to_dict()
    assert cats == {"compute": 20, "step": 1}, cats
    text = "\n".join(ds.ranks[0].warnings)
    assert "a bare JSON array of events (the Trace Event Format's JSON Array Format) read as Kineto events" in text


def test_bare_array_kineto_traces_in_a_folder_are_ranks(tmp_path: Path) -> None:
    for r in (0, 1):
        (tmp_path / f"rank{r}.json").write_text(json.dumps([_step(1, 0, 1000), *_kernels(20)]))
    ds = load_dataset(tmp_path)
    assert ds.source_format == "kineto" and [len(r.events) for r in ds.ranks] == [21, 21]


def test_ascend_array_in_a_kineto_folder_is_named_not_misread(tmp_path: Path) -> None:
    meta = {"ph": "M", "name": "process_name", "pid": 9, "tid": 0, "args": {"name": "Ascend Hardware"}}
    (tmp_path / "a.json.gz").write_bytes(gzip.compress(json.dumps([meta, _step(1, 0, 1000)]).encode()))
    with pytest.raises(IngestError, match="a JSON array without Kineto events \\(Ascend markers: Ascend Hardware\\)"):
        load_dataset(tmp_path / "a.json.gz")


def test_shared_kineto_trace_as_a_bare_array_gives_the_same_analysis(tmp_path: Path, profile_path: Any) -> None:
    """A real Kineto trace rewritten as its bare event array (the JSON Array Format) is analysed as the original."""
    from analyzer.analysis import analyze
    src = profile_path("kineto/hta-tests/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    doc = json.loads(gzip.decompress(src.read_bytes()))
    array = tmp_path / "array.json"
    array.write_text(json.dumps(doc["traceEvents"]))
    a, b = analyze(load_dataset(src)).ranks[0], analyze(load_dataset(array)).ranks[0]
    assert b.step_breakdown == a.step_breakdown and len(a.step_breakdown) == 2
    assert {k: s.to_dict() for k, s in b.scopes.items()} == {k: s.to_dict() for k, s in a.scopes.items()}


def test_bare_array_with_ascend_process_names_is_still_ascend(tmp_path: Path) -> None:
    meta = {"ph": "M", "name": "process_name", "pid": 9, "tid": 0, "args": {"name": "Ascend Hardware"}}
    path = tmp_path / "trace_view.json"
    path.write_text(json.dumps([meta, _step(1, 0, 1000), *_kernels(20)]))
    assert load_dataset(path).source_format == "ascend"


@pytest.mark.parametrize("wrap", [True, False])  # Kineto object (KinetoArgs) / bare array read as Kineto
def test_begin_end_pair_merges_the_end_events_args(tmp_path: Path, wrap: bool) -> None:
    """B/E duration events: the args of the E event were lost (Trace Event Format: "the args of the E event are
    merged with those of the B event"; a key both give takes E's value). SYNTHETIC: a copy whose size is on E."""
    be = [{"ph": "B", "name": "Memcpy HtoD (Pageable -> Device)", "cat": "gpu_memcpy", "ts": 100, "pid": 0, "tid": 7,
           "args": {"correlation": 11, "bytes": 1}},
          {"ph": "E", "ts": 160, "pid": 0, "tid": 7, "args": {"bytes": 4096}}]
    events = [_step(1, 0, 1000), *_kernels(5), *be]
    path = _write(tmp_path, events) if wrap else tmp_path / "a.json"
    if not wrap:
        path.write_text(json.dumps(events))
    table = load_dataset(path).ranks[0].events
    row = table[table["category"] == "memcpy"]
    assert len(row) == 1 and float(row["bytes"].iloc[0]) == 4096.0 and int(row["corr"].iloc[0]) == 11
    assert float(row["dur_us"].iloc[0]) == 60.0


def test_merge_args_keeps_begin_keys_and_takes_end_values() -> None:
    from analyzer.ingest import decode as dec
    from analyzer.ingest.durations import merge_args
    b = dec.Args(task_type="AI_CORE", count=2, data_type="FP32")
    merged = merge_args(b, dec.Args(count=8))
    assert (merged.task_type, merged.count, merged.data_type) == ("AI_CORE", 8, "FP32")
    assert merge_args(b, None) is b and merge_args(None, b) is b and merge_args(b, dec.Args()) is b
    k = merge_args(dec.KinetoArgs(correlation=3), dec.KinetoArgs(nbytes=64))
    assert (k.correlation, k.nbytes) == (3, 64)
