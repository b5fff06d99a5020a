"""msprof-analyze ``cluster_analysis_output`` folders as input (issue 28): the shared 16-rank output (no rank
folders) and, built in a temporary folder, rank folders with a cluster file beside them."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from analyzer import analyze, report
from analyzer.dataset import load_dataset
from analyzer.ingest import cluster_output
from analyzer.ingest.errors import IngestError

CLUSTER = "ascend/msinsight-cluster-analysis-output"
COLUMNS = ("Computing", "Communication(Not Overlapped)", "Free")


def _file_rows(folder: Path) -> dict[int, dict[str, float]]:
    """The rank rows of cluster_step_trace_time.csv read with the csv module (independently of ndval)."""
    with (folder / "cluster_step_trace_time.csv").open(encoding="utf-8") as fh:
        return {int(r["Index"]): {c: float(r[c]) for c in COLUMNS} for r in csv.DictReader(fh) if r["Type"] == "rank"}


def test_sixteen_ranks_each_equal_to_the_file(profile_path) -> None:
    folder = profile_path(CLUSTER)
    expected = _file_rows(folder)
    d = analyze(load_dataset(folder)).to_dict()
    assert [r["rank"] for r in d["ranks"]] == list(range(16)) == sorted(expected)
    for r in d["ranks"]:
        (row,) = r["step_breakdown_us"]
        assert row["step"] == 2
        for c in COLUMNS:
            assert row[c] == pytest.approx(expected[r["rank"]][c], abs=1e-6), (r["rank"], c)


def test_slowest_rank_and_link_named_with_numbers(profile_path) -> None:
    folder = profile_path(CLUSTER)
    spans = {k: sum(v.values()) for k, v in _file_rows(folder).items()}
    slowest = max(spans, key=lambda k: spans[k])
    a = analyze(load_dataset(folder))
    c = a.to_dict()["cluster"]
    assert c["slowest_rank_by_step_time"] == slowest == 11
    assert c["slowest_ranks"][0] == {"rank": 11, "step_us": pytest.approx(spans[11], abs=1e-3)}
    link = c["slowest_links"][0]  # lowest bandwidth over cluster_communication_matrix.json (LOCAL excluded)
    assert link["link"] == "1->0" and link["transport"] == "HCCS" and link["bandwidth_gbps"] < 1
    md = report.to_markdown(a)
    assert "Slowest rank by step time: **11**" in md and "Slowest links (lowest bandwidth):" in md


def test_verdict_is_wait_bound_communication(profile_path) -> None:
    """Rank 0: 146.6 ms of 291.7 ms exposed communication; its ops wait 5.40 of 6.41 ms (the file's own split)."""
    ov = analyze(load_dataset(profile_path(CLUSTER))).primary.overall
    assert ov.verdict.evaluable and ov.verdict.kind == "communication" and ov.verdict.subtype == "wait-bound"
    assert ov.indicators.value("comm_peer_wait_us") == pytest.approx(5400.2, abs=0.1)


def test_groups_are_named(profile_path) -> None:
    cg = analyze(load_dataset(profile_path(CLUSTER))).primary.comm_by_group
    assert cg is not None
    assert {g["group"] for g in cg["groups"]} == {"(0, 1, 2, 3, 4, 5, 6, 7)", "p2p"}


def test_rank_folders_and_cluster_file_agree(profile_path, tmp_path: Path) -> None:
    """SYNTHETIC folder layout around real data: the Level1 rank folders (symlinked) and a cluster file whose
    rank rows are copied from their step_trace_time.csv — the two agree; a changed value is named."""
    level1 = profile_path("ascend/msinsight-level1")
    for r in ("rank0_ascend_pt", "rank1_ascend_pt"):
        (tmp_path / r).symlink_to(level1 / r)
    out = tmp_path / "cluster_analysis_output"
    out.mkdir()
    rows = []
    for i in (0, 1):
        with (level1 / f"rank{i}_ascend_pt/ASCEND_PROFILER_OUTPUT/step_trace_time.csv").open(encoding="utf-8-sig") as fh:
            src = next(csv.DictReader(fh))
        rows.append({"Step": src["Step"], "Type": "rank", "Index": i, **{c: src[c] for c in COLUMNS}})
    with (out / "cluster_step_trace_time.csv").open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, ["Step", "Type", "Index", *COLUMNS])
        w.writeheader()
        w.writerows(rows)
    ds = load_dataset(tmp_path)
    assert [r.rank for r in ds.ranks] == [0, 1] and ds.ranks[0].totals_source == "trace"
    assert any("agrees with the rank folders" in w for w in ds.warnings)
    rows[1]["Free"] = str(float(rows[1]["Free"]) + 5.0)
    with (out / "cluster_step_trace_time.csv").open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, ["Step", "Type", "Index", *COLUMNS])
        w.writeheader()
        w.writerows(rows)
    assert any("rank 1 step 50 Free" in w for w in load_dataset(tmp_path).warnings)


def test_bad_cluster_file_names_file_and_field(profile_path, tmp_path: Path) -> None:
    shutil.copy(profile_path(CLUSTER) / "cluster_step_trace_time.csv", tmp_path / "cluster_step_trace_time.csv")
    text = (tmp_path / "cluster_step_trace_time.csv").read_text(encoding="utf-8").replace("75174.57464453117", "n/a")
    (tmp_path / "cluster_step_trace_time.csv").write_text(text, encoding="utf-8")
    with pytest.raises(IngestError, match=r"cluster_step_trace_time.csv: line 2, column 'Computing'"):
        cluster_output.read(tmp_path)


def test_one_step_longer_than_a_second_keeps_its_verdict(profile_path, tmp_path: Path) -> None:
    """The shared 16-rank file with every time column × 10 (SYNTHETIC scaling of real rows: a 2.9-3.9 s step per
    rank, one step each). The synthesized step marker is the rank's only event and ends past its own start by
    more than the 1 s minimum window; it is a step, not an implausible duration (before: set aside, no verdict)."""
    src = profile_path(CLUSTER)
    for name in ("cluster_communication_matrix.json", "cluster_communication.json", "communication_group.json"):
        shutil.copy(src / name, tmp_path / name)
    with (src / "cluster_step_trace_time.csv").open(encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header, rows = list(reader.fieldnames or []), list(reader)
    timed = [c for c in header if c not in ("Step", "Type", "Index")]
    for r in rows:
        r.update({c: str(float(r[c]) * 10) for c in timed if r[c]})
    with (tmp_path / "cluster_step_trace_time.csv").open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, header)
        w.writeheader()
        w.writerows(rows)
    a = analyze(load_dataset(tmp_path))
    assert not [w for w in a.warnings if "implausible" in w or "no verdict" in w], a.warnings
    ov = a.primary.overall
    assert ov.verdict.evaluable and ov.verdict.kind == "communication"
    assert a.to_dict()["cluster"]["slowest_rank_by_step_time"] == 11
