"""Implausible traces never get a silent verdict: set aside with a warning naming the count, or refused.

The mutated traces are SYNTHETIC (``tests.analyzer.synthetic``: a communication-bound capture, 6 steps)
except the last test, which mutates a copy of the real Kineto control trace in a tmp dir.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analyzer.analysis import analyze
from analyzer.dataset import load_dataset
from analyzer.ingest.errors import IngestError
from ndval.harness.commands import analyze as cli_analyze
from tests.analyzer import synthetic as sy

Mutation = Callable[[list[dict[str, Any]]], None]


def _complete(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e.get("ph") == "X"]


def _every_ts_huge(events: list[dict[str, Any]]) -> None:
    for e in _complete(events):
        e["ts"] = 1e300


def _one_dur_huge(events: list[dict[str, Any]]) -> None:
    _complete(events)[5]["dur"] = 1e300


def _no_dur(events: list[dict[str, Any]]) -> None:
    for e in _complete(events):
        e.pop("dur", None)


def _step_far_away(events: list[dict[str, Any]]) -> None:
    next(e for e in events if e.get("name") == "ProfilerStep#3")["ts"] = 1e18


def _tenth_huge(events: list[dict[str, Any]]) -> None:
    rnd = random.Random(0)
    for e in _complete(events):
        if rnd.random() < 0.1:
            e["ts"] = 1e300


def _most_huge(events: list[dict[str, Any]]) -> None:
    rnd = random.Random(1)
    for e in _complete(events):
        if rnd.random() < 0.6:
            e["ts"] = 1e300


def _every_dur_huge(events: list[dict[str, Any]]) -> None:
    for e in _complete(events):
        e["dur"] = 1e300


def _steps_swapped(events: list[dict[str, Any]]) -> None:
    a = next(e for e in events if e.get("name") == "ProfilerStep#2")
    b = next(e for e in events if e.get("name") == "ProfilerStep#4")
    a["name"], b["name"] = b["name"], a["name"]


def _rank(tmp_path: Path, mutate: Mutation) -> Path:
    rank_dir = sy.write_rank(tmp_path, sy.comm_bound_steps(6))
    trace = rank_dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    events = json.loads(trace.read_text(encoding="utf-8"))
    mutate(events)
    trace.write_text(json.dumps(events), encoding="utf-8")
    return rank_dir


def _set_aside_warning(analysis: Any) -> tuple[int, str]:
    """(events set aside, the warning naming that count): the reader's "bad ts/dur" drop (a ts beyond the
    physical range never becomes a row) or the analysis' plausibility screen."""
    count = analysis.primary.dropped_events["count"]
    hits = [w for w in analysis.warnings if ("implausible trace" in w or "bad ts/dur" in w)
            and (f"{count} " in w or f"{count:,} " in w)]
    assert hits, (count, analysis.warnings)
    return count, hits[0]


@pytest.mark.parametrize(("mutate", "n_aside", "rule"), [
    (_one_dur_huge, 1, "duration outside the physical range"),
    (_step_far_away, 1, ""),
    (_tenth_huge, None, ""),
    (_steps_swapped, 2, "step marker(s) out of order"),
], ids=["dur-1e300", "ProfilerStep-at-1e18", "10pct-ts-1e300", "steps-out-of-order"])
def test_implausible_events_are_set_aside_with_a_warning(tmp_path: Path, mutate: Mutation, n_aside: int | None,
                                                         rule: str) -> None:
    analysis = analyze(load_dataset(_rank(tmp_path, mutate)))
    count, warning = _set_aside_warning(analysis)
    assert rule in warning and "trace_view.json" in warning
    assert (n_aside is None and count > 10) or count == n_aside
    assert analysis.verdict.kind == analyze(load_dataset(_rank(tmp_path / "clean", lambda e: None))).verdict.kind


@pytest.mark.parametrize(("mutate", "rule"), [
    (_every_ts_huge, ""),
    (_every_dur_huge, "duration outside the physical range"),
    (_no_dur, "every dur missing or 0"),
], ids=["every-ts-1e300", "every-dur-1e300", "every-dur-missing"])
def test_nothing_plausible_means_no_verdict(tmp_path: Path, mutate: Mutation, rule: str) -> None:
    with pytest.raises(IngestError) as info:
        analyze(load_dataset(_rank(tmp_path, mutate)))
    assert rule in info.value.rule and "trace_view.json" in str(info.value)


