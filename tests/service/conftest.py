"""Fixtures of the ``ndval serve`` tests: synthetic datasets, an in-process client and a live server."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ndval.service.app import create_app
from ndval.service.registry import Registry
from tests.analyzer.synthetic import prefill_decode_steps, write_rank

LEVEL1 = "ascend/msinsight-level1"
CONTROL = "kineto/hta-trace-diff/control.json.gz"
TEST = "kineto/hta-trace-diff/test.json.gz"


@pytest.fixture(scope="session")
def synthetic_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SYNTHETIC Ascend rank (3 prefill + 9 decode steps; ``tests.analyzer.synthetic``)."""
    return write_rank(tmp_path_factory.mktemp("synth"), prefill_decode_steps())


@pytest.fixture(scope="session")
def not_a_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a text file: not a profile."""
    root = tmp_path_factory.mktemp("notes")
    (root / "readme.txt").write_text("not a profile\n", encoding="utf-8")
    return root


def client_for(paths: list[Path], **kwargs: object):  # -> TestClient
    """A Starlette TestClient over a registry of ``paths`` (loaded in the request that needs them)."""
    from starlette.testclient import TestClient

    return TestClient(create_app(Registry(paths, **kwargs)))


class LiveServer:
    """uvicorn serving an app on 127.0.0.1 (free port) in a thread; ``url`` is its base URL."""

    def __init__(self, registry: Registry, allowed_hosts: list[str] | None = None) -> None:
        import uvicorn

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_app(registry, allowed_hosts=allowed_hosts), log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start within 20 s")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


@pytest.fixture
def live_server() -> Iterator[Callable[..., LiveServer]]:
    """``live_server(registry, allowed_hosts=None)`` -> a started :class:`LiveServer` (stopped after the test)."""
    started: list[LiveServer] = []

    def start(registry: Registry, allowed_hosts: list[str] | None = None) -> LiveServer:
        srv = LiveServer(registry, allowed_hosts).__enter__()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.__exit__()
