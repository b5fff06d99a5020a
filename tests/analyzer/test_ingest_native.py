"""The native Kineto chunk scanner (``analyzer/ingest/_kineto_scan.c`` via ``native.py``) against the
msgspec path (the reference): the same ``read_trace`` result, byte for byte, on every shared Kineto /
Ascend trace sample (skipped when ../shared is absent) and on SYNTHETIC traces written here (escapes,
unicode, nested and null args, numbers as strings, exponent floats, huge ints, missing fields, a
truncated file, a bad event in the middle, ...). Cases the scanner does not reproduce exactly must be
refused (the chunk then goes to msgspec): the tests check which path ran where it matters. Also: the
msgspec path is chosen when the extension cannot be imported."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from analyzer import ingest
from analyzer.ingest import chunks, native
from analyzer.ingest.budgets import Budgets
from analyzer.ingest.stream import read_trace
from tests.analyzer.native_equivalence import assert_same, read_both

needs_native = pytest.mark.skipif(native._ext is None, reason="the C extension analyzer.ingest._kineto_scan "
                                  "is not built (no C compiler at install time): only the msgspec path exists")

_PLAIN = '{"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 7, "ts": 1700000000000100.5, "dur": 2}'
_META = ('{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "rank 0"}}',
         '{"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "stream 7"}}',
         '{"ph": "M", "name": "process_labels", "pid": 1, "args": {"labels": "GPU 0"}}')


def _write(tmp_path: Path, events: list[str]) -> Path:
    """A SYNTHETIC Kineto trace: metadata, the case's events, then a plain event (the last event of a
    file is framed by the exact scanner, so the case's events are all in a fast-path chunk)."""
    path = tmp_path / "synthetic.json"
    path.write_text('{"schemaVersion": 1, "traceEvents": [\n' + ",\n".join([*_META, *events, _PLAIN])
                    + '\n], "distributedInfo": {"rank": 0}}', encoding="utf-8")
    return path


def _x(**fields: str) -> str:
    body = {"ph": '"X"', "cat": '"kernel"', "name": '"k"', "pid": "1", "tid": "7", "ts": "1700000000000000.25",
            "dur": "3.5"}
    body.update(fields)
    return "{" + ", ".join(f'"{k}": {v}' for k, v in body.items() if v != "ABSENT") + "}"


#: (label, events) the native scanner reads itself (decoder must be "native").
NATIVE_CASES: list[tuple[str, list[str]]] = [
    ("escapes", [_x(name=r'"a\"b\\c\/d\n\t\u00e9\ud83d\ude00"'), _x(cat=r'"c\u0000"')]),
    ("unicode", [_x(name='"名前 é 😀"'), _x(args='{"Collective name": "全"}')]),
    ("nested args", [_x(args='{"a": {"b": [1, {"c": [[], {}, null, true, false, -0.5e-3]}]}, "correlation": 9, '
                        '"bytes": 1024, "Input Dims": [[1, 2], []]}')]),
    ("null args and null values", [_x(args="null"), _x(args='{"correlation": null, "bytes": null}'),
                                   _x(dur="null"), _x(ts="null")]),
    ("exponent floats", [_x(dur="1.5e3"), _x(dur="2E-2"), _x(args='{"bytes": 1e3}'),
                         _x(args='{"bytes": 12345.678901234567891}')]),
    ("huge ints", [_x(args='{"correlation": 123456789012345678901234567890}'),
                   _x(args='{"correlation": -9223372036854775809}'), _x(args='{"correlation": 9223372036854775807}'),
                   _x(dur="123456789012345678901"), _x(args='{"x": 123456789012345678901234567890}')]),
    ("missing fields", [_x(name="ABSENT"), _x(cat="ABSENT"), _x(pid="ABSENT", tid="ABSENT"), _x(ts="ABSENT"),
                        _x(dur="ABSENT"), '{"ph": "X"}']),
    ("ts forms", [_x(ts="1700000000000001"), _x(ts='"1700000000000002.125"'), _x(ts='"-5.5"'), _x(ts="-0.5"),
                  _x(ts='"17."'), _x(ts="1700000000000003.1234567890123456789")]),
    ("string pids", [_x(pid='"Spans"', tid='"Traces"'), _x(pid='"Spans"', tid="3")]),
    ("nccl bytes", [_x(args='{"In msg nelems": 100, "dtype": "Float"}'),
                    _x(args='{"In msg nelems": 100, "dtype": "torch.float16", "bytes": 64}'),
                    _x(args='{"In msg nelems": 100, "dtype": "weird"}'), _x(args='{"In msg nelems": 5}'),
                    _x(args='{"In msg nelems": null, "dtype": "Float"}'),
                    _x(args='{"In msg nelems": 7, "dtype": "BFloat16", "bytes": null}')]),
    ("other phases", ['{"ph": "s", "id": 1, "pid": 1.5, "name": [1], "ts": "x"}', '{"ph": "f", "args": [1]}',
                      '{"ph": "i", "s": "t", "name": "mark"}']),
    ("negative and bad durations", [_x(dur="-1"), _x(dur="-0"), _x(dur="-0.0"), _x(dur="0")]),
    ("float edges", [_x(dur="1e-400"), _x(dur="5e-324"), _x(dur="2.2250738585072011e-308"),
                     _x(args='{"bytes": 1.7976931348623158e308}'), _x(args='{"bytes": 9007199254740993}'),
                     _x(dur="0.1000000000000000055511151231257827021181583404541015625"),
                     _x(ts="0.99999999999999999999"), _x(ts='"-0.000"')]),
    ("equal keys spelled apart", [_x(pid="-0", tid="-0"), _x(pid="0", tid="0"), _x(name=r'"\u006b"')]),
    ("compact", ['{"ph":"X","name":"c","pid":2,"tid":2,"ts":1700000000000005,"dur":1,"args":{"correlation":3}}']),
]

