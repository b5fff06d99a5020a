"""``ndval serve PATH...``: the local HTTP API and page over the given profiles (package ``service``).

Binds to 127.0.0.1 by default (``--port 0`` picks a free port; the URL is printed). Only the datasets
given here are served, by id; the datasets are read in the background, in order, with one line each
as it finishes; a dataset that fails is listed with its reason and the others are still served.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from typing import Any

#: Host header values accepted when bound to a loopback address (DNS-rebinding guard).
LOOPBACK_HOSTS = ["127.0.0.1", "localhost"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="profiles to serve (Ascend export dir / parent of ranks / Kineto trace)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=_port, default=0, help="port 0..65535 (default 0: a free port, printed)")
    parser.add_argument("--thresholds", metavar="FILE", help="threshold override YAML (as ndval analyze)")
    parser.add_argument("--max-events", type=int, default=None, metavar="N",
                        help="event budget per rank when reading traces (as ndval analyze)")


def _port(text: str) -> int:
    """A TCP port number 0..65535 (argparse: a usage error, exit 2, naming the rule)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0..65535)") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is outside 0..65535")
    return port


def _server(config: Any) -> Any:
    """A uvicorn server whose SIGINT / SIGTERM stop it cleanly: it finishes its requests and ``run`` returns
    (exit 0); uvicorn's own handling re-raises the signal after the shutdown, which ends the process with a
    ``KeyboardInterrupt`` traceback (SIGINT) or killed by the signal (SIGTERM)."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            handled = (signal.SIGINT, signal.SIGTERM)
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    return Server(config)


def resolve_host(host: str) -> str:
    """The address ``--host`` names, resolved first (``127.1``, ``2130706433``, ``0x7f000001``, ``LOCALHOST`` ->
    ``127.0.0.1``; ``::1`` stays), so the loopback rule and the Host-header guard see the address that is bound.
    An empty host is a ``ValueError`` (it would bind every interface, 0.0.0.0); so is a name that does not resolve."""
    if not host.strip():
        raise ValueError("--host is empty: name an address (127.0.0.1 for this machine only; 0.0.0.0 for every "
                         "interface, spelt out)")
    try:
        infos = socket.getaddrinfo(host.strip(), None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ValueError(f"--host {host!r} does not resolve to an address ({exc})") from None
    return str(infos[0][4][0])


def _is_loopback(address: str) -> bool:
    """Whether the resolved ``address`` is a loopback address (any 127.x or ::1)."""
    try:
        return ipaddress.ip_address(address.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)  # connections made as soon as the URL is printed wait in the backlog
    return sock


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from analyzer.thresholds import ThresholdError
    from ndval.service.app import create_app
    from ndval.service.registry import Registry

    try:
        registry = Registry(args.paths, thresholds=args.thresholds, max_events=args.max_events)
    except ThresholdError as exc:
        print(f"ndval serve: {exc}", file=sys.stderr)
        return 2
    try:
        address = resolve_host(args.host)
    except ValueError as exc:
        print(f"ndval serve: {exc}", file=sys.stderr)
        return 2
    loopback = _is_loopback(address)
    if not loopback:
        print(f"ndval serve: warning: bound to {args.host}, reachable from other machines; the API is "
              "read-only but serves the listed profiles to anyone who can connect", file=sys.stderr)
    try:
        sock = _bind(address, args.port)
    except (OSError, OverflowError) as exc:  # port taken, address not bindable
        print(f"ndval serve: cannot bind {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"ndval serve: http://{shown}:{port}/  ({len(registry.entries)} dataset(s): "
          f"{', '.join(registry.entries)})", flush=True)
    registry.start_loading(log=lambda line: print(f"ndval serve: {line}", flush=True))
    # every loopback spelling and ::1 is guarded (ndval.service.hostguard parses bracketed IPv6 Host headers)
    app = create_app(registry, allowed_hosts=LOOPBACK_HOSTS if loopback else None)
    server = _server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    with contextlib.suppress(KeyboardInterrupt):  # a second Ctrl-C during the shutdown: still a stop, not a crash
        server.run(sockets=[sock])
    print("ndval serve: stopped", flush=True)
    return 0
