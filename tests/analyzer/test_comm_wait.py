"""Communication that waits (issue 28): the wait/synchronisation-bound sub-type on the shared Level1 export and
on SYNTHETIC Kineto traces (near link bandwidth vs waiting; arrival skew across two ranks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer import analyze
from analyzer.comm_wait import transfer_us
from analyzer.dataset import load_dataset
from tests.analyzer.synthetic_kineto import Kernel, collective, write

GEMM = Kernel(100.0, 1000.0)


def test_level1_is_wait_bound_with_wait_and_idle_named(profile_path) -> None:
    ov = analyze(load_dataset(profile_path("ascend/msinsight-level1/rank0_ascend_pt"))).primary.overall
    assert ov.verdict.kind == "communication" and ov.verdict.subtype == "wait-bound"
    rows = {e.metric: e for e in ov.verdict.candidate("communication").evidence}
    assert rows["comm_wait_pct"].passed and rows["comm_wait_pct"].value == pytest.approx(96.52, abs=0.01)
    assert "wait 5.941 ms, idle 96.368 ms" in rows["comm_wait_pct"].basis
    assert rows["comm_peer_wait_us"].value == pytest.approx(5940.6, abs=0.1)
    assert rows["comm_idle_us"].value == pytest.approx(96367.9, abs=0.1)
    ids = {h.id for h in ov.hypotheses}
    assert {"comm.wait-for-late-rank", "comm.load-imbalance"} <= ids
    assert "comm.find-late-rank" in {r.id for r in ov.recommendations}


def _steps(nelems: int, dur_us: float, n: int = 6) -> list[list[Kernel]]:
    return [[GEMM, collective(1200.0, dur_us, nelems=nelems)] for _ in range(n)]


def test_near_link_bandwidth_keeps_bandwidth_bound(tmp_path: Path) -> None:
    """SYNTHETIC: 256 MiB all-reduces taking 1.06 x their transfer time at 300 GB/s."""
    nelems = 64 * 2**20
    need = transfer_us("allreduce", 4.0 * nelems, 300.0)
    ov = analyze(load_dataset(write(tmp_path / "bw.json.gz", _steps(nelems, 1.06 * need), world=2))).primary.overall
    assert ov.verdict.kind == "communication" and ov.verdict.subtype == "bandwidth-bound"
    assert ov.indicators.value("comm_wait_pct") == pytest.approx(100 * 0.06 / 1.06, abs=0.01)


def test_small_message_long_collective_is_wait_bound(tmp_path: Path) -> None:
    """SYNTHETIC: 4 MiB all-reduces (28 µs of transfer at 300 GB/s) lasting 1,900 µs."""
    ov = analyze(load_dataset(write(tmp_path / "wait.json.gz", _steps(2**20, 1900.0), world=2))).primary.overall
    need = transfer_us("allreduce", 4.0 * 2**20, 300.0)
    assert ov.verdict.kind == "communication" and ov.verdict.subtype == "wait-bound"
    assert ov.indicators.value("comm_wait_pct") == pytest.approx(100 * (1900 - need) / 1900, abs=0.01)


def test_arrival_skew_names_the_late_rank(tmp_path: Path) -> None:
    """SYNTHETIC pair: rank 1 reaches every all-reduce 600 µs after rank 0, which waits for it."""
    early = [[GEMM, collective(1200.0, 1000.0, nelems=2**20)] for _ in range(6)]
    late = [[Kernel(100.0, 1600.0), collective(1800.0, 400.0, nelems=2**20)] for _ in range(6)]
    write(tmp_path / "run" / "rank0.json.gz", early, rank=0, world=2)
    write(tmp_path / "run" / "rank1.json.gz", late, rank=1, world=2)
    a = analyze(load_dataset(tmp_path / "run", workers=1, backend="serial"))
    skew = a.to_dict()["cluster"]["arrival_skew"]
    assert skew["late_rank"] == 1 and skew["matched_collectives"] == 6
    assert skew["skew_median_us"] == pytest.approx(600.0) and skew["wait_us"] == {"0": 3600.0, "1": 0.0}
    r0 = a.ranks[0].overall.indicators
    assert r0.value("comm_wait_pct") == pytest.approx(60.0)
    assert "arrival skew" in r0["comm_wait_pct"].source