#: (label, events) the scanner refuses (their chunk goes to msgspec; same result all the same).
REFUSED_CASES: list[tuple[str, list[str]]] = [
    ("numbers as strings", [_x(dur='"5.5"'), _x(args='{"correlation": "12", "bytes": "100"}')]),
    ("ts in exponent notation", [_x(ts="1.7e15")]),
    ("ts with 19 digits", [_x(ts="1234567890123456789")]),
    ("huge pid", [_x(pid="123456789012345678901234567890")]),
    ("float pid", [_x(pid="1.0")]),
    ("non-string name", [_x(name="[1, 2]")]),
    ("bad event in the middle", [_x(), '{"ph": "X", "name": "n", "ts": NaN, "dur": 1}', _x()]),
    ("unknown phase", ['{"ph": "Q", "name": "q"}']),
    ("duplicate key", [_x()[:-1] + ', "name": "again"}']),
    ("duplicate ph", ['{"ph": "X", "ph": "M", "name": "process_name", "pid": 1, "args": {"name": "p"}}']),
    ("duplicate key in a metadata event", ['{"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "pid": 3}']),
    ("escaped key", ['{"ph": "X", "n\\u0061me": "k", "pid": 1, "tid": 1, "ts": 1700000000000000, "dur": 1}']),
    ("null collective name", [_x(args='{"Collective name": null}')]),
    ("dur out of range", [_x(dur="1e400")]),
    ("bytes out of range", [_x(args='{"bytes": 1.7976931348623159e308}')]),
    ("lone surrogate", [_x(name=r'"\ud800"')]),
    ("bool ts", [_x(ts="true")]),
    ("ts text with blanks", [_x(ts='" 1700000000000000.5"')]),
]


@needs_native
@pytest.mark.parametrize(("label", "events"), NATIVE_CASES, ids=[c[0] for c in NATIVE_CASES])
def test_native_reads_synthetic_case_like_msgspec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, label: str,
                                                  events: list[str]) -> None:
    raw = assert_same(_write(tmp_path, events), monkeypatch)
    assert raw.decoder == "native", f"{label}: {raw.decoder}"
    assert raw.n_seen == len(_META) + len(events) + 1


@needs_native
@pytest.mark.parametrize(("label", "events"), REFUSED_CASES, ids=[c[0] for c in REFUSED_CASES])
def test_native_refuses_what_it_does_not_reproduce(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, label: str,
                                                   events: list[str]) -> None:
    raw = assert_same(_write(tmp_path, events), monkeypatch)
    assert raw.decoder != "native" and "native refused" in raw.decoder, f"{label}: {raw.decoder}"


@needs_native
def test_truncated_trace_same_events_and_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    full = _write(tmp_path, [_x(args=f'{{"correlation": {i}}}') for i in range(50)])
    text = full.read_text(encoding="utf-8")
    full.write_text(text[: text.rindex('"correlation": 30') + 5], encoding="utf-8")  # cut inside an event
    raw = assert_same(full, monkeypatch)
    assert raw.truncated and raw.decoder == "native"


