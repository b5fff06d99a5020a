"""Mutated traces: only ``IngestError``; a verdict on a trace with an implausible ts/dur always comes with a
warning that counts what was set aside."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.analysis import analyze
from analyzer.dataset import load_dataset
from analyzer.ingest.errors import IngestError
from tests.analyzer import synthetic as sy
from tests.fuzz.conftest import PROFILE
from tests.fuzz.limits import bounded, only

EVENTS = sy.build_events(sy.comm_bound_steps(3))
N = len(EVENTS)
IMPLAUSIBLE = st.sampled_from([1e300, -1e300, 1e18, 2.0**60, "1e300", 1e200])
ODD = st.one_of(st.none(), st.text(max_size=6), st.floats(allow_nan=True, allow_infinity=True),
                st.integers(-(2**70), 2**70), st.lists(st.integers(), max_size=2))


@st.composite
def mutation(draw: st.DrawFn) -> tuple[list[dict[str, Any]], bool]:
    """(mutated events, whether a complete event still holds an implausible ts/dur written here).

    Judged on the final events: a later mutation of the same event (dropped, ``ph`` or the value replaced)
    removes what an earlier one wrote (``make fuzz`` found the oracle flagging ``{'ts': None}``, an event
    first given ts 1e300, then dropped, then given ``ts: None``)."""
    events = json.loads(json.dumps(EVENTS))
    written: set[tuple[int, str]] = set()
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, N - 1))
        field = draw(st.sampled_from(["ts", "dur", "ph", "name", "pid", "tid", "args", "<drop>"]))
        if field == "<drop>":
            events[i] = {}
            written = {w for w in written if w[0] != i}
            continue
        implausible = field in ("ts", "dur") and draw(st.booleans())
        events[i][field] = draw(IMPLAUSIBLE) if implausible else draw(ODD)
        written = (written | {(i, field)}) if implausible else (written - {(i, field)})
    return events, any(events[i].get("ph") == "X" for i, _ in written)


def _warned(analysis: Any) -> bool:
    return any(("implausible" in w or "bad ts/dur" in w or "dropped" in w) for w in analysis.warnings)


@settings(settings.get_profile(PROFILE))
@given(case=mutation())
def test_mutated_trace_is_analysed_with_warnings_or_refused(tmp_path_factory, case: tuple[list[dict[str, Any]], bool]) -> None:
    events, implausible = case
    root = tmp_path_factory.mktemp("trace")
    rank = sy.write_rank(root, [])
    (rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").write_text(
        json.dumps(events, allow_nan=True).replace("NaN", '"NaN"').replace("Infinity", '"Infinity"'), encoding="utf-8")
    out: list[Any] = []
    with bounded("analysis of a mutated trace", trace_memory=False):
        only((IngestError,), lambda: out.append(analyze(load_dataset(Path(rank)))))
    if out and implausible:
        assert _warned(out[0]), out[0].warnings
    if out:
        assert math.isfinite(out[0].verdict.score)


def test_pid_beyond_int64_is_an_ingest_error_or_a_warning(tmp_path: Path) -> None:
    """Found by ``make fuzz``: a ``pid`` of 2**70 raised OverflowError in the reader's signature table."""
    events = json.loads(json.dumps(EVENTS))
    next(e for e in events if e.get("ph") == "X")["pid"] = 2**70
    rank = sy.write_rank(tmp_path, [])
    (rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").write_text(json.dumps(events), encoding="utf-8")
    only((IngestError,), lambda: analyze(load_dataset(rank)))