def test_mostly_implausible_trace_gets_no_verdict_said_so(tmp_path: Path) -> None:
    """60 % of the events at ts 1e300: the plausible share (< minPlausibleEventPct 50 %) gets no verdict, and the
    warning and the verdict's summary say why (before: a verdict on the 40 % left, with a warning only)."""
    analysis = analyze(load_dataset(_rank(tmp_path, _most_huge)))
    assert analysis.verdict.kind == "none" and analysis.verdict.summary.startswith("no verdict: only ")
    assert all(s.verdict.kind == "none" for s in analysis.primary.scopes.values())
    gate = [w for w in analysis.warnings if "below minPlausibleEventPct 50 %" in w]
    assert gate and "trace_view.json" in gate[0]
    assert not [w for w in analysis.warnings if "no scope reaches the trigger score" in w]  # not the usual "none"


def test_the_documented_threshold_decides(tmp_path: Path) -> None:
    """The same 10 %-implausible trace: a verdict at the default (90 % ≥ 50 %), none when 95 % is required."""
    from analyzer.plausibility import no_verdict_reason, plausible_pct
    from analyzer.thresholds import default_thresholds

    assert default_thresholds().v("minPlausibleEventPct") == 50
    rank = _rank(tmp_path, _tenth_huge)
    assert analyze(load_dataset(rank)).verdict.kind != "none"
    strict = analyze(load_dataset(rank), thresholds={"minPlausibleEventPct": 95})
    assert strict.verdict.kind == "none" and "below minPlausibleEventPct 95 %" in strict.verdict.summary
    assert plausible_pct(90, 95, 5) == 90.0 and plausible_pct(0, 0, 0) == 100.0
    assert no_verdict_reason(50, 100, 0, 50) is None and no_verdict_reason(49, 100, 0, 50) is not None