@needs_native
def test_depth_budget_kept_on_the_native_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = "[" * 300 + "]" * 300
    path = _write(tmp_path, [_x(args=f'{{"deep": {deep}}}'), _x(args='{"shallow": [[[1]]]}')])
    raw = assert_same(path, monkeypatch)
    assert "native refused: nesting" in raw.decoder  # refused: msgspec and the exact scanner apply the budget
    small = Budgets(max_depth=30)  # the second event is 32 levels deep: dropped by the budget, named

    def nested(n: int) -> str:
        return '{"a": ' + "[" * n + "]" * n + "}"

    raw = assert_same(_write(tmp_path, [_x(args=nested(27)), _x(args=nested(30)), _x()]), monkeypatch, small)
    assert raw.warnings and "max_depth=30" in " ".join(raw.warnings) and raw.n_complete == 3


@needs_native
def test_many_chunks_and_signature_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Several fast-path chunks (small chunk size), new signatures appearing in later chunks, names
    over the event-size budget dropped, ts bases carried from chunk to chunk."""
    events = [_x(name=f'"op{i % 37}"', pid=str(i % 3), ts=str(1700000000000000 + 3 * i), dur=str(i % 5))
              for i in range(3000)]
    events[1500] = _x(name='"' + "L" * 300 + '"')
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 16 * 1024)
    raw = assert_same(_write(tmp_path, events), monkeypatch, Budgets(max_event_bytes=200))
    assert raw.decoder == "native" and raw.n_too_long == 1 and len(raw.sigs) == 37 * 3 + 1


@pytest.mark.needs_data
@pytest.mark.parametrize("relative", ["kineto/hta-trace-diff/control.json.gz", "kineto/hta-trace-diff/test.json.gz",
                                      "ascend/msinsight-level0/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json",
                                      "ascend/msinsight-level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json",
                                      "ascend/msinsight-level1/rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json",
                                      "ascend/msprof-analyze-single-card/trace_view.json"])
def test_shared_samples_identical(profile_path, monkeypatch: pytest.MonkeyPatch, relative: str) -> None:
    raw = assert_same(profile_path(relative), monkeypatch)
    if relative.startswith("kineto/") and native._ext is not None:
        assert raw.decoder == "native"  # Ascend event arrays keep the msgspec path (generic args)


def test_msgspec_path_when_the_extension_cannot_be_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, [_x(), _x(args='{"correlation": 4}')])
    try:
        with monkeypatch.context() as m:
            m.setitem(sys.modules, "analyzer.ingest._kineto_scan", None)  # import raises ImportError
            m.delattr(ingest, "_kineto_scan", raising=False)
            reloaded = importlib.reload(native)
            assert reloaded._ext is None and not reloaded.AVAILABLE and reloaded.PATH == "msgspec"
            raw = read_trace(path)
            assert raw.decoder == "msgspec" and raw.n_complete == 3
    finally:
        importlib.reload(native)


def test_disabled_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        with monkeypatch.context() as m:
            m.setenv("NDVAL_NATIVE_INGEST", "0")
            assert importlib.reload(native).PATH == "msgspec"
    finally:
        importlib.reload(native)


def test_negative_fractional_ts_keeps_its_sign(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SYNTHETIC: "-5.5" is -5 - 0.5 (not -5 + 0.5) on both paths, as a string and as a number; the
    decoder-level rule (``decode.exact_relative_us``) the same."""
    from analyzer.ingest.decode import exact_relative_us

    got = exact_relative_us(["-5.5", "-0.5", "3.25", "-7", "-0.000"], 0)
    assert list(got.rel_us) == [-5.5, -0.5, 3.25, -7.0, 0.0]
    events = ['{"ph": "X", "cat": "kernel", "name": "a", "pid": 1, "tid": 7, "ts": "-5.5", "dur": 1}',
              '{"ph": "X", "cat": "kernel", "name": "b", "pid": 1, "tid": 7, "ts": -0.25, "dur": 1}',
              '{"ph": "X", "cat": "kernel", "name": "c", "pid": 1, "tid": 7, "ts": 2.75, "dur": 1}']
    path = tmp_path / "negative.json"
    path.write_text('{"traceEvents": [' + ",".join(events) + "]}", encoding="utf-8")
    for raw in read_both(path, monkeypatch):
        assert [raw.base_ts_us + t - raw.shift_us for t in raw.ts_us] == [-5.5, -0.25, 2.75], raw.decoder
