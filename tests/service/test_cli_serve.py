"""``ndval serve`` as a process: binds 127.0.0.1 on a free port, prints the URL, serves, lists failures."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ndval.harness.cli import build_parser

#: no proxy from the environment for 127.0.0.1
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def test_serve_defaults_to_localhost_and_a_free_port() -> None:
    args = build_parser("serve").parse_args(["serve", "a", "b"])
    assert (args.host, args.port, args.paths) == ("127.0.0.1", 0, ["a", "b"])


def test_serve_process_lists_a_bad_path_as_failed_and_serves_the_rest(synthetic_dataset: Path,
                                                                       not_a_profile: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "ndval.harness.cli", "serve", str(not_a_profile), str(synthetic_dataset)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", first)
        assert m, first
        url = m.group(0)
        deadline = time.monotonic() + 60
        while True:
            rows = json.loads(OPENER.open(url + "api/datasets", timeout=10).read())["datasets"]
            if all(r["status"] in ("ready", "failed") for r in rows) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        by_id = {r["id"]: r for r in rows}
        assert by_id[not_a_profile.name]["status"] == "failed" and by_id[not_a_profile.name]["reason"]
        assert by_id["rank0_ascend_pt"]["status"] == "ready"
        page = OPENER.open(url, timeout=10).read().decode()
        assert "<title>ndval serve" in page
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_serve_refuses_a_bad_threshold_file(synthetic_dataset: Path, tmp_path: Path) -> None:
    bad = tmp_path / "th.yaml"
    bad.write_text("hostOnlyGate: [1, 2]\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "ndval.harness.cli", "serve", str(synthetic_dataset), "--thresholds", str(bad)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "hostOnlyGate" in out.stderr


def _started(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    first = proc.stdout.readline()
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", first)
    assert m, first
    url = m.group(0)
    OPENER.open(url + "api/health", timeout=10).read()  # serving
    return url


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_serve_stops_cleanly_on_sigint_and_sigterm(synthetic_dataset: Path, sig: signal.Signals) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "ndval.harness.cli", "serve", str(synthetic_dataset)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _started(proc)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 0, (proc.returncode, err)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "ndval serve: stopped" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["--port", "99999"], "99999 is outside 0..65535"),
    (["--port", "-1"], "-1 is outside 0..65535"),
    (["--port", "http"], "'http' is not a port number"),
    (["--host", "no-such-host.invalid"], "does not resolve to an address"),
    (["--host", "256.1.1.1"], "does not resolve to an address"),
])
def test_serve_refuses_a_bad_address_or_port_with_exit_2(synthetic_dataset: Path, argv: list[str], message: str) -> None:
    out = subprocess.run([sys.executable, "-m", "ndval.harness.cli", "serve", str(synthetic_dataset), *argv],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert message in out.stderr and "Traceback" not in out.stderr, out.stderr
