"""Path-escape attempts, symlinks, Host header and methods, sent to a live server over a raw socket.

``http.client`` sends the request line exactly as written (no ``..`` normalisation, no re-encoding),
so each attempt reaches the server the way a hostile client would send it.
"""

from __future__ import annotations

import http.client
import json
import os
from pathlib import Path

import pytest

from ndval.service.registry import Registry, escaping_links
from tests.analyzer.synthetic import prefill_decode_steps, write_rank

ESCAPES = [
    "/api/datasets/../../../../etc/passwd/analysis",
    "/api/datasets/..%2f..%2f..%2fetc%2fpasswd/analysis",
    "/api/datasets/%2e%2e/analysis",
    "/api/datasets/%2e%2e%2f%2e%2e%2fetc%2fpasswd/timeline",
    "/api/datasets/%2E%2E/timeline?budget=10",
    "/api/datasets/..%5c..%5cwindows/analysis",
    "/api/datasets//etc/passwd/analysis",
    "/api/datasets/%2Fetc%2Fpasswd/analysis",
    "/api/datasets/etc/analysis",
    "/api/datasets/rank0_ascend_pt/compare?with=../../etc/passwd",
    "/api/datasets/rank0_ascend_pt/compare?with=%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "/api/datasets/rank0_ascend_pt/compare?with=/etc/passwd",
    "/api/datasets/rank0_ascend_pt/compare?with=%2Fetc%2Fpasswd",
    "/assets/../registry.py",
    "/assets/..%2fregistry.py",
    "/assets/%2e%2e%2f%2e%2e%2fpyproject.toml",
    "/assets//etc/passwd",
    "/../../etc/passwd",
    "/%2e%2e/%2e%2e/etc/passwd",
]


def raw_get(port: int, target: str, method: str = "GET", host: str | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.putrequest(method, target, skip_host=host is not None, skip_accept_encoding=True)
    if host is not None:
        conn.putheader("Host", host)
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, body


@pytest.fixture
def served(tmp_path: Path, live_server):
    """A live server over one SYNTHETIC dataset."""
    ds = write_rank(tmp_path / "data", prefill_decode_steps())
    return live_server(Registry([ds]), allowed_hosts=["127.0.0.1", "localhost"])


@pytest.mark.parametrize("target", ESCAPES)
def test_path_escape_attempt_is_refused_with_json(served, target: str) -> None:
    status, body = raw_get(served.port, target)
    assert status in (400, 404), (target, status)
    payload = json.loads(body)
    assert payload["status"] == status and payload["error"]
    assert b"root:" not in body and b"[project]" not in body and b"import " not in body


def test_the_known_id_still_answers(served) -> None:
    status, body = raw_get(served.port, "/api/datasets/rank0_ascend_pt/timeline?budget=5")
    assert status == 200 and json.loads(body)["item_count"] <= 5


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_the_server_is_read_only(served, method: str) -> None:
    for target in ("/api/datasets", "/api/datasets/rank0_ascend_pt/analysis", "/"):
        status, body = raw_get(served.port, target, method=method)
        assert status == 405 and json.loads(body)["status"] == 405


def test_a_foreign_host_header_is_refused(served) -> None:
    status, _ = raw_get(served.port, "/api/datasets", host="evil.example")
    assert status == 400
    status, _ = raw_get(served.port, "/api/datasets", host=f"localhost:{served.port}")
    assert status == 200


def test_symlink_out_of_a_dataset_is_refused_and_the_others_are_served(tmp_path: Path, live_server) -> None:
    good = write_rank(tmp_path / "good", prefill_decode_steps())
    secret = tmp_path / "outside" / "secret.json"
    secret.parent.mkdir()
    secret.write_text('[{"ph": "X", "name": "secret", "ts": "1", "dur": 1, "pid": 1, "tid": 1}]', encoding="utf-8")
    evil = tmp_path / "evil" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    evil.mkdir(parents=True)
    os.symlink(secret, evil / "trace_view.json")
    inner = tmp_path / "inner" / "rank0_ascend_pt"
    inner.mkdir(parents=True)
    os.symlink(good / "ASCEND_PROFILER_OUTPUT", inner / "ASCEND_PROFILER_OUTPUT")  # a folder link, also out
    assert escaping_links(tmp_path / "evil") == [f"rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json -> {secret}"]
    srv = live_server(Registry([tmp_path / "evil", tmp_path / "inner", good]))
    status, body = raw_get(srv.port, "/api/datasets/evil/timeline")
    assert status == 409 and b"symbolic link" in body and b"secret\"" not in body
    rows = {r["id"]: r for r in json.loads(raw_get(srv.port, "/api/datasets")[1])["datasets"]}
    assert rows["evil"]["status"] == "failed" and "pointing outside the dataset" in rows["evil"]["reason"]
    assert rows["inner"]["status"] == "pending"  # not read yet: read (and refused) on first use
    assert raw_get(srv.port, "/api/datasets/inner/analysis")[0] == 409
    status, body = raw_get(srv.port, "/api/datasets/rank0_ascend_pt/analysis")
    assert status == 200 and json.loads(body)["analysis"]["ranks"][0]["rank"] == 0


def test_a_symlink_inside_the_dataset_is_fine(tmp_path: Path) -> None:
    good = write_rank(tmp_path / "d", prefill_decode_steps())
    os.symlink(good / "ASCEND_PROFILER_OUTPUT" / "trace_view.json", good / "alias.json")
    assert escaping_links(tmp_path / "d") == []
