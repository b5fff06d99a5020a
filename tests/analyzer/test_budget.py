"""Event budget (``load_dataset(max_events=...)``, ``ndval analyze --max-events``) on SYNTHETIC traces.

Every trace here is synthetic, generated in tmp by ``tests/analyzer/synthetic.py`` (Ascend layout) or by
:func:`_synthetic_kineto` below; nothing is measured data. Checked: the budget is respected (and filled),
the dropped counts per category are exact, device totals are unchanged when only host events are dropped,
host detail is thinned evenly in time, the streaming buffer stays under its cap, and the result says so
(``dropped_events``, ``totals_source``, a warning).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analyzer import analyze
from analyzer.dataset import TOTALS_DEVICE_SAMPLED_CSV, TOTALS_HOST_SAMPLED, TOTALS_TRACE, load_dataset
from analyzer.ingest import ascend, kineto
from analyzer.ingest import events as ev
from analyzer.ingest.stream import Thinning, estimate_complete_events, read_trace
from ndval.harness.cli import main
from tests.analyzer import synthetic as S

N_STEPS = 120
STEP = S.SynthStep(host_ops=20, enqueues=20, kernels=30, comm_us=200.0, gap_after_us=500.0)
# per step: 20 cpu_op + 20 Enqueue (host) + 30 kernels + 1 allreduce (device) + 1 ProfilerStep
N_HOST = N_STEPS * 40
N_DEVICE = N_STEPS * 31
N_COMPLETE = N_HOST + N_DEVICE + N_STEPS


def _synthetic_rank(root: Path, meta_last: bool = False) -> Path:
    """A synthetic Ascend rank of N_STEPS steps (``meta_last``: process metadata after the events,
    as in the real msinsight export)."""
    events = S.build_events([STEP] * N_STEPS)
    if meta_last:
        events = [e for e in events if e["ph"] != "M"] + [e for e in events if e["ph"] == "M"]
    rank_dir = root / "rank0_ascend_pt"
    out = rank_dir / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "trace_view.json").write_text(json.dumps(events), encoding="utf-8")
    return rank_dir


@pytest.fixture(scope="module")
def synthetic_rank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _synthetic_rank(tmp_path_factory.mktemp("budget"))


@pytest.fixture(scope="module")
def full(synthetic_rank: Path) -> Any:
    return load_dataset(synthetic_rank)


def _counts(events: pd.DataFrame) -> Counter[str]:
    return Counter({str(k): int(v) for k, v in events["category"].astype(str).value_counts().items() if v})


def test_synthetic_full_load_has_every_event_and_no_budget_note(full: Any) -> None:
    rank = full.ranks[0]
    assert len(rank.events) == N_COMPLETE
    assert rank.totals_source == TOTALS_TRACE and rank.dropped_events == (0, "")
    assert not any("event budget" in w for w in full.warnings)


@pytest.mark.parametrize("budget", [9000, 5000, 3000, 500, 0])
def test_synthetic_budget_respected_and_dropped_counts_exact(synthetic_rank: Path, full: Any, budget: int) -> None:
    rank = load_dataset(synthetic_rank, max_events=budget).ranks[0]
    kept = len(rank.events)
    assert kept == min(N_COMPLETE, max(budget, N_STEPS))  # filled exactly; step markers are never dropped
    assert rank.dropped_events.count == N_COMPLETE - kept
    expected = _counts(full.ranks[0].events) - _counts(rank.events)
    assert rank.dropped_events.by_category == dict(expected)
    assert sum(rank.dropped_events.by_category.values()) == rank.dropped_events.count
    assert (rank.events["category"] == ev.STEP).sum() == N_STEPS


def test_synthetic_device_totals_unchanged_when_only_host_dropped(synthetic_rank: Path, full: Any) -> None:
    budget = N_DEVICE + N_STEPS + 1000  # room for all device work and 1000 of the 4800 host events
    ds = load_dataset(synthetic_rank, max_events=budget)
    rank = ds.ranks[0]
    assert rank.totals_source == TOTALS_HOST_SAMPLED and rank.device_complete
    assert set(rank.dropped_events.by_category) <= {ev.HOST_OP, ev.DISPATCH}
    dev_full = ev.device_work(full.ranks[0].events).reset_index(drop=True)
    dev_budget = ev.device_work(rank.events).reset_index(drop=True)
    pd.testing.assert_frame_equal(dev_full.astype(object), dev_budget.astype(object))
    a_full, a_budget = analyze(full), analyze(ds)
    for key in ("device_busy_us", "compute_us", "comm_us", "comm_exposed_us", "step_count", "avg_step_us",
                "device_op_count", "compute_op_count", "comm_op_count", "idle_gap_count", "idle_gap_max_us"):
        value = a_budget.primary.overall.indicators.value(key)
        assert value is not None and value == a_full.primary.overall.indicators.value(key), key
    # host detail was sampled: host counts are lower, and the result says so
    assert a_budget.primary.overall.indicators.value("event_count") == budget


def test_synthetic_budget_warning_and_result_fields(synthetic_rank: Path) -> None:
    ds = load_dataset(synthetic_rank, max_events=4000)
    assert any("event budget: dropped" in w and "Totals source" in w for w in ds.warnings)
    result = analyze(ds).to_dict()
    r = result["ranks"][0]
    assert r["totals_source"] == TOTALS_HOST_SAMPLED
    assert r["dropped_events"]["count"] == N_COMPLETE - 4000
    assert r["dropped_events"]["by_category"] == ds.ranks[0].dropped_events.by_category
    assert any("event budget" in w for w in result["warnings"])


def test_synthetic_device_sampled_uses_step_csv_when_present(tmp_path: Path) -> None:
    rank_dir = _synthetic_rank(tmp_path)
    csv = rank_dir / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
    rows = ["Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free"]
    # synthetic values that partition each 1,831 µs step (the marker's length): a table that disagrees with the
    # markers is not used for totals (analyzer.steptable)
    rows += [f"{n},1131.0,200.0,0.0,200.0,500.0" for n in range(1, N_STEPS + 1)]
    csv.write_text("\n".join(rows) + "\n", encoding="utf-8")
    ds = load_dataset(rank_dir, max_events=1000)
    rank = ds.ranks[0]
    assert rank.totals_source == TOTALS_DEVICE_SAMPLED_CSV and not rank.device_complete
    a = analyze(ds)
    ind = a.primary.overall.indicators
    assert ind.value("compute_us") == pytest.approx(1131.0 * N_STEPS)
    assert "step_trace_time.csv" in a.primary.breakdown_source


def test_synthetic_host_detail_thinned_evenly_in_time(synthetic_rank: Path, full: Any) -> None:
    rank = load_dataset(synthetic_rank, max_events=N_DEVICE + N_STEPS + 1200).ranks[0]
    kept = rank.events[rank.events["category"] == ev.DISPATCH]["ts_us"].to_numpy()
    assert len(kept) == 1200 and not (rank.events["category"] == ev.HOST_OP).any()  # lower tier dropped whole
    ts = full.ranks[0].events["ts_us"].to_numpy()
    per_quarter = np.histogram(kept, bins=np.linspace(ts.min(), ts.max() + 1.0, 5))[0]
    assert per_quarter.min() >= 0.9 * per_quarter.max(), per_quarter


def test_synthetic_streaming_buffer_stays_under_cap(synthetic_rank: Path, full: Any) -> None:
    trace = synthetic_rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    th = Thinning(max_events=1500, tier_fn=ascend.budget_tiers, cap=4500)
    raw = read_trace(trace, thinning=th)
    assert th.compactions >= 4 and th.max_buffered <= th.cap
    assert len(raw) == 1500 and th.n_dropped == N_COMPLETE - 1500  # filled exactly: the cap is 3× the budget
    assert th.kept == {ev.TIER_STEP: N_STEPS, ev.TIER_DEVICE: 1500 - N_STEPS}
    # a cap too tight for the exact fill: still within the budget, the cut tier keeps at least half its room
    tight = Thinning(max_events=2000, tier_fn=ascend.budget_tiers, cap=2500)
    raw = read_trace(trace, thinning=tight)
    assert tight.max_buffered <= tight.cap and (2000 - N_STEPS) / 2 <= len(raw) - N_STEPS <= 2000 - N_STEPS


def test_synthetic_metadata_after_events_still_exact(tmp_path: Path, full: Any) -> None:
    rank_dir = _synthetic_rank(tmp_path, meta_last=True)
    rank = load_dataset(rank_dir, max_events=5000).ranks[0]
    assert len(rank.events) == 5000
    assert rank.dropped_events.by_category == dict(_counts(full.ranks[0].events) - _counts(rank.events))
    assert rank.totals_source == TOTALS_HOST_SAMPLED


def test_synthetic_large_trace_warns_with_estimated_memory(synthetic_rank: Path) -> None:
    trace = synthetic_rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    assert estimate_complete_events(trace) == N_COMPLETE  # the whole file fits in the sample
    ds = load_dataset(synthetic_rank, large_trace_bytes=1000)
    assert any("without an event budget" in w and "GiB of memory estimated" in w for w in ds.warnings)
    ds = load_dataset(synthetic_rank, large_trace_bytes=1000, max_events=10**9)
    assert not any("without an event budget" in w for w in ds.warnings)
    assert not any("without an event budget" in w for w in load_dataset(synthetic_rank).warnings)


def test_bad_budget_is_rejected(synthetic_rank: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="max_events"):
        load_dataset(synthetic_rank, max_events=-1)
    assert main(["analyze", str(synthetic_rank), "--max-events", "-5"]) == 2
    assert "max_events" in capsys.readouterr().err


def test_synthetic_cli_max_events(synthetic_rank: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "a.json"
    assert main(["analyze", str(synthetic_rank), "--max-events", "4500", "--json", str(out)]) == 0
    r = json.loads(out.read_text())["ranks"][0]
    assert r["dropped_events"]["count"] == N_COMPLETE - 4500 and r["totals_source"] == TOTALS_HOST_SAMPLED
    assert "event budget" in capsys.readouterr().err  # warnings are diagnostics: stderr


# ------------------------------------------------------------------------------------ Kineto (synthetic)
def _synthetic_kineto(path: Path, steps: int = 40, kernels: int = 25) -> int:
    """A synthetic Kineto trace: per step a ProfilerStep, ``kernels`` × (cpu_op, cudaLaunchKernel with a
    correlation id, GPU kernel) and one NCCL kernel. Returns the number of complete events."""
    evs: list[dict[str, Any]] = []
    t, corr = 0, 0
    for n in range(steps):
        start = t
        for k in range(kernels):
            corr += 1
            evs.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{k % 4}", "pid": 1, "tid": 1, "ts": t, "dur": 8})
            evs.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 1,
                        "dur": 3, "args": {"correlation": corr}})
            evs.append({"ph": "X", "cat": "kernel", "name": f"gemm_{k % 3}", "pid": 0, "tid": 7, "ts": t + 5,
                        "dur": 20, "args": {"correlation": corr}})
            t += 25
        evs.append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0,
                    "tid": 21, "ts": t, "dur": 100, "args": {"In msg nelems": 1024, "dtype": "Float"}})
        t += 150
        evs.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1, "tid": 1,
                    "ts": start, "dur": t - start})
    path.write_text(json.dumps({"distributedInfo": {"rank": 0, "world_size": 2}, "traceEvents": evs}),
                    encoding="utf-8")
    return len(evs)


def test_synthetic_kineto_budget_keeps_device_and_steps(tmp_path: Path) -> None:
    trace = tmp_path / "synthetic_kineto.json"
    total = _synthetic_kineto(trace)
    full = load_dataset(trace).ranks[0]
    assert len(full.events) == total
    n_device = int((full.events["side"] == ev.SIDE_DEVICE).sum())
    rank = load_dataset(trace, max_events=n_device + 40 + 300).ranks[0]
    assert len(rank.events) == n_device + 40 + 300
    assert rank.totals_source == TOTALS_HOST_SAMPLED
    assert rank.dropped_events.by_category == dict(_counts(full.events) - _counts(rank.events))
    assert set(rank.dropped_events.by_category) == {ev.HOST_OP, ev.DISPATCH}
    dev_full = full.events[full.events["side"] == ev.SIDE_DEVICE].reset_index(drop=True)
    dev_budget = rank.events[rank.events["side"] == ev.SIDE_DEVICE].reset_index(drop=True)
    pd.testing.assert_frame_equal(dev_full.astype(object), dev_budget.astype(object))  # incl. step by launch


def test_kineto_budget_tiers_follow_categories(tmp_path: Path) -> None:
    trace = tmp_path / "synthetic_kineto.json"
    _synthetic_kineto(trace, steps=2, kernels=2)
    raw = read_trace(trace)
    sigs = kineto.classify_signatures(raw)
    tiers = dict(zip(sigs["category"].astype(str), kineto.budget_tiers(raw), strict=True))
    assert tiers[ev.STEP] == ev.TIER_STEP and tiers[ev.COMPUTE] == ev.TIER_DEVICE
    assert tiers[ev.COMMUNICATION] == ev.TIER_DEVICE and tiers[ev.DISPATCH] == ev.TIER_DISPATCH
    assert tiers[ev.HOST_OP] == ev.TIER_HOST_OP



def _write_synthetic_kineto_text(path: Path, steps: int, kernels: int = 300) -> None:
    """SYNTHETIC: the events of :func:`_synthetic_kineto` written as compact text directly (fast
    enough for hundreds of thousands of events)."""
    parts, t, corr = [], 0, 0
    for n in range(steps):
        start = t
        for k in range(kernels):
            corr += 1
            parts.append(f'{{"ph":"X","cat":"cpu_op","name":"aten::op{k % 4}","pid":1,"tid":1,"ts":{t},"dur":8}},'
                         f'{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{t + 1},'
                         f'"dur":3,"args":{{"correlation":{corr}}}}},{{"ph":"X","cat":"kernel","name":"gemm_{k % 3}",'
                         f'"pid":0,"tid":7,"ts":{t + 5},"dur":20,"args":{{"correlation":{corr}}}}}')
            t += 25
        parts.append(f'{{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL","pid":0,"tid":21,'
                     f'"ts":{t},"dur":100,"args":{{"In msg nelems":1024,"dtype":"Float"}}}}')
        t += 150
        parts.append(f'{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{n}","pid":1,"tid":1,"ts":{start},'
                     f'"dur":{t - start}}}')
    path.write_text('{"distributedInfo":{"rank":0,"world_size":2},"traceEvents":[' + ",".join(parts) + "]}",
                    encoding="utf-8")


_PEAK_RSS_GROWTH = """
import json, sys
from pathlib import Path
from analyzer.ingest import chunks
chunks.CHUNK_BYTES = 1 << 20
from analyzer.dataset import load_dataset

