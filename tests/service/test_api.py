"""The JSON API of ``ndval serve`` through Starlette's TestClient (synthetic datasets and real profiles)."""

from __future__ import annotations

from pathlib import Path

import pytest

import ndval.service.registry as registry_mod
from analyzer.ingest import events as ev
from ndval.service.app import API_VERSION, MAX_BUDGET
from tests.service.conftest import CONTROL, LEVEL1, TEST, client_for


def test_health_echoes_version_thresholds_and_limits(synthetic_dataset: Path) -> None:
    body = client_for([synthetic_dataset]).get("/api/health").json()
    assert body["api_version"] == API_VERSION and body["status"] == "ok" and body["version"]
    gate = body["thresholds"]["items"]["hostOnlyGate"]
    assert gate["value"] == 45.0 and gate["rationale"]
    assert body["limits"]["budget_max"] == MAX_BUDGET and body["limits"]["phases"] == ["overall", "prefill", "decode"]


def test_threshold_override_is_in_force(synthetic_dataset: Path, tmp_path: Path) -> None:
    f = tmp_path / "th.yaml"
    f.write_text("hostOnlyGate: 30\n", encoding="utf-8")
    client = client_for([synthetic_dataset], thresholds=str(f))
    health = client.get("/api/health").json()["thresholds"]
    assert health["items"]["hostOnlyGate"]["value"] == 30.0 and health["origin"] == str(f)
    body = client.get("/api/datasets/rank0_ascend_pt/analysis").json()
    assert body["analysis"]["thresholds"]["hostOnlyGate"]["value"] == 30.0