@pytest.mark.parametrize(("mutate", "code", "verdict"), [
    (_every_ts_huge, 2, None), (_every_dur_huge, 2, None), (_no_dur, 2, None),
    (_step_far_away, 0, "clean"), (_tenth_huge, 0, "clean"), (_one_dur_huge, 0, "clean"), (_most_huge, 0, "none"),
], ids=["ts-1e300", "dur-1e300", "dur-missing", "ProfilerStep-1e18", "10pct-ts-1e300", "one-dur-1e300", "60pct-ts-1e300"])
def test_cli_never_gives_a_silent_verdict(tmp_path: Path, mutate: Mutation, code: int, verdict: str | None,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Each of the issue's silent-verdict examples through ``ndval analyze``: refused (exit 2, the file named), or
    exit 0 with a warning on stderr and a verdict equal to the clean trace's, or no verdict with the reason."""
    parser = argparse.ArgumentParser()
    cli_analyze.add_arguments(parser)
    out = tmp_path / "a.json"
    assert cli_analyze.run(parser.parse_args([str(_rank(tmp_path / "clean", lambda e: None)), "--json", str(out)])) == 0
    clean = json.loads(out.read_text())["ranks"][0]["scopes"]["overall"]["verdict"]["kind"]
    capsys.readouterr()
    assert cli_analyze.run(parser.parse_args([str(_rank(tmp_path / "bad", mutate)), "--json", str(out)])) == code
    err = capsys.readouterr().err
    assert "trace_view.json" in err
    if verdict is None:
        assert "error" in err
        return
    assert "warning:" in err and ("implausible trace" in err or "bad ts/dur" in err)
    got = json.loads(out.read_text())["ranks"][0]["scopes"]["overall"]["verdict"]
    assert got["kind"] == (clean if verdict == "clean" else "none")
    if verdict == "none":
        assert got["summary"].startswith("no verdict") and "no verdict" in err


def test_clean_trace_sets_nothing_aside(tmp_path: Path) -> None:
    analysis = analyze(load_dataset(_rank(tmp_path, lambda e: None)))
    assert not [w for w in analysis.warnings if "implausible" in w]
    assert "implausible" not in analysis.primary.dropped_events["by_category"]


@pytest.mark.parametrize("text", ["{", '{"traceEvents": []}', '{"traceEvents": [', '{"traceEvents": [{"ph": "M"}'])
def test_same_input_shape_same_exit_code(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A file holding just ``{`` exited 0 with a verdict while an empty ``traceEvents`` exited 2."""
    path = tmp_path / "trace.json"
    path.write_text(text, encoding="utf-8")
    parser = argparse.ArgumentParser()
    cli_analyze.add_arguments(parser)
    assert cli_analyze.run(parser.parse_args([str(path)])) == cli_analyze.EXIT_BAD_INPUT
    assert str(path) in capsys.readouterr().err


def test_screen_window_and_step_order_rules() -> None:
    """Unit check of the rules on a hand-built SYNTHETIC table (µs)."""
    from analyzer.plausibility import screen_events

    n = 200
    ts = np.linspace(0.0, 1e5, n)
    ts[7] = 5e12  # start far outside the capture window (but inside the physical range)
    names = [f"k{i}" for i in range(n)]
    cats = ["compute"] * n
    for i, step in ((10, 1), (20, 3), (30, 2), (40, 4)):
        names[i], cats[i] = f"ProfilerStep#{step}", "step"
    events = pd.DataFrame({"name": names, "category": cats, "ts_us": ts, "dur_us": np.full(n, 10.0),
                           "step": np.where(np.arange(n) > 30, 2, 1)})
    screen = screen_events(events, 1_700_000_000_000_000)
    assert screen.set_aside == {"start outside the capture window": 1, "step marker(s) out of order": 1}
    assert len(screen.kept) == n - 2 and (screen.kept["step"] != 3).all()


def test_real_kineto_trace_with_a_tenth_of_ts_at_1e300_is_warned(profile_path, tmp_path: Path) -> None:
    """The real control trace read "host dispatch 96.8" with no warning once 10 % of ts were 1e300."""
    doc = json.loads(gzip.decompress(profile_path("kineto/hta-trace-diff/control.json.gz").read_bytes()))
    _tenth_huge(doc["traceEvents"])
    path = tmp_path / "control.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    analysis = analyze(load_dataset(path))
    count, _ = _set_aside_warning(analysis)
    assert count > 5000  # ~10 % of the 74,937 complete events


def test_a_collective_hung_for_seconds_is_kept_and_named(tmp_path: Path) -> None:
    """SYNTHETIC: five 8 ms communication-bound steps, then one whose all-reduce blocks 20 s on a late peer (a
    hang the watchdog has not yet ended: under HCCL_EXEC_TIMEOUT's 1836 s). The capture's starts span 48 ms, so
    the event ends far past them; it is real time, the verdict must see it (before: set aside as an implausible
    duration, and the hang vanished from the analysis)."""
    from dataclasses import replace

    steps = sy.comm_bound_steps(6)
    steps[-1] = replace(steps[-1], comm_us=20e6)
    analysis = analyze(load_dataset(sy.write_rank(tmp_path, steps)))
    assert not [w for w in analysis.warnings if "implausible trace" in w], analysis.warnings
    assert analysis.primary.dropped_events["count"] == 0
    ov = analysis.primary.overall
    assert ov.verdict.kind == "communication"
    assert ov.indicators.value("comm_us") >= 20e6


def test_a_duration_past_any_watchdog_is_still_set_aside(tmp_path: Path) -> None:
    """SYNTHETIC: the clean capture with one event's dur set to 2 h (past the 1836 s allowance): set aside, named,
    the verdict unchanged."""
    def two_hours(events: list[dict[str, Any]]) -> None:
        _complete(events)[5]["dur"] = 7200e6

    analysis = analyze(load_dataset(_rank(tmp_path, two_hours)))
    count, warning = _set_aside_warning(analysis)
    assert count == 1 and "duration outside the physical range" in warning
    assert analysis.verdict.kind == analyze(load_dataset(_rank(tmp_path / "clean", lambda e: None))).verdict.kind
