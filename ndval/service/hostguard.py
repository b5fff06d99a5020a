"""The DNS-rebinding guard of a loopback server: a request whose ``Host`` header names anything but this machine
is refused (400).

Accepted: the names given (``localhost``; compared case-insensitively) and any IP literal that is a loopback
address, IPv4 or IPv6 in brackets (``127.0.0.1``, ``[::1]``), with or without a port. A page on
``evil.example`` whose name an attacker re-points to 127.0.0.1 sends ``Host: evil.example`` and is refused.
Starlette's ``TrustedHostMiddleware`` splits the header at the first ``:``, so it cannot guard ``[::1]``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def host_of(header: str) -> str:
    """The host part of a ``Host`` header (``[::1]:8000`` -> ``::1``, ``Example:80`` -> ``example``)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def is_local_host(host: str, names: frozenset[str]) -> bool:
    """Whether ``host`` (from :func:`host_of`) is one of ``names`` or a loopback IP literal."""
    if host in names:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class LoopbackHostGuard:
    """ASGI middleware refusing HTTP requests whose ``Host`` is not this machine (see the module docstring)."""

    def __init__(self, app: ASGIApp, names: list[str]) -> None:
        self.app, self.names = app, frozenset(n.lower() for n in names)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = dict(scope.get("headers") or [])
            host = host_of(headers.get(b"host", b"").decode("latin-1"))
            if not is_local_host(host, self.names):
                await send({"type": "http.response.start", "status": 400,
                            "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
                await send({"type": "http.response.body", "body": b"Invalid host header"})
                return
        await self.app(scope, receive, send)