def test_a_path_that_is_not_a_profile_is_listed_as_failed_and_the_rest_is_served(
        synthetic_dataset: Path, not_a_profile: Path, tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    client = client_for([not_a_profile, synthetic_dataset, missing])
    client.app.state.registry.load_all()
    rows = {r["id"]: r for r in client.get("/api/datasets").json()["datasets"]}
    assert rows[not_a_profile.name]["status"] == "failed"
    assert "no profile found" in rows[not_a_profile.name]["reason"]
    assert rows["gone"]["status"] == "failed" and "does not exist" in rows["gone"]["reason"]
    good = rows["rank0_ascend_pt"]
    assert good["status"] == "ready" and good["kind"] == "ascend" and good["ranks"] == [0]
    assert good["steps"] == 12 and good["size_bytes"] > 0
    failed = client.get(f"/api/datasets/{not_a_profile.name}/analysis")
    assert failed.status_code == 409 and "failed to load" in failed.json()["error"]
    assert client.get("/api/datasets/rank0_ascend_pt/analysis").status_code == 200


def test_phase_scope_reruns_the_analysis_under_the_override(synthetic_dataset: Path) -> None:
    client = client_for([synthetic_dataset])
    overall = client.get("/api/datasets/rank0_ascend_pt/analysis?phase=overall").json()
    decode = client.get("/api/datasets/rank0_ascend_pt/analysis?phase=decode").json()
    assert overall["phase"] == "overall" and overall["analysis"]["phase_override"] is None
    assert decode["phase"] == "decode" and decode["analysis"]["phase_override"] == "decode"
    assert "decode" in decode["analysis"]["ranks"][0]["scopes"]
    bad = client.get("/api/datasets/rank0_ascend_pt/analysis?phase=training")
    assert bad.status_code == 400 and "phase" in bad.json()["error"]


def test_dataset_loads_once_and_analyses_are_cached(synthetic_dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"load": 0, "analyze": 0}
    real_load, real_analyze = registry_mod.analyzer.load_dataset, registry_mod.analyzer.analyze

    def load(*a, **k):
        calls["load"] += 1
        return real_load(*a, **k)

    def analyze(*a, **k):
        calls["analyze"] += 1
        return real_analyze(*a, **k)

    monkeypatch.setattr(registry_mod.analyzer, "load_dataset", load)
    monkeypatch.setattr(registry_mod.analyzer, "analyze", analyze)
    client = client_for([synthetic_dataset])
    for phase in ("overall", "overall", "decode", "overall", "decode"):
        assert client.get(f"/api/datasets/rank0_ascend_pt/analysis?phase={phase}").status_code == 200
    for _ in range(3):
        assert client.get("/api/datasets/rank0_ascend_pt/timeline?budget=10").status_code == 200
    assert calls == {"load": 1, "analyze": 2}


def test_rank_filter_and_unknown_rank(synthetic_dataset: Path) -> None:
    client = client_for([synthetic_dataset])
    body = client.get("/api/datasets/rank0_ascend_pt/analysis?rank=0").json()
    assert [r["rank"] for r in body["analysis"]["ranks"]] == [0]
    for url in ("/api/datasets/rank0_ascend_pt/analysis?rank=5", "/api/datasets/rank0_ascend_pt/timeline?rank=5"):
        r = client.get(url)
        assert r.status_code == 404 and "rank 5" in r.json()["error"]


@pytest.mark.parametrize("query, needle", [
    ("budget=0", "budget"), (f"budget={MAX_BUDGET + 1}", "budget"), ("budget=ten", "integer"),
    ("start_us=10&end_us=5", "window"), ("start_us=0&end_us=1e12", "window"), ("start_us=nan&end_us=5", "finite"),
    ("start_us=abc", "number"), ("rank=x", "integer"),
])
def test_timeline_limits_are_enforced(synthetic_dataset: Path, query: str, needle: str) -> None:
    r = client_for([synthetic_dataset]).get(f"/api/datasets/rank0_ascend_pt/timeline?{query}")
    assert r.status_code == 400 and needle in r.json()["error"]


def test_unknown_routes_ids_and_methods_answer_json(synthetic_dataset: Path) -> None:
    client = client_for([synthetic_dataset])
    r = client.get("/api/datasets/nope/analysis")
    assert r.status_code == 404 and r.json()["error"].startswith("unknown dataset id 'nope'")
    assert client.get("/api/nothing").status_code == 404 and "error" in client.get("/api/nothing").json()
    for method in ("post", "put", "delete", "patch"):
        r = getattr(client, method)("/api/datasets")
        assert r.status_code == 405 and r.json()["status"] == 405
    assert client.get("/api/datasets/rank0_ascend_pt/compare").status_code == 400  # 'with' is required


@pytest.mark.needs_data
def test_level1_analysis_carries_the_readme_evidence(profile_path) -> None:
    client = client_for([profile_path(LEVEL1)])
    body = client.get("/api/datasets/msinsight-level1/analysis").json()
    a = body["analysis"]
    assert a["verdict"]["kind"] == "communication"
    rank0 = a["ranks"][0]
    row = rank0["step_breakdown_us"][0]
    assert row["step"] == 50 and row["Computing"] == pytest.approx(8873.756, abs=1e-3)
    assert row["Communication"] == pytest.approx(105991.878, abs=1e-3)
    assert row["Communication(Not Overlapped)"] == pytest.approx(101963.203, abs=1e-3)
    assert row["Free"] == pytest.approx(25744.05, abs=1e-3)
    comm = next(c for c in rank0["scopes"]["overall"]["verdict"]["candidates"] if c["kind"] == "communication")
    per_step = next(e for e in comm["evidence"] if e["metric"] == "comm_us_per_step")
    assert per_step["value"] == pytest.approx(105991.878, abs=1e-3)
    assert rank0["capture_sync_counts"]["aten::item"] == 27


@pytest.mark.needs_data
def test_level1_evidence_row_leads_to_its_events(profile_path) -> None:
    client = client_for([profile_path(LEVEL1)])
    loc = client.get("/api/datasets/msinsight-level1/evidence?metric=comm_pct_of_device&rank=0").json()
    assert loc["categories"] == ["communication"] and loc["event_count"] > 0
    top = loc["events"][0]
    assert top["category"] == "communication" and top["dur_us"] > 70_000  # the ~79 ms allreduce of the README
    assert loc["focus_us"][0] <= top["start_us"] and top["end_us"] <= loc["focus_us"][1]
    timeline = client.get(f"/api/datasets/msinsight-level1/timeline?rank=0&start_us={loc['focus_us'][0]}"
                          f"&end_us={loc['focus_us'][1]}&budget=500").json()
    assert any(it["name"] == top["name"] and it["start_us"] == top["start_us"] for it in timeline["items"])


@pytest.mark.needs_data
def test_kineto_pair_compare_carries_thresholds_and_hardware_reasons(profile_path) -> None:
    client = client_for([profile_path(CONTROL), profile_path(TEST)])
    body = client.get("/api/datasets/control/compare?with=test").json()
    comp = body["comparison"]
    reasons = " | ".join(comp["comparability"]["reasons"])
    assert "different hardware: NVIDIA A100-PG509-200 vs Tesla V100-SXM2-16GB" in reasons
    assert "different world size: 8 vs 2" in reasons
    assert comp["comparability"]["comparable"] is False and comp["comparability"]["level"] == "not_comparable"
    rows = comp["recommendations"]
    assert rows and body["verdict_thresholds"] == [
        {"id": r["id"], "threshold_pct": r["threshold_pct"], "threshold_rule": r["threshold_rule"]} for r in rows]
    for r in rows:
        gain = r["expected_gain_pct"] or 0.0
        assert r["threshold_pct"] == pytest.approx(max(1.0, gain * 0.5), abs=0.01)


@pytest.mark.needs_data
def test_real_trace_timeline_budget_and_one_ms_window_is_real(profile_path) -> None:
    client = client_for([profile_path(CONTROL)])
    full = client.get("/api/datasets/control/timeline").json()
    assert full["events_in_window"] == 74_937 and full["aggregated"]
    for budget in (1, 17, 250, 2000, MAX_BUDGET):
        ans = client.get(f"/api/datasets/control/timeline?budget={budget}").json()
        assert ans["item_count"] == len(ans["items"]) <= budget
    from ndval.service.registry import Registry  # brute force on the same event table
    events = Registry([profile_path(CONTROL)]).entries["control"].ready_dataset().ranks[0].events
    dev = events[events["side"] == ev.SIDE_DEVICE]
    start = float(dev["ts_us"].iloc[len(dev) // 2])
    end = start + 1000.0
    ans = client.get(f"/api/datasets/control/timeline?start_us={start}&end_us={end}&budget=2000").json()
    s, e = events["ts_us"], events["ts_us"] + events["dur_us"]
    truth = events[(s < end) & ((e > start) | (s >= start))]
    assert 0 < len(truth) <= 2000
    assert ans["merged_items"] == 0 and ans["item_count"] == len(truth)
    assert sorted(it["name"] for it in ans["items"]) == sorted(map(str, truth["name"]))


def test_timeline_says_when_the_trace_was_sampled(synthetic_dataset: Path) -> None:
    full = client_for([synthetic_dataset]).get("/api/datasets/rank0_ascend_pt/timeline?budget=10").json()
    assert full["capture"] == {"complete": True, "dropped_events": 0, "dropped_reason": "", "totals_source": "trace"}
    sampled = client_for([synthetic_dataset], max_events=300).get("/api/datasets/rank0_ascend_pt/timeline").json()
    cap = sampled["capture"]
    assert cap["complete"] is False and cap["dropped_events"] > 0 and "event budget" in cap["dropped_reason"]
    assert sampled["events_in_window"] <= 300 + 12  # the kept events (step markers are never dropped)