def peak_kib():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))

budget = None if sys.argv[3] == "none" else int(sys.argv[3])
load_dataset(Path(sys.argv[1]), max_events=budget)  # warm-up: imports and first allocations
before = peak_kib()
rows = len(load_dataset(Path(sys.argv[2]), max_events=budget).ranks[0].events)
print(json.dumps({"growth_kib": peak_kib() - before, "rows": rows}))
"""


def _peak_rss_growth_mib(warm: Path, trace: Path, budget: int | None) -> tuple[float, int]:
    """(peak RSS growth in MiB, rows kept) of ``load_dataset(trace, max_events=budget)`` in a fresh
    process, after a warm-up load. Peak RSS is the child's ``VmHWM`` (/proc/self/status, KiB), not
    ``ru_maxrss``: Linux carries ``ru_maxrss`` across fork + exec, so a child of a big process (pytest)
    would start at its parent's RSS and show no growth."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", _PEAK_RSS_GROWTH, str(warm), str(trace), str(budget or "none")],
                         check=True, capture_output=True, text=True, cwd=root)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    return res["growth_kib"] / 1024, int(res["rows"])


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="peak RSS read from /proc (Linux)")
def test_synthetic_kineto_budget_peak_memory_does_not_grow_with_the_trace(tmp_path: Path) -> None:
    """Peak RSS under ``max_events`` is bounded by the budget, not the trace: doubling a SYNTHETIC
    Kineto trace (144k -> 289k events, 14 -> 29 MiB) adds < 4 MiB of peak RSS growth under a 2,000-event
    budget (measured: 13.8 and 13.5 MiB), while without a budget the same doubling adds the rows
    (measured: 20.7 -> 33.1 MiB; the check below needs ≥ 8 MiB more than under the budget, so it can
    see row storage). 1 MiB chunks (set in the child) keep the decode buffers small beside the rows."""
    warm, mid, big = tmp_path / "warm.json", tmp_path / "mid.json", tmp_path / "big.json"
    _write_synthetic_kineto_text(warm, 4)
    _write_synthetic_kineto_text(mid, 160)
    _write_synthetic_kineto_text(big, 320)
    mid_mib, mid_rows = _peak_rss_growth_mib(warm, mid, 2000)
    big_mib, big_rows = _peak_rss_growth_mib(warm, big, 2000)
    free_mib, free_rows = _peak_rss_growth_mib(warm, big, None)
    assert mid_rows == big_rows == 2000 and free_rows == 320 * 902
    assert big_mib <= mid_mib + 4.0, (mid_mib, big_mib)
    assert free_mib >= big_mib + 8.0, (big_mib, free_mib)


