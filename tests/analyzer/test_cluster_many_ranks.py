"""Many ranks at once: parallel reading and the cluster view (slowest ranks, slowest links, wait vs
transfer) on a SYNTHETIC folder generated here in tmp (labelled synthetic: ``tests/analyzer/synthetic.py``
traces plus hand-written ``communication.json`` / ``communication_matrix.json``), where one rank is made
slower and one link has a lower bandwidth; and the real Level1 pair (files in ``../shared``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from analyzer import analyze, parallel
from analyzer.dataset import load_dataset
from tests.analyzer import synthetic as S

N_RANKS = 8
SLOW_RANK = 5
SLOW_LINK = (2, 3)


def _comm_json(rank: int) -> dict[str, Any]:
    """SYNTHETIC communication.json: one allreduce; the slow rank's peers wait for it."""
    wait_ms = 0.1 if rank == SLOW_RANK else 4.0
    info = {"Elapse Time(ms)": 5.0 + wait_ms, "Transit Time(ms)": 1.0, "Wait Time(ms)": wait_ms, "Idle Time(ms)": 4.0}
    return {"step1": {"collective": {"hcom_allReduce__1_0_1@g": {"Communication Time Info": info},
                                     "Total Op Info": {"Communication Time Info": info}}, "p2p": {}}}


def _matrix_json(rank: int) -> dict[str, Any]:
    """SYNTHETIC communication_matrix.json: ring links of 10 GB/s, the SLOW_LINK at 2 GB/s."""
    dst = (rank + 1) % N_RANKS
    time_ms = 5.0 if (rank, dst) == SLOW_LINK else 1.0
    pairs = {f"{rank}-{dst}": {"Transport Type": "HCCS", "Transit Size(MB)": 10.0, "Transit Time(ms)": time_ms},
             f"{rank}-{rank}": {"Transport Type": "LOCAL", "Transit Size(MB)": 1.0, "Transit Time(ms)": 10.0}}
    return {"step1": {"collective": {"allreduce-top1@g": pairs}, "p2p": {}}}


@pytest.fixture(scope="module")
def cluster_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cluster")
    for rank in range(N_RANKS):
        kernel_us = 200.0 if rank == SLOW_RANK else 50.0  # the slow rank: 20 kernels 4x longer per step
        rank_dir = S.write_rank(root, [S.SynthStep(comm_us=500.0, kernel_us=kernel_us)] * 4, rank=rank)
        out = rank_dir / "ASCEND_PROFILER_OUTPUT"
        (out / "communication.json").write_text(json.dumps(_comm_json(rank)))
        (out / "communication_matrix.json").write_text(json.dumps(_matrix_json(rank)))
    return root


def test_synthetic_parallel_read_equals_serial(cluster_dir: Path) -> None:
    par = load_dataset(cluster_dir, workers=2)
    ser = load_dataset(cluster_dir, backend="serial")
    assert [r.rank for r in par.ranks] == list(range(N_RANKS))
    for a, b in zip(par.ranks, ser.ranks, strict=True):
        assert a.events.equals(b.events) and a.warnings == b.warnings and a.base_ts_us == b.base_ts_us


def test_synthetic_cluster_names_slowest_rank_link_and_wait(cluster_dir: Path) -> None:
    c = analyze(load_dataset(cluster_dir, workers=2)).cluster
    assert c is not None
    ranking = c.slowest_ranks()
    assert ranking[0][0] == SLOW_RANK and c.slowest_rank == SLOW_RANK
    assert ranking[0][1] > 1.5 * ranking[1][1]
    links = c.to_dict()["slowest_links"]
    assert links[0]["link"] == f"{SLOW_LINK[0]}->{SLOW_LINK[1]}" and links[0]["bandwidth_gbps"] == pytest.approx(2.0)
    assert all(x["transport"] != "LOCAL" for x in links)
    split = {x["rank"]: x for x in c.comm_split}
    assert split[SLOW_RANK]["wait_us"] == pytest.approx(100.0) and split[0]["wait_us"] == pytest.approx(4000.0)
    assert split[0]["transfer_us"] == pytest.approx(1000.0)  # ms in the file, µs here; Total Op Info skipped


def test_real_level1_pair_cluster_comm(profile_path) -> None:
    c = analyze(load_dataset(profile_path("ascend/msinsight-level1"), workers=2)).cluster
    assert c is not None and c.comm_split and c.slowest_links
    rank0 = next(x for x in c.comm_split if x["rank"] == 0)
    # communication.json rank0 step50: transit + wait + idle = elapse (the README's ~79 ms allreduce included)
    assert rank0["transfer_us"] + rank0["wait_us"] + rank0["idle_us"] == pytest.approx(rank0["elapse_us"], rel=1e-6)


def test_synthetic_dask_backend_reads_the_same(cluster_dir: Path) -> None:
    pytest.importorskip("dask", reason="dask (dev extra) not installed")
    dk = load_dataset(cluster_dir, backend="dask")
    ser = load_dataset(cluster_dir, backend="serial")
    assert [r.rank for r in dk.ranks] == [r.rank for r in ser.ranks]
    assert all(a.events.equals(b.events) for a, b in zip(dk.ranks, ser.ranks, strict=True))


def test_dask_backend_without_dask_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_dask(name: str, *args: Any, **kw: Any) -> Any:
        if name == "dask":
            raise ImportError("no dask")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_dask)
    with pytest.raises(RuntimeError, match="needs Dask"):
        parallel.map_ranks(abs, [1, 2], backend="dask")


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="backend must be one of"):
        parallel.map_ranks(abs, [1], backend="mpi")
