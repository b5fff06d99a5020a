"""One bad rank no longer ends a multi-rank analysis (issue: two good ranks plus one with an empty output folder,
a 10-byte trace or a truncated DB gave exit 2 and no result for the good ranks), and ``--workers`` is capped at the
ranks and CPUs (issue: ``--workers 300`` on a 2-rank folder forked ~298 processes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyzer import parallel
from analyzer.dataset import load_dataset
from ndval.harness.cli import main
from tests.analyzer.synthetic import prefill_decode_steps, write_rank


def _folder(tmp_path: Path, bad: str) -> Path:
    root = tmp_path / "run"
    for rank in (0, 1):
        write_rank(root, prefill_decode_steps(), rank=rank)
    out = root / "rank2_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    if bad == "10-byte trace":
        (out / "trace_view.json").write_text('[{"ph": "X')
    elif bad == "truncated db":
        (out / "ascend_pytorch_profiler_2.db").write_bytes(b"SQLite format 3\x00" + b"\0" * 84)
    return root


@pytest.mark.parametrize("bad", ["empty output folder", "10-byte trace", "truncated db"])
def test_one_unreadable_rank_is_named_and_the_others_judged(tmp_path: Path, bad: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    root = _folder(tmp_path, bad)
    ds = load_dataset(root, workers=1)
    assert sorted(r.rank for r in ds.ranks) == [0, 1]
    assert len(ds.unreadable) == 1 and "rank2_ascend_pt" in ds.unreadable[0]
    assert "1 of 3 ranks unreadable" in ds.warnings[0]
    out_json = tmp_path / "a.json"
    code = main(["analyze", str(root), "--json", str(out_json), "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 1 and "judged 2 of 3 ranks" in err, err
    cluster = json.loads(out_json.read_text())["cluster"]
    assert cluster["ranks_judged"] == 2 and len(cluster["ranks_unreadable"]) == 1


def test_every_rank_unreadable_is_still_the_first_error(tmp_path: Path) -> None:
    from analyzer.ingest.errors import IngestError

    root = tmp_path / "run"
    for rank in (0, 1):
        (root / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    with pytest.raises(IngestError):
        load_dataset(root, workers=1)


def test_workers_capped_at_ranks_and_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def fake_pool(fn, items, workers, bar, keep_going=()):  # type: ignore[no-untyped-def]
        seen.append(workers)
        return [fn(x) for x in items]

    monkeypatch.setattr(parallel, "_pool", fake_pool)
    assert parallel.map_ranks(abs, [-1, -2], workers=100_000) == [1, 2]
    assert seen and seen[0] <= 2


def test_a_rank_without_its_trace_is_judged_from_its_tables(profile_path, tmp_path: Path) -> None:
    """The real 2-rank level1 run with rank 1's trace_view.json removed: rank 1 still has step_trace_time.csv,
    kernel_details.csv and communication.json, and is judged from them as a lone rank would be (before: set aside
    as "no events read"). Its steps come from the table, rank 0's from its ProfilerStep markers, so the step-time
    spread between them (155,986 vs 131,913 µs) is shown but not flagged as a slow rank."""
    import shutil

    from analyzer.analysis import analyze

    root = tmp_path / "l1"
    shutil.copytree(profile_path("ascend/msinsight-level1"), root)
    (root / "rank1_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").unlink()
    ds = load_dataset(root, workers=1)
    assert sorted(r.rank for r in ds.ranks) == [0, 1] and not ds.unreadable
    a = analyze(ds)
    assert [r.overall.verdict.kind for r in a.ranks] == ["communication", "communication"]
    cl = a.to_dict()["cluster"]
    step = next(s for s in cl["spreads"] if s["metric"] == "step_us")
    assert step["spread_pct"] > 5 and step["flagged"] is False
    assert "steps from different sources" in cl["source"]
    # README: step_trace_time.csv of rank 1, Communication(Not Overlapped) 96359.047 µs
    assert cl["per_rank"]["1"]["comm_exposed_us"] == pytest.approx(96359.047, abs=1e-3)


def test_same_source_ranks_keep_their_step_spread_flag(profile_path) -> None:
    from analyzer.analysis import analyze

    cl = analyze(load_dataset(profile_path("ascend/msinsight-level1"), workers=1)).to_dict()["cluster"]
    assert "different sources" not in cl["source"]
