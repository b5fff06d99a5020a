"""``ndval serve`` resolves ``--host`` first, then applies the loopback rule and the Host-header guard (issue:
``--host ::1``, ``127.1``, ``2130706433``, ``0x7f000001`` or ``LOCALHOST`` bound loopback but turned the
DNS-rebinding guard off — ``Host: evil.example`` got 200; ``--host ''`` bound 0.0.0.0), and Markdown outputs escape
HTML (issue: ``compare --markdown`` wrote raw HTML from ``deviceProperties.name``)."""

from __future__ import annotations

import http.client
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ndval.core import render
from ndval.harness.commands.serve import _is_loopback, resolve_host
from ndval.service.hostguard import host_of, is_local_host
from tests.analyzer.synthetic import prefill_decode_steps, write_rank

SPELLINGS = ["127.1", "2130706433", "0x7f000001", "LOCALHOST", "::1"]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_every_loopback_spelling_resolves_to_loopback(spelling: str) -> None:
    try:
        address = resolve_host(spelling)
    except ValueError as exc:  # a host without IPv6 cannot resolve ::1
        pytest.skip(str(exc))
    assert _is_loopback(address)


def test_empty_host_is_an_error() -> None:
    with pytest.raises(ValueError, match="empty"):
        resolve_host("")
    with pytest.raises(ValueError, match="empty"):
        resolve_host("  ")


@pytest.mark.parametrize(("header", "ok"), [("evil.example", False), ("evil.example:80", False), ("localhost:1", True),
                                            ("LOCALHOST", True), ("[::1]:8000", True), ("127.0.0.1", True),
                                            ("127.0.0.2:9", True), ("[::2]", False), ("", False)])
def test_host_guard_parses_every_loopback_form(header: str, ok: bool) -> None:
    assert is_local_host(host_of(header), frozenset({"localhost", "127.0.0.1"})) is ok


def _ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def _get(host: str, port: int, header: str) -> int:
    conn = http.client.HTTPConnection(host, port, timeout=20)
    conn.putrequest("GET", "/api/health", skip_host=True, skip_accept_encoding=True)
    conn.putheader("Host", header)
    conn.endheaders()
    status = conn.getresponse().status
    conn.close()
    return status


@pytest.mark.parametrize("spelling", ["127.1", "::1"])
def test_serve_guards_the_host_header_for_every_loopback_spelling(spelling: str, tmp_path: Path) -> None:
    if spelling == "::1" and not _ipv6():
        pytest.skip("no IPv6 loopback on this machine")
    ds = write_rank(tmp_path / "data", prefill_decode_steps())
    proc = subprocess.Popen([sys.executable, "-m", "ndval.harness.cli", "serve", str(ds), "--host", spelling,
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "serve printed no URL within 60 s"
        line = proc.stdout.readline()
        port = int(line.split("/")[2].rsplit(":", 1)[1])
        bound = "::1" if spelling == "::1" else "127.0.0.1"
        deadline = time.monotonic() + 20
        while True:
            try:
                status = _get(bound, port, "evil.example")
                break
            except ConnectionError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert status == 400, "DNS-rebinding guard is off"
        assert _get(bound, port, f"localhost:{port}") == 200
    finally:
        proc.kill()
        proc.communicate(timeout=20)


def test_serve_empty_host_exits_2(tmp_path: Path) -> None:
    ds = write_rank(tmp_path / "data", prefill_decode_steps())
    proc = subprocess.run([sys.executable, "-m", "ndval.harness.cli", "serve", str(ds), "--host", ""],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2 and "--host is empty" in proc.stderr, proc.stderr


def test_markdown_cells_and_text_escape_html() -> None:
    table = render.markdown_table(["device"], [["<img src=x onerror=alert(1)>"]])
    assert "<img" not in table and "&lt;img" in table
    assert render.md_text("a <b> & c") == "a &lt;b&gt; &amp; c"
