"""Strategy search: space parsing, uneven splits, ranking, Pareto front, partition merging, Dask, CLI."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import estimator
from estimator import search
from estimator.search.evaluate import Candidate, Rejection
from estimator.search.space import account_splits, first_last_splits
from ndval.harness.cli import main as ndval

ROOT = Path(__file__).resolve().parents[2]
MINI = ROOT / "estimator/examples/deepseek-v3-mini-A.yaml"
DSV3 = ROOT / "estimator/examples/deepseek-v3-671b-h100.yaml"


@pytest.fixture(scope="module")
def mini() -> estimator.EstimatorConfig:
    return estimator.load_config(MINI)


def test_parse_space_types_values_and_resolves_aliases() -> None:
    space = search.parse_space(["tp=1,2,4", "recompute.mode=none,full", "train.micro_batch_size=1, 2,2"])
    assert space == {"parallel.tp": (1, 2, 4), "recompute.mode": ("none", "full"),
                     "train.micro_batch_size": (1, 2)}


@pytest.mark.parametrize(("spec", "words"), [
    (["parallel.tpp=1,2"], "unknown dimension (did you mean 'parallel.tp'?)"),
    (["parallel.tp"], "expected DIMENSION=V1,V2"),
    (["parallel.tp="], "has no values"),
    (["tp=1", "parallel.tp=2"], "given twice"),
    (["parallel.dp=2,4"], "derived by the search"),
    (["pipeline.split=even,zigzag"], "unknown split kind"),
    ([], "the space is empty"),
])
def test_malformed_space_is_named(spec: list[str], words: str) -> None:
    with pytest.raises(search.SpaceError) as err:
        search.parse_space(spec)
    assert words in str(err.value)


def test_first_last_splits_of_61_layers_by_hand() -> None:
    # pp 8: middle ranks hold k ∈ {7, 8}; k=7 leaves 61−42 = 19 -> 10/9 and 9/10, k=8 leaves 13 -> 7/6, 6/7
    labels = [s.label for s in first_last_splits(61, 8, 1)]
    assert labels == ["first-last 10/7/9", "first-last 9/7/10", "first-last 7/8/6", "first-last 6/8/7"]
    # vpp 2: every per-rank count must be even; k=8 leaves 13 (odd halves), k=7 is odd -> none
    assert first_last_splits(61, 8, 2) == []
    # pp 2: no middle, first + last = 61
    assert [s.label for s in first_last_splits(61, 2, 1)] == ["first-last 31/30", "first-last 30/31"]
    assert first_last_splits(61, 1, 1) == []


def test_account_splits_by_hand() -> None:
    # Llama 3.1 405B: 126 layers + E + L = 128 slots over pp 8 × vpp 8 = 64 chunks, 2 each
    assert [s.label for s in account_splits(126, 8, 8)] == ["account E+L"]
    assert account_splits(61, 8, 1) == []  # 63, 62, 62 slots: none divides by 8
    assert [s.label for s in account_splits(61, 3, 1)] == ["account E+L"]  # 63 = 3·21


def test_layouts_derive_dp_and_name_indivisible_devices(mini: estimator.EstimatorConfig) -> None:
    points = list(search.layouts(mini, 48, {"parallel.tp": (1, 2, 4), "parallel.pp": (1, 32)}))
    skipped = [p for p in points if isinstance(p, search.SkippedLayout)]
    assert {dict(p.overrides)["parallel.pp"] for p in skipped} == {32}
    assert "not divisible by tp·pp·cp = 32" in skipped[0].message
    kept = [p.as_dict() for p in points if isinstance(p, search.Layout)]
    assert {(d["parallel.tp"], d["parallel.dp"]) for d in kept} == {(1, 48), (2, 24), (4, 12)}


def test_vpp_runs_interleaved_when_schedule_not_swept(mini: estimator.EstimatorConfig) -> None:
    points = [p.as_dict() for p in search.layouts(mini, 32, {"parallel.pp": (2,), "parallel.vpp": (1, 2)})
              if isinstance(p, search.Layout)]
    schedules = {d["parallel.vpp"]: d.get("parallel.schedule", mini.parallel.schedule) for d in points}
    assert schedules[2] == "interleaved" and schedules[1] != "interleaved"


def test_search_ranks_filters_and_keeps_reasons(mini: estimator.EstimatorConfig) -> None:
    space = {"parallel.tp": (1, 2), "parallel.pp": (2,), "parallel.ep": (2, 4, 8, 3), search.SPLIT_DIM: ("even",)}
    res = search.search(mini, 32, space, top_k=None)
    assert (res.partial.evaluated, res.partial.feasible) == (8, 6)
    assert [c.total_s for c in res.ranked] == sorted(c.total_s for c in res.ranked)
    assert res.rejected == {"invalid parallel.ep": 2}  # ep = 3 divides neither 32 experts nor dp
    by_mem = search.search(mini, 32, space, objective="memory", top_k=None)
    assert [c.peak_mb for c in by_mem.ranked] == sorted(c.peak_mb for c in by_mem.ranked)
    tiny = search.search(mini, 32, {**space, "parallel.ep": (2,)}, memory_margin_mb=1e9)
    assert not tiny.ranked and tiny.rejected == {"OOM": 2}


def test_each_ranked_layout_equals_a_direct_estimate(mini: estimator.EstimatorConfig) -> None:
    res = search.search(mini, 32, {"parallel.tp": (1, 2), "parallel.pp": (1, 2), "parallel.ep": (4, 8)}, top_k=3)
    base = search.search_base(mini, {"parallel.pp": ()})
    for c in res.ranked:
        cfg = estimator.load_config(base, c.overrides)
        assert c.peak_mb == estimator.estimate_memory(cfg).peak_mb
        assert c.total_s == estimator.estimate_perf(cfg).total
        assert cfg.train.global_batch_size == mini.train.micro_batch_size * mini.parallel.dp * mini.num_micro_batches


def _synthetic(n: int, seed: int) -> list[Candidate | Rejection]:
    """Synthetic outcomes (random times and memories, a few exact ties, some rejections)."""
    rng = random.Random(seed)
    out: list[Candidate | Rejection] = []
    for i in range(n):
        if rng.random() < 0.2:
            out.append(Rejection({"i": i}, rng.choice(["OOM", "invalid parallel.ep"]), f"why {i}"))
        else:
            t, m = rng.choice([1.0, 2.0]) if i % 17 == 0 else rng.random(), rng.randint(1, 50) * 1.0
            out.append(Candidate({"i": i}, m, t, 1 / t, 0.5))
    return out


def test_pareto_front_by_hand() -> None:
    pts = [(1.0, 9.0), (2.0, 5.0), (2.0, 7.0), (3.0, 5.0), (4.0, 1.0), (0.5, 10.0)]
    cands = [Candidate({"i": i}, mb, t, 0, 0) for i, (t, mb) in enumerate(pts)]
    assert [(c.total_s, c.peak_mb) for c in search.pareto_front(cands)] == [
        (0.5, 10.0), (1.0, 9.0), (2.0, 5.0), (4.0, 1.0)]


@pytest.mark.parametrize("objective", sorted(search.OBJECTIVES))
def test_partitions_merge_to_the_single_pass_result(objective: str) -> None:
    outcomes = _synthetic(2000, 7)
    whole = search.Partial(objective=objective, top_k=25)
    whole.add(outcomes)
    rng = random.Random(3)
    cuts = sorted(rng.sample(range(1, len(outcomes)), 9))
    parts = []
    for origin, (lo, hi) in enumerate(zip([0, *cuts], [*cuts, len(outcomes)], strict=True)):
        part = search.Partial(objective=objective, top_k=25, origin=origin)
        part.add(outcomes[lo:hi])
        parts.append(part)
    rng.shuffle(parts)  # partitions finish in any order
    merged = search.Partial(objective=objective, top_k=25)
    for part in parts:
        merged.merge(part)
    assert merged.examples == whole.examples  # the earliest example of each reason, whatever the merge order
    assert [c.key() for c in merged.ranked] == [c.key() for c in whole.ranked]
    assert [c.key() for c in merged.pareto] == [c.key() for c in whole.pareto]
    assert (merged.evaluated, merged.feasible, merged.rejected) == (whole.evaluated, whole.feasible, whole.rejected)


def test_deepseek_v3_61_layers_placed_on_deep_pipelines() -> None:
    base = estimator.load_config(DSV3)
    res = search.search(base, 1024, {"parallel.pp": (8, 16), "parallel.ep": (8, 16)}, top_k=50)
    assert res.partial.feasible > 0
    assert {c.overrides["parallel.pp"] for c in res.ranked} == {8, 16}
    assert all(c.split.startswith("first-last") for c in res.ranked)


def test_dask_local_cluster_equals_single_process(mini: estimator.EstimatorConfig) -> None:
    distributed = pytest.importorskip("distributed", reason="Dask distributed is not installed")
    from estimator.search.distributed import partitions, search_dask

    space = {"parallel.tp": (1, 2, 4), "parallel.pp": (1, 2, 4), "parallel.ep": (2, 4, 8),
             "recompute.mode": ("none", "full")}
    assert sum(len(list(search.layouts(mini, 64, sub))) for sub in partitions(space, 8)) == len(
        list(search.layouts(mini, 64, space)))
    single = search.search(mini, 64, space, top_k=10)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        spread = search_dask(mini, 64, space, top_k=10, client=client)
    assert spread.path == "dask"
    assert [c.to_dict() for c in spread.ranked] == [c.to_dict() for c in single.ranked]
    assert [c.key() for c in spread.pareto] == [c.key() for c in single.pareto]
    assert spread.rejected == single.rejected and spread.partial.evaluated == single.partial.evaluated
    assert spread.partial.examples == single.partial.examples


def test_cli_search_writes_every_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r"
    rc = ndval(["search", str(MINI), "--devices", "32", "--space", "tp=1,2", "--space", "pp=1,2",
                "--space", "ep=4,8", "--top", "3", "--json", f"{out}.json", "--csv", f"{out}.csv",
                "--parquet", f"{out}.parquet", "--plot", str(out), "--no-progress"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "top 3 by time" in text and "Pareto front" in text
    doc = json.loads(Path(f"{out}.json").read_text())
    assert set(doc) >= {"evaluated", "feasible", "rejected", "ranked", "pareto", "configs_per_s", "path"}
    assert len(doc["ranked"]) == 3 and doc["path"] == "batched"
    assert Path(f"{out}.csv").read_text().count("\n") == doc["evaluated"] + 1
    assert Path(f"{out}.png").read_bytes()[:4] == b"\x89PNG"
    assert "<svg" in Path(f"{out}.html").read_text()


@pytest.mark.parametrize(("argv", "rc", "words"), [
    (["--space", "parallel.tpp=1,2"], 2, "unknown dimension"),
    (["--devices", "0"], 2, "--devices must be a positive integer"),
    (["--set", "parallel.tp=0"], 2, "parallel.tp"),
    (["--memory-margin-mb", "1e12"], 1, "no layout is feasible"),
    (["--devices", "7", "--space", "tp=2,4"], 1, "devices not divisible"),
    (["--space", "ep=3"], 1, "invalid parallel.ep"),  # every layout breaks a rule: listed by reason
    (["--space", "pp=0"], 2, "parallel.pp: values must be integers ≥ 1; got 0"),
    (["--space", "mb=two"], 2, "train.micro_batch_size: values must be integers ≥ 1; got 'two'"),
    (["--space", "ep="], 2, "parallel.ep: has no values"),
    (["--space", "parallel.dp=2"], 2, "derived by the search"),
])
def test_cli_search_bad_input(argv: list[str], rc: int, words: str, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["search", str(MINI), "--no-progress"]
    if "--devices" not in argv:
        base += ["--devices", "32", "--space", "tp=1,2"]
    assert ndval(base + argv) == rc
    captured = capsys.readouterr()
    assert words in captured.out + captured.err