# ------------------------------------------------------------------------------- real sample (skips if absent)
def test_real_level1_budget_drops_host_only_and_keeps_device_totals(profile_path: Any) -> None:
    """Real msinsight Level1 rank 0: a budget that leaves room for every device event and step marker
    plus 500 host events changes no device total; the dropped counts match the full table's."""
    path = profile_path("ascend/msinsight-level1/rank0_ascend_pt")
    full_ds = load_dataset(path)
    full_events = full_ds.ranks[0].events
    keep_first = int(((full_events["side"] == ev.SIDE_DEVICE) | (full_events["category"] == ev.STEP)).sum())
    ds = load_dataset(path, max_events=keep_first + 500)
    rank = ds.ranks[0]
    assert len(rank.events) == keep_first + 500 and rank.totals_source == TOTALS_HOST_SAMPLED
    assert rank.dropped_events.by_category == dict(_counts(full_events) - _counts(rank.events))
    a_full, a_budget = analyze(full_ds), analyze(ds)
    for key in ("device_busy_us", "compute_us", "comm_us", "comm_exposed_us", "step_count", "device_op_count"):
        assert a_budget.primary.overall.indicators.value(key) == a_full.primary.overall.indicators.value(key), key
    assert a_budget.verdict.kind == a_full.verdict.kind


def test_synthetic_truncated_trace_with_budget_reports_both(tmp_path: Path) -> None:
    """A synthetic trace cut mid-event, read under a budget: truncation stays the totals source, the
    reason names both causes, and the budget's drops are counted."""
    events = S.build_events([STEP] * 10)
    text = json.dumps(events)
    trace = tmp_path / "trace_view.json"
    trace.write_text(text[: int(len(text) * 0.8)], encoding="utf-8")
    rank = load_dataset(trace, max_events=200).ranks[0]
    assert rank.totals_source == "trace (truncated)" and len(rank.events) == 200
    assert "truncated" in rank.dropped_events.reason and "event budget" in rank.dropped_events.reason
    assert rank.dropped_events.count == sum(rank.dropped_events.by_category.values()) > 0
